// cuLink*: programs compiled by the backend's NVRTC (cudamux's libnvrtc), linked into one
// module whose kernels all run. On NVIDIA's driver the inputs are PTX; on the mock they are
// its own images, linked into a bundle.
#include <nvrtc.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "conformance.hpp"
#include "nvrtc_compile.hpp"

namespace conformance {
namespace {

using Link = Driver;

constexpr char kSetSource[] = R"(extern "C" __global__ void set_values(unsigned* p, unsigned v) {
  p[blockIdx.x * blockDim.x + threadIdx.x] = v + threadIdx.x;
}
)";
constexpr char kAddSource[] = R"(extern "C" __global__ void add_values(unsigned* p, unsigned v) {
  p[blockIdx.x * blockDim.x + threadIdx.x] += v;
}
)";

// The backend's NVRTC output ("PTX"); false with the log on failure.
bool compile(const char* source, const char* name, std::string& image, std::string& log) {
  return conformance::compile_ptx(source, name, image, log);
}

class LinkedPrograms : public Link {
 protected:
  void SetUp() override {
    Link::SetUp();
    std::string log;
    ASSERT_TRUE(compile(kSetSource, "set.cu", set_image, log)) << log;
    ASSERT_TRUE(compile(kAddSource, "add.cu", add_image, log)) << log;
  }
  std::string set_image, add_image;
};

TEST_F(LinkedPrograms, TwoProgramsLinkIntoOneModuleWhoseKernelsRun) {
  char info[4096] = {}, error[4096] = {};
  float wall_ms = -1;
  CUjit_option opts[] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                         CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                         CU_JIT_WALL_TIME};
  void* values[] = {info, reinterpret_cast<void*>(sizeof info), error,
                    reinterpret_cast<void*>(sizeof error), nullptr};
  CUlinkState state = nullptr;
  ASSERT_OK(cuLinkCreate(5, opts, values, &state));
  ASSERT_NE(state, nullptr);
  ASSERT_OK(cuLinkAddData(state, CU_JIT_INPUT_PTX, set_image.data(), set_image.size(), "set.ptx", 0,
                          nullptr, nullptr));
  ASSERT_OK(cuLinkAddData(state, CU_JIT_INPUT_PTX, add_image.data(), add_image.size(), "add.ptx", 0,
                          nullptr, nullptr));
  void* linked = nullptr;
  size_t linked_size = 0;
  const CUresult done = cuLinkComplete(state, &linked, &linked_size);
  if (done == CUDA_ERROR_NOT_SUPPORTED) {
    EXPECT_OK(cuLinkDestroy(state));
    GTEST_SKIP() << "the " << backend() << " backend has no linker";
  }
  ASSERT_OK(done) << error;
  ASSERT_NE(linked, nullptr);
  EXPECT_GT(linked_size, 0u);
  std::memcpy(&wall_ms, &values[4], sizeof wall_ms);
  EXPECT_GE(wall_ms, 0.0f);
  // The linked image outlives nothing: load it before the state goes.
  CUmodule m = nullptr;
  ASSERT_OK(cuModuleLoadData(&m, linked));
  EXPECT_OK(cuLinkDestroy(state));
  CUfunction set = nullptr, add = nullptr;
  ASSERT_OK(cuModuleGetFunction(&set, m, "set_values"));
  ASSERT_OK(cuModuleGetFunction(&add, m, "add_values"));
  unsigned count = 0;
  ASSERT_OK(cuModuleGetFunctionCount(&count, m));
  EXPECT_EQ(count, 2u);
  if (backend() != "hip") {  // the fake HIP runs no kernels
    DeviceBuffer buf(64 * sizeof(unsigned));
    unsigned base = 100, extra = 7;
    void* set_args[] = {&buf.ptr, &base};
    void* add_args[] = {&buf.ptr, &extra};
    ASSERT_OK(cuLaunchKernel(set, 2, 1, 1, 32, 1, 1, 0, nullptr, set_args, nullptr));
    ASSERT_OK(cuLaunchKernel(add, 2, 1, 1, 32, 1, 1, 0, nullptr, add_args, nullptr));
    std::vector<unsigned> host(64);
    ASSERT_OK(cuMemcpyDtoH_v2(host.data(), buf.ptr, host.size() * sizeof(unsigned)));
    for (unsigned i = 0; i < 64; ++i) EXPECT_EQ(host[i], base + i % 32 + extra) << i;
  }
  EXPECT_OK(cuModuleUnload(m));
}

// Separate compilation (NVRTC -rdc=true, then cuLink*): each program uses the other's
// extern __device__ function, and one reads the other's __device__ variable.
constexpr char kScaleSource[] = R"(extern __device__ unsigned offset_of(unsigned i);
__device__ unsigned factor = 3;
__device__ unsigned scaled(unsigned v) { return v * factor + offset_of(v); }
)";
constexpr char kApplySource[] = R"(extern __device__ unsigned scaled(unsigned v);
extern __device__ unsigned factor;
__device__ unsigned offset_of(unsigned i) { return i % 2 == 0 ? 1000u : 2000u; }
extern "C" __global__ void apply(unsigned* p) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  p[i] = scaled(i) + factor * 100000u;
}
)";

// Links `images` (NVRTC output); the result of cuLinkComplete, the linked image copied out.
CUresult link_all(const std::vector<const std::string*>& images, std::string& linked,
                  std::string& error_log) {
  char error[8192] = {};
  CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {error, reinterpret_cast<void*>(sizeof error)};
  CUlinkState state = nullptr;
  if (const CUresult r = cuLinkCreate(2, opts, values, &state); r != CUDA_SUCCESS) return r;
  CUresult r = CUDA_SUCCESS;
  for (std::size_t i = 0; i < images.size() && r == CUDA_SUCCESS; ++i) {
    const std::string name = "part" + std::to_string(i) + ".ptx";
    r = cuLinkAddData(state, CU_JIT_INPUT_PTX, const_cast<char*>(images[i]->data()),
                      images[i]->size(), name.c_str(), 0, nullptr, nullptr);
  }
  void* out = nullptr;
  size_t size = 0;
  if (r == CUDA_SUCCESS) r = cuLinkComplete(state, &out, &size);
  if (r == CUDA_SUCCESS) linked.assign(static_cast<const char*>(out), size);
  error_log = error;
  (void)cuLinkDestroy(state);
  return r;
}

TEST_F(Link, RelocatableProgramsResolveEachOthersDeviceSymbols) {
  if (backend() == "hip")
    GTEST_SKIP() << "ROCm 5.2's hipRTC makes no relocatable output and has no linker (hip.md)";
  std::string scale, apply, log;
  ASSERT_TRUE(compile_ptx(kScaleSource, "scale.cu", scale, log, {"-rdc=true"})) << log;
  ASSERT_TRUE(compile_ptx(kApplySource, "apply.cu", apply, log, {"-rdc=true"})) << log;
  std::string linked, error;
  const CUresult done = link_all({&scale, &apply}, linked, error);
  if (done == CUDA_ERROR_NOT_SUPPORTED)
    GTEST_SKIP() << "the " << backend() << " backend has no linker";
  ASSERT_OK(done) << error;
  CUmodule m = nullptr;
  ASSERT_OK(cuModuleLoadData(&m, linked.data()));
  CUfunction f = nullptr;
  ASSERT_OK(cuModuleGetFunction(&f, m, "apply"));
  // The variable is the module's, whichever program defined it.
  CUdeviceptr factor = 0;
  size_t bytes = 0;
  ASSERT_OK(cuModuleGetGlobal_v2(&factor, &bytes, m, "factor"));
  EXPECT_EQ(bytes, sizeof(unsigned));
  if (backend() != "hip") {
    const unsigned four = 4;
    ASSERT_OK(cuMemcpyHtoD_v2(factor, &four, sizeof four));
    DeviceBuffer buf(64 * sizeof(unsigned));
    void* args[] = {&buf.ptr};
    ASSERT_OK(cuLaunchKernel(f, 2, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr));
    std::vector<unsigned> host(64);
    ASSERT_OK(cuMemcpyDtoH_v2(host.data(), buf.ptr, host.size() * sizeof(unsigned)));
    for (unsigned i = 0; i < 64; ++i)
      EXPECT_EQ(host[i], i * 4 + (i % 2 == 0 ? 1000u : 2000u) + 400000u) << i;
  }
  EXPECT_OK(cuModuleUnload(m));
}

// A kernel calls a function no input defines. (NVIDIA's linker drops code no kernel reaches:
// linking scale.cu alone, whose unresolved offset_of only an unused function calls, succeeds
// there; measured on an H100, driver 580.)
TEST_F(Link, AnUnresolvedDeviceFunctionFailsTheLink) {
  if (backend() == "hip")
    GTEST_SKIP() << "ROCm 5.2's hipRTC makes no relocatable output and has no linker (hip.md)";
  std::string apply, log;
  ASSERT_TRUE(compile_ptx(kApplySource, "apply.cu", apply, log, {"-rdc=true"})) << log;
  std::string linked, error;
  const CUresult done = link_all({&apply}, linked, error);
  if (done == CUDA_ERROR_NOT_SUPPORTED)
    GTEST_SKIP() << "the " << backend() << " backend has no linker";
  // NVIDIA's answer (H100, driver 580): "error   : Undefined reference to '_Z6scaledj' in
  // 'part0.ptx'", CUDA_ERROR_INVALID_SOURCE.
  EXPECT_EQ(done, CUDA_ERROR_INVALID_SOURCE) << error;
  // NVIDIA's line (the mock writes the same: its C++ names are mangled as nvcc mangles them).
  EXPECT_NE(error.find("error   : Undefined reference to '_Z6scaledj' in 'part0.ptx'"),
            std::string::npos)
      << error;
}

// Relocatable PTX as nvcc -rdc / NVRTC -rdc=true write it, by hand (runs on NVIDIA's JIT
// linker as it is): each module calls the other's function and one reads the other's variable.
constexpr char kPtxHeader[] = ".version 7.0\n.target sm_75\n.address_size 64\n";
constexpr char kScalePtx[] = R"(
.extern .func (.param .b32 func_retval0) offset_of(.param .b32 p0);
.visible .global .align 4 .u32 factor = 3;
.visible .func (.param .b32 func_retval0) scaled(.param .b32 v)
{
  .reg .b32 %r<6>;
  ld.param.u32 %r1, [v];
  ld.global.u32 %r2, [factor];
  mul.lo.s32 %r3, %r1, %r2;
  {
  .param .b32 a0;
  st.param.b32 [a0], %r1;
  .param .b32 rv;
  call.uni (rv), offset_of, (a0);
  ld.param.b32 %r4, [rv];
  }
  add.s32 %r5, %r3, %r4;
  st.param.b32 [func_retval0], %r5;
  ret;
}
)";
constexpr char kApplyPtx[] = R"(
.extern .func (.param .b32 func_retval0) scaled(.param .b32 v);
.extern .global .align 4 .u32 factor;
.visible .func (.param .b32 func_retval0) offset_of(.param .b32 i)
{
  .reg .b32 %r<3>;
  ld.param.u32 %r1, [i];
  add.s32 %r2, %r1, 1000;
  st.param.b32 [func_retval0], %r2;
  ret;
}
.visible .entry apply_ptx(.param .u64 p)
{
  .reg .b32 %r<5>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [p];
  cvta.to.global.u64 %rd2, %rd1;
  mov.u32 %r1, %tid.x;
  {
  .param .b32 a0;
  st.param.b32 [a0], %r1;
  .param .b32 rv;
  call.uni (rv), scaled, (a0);
  ld.param.b32 %r2, [rv];
  }
  ld.global.u32 %r3, [factor];
  mul.lo.s32 %r3, %r3, 100000;
  add.s32 %r4, %r2, %r3;
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd3, %rd2, %rd3;
  st.global.u32 [%rd3], %r4;
  ret;
}
)";

TEST_F(Link, RelocatablePtxModulesResolveEachOthersSymbols) {
  if (backend() == "hip") GTEST_SKIP() << "the hip backend has no linker (hip.md)";
  const std::string scale = std::string(kPtxHeader) + kScalePtx;
  const std::string apply = std::string(kPtxHeader) + kApplyPtx;
  std::string linked, error;
  ASSERT_OK(link_all({&apply, &scale}, linked, error)) << error;
  CUmodule m = nullptr;
  ASSERT_OK(cuModuleLoadData(&m, linked.data()));
  CUfunction f = nullptr;
  ASSERT_OK(cuModuleGetFunction(&f, m, "apply_ptx"));
  CUdeviceptr factor = 0;
  size_t bytes = 0;
  ASSERT_OK(cuModuleGetGlobal_v2(&factor, &bytes, m, "factor"));
  EXPECT_EQ(bytes, sizeof(unsigned));
  const unsigned five = 5;
  ASSERT_OK(cuMemcpyHtoD_v2(factor, &five, sizeof five));
  DeviceBuffer buf(32 * sizeof(unsigned));
  void* args[] = {&buf.ptr};
  ASSERT_OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr));
  std::vector<unsigned> host(32);
  ASSERT_OK(cuMemcpyDtoH_v2(host.data(), buf.ptr, host.size() * sizeof(unsigned)));
  for (unsigned i = 0; i < 32; ++i) EXPECT_EQ(host[i], i * 5 + i + 1000 + 500000u) << i;
  EXPECT_OK(cuModuleUnload(m));
  // Without the module defining them: NVIDIA's "Undefined reference" (INVALID_SOURCE).
  EXPECT_EQ(link_all({&apply}, linked, error), CUDA_ERROR_INVALID_SOURCE);
  EXPECT_NE(error.find("error   : Undefined reference to 'scaled' in 'part0.ptx'"),
            std::string::npos)
      << error;
  // Defined twice: the link fails too.
  EXPECT_NE(link_all({&apply, &scale, &scale}, linked, error), CUDA_SUCCESS);
}

TEST_F(LinkedPrograms, InputsFromFilesAndTheVersionedEntryPoints) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("cudamux-link-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = dir / "set.ptx";
  {
    std::ofstream out(path, std::ios::binary);
    out.write(set_image.data(), static_cast<std::streamsize>(set_image.size()));
  }
  CUlinkState state = nullptr;
  ASSERT_OK(cuLinkCreate_v2(0, nullptr, nullptr, &state));
  EXPECT_CU(
      CUDA_ERROR_FILE_NOT_FOUND,
      cuLinkAddFile(state, CU_JIT_INPUT_PTX, (dir / "missing.ptx").c_str(), 0, nullptr, nullptr));
  ASSERT_OK(cuLinkAddFile_v2(state, CU_JIT_INPUT_PTX, path.c_str(), 0, nullptr, nullptr));
  ASSERT_OK(cuLinkAddData_v2(state, CU_JIT_INPUT_PTX, add_image.data(), add_image.size(), "add.ptx",
                             0, nullptr, nullptr));
  void* linked = nullptr;
  size_t size = 0;
  const CUresult done = cuLinkComplete(state, &linked, &size);
  std::filesystem::remove_all(dir);
  if (done == CUDA_ERROR_NOT_SUPPORTED) {
    EXPECT_OK(cuLinkDestroy(state));
    GTEST_SKIP() << "the " << backend() << " backend has no linker";
  }
  ASSERT_OK(done);
  CUmodule m = nullptr;
  ASSERT_OK(cuModuleLoadData(&m, linked));
  CUfunction f = nullptr;
  EXPECT_OK(cuModuleGetFunction(&f, m, "set_values"));
  EXPECT_OK(cuModuleGetFunction(&f, m, "add_values"));
  EXPECT_OK(cuModuleUnload(m));
  EXPECT_OK(cuLinkDestroy(state));
}

TEST_F(Link, BadArguments) {
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuLinkCreate(0, nullptr, nullptr, nullptr));
  CUlinkState state = nullptr;
  ASSERT_OK(cuLinkCreate(0, nullptr, nullptr, &state));
  char text[] = "not a module";
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
            cuLinkAddData(state, CU_JIT_INPUT_PTX, nullptr, 10, "x", 0, nullptr, nullptr));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
            cuLinkAddData(state, static_cast<CUjitInputType>(CU_JIT_NUM_INPUT_TYPES), text,
                          sizeof text, "x", 0, nullptr, nullptr));
  // Malformed PTX: NVIDIA's linker refuses it when it is added; a backend that links in one
  // step (cudamux over NVIDIA) when it completes. Either way CUDA_ERROR_INVALID_PTX.
  char bad_ptx[] = ".version 8.0\n.target sm_75\n.address_size 64\nthis is not PTX;\n";
  CUresult r = cuLinkAddData(state, CU_JIT_INPUT_PTX, bad_ptx, sizeof bad_ptx, "bad.ptx", 0,
                             nullptr, nullptr);
  if (r == CUDA_SUCCESS) {
    void* out = nullptr;
    size_t size = 0;
    r = cuLinkComplete(state, &out, &size);
  }
  EXPECT_CU(CUDA_ERROR_INVALID_PTX, r);
  EXPECT_OK(cuLinkDestroy(state));
  ASSERT_OK(cuLinkCreate(0, nullptr, nullptr, &state));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuLinkComplete(state, nullptr, nullptr));
  EXPECT_OK(cuLinkDestroy(state));
  // Handles that are no states: NVIDIA's driver dereferences them.
  EXPECT_CU_CUDAMUX(CUDA_ERROR_INVALID_HANDLE, cuLinkDestroy(state));
  EXPECT_CU_CUDAMUX(CUDA_ERROR_INVALID_HANDLE, cuLinkDestroy(nullptr));
}

TEST_F(Link, NeedsAContext) {
  CUcontext popped = nullptr;
  ASSERT_OK(cuCtxPopCurrent(&popped));
  CUlinkState state = nullptr;
  EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuLinkCreate(0, nullptr, nullptr, &state));
  ASSERT_OK(cuCtxPushCurrent(popped));
}

}  // namespace
}  // namespace conformance
