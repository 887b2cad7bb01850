// Executable graphs (issue 16): instantiation, launch, upload, whole-graph update and the
// per-node updates of an executable graph.
//
// An executable graph is its source graph's nodes prepared to run (launch arguments packed,
// copies and fills resolved to backend descriptors) plus one topological order. A launch
// submits them to the stream as one operation, so the graph keeps stream order with
// everything else on the stream and costs one legacy-stream ordering pass, not one per node.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <queue>

#include "cudamux/driver_impl.hpp"
#include "graph.hpp"

namespace cudamux::core {

// The stream order of an executable graph's launches: each launch waits for the previous
// one (CUDA orders launches of one executable graph even across streams).
// The marker is recorded only when a launch comes on another stream than the previous one
// (on that previous stream, behind everything submitted to it so far): launches on one stream
// are ordered by the stream itself and pay nothing.
struct ExecOrder {
  std::unique_ptr<Event> last;         // the marker, created on the first change of stream
  Context* ctx = nullptr;              // of the previous launch
  unsigned long long last_stream = 0;  // Stream::id of the previous launch (ids are never reused)
};

namespace {
std::mutex g_exec_order_mutex;
std::unordered_map<GraphExec*, ExecOrder> g_exec_order;  // guarded by g_exec_order_mutex
}  // namespace

void copy_exec_payload(const GraphNode& n, ExecNode& e) {
  copy_kernel_params(n.kernel, e.kernel);
  e.copy = n.copy;
  e.fill = n.fill;
  e.host = n.host;
  e.event = n.event;
  e.alloc = n.alloc;
  e.free_ptr = n.free_ptr;
  e.memop = n.memop;
}

namespace {

// A topological order of `nodes` (indices), earliest-created first among the ready ones;
// false when the dependencies form a cycle.
bool topological_order(const std::vector<ExecNode>& nodes, std::vector<std::size_t>& order) {
  std::vector<std::size_t> pending(nodes.size());
  std::vector<std::vector<std::size_t>> dependents(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    pending[i] = nodes[i].deps.size();
    for (std::size_t d : nodes[i].deps) dependents[d].push_back(i);
  }
  std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>> ready;
  for (std::size_t i = 0; i < nodes.size(); ++i)
    if (pending[i] == 0) ready.push(i);
  order.clear();
  while (!ready.empty()) {
    const std::size_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (std::size_t d : dependents[i])
      if (--pending[d] == 0) ready.push(d);
  }
  return order.size() == nodes.size();
}

}  // namespace

namespace {
std::vector<std::shared_ptr<CondHandle>> handles_to_reset(const Graph& g) {
  std::vector<std::shared_ptr<CondHandle>> out;
  for (const auto& h : g.cond_handles)
    if (h->flags & CU_GRAPH_COND_ASSIGN_DEFAULT) out.push_back(h);
  return out;
}

CUresult build_exec_in(const Graph& g, unsigned long long flags, std::unique_ptr<GraphExec>& out,
                       const GraphNode*& error_node, const char* fn, bool in_body);

// A conditional node of an executable graph, its bodies instantiated.
CUresult build_conditional(const GraphNode& n, unsigned long long flags, ExecNode& e,
                           const GraphNode*& error_node, const char* fn) {
  auto c = std::make_shared<CondExec>();
  c->handle = n.cond.handle;
  c->type = n.cond.type;
  c->ctx = n.cond.ctx;
  for (const auto& body : n.cond.bodies) {
    if (CUresult r = build_exec_in(*body, flags, c->bodies.emplace_back(), error_node, fn, true))
      return r;
  }
  e.cond = std::move(c);
  return CUDA_SUCCESS;
}
}  // namespace

CUresult build_exec(const Graph& g, unsigned long long flags, std::unique_ptr<GraphExec>& out,
                    const GraphNode*& error_node, const char* fn) {
  return build_exec_in(g, flags, out, error_node, fn, false);
}

namespace {
CUresult build_exec_in(const Graph& g, unsigned long long flags, std::unique_ptr<GraphExec>& out,
                       const GraphNode*& error_node, const char* fn, bool in_body) {
  auto x = std::make_unique<GraphExec>();
  x->flags = flags;
  x->reset_handles = handles_to_reset(g);
  std::unordered_map<const GraphNode*, std::size_t> index;
  x->nodes.reserve(g.nodes.size());
  for (const auto& n : g.nodes) {
    index[n.get()] = x->nodes.size();
    ExecNode& e = x->nodes.emplace_back();
    e.type = n->type;
    e.origin = reinterpret_cast<std::uintptr_t>(n->handle);
    e.order = n->order;
    copy_exec_payload(*n, e);
    if ((n->type == CU_GRAPH_NODE_TYPE_EVENT_RECORD || n->type == CU_GRAPH_NODE_TYPE_WAIT_EVENT) &&
        !event_of(n->event)) {
      error_node = n.get();
      return reject(CUDA_ERROR_INVALID_VALUE, fn, "an event node's event was destroyed");
    }
    // Captures and moved child graphs can bring in what a body may not hold.
    if (in_body && !body_node_allowed(n->type)) {
      error_node = n.get();
      return reject(CUDA_ERROR_INVALID_VALUE, fn,
                    "a conditional node's body may hold only kernel, empty, child graph, memset, "
                    "memcpy and conditional nodes");
    }
    if (n->child) {
      if (CUresult r = build_exec_in(*n->child, flags, e.child, error_node, fn, in_body)) return r;
      if (e.child->has_conditional) x->has_conditional = true;
    }
    if (n->type == CU_GRAPH_NODE_TYPE_CONDITIONAL) {
      if (CUresult r = build_conditional(*n, flags, e, error_node, fn)) return r;
      x->has_conditional = true;
    }
  }
  for (const auto& n : g.nodes) {
    ExecNode& e = x->nodes[index.at(n.get())];
    for (const Edge& d : n->in) e.deps.push_back(index.at(d.from));
    x->by_origin[e.origin] = index.at(n.get());
  }
  if (!topological_order(x->nodes, x->run_order)) {
    error_node = nullptr;
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "the graph's dependencies form a cycle");
  }
  out = std::move(x);
  return CUDA_SUCCESS;
}

// --- conditional nodes at run time ---

// What a submitted conditional node (or a reset of handles) needs when the queue reaches it;
// owned by the host function that runs it.
struct CondRun {
  std::shared_ptr<CondExec> cond;
  std::shared_ptr<CondHandle> handle;
};
struct CondReset {
  std::vector<std::shared_ptr<CondHandle>> handles;
};

void reset_handles(void* p) {
  std::unique_ptr<CondReset> r(static_cast<CondReset*>(p));
  for (const auto& h : r->handles) h->value.store(h->default_value, std::memory_order_release);
}

// Runs on the launch queue once the node's dependencies are done: evaluates the condition and
// runs the chosen body on the node's own queue, waiting for it, so that the launch queue's
// next work (the node's dependents, and everything after the launch) starts after the body.
void run_conditional(void* p) {
  std::unique_ptr<CondRun> run(static_cast<CondRun*>(p));
  CondExec& c = *run->cond;
  const auto value = [&] { return run->handle->value.load(std::memory_order_acquire); };
  const auto body = [&](std::size_t i) {
    if (!c.queue) return false;
    std::vector<Event*> recorded;  // bodies hold no event nodes
    backend::Status st = run_exec(*c.bodies[i], *c.queue, recorded);
    if (st.ok()) st = c.queue->synchronize();
    if (!st.ok()) {
      Core::get().log().error(
          "conditional node: body {} failed (backend error {}); the node's remaining "
          "iterations are skipped",
          i, st.native);
      // A kernel failure in a body is the context's, as it is for a kernel node outside one:
      // the launching stream's synchronisation reports it (stream_synchronize reads it).
      note_sticky(*c.ctx, Core::get().map(st, "cuGraphLaunch"));
      return false;
    }
    return true;
  };
  switch (c.type) {
    case CU_GRAPH_COND_TYPE_IF:
      if (value() != 0)
        body(0);
      else if (c.bodies.size() == 2)
        body(1);
      break;
    case CU_GRAPH_COND_TYPE_WHILE:
      while (value() != 0)
        if (!body(0)) break;
      break;
    case CU_GRAPH_COND_TYPE_SWITCH:
      if (const unsigned v = value(); v < c.bodies.size()) body(v);
      break;
    default:
      break;
  }
}

// Makes the queues of the executable graph's conditional nodes (recursively), in `ctx`.
backend::Status make_cond_queues(GraphExec& x, Context& ctx) {
  for (ExecNode& n : x.nodes) {
    if (n.child) {
      if (auto st = make_cond_queues(*n.child, ctx); !st.ok()) return st;
    }
    if (!n.cond) continue;
    if (!n.cond->queue) {
      if (auto st = ctx.impl->create_queue(CU_STREAM_NON_BLOCKING, 0, n.cond->queue); !st.ok())
        return st;
    }
    for (auto& b : n.cond->bodies)
      if (auto st = make_cond_queues(*b, ctx); !st.ok()) return st;
  }
  return backend::kOk;
}
}  // namespace

backend::Status run_exec(GraphExec& x, backend::Queue& q, std::vector<Event*>& recorded,
                         bool capturing) {
  // A device graph (capturing) resets its own handles.
  if (!capturing && !x.reset_handles.empty()) {
    auto* r = new CondReset{x.reset_handles};
    if (auto st = q.host_function(&reset_handles, r); !st.ok()) {
      delete r;
      return st;
    }
  }
  for (const std::size_t i : x.run_order) {
    ExecNode& n = x.nodes[i];
    backend::Status st = backend::kOk;
    switch (n.type) {
      case CU_GRAPH_NODE_TYPE_KERNEL: {
        if (!n.enabled) break;
        const KernelParams& k = n.kernel;
        backend::LaunchDesc desc;
        desc.function = k.function->impl;
        for (int d = 0; d < 3; ++d) {
          desc.grid[d] = k.grid[d];
          desc.block[d] = k.block[d];
          desc.cluster[d] = k.cluster[d];
        }
        desc.shared_bytes = k.shared;
        desc.args = k.args.empty() ? nullptr : k.args.data();
        desc.args_size = k.args.size();
        desc.cooperative = k.cooperative;
        st = q.launch(desc);
        break;
      }
      case CU_GRAPH_NODE_TYPE_MEMCPY:
        if (n.enabled && !n.copy.empty) st = q.copy(n.copy.desc);
        break;
      case CU_GRAPH_NODE_TYPE_MEMSET:
        if (n.enabled) st = q.fill(n.fill.desc);
        break;
      case CU_GRAPH_NODE_TYPE_HOST:
        st = q.host_function(n.host.fn, n.host.userData);
        break;
      case CU_GRAPH_NODE_TYPE_GRAPH:
        st = run_exec(*n.child, q, recorded, capturing);
        break;
      case CU_GRAPH_NODE_TYPE_CONDITIONAL: {
        if (capturing) {
          // The device's own conditional node (its kernels set the device's handle).
          std::vector<std::function<backend::Status(backend::Queue&)>> bodies;
          for (const auto& b : n.cond->bodies) {
            GraphExec* body = b.get();
            bodies.emplace_back([body, &recorded](backend::Queue& bq) {
              return run_exec(*body, bq, recorded, /*capturing=*/true);
            });
          }
          if (!n.cond->handle->scope ||
              !q.conditional(n.cond->handle->native_id, n.cond->type, bodies, st))
            st = Core::get().backend().errors().not_supported();
          break;
        }
        auto* run = new CondRun{n.cond, n.cond->handle};
        st = q.host_function(&run_conditional, run);
        if (!st.ok()) delete run;
        break;
      }
      case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
        if (Event* e = event_of(n.event)) {
          st = q.record(*e->impl);
          if (st.ok()) recorded.push_back(e);
        }
        break;
      case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
        if (Event* e = event_of(n.event);
            e && (capturing || e->recorded.load(std::memory_order_acquire)))
          st = q.wait(*e->impl);
        break;
      case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP:
        if (!n.enabled) break;
        for (const MemOp& op : n.memop.prepared) {
          bool supported = true;
          st = submit_memop(q, op, supported);
          if (!supported) st = Core::get().backend().errors().not_supported();
          if (!st.ok()) break;
        }
        break;
      default:
        break;
    }
    if (!st.ok()) return st;
  }
  return backend::kOk;
}

namespace {
// The device graph owning the handles of x's conditional nodes (bodies included), or null
// when the core keeps them.
backend::NativeCondScope* native_cond_scope(const GraphExec& x) {
  for (const ExecNode& n : x.nodes) {
    if (n.cond) {
      if (n.cond->handle && n.cond->handle->scope) return n.cond->handle->scope.get();
      for (const auto& b : n.cond->bodies)
        if (auto* s = native_cond_scope(*b)) return s;
    } else if (n.child) {
      if (auto* s = native_cond_scope(*n.child)) return s;
    }
  }
  return nullptr;
}

// The events of the graph's enabled record nodes (their records are submitted by a launch).
void collect_record_events(const GraphExec& x, std::vector<Event*>& out) {
  for (const ExecNode& n : x.nodes) {
    if (n.type == CU_GRAPH_NODE_TYPE_EVENT_RECORD) {
      if (Event* e = event_of(n.event)) out.push_back(e);
    } else if (n.child) {
      collect_record_events(*n.child, out);
    }
  }
}

// The live stream of `ctx` with this id, or null once it was destroyed and its work is done.
// Caller holds ctx.order_mutex.
Stream* stream_by_id(Context& ctx, unsigned long long id) {
  if (ctx.legacy && ctx.legacy->id == id) return ctx.legacy.get();
  for (Stream* s : ctx.streams)
    if (s->id == id) return s;
  for (const auto& s : ctx.retired_streams)
    if (s->id == id) return s.get();
  return nullptr;
}
}  // namespace

CUresult launch_exec(GraphExec& x, Stream& s, const char* fn) {
  if (CUresult r = sticky_error(*s.ctx)) return r;
  Core& core = Core::get();
  std::lock_guard lock(x.mutex);
  ExecOrder* order = nullptr;
  {
    std::lock_guard olock(g_exec_order_mutex);
    order = &g_exec_order[&x];
  }
  // Launches of one executable graph are ordered even across streams (CUDA's rule).
  bool wait_previous = false;
  if (order->last_stream && order->last_stream != s.id && order->ctx == s.ctx) {
    if (!order->last) {
      auto e = std::make_unique<Event>();
      e->ctx = s.ctx;
      e->flags = CU_EVENT_DISABLE_TIMING;
      if (auto st = s.ctx->impl->create_event(CU_EVENT_DISABLE_TIMING, e->impl); !st.ok())
        return core.map(st, fn);
      order->last = std::move(e);
    }
    std::lock_guard olock(s.ctx->order_mutex);
    if (Stream* prev = stream_by_id(*s.ctx, order->last_stream)) {
      if (auto st = prev->queue->record(*order->last->impl); !st.ok()) return core.map(st, fn);
      wait_previous = true;
    }
  }
  // Handles the device sets itself (the cuda backend) need the device's own graph; the core's
  // handles run on the core's replay.
  backend::NativeCondScope* cond_scope = x.has_conditional ? native_cond_scope(x) : nullptr;
  if (x.has_conditional && !cond_scope) {
    x.native_tried = true;
    if (auto st = make_cond_queues(x, *s.ctx); !st.ok()) return core.map(st, fn);
  }
  // The device's own graph where the backend makes one (once, in the first launch's context).
  if (!x.native_tried) {
    x.native_tried = true;
    x.native_ctx = s.ctx;
    std::vector<Event*> ignored;
    const auto st = s.queue->capture_graph(
        [&](backend::Queue& q) { return run_exec(x, q, ignored, /*capturing=*/true); }, x.native,
        cond_scope);
    if (!st.ok()) x.native.reset();
  }
  backend::NativeGraph* native = x.native_ctx == s.ctx ? x.native.get() : nullptr;
  if (cond_scope && !native) {
    // The core cannot replay it: the kernels set the device's handles, not the core's.
    x.native_tried = false;  // the next launch tries again (another context, a transient error)
    return reject(CUDA_ERROR_NOT_SUPPORTED, fn,
                  "the device did not take this graph with conditional nodes (it refused to "
                  "record it, or the launch is in another context than the first one)");
  }
  std::vector<Event*> recorded;
  if (native) collect_record_events(x, recorded);
  const auto st = submit(s, [&](backend::Queue& q) {
    if (wait_previous) {
      if (auto w = q.wait(*order->last->impl); !w.ok()) return w;
    }
    if (native) return q.launch_graph(*native);
    return run_exec(x, q, recorded);
  });
  order->last_stream = s.id;
  order->ctx = s.ctx;
  for (Event* e : recorded) {
    e->recorded.store(true, std::memory_order_release);
    if (e->in_capture.load(std::memory_order_acquire)) forget_event_capture(*e);
  }
  const CUresult r = note_sticky(*s.ctx, core.map(st, fn));
  if (r != CUDA_SUCCESS || !core.launch_blocking()) return r;
  return note_sticky(*s.ctx, core.map(s.queue->synchronize(), fn));
}

// Drops the launch-order state of a destroyed executable graph, waiting for its last launch
// first: the backend event must not be freed while a queue will still record it.
void forget_exec(GraphExec& x) noexcept {
  std::unique_ptr<Event> last;
  {
    std::lock_guard lock(g_exec_order_mutex);
    auto it = g_exec_order.find(&x);
    if (it == g_exec_order.end()) return;
    last = std::move(it->second.last);
    g_exec_order.erase(it);
  }
  if (last) {
    Context& ctx = *last->ctx;
    std::lock_guard lock(ctx.order_mutex);
    ctx.retired_events.push_back(std::move(last));  // freed once idle, or with the context
  }
}

void forget_exec_orders(Context& ctx) noexcept {
  std::lock_guard lock(g_exec_order_mutex);
  for (auto& [x, order] : g_exec_order) {
    if (order.ctx == &ctx) {
      order.last.reset();  // the context's queues are idle: nothing will record it
      order.ctx = nullptr;
      order.last_stream = 0;
    }
  }
}

using UpdateResult = CUgraphExecUpdateResult;

// Whether node `e` of an executable graph may take `n`'s parameters (CUDA's update rules).
UpdateResult update_allowed(const ExecNode& e, const GraphNode& n) {
  switch (n.type) {
    case CU_GRAPH_NODE_TYPE_KERNEL:
      if (e.kernel.ctx != n.kernel.ctx) return CU_GRAPH_EXEC_UPDATE_ERROR_FUNCTION_CHANGED;
      if (e.kernel.cooperative != n.kernel.cooperative)
        return CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED;
      return CU_GRAPH_EXEC_UPDATE_SUCCESS;
    case CU_GRAPH_NODE_TYPE_MEMCPY: {
      const auto& a = e.copy.desc;
      const auto& b = n.copy.desc;
      if (e.copy.ctx != n.copy.ctx || a.src_kind != b.src_kind || a.dst_kind != b.dst_kind ||
          a.src_device != b.src_device || a.dst_device != b.dst_device ||
          e.copy.params.srcMemoryType != n.copy.params.srcMemoryType ||
          e.copy.params.dstMemoryType != n.copy.params.dstMemoryType)
        return CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED;
      return CU_GRAPH_EXEC_UPDATE_SUCCESS;
    }
    case CU_GRAPH_NODE_TYPE_MEMSET: {
      const auto& a = e.fill.params;
      const auto& b = n.fill.params;
      if (e.fill.ctx != n.fill.ctx) return CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED;
      const bool same = std::memcmp(&a, &b, sizeof a) == 0;
      // Only 1D memsets can change.
      if (!same && (a.height > 1 || b.height > 1))
        return CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED;
      if (e.fill.desc.dst_kind != n.fill.desc.dst_kind)
        return CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED;
      return CU_GRAPH_EXEC_UPDATE_SUCCESS;
    }
    // Memory nodes cannot change; an update may only pair them with identical ones.
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
      return e.alloc.params.dptr == n.alloc.params.dptr &&
                     e.alloc.params.bytesize == n.alloc.params.bytesize
                 ? CU_GRAPH_EXEC_UPDATE_SUCCESS
                 : CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED;
    case CU_GRAPH_NODE_TYPE_MEM_FREE:
      return e.free_ptr == n.free_ptr ? CU_GRAPH_EXEC_UPDATE_SUCCESS
                                      : CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED;
    case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP: {
      // Addresses, values and wait conditions may change; the context, the number and kinds
      // of operations and the FLUSH bit may not (CUDA's rule).
      const auto& a = e.memop.ops;
      const auto& b = n.memop.ops;
      if (e.memop.ctx != n.memop.ctx || a.size() != b.size())
        return CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED;
      for (std::size_t i = 0; i < a.size(); ++i) {
        if (a[i].operation != b[i].operation) return CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED;
        const bool wait = a[i].operation == CU_STREAM_MEM_OP_WAIT_VALUE_32 ||
                          a[i].operation == CU_STREAM_MEM_OP_WAIT_VALUE_64;
        const bool write = a[i].operation == CU_STREAM_MEM_OP_WRITE_VALUE_32 ||
                           a[i].operation == CU_STREAM_MEM_OP_WRITE_VALUE_64;
        if (wait && ((a[i].waitValue.flags ^ b[i].waitValue.flags) & CU_STREAM_WAIT_VALUE_FLUSH))
          return CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED;
        if (write && a[i].writeValue.flags != b[i].writeValue.flags)
          return CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED;
        if (!wait && !write && std::memcmp(&a[i], &b[i], sizeof a[i]) != 0)
          return CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED;
      }
      return CU_GRAPH_EXEC_UPDATE_SUCCESS;
    }
    case CU_GRAPH_NODE_TYPE_CONDITIONAL:
      // A conditional node's own parameters cannot change (CUDA's rule); its bodies are
      // checked node by node.
      if (!e.cond || e.cond->type != n.cond.type || e.cond->bodies.size() != n.cond.bodies.size() ||
          e.cond->ctx != n.cond.ctx)
        return CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED;
      return CU_GRAPH_EXEC_UPDATE_SUCCESS;
    default:
      return CU_GRAPH_EXEC_UPDATE_SUCCESS;
  }
}

// Checks that `g` can update `x` (same topology, allowed changes); `err` / `err_from` name
// the offending node of `g`. Applies nothing.
UpdateResult check_update(const GraphExec& x, const Graph& g, const GraphNode*& err,
                          const GraphNode*& err_from) {
  if (g.nodes.size() != x.nodes.size()) return CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
  // Nodes pair in creation order (both lists are in it).
  std::unordered_map<const GraphNode*, std::size_t> index;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) index[g.nodes[i].get()] = i;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const GraphNode& n = *g.nodes[i];
    const ExecNode& e = x.nodes[i];
    err = &n;
    if (n.type != e.type) return CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED;
    std::vector<std::size_t> deps;
    for (const Edge& d : n.in) deps.push_back(index.at(d.from));
    std::vector<std::size_t> before = e.deps;
    std::sort(deps.begin(), deps.end());
    std::sort(before.begin(), before.end());
    if (deps != before) {
      if (!n.in.empty()) err_from = n.in.front().from;
      return CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
    }
    if (n.child) {
      const GraphNode* inner = nullptr;
      const GraphNode* inner_from = nullptr;
      if (const auto r = check_update(*e.child, *n.child, inner, inner_from);
          r != CU_GRAPH_EXEC_UPDATE_SUCCESS)
        return r;
    }
    if (const auto r = update_allowed(e, n); r != CU_GRAPH_EXEC_UPDATE_SUCCESS) return r;
    for (std::size_t b = 0; b < n.cond.bodies.size(); ++b) {
      const GraphNode* inner = nullptr;
      const GraphNode* inner_from = nullptr;
      if (const auto r = check_update(*e.cond->bodies[b], *n.cond.bodies[b], inner, inner_from);
          r != CU_GRAPH_EXEC_UPDATE_SUCCESS) {
        err = inner ? inner : &n;
        err_from = inner_from;
        return r;
      }
    }
  }
  err = nullptr;
  return CU_GRAPH_EXEC_UPDATE_SUCCESS;
}

void apply_update(GraphExec& x, const Graph& g) {
  // The updated graph's handles (kernels of the new graph set them), with their flags and
  // default values (CUDA's rule).
  x.reset_handles = handles_to_reset(g);
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    copy_exec_payload(*g.nodes[i], x.nodes[i]);
    if (g.nodes[i]->child) apply_update(*x.nodes[i].child, *g.nodes[i]->child);
    if (const auto& c = x.nodes[i].cond) {
      c->handle = g.nodes[i]->cond.handle;
      for (std::size_t b = 0; b < c->bodies.size(); ++b)
        apply_update(*c->bodies[b], *g.nodes[i]->cond.bodies[b]);
    }
  }
}

}  // namespace cudamux::core

namespace cudamux::impl {
using core::ExecNode;
using core::Graph;
using core::GraphExec;
using core::GraphNode;
using core::reject;

namespace {

constexpr unsigned long long kInstantiateFlags =
    CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD |
    CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY;

CUresult instantiate(CUgraphExec* out, CUgraph hGraph, unsigned long long flags,
                     CUgraphNode* error_node, CUgraphInstantiateResult* result, const char* fn) {
  if (result) *result = CUDA_GRAPH_INSTANTIATE_ERROR;
  if (error_node) *error_node = nullptr;
  if (!out) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  if (flags & ~kInstantiateFlags) return reject(CUDA_ERROR_INVALID_VALUE, fn, "invalid flags");
  if (flags & CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH) {
    core::Core::get().log().warn(
        "{}: graphs for device-side launch (CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH) are not "
        "supported: returning CUDA_ERROR_NOT_SUPPORTED",
        fn);
    if (result) *result = CUDA_GRAPH_INSTANTIATE_NODE_OPERATION_NOT_SUPPORTED;
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  std::lock_guard lock(core::graph_mutex());
  Graph* g = core::graph_of(hGraph);
  if (!g) return reject(CUDA_ERROR_INVALID_VALUE, fn, "invalid graph");
  std::unique_ptr<GraphExec> x;
  const GraphNode* bad = nullptr;
  if (CUresult r = core::build_exec(*g, flags, x, bad, fn)) {
    if (error_node && bad) *error_node = bad->handle;
    if (result) *result = CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE;
    return r;
  }
  if (x->has_conditional) {
    // CUDA allows one executable graph at a time of a graph with conditional nodes (each
    // handle has one value).
    if (g->instances->load(std::memory_order_acquire) > 0) {
      if (result) *result = CUDA_GRAPH_INSTANTIATE_ERROR;
      return reject(CUDA_ERROR_INVALID_VALUE, fn,
                    "a graph with conditional nodes may have one executable graph at a time");
    }
  }
  const auto h = core::graph_handles().execs.insert(x.get());
  if (!h) return CUDA_ERROR_OUT_OF_MEMORY;
  x->handle = reinterpret_cast<CUgraphExec>(h);
  if (x->has_conditional) {
    x->instances = g->instances;
    x->instances->fetch_add(1, std::memory_order_acq_rel);
  }
  // The executable graph keeps its own references to the graph's user objects.
  for (auto& [obj, count] : g->user_objects) {
    obj->refs.fetch_add(count, std::memory_order_relaxed);
    x->user_objects[obj] += count;
  }
  *out = x.release()->handle;
  if (result) *result = CUDA_GRAPH_INSTANTIATE_SUCCESS;
  return CUDA_SUCCESS;
}

CUresult graph_launch(CUgraphExec h, CUstream hStream, bool per_thread, const char* fn) {
  GraphExec* x = core::exec_of(h);
  if (!x) return reject(CUDA_ERROR_INVALID_VALUE, fn, "invalid executable graph");
  core::Stream* s = nullptr;
  if (CUresult r = core::resolve_stream(hStream, per_thread, s)) return r;
  // NVIDIA's driver 580 refuses a graph launch into a capture (and invalidates it).
  if (core::capture_applies(*s)) return core::capture_forbidden(*s, fn);
  return core::launch_exec(*x, *s, fn);
}

CUresult graph_upload(CUgraphExec h, CUstream hStream, bool per_thread) {
  const char* fn = "cuGraphUpload";
  if (!core::exec_of(h)) return reject(CUDA_ERROR_INVALID_VALUE, fn, "invalid executable graph");
  core::Stream* s = nullptr;
  // Nothing to upload: executable graphs live in host memory on every backend the core runs.
  return core::resolve_stream(hStream, per_thread, s);
}

// The executable graph's node for `hNode` (a node of the graph it came from), of `type`.
CUresult exec_node(GraphExec& x, CUgraphNode hNode, CUgraphNodeType type, ExecNode*& out,
                   GraphNode*& node, const char* fn) {
  node = core::node_of(hNode);
  const auto it = x.by_origin.find(reinterpret_cast<std::uintptr_t>(hNode));
  if (!node || it == x.by_origin.end())
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "the node is not part of the executable graph");
  out = &x.nodes[it->second];
  if (out->type != type) return reject(CUDA_ERROR_INVALID_VALUE, fn, "node of another type");
  return CUDA_SUCCESS;
}

// Applies `probe`'s payload to the executable node when CUDA's update rules allow it.
CUresult exec_set(CUgraphExec hExec, CUgraphNode hNode, CUgraphNodeType type, const char* fn,
                  const std::function<CUresult(GraphNode& probe, const ExecNode& current)>& fill) {
  std::lock_guard lock(core::graph_mutex());
  GraphExec* x = core::exec_of(hExec);
  if (!x) return reject(CUDA_ERROR_INVALID_VALUE, fn, "invalid executable graph");
  ExecNode* e = nullptr;
  GraphNode* node = nullptr;
  if (CUresult r = exec_node(*x, hNode, type, e, node, fn)) return r;
  GraphNode probe;
  probe.type = type;
  probe.kernel.attributes = e->kernel.attributes;
  probe.kernel.cooperative = e->kernel.cooperative;
  probe.kernel.priority = e->kernel.priority;
  std::copy(std::begin(e->kernel.cluster), std::end(e->kernel.cluster), probe.kernel.cluster);
  if (CUresult r = fill(probe, *e)) return r;
  if (core::update_allowed(*e, probe) != CU_GRAPH_EXEC_UPDATE_SUCCESS)
    return reject(CUDA_ERROR_INVALID_VALUE, fn,
                  "the change is not allowed on an executable graph (memory type, device, "
                  "context or 2D memset)");
  std::lock_guard xlock(x->mutex);
  core::copy_exec_payload(probe, *e);
  x->drop_native();
  return CUDA_SUCCESS;
}

}  // namespace

CUresult cuGraphInstantiateWithFlags(CUgraphExec* out, CUgraph g, unsigned long long flags) {
  return instantiate(out, g, flags, nullptr, nullptr, "cuGraphInstantiateWithFlags");
}

CUresult cuGraphInstantiate(CUgraphExec* out, CUgraph g, CUgraphNode* errNode, char* log,
                            size_t logSize) {
  const CUresult r = instantiate(out, g, 0, errNode, nullptr, "cuGraphInstantiate");
  if (log && logSize) {
    const char* msg = r == CUDA_SUCCESS ? "" : "graph instantiation failed (see cudamux's log)";
    std::strncpy(log, msg, logSize - 1);
    log[logSize - 1] = '\0';
  }
  return r;
}
CUresult cuGraphInstantiate_v2(CUgraphExec* out, CUgraph g, CUgraphNode* errNode, char* log,
                               size_t logSize) {
  return impl::cuGraphInstantiate(out, g, errNode, log, logSize);
}

namespace {
CUresult instantiate_with_params(CUgraphExec* out, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS* p,
                                 bool per_thread) {
  const char* fn = "cuGraphInstantiateWithParams";
  if (!p) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null parameters");
  p->hErrNode_out = nullptr;
  CUresult r = instantiate(out, g, p->flags, &p->hErrNode_out, &p->result_out, fn);
  if (r == CUDA_SUCCESS && (p->flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD)) {
    r = graph_upload(*out, p->hUploadStream, per_thread);
    if (r != CUDA_SUCCESS) {
      (void)impl::cuGraphExecDestroy(*out);
      p->result_out = CUDA_GRAPH_INSTANTIATE_ERROR;
    }
  }
  return r;
}
}  // namespace

CUresult cuGraphInstantiateWithParams(CUgraphExec* out, CUgraph g,
                                      CUDA_GRAPH_INSTANTIATE_PARAMS* p) {
  return instantiate_with_params(out, g, p, false);
}
CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec* out, CUgraph g,
                                           CUDA_GRAPH_INSTANTIATE_PARAMS* p) {
  return instantiate_with_params(out, g, p, true);
}

CUresult cuGraphExecGetFlags(CUgraphExec h, cuuint64_t* flags) {
  if (!flags) return reject(CUDA_ERROR_INVALID_VALUE, "cuGraphExecGetFlags", "null out-pointer");
  GraphExec* x = core::exec_of(h);
  if (!x)
    return reject(CUDA_ERROR_INVALID_VALUE, "cuGraphExecGetFlags", "invalid executable graph");
  *flags = x->flags;
  return CUDA_SUCCESS;
}

CUresult cuGraphLaunch(CUgraphExec h, CUstream s) {
  return graph_launch(h, s, false, "cuGraphLaunch");
}
CUresult cuGraphLaunch_ptsz(CUgraphExec h, CUstream s) {
  return graph_launch(h, s, true, "cuGraphLaunch");
}
CUresult cuGraphUpload(CUgraphExec h, CUstream s) { return graph_upload(h, s, false); }
CUresult cuGraphUpload_ptsz(CUgraphExec h, CUstream s) { return graph_upload(h, s, true); }

CUresult cuGraphExecDestroy(CUgraphExec h) {
  GraphExec* x = nullptr;
  {
    std::lock_guard lock(core::graph_mutex());
    x = core::graph_handles().execs.erase(reinterpret_cast<std::uintptr_t>(h));
  }
  if (!x) return reject(CUDA_ERROR_INVALID_VALUE, "cuGraphExecDestroy", "invalid executable graph");
  std::unique_ptr<GraphExec> owned(x);
  {
    std::lock_guard xlock(x->mutex);  // a launch in progress on another thread finishes first
  }
  core::forget_exec(*x);
  if (x->instances) x->instances->fetch_sub(1, std::memory_order_acq_rel);
  // User objects are released once the executable graph's launches are submitted; their
  // destructors may run before those launches complete (CU_USER_OBJECT_NO_DESTRUCTOR_SYNC,
  // the only mode CUDA offers, allows no synchronisation either way).
  for (auto& [obj, count] : x->user_objects) core::release_user_object_refs(*obj, count);
  return CUDA_SUCCESS;
}

// --- whole-graph update ---

namespace {
CUresult exec_update(CUgraphExec hExec, CUgraph hGraph, CUgraphExecUpdateResultInfo& info) {
  const char* fn = "cuGraphExecUpdate";
  info = CUgraphExecUpdateResultInfo{};
  info.result = CU_GRAPH_EXEC_UPDATE_ERROR;
  std::lock_guard lock(core::graph_mutex());
  GraphExec* x = core::exec_of(hExec);
  Graph* g = core::graph_of(hGraph);
  if (!x || !g) return reject(CUDA_ERROR_INVALID_VALUE, fn, "invalid executable graph or graph");
  const GraphNode* err = nullptr;
  const GraphNode* err_from = nullptr;
  info.result = core::check_update(*x, *g, err, err_from);
  info.errorNode = err ? err->handle : nullptr;
  info.errorFromNode = err_from ? err_from->handle : nullptr;
  if (info.result != CU_GRAPH_EXEC_UPDATE_SUCCESS) {
    core::Core::get().log().debug("{}: update refused (result {})", fn,
                                  static_cast<int>(info.result));
    return CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
  }
  std::lock_guard xlock(x->mutex);
  core::apply_update(*x, *g);
  x->drop_native();
  return CUDA_SUCCESS;
}
}  // namespace

CUresult cuGraphExecUpdate_v2(CUgraphExec hExec, CUgraph hGraph,
                              CUgraphExecUpdateResultInfo* info) {
  if (!info) return reject(CUDA_ERROR_INVALID_VALUE, "cuGraphExecUpdate", "null result info");
  return exec_update(hExec, hGraph, *info);
}
CUresult cuGraphExecUpdate(CUgraphExec hExec, CUgraph hGraph, CUgraphNode* errNode,
                           CUgraphExecUpdateResult* result) {
  if (!errNode || !result)
    return reject(CUDA_ERROR_INVALID_VALUE, "cuGraphExecUpdate", "null out-pointer");
  CUgraphExecUpdateResultInfo info{};
  const CUresult r = exec_update(hExec, hGraph, info);
  *errNode = info.errorNode;
  *result = info.result;
  return r;
}

// --- per-node updates of an executable graph ---

CUresult cuGraphExecKernelNodeSetParams_v2(CUgraphExec x, CUgraphNode n,
                                           const CUDA_KERNEL_NODE_PARAMS* p) {
  const char* fn = "cuGraphExecKernelNodeSetParams";
  if (!p) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null parameters");
  return exec_set(x, n, CU_GRAPH_NODE_TYPE_KERNEL, fn, [&](GraphNode& probe, const ExecNode&) {
    return core::prepare_kernel(*p, probe.kernel, fn);
  });
}
CUresult cuGraphExecKernelNodeSetParams(CUgraphExec x, CUgraphNode n,
                                        const CUDA_KERNEL_NODE_PARAMS_v1* p) {
  if (!p)
    return reject(CUDA_ERROR_INVALID_VALUE, "cuGraphExecKernelNodeSetParams", "null parameters");
  CUDA_KERNEL_NODE_PARAMS v2{};
  std::memcpy(&v2, p, sizeof *p);
  return impl::cuGraphExecKernelNodeSetParams_v2(x, n, &v2);
}

CUresult cuGraphExecMemcpyNodeSetParams(CUgraphExec x, CUgraphNode n, const CUDA_MEMCPY3D* p,
                                        CUcontext ctx) {
  const char* fn = "cuGraphExecMemcpyNodeSetParams";
  if (!p) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null parameters");
  return exec_set(x, n, CU_GRAPH_NODE_TYPE_MEMCPY, fn, [&](GraphNode& probe, const ExecNode&) {
    return core::prepare_copy(*p, ctx, probe.copy, fn);
  });
}

CUresult cuGraphExecMemsetNodeSetParams(CUgraphExec x, CUgraphNode n,
                                        const CUDA_MEMSET_NODE_PARAMS* p, CUcontext ctx) {
  const char* fn = "cuGraphExecMemsetNodeSetParams";
  if (!p) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null parameters");
  return exec_set(x, n, CU_GRAPH_NODE_TYPE_MEMSET, fn, [&](GraphNode& probe, const ExecNode&) {
    return core::prepare_fill(*p, ctx, probe.fill, fn);
  });
}

CUresult cuGraphExecHostNodeSetParams(CUgraphExec x, CUgraphNode n,
                                      const CUDA_HOST_NODE_PARAMS* p) {
  const char* fn = "cuGraphExecHostNodeSetParams";
  if (!p || !p->fn) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null host function");
  return exec_set(x, n, CU_GRAPH_NODE_TYPE_HOST, fn, [&](GraphNode& probe, const ExecNode&) {
    probe.host = *p;
    return CUDA_SUCCESS;
  });
}

CUresult cuGraphExecBatchMemOpNodeSetParams(CUgraphExec x, CUgraphNode n,
                                            const CUDA_BATCH_MEM_OP_NODE_PARAMS* p) {
  const char* fn = "cuGraphExecBatchMemOpNodeSetParams";
  if (!p) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null parameters");
  return exec_set(x, n, CU_GRAPH_NODE_TYPE_BATCH_MEM_OP, fn,
                  [&](GraphNode& probe, const ExecNode&) {
                    return core::prepare_memop_node(*p, probe.memop, fn);
                  });
}

namespace {
CUresult exec_event_set(CUgraphExec x, CUgraphNode n, CUgraphNodeType type, CUevent e,
                        const char* fn) {
  return exec_set(x, n, type, fn, [&](GraphNode& probe, const ExecNode&) {
    if (!core::event_of(e)) return reject(CUDA_ERROR_INVALID_HANDLE, fn, "invalid event");
    probe.event = e;
    return CUDA_SUCCESS;
  });
}
}  // namespace

CUresult cuGraphExecEventRecordNodeSetEvent(CUgraphExec x, CUgraphNode n, CUevent e) {
  return exec_event_set(x, n, CU_GRAPH_NODE_TYPE_EVENT_RECORD, e,
                        "cuGraphExecEventRecordNodeSetEvent");
}
CUresult cuGraphExecEventWaitNodeSetEvent(CUgraphExec x, CUgraphNode n, CUevent e) {
  return exec_event_set(x, n, CU_GRAPH_NODE_TYPE_WAIT_EVENT, e, "cuGraphExecEventWaitNodeSetEvent");
}

CUresult cuGraphExecChildGraphNodeSetParams(CUgraphExec hExec, CUgraphNode hNode, CUgraph child) {
  const char* fn = "cuGraphExecChildGraphNodeSetParams";
  std::lock_guard lock(core::graph_mutex());
  GraphExec* x = core::exec_of(hExec);
  if (!x) return reject(CUDA_ERROR_INVALID_VALUE, fn, "invalid executable graph");
  ExecNode* e = nullptr;
  GraphNode* node = nullptr;
  if (CUresult r = exec_node(*x, hNode, CU_GRAPH_NODE_TYPE_GRAPH, e, node, fn)) return r;
  Graph* g = core::graph_of(child);
  if (!g) return reject(CUDA_ERROR_INVALID_VALUE, fn, "invalid graph");
  const GraphNode* err = nullptr;
  const GraphNode* err_from = nullptr;
  if (core::check_update(*e->child, *g, err, err_from) != CU_GRAPH_EXEC_UPDATE_SUCCESS)
    return reject(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, fn,
                  "the graph's topology or parameters differ from the child graph's");
  std::lock_guard xlock(x->mutex);
  core::apply_update(*e->child, *g);
  x->drop_native();
  return CUDA_SUCCESS;
}

CUresult cuGraphExecNodeSetParams(CUgraphExec x, CUgraphNode n, CUgraphNodeParams* p) {
  const char* fn = "cuGraphExecNodeSetParams";
  if (!p) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null parameters");
  switch (p->type) {
    case CU_GRAPH_NODE_TYPE_KERNEL: {
      CUDA_KERNEL_NODE_PARAMS k{};
      std::memcpy(&k, &p->kernel, sizeof k);
      return impl::cuGraphExecKernelNodeSetParams_v2(x, n, &k);
    }
    case CU_GRAPH_NODE_TYPE_MEMCPY:
      return impl::cuGraphExecMemcpyNodeSetParams(x, n, &p->memcpy.copyParams, p->memcpy.copyCtx);
    case CU_GRAPH_NODE_TYPE_MEMSET: {
      const CUDA_MEMSET_NODE_PARAMS m{p->memset.dst,         p->memset.pitch, p->memset.value,
                                      p->memset.elementSize, p->memset.width, p->memset.height};
      return impl::cuGraphExecMemsetNodeSetParams(x, n, &m, p->memset.ctx);
    }
    case CU_GRAPH_NODE_TYPE_HOST: {
      const CUDA_HOST_NODE_PARAMS h{p->host.fn, p->host.userData};
      return impl::cuGraphExecHostNodeSetParams(x, n, &h);
    }
    case CU_GRAPH_NODE_TYPE_GRAPH:
      return impl::cuGraphExecChildGraphNodeSetParams(x, n, p->graph.graph);
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
      return impl::cuGraphExecEventRecordNodeSetEvent(x, n, p->eventRecord.event);
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
      return impl::cuGraphExecEventWaitNodeSetEvent(x, n, p->eventWait.event);
    case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP: {
      const CUDA_BATCH_MEM_OP_NODE_PARAMS m{p->memOp.ctx, p->memOp.count, p->memOp.paramArray,
                                            p->memOp.flags};
      return impl::cuGraphExecBatchMemOpNodeSetParams(x, n, &m);
    }
    case CU_GRAPH_NODE_TYPE_EMPTY:
      return exec_set(x, n, CU_GRAPH_NODE_TYPE_EMPTY, fn,
                      [](GraphNode&, const ExecNode&) { return CUDA_SUCCESS; });
    default:
      return reject(CUDA_ERROR_INVALID_VALUE, fn, "parameters of this node type cannot be updated");
  }
}

CUresult cuGraphNodeSetEnabled(CUgraphExec hExec, CUgraphNode hNode, unsigned int isEnabled) {
  const char* fn = "cuGraphNodeSetEnabled";
  std::lock_guard lock(core::graph_mutex());
  GraphExec* x = core::exec_of(hExec);
  if (!x) return reject(CUDA_ERROR_INVALID_VALUE, fn, "invalid executable graph");
  GraphNode* node = core::node_of(hNode);
  const auto it = x->by_origin.find(reinterpret_cast<std::uintptr_t>(hNode));
  if (!node || it == x->by_origin.end())
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "the node is not part of the executable graph");
  ExecNode& e = x->nodes[it->second];
  if (e.type != CU_GRAPH_NODE_TYPE_KERNEL && e.type != CU_GRAPH_NODE_TYPE_MEMCPY &&
      e.type != CU_GRAPH_NODE_TYPE_MEMSET)
    return reject(CUDA_ERROR_INVALID_VALUE, fn,
                  "only kernel, memcpy and memset nodes can be disabled");
  std::lock_guard xlock(x->mutex);
  if (e.enabled != (isEnabled != 0)) x->drop_native();
  e.enabled = isEnabled != 0;
  return CUDA_SUCCESS;
}

CUresult cuGraphNodeGetEnabled(CUgraphExec hExec, CUgraphNode hNode, unsigned int* isEnabled) {
  const char* fn = "cuGraphNodeGetEnabled";
  if (!isEnabled) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  std::lock_guard lock(core::graph_mutex());
  GraphExec* x = core::exec_of(hExec);
  if (!x) return reject(CUDA_ERROR_INVALID_VALUE, fn, "invalid executable graph");
  GraphNode* node = core::node_of(hNode);
  const auto it = x->by_origin.find(reinterpret_cast<std::uintptr_t>(hNode));
  if (!node || it == x->by_origin.end())
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "the node is not part of the executable graph");
  const ExecNode& e = x->nodes[it->second];
  if (e.type != CU_GRAPH_NODE_TYPE_KERNEL && e.type != CU_GRAPH_NODE_TYPE_MEMCPY &&
      e.type != CU_GRAPH_NODE_TYPE_MEMSET)
    return reject(CUDA_ERROR_INVALID_VALUE, fn,
                  "only kernel, memcpy and memset nodes can be disabled");
  *isEnabled = e.enabled ? 1u : 0u;
  return CUDA_SUCCESS;
}

}  // namespace cudamux::impl
