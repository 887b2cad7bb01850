// PTX from nvcc (data/emit_kernels.cu -> emit_kernels.ptx) run on the mock through the driver
// API: cuModuleLoadData parses it, the back end (ptx/src/emit_cpp.cpp) translates it, the
// mock compiles and runs it; every result is compared with the same algorithm in C++.
#include <cuda.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace {

#define ASSERT_OK(x) ASSERT_EQ(CUDA_SUCCESS, (x)) << #x
#define EXPECT_OK(x) EXPECT_EQ(CUDA_SUCCESS, (x)) << #x

class PtxRun : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_OK(cuInit(0));
    CUdevice dev;
    ASSERT_OK(cuDeviceGet(&dev, 0));
    ASSERT_OK(cuDevicePrimaryCtxRetain(&ctx_, dev));
    ASSERT_OK(cuCtxSetCurrent(ctx_));
    std::ifstream in(std::string(CUDAMUX_PTX_DATA) + "/emit_kernels.ptx");
    ASSERT_TRUE(in) << "missing fixture";
    std::string ptx((std::istreambuf_iterator<char>(in)), {});
    ASSERT_OK(cuModuleLoadData(&module_, ptx.c_str()));
  }
  static void TearDownTestSuite() {
    if (module_) cuModuleUnload(module_);
    module_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(module_, nullptr);
    ASSERT_OK(cuCtxSetCurrent(ctx_));
  }
  static CUfunction fn(const char* name) {
    CUfunction f = nullptr;
    EXPECT_OK(cuModuleGetFunction(&f, module_, name));
    return f;
  }
  template <class T>
  static CUdeviceptr upload(const std::vector<T>& v) {
    CUdeviceptr p = 0;
    EXPECT_OK(cuMemAlloc(&p, std::max<size_t>(v.size() * sizeof(T), 1)));
    if (!v.empty()) {
      EXPECT_OK(cuMemcpyHtoD(p, v.data(), v.size() * sizeof(T)));
    }
    return p;
  }
  template <class T>
  static std::vector<T> download(CUdeviceptr p, size_t n) {
    std::vector<T> v(n);
    EXPECT_OK(cuMemcpyDtoH(v.data(), p, n * sizeof(T)));
    cuMemFree(p);
    return v;
  }
  static inline CUcontext ctx_ = nullptr;
  static inline CUmodule module_ = nullptr;
};

TEST_F(PtxRun, IntegerAndFloatArithmeticConversionsAndSelects) {
  const int n = 64, a = -123457, b = 77;
  const float x = 1.37f;
  CUdeviceptr out = upload(std::vector<int>(n * 16)), fout = upload(std::vector<float>(n * 4)),
              dout = upload(std::vector<double>(n));
  void* args[] = {
      &out, &fout, &dout, const_cast<int*>(&a), const_cast<int*>(&b), const_cast<float*>(&x)};
  ASSERT_OK(cuLaunchKernel(fn("arith"), 1, 1, 1, n, 1, 1, 0, nullptr, args, nullptr));
  ASSERT_OK(cuCtxSynchronize());
  const auto o = download<int>(out, n * 16);
  const auto f = download<float>(fout, n * 4);
  const auto d = download<double>(dout, n);
  auto brev = [](unsigned v) {
    unsigned r = 0;
    for (int i = 0; i < 32; ++i) r |= ((v >> i) & 1u) << (31 - i);
    return r;
  };
  for (int t = 0; t < n; ++t) {
    const int u = a + t * 7919, v = b - t;
    const int* e = &o[t * 16];
    EXPECT_EQ(e[0], static_cast<int>(static_cast<unsigned>(u) * static_cast<unsigned>(v))) << t;
    EXPECT_EQ(e[1], v != 0 ? u / v : -1) << t;
    EXPECT_EQ(e[2], v != 0 ? u % v : -1) << t;
    EXPECT_EQ(e[3], u >> (t & 31)) << t;
    EXPECT_EQ(e[4], static_cast<int>(static_cast<unsigned>(u) >> (t & 31))) << t;
    EXPECT_EQ(e[5], static_cast<int>(static_cast<unsigned>(u) << (t & 7))) << t;
    EXPECT_EQ(e[6], std::min(u, v) ^ std::max(u, v)) << t;
    EXPECT_EQ(e[7], __builtin_popcount(static_cast<unsigned>(u)) +
                        (v == 0 ? 32 : __builtin_clz(static_cast<unsigned>(v))) * 100)
        << t;
    EXPECT_EQ(static_cast<unsigned>(e[8]), brev(static_cast<unsigned>(u))) << t;
    EXPECT_EQ(e[9], static_cast<int>(x * t)) << t;
    EXPECT_EQ(static_cast<unsigned>(e[10]), static_cast<unsigned>(x * t * 1000)) << t;
    EXPECT_EQ(e[11], static_cast<int>(std::nearbyint(x * t))) << t;
    EXPECT_EQ(e[12], u > v ? 1 : 2) << t;
    EXPECT_EQ(e[13], static_cast<short>(u)) << t;
    EXPECT_EQ(static_cast<unsigned>(e[14]),
              static_cast<unsigned>((static_cast<std::uint64_t>(static_cast<unsigned>(u)) *
                                     static_cast<unsigned>(v)) >>
                                    32))
        << t;
    EXPECT_EQ(e[15], static_cast<int>((static_cast<long long>(u) * v) >> 20)) << t;
    EXPECT_FLOAT_EQ(f[t * 4 + 0], x * t + 1.0f / (t + 1)) << t;
    EXPECT_FLOAT_EQ(f[t * 4 + 1], std::sqrt(x + t)) << t;
    EXPECT_FLOAT_EQ(f[t * 4 + 2], std::fmin(x, t) - std::fmax(x, t)) << t;
    EXPECT_FLOAT_EQ(f[t * 4 + 3], static_cast<float>(u) / 3.0f) << t;
    EXPECT_DOUBLE_EQ(d[t], static_cast<double>(x) * u + 0.25) << t;
  }
}

TEST_F(PtxRun, BranchesAndLoops) {
  const unsigned base = 1, n = 256;
  CUdeviceptr steps = upload(std::vector<unsigned>(n));
  void* args[] = {&steps, const_cast<unsigned*>(&base)};
  ASSERT_OK(cuLaunchKernel(fn("collatz"), 4, 1, 1, 64, 1, 1, 0, nullptr, args, nullptr));
  ASSERT_OK(cuCtxSynchronize());
  const auto s = download<unsigned>(steps, n);
  for (unsigned i = 0; i < n; ++i) {
    unsigned long long v = base + i;
    unsigned want = 0;
    while (v != 1) {
      v = (v & 1) ? 3 * v + 1 : v / 2;
      ++want;
    }
    EXPECT_EQ(s[i], want) << i;
  }
}

TEST_F(PtxRun, RecursionAndFunctionPointers) {
  auto fib = [](int k) {
    int x = 0, y = 1;
    for (int i = 0; i < k; ++i) {
      const int z = x + y;
      x = y;
      y = z;
    }
    return x;
  };
  for (int which : {0, 1}) {
    const int n = 3;
    CUdeviceptr out = upload(std::vector<int>(8));
    void* args[] = {&out, const_cast<int*>(&n), &which};
    ASSERT_OK(cuLaunchKernel(fn("calls"), 1, 1, 1, 8, 1, 1, 0, nullptr, args, nullptr));
    ASSERT_OK(cuCtxSynchronize());
    const auto o = download<int>(out, 8);
    for (int t = 0; t < 8; ++t) EXPECT_EQ(o[t], fib(n + t) + (which ? t * t : 2 * t)) << t;
  }
}

TEST_F(PtxRun, SharedMemoryBarriersAndAtomics) {
  const unsigned blocks = 5, threads = 128;
  std::vector<int> in(blocks * threads);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<int>(i * 37 % 101) - 50;
  CUdeviceptr din = upload(in), total = upload(std::vector<int>{7}),
              per = upload(std::vector<int>(blocks));
  CUdeviceptr counter = 0;
  size_t counter_size = 0;
  ASSERT_OK(cuModuleGetGlobal(&counter, &counter_size, module_, "counter"));
  EXPECT_EQ(counter_size, 4u);
  const unsigned zero = 0;
  ASSERT_OK(cuMemcpyHtoD(counter, &zero, 4));
  void* args[] = {&din, &total, &per};
  ASSERT_OK(
      cuLaunchKernel(fn("block_sum"), blocks, 1, 1, threads, 1, 1, 0, nullptr, args, nullptr));
  ASSERT_OK(cuCtxSynchronize());
  const auto p = download<int>(per, blocks);
  int all = 7;
  for (unsigned b = 0; b < blocks; ++b) {
    int want = 0;
    for (unsigned t = 0; t < threads; ++t) want += in[b * threads + t];
    EXPECT_EQ(p[b], want) << b;
    all += want;
  }
  EXPECT_EQ(download<int>(total, 1)[0], all);
  unsigned count = 0;
  ASSERT_OK(cuMemcpyDtoH(&count, counter, 4));
  EXPECT_EQ(count, blocks);
}

TEST_F(PtxRun, WarpShufflesAndVotes) {
  const unsigned threads = 64;
  CUdeviceptr out = upload(std::vector<int>(threads * 3));
  void* args[] = {&out};
  ASSERT_OK(cuLaunchKernel(fn("warp_ops"), 1, 1, 1, threads, 1, 1, 0, nullptr, args, nullptr));
  ASSERT_OK(cuCtxSynchronize());
  const auto o = download<int>(out, threads * 3);
  for (unsigned w = 0; w < threads / 32; ++w) {
    // Lane 0 of each warp holds the warp's sum after the shuffle-down tree.
    int sum = 0;
    unsigned ballot = 0;
    for (unsigned l = 0; l < 32; ++l) {
      sum += static_cast<int>((w * 32 + l) * 3 + 1);
      if ((w * 32 + l) % 3 == 0) ballot |= 1u << l;
    }
    EXPECT_EQ(o[w * 32 * 3], sum) << w;
    for (unsigned l = 0; l < 32; ++l) {
      const unsigned t = w * 32 + l;
      EXPECT_EQ(static_cast<unsigned>(o[t * 3 + 1]), ballot) << t;
      EXPECT_EQ(o[t * 3 + 2], static_cast<int>((w * 32 + (31 - t % 32)) * 10)) << t;
    }
  }
}

TEST_F(PtxRun, LocalArraysDynamicSharedStructsGlobalsAndPrintf) {
  struct Pair {
    int a;
    double b;
    char c;
  } p{1000, 20.75, 3};
  const int k = 5;
  const unsigned threads = 32;
  CUdeviceptr out = upload(std::vector<int>(threads));
  void* args[] = {&out, &p, const_cast<int*>(&k)};
  testing::internal::CaptureStdout();
  ASSERT_OK(cuLaunchKernel(fn("misc"), 1, 1, 1, threads, 1, 1, threads * sizeof(int), nullptr, args,
                           nullptr));
  ASSERT_OK(cuCtxSynchronize());
  const std::string printed = testing::internal::GetCapturedStdout();
  EXPECT_NE(printed.find("misc k=5 a=1000 b=20.75"), std::string::npos) << printed;
  const auto o = download<int>(out, threads);
  const int table[4] = {3, 1, 4, 1};
  const float coef[3] = {0.5f, 2.0f, -1.0f};
  for (unsigned t = 0; t < threads; ++t) {
    const unsigned src = threads - 1 - t;
    const int local = static_cast<int>(((src * 5 + k) & 15) * ((src * 5 + k) & 15)) + k;
    const int want = local + table[t & 3] + table[2] + static_cast<int>(coef[t % 3] * 10) + p.a +
                     static_cast<int>(p.b) + p.c;
    EXPECT_EQ(o[t], want) << t;
  }
}

// nvcc emits cudaGraphSetConditional as a call of an external function; the back end maps it
// to the device runtime's setter (issue 16). A WHILE node whose body is the countdown of
// NVIDIA's graphConditionalNodes sample, then an IF/else node set from memory by a kernel.
TEST_F(PtxRun, GraphSetConditionalFromNvccPtx) {
  std::ifstream in(std::string(CUDAMUX_PTX_DATA) + "/cond.compute_80.ptx");
  ASSERT_TRUE(in) << "missing fixture";
  const std::string ptx((std::istreambuf_iterator<char>(in)), {});
  CUmodule m = nullptr;
  ASSERT_OK(cuModuleLoadData(&m, ptx.c_str()));
  CUfunction set_from = nullptr, countdown = nullptr, store = nullptr;
  ASSERT_OK(cuModuleGetFunction(&set_from, m, "set_from"));
  ASSERT_OK(cuModuleGetFunction(&countdown, m, "countdown"));
  ASSERT_OK(cuModuleGetFunction(&store, m, "store"));
  CUstream s = nullptr;
  ASSERT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUdeviceptr mem = 0;
  ASSERT_OK(cuMemAlloc(&mem, 4 * sizeof(int)));
  const CUdeviceptr counter = mem, iterations = mem + 4, flag = mem + 8, out = mem + 12;
  const auto kernel = [&](CUgraph g, CUgraphNode* dep, CUfunction f, void** args) {
    CUDA_KERNEL_NODE_PARAMS p{};
    p.func = f;
    p.gridDimX = p.gridDimY = p.gridDimZ = 1;
    p.blockDimX = p.blockDimY = p.blockDimZ = 1;
    p.kernelParams = args;
    CUgraphNode n = nullptr;
    EXPECT_OK(cuGraphAddKernelNode(&n, g, dep, dep ? 1 : 0, &p));
    return n;
  };
  const auto conditional = [&](CUgraph g, CUgraphNode* dep, CUgraphConditionalHandle h,
                               CUgraphConditionalNodeType type, unsigned size) {
    CUgraphNodeParams p{};
    p.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
    p.conditional.handle = h;
    p.conditional.type = type;
    p.conditional.size = size;
    p.conditional.ctx = ctx_;
    CUgraphNode n = nullptr;
    EXPECT_OK(cuGraphAddNode(&n, g, dep, nullptr, dep ? 1 : 0, &p));
    return p.conditional.phGraph_out;
  };
  CUgraph g = nullptr;
  ASSERT_OK(cuGraphCreate(&g, 0));
  CUgraphConditionalHandle loop = 0, branch = 0;
  ASSERT_OK(cuGraphConditionalHandleCreate(&loop, g, ctx_, 1, CU_GRAPH_COND_ASSIGN_DEFAULT));
  ASSERT_OK(cuGraphConditionalHandleCreate(&branch, g, ctx_, 0, 0));
  CUgraph* body = conditional(g, nullptr, loop, CU_GRAPH_COND_TYPE_WHILE, 1);
  ASSERT_NE(body, nullptr);
  void* count_args[] = {const_cast<CUdeviceptr*>(&counter), const_cast<CUdeviceptr*>(&iterations),
                        &loop};
  kernel(body[0], nullptr, countdown, count_args);
  void* set_args[] = {&branch, const_cast<CUdeviceptr*>(&flag)};
  CUgraphNode set = kernel(g, nullptr, set_from, set_args);
  CUgraph* sides = conditional(g, &set, branch, CU_GRAPH_COND_TYPE_IF, 2);
  ASSERT_NE(sides, nullptr);
  int then_value = 1, else_value = 2;
  void* then_args[] = {const_cast<CUdeviceptr*>(&out), &then_value};
  void* else_args[] = {const_cast<CUdeviceptr*>(&out), &else_value};
  kernel(sides[0], nullptr, store, then_args);
  kernel(sides[1], nullptr, store, else_args);
  CUgraphExec x = nullptr;
  ASSERT_OK(cuGraphInstantiate(&x, g, 0));
  for (int f : {0, 3}) {
    SCOPED_TRACE(f);
    const int init[4] = {7, 0, f, -1};
    ASSERT_OK(cuMemcpyHtoDAsync(mem, init, sizeof init, s));
    ASSERT_OK(cuGraphLaunch(x, s));
    int got[4] = {};
    ASSERT_OK(cuMemcpyDtoHAsync(got, mem, sizeof got, s));
    ASSERT_OK(cuStreamSynchronize(s));
    EXPECT_EQ(got[0], 0);
    EXPECT_EQ(got[1], 7);  // seven iterations of the body
    EXPECT_EQ(got[3], f ? 1 : 2);
  }
  EXPECT_OK(cuGraphExecDestroy(x));
  EXPECT_OK(cuGraphDestroy(g));
  EXPECT_OK(cuMemFree(mem));
  EXPECT_OK(cuStreamDestroy(s));
  EXPECT_OK(cuModuleUnload(m));
}

// A fault in a split kernel (emit_split.cpp compiles its twins without -fnon-call-exceptions)
// still ends the launch with CUDA_ERROR_ILLEGAL_ADDRESS: the exception thrown by the fault
// handler unwinds through the twin. The kernel stores, waits at a barrier, then reads through
// a pointer parameter.
TEST_F(PtxRun, FaultAfterABarrierInASplitKernelFailsTheLaunch) {
  const char* ptx = R"(.version 7.5
.target sm_75
.address_size 64
.visible .entry fault_after_barrier(.param .u64 p, .param .u64 out)
{
  .reg .b32 %r<5>;
  .reg .b64 %rd<7>;
  .shared .align 4 .b8 s[256];
  ld.param.u64 %rd1, [p];
  ld.param.u64 %rd2, [out];
  mov.u32 %r1, %tid.x;
  shl.b32 %r2, %r1, 2;
  mov.u32 %r3, s;
  add.s32 %r4, %r3, %r2;
  st.shared.u32 [%r4], %r1;
  bar.sync 0;
  ld.shared.u32 %r2, [%r4];
  cvta.to.global.u64 %rd3, %rd1;
  mul.wide.u32 %rd4, %r1, 4;
  add.s64 %rd5, %rd3, %rd4;
  ld.global.u32 %r3, [%rd5];
  add.s32 %r3, %r3, %r2;
  cvta.to.global.u64 %rd6, %rd2;
  add.s64 %rd5, %rd6, %rd4;
  st.global.u32 [%rd5], %r3;
  ret;
}
)";
  CUmodule m = nullptr;
  ASSERT_OK(cuModuleLoadData(&m, ptx));
  CUfunction f = nullptr;
  ASSERT_OK(cuModuleGetFunction(&f, m, "fault_after_barrier"));
  const unsigned n = 64;
  std::vector<int> in(n);
  for (unsigned t = 0; t < n; ++t) in[t] = static_cast<int>(100 * t);
  CUdeviceptr p = upload(in), out = upload(std::vector<int>(n));
  void* args[] = {&p, &out};
  ASSERT_OK(cuLaunchKernel(f, 1, 1, 1, n, 1, 1, 0, nullptr, args, nullptr));
  ASSERT_OK(cuCtxSynchronize());
  const auto o = download<int>(out, n);
  for (unsigned t = 0; t < n; ++t) EXPECT_EQ(o[t], static_cast<int>(101 * t)) << t;
  // An address nothing maps: the launch fails, the process lives on.
  CUdeviceptr bad = 0x1000;
  CUdeviceptr out2 = upload(std::vector<int>(n));
  void* bad_args[] = {&bad, &out2};
  CUresult r = cuLaunchKernel(f, 1, 1, 1, n, 1, 1, 0, nullptr, bad_args, nullptr);
  if (r == CUDA_SUCCESS) r = cuCtxSynchronize();
  EXPECT_EQ(r, CUDA_ERROR_ILLEGAL_ADDRESS);
}

}  // namespace
