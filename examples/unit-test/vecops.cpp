#include "vecops.h"

#include <nvrtc.h>

#include <string>
#include <vector>

namespace {
const char* kSource = R"(
extern "C" __global__ void scale(float* data, unsigned long long n, float factor) {
  unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  if (i < n) data[i] *= factor;
}
)";

// Compiles the kernel for the device's own architecture; the image is PTX (or the
// backend's equivalent: cuModuleLoadData accepts what NVRTC returned).
CUresult compile(CUdevice dev, std::vector<char>& image) {
  int major = 0, minor = 0;
  if (CUresult r = cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev))
    return r;
  if (CUresult r = cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev))
    return r;
  nvrtcProgram prog;
  if (nvrtcCreateProgram(&prog, kSource, "scale.cu", 0, nullptr, nullptr) != NVRTC_SUCCESS)
    return CUDA_ERROR_INVALID_SOURCE;
  const std::string arch = "--gpu-architecture=compute_" + std::to_string(major * 10 + minor);
  const char* opts[] = {arch.c_str()};
  size_t size = 0;
  const bool ok = nvrtcCompileProgram(prog, 1, opts) == NVRTC_SUCCESS &&
                  nvrtcGetPTXSize(prog, &size) == NVRTC_SUCCESS;
  if (ok) {
    image.resize(size);
    (void)nvrtcGetPTX(prog, image.data());
  }
  nvrtcDestroyProgram(&prog);
  return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_SOURCE;
}
}  // namespace

extern "C" CUresult vec_scale(float* data, size_t n, float factor, int ordinal) {
  if (n == 0) return CUDA_SUCCESS;
  if (!data) return CUDA_ERROR_INVALID_VALUE;
  CUdevice dev;
  CUcontext ctx;
  if (CUresult r = cuInit(0)) return r;
  if (CUresult r = cuDeviceGet(&dev, ordinal)) return r;
  if (CUresult r = cuDevicePrimaryCtxRetain(&ctx, dev)) return r;
  CUresult r = cuCtxPushCurrent(ctx);
  std::vector<char> image;
  CUmodule mod = nullptr;
  CUfunction fn = nullptr;
  CUdeviceptr d = 0;
  if (r == CUDA_SUCCESS) r = compile(dev, image);
  if (r == CUDA_SUCCESS) r = cuModuleLoadData(&mod, image.data());
  if (r == CUDA_SUCCESS) r = cuModuleGetFunction(&fn, mod, "scale");
  if (r == CUDA_SUCCESS) r = cuMemAlloc(&d, n * sizeof(float));
  if (r == CUDA_SUCCESS) r = cuMemcpyHtoD(d, data, n * sizeof(float));
  if (r == CUDA_SUCCESS) {
    unsigned long long count = n;
    void* args[] = {&d, &count, &factor};
    const unsigned block = 256;
    const unsigned grid = static_cast<unsigned>((n + block - 1) / block);
    r = cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, 0, nullptr, args, nullptr);
  }
  if (r == CUDA_SUCCESS) r = cuMemcpyDtoH(data, d, n * sizeof(float));
  if (d) cuMemFree(d);
  if (mod) cuModuleUnload(mod);
  cuCtxPopCurrent(nullptr);
  cuDevicePrimaryCtxRelease(dev);
  return r;
}
