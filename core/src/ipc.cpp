// Interprocess communication (issue 17): cuIpcGetMemHandle, cuIpcOpenMemHandle(_v2),
// cuIpcCloseMemHandle, cuIpcGetEventHandle, cuIpcOpenEventHandle. The core checks CUDA's rules
// and keeps the opened mappings (reference counted per context and handle, as CUDA does); the
// backend makes and opens the handles (DeviceContext::ipc_*).
#include <spdlog/spdlog.h>

#include <cstring>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <string>

#include "core.hpp"
#include "cudamux/driver_impl.hpp"

namespace cudamux::core {
namespace {

struct Opened {
  std::uintptr_t base = 0;
  unsigned refs = 0;
};
std::mutex g_ipc_mutex;
// (context, handle bytes) -> mapping: a handle opened again in one context returns the same
// pointer with one more reference.
std::map<std::pair<Context*, std::string>, Opened> g_opened;

std::string key_of(const CUipcMemHandle& h) { return std::string(h.reserved, sizeof h.reserved); }

}  // namespace

void forget_ipc_mapping(Context& ctx, std::uintptr_t base) noexcept {
  std::lock_guard lock(g_ipc_mutex);
  for (auto it = g_opened.begin(); it != g_opened.end(); ++it) {
    if (it->first.first == &ctx && it->second.base == base) {
      g_opened.erase(it);
      return;
    }
  }
}

}  // namespace cudamux::core

namespace cudamux::impl {
using core::Allocation;
using core::AllocKind;
using core::Context;
using core::Core;
using core::reject;

CUresult cuIpcGetMemHandle(CUipcMemHandle* pHandle, CUdeviceptr dptr) {
  const char* fn = "cuIpcGetMemHandle";
  if (!pHandle) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  Context* current = nullptr;
  if (CUresult r = core::current_context(current)) return r;
  Core& core = Core::get();
  Allocation a;
  {
    std::shared_lock lock(core.alloc_mutex);
    const Allocation* found = core.find_allocation(static_cast<std::uintptr_t>(dptr));
    // Only cuMemAlloc'd memory: not managed, host, VMM or another process's memory.
    if (!found || found->kind != AllocKind::device || found->virtual_mapping ||
        found->ipc_mapping || !found->ctx)
      return reject(CUDA_ERROR_INVALID_VALUE, fn, "not memory from cuMemAlloc");
    a = *found;
  }
  // The handle names the whole allocation (its base), whatever pointer into it was given.
  backend::Status st;
  if (!a.ctx->impl->ipc_export_memory(reinterpret_cast<void*>(a.base), a.size, *pHandle, st))
    return reject(CUDA_ERROR_NOT_SUPPORTED, fn, "the backend has no IPC");
  return core.map(st, fn);
}

namespace {
CUresult open_mem_handle(CUdeviceptr* pdptr, const CUipcMemHandle& handle, unsigned flags) {
  const char* fn = "cuIpcOpenMemHandle";
  if (!pdptr) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  if (flags & ~static_cast<unsigned>(CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS))
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "invalid flags");
  Context* ctx = nullptr;
  if (CUresult r = core::current_context(ctx)) return r;
  Core& core = Core::get();
  std::lock_guard lock(core::g_ipc_mutex);
  const auto key = std::make_pair(ctx, core::key_of(handle));
  if (auto it = core::g_opened.find(key); it != core::g_opened.end()) {
    ++it->second.refs;
    *pdptr = static_cast<CUdeviceptr>(it->second.base);
    return CUDA_SUCCESS;
  }
  void* p = nullptr;
  std::size_t bytes = 0;
  backend::Status st;
  if (!ctx->impl->ipc_open_memory(handle, flags, &p, bytes, st))
    return reject(CUDA_ERROR_NOT_SUPPORTED, fn, "the backend has no IPC");
  if (!st.ok()) return core.map(st, fn);
  Allocation a;
  a.base = reinterpret_cast<std::uintptr_t>(p);
  a.size = bytes ? bytes : 1;
  a.kind = AllocKind::device;
  a.ctx = ctx;
  a.ctx_handle = ctx->handle;
  a.device = ctx->device;
  a.ipc_mapping = true;
  a.buffer_id = core.next_buffer_id.fetch_add(1);
  {
    std::unique_lock alock(core.alloc_mutex);
    core.allocations[a.base] = a;
  }
  core::g_opened[key] = core::Opened{a.base, 1};
  *pdptr = static_cast<CUdeviceptr>(a.base);
  return CUDA_SUCCESS;
}
}  // namespace

CUresult cuIpcOpenMemHandle_v2(CUdeviceptr* pdptr, CUipcMemHandle handle, unsigned int Flags) {
  return open_mem_handle(pdptr, handle, Flags);
}
CUresult cuIpcOpenMemHandle(CUdeviceptr* pdptr, CUipcMemHandle handle, unsigned int Flags) {
  return open_mem_handle(pdptr, handle, Flags);
}

CUresult cuIpcCloseMemHandle(CUdeviceptr dptr) {
  const char* fn = "cuIpcCloseMemHandle";
  Context* ctx = nullptr;
  if (CUresult r = core::current_context(ctx)) return r;
  Core& core = Core::get();
  std::unique_lock lock(core::g_ipc_mutex);
  auto it = core::g_opened.begin();
  for (; it != core::g_opened.end(); ++it)
    if (it->first.first == ctx && it->second.base == static_cast<std::uintptr_t>(dptr)) break;
  if (it == core::g_opened.end())
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "not memory opened by cuIpcOpenMemHandle here");
  if (--it->second.refs > 0) return CUDA_SUCCESS;
  core::g_opened.erase(it);
  lock.unlock();
  {
    std::unique_lock alock(core.alloc_mutex);
    core.allocations.erase(static_cast<std::uintptr_t>(dptr));
  }
  // Work of this process that still uses the mapping finishes first.
  core::quiesce_all_contexts();
  backend::Status st;
  (void)ctx->impl->ipc_close_memory(reinterpret_cast<void*>(static_cast<std::uintptr_t>(dptr)), st);
  return core.map(st, fn);
}

CUresult cuIpcGetEventHandle(CUipcEventHandle* pHandle, CUevent event) {
  const char* fn = "cuIpcGetEventHandle";
  if (!pHandle) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  core::Event* e = core::event_of(event);
  if (!e) return reject(CUDA_ERROR_INVALID_HANDLE, fn, "invalid event");
  if (!(e->flags & CU_EVENT_INTERPROCESS))
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "event not created with CU_EVENT_INTERPROCESS");
  backend::Status st;
  if (!e->ctx->impl->ipc_export_event(*e->impl, *pHandle, st))
    return reject(CUDA_ERROR_NOT_SUPPORTED, fn, "the backend has no IPC");
  return Core::get().map(st, fn);
}

CUresult cuIpcOpenEventHandle(CUevent* phEvent, CUipcEventHandle handle) {
  const char* fn = "cuIpcOpenEventHandle";
  if (!phEvent) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  Context* ctx = nullptr;
  if (CUresult r = core::current_context(ctx)) return r;
  Core& core = Core::get();
  auto e = std::make_unique<core::Event>();
  e->ctx = ctx;
  // "behaves like a locally created event with the CU_EVENT_DISABLE_TIMING flag specified"
  e->flags = CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
  backend::Status st;
  if (!ctx->impl->ipc_open_event(handle, e->impl, st))
    return reject(CUDA_ERROR_NOT_SUPPORTED, fn, "the backend has no IPC");
  if (!st.ok()) return core.map(st, fn);
  // The other process may record it at any time: waits always go to the backend.
  e->recorded.store(true, std::memory_order_release);
  core::Event* raw = e.release();
  const auto h = core.events.insert(raw);
  if (!h) {
    delete raw;
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  raw->handle = reinterpret_cast<CUevent>(h);
  *phEvent = raw->handle;
  return CUDA_SUCCESS;
}

}  // namespace cudamux::impl
