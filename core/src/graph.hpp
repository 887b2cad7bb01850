// CUDA graphs, executable graphs and stream capture (issue 16): the core's model, shared by
// graph.cpp (building and inspecting graphs), graph_exec.cpp (instantiation, launch, update)
// and capture.cpp (stream capture). Every backend runs graphs through it: an executable
// graph replays its nodes in a topological order onto the launch stream, as one submission,
// through the same backend queue operations the stream API uses.
#pragma once

#include <cuda.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core.hpp"
#include "stream_memop.hpp"

namespace cudamux::core {

struct Graph;
struct GraphNode;
struct GraphExec;
struct UserObject;
struct CaptureSession;

// Every graph object is guarded by this one lock: CUDA graphs are not internally synchronised
// for the program's own calls, but stream capture from several threads (cross-stream capture
// through events) adds nodes to one graph concurrently.
std::mutex& graph_mutex() noexcept;

struct Edge {
  GraphNode* from = nullptr;
  CUgraphEdgeData data{};
};

// A kernel node's launch, with its arguments packed once (as a launch packs them).
struct KernelParams {
  CUfunction func = nullptr;  // as the program gave it (a CUkernel cast to CUfunction too)
  CUkernel kern = nullptr;
  Context* ctx = nullptr;
  Function* function = nullptr;  // resolved in ctx
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  unsigned shared = 0;
  std::vector<std::byte> args;  // packed per Function::params()
  std::vector<void*> arg_ptrs;  // what GetParams reports as kernelParams: into `args`
  // cuGraphKernelNodeSetAttribute values; launch-relevant ones also live above/below.
  std::map<int, CUlaunchAttributeValue> attributes;
  bool cooperative = false;
  unsigned cluster[3] = {1, 1, 1};
  int priority = 0;
};

struct CopyParams {
  Context* ctx = nullptr;
  CUDA_MEMCPY3D params{};
  backend::CopyDesc desc;
  bool empty = false;  // a zero-sized copy: nothing to run
};

struct FillParams {
  Context* ctx = nullptr;
  CUDA_MEMSET_NODE_PARAMS params{};
  backend::FillDesc desc;
};

// A batch memory operation node (issue 17): the operations as given (GetParams hands out
// `ops`) and as validated.
struct MemOpParams {
  Context* ctx = nullptr;
  std::vector<CUstreamBatchMemOpParams> ops;
  std::vector<MemOp> prepared;
  unsigned flags = 0;
};

struct GraphAllocation;  // graph_memory.cpp
struct AllocParams {
  CUDA_MEM_ALLOC_NODE_PARAMS params{};
  std::vector<CUmemAccessDesc> access;
  // The memory, shared by the node, its clones and executable graphs; freed with the last.
  std::shared_ptr<GraphAllocation> memory;
};

// A conditional handle (cuGraphConditionalHandleCreate). The handle's value, as the program
// sees it, is the address of `value`: device code (cudaGraphSetConditional on the mock, the C
// entry cudamux_graph_set_conditional of libcudamux-device.so) stores the condition there and
// the conditional node reads it when it runs. Shared by the graph that created it and the
// executable graphs made from it (CUDA allows one executable graph of such a graph at a time,
// so one value per handle is CUDA's model).
struct CondHandle {
  std::atomic<unsigned> value{0};
  Graph* graph = nullptr;  // the graph it was created for; null once that graph is destroyed
  Context* ctx = nullptr;
  unsigned default_value = 0;
  unsigned flags = 0;  // CU_GRAPH_COND_ASSIGN_DEFAULT
  // A device that sets handles itself (the cuda backend: NVIDIA's kernels call NVIDIA's
  // cudaGraphSetConditional) made this handle in `scope`; `value` is then unused.
  std::uint64_t native_id = 0;
  std::shared_ptr<backend::NativeCondScope> scope;
  [[nodiscard]] CUgraphConditionalHandle id() const noexcept {
    return scope ? static_cast<CUgraphConditionalHandle>(native_id)
                 : reinterpret_cast<CUgraphConditionalHandle>(&value);
  }
};

// A conditional node: its handle and the body graphs it owns.
struct CondParams {
  std::shared_ptr<CondHandle> handle;
  CUgraphConditionalNodeType type = CU_GRAPH_COND_TYPE_IF;
  Context* ctx = nullptr;
  std::vector<std::unique_ptr<Graph>> bodies;
  std::vector<CUgraph> body_handles;  // what phGraph_out points to (lives with the node)
};

struct GraphNode {
  CUgraphNode handle = nullptr;
  Graph* graph = nullptr;
  CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
  std::uint64_t order = 0;  // creation order within its graph (ExecUpdate pairs by it)
  std::vector<Edge> in;     // dependencies, in the order they were added
  std::vector<GraphNode*> out;
  GraphNode* clone_source = nullptr;  // the node this one was cloned from

  KernelParams kernel;
  CopyParams copy;
  FillParams fill;
  CUDA_HOST_NODE_PARAMS host{};
  CUevent event = nullptr;       // event record / wait
  std::unique_ptr<Graph> child;  // child graph node (owned)
  AllocParams alloc;
  CUdeviceptr free_ptr = 0;  // mem free node
  MemOpParams memop;         // batch memory operation node
  CondParams cond;           // conditional node
};

struct Graph {
  CUgraph handle = nullptr;
  std::vector<std::unique_ptr<GraphNode>> nodes;  // creation order
  std::uint64_t next_order = 0;
  GraphNode* parent = nullptr;  // the child graph node owning this graph, if any
  Graph* clone_source = nullptr;
  std::map<UserObject*, unsigned> user_objects;           // references the graph holds
  CaptureSession* capturing = nullptr;                    // a capture currently adding to it
  std::vector<std::shared_ptr<CondHandle>> cond_handles;  // created for this graph
  // The device graph the handles of this graph and of its bodies belong to (root graphs
  // only; backends whose device sets handles itself).
  std::shared_ptr<backend::NativeCondScope> native_scope;
  // Executable graphs alive that were instantiated from it (CUDA allows one at a time for a
  // graph with conditional nodes); shared with them, as the graph may go first.
  std::shared_ptr<std::atomic<int>> instances = std::make_shared<std::atomic<int>>(0);
};

struct ExecNode;
struct GraphExec;
// A conditional node of an executable graph. Owned through a shared_ptr: a launch in flight
// keeps it (and its bodies) alive after cuGraphExecDestroy, as CUDA frees in-flight graphs
// asynchronously.
struct CondExec {
  std::shared_ptr<CondHandle> handle;
  CUgraphConditionalNodeType type = CU_GRAPH_COND_TYPE_IF;
  Context* ctx = nullptr;
  std::vector<std::unique_ptr<GraphExec>> bodies;
  // The queue the chosen body runs on, while the launch's own queue waits in the node (made
  // at the first launch, in the launch's context).
  std::unique_ptr<backend::Queue> queue;
};

// One node of an executable graph, prepared to run.
struct ExecNode {
  CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
  std::uintptr_t origin = 0;  // handle of the node it was instantiated from
  std::uint64_t order = 0;
  std::vector<std::size_t> deps;  // indices of its dependencies in GraphExec::nodes
  bool enabled = true;
  KernelParams kernel;
  CopyParams copy;
  FillParams fill;
  CUDA_HOST_NODE_PARAMS host{};
  CUevent event = nullptr;
  std::unique_ptr<GraphExec> child;
  AllocParams alloc;
  CUdeviceptr free_ptr = 0;
  MemOpParams memop;
  std::shared_ptr<CondExec> cond;  // conditional node
};

struct GraphExec {
  CUgraphExec handle = nullptr;
  unsigned long long flags = 0;
  std::vector<ExecNode> nodes;                                // creation order of the source graph
  std::vector<std::size_t> run_order;                         // a topological order of `nodes`
  std::unordered_map<std::uintptr_t, std::size_t> by_origin;  // node handle -> index
  std::mutex mutex;                                           // launches against per-node updates
  std::map<UserObject*, unsigned> user_objects;  // references it holds (from its graph)
  // Conditional handles of the source graph with CU_GRAPH_COND_ASSIGN_DEFAULT: set to their
  // default at the start of each run of this graph (a launch, or a body's run).
  std::vector<std::shared_ptr<CondHandle>> reset_handles;
  std::shared_ptr<std::atomic<int>> instances;  // the source graph's count (top level only)
  bool has_conditional = false;                 // anywhere inside
  // The device's own executable graph of these nodes (the cuda backend), made at the first
  // launch and dropped by every change of the nodes (guarded by `mutex`).
  std::unique_ptr<backend::NativeGraph> native;
  Context* native_ctx = nullptr;
  bool native_tried = false;
  void drop_native() {
    native.reset();
    native_tried = false;
  }
};

struct UserObject {
  CUuserObject handle = nullptr;
  void* ptr = nullptr;
  CUhostFn destroy = nullptr;
  std::atomic<unsigned> refs{0};
};

// --- capture (capture.cpp) ---

struct CaptureSession {
  std::uint64_t id = 0;
  Graph* graph = nullptr;
  bool owns_graph = true;  // false for cuStreamBeginCaptureToGraph
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  std::uintptr_t thread = 0;  // the thread that began it (thread-local mode)
  Stream* origin = nullptr;
  CUresult invalidated = CUDA_SUCCESS;  // the error that invalidated it, once one did
  std::vector<Stream*> streams;         // every stream taking part, origin first
};

// A stream's part in a capture (Stream::capture); guarded by graph_mutex().
struct StreamCapture {
  CaptureSession* session = nullptr;
  std::vector<Edge> deps;  // the stream's current capture dependencies
  // What cuStreamGetCaptureInfo hands out; valid until the next call on the stream.
  std::vector<CUgraphNode> deps_out;
  std::vector<CUgraphEdgeData> edges_out;
};

// Whether `g` is (inside) the body of a conditional node.
inline bool in_conditional_body(const Graph& g) noexcept {
  for (const Graph* at = &g; at->parent; at = at->parent->graph)
    if (at->parent->type == CU_GRAPH_NODE_TYPE_CONDITIONAL) return true;
  return false;
}
// The node kinds a conditional body may hold (recursively, through child graphs).
inline bool body_node_allowed(CUgraphNodeType t) noexcept {
  return t == CU_GRAPH_NODE_TYPE_KERNEL || t == CU_GRAPH_NODE_TYPE_EMPTY ||
         t == CU_GRAPH_NODE_TYPE_GRAPH || t == CU_GRAPH_NODE_TYPE_MEMSET ||
         t == CU_GRAPH_NODE_TYPE_MEMCPY || t == CU_GRAPH_NODE_TYPE_CONDITIONAL;
}

// Handle tables of graph objects.
struct GraphHandles {
  HandleTable<Graph> graphs{0xd0};
  HandleTable<GraphNode> nodes{0xd1};
  HandleTable<GraphExec> execs{0xd2};
  HandleTable<UserObject> user_objects{0xd3};
};
GraphHandles& graph_handles() noexcept;

inline Graph* graph_of(CUgraph h) noexcept {
  return graph_handles().graphs.find(reinterpret_cast<std::uintptr_t>(h));
}
inline GraphNode* node_of(CUgraphNode h) noexcept {
  return graph_handles().nodes.find(reinterpret_cast<std::uintptr_t>(h));
}
inline GraphExec* exec_of(CUgraphExec h) noexcept {
  return graph_handles().execs.find(reinterpret_cast<std::uintptr_t>(h));
}

// --- shared between graph.cpp, graph_exec.cpp and capture.cpp (graph_mutex() held) ---

std::unique_ptr<Graph> new_graph();  // registered, with a handle
void destroy_graph(std::unique_ptr<Graph> g) noexcept;
// A new node of `type` in `g` after `deps` (validated by the caller); the payload is filled in
// by the caller.
GraphNode& add_node(Graph& g, CUgraphNodeType type, const std::vector<Edge>& deps);
// A deep copy of `src` (nodes, edges, child graphs), its nodes' clone_source set.
std::unique_ptr<Graph> clone_graph(const Graph& src);

// Drops `count` references; the last one runs the destructor and frees the object.
void release_user_object_refs(UserObject& o, unsigned count) noexcept;
// Points KernelParams::arg_ptrs into its own `args` (after every copy or move).
void refresh_arg_ptrs(KernelParams& k);
void copy_kernel_params(const KernelParams& from, KernelParams& to);

// Validation and preparation of node payloads (graph.cpp), shared by the Add / Set / ExecSet
// calls and by capture. Each logs the reason for a failure under `fn`.
CUresult prepare_kernel(const CUDA_KERNEL_NODE_PARAMS& p, KernelParams& out, const char* fn);
CUresult prepare_copy(const CUDA_MEMCPY3D& p, CUcontext ctx, CopyParams& out, const char* fn);
CUresult prepare_fill(const CUDA_MEMSET_NODE_PARAMS& p, CUcontext ctx, FillParams& out,
                      const char* fn);
CUresult prepare_memop_node(const CUDA_BATCH_MEM_OP_NODE_PARAMS& p, MemOpParams& out,
                            const char* fn);

// --- graph memory nodes (graph_memory.cpp) ---

// Validates a memory allocation node's parameters and allocates its memory (its address is
// fixed for the node's life, as CUDA's is); writes p.dptr.
CUresult prepare_alloc(CUDA_MEM_ALLOC_NODE_PARAMS& p, AllocParams& out, const char* fn);
// Whether `p` is the base of memory a graph node allocated. A free of it outside the graph
// (cuMemFree, cuMemFreeAsync) only ends the program's use: the nodes keep the memory, which
// the graph's next launch allocates again at the same address in CUDA.
[[nodiscard]] bool is_graph_memory(CUdeviceptr p) noexcept;
// A free node may free only memory a graph allocated.
CUresult prepare_free(CUdeviceptr p, const char* fn);
CUresult capture_mem_alloc(Stream& s, std::size_t bytes, CUdeviceptr& out, const char* fn);
CUresult capture_mem_free(Stream& s, CUdeviceptr p, const char* fn);
CUresult allocate_graph_memory(Context& ctx, std::size_t bytes, CUdeviceptr& out,
                               unsigned long long& buffer_id, const char* fn);
void free_graph_memory(CUdeviceptr ptr, unsigned long long buffer_id) noexcept;

// --- launch.cpp / memory.cpp: the pieces graphs reuse ---

struct LaunchShape {
  unsigned grid[3];
  unsigned block[3];
  unsigned shared;
  bool cooperative;
  unsigned cluster[3];
};
// Validates a launch of `f` as cuLaunchKernel does and packs its arguments into `args`.
CUresult check_and_pack_launch(Function& f, Context& ctx, const LaunchShape& shape, void** params,
                               void** extra, std::vector<std::byte>& args, const char* fn);
// The backend descriptor of a copy / fill, validated as the stream calls validate them.
CUresult describe_copy_3d(const CUDA_MEMCPY3D& p, backend::CopyDesc& out, bool& empty,
                          const char* fn);
CUresult describe_fill(CUdeviceptr dst, std::size_t pitch, std::uint32_t value, unsigned elem,
                       std::size_t width, std::size_t height, backend::FillDesc& out,
                       const char* fn);

// --- capture hooks, called by the submission paths when Stream::capture is set or the
// stream is the legacy stream of a context with capturing blocking streams ---

[[nodiscard]] inline bool capture_applies(const Stream& s) noexcept {
  return s.capture.load(std::memory_order_acquire) != nullptr ||
         (s.kind == StreamKind::legacy &&
          s.ctx->blocking_captures.load(std::memory_order_acquire) > 0);
}
CUresult capture_kernel(Stream& s, Function& f, const LaunchShape& shape, const void* args,
                        std::size_t args_size, const char* fn);
CUresult capture_copy(Stream& s, const backend::CopyDesc& d, bool synchronous, const char* fn);
CUresult capture_fill(Stream& s, const backend::FillDesc& d, bool synchronous, const char* fn);
CUresult capture_host(Stream& s, CUhostFn fn, void* user, const char* api);
CUresult capture_event_record(Stream& s, Event& e, const char* fn);
CUresult capture_event_wait(Stream& s, Event& e, unsigned flags, const char* fn);
// A call CUDA forbids on a capturing stream (synchronize, query, ...): invalidates the capture
// and returns CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED (or _IMPLICIT for the legacy stream).
CUresult capture_forbidden(Stream& s, const char* fn);
// The event was recorded again outside any capture: it no longer stands for graph nodes.
void forget_event_capture(Event& e) noexcept;
// CUDA's "potentially unsafe API calls" (cuMemAlloc, cuCtxSynchronize, ...) while a capture
// is active that this thread's capture mode does not allow: invalidates the captures concerned
// and returns CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; CUDA_SUCCESS otherwise (fast when no
// capture is active).
CUresult check_unsafe_call(const char* fn) noexcept;
extern std::atomic<int> g_active_captures;
inline CUresult unsafe_call(const char* fn) noexcept {
  return g_active_captures.load(std::memory_order_acquire) == 0 ? CUDA_SUCCESS
                                                                : check_unsafe_call(fn);
}
// A stream being destroyed leaves its capture (ending it when it is the origin).
void abandon_stream_capture(Stream& s) noexcept;
// Ends every capture in `ctx` (the context is going away).
void abandon_captures(Context& ctx) noexcept;

// --- executable graphs (graph_exec.cpp) ---

CUresult build_exec(const Graph& g, unsigned long long flags, std::unique_ptr<GraphExec>& out,
                    const GraphNode*& error_node, const char* fn);
CUresult launch_exec(GraphExec& x, Stream& s, const char* fn);
void forget_exec(GraphExec& x) noexcept;
// Drops the launch-order events of executable graphs last launched in `ctx` (it is going away).
void forget_exec_orders(Context& ctx) noexcept;
void copy_exec_payload(const GraphNode& n, ExecNode& e);
CUgraphExecUpdateResult update_allowed(const ExecNode& e, const GraphNode& n);
CUgraphExecUpdateResult check_update(const GraphExec& x, const Graph& g, const GraphNode*& err,
                                     const GraphNode*& err_from);
void apply_update(GraphExec& x, const Graph& g);

// Runs an executable graph's nodes on a backend queue (graph_exec.cpp); `recorded` collects
// the events whose record was submitted.
// `capturing`: the queue records into a native graph, so event waits are always recorded (the
// event's state is judged at each launch).
backend::Status run_exec(GraphExec& x, backend::Queue& q, std::vector<Event*>& recorded,
                         bool capturing = false);

}  // namespace cudamux::core
