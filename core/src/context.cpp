// Contexts: creation, the per-thread stack, primary contexts, limits.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <mutex>

#include "array.hpp"
#include "core.hpp"
#include "cudamux/driver_impl.hpp"
#include "graph.hpp"
#include "mempool.hpp"

namespace cudamux::core {

namespace {
bool valid_ctx_flags(unsigned flags) {
  if (flags & ~static_cast<unsigned>(CU_CTX_FLAGS_MASK)) return false;
  switch (flags & CU_CTX_SCHED_MASK) {
    case CU_CTX_SCHED_AUTO:
    case CU_CTX_SCHED_SPIN:
    case CU_CTX_SCHED_YIELD:
    case CU_CTX_SCHED_BLOCKING_SYNC:
      return true;
    default:
      return false;  // more than one scheduling policy
  }
}

// What a fresh context reports for cuCtxGetLimit (values of a current data-centre GPU).
void default_limits(Context& ctx) {
  ctx.limits.fill(0);
  ctx.limits[CU_LIMIT_STACK_SIZE] = 1024;
  ctx.limits[CU_LIMIT_PRINTF_FIFO_SIZE] = 1 << 20;
  ctx.limits[CU_LIMIT_MALLOC_HEAP_SIZE] = 8 << 20;
  ctx.limits[CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH] = 2;
  ctx.limits[CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT] = 2048;
  ctx.limits[CU_LIMIT_MAX_L2_FETCH_GRANULARITY] = 64;
  ctx.limits[CU_LIMIT_PERSISTING_L2_CACHE_SIZE] = 0;
  // Not a CIG (green) context: no shared memory carved out for one, fallback on.
  ctx.limits[CU_LIMIT_SHMEM_SIZE] = 0;
  ctx.limits[CU_LIMIT_CIG_ENABLED] = 0;
  ctx.limits[CU_LIMIT_CIG_SHMEM_FALLBACK_ENABLED] = 1;
}

}  // namespace

// Limits a device without its own record (the mock) answers as NVIDIA's driver 580 does on
// an H100 (tests/nvcc/limits_probe.c): the device runtime's sync depth went with CUDA dynamic
// parallelism's first version (gone from compute capability 9.0), and the CIG fallback exists
// only for CIG contexts, which cudamux does not make.
bool limit_supported(const Context& ctx, CUlimit limit) {
  if (limit == CU_LIMIT_CIG_SHMEM_FALLBACK_ENABLED) return false;
  if (limit == CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH)
    return device_attribute_or(ctx.device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0) < 9;
  return true;
}

namespace {
constexpr int kLeastStreamPriority = 0;
constexpr int kGreatestStreamPriority = -5;
}  // namespace

CUresult make_stream(Context& ctx, StreamKind kind, unsigned flags, int priority,
                     std::unique_ptr<Stream>& out) {
  Core& core = Core::get();
  auto s = std::make_unique<Stream>();
  s->ctx = &ctx;
  s->kind = kind;
  s->flags = flags;
  s->priority = std::clamp(priority, kGreatestStreamPriority, kLeastStreamPriority);
  s->id = core.next_stream_id.fetch_add(1);
  if (auto st = ctx.impl->create_queue(flags, s->priority, s->queue); !st.ok())
    return core.map(st, "stream creation");
  if (auto st = ctx.impl->create_event(CU_EVENT_DISABLE_TIMING, s->marker); !st.ok())
    return core.map(st, "stream creation");
  out = std::move(s);
  return CUDA_SUCCESS;
}

CUresult create_context(int device, unsigned flags, bool primary, CUcontext& out,
                        CUcontext revive) {
  Core& core = Core::get();
  auto ctx = std::make_unique<Context>();
  ctx->device = device;
  ctx->flags = flags;
  ctx->primary = primary;
  ctx->launch_blocking = core.launch_blocking();
  ctx->launch_limits = launch_limits_of(device);
  ctx->id = core.next_context_id.fetch_add(1);
  default_limits(*ctx);
  if (auto st = core.backend().open_context(core.backend_ordinal(device), flags, ctx->impl);
      !st.ok())
    return core.map(st, "context creation");
  if (CUresult r = make_stream(*ctx, StreamKind::legacy, 0, 0, ctx->legacy)) return r;
  Context* raw = ctx.release();
  const auto handle = revive && core.contexts.revive(reinterpret_cast<std::uintptr_t>(revive), raw)
                          ? reinterpret_cast<std::uintptr_t>(revive)
                          : core.contexts.insert(raw);
  if (!handle) {
    delete raw;
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  raw->handle = reinterpret_cast<CUcontext>(handle);
  raw->legacy->handle = CU_STREAM_LEGACY;
  out = raw->handle;
  return CUDA_SUCCESS;
}

void quiesce_all_contexts(bool lifetime_held) {
  Core& core = Core::get();
  std::shared_lock<std::shared_mutex> lifetime;
  if (!lifetime_held) lifetime = std::shared_lock(core.context_lifetime_mutex);
  for (Context* c : core.contexts.live()) {
    if (c->impl) (void)c->impl->synchronize();
  }
}

void destroy_context_contents(Context& ctx) {
  Core& core = Core::get();
  // Outstanding work finishes first, as with CUDA's implicit synchronisation on destroy;
  // that of other contexts too, since it may use this context's memory (issue 9). Stream
  // value waits nothing will satisfy any more end first (issue 17).
  ctx.impl->interrupt_waits();
  (void)ctx.impl->synchronize();
  quiesce_all_contexts(/*lifetime_held=*/true);
  abandon_captures(ctx);     // issue 16
  forget_exec_orders(ctx);   // issue 16
  pool_forget_context(ctx);  // pool blocks and free events of this context (mempool.cpp)
  for (Event* e : core.events.live()) {
    if (e->ctx == &ctx && core.events.erase(reinterpret_cast<std::uintptr_t>(e->handle))) delete e;
  }
  std::vector<Stream*> streams;
  std::vector<std::unique_ptr<Stream>> retired_streams;
  std::vector<std::unique_ptr<Event>> retired_events;
  {
    std::lock_guard lock(ctx.order_mutex);
    streams.swap(ctx.streams);
    retired_streams.swap(ctx.retired_streams);
    retired_events.swap(ctx.retired_events);
  }
  retired_events.clear();
  retired_streams.clear();
  for (Stream* s : streams) {
    if (core.streams.erase(reinterpret_cast<std::uintptr_t>(s->handle))) delete s;
  }
  ctx.legacy.reset();
  ctx.gather_queue.reset();     // issue 17 (stream_extras.cpp)
  unload_context_modules(ctx);  // issue #3: a context's modules die with it (module.cpp)
  destroy_context_arrays(ctx);  // issue 17: and its CUDA arrays (array.cpp)
  {
    std::unique_lock lock(core.alloc_mutex);
    for (auto it = core.allocations.begin(); it != core.allocations.end();) {
      const Allocation& a = it->second;
      if (a.ctx != &ctx) {
        ++it;
        continue;
      }
      void* p = reinterpret_cast<void*>(a.base);
      switch (a.kind) {
        case AllocKind::device:
          if (a.ipc_mapping) {
            backend::Status st;
            (void)ctx.impl->ipc_close_memory(p, st);
            forget_ipc_mapping(ctx, a.base);
          } else {
            (void)ctx.impl->free(p);
          }
          break;
        case AllocKind::host_alloc:
          (void)ctx.impl->free_host(p);
          break;
        case AllocKind::host_registered:
          (void)ctx.impl->unregister_host(p);
          break;
        case AllocKind::managed:
          forget_managed_hints(a.buffer_id);
          (void)ctx.impl->free_managed(p);
          break;
      }
      it = core.allocations.erase(it);
    }
  }
  ctx.impl.reset();
}

CUresult primary_context_locked(PrimaryContext& primary, int device) {
  if (primary.handle && context_of(primary.handle)) return CUDA_SUCCESS;
  CUcontext h = nullptr;
  if (CUresult r = create_context(device, primary.flags, true, h, primary.handle)) return r;
  primary.handle = h;
  return CUDA_SUCCESS;
}

CUresult primary_context_peek(CUcontext* out, CUdevice dev) {
  if (!out) return reject(CUDA_ERROR_INVALID_VALUE, "primary context", "null out-pointer");
  Core& core = Core::get();
  if (!core.valid_device(dev))
    return reject(CUDA_ERROR_INVALID_DEVICE, "primary context", "no such device");
  auto& primary = core.device(dev).primary;
  std::lock_guard lock(primary.mutex);
  if (CUresult r = primary_context_locked(primary, dev)) return r;
  *out = primary.handle;
  return CUDA_SUCCESS;
}

CUresult destroy_context(CUcontext handle, bool pop, bool keep_handle) {
  Core& core = Core::get();
  release_local_storage(handle);  // the runtime's per-context state goes first (issue 14)
  std::unique_lock lifetime(core.context_lifetime_mutex);
  const auto value = reinterpret_cast<std::uintptr_t>(handle);
  Context* ctx =
      keep_handle ? core.contexts.erase_keeping_handle(value) : core.contexts.erase(value);
  if (!ctx) return CUDA_ERROR_INVALID_CONTEXT;
  if (pop) forget_context_on_this_thread(handle);
  destroy_context_contents(*ctx);
  delete ctx;
  return CUDA_SUCCESS;
}

}  // namespace cudamux::core

namespace cudamux::impl {
using core::Context;
using core::Core;
using core::reject;

// --- creation and destruction ---

static CUresult create_and_push(CUcontext* pctx, unsigned flags, CUdevice dev, const char* fn) {
  if (!pctx) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  if (!core::valid_ctx_flags(flags)) return reject(CUDA_ERROR_INVALID_VALUE, fn, "invalid flags");
  if (!Core::get().valid_device(dev))
    return reject(CUDA_ERROR_INVALID_DEVICE, fn, "no such device");
  CUcontext h = nullptr;
  if (CUresult r = core::create_context(dev, flags, false, h)) return r;
  core::push_context(h);
  *pctx = h;
  return CUDA_SUCCESS;
}

CUresult cuCtxCreate(CUcontext* pctx, unsigned int flags, CUdevice dev) {
  return create_and_push(pctx, flags, dev, "cuCtxCreate");
}
CUresult cuCtxCreate_v2(CUcontext* pctx, unsigned int flags, CUdevice dev) {
  return create_and_push(pctx, flags, dev, "cuCtxCreate");
}
CUresult cuCtxCreate_v3(CUcontext* pctx, CUexecAffinityParam* paramsArray, int numParams,
                        unsigned int flags, CUdevice dev) {
  // A count of 0 or less is none (NVIDIA's driver 580 creates the context for -1).
  if (numParams > 0 && !paramsArray)
    return reject(CUDA_ERROR_INVALID_VALUE, "cuCtxCreate_v3", "bad affinity parameters");
  if (numParams > 0)
    return reject(CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY, "cuCtxCreate_v3",
                  "execution affinity is not supported by this backend");
  return create_and_push(pctx, flags, dev, "cuCtxCreate_v3");
}
CUresult cuCtxCreate_v4(CUcontext* pctx, CUctxCreateParams* params, unsigned int flags,
                        CUdevice dev) {
  if (params) {
    if (params->numExecAffinityParams > 0 && !params->execAffinityParams)
      return reject(CUDA_ERROR_INVALID_VALUE, "cuCtxCreate_v4", "bad affinity parameters");
    if (params->numExecAffinityParams > 0)
      return reject(CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY, "cuCtxCreate_v4",
                    "execution affinity is not supported by this backend");
    if (params->cigParams)
      return reject(CUDA_ERROR_NOT_SUPPORTED, "cuCtxCreate_v4",
                    "CUDA-in-graphics contexts are not supported by this backend");
  }
  return create_and_push(pctx, flags, dev, "cuCtxCreate_v4");
}

CUresult cuCtxDestroy_v2(CUcontext ctx) {
  if (!ctx) return reject(CUDA_ERROR_INVALID_VALUE, "cuCtxDestroy", "null context");
  Context* c = core::context_of(ctx);
  if (!c) return reject(CUDA_ERROR_INVALID_CONTEXT, "cuCtxDestroy", "stale or invalid context");
  if (c->primary)
    return reject(CUDA_ERROR_INVALID_CONTEXT, "cuCtxDestroy",
                  "primary contexts are released with cuDevicePrimaryCtxRelease");
  return core::destroy_context(ctx);
}
CUresult cuCtxDestroy(CUcontext ctx) { return impl::cuCtxDestroy_v2(ctx); }

// --- the per-thread stack ---

CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  if (!ctx || !core::context_of(ctx))
    return reject(CUDA_ERROR_INVALID_CONTEXT, "cuCtxPushCurrent", "invalid context");
  core::push_context(ctx);
  return CUDA_SUCCESS;
}
CUresult cuCtxPushCurrent(CUcontext ctx) { return impl::cuCtxPushCurrent_v2(ctx); }

CUresult cuCtxPopCurrent_v2(CUcontext* pctx) {
  if (!core::current_context_handle())
    return reject(CUDA_ERROR_INVALID_CONTEXT, "cuCtxPopCurrent", "no current context");
  const CUcontext top = core::pop_context();
  if (pctx) *pctx = top;
  return CUDA_SUCCESS;
}
CUresult cuCtxPopCurrent(CUcontext* pctx) { return impl::cuCtxPopCurrent_v2(pctx); }

CUresult cuCtxSetCurrent(CUcontext ctx) {
  if (ctx && !core::context_of(ctx))
    return reject(CUDA_ERROR_INVALID_CONTEXT, "cuCtxSetCurrent", "invalid context");
  if (!ctx) {
    // CUDA: a null context pops the current one (if any).
    if (core::current_context_handle()) core::pop_context();
    return CUDA_SUCCESS;
  }
  core::set_current_context(ctx);
  return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext* pctx) {
  if (!pctx) return reject(CUDA_ERROR_INVALID_VALUE, "cuCtxGetCurrent", "null out-pointer");
  *pctx = core::current_context_handle();
  return CUDA_SUCCESS;
}

// --- queries on a context ---

static CUresult ctx_or_current(CUcontext h, Context*& out) {
  if (h) {
    out = core::context_of(h);
    return out ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
  }
  return core::current_context(out);
}

CUresult cuCtxGetDevice(CUdevice* device) {
  if (!device) return reject(CUDA_ERROR_INVALID_VALUE, "cuCtxGetDevice", "null out-pointer");
  Context* ctx = nullptr;
  if (CUresult r = core::current_context(ctx)) return r;
  *device = ctx->device;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice_v2(CUdevice* device, CUcontext h) {
  if (!device) return reject(CUDA_ERROR_INVALID_VALUE, "cuCtxGetDevice_v2", "null out-pointer");
  Context* ctx = nullptr;
  if (CUresult r = ctx_or_current(h, ctx)) return r;
  *device = ctx->device;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetFlags(unsigned int* flags) {
  if (!flags) return reject(CUDA_ERROR_INVALID_VALUE, "cuCtxGetFlags", "null out-pointer");
  Context* ctx = nullptr;
  if (CUresult r = core::current_context(ctx)) return r;
  *flags = ctx->flags;
  return CUDA_SUCCESS;
}

CUresult cuCtxSetFlags(unsigned int flags) {
  if (!core::valid_ctx_flags(flags))
    return reject(CUDA_ERROR_INVALID_VALUE, "cuCtxSetFlags", "invalid flags");
  Context* ctx = nullptr;
  if (CUresult r = core::current_context(ctx)) return r;
  ctx->flags = flags;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetId(CUcontext h, unsigned long long* ctxId) {
  if (!ctxId) return reject(CUDA_ERROR_INVALID_VALUE, "cuCtxGetId", "null out-pointer");
  Context* ctx = nullptr;
  // A destroyed context is CUDA_ERROR_CONTEXT_IS_DESTROYED here (NVIDIA's driver 580, H200);
  // made-up values stay CUDA_ERROR_INVALID_CONTEXT.
  if (CUresult r = ctx_or_current(h, ctx)) {
    const bool destroyed = h && Core::get().contexts.stale(reinterpret_cast<std::uintptr_t>(h));
    return r == CUDA_ERROR_INVALID_CONTEXT && destroyed ? CUDA_ERROR_CONTEXT_IS_DESTROYED : r;
  }
  *ctxId = ctx->id;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetApiVersion(CUcontext h, unsigned int* version) {
  if (!version) return reject(CUDA_ERROR_INVALID_VALUE, "cuCtxGetApiVersion", "null out-pointer");
  Context* ctx = nullptr;
  if (CUresult r = ctx_or_current(h, ctx)) return r;
  *version = 3020;  // every context created through the _v2+ entry points reports the 3.2 API
  return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize() {
  if (CUresult r = core::unsafe_call("cuCtxSynchronize"))
    return r;  // issue 16: not while capturing
  Context* ctx = nullptr;
  if (CUresult r = core::current_context(ctx)) return r;
  const CUresult r = core::note_sticky(
      *ctx, Core::get().map(ctx->impl->synchronize(), "cuCtxSynchronize"));  // issue #3
  if (r == CUDA_SUCCESS) core::pool_after_synchronize(ctx->device);          // release threshold
  return r;
}

CUresult cuCtxSynchronize_v2(CUcontext h) {
  Context* ctx = nullptr;
  if (CUresult r = ctx_or_current(h, ctx)) return r;
  if (CUresult r = core::sticky_error(*ctx)) return r;  // issue #3: sticky kernel errors
  const CUresult r =
      core::note_sticky(*ctx, Core::get().map(ctx->impl->synchronize(), "cuCtxSynchronize_v2"));
  if (r == CUDA_SUCCESS) core::pool_after_synchronize(ctx->device);  // release threshold
  return r;
}

CUresult cuCtxGetLimit(size_t* pvalue, CUlimit limit) {
  if (!pvalue) return reject(CUDA_ERROR_INVALID_VALUE, "cuCtxGetLimit", "null out-pointer");
  // NVIDIA's driver 580 answers INVALID_VALUE for limits past CU_LIMIT_MAX (oracle:
  // tests/nvcc/limits_probe.c).
  if (static_cast<unsigned>(limit) >= CU_LIMIT_MAX)
    return reject(CUDA_ERROR_INVALID_VALUE, "cuCtxGetLimit", "unknown limit");
  Context* ctx = nullptr;
  if (CUresult r = core::current_context(ctx)) return r;
  backend::Status st;
  std::size_t value = 0;
  if (ctx->impl->get_limit(limit, value, st)) {
    if (CUresult r = Core::get().map(st, "cuCtxGetLimit")) return r;
    *pvalue = value;
    return CUDA_SUCCESS;
  }
  if (!core::limit_supported(*ctx, limit))
    return reject(CUDA_ERROR_UNSUPPORTED_LIMIT, "cuCtxGetLimit", "not supported by this device");
  std::lock_guard lock(ctx->state_mutex);
  *pvalue = ctx->limits[limit];
  return CUDA_SUCCESS;
}

CUresult cuCtxSetLimit(CUlimit limit, size_t value) {
  if (static_cast<unsigned>(limit) >= CU_LIMIT_MAX)
    return reject(CUDA_ERROR_INVALID_VALUE, "cuCtxSetLimit", "unknown limit");
  // Green-context (CIG) limits describe the context; they are read, never set.
  if (limit == CU_LIMIT_SHMEM_SIZE || limit == CU_LIMIT_CIG_ENABLED)
    return reject(CUDA_ERROR_NOT_PERMITTED, "cuCtxSetLimit", "this limit can only be queried");
  Context* ctx = nullptr;
  if (CUresult r = core::current_context(ctx)) return r;
  if (limit == CU_LIMIT_MAX_L2_FETCH_GRANULARITY && value > 128)
    return reject(CUDA_ERROR_INVALID_VALUE, "cuCtxSetLimit", "L2 fetch granularity is 0..128");
  backend::Status st;
  if (ctx->impl->set_limit(limit, value, st)) return Core::get().map(st, "cuCtxSetLimit");
  if (!core::limit_supported(*ctx, limit))
    return reject(CUDA_ERROR_UNSUPPORTED_LIMIT, "cuCtxSetLimit", "not supported by this device");
  std::lock_guard lock(ctx->state_mutex);
  ctx->limits[limit] = value;
  return CUDA_SUCCESS;
}

CUresult cuCtxResetPersistingL2Cache() {
  Context* ctx = nullptr;
  if (CUresult r = core::current_context(ctx)) return r;
  return Core::get().map(ctx->impl->reset_persisting_l2_cache(), "cuCtxResetPersistingL2Cache");
}

CUresult cuCtxGetCacheConfig(CUfunc_cache* pconfig) {
  if (!pconfig) return reject(CUDA_ERROR_INVALID_VALUE, "cuCtxGetCacheConfig", "null out-pointer");
  Context* ctx = nullptr;
  if (CUresult r = core::current_context(ctx)) return r;
  std::lock_guard lock(ctx->state_mutex);
  *pconfig = ctx->cache_config;
  return CUDA_SUCCESS;
}

CUresult cuCtxSetCacheConfig(CUfunc_cache config) {
  if (static_cast<unsigned>(config) > CU_FUNC_CACHE_PREFER_EQUAL)
    return reject(CUDA_ERROR_INVALID_VALUE, "cuCtxSetCacheConfig", "unknown cache configuration");
  Context* ctx = nullptr;
  if (CUresult r = core::current_context(ctx)) return r;
  std::lock_guard lock(ctx->state_mutex);
  ctx->cache_config = config;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetStreamPriorityRange(int* leastPriority, int* greatestPriority) {
  Context* ctx = nullptr;
  if (CUresult r = core::current_context(ctx)) return r;
  if (leastPriority) *leastPriority = core::kLeastStreamPriority;
  if (greatestPriority) *greatestPriority = core::kGreatestStreamPriority;
  return CUDA_SUCCESS;
}

// --- primary contexts ---

CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  if (!pctx)
    return reject(CUDA_ERROR_INVALID_VALUE, "cuDevicePrimaryCtxRetain", "null out-pointer");
  Core& core = Core::get();
  if (!core.valid_device(dev))
    return reject(CUDA_ERROR_INVALID_DEVICE, "cuDevicePrimaryCtxRetain", "no such device");
  auto& primary = core.device(dev).primary;
  std::lock_guard lock(primary.mutex);
  if (CUresult r = core::primary_context_locked(primary, dev)) return r;
  ++primary.retain_count;
  *pctx = primary.handle;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  Core& core = Core::get();
  if (!core.valid_device(dev))
    return reject(CUDA_ERROR_INVALID_DEVICE, "cuDevicePrimaryCtxRelease", "no such device");
  auto& primary = core.device(dev).primary;
  std::lock_guard lock(primary.mutex);
  if (primary.retain_count <= 0)
    return reject(CUDA_ERROR_INVALID_CONTEXT, "cuDevicePrimaryCtxRelease",
                  "primary context not retained");
  if (--primary.retain_count == 0 && primary.handle) {
    // CUDA: "unlike cuCtxDestroy() this method does not pop the context from stack in
    // any circumstances". The handle stays the device's, as after a reset.
    (void)core::destroy_context(primary.handle, /*pop=*/false, /*keep_handle=*/true);
  }
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRelease(CUdevice dev) { return impl::cuDevicePrimaryCtxRelease_v2(dev); }

CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  Core& core = Core::get();
  if (!core.valid_device(dev))
    return reject(CUDA_ERROR_INVALID_DEVICE, "cuDevicePrimaryCtxReset", "no such device");
  auto& primary = core.device(dev).primary;
  std::lock_guard lock(primary.mutex);
  // CUDA: "Resetting the primary context does not release it": the retain count stays,
  // so modules that retained it may still (safely) release it; a retain creates it anew.
  // The handle stays the device's (NVIDIA's runtime keeps it): dead until the next retain
  // revives it with a new context.
  if (primary.handle)
    (void)core::destroy_context(primary.handle, /*pop=*/false, /*keep_handle=*/true);
  primary.flags = 0;
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxReset(CUdevice dev) { return impl::cuDevicePrimaryCtxReset_v2(dev); }

CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int* flags, int* active) {
  if (!flags || !active)
    return reject(CUDA_ERROR_INVALID_VALUE, "cuDevicePrimaryCtxGetState", "null out-pointer");
  Core& core = Core::get();
  if (!core.valid_device(dev))
    return reject(CUDA_ERROR_INVALID_DEVICE, "cuDevicePrimaryCtxGetState", "no such device");
  auto& primary = core.device(dev).primary;
  std::lock_guard lock(primary.mutex);
  *flags = primary.flags;
  // Active: retained, and the context exists (not reset since).
  *active = primary.retain_count > 0 && primary.handle && core::context_of(primary.handle) ? 1 : 0;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags) {
  Core& core = Core::get();
  if (!core.valid_device(dev))
    return reject(CUDA_ERROR_INVALID_DEVICE, "cuDevicePrimaryCtxSetFlags", "no such device");
  if (!core::valid_ctx_flags(flags))
    return reject(CUDA_ERROR_INVALID_VALUE, "cuDevicePrimaryCtxSetFlags", "invalid flags");
  auto& primary = core.device(dev).primary;
  std::lock_guard lock(primary.mutex);
  primary.flags = flags;
  if (Context* ctx = primary.handle ? core::context_of(primary.handle) : nullptr)
    ctx->flags = flags;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags) {
  // The CUDA 7.0 variant refuses while the primary context is active; _v2 does not.
  Core& core = Core::get();
  if (core.valid_device(dev)) {
    auto& primary = core.device(dev).primary;
    std::lock_guard lock(primary.mutex);
    if (primary.retain_count > 0 && primary.handle && core::context_of(primary.handle))
      return reject(CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE, "cuDevicePrimaryCtxSetFlags",
                    "primary context is active");
  }
  return impl::cuDevicePrimaryCtxSetFlags_v2(dev, flags);
}

}  // namespace cudamux::impl

// cudaProfiler.h (issue 14: NVIDIA's samples bracket their timed loops with these): they switch
// collection on and off for an attached profiling tool. No tool attaches to cudamux, so there
// is nothing to switch; like NVIDIA's driver they need a current context.
namespace cudamux::impl {
CUresult cuProfilerStart() {
  core::Context* ctx = nullptr;
  return core::current_context(ctx);
}
CUresult cuProfilerStop() {
  core::Context* ctx = nullptr;
  return core::current_context(ctx);
}
}  // namespace cudamux::impl
