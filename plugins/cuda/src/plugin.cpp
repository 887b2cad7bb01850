// The cuda backend: every operation passes through to NVIDIA's driver, loaded by full
// path (driver_locator.hpp). It adds no behaviour of its own: values and errors are
// NVIDIA's, mapped by the core with the identity (native codes are CUresult values).
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <array>
#include <atomic>
#include <climits>
#include <cstdint>
#include <iterator>
#include <map>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "compiler.hpp"
#include "config.hpp"
#include "cudamux/backend.hpp"
#include "driver_locator.hpp"
#include "images.hpp"
#include "nvidia_status.hpp"
#include "pools.hpp"

namespace cudamux::cuda {
namespace {

namespace be = cudamux::backend;

CUdeviceptr dptr(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }

class NvidiaErrors final : public be::ErrorDomain {
 public:
  explicit NvidiaErrors(const NvidiaApi* api) : api_(api) {
    for (auto& k : known_) k.store(kUnasked, std::memory_order_relaxed);
  }
  // Identity for every code NVIDIA's driver has a name for; without a driver loaded the
  // only codes are the backend's own, all CUresult values. NVIDIA's answer is kept per
  // code: the core maps every failed status, CUDA_ERROR_NOT_READY of each query of a busy
  // stream or event included, and asking NVIDIA each time doubled the driver calls.
  [[nodiscard]] std::optional<CUresult> to_cuda(std::int32_t native) const noexcept override {
    if (api_ == nullptr) return static_cast<CUresult>(native);
    const auto i = static_cast<std::uint32_t>(native);
    std::uint8_t k = i < known_.size() ? known_[i].load(std::memory_order_relaxed) : kUnasked;
    if (k == kUnasked) {
      const char* name = nullptr;
      k = api_->cuGetErrorName(static_cast<CUresult>(native), &name) == CUDA_SUCCESS ? kNamed
                                                                                     : kUnnamed;
      if (i < known_.size()) known_[i].store(k, std::memory_order_relaxed);
    }
    if (k == kUnnamed) return std::nullopt;
    return static_cast<CUresult>(native);
  }
  [[nodiscard]] std::string_view native_name(std::int32_t native) const noexcept override {
    const char* name = nullptr;
    if (api_ != nullptr &&
        api_->cuGetErrorName(static_cast<CUresult>(native), &name) == CUDA_SUCCESS &&
        name != nullptr) {
      return name;  // NVIDIA's static strings
    }
    return "CUresult <unknown to NVIDIA's driver>";
  }
  [[nodiscard]] be::Status not_ready() const noexcept override {
    return status(CUDA_ERROR_NOT_READY);
  }
  [[nodiscard]] be::Status not_supported() const noexcept override {
    return status(CUDA_ERROR_NOT_SUPPORTED);
  }
  [[nodiscard]] be::Status out_of_memory() const noexcept override {
    return status(CUDA_ERROR_OUT_OF_MEMORY);
  }
  [[nodiscard]] be::Status invalid_value() const noexcept override {
    return status(CUDA_ERROR_INVALID_VALUE);
  }

 private:
  static constexpr std::uint8_t kUnasked = 0, kNamed = 1, kUnnamed = 2;
  const NvidiaApi* api_;
  // CUresult values are below 1000 (CUDA_ERROR_UNKNOWN is 999); others are not kept.
  mutable std::array<std::atomic<std::uint8_t>, 1024> known_;
};

// A real CUcontext plus an id unique for the process's lifetime: a handle value can
// be reused by NVIDIA after a destroy, an id never is.
struct RealContext {
  CUcontext handle = nullptr;
  std::uint64_t id = 0;
};
std::atomic<std::uint64_t> g_next_context_id{1};
// The RealContext::id this thread last made current in NVIDIA's driver. Only this
// plugin talks to NVIDIA's driver in the process, so the cache cannot go stale. Read on
// every enqueue: initial-exec TLS (8 bytes of the static TLS reserve), as the core's
// current context, since the general-dynamic model of a dlopen'ed plugin costs a
// __tls_get_addr call each time.
[[gnu::tls_model("initial-exec")]] thread_local std::uint64_t t_current_id = 0;

be::Status make_current(const NvidiaApi& api, const RealContext& ctx) {
  if (t_current_id == ctx.id) return be::kOk;
  if (const CUresult r = api.cuCtxSetCurrent(ctx.handle); r != CUDA_SUCCESS) return status(r);
  t_current_id = ctx.id;
  return be::kOk;
}

// A CUfunction of NVIDIA's: its parameter layout is read once, when it is first asked for.
class NvidiaFunction final : public be::Function {
 public:
  NvidiaFunction(const NvidiaApi& api, RealContext ctx, CUfunction f, std::string name)
      : api_(api), ctx_(ctx), function_(f), name_(std::move(name)) {
    for (auto& c : cache_) c.store(kUncached, std::memory_order_relaxed);
    // cuFuncGetParamInfo answers CUDA_ERROR_INVALID_VALUE past the last parameter.
    for (std::size_t i = 0;; ++i) {
      be::ParamInfo p;
      if (api_.cuFuncGetParamInfo(function_, i, &p.offset, &p.size) != CUDA_SUCCESS) break;
      params_.push_back(p);
    }
  }
  [[nodiscard]] std::string_view name() const noexcept override { return name_; }
  // Cached: the core asks for several on every launch (measured: ~0.9 us added per launch
  // on an H200 without caches); only set_attribute changes them.
  be::Status attribute(CUfunction_attribute attr, int& value) const override {
    const auto i = static_cast<std::size_t>(attr);
    if (i < cache_.size()) {
      if (const std::int64_t v = cache_[i].load(std::memory_order_relaxed); v != kUncached) {
        value = static_cast<int>(v);
        return be::kOk;
      }
    }
    const CUresult r = api_.cuFuncGetAttribute(&value, attr, function_);
    if (r == CUDA_SUCCESS && i < cache_.size()) cache_[i].store(value, std::memory_order_relaxed);
    return status(r);
  }
  [[nodiscard]] const std::vector<be::ParamInfo>& params() const noexcept override {
    return params_;
  }
  be::Status set_attribute(CUfunction_attribute attr, int value) override {
    if (auto st = make_current(api_, ctx_); !st.ok()) return st;
    const CUresult r = api_.cuFuncSetAttribute(function_, attr, value);
    for (auto& c : cache_) c.store(kUncached, std::memory_order_relaxed);  // NVIDIA's say again
    return status(r);
  }
  bool occupancy(const be::OccupancyQuery& q, std::size_t& value, be::Status& st) const override {
    if (st = make_current(api_, ctx_); !st.ok()) return true;
    CUresult r = CUDA_ERROR_NOT_SUPPORTED;
    int count = 0;
    switch (q.kind) {
      case be::OccupancyKind::active_blocks:
        r = api_.cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
            &count, function_, q.block_size, q.dyn_shared, q.flags);
        value = static_cast<std::size_t>(count);
        break;
      case be::OccupancyKind::available_dynamic_shared:
        r = api_.cuOccupancyAvailableDynamicSMemPerBlock(&value, function_, q.num_blocks,
                                                         q.block_size);
        break;
      case be::OccupancyKind::active_clusters:
        if (!api_.cuOccupancyMaxActiveClusters) return false;
        r = api_.cuOccupancyMaxActiveClusters(&count, function_, q.config);
        value = static_cast<std::size_t>(count);
        break;
      case be::OccupancyKind::potential_cluster_size:
        if (!api_.cuOccupancyMaxPotentialClusterSize) return false;
        r = api_.cuOccupancyMaxPotentialClusterSize(&count, function_, q.config);
        value = static_cast<std::size_t>(count);
        break;
    }
    st = status(r);
    return true;
  }
  [[nodiscard]] CUfunction handle() const noexcept { return function_; }

 private:
  const NvidiaApi& api_;
  const RealContext ctx_;
  const CUfunction function_;
  const std::string name_;
  std::vector<be::ParamInfo> params_;
  static constexpr std::int64_t kUncached = INT64_MIN;
  mutable std::array<std::atomic<std::int64_t>, CU_FUNC_ATTRIBUTE_MAX> cache_;
};

// A CUmodule of NVIDIA's, loaded in one real context; unloaded with this object.
class NvidiaModule final : public be::Module {
 public:
  NvidiaModule(const NvidiaApi& api, RealContext ctx, CUmodule m)
      : api_(api), ctx_(ctx), module_(m) {}
  ~NvidiaModule() override {
    if (make_current(api_, ctx_).ok()) (void)api_.cuModuleUnload(module_);
  }
  NvidiaModule(const NvidiaModule&) = delete;
  NvidiaModule& operator=(const NvidiaModule&) = delete;

  [[nodiscard]] be::Function* function(std::string_view name) noexcept override {
    try {
      std::lock_guard lock(mu_);
      if (auto it = functions_.find(name); it != functions_.end()) return it->second.get();
      std::string key(name);
      CUfunction f = nullptr;
      if (api_.cuModuleGetFunction(&f, module_, key.c_str()) != CUDA_SUCCESS) return nullptr;
      auto fn = std::make_unique<NvidiaFunction>(api_, ctx_, f, key);
      return functions_.emplace(std::move(key), std::move(fn)).first->second.get();
    } catch (...) {
      return nullptr;
    }
  }
  [[nodiscard]] bool global(std::string_view name, void*& address,
                            std::size_t& bytes) noexcept override {
    try {
      const std::string key(name);
      CUdeviceptr p = 0;
      std::size_t n = 0;
      if (api_.cuModuleGetGlobal_v2(&p, &n, module_, key.c_str()) != CUDA_SUCCESS) return false;
      address = reinterpret_cast<void*>(p);
      bytes = n;
      return true;
    } catch (...) {
      return false;
    }
  }
  [[nodiscard]] std::vector<std::string_view> function_names() const override {
    std::lock_guard lock(mu_);
    if (!names_) {
      names_.emplace();
      unsigned count = 0;
      if (api_.cuModuleGetFunctionCount(&count, module_) == CUDA_SUCCESS && count > 0) {
        std::vector<CUfunction> fs(count);
        if (api_.cuModuleEnumerateFunctions(fs.data(), count, module_) == CUDA_SUCCESS) {
          for (CUfunction f : fs) {
            const char* n = nullptr;
            if (api_.cuFuncGetName(&n, f) == CUDA_SUCCESS && n != nullptr) names_->emplace_back(n);
          }
        }
      }
    }
    return {names_->begin(), names_->end()};
  }

 private:
  const NvidiaApi& api_;
  const RealContext ctx_;
  const CUmodule module_;
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<NvidiaFunction>, std::less<>> functions_;
  mutable std::optional<std::vector<std::string>> names_;
};

class NvidiaEvent final : public be::Event {
 public:
  NvidiaEvent(const NvidiaApi& api, CUevent e) : api_(api), event_(e) {}
  ~NvidiaEvent() override { (void)api_.cuEventDestroy_v2(event_); }
  NvidiaEvent(const NvidiaEvent&) = delete;
  NvidiaEvent& operator=(const NvidiaEvent&) = delete;

  be::Status query() override { return status(api_.cuEventQuery(event_)); }
  be::Status synchronize() override { return status(api_.cuEventSynchronize(event_)); }
  be::Status elapsed_since(const be::Event& start, float& ms) const override {
    const auto& s = static_cast<const NvidiaEvent&>(start);
    return status(api_.cuEventElapsedTime_v2(&ms, s.event_, event_));
  }
  [[nodiscard]] CUevent handle() const noexcept { return event_; }

 private:
  const NvidiaApi& api_;
  const CUevent event_;
};

// An executable graph of NVIDIA's, made by capturing the core's replay of a graph.
class NvidiaGraph final : public be::NativeGraph {
 public:
  NvidiaGraph(const NvidiaApi& api, CUgraphExec exec) : api_(api), exec_(exec) {}
  ~NvidiaGraph() override { (void)api_.cuGraphExecDestroy(exec_); }
  NvidiaGraph(const NvidiaGraph&) = delete;
  NvidiaGraph& operator=(const NvidiaGraph&) = delete;
  [[nodiscard]] CUgraphExec handle() const noexcept { return exec_; }

 private:
  const NvidiaApi& api_;
  const CUgraphExec exec_;
};

// The NVIDIA graph a core graph's conditional handles belong to; capture_graph records the
// executable graph's nodes into it, since NVIDIA accepts a handle only in its own graph.
class NvidiaCondScope final : public be::NativeCondScope {
 public:
  NvidiaCondScope(const NvidiaApi& api, CUgraph graph) : api_(api), graph_(graph) {}
  ~NvidiaCondScope() override { (void)api_.cuGraphDestroy(graph_); }
  NvidiaCondScope(const NvidiaCondScope&) = delete;
  NvidiaCondScope& operator=(const NvidiaCondScope&) = delete;
  [[nodiscard]] CUgraph graph() const noexcept { return graph_; }
  // Removes what an earlier capture recorded (NVIDIA's executable graphs made from it are
  // copies and stay as they are).
  CUresult clear() const {
    std::size_t count = 0;
    if (const CUresult r = api_.cuGraphGetNodes(graph_, nullptr, &count); r != CUDA_SUCCESS)
      return r;
    if (count == 0) return CUDA_SUCCESS;
    std::vector<CUgraphNode> nodes(count);
    if (const CUresult r = api_.cuGraphGetNodes(graph_, nodes.data(), &count); r != CUDA_SUCCESS)
      return r;
    for (std::size_t i = 0; i < count; ++i)
      if (const CUresult r = api_.cuGraphDestroyNode(nodes[i]); r != CUDA_SUCCESS) return r;
    return CUDA_SUCCESS;
  }

 private:
  const NvidiaApi& api_;
  const CUgraph graph_;
};

bool has_conditionals(const NvidiaApi& api) {
  return api.cuGraphCreate && api.cuGraphConditionalHandleCreate && api.cuGraphAddNode_v2 &&
         api.cuGraphGetNodes && api.cuGraphDestroyNode && api.cuStreamGetCaptureInfo_v3 &&
         api.cuStreamUpdateCaptureDependencies_v2 && api.cuStreamBeginCaptureToGraph;
}

class NvidiaQueue;

// The queues of one DeviceContext, for DeviceContext::synchronize.
struct QueueRegistry {
  std::mutex mu;
  std::set<NvidiaQueue*> queues;
  std::vector<CUdevice> devices;  // NVIDIA's CUdevice per backend ordinal (prefetch targets)
};

class NvidiaQueue final : public be::Queue {
 public:
  NvidiaQueue(const NvidiaApi& api, RealContext ctx, CUstream s,
              std::shared_ptr<QueueRegistry> registry)
      : api_(api), ctx_(ctx), stream_(s), registry_(std::move(registry)) {
    std::lock_guard lock(registry_->mu);
    registry_->queues.insert(this);
  }
  ~NvidiaQueue() override {
    {
      std::lock_guard lock(registry_->mu);
      registry_->queues.erase(this);
    }
    (void)api_.cuStreamDestroy_v2(stream_);  // NVIDIA finishes pending work on its own
    if (legacy_done_ != nullptr) (void)api_.cuEventDestroy_v2(legacy_done_);
  }
  NvidiaQueue(const NvidiaQueue&) = delete;
  NvidiaQueue& operator=(const NvidiaQueue&) = delete;

  be::Status copy(const be::CopyDesc& d) override {
    if (auto st = make_current(api_, ctx_); !st.ok()) return st;
    if (d.dst_array || d.src_array) {  // issue 17: array ends are NVIDIA's CUarrays
      const CUDA_MEMCPY3D p = params_3d(d);
      return submitted(api_.cuMemcpy3DAsync_v2(&p, stream_));
    }
    if (d.height == 1 && d.depth == 1) {
      // Unified addressing: NVIDIA infers each side's memory from the pointer.
      return submitted(api_.cuMemcpyAsync(dptr(d.dst), dptr(d.src), d.width_bytes, stream_));
    }
    if (d.depth == 1) {
      const CUDA_MEMCPY2D p = params_2d(d);
      return submitted(api_.cuMemcpy2DAsync_v2(&p, stream_));
    }
    const CUDA_MEMCPY3D p = params_3d(d);
    return submitted(api_.cuMemcpy3DAsync_v2(&p, stream_));
  }

  // A pageable host-to-device copy of at least kSyncCopyMinBytes on an idle queue takes
  // NVIDIA's synchronous entry point, which pipelines its staging (measured on an H200:
  // cuMemcpyAsync + cuStreamSynchronize of 256 MiB took 3% longer than cuMemcpyHtoD).
  // Anything else: the async copy on our stream, then a wait for the stream. Device-to-
  // pageable copies stay there: that path was measured faster than NVIDIA's synchronous one.
  be::Status copy_sync(const be::CopyDesc& d) override {
    if (d.src_kind == be::MemKind::host_pageable && d.dst_kind == be::MemKind::device &&
        !d.dst_array && d.width_bytes * d.height * d.depth >= kSyncCopyMinBytes) {
      if (auto st = make_current(api_, ctx_); !st.ok()) return st;
      std::lock_guard lock(sync_mu_);
      if (idle_locked()) return copy_on_legacy_locked(d);
    }
    if (auto st = copy(d); !st.ok()) return st;
    return synchronize();
  }

  be::Status fill(const be::FillDesc& d) override {
    if (auto st = make_current(api_, ctx_); !st.ok()) return st;
    const CUdeviceptr dst = dptr(d.dst);
    const std::size_t w = d.width_elems;
    if (d.height == 1) {
      switch (d.elem_size) {
        case 1:
          return submitted(
              api_.cuMemsetD8Async(dst, static_cast<unsigned char>(d.value), w, stream_));
        case 2:
          return submitted(
              api_.cuMemsetD16Async(dst, static_cast<unsigned short>(d.value), w, stream_));
        case 4:
          return submitted(api_.cuMemsetD32Async(dst, d.value, w, stream_));
        default:
          return status(CUDA_ERROR_INVALID_VALUE);
      }
    }
    switch (d.elem_size) {
      case 1:
        return submitted(api_.cuMemsetD2D8Async(dst, d.pitch, static_cast<unsigned char>(d.value),
                                                w, d.height, stream_));
      case 2:
        return submitted(api_.cuMemsetD2D16Async(dst, d.pitch, static_cast<unsigned short>(d.value),
                                                 w, d.height, stream_));
      case 4:
        return submitted(api_.cuMemsetD2D32Async(dst, d.pitch, d.value, w, d.height, stream_));
      default:
        return status(CUDA_ERROR_INVALID_VALUE);
    }
  }

  be::Status host_function(void (*fn)(void*), void* user) override {
    if (auto st = make_current(api_, ctx_); !st.ok()) return st;
    return submitted(api_.cuLaunchHostFunc(stream_, fn, user));
  }
  // NVIDIA's stream-ordered pools (NvidiaPools, pools.cpp).
  bool allocate_from_pool(std::uint64_t pool, std::size_t bytes, void** out,
                          be::Status& st) override {
    if (!api_.cuMemAllocFromPoolAsync) return false;
    if (st = make_current(api_, ctx_); !st.ok()) return true;
    CUdeviceptr p = 0;
    st = submitted(
        api_.cuMemAllocFromPoolAsync(&p, bytes, reinterpret_cast<CUmemoryPool>(pool), stream_));
    if (st.ok()) *out = reinterpret_cast<void*>(p);
    return true;
  }
  bool free_to_pool(void* ptr, be::Status& st) override {
    if (!api_.cuMemFreeAsync) return false;
    if (st = make_current(api_, ctx_); st.ok())
      st = submitted(api_.cuMemFreeAsync(dptr(ptr), stream_));
    return true;
  }

  // Not a submission for copy_sync: a record waits for earlier work only. While capturing a
  // graph (capture_graph), records and waits are the graph's event nodes: external ones.
  be::Status record(be::Event& event) override {
    if (auto st = make_current(api_, ctx_); !st.ok()) return st;
    const CUevent e = static_cast<NvidiaEvent&>(event).handle();
    if (capturing_)
      return status(api_.cuEventRecordWithFlags(e, stream_, CU_EVENT_RECORD_EXTERNAL));
    return status(api_.cuEventRecord(e, stream_));
  }
  be::Status wait(be::Event& event) override {
    if (auto st = make_current(api_, ctx_); !st.ok()) return st;
    return submitted(api_.cuStreamWaitEvent(stream_, static_cast<NvidiaEvent&>(event).handle(),
                                            capturing_ ? CU_EVENT_WAIT_EXTERNAL : 0));
  }

  // Issue 16: the core's graph, replayed onto a capturing stream of NVIDIA's, becomes an
  // executable graph NVIDIA launches as one (100 kernels: one cuGraphLaunch instead of 100
  // cuLaunchKernel). Anything NVIDIA refuses to capture leaves `out` empty: the core then
  // replays the graph itself.
  // With a `scope` (the graph has conditional nodes) the capture records into the NVIDIA graph
  // that owns their handles, which stays the scope's.
  be::Status capture_graph(const std::function<be::Status(be::Queue&)>& replay,
                           std::unique_ptr<be::NativeGraph>& out,
                           be::NativeCondScope* scope) override {
    out.reset();
    if (!api_.cuStreamBeginCapture_v2 || !api_.cuStreamEndCapture ||
        !api_.cuGraphInstantiateWithFlags || !api_.cuGraphLaunch || !api_.cuGraphExecDestroy ||
        !api_.cuGraphDestroy || !api_.cuEventRecordWithFlags)
      return be::kOk;
    if (scope && !has_conditionals(api_)) return be::kOk;
    if (auto st = make_current(api_, ctx_); !st.ok()) return st;
    auto* into = static_cast<NvidiaCondScope*>(scope);
    if (into && into->clear() != CUDA_SUCCESS) return be::kOk;
    CUstream s = nullptr;
    if (api_.cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, 0) != CUDA_SUCCESS)
      return be::kOk;
    // A registry of its own: DeviceContext::synchronize must never wait on a capturing stream.
    NvidiaQueue q(api_, ctx_, s, std::make_shared<QueueRegistry>());
    q.capturing_ = true;
    const CUresult began =
        into ? api_.cuStreamBeginCaptureToGraph(s, into->graph(), nullptr, nullptr, 0,
                                                CU_STREAM_CAPTURE_MODE_RELAXED)
             : api_.cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_RELAXED);
    if (began != CUDA_SUCCESS) return be::kOk;
    const be::Status replayed = replay(q);
    CUgraph graph = nullptr;
    const CUresult ended = api_.cuStreamEndCapture(s, &graph);
    const bool own_graph = graph != nullptr && (!into || graph != into->graph());
    if (!replayed.ok() || ended != CUDA_SUCCESS || graph == nullptr) {
      if (own_graph) (void)api_.cuGraphDestroy(graph);
      return be::kOk;
    }
    CUgraphExec exec = nullptr;
    const CUresult made = api_.cuGraphInstantiateWithFlags(&exec, graph, 0);
    if (own_graph) (void)api_.cuGraphDestroy(graph);
    if (made != CUDA_SUCCESS) return be::kOk;
    out = std::make_unique<NvidiaGraph>(api_, exec);
    return be::kOk;
  }
  // While capturing: NVIDIA's conditional node after the stream's current dependencies, each
  // body recorded by a capture of its own into the body graph NVIDIA made for it.
  bool conditional(std::uint64_t handle, CUgraphConditionalNodeType type,
                   const std::vector<std::function<be::Status(be::Queue&)>>& bodies,
                   be::Status& st) override {
    if (!capturing_ || !has_conditionals(api_)) return false;
    if (st = make_current(api_, ctx_); !st.ok()) return true;
    CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
    cuuint64_t id = 0;
    CUgraph graph = nullptr;
    const CUgraphNode* deps = nullptr;
    const CUgraphEdgeData* edges = nullptr;
    std::size_t count = 0;
    st = status(
        api_.cuStreamGetCaptureInfo_v3(stream_, &capture, &id, &graph, &deps, &edges, &count));
    if (!st.ok()) return true;
    CUgraphNodeParams params{};
    params.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
    params.conditional.handle = static_cast<CUgraphConditionalHandle>(handle);
    params.conditional.type = type;
    params.conditional.size = static_cast<unsigned>(bodies.size());
    params.conditional.ctx = ctx_.handle;
    CUgraphNode node = nullptr;
    st = status(api_.cuGraphAddNode_v2(&node, graph, deps, edges, count, &params));
    if (!st.ok()) return true;
    for (std::size_t i = 0; i < bodies.size(); ++i) {
      st = capture_body(params.conditional.phGraph_out[i], bodies[i]);
      if (!st.ok()) return true;
    }
    st = status(api_.cuStreamUpdateCaptureDependencies_v2(stream_, &node, nullptr, 1,
                                                          CU_STREAM_SET_CAPTURE_DEPENDENCIES));
    return true;
  }
  be::Status launch_graph(be::NativeGraph& graph) override {
    if (auto st = make_current(api_, ctx_); !st.ok()) return st;
    return submitted(api_.cuGraphLaunch(static_cast<NvidiaGraph&>(graph).handle(), stream_));
  }
  be::Status query() override { return status(api_.cuStreamQuery(stream_)); }
  bool wait_value(void* addr, unsigned bytes, std::uint64_t value, unsigned flags,
                  be::Status& st) override {
    if (!api_.cuStreamWaitValue32_v2 || !api_.cuStreamWaitValue64_v2) return false;
    if (st = make_current(api_, ctx_); !st.ok()) return true;
    st = submitted(bytes == 8 ? api_.cuStreamWaitValue64_v2(stream_, dptr(addr), value, flags)
                              : api_.cuStreamWaitValue32_v2(stream_, dptr(addr),
                                                            static_cast<cuuint32_t>(value), flags));
    return true;
  }
  bool write_value(void* addr, unsigned bytes, std::uint64_t value, unsigned flags,
                   be::Status& st) override {
    if (!api_.cuStreamWriteValue32_v2 || !api_.cuStreamWriteValue64_v2) return false;
    if (st = make_current(api_, ctx_); !st.ok()) return true;
    st = submitted(bytes == 8 ? api_.cuStreamWriteValue64_v2(stream_, dptr(addr), value, flags)
                              : api_.cuStreamWriteValue32_v2(
                                    stream_, dptr(addr), static_cast<cuuint32_t>(value), flags));
    return true;
  }
  be::Status prefetch(void* ptr, std::size_t bytes, CUmemLocation to) override {
    if (!api_.cuMemPrefetchAsync_v2) return be::kOk;  // placement only: nothing to emulate
    if (to.type == CU_MEM_LOCATION_TYPE_DEVICE) {
      if (to.id < 0 || static_cast<std::size_t>(to.id) >= registry_->devices.size())
        return status(CUDA_ERROR_INVALID_DEVICE);
      to.id = registry_->devices[static_cast<std::size_t>(to.id)];
    }
    return submitted(api_.cuMemPrefetchAsync_v2(dptr(ptr), bytes, to, 0, stream_));
  }
  be::Status set_attribute(CUlaunchAttributeID id, const CUlaunchAttributeValue& value) override {
    if (!api_.cuStreamSetAttribute) return be::kOk;
    return status(api_.cuStreamSetAttribute(stream_, id, &value));
  }
  be::Status synchronize() override { return status(api_.cuStreamSynchronize(stream_)); }
  be::Status launch(const be::LaunchDesc& d) override {
    // A plain launch needs no current context: NVIDIA's cuLaunchKernel on a stream runs in
    // the stream's context whatever is current (driver 580, H200: launched with another
    // context current, none, and from a new thread, each kernel ran and wrote its value;
    // probe kept outside the tree). stream_ is never null. Skipping make_current spares a
    // thread-local read on every launch; cooperative and cluster launches keep it.
    const bool plain = !d.cooperative && (d.cluster[0] | d.cluster[1] | d.cluster[2]) == 1;
    if (!plain) {
      if (auto st = make_current(api_, ctx_); !st.ok()) return st;
    }
    const auto& f = static_cast<const NvidiaFunction&>(*d.function);
    // kernelParams point into the core's packed copy (valid during this call; NVIDIA
    // copies the values before cuLaunchKernel returns). The core passes the layout along,
    // which spares reading the function object's vector again.
    const std::span<const be::ParamInfo> params =
        d.params != nullptr ? std::span<const be::ParamInfo>(d.params, d.param_count)
                            : std::span<const be::ParamInfo>(f.params());
    // Not zero-filled: only the first params.size() entries are written and read (filling
    // all 64 was a third of this function's time per launch).
    void* small[64];
    std::vector<void*> large;
    void** kernel_params = nullptr;
    if (!params.empty()) {
      kernel_params = small;
      if (params.size() > std::size(small)) {
        large.resize(params.size());
        kernel_params = large.data();
      }
      auto* base = static_cast<const char*>(d.args);
      for (std::size_t i = 0; i < params.size(); ++i) {
        kernel_params[i] = const_cast<char*>(base + params[i].offset);
      }
    }
    // Validated by the core (each dimension >= 1): all three are 1 exactly when their OR is.
    if ((d.cluster[0] | d.cluster[1] | d.cluster[2]) != 1) [[unlikely]] {
      return launch_cluster(f, d, kernel_params);
    }
    if (d.cooperative) {
      return submitted(api_.cuLaunchCooperativeKernel(f.handle(), d.grid[0], d.grid[1], d.grid[2],
                                                      d.block[0], d.block[1], d.block[2],
                                                      d.shared_bytes, stream_, kernel_params));
    }
    return submitted(api_.cuLaunchKernel(f.handle(), d.grid[0], d.grid[1], d.grid[2], d.block[0],
                                         d.block[1], d.block[2], d.shared_bytes, stream_,
                                         kernel_params, nullptr));
  }

 private:
  static constexpr std::size_t kSyncCopyMinBytes = std::size_t{64} << 10;
  bool capturing_ = false;  // a capture_graph queue: records and waits are external

  // Records what `replay` submits into `body` (a conditional node's body graph).
  be::Status capture_body(CUgraph body, const std::function<be::Status(be::Queue&)>& replay) {
    CUstream s = nullptr;
    if (const CUresult r = api_.cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, 0);
        r != CUDA_SUCCESS)
      return status(r);
    NvidiaQueue q(api_, ctx_, s, std::make_shared<QueueRegistry>());
    q.capturing_ = true;
    if (const CUresult r = api_.cuStreamBeginCaptureToGraph(s, body, nullptr, nullptr, 0,
                                                            CU_STREAM_CAPTURE_MODE_RELAXED);
        r != CUDA_SUCCESS)
      return status(r);
    const be::Status replayed = replay(q);
    CUgraph ended_graph = nullptr;
    const CUresult ended = api_.cuStreamEndCapture(s, &ended_graph);
    if (!replayed.ok()) return replayed;
    return status(ended);
  }

  // Thread block clusters exist only in NVIDIA's cuLaunchKernelEx; the cooperative flag rides
  // along as its attribute. Kept out of launch() so that the common path stays as it was.
  be::Status launch_cluster(const NvidiaFunction& f, const be::LaunchDesc& d,
                            void** kernel_params) {
    // The core asks launches_clusters() first; this guards a driver without the entry point.
    if (api_.cuLaunchKernelEx == nullptr) return status(CUDA_ERROR_NOT_SUPPORTED);
    CUlaunchAttribute attrs[2] = {};
    attrs[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attrs[0].value.clusterDim.x = d.cluster[0];
    attrs[0].value.clusterDim.y = d.cluster[1];
    attrs[0].value.clusterDim.z = d.cluster[2];
    attrs[1].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    attrs[1].value.cooperative = 1;
    CUlaunchConfig config{};
    config.gridDimX = d.grid[0];
    config.gridDimY = d.grid[1];
    config.gridDimZ = d.grid[2];
    config.blockDimX = d.block[0];
    config.blockDimY = d.block[1];
    config.blockDimZ = d.block[2];
    config.sharedMemBytes = d.shared_bytes;
    config.hStream = stream_;
    config.attrs = attrs;
    config.numAttrs = d.cooperative ? 2 : 1;
    return submitted(api_.cuLaunchKernelEx(&config, f.handle(), kernel_params, nullptr));
  }

  // Called after each enqueue on stream_: copy_sync clears the flag before it queries the
  // stream, so it either sees the flag or finds the work in the stream. Always stored (a
  // plain store on x86): skipping the store when the flag reads true could lose an enqueue
  // to a concurrent copy_sync that clears it and queries before that enqueue is visible.
  be::Status submitted(CUresult r) noexcept {
    submitted_.store(true, std::memory_order_release);
    return status(r);
  }

  // Whether stream_ holds no work but waits for the legacy stream (sync_mu_ held). Such
  // waits need not hold a copy on the legacy stream back: it already runs after them.
  // After our own copies the stream is busy while their DMA drains, so without this
  // bookkeeping back-to-back copies would alternate between the two paths.
  bool idle_locked() {
    if (legacy_done_ == nullptr &&
        api_.cuEventCreate(&legacy_done_, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) {
      legacy_done_ = nullptr;
      return false;
    }
    const bool others = submitted_.exchange(false, std::memory_order_acq_rel);
    if (others || !only_legacy_waits_)
      only_legacy_waits_ = api_.cuStreamQuery(stream_) == CUDA_SUCCESS;
    return only_legacy_waits_;
  }

  // NVIDIA's synchronous copies run on NVIDIA's legacy stream of the current (real)
  // context, which we otherwise never use: it waits only for itself and for blocking
  // streams, and ours are all non-blocking, so the copy is not ordered after work on
  // stream_ — hence only on an idle stream_. A pageable host-to-device copy returns once
  // the source is staged, possibly before its DMA lands, so stream_ is made to wait for
  // the legacy stream: later work the core sends here (kernels, copies, event records,
  // synchronize) sees the data. With contexts = "primary" the legacy stream is shared by
  // the cudamux contexts of a device: the copy may wait behind another context's
  // synchronous copy and our stream may wait for it too, which orders more, never less.
  // With contexts = "create" each real context has its own legacy stream.
  be::Status copy_on_legacy_locked(const be::CopyDesc& d) {
    CUresult r = CUDA_SUCCESS;
    if (d.height == 1 && d.depth == 1) {
      r = api_.cuMemcpyHtoD_v2(dptr(d.dst), d.src, d.width_bytes);
    } else if (d.depth == 1) {
      const CUDA_MEMCPY2D p = params_2d(d);
      r = api_.cuMemcpy2D_v2(&p);
    } else {
      const CUDA_MEMCPY3D p = params_3d(d);
      r = api_.cuMemcpy3D_v2(&p);
    }
    // Ordered even after a failed copy: NVIDIA may have queued part of it.
    CUresult o = api_.cuEventRecord(legacy_done_, CU_STREAM_LEGACY);
    if (o == CUDA_SUCCESS) o = api_.cuStreamWaitEvent(stream_, legacy_done_, 0);
    if (o != CUDA_SUCCESS) only_legacy_waits_ = false;
    return status(r != CUDA_SUCCESS ? r : o);
  }

  static CUDA_MEMCPY2D params_2d(const be::CopyDesc& d) {
    CUDA_MEMCPY2D p{};
    side(d.src, d.src_kind, d.src_pitch, p.srcMemoryType, p.srcHost, p.srcDevice);
    p.srcPitch = d.src_pitch;
    side(d.dst, d.dst_kind, d.dst_pitch, p.dstMemoryType, p.dstHost, p.dstDevice);
    p.dstPitch = d.dst_pitch;
    p.WidthInBytes = d.width_bytes;
    p.Height = d.height;
    return p;
  }
  static CUDA_MEMCPY3D params_3d(const be::CopyDesc& d) {
    CUDA_MEMCPY3D p{};
    side(d.src, d.src_kind, d.src_pitch, p.srcMemoryType, p.srcHost, p.srcDevice);
    p.srcPitch = d.src_pitch;
    p.srcHeight = d.src_pitch ? d.src_slice / d.src_pitch : 0;  // 0: an array end
    side(d.dst, d.dst_kind, d.dst_pitch, p.dstMemoryType, p.dstHost, p.dstDevice);
    p.dstPitch = d.dst_pitch;
    p.dstHeight = d.dst_pitch ? d.dst_slice / d.dst_pitch : 0;
    p.WidthInBytes = d.width_bytes;
    p.Height = d.height;
    p.Depth = d.depth;
    if (d.src_array) {
      p.srcMemoryType = CU_MEMORYTYPE_ARRAY;
      p.srcArray = reinterpret_cast<CUarray>(d.src_array);
      p.srcHost = nullptr;
      p.srcDevice = 0;
      p.srcPitch = p.srcHeight = 0;
      p.srcXInBytes = d.src_x_bytes;
      p.srcY = d.src_y;
      p.srcZ = d.src_z;
    }
    if (d.dst_array) {
      p.dstMemoryType = CU_MEMORYTYPE_ARRAY;
      p.dstArray = reinterpret_cast<CUarray>(d.dst_array);
      p.dstHost = nullptr;
      p.dstDevice = 0;
      p.dstPitch = p.dstHeight = 0;
      p.dstXInBytes = d.dst_x_bytes;
      p.dstY = d.dst_y;
      p.dstZ = d.dst_z;
    }
    return p;
  }

  // HOST for pageable memory (NVIDIA stages it), UNIFIED (the pointer says where) otherwise.
  static void side(const void* p, be::MemKind kind, std::size_t /*pitch*/, CUmemorytype& type,
                   const void*& host, CUdeviceptr& device) {
    if (kind == be::MemKind::host_pageable) {
      type = CU_MEMORYTYPE_HOST;
      host = p;
    } else {
      type = CU_MEMORYTYPE_UNIFIED;
      device = dptr(p);
    }
  }
  static void side(void* p, be::MemKind kind, std::size_t pitch, CUmemorytype& type, void*& host,
                   CUdeviceptr& device) {
    const void* h = nullptr;
    side(static_cast<const void*>(p), kind, pitch, type, h, device);
    host = const_cast<void*>(h);
  }

  const NvidiaApi& api_;
  const RealContext ctx_;
  const CUstream stream_;
  const std::shared_ptr<QueueRegistry> registry_;
  // copy_sync's bookkeeping: set by every enqueue but event records; the rest under sync_mu_.
  alignas(64) std::atomic<bool> submitted_{false};  // own cache line: written per launch
  std::mutex sync_mu_;
  bool only_legacy_waits_ = false;
  CUevent legacy_done_ = nullptr;  // recorded on the legacy stream after our sync copies
};

class NvidiaBackend;

class NvidiaContext final : public be::DeviceContext {
 public:
  NvidiaContext(NvidiaBackend& backend, int ordinal, RealContext ctx)
      : backend_(backend),
        api_(api_of(backend)),
        ordinal_(ordinal),
        ctx_(ctx),
        queues_(std::make_shared<QueueRegistry>()) {
    queues_->devices = devices_of(backend);
  }
  ~NvidiaContext() override;
  NvidiaContext(const NvidiaContext&) = delete;
  NvidiaContext& operator=(const NvidiaContext&) = delete;

  [[nodiscard]] int ordinal() const noexcept override { return ordinal_; }
  [[nodiscard]] const RealContext& real() const noexcept { return ctx_; }
  [[nodiscard]] const NvidiaApi& api() const noexcept { return api_; }

  bool create_cond_scope(std::shared_ptr<be::NativeCondScope>& out, be::Status& st) override {
    if (!has_conditionals(api_)) return false;
    if (st = make_current(api_, ctx_); !st.ok()) return true;
    CUgraph graph = nullptr;
    st = status(api_.cuGraphCreate(&graph, 0));
    if (st.ok()) out = std::make_shared<NvidiaCondScope>(api_, graph);
    return true;
  }
  be::Status create_cond_handle(be::NativeCondScope& scope, unsigned default_value, unsigned flags,
                                std::uint64_t& handle) override {
    if (auto st = make_current(api_, ctx_); !st.ok()) return st;
    CUgraphConditionalHandle h = 0;
    const CUresult r = api_.cuGraphConditionalHandleCreate(
        &h, static_cast<NvidiaCondScope&>(scope).graph(), ctx_.handle, default_value, flags);
    handle = h;
    return status(r);
  }

  be::Status allocate(std::size_t bytes, void** out) override {
    if (auto st = make_current(api_, ctx_); !st.ok()) return st;
    CUdeviceptr p = 0;
    const CUresult r = api_.cuMemAlloc_v2(&p, bytes);
    if (r == CUDA_SUCCESS) *out = reinterpret_cast<void*>(p);
    return status(r);
  }
  be::Status free(void* ptr) override {
    if (auto st = make_current(api_, ctx_); !st.ok()) return st;
    return status(api_.cuMemFree_v2(dptr(ptr)));
  }
  be::Status allocate_host(std::size_t bytes, unsigned flags, void** out) override {
    if (auto st = make_current(api_, ctx_); !st.ok()) return st;
    return status(api_.cuMemHostAlloc(out, bytes, flags));
  }
  be::Status free_host(void* ptr) override {
    if (auto st = make_current(api_, ctx_); !st.ok()) return st;
    return status(api_.cuMemFreeHost(ptr));
  }
  be::Status allocate_managed(std::size_t bytes, unsigned flags, void** out) override {
    if (auto st = make_current(api_, ctx_); !st.ok()) return st;
    CUdeviceptr p = 0;
    const CUresult r = api_.cuMemAllocManaged(&p, bytes, flags);
    if (r == CUDA_SUCCESS) *out = reinterpret_cast<void*>(p);
    return status(r);
  }
  be::Status free_managed(void* ptr) override { return free(ptr); }
  be::Status register_host(void* ptr, std::size_t bytes, unsigned flags) override {
    if (auto st = make_current(api_, ctx_); !st.ok()) return st;
    return status(api_.cuMemHostRegister_v2(ptr, bytes, flags));
  }
  be::Status unregister_host(void* ptr) override {
    if (auto st = make_current(api_, ctx_); !st.ok()) return st;
    return status(api_.cuMemHostUnregister(ptr));
  }
  be::Status host_device_pointer(void* host, void** device) override {
    if (auto st = make_current(api_, ctx_); !st.ok()) return st;
    CUdeviceptr p = 0;
    const CUresult r = api_.cuMemHostGetDevicePointer_v2(&p, host, 0);
    if (r == CUDA_SUCCESS) *device = reinterpret_cast<void*>(p);
    return status(r);
  }

  be::Status create_queue(unsigned flags, int priority, std::unique_ptr<be::Queue>& out) override {
    if (auto st = make_current(api_, ctx_); !st.ok()) return st;
    // Always non-blocking towards NVIDIA's own legacy stream: the core orders its
    // blocking streams against its legacy stream itself (core/src/submit.inl), and only
    // copy_sync's uploads reach NVIDIA's legacy stream (ordering themselves), so NVIDIA's
    // ordering would only add synchronisation across cudamux contexts sharing a primary
    // context.
    (void)flags;
    CUstream s = nullptr;
    if (const CUresult r = api_.cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, priority);
        r != CUDA_SUCCESS) {
      return status(r);
    }
    out = std::make_unique<NvidiaQueue>(api_, ctx_, s, queues_);
    return be::kOk;
  }
  be::Status create_event(unsigned flags, std::unique_ptr<be::Event>& out) override {
    if (auto st = make_current(api_, ctx_); !st.ok()) return st;
    CUevent e = nullptr;
    if (const CUresult r = api_.cuEventCreate(&e, flags); r != CUDA_SUCCESS) return status(r);
    out = std::make_unique<NvidiaEvent>(api_, e);
    return be::kOk;
  }
  // IPC (issue 17): NVIDIA's handles as they are.
  bool ipc_export_memory(void* base, std::size_t /*bytes*/, CUipcMemHandle& out,
                         be::Status& st) override {
    if (!api_.cuIpcGetMemHandle) return false;
    if (st = make_current(api_, ctx_); st.ok())
      st = status(api_.cuIpcGetMemHandle(&out, dptr(base)));
    return true;
  }
  bool ipc_open_memory(const CUipcMemHandle& handle, unsigned flags, void** out, std::size_t& bytes,
                       be::Status& st) override {
    if (!api_.cuIpcOpenMemHandle_v2) return false;
    if (st = make_current(api_, ctx_); !st.ok()) return true;
    CUdeviceptr p = 0;
    st = status(api_.cuIpcOpenMemHandle_v2(&p, handle, flags));
    if (!st.ok()) return true;
    *out = reinterpret_cast<void*>(p);
    // The size of the mapping, for the core's registry (NVIDIA's own range query).
    bytes = 0;
    if (api_.cuMemGetAddressRange_v2) {
      CUdeviceptr b = 0;
      std::size_t size = 0;
      if (api_.cuMemGetAddressRange_v2(&b, &size, p) == CUDA_SUCCESS) bytes = size - (p - b);
    }
    return true;
  }
  bool ipc_close_memory(void* ptr, be::Status& st) override {
    if (!api_.cuIpcCloseMemHandle) return false;
    if (st = make_current(api_, ctx_); st.ok()) st = status(api_.cuIpcCloseMemHandle(dptr(ptr)));
    return true;
  }
  bool ipc_export_event(be::Event& event, CUipcEventHandle& out, be::Status& st) override {
    if (!api_.cuIpcGetEventHandle) return false;
    if (st = make_current(api_, ctx_); st.ok())
      st = status(api_.cuIpcGetEventHandle(&out, static_cast<NvidiaEvent&>(event).handle()));
    return true;
  }
  bool ipc_open_event(const CUipcEventHandle& handle, std::unique_ptr<be::Event>& out,
                      be::Status& st) override {
    if (!api_.cuIpcOpenEventHandle) return false;
    if (st = make_current(api_, ctx_); !st.ok()) return true;
    CUevent e = nullptr;
    st = status(api_.cuIpcOpenEventHandle(&e, handle));
    if (st.ok()) out = std::make_unique<NvidiaEvent>(api_, e);
    return true;
  }
  be::Status synchronize() override {
    // This cudamux context's queues only: with shared primary contexts, cuCtxSynchronize
    // would also wait for other cudamux contexts' work.
    std::lock_guard lock(queues_->mu);
    for (NvidiaQueue* q : queues_->queues) {
      if (auto st = q->synchronize(); !st.ok()) return st;
    }
    return be::kOk;
  }
  be::Status reset_persisting_l2_cache() override {
    if (!api_.cuCtxResetPersistingL2Cache) return be::kOk;
    if (auto st = make_current(api_, ctx_); !st.ok()) return st;
    return status(api_.cuCtxResetPersistingL2Cache());
  }
  bool get_limit(CUlimit limit, std::size_t& value, be::Status& st) override {
    if (st = make_current(api_, ctx_); st.ok()) st = status(api_.cuCtxGetLimit(&value, limit));
    return true;
  }
  bool set_limit(CUlimit limit, std::size_t value, be::Status& st) override {
    if (st = make_current(api_, ctx_); st.ok()) st = status(api_.cuCtxSetLimit(limit, value));
    return true;
  }
  bool link(const std::vector<be::ModuleImage>& inputs,
            const std::vector<std::pair<CUjit_option, void*>>& options,
            std::vector<unsigned char>& out, std::string& log, be::Status& st) override {
    if (!api_.cuLinkCreate_v2 || !api_.cuLinkAddData_v2 || !api_.cuLinkComplete ||
        !api_.cuLinkDestroy)
      return false;
    if (st = make_current(api_, ctx_); !st.ok()) return true;
    // NVIDIA's linker with the program's options, plus log buffers of our own for `log`.
    std::vector<char> info(16384, '\0'), error(16384, '\0');
    std::vector<CUjit_option> keys;
    std::vector<void*> values;
    for (const auto& [k, v] : options) {
      keys.push_back(k);
      values.push_back(v);
    }
    const auto add = [&](CUjit_option k, void* v) {
      keys.push_back(k);
      values.push_back(v);
    };
    add(CU_JIT_INFO_LOG_BUFFER, info.data());
    add(CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, reinterpret_cast<void*>(info.size()));
    add(CU_JIT_ERROR_LOG_BUFFER, error.data());
    add(CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, reinterpret_cast<void*>(error.size()));
    CUlinkState state = nullptr;
    CUresult r = api_.cuLinkCreate_v2(static_cast<unsigned>(keys.size()), keys.data(),
                                      values.data(), &state);
    for (std::size_t i = 0; r == CUDA_SUCCESS && i < inputs.size(); ++i) {
      const auto& in = inputs[i];
      CUjitInputType type = CU_JIT_INPUT_CUBIN;
      switch (in.kind) {
        case be::ImageKind::ptx:
        case be::ImageKind::native:  // NVIDIA's NVRTC output, passed through
          type = CU_JIT_INPUT_PTX;
          break;
        case be::ImageKind::nvidia_fatbin:
          type = CU_JIT_INPUT_FATBINARY;
          break;
        case be::ImageKind::cubin:
          type = CU_JIT_INPUT_CUBIN;
          break;
        case be::ImageKind::host_object:
          type = CU_JIT_INPUT_OBJECT;
          break;
        case be::ImageKind::host_library:
          type = CU_JIT_INPUT_LIBRARY;
          break;
      }
      // The program's name for the input, which NVIDIA's messages quote.
      const std::string name = in.name != nullptr && *in.name != '\0' ? std::string(in.name)
                                                                      : "input" + std::to_string(i);
      r = api_.cuLinkAddData_v2(state, type, const_cast<void*>(in.data), in.size, name.c_str(), 0,
                                nullptr, nullptr);
    }
    void* cubin = nullptr;
    std::size_t size = 0;
    if (r == CUDA_SUCCESS) r = api_.cuLinkComplete(state, &cubin, &size);
    if (r == CUDA_SUCCESS) {
      const auto* b = static_cast<const unsigned char*>(cubin);
      out.assign(b, b + size);
    }
    log = r == CUDA_SUCCESS ? info.data() : error.data();
    if (state) (void)api_.cuLinkDestroy(state);
    st = status(r);
    return true;
  }

  // Peer access between the real contexts. In primary mode several cudamux contexts share one
  // real context, so links are counted per real context pair: NVIDIA's access is enabled by
  // the first cudamux pair and disabled with the last.
  be::Status enable_peer_access(be::DeviceContext& peer) override {
    return peer_link(static_cast<NvidiaContext&>(peer).ctx_, true);
  }
  be::Status disable_peer_access(be::DeviceContext& peer) override {
    return peer_link(static_cast<NvidiaContext&>(peer).ctx_, false);
  }
  be::Status load_module(const be::ModuleImage& image, std::unique_ptr<be::Module>& out) override {
    // PTX, CUBIN or a whole fat binary: NVIDIA's driver picks the entry for its GPU and
    // JIT-compiles PTX itself.
    if (auto st = make_current(api_, ctx_); !st.ok()) return st;
    CUmodule m = nullptr;
    if (const CUresult r = api_.cuModuleLoadData(&m, image.data); r != CUDA_SUCCESS)
      return status(r);
    out = std::make_unique<NvidiaModule>(api_, ctx_, m);
    return be::kOk;
  }

 private:
  be::Status peer_link(const RealContext& peer, bool enable) {
    if (!api_.cuCtxEnablePeerAccess || !api_.cuCtxDisablePeerAccess) return be::kOk;
    static std::mutex mu;
    static std::map<std::pair<std::uint64_t, std::uint64_t>, int> links;
    std::lock_guard lock(mu);
    int& users = links[{ctx_.id, peer.id}];
    if (enable ? users++ > 0 : (users == 0 || --users > 0)) return be::kOk;
    if (auto st = make_current(api_, ctx_); !st.ok()) {
      users += enable ? -1 : 1;
      return st;
    }
    CUresult r = enable ? api_.cuCtxEnablePeerAccess(peer.handle, 0)
                        : api_.cuCtxDisablePeerAccess(peer.handle);
    // Enabled or disabled by NVIDIA already (a real context the program also drives itself).
    if (r == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED || r == CUDA_ERROR_PEER_ACCESS_NOT_ENABLED)
      r = CUDA_SUCCESS;
    if (r != CUDA_SUCCESS) users += enable ? -1 : 1;
    return status(r);
  }

  static const NvidiaApi& api_of(NvidiaBackend& b);
  static std::vector<CUdevice> devices_of(NvidiaBackend& b);

  NvidiaBackend& backend_;
  const NvidiaApi& api_;
  const int ordinal_;
  const RealContext ctx_;
  const std::shared_ptr<QueueRegistry> queues_;
};

struct DeviceSlot {
  CUdevice device = 0;
  // Live real contexts on this device (for memory_info) and, in primary mode, the
  // retained primary context shared by all cudamux contexts of the device.
  std::mutex mu;
  std::vector<RealContext> live;
  int primary_users = 0;
  RealContext primary;
};

class NvidiaDevices final : public be::Devices {
 public:
  NvidiaDevices(const NvidiaApi* api, int count)
      : api_(api),
        slots_(static_cast<std::size_t>(count)),
        cache_(new std::atomic<std::int64_t>[static_cast<std::size_t>(count) * kAttrs]) {
    for (std::size_t i = 0; i < static_cast<std::size_t>(count) * kAttrs; ++i) {
      cache_[i].store(kUncached);
    }
  }

  [[nodiscard]] int count() const noexcept override { return static_cast<int>(slots_.size()); }
  [[nodiscard]] bool valid(int ordinal) const noexcept { return ordinal >= 0 && ordinal < count(); }
  DeviceSlot& slot(int ordinal) const { return slots_[static_cast<std::size_t>(ordinal)]; }

  be::Status properties(int ordinal, be::DeviceProperties& out) const override {
    if (!valid(ordinal)) return status(CUDA_ERROR_INVALID_DEVICE);
    const CUdevice dev = slot(ordinal).device;
    char name[256] = {};
    if (auto r = api_->cuDeviceGetName(name, sizeof name - 1, dev)) return status(r);
    out.name = name;
    CUuuid uuid{};
    if (auto r = api_->cuDeviceGetUuid_v2(&uuid, dev)) return status(r);
    for (std::size_t i = 0; i < out.uuid.size(); ++i) {
      out.uuid[i] = static_cast<unsigned char>(uuid.bytes[i]);
    }
    if (auto r = api_->cuDeviceTotalMem_v2(&out.total_memory, dev)) return status(r);
    const std::pair<CUdevice_attribute, int*> attrs[] = {
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &out.cc_major},
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &out.cc_minor},
        {CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, &out.pci_domain},
        {CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, &out.pci_bus},
        {CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, &out.pci_device}};
    for (const auto& [attr, value] : attrs) {
      if (auto r = api_->cuDeviceGetAttribute(value, attr, dev)) return status(r);
    }
    return be::kOk;
  }

  // Cached after NVIDIA's first answer: the core reads the device's limits on every launch
  // (about 16 attributes), and a device's attributes do not change while a process runs.
  be::Status attribute(int ordinal, CUdevice_attribute attr, int& value) const override {
    if (!valid(ordinal)) return status(CUDA_ERROR_INVALID_DEVICE);
    const auto a = static_cast<std::size_t>(attr);
    std::atomic<std::int64_t>* cached =
        a < kAttrs ? &cache_[static_cast<std::size_t>(ordinal) * kAttrs + a] : nullptr;
    if (cached) {
      if (const std::int64_t v = cached->load(std::memory_order_relaxed); v != kUncached) {
        value = static_cast<int>(v);
        return be::kOk;
      }
    }
    const CUresult r = api_->cuDeviceGetAttribute(&value, attr, slot(ordinal).device);
    if (r == CUDA_SUCCESS && cached) cached->store(value, std::memory_order_relaxed);
    return status(r);
  }

  be::Status memory_info(int ordinal, std::size_t& free_bytes,
                         std::size_t& total_bytes) const override {
    if (!valid(ordinal)) return status(CUDA_ERROR_INVALID_DEVICE);
    DeviceSlot& s = slot(ordinal);
    RealContext ctx;
    {
      std::lock_guard lock(s.mu);
      if (!s.live.empty()) ctx = s.live.front();
    }
    if (ctx.handle != nullptr) {
      if (auto st = make_current(*api_, ctx); !st.ok()) return st;
      return status(api_->cuMemGetInfo_v2(&free_bytes, &total_bytes));
    }
    // No context of ours on the device: NVIDIA needs one, borrow its primary context.
    CUcontext primary = nullptr;
    if (auto r = api_->cuDevicePrimaryCtxRetain(&primary, s.device)) return status(r);
    const RealContext temp{primary, g_next_context_id.fetch_add(1)};
    be::Status st = make_current(*api_, temp);
    if (st.ok()) st = status(api_->cuMemGetInfo_v2(&free_bytes, &total_bytes));
    (void)api_->cuDevicePrimaryCtxRelease_v2(s.device);
    return st;
  }

  bool p2p_attribute(int ordinal, int peer, CUdevice_P2PAttribute attr, int& value,
                     be::Status& st) const override {
    if (!api_->cuDeviceGetP2PAttribute || !valid(ordinal) || !valid(peer)) return false;
    st = status(
        api_->cuDeviceGetP2PAttribute(&value, attr, slot(ordinal).device, slot(peer).device));
    return true;
  }

  // NVIDIA's own answer (CUDA 13.0): it does not follow from NATIVE_ATOMIC_SUPPORTED (two H200s
  // over NVLink, driver 580: native atomics 1, every capability 0).
  bool p2p_atomic_capabilities(int ordinal, int peer, const CUatomicOperation* operations,
                               unsigned count, unsigned* capabilities,
                               be::Status& st) const override {
    if (!api_->cuDeviceGetP2PAtomicCapabilities || !valid(ordinal) || !valid(peer)) return false;
    st = status(api_->cuDeviceGetP2PAtomicCapabilities(capabilities, operations, count,
                                                       slot(ordinal).device, slot(peer).device));
    return true;
  }

  [[nodiscard]] bool can_access_peer(int ordinal, int peer) const noexcept override {
    if (!valid(ordinal) || !valid(peer)) return false;
    int can = 0;
    return api_->cuDeviceCanAccessPeer(&can, slot(ordinal).device, slot(peer).device) ==
               CUDA_SUCCESS &&
           can != 0;
  }

 private:
  static constexpr std::size_t kAttrs = CU_DEVICE_ATTRIBUTE_MAX;
  static constexpr std::int64_t kUncached = INT64_MIN;
  const NvidiaApi* api_;
  mutable std::vector<DeviceSlot> slots_;
  std::unique_ptr<std::atomic<std::int64_t>[]> cache_;  // [ordinal * kAttrs + attribute]
};

// Virtual memory management, NVIDIA's own: the core keeps the bookkeeping, NVIDIA the ranges
// and the memory. Ordinals become NVIDIA's CUdevice through the backend's device slots.
class NvidiaVirtualMemory final : public be::VirtualMemory {
 public:
  NvidiaVirtualMemory(const NvidiaApi& api, std::vector<CUdevice> devices)
      : api_(api), devices_(std::move(devices)) {}

  be::Status granularity(int ordinal, unsigned shareable, bool recommended,
                         std::size_t& out) override {
    CUmemAllocationProp prop = prop_of(ordinal, shareable);
    return status(api_.cuMemGetAllocationGranularity(
        &out, &prop,
        recommended ? CU_MEM_ALLOC_GRANULARITY_RECOMMENDED : CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  }
  be::Status reserve(std::size_t size, std::size_t alignment, std::uintptr_t fixed,
                     std::uintptr_t& out) override {
    CUdeviceptr p = 0;
    const CUresult r = api_.cuMemAddressReserve(&p, size, alignment, fixed, 0);
    out = p;
    return status(r);
  }
  be::Status free_range(std::uintptr_t base, std::size_t size) override {
    return status(api_.cuMemAddressFree(base, size));
  }
  be::Status create(int ordinal, std::size_t size, unsigned shareable, unsigned char& compression,
                    std::uint64_t& handle) override {
    CUmemAllocationProp prop = prop_of(ordinal, shareable);
    prop.allocFlags.compressionType = compression;
    CUmemGenericAllocationHandle h = 0;
    const CUresult r = api_.cuMemCreate(&h, size, &prop, 0);
    handle = h;
    if (r != CUDA_SUCCESS) return status(r);
    // NVIDIA may give plain memory where compression was asked: what it gave.
    CUmemAllocationProp given{};
    if (api_.cuMemGetAllocationPropertiesFromHandle(&given, h) == CUDA_SUCCESS)
      compression = given.allocFlags.compressionType;
    return be::kOk;
  }
  be::Status release(std::uint64_t handle) override { return status(api_.cuMemRelease(handle)); }
  be::Status map(std::uintptr_t va, std::size_t size, std::size_t offset,
                 std::uint64_t handle) override {
    return status(api_.cuMemMap(va, size, offset, handle, 0));
  }
  be::Status unmap(std::uintptr_t va, std::size_t size) override {
    return status(api_.cuMemUnmap(va, size));
  }
  be::Status set_access(std::uintptr_t va, std::size_t size, int ordinal, unsigned prot) override {
    CUmemAccessDesc desc{};
    desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    desc.location.id = device(ordinal);
    desc.flags = static_cast<CUmemAccess_flags>(prot);
    return status(api_.cuMemSetAccess(va, size, &desc, 1));
  }
  be::Status export_fd(std::uint64_t handle, int& fd) override {
    return status(api_.cuMemExportToShareableHandle(&fd, handle,
                                                    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  }
  be::Status import_fd(int fd, std::uint64_t& handle, std::size_t& size) override {
    CUmemGenericAllocationHandle h = 0;
    const CUresult r = api_.cuMemImportFromShareableHandle(
        &h, reinterpret_cast<void*>(static_cast<std::intptr_t>(fd)),
        CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    if (r != CUDA_SUCCESS) return status(r);
    handle = h;
    // NVIDIA answers the size through the file (a dma-buf / memfd of the allocation's size).
    struct stat info {};
    size = ::fstat(fd, &info) == 0 && info.st_size > 0 ? static_cast<std::size_t>(info.st_size) : 0;
    return be::kOk;
  }

 private:
  [[nodiscard]] CUdevice device(int ordinal) const noexcept {
    return ordinal >= 0 && static_cast<std::size_t>(ordinal) < devices_.size()
               ? devices_[static_cast<std::size_t>(ordinal)]
               : -1;
  }
  [[nodiscard]] CUmemAllocationProp prop_of(int ordinal, unsigned shareable) const noexcept {
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device(ordinal);
    prop.requestedHandleTypes = static_cast<CUmemAllocationHandleType>(shareable);
    return prop;
  }

  const NvidiaApi& api_;
  const std::vector<CUdevice> devices_;
};

class NvidiaBackend final : public be::Backend {
 public:
  NvidiaBackend(std::optional<OpenedDriver> driver, int count, const CudaConfig& config,
                std::shared_ptr<spdlog::logger> log)
      : driver_(std::move(driver)),
        errors_(driver_ ? &driver_->api : nullptr),
        devices_(driver_ ? &driver_->api : nullptr, count),
        mode_(config.contexts),
        config_(config),
        log_(std::move(log)) {
    for (int i = 0; i < count; ++i) (void)driver_->api.cuDeviceGet(&devices_.slot(i).device, i);
    if (driver_) {
      const NvidiaApi& api = driver_->api;
      bool complete = true;
#define CUDAMUX_NVIDIA_HAS(name) complete = complete && api.name != nullptr;
      CUDAMUX_NVIDIA_VMM_FUNCTIONS(CUDAMUX_NVIDIA_HAS)
#undef CUDAMUX_NVIDIA_HAS
      if (complete) {
        std::vector<CUdevice> nvidia_devices;
        for (int i = 0; i < count; ++i) nvidia_devices.push_back(devices_.slot(i).device);
        vmm_ = std::make_unique<NvidiaVirtualMemory>(api, std::move(nvidia_devices));
      }
      if (NvidiaImages::available(api))  // issue 17: NVIDIA's CUDA arrays
        images_ = std::make_unique<NvidiaImages>(api, nvidia_devices());
      if (NvidiaPools::available(api))  // issue 16: NVIDIA's stream-ordered pools
        pools_ = std::make_unique<NvidiaPools>(api, nvidia_devices());
    }
  }
  [[nodiscard]] be::VirtualMemory* virtual_memory() noexcept override { return vmm_.get(); }
  [[nodiscard]] be::Images* images() noexcept override { return images_.get(); }
  [[nodiscard]] be::NativePools* native_pools() noexcept override { return pools_.get(); }
  [[nodiscard]] std::vector<CUdevice> nvidia_devices() {
    std::vector<CUdevice> out;
    for (int i = 0; devices_.valid(i); ++i) out.push_back(devices_.slot(i).device);
    return out;
  }
  be::Status advise(std::uintptr_t ptr, std::size_t bytes, CUmem_advise advice,
                    CUmemLocation location) override {
    if (!driver_ || !driver_->api.cuMemAdvise_v2) return be::kOk;  // a hint: nothing to emulate
    if (location.type == CU_MEM_LOCATION_TYPE_DEVICE) {
      // The core checked the device of advice that names a location; other advice (read-mostly,
      // unsetting the preferred location) may carry any, which NVIDIA ignores (driver 580
      // accepts 4096 and -7) and is passed as it is.
      if (devices_.valid(location.id)) location.id = devices_.slot(location.id).device;
    }
    return status(driver_->api.cuMemAdvise_v2(ptr, bytes, advice, location));
  }
  [[nodiscard]] void* native_host_function(std::string_view name) noexcept override {
    if (!driver_) return nullptr;
    const NvidiaApi& api = driver_->api;
#define CUDAMUX_NVIDIA_HOST(fn) \
  if (name == #fn) return reinterpret_cast<void*>(api.fn);
    CUDAMUX_NVIDIA_HOST_FUNCTIONS(CUDAMUX_NVIDIA_HOST)
#undef CUDAMUX_NVIDIA_HOST
    return nullptr;
  }

  [[nodiscard]] std::string_view name() const noexcept override { return "cuda"; }
  [[nodiscard]] const be::ErrorDomain& errors() const noexcept override { return errors_; }
  [[nodiscard]] be::Devices& devices() noexcept override { return devices_; }
  // NVIDIA's NVRTC, looked for on first use (it needs no driver or GPU); nullptr without one.
  [[nodiscard]] be::Compiler* compiler() noexcept override {
    try {
      std::call_once(compiler_once_, [&] { compiler_ = find_compiler(config_, *log_); });
    } catch (...) {
      return nullptr;
    }
    return compiler_.get();
  }
  // Every NVIDIA format, as it is: NVIDIA's driver chooses among a fat binary's entries.
  [[nodiscard]] unsigned image_kinds() const noexcept override {
    return be::image_kind_bit(be::ImageKind::native) |
           be::image_kind_bit(be::ImageKind::nvidia_fatbin) |
           be::image_kind_bit(be::ImageKind::cubin) | be::image_kind_bit(be::ImageKind::ptx);
  }
  [[nodiscard]] std::string_view image_needs() const noexcept override {
    return "NVIDIA fat binaries, cubins and PTX (NVIDIA's driver loads them)";
  }
  // Forwarded to NVIDIA's cuLaunchKernelEx, which checks the device and the kernel itself.
  [[nodiscard]] bool launches_clusters() const noexcept override {
    return driver_ && driver_->api.cuLaunchKernelEx != nullptr;
  }

  be::Status open_context(int ordinal, unsigned flags,
                          std::unique_ptr<be::DeviceContext>& out) override {
    if (!devices_.valid(ordinal)) return status(CUDA_ERROR_INVALID_DEVICE);
    const NvidiaApi& api = driver_->api;
    DeviceSlot& s = devices_.slot(ordinal);
    RealContext ctx;
    if (mode_ == ContextMode::primary) {
      std::lock_guard lock(s.mu);
      if (s.primary_users == 0) {
        // Scheduling flags can only be set while NVIDIA's primary context is inactive.
        constexpr unsigned kPrimaryFlags = CU_CTX_SCHED_MASK | CU_CTX_LMEM_RESIZE_TO_MAX;
        unsigned active_flags = 0;
        int active = 0;
        if (api.cuDevicePrimaryCtxGetState(s.device, &active_flags, &active) == CUDA_SUCCESS &&
            !active) {
          (void)api.cuDevicePrimaryCtxSetFlags_v2(s.device, flags & kPrimaryFlags);
        }
        CUcontext h = nullptr;
        if (auto r = api.cuDevicePrimaryCtxRetain(&h, s.device)) return status(r);
        s.primary = {h, g_next_context_id.fetch_add(1)};
        s.live.push_back(s.primary);
      }
      ++s.primary_users;
      ctx = s.primary;
    } else {
      CUcontext h = nullptr;
      if (auto r = api.cuCtxCreate_v4(&h, nullptr, flags, s.device)) return status(r);
      // cuCtxCreate pushed it on this thread's NVIDIA stack: pop it again, so that what
      // is current stays what t_current_id says.
      CUcontext popped = nullptr;
      (void)api.cuCtxPopCurrent_v2(&popped);
      ctx = {h, g_next_context_id.fetch_add(1)};
      std::lock_guard lock(s.mu);
      s.live.push_back(ctx);
    }
    out = std::make_unique<NvidiaContext>(*this, ordinal, ctx);
    return be::kOk;
  }

  void close_context(int ordinal, const RealContext& ctx) {
    const NvidiaApi& api = driver_->api;
    DeviceSlot& s = devices_.slot(ordinal);
    std::lock_guard lock(s.mu);
    if (mode_ == ContextMode::primary) {
      if (--s.primary_users > 0) return;
      (void)api.cuDevicePrimaryCtxRelease_v2(s.device);
    } else {
      (void)api.cuCtxDestroy_v2(ctx.handle);
    }
    std::erase_if(s.live, [&](const RealContext& c) { return c.id == ctx.id; });
    if (t_current_id == ctx.id) t_current_id = 0;
  }

  [[nodiscard]] const NvidiaApi& api() const noexcept { return driver_->api; }

 private:
  std::unique_ptr<NvidiaVirtualMemory> vmm_;
  std::unique_ptr<NvidiaImages> images_;
  std::unique_ptr<NvidiaPools> pools_;
  std::optional<OpenedDriver> driver_;
  NvidiaErrors errors_;
  NvidiaDevices devices_;
  const ContextMode mode_;
  const CudaConfig config_;
  std::shared_ptr<spdlog::logger> log_;
  std::once_flag compiler_once_;
  std::unique_ptr<NvidiaCompiler> compiler_;
};

const NvidiaApi& NvidiaContext::api_of(NvidiaBackend& b) { return b.api(); }
std::vector<CUdevice> NvidiaContext::devices_of(NvidiaBackend& b) { return b.nvidia_devices(); }
NvidiaContext::~NvidiaContext() { backend_.close_context(ordinal_, ctx_); }

}  // namespace

be::Status make_context_current(be::DeviceContext& ctx) {
  const auto& nvidia = static_cast<NvidiaContext&>(ctx);
  return make_current(nvidia.api(), nvidia.real());
}

namespace {

std::string result_name(const NvidiaApi& api, CUresult r) {
  const char* name = nullptr;
  if (api.cuGetErrorName(r, &name) == CUDA_SUCCESS && name != nullptr) return name;
  return "CUresult " + std::to_string(static_cast<int>(r));
}

std::string join(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += "\n  " + l;
  return out;
}

be::Backend* create(const be::PluginHost& host, std::string& error) {
  if (host.abi_version != be::kAbiVersion) {
    error = "cuda backend: host ABI version " + std::to_string(host.abi_version) +
            ", plugin built for " + std::to_string(be::kAbiVersion);
    return nullptr;
  }
  auto& log = *host.logger;
  CudaConfig config;
  if (auto message = parse_config(host.config, host.config_source, log, config)) {
    error = std::move(*message);
    return nullptr;
  }
  const ContextMode mode = config.contexts;
  std::optional<OpenedDriver> driver;
  if (config.driver) {
    std::string why;
    driver = open_driver(*config.driver, why);
    if (!driver) {
      error = config.driver_origin + ": [cuda] key 'driver': " + *config.driver + " " + why;
      return nullptr;
    }
  } else {
    const auto dirs = config.search ? *config.search : default_search_dirs();
    SearchResult found = search_driver(dirs);
    for (const auto& line : found.tried) log.debug("cuda backend: skipped {}", line);
    if (!found.driver) {
      log.warn(
          "cuda backend: no NVIDIA driver found ({} not in any searched folder, or not "
          "usable); set [cuda] driver to its full path. Searched:{}",
          kDriverFileName, join(found.tried));
      return new NvidiaBackend(std::nullopt, 0, config, host.logger);
    }
    driver = std::move(found.driver);
  }
  const NvidiaApi& api = driver->api;
  if (const CUresult r = api.cuInit(0); r != CUDA_SUCCESS) {
    if (r == CUDA_ERROR_NO_DEVICE) {
      log.warn("cuda backend: NVIDIA's driver {} reports no device (CUDA_ERROR_NO_DEVICE)",
               driver->path);
      return new NvidiaBackend(std::move(driver), 0, config, host.logger);
    }
    error = "cuda backend: NVIDIA's driver " + driver->path + " failed to initialise: cuInit " +
            "returned " + result_name(api, r);
    return nullptr;
  }
  // NVIDIA's driver spends ~20 us on the first failing call of a process (measured on an H100,
  // driver 580), and NvidiaFunction learns a parameter count by asking one past the last, a
  // failing call: made once here, where cuInit already costs ~100 ms, it leaves the program's
  // first kernel load (issue 14's first-launch time; docs/performance.md).
  {
    std::size_t offset = 0, size = 0;
    (void)api.cuFuncGetParamInfo(nullptr, 0, &offset, &size);
  }
  int version = 0;
  (void)api.cuDriverGetVersion(&version);
  int count = 0;
  if (const CUresult r = api.cuDeviceGetCount(&count); r != CUDA_SUCCESS) {
    error = "cuda backend: NVIDIA's driver " + driver->path + ": cuDeviceGetCount returned " +
            result_name(api, r);
    return nullptr;
  }
  if (version < CUDA_VERSION) {
    log.warn(
        "cuda backend: NVIDIA's driver {} supports CUDA {}.{}, older than the {}.{} API "
        "cudamux presents",
        driver->path, version / 1000, version % 1000 / 10, CUDA_VERSION / 1000,
        CUDA_VERSION % 1000 / 10);
  }
  log.debug("cuda backend: NVIDIA's driver {} (CUDA {}.{}), {} device(s), contexts = {}",
            driver->path, version / 1000, version % 1000 / 10, count,
            mode == ContextMode::primary ? "primary" : "create");
  return new NvidiaBackend(std::move(driver), count, config, host.logger);
}

}  // namespace
}  // namespace cudamux::cuda

CUDAMUX_PLUGIN_EXPORT std::uint32_t cudamux_backend_abi_version() {
  return cudamux::backend::kAbiVersion;
}

CUDAMUX_PLUGIN_EXPORT cudamux::backend::Backend* cudamux_backend_create(
    const cudamux::backend::PluginHost& host, std::string& error) {
  try {
    return cudamux::cuda::create(host, error);
  } catch (const std::exception& e) {  // nothing may cross the C boundary
    error = std::string("cuda backend: ") + e.what();
    return nullptr;
  }
}
