// Stream capture (issue 16): work submitted to a capturing stream becomes graph nodes.
//
// A capture session starts at cuStreamBeginCapture on its origin stream; other streams join it
// by waiting on an event recorded in it (cross-stream capture), and must be joined back into
// the origin stream before cuStreamEndCapture. Each stream in a session keeps its current
// capture dependencies: the nodes the next captured operation depends on. CUDA's illegal
// operations invalidate the session: from then on captured calls answer
// CUDA_ERROR_STREAM_CAPTURE_INVALIDATED and cuStreamEndCapture returns no graph.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <unordered_set>

#include "array.hpp"
#include "cudamux/driver_impl.hpp"
#include "graph.hpp"

namespace cudamux::core {

std::atomic<int> g_active_captures{0};

struct EventCapture {
  std::uint64_t session = 0;
  std::vector<Edge> deps;
};

namespace {

std::uint64_t g_next_session = 1;
// Live sessions by id; guarded by graph_mutex().
std::unordered_map<std::uint64_t, std::unique_ptr<CaptureSession>>& sessions() {
  static auto* m = new std::unordered_map<std::uint64_t, std::unique_ptr<CaptureSession>>;
  return *m;
}

thread_local CUstreamCaptureMode t_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
thread_local char t_identity;
std::uintptr_t this_thread() noexcept { return reinterpret_cast<std::uintptr_t>(&t_identity); }

CaptureSession* session_of(std::uint64_t id) {
  auto it = sessions().find(id);
  return it == sessions().end() ? nullptr : it->second.get();
}

void invalidate(CaptureSession& c, CUresult why, const char* fn) {
  if (c.invalidated != CUDA_SUCCESS) return;
  c.invalidated = why;
  Core::get().log().debug("{}: stream capture {} invalidated", fn, c.id);
}

// Invalidates the captures of the context's blocking streams: the legacy stream was used while
// they capture, an implicit dependency CUDA forbids.
CUresult implicit_dependency(Context& ctx, const char* fn) {
  for (auto& [id, c] : sessions()) {
    for (Stream* s : c->streams)
      if (s->ctx == &ctx && s->blocking()) invalidate(*c, CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, fn);
  }
  return reject(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, fn,
                "the legacy stream was used while a blocking stream of its context captures");
}

void join(CaptureSession& c, Stream& s, std::vector<Edge> deps) {
  auto* sc = new StreamCapture;
  sc->session = &c;
  sc->deps = std::move(deps);
  c.streams.push_back(&s);
  s.capture.store(sc, std::memory_order_release);
  if (s.blocking()) s.ctx->blocking_captures.fetch_add(1, std::memory_order_acq_rel);
}

void leave(Stream& s) {
  StreamCapture* sc = s.capture.exchange(nullptr, std::memory_order_acq_rel);
  if (!sc) return;
  if (s.blocking()) s.ctx->blocking_captures.fetch_sub(1, std::memory_order_acq_rel);
  delete sc;
}

// Ends a session: every stream leaves it; the graph goes to the caller (`keep`) or is
// destroyed when the session created it.
Graph* end_session(CaptureSession& c, bool keep) {
  for (Stream* s : c.streams) leave(*s);
  Graph* g = c.graph;
  if (g) g->capturing = nullptr;
  if (!keep && c.owns_graph) {
    destroy_graph(std::unique_ptr<Graph>(g));
    g = nullptr;
  }
  g_active_captures.fetch_sub(1, std::memory_order_acq_rel);
  sessions().erase(c.id);
  return g;
}

// The stream's capture when work may be added to it (graph_mutex() held).
CUresult capture_target(Stream& s, StreamCapture*& sc, const char* fn) {
  sc = s.capture.load(std::memory_order_acquire);
  if (!sc) {
    if (s.kind == StreamKind::legacy && s.ctx->blocking_captures.load() > 0)
      return implicit_dependency(*s.ctx, fn);
    return reject(CUDA_ERROR_ILLEGAL_STATE, fn, "the stream is not capturing");
  }
  if (sc->session->invalidated != CUDA_SUCCESS)
    return reject(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, fn, "the stream capture was invalidated");
  return CUDA_SUCCESS;
}

template <class Fill>
CUresult add_captured(Stream& s, CUgraphNodeType type, const char* fn, Fill&& fill) {
  std::lock_guard lock(graph_mutex());
  StreamCapture* sc = nullptr;
  if (CUresult r = capture_target(s, sc, fn)) return r;
  if (in_conditional_body(*sc->session->graph) && !body_node_allowed(type)) {
    sc->session->invalidated = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    return reject(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, fn,
                  "this work cannot be captured into a conditional node's body");
  }
  GraphNode& n = add_node(*sc->session->graph, type, sc->deps);
  fill(n);
  sc->deps.assign(1, Edge{&n, {}});
  return CUDA_SUCCESS;
}

CUmemorytype memory_type(backend::MemKind k) {
  return k == backend::MemKind::device || k == backend::MemKind::managed ? CU_MEMORYTYPE_DEVICE
                                                                         : CU_MEMORYTYPE_HOST;
}

// Whether every node in `tails` is an ancestor of (or among) `heads`.
bool joined(const std::vector<Edge>& tails, const std::vector<Edge>& heads) {
  std::unordered_set<const GraphNode*> seen;
  std::vector<const GraphNode*> work;
  for (const Edge& e : heads) work.push_back(e.from);
  while (!work.empty()) {
    const GraphNode* n = work.back();
    work.pop_back();
    if (!seen.insert(n).second) continue;
    for (const Edge& e : n->in) work.push_back(e.from);
  }
  return std::all_of(tails.begin(), tails.end(),
                     [&](const Edge& e) { return seen.count(e.from) != 0; });
}

}  // namespace

CUresult capture_kernel(Stream& s, Function& f, const LaunchShape& shape, const void* args,
                        std::size_t args_size, const char* fn) {
  return add_captured(s, CU_GRAPH_NODE_TYPE_KERNEL, fn, [&](GraphNode& n) {
    KernelParams& k = n.kernel;
    k.func = f.handle;
    k.ctx = f.module->ctx;
    k.function = &f;
    std::copy(std::begin(shape.grid), std::end(shape.grid), k.grid);
    std::copy(std::begin(shape.block), std::end(shape.block), k.block);
    k.shared = shape.shared;
    k.cooperative = shape.cooperative;
    std::copy(std::begin(shape.cluster), std::end(shape.cluster), k.cluster);
    const auto* bytes = static_cast<const std::byte*>(args);
    k.args.assign(bytes, bytes + args_size);
    refresh_arg_ptrs(k);
    if (shape.cooperative) {
      CUlaunchAttributeValue v{};
      v.cooperative = 1;
      k.attributes[CU_LAUNCH_ATTRIBUTE_COOPERATIVE] = v;
    }
  });
}

CUresult capture_copy(Stream& s, const backend::CopyDesc& d, bool synchronous, const char* fn) {
  if (synchronous) return capture_forbidden(s, fn);
  return add_captured(s, CU_GRAPH_NODE_TYPE_MEMCPY, fn, [&](GraphNode& n) {
    CopyParams& c = n.copy;
    c.ctx = s.ctx;
    c.desc = d;
    CUDA_MEMCPY3D& p = c.params;
    p = CUDA_MEMCPY3D{};
    p.srcMemoryType = memory_type(d.src_kind);
    p.dstMemoryType = memory_type(d.dst_kind);
    if (p.srcMemoryType == CU_MEMORYTYPE_DEVICE)
      p.srcDevice = reinterpret_cast<CUdeviceptr>(d.src);
    else
      p.srcHost = d.src;
    if (p.dstMemoryType == CU_MEMORYTYPE_DEVICE)
      p.dstDevice = reinterpret_cast<CUdeviceptr>(d.dst);
    else
      p.dstHost = d.dst;
    p.srcPitch = d.src_pitch;
    p.dstPitch = d.dst_pitch;
    p.srcHeight = d.src_pitch ? d.src_slice / d.src_pitch : 0;
    p.dstHeight = d.dst_pitch ? d.dst_slice / d.dst_pitch : 0;
    p.WidthInBytes = d.width_bytes;
    p.Height = d.height;
    p.Depth = d.depth;
    // issue 17: array ends, as the program gave them.
    if (d.src_array) {
      p.srcMemoryType = CU_MEMORYTYPE_ARRAY;
      p.srcHost = nullptr;
      p.srcDevice = 0;
      p.srcPitch = p.srcHeight = 0;
      p.srcArray = array_for_backend(d.src_array);
      p.srcXInBytes = d.src_x_bytes;
      p.srcY = d.src_y;
      p.srcZ = d.src_z;
    }
    if (d.dst_array) {
      p.dstMemoryType = CU_MEMORYTYPE_ARRAY;
      p.dstHost = nullptr;
      p.dstDevice = 0;
      p.dstPitch = p.dstHeight = 0;
      p.dstArray = array_for_backend(d.dst_array);
      p.dstXInBytes = d.dst_x_bytes;
      p.dstY = d.dst_y;
      p.dstZ = d.dst_z;
    }
  });
}

CUresult capture_fill(Stream& s, const backend::FillDesc& d, bool synchronous, const char* fn) {
  if (synchronous) return capture_forbidden(s, fn);
  return add_captured(s, CU_GRAPH_NODE_TYPE_MEMSET, fn, [&](GraphNode& n) {
    n.fill.ctx = s.ctx;
    n.fill.desc = d;
    n.fill.params = {reinterpret_cast<CUdeviceptr>(d.dst),
                     d.pitch,
                     d.value,
                     d.elem_size,
                     d.width_elems,
                     d.height};
  });
}

CUresult capture_host(Stream& s, CUhostFn fn, void* user, const char* api) {
  return add_captured(s, CU_GRAPH_NODE_TYPE_HOST, api, [&](GraphNode& n) {
    n.host = CUDA_HOST_NODE_PARAMS{fn, user};
  });
}

CUresult capture_memops(Stream& s, unsigned count, const CUstreamBatchMemOpParams* ops, bool v2,
                        const char* fn) {
  if (count == 0) return CUDA_SUCCESS;  // nothing to record
  MemOpParams m;
  m.ctx = s.ctx;
  if (CUresult r = prepare_memops(*s.ctx, count, ops, 0, v2, m.prepared, fn)) return r;
  m.ops.assign(ops, ops + count);
  return add_captured(s, CU_GRAPH_NODE_TYPE_BATCH_MEM_OP, fn,
                      [&](GraphNode& n) { n.memop = std::move(m); });
}

CUresult capture_mem_alloc(Stream& s, std::size_t bytes, CUdeviceptr& out, const char* fn) {
  std::lock_guard lock(graph_mutex());
  StreamCapture* sc = nullptr;
  if (CUresult r = capture_target(s, sc, fn)) return r;
  CUDA_MEM_ALLOC_NODE_PARAMS p{};
  p.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  p.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  p.poolProps.location.id = s.ctx->device;
  p.bytesize = bytes;
  AllocParams a;
  if (CUresult r = prepare_alloc(p, a, fn)) return r;
  GraphNode& n = add_node(*sc->session->graph, CU_GRAPH_NODE_TYPE_MEM_ALLOC, sc->deps);
  n.alloc = std::move(a);
  n.alloc.params.accessDescs = n.alloc.access.empty() ? nullptr : n.alloc.access.data();
  sc->deps.assign(1, Edge{&n, {}});
  out = p.dptr;
  return CUDA_SUCCESS;
}

CUresult capture_mem_free(Stream& s, CUdeviceptr p, const char* fn) {
  std::lock_guard lock(graph_mutex());
  StreamCapture* sc = nullptr;
  if (CUresult r = capture_target(s, sc, fn)) return r;
  if (CUresult r = prepare_free(p, fn)) {
    invalidate(*sc->session, r, fn);
    return r;
  }
  GraphNode& n = add_node(*sc->session->graph, CU_GRAPH_NODE_TYPE_MEM_FREE, sc->deps);
  n.free_ptr = p;
  sc->deps.assign(1, Edge{&n, {}});
  return CUDA_SUCCESS;
}

CUresult capture_event_record(Stream& s, Event& e, const char* fn) {
  std::lock_guard lock(graph_mutex());
  StreamCapture* sc = nullptr;
  if (CUresult r = capture_target(s, sc, fn)) return r;
  auto ec = std::make_shared<EventCapture>();
  ec->session = sc->session->id;
  ec->deps = sc->deps;
  e.captured = std::move(ec);
  e.in_capture.store(true, std::memory_order_release);
  return CUDA_SUCCESS;
}

CUresult capture_event_wait(Stream& s, Event& e, unsigned flags, const char* fn) {
  std::lock_guard lock(graph_mutex());
  CaptureSession* from = e.captured ? session_of(e.captured->session) : nullptr;
  StreamCapture* sc = s.capture.load(std::memory_order_acquire);
  if (!sc && s.kind == StreamKind::legacy && s.ctx->blocking_captures.load() > 0)
    return implicit_dependency(*s.ctx, fn);
  if (from) {
    if (from->invalidated != CUDA_SUCCESS)
      return reject(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, fn,
                    "the stream capture was invalidated");
    if (!sc) {
      if (s.kind == StreamKind::legacy) return implicit_dependency(*s.ctx, fn);
      join(*from, s, e.captured->deps);  // the stream joins the capture (fork)
      return CUDA_SUCCESS;
    }
    if (sc->session != from) {
      invalidate(*sc->session, CUDA_ERROR_STREAM_CAPTURE_ISOLATION, fn);
      invalidate(*from, CUDA_ERROR_STREAM_CAPTURE_ISOLATION, fn);
      return reject(CUDA_ERROR_STREAM_CAPTURE_ISOLATION, fn,
                    "the event was recorded in another stream capture");
    }
    if (sc->session->invalidated != CUDA_SUCCESS)
      return reject(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, fn,
                    "the stream capture was invalidated");
    for (const Edge& d : e.captured->deps) {
      const bool present = std::any_of(sc->deps.begin(), sc->deps.end(),
                                       [&](const Edge& x) { return x.from == d.from; });
      if (!present) sc->deps.push_back(d);  // join
    }
    return CUDA_SUCCESS;
  }
  if (!sc) {
    // Recorded in a capture that has ended: it stands for no work that could be waited on.
    return CUDA_SUCCESS;
  }
  if (sc->session->invalidated != CUDA_SUCCESS)
    return reject(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, fn, "the stream capture was invalidated");
  if (flags & CU_EVENT_WAIT_EXTERNAL) {
    GraphNode& n = add_node(*sc->session->graph, CU_GRAPH_NODE_TYPE_WAIT_EVENT, sc->deps);
    n.event = e.handle;
    sc->deps.assign(1, Edge{&n, {}});
    return CUDA_SUCCESS;
  }
  invalidate(*sc->session, CUDA_ERROR_STREAM_CAPTURE_ISOLATION, fn);
  return reject(CUDA_ERROR_STREAM_CAPTURE_ISOLATION, fn,
                "a capturing stream waited on an event recorded outside the capture");
}

CUresult capture_forbidden(Stream& s, const char* fn) {
  std::lock_guard lock(graph_mutex());
  StreamCapture* sc = s.capture.load(std::memory_order_acquire);
  if (!sc) {
    if (s.kind == StreamKind::legacy && s.ctx->blocking_captures.load() > 0)
      return implicit_dependency(*s.ctx, fn);
    return CUDA_SUCCESS;  // the capture ended meanwhile
  }
  invalidate(*sc->session, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, fn);
  return reject(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, fn,
                "operation not permitted when the stream is capturing");
}

void forget_event_capture(Event& e) noexcept {
  std::lock_guard lock(graph_mutex());
  e.captured.reset();
  e.in_capture.store(false, std::memory_order_release);
}

CUresult check_unsafe_call(const char* fn) noexcept {
  if (t_mode == CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_SUCCESS;
  std::lock_guard lock(graph_mutex());
  bool prohibited = false;
  for (auto& [id, c] : sessions()) {
    const bool mine = c->thread == this_thread();
    if ((mine && c->mode != CU_STREAM_CAPTURE_MODE_RELAXED) ||
        (!mine && t_mode == CU_STREAM_CAPTURE_MODE_GLOBAL &&
         c->mode == CU_STREAM_CAPTURE_MODE_GLOBAL)) {
      invalidate(*c, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, fn);
      prohibited = true;
    }
  }
  if (!prohibited) return CUDA_SUCCESS;
  return reject(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, fn,
                "potentially unsafe call while a stream capture is active (see "
                "cuThreadExchangeStreamCaptureMode)");
}

void abandon_captures(Context& ctx) noexcept {
  std::lock_guard lock(graph_mutex());
  std::vector<CaptureSession*> doomed;
  for (auto& [id, c] : sessions())
    if (c->origin->ctx == &ctx) doomed.push_back(c.get());
  for (CaptureSession* c : doomed) (void)end_session(*c, false);
}

void abandon_stream_capture(Stream& s) noexcept {
  std::lock_guard lock(graph_mutex());
  StreamCapture* sc = s.capture.load(std::memory_order_acquire);
  if (!sc) return;
  CaptureSession& c = *sc->session;
  if (c.origin == &s) {
    (void)end_session(c, false);
    return;
  }
  // A forked stream may go once its work is joined back into the origin (NVIDIA's
  // graphMemoryNodes sample destroys one mid-capture); unjoined work could never be joined now.
  StreamCapture* origin = c.origin->capture.load(std::memory_order_acquire);
  if (!origin || !joined(sc->deps, origin->deps))
    invalidate(c, CUDA_ERROR_STREAM_CAPTURE_UNJOINED, "cuStreamDestroy");
  std::erase(c.streams, &s);
  leave(s);
}

}  // namespace cudamux::core

namespace cudamux::impl {
using core::CaptureSession;
using core::Edge;
using core::Graph;
using core::reject;
using core::Stream;
using core::StreamCapture;

namespace {

CUresult begin_capture(CUstream h, CUstreamCaptureMode mode, CUgraph into, const CUgraphNode* deps,
                       const CUgraphEdgeData* data, std::size_t count, bool per_thread,
                       const char* fn) {
  if (static_cast<unsigned>(mode) > CU_STREAM_CAPTURE_MODE_RELAXED)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "unknown capture mode");
  Stream* s = nullptr;
  if (CUresult r = core::resolve_stream(h, per_thread, s)) return r;
  if (s->kind == core::StreamKind::legacy)
    return reject(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, fn,
                  "the legacy default stream cannot be captured");
  std::lock_guard lock(core::graph_mutex());
  if (s->capture.load())
    return reject(CUDA_ERROR_ILLEGAL_STATE, fn, "the stream is already capturing");
  Graph* g = nullptr;
  std::vector<Edge> start;
  if (into) {
    g = core::graph_of(into);
    if (!g) return reject(CUDA_ERROR_INVALID_VALUE, fn, "invalid graph");
    if (g->capturing)
      return reject(CUDA_ERROR_INVALID_VALUE, fn, "the graph is already captured into");
    if (count && !deps) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null dependency array");
    for (std::size_t i = 0; i < count; ++i) {
      core::GraphNode* n = core::node_of(deps[i]);
      if (!n || n->graph != g)
        return reject(CUDA_ERROR_INVALID_VALUE, fn, "dependency is not a node of the graph");
      start.push_back({n, data ? data[i] : CUgraphEdgeData{}});
    }
  }
  auto c = std::make_unique<CaptureSession>();
  c->id = core::g_next_session++;
  c->mode = mode;
  c->thread = core::this_thread();
  c->origin = s;
  c->owns_graph = into == nullptr;
  if (!into) {
    auto fresh = core::new_graph();
    if (!fresh) return CUDA_ERROR_OUT_OF_MEMORY;
    g = fresh.release();
  }
  c->graph = g;
  g->capturing = c.get();
  CaptureSession& session = *c;
  core::sessions()[c->id] = std::move(c);
  core::g_active_captures.fetch_add(1, std::memory_order_acq_rel);
  core::join(session, *s, std::move(start));
  return CUDA_SUCCESS;
}

CUresult end_capture(CUstream h, CUgraph* phGraph, bool per_thread) {
  const char* fn = "cuStreamEndCapture";
  Stream* s = nullptr;
  if (CUresult r = core::resolve_stream(h, per_thread, s)) return r;
  std::lock_guard lock(core::graph_mutex());
  StreamCapture* sc = s->capture.load();
  if (!sc) return reject(CUDA_ERROR_ILLEGAL_STATE, fn, "the stream is not capturing");
  CaptureSession& c = *sc->session;
  // A capture into the program's own graph (cuStreamBeginCaptureToGraph) may leave the
  // out-pointer null: the program has the graph already (NVIDIA's graphConditionalNodes sample
  // does so, and passes on NVIDIA's driver). A new graph needs somewhere to go.
  if (!phGraph && c.owns_graph) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  CUgraph ignored = nullptr;
  if (!phGraph) phGraph = &ignored;
  if (c.origin != s) {
    core::invalidate(c, CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, fn);  // as NVIDIA's driver does
    return reject(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, fn,
                  "the capture must end on the stream where it began");
  }
  if (c.mode != CU_STREAM_CAPTURE_MODE_RELAXED && c.thread != core::this_thread())
    return reject(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, fn,
                  "the capture must end on the thread that began it");
  *phGraph = nullptr;
  if (c.invalidated == CUDA_SUCCESS) {
    for (Stream* other : c.streams) {
      if (other == s) continue;
      if (!core::joined(other->capture.load()->deps, sc->deps)) {
        core::invalidate(c, CUDA_ERROR_STREAM_CAPTURE_UNJOINED, fn);
        (void)core::end_session(c, false);
        return reject(CUDA_ERROR_STREAM_CAPTURE_UNJOINED, fn,
                      "a stream forked into the capture was not joined back");
      }
    }
  }
  if (c.invalidated != CUDA_SUCCESS) {
    (void)core::end_session(c, false);
    return reject(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, fn, "the stream capture was invalidated");
  }
  Graph* g = core::end_session(c, true);
  *phGraph = g->handle;
  return CUDA_SUCCESS;
}

CUresult capture_info(CUstream h, CUstreamCaptureStatus* status, cuuint64_t* id, CUgraph* graph,
                      const CUgraphNode** deps, const CUgraphEdgeData** edges, size_t* count,
                      bool per_thread, bool edges_wanted, const char* fn) {
  if (!status) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null status pointer");
  Stream* s = nullptr;
  if (CUresult r = core::resolve_stream(h, per_thread, s)) return r;
  std::lock_guard lock(core::graph_mutex());
  StreamCapture* sc = s->capture.load();
  if (!sc) {
    if (s->kind == core::StreamKind::legacy && s->ctx->blocking_captures.load() > 0)
      return core::implicit_dependency(*s->ctx, fn);
    *status = CU_STREAM_CAPTURE_STATUS_NONE;
    return CUDA_SUCCESS;
  }
  const CaptureSession& c = *sc->session;
  *status = c.invalidated == CUDA_SUCCESS ? CU_STREAM_CAPTURE_STATUS_ACTIVE
                                          : CU_STREAM_CAPTURE_STATUS_INVALIDATED;
  if (id) *id = c.id;
  if (graph) *graph = c.graph->handle;
  sc->deps_out.clear();
  sc->edges_out.clear();
  bool lossy = false;
  for (const Edge& e : sc->deps) {
    sc->deps_out.push_back(e.from->handle);
    sc->edges_out.push_back(e.data);
    static const CUgraphEdgeData zero{};
    if (std::memcmp(&e.data, &zero, sizeof zero) != 0) lossy = true;
  }
  if (deps && !edges_wanted && lossy)
    return reject(CUDA_ERROR_LOSSY_QUERY, fn, "edge data would be lost: use the _v3 call");
  if (deps) *deps = sc->deps_out.empty() ? nullptr : sc->deps_out.data();
  if (edges) *edges = sc->edges_out.empty() ? nullptr : sc->edges_out.data();
  if (count) *count = sc->deps.size();
  return CUDA_SUCCESS;
}

CUresult update_capture_deps(CUstream h, CUgraphNode* deps, const CUgraphEdgeData* data,
                             size_t count, unsigned flags, bool per_thread) {
  const char* fn = "cuStreamUpdateCaptureDependencies";
  if (flags != CU_STREAM_ADD_CAPTURE_DEPENDENCIES && flags != CU_STREAM_SET_CAPTURE_DEPENDENCIES)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "invalid flags");
  if (count && !deps) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null dependency array");
  Stream* s = nullptr;
  if (CUresult r = core::resolve_stream(h, per_thread, s)) return r;
  std::lock_guard lock(core::graph_mutex());
  StreamCapture* sc = nullptr;
  if (CUresult r = core::capture_target(*s, sc, fn)) return r;
  std::vector<Edge> add;
  for (size_t i = 0; i < count; ++i) {
    core::GraphNode* n = core::node_of(deps[i]);
    if (!n || n->graph != sc->session->graph)
      return reject(CUDA_ERROR_INVALID_VALUE, fn, "node is not in the capture graph");
    add.push_back({n, data ? data[i] : CUgraphEdgeData{}});
  }
  if (flags == CU_STREAM_SET_CAPTURE_DEPENDENCIES) sc->deps.clear();
  for (const Edge& e : add) {
    const bool present = std::any_of(sc->deps.begin(), sc->deps.end(),
                                     [&](const Edge& x) { return x.from == e.from; });
    if (!present) sc->deps.push_back(e);
  }
  return CUDA_SUCCESS;
}

}  // namespace

CUresult cuStreamBeginCapture(CUstream h) {
  return begin_capture(h, CU_STREAM_CAPTURE_MODE_GLOBAL, nullptr, nullptr, nullptr, 0, false,
                       "cuStreamBeginCapture");
}
CUresult cuStreamBeginCapture_ptsz(CUstream h) {
  return begin_capture(h, CU_STREAM_CAPTURE_MODE_GLOBAL, nullptr, nullptr, nullptr, 0, true,
                       "cuStreamBeginCapture");
}
CUresult cuStreamBeginCapture_v2(CUstream h, CUstreamCaptureMode mode) {
  return begin_capture(h, mode, nullptr, nullptr, nullptr, 0, false, "cuStreamBeginCapture");
}
CUresult cuStreamBeginCapture_v2_ptsz(CUstream h, CUstreamCaptureMode mode) {
  return begin_capture(h, mode, nullptr, nullptr, nullptr, 0, true, "cuStreamBeginCapture");
}
CUresult cuStreamBeginCaptureToGraph(CUstream h, CUgraph g, const CUgraphNode* deps,
                                     const CUgraphEdgeData* data, size_t n,
                                     CUstreamCaptureMode mode) {
  if (!g) return reject(CUDA_ERROR_INVALID_VALUE, "cuStreamBeginCaptureToGraph", "null graph");
  return begin_capture(h, mode, g, deps, data, n, false, "cuStreamBeginCaptureToGraph");
}
CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream h, CUgraph g, const CUgraphNode* deps,
                                          const CUgraphEdgeData* data, size_t n,
                                          CUstreamCaptureMode mode) {
  if (!g) return reject(CUDA_ERROR_INVALID_VALUE, "cuStreamBeginCaptureToGraph", "null graph");
  return begin_capture(h, mode, g, deps, data, n, true, "cuStreamBeginCaptureToGraph");
}
CUresult cuStreamEndCapture(CUstream h, CUgraph* g) { return end_capture(h, g, false); }
CUresult cuStreamEndCapture_ptsz(CUstream h, CUgraph* g) { return end_capture(h, g, true); }

CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) {
  if (!mode)
    return reject(CUDA_ERROR_INVALID_VALUE, "cuThreadExchangeStreamCaptureMode", "null mode");
  if (static_cast<unsigned>(*mode) > CU_STREAM_CAPTURE_MODE_RELAXED)
    return reject(CUDA_ERROR_INVALID_VALUE, "cuThreadExchangeStreamCaptureMode",
                  "unknown capture mode");
  std::swap(*mode, core::t_mode);
  return CUDA_SUCCESS;
}

CUresult cuStreamIsCapturing(CUstream h, CUstreamCaptureStatus* status) {
  return capture_info(h, status, nullptr, nullptr, nullptr, nullptr, nullptr, false, false,
                      "cuStreamIsCapturing");
}
CUresult cuStreamIsCapturing_ptsz(CUstream h, CUstreamCaptureStatus* status) {
  return capture_info(h, status, nullptr, nullptr, nullptr, nullptr, nullptr, true, false,
                      "cuStreamIsCapturing");
}
CUresult cuStreamGetCaptureInfo(CUstream h, CUstreamCaptureStatus* status, cuuint64_t* id) {
  return capture_info(h, status, id, nullptr, nullptr, nullptr, nullptr, false, false,
                      "cuStreamGetCaptureInfo");
}
CUresult cuStreamGetCaptureInfo_ptsz(CUstream h, CUstreamCaptureStatus* status, cuuint64_t* id) {
  return capture_info(h, status, id, nullptr, nullptr, nullptr, nullptr, true, false,
                      "cuStreamGetCaptureInfo");
}
CUresult cuStreamGetCaptureInfo_v2(CUstream h, CUstreamCaptureStatus* status, cuuint64_t* id,
                                   CUgraph* graph, const CUgraphNode** deps, size_t* count) {
  return capture_info(h, status, id, graph, deps, nullptr, count, false, false,
                      "cuStreamGetCaptureInfo_v2");
}
CUresult cuStreamGetCaptureInfo_v2_ptsz(CUstream h, CUstreamCaptureStatus* status, cuuint64_t* id,
                                        CUgraph* graph, const CUgraphNode** deps, size_t* count) {
  return capture_info(h, status, id, graph, deps, nullptr, count, true, false,
                      "cuStreamGetCaptureInfo_v2");
}
CUresult cuStreamGetCaptureInfo_v3(CUstream h, CUstreamCaptureStatus* status, cuuint64_t* id,
                                   CUgraph* graph, const CUgraphNode** deps,
                                   const CUgraphEdgeData** edges, size_t* count) {
  return capture_info(h, status, id, graph, deps, edges, count, false, true,
                      "cuStreamGetCaptureInfo_v3");
}
CUresult cuStreamGetCaptureInfo_v3_ptsz(CUstream h, CUstreamCaptureStatus* status, cuuint64_t* id,
                                        CUgraph* graph, const CUgraphNode** deps,
                                        const CUgraphEdgeData** edges, size_t* count) {
  return capture_info(h, status, id, graph, deps, edges, count, true, true,
                      "cuStreamGetCaptureInfo_v3");
}

CUresult cuStreamUpdateCaptureDependencies(CUstream h, CUgraphNode* deps, size_t n,
                                           unsigned int flags) {
  return update_capture_deps(h, deps, nullptr, n, flags, false);
}
CUresult cuStreamUpdateCaptureDependencies_ptsz(CUstream h, CUgraphNode* deps, size_t n,
                                                unsigned int flags) {
  return update_capture_deps(h, deps, nullptr, n, flags, true);
}
CUresult cuStreamUpdateCaptureDependencies_v2(CUstream h, CUgraphNode* deps,
                                              const CUgraphEdgeData* data, size_t n,
                                              unsigned int flags) {
  return update_capture_deps(h, deps, data, n, flags, false);
}
CUresult cuStreamUpdateCaptureDependencies_v2_ptsz(CUstream h, CUgraphNode* deps,
                                                   const CUgraphEdgeData* data, size_t n,
                                                   unsigned int flags) {
  return update_capture_deps(h, deps, data, n, flags, true);
}

}  // namespace cudamux::impl
