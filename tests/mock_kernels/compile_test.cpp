// The mock compiler: images, errors, names, cache, built-in headers.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <optional>

#include "kernel_fixture.hpp"

namespace cudamux::mock::test {
namespace {

namespace fs = std::filesystem;
using MockCompile = KernelTest;

const char* kSaxpy = R"(
extern "C" __global__ void saxpy(float a, const float* x, float* y, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
)";

TEST_F(MockCompile, SaxpyRunsAndMatchesTheHost) {
  be::CompileOptions o;
  o.fmad = false;
  o.arch = 90;
  auto m = build(kSaxpy, o);
  ASSERT_TRUE(m);
  auto* f = m->function("saxpy");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(f->params().size(), 4u);
  EXPECT_EQ(f->params()[1].offset, 8u);  // pointers align to 8 after the 4-byte float
  EXPECT_EQ(f->params()[3].offset, 24u);
  constexpr unsigned kThreads = 512, kBlocks = 64, kN = kThreads * kBlocks - 100;
  std::vector<float> x(kN), y(kN);
  for (unsigned i = 0; i < kN; ++i) {
    x[i] = static_cast<float>(i) * 0.5f;
    y[i] = static_cast<float>(kN - i);
  }
  auto* dx = dev<float>(kN);
  auto* dy = dev<float>(kN);
  auto q = queue();
  ASSERT_EQ(cu(q->copy(copy_1d(dx, x.data(), kN * 4))), CUDA_SUCCESS);
  ASSERT_EQ(cu(q->copy(copy_1d(dy, y.data(), kN * 4))), CUDA_SUCCESS);
  ASSERT_EQ(launch(*q, f, {kBlocks}, {kThreads}, 0, 2.0f, static_cast<const float*>(dx), dy, kN),
            CUDA_SUCCESS);
  std::vector<float> out(kN);
  ASSERT_EQ(cu(q->copy(copy_1d(out.data(), dy, kN * 4))), CUDA_SUCCESS);
  ASSERT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
  for (unsigned i = 0; i < kN; ++i) ASSERT_EQ(out[i], 2.0f * x[i] + y[i]) << i;
}

TEST_F(MockCompile, ImageIsSelfDelimitingText) {
  auto c = compile(kSaxpy);
  ASSERT_TRUE(c.result.success) << c.result.log;
  const auto& img = c.result.image;
  ASSERT_FALSE(img.empty());
  EXPECT_EQ(img.back(), '\0');
  EXPECT_EQ(std::strlen(img.data()) + 1, img.size());  // exactly one NUL, at the end
  EXPECT_EQ(std::string(img.data(), 25), "// cudamux mock module v1");
}

TEST_F(MockCompile, CompileErrorsNameTheUsersFileAndLine) {
  auto c = compile("// line 1\n__global__ void k(int* p) {\n  p[0] = undeclared_thing;\n}\n", {},
                   {}, {}, "my_kernels.cu");
  ASSERT_TRUE(c.status.ok());
  EXPECT_FALSE(c.result.success);
  EXPECT_NE(c.result.log.find("my_kernels.cu:3:"), std::string::npos) << c.result.log;
  EXPECT_NE(c.result.log.find("undeclared_thing"), std::string::npos) << c.result.log;
  EXPECT_EQ(c.result.log.find("cudamux-nvrtc-"), std::string::npos) << c.result.log;  // no temp dir
  EXPECT_EQ(c.result.log.find("program.cu"), std::string::npos) << c.result.log;
  EXPECT_EQ(c.result.log.find("<command-line>"), std::string::npos) << c.result.log;
}

TEST_F(MockCompile, ErrorsInProgramHeadersNameTheHeader) {
  auto c = compile("#include \"helpers.cuh\"\n__global__ void k(int* p) { p[0] = helper(); }\n", {},
                   {}, {{"helpers.cuh", "__device__ int helper() {\n  return nope;\n}\n"}});
  EXPECT_FALSE(c.result.success);
  EXPECT_NE(c.result.log.find("helpers.cuh:2:"), std::string::npos) << c.result.log;
}

// Given headers are kept once per text for the process and linked into each compile's folder
// (Jitify compiles one program hundreds of times, one more header given each round): a name
// given again with another text must be that text, and a header declaring dynamic shared memory
// must still be rewritten for the mock when its text comes from the store.
TEST_F(MockCompile, GivenHeadersAreTheTextsGivenToEachCompile) {
  const std::string program = R"(
#include "vals.cuh"
#include "dyn.cuh"
extern "C" __global__ void k(int* out) {
  dyn_buf[threadIdx.x] = kVal;
  __syncthreads();
  out[threadIdx.x] = dyn_buf[blockDim.x - 1 - threadIdx.x] + (int)threadIdx.x;
}
)";
  const std::pair<std::string, std::string> dyn{"dyn.cuh", "extern __shared__ int dyn_buf[];\n"};
  constexpr unsigned kThreads = 64;
  auto run_with = [&](int value) {
    auto c = compile(program, {}, {},
                     {{"vals.cuh", "constexpr int kVal = " + std::to_string(value) + ";\n"}, dyn});
    EXPECT_TRUE(c.status.ok());
    EXPECT_TRUE(c.result.success) << c.result.log;
    if (!c.result.success) return;
    std::unique_ptr<be::Module> m;
    ASSERT_EQ(cu(ctx->load_module(be::native_image(c.result.image.data()), m)), CUDA_SUCCESS);
    auto* f = m->function("k");
    ASSERT_NE(f, nullptr);
    auto* d = dev<int>(kThreads);
    auto q = queue();
    ASSERT_EQ(launch(*q, f, {1}, {kThreads}, kThreads * sizeof(int), d), CUDA_SUCCESS);
    std::vector<int> out(kThreads);
    ASSERT_EQ(cu(q->copy(copy_1d(out.data(), d, kThreads * sizeof(int)))), CUDA_SUCCESS);
    ASSERT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
    for (unsigned i = 0; i < kThreads; ++i) ASSERT_EQ(out[i], value + static_cast<int>(i)) << i;
  };
  run_with(1);
  run_with(2);  // same name, another text
  run_with(3);
  run_with(1);  // the first text again
}

// NVIDIA's NVRTC warns of a variable declared and never used, in the log of a compile that
// succeeds (CuPy's test_raw.py reads "warning" there); `-w` silences it. The kernel's fission
// twin and registration, copies and code of ours, add no warning of their own.
TEST_F(MockCompile, UnusedVariableWarnsAsNvrtcDoes) {
  const std::string program = R"(extern "C" __global__ void k(float* y) {
  int unused_j;
  __shared__ float s[64];
  s[threadIdx.x] = threadIdx.x;
  __syncthreads();
  y[threadIdx.x] = s[63 - threadIdx.x];
}
)";
  auto c = compile(program, {}, {}, {}, "warn.cu");
  ASSERT_TRUE(c.status.ok());
  ASSERT_TRUE(c.result.success) << c.result.log;
  EXPECT_NE(c.result.log.find("warning"), std::string::npos) << c.result.log;
  EXPECT_NE(c.result.log.find("warn.cu:2:"), std::string::npos) << c.result.log;
  EXPECT_NE(c.result.log.find("unused_j"), std::string::npos) << c.result.log;
  EXPECT_EQ(c.result.log.find("<cudamux"), std::string::npos) << c.result.log;
  be::CompileOptions quiet;
  quiet.extra.emplace_back("--disable-warnings");
  auto q = compile(program, quiet, {}, {}, "warn.cu");
  ASSERT_TRUE(q.status.ok());
  ASSERT_TRUE(q.result.success) << q.result.log;
  EXPECT_EQ(q.result.log.find("warning"), std::string::npos) << q.result.log;
}

// Jitify (CuPy's jitify=True) hands over the toolkit's headers that a compile reports missing,
// each after its own `#define cudaDeviceSynchronize() cudaSuccess`. CCCL includes
// cuda_runtime_api.h under the mock's g++ (NVIDIA's NVRTC skips it), and the toolkit's host
// declaration then meets that macro: CuPy's Jitify warm-up failed so after ~700 rounds. A given
// toolkit header is the mock's stand-in, as the toolkit's own are in -I folders; the program's
// other given headers stay as given.
TEST_F(MockCompile, GivenToolkitHeadersAreTheMocksStandIns) {
  const std::string toolkit_api =
      "#define cudaDeviceSynchronize() cudaSuccess\n"
      "extern cudaError_t cudaDeviceSynchronize(void);\n";
  const std::string program =
      "#include <cuda_runtime_api.h>\n#include \"own.cuh\"\n"
      "extern \"C\" __global__ void k(int* p) { p[0] = kOwn; }\n";
  // As Jitify compiles: no include folder at all (with one, the stand-ins come first on the
  // search path and the given header is never read), every header given.
  be::CompileRequest r;
  r.source = program;
  r.name = "jitify_like.cu";
  r.headers = {{"cuda_runtime_api.h", toolkit_api}, {"own.cuh", "constexpr int kOwn = 5;\n"}};
  be::CompileResult result;
  ASSERT_TRUE(backend->compiler()->compile(r, result).ok());
  ASSERT_TRUE(result.success) << result.log;
  std::unique_ptr<be::Module> m;
  ASSERT_EQ(cu(ctx->load_module(be::native_image(result.image.data()), m)), CUDA_SUCCESS);
  auto* f = m->function("k");
  ASSERT_NE(f, nullptr);
  auto* d = dev<int>(1);
  auto q = queue();
  ASSERT_EQ(launch(*q, f, {1}, {1}, 0, d), CUDA_SUCCESS);
  int out = 0;
  ASSERT_EQ(cu(q->copy(copy_1d(&out, d, sizeof out))), CUDA_SUCCESS);
  ASSERT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
  EXPECT_EQ(out, 5);  // the program's own given header is used as given
}

// Dynamic parallelism (a kernel launched from device code, CuPy's test_dynamical_parallelism)
// is not implemented: the log says so in those words, not only g++'s parse error.
// Device-side launches of kernels named directly compile (they run: kernels.mock's
// MockKernels.DeviceSideLaunchesRunChildGrids); one through a pointer is refused in plain words.
TEST_F(MockCompile, DeviceSideLaunchThroughAPointerIsRefusedInPlainWords) {
  be::CompileOptions o;
  o.relocatable = true;
  auto direct = compile(R"(
__global__ void child(float* x) { x[threadIdx.x] = 1.0f; }
__global__ void parent(float* x) { child<<<1, 32>>>(x); }
)",
                        o, {}, {}, "cdp.cu");
  ASSERT_TRUE(direct.status.ok());
  EXPECT_TRUE(direct.result.success) << direct.result.log;
  auto c = compile(R"(
__global__ void child(float* x) { x[threadIdx.x] = 1.0f; }
__global__ void parent(float* x) {
  void (*k)(float*) = child;
  k<<<1, 32>>>(x);
}
)",
                   o, {}, {}, "cdp.cu");
  ASSERT_TRUE(c.status.ok());
  EXPECT_FALSE(c.result.success);
  EXPECT_NE(c.result.log.find("not through pointers"), std::string::npos) << c.result.log;
}

TEST_F(MockCompile, NameExpressionsGiveItaniumLoweredNames) {
  auto m = build(R"(
namespace ns {
template <class T, int N> __global__ void fill(T* p, T v) { p[threadIdx.x] = v + T(N); }
}
__global__ void plain(int* p) { p[0] = 7; }
__device__ int counter;
)",
                 {}, {"ns::fill<float, 3>", "&ns::fill<int, 1>", "plain", "counter"});
  ASSERT_TRUE(m);
  ASSERT_EQ(lowered.size(), 4u);
  EXPECT_EQ(lowered[0].first, "ns::fill<float, 3>");
  EXPECT_EQ(lowered[0].second, "_ZN2ns4fillIfLi3EEEvPT_S1_");
  EXPECT_EQ(lowered[1].second, "_ZN2ns4fillIiLi1EEEvPT_S1_");
  EXPECT_EQ(lowered[2].second, "_Z5plainPi");
  EXPECT_EQ(lowered[3].second, "counter");
  auto* f = m->function(lowered[0].second);
  ASSERT_NE(f, nullptr);
  EXPECT_NE(m->function("_Z5plainPi"), nullptr);  // C++ kernels: mangled names
  EXPECT_EQ(m->function("plain"), nullptr);
  auto* p = dev<float>(4);
  auto q = queue();
  ASSERT_EQ(launch(*q, f, {1}, {4}, 0, p, 1.5f), CUDA_SUCCESS);
  ASSERT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(p[i], 4.5f);
}

TEST_F(MockCompile, UnknownKernelAndGlobalNamesAreNotFound) {
  auto m = build(kSaxpy);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->function("saxpy2"), nullptr);
  EXPECT_EQ(m->function(""), nullptr);
  void* a = nullptr;
  std::size_t n = 0;
  EXPECT_FALSE(m->global("nothing", a, n));
  EXPECT_FALSE(m->global("stdout", a, n));  // libc's, not the module's
  EXPECT_FALSE(m->global("saxpy", a, n));   // a function, not a variable
}

// Kernels declared inside a linkage block are at namespace scope (CuPy declares its partition
// kernels so); a namespace-less struct's braces are not.
TEST_F(MockCompile, KernelsInsideExternCBlocksAreFound) {
  auto m = build(R"(
extern "C" {
__global__ void first(int* p) { p[0] = 1; }
struct S { int x; };
__global__ void second(int* p) { p[1] = 2; }
}
__global__ void third(int* p) { p[2] = 3; }
)");
  ASSERT_TRUE(m);
  EXPECT_NE(m->function("first"), nullptr);
  EXPECT_NE(m->function("second"), nullptr);
  EXPECT_NE(m->function("_Z5thirdPi"), nullptr);  // C++ linkage outside the block
  EXPECT_EQ(m->function("S"), nullptr);
}

// Kernels are found in the program as the preprocessor leaves it: CuPy's partition kernels
// open a `{` in both branches of an #if/#else, which unbalanced a scan of the text as written
// and hid the kernel after them (CUDA_ERROR_NOT_FOUND).
TEST_F(MockCompile, KernelsAfterBracesOpenedInBothIfBranchesAreFound) {
  auto m = build(R"(
#define WIDE 1
extern "C" __global__ void before(int* p) {
#if WIDE
  if (p != nullptr) {
    p[threadIdx.x] = 10;
#else
  if (p) {
    p[threadIdx.x] = 20;
#endif
  }
}
extern "C" __global__ void after(int* p) { p[threadIdx.x] += 5; }
)");
  ASSERT_TRUE(m);
  auto* before = m->function("before");
  auto* after = m->function("after");
  ASSERT_NE(before, nullptr);
  ASSERT_NE(after, nullptr);
  auto* p = dev<int>(4);
  auto q = queue();
  ASSERT_EQ(launch(*q, before, {1}, {4}, 0, p), CUDA_SUCCESS);
  ASSERT_EQ(launch(*q, after, {1}, {4}, 0, p), CUDA_SUCCESS);
  ASSERT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(p[i], 15) << i;
}

// Kernels defined in an included header and produced by a macro are the program's too (NVIDIA
// registers every kernel of the translation unit); the macro's __launch_bounds__ is kept.
TEST_F(MockCompile, KernelsFromHeadersAndMacrosAreFound) {
  const std::string header = R"(
#pragma once
extern "C" __global__ void from_header(int* p) { p[threadIdx.x] = 7; }
#define MAKE_KERNEL(name, value) \
  extern "C" __global__ void __launch_bounds__(64) name(int* p) { p[threadIdx.x] *= value; }
)";
  auto c = compile(R"(
#include "kernels.h"
MAKE_KERNEL(tripled, 3)
#if 0
extern "C" __global__ void never(int* p) { p[0] = 0; }
#endif
)",
                   {}, {}, {{"kernels.h", header}});
  ASSERT_TRUE(c.status.ok());
  ASSERT_TRUE(c.result.success) << c.result.log;
  std::unique_ptr<be::Module> m;
  ASSERT_EQ(cu(ctx->load_module(be::native_image(c.result.image.data()), m)), CUDA_SUCCESS);
  auto* from_header = m->function("from_header");
  auto* tripled = m->function("tripled");
  ASSERT_NE(from_header, nullptr);
  ASSERT_NE(tripled, nullptr);
  EXPECT_EQ(m->function("never"), nullptr);  // left out by the preprocessor
  int bound = 0;
  ASSERT_TRUE(tripled->attribute(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, bound).ok());
  EXPECT_EQ(bound, 64);
  auto* p = dev<int>(8);
  auto q = queue();
  ASSERT_EQ(launch(*q, from_header, {1}, {8}, 0, p), CUDA_SUCCESS);
  ASSERT_EQ(launch(*q, tripled, {1}, {8}, 0, p), CUDA_SUCCESS);
  ASSERT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(p[i], 21) << i;
}

// Diagnostics still name the user's file and line after preprocessing, and a header's
// errors name the header.
TEST_F(MockCompile, PreprocessedProgramErrorsNameTheUsersLines) {
  auto c = compile("#if 1\n\n#endif\nextern \"C\" __global__ void k(int* p) {\n  p[0] = nope;\n}\n",
                   {}, {}, {}, "prog.cu");
  ASSERT_TRUE(c.status.ok());
  EXPECT_FALSE(c.result.success);
  EXPECT_NE(c.result.log.find("prog.cu:5:"), std::string::npos) << c.result.log;
  EXPECT_NE(c.result.log.find("nope"), std::string::npos) << c.result.log;
  EXPECT_EQ(c.result.log.find("cudamux-nvrtc-"), std::string::npos) << c.result.log;
}

TEST_F(MockCompile, GlobalsRoundTrip) {
  auto m = build(R"(
__constant__ float coeffs[4];
__device__ int total;
extern "C" __global__ void use(float* out) {
  out[threadIdx.x] = coeffs[threadIdx.x] * 2.0f;
  atomicAdd(&total, 1);
}
)");
  ASSERT_TRUE(m);
  void* c = nullptr;
  std::size_t cn = 0;
  ASSERT_TRUE(m->global("coeffs", c, cn));
  EXPECT_EQ(cn, 16u);
  void* t = nullptr;
  std::size_t tn = 0;
  ASSERT_TRUE(m->global("total", t, tn));
  EXPECT_EQ(tn, 4u);
  const float in[4] = {1, 2, 3, 4};
  auto q = queue();
  ASSERT_EQ(cu(q->copy(copy_1d(c, in, 16))), CUDA_SUCCESS);
  auto* out = dev<float>(4);
  ASSERT_EQ(launch(*q, m->function("use"), {3}, {4}, 0, out), CUDA_SUCCESS);
  int back = 0;
  ASSERT_EQ(cu(q->copy(copy_1d(&back, t, 4))), CUDA_SUCCESS);
  ASSERT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
  EXPECT_EQ(back, 12);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out[i], in[i] * 2);
}

TEST_F(MockCompile, NvidiaPtxLoadsAndSassIsRefusedCleanly) {
  const char* ptx =
      "//\n// Generated by NVIDIA NVVM Compiler\n.version 9.0\n.target sm_90\n"
      ".address_size 64\n.visible .entry saxpy()\n{\n ret;\n}\n";
  std::unique_ptr<be::Module> m;
  // The core tells NVIDIA's formats apart and says which one the backend gets: PTX is
  // translated and compiled (issue 15), machine code is not something the mock runs.
  ASSERT_EQ(cu(ctx->load_module({be::ImageKind::ptx, ptx, std::strlen(ptx) + 1, 90}, m)),
            CUDA_SUCCESS);
  ASSERT_TRUE(m);
  EXPECT_NE(m->function("saxpy"), nullptr);
  m.reset();
  const char* bad = ".version 9.0\n.target sm_90\n.address_size 64\n.entry k() { frobnicate; }\n";
  EXPECT_EQ(cu(ctx->load_module({be::ImageKind::ptx, bad, std::strlen(bad) + 1, 90}, m)),
            CUDA_ERROR_INVALID_PTX);
  EXPECT_THAT(log_text(), ::testing::HasSubstr("PTX line 4:"));
  const unsigned char cubin[64] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
  EXPECT_EQ(cu(ctx->load_module({be::ImageKind::cubin, cubin, sizeof cubin, 75}, m)),
            CUDA_ERROR_NO_BINARY_FOR_GPU);
  EXPECT_THAT(log_text(), ::testing::HasSubstr("module image is an NVIDIA cubin (sm_75)"));
  EXPECT_EQ(cu(ctx->load_module(be::native_image("garbage"), m)), CUDA_ERROR_INVALID_IMAGE);
  EXPECT_EQ(cu(ctx->load_module(
                be::native_image("// cudamux mock module v1 arch=90\n!!!notbase64\n"), m)),
            CUDA_ERROR_INVALID_IMAGE);
  EXPECT_FALSE(m);
}

TEST_F(MockCompile, BuiltInHeadersWinOverTheToolkitFolder) {
  be::CompileOptions o;
  if (fs::exists("/usr/local/cuda/include/cuda_runtime.h"))
    o.include_paths.push_back("/usr/local/cuda/include");
  o.include_paths.push_back("/nonexistent/include");
  auto m = build(R"(
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cooperative_groups.h>
#include <cuda/std/cstdint>
#include <cuda/std/type_traits>
namespace cg = cooperative_groups;
extern "C" __global__ void k(cuda::std::uint32_t* out) {
  cg::thread_block b = cg::this_thread_block();
  out[b.thread_rank()] = static_cast<cuda::std::uint32_t>(__half2float(__float2half(2.5f)) * 2) +
                         (cuda::std::is_same<int, int>::value ? 100u : 0u);
}
)",
                 o);
  ASSERT_TRUE(m);
  auto* out = dev<std::uint32_t>(8);
  auto q = queue();
  ASSERT_EQ(launch(*q, m->function("k"), {1}, {8}, 0, out), CUDA_SUCCESS);
  ASSERT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(out[i], 105u);
}

TEST_F(MockCompile, OptionsReachTheCompiler) {
  be::CompileOptions o;
  o.arch = 80;
  o.defines = {{"SCALE", "3"}, {"FLAG", ""}};
  auto m = build(R"(
#ifndef FLAG
#error FLAG missing
#endif
extern "C" __global__ void k(int* out) { out[0] = SCALE * __CUDA_ARCH__; }
)",
                 o);
  ASSERT_TRUE(m);
  auto* out = dev<int>(1);
  auto q = queue();
  ASSERT_EQ(launch(*q, m->function("k"), {1}, {1}, 0, out), CUDA_SUCCESS);
  ASSERT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
  EXPECT_EQ(out[0], 3 * 800);
  int v = 0;
  ASSERT_TRUE(m->function("k")->attribute(CU_FUNC_ATTRIBUTE_PTX_VERSION, v).ok());
  EXPECT_EQ(v, 80);
}

TEST_F(MockCompile, FmadFalseKeepsMultiplyAndAddSeparate) {
  // a*b+c with a*b inexact: contracted (one rounding) and separate (two) differ.
  const char* src = R"(
extern "C" __global__ void k(const float* in, float* out) { out[0] = in[0] * in[1] + in[2]; }
)";
  const float in[3] = {1.0f + 1.0f / 4096, 1.0f + 1.0f / 4096, -(1.0f + 1.0f / 2048)};
  const float separate = [&] {
    volatile float p = in[0] * in[1];
    return p + in[2];
  }();
  const float fused = std::fma(in[0], in[1], in[2]);
  ASSERT_NE(separate, fused);
  be::CompileOptions o;
  o.fmad = false;
  auto m = build(src, o);
  ASSERT_TRUE(m);
  auto* d = dev<float>(4);
  std::memcpy(d, in, sizeof in);
  auto q = queue();
  ASSERT_EQ(launch(*q, m->function("k"), {1}, {1}, 0, static_cast<const float*>(d), d + 3),
            CUDA_SUCCESS);
  ASSERT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
  EXPECT_EQ(d[3], separate);
}

class MockCompileCache : public KernelTest {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() /
          ("cudamux-cache-test-" + std::to_string(::getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    KernelTest::SetUp();
  }
  void TearDown() override {
    KernelTest::TearDown();
    fs::remove_all(dir);
  }
  std::string config() override {
    return "[mock]\nmemory = 268435456\ncache_dir = \"" + dir.string() + "\"\n";
  }
  fs::path dir;
};

TEST_F(MockCompileCache, SecondCompileIsAHitAndFast) {
  auto* comp = backend->compiler();
  auto c1 = compile(kSaxpy);
  ASSERT_TRUE(c1.result.success);
  const auto t0 = std::chrono::steady_clock::now();
  auto c2 = compile(kSaxpy);
  const auto ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(c2.result.success);
  EXPECT_EQ(c1.result.image, c2.result.image);
  (void)comp;
  (void)ms;  // timing lives in bench/bench_kernels.cpp
  std::size_t entries = 0;
  for (auto& e : fs::recursive_directory_iterator(dir)) entries += e.path().extension() == ".cmx";
  EXPECT_EQ(entries, 1u);
  // A different option is a different entry.
  be::CompileOptions o;
  o.fmad = false;
  ASSERT_TRUE(compile(kSaxpy, o).result.success);
  entries = 0;
  for (auto& e : fs::recursive_directory_iterator(dir)) entries += e.path().extension() == ".cmx";
  EXPECT_EQ(entries, 2u);
}

TEST_F(MockCompileCache, DamagedEntryIsRecompiled) {
  ASSERT_TRUE(compile(kSaxpy).result.success);
  for (auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().extension() == ".cmx") std::ofstream(e.path(), std::ios::trunc) << "junk";
  auto c = compile(kSaxpy);
  ASSERT_TRUE(c.result.success);
  std::unique_ptr<be::Module> m;
  EXPECT_EQ(cu(ctx->load_module(be::native_image(c.result.image.data()), m)), CUDA_SUCCESS);
}

TEST_F(MockCompileCache, MultiProcessSharedCacheStaysConsistent) {
  // Several processes compile the same program into one empty cache at once.
  constexpr int kProcs = 4;
  std::vector<pid_t> pids;
  for (int i = 0; i < kProcs; ++i) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      auto created_here = create_backend(config());  // keeps its log stream alive
      auto& b = created_here.backend;
      if (!b) std::_Exit(2);
      be::CompileRequest r;
      r.source = kSaxpy;
      r.name = "saxpy.cu";
      be::CompileResult res;
      const auto st = b->compiler()->compile(r, res);
      if (!st.ok() || !res.success)
        std::fprintf(stderr, "child: %d %s\n", st.native, res.log.c_str());
      std::_Exit(st.ok() && res.success ? 0 : 1);
    }
    pids.push_back(pid);
  }
  for (pid_t p : pids) {
    int st = 0;
    ASSERT_EQ(::waitpid(p, &st, 0), p);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  std::size_t entries = 0, temps = 0;
  for (auto& e : fs::recursive_directory_iterator(dir)) {
    entries += e.path().extension() == ".cmx";
    temps += e.path().string().find(".tmp.") != std::string::npos;
  }
  EXPECT_EQ(entries, 1u);
  EXPECT_EQ(temps, 0u);
  auto c = compile(kSaxpy, {}, {}, {}, "saxpy.cu");  // served from the shared entry
  ASSERT_TRUE(c.result.success);
  std::unique_ptr<be::Module> m;
  ASSERT_EQ(cu(ctx->load_module(be::native_image(c.result.image.data()), m)), CUDA_SUCCESS);
  EXPECT_NE(m->function("saxpy"), nullptr);
}

// Issue 15: inline PTX in CUDA C++ runs on the mock through the PTX front end: special
// registers, predicates declared in the statement, "+r" operands, 64-bit and float operands,
// named operands, shuffles, a memory access through an "l" operand, %= labels.
TEST_F(MockCompile, InlinePtxRuns) {
  auto m = build(R"(
__device__ unsigned lane_id() {
  unsigned r;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(r));
  return r;
}
extern "C" __global__ void k(unsigned* out, unsigned long long* wide, float* f, int* mem) {
  const unsigned t = threadIdx.x;
  unsigned v = t;
  asm("{\n\t.reg .pred p;\n\tsetp.gt.u32 p, %[x], 5;\n\tselp.u32 %[y], 100, 200, p;\n\t}"
      : [y] "=r"(v) : [x] "r"(t));
  unsigned acc = 7;
  asm("add.u32 %0, %0, %1;" : "+r"(acc) : "r"(t));
  unsigned long long w;
  asm("mul.wide.u32 %0, %1, %2;" : "=l"(w) : "r"(t + 0x10000u), "r"(0x10000u));
  float x;
  asm("fma.rn.f32 %0, %1, %2, %3;" : "=f"(x) : "f"(1.5f), "f"(float(t)), "f"(0.25f));
  unsigned s;
  asm volatile("shfl.sync.idx.b32 %0, %1, 3, 0x1f, 0xffffffff;" : "=r"(s) : "r"(t * 10));
  int loaded;
  asm volatile("ld.global.s32 %0, [%1+4];" : "=r"(loaded) : "l"(mem + t) : "memory");
  unsigned loop = 0;
  asm("{\n .reg .pred q;\n mov.u32 %0, 0;\n L%=:\n add.u32 %0, %0, 2;\n"
      " setp.lt.u32 q, %0, 10;\n @q bra L%=;\n}" : "=r"(loop));
  out[5 * t + 0] = lane_id();
  out[5 * t + 1] = v;
  out[5 * t + 2] = acc;
  out[5 * t + 3] = s + loaded;
  out[5 * t + 4] = loop;
  wide[t] = w;
  f[t] = x;
}
)");
  ASSERT_TRUE(m);
  auto* out = dev<unsigned>(5 * 40);
  auto* wide = dev<unsigned long long>(40);
  auto* f = dev<float>(40);
  auto* mem = dev<int>(41);
  for (int i = 0; i < 41; ++i) mem[i] = 1000 + i;
  auto q = queue();
  ASSERT_EQ(launch(*q, m->function("k"), {1}, {40}, 0, out, wide, f, mem), CUDA_SUCCESS);
  ASSERT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
  for (unsigned t = 0; t < 40; ++t) {
    EXPECT_EQ(out[5 * t + 0], t % 32);
    EXPECT_EQ(out[5 * t + 1], t > 5 ? 100u : 200u);
    EXPECT_EQ(out[5 * t + 2], 7 + t);
    EXPECT_EQ(out[5 * t + 3], (t / 32 * 32 + 3) * 10 + static_cast<unsigned>(mem[t + 1]));
    EXPECT_EQ(out[5 * t + 4], 10u);
    EXPECT_EQ(wide[t], static_cast<unsigned long long>(t + 0x10000u) * 0x10000u);
    EXPECT_EQ(f[t], std::fma(1.5f, static_cast<float>(t), 0.25f));
  }
}

// Issue 15 (ptx-mma): tinygrad's half-precision GEMM helper as its CUDA renderer emits it
// (mma.m16n8k16 through inline PTX, "+f" accumulators and "r" operands packed from half8/half4),
// one warp, against a plain matmul. Fragments as the PTX ISA lays them out.
TEST_F(MockCompile, InlinePtxTinygradHgemmMma) {
  auto m = build(R"(
#include <cuda_fp16.h>
struct half4 { half x, y, z, w; };
struct half8 { half x, y, z, w, a, b, c, d; };
__device__ float4 __WMMA_8_16_16_half_float(half8 a, half4 b, float4 c) { int *a_pk = (int *) (&a), *b_pk = (int *) (&b);
asm( "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 { %0, %1, %2, %3 }, { %4, %5, %6, %7 }, { %8, %9 }, { %0, %1, %2, %3 };"
  : "+f"(c.x), "+f"(c.y), "+f"(c.z), "+f"(c.w) : "r"(a_pk[0]), "r"(a_pk[1]), "r"(a_pk[2]),  "r"(a_pk[3]), "r"(b_pk[0]), "r"(b_pk[1]) );
return c;}
// A 16x16 and B 16x8 row-major, C/D 16x8 row-major.
extern "C" __global__ void k(const half* A, const half* B, const float* C, float* D) {
  const unsigned l = threadIdx.x, g = l / 4, t = l % 4;
  half8 a;
  half* ap = &a.x;
  for (unsigned r = 0; r < 4; ++r)
    for (unsigned h = 0; h < 2; ++h)
      ap[2 * r + h] = A[(g + 8 * (r & 1)) * 16 + 2 * t + h + 8 * (r >> 1)];
  half4 b;
  half* bp = &b.x;
  for (unsigned r = 0; r < 2; ++r)
    for (unsigned h = 0; h < 2; ++h) bp[2 * r + h] = B[(2 * t + h + 8 * r) * 8 + g];
  float4 c = make_float4(C[g * 8 + 2 * t], C[g * 8 + 2 * t + 1], C[(g + 8) * 8 + 2 * t],
                         C[(g + 8) * 8 + 2 * t + 1]);
  const float4 d = __WMMA_8_16_16_half_float(a, b, c);
  D[g * 8 + 2 * t] = d.x;
  D[g * 8 + 2 * t + 1] = d.y;
  D[(g + 8) * 8 + 2 * t] = d.z;
  D[(g + 8) * 8 + 2 * t + 1] = d.w;
}
)");
  ASSERT_TRUE(m);
  // Small integers: exact in f16, products and sums exact in f32.
  auto* a = dev<unsigned short>(256);
  auto* b = dev<unsigned short>(128);
  auto* c = dev<float>(128);
  auto* d = dev<float>(128);
  auto f16 = [](int v) {  // integers in [-8, 8] as IEEE half bits
    if (v == 0) return static_cast<unsigned short>(0);
    const unsigned s = v < 0 ? 0x8000u : 0u, u = static_cast<unsigned>(v < 0 ? -v : v);
    const int e = 31 - __builtin_clz(u);
    return static_cast<unsigned short>(s | (static_cast<unsigned>(e + 15) << 10) |
                                       ((u << (10 - e)) & 0x3ffu));
  };
  std::vector<int> av(256), bv(128);
  for (int i = 0; i < 256; ++i) a[i] = f16(av[i] = (i * 7 + 3) % 17 - 8);
  for (int i = 0; i < 128; ++i) b[i] = f16(bv[i] = (i * 5 + 1) % 13 - 6);
  for (int i = 0; i < 128; ++i) c[i] = static_cast<float>(i % 9 - 4);
  auto q = queue();
  ASSERT_EQ(launch(*q, m->function("k"), {1}, {32}, 0, a, b, c, d), CUDA_SUCCESS);
  ASSERT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
  for (int i = 0; i < 16; ++i)
    for (int n = 0; n < 8; ++n) {
      int s = i * 8 + n;
      float want = c[s];
      for (int k = 0; k < 16; ++k) want += static_cast<float>(av[i * 16 + k] * bv[k * 8 + n]);
      EXPECT_EQ(d[s], want) << "D[" << i << "][" << n << "]";
    }
}

// Issue 18: inline PTX whose template a macro builds by stringizing (as CUB's ThreadLoad does,
// `"ld." #ptx_modifier ".u64 %0, [%1];"`), in a header given to nvrtcCreateProgram, with an
// "h" operand (no x86 meaning: g++ refuses it before the assembler) and the program's own
// statement beside: all are translated in the preprocessed text, as one module.
TEST_F(MockCompile, InlinePtxBuiltByMacrosInGivenHeaders) {
  const std::string header =
      "#define LOAD_AS(ptx_type, T, cons)                                       \\\n"
      "  __device__ T load_##ptx_type(const T* p) {                             \\\n"
      "    T v;                                                                 \\\n"
      "    asm volatile(\"ld.global.nc.\" #ptx_type \" %0, [%1];\" : cons(v) : \"l\"(p)); \\\n"
      "    return v;                                                            \\\n"
      "  }\n"
      "LOAD_AS(u64, unsigned long long, \"=l\")\n"
      "LOAD_AS(u16, unsigned short, \"=h\")\n";
  auto c = compile(R"(#include "loads.cuh"
extern "C" __global__ void k(const unsigned long long* a, const unsigned short* b,
                             unsigned long long* out) {
  const unsigned t = threadIdx.x;
  unsigned lane;
  asm("mov.u32 %0, %%laneid;" : "=r"(lane));
  out[t] = load_u64(a + t) + load_u16(b + t) + 1000000ull * lane;
}
)",
                   {}, {}, {{"loads.cuh", header}});
  ASSERT_TRUE(c.status.ok());
  ASSERT_TRUE(c.result.success) << c.result.log;
  std::unique_ptr<be::Module> m;
  ASSERT_EQ(cu(ctx->load_module(be::native_image(c.result.image.data()), m)), CUDA_SUCCESS);
  auto* a = dev<unsigned long long>(40);
  auto* b = dev<unsigned short>(40);
  auto* out = dev<unsigned long long>(40);
  for (unsigned i = 0; i < 40; ++i) {
    a[i] = 0x123456789ull << 20 | i;
    b[i] = static_cast<unsigned short>(60000 - i);
  }
  auto q = queue();
  ASSERT_EQ(launch(*q, m->function("k"), {1}, {40}, 0, a, b, out), CUDA_SUCCESS);
  ASSERT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
  for (unsigned i = 0; i < 40; ++i) EXPECT_EQ(out[i], a[i] + b[i] + 1000000ull * (i % 32)) << i;
}

// The program's own macro builds the template: the statement is translated after
// preprocessing, with the program's other statement.
TEST_F(MockCompile, InlinePtxBuiltByTheProgramsOwnMacros) {
  auto m = build(R"(
#define LOAD(mod, v, p) asm volatile("ld." #mod ".u32 %0, [%1];" : "=r"(v) : "l"(p))
extern "C" __global__ void k(const unsigned* in, unsigned* out) {
  const unsigned t = threadIdx.x;
  unsigned a, b, lane;
  LOAD(global.nc, a, in + t);
  LOAD(global.cg, b, in + 40 + t);
  asm("mov.u32 %0, %%laneid;" : "=r"(lane));
  out[t] = a * 3 + b + 100000 * lane;
}
)");
  ASSERT_TRUE(m);
  auto* in = dev<unsigned>(80);
  auto* out = dev<unsigned>(40);
  for (unsigned i = 0; i < 80; ++i) in[i] = 7 * i + 1;
  auto q = queue();
  ASSERT_EQ(launch(*q, m->function("k"), {1}, {40}, 0, in, out), CUDA_SUCCESS);
  ASSERT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
  for (unsigned i = 0; i < 40; ++i) EXPECT_EQ(out[i], in[i] * 3 + in[40 + i] + 100000 * (i % 32));
}

// A header's statement that the PTX front end cannot read stays as written; when the program
// uses it, the assembler's message names the header's line (line markers kept).
TEST_F(MockCompile, UnreadableHeaderPtxNamesTheHeadersLine) {
  auto c = compile(
      "#include \"odd.cuh\"\nextern \"C\" __global__ void k(unsigned* p) {\n"
      "  p[0] = odd(p[1]);\n}\n",
      {}, {},
      {{"odd.cuh",
        "__device__ unsigned odd(unsigned x) {\n  unsigned r;\n"
        "  asm(\"frobnicate.u32 %0, %1;\" : \"=r\"(r) : \"r\"(x));\n"
        "  return r;\n}\n"}});
  ASSERT_TRUE(c.status.ok());
  EXPECT_FALSE(c.result.success);
  // GNU as names the line ("odd.cuh:3: Error: "); clang's integrated assembler the line and
  // column of the statement's text (CUDAMUX_MOCK_CXX=clang++).
  EXPECT_TRUE(c.result.log.find("odd.cuh:3: Error: ") != std::string::npos ||
              c.result.log.find("odd.cuh:3:7: error: ") != std::string::npos)
      << c.result.log;
}

TEST_F(MockCompile, InlinePtxErrorsNameTheStatementsLine) {
  auto c = compile(
      "extern \"C\" __global__ void k(int* p) {\n  int v;\n  asm(\"frobnicate.u32 %0;\" : "
      "\"=r\"(v));\n  *p = v;\n}\n",
      {}, {}, {}, "bad_asm.cu");
  ASSERT_TRUE(c.status.ok());
  EXPECT_FALSE(c.result.success);
  EXPECT_NE(c.result.log.find("bad_asm.cu:3: error: inline PTX"), std::string::npos)
      << c.result.log;
}

// A [mock] compiler that is neither GCC nor Clang (here one that runs and says nothing, and one
// that is missing) fails the compile with CUDA's error for a missing JIT compiler, and the log
// names the compiler; the compiler's family is asked only when something must compile.
class MockCompileUnusable : public KernelTest, public ::testing::WithParamInterface<const char*> {
 protected:
  std::string config() override {
    return std::string("[mock]\nmemory = 268435456\ncompiler = \"") + GetParam() + "\"\n";
  }
  void SetUp() override {
    // The variable wins over the config (it may name clang++ for a run of the whole suite).
    if (const char* e = std::getenv("CUDAMUX_MOCK_CXX")) saved_ = e;
    ::unsetenv("CUDAMUX_MOCK_CXX");
    KernelTest::SetUp();
  }
  void TearDown() override {
    if (saved_) ::setenv("CUDAMUX_MOCK_CXX", saved_->c_str(), 1);
  }
  std::optional<std::string> saved_;
};

TEST_P(MockCompileUnusable, FailsWithJitCompilerNotFoundAndSaysWhy) {
  auto c = compile(std::string(kSaxpy) + "// " + GetParam() + "\n");
  EXPECT_EQ(cu(c.status), CUDA_ERROR_JIT_COMPILER_NOT_FOUND);
  EXPECT_FALSE(c.result.success);
  EXPECT_NE(log_text().find("is not a usable C++ compiler"), std::string::npos) << log_text();
  EXPECT_NE(log_text().find(GetParam()), std::string::npos) << log_text();
}

INSTANTIATE_TEST_SUITE_P(Compilers, MockCompileUnusable,
                         ::testing::Values("/bin/true", "/nonexistent/cudamux-no-such-c++"));

}  // namespace
}  // namespace cudamux::mock::test
