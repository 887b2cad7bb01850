// Small stream and context calls of issue 17: cuCtxRecordEvent / cuCtxWaitEvent (CUDA 12.5:
// an event over all of a context's work) and cuStreamAttachMemAsync (managed memory's stream
// association, checked as CUDA checks it; every backend's managed memory is visible to all
// streams, so nothing changes where it lives).
#include <spdlog/spdlog.h>

#include <mutex>
#include <shared_mutex>
#include <vector>

#include "core.hpp"
#include "cudamux/driver_impl.hpp"
#include "graph.hpp"

namespace cudamux::impl {
using core::Context;
using core::Core;
using core::Event;
using core::reject;
using core::Stream;

namespace {

CUresult context_and_event(CUcontext hCtx, CUevent hEvent, Context*& ctx, Event*& e,
                           const char* fn) {
  ctx = core::context_of(hCtx);
  if (!ctx) return reject(CUDA_ERROR_INVALID_CONTEXT, fn, "invalid context");
  e = core::event_of(hEvent);
  if (!e) return reject(CUDA_ERROR_INVALID_HANDLE, fn, "invalid event");
  if (e->ctx != ctx) return reject(CUDA_ERROR_INVALID_HANDLE, fn, "event of another context");
  if (CUresult r = core::sticky_error(*ctx)) return r;
  bool capturing = ctx->blocking_captures.load(std::memory_order_acquire) > 0;
  {
    std::lock_guard lock(ctx->order_mutex);
    for (const Stream* s : ctx->streams)
      capturing = capturing || s->capture.load(std::memory_order_acquire) != nullptr;
  }
  if (capturing)
    return reject(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, fn,
                  "a stream of the context is capturing");
  return CUDA_SUCCESS;
}

// Every stream of `ctx` with work: the legacy stream, user and per-thread streams, and
// destroyed ones still finishing. Caller holds order_mutex.
std::vector<Stream*> all_streams(Context& ctx) {
  std::vector<Stream*> out;
  if (ctx.legacy) out.push_back(ctx.legacy.get());
  for (Stream* s : ctx.streams) out.push_back(s);
  for (const auto& s : ctx.retired_streams) out.push_back(s.get());
  return out;
}

}  // namespace

CUresult cuCtxRecordEvent(CUcontext hCtx, CUevent hEvent) {
  const char* fn = "cuCtxRecordEvent";
  Context* ctx = nullptr;
  Event* e = nullptr;
  if (CUresult r = context_and_event(hCtx, hEvent, ctx, e, fn)) return r;
  Core& core = Core::get();
  std::lock_guard lock(ctx->order_mutex);
  if (!ctx->gather_queue) {
    if (auto st = ctx->impl->create_queue(CU_STREAM_NON_BLOCKING, 0, ctx->gather_queue); !st.ok())
      return core.map(st, fn);
  }
  backend::Queue& q = *ctx->gather_queue;
  // The gather queue waits for what every stream has so far, then records the event.
  for (Stream* s : all_streams(*ctx)) {
    std::unique_ptr<backend::Event> mark;
    if (auto st = ctx->impl->create_event(CU_EVENT_DISABLE_TIMING, mark); !st.ok())
      return core.map(st, fn);
    if (auto st = s->queue->record(*mark); !st.ok()) return core.map(st, fn);
    if (auto st = q.wait(*mark); !st.ok()) return core.map(st, fn);
  }
  if (auto st = q.record(*e->impl); !st.ok()) return core.map(st, fn);
  e->recorded.store(true, std::memory_order_release);
  return CUDA_SUCCESS;
}

CUresult cuCtxWaitEvent(CUcontext hCtx, CUevent hEvent) {
  const char* fn = "cuCtxWaitEvent";
  Context* ctx = nullptr;
  Event* e = nullptr;
  if (CUresult r = context_and_event(hCtx, hEvent, ctx, e, fn)) return r;
  if (!e->recorded.load(std::memory_order_acquire)) return CUDA_SUCCESS;  // nothing to wait for
  Core& core = Core::get();
  std::lock_guard lock(ctx->order_mutex);
  // The context's streams wait for the event (streams created later start after it anyway
  // when it has completed by then; they are not held back otherwise).
  for (Stream* s : all_streams(*ctx))
    if (auto st = s->queue->wait(*e->impl); !st.ok()) return core.map(st, fn);
  return CUDA_SUCCESS;
}

namespace {
CUresult attach_mem(CUstream h, CUdeviceptr dptr, std::size_t length, unsigned flags,
                    bool per_thread) {
  const char* fn = "cuStreamAttachMemAsync";
  if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST && flags != CU_MEM_ATTACH_SINGLE)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "flags must be one of CUmemAttach_flags");
  Stream* s = nullptr;
  if (CUresult r = core::resolve_stream(h, per_thread, s)) return r;
  if (flags == CU_MEM_ATTACH_SINGLE && s->kind == core::StreamKind::legacy)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "cannot attach singly to the NULL stream");
  Core& core = Core::get();
  {
    std::shared_lock lock(core.alloc_mutex);
    const core::Allocation* a = core.find_allocation(static_cast<std::uintptr_t>(dptr));
    if (!a || a->kind != core::AllocKind::managed)
      return reject(CUDA_ERROR_INVALID_VALUE, fn, "not managed memory");
    if (length != 0 && (dptr != a->base || length != a->size))
      return reject(CUDA_ERROR_INVALID_VALUE, fn,
                    "length must be 0 or the whole allocation's size");
  }
  // Stream-ordered, with nothing to do on memory every stream sees: the association is a
  // promise about accesses, which no backend of cudamux needs to act on.
  return CUDA_SUCCESS;
}
}  // namespace

CUresult cuStreamAttachMemAsync(CUstream h, CUdeviceptr dptr, size_t length, unsigned int flags) {
  return attach_mem(h, dptr, length, flags, false);
}
CUresult cuStreamAttachMemAsync_ptsz(CUstream h, CUdeviceptr dptr, size_t length,
                                     unsigned int flags) {
  return attach_mem(h, dptr, length, flags, true);
}

}  // namespace cudamux::impl
