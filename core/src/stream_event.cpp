// Streams and events.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <mutex>

#include "core.hpp"
#include "cudamux/driver_impl.hpp"
#include "graph.hpp"
#include "mempool.hpp"

namespace cudamux::impl {
using core::Context;
using core::Core;
using core::Event;
using core::reject;
using core::Stream;

namespace {

// Moves the retired objects whose work is complete from `retired` to `idle`.
template <class T, class Done>
void reap_idle(std::vector<std::unique_ptr<T>>& retired, std::vector<std::unique_ptr<T>>& idle,
               Done&& done) {
  for (auto it = retired.begin(); it != retired.end();) {
    if (done(**it)) {
      idle.push_back(std::move(*it));
      it = retired.erase(it);
    } else {
      ++it;
    }
  }
}

CUresult create_stream(CUstream* phStream, unsigned flags, int priority, const char* fn) {
  if (!phStream) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  if (flags & ~static_cast<unsigned>(CU_STREAM_NON_BLOCKING))
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "invalid flags");
  Context* ctx = nullptr;
  if (CUresult r = core::current_context(ctx)) return r;
  std::unique_ptr<Stream> s;
  if (CUresult r = core::make_stream(*ctx, core::StreamKind::user, flags, priority, s)) return r;
  Stream* raw = s.release();
  const auto handle = Core::get().streams.insert(raw);
  if (!handle) {
    delete raw;
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  raw->handle = reinterpret_cast<CUstream>(handle);
  {
    std::lock_guard lock(ctx->order_mutex);
    ctx->streams.push_back(raw);
  }
  *phStream = raw->handle;
  return CUDA_SUCCESS;
}

CUresult stream_query(CUstream h, bool per_thread) {
  Stream* s = nullptr;
  if (CUresult r = core::resolve_stream(h, per_thread, s)) return r;
  if (core::capture_applies(*s)) return core::capture_forbidden(*s, "cuStreamQuery");
  return core::note_sticky(*s->ctx,
                           Core::get().map(s->queue->query(), "cuStreamQuery"));  // issue #3
}

CUresult stream_synchronize(CUstream h, bool per_thread) {
  Stream* s = nullptr;
  if (CUresult r = core::resolve_stream(h, per_thread, s)) return r;
  if (core::capture_applies(*s)) return core::capture_forbidden(*s, "cuStreamSynchronize");
  CUresult r = core::note_sticky(
      *s->ctx, Core::get().map(s->queue->synchronize(), "cuStreamSynchronize"));  // issue #3
  // A kernel that failed elsewhere in the context (a conditional node's body runs on a queue
  // of its own) spoils it for every stream, as on NVIDIA's driver.
  if (r == CUDA_SUCCESS) r = core::sticky_error(*s->ctx);
  if (r == CUDA_SUCCESS) core::pool_after_synchronize(s->ctx->device);  // release threshold
  return r;
}

CUresult stream_wait_event(CUstream h, CUevent hEvent, unsigned flags, bool per_thread) {
  if (flags & ~static_cast<unsigned>(CU_EVENT_WAIT_EXTERNAL))
    return reject(CUDA_ERROR_INVALID_VALUE, "cuStreamWaitEvent", "invalid flags");
  Stream* s = nullptr;
  if (CUresult r = core::resolve_stream(h, per_thread, s)) return r;
  Event* e = core::event_of(hEvent);
  if (!e) return reject(CUDA_ERROR_INVALID_HANDLE, "cuStreamWaitEvent", "invalid event");
  // issue 16: a wait in a capture, or on an event recorded in one (which joins `s` to it).
  if (core::capture_applies(*s) || e->in_capture.load(std::memory_order_acquire))
    return core::capture_event_wait(*s, *e, flags, "cuStreamWaitEvent");
  if (!e->recorded.load(std::memory_order_acquire)) return CUDA_SUCCESS;  // nothing to wait for
  const CUresult r = Core::get().map(
      core::submit(*s, [&](backend::Queue& q) { return q.wait(*e->impl); }), "cuStreamWaitEvent");
  if (r == CUDA_SUCCESS) core::pool_note_stream_wait(*s, *e);  // pools follow the dependency
  return r;
}

struct StreamCallback {
  CUstreamCallback fn;
  CUstream stream;
  void* user;
};
void run_stream_callback(void* p) {
  std::unique_ptr<StreamCallback> cb(static_cast<StreamCallback*>(p));
  cb->fn(cb->stream, CUDA_SUCCESS, cb->user);
}

CUresult add_callback(CUstream h, CUstreamCallback callback, void* userData, unsigned flags,
                      bool per_thread) {
  if (!callback) return reject(CUDA_ERROR_INVALID_VALUE, "cuStreamAddCallback", "null callback");
  if (flags != 0) return reject(CUDA_ERROR_INVALID_VALUE, "cuStreamAddCallback", "flags must be 0");
  Stream* s = nullptr;
  if (CUresult r = core::resolve_stream(h, per_thread, s)) return r;
  if (core::capture_applies(*s)) return core::capture_forbidden(*s, "cuStreamAddCallback");
  auto cb = std::make_unique<StreamCallback>(StreamCallback{callback, h, userData});
  const auto st = core::submit(
      *s, [&](backend::Queue& q) { return q.host_function(&run_stream_callback, cb.get()); });
  if (st.ok()) cb.release();  // the trampoline owns it now
  return Core::get().map(st, "cuStreamAddCallback");
}

CUresult launch_host_func(CUstream h, CUhostFn fn, void* userData, bool per_thread) {
  if (!fn) return reject(CUDA_ERROR_INVALID_VALUE, "cuLaunchHostFunc", "null function");
  Stream* s = nullptr;
  if (CUresult r = core::resolve_stream(h, per_thread, s)) return r;
  if (core::capture_applies(*s)) return core::capture_host(*s, fn, userData, "cuLaunchHostFunc");
  return Core::get().map(
      core::submit(*s, [&](backend::Queue& q) { return q.host_function(fn, userData); }),
      "cuLaunchHostFunc");
}

template <class F>
CUresult stream_get(CUstream h, bool per_thread, void* out, const char* fn, F&& get) {
  if (!out) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  Stream* s = nullptr;
  if (CUresult r = core::resolve_stream(h, per_thread, s)) return r;
  get(*s);
  return CUDA_SUCCESS;
}

CUresult event_record(CUevent hEvent, CUstream h, unsigned flags, bool per_thread) {
  if (flags & ~static_cast<unsigned>(CU_EVENT_RECORD_EXTERNAL))
    return reject(CUDA_ERROR_INVALID_VALUE, "cuEventRecord", "invalid flags");
  Event* e = core::event_of(hEvent);
  if (!e) return reject(CUDA_ERROR_INVALID_HANDLE, "cuEventRecord", "invalid event");
  Stream* s = nullptr;
  if (CUresult r = core::resolve_stream(h, per_thread, s)) return r;
  if (s->ctx != e->ctx)
    return reject(CUDA_ERROR_INVALID_HANDLE, "cuEventRecord",
                  "event and stream belong to different contexts");
  if (core::capture_applies(*s)) return core::capture_event_record(*s, *e, "cuEventRecord");
  const auto st = core::submit(*s, [&](backend::Queue& q) { return q.record(*e->impl); });
  if (st.ok()) {
    e->recorded.store(true, std::memory_order_release);
    if (e->in_capture.load(std::memory_order_acquire)) core::forget_event_capture(*e);
    core::pool_note_event_record(*e, *s);  // which pool frees the record follows
  }
  return Core::get().map(st, "cuEventRecord");
}

}  // namespace

// --- streams ---

CUresult cuStreamCreate(CUstream* phStream, unsigned int Flags) {
  return create_stream(phStream, Flags, 0, "cuStreamCreate");
}
CUresult cuStreamCreateWithPriority(CUstream* phStream, unsigned int flags, int priority) {
  return create_stream(phStream, flags, priority, "cuStreamCreateWithPriority");
}

CUresult cuStreamDestroy_v2(CUstream hStream) {
  if (hStream == nullptr || hStream == CU_STREAM_LEGACY || hStream == CU_STREAM_PER_THREAD)
    return reject(CUDA_ERROR_INVALID_HANDLE, "cuStreamDestroy",
                  "default streams cannot be destroyed");
  Core& core = Core::get();
  Stream* s = core::stream_of(hStream);
  if (!s || s->kind != core::StreamKind::user)
    return reject(CUDA_ERROR_INVALID_HANDLE, "cuStreamDestroy", "invalid stream");
  if (!core.streams.erase(reinterpret_cast<std::uintptr_t>(hStream)))
    return reject(CUDA_ERROR_INVALID_HANDLE, "cuStreamDestroy", "stream destroyed concurrently");
  // CUDA: "in case the device is still doing work in the stream when cuStreamDestroy() is
  // called, the function will return immediately and the resources are released
  // automatically once the device has completed all work". So a stream with pending work
  // is retired, not synchronised (that could deadlock a program whose pending work waits
  // on the host), and freed by a later destroy once idle, or with its context.
  if (s->capture.load(std::memory_order_acquire)) core::abandon_stream_capture(*s);
  Context& ctx = *s->ctx;
  std::vector<std::unique_ptr<Stream>> idle;
  {
    std::lock_guard lock(ctx.order_mutex);
    std::erase(ctx.streams, s);
    // Legacy-stream work submitted later must still wait for this blocking stream's work.
    if (s->blocking() && s->has_unsynced_work && s->queue->record(*s->marker).ok())
      (void)ctx.legacy->queue->wait(*s->marker);
    ctx.retired_streams.emplace_back(s);
    reap_idle(ctx.retired_streams, idle, [](const Stream& r) { return r.queue->query().ok(); });
  }
  return CUDA_SUCCESS;  // `idle` streams are freed here, outside the lock
}
CUresult cuStreamDestroy(CUstream hStream) { return impl::cuStreamDestroy_v2(hStream); }

CUresult cuStreamQuery(CUstream h) { return stream_query(h, false); }
CUresult cuStreamQuery_ptsz(CUstream h) { return stream_query(h, true); }
CUresult cuStreamSynchronize(CUstream h) { return stream_synchronize(h, false); }
CUresult cuStreamSynchronize_ptsz(CUstream h) { return stream_synchronize(h, true); }
CUresult cuStreamWaitEvent(CUstream h, CUevent e, unsigned int flags) {
  return stream_wait_event(h, e, flags, false);
}
CUresult cuStreamWaitEvent_ptsz(CUstream h, CUevent e, unsigned int flags) {
  return stream_wait_event(h, e, flags, true);
}
CUresult cuStreamAddCallback(CUstream h, CUstreamCallback cb, void* user, unsigned int flags) {
  return add_callback(h, cb, user, flags, false);
}
CUresult cuStreamAddCallback_ptsz(CUstream h, CUstreamCallback cb, void* user, unsigned int flags) {
  return add_callback(h, cb, user, flags, true);
}
CUresult cuLaunchHostFunc(CUstream h, CUhostFn fn, void* user) {
  return launch_host_func(h, fn, user, false);
}
CUresult cuLaunchHostFunc_ptsz(CUstream h, CUhostFn fn, void* user) {
  return launch_host_func(h, fn, user, true);
}

// --- stream attributes ---

namespace {

using StreamAttributes = core::Stream::Attributes;

// The launch attribute ids CUDA 13.0 documents as valid for streams.
bool stream_attribute(CUlaunchAttributeID id) noexcept {
  switch (id) {
    case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
    case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
    case CU_LAUNCH_ATTRIBUTE_PRIORITY:
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
    case CU_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING:
      return true;
    default:
      return false;
  }
}

// CUDA's rules for a value; the reason when it breaks one, else null. `value` may be adjusted
// as CUDA does (a priority outside the device's range is clamped, as at creation).
const char* invalid_stream_attribute(const Stream& s, CUlaunchAttributeID id,
                                     CUlaunchAttributeValue& value) {
  switch (id) {
    case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW: {
      const CUaccessPolicyWindow& w = value.accessPolicyWindow;
      const int max_window = core::device_attribute_or(
          s.ctx->device, CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE, 0);
      if (w.num_bytes > static_cast<std::size_t>(std::max(max_window, 0)))
        return "access policy window larger than the device's maximum";
      if (!(w.hitRatio >= 0.0f && w.hitRatio <= 1.0f)) return "hit ratio outside [0, 1]";
      if (static_cast<unsigned>(w.hitProp) > CU_ACCESS_PROPERTY_PERSISTING ||
          static_cast<unsigned>(w.missProp) > CU_ACCESS_PROPERTY_PERSISTING)
        return "unknown access property";
      return nullptr;
    }
    case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
      if (value.syncPolicy < CU_SYNC_POLICY_AUTO || value.syncPolicy > CU_SYNC_POLICY_BLOCKING_SYNC)
        return "unknown synchronization policy";
      return nullptr;
    case CU_LAUNCH_ATTRIBUTE_PRIORITY: {
      int least = 0, greatest = 0;
      (void)impl::cuCtxGetStreamPriorityRange(&least, &greatest);
      value.priority = std::clamp(value.priority, greatest, least);
      return nullptr;
    }
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
      if (static_cast<unsigned>(value.memSyncDomain) > CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE)
        return "unknown memory synchronization domain";
      return nullptr;
    default:
      return nullptr;
  }
}

void record_attribute(Stream& s, CUlaunchAttributeID id, const CUlaunchAttributeValue& v) {
  StreamAttributes& a = s.attributes;
  switch (id) {
    case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
      a.access_policy_window = v.accessPolicyWindow;
      break;
    case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
      a.synchronization_policy = v.syncPolicy;
      break;
    case CU_LAUNCH_ATTRIBUTE_PRIORITY:
      s.priority = v.priority;
      break;
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
      a.mem_sync_domain_map = v.memSyncDomainMap;
      break;
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
      a.mem_sync_domain = v.memSyncDomain;
      break;
    case CU_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING:
      a.nvlink_util_centric_scheduling = v.nvlinkUtilCentricScheduling;
      break;
    default:
      break;
  }
}

CUlaunchAttributeValue read_attribute(const Stream& s, CUlaunchAttributeID id) {
  CUlaunchAttributeValue v{};
  const StreamAttributes& a = s.attributes;
  switch (id) {
    case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
      v.accessPolicyWindow = a.access_policy_window;
      break;
    case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
      v.syncPolicy = a.synchronization_policy;
      break;
    case CU_LAUNCH_ATTRIBUTE_PRIORITY:
      v.priority = s.priority;
      break;
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
      v.memSyncDomainMap = a.mem_sync_domain_map;
      break;
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
      v.memSyncDomain = a.mem_sync_domain;
      break;
    case CU_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING:
      v.nvlinkUtilCentricScheduling = a.nvlink_util_centric_scheduling;
      break;
    default:
      break;
  }
  return v;
}

// Validates, tells the backend, then records (state_mutex held throughout, so concurrent
// setters of one stream leave the backend and the record agreeing).
CUresult set_stream_attribute(Stream& s, CUlaunchAttributeID id, CUlaunchAttributeValue value,
                              const char* fn) {
  if (!stream_attribute(id))
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "not an attribute of streams");
  if (const char* why = invalid_stream_attribute(s, id, value))
    return reject(CUDA_ERROR_INVALID_VALUE, fn, why);
  std::lock_guard lock(s.ctx->state_mutex);
  if (auto st = s.queue->set_attribute(id, value); !st.ok()) return Core::get().map(st, fn);
  record_attribute(s, id, value);
  return CUDA_SUCCESS;
}

CUresult stream_set_attribute(CUstream h, CUstreamAttrID id, const CUstreamAttrValue* value,
                              bool per_thread) {
  const char* fn = "cuStreamSetAttribute";
  if (!value) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null value");
  Stream* s = nullptr;
  if (CUresult r = core::resolve_stream(h, per_thread, s)) return r;
  return set_stream_attribute(*s, id, *value, fn);
}

CUresult stream_get_attribute(CUstream h, CUstreamAttrID id, CUstreamAttrValue* value,
                              bool per_thread) {
  const char* fn = "cuStreamGetAttribute";
  if (!value) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  if (!stream_attribute(id))
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "not an attribute of streams");
  Stream* s = nullptr;
  if (CUresult r = core::resolve_stream(h, per_thread, s)) return r;
  std::lock_guard lock(s->ctx->state_mutex);
  *value = read_attribute(*s, id);
  return CUDA_SUCCESS;
}

// Every stream attribute of `src` onto `dst`, through the same path as cuStreamSetAttribute.
CUresult stream_copy_attributes(CUstream dst, CUstream src, bool per_thread) {
  const char* fn = "cuStreamCopyAttributes";
  Stream* d = nullptr;
  Stream* from = nullptr;
  if (CUresult r = core::resolve_stream(dst, per_thread, d)) return r;
  if (CUresult r = core::resolve_stream(src, per_thread, from)) return r;
  if (d == from) return CUDA_SUCCESS;
  constexpr CUlaunchAttributeID kCopied[] = {CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW,
                                             CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY,
                                             CU_LAUNCH_ATTRIBUTE_PRIORITY,
                                             CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP,
                                             CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN,
                                             CU_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING};
  for (const CUlaunchAttributeID id : kCopied) {
    CUlaunchAttributeValue v{}, current{};
    {
      std::lock_guard lock(from->ctx->state_mutex);
      v = read_attribute(*from, id);
    }
    {
      std::lock_guard lock(d->ctx->state_mutex);
      current = read_attribute(*d, id);
    }
    // Only what differs is set: values never set (a policy of -1) have nothing to apply, and
    // the backend is not asked to re-apply defaults it may refuse to set explicitly.
    if (std::memcmp(&v, &current, sizeof v) == 0) continue;
    if (CUresult r = set_stream_attribute(*d, id, v, fn)) return r;
  }
  return CUDA_SUCCESS;
}

}  // namespace

CUresult cuStreamSetAttribute(CUstream h, CUstreamAttrID attr, const CUstreamAttrValue* value) {
  return stream_set_attribute(h, attr, value, false);
}
CUresult cuStreamSetAttribute_ptsz(CUstream h, CUstreamAttrID attr,
                                   const CUstreamAttrValue* value) {
  return stream_set_attribute(h, attr, value, true);
}
CUresult cuStreamGetAttribute(CUstream h, CUstreamAttrID attr, CUstreamAttrValue* value) {
  return stream_get_attribute(h, attr, value, false);
}
CUresult cuStreamGetAttribute_ptsz(CUstream h, CUstreamAttrID attr, CUstreamAttrValue* value) {
  return stream_get_attribute(h, attr, value, true);
}
CUresult cuStreamCopyAttributes(CUstream dst, CUstream src) {
  return stream_copy_attributes(dst, src, false);
}
CUresult cuStreamCopyAttributes_ptsz(CUstream dst, CUstream src) {
  return stream_copy_attributes(dst, src, true);
}

#define CUDAMUX_STREAM_GETTER(NAME, TYPE, EXPR)                                       \
  CUresult NAME(CUstream h, TYPE* out) {                                              \
    return stream_get(h, false, out, #NAME, [&](const Stream& s) { *out = (EXPR); }); \
  }                                                                                   \
  CUresult NAME##_ptsz(CUstream h, TYPE* out) {                                       \
    return stream_get(h, true, out, #NAME, [&](const Stream& s) { *out = (EXPR); });  \
  }
CUDAMUX_STREAM_GETTER(cuStreamGetFlags, unsigned int, s.flags)
CUDAMUX_STREAM_GETTER(cuStreamGetPriority, int, s.priority)
CUDAMUX_STREAM_GETTER(cuStreamGetCtx, CUcontext, s.ctx->handle)
CUDAMUX_STREAM_GETTER(cuStreamGetId, unsigned long long, s.id)
CUDAMUX_STREAM_GETTER(cuStreamGetDevice, CUdevice, s.ctx->device)
#undef CUDAMUX_STREAM_GETTER

CUresult cuStreamGetCtx_v2(CUstream h, CUcontext* pCtx, CUgreenCtx* pGreenCtx) {
  if (!pGreenCtx) return reject(CUDA_ERROR_INVALID_VALUE, "cuStreamGetCtx_v2", "null out-pointer");
  if (CUresult r = impl::cuStreamGetCtx(h, pCtx)) return r;
  *pGreenCtx = nullptr;  // green contexts are not supported, so no stream belongs to one
  return CUDA_SUCCESS;
}
CUresult cuStreamGetCtx_v2_ptsz(CUstream h, CUcontext* pCtx, CUgreenCtx* pGreenCtx) {
  if (!pGreenCtx) return reject(CUDA_ERROR_INVALID_VALUE, "cuStreamGetCtx_v2", "null out-pointer");
  if (CUresult r = impl::cuStreamGetCtx_ptsz(h, pCtx)) return r;
  *pGreenCtx = nullptr;
  return CUDA_SUCCESS;
}

// --- events ---

CUresult cuEventCreate(CUevent* phEvent, unsigned int Flags) {
  if (!phEvent) return reject(CUDA_ERROR_INVALID_VALUE, "cuEventCreate", "null out-pointer");
  constexpr unsigned kAll =
      CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
  if (Flags & ~kAll) return reject(CUDA_ERROR_INVALID_VALUE, "cuEventCreate", "invalid flags");
  if ((Flags & CU_EVENT_INTERPROCESS) && !(Flags & CU_EVENT_DISABLE_TIMING))
    return reject(CUDA_ERROR_INVALID_VALUE, "cuEventCreate",
                  "interprocess events must disable timing");
  Context* ctx = nullptr;
  if (CUresult r = core::current_context(ctx)) return r;
  Core& core = Core::get();
  auto e = std::make_unique<Event>();
  e->ctx = ctx;
  e->flags = Flags;
  if (auto st = ctx->impl->create_event(Flags, e->impl); !st.ok())
    return core.map(st, "cuEventCreate");
  Event* raw = e.release();
  const auto handle = core.events.insert(raw);
  if (!handle) {
    delete raw;
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  raw->handle = reinterpret_cast<CUevent>(handle);
  *phEvent = raw->handle;
  return CUDA_SUCCESS;
}

CUresult cuEventRecord(CUevent e, CUstream s) { return event_record(e, s, 0, false); }
CUresult cuEventRecord_ptsz(CUevent e, CUstream s) { return event_record(e, s, 0, true); }
CUresult cuEventRecordWithFlags(CUevent e, CUstream s, unsigned int flags) {
  return event_record(e, s, flags, false);
}
CUresult cuEventRecordWithFlags_ptsz(CUevent e, CUstream s, unsigned int flags) {
  return event_record(e, s, flags, true);
}

CUresult cuEventQuery(CUevent hEvent) {
  if (CUresult r = core::unsafe_call("cuEventQuery")) return r;  // issue 16: not while capturing
  Event* e = core::event_of(hEvent);
  if (!e) return reject(CUDA_ERROR_INVALID_HANDLE, "cuEventQuery", "invalid event");
  if (CUresult r = core::sticky_error(*e->ctx)) return r;  // issue #3: sticky kernel errors
  return core::note_sticky(*e->ctx, Core::get().map(e->impl->query(), "cuEventQuery"));
}

CUresult cuEventSynchronize(CUevent hEvent) {
  if (CUresult r = core::unsafe_call("cuEventSynchronize"))
    return r;  // issue 16: not while capturing
  Event* e = core::event_of(hEvent);
  if (!e) return reject(CUDA_ERROR_INVALID_HANDLE, "cuEventSynchronize", "invalid event");
  if (CUresult r = core::sticky_error(*e->ctx)) return r;  // issue #3: sticky kernel errors
  const CUresult r =
      core::note_sticky(*e->ctx, Core::get().map(e->impl->synchronize(), "cuEventSynchronize"));
  if (r == CUDA_SUCCESS) core::pool_after_synchronize(e->ctx->device);  // release threshold
  return r;
}

CUresult cuEventElapsedTime_v2(float* pMilliseconds, CUevent hStart, CUevent hEnd) {
  if (!pMilliseconds)
    return reject(CUDA_ERROR_INVALID_VALUE, "cuEventElapsedTime", "null out-pointer");
  Event* start = core::event_of(hStart);
  Event* end = core::event_of(hEnd);
  if (!start || !end)
    return reject(CUDA_ERROR_INVALID_HANDLE, "cuEventElapsedTime", "invalid event");
  if ((start->flags | end->flags) & CU_EVENT_DISABLE_TIMING)
    return reject(CUDA_ERROR_INVALID_HANDLE, "cuEventElapsedTime",
                  "event created with timing disabled");
  if (!start->recorded.load(std::memory_order_acquire) ||
      !end->recorded.load(std::memory_order_acquire))
    return reject(CUDA_ERROR_INVALID_HANDLE, "cuEventElapsedTime", "event never recorded");
  Core& core = Core::get();
  const auto not_ready = core.backend().errors().not_ready().native;
  for (Event* e : {start, end}) {
    const auto st = e->impl->query();
    if (st.native == not_ready) return CUDA_ERROR_NOT_READY;
    if (!st.ok()) return core.map(st, "cuEventElapsedTime");
  }
  return core.map(end->impl->elapsed_since(*start->impl, *pMilliseconds), "cuEventElapsedTime");
}
CUresult cuEventElapsedTime(float* ms, CUevent hStart, CUevent hEnd) {
  return impl::cuEventElapsedTime_v2(ms, hStart, hEnd);
}

CUresult cuEventDestroy_v2(CUevent hEvent) {
  Core& core = Core::get();
  Event* e = core.events.erase(reinterpret_cast<std::uintptr_t>(hEvent));
  if (!e) return reject(CUDA_ERROR_INVALID_HANDLE, "cuEventDestroy", "invalid event");
  // CUDA: destroying an event whose record is pending "does not block on completion of
  // the event"; a record still in flight must not touch a freed event, so such an event
  // is retired and freed once complete (or with its context).
  Context& ctx = *e->ctx;
  std::vector<std::unique_ptr<Event>> idle;
  {
    std::lock_guard lock(ctx.order_mutex);
    ctx.retired_events.emplace_back(e);
    reap_idle(ctx.retired_events, idle, [](const Event& r) { return r.impl->query().ok(); });
  }
  return CUDA_SUCCESS;  // `idle` events are freed here, outside the lock
}
CUresult cuEventDestroy(CUevent hEvent) { return impl::cuEventDestroy_v2(hEvent); }

}  // namespace cudamux::impl
