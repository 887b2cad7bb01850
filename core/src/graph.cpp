// CUDA graphs (issue 16): graph objects, nodes of every kind, edges with their data, clones,
// DOT output and user objects. Instantiation and launch live in graph_exec.cpp, stream
// capture in capture.cpp.
#include "graph.hpp"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "cudamux/driver_impl.hpp"

namespace cudamux::core {

std::mutex& graph_mutex() noexcept {
  static std::mutex m;
  return m;
}

GraphHandles& graph_handles() noexcept {
  static GraphHandles* h = new GraphHandles;  // never destroyed: handles outlive static teardown
  return *h;
}

void release_user_object_refs(UserObject& o, unsigned count) noexcept {
  if (o.refs.fetch_sub(count, std::memory_order_acq_rel) != count) return;
  if (graph_handles().user_objects.erase(reinterpret_cast<std::uintptr_t>(o.handle))) {
    if (o.destroy) o.destroy(o.ptr);
    delete &o;
  }
}

namespace {

void erase_node_handle(GraphNode& n) noexcept {
  graph_handles().nodes.erase(reinterpret_cast<std::uintptr_t>(n.handle));
}

}  // namespace

void refresh_arg_ptrs(KernelParams& k) {
  k.arg_ptrs.clear();
  if (!k.function) return;
  for (const auto& p : k.function->impl->params()) k.arg_ptrs.push_back(k.args.data() + p.offset);
}

void copy_kernel_params(const KernelParams& from, KernelParams& to) {
  to = from;
  refresh_arg_ptrs(to);
}

std::unique_ptr<Graph> new_graph() {
  auto g = std::make_unique<Graph>();
  const auto h = graph_handles().graphs.insert(g.get());
  if (!h) return nullptr;
  g->handle = reinterpret_cast<CUgraph>(h);
  return g;
}

void destroy_graph(std::unique_ptr<Graph> g) noexcept {
  if (!g) return;
  for (auto& n : g->nodes) {
    if (n->child) destroy_graph(std::move(n->child));
    for (auto& b : n->cond.bodies) destroy_graph(std::move(b));
    erase_node_handle(*n);
  }
  for (auto& h : g->cond_handles) h->graph = nullptr;
  for (auto& [obj, count] : g->user_objects) release_user_object_refs(*obj, count);
  graph_handles().graphs.erase(reinterpret_cast<std::uintptr_t>(g->handle));
}

GraphNode& add_node(Graph& g, CUgraphNodeType type, const std::vector<Edge>& deps) {
  auto n = std::make_unique<GraphNode>();
  n->graph = &g;
  n->type = type;
  n->order = g.next_order++;
  const auto h = graph_handles().nodes.insert(n.get());
  n->handle = reinterpret_cast<CUgraphNode>(h);
  n->in = deps;
  for (const Edge& e : deps) e.from->out.push_back(n.get());
  g.nodes.push_back(std::move(n));
  return *g.nodes.back();
}

namespace {

void copy_payload(const GraphNode& from, GraphNode& to) {
  copy_kernel_params(from.kernel, to.kernel);
  to.copy = from.copy;
  to.fill = from.fill;
  to.host = from.host;
  to.event = from.event;
  to.alloc = from.alloc;
  to.alloc.params.accessDescs = to.alloc.access.empty() ? nullptr : to.alloc.access.data();
  to.free_ptr = from.free_ptr;
  to.memop = from.memop;
  if (from.child) {
    to.child = clone_graph(*from.child);
    if (to.child) to.child->parent = &to;
  }
}

}  // namespace

std::unique_ptr<Graph> clone_graph(const Graph& src) {
  auto g = new_graph();
  if (!g) return nullptr;
  g->clone_source = const_cast<Graph*>(&src);
  std::unordered_map<const GraphNode*, GraphNode*> map;
  for (const auto& n : src.nodes) {
    std::vector<Edge> deps;
    for (const Edge& e : n->in) deps.push_back({map.at(e.from), e.data});
    GraphNode& c = add_node(*g, n->type, deps);
    c.order = n->order;
    c.clone_source = n.get();
    copy_payload(*n, c);
    map[n.get()] = &c;
  }
  g->next_order = src.next_order;
  for (auto& [obj, count] : src.user_objects) {
    obj->refs.fetch_add(count, std::memory_order_relaxed);
    g->user_objects[obj] += count;
  }
  return g;
}

// --- payload preparation, shared by Add/Set/ExecSet and capture ---

CUresult prepare_kernel(const CUDA_KERNEL_NODE_PARAMS& p, KernelParams& out, const char* fn) {
  if (!p.func && !p.kern) return reject(CUDA_ERROR_INVALID_VALUE, fn, "no function or kernel");
  Context* ctx = nullptr;
  if (p.ctx) {
    ctx = context_of(p.ctx);
    if (!ctx) return reject(CUDA_ERROR_INVALID_CONTEXT, fn, "invalid context");
  } else if (CUresult r = current_context(ctx)) {
    return r;
  }
  const CUfunction handle = p.func ? p.func : reinterpret_cast<CUfunction>(p.kern);
  Function* f = nullptr;
  if (CUresult r = function_for_launch(handle, ctx, f)) return r;
  ctx = f->module->ctx;
  KernelParams k;
  k.func = p.func;
  k.kern = p.kern;
  k.ctx = ctx;
  k.function = f;
  k.grid[0] = p.gridDimX;
  k.grid[1] = p.gridDimY;
  k.grid[2] = p.gridDimZ;
  k.block[0] = p.blockDimX;
  k.block[1] = p.blockDimY;
  k.block[2] = p.blockDimZ;
  k.shared = p.sharedMemBytes;
  // Launch attributes set on the node before stay with it.
  k.attributes = out.attributes;
  k.cooperative = out.cooperative;
  k.priority = out.priority;
  std::copy(std::begin(out.cluster), std::end(out.cluster), std::begin(k.cluster));
  const LaunchShape shape{{k.grid[0], k.grid[1], k.grid[2]},
                          {k.block[0], k.block[1], k.block[2]},
                          k.shared,
                          k.cooperative,
                          {k.cluster[0], k.cluster[1], k.cluster[2]}};
  if (CUresult r = check_and_pack_launch(*f, *ctx, shape, p.kernelParams, p.extra, k.args, fn))
    return r;
  refresh_arg_ptrs(k);
  out = std::move(k);
  refresh_arg_ptrs(out);
  return CUDA_SUCCESS;
}

namespace {
CUresult context_or_current(CUcontext h, Context*& out, const char* fn) {
  if (h) {
    out = context_of(h);
    return out ? CUDA_SUCCESS : reject(CUDA_ERROR_INVALID_CONTEXT, fn, "invalid context");
  }
  return current_context(out);
}
}  // namespace

CUresult prepare_copy(const CUDA_MEMCPY3D& p, CUcontext ctx, CopyParams& out, const char* fn) {
  CopyParams c;
  if (CUresult r = context_or_current(ctx, c.ctx, fn)) return r;
  c.params = p;
  if (CUresult r = describe_copy_3d(p, c.desc, c.empty, fn)) return r;
  if (c.empty) return reject(CUDA_ERROR_INVALID_VALUE, fn, "zero-sized copy");
  out = c;
  return CUDA_SUCCESS;
}

CUresult prepare_fill(const CUDA_MEMSET_NODE_PARAMS& p, CUcontext ctx, FillParams& out,
                      const char* fn) {
  if (p.elementSize != 1 && p.elementSize != 2 && p.elementSize != 4)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "element size must be 1, 2 or 4");
  FillParams f;
  if (CUresult r = context_or_current(ctx, f.ctx, fn)) return r;
  f.params = p;
  if (CUresult r =
          describe_fill(p.dst, p.pitch, p.value, p.elementSize, p.width, p.height, f.desc, fn))
    return r;
  out = f;
  return CUDA_SUCCESS;
}

CUresult prepare_memop_node(const CUDA_BATCH_MEM_OP_NODE_PARAMS& p, MemOpParams& out,
                            const char* fn) {
  MemOpParams m;
  if (CUresult r = context_or_current(p.ctx, m.ctx, fn)) return r;
  if (p.count == 0) return reject(CUDA_ERROR_INVALID_VALUE, fn, "no operations");
  // Nodes take the _v2 API's operations (barriers included).
  if (CUresult r = prepare_memops(*m.ctx, p.count, p.paramArray, p.flags, true, m.prepared, fn))
    return r;
  m.ops.assign(p.paramArray, p.paramArray + p.count);
  m.flags = p.flags;
  out = std::move(m);
  return CUDA_SUCCESS;
}

}  // namespace cudamux::core

namespace cudamux::impl {
using core::body_node_allowed;
using core::Edge;
using core::Graph;
using core::GraphNode;
using core::in_conditional_body;
using core::reject;

namespace {

// The graph add_typed_node is adding to (graph_mutex() held), for checks of the payload.
const Graph* g_adding_to = nullptr;

// The node's graph must be `g` (when given) and alive.
GraphNode* node_in(CUgraphNode h, const Graph* g) {
  GraphNode* n = core::node_of(h);
  if (!n || (g && n->graph != g)) return nullptr;
  return n;
}

bool valid_edge_data(const CUgraphEdgeData& d, const GraphNode& from, const GraphNode& to) {
  for (unsigned char r : d.reserved)
    if (r) return false;
  if (d.to_port != 0) return false;
  if (d.type == CU_GRAPH_DEPENDENCY_TYPE_DEFAULT) {
    if (d.from_port == CU_GRAPH_KERNEL_NODE_PORT_DEFAULT) return true;
  } else if (d.type != CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC) {
    return false;
  }
  // Programmatic edges and the kernel ports join kernel nodes only.
  return from.type == CU_GRAPH_NODE_TYPE_KERNEL && to.type == CU_GRAPH_NODE_TYPE_KERNEL &&
         d.from_port <= CU_GRAPH_KERNEL_NODE_PORT_LAUNCH_ORDER;
}

// Resolves a dependency list (nodes of `g`, no duplicates) with optional edge data.
CUresult dependencies(Graph& g, const CUgraphNode* deps, const CUgraphEdgeData* data,
                      std::size_t count, std::vector<Edge>& out, const char* fn) {
  if (count && !deps) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null dependency array");
  out.clear();
  for (std::size_t i = 0; i < count; ++i) {
    GraphNode* n = node_in(deps[i], &g);
    if (!n) return reject(CUDA_ERROR_INVALID_VALUE, fn, "dependency is not a node of the graph");
    for (const Edge& e : out)
      if (e.from == n) return reject(CUDA_ERROR_INVALID_VALUE, fn, "duplicate dependency");
    out.push_back({n, data ? data[i] : CUgraphEdgeData{}});
  }
  return CUDA_SUCCESS;
}

template <class Fill>
CUresult add_typed_node(CUgraphNode* out, CUgraph hGraph, const CUgraphNode* deps,
                        const CUgraphEdgeData* data, std::size_t count, CUgraphNodeType type,
                        const char* fn, Fill&& fill) {
  if (!out) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  std::lock_guard lock(core::graph_mutex());
  Graph* g = core::graph_of(hGraph);
  if (!g) return reject(CUDA_ERROR_INVALID_VALUE, fn, "invalid graph");
  std::vector<Edge> edges;
  if (CUresult r = dependencies(*g, deps, data, count, edges, fn)) return r;
  GraphNode probe;
  probe.type = type;
  if (data) {
    for (const Edge& e : edges)
      if (!valid_edge_data(e.data, *e.from, probe))
        return reject(CUDA_ERROR_INVALID_VALUE, fn, "invalid edge data");
  }
  if (in_conditional_body(*g) && !body_node_allowed(type))
    return reject(CUDA_ERROR_INVALID_VALUE, fn,
                  "a conditional node's body may hold only kernel, empty, child graph, memset, "
                  "memcpy and conditional nodes");
  g_adding_to = g;
  const CUresult filled = fill(probe);
  g_adding_to = nullptr;
  if (filled) return filled;
  GraphNode& n = core::add_node(*g, type, edges);
  n.kernel = std::move(probe.kernel);
  core::refresh_arg_ptrs(n.kernel);
  n.copy = probe.copy;
  n.fill = probe.fill;
  n.host = probe.host;
  n.event = probe.event;
  n.child = std::move(probe.child);
  if (n.child) n.child->parent = &n;
  n.alloc = probe.alloc;
  n.free_ptr = probe.free_ptr;
  n.memop = std::move(probe.memop);
  n.cond = std::move(probe.cond);
  for (auto& b : n.cond.bodies) b->parent = &n;
  *out = n.handle;
  return CUDA_SUCCESS;
}

CUDA_KERNEL_NODE_PARAMS from_v1(const CUDA_KERNEL_NODE_PARAMS_v1& p) {
  CUDA_KERNEL_NODE_PARAMS v{};
  v.func = p.func;
  v.gridDimX = p.gridDimX;
  v.gridDimY = p.gridDimY;
  v.gridDimZ = p.gridDimZ;
  v.blockDimX = p.blockDimX;
  v.blockDimY = p.blockDimY;
  v.blockDimZ = p.blockDimZ;
  v.sharedMemBytes = p.sharedMemBytes;
  v.kernelParams = p.kernelParams;
  v.extra = p.extra;
  return v;
}

void kernel_params_out(const core::KernelParams& k, CUDA_KERNEL_NODE_PARAMS& p) {
  p = CUDA_KERNEL_NODE_PARAMS{};
  p.func = k.func;
  p.kern = k.kern;
  p.ctx = k.ctx ? k.ctx->handle : nullptr;
  p.gridDimX = k.grid[0];
  p.gridDimY = k.grid[1];
  p.gridDimZ = k.grid[2];
  p.blockDimX = k.block[0];
  p.blockDimY = k.block[1];
  p.blockDimZ = k.block[2];
  p.sharedMemBytes = k.shared;
  p.kernelParams = k.arg_ptrs.empty() ? nullptr : const_cast<void**>(k.arg_ptrs.data());
  p.extra = nullptr;
}

CUresult check_event(CUevent e, const char* fn) {
  if (!core::event_of(e)) return reject(CUDA_ERROR_INVALID_HANDLE, fn, "invalid event");
  return CUDA_SUCCESS;
}

// Child graphs may hold neither memory nodes nor conditional nodes of their own (CUDA's rule).
bool child_allowed(const Graph& g) {
  for (const auto& n : g.nodes) {
    if (n->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC || n->type == CU_GRAPH_NODE_TYPE_MEM_FREE ||
        n->type == CU_GRAPH_NODE_TYPE_CONDITIONAL)
      return false;
    if (n->child && !child_allowed(*n->child)) return false;
  }
  return true;
}

bool has_conditional(const Graph& g) {
  for (const auto& n : g.nodes)
    if (n->type == CU_GRAPH_NODE_TYPE_CONDITIONAL || (n->child && has_conditional(*n->child)))
      return true;
  return false;
}

bool body_allowed(const Graph& g) {
  for (const auto& n : g.nodes) {
    if (!body_node_allowed(n->type)) return false;
    if (n->child && !body_allowed(*n->child)) return false;
  }
  return true;
}

CUresult fill_child(GraphNode& probe, CUgraph child, bool move, const char* fn) {
  Graph* c = core::graph_of(child);
  if (!c) return reject(CUDA_ERROR_INVALID_VALUE, fn, "invalid child graph");
  if (g_adding_to && in_conditional_body(*g_adding_to) && !body_allowed(*c))
    return reject(CUDA_ERROR_INVALID_VALUE, fn,
                  "a conditional node's body may hold only kernel, empty, child graph, memset, "
                  "memcpy and conditional nodes");
  if (!child_allowed(*c))
    return reject(CUDA_ERROR_NOT_SUPPORTED, fn,
                  "child graphs cannot hold memory nodes or conditional nodes");
  if (move) {
    if (c->parent) return reject(CUDA_ERROR_INVALID_VALUE, fn, "graph is already a child graph");
    probe.child.reset(c);  // the node owns it from now on; its handle stays valid
    return CUDA_SUCCESS;
  }
  probe.child = core::clone_graph(*c);
  if (!probe.child) return CUDA_ERROR_OUT_OF_MEMORY;
  return CUDA_SUCCESS;
}

CUresult not_supported_node(const char* fn, const char* what) {
  core::Core::get().log().warn("{}: {} nodes are not supported: returning CUDA_ERROR_NOT_SUPPORTED",
                               fn, what);
  return CUDA_ERROR_NOT_SUPPORTED;
}

// Fills a node from the generic CUgraphNodeParams (cuGraphAddNode).
CUresult fill_generic(GraphNode& probe, CUgraphNodeParams& p, const char* fn) {
  switch (p.type) {
    case CU_GRAPH_NODE_TYPE_KERNEL: {
      CUDA_KERNEL_NODE_PARAMS k{};
      std::memcpy(&k, &p.kernel, sizeof k);
      return core::prepare_kernel(k, probe.kernel, fn);
    }
    case CU_GRAPH_NODE_TYPE_MEMCPY:
      if (p.memcpy.flags != 0)
        return reject(CUDA_ERROR_INVALID_VALUE, fn, "memcpy flags must be 0");
      return core::prepare_copy(p.memcpy.copyParams, p.memcpy.copyCtx, probe.copy, fn);
    case CU_GRAPH_NODE_TYPE_MEMSET: {
      const CUDA_MEMSET_NODE_PARAMS m{p.memset.dst,         p.memset.pitch, p.memset.value,
                                      p.memset.elementSize, p.memset.width, p.memset.height};
      return core::prepare_fill(m, p.memset.ctx, probe.fill, fn);
    }
    case CU_GRAPH_NODE_TYPE_HOST:
      if (!p.host.fn) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null host function");
      probe.host = {p.host.fn, p.host.userData};
      return CUDA_SUCCESS;
    case CU_GRAPH_NODE_TYPE_GRAPH:
      if (p.graph.ownership != CU_GRAPH_CHILD_GRAPH_OWNERSHIP_CLONE &&
          p.graph.ownership != CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE)
        return reject(CUDA_ERROR_INVALID_VALUE, fn, "unknown child graph ownership");
      return fill_child(probe, p.graph.graph,
                        p.graph.ownership == CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE, fn);
    case CU_GRAPH_NODE_TYPE_EMPTY:
      return CUDA_SUCCESS;
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
      probe.event = p.eventWait.event;
      return check_event(probe.event, fn);
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
      probe.event = p.eventRecord.event;
      return check_event(probe.event, fn);
    case CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL:
    case CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT:
      return not_supported_node(fn, "external semaphore");
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC: {
      CUDA_MEM_ALLOC_NODE_PARAMS a{};
      std::memcpy(&a, &p.alloc, sizeof a);
      if (CUresult r = core::prepare_alloc(a, probe.alloc, fn)) return r;
      p.alloc.dptr = a.dptr;
      return CUDA_SUCCESS;
    }
    case CU_GRAPH_NODE_TYPE_MEM_FREE:
      if (CUresult r = core::prepare_free(p.free.dptr, fn)) return r;
      probe.free_ptr = p.free.dptr;
      return CUDA_SUCCESS;
    case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP: {
      const CUDA_BATCH_MEM_OP_NODE_PARAMS m{p.memOp.ctx, p.memOp.count, p.memOp.paramArray,
                                            p.memOp.flags};
      return core::prepare_memop_node(m, probe.memop, fn);
    }
    case CU_GRAPH_NODE_TYPE_CONDITIONAL:
      // Added by cuGraphAddNode (fill_conditional); their parameters never change.
      return reject(CUDA_ERROR_INVALID_VALUE, fn, "a conditional node's parameters cannot change");
    default:
      return reject(CUDA_ERROR_INVALID_VALUE, fn, "unknown node type");
  }
}

// The conditional handle `id` when it was created for `g` or a graph enclosing it.
std::shared_ptr<core::CondHandle> find_handle(const Graph& g, CUgraphConditionalHandle id) {
  for (const Graph* at = &g; at; at = at->parent ? at->parent->graph : nullptr)
    for (const auto& h : at->cond_handles)
      if (h->id() == id) return h;
  return nullptr;
}

// Whether a conditional node of `g` (its child graphs and bodies included) uses `h`.
bool handle_in_use(const Graph& g, const core::CondHandle* h) {
  for (const auto& n : g.nodes) {
    if (n->type == CU_GRAPH_NODE_TYPE_CONDITIONAL) {
      if (n->cond.handle.get() == h) return true;
      for (const auto& b : n->cond.bodies)
        if (b && handle_in_use(*b, h)) return true;
    }
    if (n->child && handle_in_use(*n->child, h)) return true;
  }
  return false;
}

// A conditional node of `g` (cuGraphAddNode): its handle checked, its bodies created.
CUresult fill_conditional(GraphNode& probe, const Graph& g, const CUDA_CONDITIONAL_NODE_PARAMS& p,
                          const char* fn) {
  core::Context* ctx = nullptr;
  if (CUresult r = core::context_or_current(p.ctx, ctx, fn)) return r;
  auto h = find_handle(g, p.handle);
  if (!h)
    return reject(CUDA_ERROR_INVALID_VALUE, fn,
                  "the conditional handle was not created for this graph or one enclosing it");
  if (h->ctx != ctx)
    return reject(CUDA_ERROR_INVALID_VALUE, fn,
                  "the node's context is not the conditional handle's context");
  // One node per handle: NVIDIA's driver 580 refuses a second node with the same handle
  // (measured on an H100, 2026-11-26).
  if (h->graph && handle_in_use(*h->graph, h.get()))
    return reject(CUDA_ERROR_INVALID_VALUE, fn,
                  "the conditional handle already belongs to another conditional node");
  switch (p.type) {
    case CU_GRAPH_COND_TYPE_IF:
      if (p.size != 1 && p.size != 2)
        return reject(CUDA_ERROR_INVALID_VALUE, fn, "an IF node has 1 or 2 bodies");
      break;
    case CU_GRAPH_COND_TYPE_WHILE:
      if (p.size != 1) return reject(CUDA_ERROR_INVALID_VALUE, fn, "a WHILE node has 1 body");
      break;
    case CU_GRAPH_COND_TYPE_SWITCH:
      if (p.size == 0)
        return reject(CUDA_ERROR_INVALID_VALUE, fn, "a SWITCH node has at least 1 body");
      break;
    default:
      return reject(CUDA_ERROR_INVALID_VALUE, fn, "unknown conditional node type");
  }
  core::CondParams& c = probe.cond;
  c.handle = std::move(h);
  c.type = p.type;
  c.ctx = ctx;
  for (unsigned i = 0; i < p.size; ++i) {
    auto body = core::new_graph();
    if (!body) {
      for (auto& b : c.bodies) core::destroy_graph(std::move(b));
      c.bodies.clear();
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    c.body_handles.push_back(body->handle);
    c.bodies.push_back(std::move(body));
  }
  return CUDA_SUCCESS;
}

const char* cond_type_name(CUgraphConditionalNodeType t) {
  switch (t) {
    case CU_GRAPH_COND_TYPE_IF:
      return "IF";
    case CU_GRAPH_COND_TYPE_WHILE:
      return "WHILE";
    case CU_GRAPH_COND_TYPE_SWITCH:
      return "SWITCH";
    default:
      return "?";
  }
}

template <class T>
void list_out(const std::vector<T>& items, T* out, std::size_t* count) {
  if (out) {
    const std::size_t n = std::min(*count, items.size());
    std::copy_n(items.begin(), n, out);
    for (std::size_t i = n; i < *count; ++i) out[i] = T{};
  }
  if (!out || *count > items.size()) *count = items.size();
}

bool zero_edge(const CUgraphEdgeData& d) {
  static const CUgraphEdgeData zero{};
  return std::memcmp(&d, &zero, sizeof d) == 0;
}

// Nodes and optional edge data of a list, with CUDA's CUDA_ERROR_LOSSY_QUERY when edge data
// would be dropped.
CUresult nodes_out(const std::vector<CUgraphNode>& nodes, const std::vector<CUgraphEdgeData>& data,
                   CUgraphNode* out, CUgraphEdgeData* data_out, std::size_t* count,
                   const char* fn) {
  if (!count) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null count");
  if (out && !data_out) {
    for (const auto& d : data)
      if (!zero_edge(d))
        return reject(CUDA_ERROR_LOSSY_QUERY, fn, "edge data would be lost: use the _v2 call");
  }
  if (out && data_out) {
    const std::size_t n = std::min(*count, data.size());
    std::copy_n(data.begin(), n, data_out);
    for (std::size_t i = n; i < *count; ++i) data_out[i] = CUgraphEdgeData{};
  }
  list_out(nodes, out, count);
  return CUDA_SUCCESS;
}

CUresult get_dependencies(CUgraphNode hNode, CUgraphNode* deps, CUgraphEdgeData* data,
                          std::size_t* count, const char* fn) {
  std::lock_guard lock(core::graph_mutex());
  GraphNode* n = core::node_of(hNode);
  if (!n) return reject(CUDA_ERROR_INVALID_VALUE, fn, "invalid node");
  std::vector<CUgraphNode> nodes;
  std::vector<CUgraphEdgeData> edges;
  for (const Edge& e : n->in) {
    nodes.push_back(e.from->handle);
    edges.push_back(e.data);
  }
  return nodes_out(nodes, edges, deps, data, count, fn);
}

CUresult get_dependents(CUgraphNode hNode, CUgraphNode* deps, CUgraphEdgeData* data,
                        std::size_t* count, const char* fn) {
  std::lock_guard lock(core::graph_mutex());
  GraphNode* n = core::node_of(hNode);
  if (!n) return reject(CUDA_ERROR_INVALID_VALUE, fn, "invalid node");
  std::vector<CUgraphNode> nodes;
  std::vector<CUgraphEdgeData> edges;
  for (GraphNode* d : n->out) {
    nodes.push_back(d->handle);
    for (const Edge& e : d->in)
      if (e.from == n) edges.push_back(e.data);
  }
  return nodes_out(nodes, edges, deps, data, count, fn);
}

CUresult get_edges(CUgraph hGraph, CUgraphNode* from, CUgraphNode* to, CUgraphEdgeData* data,
                   std::size_t* count, const char* fn) {
  if (!count) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null count");
  if (static_cast<bool>(from) != static_cast<bool>(to))
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "from and to must both be given or both null");
  std::lock_guard lock(core::graph_mutex());
  Graph* g = core::graph_of(hGraph);
  if (!g) return reject(CUDA_ERROR_INVALID_VALUE, fn, "invalid graph");
  std::vector<CUgraphNode> froms, tos;
  std::vector<CUgraphEdgeData> edges;
  for (const auto& n : g->nodes) {
    for (const Edge& e : n->in) {
      froms.push_back(e.from->handle);
      tos.push_back(n->handle);
      edges.push_back(e.data);
    }
  }
  std::size_t c = *count;
  if (CUresult r = nodes_out(froms, edges, from, data, &c, fn)) return r;
  list_out(tos, to, count);
  return CUDA_SUCCESS;
}

CUresult change_dependencies(CUgraph hGraph, const CUgraphNode* from, const CUgraphNode* to,
                             const CUgraphEdgeData* data, std::size_t count, bool add,
                             const char* fn) {
  if (count && (!from || !to)) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null node array");
  std::lock_guard lock(core::graph_mutex());
  Graph* g = core::graph_of(hGraph);
  if (!g) return reject(CUDA_ERROR_INVALID_VALUE, fn, "invalid graph");
  // Validate everything first: the call changes nothing when any edge is bad.
  for (std::size_t i = 0; i < count; ++i) {
    GraphNode* a = node_in(from[i], g);
    GraphNode* b = node_in(to[i], g);
    if (!a || !b) return reject(CUDA_ERROR_INVALID_VALUE, fn, "node is not in the graph");
    if (a == b) return reject(CUDA_ERROR_INVALID_VALUE, fn, "a node cannot depend on itself");
    const bool exists = std::any_of(b->in.begin(), b->in.end(), [&](const Edge& e) {
      return e.from == a && (!data || std::memcmp(&e.data, &data[i], sizeof e.data) == 0);
    });
    if (add && exists) return reject(CUDA_ERROR_INVALID_VALUE, fn, "edge already exists");
    if (!add && !exists) return reject(CUDA_ERROR_INVALID_VALUE, fn, "no such edge");
    if (add && data && !valid_edge_data(data[i], *a, *b))
      return reject(CUDA_ERROR_INVALID_VALUE, fn, "invalid edge data");
  }
  for (std::size_t i = 0; i < count; ++i) {
    GraphNode* a = core::node_of(from[i]);
    GraphNode* b = core::node_of(to[i]);
    if (add) {
      b->in.push_back({a, data ? data[i] : CUgraphEdgeData{}});
      a->out.push_back(b);
    } else {
      std::erase_if(b->in, [&](const Edge& e) { return e.from == a; });
      std::erase(a->out, b);
    }
  }
  return CUDA_SUCCESS;
}

// A node of `type` for Get/Set calls.
CUresult typed_node(CUgraphNode h, CUgraphNodeType type, GraphNode*& out, const char* fn) {
  out = core::node_of(h);
  if (!out) return reject(CUDA_ERROR_INVALID_VALUE, fn, "invalid node");
  if (out->type != type) return reject(CUDA_ERROR_INVALID_VALUE, fn, "node of another type");
  return CUDA_SUCCESS;
}

const char* type_name(CUgraphNodeType t) {
  switch (t) {
    case CU_GRAPH_NODE_TYPE_KERNEL:
      return "KERNEL";
    case CU_GRAPH_NODE_TYPE_MEMCPY:
      return "MEMCPY";
    case CU_GRAPH_NODE_TYPE_MEMSET:
      return "MEMSET";
    case CU_GRAPH_NODE_TYPE_HOST:
      return "HOST";
    case CU_GRAPH_NODE_TYPE_GRAPH:
      return "GRAPH";
    case CU_GRAPH_NODE_TYPE_EMPTY:
      return "EMPTY";
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
      return "WAIT_EVENT";
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
      return "EVENT_RECORD";
    case CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL:
      return "EXT_SEMAS_SIGNAL";
    case CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT:
      return "EXT_SEMAS_WAIT";
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
      return "MEM_ALLOC";
    case CU_GRAPH_NODE_TYPE_MEM_FREE:
      return "MEM_FREE";
    case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP:
      return "BATCH_MEM_OP";
    case CU_GRAPH_NODE_TYPE_CONDITIONAL:
      return "CONDITIONAL";
    default:
      return "UNKNOWN";
  }
}

void dot_graph(const Graph& g, const std::string& prefix, unsigned flags, std::string& out) {
  for (const auto& n : g.nodes) {
    const std::string id = prefix + "node_" + std::to_string(n->order);
    std::string label = std::string(type_name(n->type)) + "\\n" + std::to_string(n->order);
    if (n->type == CU_GRAPH_NODE_TYPE_KERNEL && n->kernel.function) {
      label += "\\n" + n->kernel.function->name;
      if (flags & CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE) {
        label += fmt::format("\\n<<<({},{},{}),({},{},{}),{}>>>", n->kernel.grid[0],
                             n->kernel.grid[1], n->kernel.grid[2], n->kernel.block[0],
                             n->kernel.block[1], n->kernel.block[2], n->kernel.shared);
      }
    } else if (n->type == CU_GRAPH_NODE_TYPE_MEMCPY && (flags & CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE)) {
      label += fmt::format("\\n{} x {} x {} bytes", n->copy.params.WidthInBytes,
                           n->copy.params.Height, n->copy.params.Depth);
    } else if (n->type == CU_GRAPH_NODE_TYPE_MEMSET && (flags & CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE)) {
      label += fmt::format("\\nvalue {:#x} elem {} width {} height {}", n->fill.params.value,
                           n->fill.params.elementSize, n->fill.params.width, n->fill.params.height);
    }
    if (n->type == CU_GRAPH_NODE_TYPE_CONDITIONAL) {
      label += std::string("\\n") + cond_type_name(n->cond.type);
      if (flags &
          (CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE | CU_GRAPH_DEBUG_DOT_FLAGS_CONDITIONAL_NODE_PARAMS))
        label += fmt::format("\\nhandle {:#x} default {} flags {} size {}", n->cond.handle->id(),
                             n->cond.handle->default_value, n->cond.handle->flags,
                             n->cond.bodies.size());
    }
    if (n->child) {
      out += fmt::format("subgraph cluster_{} {{\nlabel=\"{}\";\n", id, label);
      dot_graph(*n->child, id + "_", flags, out);
      out += "}\n";
    }
    for (std::size_t b = 0; b < n->cond.bodies.size(); ++b) {
      const std::string body = id + "_body" + std::to_string(b);
      out += fmt::format("subgraph cluster_{} {{\nlabel=\"{} body {}\";\n", body, label, b);
      dot_graph(*n->cond.bodies[b], body + "_", flags, out);
      out += "}\n";
    }
    out += fmt::format("\"{}\" [shape=box, label=\"{}\"];\n", id, label);
    for (const Edge& e : n->in) {
      out += fmt::format("\"{}node_{}\" -> \"{}\"", prefix, e.from->order, id);
      if (e.data.type == CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC) out += " [style=dashed]";
      out += ";\n";
    }
  }
}

}  // namespace

// --- graphs ---

CUresult cuGraphCreate(CUgraph* phGraph, unsigned int flags) {
  if (!phGraph) return reject(CUDA_ERROR_INVALID_VALUE, "cuGraphCreate", "null out-pointer");
  if (flags != 0) return reject(CUDA_ERROR_INVALID_VALUE, "cuGraphCreate", "flags must be 0");
  std::lock_guard lock(core::graph_mutex());
  auto g = core::new_graph();
  if (!g) return CUDA_ERROR_OUT_OF_MEMORY;
  *phGraph = g.release()->handle;
  return CUDA_SUCCESS;
}

CUresult cuGraphDestroy(CUgraph hGraph) {
  std::lock_guard lock(core::graph_mutex());
  Graph* g = core::graph_of(hGraph);
  if (!g) return reject(CUDA_ERROR_INVALID_VALUE, "cuGraphDestroy", "invalid graph");
  if (g->parent)
    return reject(CUDA_ERROR_INVALID_VALUE, "cuGraphDestroy",
                  "a child graph is destroyed with its node");
  if (g->capturing)
    return reject(CUDA_ERROR_INVALID_VALUE, "cuGraphDestroy", "graph is being captured into");
  core::destroy_graph(std::unique_ptr<Graph>(g));
  return CUDA_SUCCESS;
}

CUresult cuGraphClone(CUgraph* phGraphClone, CUgraph originalGraph) {
  if (!phGraphClone) return reject(CUDA_ERROR_INVALID_VALUE, "cuGraphClone", "null out-pointer");
  std::lock_guard lock(core::graph_mutex());
  Graph* g = core::graph_of(originalGraph);
  if (!g) return reject(CUDA_ERROR_INVALID_VALUE, "cuGraphClone", "invalid graph");
  if (has_conditional(*g))
    return reject(CUDA_ERROR_NOT_SUPPORTED, "cuGraphClone",
                  "graphs with conditional nodes cannot be cloned");
  auto c = core::clone_graph(*g);
  if (!c) return CUDA_ERROR_OUT_OF_MEMORY;
  *phGraphClone = c.release()->handle;
  return CUDA_SUCCESS;
}

CUresult cuGraphNodeFindInClone(CUgraphNode* phNode, CUgraphNode hOriginalNode,
                                CUgraph hClonedGraph) {
  const char* fn = "cuGraphNodeFindInClone";
  if (!phNode) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  std::lock_guard lock(core::graph_mutex());
  Graph* g = core::graph_of(hClonedGraph);
  GraphNode* original = core::node_of(hOriginalNode);
  if (!g || !original) return reject(CUDA_ERROR_INVALID_VALUE, fn, "invalid graph or node");
  for (const auto& n : g->nodes) {
    if (n->clone_source == original) {
      *phNode = n->handle;
      return CUDA_SUCCESS;
    }
  }
  return reject(CUDA_ERROR_INVALID_VALUE, fn, "the node has no counterpart in the clone");
}

CUresult cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType* type) {
  if (!type) return reject(CUDA_ERROR_INVALID_VALUE, "cuGraphNodeGetType", "null out-pointer");
  std::lock_guard lock(core::graph_mutex());
  GraphNode* n = core::node_of(hNode);
  if (!n) return reject(CUDA_ERROR_INVALID_VALUE, "cuGraphNodeGetType", "invalid node");
  *type = n->type;
  return CUDA_SUCCESS;
}

CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode* nodes, size_t* numNodes) {
  if (!numNodes) return reject(CUDA_ERROR_INVALID_VALUE, "cuGraphGetNodes", "null count");
  std::lock_guard lock(core::graph_mutex());
  Graph* g = core::graph_of(hGraph);
  if (!g) return reject(CUDA_ERROR_INVALID_VALUE, "cuGraphGetNodes", "invalid graph");
  std::vector<CUgraphNode> all;
  for (const auto& n : g->nodes) all.push_back(n->handle);
  list_out(all, nodes, numNodes);
  return CUDA_SUCCESS;
}

CUresult cuGraphGetRootNodes(CUgraph hGraph, CUgraphNode* rootNodes, size_t* numRootNodes) {
  if (!numRootNodes) return reject(CUDA_ERROR_INVALID_VALUE, "cuGraphGetRootNodes", "null count");
  std::lock_guard lock(core::graph_mutex());
  Graph* g = core::graph_of(hGraph);
  if (!g) return reject(CUDA_ERROR_INVALID_VALUE, "cuGraphGetRootNodes", "invalid graph");
  std::vector<CUgraphNode> roots;
  for (const auto& n : g->nodes)
    if (n->in.empty()) roots.push_back(n->handle);
  list_out(roots, rootNodes, numRootNodes);
  return CUDA_SUCCESS;
}

CUresult cuGraphGetEdges(CUgraph hGraph, CUgraphNode* from, CUgraphNode* to, size_t* numEdges) {
  return get_edges(hGraph, from, to, nullptr, numEdges, "cuGraphGetEdges");
}
CUresult cuGraphGetEdges_v2(CUgraph hGraph, CUgraphNode* from, CUgraphNode* to,
                            CUgraphEdgeData* edgeData, size_t* numEdges) {
  return get_edges(hGraph, from, to, edgeData, numEdges, "cuGraphGetEdges_v2");
}
CUresult cuGraphNodeGetDependencies(CUgraphNode hNode, CUgraphNode* deps, size_t* n) {
  return get_dependencies(hNode, deps, nullptr, n, "cuGraphNodeGetDependencies");
}
CUresult cuGraphNodeGetDependencies_v2(CUgraphNode hNode, CUgraphNode* deps,
                                       CUgraphEdgeData* edgeData, size_t* n) {
  return get_dependencies(hNode, deps, edgeData, n, "cuGraphNodeGetDependencies_v2");
}
CUresult cuGraphNodeGetDependentNodes(CUgraphNode hNode, CUgraphNode* deps, size_t* n) {
  return get_dependents(hNode, deps, nullptr, n, "cuGraphNodeGetDependentNodes");
}
CUresult cuGraphNodeGetDependentNodes_v2(CUgraphNode hNode, CUgraphNode* deps,
                                         CUgraphEdgeData* edgeData, size_t* n) {
  return get_dependents(hNode, deps, edgeData, n, "cuGraphNodeGetDependentNodes_v2");
}
CUresult cuGraphAddDependencies(CUgraph g, const CUgraphNode* from, const CUgraphNode* to,
                                size_t n) {
  return change_dependencies(g, from, to, nullptr, n, true, "cuGraphAddDependencies");
}
CUresult cuGraphAddDependencies_v2(CUgraph g, const CUgraphNode* from, const CUgraphNode* to,
                                   const CUgraphEdgeData* edgeData, size_t n) {
  return change_dependencies(g, from, to, edgeData, n, true, "cuGraphAddDependencies_v2");
}
CUresult cuGraphRemoveDependencies(CUgraph g, const CUgraphNode* from, const CUgraphNode* to,
                                   size_t n) {
  return change_dependencies(g, from, to, nullptr, n, false, "cuGraphRemoveDependencies");
}
CUresult cuGraphRemoveDependencies_v2(CUgraph g, const CUgraphNode* from, const CUgraphNode* to,
                                      const CUgraphEdgeData* edgeData, size_t n) {
  return change_dependencies(g, from, to, edgeData, n, false, "cuGraphRemoveDependencies_v2");
}

CUresult cuGraphDestroyNode(CUgraphNode hNode) {
  std::lock_guard lock(core::graph_mutex());
  GraphNode* n = core::node_of(hNode);
  if (!n) return reject(CUDA_ERROR_INVALID_VALUE, "cuGraphDestroyNode", "invalid node");
  Graph& g = *n->graph;
  // A capture into the graph may hold the node as a dependency.
  if (g.capturing)
    return reject(CUDA_ERROR_INVALID_VALUE, "cuGraphDestroyNode",
                  "the node's graph is being captured into");
  for (const Edge& e : n->in) std::erase(e.from->out, n);
  for (GraphNode* d : n->out) std::erase_if(d->in, [&](const Edge& e) { return e.from == n; });
  if (n->child) core::destroy_graph(std::move(n->child));
  for (auto& b : n->cond.bodies) core::destroy_graph(std::move(b));
  core::graph_handles().nodes.erase(reinterpret_cast<std::uintptr_t>(n->handle));
  std::erase_if(g.nodes, [&](const std::unique_ptr<GraphNode>& p) { return p.get() == n; });
  return CUDA_SUCCESS;
}

// --- typed node creation ---

CUresult cuGraphAddKernelNode_v2(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t n,
                                 const CUDA_KERNEL_NODE_PARAMS* p) {
  const char* fn = "cuGraphAddKernelNode";
  if (!p) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null parameters");
  return add_typed_node(
      out, g, deps, nullptr, n, CU_GRAPH_NODE_TYPE_KERNEL, fn,
      [&](GraphNode& probe) { return core::prepare_kernel(*p, probe.kernel, fn); });
}
CUresult cuGraphAddKernelNode(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t n,
                              const CUDA_KERNEL_NODE_PARAMS_v1* p) {
  if (!p) return reject(CUDA_ERROR_INVALID_VALUE, "cuGraphAddKernelNode", "null parameters");
  const CUDA_KERNEL_NODE_PARAMS v2 = from_v1(*p);
  return impl::cuGraphAddKernelNode_v2(out, g, deps, n, &v2);
}

CUresult cuGraphAddMemcpyNode(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t n,
                              const CUDA_MEMCPY3D* p, CUcontext ctx) {
  const char* fn = "cuGraphAddMemcpyNode";
  if (!p) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null parameters");
  return add_typed_node(
      out, g, deps, nullptr, n, CU_GRAPH_NODE_TYPE_MEMCPY, fn,
      [&](GraphNode& probe) { return core::prepare_copy(*p, ctx, probe.copy, fn); });
}

CUresult cuGraphAddMemsetNode(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t n,
                              const CUDA_MEMSET_NODE_PARAMS* p, CUcontext ctx) {
  const char* fn = "cuGraphAddMemsetNode";
  if (!p) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null parameters");
  return add_typed_node(
      out, g, deps, nullptr, n, CU_GRAPH_NODE_TYPE_MEMSET, fn,
      [&](GraphNode& probe) { return core::prepare_fill(*p, ctx, probe.fill, fn); });
}

CUresult cuGraphAddHostNode(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t n,
                            const CUDA_HOST_NODE_PARAMS* p) {
  const char* fn = "cuGraphAddHostNode";
  if (!p || !p->fn) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null host function");
  return add_typed_node(out, g, deps, nullptr, n, CU_GRAPH_NODE_TYPE_HOST, fn,
                        [&](GraphNode& probe) {
                          probe.host = *p;
                          return CUDA_SUCCESS;
                        });
}

CUresult cuGraphAddChildGraphNode(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t n,
                                  CUgraph child) {
  const char* fn = "cuGraphAddChildGraphNode";
  return add_typed_node(out, g, deps, nullptr, n, CU_GRAPH_NODE_TYPE_GRAPH, fn,
                        [&](GraphNode& probe) { return fill_child(probe, child, false, fn); });
}

CUresult cuGraphAddEmptyNode(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t n) {
  return add_typed_node(out, g, deps, nullptr, n, CU_GRAPH_NODE_TYPE_EMPTY, "cuGraphAddEmptyNode",
                        [](GraphNode&) { return CUDA_SUCCESS; });
}

CUresult cuGraphAddEventRecordNode(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t n,
                                   CUevent event) {
  const char* fn = "cuGraphAddEventRecordNode";
  return add_typed_node(out, g, deps, nullptr, n, CU_GRAPH_NODE_TYPE_EVENT_RECORD, fn,
                        [&](GraphNode& probe) {
                          probe.event = event;
                          return check_event(event, fn);
                        });
}

CUresult cuGraphAddEventWaitNode(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t n,
                                 CUevent event) {
  const char* fn = "cuGraphAddEventWaitNode";
  return add_typed_node(out, g, deps, nullptr, n, CU_GRAPH_NODE_TYPE_WAIT_EVENT, fn,
                        [&](GraphNode& probe) {
                          probe.event = event;
                          return check_event(event, fn);
                        });
}

CUresult cuGraphAddNode_v2(CUgraphNode* out, CUgraph g, const CUgraphNode* deps,
                           const CUgraphEdgeData* data, size_t n, CUgraphNodeParams* p) {
  const char* fn = "cuGraphAddNode";
  if (!p) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null parameters");
  if (p->reserved0[0] || p->reserved0[1] || p->reserved0[2] || p->reserved2)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "reserved fields must be 0");
  if (p->type == CU_GRAPH_NODE_TYPE_CONDITIONAL) {
    const CUresult r = add_typed_node(out, g, deps, data, n, p->type, fn, [&](GraphNode& probe) {
      return fill_conditional(probe, *core::graph_of(g), p->conditional, fn);
    });
    if (r == CUDA_SUCCESS) {
      std::lock_guard lock(core::graph_mutex());
      GraphNode* node = core::node_of(*out);
      // The node's own array: valid for the node's life (CUDA's contract).
      p->conditional.phGraph_out = node ? node->cond.body_handles.data() : nullptr;
    }
    return r;
  }
  return add_typed_node(out, g, deps, data, n, p->type, fn,
                        [&](GraphNode& probe) { return fill_generic(probe, *p, fn); });
}
CUresult cuGraphAddNode(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t n,
                        CUgraphNodeParams* p) {
  return impl::cuGraphAddNode_v2(out, g, deps, nullptr, n, p);
}

// --- node parameters ---

CUresult cuGraphKernelNodeGetParams_v2(CUgraphNode h, CUDA_KERNEL_NODE_PARAMS* p) {
  const char* fn = "cuGraphKernelNodeGetParams";
  if (!p) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  std::lock_guard lock(core::graph_mutex());
  GraphNode* n = nullptr;
  if (CUresult r = typed_node(h, CU_GRAPH_NODE_TYPE_KERNEL, n, fn)) return r;
  kernel_params_out(n->kernel, *p);
  return CUDA_SUCCESS;
}
CUresult cuGraphKernelNodeGetParams(CUgraphNode h, CUDA_KERNEL_NODE_PARAMS_v1* p) {
  if (!p) return reject(CUDA_ERROR_INVALID_VALUE, "cuGraphKernelNodeGetParams", "null out-pointer");
  CUDA_KERNEL_NODE_PARAMS v2{};
  if (CUresult r = impl::cuGraphKernelNodeGetParams_v2(h, &v2)) return r;
  std::memcpy(p, &v2, sizeof *p);  // v1 is v2's prefix
  return CUDA_SUCCESS;
}
CUresult cuGraphKernelNodeSetParams_v2(CUgraphNode h, const CUDA_KERNEL_NODE_PARAMS* p) {
  const char* fn = "cuGraphKernelNodeSetParams";
  if (!p) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null parameters");
  std::lock_guard lock(core::graph_mutex());
  GraphNode* n = nullptr;
  if (CUresult r = typed_node(h, CU_GRAPH_NODE_TYPE_KERNEL, n, fn)) return r;
  return core::prepare_kernel(*p, n->kernel, fn);
}
CUresult cuGraphKernelNodeSetParams(CUgraphNode h, const CUDA_KERNEL_NODE_PARAMS_v1* p) {
  if (!p) return reject(CUDA_ERROR_INVALID_VALUE, "cuGraphKernelNodeSetParams", "null parameters");
  const CUDA_KERNEL_NODE_PARAMS v2 = from_v1(*p);
  return impl::cuGraphKernelNodeSetParams_v2(h, &v2);
}

CUresult cuGraphMemcpyNodeGetParams(CUgraphNode h, CUDA_MEMCPY3D* p) {
  const char* fn = "cuGraphMemcpyNodeGetParams";
  if (!p) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  std::lock_guard lock(core::graph_mutex());
  GraphNode* n = nullptr;
  if (CUresult r = typed_node(h, CU_GRAPH_NODE_TYPE_MEMCPY, n, fn)) return r;
  *p = n->copy.params;
  return CUDA_SUCCESS;
}
CUresult cuGraphMemcpyNodeSetParams(CUgraphNode h, const CUDA_MEMCPY3D* p) {
  const char* fn = "cuGraphMemcpyNodeSetParams";
  if (!p) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null parameters");
  std::lock_guard lock(core::graph_mutex());
  GraphNode* n = nullptr;
  if (CUresult r = typed_node(h, CU_GRAPH_NODE_TYPE_MEMCPY, n, fn)) return r;
  return core::prepare_copy(*p, n->copy.ctx->handle, n->copy, fn);
}

CUresult cuGraphMemsetNodeGetParams(CUgraphNode h, CUDA_MEMSET_NODE_PARAMS* p) {
  const char* fn = "cuGraphMemsetNodeGetParams";
  if (!p) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  std::lock_guard lock(core::graph_mutex());
  GraphNode* n = nullptr;
  if (CUresult r = typed_node(h, CU_GRAPH_NODE_TYPE_MEMSET, n, fn)) return r;
  *p = n->fill.params;
  return CUDA_SUCCESS;
}
CUresult cuGraphMemsetNodeSetParams(CUgraphNode h, const CUDA_MEMSET_NODE_PARAMS* p) {
  const char* fn = "cuGraphMemsetNodeSetParams";
  if (!p) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null parameters");
  std::lock_guard lock(core::graph_mutex());
  GraphNode* n = nullptr;
  if (CUresult r = typed_node(h, CU_GRAPH_NODE_TYPE_MEMSET, n, fn)) return r;
  return core::prepare_fill(*p, n->fill.ctx->handle, n->fill, fn);
}

CUresult cuGraphHostNodeGetParams(CUgraphNode h, CUDA_HOST_NODE_PARAMS* p) {
  const char* fn = "cuGraphHostNodeGetParams";
  if (!p) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  std::lock_guard lock(core::graph_mutex());
  GraphNode* n = nullptr;
  if (CUresult r = typed_node(h, CU_GRAPH_NODE_TYPE_HOST, n, fn)) return r;
  *p = n->host;
  return CUDA_SUCCESS;
}
CUresult cuGraphHostNodeSetParams(CUgraphNode h, const CUDA_HOST_NODE_PARAMS* p) {
  const char* fn = "cuGraphHostNodeSetParams";
  if (!p || !p->fn) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null host function");
  std::lock_guard lock(core::graph_mutex());
  GraphNode* n = nullptr;
  if (CUresult r = typed_node(h, CU_GRAPH_NODE_TYPE_HOST, n, fn)) return r;
  n->host = *p;
  return CUDA_SUCCESS;
}

CUresult cuGraphAddBatchMemOpNode(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t n,
                                  const CUDA_BATCH_MEM_OP_NODE_PARAMS* p) {
  const char* fn = "cuGraphAddBatchMemOpNode";
  if (!p) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null parameters");
  return add_typed_node(
      out, g, deps, nullptr, n, CU_GRAPH_NODE_TYPE_BATCH_MEM_OP, fn,
      [&](GraphNode& probe) { return core::prepare_memop_node(*p, probe.memop, fn); });
}

CUresult cuGraphBatchMemOpNodeGetParams(CUgraphNode h, CUDA_BATCH_MEM_OP_NODE_PARAMS* p) {
  const char* fn = "cuGraphBatchMemOpNodeGetParams";
  if (!p) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  std::lock_guard lock(core::graph_mutex());
  GraphNode* n = nullptr;
  if (CUresult r = typed_node(h, CU_GRAPH_NODE_TYPE_BATCH_MEM_OP, n, fn)) return r;
  // The array stays the node's, valid until its parameters change (as in CUDA).
  p->ctx = n->memop.ctx->handle;
  p->count = static_cast<unsigned>(n->memop.ops.size());
  p->paramArray = n->memop.ops.data();
  p->flags = n->memop.flags;
  return CUDA_SUCCESS;
}

CUresult cuGraphBatchMemOpNodeSetParams(CUgraphNode h, const CUDA_BATCH_MEM_OP_NODE_PARAMS* p) {
  const char* fn = "cuGraphBatchMemOpNodeSetParams";
  if (!p) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null parameters");
  std::lock_guard lock(core::graph_mutex());
  GraphNode* n = nullptr;
  if (CUresult r = typed_node(h, CU_GRAPH_NODE_TYPE_BATCH_MEM_OP, n, fn)) return r;
  return core::prepare_memop_node(*p, n->memop, fn);
}

CUresult cuGraphChildGraphNodeGetGraph(CUgraphNode h, CUgraph* phGraph) {
  const char* fn = "cuGraphChildGraphNodeGetGraph";
  if (!phGraph) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  std::lock_guard lock(core::graph_mutex());
  GraphNode* n = nullptr;
  if (CUresult r = typed_node(h, CU_GRAPH_NODE_TYPE_GRAPH, n, fn)) return r;
  *phGraph = n->child->handle;
  return CUDA_SUCCESS;
}

namespace {
CUresult event_node_get(CUgraphNode h, CUgraphNodeType type, CUevent* out, const char* fn) {
  if (!out) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  std::lock_guard lock(core::graph_mutex());
  GraphNode* n = nullptr;
  if (CUresult r = typed_node(h, type, n, fn)) return r;
  *out = n->event;
  return CUDA_SUCCESS;
}
CUresult event_node_set(CUgraphNode h, CUgraphNodeType type, CUevent e, const char* fn) {
  std::lock_guard lock(core::graph_mutex());
  GraphNode* n = nullptr;
  if (CUresult r = typed_node(h, type, n, fn)) return r;
  if (CUresult r = check_event(e, fn)) return r;
  n->event = e;
  return CUDA_SUCCESS;
}
}  // namespace

CUresult cuGraphEventRecordNodeGetEvent(CUgraphNode h, CUevent* out) {
  return event_node_get(h, CU_GRAPH_NODE_TYPE_EVENT_RECORD, out, "cuGraphEventRecordNodeGetEvent");
}
CUresult cuGraphEventRecordNodeSetEvent(CUgraphNode h, CUevent e) {
  return event_node_set(h, CU_GRAPH_NODE_TYPE_EVENT_RECORD, e, "cuGraphEventRecordNodeSetEvent");
}
CUresult cuGraphEventWaitNodeGetEvent(CUgraphNode h, CUevent* out) {
  return event_node_get(h, CU_GRAPH_NODE_TYPE_WAIT_EVENT, out, "cuGraphEventWaitNodeGetEvent");
}
CUresult cuGraphEventWaitNodeSetEvent(CUgraphNode h, CUevent e) {
  return event_node_set(h, CU_GRAPH_NODE_TYPE_WAIT_EVENT, e, "cuGraphEventWaitNodeSetEvent");
}

CUresult cuGraphNodeSetParams(CUgraphNode h, CUgraphNodeParams* p) {
  const char* fn = "cuGraphNodeSetParams";
  if (!p) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null parameters");
  std::lock_guard lock(core::graph_mutex());
  GraphNode* n = core::node_of(h);
  if (!n) return reject(CUDA_ERROR_INVALID_VALUE, fn, "invalid node");
  if (n->type != p->type) return reject(CUDA_ERROR_INVALID_VALUE, fn, "node of another type");
  if (p->type == CU_GRAPH_NODE_TYPE_GRAPH || p->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC ||
      p->type == CU_GRAPH_NODE_TYPE_MEM_FREE)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "parameters of this node type cannot be changed");
  GraphNode probe;
  probe.type = n->type;
  probe.kernel.attributes = n->kernel.attributes;
  probe.kernel.cooperative = n->kernel.cooperative;
  probe.kernel.priority = n->kernel.priority;
  std::copy(std::begin(n->kernel.cluster), std::end(n->kernel.cluster), probe.kernel.cluster);
  if (CUresult r = fill_generic(probe, *p, fn)) return r;
  n->kernel = std::move(probe.kernel);
  core::refresh_arg_ptrs(n->kernel);
  n->copy = probe.copy;
  n->fill = probe.fill;
  n->host = probe.host;
  n->event = probe.event;
  n->memop = std::move(probe.memop);
  return CUDA_SUCCESS;
}

// --- kernel node attributes ---

namespace {
bool kernel_node_attribute(CUkernelNodeAttrID id) {
  switch (id) {
    case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
    case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
    case CU_LAUNCH_ATTRIBUTE_PRIORITY:
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
    case CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION:
    case CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE:
    case CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
    case CU_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING:
      return true;
    default:
      return false;
  }
}
}  // namespace

CUresult cuGraphKernelNodeGetAttribute(CUgraphNode h, CUkernelNodeAttrID attr,
                                       CUkernelNodeAttrValue* value_out) {
  const char* fn = "cuGraphKernelNodeGetAttribute";
  if (!value_out) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  if (!kernel_node_attribute(attr))
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "not an attribute of kernel nodes");
  std::lock_guard lock(core::graph_mutex());
  GraphNode* n = nullptr;
  if (CUresult r = typed_node(h, CU_GRAPH_NODE_TYPE_KERNEL, n, fn)) return r;
  const auto it = n->kernel.attributes.find(attr);
  *value_out = it != n->kernel.attributes.end() ? it->second : CUkernelNodeAttrValue{};
  return CUDA_SUCCESS;
}

CUresult cuGraphKernelNodeSetAttribute(CUgraphNode h, CUkernelNodeAttrID attr,
                                       const CUkernelNodeAttrValue* value) {
  const char* fn = "cuGraphKernelNodeSetAttribute";
  if (!value) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null value");
  if (!kernel_node_attribute(attr))
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "not an attribute of kernel nodes");
  std::lock_guard lock(core::graph_mutex());
  GraphNode* n = nullptr;
  if (CUresult r = typed_node(h, CU_GRAPH_NODE_TYPE_KERNEL, n, fn)) return r;
  core::KernelParams& k = n->kernel;
  if (attr == CU_LAUNCH_ATTRIBUTE_COOPERATIVE) {
    k.cooperative = value->cooperative != 0;
  } else if (attr == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
    const unsigned dims[3] = {value->clusterDim.x, value->clusterDim.y, value->clusterDim.z};
    for (int i = 0; i < 3; ++i) {
      if (dims[i] == 0 || k.grid[i] % dims[i] != 0)
        return reject(CUDA_ERROR_INVALID_VALUE, fn,
                      "cluster dimension zero or not a divisor of the grid's");
    }
    if ((dims[0] != 1 || dims[1] != 1 || dims[2] != 1) &&
        !core::Core::get().backend().launches_clusters())
      return reject(CUDA_ERROR_NOT_SUPPORTED, fn, "the backend has no thread block clusters");
    std::copy(std::begin(dims), std::end(dims), k.cluster);
  }
  CUkernelNodeAttrValue stored = *value;
  if (attr == CU_LAUNCH_ATTRIBUTE_PRIORITY) {
    // Clamped to the device's range, as NVIDIA's driver does.
    int least = 0, greatest = 0;
    (void)impl::cuCtxGetStreamPriorityRange(&least, &greatest);
    stored.priority = std::clamp(value->priority, greatest, least);
    k.priority = stored.priority;
  }
  k.attributes[attr] = stored;
  return CUDA_SUCCESS;
}

CUresult cuGraphKernelNodeCopyAttributes(CUgraphNode dst, CUgraphNode src) {
  const char* fn = "cuGraphKernelNodeCopyAttributes";
  std::lock_guard lock(core::graph_mutex());
  GraphNode* d = nullptr;
  GraphNode* s = nullptr;
  if (CUresult r = typed_node(dst, CU_GRAPH_NODE_TYPE_KERNEL, d, fn)) return r;
  if (CUresult r = typed_node(src, CU_GRAPH_NODE_TYPE_KERNEL, s, fn)) return r;
  d->kernel.attributes = s->kernel.attributes;
  d->kernel.cooperative = s->kernel.cooperative;
  d->kernel.priority = s->kernel.priority;
  std::copy(std::begin(s->kernel.cluster), std::end(s->kernel.cluster), d->kernel.cluster);
  return CUDA_SUCCESS;
}

// --- DOT output ---

CUresult cuGraphDebugDotPrint(CUgraph hGraph, const char* path, unsigned int flags) {
  const char* fn = "cuGraphDebugDotPrint";
  if (!path) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null path");
  std::string text = "digraph dot {\n";
  {
    std::lock_guard lock(core::graph_mutex());
    Graph* g = core::graph_of(hGraph);
    if (!g) return reject(CUDA_ERROR_INVALID_VALUE, fn, "invalid graph");
    dot_graph(*g, "", flags, text);
  }
  text += "}\n";
  std::FILE* f = std::fopen(path, "w");
  if (!f) return reject(CUDA_ERROR_OPERATING_SYSTEM, fn, "cannot open the output file");
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (std::fclose(f) != 0 || !ok)
    return reject(CUDA_ERROR_OPERATING_SYSTEM, fn, "cannot write the output file");
  return CUDA_SUCCESS;
}

// --- conditional handles ---

CUresult cuGraphConditionalHandleCreate(CUgraphConditionalHandle* pHandle_out, CUgraph hGraph,
                                        CUcontext ctx, unsigned int defaultLaunchValue,
                                        unsigned int flags) {
  const char* fn = "cuGraphConditionalHandleCreate";
  if (!pHandle_out) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  if (flags & ~static_cast<unsigned>(CU_GRAPH_COND_ASSIGN_DEFAULT))
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "flags must be 0 or CU_GRAPH_COND_ASSIGN_DEFAULT");
  std::lock_guard lock(core::graph_mutex());
  Graph* g = core::graph_of(hGraph);
  if (!g) return reject(CUDA_ERROR_INVALID_VALUE, fn, "invalid graph");
  core::Context* c = nullptr;
  if (CUresult r = core::context_or_current(ctx, c, fn)) return r;
  // A device whose kernels set handles themselves (NVIDIA's cudaGraphSetConditional) needs
  // them made in its own graph: one per root graph, which conditional bodies share.
  Graph* root = g;
  while (root->parent) root = root->parent->graph;
  std::shared_ptr<backend::NativeCondScope> scope = root->native_scope;
  if (!scope) {
    backend::Status st;
    if (c->impl->create_cond_scope(scope, st)) {
      if (!st.ok()) return core::Core::get().map(st, fn);
      root->native_scope = scope;
    }
  }
  std::uint64_t native_id = 0;
  if (scope) {
    if (auto st = c->impl->create_cond_handle(*scope, defaultLaunchValue, flags, native_id);
        !st.ok())
      return core::Core::get().map(st, fn);
  }
  auto h = std::make_shared<core::CondHandle>();
  h->graph = g;
  h->ctx = c;
  h->default_value = defaultLaunchValue;
  h->flags = flags;
  // Without CU_GRAPH_COND_ASSIGN_DEFAULT the value is whatever device code last set; it starts
  // at the default.
  h->value.store(defaultLaunchValue, std::memory_order_relaxed);
  h->native_id = native_id;
  h->scope = std::move(scope);
  *pHandle_out = h->id();
  g->cond_handles.push_back(std::move(h));
  return CUDA_SUCCESS;
}

// --- user objects ---

CUresult cuUserObjectCreate(CUuserObject* object_out, void* ptr, CUhostFn destroy,
                            unsigned int initialRefcount, unsigned int flags) {
  const char* fn = "cuUserObjectCreate";
  if (!object_out || !destroy) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null argument");
  if (initialRefcount == 0) return reject(CUDA_ERROR_INVALID_VALUE, fn, "zero reference count");
  if (flags != CU_USER_OBJECT_NO_DESTRUCTOR_SYNC)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "flags must be CU_USER_OBJECT_NO_DESTRUCTOR_SYNC");
  auto o = std::make_unique<core::UserObject>();
  o->ptr = ptr;
  o->destroy = destroy;
  o->refs = initialRefcount;
  const auto h = core::graph_handles().user_objects.insert(o.get());
  if (!h) return CUDA_ERROR_OUT_OF_MEMORY;
  o->handle = reinterpret_cast<CUuserObject>(h);
  *object_out = o.release()->handle;
  return CUDA_SUCCESS;
}

CUresult cuUserObjectRetain(CUuserObject object, unsigned int count) {
  if (count == 0) return reject(CUDA_ERROR_INVALID_VALUE, "cuUserObjectRetain", "zero count");
  std::lock_guard lock(core::graph_mutex());  // against a concurrent last release
  core::UserObject* o =
      core::graph_handles().user_objects.find(reinterpret_cast<std::uintptr_t>(object));
  if (!o) return reject(CUDA_ERROR_INVALID_VALUE, "cuUserObjectRetain", "invalid user object");
  o->refs.fetch_add(count, std::memory_order_relaxed);
  return CUDA_SUCCESS;
}

CUresult cuUserObjectRelease(CUuserObject object, unsigned int count) {
  if (count == 0) return reject(CUDA_ERROR_INVALID_VALUE, "cuUserObjectRelease", "zero count");
  std::lock_guard lock(core::graph_mutex());
  core::UserObject* o =
      core::graph_handles().user_objects.find(reinterpret_cast<std::uintptr_t>(object));
  if (!o) return reject(CUDA_ERROR_INVALID_VALUE, "cuUserObjectRelease", "invalid user object");
  if (o->refs.load() < count)
    return reject(CUDA_ERROR_INVALID_VALUE, "cuUserObjectRelease", "more releases than references");
  core::release_user_object_refs(*o, count);
  return CUDA_SUCCESS;
}

CUresult cuGraphRetainUserObject(CUgraph graph, CUuserObject object, unsigned int count,
                                 unsigned int flags) {
  const char* fn = "cuGraphRetainUserObject";
  if (count == 0) return reject(CUDA_ERROR_INVALID_VALUE, fn, "zero count");
  if (flags & ~static_cast<unsigned>(CU_GRAPH_USER_OBJECT_MOVE))
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "invalid flags");
  std::lock_guard lock(core::graph_mutex());
  Graph* g = core::graph_of(graph);
  core::UserObject* o =
      core::graph_handles().user_objects.find(reinterpret_cast<std::uintptr_t>(object));
  if (!g || !o) return reject(CUDA_ERROR_INVALID_VALUE, fn, "invalid graph or user object");
  // MOVE hands the caller's references to the graph; otherwise the graph takes new ones.
  if (!(flags & CU_GRAPH_USER_OBJECT_MOVE)) o->refs.fetch_add(count, std::memory_order_relaxed);
  g->user_objects[o] += count;
  return CUDA_SUCCESS;
}

CUresult cuGraphReleaseUserObject(CUgraph graph, CUuserObject object, unsigned int count) {
  const char* fn = "cuGraphReleaseUserObject";
  if (count == 0) return reject(CUDA_ERROR_INVALID_VALUE, fn, "zero count");
  std::lock_guard lock(core::graph_mutex());
  Graph* g = core::graph_of(graph);
  core::UserObject* o =
      core::graph_handles().user_objects.find(reinterpret_cast<std::uintptr_t>(object));
  if (!g || !o) return reject(CUDA_ERROR_INVALID_VALUE, fn, "invalid graph or user object");
  // NVIDIA's driver accepts releasing more than the graph holds; the graph's are released.
  auto it = g->user_objects.find(o);
  if (it == g->user_objects.end()) return CUDA_SUCCESS;
  const unsigned released = std::min(count, it->second);
  if ((it->second -= released) == 0) g->user_objects.erase(it);
  core::release_user_object_refs(*o, released);
  return CUDA_SUCCESS;
}

}  // namespace cudamux::impl
