/* A program that uses an installed cudamux like any CUDA toolkit: the driver API and
 * NVRTC, built with find_package(cudamux) (CMakeLists.txt) or pkg-config (Makefile).
 * Fills device memory, copies it back and checks it; prints one line; exit 0 on success. */
#include <cuda.h>
#include <nvrtc.h>
#include <stdio.h>

#define CU(call)                                                \
  do {                                                          \
    CUresult r_ = (call);                                       \
    if (r_ != CUDA_SUCCESS) {                                   \
      const char* n_ = NULL;                                    \
      cuGetErrorName(r_, &n_);                                  \
      fprintf(stderr, "%s failed: %s\n", #call, n_ ? n_ : "?"); \
      return 1;                                                 \
    }                                                           \
  } while (0)

int main(void) {
  int count = 0, major = 0, minor = 0;
  char name[128];
  CUdevice dev;
  CUcontext ctx;
  CUdeviceptr d;
  unsigned host[256];
  CU(cuInit(0));
  CU(cuDeviceGetCount(&count));
  CU(cuDeviceGet(&dev, 0));
  CU(cuDeviceGetName(name, sizeof name, dev));
  CU(cuCtxCreate(&ctx, NULL, 0, dev));
  CU(cuMemAlloc(&d, sizeof host));
  CU(cuMemsetD32(d, 0xc0ffee, 256));
  CU(cuMemcpyDtoH(host, d, sizeof host));
  for (int i = 0; i < 256; ++i) {
    if (host[i] != 0xc0ffee) {
      fprintf(stderr, "consumer: element %d is %#x, expected 0xc0ffee\n", i, host[i]);
      return 1;
    }
  }
  CU(cuMemFree(d));
  CU(cuCtxDestroy(ctx));
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) {
    fprintf(stderr, "consumer: nvrtcVersion failed\n");
    return 1;
  }
  printf("consumer: ok: %d device(s), device 0 is %s, NVRTC %d.%d\n", count, name, major, minor);
  return 0;
}
