/* SAXPY, the seed program: out = a*x + y with a = 2, 512 threads x 32768 blocks.
 * The kernel is compiled at run time by NVRTC for the device's own architecture
 * (--gpu-architecture=compute_<major><minor>, --fmad=false so that the result is exactly
 * a*x + y), loaded with cuModuleLoadData, and launched on a stream between asynchronous
 * copies; the result is checked against the host.
 *
 * Plain CUDA: builds against NVIDIA's cuda.h/nvrtc.h or ours. Exits 0 on success, 1 on a
 * wrong result or failed call, 77 when this installation has no kernel compiler or module
 * loader yet (NVRTC's compile or cuModuleLoadData reports it cannot). */
#include <cuda.h>
#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NUM_THREADS 512
#define NUM_BLOCKS 32768
#define SKIP 77

static const char* kSaxpy =
    "extern \"C\" __global__\n"
    "void saxpy(float a, float *x, float *y, float *out, size_t n)\n"
    "{\n"
    "  size_t tid = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (tid < n) {\n"
    "    out[tid] = a * x[tid] + y[tid];\n"
    "  }\n"
    "}\n";

#define CU(call)                                                             \
  do {                                                                       \
    CUresult r_ = (call);                                                    \
    if (r_ != CUDA_SUCCESS) {                                                \
      const char* n_ = NULL;                                                 \
      cuGetErrorName(r_, &n_);                                               \
      fprintf(stderr, "%s failed: %s\n", #call, n_ ? n_ : "?");              \
      return 1;                                                              \
    }                                                                        \
  } while (0)

int main(void) {
  CUdevice dev;
  CUcontext ctx;
  int major = 0, minor = 0;
  CU(cuInit(0));
  CU(cuDeviceGet(&dev, 0));
  CU(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
  CU(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));

  nvrtcProgram prog;
  if (nvrtcCreateProgram(&prog, kSaxpy, "saxpy.cu", 0, NULL, NULL) != NVRTC_SUCCESS) {
    fprintf(stderr, "nvrtcCreateProgram failed\n");
    return 1;
  }
  char arch[64];
  snprintf(arch, sizeof arch, "--gpu-architecture=compute_%d%d", major, minor);
  const char* opts[] = {"--fmad=false", arch};
  nvrtcResult cr = nvrtcCompileProgram(prog, 2, opts);
  size_t log_size = 0;
  nvrtcGetProgramLogSize(prog, &log_size);
  if (log_size > 1) {
    char* log = malloc(log_size);
    nvrtcGetProgramLog(prog, log);
    fprintf(stderr, "compile log:\n%s\n", log);
    free(log);
  }
  if (cr != NVRTC_SUCCESS) {
    fprintf(stderr, "nvrtcCompileProgram: %s\n", nvrtcGetErrorString(cr));
    nvrtcDestroyProgram(&prog);
    /* A compile error is a real failure; anything else means no compiler is available. */
    if (cr == NVRTC_ERROR_COMPILATION) return 1;
    printf("SKIP: no kernel compiler available\n");
    return SKIP;
  }
  size_t ptx_size = 0;
  if (nvrtcGetPTXSize(prog, &ptx_size) != NVRTC_SUCCESS) return 1;
  char* ptx = malloc(ptx_size);
  if (nvrtcGetPTX(prog, ptx) != NVRTC_SUCCESS) return 1;
  nvrtcDestroyProgram(&prog);

  CU(cuCtxCreate(&ctx, NULL, 0, dev));
  CUmodule module;
  CUresult lr = cuModuleLoadData(&module, ptx);
  free(ptx);
  if (lr == CUDA_ERROR_NOT_SUPPORTED) {
    printf("SKIP: cuModuleLoadData is not supported by this backend yet\n");
    cuCtxDestroy(ctx);
    return SKIP;
  }
  CU(lr);
  CUfunction kernel;
  CU(cuModuleGetFunction(&kernel, module, "saxpy"));

  const size_t n = (size_t)NUM_THREADS * NUM_BLOCKS;
  const size_t bytes = n * sizeof(float);
  float a = 2.0f;
  float* hx = malloc(bytes);
  float* hy = malloc(bytes);
  float* hout = malloc(bytes);
  for (size_t i = 0; i < n; ++i) {
    hx[i] = (float)i / 3.0f;
    hy[i] = (float)(n - i) * 0.25f;
  }
  CUdeviceptr dx, dy, dout;
  CU(cuMemAlloc(&dx, bytes));
  CU(cuMemAlloc(&dy, bytes));
  CU(cuMemAlloc(&dout, bytes));
  CUstream stream;
  CU(cuStreamCreate(&stream, 0));
  CU(cuMemcpyHtoDAsync(dx, hx, bytes, stream));
  CU(cuMemcpyHtoDAsync(dy, hy, bytes, stream));
  size_t count = n;
  void* args[] = {&a, &dx, &dy, &dout, &count};
  CU(cuLaunchKernel(kernel, NUM_BLOCKS, 1, 1, NUM_THREADS, 1, 1, 0, stream, args, NULL));
  CU(cuMemcpyDtoHAsync(hout, dout, bytes, stream));
  CU(cuStreamSynchronize(stream));

  size_t wrong = 0;
  for (size_t i = 0; i < n; ++i) {
    const float expected = a * hx[i] + hy[i];
    if (hout[i] != expected) {
      if (wrong < 5) fprintf(stderr, "out[%zu] = %g, expected %g\n", i, hout[i], expected);
      ++wrong;
    }
  }
  CU(cuStreamDestroy(stream));
  CU(cuMemFree(dx));
  CU(cuMemFree(dy));
  CU(cuMemFree(dout));
  CU(cuModuleUnload(module));
  CU(cuCtxDestroy(ctx));
  free(hx);
  free(hy);
  free(hout);
  if (wrong) {
    fprintf(stderr, "saxpy: %zu of %zu results wrong\n", wrong, n);
    return 1;
  }
  printf("saxpy: %zu elements correct (a = %g, %d blocks x %d threads, compute_%d%d)\n", n, a, NUM_BLOCKS,
         NUM_THREADS, major, minor);
  return 0;
}
