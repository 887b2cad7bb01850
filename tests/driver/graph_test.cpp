// CUDA graphs and stream capture (issue 16), on every backend: graph building and inspection,
// instantiation, launch in stream order, per-node and whole-graph updates with CUDA's rules,
// user objects, and stream capture with its modes, cross-stream joins and the illegal calls
// that invalidate a capture. The kernels come from NVRTC (cudamux's libnvrtc, which hands
// them to the backend's compiler).
#include <nvrtc.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "conformance.hpp"
#include "nvrtc_compile.hpp"

namespace {

using conformance::Driver;
using conformance::Gate;

constexpr char kKernels[] = R"(
extern "C" __global__ void add(int* p, int v, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] += v;
}
extern "C" __global__ void mul(int* p, int v, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] *= v;
}
)";

constexpr unsigned kN = 256;
// The hip backend is tested against tests/hip_backend's fake HIP, whose launches run nothing.
constexpr char kFakeHipRunsNoKernels[] =
    "the fake HIP of the tests runs no kernels (these cases check the kernels' results)";

class Graph : public Driver {
 protected:
  void SetUp() override {
    Driver::SetUp();
    std::string image, log;
    ASSERT_TRUE(conformance::compile_ptx(kKernels, "graph.cu", image, log)) << log;
    ASSERT_OK(cuModuleLoadData(&module, image.data()));
    ASSERT_OK(cuModuleGetFunction(&add, module, "add"));
    ASSERT_OK(cuModuleGetFunction(&mul, module, "mul"));
    ASSERT_OK(cuMemAlloc_v2(&buf, kN * sizeof(int)));
    ASSERT_OK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  }
  void TearDown() override {
    if (stream) {
      EXPECT_OK(cuStreamDestroy_v2(stream));
    }
    if (buf) {
      EXPECT_OK(cuMemFree_v2(buf));
    }
    if (module) {
      EXPECT_OK(cuModuleUnload(module));
    }
    Driver::TearDown();
  }

  // A kernel node's parameters for f(buf, value, kN); `args` keeps the argument storage.
  struct Args {
    CUdeviceptr p;
    int v;
    unsigned n;
    void* ptrs[3];
  };
  static CUDA_KERNEL_NODE_PARAMS kernel_params(CUfunction f, Args& a) {
    a.ptrs[0] = &a.p;
    a.ptrs[1] = &a.v;
    a.ptrs[2] = &a.n;
    CUDA_KERNEL_NODE_PARAMS p{};
    p.func = f;
    p.gridDimX = kN / 64;
    p.gridDimY = p.gridDimZ = 1;
    p.blockDimX = 64;
    p.blockDimY = p.blockDimZ = 1;
    p.kernelParams = a.ptrs;
    return p;
  }
  static CUDA_MEMSET_NODE_PARAMS memset_params(CUdeviceptr p, unsigned value) {
    CUDA_MEMSET_NODE_PARAMS m{};
    m.dst = p;
    m.value = value;
    m.elementSize = 4;
    m.width = kN;
    m.height = 1;
    return m;
  }
  static CUDA_MEMCPY3D dtoh_params(void* dst, CUdeviceptr src, size_t bytes) {
    CUDA_MEMCPY3D c{};
    c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    c.srcDevice = src;
    c.dstMemoryType = CU_MEMORYTYPE_HOST;
    c.dstHost = dst;
    c.WidthInBytes = bytes;
    c.Height = 1;
    c.Depth = 1;
    return c;
  }
  std::vector<int> read_back() {
    std::vector<int> out(kN, -1);
    EXPECT_OK(cuMemcpyDtoH_v2(out.data(), buf, kN * sizeof(int)));
    return out;
  }
  void launch_and_wait(CUgraphExec x) {
    ASSERT_OK(cuGraphLaunch(x, stream));
    ASSERT_OK(cuStreamSynchronize(stream));
  }

  CUmodule module = nullptr;
  CUfunction add = nullptr;
  CUfunction mul = nullptr;
  CUdeviceptr buf = 0;
  CUstream stream = nullptr;
};

bool all_equal(const std::vector<int>& v, int value) {
  return std::all_of(v.begin(), v.end(), [&](int x) { return x == value; });
}

TEST_F(Graph, CreateInspectAndEditTopology) {
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuGraphCreate(nullptr, 0));
  CUgraph g = nullptr;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuGraphCreate(&g, 1));
  ASSERT_OK(cuGraphCreate(&g, 0));
  CUgraphNode a, b, c;
  ASSERT_OK(cuGraphAddEmptyNode(&a, g, nullptr, 0));
  ASSERT_OK(cuGraphAddEmptyNode(&b, g, &a, 1));
  ASSERT_OK(cuGraphAddEmptyNode(&c, g, &a, 1));
  const CUgraphNode dup[] = {a, a};
  CUgraphNode d = nullptr;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuGraphAddEmptyNode(&d, g, dup, 2));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuGraphAddEmptyNode(&d, g, nullptr, 1));

  size_t n = 0;
  ASSERT_OK(cuGraphGetNodes(g, nullptr, &n));
  EXPECT_EQ(3u, n);
  CUgraphNode nodes[4] = {};
  n = 4;
  ASSERT_OK(cuGraphGetNodes(g, nodes, &n));
  EXPECT_EQ(3u, n);
  EXPECT_EQ(nullptr, nodes[3]);
  ASSERT_OK(cuGraphGetRootNodes(g, nullptr, &n));
  EXPECT_EQ(1u, n);
  ASSERT_OK(cuGraphGetEdges(g, nullptr, nullptr, &n));
  EXPECT_EQ(2u, n);
  CUgraphNodeType type{};
  ASSERT_OK(cuGraphNodeGetType(b, &type));
  EXPECT_EQ(CU_GRAPH_NODE_TYPE_EMPTY, type);

  // b -> c, then the duplicate is refused, removing a missing edge is refused.
  ASSERT_OK(cuGraphAddDependencies(g, &b, &c, 1));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuGraphAddDependencies(g, &b, &c, 1));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuGraphAddDependencies(g, &b, &b, 1));
  ASSERT_OK(cuGraphNodeGetDependencies(c, nullptr, &n));
  EXPECT_EQ(2u, n);
  ASSERT_OK(cuGraphNodeGetDependentNodes(a, nullptr, &n));
  EXPECT_EQ(2u, n);
  ASSERT_OK(cuGraphRemoveDependencies(g, &b, &c, 1));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuGraphRemoveDependencies(g, &b, &c, 1));

  // Destroying a node removes its edges.
  ASSERT_OK(cuGraphDestroyNode(a));
  ASSERT_OK(cuGraphGetEdges(g, nullptr, nullptr, &n));
  EXPECT_EQ(0u, n);
  ASSERT_OK(cuGraphGetRootNodes(g, nullptr, &n));
  EXPECT_EQ(2u, n);
  ASSERT_OK(cuGraphDestroy(g));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuGraphDestroy(g));
}

TEST_F(Graph, KernelMemsetMemcpyAndHostNodesRunInOrder) {
  CUDAMUX_KNOWN_DIFFERENCE("hip", kFakeHipRunsNoKernels);
  CUgraph g = nullptr;
  ASSERT_OK(cuGraphCreate(&g, 0));
  CUgraphNode set, k1, k2, copy, host;
  const CUDA_MEMSET_NODE_PARAMS m = memset_params(buf, 1);
  ASSERT_OK(cuGraphAddMemsetNode(&set, g, nullptr, 0, &m, ctx));
  Args a1{buf, 3, kN, {}}, a2{buf, 5, kN, {}};
  const CUDA_KERNEL_NODE_PARAMS p1 = kernel_params(add, a1);
  ASSERT_OK(cuGraphAddKernelNode_v2(&k1, g, &set, 1, &p1));
  const CUDA_KERNEL_NODE_PARAMS p2 = kernel_params(mul, a2);
  ASSERT_OK(cuGraphAddKernelNode_v2(&k2, g, &k1, 1, &p2));
  std::vector<int> host_copy(kN, 0);
  const CUDA_MEMCPY3D c = dtoh_params(host_copy.data(), buf, kN * sizeof(int));
  ASSERT_OK(cuGraphAddMemcpyNode(&copy, g, &k2, 1, &c, ctx));
  std::atomic<int> calls{0};
  const CUDA_HOST_NODE_PARAMS h{&conformance::count_call, &calls};
  ASSERT_OK(cuGraphAddHostNode(&host, g, &copy, 1, &h));

  // Parameters were copied: changing the caller's storage changes nothing.
  a1.v = 100;
  CUgraphExec x = nullptr;
  ASSERT_OK(cuGraphInstantiateWithFlags(&x, g, 0));
  for (int launch = 1; launch <= 2; ++launch) {
    launch_and_wait(x);
    EXPECT_TRUE(all_equal(host_copy, (1 + 3) * 5)) << host_copy[0];
    EXPECT_EQ(launch, calls.load());
  }
  cuuint64_t flags = 1;
  ASSERT_OK(cuGraphExecGetFlags(x, &flags));
  EXPECT_EQ(0u, flags);
  ASSERT_OK(cuGraphExecDestroy(x));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuGraphExecDestroy(x));
  ASSERT_OK(cuGraphDestroy(g));
}

TEST_F(Graph, NodeParametersReadBackAndChange) {
  CUgraph g = nullptr;
  ASSERT_OK(cuGraphCreate(&g, 0));
  Args a{buf, 7, kN, {}};
  const CUDA_KERNEL_NODE_PARAMS p = kernel_params(add, a);
  CUgraphNode k;
  ASSERT_OK(cuGraphAddKernelNode_v2(&k, g, nullptr, 0, &p));
  CUDA_KERNEL_NODE_PARAMS back{};
  ASSERT_OK(cuGraphKernelNodeGetParams_v2(k, &back));
  EXPECT_EQ(add, back.func);
  EXPECT_EQ(kN / 64, back.gridDimX);
  EXPECT_EQ(64u, back.blockDimX);
  ASSERT_NE(nullptr, back.kernelParams);
  EXPECT_EQ(buf, *static_cast<CUdeviceptr*>(back.kernelParams[0]));
  EXPECT_EQ(7, *static_cast<int*>(back.kernelParams[1]));
  EXPECT_EQ(kN, *static_cast<unsigned*>(back.kernelParams[2]));
  CUDA_KERNEL_NODE_PARAMS_v1 v1{};
  ASSERT_OK(cuGraphKernelNodeGetParams(k, &v1));
  EXPECT_EQ(add, v1.func);

  a.v = 9;
  const CUDA_KERNEL_NODE_PARAMS p9 = kernel_params(mul, a);
  ASSERT_OK(cuGraphKernelNodeSetParams_v2(k, &p9));
  ASSERT_OK(cuGraphKernelNodeGetParams_v2(k, &back));
  EXPECT_EQ(mul, back.func);
  EXPECT_EQ(9, *static_cast<int*>(back.kernelParams[1]));

  CUgraphNode set;
  const CUDA_MEMSET_NODE_PARAMS m = memset_params(buf, 4);
  ASSERT_OK(cuGraphAddMemsetNode(&set, g, nullptr, 0, &m, ctx));
  CUDA_MEMSET_NODE_PARAMS mb{};
  ASSERT_OK(cuGraphMemsetNodeGetParams(set, &mb));
  EXPECT_EQ(4u, mb.value);
  EXPECT_EQ(kN, mb.width);
  CUDA_MEMSET_NODE_PARAMS bad = m;
  bad.elementSize = 3;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuGraphMemsetNodeSetParams(set, &bad));
  // A Get of another node type is refused.
  CUDA_HOST_NODE_PARAMS hp{};
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuGraphHostNodeGetParams(set, &hp));
  ASSERT_OK(cuGraphDestroy(g));
}

TEST_F(Graph, ExecutableGraphUpdatesFollowCudasRules) {
  CUDAMUX_KNOWN_DIFFERENCE("hip", kFakeHipRunsNoKernels);
  CUgraph g = nullptr;
  ASSERT_OK(cuGraphCreate(&g, 0));
  CUgraphNode set, k;
  const CUDA_MEMSET_NODE_PARAMS m = memset_params(buf, 2);
  ASSERT_OK(cuGraphAddMemsetNode(&set, g, nullptr, 0, &m, ctx));
  Args a{buf, 3, kN, {}};
  const CUDA_KERNEL_NODE_PARAMS p = kernel_params(add, a);
  ASSERT_OK(cuGraphAddKernelNode_v2(&k, g, &set, 1, &p));
  CUgraphExec x = nullptr;
  ASSERT_OK(cuGraphInstantiateWithFlags(&x, g, 0));
  launch_and_wait(x);
  EXPECT_TRUE(all_equal(read_back(), 5));

  // Per-node update: the next launch uses it; the graph itself is unchanged.
  Args b{buf, 10, kN, {}};
  const CUDA_KERNEL_NODE_PARAMS pb = kernel_params(mul, b);
  ASSERT_OK(cuGraphExecKernelNodeSetParams_v2(x, k, &pb));
  launch_and_wait(x);
  EXPECT_TRUE(all_equal(read_back(), 20));
  CUDA_KERNEL_NODE_PARAMS back{};
  ASSERT_OK(cuGraphKernelNodeGetParams_v2(k, &back));
  EXPECT_EQ(add, back.func);

  // Disabled nodes do not run; only kernel, memcpy and memset nodes can be disabled.
  ASSERT_OK(cuGraphNodeSetEnabled(x, k, 0));
  unsigned enabled = 1;
  ASSERT_OK(cuGraphNodeGetEnabled(x, k, &enabled));
  EXPECT_EQ(0u, enabled);
  launch_and_wait(x);
  EXPECT_TRUE(all_equal(read_back(), 2));
  ASSERT_OK(cuGraphNodeSetEnabled(x, k, 1));

  // Whole-graph update from a graph of the same topology.
  CUgraph g2 = nullptr;
  ASSERT_OK(cuGraphCreate(&g2, 0));
  CUgraphNode set2, k2;
  const CUDA_MEMSET_NODE_PARAMS m2 = memset_params(buf, 6);
  ASSERT_OK(cuGraphAddMemsetNode(&set2, g2, nullptr, 0, &m2, ctx));
  Args c{buf, 1, kN, {}};
  const CUDA_KERNEL_NODE_PARAMS pc = kernel_params(add, c);
  ASSERT_OK(cuGraphAddKernelNode_v2(&k2, g2, &set2, 1, &pc));
  CUgraphExecUpdateResultInfo info{};
  ASSERT_OK(cuGraphExecUpdate_v2(x, g2, &info));
  EXPECT_EQ(CU_GRAPH_EXEC_UPDATE_SUCCESS, info.result);
  launch_and_wait(x);
  EXPECT_TRUE(all_equal(read_back(), 7));

  // Another topology: refused, and the executable graph is unchanged.
  CUgraph g3 = nullptr;
  ASSERT_OK(cuGraphCreate(&g3, 0));
  CUgraphNode e3;
  ASSERT_OK(cuGraphAddEmptyNode(&e3, g3, nullptr, 0));
  EXPECT_CU(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, cuGraphExecUpdate_v2(x, g3, &info));
  EXPECT_EQ(CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED, info.result);
  // Same shape, other node types.
  CUgraphNode k3;
  ASSERT_OK(cuGraphAddKernelNode_v2(&k3, g3, &e3, 1, &pc));
  CUgraphNode err = nullptr;
  CUgraphExecUpdateResult result{};
  EXPECT_CU(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, cuGraphExecUpdate(x, g3, &err, &result));
  EXPECT_EQ(CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED, result);
  EXPECT_EQ(e3, err);
  launch_and_wait(x);
  EXPECT_TRUE(all_equal(read_back(), 7));

  // Per-node update errors: a node of another type, a node of another graph.
  CUDA_HOST_NODE_PARAMS h{&conformance::count_call, nullptr};
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuGraphExecHostNodeSetParams(x, k, &h));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuGraphExecKernelNodeSetParams_v2(x, k3, &pc));
  ASSERT_OK(cuGraphExecDestroy(x));
  for (CUgraph d : {g, g2, g3}) ASSERT_OK(cuGraphDestroy(d));
}

TEST_F(Graph, ChildGraphsClonesAndGenericNodes) {
  CUDAMUX_KNOWN_DIFFERENCE("hip", kFakeHipRunsNoKernels);
  CUgraph child = nullptr;
  ASSERT_OK(cuGraphCreate(&child, 0));
  Args a{buf, 4, kN, {}};
  const CUDA_KERNEL_NODE_PARAMS p = kernel_params(add, a);
  CUgraphNode k;
  ASSERT_OK(cuGraphAddKernelNode_v2(&k, child, nullptr, 0, &p));

  CUgraph g = nullptr;
  ASSERT_OK(cuGraphCreate(&g, 0));
  // cuGraphAddNode: a memset through the generic parameters.
  CUgraphNodeParams gp{};
  gp.type = CU_GRAPH_NODE_TYPE_MEMSET;
  gp.memset.dst = buf;
  gp.memset.value = 1;
  gp.memset.elementSize = 4;
  gp.memset.width = kN;
  gp.memset.height = 1;
  gp.memset.ctx = ctx;
  CUgraphNode set, sub, sub2;
  ASSERT_OK(cuGraphAddNode(&set, g, nullptr, 0, &gp));
  ASSERT_OK(cuGraphAddChildGraphNode(&sub, g, &set, 1, child));
  ASSERT_OK(cuGraphAddChildGraphNode(&sub2, g, &sub, 1, child));
  // The child was cloned: editing it now changes nothing in g.
  CUgraphNode extra;
  ASSERT_OK(cuGraphAddKernelNode_v2(&extra, child, &k, 1, &p));
  CUgraph inner = nullptr;
  ASSERT_OK(cuGraphChildGraphNodeGetGraph(sub, &inner));
  size_t n = 0;
  ASSERT_OK(cuGraphGetNodes(inner, nullptr, &n));
  EXPECT_EQ(1u, n);
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuGraphDestroy(inner));

  CUgraph copy = nullptr;
  ASSERT_OK(cuGraphClone(&copy, g));
  CUgraphNode found = nullptr;
  ASSERT_OK(cuGraphNodeFindInClone(&found, sub, copy));
  CUgraphNodeType type{};
  ASSERT_OK(cuGraphNodeGetType(found, &type));
  EXPECT_EQ(CU_GRAPH_NODE_TYPE_GRAPH, type);
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuGraphNodeFindInClone(&found, k, copy));

  CUgraphExec x = nullptr;
  ASSERT_OK(cuGraphInstantiateWithFlags(&x, copy, 0));
  launch_and_wait(x);
  EXPECT_TRUE(all_equal(read_back(), 1 + 4 + 4));
  // A generic per-node update of the memset.
  gp.memset.value = 10;
  ASSERT_OK(cuGraphNodeFindInClone(&found, set, copy));
  ASSERT_OK(cuGraphExecNodeSetParams(x, found, &gp));
  launch_and_wait(x);
  EXPECT_TRUE(all_equal(read_back(), 10 + 4 + 4));
  ASSERT_OK(cuGraphExecDestroy(x));
  for (CUgraph d : {g, copy, child}) ASSERT_OK(cuGraphDestroy(d));
}

TEST_F(Graph, EventNodesAndStreamOrder) {
  CUevent done = nullptr, start = nullptr;
  ASSERT_OK(cuEventCreate(&done, CU_EVENT_DISABLE_TIMING));
  ASSERT_OK(cuEventCreate(&start, CU_EVENT_DISABLE_TIMING));
  CUgraph g = nullptr;
  ASSERT_OK(cuGraphCreate(&g, 0));
  CUgraphNode wait, set, rec;
  ASSERT_OK(cuGraphAddEventWaitNode(&wait, g, nullptr, 0, start));
  const CUDA_MEMSET_NODE_PARAMS m = memset_params(buf, 9);
  ASSERT_OK(cuGraphAddMemsetNode(&set, g, &wait, 1, &m, ctx));
  ASSERT_OK(cuGraphAddEventRecordNode(&rec, g, &set, 1, done));
  CUevent back = nullptr;
  ASSERT_OK(cuGraphEventRecordNodeGetEvent(rec, &back));
  EXPECT_EQ(done, back);
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuGraphEventWaitNodeGetEvent(rec, &back));
  CUgraphExec x = nullptr;
  ASSERT_OK(cuGraphInstantiateWithFlags(&x, g, 0));

  // The graph waits for `start`, recorded on another stream behind a gate.
  CUstream other = nullptr;
  ASSERT_OK(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING));
  ASSERT_OK(cuMemsetD32_v2(buf, 0, kN));
  ASSERT_OK(cuCtxSynchronize());  // `stream` does not wait for the legacy stream
  Gate gate;
  ASSERT_OK(cuLaunchHostFunc(other, &Gate::block, &gate));
  ASSERT_OK(cuEventRecord(start, other));
  ASSERT_OK(cuGraphLaunch(x, stream));
  ASSERT_TRUE(conformance::eventually([&] { return gate.entered.load(); }));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_CU(CUDA_ERROR_NOT_READY, cuEventQuery(done));
  EXPECT_CU(CUDA_ERROR_NOT_READY, cuStreamQuery(stream));
  gate.release();
  ASSERT_OK(cuEventSynchronize(done));
  EXPECT_TRUE(all_equal(read_back(), 9));
  EXPECT_FALSE(gate.timed_out.load());
  ASSERT_OK(cuStreamSynchronize(stream));
  ASSERT_OK(cuGraphExecDestroy(x));
  ASSERT_OK(cuGraphDestroy(g));
  ASSERT_OK(cuStreamDestroy_v2(other));
  ASSERT_OK(cuEventDestroy_v2(done));
  ASSERT_OK(cuEventDestroy_v2(start));
}

struct Destroyed {
  static void CUDA_CB destroy(void* p) { static_cast<std::atomic<int>*>(p)->fetch_add(1); }
};

TEST_F(Graph, UserObjectsLiveAsLongAsTheirReferences) {
  std::atomic<int> destroyed{0};
  CUuserObject o = nullptr;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
            cuUserObjectCreate(&o, &destroyed, &Destroyed::destroy, 1, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuUserObjectCreate(&o, &destroyed, &Destroyed::destroy, 0,
                                                         CU_USER_OBJECT_NO_DESTRUCTOR_SYNC));
  ASSERT_OK(cuUserObjectCreate(&o, &destroyed, &Destroyed::destroy, 1,
                               CU_USER_OBJECT_NO_DESTRUCTOR_SYNC));
  CUgraph g = nullptr;
  ASSERT_OK(cuGraphCreate(&g, 0));
  ASSERT_OK(cuGraphRetainUserObject(g, o, 2, 0));
  ASSERT_OK(cuGraphReleaseUserObject(g, o, 1));
  ASSERT_OK(cuUserObjectRetain(o, 1));
  ASSERT_OK(cuUserObjectRelease(o, 2));  // the caller's references are gone; the graph's stay
  EXPECT_EQ(0, destroyed.load());
  CUgraph copy = nullptr;
  ASSERT_OK(cuGraphClone(&copy, g));
  CUgraphExec x = nullptr;
  CUgraphNode e;
  ASSERT_OK(cuGraphAddEmptyNode(&e, g, nullptr, 0));
  ASSERT_OK(cuGraphInstantiateWithFlags(&x, g, 0));
  ASSERT_OK(cuGraphDestroy(g));
  ASSERT_OK(cuGraphDestroy(copy));
  EXPECT_EQ(0, destroyed.load());  // the executable graph holds one
  launch_and_wait(x);
  ASSERT_OK(cuGraphExecDestroy(x));
  EXPECT_TRUE(conformance::eventually([&] { return destroyed.load() == 1; }));

  // MOVE hands the caller's reference to the graph.
  CUuserObject moved = nullptr;
  ASSERT_OK(cuUserObjectCreate(&moved, &destroyed, &Destroyed::destroy, 1,
                               CU_USER_OBJECT_NO_DESTRUCTOR_SYNC));
  ASSERT_OK(cuGraphCreate(&g, 0));
  ASSERT_OK(cuGraphRetainUserObject(g, moved, 1, CU_GRAPH_USER_OBJECT_MOVE));
  ASSERT_OK(cuGraphDestroy(g));
  EXPECT_TRUE(conformance::eventually([&] { return destroyed.load() == 2; }));
}

TEST_F(Graph, DotPrintAndKernelNodeAttributes) {
  CUgraph g = nullptr;
  ASSERT_OK(cuGraphCreate(&g, 0));
  Args a{buf, 1, kN, {}};
  const CUDA_KERNEL_NODE_PARAMS p = kernel_params(add, a);
  CUgraphNode k, k2;
  ASSERT_OK(cuGraphAddKernelNode_v2(&k, g, nullptr, 0, &p));
  ASSERT_OK(cuGraphAddKernelNode_v2(&k2, g, &k, 1, &p));
  int least = 0, greatest = 0;
  ASSERT_OK(cuCtxGetStreamPriorityRange(&least, &greatest));
  CUkernelNodeAttrValue v{};
  v.priority = greatest;
  ASSERT_OK(cuGraphKernelNodeSetAttribute(k, CU_LAUNCH_ATTRIBUTE_PRIORITY, &v));
  CUkernelNodeAttrValue back{};
  ASSERT_OK(cuGraphKernelNodeGetAttribute(k, CU_LAUNCH_ATTRIBUTE_PRIORITY, &back));
  EXPECT_EQ(greatest, back.priority);
  ASSERT_OK(cuGraphKernelNodeCopyAttributes(k2, k));
  ASSERT_OK(cuGraphKernelNodeGetAttribute(k2, CU_LAUNCH_ATTRIBUTE_PRIORITY, &back));
  EXPECT_EQ(greatest, back.priority);
  // Priorities outside the device's range are clamped to it.
  v.priority = least + 100;
  ASSERT_OK(cuGraphKernelNodeSetAttribute(k, CU_LAUNCH_ATTRIBUTE_PRIORITY, &v));
  ASSERT_OK(cuGraphKernelNodeGetAttribute(k, CU_LAUNCH_ATTRIBUTE_PRIORITY, &back));
  EXPECT_EQ(least, back.priority);

  const std::string path = ::testing::TempDir() + "cudamux_graph.dot";
  ASSERT_OK(cuGraphDebugDotPrint(g, path.c_str(), CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE));
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(std::string::npos, text.str().find("digraph")) << text.str();
  EXPECT_NE(std::string::npos, text.str().find("->")) << text.str();
  std::remove(path.c_str());
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuGraphDebugDotPrint(g, nullptr, 0));
  ASSERT_OK(cuGraphDestroy(g));
}

TEST_F(Graph, InstantiateWithParamsAndUpload) {
  CUgraph g = nullptr;
  ASSERT_OK(cuGraphCreate(&g, 0));
  CUgraphNode set;
  const CUDA_MEMSET_NODE_PARAMS m = memset_params(buf, 3);
  ASSERT_OK(cuGraphAddMemsetNode(&set, g, nullptr, 0, &m, ctx));
  CUDA_GRAPH_INSTANTIATE_PARAMS ip{};
  ip.flags = CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD;
  ip.hUploadStream = stream;
  CUgraphExec x = nullptr;
  ASSERT_OK(cuGraphInstantiateWithParams(&x, g, &ip));
  EXPECT_EQ(CUDA_GRAPH_INSTANTIATE_SUCCESS, ip.result_out);
  ASSERT_OK(cuGraphUpload(x, stream));
  ASSERT_OK(cuGraphLaunch_ptsz(x, stream));
  ASSERT_OK(cuStreamSynchronize(stream));
  EXPECT_TRUE(all_equal(read_back(), 3));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuGraphInstantiateWithFlags(&x, g, 1ull << 40));
  CUgraphExec y = nullptr;
  char log[64] = "unset";
  ASSERT_OK(cuGraphInstantiate(&y, g, nullptr, log, sizeof log));
  ASSERT_OK(cuGraphExecDestroy(y));
  ASSERT_OK(cuGraphExecDestroy(x));
  ASSERT_OK(cuGraphDestroy(g));
}

// --- stream capture ---

TEST_F(Graph, CaptureRecordsWorkInsteadOfRunningIt) {
  CUDAMUX_KNOWN_DIFFERENCE("hip", kFakeHipRunsNoKernels);
  ASSERT_OK(cuMemsetD32_v2(buf, 0, kN));
  ASSERT_OK(cuCtxSynchronize());
  CUstreamCaptureStatus status{};
  ASSERT_OK(cuStreamIsCapturing(stream, &status));
  EXPECT_EQ(CU_STREAM_CAPTURE_STATUS_NONE, status);
  ASSERT_OK(cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
  ASSERT_OK(cuStreamIsCapturing(stream, &status));
  EXPECT_EQ(CU_STREAM_CAPTURE_STATUS_ACTIVE, status);

  ASSERT_OK(cuMemsetD32Async(buf, 2, kN, stream));
  Args a{buf, 3, kN, {}};
  a.ptrs[0] = &a.p;
  a.ptrs[1] = &a.v;
  a.ptrs[2] = &a.n;
  ASSERT_OK(cuLaunchKernel(add, kN / 64, 1, 1, 64, 1, 1, 0, stream, a.ptrs, nullptr));
  std::vector<int> host(kN, 0);
  ASSERT_OK(cuMemcpyDtoHAsync_v2(host.data(), buf, kN * sizeof(int), stream));
  std::atomic<int> calls{0};
  ASSERT_OK(cuLaunchHostFunc(stream, &conformance::count_call, &calls));

  cuuint64_t id = 0;
  CUgraph during = nullptr;
  const CUgraphNode* deps = nullptr;
  size_t ndeps = 0;
  ASSERT_OK(cuStreamGetCaptureInfo_v2(stream, &status, &id, &during, &deps, &ndeps));
  EXPECT_NE(0u, id);
  EXPECT_NE(nullptr, during);
  ASSERT_EQ(1u, ndeps);
  CUgraphNodeType type{};
  ASSERT_OK(cuGraphNodeGetType(deps[0], &type));
  EXPECT_EQ(CU_GRAPH_NODE_TYPE_HOST, type);

  CUgraph g = nullptr;
  ASSERT_OK(cuStreamEndCapture(stream, &g));
  ASSERT_NE(nullptr, g);
  EXPECT_EQ(0, calls.load());
  EXPECT_TRUE(all_equal(read_back(), 0));  // nothing ran while capturing

  size_t n = 0;
  ASSERT_OK(cuGraphGetNodes(g, nullptr, &n));
  ASSERT_EQ(4u, n);
  std::vector<CUgraphNode> nodes(n);
  ASSERT_OK(cuGraphGetNodes(g, nodes.data(), &n));
  const CUgraphNodeType expected[] = {CU_GRAPH_NODE_TYPE_MEMSET, CU_GRAPH_NODE_TYPE_KERNEL,
                                      CU_GRAPH_NODE_TYPE_MEMCPY, CU_GRAPH_NODE_TYPE_HOST};
  for (size_t i = 0; i < n; ++i) {
    ASSERT_OK(cuGraphNodeGetType(nodes[i], &type));
    EXPECT_EQ(expected[i], type) << i;
  }
  ASSERT_OK(cuGraphGetEdges(g, nullptr, nullptr, &n));
  EXPECT_EQ(3u, n);

  CUgraphExec x = nullptr;
  ASSERT_OK(cuGraphInstantiateWithFlags(&x, g, 0));
  launch_and_wait(x);
  EXPECT_TRUE(all_equal(host, 5));
  EXPECT_EQ(1, calls.load());
  ASSERT_OK(cuStreamIsCapturing(stream, &status));
  EXPECT_EQ(CU_STREAM_CAPTURE_STATUS_NONE, status);
  ASSERT_OK(cuGraphExecDestroy(x));
  ASSERT_OK(cuGraphDestroy(g));
}

TEST_F(Graph, CaptureStateErrors) {
  CUgraph g = nullptr;
  EXPECT_CU(CUDA_ERROR_ILLEGAL_STATE, cuStreamEndCapture(stream, &g));
  EXPECT_CU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
            cuStreamBeginCapture_v2(CU_STREAM_LEGACY, CU_STREAM_CAPTURE_MODE_GLOBAL));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
            cuStreamBeginCapture_v2(stream, static_cast<CUstreamCaptureMode>(7)));
  ASSERT_OK(cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
  EXPECT_CU(CUDA_ERROR_ILLEGAL_STATE,
            cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CUstream other = nullptr;
  ASSERT_OK(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING));
  EXPECT_CU(CUDA_ERROR_ILLEGAL_STATE, cuStreamEndCapture(other, &g));
  ASSERT_OK(cuStreamEndCapture(stream, &g));
  ASSERT_NE(nullptr, g);
  size_t n = 1;
  ASSERT_OK(cuGraphGetNodes(g, nullptr, &n));
  EXPECT_EQ(0u, n);
  ASSERT_OK(cuGraphDestroy(g));
  ASSERT_OK(cuStreamDestroy_v2(other));
}

TEST_F(Graph, SynchronizingACapturingStreamInvalidatesTheCapture) {
  ASSERT_OK(cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
  ASSERT_OK(cuMemsetD32Async(buf, 1, kN, stream));
  EXPECT_CU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, cuStreamSynchronize(stream));
  CUstreamCaptureStatus status{};
  ASSERT_OK(cuStreamIsCapturing(stream, &status));
  EXPECT_EQ(CU_STREAM_CAPTURE_STATUS_INVALIDATED, status);
  EXPECT_CU(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuMemsetD32Async(buf, 2, kN, stream));
  CUgraph g = reinterpret_cast<CUgraph>(std::uintptr_t{1});
  EXPECT_CU(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(stream, &g));
  EXPECT_EQ(nullptr, g);
  ASSERT_OK(cuStreamIsCapturing(stream, &status));
  EXPECT_EQ(CU_STREAM_CAPTURE_STATUS_NONE, status);
  ASSERT_OK(cuStreamSynchronize(stream));  // usable again

  ASSERT_OK(cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
  EXPECT_CU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, cuStreamQuery(stream));
  EXPECT_CU(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(stream, &g));
}

TEST_F(Graph, LegacyStreamWhileABlockingStreamCapturesIsAnImplicitDependency) {
  CUstream blocking = nullptr;
  ASSERT_OK(cuStreamCreate(&blocking, CU_STREAM_DEFAULT));
  ASSERT_OK(cuStreamBeginCapture_v2(blocking, CU_STREAM_CAPTURE_MODE_RELAXED));
  EXPECT_CU(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, cuMemsetD32Async(buf, 1, kN, CU_STREAM_LEGACY));
  CUgraph g = nullptr;
  EXPECT_CU(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(blocking, &g));
  // A non-blocking stream's capture does not involve the legacy stream.
  ASSERT_OK(cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_RELAXED));
  ASSERT_OK(cuMemsetD32Async(buf, 1, kN, CU_STREAM_LEGACY));
  ASSERT_OK(cuStreamEndCapture(stream, &g));
  ASSERT_OK(cuGraphDestroy(g));
  ASSERT_OK(cuCtxSynchronize());
  ASSERT_OK(cuStreamDestroy_v2(blocking));
}

TEST_F(Graph, CaptureModesDecideWhichThreadsMayMakeUnsafeCalls) {
  CUdeviceptr p = 0;
  // Global mode: this thread may not allocate; the capture is invalidated.
  ASSERT_OK(cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
  EXPECT_CU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, cuMemAlloc_v2(&p, 256));
  CUgraph g = nullptr;
  EXPECT_CU(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(stream, &g));

  // Relaxed thread mode allows it during a global capture.
  ASSERT_OK(cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  ASSERT_OK(cuThreadExchangeStreamCaptureMode(&mode));
  EXPECT_EQ(CU_STREAM_CAPTURE_MODE_GLOBAL, mode);
  ASSERT_OK(cuMemAlloc_v2(&p, 256));
  ASSERT_OK(cuThreadExchangeStreamCaptureMode(&mode));
  EXPECT_EQ(CU_STREAM_CAPTURE_MODE_RELAXED, mode);
  ASSERT_OK(cuStreamEndCapture(stream, &g));
  ASSERT_OK(cuGraphDestroy(g));
  ASSERT_OK(cuMemFree_v2(p));

  // A thread-local capture of this thread does not restrict another thread.
  ASSERT_OK(cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  CUresult other_thread = CUDA_ERROR_UNKNOWN;
  std::thread t([&] {
    CUdeviceptr q = 0;
    (void)cuCtxSetCurrent(ctx);
    other_thread = cuMemAlloc_v2(&q, 256);
    if (other_thread == CUDA_SUCCESS) (void)cuMemFree_v2(q);
  });
  t.join();
  EXPECT_CU(CUDA_SUCCESS, other_thread);
  ASSERT_OK(cuStreamEndCapture(stream, &g));
  ASSERT_OK(cuGraphDestroy(g));
  // (A null mode pointer: cudamux answers CUDA_ERROR_INVALID_VALUE, NVIDIA's driver crashes.)
}

TEST_F(Graph, UnsafeCallsDuringAGlobalCapture) {
  CUevent unrelated = nullptr;
  ASSERT_OK(cuEventCreate(&unrelated, CU_EVENT_DISABLE_TIMING));
  ASSERT_OK(cuEventRecord(unrelated, stream));
  ASSERT_OK(cuStreamSynchronize(stream));
  CUgraph g = nullptr;
  // Each of these, made by the capturing thread, invalidates a global capture.
  const auto check = [&](const char* what, auto&& call) {
    SCOPED_TRACE(what);
    ASSERT_OK(cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
    EXPECT_CU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, call());
    EXPECT_CU(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(stream, &g));
  };
  check("cuCtxSynchronize", [] { return cuCtxSynchronize(); });
  check("cuMemFree", [&] { return cuMemFree_v2(buf); });
  check("cuEventSynchronize", [&] { return cuEventSynchronize(unrelated); });
  check("cuEventQuery", [&] { return cuEventQuery(unrelated); });
  check("cuStreamAddCallback on the capturing stream", [&] {
    return cuStreamAddCallback(
        stream, [](CUstream, CUresult, void*) {}, nullptr, 0);
  });
  // A synchronous copy on the legacy stream is allowed while a non-blocking stream captures
  // (NVIDIA's driver 580).
  ASSERT_OK(cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
  int v = 0;
  EXPECT_OK(cuMemcpyDtoH_v2(&v, buf, sizeof v));
  ASSERT_OK(cuStreamEndCapture(stream, &g));
  ASSERT_OK(cuGraphDestroy(g));
  ASSERT_OK(cuEventDestroy_v2(unrelated));
}

TEST_F(Graph, CrossStreamCaptureForksAndJoinsThroughEvents) {
  CUstream side = nullptr;
  ASSERT_OK(cuStreamCreate(&side, CU_STREAM_NON_BLOCKING));
  CUevent fork = nullptr, joinev = nullptr;
  ASSERT_OK(cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING));
  ASSERT_OK(cuEventCreate(&joinev, CU_EVENT_DISABLE_TIMING));
  CUdeviceptr second = 0;
  ASSERT_OK(cuMemAlloc_v2(&second, kN * sizeof(int)));

  ASSERT_OK(cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
  ASSERT_OK(cuMemsetD32Async(buf, 1, kN, stream));
  ASSERT_OK(cuEventRecord(fork, stream));
  ASSERT_OK(cuStreamWaitEvent(side, fork, 0));  // side joins the capture
  CUstreamCaptureStatus status{};
  cuuint64_t id1 = 0, id2 = 0;
  ASSERT_OK(cuStreamGetCaptureInfo(stream, &status, &id1));
  ASSERT_OK(cuStreamGetCaptureInfo(side, &status, &id2));
  EXPECT_EQ(CU_STREAM_CAPTURE_STATUS_ACTIVE, status);
  EXPECT_EQ(id1, id2);
  ASSERT_OK(cuMemsetD32Async(second, 2, kN, side));
  ASSERT_OK(cuMemsetD32Async(buf, 3, kN, stream));
  // Ending before the side stream rejoins fails.
  ASSERT_OK(cuEventRecord(joinev, side));
  ASSERT_OK(cuStreamWaitEvent(stream, joinev, 0));
  CUgraph g = nullptr;
  ASSERT_OK(cuStreamEndCapture(stream, &g));
  ASSERT_OK(cuStreamIsCapturing(side, &status));
  EXPECT_EQ(CU_STREAM_CAPTURE_STATUS_NONE, status);
  size_t n = 0;
  ASSERT_OK(cuGraphGetNodes(g, nullptr, &n));
  EXPECT_EQ(3u, n);
  ASSERT_OK(cuGraphGetRootNodes(g, nullptr, &n));
  EXPECT_EQ(1u, n);
  ASSERT_OK(cuGraphGetEdges(g, nullptr, nullptr, &n));
  EXPECT_EQ(2u, n);  // memset(1) -> memset(second), memset(1) -> memset(3)
  ASSERT_OK(cuGraphDestroy(g));

  // Unjoined: the side stream's work never reached the origin.
  ASSERT_OK(cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
  ASSERT_OK(cuEventRecord(fork, stream));
  ASSERT_OK(cuStreamWaitEvent(side, fork, 0));
  ASSERT_OK(cuMemsetD32Async(second, 2, kN, side));
  EXPECT_CU(CUDA_ERROR_STREAM_CAPTURE_UNJOINED, cuStreamEndCapture(stream, &g));
  ASSERT_OK(cuStreamIsCapturing(side, &status));
  EXPECT_EQ(CU_STREAM_CAPTURE_STATUS_NONE, status);
  // Ending on the joined stream instead of the origin.
  ASSERT_OK(cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
  ASSERT_OK(cuEventRecord(fork, stream));
  ASSERT_OK(cuStreamWaitEvent(side, fork, 0));
  EXPECT_CU(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, cuStreamEndCapture(side, &g));
  // ...which invalidates the capture.
  EXPECT_CU(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuEventRecord(joinev, side));
  EXPECT_CU(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(stream, &g));

  ASSERT_OK(cuMemFree_v2(second));
  ASSERT_OK(cuEventDestroy_v2(fork));
  ASSERT_OK(cuEventDestroy_v2(joinev));
  ASSERT_OK(cuStreamDestroy_v2(side));
}

TEST_F(Graph, CaptureDependenciesCanBeReadAndReplaced) {
  CUDAMUX_KNOWN_DIFFERENCE("hip", kFakeHipRunsNoKernels);
  CUgraph into = nullptr;
  ASSERT_OK(cuGraphCreate(&into, 0));
  CUgraphNode first;
  const CUDA_MEMSET_NODE_PARAMS m = memset_params(buf, 4);
  ASSERT_OK(cuGraphAddMemsetNode(&first, into, nullptr, 0, &m, ctx));
  // Capture into an existing graph, after `first`.
  ASSERT_OK(
      cuStreamBeginCaptureToGraph(stream, into, &first, nullptr, 1, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CUstreamCaptureStatus status{};
  CUgraph graph = nullptr;
  const CUgraphNode* deps = nullptr;
  const CUgraphEdgeData* edges = nullptr;
  size_t n = 0;
  ASSERT_OK(cuStreamGetCaptureInfo_v3(stream, &status, nullptr, &graph, &deps, &edges, &n));
  EXPECT_EQ(into, graph);
  ASSERT_EQ(1u, n);
  EXPECT_EQ(first, deps[0]);
  Args a{buf, 6, kN, {}};
  a.ptrs[0] = &a.p;
  a.ptrs[1] = &a.v;
  a.ptrs[2] = &a.n;
  ASSERT_OK(cuLaunchKernel(add, kN / 64, 1, 1, 64, 1, 1, 0, stream, a.ptrs, nullptr));
  // The next captured work depends on `first` only (replacing the kernel as dependency).
  CUgraphNode only_first[] = {first};
  ASSERT_OK(
      cuStreamUpdateCaptureDependencies(stream, only_first, 1, CU_STREAM_SET_CAPTURE_DEPENDENCIES));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuStreamUpdateCaptureDependencies(stream, only_first, 1, 7));
  ASSERT_OK(cuLaunchKernel(add, kN / 64, 1, 1, 64, 1, 1, 0, stream, a.ptrs, nullptr));
  ASSERT_OK(cuStreamGetCaptureInfo_v2(stream, &status, nullptr, nullptr, &deps, &n));
  ASSERT_EQ(1u, n);
  CUgraph ended = nullptr;
  ASSERT_OK(cuStreamEndCapture(stream, &ended));
  EXPECT_EQ(into, ended);
  ASSERT_OK(cuGraphNodeGetDependentNodes(first, nullptr, &n));
  EXPECT_EQ(2u, n);  // both kernels follow `first`, neither the other
  CUgraphExec x = nullptr;
  ASSERT_OK(cuGraphInstantiateWithFlags(&x, into, 0));
  launch_and_wait(x);
  EXPECT_TRUE(all_equal(read_back(), 4 + 6 + 6));
  ASSERT_OK(cuGraphExecDestroy(x));
  ASSERT_OK(cuGraphDestroy(into));
}

TEST_F(Graph, LaunchingAGraphIntoACaptureIsRefused) {
  CUgraph g = nullptr;
  ASSERT_OK(cuGraphCreate(&g, 0));
  CUgraphNode set;
  const CUDA_MEMSET_NODE_PARAMS m = memset_params(buf, 8);
  ASSERT_OK(cuGraphAddMemsetNode(&set, g, nullptr, 0, &m, ctx));
  CUgraphExec x = nullptr;
  ASSERT_OK(cuGraphInstantiateWithFlags(&x, g, 0));
  // NVIDIA's driver 580 refuses it and invalidates the capture; use a child graph node.
  ASSERT_OK(cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
  EXPECT_CU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, cuGraphLaunch(x, stream));
  CUgraph outer = nullptr;
  EXPECT_CU(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(stream, &outer));
  launch_and_wait(x);
  EXPECT_TRUE(all_equal(read_back(), 8));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuGraphLaunch(nullptr, stream));
  ASSERT_OK(cuGraphExecDestroy(x));
  ASSERT_OK(cuGraphDestroy(g));
}

TEST_F(Graph, EdgeDataIsKeptAndLossyQueriesAreRefused) {
  CUDAMUX_KNOWN_DIFFERENCE("hip", kFakeHipRunsNoKernels);
  CUgraph g = nullptr;
  ASSERT_OK(cuGraphCreate(&g, 0));
  Args a{buf, 1, kN, {}};
  const CUDA_KERNEL_NODE_PARAMS p = kernel_params(add, a);
  CUgraphNode k1, k2;
  ASSERT_OK(cuGraphAddKernelNode_v2(&k1, g, nullptr, 0, &p));
  CUgraphNodeParams gp{};
  gp.type = CU_GRAPH_NODE_TYPE_KERNEL;
  std::memcpy(&gp.kernel, &p, sizeof p);
  CUgraphEdgeData edge{};
  edge.type = CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC;
  edge.from_port = CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC;
  ASSERT_OK(cuGraphAddNode_v2(&k2, g, &k1, &edge, 1, &gp));
  size_t n = 1;
  CUgraphNode from = nullptr, to = nullptr;
  EXPECT_CU(CUDA_ERROR_LOSSY_QUERY, cuGraphGetEdges(g, &from, &to, &n));
  CUgraphEdgeData back{};
  n = 1;
  ASSERT_OK(cuGraphGetEdges_v2(g, &from, &to, &back, &n));
  EXPECT_EQ(k1, from);
  EXPECT_EQ(k2, to);
  EXPECT_EQ(CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC, back.type);
  n = 1;
  EXPECT_CU(CUDA_ERROR_LOSSY_QUERY, cuGraphNodeGetDependencies(k2, &from, &n));
  ASSERT_OK(cuGraphNodeGetDependencies_v2(k2, &from, &back, &n));
  n = 1;
  ASSERT_OK(cuGraphNodeGetDependentNodes_v2(k1, &to, &back, &n));
  EXPECT_EQ(k2, to);
  ASSERT_OK(cuGraphRemoveDependencies_v2(g, &k1, &k2, &back, 1));
  ASSERT_OK(cuGraphAddDependencies_v2(g, &k1, &k2, &edge, 1));
  // A programmatic edge joins kernel nodes only.
  CUgraphNode e;
  ASSERT_OK(cuGraphAddEmptyNode(&e, g, nullptr, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuGraphAddDependencies_v2(g, &e, &k1, &edge, 1));
  CUgraphExec x = nullptr;
  ASSERT_OK(cuGraphInstantiateWithFlags(&x, g, 0));
  ASSERT_OK(cuMemsetD32_v2(buf, 0, kN));
  ASSERT_OK(cuCtxSynchronize());  // `stream` does not wait for the legacy stream
  launch_and_wait(x);
  EXPECT_TRUE(all_equal(read_back(), 2));
  ASSERT_OK(cuGraphExecDestroy(x));
  ASSERT_OK(cuGraphDestroy(g));
}

TEST_F(Graph, SettersOfEveryNodeKindAndTheirExecutableForms) {
  CUDAMUX_KNOWN_DIFFERENCE("hip", kFakeHipRunsNoKernels);
  CUgraph g = nullptr;
  ASSERT_OK(cuGraphCreate(&g, 0));
  Args a{buf, 2, kN, {}};
  CUDA_KERNEL_NODE_PARAMS p2 = kernel_params(add, a);
  CUDA_KERNEL_NODE_PARAMS_v1 p1{};
  std::memcpy(&p1, &p2, sizeof p1);
  CUgraphNode set, k, copy, host, rec, wait, child;
  const CUDA_MEMSET_NODE_PARAMS m = memset_params(buf, 1);
  ASSERT_OK(cuGraphAddMemsetNode(&set, g, nullptr, 0, &m, ctx));
  ASSERT_OK(cuGraphAddKernelNode(&k, g, &set, 1, &p1));  // the CUDA 10 form
  std::vector<int> out1(kN, 0), out2(kN, 0);
  const CUDA_MEMCPY3D c1 = dtoh_params(out1.data(), buf, kN * sizeof(int));
  ASSERT_OK(cuGraphAddMemcpyNode(&copy, g, &k, 1, &c1, ctx));
  std::atomic<int> first{0}, second{0};
  const CUDA_HOST_NODE_PARAMS h1{&conformance::count_call, &first};
  ASSERT_OK(cuGraphAddHostNode(&host, g, &copy, 1, &h1));
  CUevent e1 = nullptr, e2 = nullptr;
  ASSERT_OK(cuEventCreate(&e1, CU_EVENT_DISABLE_TIMING));
  ASSERT_OK(cuEventCreate(&e2, CU_EVENT_DISABLE_TIMING));
  ASSERT_OK(cuGraphAddEventRecordNode(&rec, g, &host, 1, e1));
  ASSERT_OK(cuGraphAddEventWaitNode(&wait, g, &rec, 1, e1));
  CUgraph sub = nullptr;
  ASSERT_OK(cuGraphCreate(&sub, 0));
  CUgraphNode sub_empty;
  ASSERT_OK(cuGraphAddEmptyNode(&sub_empty, sub, nullptr, 0));
  ASSERT_OK(cuGraphAddChildGraphNode(&child, g, &wait, 1, sub));

  // Graph-level setters, read back.
  a.v = 3;
  p2 = kernel_params(add, a);
  std::memcpy(&p1, &p2, sizeof p1);
  ASSERT_OK(cuGraphKernelNodeSetParams(k, &p1));
  CUDA_KERNEL_NODE_PARAMS kb{};
  ASSERT_OK(cuGraphKernelNodeGetParams_v2(k, &kb));
  EXPECT_EQ(3, *static_cast<int*>(kb.kernelParams[1]));
  CUDA_MEMCPY3D cb{};
  ASSERT_OK(cuGraphMemcpyNodeGetParams(copy, &cb));
  EXPECT_EQ(out1.data(), cb.dstHost);
  const CUDA_MEMCPY3D c2 = dtoh_params(out2.data(), buf, kN * sizeof(int));
  ASSERT_OK(cuGraphMemcpyNodeSetParams(copy, &c2));
  ASSERT_OK(cuGraphMemcpyNodeGetParams(copy, &cb));
  EXPECT_EQ(out2.data(), cb.dstHost);
  const CUDA_HOST_NODE_PARAMS h2{&conformance::count_call, &second};
  ASSERT_OK(cuGraphHostNodeSetParams(host, &h2));
  ASSERT_OK(cuGraphEventRecordNodeSetEvent(rec, e2));
  ASSERT_OK(cuGraphEventWaitNodeSetEvent(wait, e2));
  CUevent eb = nullptr;
  ASSERT_OK(cuGraphEventWaitNodeGetEvent(wait, &eb));
  EXPECT_EQ(e2, eb);
  CUgraphNodeParams gp{};
  gp.type = CU_GRAPH_NODE_TYPE_MEMSET;
  gp.memset.dst = buf;
  gp.memset.value = 5;
  gp.memset.elementSize = 4;
  gp.memset.width = kN;
  gp.memset.height = 1;
  gp.memset.ctx = ctx;
  ASSERT_OK(cuGraphNodeSetParams(set, &gp));

  CUgraphExec x = nullptr;
  CUDA_GRAPH_INSTANTIATE_PARAMS ip{};
  ASSERT_OK(cuGraphInstantiateWithParams_ptsz(&x, g, &ip));
  ASSERT_OK(cuGraphUpload_ptsz(x, stream));
  launch_and_wait(x);
  EXPECT_TRUE(all_equal(out2, 5 + 3)) << out2[0];
  EXPECT_EQ(1, second.load());
  EXPECT_EQ(0, first.load());
  ASSERT_OK(cuEventQuery(e2));

  // The executable graph's setters.
  const CUDA_MEMSET_NODE_PARAMS m7 = memset_params(buf, 7);
  ASSERT_OK(cuGraphExecMemsetNodeSetParams(x, set, &m7, ctx));
  a.v = 10;
  p2 = kernel_params(mul, a);
  std::memcpy(&p1, &p2, sizeof p1);
  ASSERT_OK(cuGraphExecKernelNodeSetParams(x, k, &p1));
  ASSERT_OK(cuGraphExecMemcpyNodeSetParams(x, copy, &c1, ctx));
  ASSERT_OK(cuGraphExecHostNodeSetParams(x, host, &h1));
  ASSERT_OK(cuGraphExecEventRecordNodeSetEvent(x, rec, e1));
  ASSERT_OK(cuGraphExecEventWaitNodeSetEvent(x, wait, e1));
  ASSERT_OK(cuGraphExecChildGraphNodeSetParams(x, child, sub));
  launch_and_wait(x);
  EXPECT_TRUE(all_equal(out1, 70)) << out1[0];
  EXPECT_EQ(1, first.load());
  ASSERT_OK(cuEventQuery(e1));
  // A child graph of another topology is refused.
  CUgraphNode sub_more;
  ASSERT_OK(cuGraphAddEmptyNode(&sub_more, sub, &sub_empty, 1));
  EXPECT_CU(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE,
            cuGraphExecChildGraphNodeSetParams(x, child, sub));

  // The CUDA 11 instantiate form.
  CUgraphExec y = nullptr;
  ASSERT_OK(cuGraphInstantiate_v2(&y, g, nullptr, nullptr, 0));
  ASSERT_OK(cuGraphExecDestroy(y));
  ASSERT_OK(cuGraphExecDestroy(x));
  ASSERT_OK(cuGraphDestroy(sub));
  ASSERT_OK(cuGraphDestroy(g));
  ASSERT_OK(cuEventDestroy_v2(e1));
  ASSERT_OK(cuEventDestroy_v2(e2));
}

TEST_F(Graph, CaptureEntryPointsOfEveryFlavour) {
  // The CUDA 10 form (global mode) and the per-thread default stream forms.
  CUgraph g = nullptr;
  ASSERT_OK(cuStreamBeginCapture(stream));
  ASSERT_OK(cuMemsetD32Async(buf, 1, kN, stream));
  ASSERT_OK(cuStreamEndCapture(stream, &g));
  ASSERT_OK(cuGraphDestroy(g));

  ASSERT_OK(cuStreamBeginCapture_ptsz(nullptr));
  ASSERT_OK(cuMemsetD32Async_ptsz(buf, 1, kN, nullptr));
  CUstreamCaptureStatus status{};
  ASSERT_OK(cuStreamIsCapturing_ptsz(nullptr, &status));
  EXPECT_EQ(CU_STREAM_CAPTURE_STATUS_ACTIVE, status);
  ASSERT_OK(cuStreamEndCapture_ptsz(nullptr, &g));
  size_t n = 0;
  ASSERT_OK(cuGraphGetNodes(g, nullptr, &n));
  EXPECT_EQ(1u, n);
  ASSERT_OK(cuGraphDestroy(g));

  ASSERT_OK(cuStreamBeginCapture_v2_ptsz(nullptr, CU_STREAM_CAPTURE_MODE_RELAXED));
  ASSERT_OK(cuMemsetD32Async_ptsz(buf, 1, kN, nullptr));
  const CUgraphNode* deps = nullptr;
  ASSERT_OK(cuStreamGetCaptureInfo_v2_ptsz(nullptr, &status, nullptr, nullptr, &deps, &n));
  ASSERT_EQ(1u, n);
  CUgraphNode first = deps[0];
  ASSERT_OK(cuMemsetD32Async_ptsz(buf, 2, kN, nullptr));
  // Both memsets become dependencies of what follows.
  ASSERT_OK(cuStreamUpdateCaptureDependencies_ptsz(nullptr, &first, 1,
                                                   CU_STREAM_ADD_CAPTURE_DEPENDENCIES));
  ASSERT_OK(cuStreamGetCaptureInfo_v2_ptsz(nullptr, &status, nullptr, nullptr, &deps, &n));
  EXPECT_EQ(2u, n);
  // `stream` is not the one capturing.
  EXPECT_CU(CUDA_ERROR_ILLEGAL_STATE,
            cuStreamUpdateCaptureDependencies_v2(stream, &first, nullptr, 1,
                                                 CU_STREAM_SET_CAPTURE_DEPENDENCIES));
  ASSERT_OK(cuStreamEndCapture_ptsz(nullptr, &g));

  // Capture into the graph just made, per-thread form, after its last memset.
  ASSERT_OK(cuStreamBeginCaptureToGraph_ptsz(nullptr, g, &first, nullptr, 1,
                                             CU_STREAM_CAPTURE_MODE_GLOBAL));
  ASSERT_OK(cuStreamUpdateCaptureDependencies_v2_ptsz(nullptr, &first, nullptr, 1,
                                                      CU_STREAM_SET_CAPTURE_DEPENDENCIES));
  ASSERT_OK(cuMemsetD32Async_ptsz(buf, 3, kN, nullptr));
  CUgraph same = nullptr;
  ASSERT_OK(cuStreamEndCapture_ptsz(nullptr, &same));
  EXPECT_EQ(g, same);
  ASSERT_OK(cuGraphGetNodes(g, nullptr, &n));
  EXPECT_EQ(3u, n);
  ASSERT_OK(cuGraphDestroy(g));
}

TEST_F(Graph, LaunchesOfOneExecutableGraphAreOrderedAcrossStreams) {
  CUgraph g = nullptr;
  ASSERT_OK(cuGraphCreate(&g, 0));
  CUgraphNode set;
  const CUDA_MEMSET_NODE_PARAMS m = memset_params(buf, 4);
  ASSERT_OK(cuGraphAddMemsetNode(&set, g, nullptr, 0, &m, ctx));
  CUgraphExec x = nullptr;
  ASSERT_OK(cuGraphInstantiateWithFlags(&x, g, 0));
  CUstream other = nullptr;
  ASSERT_OK(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING));
  Gate gate;
  ASSERT_OK(cuLaunchHostFunc(stream, &Gate::block, &gate));
  ASSERT_OK(cuGraphLaunch(x, stream));  // held behind the gate
  ASSERT_OK(cuGraphLaunch(x, other));   // must wait for the launch on `stream`
  ASSERT_TRUE(conformance::eventually([&] { return gate.entered.load(); }));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_CU(CUDA_ERROR_NOT_READY, cuStreamQuery(other));
  gate.release();
  ASSERT_OK(cuStreamSynchronize(other));
  // `other` waited for the launch on `stream` (the queue may take a moment to report idle).
  EXPECT_TRUE(conformance::eventually([&] { return cuStreamQuery(stream) == CUDA_SUCCESS; }));
  EXPECT_FALSE(gate.timed_out.load());
  ASSERT_OK(cuGraphExecDestroy(x));
  ASSERT_OK(cuGraphDestroy(g));
  ASSERT_OK(cuStreamDestroy_v2(other));
}

TEST_F(Graph, MemoryNodesAndCapturedStreamOrderedAllocations) {
  CUgraph g = nullptr;
  ASSERT_OK(cuGraphCreate(&g, 0));
  CUDA_MEM_ALLOC_NODE_PARAMS a{};
  a.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  a.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  a.poolProps.location.id = dev;
  a.bytesize = kN * sizeof(int);
  CUgraphNode alloc, set, copy, release;
  ASSERT_OK(cuGraphAddMemAllocNode(&alloc, g, nullptr, 0, &a));
  ASSERT_NE(0u, a.dptr);
  const CUDA_MEMSET_NODE_PARAMS m = memset_params(a.dptr, 7);
  ASSERT_OK(cuGraphAddMemsetNode(&set, g, &alloc, 1, &m, ctx));
  std::vector<int> host(kN, 0);
  const CUDA_MEMCPY3D c = dtoh_params(host.data(), a.dptr, kN * sizeof(int));
  ASSERT_OK(cuGraphAddMemcpyNode(&copy, g, &set, 1, &c, ctx));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuGraphAddMemFreeNode(&release, g, &copy, 1, buf));
  ASSERT_OK(cuGraphAddMemFreeNode(&release, g, &copy, 1, a.dptr));
  CUDA_MEM_ALLOC_NODE_PARAMS back{};
  ASSERT_OK(cuGraphMemAllocNodeGetParams(alloc, &back));
  EXPECT_EQ(a.dptr, back.dptr);
  EXPECT_EQ(a.bytesize, back.bytesize);
  CUdeviceptr freed = 0;
  ASSERT_OK(cuGraphMemFreeNodeGetParams(release, &freed));
  EXPECT_EQ(a.dptr, freed);
  CUDA_MEM_ALLOC_NODE_PARAMS zero = a;
  zero.bytesize = 0;
  CUgraphNode bad = nullptr;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuGraphAddMemAllocNode(&bad, g, nullptr, 0, &zero));

  CUgraphExec x = nullptr;
  ASSERT_OK(cuGraphInstantiateWithFlags(&x, g, 0));
  launch_and_wait(x);
  EXPECT_TRUE(all_equal(host, 7)) << host[0];
  cuuint64_t high = 0;
  ASSERT_OK(cuDeviceGetGraphMemAttribute(dev, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &high));
  EXPECT_GE(high, a.bytesize);
  cuuint64_t one = 1, zero_value = 0;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
            cuDeviceSetGraphMemAttribute(dev, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &one));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
            cuDeviceSetGraphMemAttribute(dev, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &zero_value));
  ASSERT_OK(cuDeviceSetGraphMemAttribute(dev, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &zero_value));
  ASSERT_OK(cuGraphExecDestroy(x));
  ASSERT_OK(cuGraphDestroy(g));
  ASSERT_OK(cuDeviceGraphMemTrim(dev));

  // cuMemAllocAsync / cuMemFreeAsync in a capture become memory nodes.
  ASSERT_OK(cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CUdeviceptr p = 0;
  ASSERT_OK(cuMemAllocAsync(&p, kN * sizeof(int), stream));
  ASSERT_NE(0u, p);
  ASSERT_OK(cuMemsetD32Async(p, 5, kN, stream));
  std::fill(host.begin(), host.end(), 0);
  ASSERT_OK(cuMemcpyDtoHAsync_v2(host.data(), p, kN * sizeof(int), stream));
  ASSERT_OK(cuMemFreeAsync(p, stream));
  ASSERT_OK(cuStreamEndCapture(stream, &g));
  size_t n = 0;
  ASSERT_OK(cuGraphGetNodes(g, nullptr, &n));
  ASSERT_EQ(4u, n);
  std::vector<CUgraphNode> nodes(n);
  ASSERT_OK(cuGraphGetNodes(g, nodes.data(), &n));
  CUgraphNodeType type{};
  ASSERT_OK(cuGraphNodeGetType(nodes.front(), &type));
  EXPECT_EQ(CU_GRAPH_NODE_TYPE_MEM_ALLOC, type);
  ASSERT_OK(cuGraphNodeGetType(nodes.back(), &type));
  EXPECT_EQ(CU_GRAPH_NODE_TYPE_MEM_FREE, type);
  ASSERT_OK(cuGraphInstantiateWithFlags(&x, g, 0));
  launch_and_wait(x);
  EXPECT_TRUE(all_equal(host, 5)) << host[0];
  ASSERT_OK(cuGraphExecDestroy(x));
  ASSERT_OK(cuGraphDestroy(g));
}

TEST_F(Graph, AForkedStreamJoinedBackMayBeDestroyedDuringTheCapture) {
  // NVIDIA's graphMemoryNodes sample does this.
  CUstream side = nullptr;
  ASSERT_OK(cuStreamCreate(&side, CU_STREAM_NON_BLOCKING));
  CUevent fork = nullptr, back = nullptr;
  ASSERT_OK(cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING));
  ASSERT_OK(cuEventCreate(&back, CU_EVENT_DISABLE_TIMING));
  ASSERT_OK(cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
  ASSERT_OK(cuEventRecord(fork, stream));
  ASSERT_OK(cuStreamWaitEvent(side, fork, 0));
  ASSERT_OK(cuMemsetD32Async(buf, 3, kN, side));
  ASSERT_OK(cuEventRecord(back, side));
  ASSERT_OK(cuStreamWaitEvent(stream, back, 0));
  ASSERT_OK(cuStreamDestroy_v2(side));
  CUgraph g = nullptr;
  ASSERT_OK(cuStreamEndCapture(stream, &g));
  size_t n = 0;
  ASSERT_OK(cuGraphGetNodes(g, nullptr, &n));
  EXPECT_EQ(1u, n);
  CUgraphExec x = nullptr;
  ASSERT_OK(cuGraphInstantiateWithFlags(&x, g, 0));
  launch_and_wait(x);
  EXPECT_TRUE(all_equal(read_back(), 3));
  ASSERT_OK(cuGraphExecDestroy(x));
  ASSERT_OK(cuGraphDestroy(g));
  ASSERT_OK(cuEventDestroy_v2(fork));
  ASSERT_OK(cuEventDestroy_v2(back));
}

TEST_F(Graph, GraphMemoryFreedOutsideTheGraphComesBackAtTheNextLaunch) {
  // NVIDIA's graphMemoryNodes sample: the allocation leaves the graph (no free node), the
  // program frees it, and launches the graph again.
  CUgraph g = nullptr;
  ASSERT_OK(cuGraphCreate(&g, 0));
  CUDA_MEM_ALLOC_NODE_PARAMS a{};
  a.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  a.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  a.poolProps.location.id = dev;
  a.bytesize = kN * sizeof(int);
  CUgraphNode alloc, set;
  ASSERT_OK(cuGraphAddMemAllocNode(&alloc, g, nullptr, 0, &a));
  const CUDA_MEMSET_NODE_PARAMS m = memset_params(a.dptr, 6);
  ASSERT_OK(cuGraphAddMemsetNode(&set, g, &alloc, 1, &m, ctx));
  CUgraphExec x = nullptr;
  ASSERT_OK(cuGraphInstantiateWithFlags(&x, g, 0));
  for (int round = 0; round < 2; ++round) {
    launch_and_wait(x);
    std::vector<int> host(kN, 0);
    ASSERT_OK(cuMemcpyDtoH_v2(host.data(), a.dptr, kN * sizeof(int)));
    EXPECT_TRUE(all_equal(host, 6)) << round;
    if (round == 0) {
      ASSERT_OK(cuMemFree_v2(a.dptr));
    } else {
      ASSERT_OK(cuMemFreeAsync(a.dptr, stream));
      ASSERT_OK(cuStreamSynchronize(stream));
    }
  }
  ASSERT_OK(cuGraphExecDestroy(x));
  ASSERT_OK(cuGraphDestroy(g));
}

}  // namespace
