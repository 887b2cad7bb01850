// A small driver API client for the cuda backend tests: prints what it saw, one fact a
// line, and always exits 0 (the test reads the lines). With the argument "kernels" it
// loads a module of the fake NVIDIA driver (tests/cuda_backend/fake_nvidia.cpp) and
// launches its saxpy through the core.
#include <cuda.h>

#include <cstdio>
#include <cstring>
#include <vector>

static const char* name(CUresult r) {
  const char* s = "?";
  cuGetErrorName(r, &s);
  return s;
}

static void kernels(CUdevice dev) {
  CUcontext ctx = nullptr;
  cuCtxCreate(&ctx, nullptr, 0, dev);
  static const char image[] = "fake-module\nfunction saxpy 4@0 4@4 8@8 8@16\n";
  CUmodule mod = nullptr;
  std::printf("cuModuleLoadData %s\n", name(cuModuleLoadData(&mod, image)));
  CUfunction f = nullptr;
  std::printf("cuModuleGetFunction %s\n", name(cuModuleGetFunction(&f, mod, "saxpy")));
  std::printf("cuModuleGetFunction missing %s\n", name(cuModuleGetFunction(&f, mod, "nope")));
  cuModuleGetFunction(&f, mod, "saxpy");
  size_t offset = 0, size = 0;
  const CUresult info = cuFuncGetParamInfo(f, 3, &offset, &size);
  std::printf("cuFuncGetParamInfo 3 %s %zu %zu\n", name(info), offset, size);
  int n = 8;
  float a = 2.0f;
  CUdeviceptr x = 0, y = 0;
  cuMemAlloc(&x, n * sizeof(float));
  cuMemAlloc(&y, n * sizeof(float));
  std::vector<float> hx(n), hy(n), back(n);
  for (int i = 0; i < n; ++i) {
    hx[i] = static_cast<float>(i);
    hy[i] = 100.0f;
  }
  cuMemcpyHtoD(x, hx.data(), n * sizeof(float));
  cuMemcpyHtoD(y, hy.data(), n * sizeof(float));
  void* params[] = {&n, &a, &x, &y};
  std::printf("cuLaunchKernel 65536 before set %s\n",
              name(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 65536, nullptr, params, nullptr)));
  std::printf("cuFuncSetAttribute %s\n",
              name(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 65536)));
  std::printf("cuLaunchKernel 65536 %s\n",
              name(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 65536, nullptr, params, nullptr)));
  // The same through CU_LAUNCH_PARAM_BUFFER_POINTER: the core repacks it as kernelParams.
  unsigned char buffer[24] = {};
  std::memcpy(buffer, &n, 4);
  std::memcpy(buffer + 4, &a, 4);
  std::memcpy(buffer + 8, &x, 8);
  std::memcpy(buffer + 16, &y, 8);
  size_t buffer_size = sizeof buffer;
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buffer, CU_LAUNCH_PARAM_BUFFER_SIZE,
                   &buffer_size, CU_LAUNCH_PARAM_END};
  std::printf("cuLaunchKernel extra %s\n",
              name(cuLaunchKernel(f, 2, 1, 1, 64, 1, 1, 0, nullptr, nullptr, extra)));
  cuCtxSynchronize();
  cuMemcpyDtoH(back.data(), y, n * sizeof(float));
  bool ok = true;
  for (int i = 0; i < n; ++i) ok = ok && back[i] == 100.0f + 2 * (2.0f * static_cast<float>(i));
  std::printf("saxpy %s\n", ok ? "ok" : "BAD");
  std::printf("cuModuleUnload %s\n", name(cuModuleUnload(mod)));
  cuCtxDestroy(ctx);
}

int main(int argc, char** argv) {
  const CUresult init = cuInit(0);
  std::printf("cuInit %s\n", name(init));
  if (init != CUDA_SUCCESS) return 0;
  if (argc > 1 && std::strcmp(argv[1], "kernels") == 0) {
    CUdevice dev = 0;
    cuDeviceGet(&dev, 0);
    kernels(dev);
    return 0;
  }
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
