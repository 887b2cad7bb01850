// Conditional graph nodes through the runtime (issue 16) on the mock:
// cudaGraphConditionalHandleCreate, cudaGraphAddNode with cudaGraphNodeTypeConditional (the body
// graphs come back in phGraph_out), and kernels (NVRTC, cudaLibraryLoadData) that set the
// condition with cudaGraphSetConditional: a WHILE countdown, IF/else and SWITCH.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <nvrtc.h>

#include <string>
#include <vector>

namespace {

#define ASSERT_RT(call) ASSERT_EQ((call), cudaSuccess) << #call
#define EXPECT_RT(call) EXPECT_EQ((call), cudaSuccess) << #call

const char* kSource = R"(
extern "C" __global__ void countdown(int* counter, int* iterations, cudaGraphConditionalHandle h) {
  *iterations += 1;
  if (--*counter == 0) cudaGraphSetConditional(h, 0);
}
extern "C" __global__ void set_from(cudaGraphConditionalHandle h, const int* value) {
  cudaGraphSetConditional(h, *value);
}
extern "C" __global__ void store(int* out, int value) { *out = value; }
)";

class RuntimeGraphConditional : public ::testing::Test {
 protected:
  void SetUp() override {
    nvrtcProgram prog;
    ASSERT_EQ(nvrtcCreateProgram(&prog, kSource, "cond.cu", 0, nullptr, nullptr), NVRTC_SUCCESS);
    if (nvrtcCompileProgram(prog, 0, nullptr) != NVRTC_SUCCESS) {
      size_t n = 0;
      nvrtcGetProgramLogSize(prog, &n);
      std::string log(n, '\0');
      nvrtcGetProgramLog(prog, log.data());
      nvrtcDestroyProgram(&prog);
      FAIL() << log;
    }
    size_t size = 0;
    ASSERT_EQ(nvrtcGetPTXSize(prog, &size), NVRTC_SUCCESS);
    std::vector<char> ptx(size);
    ASSERT_EQ(nvrtcGetPTX(prog, ptx.data()), NVRTC_SUCCESS);
    nvrtcDestroyProgram(&prog);
    ASSERT_RT(cudaSetDevice(0));
    ASSERT_RT(cudaLibraryLoadData(&lib_, ptx.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
    ASSERT_RT(cudaLibraryGetKernel(&countdown_, lib_, "countdown"));
    ASSERT_RT(cudaLibraryGetKernel(&set_from_, lib_, "set_from"));
    ASSERT_RT(cudaLibraryGetKernel(&store_, lib_, "store"));
    ASSERT_RT(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    ASSERT_RT(cudaMalloc(reinterpret_cast<void**>(&mem_), 4 * sizeof(int)));
    // Set-up goes through stream_: cudaMemset on the legacy stream may complete after it
    // returns, and a non-blocking stream's graph launch does not wait for it.
    ASSERT_RT(cudaMemsetAsync(mem_, 0, 4 * sizeof(int), stream_));
    ASSERT_RT(cudaStreamSynchronize(stream_));
  }
  void TearDown() override {
    EXPECT_RT(cudaFree(mem_));
    EXPECT_RT(cudaStreamDestroy(stream_));
    if (lib_) {
      EXPECT_RT(cudaLibraryUnload(lib_));
    }
    EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  }
  cudaGraphNode_t kernel(cudaGraph_t g, cudaGraphNode_t dep, cudaKernel_t k, void** args) {
    cudaKernelNodeParams p{};
    p.func = reinterpret_cast<void*>(k);
    p.gridDim = dim3(1);
    p.blockDim = dim3(1);
    p.kernelParams = args;
    cudaGraphNode_t n = nullptr;
    EXPECT_RT(cudaGraphAddKernelNode(&n, g, dep ? &dep : nullptr, dep ? 1 : 0, &p));
    return n;
  }
  cudaGraphNode_t conditional(cudaGraph_t g, cudaGraphNode_t dep, cudaGraphConditionalHandle h,
                              cudaGraphConditionalNodeType type, unsigned size,
                              cudaGraph_t** bodies) {
    cudaGraphNodeParams p{};
    p.type = cudaGraphNodeTypeConditional;
    p.conditional.handle = h;
    p.conditional.type = type;
    p.conditional.size = size;
    cudaGraphNode_t n = nullptr;
    EXPECT_RT(cudaGraphAddNode(&n, g, dep ? &dep : nullptr, nullptr, dep ? 1 : 0, &p));
    *bodies = p.conditional.phGraph_out;
    return n;
  }
  int word(int i) {
    int v = -1;
    EXPECT_RT(cudaMemcpy(&v, mem_ + i, sizeof v, cudaMemcpyDeviceToHost));
    return v;
  }
  cudaLibrary_t lib_ = nullptr;
  cudaKernel_t countdown_ = nullptr, set_from_ = nullptr, store_ = nullptr;
  cudaStream_t stream_ = nullptr;
  int* mem_ = nullptr;
};

TEST_F(RuntimeGraphConditional, WhileCountdown) {
  cudaGraph_t g = nullptr;
  ASSERT_RT(cudaGraphCreate(&g, 0));
  cudaGraphConditionalHandle h = 0;
  EXPECT_EQ(cudaGraphConditionalHandleCreate(&h, g, 0, 4), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);  // and it was the last error
  ASSERT_RT(cudaGraphConditionalHandleCreate(&h, g, 1, cudaGraphCondAssignDefault));
  cudaGraph_t* bodies = nullptr;
  conditional(g, nullptr, h, cudaGraphCondTypeWhile, 1, &bodies);
  ASSERT_NE(bodies, nullptr);
  int* counter = mem_;
  int* iterations = mem_ + 1;
  void* args[] = {&counter, &iterations, &h};
  kernel(bodies[0], nullptr, countdown_, args);
  const int start = 6;
  ASSERT_RT(cudaMemcpyAsync(counter, &start, sizeof start, cudaMemcpyHostToDevice, stream_));
  ASSERT_RT(cudaStreamSynchronize(stream_));
  cudaGraphExec_t x = nullptr;
  ASSERT_RT(cudaGraphInstantiate(&x, g, 0));
  ASSERT_RT(cudaGraphLaunch(x, stream_));
  ASSERT_RT(cudaStreamSynchronize(stream_));
  EXPECT_EQ(word(0), 0);
  EXPECT_EQ(word(1), 6);
  EXPECT_RT(cudaGraphExecDestroy(x));
  EXPECT_RT(cudaGraphDestroy(g));
}

TEST_F(RuntimeGraphConditional, IfElseAndSwitch) {
  cudaGraph_t g = nullptr;
  ASSERT_RT(cudaGraphCreate(&g, 0));
  cudaGraphConditionalHandle hi = 0, hs = 0;
  ASSERT_RT(cudaGraphConditionalHandleCreate(&hi, g));  // the defaults: 0, no flags
  ASSERT_RT(cudaGraphConditionalHandleCreate(&hs, g, 0, 0));
  int* flag = mem_;
  int* out_if = mem_ + 1;
  int* out_switch = mem_ + 2;
  void* set_if[] = {&hi, &flag};
  void* set_switch[] = {&hs, &flag};
  cudaGraphNode_t s1 = kernel(g, nullptr, set_from_, set_if);
  cudaGraphNode_t s2 = kernel(g, s1, set_from_, set_switch);
  cudaGraph_t* ifs = nullptr;
  cudaGraph_t* cases = nullptr;
  cudaGraphNode_t c1 = conditional(g, s2, hi, cudaGraphCondTypeIf, 2, &ifs);
  conditional(g, c1, hs, cudaGraphCondTypeSwitch, 3, &cases);
  ASSERT_NE(ifs, nullptr);
  ASSERT_NE(cases, nullptr);
  int values[5] = {100, 200, 10, 11, 12};
  void* a0[] = {&out_if, &values[0]};
  void* a1[] = {&out_if, &values[1]};
  kernel(ifs[0], nullptr, store_, a0);
  kernel(ifs[1], nullptr, store_, a1);
  void* c[3][2] = {{&out_switch, &values[2]}, {&out_switch, &values[3]}, {&out_switch, &values[4]}};
  for (int i = 0; i < 3; ++i) kernel(cases[i], nullptr, store_, c[i]);
  cudaGraphExec_t x = nullptr;
  ASSERT_RT(cudaGraphInstantiate(&x, g, 0));
  for (int f : {0, 1, 2, 3}) {
    SCOPED_TRACE(f);
    const int init[3] = {f, -1, -1};
    ASSERT_RT(cudaMemcpyAsync(mem_, init, sizeof init, cudaMemcpyHostToDevice, stream_));
    ASSERT_RT(cudaStreamSynchronize(stream_));
    ASSERT_RT(cudaGraphLaunch(x, stream_));
    ASSERT_RT(cudaStreamSynchronize(stream_));
    EXPECT_EQ(word(1), f ? 100 : 200);
    EXPECT_EQ(word(2), f < 3 ? 10 + f : -1);
  }
  EXPECT_RT(cudaGraphExecDestroy(x));
  EXPECT_RT(cudaGraphDestroy(g));
}

}  // namespace
