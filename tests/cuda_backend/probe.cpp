// A small driver API client for the cuda backend tests: prints what it saw, one fact a
// line, and always exits 0 (the test reads the lines).
#include <cuda.h>

#include <cstdio>
#include <vector>

static const char* name(CUresult r) {
  const char* s = "?";
  cuGetErrorName(r, &s);
  return s;
}

int main() {
  const CUresult init = cuInit(0);
  std::printf("cuInit %s\n", name(init));
  if (init != CUDA_SUCCESS) return 0;
  int count = 0;
  cuDeviceGetCount(&count);
  std::printf("devices %d\n", count);
  CUdevice dev = 0;
  char device_name[256] = {};
  cuDeviceGet(&dev, 0);
  cuDeviceGetName(device_name, sizeof device_name, dev);
  std::printf("name %s\n", device_name);
  CUcontext ctx = nullptr;
  std::printf("cuCtxCreate %s\n", name(cuCtxCreate(&ctx, nullptr, 0, dev)));
  const size_t n = 1 << 16;
  std::vector<unsigned> host(n), back(n);
  for (size_t i = 0; i < n; ++i) host[i] = static_cast<unsigned>(i * 2654435761u);
  CUdeviceptr d = 0;
  std::printf("cuMemAlloc %s\n", name(cuMemAlloc(&d, n * 4)));
  CUstream s = nullptr;
  std::printf("cuStreamCreate %s\n", name(cuStreamCreate(&s, 0)));
  std::printf("cuMemcpyHtoDAsync %s\n", name(cuMemcpyHtoDAsync(d, host.data(), n * 4, s)));
  std::printf("cuMemsetD32Async %s\n", name(cuMemsetD32Async(d + 64, 0xdeadbeef, 16, s)));
  std::printf("cuMemcpyDtoHAsync %s\n", name(cuMemcpyDtoHAsync(back.data(), d, n * 4, s)));
  std::printf("cuStreamSynchronize %s\n", name(cuStreamSynchronize(s)));
  for (size_t i = 16; i < 32; ++i) host[i] = 0xdeadbeef;
  std::printf("roundtrip %s\n", host == back ? "ok" : "BAD");
  cuStreamDestroy(s);
  cuMemFree(d);
  std::printf("cuCtxDestroy %s\n", name(cuCtxDestroy(ctx)));
  return 0;
}
