// Kernel nodes of the runtime's graphs (issue 16) on the mock: kernels compiled by NVRTC and
// loaded with cudaLibraryLoadData, captured from cudaLaunchKernel with copies, memsets and host
// functions, or added as nodes with a cudaKernel_t (or a CUfunction) as cudaKernelNodeParams'
// func; parameters read back, per-node updates, cudaGraphExecUpdate and node attributes.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <nvrtc.h>

#include <atomic>
#include <string>
#include <vector>

namespace {

#define ASSERT_RT(call) ASSERT_EQ((call), cudaSuccess) << #call
#define EXPECT_RT(call) EXPECT_EQ((call), cudaSuccess) << #call

const char* kSource = R"(
extern "C" __global__ void axpb(int* out, const int* in, int a, int b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * in[i] + b;
}
extern "C" __global__ void add(int* data, int v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += v;
}
)";

std::vector<char> compile_ptx() {
  nvrtcProgram prog;
  EXPECT_EQ(nvrtcCreateProgram(&prog, kSource, "rt_graph_kernels.cu", 0, nullptr, nullptr),
            NVRTC_SUCCESS);
  const char* opts[] = {"--gpu-architecture=compute_90"};
  if (nvrtcCompileProgram(prog, 1, opts) != NVRTC_SUCCESS) {
    size_t n = 0;
    nvrtcGetProgramLogSize(prog, &n);
    std::string log(n, '\0');
    nvrtcGetProgramLog(prog, log.data());
    ADD_FAILURE() << "compile failed: " << log;
    nvrtcDestroyProgram(&prog);
    return {};
  }
  size_t size = 0;
  EXPECT_EQ(nvrtcGetPTXSize(prog, &size), NVRTC_SUCCESS);
  std::vector<char> ptx(size);
  EXPECT_EQ(nvrtcGetPTX(prog, ptx.data()), NVRTC_SUCCESS);
  nvrtcDestroyProgram(&prog);
  return ptx;
}

constexpr int kN = 1000;
constexpr size_t kBytes = kN * sizeof(int);

void count_call(void* counter) { static_cast<std::atomic<int>*>(counter)->fetch_add(1); }

class RuntimeGraphKernels : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ptx_ = new std::vector<char>(compile_ptx()); }
  static void TearDownTestSuite() {
    delete ptx_;
    ptx_ = nullptr;
  }
  void SetUp() override {
    ASSERT_FALSE(ptx_->empty());
    ASSERT_RT(cudaSetDevice(0));
    (void)cudaGetLastError();
    ASSERT_RT(cudaLibraryLoadData(&lib_, ptx_->data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
    ASSERT_RT(cudaLibraryGetKernel(&axpb_, lib_, "axpb"));
    ASSERT_RT(cudaLibraryGetKernel(&add_, lib_, "add"));
    ASSERT_RT(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    ASSERT_RT(cudaMalloc(reinterpret_cast<void**>(&din_), kBytes));
    ASSERT_RT(cudaMalloc(reinterpret_cast<void**>(&dout_), kBytes));
  }
  void TearDown() override {
    EXPECT_RT(cudaFree(din_));
    EXPECT_RT(cudaFree(dout_));
    EXPECT_RT(cudaStreamDestroy(stream_));
    if (lib_) {
      EXPECT_RT(cudaLibraryUnload(lib_));
    }
    EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "a test left an error behind";
  }
  std::vector<int> read_out() {
    std::vector<int> out(kN, -1);
    EXPECT_RT(cudaMemcpy(out.data(), dout_, kBytes, cudaMemcpyDeviceToHost));
    return out;
  }
  void launch_and_wait(cudaGraphExec_t x) {
    ASSERT_RT(cudaGraphLaunch(x, stream_));
    ASSERT_RT(cudaStreamSynchronize(stream_));
  }
  static std::vector<char>* ptx_;
  cudaLibrary_t lib_ = nullptr;
  cudaKernel_t axpb_ = nullptr, add_ = nullptr;
  cudaStream_t stream_ = nullptr;
  int* din_ = nullptr;
  int* dout_ = nullptr;
};
std::vector<char>* RuntimeGraphKernels::ptx_ = nullptr;

TEST_F(RuntimeGraphKernels, CapturedMemsetCopyKernelAndHostFunctionLaunchTwice) {
  std::vector<int> in(kN), out(kN, -1);
  for (int i = 0; i < kN; ++i) in[i] = i * 5 - 400;
  std::atomic<int> calls{0};
  int a = 3, b = -7, n = kN;
  void* args[] = {&dout_, &din_, &a, &b, &n};

  ASSERT_RT(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeGlobal));
  ASSERT_RT(cudaMemsetAsync(dout_, 0xff, kBytes, stream_));
  ASSERT_RT(cudaMemcpyAsync(din_, in.data(), kBytes, cudaMemcpyHostToDevice, stream_));
  ASSERT_RT(cudaLaunchKernel(reinterpret_cast<const void*>(axpb_), dim3((kN + 127) / 128),
                             dim3(128), args, 0, stream_));
  ASSERT_RT(cudaMemcpyAsync(out.data(), dout_, kBytes, cudaMemcpyDeviceToHost, stream_));
  ASSERT_RT(cudaLaunchHostFunc(stream_, count_call, &calls));
  cudaGraph_t g = nullptr;
  ASSERT_RT(cudaStreamEndCapture(stream_, &g));
  // The kernel's arguments were taken at capture: changing them now changes nothing.
  a = 1000;
  size_t count = 0;
  ASSERT_RT(cudaGraphGetNodes(g, nullptr, &count));
  ASSERT_EQ(count, 5u);
  std::vector<cudaGraphNode_t> nodes(count);
  ASSERT_RT(cudaGraphGetNodes(g, nodes.data(), &count));
  cudaGraphNodeType type{};
  ASSERT_RT(cudaGraphNodeGetType(nodes[2], &type));
  ASSERT_EQ(type, cudaGraphNodeTypeKernel);
  cudaKernelNodeParams kp{};
  ASSERT_RT(cudaGraphKernelNodeGetParams(nodes[2], &kp));
  EXPECT_EQ(kp.gridDim.x, unsigned{(kN + 127) / 128});
  EXPECT_EQ(kp.blockDim.x, 128u);
  ASSERT_NE(kp.kernelParams, nullptr);
  EXPECT_EQ(*static_cast<int*>(kp.kernelParams[2]), 3) << "the captured value of a";
  EXPECT_EQ(calls.load(), 0);

  cudaGraphExec_t x = nullptr;
  ASSERT_RT(cudaGraphInstantiate(&x, g, 0));
  launch_and_wait(x);
  for (int i = 0; i < kN; ++i) ASSERT_EQ(out[i], 3 * in[i] - 7) << "element " << i;
  EXPECT_EQ(calls.load(), 1);
  // The host buffer is read at each launch.
  for (int i = 0; i < kN; ++i) in[i] = i;
  std::fill(out.begin(), out.end(), -1);
  launch_and_wait(x);
  for (int i = 0; i < kN; ++i) ASSERT_EQ(out[i], 3 * i - 7) << "element " << i;
  EXPECT_EQ(calls.load(), 2);
  ASSERT_RT(cudaGraphExecDestroy(x));
  ASSERT_RT(cudaGraphDestroy(g));
}

TEST_F(RuntimeGraphKernels, KernelNodesBuiltUpdatedAndReadBack) {
  std::vector<int> in(kN);
  for (int i = 0; i < kN; ++i) in[i] = i;
  ASSERT_RT(cudaMemcpy(din_, in.data(), kBytes, cudaMemcpyHostToDevice));
  cudaGraph_t g = nullptr;
  ASSERT_RT(cudaGraphCreate(&g, 0));
  int a = 2, b = 1, n = kN, v = 10;
  void* axpb_args[] = {&dout_, &din_, &a, &b, &n};
  void* add_args[] = {&dout_, &v, &n};
  cudaKernelNodeParams p{};
  p.func = reinterpret_cast<void*>(axpb_);
  p.gridDim = dim3((kN + 255) / 256);
  p.blockDim = dim3(256);
  p.kernelParams = axpb_args;
  cudaGraphNode_t k1 = nullptr, k2 = nullptr;
  ASSERT_RT(cudaGraphAddKernelNode(&k1, g, nullptr, 0, &p));
  // The second kernel as a CUfunction, through the generic node parameters.
  CUfunction add_fn = nullptr;
  ASSERT_EQ(cuKernelGetFunction(&add_fn, reinterpret_cast<CUkernel>(add_)), CUDA_SUCCESS);
  cudaGraphNodeParams gp{};
  gp.type = cudaGraphNodeTypeKernel;
  gp.kernel.func = reinterpret_cast<void*>(add_fn);
  gp.kernel.gridDim = dim3((kN + 255) / 256);
  gp.kernel.blockDim = dim3(256);
  gp.kernel.kernelParams = add_args;
  ASSERT_RT(cudaGraphAddNode(&k2, g, &k1, nullptr, 1, &gp));

  // GetParams gives the func as the program gave it.
  cudaKernelNodeParams back{};
  ASSERT_RT(cudaGraphKernelNodeGetParams(k1, &back));
  EXPECT_EQ(back.func, reinterpret_cast<void*>(axpb_));
  EXPECT_EQ(back.gridDim.x, p.gridDim.x);
  EXPECT_EQ(back.blockDim.x, 256u);
  EXPECT_EQ(back.sharedMemBytes, 0u);
  EXPECT_EQ(*static_cast<int*>(back.kernelParams[2]), 2);
  ASSERT_RT(cudaGraphKernelNodeGetParams(k2, &back));
  EXPECT_EQ(back.func, reinterpret_cast<void*>(add_fn));

  // Attributes.
  int least = 0, greatest = 0;
  ASSERT_RT(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  cudaLaunchAttributeValue val{};
  val.priority = greatest;  // inside the device's range (others are clamped to it)
  ASSERT_RT(cudaGraphKernelNodeSetAttribute(k1, cudaLaunchAttributePriority, &val));
  cudaLaunchAttributeValue got{};
  ASSERT_RT(cudaGraphKernelNodeGetAttribute(k1, cudaLaunchAttributePriority, &got));
  EXPECT_EQ(got.priority, greatest);
  ASSERT_RT(cudaGraphKernelNodeCopyAttributes(k2, k1));
  got = {};
  ASSERT_RT(cudaGraphKernelNodeGetAttribute(k2, cudaLaunchAttributePriority, &got));
  EXPECT_EQ(got.priority, greatest);

  cudaGraphExec_t x = nullptr;
  ASSERT_RT(cudaGraphInstantiate(&x, g, 0));
  launch_and_wait(x);
  std::vector<int> out = read_out();
  for (int i = 0; i < kN; ++i) ASSERT_EQ(out[i], 2 * i + 1 + 10) << "element " << i;

  // Per-node update of the executable graph: new arguments for the first kernel.
  int a2 = -1, b2 = 5;
  void* args2[] = {&dout_, &din_, &a2, &b2, &n};
  cudaKernelNodeParams p2 = p;
  p2.kernelParams = args2;
  ASSERT_RT(cudaGraphExecKernelNodeSetParams(x, k1, &p2));
  launch_and_wait(x);
  out = read_out();
  for (int i = 0; i < kN; ++i) ASSERT_EQ(out[i], -i + 5 + 10) << "element " << i;
  // The second kernel disabled.
  ASSERT_RT(cudaGraphNodeSetEnabled(x, k2, 0));
  launch_and_wait(x);
  out = read_out();
  for (int i = 0; i < kN; ++i) ASSERT_EQ(out[i], -i + 5) << "element " << i;
  ASSERT_RT(cudaGraphNodeSetEnabled(x, k2, 1));

  // The graph's node changed, then the whole executable graph updated from it.
  int a3 = 4;
  void* args3[] = {&dout_, &din_, &a3, &b, &n};
  cudaKernelNodeParams p3 = p;
  p3.kernelParams = args3;
  ASSERT_RT(cudaGraphKernelNodeSetParams(k1, &p3));
  v = 0;
  gp.kernel.kernelParams = add_args;
  ASSERT_RT(cudaGraphNodeSetParams(k2, &gp));
  cudaGraphExecUpdateResultInfo info{};
  ASSERT_RT(cudaGraphExecUpdate(x, g, &info));
  EXPECT_EQ(info.result, cudaGraphExecUpdateSuccess);
  launch_and_wait(x);
  out = read_out();
  for (int i = 0; i < kN; ++i) ASSERT_EQ(out[i], 4 * i + 1) << "element " << i;

  // Generic executable-node setter.
  v = 100;
  ASSERT_RT(cudaGraphExecNodeSetParams(x, k2, &gp));
  launch_and_wait(x);
  out = read_out();
  for (int i = 0; i < kN; ++i) ASSERT_EQ(out[i], 4 * i + 1 + 100) << "element " << i;

  // Bad funcs.
  int not_a_kernel = 0;
  cudaKernelNodeParams bad = p;
  bad.func = &not_a_kernel;
  cudaGraphNode_t none = nullptr;
  EXPECT_EQ(cudaGraphAddKernelNode(&none, g, nullptr, 0, &bad), cudaErrorInvalidDeviceFunction);
  bad.func = nullptr;
  EXPECT_EQ(cudaGraphKernelNodeSetParams(k1, &bad), cudaErrorInvalidDeviceFunction);
  EXPECT_EQ(cudaGraphKernelNodeGetParams(k1, nullptr), cudaErrorInvalidValue);
  (void)cudaGetLastError();

  ASSERT_RT(cudaGraphExecDestroy(x));
  ASSERT_RT(cudaGraphDestroy(g));
}

}  // namespace
