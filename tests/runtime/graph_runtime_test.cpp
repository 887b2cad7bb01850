// The runtime's graphs and stream capture (issue 16) on the mock: capture of stream work into
// graphs, graphs built node by node, their parameters read back in the runtime's types,
// executable graphs launched and updated, the calls CUDA forbids while capturing, user objects,
// and memcpy nodes on registered device variables. Kernel nodes are in graph_kernel_test.cpp
// (this executable has no compiler for kernels).
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

extern "C" {
void** __cudaRegisterFatBinary(void* fatCubin);
void __cudaRegisterFatBinaryEnd(void** handle);
void __cudaUnregisterFatBinary(void** handle);
void __cudaRegisterVar(void** handle, char* hostVar, char* deviceAddress, const char* deviceName,
                       int ext, size_t size, int constant, int global);
// Per-thread-default-stream variants (declared by the header only in that mode).
cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t stream, cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t* pGraph);
cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream);
}

namespace {

#define ASSERT_RT(call) ASSERT_EQ((call), cudaSuccess) << #call
#define EXPECT_RT(call) EXPECT_EQ((call), cudaSuccess) << #call

constexpr int kN = 256;
constexpr size_t kBytes = kN * sizeof(int);

void count_call(void* counter) { static_cast<std::atomic<int>*>(counter)->fetch_add(1); }

// driver_functions.h's make_cudaPitchedPtr / make_cudaExtent (cuda_runtime.h, not included here).
cudaPitchedPtr pitched(void* p, size_t pitch, size_t xsize, size_t ysize) {
  return cudaPitchedPtr{p, pitch, xsize, ysize};
}
cudaExtent extent3(size_t w, size_t h, size_t d) { return cudaExtent{w, h, d}; }

bool all_equal(const std::vector<int>& v, int value) {
  for (int x : v)
    if (x != value) return false;
  return true;
}

class RuntimeGraph : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_RT(cudaSetDevice(0));
    (void)cudaGetLastError();
    ASSERT_RT(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    ASSERT_RT(cudaMalloc(&a, kBytes));
    ASSERT_RT(cudaMalloc(&b, kBytes));
  }
  void TearDown() override {
    EXPECT_RT(cudaFree(a));
    EXPECT_RT(cudaFree(b));
    EXPECT_RT(cudaStreamDestroy(stream));
    EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "a test left an error behind";
  }
  std::vector<int> read(const void* dev) {
    std::vector<int> out(kN, -1);
    EXPECT_RT(cudaMemcpy(out.data(), dev, kBytes, cudaMemcpyDeviceToHost));
    return out;
  }
  void launch_and_wait(cudaGraphExec_t x) {
    ASSERT_RT(cudaGraphLaunch(x, stream));
    ASSERT_RT(cudaStreamSynchronize(stream));
  }
  cudaStream_t stream = nullptr;
  void* a = nullptr;
  void* b = nullptr;
};

cudaMemsetParams memset_params(void* dst, unsigned value) {
  cudaMemsetParams m{};
  m.dst = dst;
  m.value = value;
  m.elementSize = 4;
  m.width = kN;
  m.height = 1;
  return m;
}

TEST_F(RuntimeGraph, CaptureOfMemsetMemcpyAndHostFunctionLaunchesTwice) {
  std::vector<int> host(kN, -1);
  std::atomic<int> calls{0};
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusActive;
  ASSERT_RT(cudaStreamIsCapturing(stream, &status));
  EXPECT_EQ(status, cudaStreamCaptureStatusNone);

  ASSERT_RT(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  ASSERT_RT(cudaStreamIsCapturing(stream, &status));
  EXPECT_EQ(status, cudaStreamCaptureStatusActive);
  ASSERT_RT(cudaMemsetAsync(a, 0x01, kBytes, stream));
  unsigned long long id = 0;
  cudaGraph_t capturing = nullptr;
  const cudaGraphNode_t* deps = nullptr;
  const cudaGraphEdgeData* edges = nullptr;
  size_t ndeps = 0;
  ASSERT_RT(cudaStreamGetCaptureInfo(stream, &status, &id, &capturing, &deps, &edges, &ndeps));
  EXPECT_EQ(status, cudaStreamCaptureStatusActive);
  EXPECT_NE(id, 0u);
  EXPECT_NE(capturing, nullptr);
  ASSERT_EQ(ndeps, 1u) << "the memset node is the stream's dependency";
  cudaGraphNodeType type = cudaGraphNodeTypeEmpty;
  ASSERT_RT(cudaGraphNodeGetType(deps[0], &type));
  EXPECT_EQ(type, cudaGraphNodeTypeMemset);
  ASSERT_NE(edges, nullptr);
  EXPECT_EQ(edges[0].type, cudaGraphDependencyTypeDefault);
  ASSERT_RT(cudaMemcpyAsync(b, a, kBytes, cudaMemcpyDeviceToDevice, stream));
  ASSERT_RT(cudaMemcpyAsync(host.data(), b, kBytes, cudaMemcpyDeviceToHost, stream));
  ASSERT_RT(cudaLaunchHostFunc(stream, count_call, &calls));
  cudaGraph_t g = nullptr;
  ASSERT_RT(cudaStreamEndCapture(stream, &g));
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(calls.load(), 0) << "captured work does not run";
  EXPECT_TRUE(all_equal(host, -1));

  size_t n = 0;
  ASSERT_RT(cudaGraphGetNodes(g, nullptr, &n));
  ASSERT_EQ(n, 4u);
  std::vector<cudaGraphNode_t> nodes(n);
  ASSERT_RT(cudaGraphGetNodes(g, nodes.data(), &n));
  const cudaGraphNodeType expected[] = {cudaGraphNodeTypeMemset, cudaGraphNodeTypeMemcpy,
                                        cudaGraphNodeTypeMemcpy, cudaGraphNodeTypeHost};
  for (size_t i = 0; i < n; ++i) {
    ASSERT_RT(cudaGraphNodeGetType(nodes[i], &type));
    EXPECT_EQ(type, expected[i]) << "node " << i;
  }
  // Captured copies read back in the runtime's terms.
  cudaMemcpy3DParms cp{};
  ASSERT_RT(cudaGraphMemcpyNodeGetParams(nodes[2], &cp));
  EXPECT_EQ(cp.kind, cudaMemcpyDeviceToHost);
  EXPECT_EQ(cp.dstPtr.ptr, host.data());
  EXPECT_EQ(cp.srcPtr.ptr, b);
  EXPECT_EQ(cp.extent.width, kBytes);
  cudaMemsetParams mp{};
  ASSERT_RT(cudaGraphMemsetNodeGetParams(nodes[0], &mp));
  EXPECT_EQ(mp.dst, a);
  EXPECT_EQ(mp.value, 0x01u);
  cudaHostNodeParams hp{};
  ASSERT_RT(cudaGraphHostNodeGetParams(nodes[3], &hp));
  EXPECT_EQ(hp.fn, &count_call);
  EXPECT_EQ(hp.userData, &calls);

  cudaGraphExec_t x = nullptr;
  ASSERT_RT(cudaGraphInstantiate(&x, g, 0));
  launch_and_wait(x);
  EXPECT_TRUE(all_equal(host, 0x01010101));
  EXPECT_EQ(calls.load(), 1);
  std::fill(host.begin(), host.end(), -1);
  ASSERT_RT(cudaMemsetAsync(b, 0, kBytes, stream));
  launch_and_wait(x);
  EXPECT_TRUE(all_equal(host, 0x01010101)) << "the second launch runs every node again";
  EXPECT_EQ(calls.load(), 2);
  ASSERT_RT(cudaGraphExecDestroy(x));
  ASSERT_RT(cudaGraphDestroy(g));
}

TEST_F(RuntimeGraph, PerThreadStreamCaptureAndLaunch) {
  ASSERT_RT(cudaStreamBeginCapture_ptsz(cudaStreamPerThread, cudaStreamCaptureModeThreadLocal));
  ASSERT_RT(cudaMemsetAsync(a, 0x02, kBytes, cudaStreamPerThread));
  cudaGraph_t g = nullptr;
  ASSERT_RT(cudaStreamEndCapture_ptsz(cudaStreamPerThread, &g));
  cudaGraphExec_t x = nullptr;
  ASSERT_RT(cudaGraphInstantiateWithFlags(&x, g, 0));
  ASSERT_RT(cudaGraphLaunch_ptsz(x, cudaStreamPerThread));
  ASSERT_RT(cudaStreamSynchronize(cudaStreamPerThread));
  EXPECT_TRUE(all_equal(read(a), 0x02020202));
  ASSERT_RT(cudaGraphExecDestroy(x));
  ASSERT_RT(cudaGraphDestroy(g));
}

TEST_F(RuntimeGraph, ExplicitGraphOfMemsetMemcpyAndHostNodes) {
  std::vector<int> host(kN, -1);
  std::atomic<int> calls{0};
  cudaGraph_t g = nullptr;
  ASSERT_RT(cudaGraphCreate(&g, 0));
  cudaGraphNode_t set = nullptr, copy = nullptr, down = nullptr, call = nullptr;
  const cudaMemsetParams m = memset_params(a, 7);
  ASSERT_RT(cudaGraphAddMemsetNode(&set, g, nullptr, 0, &m));
  cudaMemcpy3DParms c{};
  c.srcPtr = pitched(a, kBytes, kBytes, 1);
  c.dstPtr = pitched(b, kBytes, kBytes, 1);
  c.extent = extent3(kBytes, 1, 1);
  c.kind = cudaMemcpyDeviceToDevice;
  ASSERT_RT(cudaGraphAddMemcpyNode(&copy, g, &set, 1, &c));
  cudaMemcpy3DParms d{};
  d.srcPtr = pitched(b, kBytes, kBytes, 1);
  d.dstPtr = pitched(host.data(), kBytes, kBytes, 1);
  d.extent = extent3(kBytes, 1, 1);
  d.kind = cudaMemcpyDefault;
  ASSERT_RT(cudaGraphAddMemcpyNode(&down, g, &copy, 1, &d));
  const cudaHostNodeParams h{count_call, &calls};
  ASSERT_RT(cudaGraphAddHostNode(&call, g, &down, 1, &h));

  // Parameters read back as given.
  cudaMemsetParams mb{};
  ASSERT_RT(cudaGraphMemsetNodeGetParams(set, &mb));
  EXPECT_EQ(mb.dst, a);
  EXPECT_EQ(mb.value, 7u);
  EXPECT_EQ(mb.elementSize, 4u);
  EXPECT_EQ(mb.width, size_t{kN});
  EXPECT_EQ(mb.height, 1u);
  cudaMemcpy3DParms cb{};
  ASSERT_RT(cudaGraphMemcpyNodeGetParams(copy, &cb));
  EXPECT_EQ(cb.kind, cudaMemcpyDeviceToDevice);
  EXPECT_EQ(cb.srcPtr.ptr, a);
  EXPECT_EQ(cb.dstPtr.ptr, b);
  EXPECT_EQ(cb.srcPtr.pitch, kBytes);
  EXPECT_EQ(cb.extent.width, kBytes);
  EXPECT_EQ(cb.extent.height, 1u);
  EXPECT_EQ(cb.extent.depth, 1u);
  EXPECT_EQ(cb.srcArray, nullptr);
  ASSERT_RT(cudaGraphMemcpyNodeGetParams(down, &cb));
  EXPECT_EQ(cb.kind, cudaMemcpyDefault) << "unified addressing stays unified";
  EXPECT_EQ(cb.dstPtr.ptr, host.data());

  // Structure.
  size_t n = 0;
  ASSERT_RT(cudaGraphGetRootNodes(g, nullptr, &n));
  ASSERT_EQ(n, 1u);
  cudaGraphNode_t root = nullptr;
  ASSERT_RT(cudaGraphGetRootNodes(g, &root, &n));
  EXPECT_EQ(root, set);
  ASSERT_RT(cudaGraphGetEdges(g, nullptr, nullptr, nullptr, &n));
  ASSERT_EQ(n, 3u);
  cudaGraphNode_t from[3], to[3];
  cudaGraphEdgeData data[3];
  ASSERT_RT(cudaGraphGetEdges(g, from, to, data, &n));
  EXPECT_EQ(from[0], set);
  EXPECT_EQ(to[0], copy);
  cudaGraphNode_t dep = nullptr;
  n = 1;
  ASSERT_RT(cudaGraphNodeGetDependencies(down, &dep, nullptr, &n));
  EXPECT_EQ(dep, copy);
  n = 1;
  ASSERT_RT(cudaGraphNodeGetDependentNodes(down, &dep, nullptr, &n));
  EXPECT_EQ(dep, call);
  // An extra edge set -> call, then removed again.
  ASSERT_RT(cudaGraphAddDependencies(g, &set, &call, nullptr, 1));
  ASSERT_RT(cudaGraphNodeGetDependencies(call, nullptr, nullptr, &n));
  EXPECT_EQ(n, 2u);
  EXPECT_EQ(cudaGraphAddDependencies(g, &set, &call, nullptr, 1), cudaErrorInvalidValue);
  ASSERT_RT(cudaGraphRemoveDependencies(g, &set, &call, nullptr, 1));
  ASSERT_RT(cudaGraphNodeGetDependencies(call, nullptr, nullptr, &n));
  EXPECT_EQ(n, 1u);
  // A node added and destroyed again.
  cudaGraphNode_t extra = nullptr;
  ASSERT_RT(cudaGraphAddEmptyNode(&extra, g, &call, 1));
  ASSERT_RT(cudaGraphDestroyNode(extra));
  ASSERT_RT(cudaGraphGetNodes(g, nullptr, &n));
  EXPECT_EQ(n, 4u);

  // A clone knows where its nodes came from.
  cudaGraph_t clone = nullptr;
  ASSERT_RT(cudaGraphClone(&clone, g));
  cudaGraphNode_t cloned = nullptr;
  ASSERT_RT(cudaGraphNodeFindInClone(&cloned, copy, clone));
  EXPECT_NE(cloned, copy);
  cudaGraphNodeType type{};
  ASSERT_RT(cudaGraphNodeGetType(cloned, &type));
  EXPECT_EQ(type, cudaGraphNodeTypeMemcpy);

  cudaGraphExec_t x = nullptr;
  ASSERT_RT(cudaGraphInstantiate(&x, g, 0));
  launch_and_wait(x);
  EXPECT_TRUE(all_equal(host, 7));
  EXPECT_EQ(calls.load(), 1);

  // Node setters: the graph changes, the executable graph does not.
  const cudaMemsetParams m9 = memset_params(a, 9);
  ASSERT_RT(cudaGraphMemsetNodeSetParams(set, &m9));
  launch_and_wait(x);
  EXPECT_TRUE(all_equal(host, 7));
  // Executable node setters change the next launch.
  ASSERT_RT(cudaGraphExecMemsetNodeSetParams(x, set, &m9));
  std::atomic<int> other{0};
  const cudaHostNodeParams h2{count_call, &other};
  ASSERT_RT(cudaGraphExecHostNodeSetParams(x, call, &h2));
  launch_and_wait(x);
  EXPECT_TRUE(all_equal(host, 9));
  EXPECT_EQ(calls.load(), 2);
  EXPECT_EQ(other.load(), 1);
  ASSERT_RT(cudaGraphHostNodeSetParams(call, &h2));
  cudaHostNodeParams hb{};
  ASSERT_RT(cudaGraphHostNodeGetParams(call, &hb));
  EXPECT_EQ(hb.userData, &other);

  // Disabled memset: the copies move what is there.
  ASSERT_RT(cudaGraphNodeSetEnabled(x, set, 0));
  unsigned enabled = 1;
  ASSERT_RT(cudaGraphNodeGetEnabled(x, set, &enabled));
  EXPECT_EQ(enabled, 0u);
  ASSERT_RT(cudaMemsetAsync(a, 0, kBytes, stream));
  launch_and_wait(x);
  EXPECT_TRUE(all_equal(host, 0));
  EXPECT_EQ(cudaGraphNodeSetEnabled(x, call, 0), cudaErrorInvalidValue)
      << "host nodes cannot be disabled";

  // DOT output.
  const std::string path = ::testing::TempDir() + "cudamux_rt_graph.dot";
  ASSERT_RT(cudaGraphDebugDotPrint(g, path.c_str(), cudaGraphDebugDotFlagsVerbose));
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("digraph"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("MEMSET"), std::string::npos) << text.str();
  std::remove(path.c_str());

  (void)cudaGetLastError();
  ASSERT_RT(cudaGraphExecDestroy(x));
  ASSERT_RT(cudaGraphDestroy(clone));
  ASSERT_RT(cudaGraphDestroy(g));
}

TEST_F(RuntimeGraph, OneDimensionalMemcpyNodes) {
  std::vector<int> src(kN), dst(kN, -1);
  for (int i = 0; i < kN; ++i) src[i] = i * 3 + 1;
  cudaGraph_t g = nullptr;
  ASSERT_RT(cudaGraphCreate(&g, 0));
  cudaGraphNode_t up = nullptr, down = nullptr;
  ASSERT_RT(
      cudaGraphAddMemcpyNode1D(&up, g, nullptr, 0, a, src.data(), kBytes, cudaMemcpyHostToDevice));
  ASSERT_RT(
      cudaGraphAddMemcpyNode1D(&down, g, &up, 1, dst.data(), a, kBytes, cudaMemcpyDeviceToHost));
  cudaMemcpy3DParms p{};
  ASSERT_RT(cudaGraphMemcpyNodeGetParams(up, &p));
  EXPECT_EQ(p.kind, cudaMemcpyHostToDevice);
  EXPECT_EQ(p.srcPtr.ptr, src.data());
  EXPECT_EQ(p.srcPtr.pitch, kBytes);
  EXPECT_EQ(p.srcPtr.xsize, kBytes);
  EXPECT_EQ(p.srcPtr.ysize, 1u);
  EXPECT_EQ(p.dstPtr.ptr, a);
  EXPECT_EQ(p.extent.width, kBytes);
  EXPECT_EQ(p.extent.height, 1u);
  EXPECT_EQ(p.extent.depth, 1u);

  cudaGraphExec_t x = nullptr;
  ASSERT_RT(cudaGraphInstantiate(&x, g, 0));
  launch_and_wait(x);
  EXPECT_EQ(dst, src);

  // The executable copy now goes through b, the graph's node still through a.
  ASSERT_RT(cudaMemsetAsync(b, 0, kBytes, stream));
  ASSERT_RT(
      cudaGraphExecMemcpyNodeSetParams1D(x, down, dst.data(), b, kBytes, cudaMemcpyDeviceToHost));
  launch_and_wait(x);
  EXPECT_TRUE(all_equal(dst, 0));
  ASSERT_RT(cudaGraphMemcpyNodeSetParams1D(down, dst.data(), a, kBytes / 2, cudaMemcpyDefault));
  ASSERT_RT(cudaGraphMemcpyNodeGetParams(down, &p));
  EXPECT_EQ(p.kind, cudaMemcpyDefault);
  EXPECT_EQ(p.extent.width, kBytes / 2);
  // 3D params through the executable graph's setter (back to a, all of it).
  cudaMemcpy3DParms full{};
  full.srcPtr = pitched(a, kBytes, kBytes, 1);
  full.dstPtr = pitched(dst.data(), kBytes, kBytes, 1);
  full.extent = extent3(kBytes, 1, 1);
  full.kind = cudaMemcpyDeviceToHost;
  ASSERT_RT(cudaGraphExecMemcpyNodeSetParams(x, down, &full));
  launch_and_wait(x);
  EXPECT_EQ(dst, src);

  // Bad input: a kind that is not one, a host side that is device memory, an end with both an
  // array and a pointer, nothing.
  cudaGraphNode_t bad = nullptr;
  EXPECT_EQ(cudaGraphAddMemcpyNode1D(&bad, g, nullptr, 0, a, src.data(), kBytes,
                                     static_cast<cudaMemcpyKind>(9)),
            cudaErrorInvalidMemcpyDirection);
  EXPECT_EQ(cudaGraphAddMemcpyNode1D(&bad, g, nullptr, 0, a, b, kBytes, cudaMemcpyHostToDevice),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaGraphAddMemcpyNode1D(&bad, g, nullptr, 0, a, src.data(), 0, cudaMemcpyHostToDevice),
            cudaErrorInvalidValue);
  cudaMemcpy3DParms arr = full;
  arr.srcArray = reinterpret_cast<cudaArray_t>(std::uintptr_t{0x1000});
  EXPECT_EQ(cudaGraphAddMemcpyNode(&bad, g, nullptr, 0, &arr), cudaErrorInvalidValue);  // both
  EXPECT_EQ(cudaGraphAddMemcpyNode(&bad, g, nullptr, 0, nullptr), cudaErrorInvalidValue);
  (void)cudaGetLastError();
  ASSERT_RT(cudaGraphExecDestroy(x));
  ASSERT_RT(cudaGraphDestroy(g));
}

TEST_F(RuntimeGraph, ExecUpdateAcceptsTheSameTopologyAndRefusesAnother) {
  cudaGraph_t g = nullptr;
  ASSERT_RT(cudaGraphCreate(&g, 0));
  cudaGraphNode_t set = nullptr, copy = nullptr;
  const cudaMemsetParams m = memset_params(a, 4);
  ASSERT_RT(cudaGraphAddMemsetNode(&set, g, nullptr, 0, &m));
  ASSERT_RT(cudaGraphAddMemcpyNode1D(&copy, g, &set, 1, b, a, kBytes, cudaMemcpyDeviceToDevice));
  cudaGraphExec_t x = nullptr;
  ASSERT_RT(cudaGraphInstantiate(&x, g, 0));
  launch_and_wait(x);
  EXPECT_TRUE(all_equal(read(b), 4));

  // Same topology, other values: accepted.
  cudaGraph_t g2 = nullptr;
  ASSERT_RT(cudaGraphCreate(&g2, 0));
  cudaGraphNode_t set2 = nullptr, copy2 = nullptr;
  const cudaMemsetParams m2 = memset_params(a, 11);
  ASSERT_RT(cudaGraphAddMemsetNode(&set2, g2, nullptr, 0, &m2));
  ASSERT_RT(cudaGraphAddMemcpyNode1D(&copy2, g2, &set2, 1, b, a, kBytes, cudaMemcpyDeviceToDevice));
  cudaGraphExecUpdateResultInfo info{};
  info.result = cudaGraphExecUpdateError;
  ASSERT_RT(cudaGraphExecUpdate(x, g2, &info));
  EXPECT_EQ(info.result, cudaGraphExecUpdateSuccess);
  EXPECT_EQ(info.errorNode, nullptr);
  launch_and_wait(x);
  EXPECT_TRUE(all_equal(read(b), 11));

  // One node more: refused with the reason, and the executable graph is unchanged.
  cudaGraphNode_t extra = nullptr;
  ASSERT_RT(cudaGraphAddEmptyNode(&extra, g2, &copy2, 1));
  const cudaMemsetParams m3 = memset_params(a, 12);
  ASSERT_RT(cudaGraphMemsetNodeSetParams(set2, &m3));
  EXPECT_EQ(cudaGraphExecUpdate(x, g2, &info), cudaErrorGraphExecUpdateFailure);
  EXPECT_EQ(info.result, cudaGraphExecUpdateErrorTopologyChanged);
  EXPECT_EQ(cudaGetLastError(), cudaErrorGraphExecUpdateFailure);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "not a sticky error";
  launch_and_wait(x);
  EXPECT_TRUE(all_equal(read(b), 11));

  // Another node type in the same place: the node is named.
  cudaGraph_t g3 = nullptr;
  ASSERT_RT(cudaGraphCreate(&g3, 0));
  cudaGraphNode_t e3 = nullptr, c3 = nullptr;
  ASSERT_RT(cudaGraphAddEmptyNode(&e3, g3, nullptr, 0));
  ASSERT_RT(cudaGraphAddMemcpyNode1D(&c3, g3, &e3, 1, b, a, kBytes, cudaMemcpyDeviceToDevice));
  EXPECT_EQ(cudaGraphExecUpdate(x, g3, &info), cudaErrorGraphExecUpdateFailure);
  EXPECT_EQ(info.result, cudaGraphExecUpdateErrorNodeTypeChanged);
  EXPECT_EQ(info.errorNode, e3);
  (void)cudaGetLastError();
  ASSERT_RT(cudaGraphExecDestroy(x));
  for (cudaGraph_t d : {g, g2, g3}) ASSERT_RT(cudaGraphDestroy(d));
}

TEST_F(RuntimeGraph, IllegalCallsDuringCaptureInvalidateIt) {
  // Synchronising a capturing stream.
  ASSERT_RT(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  ASSERT_RT(cudaMemsetAsync(a, 1, kBytes, stream));
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaErrorStreamCaptureUnsupported);
  cudaStreamCaptureStatus status{};
  ASSERT_RT(cudaStreamIsCapturing(stream, &status));
  EXPECT_EQ(status, cudaStreamCaptureStatusInvalidated);
  cudaGraph_t g = reinterpret_cast<cudaGraph_t>(std::uintptr_t{1});
  EXPECT_EQ(cudaStreamEndCapture(stream, &g), cudaErrorStreamCaptureInvalidated);
  EXPECT_EQ(g, nullptr);
  ASSERT_RT(cudaStreamIsCapturing(stream, &status));
  EXPECT_EQ(status, cudaStreamCaptureStatusNone);
  (void)cudaGetLastError();
  ASSERT_RT(cudaStreamSynchronize(stream)) << "usable again";

  // cudaMalloc during a global capture by this thread.
  ASSERT_RT(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, 256), cudaErrorStreamCaptureUnsupported);
  EXPECT_EQ(cudaStreamEndCapture(stream, &g), cudaErrorStreamCaptureInvalidated);
  (void)cudaGetLastError();

  // ... allowed once this thread's mode is relaxed.
  ASSERT_RT(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  ASSERT_RT(cudaThreadExchangeStreamCaptureMode(&mode));
  EXPECT_EQ(mode, cudaStreamCaptureModeGlobal);
  ASSERT_RT(cudaMalloc(&p, 256));
  ASSERT_RT(cudaThreadExchangeStreamCaptureMode(&mode));
  EXPECT_EQ(mode, cudaStreamCaptureModeRelaxed);
  ASSERT_RT(cudaStreamEndCapture(stream, &g));
  ASSERT_RT(cudaGraphDestroy(g));
  ASSERT_RT(cudaFree(p));

  // State errors: the legacy stream, a second begin, an end without a capture.
  EXPECT_EQ(cudaStreamBeginCapture(nullptr, cudaStreamCaptureModeGlobal),
            cudaErrorStreamCaptureUnsupported);
  EXPECT_EQ(cudaStreamEndCapture(stream, &g), cudaErrorIllegalState);
  ASSERT_RT(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed));
  EXPECT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed), cudaErrorIllegalState);
  ASSERT_RT(cudaStreamEndCapture(stream, &g));
  ASSERT_RT(cudaGraphDestroy(g));
  EXPECT_EQ(cudaStreamGetCaptureInfo(stream, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaThreadExchangeStreamCaptureMode(nullptr), cudaErrorInvalidValue);
  (void)cudaGetLastError();
}

TEST_F(RuntimeGraph, CaptureIntoAGraphAndReplaceItsDependencies) {
  cudaGraph_t g = nullptr;
  ASSERT_RT(cudaGraphCreate(&g, 0));
  cudaGraphNode_t first = nullptr;
  const cudaMemsetParams m = memset_params(a, 5);
  ASSERT_RT(cudaGraphAddMemsetNode(&first, g, nullptr, 0, &m));
  ASSERT_RT(
      cudaStreamBeginCaptureToGraph(stream, g, &first, nullptr, 1, cudaStreamCaptureModeGlobal));
  ASSERT_RT(cudaMemcpyAsync(b, a, kBytes, cudaMemcpyDeviceToDevice, stream));
  // The next work depends on nothing captured so far but `first`.
  ASSERT_RT(cudaStreamUpdateCaptureDependencies(stream, &first, nullptr, 1,
                                                cudaStreamSetCaptureDependencies));
  cudaStreamCaptureStatus status{};
  const cudaGraphNode_t* deps = nullptr;
  size_t n = 0;
  ASSERT_RT(cudaStreamGetCaptureInfo(stream, &status, nullptr, nullptr, &deps, nullptr, &n));
  ASSERT_EQ(n, 1u);
  EXPECT_EQ(deps[0], first);
  std::atomic<int> calls{0};
  ASSERT_RT(cudaLaunchHostFunc(stream, count_call, &calls));
  cudaGraph_t out = nullptr;
  ASSERT_RT(cudaStreamEndCapture(stream, &out));
  EXPECT_EQ(out, g);
  ASSERT_RT(cudaGraphGetNodes(g, nullptr, &n));
  EXPECT_EQ(n, 3u);
  ASSERT_RT(cudaGraphGetRootNodes(g, nullptr, &n));
  EXPECT_EQ(n, 1u);
  // The host node depends on `first` only.
  std::vector<cudaGraphNode_t> nodes(3);
  n = 3;
  ASSERT_RT(cudaGraphGetNodes(g, nodes.data(), &n));
  cudaGraphNodeType type{};
  ASSERT_RT(cudaGraphNodeGetType(nodes[2], &type));
  EXPECT_EQ(type, cudaGraphNodeTypeHost);
  cudaGraphNode_t dep = nullptr;
  n = 1;
  ASSERT_RT(cudaGraphNodeGetDependencies(nodes[2], &dep, nullptr, &n));
  EXPECT_EQ(n, 1u);
  EXPECT_EQ(dep, first);

  cudaGraphExec_t x = nullptr;
  ASSERT_RT(cudaGraphInstantiate(&x, g, 0));
  launch_and_wait(x);
  EXPECT_TRUE(all_equal(read(b), 5));
  EXPECT_EQ(calls.load(), 1);
  ASSERT_RT(cudaGraphExecDestroy(x));
  ASSERT_RT(cudaGraphDestroy(g));
}

TEST_F(RuntimeGraph, GenericNodesChildGraphsEventsAndInstantiateParams) {
  std::atomic<int> calls{0};
  cudaGraph_t child = nullptr;
  ASSERT_RT(cudaGraphCreate(&child, 0));
  cudaGraphNodeParams p{};
  p.type = cudaGraphNodeTypeMemset;
  p.memset.dst = a;
  p.memset.value = 3;
  p.memset.elementSize = 4;
  p.memset.width = kN;
  p.memset.height = 1;
  cudaGraphNode_t cset = nullptr;
  ASSERT_RT(cudaGraphAddNode(&cset, child, nullptr, nullptr, 0, &p));

  cudaGraph_t g = nullptr;
  ASSERT_RT(cudaGraphCreate(&g, 0));
  cudaGraphNode_t sub = nullptr, copy = nullptr, host = nullptr, rec = nullptr, wait = nullptr;
  ASSERT_RT(cudaGraphAddChildGraphNode(&sub, g, nullptr, 0, child));
  cudaGraph_t embedded = nullptr;
  ASSERT_RT(cudaGraphChildGraphNodeGetGraph(sub, &embedded));
  EXPECT_NE(embedded, child) << "the node holds a clone";
  cudaGraphNodeParams cp{};
  cp.type = cudaGraphNodeTypeMemcpy;
  cp.memcpy.copyParams.srcPtr = pitched(a, kBytes, kBytes, 1);
  cp.memcpy.copyParams.dstPtr = pitched(b, kBytes, kBytes, 1);
  cp.memcpy.copyParams.extent = extent3(kBytes, 1, 1);
  cp.memcpy.copyParams.kind = cudaMemcpyDeviceToDevice;
  ASSERT_RT(cudaGraphAddNode(&copy, g, &sub, nullptr, 1, &cp));
  cudaGraphNodeParams hp{};
  hp.type = cudaGraphNodeTypeHost;
  hp.host.fn = count_call;
  hp.host.userData = &calls;
  ASSERT_RT(cudaGraphAddNode(&host, g, &copy, nullptr, 1, &hp));
  cudaEvent_t ev = nullptr, ev2 = nullptr;
  ASSERT_RT(cudaEventCreate(&ev));
  ASSERT_RT(cudaEventCreate(&ev2));
  ASSERT_RT(cudaGraphAddEventRecordNode(&rec, g, &host, 1, ev));
  ASSERT_RT(cudaGraphEventRecordNodeSetEvent(rec, ev2));
  cudaEvent_t back = nullptr;
  ASSERT_RT(cudaGraphEventRecordNodeGetEvent(rec, &back));
  EXPECT_EQ(back, ev2);
  ASSERT_RT(cudaGraphAddEventWaitNode(&wait, g, nullptr, 0, ev));
  ASSERT_RT(cudaGraphEventWaitNodeSetEvent(wait, ev2));
  ASSERT_RT(cudaGraphEventWaitNodeGetEvent(wait, &back));
  EXPECT_EQ(back, ev2);
  // Nodes cudamux has no support for.
  cudaGraphNodeParams unsupported{};
  unsupported.type = cudaGraphNodeTypeMemAlloc;
  cudaGraphNode_t none = nullptr;
  EXPECT_EQ(cudaGraphAddNode(&none, g, nullptr, nullptr, 0, &unsupported), cudaErrorNotSupported);
  unsupported.type = static_cast<cudaGraphNodeType>(99);
  EXPECT_EQ(cudaGraphAddNode(&none, g, nullptr, nullptr, 0, &unsupported), cudaErrorInvalidValue);
  (void)cudaGetLastError();

  cudaGraphInstantiateParams ip{};
  ip.flags = cudaGraphInstantiateFlagUpload;
  ip.uploadStream = stream;
  ip.result_out = cudaGraphInstantiateError;
  cudaGraphExec_t x = nullptr;
  ASSERT_RT(cudaGraphInstantiateWithParams(&x, g, &ip));
  EXPECT_EQ(ip.result_out, cudaGraphInstantiateSuccess);
  EXPECT_EQ(ip.errNode_out, nullptr);
  unsigned long long flags = 0;
  ASSERT_RT(cudaGraphExecGetFlags(x, &flags));
  EXPECT_EQ(flags, static_cast<unsigned long long>(cudaGraphInstantiateFlagUpload));
  ASSERT_RT(cudaGraphUpload(x, stream));
  launch_and_wait(x);
  EXPECT_TRUE(all_equal(read(b), 3));
  EXPECT_EQ(calls.load(), 1);

  // Generic setters of the graph and of the executable graph.
  std::atomic<int> other{0};
  hp.host.userData = &other;
  ASSERT_RT(cudaGraphExecNodeSetParams(x, host, &hp));
  launch_and_wait(x);
  EXPECT_EQ(other.load(), 1);
  EXPECT_EQ(calls.load(), 1);
  ASSERT_RT(cudaGraphNodeSetParams(host, &hp));
  cudaHostNodeParams readback{};
  ASSERT_RT(cudaGraphHostNodeGetParams(host, &readback));
  EXPECT_EQ(readback.userData, &other);
  // A child graph of the same shape replaces the executable graph's copy.
  p.memset.value = 8;
  ASSERT_RT(cudaGraphNodeSetParams(cset, &p));
  ASSERT_RT(cudaGraphExecChildGraphNodeSetParams(x, sub, child));
  ASSERT_RT(cudaGraphExecEventRecordNodeSetEvent(x, rec, ev));
  ASSERT_RT(cudaGraphExecEventWaitNodeSetEvent(x, wait, ev2));
  launch_and_wait(x);
  EXPECT_TRUE(all_equal(read(b), 8));
  EXPECT_RT(cudaEventQuery(ev));

  ASSERT_RT(cudaGraphExecDestroy(x));
  ASSERT_RT(cudaGraphDestroy(g));
  ASSERT_RT(cudaGraphDestroy(child));
  ASSERT_RT(cudaEventDestroy(ev));
  ASSERT_RT(cudaEventDestroy(ev2));
}

struct Destroyed {
  static void destroy(void* p) { static_cast<std::atomic<int>*>(p)->fetch_add(1); }
};

TEST_F(RuntimeGraph, UserObjectsLiveAsLongAsTheirReferences) {
  std::atomic<int> destroyed{0};
  cudaUserObject_t o = nullptr;
  EXPECT_EQ(cudaUserObjectCreate(&o, &destroyed, Destroyed::destroy, 1, 0), cudaErrorInvalidValue);
  (void)cudaGetLastError();
  ASSERT_RT(
      cudaUserObjectCreate(&o, &destroyed, Destroyed::destroy, 1, cudaUserObjectNoDestructorSync));
  cudaGraph_t g = nullptr;
  ASSERT_RT(cudaGraphCreate(&g, 0));
  ASSERT_RT(cudaGraphRetainUserObject(g, o, 2, 0));
  ASSERT_RT(cudaGraphReleaseUserObject(g, o, 1));
  ASSERT_RT(cudaUserObjectRetain(o, 1));
  ASSERT_RT(cudaUserObjectRelease(o, 2));  // the program's references are gone, the graph's stay
  EXPECT_EQ(destroyed.load(), 0);
  cudaGraphNode_t e = nullptr;
  ASSERT_RT(cudaGraphAddEmptyNode(&e, g, nullptr, 0));
  cudaGraphExec_t x = nullptr;
  ASSERT_RT(cudaGraphInstantiate(&x, g, 0));
  ASSERT_RT(cudaGraphDestroy(g));
  EXPECT_EQ(destroyed.load(), 0) << "the executable graph holds a reference";
  launch_and_wait(x);
  ASSERT_RT(cudaGraphExecDestroy(x));
  EXPECT_EQ(destroyed.load(), 1);

  // Move: the program's reference goes to the graph.
  ASSERT_RT(
      cudaUserObjectCreate(&o, &destroyed, Destroyed::destroy, 1, cudaUserObjectNoDestructorSync));
  ASSERT_RT(cudaGraphCreate(&g, 0));
  ASSERT_RT(cudaGraphRetainUserObject(g, o, 1, cudaGraphUserObjectMove));
  ASSERT_RT(cudaGraphDestroy(g));
  EXPECT_EQ(destroyed.load(), 2);
}

// --- memcpy nodes on registered device variables ---

int g_graph_var[8] = {1, 2, 3, 4, 5, 6, 7, 8};  // the host shadow of a __device__ int[8]

// A fat binary with one PTX entry, as in runtime_test.cpp's Registered fixture: its module has
// no such variable, so the variable gets a device copy started from its host shadow.
constexpr char kPtx[] =
    ".version 9.0\n.target sm_75\n.address_size 64\n.visible .entry _Z5graphv()\n{\n "
    "ret;\n}\n";
struct alignas(8) OnePtxFatbin {
  std::uint32_t magic = 0xBA55ED50u;
  std::uint16_t version = 1, header_size = 16;
  std::uint64_t entries_size = 64 + sizeof payload;
  std::uint16_t kind = 1, entry_version = 0x0101;
  std::uint32_t entry_header_size = 64;
  std::uint64_t payload_size = sizeof payload;
  std::uint32_t compressed_size = 0, options_offset = 0;
  std::uint16_t code_minor = 0, code_major = 9;
  std::uint32_t arch = 75, identifier_offset = 0, identifier_size = 0;
  std::uint64_t flags = 0x11, reserved = 0, uncompressed_size = 0;
  char payload[(sizeof kPtx + 7) / 8 * 8] = {};
  OnePtxFatbin() { std::memcpy(payload, kPtx, sizeof kPtx); }
};
struct FatbinWrapper {
  std::int32_t magic = 0x466243B1, version = 1;
  const void* data = nullptr;
  void* filename = nullptr;
};

class RuntimeGraphSymbols : public RuntimeGraph {
 protected:
  void SetUp() override {
    RuntimeGraph::SetUp();
    wrapper.data = &fatbin;
    handle = __cudaRegisterFatBinary(&wrapper);
    __cudaRegisterVar(handle, reinterpret_cast<char*>(g_graph_var),
                      reinterpret_cast<char*>(g_graph_var), "g_graph_var", 0, sizeof g_graph_var, 0,
                      0);
    __cudaRegisterFatBinaryEnd(handle);
  }
  void TearDown() override {
    __cudaUnregisterFatBinary(handle);
    RuntimeGraph::TearDown();
  }
  OnePtxFatbin fatbin;
  FatbinWrapper wrapper;
  void** handle = nullptr;
};

TEST_F(RuntimeGraphSymbols, MemcpyNodesToAndFromASymbol) {
  const int in[2] = {70, 80};
  int out[8] = {};
  cudaGraph_t g = nullptr;
  ASSERT_RT(cudaGraphCreate(&g, 0));
  cudaGraphNode_t to = nullptr, from = nullptr;
  ASSERT_RT(cudaGraphAddMemcpyNodeToSymbol(&to, g, nullptr, 0, g_graph_var, in, sizeof in,
                                           sizeof(int), cudaMemcpyHostToDevice));
  ASSERT_RT(cudaGraphAddMemcpyNodeFromSymbol(&from, g, &to, 1, out, g_graph_var, sizeof out, 0,
                                             cudaMemcpyDeviceToHost));
  void* addr = nullptr;
  ASSERT_RT(cudaGetSymbolAddress(&addr, g_graph_var));
  cudaMemcpy3DParms p{};
  ASSERT_RT(cudaGraphMemcpyNodeGetParams(to, &p));
  EXPECT_EQ(p.dstPtr.ptr, static_cast<char*>(addr) + sizeof(int));
  EXPECT_EQ(p.kind, cudaMemcpyHostToDevice);
  cudaGraphExec_t x = nullptr;
  ASSERT_RT(cudaGraphInstantiate(&x, g, 0));
  launch_and_wait(x);
  const int expected[8] = {1, 70, 80, 4, 5, 6, 7, 8};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(out[i], expected[i]) << "element " << i;
  EXPECT_EQ(g_graph_var[1], 2) << "the host shadow is not the device copy";

  // Setters: the graph's node and the executable graph's.
  const int nine = 9;
  ASSERT_RT(cudaGraphMemcpyNodeSetParamsToSymbol(to, g_graph_var, &nine, sizeof nine, 0,
                                                 cudaMemcpyDefault));
  ASSERT_RT(cudaGraphMemcpyNodeGetParams(to, &p));
  EXPECT_EQ(p.dstPtr.ptr, addr);
  EXPECT_EQ(p.kind, cudaMemcpyDefault);
  ASSERT_RT(cudaGraphExecMemcpyNodeSetParamsToSymbol(x, to, g_graph_var, &nine, sizeof nine,
                                                     7 * sizeof(int), cudaMemcpyHostToDevice));
  int last = 0;
  ASSERT_RT(cudaGraphExecMemcpyNodeSetParamsFromSymbol(x, from, &last, g_graph_var, sizeof last,
                                                       7 * sizeof(int), cudaMemcpyDeviceToHost));
  launch_and_wait(x);
  EXPECT_EQ(last, 9);
  ASSERT_RT(cudaGraphMemcpyNodeSetParamsFromSymbol(from, out, g_graph_var, sizeof(int), 0,
                                                   cudaMemcpyDeviceToHost));

  // Bad input.
  int unregistered = 0;
  cudaGraphNode_t bad = nullptr;
  EXPECT_EQ(cudaGraphAddMemcpyNodeToSymbol(&bad, g, nullptr, 0, &unregistered, in, sizeof in, 0,
                                           cudaMemcpyHostToDevice),
            cudaErrorInvalidSymbol);
  EXPECT_EQ(cudaGraphAddMemcpyNodeToSymbol(&bad, g, nullptr, 0, g_graph_var, in, sizeof in,
                                           7 * sizeof(int), cudaMemcpyHostToDevice),
            cudaErrorInvalidValue)
      << "past the variable's end";
  EXPECT_EQ(cudaGraphAddMemcpyNodeToSymbol(&bad, g, nullptr, 0, g_graph_var, in, sizeof in, 0,
                                           cudaMemcpyDeviceToHost),
            cudaErrorInvalidMemcpyDirection);
  EXPECT_EQ(cudaGraphAddMemcpyNodeFromSymbol(&bad, g, nullptr, 0, out, g_graph_var, sizeof out, 0,
                                             cudaMemcpyHostToDevice),
            cudaErrorInvalidMemcpyDirection);
  (void)cudaGetLastError();
  ASSERT_RT(cudaGraphExecDestroy(x));
  ASSERT_RT(cudaGraphDestroy(g));
}

TEST_F(RuntimeGraph, CapturedMallocAsyncBecomesGraphMemory) {
  constexpr size_t kCount = 64;
  ASSERT_RT(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  void* p = nullptr;
  ASSERT_RT(cudaMallocAsync(&p, kCount * sizeof(int), stream));
  ASSERT_NE(nullptr, p);
  ASSERT_RT(cudaMemsetAsync(p, 0x01, kCount * sizeof(int), stream));
  std::vector<int> host(kCount, 0);
  ASSERT_RT(cudaMemcpyAsync(host.data(), p, kCount * sizeof(int), cudaMemcpyDeviceToHost, stream));
  ASSERT_RT(cudaFreeAsync(p, stream));
  cudaGraph_t g = nullptr;
  ASSERT_RT(cudaStreamEndCapture(stream, &g));
  size_t n = 0;
  ASSERT_RT(cudaGraphGetNodes(g, nullptr, &n));
  ASSERT_EQ(4u, n);
  std::vector<cudaGraphNode_t> nodes(n);
  ASSERT_RT(cudaGraphGetNodes(g, nodes.data(), &n));
  cudaMemAllocNodeParams params{};
  ASSERT_RT(cudaGraphMemAllocNodeGetParams(nodes.front(), &params));
  EXPECT_EQ(p, params.dptr);
  EXPECT_EQ(kCount * sizeof(int), params.bytesize);
  void* freed = nullptr;
  ASSERT_RT(cudaGraphMemFreeNodeGetParams(nodes.back(), &freed));
  EXPECT_EQ(p, freed);
  cudaGraphExec_t x = nullptr;
  ASSERT_RT(cudaGraphInstantiate(&x, g, 0));
  ASSERT_RT(cudaGraphLaunch(x, stream));
  ASSERT_RT(cudaStreamSynchronize(stream));
  for (int v : host) ASSERT_EQ(0x01010101, v);
  unsigned long long high = 0;
  ASSERT_RT(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemHigh, &high));
  EXPECT_GE(high, kCount * sizeof(int));
  ASSERT_RT(cudaGraphExecDestroy(x));
  ASSERT_RT(cudaGraphDestroy(g));
  ASSERT_RT(cudaDeviceGraphMemTrim(0));
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

}  // namespace
