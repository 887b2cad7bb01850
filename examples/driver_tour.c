/* A tour of the CUDA driver API as cudamux provides it: the same source builds
 * against NVIDIA's cuda.h and runs on any cudamux backend (the mock by default).
 * It prints what it did and exits non-zero if any result is wrong. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                             \
  do {                                                                          \
    CUresult check_result_ = (call);                                            \
    if (check_result_ != CUDA_SUCCESS) {                                        \
      const char* name_ = "?";                                                  \
      cuGetErrorName(check_result_, &name_);                                    \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, name_); \
      exit(1);                                                                  \
    }                                                                           \
  } while (0)

static void CUDA_CB on_host(void* user) { *(int*)user += 1; }

int main(void) {
  CHECK(cuInit(0));
  int version = 0, count = 0;
  CHECK(cuDriverGetVersion(&version));
  CHECK(cuDeviceGetCount(&count));
  printf("driver version %d.%d, %d device(s)\n", version / 1000, (version % 1000) / 10, count);

  CUdevice dev;
  CHECK(cuDeviceGet(&dev, 0));
  char name[256];
  int major = 0, minor = 0, sms = 0;
  size_t total = 0;
  CHECK(cuDeviceGetName(name, sizeof name, dev));
  CHECK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
  CHECK(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
  CHECK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
  CHECK(cuDeviceTotalMem(&total, dev));
  printf("device 0: %s, compute capability %d.%d, %d SMs, %.1f GiB\n", name, major, minor, sms,
         (double)total / (1024.0 * 1024.0 * 1024.0));

  CUcontext ctx;
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));

  /* Round trip through device memory, with a memset and a device-to-device copy. */
  enum { N = 1 << 20 };
  unsigned int* host = (unsigned int*)malloc(N * sizeof *host);
  unsigned int* back = (unsigned int*)malloc(N * sizeof *back);
  for (unsigned i = 0; i < N; ++i) host[i] = i * 2654435761u;
  CUdeviceptr a, b;
  CHECK(cuMemAlloc(&a, N * sizeof *host));
  CHECK(cuMemAlloc(&b, N * sizeof *host));
  CHECK(cuMemcpyHtoD(a, host, N * sizeof *host));
  CHECK(cuMemcpyDtoD(b, a, N * sizeof *host));
  CHECK(cuMemcpyDtoH(back, b, N * sizeof *back));
  int same = memcmp(host, back, N * sizeof *host) == 0;
  printf("copied %zu bytes host->device->device->host: %s\n", N * sizeof *host, same ? "identical" : "DIFFERENT");
  if (!same) return 1;

  CHECK(cuMemsetD32(b, 0xC0FFEEu, N));
  CHECK(cuMemcpyDtoH(back, b, N * sizeof *back));
  for (unsigned i = 0; i < N; ++i)
    if (back[i] != 0xC0FFEEu) {
      printf("memset result wrong at %u\n", i);
      return 1;
    }
  printf("cuMemsetD32 filled %d words with 0x%X\n", N, 0xC0FFEEu);

  /* Asynchronous work on a stream, timed by events, with a host function in order. */
  CUstream stream;
  CUevent start, stop;
  unsigned int* pinned;
  int host_calls = 0;
  CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CHECK(cuEventCreate(&start, CU_EVENT_DEFAULT));
  CHECK(cuEventCreate(&stop, CU_EVENT_DEFAULT));
  CHECK(cuMemAllocHost((void**)&pinned, N * sizeof *pinned));
  CHECK(cuEventRecord(start, stream));
  CHECK(cuMemcpyHtoDAsync(a, host, N * sizeof *host, stream));
  CHECK(cuMemcpyDtoHAsync(pinned, a, N * sizeof *pinned, stream));
  CHECK(cuLaunchHostFunc(stream, on_host, &host_calls));
  CHECK(cuEventRecord(stop, stream));
  CHECK(cuStreamSynchronize(stream));
  float ms = 0;
  CHECK(cuEventElapsedTime(&ms, start, stop));
  same = memcmp(host, pinned, N * sizeof *host) == 0 && host_calls == 1;
  printf("async round trip on a stream: %s, host function ran %d time(s), %.3f ms between events\n",
         same ? "identical" : "DIFFERENT", host_calls, ms);
  if (!same) return 1;

  size_t free_bytes = 0, total_bytes = 0;
  CHECK(cuMemGetInfo(&free_bytes, &total_bytes));
  printf("memory in use on device 0: %zu bytes\n", total_bytes - free_bytes);

  CHECK(cuMemFreeHost(pinned));
  CHECK(cuEventDestroy(start));
  CHECK(cuEventDestroy(stop));
  CHECK(cuStreamDestroy(stream));
  CHECK(cuMemFree(a));
  CHECK(cuMemFree(b));
  CHECK(cuDevicePrimaryCtxRelease(dev));
  free(host);
  free(back);
  printf("done: every result checked\n");
  return 0;
}
