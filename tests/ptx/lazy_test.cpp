// Lazy compilation of PTX modules on the mock (issue 15 item 3): loading compiles nothing,
// each kernel compiles alone at its first launch, the module's variables are shared by its
// kernels and readable before any ran, compiled kernels come from the on-disk cache (in a
// fresh module and in a second process), and a changed kernel compiles again.
//
// The process runs with a private cache folder and a compiler wrapper that counts its runs
// (main() below sets both before cuInit): the counts are what the tests observe. Each test
// loads its own variant of tests/ptx/data/lazy.compute_75.ptx (blank lines in front shift
// every #line of the translation, hence its cache key), so tests do not see each other's
// cache entries.
#include <cuda.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "cudamux/ptx/emit_cpp.hpp"
#include "cudamux/ptx/ir.hpp"

extern char** environ;

namespace {

namespace fs = std::filesystem;

#define ASSERT_OK(x) ASSERT_EQ(CUDA_SUCCESS, (x)) << #x
#define EXPECT_OK(x) EXPECT_EQ(CUDA_SUCCESS, (x)) << #x

std::string g_dir;  // the private folder: cache/, cxx (the wrapper), compiles (its log)

std::string fixture() {
  std::ifstream in(std::string(CUDAMUX_PTX_DATA) + "/lazy.compute_75.ptx");
  return std::string((std::istreambuf_iterator<char>(in)), {});
}
std::string variant(int k) {
  return std::string(static_cast<std::size_t>(k) * 3, '\n') + fixture();
}

// Compiler runs so far (lines the wrapper appended).
int compiles() {
  std::ifstream in(g_dir + "/compiles");
  int n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}
int cache_entries() {
  std::error_code ec;
  int n = 0;
  for (auto it = fs::directory_iterator(g_dir + "/cache/mock", ec);
       !ec && it != fs::directory_iterator(); it.increment(ec))
    ++n;
  return n;
}

class PtxLazy : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_OK(cuInit(0));
    CUdevice dev;
    ASSERT_OK(cuDeviceGet(&dev, 0));
    ASSERT_OK(cuDevicePrimaryCtxRetain(&ctx_, dev));
  }
  void SetUp() override {
    ASSERT_FALSE(fixture().empty()) << "missing fixture";
    ASSERT_OK(cuCtxSetCurrent(ctx_));
  }
  static std::vector<int> run_add_const(CUmodule m) {
    CUfunction f = nullptr;
    EXPECT_OK(cuModuleGetFunction(&f, m, "add_const"));
    CUdeviceptr out = 0;
    EXPECT_OK(cuMemAlloc(&out, 32 * sizeof(int)));
    void* args[] = {&out};
    EXPECT_OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr));
    EXPECT_OK(cuCtxSynchronize());
    std::vector<int> v(32);
    EXPECT_OK(cuMemcpyDtoH(v.data(), out, v.size() * sizeof(int)));
    EXPECT_OK(cuMemFree(out));
    return v;
  }
  static inline CUcontext ctx_ = nullptr;
};

TEST_F(PtxLazy, LoadCompilesNothingAndALaunchCompilesOnlyItsKernel) {
  const int c0 = compiles(), e0 = cache_entries();
  CUmodule m = nullptr;
  const std::string ptx = variant(1);
  ASSERT_OK(cuModuleLoadData(&m, ptx.c_str()));
  EXPECT_EQ(compiles(), c0);
  // Attributes come from the PTX, before any code exists.
  CUfunction bounded = nullptr;
  ASSERT_OK(cuModuleGetFunction(&bounded, m, "bounded"));
  int v = 0;
  EXPECT_OK(cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, bounded));
  EXPECT_EQ(v, 128);
  EXPECT_OK(cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, bounded));
  EXPECT_EQ(v, 64 * 4);
  size_t offset = 0, size = 0;
  EXPECT_OK(cuFuncGetParamInfo(bounded, 0, &offset, &size));
  EXPECT_EQ(size, sizeof(void*));
  EXPECT_EQ(compiles(), c0);
  EXPECT_EQ(cache_entries(), e0);

  const auto r = run_add_const(m);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(r[i], i + 1234567);
  EXPECT_EQ(compiles(), c0 + 1);
  EXPECT_EQ(cache_entries(), e0 + 1);
  run_add_const(m);  // compiled once
  EXPECT_EQ(compiles(), c0 + 1);

  // The second kernel compiles at its own first launch (and keeps its launch bounds).
  CUdeviceptr out = 0;
  ASSERT_OK(cuMemAlloc(&out, 128 * sizeof(float)));
  std::vector<float> in(128);
  for (int i = 0; i < 128; ++i) in[i] = static_cast<float>(i);
  ASSERT_OK(cuMemcpyHtoD(out, in.data(), in.size() * sizeof(float)));
  void* args[] = {&out};
  EXPECT_EQ(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
            cuLaunchKernel(bounded, 1, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr));
  ASSERT_OK(cuLaunchKernel(bounded, 1, 1, 1, 64, 1, 1, 0, nullptr, args, nullptr));
  ASSERT_OK(cuCtxSynchronize());
  std::vector<float> got(128);
  ASSERT_OK(cuMemcpyDtoH(got.data(), out, got.size() * sizeof(float)));
  for (int i = 0; i < 64; ++i) EXPECT_EQ(got[i], static_cast<float>((i + 1) & 63));
  EXPECT_EQ(compiles(), c0 + 2);
  EXPECT_OK(cuMemFree(out));
  EXPECT_OK(cuModuleUnload(m));
}

TEST_F(PtxLazy, VariablesAreSharedByKernelsCompiledSeparately) {
  CUmodule m = nullptr;
  const std::string ptx = variant(2);
  const int c0 = compiles();
  ASSERT_OK(cuModuleLoadData(&m, ptx.c_str()));
  // Before any kernel ran: initial values, and an address initialiser pointing into `table`.
  CUdeviceptr counter = 0, table = 0, tp = 0;
  size_t bytes = 0;
  ASSERT_OK(cuModuleGetGlobal(&counter, &bytes, m, "counter"));
  EXPECT_EQ(bytes, 4u);
  ASSERT_OK(cuModuleGetGlobal(&table, &bytes, m, "table"));
  EXPECT_EQ(bytes, 16u);
  ASSERT_OK(cuModuleGetGlobal(&tp, &bytes, m, "tp"));
  EXPECT_EQ(bytes, 8u);
  int value = 0;
  ASSERT_OK(cuMemcpyDtoH(&value, counter, sizeof value));
  EXPECT_EQ(value, 5);
  std::uint64_t pointer = 0;
  ASSERT_OK(cuMemcpyDtoH(&pointer, tp, sizeof pointer));
  EXPECT_EQ(pointer, table + 4);
  EXPECT_EQ(compiles(), c0);
  value = 100;
  ASSERT_OK(cuMemcpyHtoD(counter, &value, sizeof value));

  CUfunction bump = nullptr, read = nullptr, apply = nullptr;
  ASSERT_OK(cuModuleGetFunction(&bump, m, "bump"));
  ASSERT_OK(cuModuleGetFunction(&read, m, "read_counter"));
  ASSERT_OK(cuModuleGetFunction(&apply, m, "apply"));
  int by = 7;
  void* bump_args[] = {&by};
  ASSERT_OK(cuLaunchKernel(bump, 2, 1, 1, 3, 1, 1, 0, nullptr, bump_args, nullptr));
  CUdeviceptr out = 0;
  ASSERT_OK(cuMemAlloc(&out, 64 * sizeof(float)));
  void* read_args[] = {&out};
  ASSERT_OK(cuLaunchKernel(read, 1, 1, 1, 1, 1, 1, 0, nullptr, read_args, nullptr));
  ASSERT_OK(cuCtxSynchronize());
  int got[2] = {};
  ASSERT_OK(cuMemcpyDtoH(got, out, sizeof got));
  EXPECT_EQ(got[0], 100 + 6 * 7);  // bump's writes, seen by read_counter's code
  EXPECT_EQ(got[1], 20);           // *tp == table[1]
  ASSERT_OK(cuMemcpyDtoH(&value, counter, sizeof value));
  EXPECT_EQ(value, 142);

  // A kernel with a .func helper reading `table` and a __constant__.
  int table_values[4] = {1, 2, 3, 4};
  ASSERT_OK(cuMemcpyHtoD(table, table_values, sizeof table_values));
  int n = 50;
  void* apply_args[] = {&out, &n};
  ASSERT_OK(cuLaunchKernel(apply, 1, 1, 1, 64, 1, 1, 0, nullptr, apply_args, nullptr));
  ASSERT_OK(cuCtxSynchronize());
  std::vector<float> f(64);
  ASSERT_OK(cuMemcpyDtoH(f.data(), out, f.size() * sizeof(float)));
  for (int i = 0; i < n; ++i) EXPECT_EQ(f[i], static_cast<float>((i * 3 + (i & 3) + 1) * 2));
  EXPECT_EQ(compiles(), c0 + 3);
  EXPECT_OK(cuMemFree(out));
  EXPECT_OK(cuModuleUnload(m));
}

// Runs this binary as a second process (see main) on `ptx_file`, with `extra_env` added to
// this process's environment; its exit status.
int run_child(const std::string& ptx_file, const char* extra_env = nullptr) {
  char self[4096] = {};
  const ssize_t len = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) return -1;
  std::string child_flag = "--child";
  std::vector<char*> argv = {self, child_flag.data(), const_cast<char*>(ptx_file.c_str()), nullptr};
  std::vector<char*> env;
  for (char** e = environ; *e != nullptr; ++e) env.push_back(*e);
  std::string extra = extra_env != nullptr ? extra_env : "";
  if (!extra.empty()) env.push_back(extra.data());
  env.push_back(nullptr);
  pid_t pid = 0;
  if (::posix_spawn(&pid, self, nullptr, nullptr, argv.data(), env.data()) != 0) return -1;
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0) {
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

TEST_F(PtxLazy, CompiledKernelsComeFromTheCacheInAFreshModuleAndASecondProcess) {
  const std::string ptx = variant(3);
  CUmodule m = nullptr;
  const int c0 = compiles();
  ASSERT_OK(cuModuleLoadData(&m, ptx.c_str()));
  run_add_const(m);
  EXPECT_EQ(compiles(), c0 + 1);
  ASSERT_OK(cuModuleUnload(m));
  ASSERT_OK(cuModuleLoadData(&m, ptx.c_str()));
  const auto r = run_add_const(m);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(r[i], i + 1234567);
  EXPECT_EQ(compiles(), c0 + 1);
  ASSERT_OK(cuModuleUnload(m));

  const std::string file = g_dir + "/variant3.ptx";
  std::ofstream(file) << ptx;
  EXPECT_EQ(run_child(file), 0);
  EXPECT_EQ(compiles(), c0 + 1);  // the child compiled nothing either
}

TEST_F(PtxLazy, AChangedKernelCompilesAgainAndAnUnchangedOneDoesNot) {
  std::string ptx = variant(4);
  CUmodule m = nullptr;
  const int c0 = compiles();
  ASSERT_OK(cuModuleLoadData(&m, ptx.c_str()));
  run_add_const(m);
  EXPECT_EQ(compiles(), c0 + 1);
  ASSERT_OK(cuModuleUnload(m));
  // Another kernel's code changes (same length, same lines): add_const's translation is the
  // same, its cache entry still serves.
  const auto bump_add = ptx.find("atom.global.add.u32");
  ASSERT_NE(bump_add, std::string::npos);
  ptx.replace(bump_add, 19, "atom.global.max.u32");
  ASSERT_OK(cuModuleLoadData(&m, ptx.c_str()));
  run_add_const(m);
  EXPECT_EQ(compiles(), c0 + 1);
  ASSERT_OK(cuModuleUnload(m));
  // add_const itself changes.
  const auto at = ptx.find("1234567");
  ASSERT_NE(at, std::string::npos);
  ptx.replace(at, 7, "7654321");
  ASSERT_OK(cuModuleLoadData(&m, ptx.c_str()));
  const auto r = run_add_const(m);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(r[i], i + 7654321);
  EXPECT_EQ(compiles(), c0 + 2);
  ASSERT_OK(cuModuleUnload(m));
}

// CUDAMUX_MOCK_PTX_LAZY=0 (a second process: settings are read at initialisation): the whole
// module compiles at load, in one compiler run, and its kernels run.
TEST_F(PtxLazy, TheEagerPathCompilesTheWholeModuleAtLoad) {
  const std::string file = g_dir + "/variant5.ptx";
  std::ofstream(file) << variant(5);
  const int c0 = compiles();
  EXPECT_EQ(run_child(file, "CUDAMUX_MOCK_PTX_LAZY=0"), 0);
  EXPECT_EQ(compiles(), c0 + 1);
  // Lazily, the same PTX: the kernel's own translation, not the module's cache entry.
  EXPECT_EQ(run_child(file), 0);
  EXPECT_EQ(compiles(), c0 + 2);
  EXPECT_EQ(run_child(file, "CUDAMUX_MOCK_PTX_LAZY=0"), 0);
  EXPECT_EQ(compiles(), c0 + 2);  // both cached now
}

// The back end's side: a kernel's translation holds the .func functions it reaches only.
TEST(PtxLazyEmit, AKernelsTranslationHoldsOnlyWhatItReaches) {
  std::vector<cudamux::ptx::Diagnostic> diags;
  const std::string text = fixture();
  const auto module = cudamux::ptx::parse(text, diags);
  ASSERT_TRUE(module.has_value());
  auto index = [&](const std::string& name) {
    for (std::size_t i = 0; i < module->functions.size(); ++i)
      if (module->functions[i].name == name) return static_cast<std::int64_t>(i);
    return std::int64_t{-1};
  };
  const auto helper = index("_Z6helperi"), apply = index("apply"), bump = index("bump");
  ASSERT_GE(helper, 0);
  ASSERT_GE(apply, 0);
  ASSERT_GE(bump, 0);
  cudamux::ptx::EmitOptions o;
  o.external_globals = true;
  o.only_function = apply;
  auto r = cudamux::ptx::emit_cpp(*module, o);
  EXPECT_TRUE(r.emitted[apply]);
  EXPECT_TRUE(r.emitted[helper]);
  EXPECT_FALSE(r.emitted[bump]);
  EXPECT_NE(r.source.find("void cudamux_e_apply("), std::string::npos);
  EXPECT_EQ(r.source.find("void cudamux_e_bump("), std::string::npos);
  EXPECT_NE(r.source.find("cudamux_ptx_globals["), std::string::npos);
  o.only_function = bump;
  r = cudamux::ptx::emit_cpp(*module, o);
  EXPECT_FALSE(r.emitted[helper]);
  EXPECT_EQ(r.source.find("void cudamux_e_apply("), std::string::npos);
  // The whole module (eager): everything, variables defined in the translation.
  r = cudamux::ptx::emit_cpp(*module);
  EXPECT_TRUE(r.emitted[helper] && r.emitted[bump] && r.emitted[apply]);
  EXPECT_EQ(r.source.find("cudamux_ptx_globals["), std::string::npos);
}

// The second process of CompiledKernelsComeFromTheCache...: loads the PTX, runs add_const.
int child(const char* ptx_file) {
  std::ifstream in(ptx_file);
  const std::string ptx((std::istreambuf_iterator<char>(in)), {});
  CUdevice dev;
  CUcontext ctx;
  CUmodule m;
  CUfunction f;
  CUdeviceptr out;
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
      cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS || cuCtxSetCurrent(ctx) != CUDA_SUCCESS ||
      cuModuleLoadData(&m, ptx.c_str()) != CUDA_SUCCESS ||
      cuModuleGetFunction(&f, m, "add_const") != CUDA_SUCCESS ||
      cuMemAlloc(&out, 32 * sizeof(int)) != CUDA_SUCCESS)
    return 2;
  void* args[] = {&out};
  if (cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr) != CUDA_SUCCESS ||
      cuCtxSynchronize() != CUDA_SUCCESS)
    return 3;
  int v[32];
  if (cuMemcpyDtoH(v, out, sizeof v) != CUDA_SUCCESS) return 4;
  for (int i = 0; i < 32; ++i)
    if (v[i] != i + 1234567) return 5;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--child") return child(argv[2]);  // env inherited
  char tmpl[] = "/tmp/cudamux-ptx-lazy-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) return 1;
  g_dir = tmpl;
  // The wrapper: one line per compiler run, then the compiler the mock would have used.
  const char* cxx = std::getenv("CUDAMUX_MOCK_CXX");
  const std::string real = cxx != nullptr && *cxx != '\0' ? cxx : "g++";
  {
    std::ofstream w(g_dir + "/cxx");
    // (Precompiled header builds and the question of the compiler's family, `-dM -E`, once per
    // process here, are not kernel compiles.)
    w << "#!/bin/sh\ncase \"$*\" in *c++-header*|*-dM*) ;; *) echo run >> '" << g_dir
      << "/compiles' ;; esac\nexec " << real << " \"$@\"\n";
  }
  fs::permissions(g_dir + "/cxx", fs::perms::owner_all);
  ::setenv("CUDAMUX_MOCK_CXX", (g_dir + "/cxx").c_str(), 1);
  ::setenv("CUDA_CACHE_PATH", (g_dir + "/cache").c_str(), 1);
  ::unsetenv("CUDA_CACHE_DISABLE");
  ::unsetenv("CUDAMUX_MOCK_PTX_LAZY");
  ::unsetenv("CUDAMUX_MEMCHECK");
  ::testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  std::error_code ec;
  fs::remove_all(g_dir, ec);
  return rc;
}
