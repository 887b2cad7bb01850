// The hip backend end to end without an AMD GPU: our libcuda.so.1 / libnvrtc.so.13 on the
// hip plugin over the fake HIP runtime (CUDAMUX_HIP_RUNTIME) and the real hipRTC.
// Each ctest entry runs one process; its environment picks the scenario (FAKE_HIP_*).
#include <cuda.h>
#define __HIP_PLATFORM_AMD__
#include <cudamux.h>
#include <dlfcn.h>
#include <elf.h>
#include <gtest/gtest.h>
#include <hip/hip_runtime_api.h>
#include <nvrtc.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "code_object.hpp"  // white-box: the plugin's code-object reader

namespace {

std::string env(const char* name, const char* fallback = "") {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

// The fake's hooks, from the same library the plugin opened (dlopen returns that handle).
struct Fake {
  const char* (*log)() = nullptr;
  void (*clear)() = nullptr;
  void (*inject)(const char*, int, int) = nullptr;
  Fake() {
    void* h = dlopen(env("CUDAMUX_HIP_RUNTIME").c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) return;
    log = reinterpret_cast<const char* (*)()>(dlsym(h, "fakehip_log"));
    clear = reinterpret_cast<void (*)()>(dlsym(h, "fakehip_log_clear"));
    inject = reinterpret_cast<void (*)(const char*, int, int)>(dlsym(h, "fakehip_inject"));
  }
};
Fake& fake() {
  static Fake f;
  return f;
}

// Compares the fake's log since the last clear with golden/<name>.log; HIP_GOLDEN_UPDATE=1
// rewrites the file instead.
void expect_golden(const std::string& name) {
  const std::string actual = fake().log();
  const std::string path = env("HIP_GOLDEN_DIR") + "/" + name + ".log";
  if (env("HIP_GOLDEN_UPDATE") == "1") {
    std::ofstream(path) << actual;
    return;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in) << "missing golden file " << path << "; the calls were:\n" << actual;
  std::stringstream expected;
  expected << in.rdbuf();
  EXPECT_EQ(expected.str(), actual)
      << "HIP calls differ from " << path << " (HIP_GOLDEN_UPDATE=1 rewrites it after review)";
}

class Hip : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(fake().log, nullptr) << "the fake HIP runtime is not loaded (CUDAMUX_HIP_RUNTIME)";
    ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
    ASSERT_EQ(cuDeviceGet(&dev, 0), CUDA_SUCCESS);
    ASSERT_EQ(cuCtxCreate(&ctx, nullptr, 0, dev), CUDA_SUCCESS);
    fake().clear();
  }
  void TearDown() override {
    if (ctx) {
      EXPECT_EQ(cuCtxDestroy(ctx), CUDA_SUCCESS);
    }
  }
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
};

// --- golden call logs: the exact HIP calls a few CUDA calls make ---

TEST_F(Hip, GoldenAllocCopyFree) {
  CUdeviceptr d = 0;
  std::vector<int> host(64, 7), back(64, 0);
  ASSERT_EQ(cuMemAlloc(&d, 256), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyHtoD(d, host.data(), 256), CUDA_SUCCESS);
  ASSERT_EQ(cuMemsetD32(d + 128, 0x01020304u, 32), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyDtoH(back.data(), d, 256), CUDA_SUCCESS);
  ASSERT_EQ(cuMemFree(d), CUDA_SUCCESS);
  EXPECT_EQ(back[0], 7);
  EXPECT_EQ(back[32], 0x01020304);
  expect_golden("alloc_copy_free");
}

TEST_F(Hip, GoldenStreamsEventsHostFunction) {
  CUstream s = nullptr;
  CUevent a = nullptr, b = nullptr;
  int calls = 0;
  ASSERT_EQ(cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, -5), CUDA_SUCCESS);
  ASSERT_EQ(cuEventCreate(&a, CU_EVENT_DEFAULT), CUDA_SUCCESS);
  ASSERT_EQ(cuEventCreate(&b, CU_EVENT_DISABLE_TIMING | CU_EVENT_BLOCKING_SYNC), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(a, s), CUDA_SUCCESS);
  ASSERT_EQ(cuLaunchHostFunc(
                s, [](void* p) { ++*static_cast<int*>(p); }, &calls),
            CUDA_SUCCESS);
  ASSERT_EQ(cuStreamWaitEvent(s, a, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(b, s), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(s), CUDA_SUCCESS);
  EXPECT_EQ(calls, 1);
  ASSERT_EQ(cuEventDestroy(a), CUDA_SUCCESS);
  ASSERT_EQ(cuEventDestroy(b), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamDestroy(s), CUDA_SUCCESS);
  expect_golden("streams_events_host_function");
}

TEST_F(Hip, GoldenPinnedManaged2D) {
  void* pinned = nullptr;
  CUdeviceptr managed = 0, pitched = 0;
  size_t pitch = 0;
  ASSERT_EQ(cuMemHostAlloc(&pinned, 4096, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP),
            CUDA_SUCCESS);
  ASSERT_EQ(cuMemAllocManaged(&managed, 1024, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAllocPitch(&pitched, &pitch, 100, 4, 4), CUDA_SUCCESS);
  std::memset(pinned, 0x5a, 4096);
  CUDA_MEMCPY2D c{};
  c.srcMemoryType = CU_MEMORYTYPE_HOST;
  c.srcHost = pinned;
  c.srcPitch = 128;
  c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  c.dstDevice = pitched;
  c.dstPitch = pitch;
  c.WidthInBytes = 100;
  c.Height = 4;
  ASSERT_EQ(cuMemcpy2D(&c), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyDtoD(managed, pitched, 64), CUDA_SUCCESS);
  EXPECT_EQ(reinterpret_cast<unsigned char*>(managed)[63], 0x5a);  // managed: host-visible
  ASSERT_EQ(cuMemFree(pitched), CUDA_SUCCESS);
  ASSERT_EQ(cuMemFree(managed), CUDA_SUCCESS);
  ASSERT_EQ(cuMemFreeHost(pinned), CUDA_SUCCESS);
  expect_golden("pinned_managed_2d");
}

// --- translations of errors, flags and attributes ---

TEST_F(Hip, HipErrorsMapToCudaErrors) {
  CUdeviceptr d = 0;
  const std::pair<hipError_t, CUresult> cases[] = {
      {hipErrorOutOfMemory, CUDA_ERROR_OUT_OF_MEMORY},
      {hipErrorNoBinaryForGpu, CUDA_ERROR_NO_BINARY_FOR_GPU},
      {hipErrorInvalidDevicePointer, CUDA_ERROR_INVALID_VALUE},  // coarser in the driver API
      {hipErrorLaunchFailure, CUDA_ERROR_LAUNCH_FAILED},
  };
  for (const auto& [hip, cuda] : cases) {
    fake().inject("hipMalloc", hip, 1);
    EXPECT_EQ(cuMemAlloc(&d, 256), cuda) << "hipError_t " << hip;
  }
  ASSERT_EQ(cuMemAlloc(&d, 256), CUDA_SUCCESS);  // injections used up
  EXPECT_EQ(cuMemFree(d), CUDA_SUCCESS);
}

TEST_F(Hip, HipErrorsWithoutCudaCounterpartGoThroughThePolicy) {
  CUdeviceptr d = 0;
  // Strict (default): the generic CUDA error.
  fake().inject("hipMalloc", hipErrorRuntimeMemory, 1);
  EXPECT_EQ(cuMemAlloc(&d, 256), CUDA_ERROR_UNKNOWN);
  // Hallucinated: an invented CUresult, stable for the same HIP value, named after it.
  ASSERT_EQ(cudamuxSetHallucinate("CUresult", 1), CUDA_SUCCESS);
  fake().inject("hipMalloc", hipErrorRuntimeMemory, 2);
  const CUresult first = cuMemAlloc(&d, 256);
  const CUresult second = cuMemAlloc(&d, 256);
  fake().inject("hipMalloc", hipErrorRuntimeOther, 1);
  const CUresult other = cuMemAlloc(&d, 256);
  ASSERT_EQ(cudamuxSetHallucinate("CUresult", 0), CUDA_SUCCESS);
  EXPECT_EQ(first, second);
  EXPECT_NE(first, other);
  EXPECT_GE(static_cast<int>(first), 0x10000);
  const char* name = nullptr;
  ASSERT_EQ(cuGetErrorName(first, &name), CUDA_SUCCESS);
  EXPECT_NE(std::string(name).find("hipErrorRuntimeMemory"), std::string::npos) << name;
}

TEST_F(Hip, UnmappedFlagIsNotSupportedAndNeverReachesHip) {
  std::vector<char> buf(8192);
  EXPECT_EQ(cuMemHostRegister(buf.data(), buf.size(), CU_MEMHOSTREGISTER_READ_ONLY),
            CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(std::string(fake().log()).find("hipHostRegister"), std::string::npos) << fake().log();
  // A mapped flag goes through, translated.
  ASSERT_EQ(cuMemHostRegister(buf.data(), buf.size(), CU_MEMHOSTREGISTER_DEVICEMAP), CUDA_SUCCESS);
  EXPECT_NE(std::string(fake().log()).find("hipHostRegister(hostmem, 8192, 0x2) -> hipSuccess"),
            std::string::npos)
      << fake().log();
  EXPECT_EQ(cuMemHostUnregister(buf.data()), CUDA_SUCCESS);
}

TEST_F(Hip, DeviceAttributesComeThroughTheTable) {
  int v = 0;
  ASSERT_EQ(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev), CUDA_SUCCESS);
  EXPECT_EQ(v, 104);  // the fake's value
  ASSERT_EQ(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, dev), CUDA_SUCCESS);
  EXPECT_EQ(v, 64);  // AMD wavefronts: reported as they are
  // hipDeviceAttribute values differ from CUDA's: the fake must have been asked HIP's
  // (an attribute the core does not read at start-up; answers are cached after the first).
  ASSERT_EQ(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev), CUDA_SUCCESS);
  EXPECT_EQ(v, 8388608);
  const std::string expect =
      "hipDeviceGetAttribute(" + std::to_string(hipDeviceAttributeL2CacheSize) + ", 0)";
  EXPECT_NE(std::string(fake().log()).find(expect), std::string::npos) << fake().log();
  ASSERT_EQ(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev), CUDA_SUCCESS);
  const std::string log = fake().log();
  EXPECT_EQ(log.find(expect), log.rfind(expect)) << "asked HIP twice:\n" << log;
  // An attribute HIP lists but refuses on AMD, and one it has no counterpart for.
  EXPECT_NE(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_TCC_DRIVER, dev), CUDA_ERROR_UNKNOWN);
  char name[128] = {};
  ASSERT_EQ(cuDeviceGetName(name, sizeof name, dev), CUDA_SUCCESS);
  EXPECT_NE(std::string(name).find("Fake AMD"), std::string::npos);
  int major = 0;
  ASSERT_EQ(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev),
            CUDA_SUCCESS);
  EXPECT_EQ(major, 9);
}

TEST_F(Hip, PeerCopyUsesHipMemcpyPeer) {
  int count = 0;
  ASSERT_EQ(cuDeviceGetCount(&count), CUDA_SUCCESS);
  if (count < 2) GTEST_SKIP() << "needs FAKE_HIP_DEVICES >= 2";
  CUdevice d1 = 0;
  CUcontext c1 = nullptr;
  ASSERT_EQ(cuDeviceGet(&d1, 1), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxCreate(&c1, nullptr, 0, d1), CUDA_SUCCESS);
  CUdeviceptr a = 0, b = 0;
  ASSERT_EQ(cuMemAlloc(&b, 64), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxPopCurrent(nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAlloc(&a, 64), CUDA_SUCCESS);
  ASSERT_EQ(cuMemsetD8(a, 0x33, 64), CUDA_SUCCESS);
  fake().clear();
  ASSERT_EQ(cuMemcpyPeer(b, c1, a, ctx, 64), CUDA_SUCCESS);
  EXPECT_NE(std::string(fake().log()).find("hipMemcpyPeerAsync("), std::string::npos)
      << fake().log();
  EXPECT_EQ(reinterpret_cast<unsigned char*>(b)[10], 0x33);  // the fake's memory is host memory
  EXPECT_EQ(cuMemFree(a), CUDA_SUCCESS);
  EXPECT_EQ(cuCtxDestroy(c1), CUDA_SUCCESS);
}

// --- NVRTC through hipRTC (real compiler), modules and launches over the fake ---

constexpr const char* kSaxpy =
    R"(extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
)";

// Shared memory, atomics and warp shuffles in their CUDA spellings.
constexpr const char* kReduce = R"(#include <cuda_runtime.h>
extern "C" __global__ void reduce(const int* in, int* out, int n) {
  __shared__ int partial[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = i < n ? in[i] : 0;
  for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
  v += __shfl_xor_sync(0xffffffffu, v, 1) * 0;
  partial[threadIdx.x] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    int s = 0;
    for (int t = 0; t < blockDim.x; t += warpSize) s += partial[t];
    atomicAdd(out, s);
  }
  __syncwarp();
}
)";

struct Compiled {
  nvrtcResult result = NVRTC_SUCCESS;
  std::string log;
  std::vector<char> image;
};

Compiled compile(const char* source, const char* name,
                 std::vector<const char*> options = {"--gpu-architecture=sm_80"}) {
  Compiled c;
  nvrtcProgram p = nullptr;
  EXPECT_EQ(nvrtcCreateProgram(&p, source, name, 0, nullptr, nullptr), NVRTC_SUCCESS);
  c.result = nvrtcCompileProgram(p, static_cast<int>(options.size()), options.data());
  size_t n = 0;
  EXPECT_EQ(nvrtcGetProgramLogSize(p, &n), NVRTC_SUCCESS);
  c.log.resize(n);
  EXPECT_EQ(nvrtcGetProgramLog(p, c.log.data()), NVRTC_SUCCESS);
  if (c.result == NVRTC_SUCCESS) {
    EXPECT_EQ(nvrtcGetPTXSize(p, &n), NVRTC_SUCCESS);
    c.image.resize(n);
    EXPECT_EQ(nvrtcGetPTX(p, c.image.data()), NVRTC_SUCCESS);
  }
  EXPECT_EQ(nvrtcDestroyProgram(&p), NVRTC_SUCCESS);
  return c;
}

// An AMDGPU code object for the expected arch, with the kernel's symbol.
void expect_code_object(const std::vector<char>& image, const std::string& kernel) {
  ASSERT_GE(image.size(), sizeof(Elf64_Ehdr));
  Elf64_Ehdr h;
  std::memcpy(&h, image.data(), sizeof h);
  ASSERT_EQ(std::memcmp(h.e_ident, ELFMAG, SELFMAG), 0);
  EXPECT_EQ(h.e_machine, 224);  // EM_AMDGPU
  const std::string bytes(image.begin(), image.end());
  EXPECT_NE(bytes.find(std::string(1, '\0') + kernel + std::string(1, '\0')), std::string::npos)
      << "no symbol " << kernel;
  EXPECT_NE(bytes.find(std::string(1, '\0') + kernel + ".kd"), std::string::npos)
      << "no kernel descriptor";
  std::string arch = env("FAKE_HIP_ARCH", "gfx90a");
  arch = arch.substr(0, arch.find(':'));
  EXPECT_NE(bytes.find("amdgcn-amd-amdhsa--" + arch), std::string::npos)
      << "not compiled for " << arch;
}

TEST_F(Hip, NvrtcCompilesSaxpyToALoadableCodeObject) {
  const Compiled c = compile(kSaxpy, "saxpy.cu");
  ASSERT_EQ(c.result, NVRTC_SUCCESS) << c.log;
  expect_code_object(c.image, "saxpy");

  CUmodule m = nullptr;
  CUfunction f = nullptr;
  ASSERT_EQ(cuModuleLoadData(&m, c.image.data()), CUDA_SUCCESS);
  ASSERT_EQ(cuModuleGetFunction(&f, m, "saxpy"), CUDA_SUCCESS);
  EXPECT_EQ(cuModuleGetFunction(&f, m, "nope"), CUDA_ERROR_NOT_FOUND);
  ASSERT_EQ(cuModuleGetFunction(&f, m, "saxpy"), CUDA_SUCCESS);
  size_t count = 0, offset = 0, size = 0;
  ASSERT_EQ(cuFuncGetParamInfo(f, 3, &offset, &size), CUDA_SUCCESS);
  EXPECT_EQ(offset, 24u);  // float, 2 pointers (8-aligned), int: from the code object's metadata
  EXPECT_EQ(size, 4u);
  (void)count;
  int threads = 0;
  ASSERT_EQ(cuFuncGetAttribute(&threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f), CUDA_SUCCESS);
  EXPECT_EQ(threads, 1024);

  CUdeviceptr x = 0, y = 0;
  ASSERT_EQ(cuMemAlloc(&x, 1024), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAlloc(&y, 1024), CUDA_SUCCESS);
  float a = 2.0f;
  int n = 0x11223344;
  void* params[] = {&a, &x, &y, &n};
  fake().clear();
  ASSERT_EQ(cuLaunchKernel(f, 2, 1, 1, 128, 1, 1, 0, nullptr, params, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  // The packed buffer HIP got: a = 2.0f (00 00 00 40), padding, x, y, n (44 33 22 11) at 24.
  const std::string log = fake().log();
  EXPECT_NE(log.find("hipModuleLaunchKernel(function:saxpy#"), std::string::npos) << log;
  EXPECT_NE(log.find("grid 2x1x1, block 128x1x1, shared 0"), std::string::npos) << log;
  EXPECT_NE(log.find("args 28 bytes: 00000040"), std::string::npos) << log;
  EXPECT_NE(log.find(" 44332211) -> hipSuccess"), std::string::npos) << log;
  EXPECT_EQ(cuMemFree(x), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree(y), CUDA_SUCCESS);
  EXPECT_EQ(cuModuleUnload(m), CUDA_SUCCESS);
}

TEST_F(Hip, NvrtcCompilesSharedMemoryAtomicsAndShuffles) {
  const Compiled c = compile(kReduce, "reduce.cu",
                             {"-arch=compute_90", "-std=c++17", "--fmad=false", "-DUNUSED=1"});
  ASSERT_EQ(c.result, NVRTC_SUCCESS) << c.log;
  expect_code_object(c.image, "reduce");
}

TEST_F(Hip, NvrtcCompileErrorsCarryTheUsersLines) {
  const char* bad =
      "extern \"C\" __global__ void k(int* p) {\n  int ok = 1;\n  p[0] = undeclared_thing;\n}\n";
  const Compiled c = compile(bad, "mine.cu");
  EXPECT_EQ(c.result, NVRTC_ERROR_COMPILATION);
  EXPECT_NE(c.log.find("mine.cu:3:"), std::string::npos) << c.log;
  EXPECT_NE(c.log.find("undeclared_thing"), std::string::npos) << c.log;
  EXPECT_EQ(c.log.find("/tmp/comgr"), std::string::npos) << c.log;
}

TEST_F(Hip, NvrtcNameExpressionsGlobalsAndExtraArguments) {
  const char* src =
      "template <class T> __global__ void fill(T* p, T v) { p[threadIdx.x] = v; }\n"
      "__device__ int counter;\n";
  nvrtcProgram p = nullptr;
  ASSERT_EQ(nvrtcCreateProgram(&p, src, "tmpl.cu", 0, nullptr, nullptr), NVRTC_SUCCESS);
  ASSERT_EQ(nvrtcAddNameExpression(p, "&fill<int>"), NVRTC_SUCCESS);
  ASSERT_EQ(nvrtcAddNameExpression(p, "&counter"), NVRTC_SUCCESS);
  ASSERT_EQ(nvrtcCompileProgram(p, 0, nullptr), NVRTC_SUCCESS);
  const char* lowered = nullptr;
  ASSERT_EQ(nvrtcGetLoweredName(p, "&fill<int>", &lowered), NVRTC_SUCCESS);
  ASSERT_NE(lowered, nullptr);
  const std::string kernel = lowered;
  EXPECT_EQ(kernel, "_Z4fillIiEvPT_S0_");  // hipRTC 5.2 gives no name: read from the code object
  ASSERT_EQ(nvrtcGetLoweredName(p, "&counter", &lowered), NVRTC_SUCCESS);
  EXPECT_STREQ(lowered, "counter");
  size_t n = 0;
  ASSERT_EQ(nvrtcGetPTXSize(p, &n), NVRTC_SUCCESS);  // the code object ("PTX" on this backend)
  std::vector<char> image(n);
  ASSERT_EQ(nvrtcGetPTX(p, image.data()), NVRTC_SUCCESS);
  ASSERT_EQ(nvrtcDestroyProgram(&p), NVRTC_SUCCESS);

  CUmodule m = nullptr;
  CUfunction f = nullptr;
  ASSERT_EQ(cuModuleLoadData(&m, image.data()), CUDA_SUCCESS);
  ASSERT_EQ(cuModuleGetFunction(&f, m, kernel.c_str()), CUDA_SUCCESS);
  CUdeviceptr g = 0;
  size_t bytes = 0;
  ASSERT_EQ(cuModuleGetGlobal(&g, &bytes, m, "counter"), CUDA_SUCCESS);
  EXPECT_NE(g, 0u);
  EXPECT_GT(bytes, 0u);
  EXPECT_EQ(cuModuleGetGlobal(&g, &bytes, m, "no_such_variable"), CUDA_ERROR_NOT_FOUND);

  // Arguments given packed through `extra`, as CUDA allows.
  struct {
    CUdeviceptr ptr;
    int value;
  } args{0, 0x7eadbeef};
  ASSERT_EQ(cuMemAlloc(&args.ptr, 1024), CUDA_SUCCESS);
  size_t args_size = 12;
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &args, CU_LAUNCH_PARAM_BUFFER_SIZE, &args_size,
                   CU_LAUNCH_PARAM_END};
  fake().clear();
  ASSERT_EQ(cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, nullptr, nullptr, extra), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_NE(std::string(fake().log()).find(" efbead7e) -> hipSuccess"), std::string::npos)
      << fake().log();
  EXPECT_EQ(cuMemFree(args.ptr), CUDA_SUCCESS);
  EXPECT_EQ(cuModuleUnload(m), CUDA_SUCCESS);
}

// The plugin reads code objects itself (length, kernels, parameters): bad bytes must give
// "not a code object", never a crash or a read out of bounds (ASan build).
TEST_F(Hip, CodeObjectReaderSurvivesCorruption) {
  const Compiled c = compile(kSaxpy, "saxpy.cu");
  ASSERT_EQ(c.result, NVRTC_SUCCESS) << c.log;
  std::vector<unsigned char> image(c.image.begin(), c.image.end());
  std::string why;
  const auto size = cudamux::hip::image_size(image.data(), why);
  ASSERT_TRUE(size) << why;
  // The "PTX" may carry a terminating NUL after the code object.
  ASSERT_LE(*size, image.size());
  EXPECT_LE(image.size() - *size, 1u);
  image.resize(*size);
  auto co = cudamux::hip::parse_code_object(image.data(), image.size(), why);
  ASSERT_TRUE(co) << why;
  ASSERT_EQ(co->kernels.size(), 1u);
  const auto& k = co->kernels[0];
  EXPECT_EQ(k.name, "saxpy");
  ASSERT_EQ(k.args.size(), 4u);
  const std::size_t offsets[] = {0, 8, 16, 24}, sizes[] = {4, 8, 8, 4};
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(k.args[i].offset, offsets[i]) << i;
    EXPECT_EQ(k.args[i].size, sizes[i]) << i;
  }
  EXPECT_NE(co->target.find("gfx"), std::string::npos);

  // Truncations and random byte flips: any answer is fine, but no crash.
  for (std::size_t cut = 0; cut < image.size(); cut += 97) {
    (void)cudamux::hip::parse_code_object(image.data(), cut, why);
    (void)cudamux::hip::hiprtc_lowered_name(image.data(), cut, 1);
  }
  std::mt19937 rng(12345);
  for (int round = 0; round < 3000; ++round) {
    std::vector<unsigned char> bad = image;
    for (int flips = 0; flips < 4; ++flips)
      bad[rng() % bad.size()] = static_cast<unsigned char>(rng());
    (void)cudamux::hip::parse_code_object(bad.data(), bad.size(), why);
    (void)cudamux::hip::hiprtc_lowered_name(bad.data(), bad.size(), 1);
  }
  // The same code object inside a clang offload bundle (what hipcc --genco writes).
  const std::string magic = "__CLANG_OFFLOAD_BUNDLE__", id = "hipv4-amdgcn-amd-amdhsa--gfx90a";
  std::vector<unsigned char> bundle(magic.begin(), magic.end());
  auto put = [&](std::uint64_t v) {
    for (int b = 0; b < 8; ++b) bundle.push_back(static_cast<unsigned char>(v >> (8 * b)));
  };
  const std::uint64_t offset = 4096;
  put(1);
  put(offset);
  put(image.size());
  put(id.size());
  bundle.insert(bundle.end(), id.begin(), id.end());
  bundle.resize(offset, 0);
  bundle.insert(bundle.end(), image.begin(), image.end());
  const auto bundle_size = cudamux::hip::image_size(bundle.data(), why);
  ASSERT_TRUE(bundle_size) << why;
  EXPECT_EQ(*bundle_size, bundle.size());
  const auto from_bundle = cudamux::hip::parse_code_object(bundle.data(), bundle.size(), why);
  ASSERT_TRUE(from_bundle) << why;
  EXPECT_EQ(from_bundle->kernels.at(0).name, "saxpy");
  for (std::size_t cut = 0; cut < 200; ++cut)
    (void)cudamux::hip::parse_code_object(bundle.data(), cut, why);

  std::vector<unsigned char> not_elf(64, 0x41);
  EXPECT_FALSE(cudamux::hip::image_size(not_elf.data(), why));
  EXPECT_FALSE(cudamux::hip::parse_code_object(not_elf.data(), not_elf.size(), why));
}

TEST_F(Hip, ModuleLoadRejectsNonAmdgpuImages) {
  CUmodule m = nullptr;
  const char ptx[] = ".version 8.0\n.target sm_80\n";
  EXPECT_EQ(cuModuleLoadData(&m, ptx), CUDA_ERROR_INVALID_IMAGE);
  EXPECT_EQ(std::string(fake().log()).find("hipModuleLoadData"), std::string::npos);
}

// --- CUDA arrays, texture and surface objects over HIP's (issue 17) ---

struct LiveImages {
  int arrays = 0, mipmapped = 0, textures = 0, surfaces = 0;
  bool operator==(const LiveImages&) const = default;
};
LiveImages live_images() {
  static auto* fn = reinterpret_cast<void (*)(int*, int*, int*, int*)>(dlsym(
      dlopen(env("CUDAMUX_HIP_RUNTIME").c_str(), RTLD_NOW | RTLD_LOCAL), "fakehip_live_images"));
  LiveImages l;
  fn(&l.arrays, &l.mipmapped, &l.textures, &l.surfaces);
  return l;
}
// The fake's storage of the array created (or level asked for) last: packed rows and slices.
std::vector<unsigned char> last_array_bytes() {
  static auto* fn = reinterpret_cast<unsigned char* (*)(size_t*)>(dlsym(
      dlopen(env("CUDAMUX_HIP_RUNTIME").c_str(), RTLD_NOW | RTLD_LOCAL), "fakehip_last_array"));
  size_t n = 0;
  const unsigned char* p = fn(&n);
  return p ? std::vector<unsigned char>(p, p + n) : std::vector<unsigned char>();
}
bool logged(const std::string& needle) {
  return std::string(fake().log()).find(needle) != std::string::npos;
}

CUDA_ARRAY3D_DESCRIPTOR array_desc(size_t w, size_t h, size_t d, CUarray_format f, unsigned ch,
                                   unsigned flags = 0) {
  CUDA_ARRAY3D_DESCRIPTOR desc{};
  desc.Width = w;
  desc.Height = h;
  desc.Depth = d;
  desc.Format = f;
  desc.NumChannels = ch;
  desc.Flags = flags;
  return desc;
}

std::vector<unsigned char> bytes_pattern(size_t n, unsigned seed) {
  std::vector<unsigned char> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<unsigned char>(i * 37 + seed * 11 + i / 256);
  return v;
}

TEST_F(Hip, ArraysOfEveryShapeAndFormatReachHipTranslated) {
  struct Case {
    CUDA_ARRAY3D_DESCRIPTOR desc;
    hipArray_Format hip_format;
    unsigned hip_flags;
  };
  const Case cases[] = {
      {array_desc(64, 0, 0, CU_AD_FORMAT_FLOAT, 1), HIP_AD_FORMAT_FLOAT, 0},
      {array_desc(16, 8, 0, CU_AD_FORMAT_UNSIGNED_INT8, 4), HIP_AD_FORMAT_UNSIGNED_INT8, 0},
      {array_desc(8, 4, 3, CU_AD_FORMAT_HALF, 2), HIP_AD_FORMAT_HALF, 0},
      {array_desc(8, 8, 4, CU_AD_FORMAT_SIGNED_INT16, 1, CUDA_ARRAY3D_LAYERED),
       HIP_AD_FORMAT_SIGNED_INT16, hipArrayLayered},
      {array_desc(32, 0, 5, CU_AD_FORMAT_UNSIGNED_INT32, 2, CUDA_ARRAY3D_LAYERED),
       HIP_AD_FORMAT_UNSIGNED_INT32, hipArrayLayered},
      // SURFACE_LDST is CUDA's permission only: HIP 5.2 would refuse the bit.
      {array_desc(16, 16, 0, CU_AD_FORMAT_SIGNED_INT8, 1, CUDA_ARRAY3D_SURFACE_LDST),
       HIP_AD_FORMAT_SIGNED_INT8, 0},
      {array_desc(4, 4, 4, CU_AD_FORMAT_SIGNED_INT32, 4), HIP_AD_FORMAT_SIGNED_INT32, 0},
      {array_desc(8, 2, 0, CU_AD_FORMAT_UNSIGNED_INT16, 2), HIP_AD_FORMAT_UNSIGNED_INT16, 0},
  };
  const LiveImages before = live_images();
  for (const Case& c : cases) {
    fake().clear();
    CUarray a = nullptr;
    ASSERT_EQ(cuArray3DCreate_v2(&a, &c.desc), CUDA_SUCCESS);
    char want[160];
    std::snprintf(want, sizeof want,
                  "hipArray3DCreate({%zux%zux%zu, format 0x%x, %u ch, flags 0x%x}) -> hipSuccess",
                  c.desc.Width, c.desc.Height, c.desc.Depth, static_cast<unsigned>(c.hip_format),
                  c.desc.NumChannels, c.hip_flags);
    EXPECT_TRUE(logged(want)) << want << "\n" << fake().log();
    CUDA_ARRAY3D_DESCRIPTOR got{};
    ASSERT_EQ(cuArray3DGetDescriptor_v2(&got, a), CUDA_SUCCESS);
    EXPECT_EQ(std::memcmp(&got, &c.desc, sizeof got), 0);
    EXPECT_EQ(live_images().arrays, before.arrays + 1);
    ASSERT_EQ(cuArrayDestroy(a), CUDA_SUCCESS);
    EXPECT_TRUE(logged("hipArrayDestroy(array")) << fake().log();
    EXPECT_EQ(live_images(), before);
  }
  // The 2D entry point and its descriptor query.
  CUDA_ARRAY_DESCRIPTOR d2{};
  d2.Width = 24;
  d2.Height = 6;
  d2.Format = CU_AD_FORMAT_HALF;
  d2.NumChannels = 4;
  CUarray a = nullptr;
  fake().clear();
  ASSERT_EQ(cuArrayCreate_v2(&a, &d2), CUDA_SUCCESS);
  EXPECT_TRUE(logged("hipArray3DCreate({24x6x0, format 0x10, 4 ch, flags 0x0}) -> hipSuccess"))
      << fake().log();
  CUDA_ARRAY_DESCRIPTOR back{};
  ASSERT_EQ(cuArrayGetDescriptor_v2(&back, a), CUDA_SUCCESS);
  EXPECT_EQ(back.Width, 24u);
  EXPECT_EQ(back.Height, 6u);
  EXPECT_EQ(back.Format, CU_AD_FORMAT_HALF);
  EXPECT_EQ(back.NumChannels, 4u);
  ASSERT_EQ(cuArrayDestroy(a), CUDA_SUCCESS);
  // Arrays die with their context.
  ASSERT_EQ(cuArrayCreate_v2(&a, &d2), CUDA_SUCCESS);
  EXPECT_EQ(cuCtxDestroy(ctx), CUDA_SUCCESS);
  ctx = nullptr;
  EXPECT_EQ(live_images(), before);
}

TEST_F(Hip, HostArrayHostCopiesMoveBytesWithPitchesAndOffsets) {
  // 2D: 16 x 8 elements of 4 bytes (UNSIGNED_INT16 x 2), filled from rows of 80 bytes.
  CUarray a = nullptr;
  const auto d = array_desc(16, 8, 0, CU_AD_FORMAT_UNSIGNED_INT16, 2);
  ASSERT_EQ(cuArray3DCreate_v2(&a, &d), CUDA_SUCCESS);
  const auto src = bytes_pattern(80 * 8, 1);
  CUDA_MEMCPY2D in{};
  in.srcMemoryType = CU_MEMORYTYPE_HOST;
  in.srcHost = src.data();
  in.srcPitch = 80;
  in.dstMemoryType = CU_MEMORYTYPE_ARRAY;
  in.dstArray = a;
  in.WidthInBytes = 64;
  in.Height = 8;
  fake().clear();
  ASSERT_EQ(cuMemcpy2D_v2(&in), CUDA_SUCCESS);
  EXPECT_TRUE(
      logged("hipDrvMemcpy3DAsync({src Host host hostmem dev hostmem pitch 80 height 8 "
             "x 0 y 0 z 0, dst array array"))
      << fake().log();
  std::vector<unsigned char> storage = last_array_bytes();
  ASSERT_EQ(storage.size(), 16u * 8 * 4);
  for (size_t y = 0; y < 8; ++y)
    ASSERT_EQ(std::memcmp(&storage[y * 64], &src[y * 80], 64), 0) << "row " << y;
  // Back: a box of 6 elements from (2, 3), 4 rows, to (4 bytes, row 1) of rows of 40 bytes.
  std::vector<unsigned char> out(40 * 6, 0xee);
  CUDA_MEMCPY2D back{};
  back.srcMemoryType = CU_MEMORYTYPE_ARRAY;
  back.srcArray = a;
  back.srcXInBytes = 8;
  back.srcY = 3;
  back.dstMemoryType = CU_MEMORYTYPE_HOST;
  back.dstHost = out.data();
  back.dstPitch = 40;
  back.dstXInBytes = 4;
  back.dstY = 1;
  back.WidthInBytes = 24;
  back.Height = 4;
  ASSERT_EQ(cuMemcpy2D_v2(&back), CUDA_SUCCESS);
  for (size_t y = 0; y < 6; ++y)
    for (size_t x = 0; x < 40; ++x) {
      const bool inside = y >= 1 && y < 5 && x >= 4 && x < 28;
      const unsigned char want = inside ? src[(y - 1 + 3) * 80 + 8 + (x - 4)] : 0xee;
      ASSERT_EQ(out[y * 40 + x], want) << "x " << x << " y " << y;
    }
  ASSERT_EQ(cuArrayDestroy(a), CUDA_SUCCESS);

  // 3D: 8 x 4 x 3 floats; a 4 x 2 x 2 box at (1, 1, 1) from host slices of 5 rows of 40 bytes.
  const auto d3 = array_desc(8, 4, 3, CU_AD_FORMAT_FLOAT, 1);
  ASSERT_EQ(cuArray3DCreate_v2(&a, &d3), CUDA_SUCCESS);
  const auto box = bytes_pattern(40 * 5 * 2, 2);
  CUDA_MEMCPY3D p{};
  p.srcMemoryType = CU_MEMORYTYPE_HOST;
  p.srcHost = box.data();
  p.srcPitch = 40;
  p.srcHeight = 5;
  p.dstMemoryType = CU_MEMORYTYPE_ARRAY;
  p.dstArray = a;
  p.dstXInBytes = 4;
  p.dstY = 1;
  p.dstZ = 1;
  p.WidthInBytes = 16;
  p.Height = 2;
  p.Depth = 2;
  fake().clear();
  ASSERT_EQ(cuMemcpy3D_v2(&p), CUDA_SUCCESS);
  EXPECT_TRUE(logged("x 4 y 1 z 1, 16x2x2}")) << fake().log();
  storage = last_array_bytes();
  ASSERT_EQ(storage.size(), 8u * 4 * 3 * 4);
  for (size_t z = 0; z < 3; ++z)
    for (size_t y = 0; y < 4; ++y)
      for (size_t x = 0; x < 32; ++x) {
        const bool inside = z >= 1 && y >= 1 && y < 3 && x >= 4 && x < 20;
        const size_t at = (z * 4 + y) * 32 + x;
        if (inside)
          ASSERT_EQ(storage[at], box[((z - 1) * 5 + (y - 1)) * 40 + (x - 4)]) << at;
        else
          ASSERT_EQ(storage[at], 0xcd) << "untouched byte " << at;
      }
  // The whole array back into slices of 6 rows of 48 bytes: the same bytes.
  std::vector<unsigned char> whole(48 * 6 * 3, 0);
  CUDA_MEMCPY3D q{};
  q.srcMemoryType = CU_MEMORYTYPE_ARRAY;
  q.srcArray = a;
  q.dstMemoryType = CU_MEMORYTYPE_HOST;
  q.dstHost = whole.data();
  q.dstPitch = 48;
  q.dstHeight = 6;
  q.WidthInBytes = 32;
  q.Height = 4;
  q.Depth = 3;
  ASSERT_EQ(cuMemcpy3D_v2(&q), CUDA_SUCCESS);
  for (size_t z = 0; z < 3; ++z)
    for (size_t y = 0; y < 4; ++y)
      ASSERT_EQ(std::memcmp(&whole[(z * 6 + y) * 48], &storage[(z * 4 + y) * 32], 32), 0);

  // Device memory ends: pitched device rows to the array and back through linear memory.
  CUdeviceptr rows = 0;
  size_t pitch = 0;
  ASSERT_EQ(cuMemAllocPitch(&rows, &pitch, 32, 4, 4), CUDA_SUCCESS);
  CUDA_MEMCPY2D to_dev{};
  to_dev.srcMemoryType = CU_MEMORYTYPE_ARRAY;
  to_dev.srcArray = a;
  to_dev.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  to_dev.dstDevice = rows;
  to_dev.dstPitch = pitch;
  to_dev.WidthInBytes = 32;
  to_dev.Height = 4;
  fake().clear();
  ASSERT_EQ(cuMemcpy2D_v2(&to_dev), CUDA_SUCCESS);
  EXPECT_TRUE(logged("dst Device host dev")) << fake().log();
  for (size_t y = 0; y < 4; ++y)  // the fake's device memory is host memory
    EXPECT_EQ(std::memcmp(reinterpret_cast<unsigned char*>(rows) + y * pitch, &storage[y * 32], 32),
              0);
  // 1D along row 0 from a byte offset (cuMemcpyHtoA / AtoH).
  const auto row = bytes_pattern(12, 3);
  ASSERT_EQ(cuMemcpyHtoA_v2(a, 8, row.data(), 12), CUDA_SUCCESS);
  std::vector<unsigned char> row_back(12);
  ASSERT_EQ(cuMemcpyAtoH_v2(row_back.data(), a, 8, 12), CUDA_SUCCESS);
  EXPECT_EQ(row_back, row);
  EXPECT_EQ(std::memcmp(&last_array_bytes()[8], row.data(), 12), 0);
  EXPECT_EQ(cuMemFree(rows), CUDA_SUCCESS);
  ASSERT_EQ(cuArrayDestroy(a), CUDA_SUCCESS);
}

TEST_F(Hip, ArrayToArrayCopies) {
  CUarray from = nullptr, to = nullptr, bytes = nullptr;
  const auto df = array_desc(8, 4, 0, CU_AD_FORMAT_FLOAT, 1);
  const auto dt = array_desc(8, 4, 0, CU_AD_FORMAT_UNSIGNED_INT32, 1);  // also 4 bytes
  ASSERT_EQ(cuArray3DCreate_v2(&from, &df), CUDA_SUCCESS);
  ASSERT_EQ(cuArray3DCreate_v2(&to, &dt), CUDA_SUCCESS);
  const auto src = bytes_pattern(32 * 4, 4);
  CUDA_MEMCPY2D fill{};
  fill.srcMemoryType = CU_MEMORYTYPE_HOST;
  fill.srcHost = src.data();
  fill.srcPitch = 32;
  fill.dstMemoryType = CU_MEMORYTYPE_ARRAY;
  fill.dstArray = from;
  fill.WidthInBytes = 32;
  fill.Height = 4;
  ASSERT_EQ(cuMemcpy2D_v2(&fill), CUDA_SUCCESS);
  // A 3 x 2 box from (1, 1) to (4, 2).
  CUDA_MEMCPY2D c{};
  c.srcMemoryType = CU_MEMORYTYPE_ARRAY;
  c.srcArray = from;
  c.srcXInBytes = 4;
  c.srcY = 1;
  c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
  c.dstArray = to;
  c.dstXInBytes = 16;
  c.dstY = 2;
  c.WidthInBytes = 12;
  c.Height = 2;
  ASSERT_EQ(cuMemcpy2D_v2(&c), CUDA_SUCCESS);
  std::vector<unsigned char> out(32 * 4);
  ASSERT_EQ(cuMemcpyAtoH_v2(out.data(), to, 0, 32), CUDA_SUCCESS);  // row 0: untouched
  const std::vector<unsigned char> untouched(32, 0xcd);
  EXPECT_EQ(std::vector<unsigned char>(out.begin(), out.begin() + 32), untouched);
  CUDA_MEMCPY2D read{};
  read.srcMemoryType = CU_MEMORYTYPE_ARRAY;
  read.srcArray = to;
  read.dstMemoryType = CU_MEMORYTYPE_HOST;
  read.dstHost = out.data();
  read.dstPitch = 32;
  read.WidthInBytes = 32;
  read.Height = 4;
  ASSERT_EQ(cuMemcpy2D_v2(&read), CUDA_SUCCESS);
  for (size_t y = 2; y < 4; ++y)
    EXPECT_EQ(std::memcmp(&out[y * 32 + 16], &src[(y - 1) * 32 + 4], 12), 0) << y;
  // cuMemcpyAtoA along row 0.
  ASSERT_EQ(cuMemcpyAtoA_v2(to, 4, from, 8, 16), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyAtoH_v2(out.data(), to, 0, 32), CUDA_SUCCESS);
  EXPECT_EQ(std::memcmp(&out[4], &src[8], 16), 0);
  // Elements of different sizes: HIP 5.2 would count both ends in the source's.
  const auto db = array_desc(32, 4, 0, CU_AD_FORMAT_UNSIGNED_INT8, 1);
  ASSERT_EQ(cuArray3DCreate_v2(&bytes, &db), CUDA_SUCCESS);
  fake().clear();
  EXPECT_EQ(cuMemcpyAtoA_v2(bytes, 0, from, 0, 16), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_FALSE(logged("hipDrvMemcpy3DAsync")) << fake().log();
  for (CUarray x : {from, to, bytes}) EXPECT_EQ(cuArrayDestroy(x), CUDA_SUCCESS);
}

TEST_F(Hip, MipmappedArrayLevelsAreHipsLevelViews) {
  const LiveImages before = live_images();
  const auto d = array_desc(16, 8, 0, CU_AD_FORMAT_FLOAT, 1);
  CUmipmappedArray m = nullptr;
  fake().clear();
  ASSERT_EQ(cuMipmappedArrayCreate(&m, &d, 3), CUDA_SUCCESS);
  EXPECT_TRUE(
      logged("hipMipmappedArrayCreate({16x8x0, format 0x20, 1 ch, flags 0x0}, 3 levels) "
             "-> hipSuccess"))
      << fake().log();
  CUarray level = nullptr, again = nullptr;
  ASSERT_EQ(cuMipmappedArrayGetLevel(&level, m, 1), CUDA_SUCCESS);
  ASSERT_EQ(cuMipmappedArrayGetLevel(&again, m, 1), CUDA_SUCCESS);
  EXPECT_EQ(level, again);
  const std::string log = fake().log();
  EXPECT_EQ(log.find("hipMipmappedArrayGetLevel("), log.rfind("hipMipmappedArrayGetLevel("))
      << "one HIP level view per level:\n"
      << log;
  CUDA_ARRAY3D_DESCRIPTOR ld{};
  ASSERT_EQ(cuArray3DGetDescriptor_v2(&ld, level), CUDA_SUCCESS);
  EXPECT_EQ(ld.Width, 8u);
  EXPECT_EQ(ld.Height, 4u);
  const auto src = bytes_pattern(8 * 4 * 4, 5);
  CUDA_MEMCPY2D in{};
  in.srcMemoryType = CU_MEMORYTYPE_HOST;
  in.srcHost = src.data();
  in.srcPitch = 32;
  in.dstMemoryType = CU_MEMORYTYPE_ARRAY;
  in.dstArray = level;
  in.WidthInBytes = 32;
  in.Height = 4;
  ASSERT_EQ(cuMemcpy2D_v2(&in), CUDA_SUCCESS);
  EXPECT_EQ(last_array_bytes(), src);  // level 1's storage
  std::vector<unsigned char> out(src.size());
  EXPECT_EQ(cuMemcpyAtoH_v2(out.data(), level, 0, out.size()), CUDA_ERROR_INVALID_VALUE)
      << "row 0 holds 32 bytes only";
  CUDA_MEMCPY2D back{};
  back.srcMemoryType = CU_MEMORYTYPE_ARRAY;
  back.srcArray = level;
  back.dstMemoryType = CU_MEMORYTYPE_HOST;
  back.dstHost = out.data();
  back.dstPitch = 32;
  back.WidthInBytes = 32;
  back.Height = 4;
  ASSERT_EQ(cuMemcpy2D_v2(&back), CUDA_SUCCESS);
  EXPECT_EQ(out, src);
  fake().clear();
  ASSERT_EQ(cuMipmappedArrayDestroy(m), CUDA_SUCCESS);
  const std::string end = fake().log();
  EXPECT_NE(end.find("hipArrayDestroy(mipmapped"), std::string::npos) << end;
  EXPECT_LT(end.find("hipArrayDestroy(mipmapped"), end.find("hipMipmappedArrayDestroy(mipmapped"))
      << end;
  EXPECT_EQ(live_images(), before);
}

CUDA_TEXTURE_DESC texture_desc(CUaddress_mode mode, CUfilter_mode filter, unsigned flags) {
  CUDA_TEXTURE_DESC t{};
  for (auto& m : t.addressMode) m = mode;
  t.filterMode = filter;
  t.flags = flags;
  t.borderColor[0] = 0.5f;
  t.borderColor[3] = 1.0f;
  return t;
}

TEST_F(Hip, TextureAndSurfaceObjectsCarryTranslatedDescriptors) {
  const LiveImages before = live_images();
  CUarray a = nullptr;
  const auto d = array_desc(16, 16, 0, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_SURFACE_LDST);
  ASSERT_EQ(cuArray3DCreate_v2(&a, &d), CUDA_SUCCESS);
  CUDA_RESOURCE_DESC r{};
  r.resType = CU_RESOURCE_TYPE_ARRAY;
  r.res.array.hArray = a;
  const CUDA_TEXTURE_DESC t =
      texture_desc(CU_TR_ADDRESS_MODE_BORDER, CU_TR_FILTER_MODE_LINEAR,
                   CU_TRSF_NORMALIZED_COORDINATES | CU_TRSF_READ_AS_INTEGER);
  CUtexObject tex = 0;
  fake().clear();
  ASSERT_EQ(cuTexObjectCreate(&tex, &r, &t, nullptr), CUDA_SUCCESS);
  EXPECT_TRUE(logged("hipTexObjectCreate({array array")) << fake().log();
  EXPECT_TRUE(
      logged("}, {address 3,3,3 filter 1 flags 0x3 mipmap filter 0 aniso 0 bias 0 clamp "
             "0..0 border 0.5,0,0,1}, no view) -> hipSuccess texture"))
      << fake().log();
  CUDA_RESOURCE_DESC rback{};
  ASSERT_EQ(cuTexObjectGetResourceDesc(&rback, tex), CUDA_SUCCESS);
  EXPECT_EQ(rback.resType, CU_RESOURCE_TYPE_ARRAY);
  EXPECT_EQ(rback.res.array.hArray, a);  // the program's handle, not HIP's
  CUDA_TEXTURE_DESC tback{};
  ASSERT_EQ(cuTexObjectGetTextureDesc(&tback, tex), CUDA_SUCCESS);
  EXPECT_EQ(std::memcmp(&tback, &t, sizeof t), 0);
  CUDA_RESOURCE_VIEW_DESC vback{};
  EXPECT_EQ(cuTexObjectGetResourceViewDesc(&vback, tex), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(live_images().textures, before.textures + 1);
  ASSERT_EQ(cuTexObjectDestroy(tex), CUDA_SUCCESS);
  EXPECT_TRUE(logged("hipTexObjectDestroy(texture")) << fake().log();

  // A view of the whole array in another format of the same size; a view in the array's own
  // format is no view to HIP.
  CUDA_RESOURCE_VIEW_DESC v{};
  v.format = CU_RES_VIEW_FORMAT_UINT_1X32;
  v.width = 16;
  v.height = 16;
  fake().clear();
  ASSERT_EQ(cuTexObjectCreate(&tex, &r, &t, &v), CUDA_SUCCESS);
  EXPECT_TRUE(logged(", view {format 0xd 16x16x0 levels 0..0 layers 0..0}) -> hipSuccess"))
      << fake().log();
  ASSERT_EQ(cuTexObjectGetResourceViewDesc(&vback, tex), CUDA_SUCCESS);
  EXPECT_EQ(vback.format, CU_RES_VIEW_FORMAT_UINT_1X32);
  ASSERT_EQ(cuTexObjectDestroy(tex), CUDA_SUCCESS);
  v.format = CU_RES_VIEW_FORMAT_NONE;
  fake().clear();
  ASSERT_EQ(cuTexObjectCreate(&tex, &r, &t, &v), CUDA_SUCCESS);
  EXPECT_TRUE(logged("no view) -> hipSuccess")) << fake().log();
  ASSERT_EQ(cuTexObjectDestroy(tex), CUDA_SUCCESS);

  // Linear and pitched device memory.
  CUdeviceptr lin = 0, pitched = 0;
  size_t pitch = 0;
  ASSERT_EQ(cuMemAlloc(&lin, 4096), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAllocPitch(&pitched, &pitch, 64 * 8, 32, 16), CUDA_SUCCESS);
  CUDA_RESOURCE_DESC lr{};
  lr.resType = CU_RESOURCE_TYPE_LINEAR;
  lr.res.linear.devPtr = lin;
  lr.res.linear.format = CU_AD_FORMAT_SIGNED_INT16;
  lr.res.linear.numChannels = 2;
  lr.res.linear.sizeInBytes = 4096;
  const CUDA_TEXTURE_DESC point =
      texture_desc(CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_POINT, 0);
  fake().clear();
  ASSERT_EQ(cuTexObjectCreate(&tex, &lr, &point, nullptr), CUDA_SUCCESS);
  EXPECT_TRUE(logged("hipTexObjectCreate({linear dev")) << fake().log();
  EXPECT_TRUE(logged(" format 0x9 x2 4096 bytes}, {address 1,1,1 filter 0 flags 0x0"))
      << fake().log();
  ASSERT_EQ(cuTexObjectDestroy(tex), CUDA_SUCCESS);
  CUDA_RESOURCE_DESC pr{};
  pr.resType = CU_RESOURCE_TYPE_PITCH2D;
  pr.res.pitch2D.devPtr = pitched;
  pr.res.pitch2D.format = CU_AD_FORMAT_HALF;
  pr.res.pitch2D.numChannels = 4;
  pr.res.pitch2D.width = 64;
  pr.res.pitch2D.height = 32;
  pr.res.pitch2D.pitchInBytes = pitch;
  fake().clear();
  ASSERT_EQ(cuTexObjectCreate(&tex, &pr, &point, nullptr), CUDA_SUCCESS);
  EXPECT_TRUE(logged(" format 0x10 x4 64x32 pitch " + std::to_string(pitch) + "}")) << fake().log();
  ASSERT_EQ(cuTexObjectDestroy(tex), CUDA_SUCCESS);

  // A surface over the SURFACE_LDST array.
  CUsurfObject surf = 0;
  fake().clear();
  ASSERT_EQ(cuSurfObjectCreate(&surf, &r), CUDA_SUCCESS);
  EXPECT_TRUE(logged("hipCreateSurfaceObject(array array")) << fake().log();
  ASSERT_EQ(cuSurfObjectGetResourceDesc(&rback, surf), CUDA_SUCCESS);
  EXPECT_EQ(rback.res.array.hArray, a);
  EXPECT_EQ(live_images().surfaces, before.surfaces + 1);
  ASSERT_EQ(cuSurfObjectDestroy(surf), CUDA_SUCCESS);
  EXPECT_TRUE(logged("hipDestroySurfaceObject(surface")) << fake().log();
  EXPECT_EQ(cuMemFree(lin), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree(pitched), CUDA_SUCCESS);
  ASSERT_EQ(cuArrayDestroy(a), CUDA_SUCCESS);
  EXPECT_EQ(live_images(), before);
}

// What HIP 5.2 lacks: CUDA_ERROR_NOT_SUPPORTED (docs/backends/hip.md), nothing left behind.
TEST_F(Hip, ImagesHip52LacksAreNotSupported) {
  const LiveImages before = live_images();
  CUarray a = nullptr;
  fake().clear();
  const CUDA_ARRAY3D_DESCRIPTOR refused[] = {
      array_desc(16, 16, 0, CU_AD_FORMAT_UNORM_INT8X1, 1),  // no normalized formats
      array_desc(16, 16, 6, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_CUBEMAP),
      array_desc(16, 16, 0, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_TEXTURE_GATHER),
      array_desc(16, 16, 0, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_DEPTH_TEXTURE),
  };
  for (const auto& d : refused) {
    EXPECT_EQ(cuArray3DCreate_v2(&a, &d), CUDA_ERROR_NOT_SUPPORTED) << d.Format << " " << d.Flags;
    CUmipmappedArray m = nullptr;
    EXPECT_EQ(cuMipmappedArrayCreate(&m, &d, 2), CUDA_ERROR_NOT_SUPPORTED);
  }
  EXPECT_FALSE(logged("hipArray3DCreate")) << fake().log();
  EXPECT_FALSE(logged("hipMipmappedArrayCreate")) << fake().log();
  // Bad descriptors are still CUDA's errors first.
  const auto zero = array_desc(0, 16, 0, CU_AD_FORMAT_FLOAT, 1);
  EXPECT_EQ(cuArray3DCreate_v2(&a, &zero), CUDA_ERROR_INVALID_VALUE);

  // Texture objects: over a mipmapped array; address modes that differ between the
  // coordinates of the array (HIP applies the first to all); CUDA-only flags; a view of part
  // of a layered array; anisotropy (HIP 5.2 refuses it itself).
  CUmipmappedArray m = nullptr;
  const auto d2 = array_desc(16, 16, 0, CU_AD_FORMAT_FLOAT, 1);
  ASSERT_EQ(cuMipmappedArrayCreate(&m, &d2, 2), CUDA_SUCCESS);
  CUDA_RESOURCE_DESC mr{};
  mr.resType = CU_RESOURCE_TYPE_MIPMAPPED_ARRAY;
  mr.res.mipmap.hMipmappedArray = m;
  CUDA_TEXTURE_DESC t = texture_desc(CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_POINT,
                                     CU_TRSF_NORMALIZED_COORDINATES);
  CUtexObject tex = 0;
  fake().clear();
  EXPECT_EQ(cuTexObjectCreate(&tex, &mr, &t, nullptr), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_FALSE(logged("hipTexObjectCreate")) << fake().log();

  ASSERT_EQ(cuArray3DCreate_v2(&a, &d2), CUDA_SUCCESS);
  CUDA_RESOURCE_DESC r{};
  r.resType = CU_RESOURCE_TYPE_ARRAY;
  r.res.array.hArray = a;
  t.addressMode[1] = CU_TR_ADDRESS_MODE_WRAP;
  EXPECT_EQ(cuTexObjectCreate(&tex, &r, &t, nullptr), CUDA_ERROR_NOT_SUPPORTED);
  CUarray one_d = nullptr;
  const auto d1 = array_desc(64, 0, 0, CU_AD_FORMAT_FLOAT, 1);
  ASSERT_EQ(cuArray3DCreate_v2(&one_d, &d1), CUDA_SUCCESS);
  CUDA_RESOURCE_DESC r1 = r;
  r1.res.array.hArray = one_d;
  ASSERT_EQ(cuTexObjectCreate(&tex, &r1, &t, nullptr), CUDA_SUCCESS)
      << "a 1D array reads x's mode only";
  EXPECT_EQ(cuTexObjectDestroy(tex), CUDA_SUCCESS);
  t.addressMode[1] = CU_TR_ADDRESS_MODE_CLAMP;
  for (unsigned flag : {CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION, CU_TRSF_SEAMLESS_CUBEMAP}) {
    CUDA_TEXTURE_DESC f = t;
    f.flags |= flag;
    EXPECT_EQ(cuTexObjectCreate(&tex, &r, &f, nullptr), CUDA_ERROR_NOT_SUPPORTED) << flag;
  }
  fake().clear();
  EXPECT_FALSE(logged("hipTexObjectCreate")) << fake().log();
  CUarray layered = nullptr;
  const auto dl = array_desc(8, 8, 4, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_LAYERED);
  ASSERT_EQ(cuArray3DCreate_v2(&layered, &dl), CUDA_SUCCESS);
  CUDA_RESOURCE_DESC rl = r;
  rl.res.array.hArray = layered;
  CUDA_RESOURCE_VIEW_DESC v{};
  v.format = CU_RES_VIEW_FORMAT_FLOAT_1X32;
  v.width = 8;
  v.height = 8;
  v.depth = 4;
  v.firstLayer = 1;
  v.lastLayer = 2;
  EXPECT_EQ(cuTexObjectCreate(&tex, &rl, &t, &v), CUDA_ERROR_NOT_SUPPORTED);
  v.firstLayer = 0;
  v.lastLayer = 3;
  ASSERT_EQ(cuTexObjectCreate(&tex, &rl, &t, &v), CUDA_SUCCESS) << "every layer: only a format";
  EXPECT_EQ(cuTexObjectDestroy(tex), CUDA_SUCCESS);
  t.maxAnisotropy = 4;
  fake().clear();
  EXPECT_EQ(cuTexObjectCreate(&tex, &r, &t, nullptr), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_TRUE(logged("aniso 4 ")) << fake().log();
  EXPECT_TRUE(logged("-> hipErrorNotSupported")) << fake().log();

  for (CUarray x : {a, one_d, layered}) EXPECT_EQ(cuArrayDestroy(x), CUDA_SUCCESS);
  EXPECT_EQ(cuMipmappedArrayDestroy(m), CUDA_SUCCESS);
  EXPECT_EQ(live_images(), before);
}

// --- scenarios run as their own processes (see CMakeLists.txt; DISABLED_ keeps them out of
// the discovered list, which runs without their environment) ---

// FAKE_HIP_ARCH names an arch hipRTC 5.2 would abort the process on: the backend refuses
// before calling hipRTC, and the process lives on.
TEST(HipScenario, DISABLED_UnsupportedDeviceArchIsRefusedNotFatal) {
  ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
  const Compiled c = compile(kSaxpy, "saxpy.cu");
  EXPECT_EQ(c.result, NVRTC_ERROR_INVALID_OPTION);
  EXPECT_NE(c.log.find("gfx90a"), std::string::npos)
      << "the log lists the supported archs: " << c.log;
}

// [hip] offload_arch names an arch hipRTC 5.2 would abort on: a configuration error at
// cuInit (and at NVRTC, which loads the same configuration), not a crash.
TEST(HipScenario, DISABLED_BadOffloadArchInConfigIsAnError) {
  const CUresult r = cuInit(0);
  EXPECT_NE(r, CUDA_SUCCESS);
  EXPECT_NE(r, CUDA_ERROR_NO_DEVICE);
  nvrtcProgram p = nullptr;
  ASSERT_EQ(nvrtcCreateProgram(&p, kSaxpy, "saxpy.cu", 0, nullptr, nullptr), NVRTC_SUCCESS);
  EXPECT_NE(nvrtcCompileProgram(p, 0, nullptr), NVRTC_SUCCESS);
  EXPECT_EQ(nvrtcDestroyProgram(&p), NVRTC_SUCCESS);
}

// No AMD GPU (FAKE_HIP_DEVICES=0) or no ROCm at all (CUDAMUX_HIP_RUNTIME names nothing).
TEST(HipScenario, DISABLED_NoDeviceIsCudaErrorNoDevice) {
  if (env("CUDAMUX_HIP_RUNTIME").empty() && access("/dev/kfd", F_OK) == 0)
    GTEST_SKIP() << "ROCm's runtime on a machine with an AMD GPU driver: not a no-device scenario";
  EXPECT_EQ(cuInit(0), CUDA_ERROR_NO_DEVICE);
  // NVRTC still works: hipRTC compiles for [hip] offload_arch (default gfx90a).
  const Compiled c = compile(kSaxpy, "saxpy.cu");
  ASSERT_EQ(c.result, NVRTC_SUCCESS) << c.log;
  expect_code_object(c.image, "saxpy");
}

}  // namespace
