// Memory: allocation, registration, copies, memsets, pointer attributes.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <mutex>
#include <shared_mutex>

#include "array.hpp"
#include "core.hpp"
#include "cudamux/driver_impl.hpp"
#include "graph.hpp"
#include "mempool.hpp"

namespace cudamux::core {
namespace {

using backend::MemKind;

MemKind mem_kind(AllocKind k) noexcept {
  switch (k) {
    case AllocKind::device:
      return MemKind::device;
    case AllocKind::managed:
      return MemKind::managed;
    case AllocKind::host_alloc:
    case AllocKind::host_registered:
      return MemKind::host_pinned;
  }
  return MemKind::host_pageable;
}

CUresult register_allocation(Allocation a) {
  Core& core = Core::get();
  a.buffer_id = core.next_buffer_id.fetch_add(1);
  std::unique_lock lock(core.alloc_mutex);
  core.allocations[a.base] = a;
  return CUDA_SUCCESS;
}

// One side of a copy: where the bytes are and what the core knows about them.
struct Side {
  std::uintptr_t addr = 0;
  MemKind kind = MemKind::host_pageable;
  int device = -1;
  // An end inside a CUDA array (issue 17): the backend's handle and where the box starts.
  std::uint64_t array = 0;
  std::size_t x_bytes = 0, y = 0, z = 0;
};

// Classifies [addr, addr+extent). `must_be_device`: the API names this side a
// device pointer, so it must lie inside one device-accessible allocation (or adjoining
// mappings of one virtual range, Core::find_span).
CUresult classify(std::uintptr_t addr, std::size_t extent, bool must_be_device, Side& out,
                  const char* fn) {
  if (addr == 0) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null pointer");
  Core& core = Core::get();
  std::shared_lock lock(core.alloc_mutex);
  out.addr = addr;
  if (const Allocation* a = core.find_span(addr, extent ? extent : 1)) {
    out.kind = mem_kind(a->kind);
    out.device = a->kind == AllocKind::device || a->kind == AllocKind::managed ? a->device : -1;
    return CUDA_SUCCESS;
  }
  const Allocation* start = core.find_allocation(addr);
  if (must_be_device) {
    if (start)
      return reject(CUDA_ERROR_INVALID_VALUE, fn, "range runs past the end of its allocation");
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "not a device pointer known to cudamux");
  }
  // A unified-addressing side (cuMemcpy, CU_MEMORYTYPE_UNIFIED) that starts inside device
  // or managed memory but runs past its end is not host memory: treating it as pageable
  // would let the backend write past the allocation. (Past the end of pinned or registered
  // host memory is the program's own memory, as with CUDA.)
  if (start && (start->kind == AllocKind::device || start->kind == AllocKind::managed))
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "range runs past the end of its allocation");
  out.kind = MemKind::host_pageable;
  out.device = -1;
  return CUDA_SUCCESS;
}

// a * b + c, false when it does not fit in size_t (sizes come from the program).
bool mul_add(std::size_t a, std::size_t b, std::size_t c, std::size_t& out) noexcept {
  return !__builtin_mul_overflow(a, b, &out) && !__builtin_add_overflow(out, c, &out);
}

std::uintptr_t to_addr(const void* p) noexcept { return reinterpret_cast<std::uintptr_t>(p); }
std::uintptr_t to_addr(CUdeviceptr p) noexcept { return static_cast<std::uintptr_t>(p); }

bool overlaps(std::uintptr_t a, std::size_t a_len, std::uintptr_t b, std::size_t b_len) noexcept {
  return a < b + b_len && b < a + a_len;
}

enum class Sync : std::uint8_t { blocking, async };

// Runs a copy on `s`. Async copies touching pageable host memory complete before
// returning, as CUDA does (its staging is invisible; the program may reuse the buffer).
CUresult run_copy(Stream& s, const backend::CopyDesc& d, Sync sync, const char* fn) {
  const bool pageable =
      d.src_kind == MemKind::host_pageable || d.dst_kind == MemKind::host_pageable;
  // issue 16: a capturing stream records a memcpy node instead.
  if (capture_applies(s)) return capture_copy(s, d, sync == Sync::blocking, fn);
  Core& core = Core::get();
  if (sync == Sync::blocking || pageable)
    return core.map(submit(s, [&](backend::Queue& q) { return q.copy_sync(d); }), fn);
  return core.map(submit(s, [&](backend::Queue& q) { return q.copy(d); }), fn);
}

CUresult copy_linear(std::uintptr_t dst, bool dst_device, std::uintptr_t src, bool src_device,
                     std::size_t bytes, CUstream stream, bool per_thread, Sync sync,
                     const char* fn) {
  Stream* s = nullptr;
  if (CUresult r = resolve_stream(stream, per_thread, s)) return r;
  if (bytes == 0) return CUDA_SUCCESS;
  Side d, sr;
  if (CUresult r = classify(dst, bytes, dst_device, d, fn)) return r;
  if (CUresult r = classify(src, bytes, src_device, sr, fn)) return r;
  // Overlapping ranges are accepted, as NVIDIA's driver does (measured on an H100, driver 580:
  // cuMemcpyDtoD/2D/3D and self-copies succeed); backends copy them as memmove would.
  backend::CopyDesc desc;
  desc.dst = reinterpret_cast<void*>(dst);
  desc.src = reinterpret_cast<const void*>(src);
  desc.dst_kind = d.kind;
  desc.src_kind = sr.kind;
  desc.dst_device = Core::get().backend_ordinal(d.device);  // issue 8: backend numbering
  desc.src_device = Core::get().backend_ordinal(sr.device);
  desc.width_bytes = bytes;
  desc.dst_pitch = desc.src_pitch = bytes;
  desc.dst_slice = desc.src_slice = bytes;
  return run_copy(*s, desc, sync, fn);
}

// The parts of CUDA_MEMCPY2D / 3D / 3D_PEER that describe one side.
struct SideSpec {
  std::size_t x_bytes, y, z;
  CUmemorytype type;
  const void* host;
  CUdeviceptr device;
  CUarray array;
  std::size_t pitch, height;
};

// An array end (issue 17): the box must lie inside the array and start and end on elements.
// The side's pitch and height are unused, as with CUDA.
CUresult resolve_array_side(const SideSpec& sp, std::size_t width, std::size_t height,
                            std::size_t depth, Side& out, const char* fn) {
  const Array* a = array_of(sp.array);
  if (!a) return reject(CUDA_ERROR_INVALID_VALUE, fn, "not a live CUDA array");
  const std::size_t elem = a->element_bytes;
  if (sp.x_bytes % elem != 0 || width % elem != 0)
    return reject(CUDA_ERROR_INVALID_VALUE, fn,
                  "array offset or width is not a whole number of elements");
  std::size_t x_end = 0, y_end = 0, z_end = 0;
  if (__builtin_add_overflow(sp.x_bytes, width, &x_end) ||
      __builtin_add_overflow(sp.y, height, &y_end) || __builtin_add_overflow(sp.z, depth, &z_end) ||
      x_end > static_cast<std::size_t>(a->desc.Width) * elem || y_end > array_rows(a->desc) ||
      z_end > array_slices(a->desc))
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "the copy runs past the array's bounds");
  out = Side{};
  out.kind = MemKind::device;
  out.device = a->ctx->device;
  out.array = a->impl;
  out.x_bytes = sp.x_bytes;
  out.y = sp.y;
  out.z = sp.z;
  return CUDA_SUCCESS;
}

CUresult resolve_side(const SideSpec& sp, std::size_t width, std::size_t height, std::size_t depth,
                      Side& out, std::size_t& pitch, std::size_t& slice, std::size_t& extent,
                      const char* fn) {
  if (sp.type == CU_MEMORYTYPE_ARRAY) return resolve_array_side(sp, width, height, depth, out, fn);
  if (sp.type != CU_MEMORYTYPE_HOST && sp.type != CU_MEMORYTYPE_DEVICE &&
      sp.type != CU_MEMORYTYPE_UNIFIED)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "unknown memory type");
  pitch = sp.pitch ? sp.pitch : width;
  if (pitch < width)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "pitch smaller than the row width");
  const std::size_t rows = sp.height ? sp.height : height;
  if (depth > 1 && rows < height)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "slice height smaller than the copy height");
  const std::uintptr_t base =
      sp.type == CU_MEMORYTYPE_HOST ? reinterpret_cast<std::uintptr_t>(sp.host) : sp.device;
  if (base == 0) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null pointer");
  // start = base + z*slice + y*pitch + x, extent = (depth-1)*slice + (height-1)*pitch + width,
  // refusing anything that wraps around (it would pass the bounds check below).
  std::size_t z_off = 0, yx_off = 0, rows_extent = 0, start = 0;
  if (!mul_add(pitch, rows, 0, slice) || !mul_add(sp.z, slice, 0, z_off) ||
      !mul_add(sp.y, pitch, sp.x_bytes, yx_off) || !mul_add(1, z_off, yx_off, start) ||
      !mul_add(1, base, start, start) || !mul_add(height - 1, pitch, width, rows_extent) ||
      !mul_add(depth - 1, slice, rows_extent, extent))
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "offsets or sizes overflow the address space");
  return classify(start, extent, sp.type == CU_MEMORYTYPE_DEVICE, out, fn);
}

// The backend descriptor of a 3D copy; `empty` when it copies nothing.
CUresult describe_copy(const SideSpec& src, const SideSpec& dst, std::size_t width,
                       std::size_t height, std::size_t depth, backend::CopyDesc& d, bool& empty,
                       const char* fn) {
  empty = width == 0 || height == 0 || depth == 0;
  if (empty) return CUDA_SUCCESS;
  Side ds, ss;
  std::size_t dst_extent = 0, src_extent = 0;
  if (CUresult r =
          resolve_side(dst, width, height, depth, ds, d.dst_pitch, d.dst_slice, dst_extent, fn))
    return r;
  if (CUresult r =
          resolve_side(src, width, height, depth, ss, d.src_pitch, d.src_slice, src_extent, fn))
    return r;
  d.dst = reinterpret_cast<void*>(ds.addr);
  d.src = reinterpret_cast<const void*>(ss.addr);
  d.dst_kind = ds.kind;
  d.src_kind = ss.kind;
  d.dst_device = Core::get().backend_ordinal(ds.device);  // issue 8: backend numbering
  d.src_device = Core::get().backend_ordinal(ss.device);
  d.width_bytes = width;
  d.height = height;
  d.depth = depth;
  d.dst_array = ds.array;
  d.dst_x_bytes = ds.x_bytes;
  d.dst_y = ds.y;
  d.dst_z = ds.z;
  d.src_array = ss.array;
  d.src_x_bytes = ss.x_bytes;
  d.src_y = ss.y;
  d.src_z = ss.z;
  // Overlapping linear ranges are accepted, as in copy_linear.
  return CUDA_SUCCESS;
}

CUresult copy_3d(const SideSpec& src, const SideSpec& dst, std::size_t width, std::size_t height,
                 std::size_t depth, CUstream stream, bool per_thread, Sync sync, const char* fn) {
  Stream* s = nullptr;
  if (CUresult r = resolve_stream(stream, per_thread, s)) return r;
  backend::CopyDesc d;
  bool empty = false;
  if (CUresult r = describe_copy(src, dst, width, height, depth, d, empty, fn)) return r;
  if (empty) return CUDA_SUCCESS;
  return run_copy(*s, d, sync, fn);
}

SideSpec src_of(const CUDA_MEMCPY2D& p) {
  return {p.srcXInBytes, p.srcY,     0, p.srcMemoryType, p.srcHost, p.srcDevice,
          p.srcArray,    p.srcPitch, 0};
}
SideSpec dst_of(const CUDA_MEMCPY2D& p) {
  return {p.dstXInBytes, p.dstY,     0, p.dstMemoryType, p.dstHost, p.dstDevice,
          p.dstArray,    p.dstPitch, 0};
}
template <class P>
SideSpec src_of3(const P& p) {
  return {p.srcXInBytes, p.srcY,     p.srcZ,     p.srcMemoryType, p.srcHost,
          p.srcDevice,   p.srcArray, p.srcPitch, p.srcHeight};
}
template <class P>
SideSpec dst_of3(const P& p) {
  return {p.dstXInBytes, p.dstY,     p.dstZ,     p.dstMemoryType, p.dstHost,
          p.dstDevice,   p.dstArray, p.dstPitch, p.dstHeight};
}

CUresult copy_2d(const CUDA_MEMCPY2D* p, CUstream stream, bool per_thread, Sync sync,
                 const char* fn) {
  if (!p) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null descriptor");
  return copy_3d(src_of(*p), dst_of(*p), p->WidthInBytes, p->Height, 1, stream, per_thread, sync,
                 fn);
}
// cuMemcpyPeer and cuMemcpy3DPeer are "serialized with respect to all pending and future
// asynchronous work in the current context, srcContext and dstContext" (CUDA's reference):
// the pending work of both contexts completes before the copy, which itself blocks the host.
// A null context is the current one.
CUresult serialize_peer_copy(CUcontext dst_ctx, CUcontext src_ctx, const char* fn) {
  const CUcontext current = current_context_handle();
  const std::array<Context*, 3> contexts{context_of(current),
                                         context_of(dst_ctx != nullptr ? dst_ctx : current),
                                         context_of(src_ctx != nullptr ? src_ctx : current)};
  for (std::size_t i = 0; i < contexts.size(); ++i) {
    Context* c = contexts[i];
    if (c == nullptr ||
        std::find(contexts.begin(), contexts.begin() + i, c) != contexts.begin() + i)
      continue;  // each context once
    if (CUresult r = Core::get().map(c->impl->synchronize(), fn)) return r;
  }
  return CUDA_SUCCESS;
}

CUresult copy_3d_desc(const CUDA_MEMCPY3D* p, CUstream stream, bool per_thread, Sync sync,
                      const char* fn) {
  if (!p) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null descriptor");
  // srcLOD/dstLOD are not checked: NVIDIA's driver 580 ignores them (an H100 copied a linear
  // box with srcLOD = 1).
  return copy_3d(src_of3(*p), dst_of3(*p), p->WidthInBytes, p->Height, p->Depth, stream, per_thread,
                 sync, fn);
}
CUresult copy_3d_peer(const CUDA_MEMCPY3D_PEER* p, CUstream stream, bool per_thread, Sync sync,
                      const char* fn) {
  if (!p) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null descriptor");
  if ((p->srcContext && !context_of(p->srcContext)) ||
      (p->dstContext && !context_of(p->dstContext)))
    return reject(CUDA_ERROR_INVALID_CONTEXT, fn, "invalid context");
  if (sync == Sync::blocking)
    if (CUresult r = serialize_peer_copy(p->dstContext, p->srcContext, fn)) return r;
  return copy_3d(src_of3(*p), dst_of3(*p), p->WidthInBytes, p->Height, p->Depth, stream, per_thread,
                 sync, fn);
}

// The sides of the one-row array copies (cuMemcpyHtoA, ...): CUDA copies along row 0.
SideSpec host_side(const void* p) { return {0, 0, 0, CU_MEMORYTYPE_HOST, p, 0, nullptr, 0, 0}; }
SideSpec device_side(CUdeviceptr p) {
  return {0, 0, 0, CU_MEMORYTYPE_DEVICE, nullptr, p, nullptr, 0, 0};
}
SideSpec array_side(CUarray a, std::size_t offset) {
  return {offset, 0, 0, CU_MEMORYTYPE_ARRAY, nullptr, 0, a, 0, 0};
}
CUresult copy_row(const SideSpec& src, const SideSpec& dst, std::size_t bytes, CUstream stream,
                  bool per_thread, Sync sync, const char* fn) {
  return copy_3d(src, dst, bytes, 1, 1, stream, per_thread, sync, fn);
}

// The backend descriptor of a 2D memset, validated as the memset calls validate it.
CUresult fill_desc(CUdeviceptr dst, std::size_t pitch, std::uint32_t value, unsigned elem,
                   std::size_t width, std::size_t height, backend::FillDesc& d, const char* fn) {
  if (dst % elem != 0)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "destination misaligned for the element size");
  std::size_t row_bytes = 0, extent = 0;
  if (!mul_add(width, elem, 0, row_bytes))
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "size overflows the address space");
  if (height == 1 && pitch == 0) pitch = row_bytes;
  if (pitch < row_bytes)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "pitch smaller than the row width");
  if (!mul_add(height - 1, pitch, row_bytes, extent))
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "size overflows the address space");
  Side side;
  if (CUresult r = classify(dst, extent, true, side, fn)) return r;
  d.dst = reinterpret_cast<void*>(dst);
  d.dst_kind = side.kind;
  d.value = value;
  d.elem_size = elem;
  d.width_elems = width;
  d.height = height;
  d.pitch = pitch;
  return CUDA_SUCCESS;
}

// Memsets. Sync forms are asynchronous to the host except for pinned host targets, as in CUDA.
CUresult memset_2d(CUdeviceptr dst, std::size_t pitch, std::uint32_t value, unsigned elem,
                   std::size_t width, std::size_t height, CUstream stream, bool per_thread,
                   Sync sync, const char* fn) {
  Stream* s = nullptr;
  if (CUresult r = resolve_stream(stream, per_thread, s)) return r;
  if (dst % elem != 0)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "destination misaligned for the element size");
  if (width == 0 || height == 0) return CUDA_SUCCESS;
  backend::FillDesc d;
  if (CUresult r = fill_desc(dst, pitch, value, elem, width, height, d, fn)) return r;
  // issue 16: a capturing stream records a memset node instead.
  if (capture_applies(*s)) return capture_fill(*s, d, sync == Sync::blocking, fn);
  Core& core = Core::get();
  const auto st = submit(*s, [&](backend::Queue& q) { return q.fill(d); });
  if (!st.ok()) return core.map(st, fn);
  if (sync == Sync::blocking && d.dst_kind == MemKind::host_pinned)
    return core.map(s->queue->synchronize(), fn);
  return CUDA_SUCCESS;
}

constexpr std::size_t kPitchAlignment = 512;

}  // namespace

CUresult allocate_graph_memory(Context& ctx, std::size_t bytes, CUdeviceptr& out,
                               unsigned long long& buffer_id, const char* fn) {
  void* p = nullptr;
  if (auto st = ctx.impl->allocate(bytes, &p); !st.ok()) return Core::get().map(st, fn);
  const auto base = reinterpret_cast<std::uintptr_t>(p);
  register_allocation({base, bytes, AllocKind::device, &ctx, ctx.handle, ctx.device, 0, 0});
  Core& core = Core::get();
  std::shared_lock lock(core.alloc_mutex);
  buffer_id = core.allocations.at(base).buffer_id;
  out = static_cast<CUdeviceptr>(base);
  return CUDA_SUCCESS;
}

void free_graph_memory(CUdeviceptr ptr, unsigned long long buffer_id) noexcept {
  Core& core = Core::get();
  Allocation a;
  {
    std::unique_lock lock(core.alloc_mutex);
    auto it = core.allocations.find(static_cast<std::uintptr_t>(ptr));
    // Freed already (cuMemFree of memory that left its graph, or its context was destroyed).
    if (it == core.allocations.end() || it->second.buffer_id != buffer_id) return;
    a = it->second;
    core.allocations.erase(it);
  }
  // Runs under graph_mutex(), which destroy_context takes inside context_lifetime_mutex: so
  // only the owning context's queues are waited for here, not every context's (quiesce).
  (void)a.ctx->impl->synchronize();
  (void)a.ctx->impl->free(reinterpret_cast<void*>(ptr));
}

CUresult describe_copy_3d(const CUDA_MEMCPY3D& p, backend::CopyDesc& out, bool& empty,
                          const char* fn) {
  return describe_copy(src_of3(p), dst_of3(p), p.WidthInBytes, p.Height, p.Depth, out, empty, fn);
}
CUresult describe_fill(CUdeviceptr dst, std::size_t pitch, std::uint32_t value, unsigned elem,
                       std::size_t width, std::size_t height, backend::FillDesc& out,
                       const char* fn) {
  if (width == 0 || height == 0) return reject(CUDA_ERROR_INVALID_VALUE, fn, "zero-sized memset");
  return fill_desc(dst, pitch, value, elem, width, height, out, fn);
}

}  // namespace cudamux::core

namespace cudamux::impl {
using core::Allocation;
using core::AllocKind;
using core::Context;
using core::Core;
using core::reject;
using core::Sync;

// --- allocation ---

CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  if (CUresult r = core::unsafe_call("cuMemAlloc")) return r;  // issue 16: not while capturing
  if (!dptr) return reject(CUDA_ERROR_INVALID_VALUE, "cuMemAlloc", "null out-pointer");
  if (bytesize == 0) return reject(CUDA_ERROR_INVALID_VALUE, "cuMemAlloc", "zero size");
  Context* ctx = nullptr;
  if (CUresult r = core::current_context(ctx)) return r;
  void* p = nullptr;
  if (auto st = ctx->impl->allocate(bytesize, &p); !st.ok())
    return Core::get().map(st, "cuMemAlloc");
  core::register_allocation({reinterpret_cast<std::uintptr_t>(p), bytesize, AllocKind::device, ctx,
                             ctx->handle, ctx->device, 0, 0});
  *dptr = reinterpret_cast<CUdeviceptr>(p);
  return CUDA_SUCCESS;
}

CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pPitch, size_t WidthInBytes, size_t Height,
                            unsigned int ElementSizeBytes) {
  if (CUresult r = core::unsafe_call("cuMemAllocPitch")) return r;  // issue 16: not while capturing
  if (!dptr || !pPitch)
    return reject(CUDA_ERROR_INVALID_VALUE, "cuMemAllocPitch", "null out-pointer");
  if (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16)
    return reject(CUDA_ERROR_INVALID_VALUE, "cuMemAllocPitch", "element size must be 4, 8 or 16");
  if (WidthInBytes == 0 || Height == 0)
    return reject(CUDA_ERROR_INVALID_VALUE, "cuMemAllocPitch", "zero size");
  if (WidthInBytes > SIZE_MAX - (core::kPitchAlignment - 1))  // rounding up would wrap to 0
    return reject(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAllocPitch", "size overflows");
  const std::size_t pitch =
      (WidthInBytes + core::kPitchAlignment - 1) / core::kPitchAlignment * core::kPitchAlignment;
  if (Height > SIZE_MAX / pitch)
    return reject(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAllocPitch", "size overflows");
  if (CUresult r = impl::cuMemAlloc_v2(dptr, pitch * Height)) return r;
  *pPitch = pitch;
  return CUDA_SUCCESS;
}

CUresult cuMemFree_v2(CUdeviceptr dptr) {
  if (CUresult r = core::unsafe_call("cuMemFree")) return r;  // issue 16: not while capturing
  if (dptr == 0) return CUDA_SUCCESS;                    // freeing null is a no-op, as with CUDA
  if (core::is_graph_memory(dptr)) return CUDA_SUCCESS;  // issue 16: the graph keeps it
  // Pool memory (cuMemAllocAsync) may be freed here too; that synchronizes (mempool.cpp).
  if (CUresult r = CUDA_SUCCESS; core::pool_free_sync(dptr, r)) return r;
  Core& core = Core::get();
  Allocation a;
  {
    std::unique_lock lock(core.alloc_mutex);
    auto it = core.allocations.find(dptr);
    if (it == core.allocations.end() ||
        (it->second.kind != AllocKind::device && it->second.kind != AllocKind::managed) ||
        it->second.virtual_mapping || it->second.ipc_mapping)
      return reject(CUDA_ERROR_INVALID_VALUE, "cuMemFree",
                    "not the base of a live device allocation");
    a = it->second;
    core.allocations.erase(it);
  }
  // cuMemFree synchronises with outstanding work (CUDA's rule), of every context: any of
  // them may have work queued on this memory (issue 9).
  core::quiesce_all_contexts();
  void* p = reinterpret_cast<void*>(dptr);
  if (a.kind == AllocKind::managed) core::forget_managed_hints(a.buffer_id);
  return core.map(a.kind == AllocKind::device ? a.ctx->impl->free(p) : a.ctx->impl->free_managed(p),
                  "cuMemFree");
}

CUresult cuMemGetInfo_v2(size_t* free, size_t* total) {
  if (!free || !total) return reject(CUDA_ERROR_INVALID_VALUE, "cuMemGetInfo", "null out-pointer");
  Context* ctx = nullptr;
  if (CUresult r = core::current_context(ctx)) return r;
  return Core::get().map(Core::get().backend().devices().memory_info(
                             Core::get().backend_ordinal(ctx->device), *free, *total),
                         "cuMemGetInfo");
}

CUresult cuMemAllocHost_v2(void** pp, size_t bytesize) {
  return impl::cuMemHostAlloc(pp, bytesize, 0);
}

CUresult cuMemHostAlloc(void** pp, size_t bytesize, unsigned int Flags) {
  if (CUresult r = core::unsafe_call("cuMemHostAlloc")) return r;  // issue 16: not while capturing
  if (!pp) return reject(CUDA_ERROR_INVALID_VALUE, "cuMemHostAlloc", "null out-pointer");
  if (Flags & ~static_cast<unsigned>(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP |
                                     CU_MEMHOSTALLOC_WRITECOMBINED))
    return reject(CUDA_ERROR_INVALID_VALUE, "cuMemHostAlloc", "invalid flags");
  if (bytesize == 0) return reject(CUDA_ERROR_INVALID_VALUE, "cuMemHostAlloc", "zero size");
  Context* ctx = nullptr;
  if (CUresult r = core::current_context(ctx)) return r;
  void* p = nullptr;
  if (auto st = ctx->impl->allocate_host(bytesize, Flags, &p); !st.ok())
    return Core::get().map(st, "cuMemHostAlloc");
  core::register_allocation({reinterpret_cast<std::uintptr_t>(p), bytesize, AllocKind::host_alloc,
                             ctx, ctx->handle, ctx->device, Flags, 0});
  *pp = p;
  return CUDA_SUCCESS;
}

CUresult cuMemFreeHost(void* p) {
  if (CUresult r = core::unsafe_call("cuMemFreeHost")) return r;  // issue 16: not while capturing
  if (!p) return CUDA_SUCCESS;
  // A host pool's memory goes back with cuMemFreeAsync (NVIDIA's driver 580: INVALID_VALUE).
  if (core::pool_of_pointer(reinterpret_cast<std::uintptr_t>(p)))
    return reject(CUDA_ERROR_INVALID_VALUE, "cuMemFreeHost",
                  "memory of a stream-ordered pool (free it with cuMemFreeAsync)");
  Core& core = Core::get();
  Allocation a;
  {
    std::unique_lock lock(core.alloc_mutex);
    auto it = core.allocations.find(reinterpret_cast<std::uintptr_t>(p));
    if (it == core.allocations.end() || it->second.kind != AllocKind::host_alloc)
      return reject(CUDA_ERROR_INVALID_VALUE, "cuMemFreeHost",
                    "not a pointer from cuMemAllocHost/cuMemHostAlloc");
    if (it->second.native_pool)
      return reject(CUDA_ERROR_INVALID_VALUE, "cuMemFreeHost",
                    "memory of a stream-ordered pool (free it with cuMemFreeAsync)");
    a = it->second;
    core.allocations.erase(it);
  }
  core::quiesce_all_contexts();  // as cuMemFree
  return core.map(a.ctx->impl->free_host(p), "cuMemFreeHost");
}

CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned int flags) {
  if (CUresult r = core::unsafe_call("cuMemAllocManaged"))
    return r;  // issue 16: not while capturing
  if (!dptr) return reject(CUDA_ERROR_INVALID_VALUE, "cuMemAllocManaged", "null out-pointer");
  if (bytesize == 0) return reject(CUDA_ERROR_INVALID_VALUE, "cuMemAllocManaged", "zero size");
  if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)
    return reject(CUDA_ERROR_INVALID_VALUE, "cuMemAllocManaged",
                  "flags must be CU_MEM_ATTACH_GLOBAL or _HOST");
  Context* ctx = nullptr;
  if (CUresult r = core::current_context(ctx)) return r;
  void* p = nullptr;
  if (auto st = ctx->impl->allocate_managed(bytesize, flags, &p); !st.ok())
    return Core::get().map(st, "cuMemAllocManaged");
  core::register_allocation({reinterpret_cast<std::uintptr_t>(p), bytesize, AllocKind::managed, ctx,
                             ctx->handle, ctx->device, flags, 0});
  *dptr = reinterpret_cast<CUdeviceptr>(p);
  return CUDA_SUCCESS;
}

CUresult cuMemHostRegister_v2(void* p, size_t bytesize, unsigned int Flags) {
  if (CUresult r = core::unsafe_call("cuMemHostRegister"))
    return r;  // issue 16: not while capturing
  constexpr unsigned kAll = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
                            CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY;
  if (!p || bytesize == 0)
    return reject(CUDA_ERROR_INVALID_VALUE, "cuMemHostRegister", "null pointer or zero size");
  if (Flags & ~kAll) return reject(CUDA_ERROR_INVALID_VALUE, "cuMemHostRegister", "invalid flags");
  Context* ctx = nullptr;
  if (CUresult r = core::current_context(ctx)) return r;
  Core& core = Core::get();
  const auto base = reinterpret_cast<std::uintptr_t>(p);
  {
    std::shared_lock lock(core.alloc_mutex);
    for (const auto& [b, a] : core.allocations) {
      if (core::overlaps(b, a.size, base, bytesize))
        return reject(a.kind == AllocKind::host_registered
                          ? CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED
                          : CUDA_ERROR_INVALID_VALUE,
                      "cuMemHostRegister", "range overlaps memory already known to CUDA");
    }
  }
  if (auto st = ctx->impl->register_host(p, bytesize, Flags); !st.ok())
    return core.map(st, "cuMemHostRegister");
  core::register_allocation(
      {base, bytesize, AllocKind::host_registered, ctx, ctx->handle, ctx->device, Flags, 0});
  return CUDA_SUCCESS;
}
CUresult cuMemHostRegister(void* p, size_t bytesize, unsigned int Flags) {
  return impl::cuMemHostRegister_v2(p, bytesize, Flags);
}

CUresult cuMemHostUnregister(void* p) {
  if (!p) return reject(CUDA_ERROR_INVALID_VALUE, "cuMemHostUnregister", "null pointer");
  Core& core = Core::get();
  Allocation a;
  {
    std::unique_lock lock(core.alloc_mutex);
    auto it = core.allocations.find(reinterpret_cast<std::uintptr_t>(p));
    if (it == core.allocations.end() || it->second.kind != AllocKind::host_registered)
      return reject(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "cuMemHostUnregister",
                    "not a registered base address");
    a = it->second;
    core.allocations.erase(it);
  }
  core::quiesce_all_contexts();  // as cuMemFree
  return core.map(a.ctx->impl->unregister_host(p), "cuMemHostUnregister");
}

CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr* pdptr, void* p, unsigned int Flags) {
  if (!pdptr || !p)
    return reject(CUDA_ERROR_INVALID_VALUE, "cuMemHostGetDevicePointer", "null argument");
  if (Flags != 0)
    return reject(CUDA_ERROR_INVALID_VALUE, "cuMemHostGetDevicePointer", "flags must be 0");
  Context* ctx = nullptr;
  if (CUresult r = core::current_context(ctx)) return r;
  Core& core = Core::get();
  Allocation a;
  {
    std::shared_lock lock(core.alloc_mutex);
    const Allocation* found = core.find_allocation(reinterpret_cast<std::uintptr_t>(p));
    if (!found ||
        (found->kind != AllocKind::host_alloc && found->kind != AllocKind::host_registered))
      return reject(CUDA_ERROR_INVALID_VALUE, "cuMemHostGetDevicePointer",
                    "not page-locked host memory");
    a = *found;
  }
  void* base_dev = nullptr;
  if (auto st = ctx->impl->host_device_pointer(reinterpret_cast<void*>(a.base), &base_dev);
      !st.ok())
    return core.map(st, "cuMemHostGetDevicePointer");
  *pdptr = reinterpret_cast<CUdeviceptr>(base_dev) + (reinterpret_cast<std::uintptr_t>(p) - a.base);
  return CUDA_SUCCESS;
}

CUresult cuMemHostGetFlags(unsigned int* pFlags, void* p) {
  if (!pFlags || !p) return reject(CUDA_ERROR_INVALID_VALUE, "cuMemHostGetFlags", "null argument");
  Core& core = Core::get();
  std::shared_lock lock(core.alloc_mutex);
  const Allocation* a = core.find_allocation(reinterpret_cast<std::uintptr_t>(p));
  if (!a || a->kind != AllocKind::host_alloc)
    return reject(CUDA_ERROR_INVALID_VALUE, "cuMemHostGetFlags", "not memory from cuMemHostAlloc");
  *pFlags = a->flags;
  return CUDA_SUCCESS;
}

CUresult cuMemGetAddressRange_v2(CUdeviceptr* pbase, size_t* psize, CUdeviceptr dptr) {
  Core& core = Core::get();
  std::shared_lock lock(core.alloc_mutex);
  const Allocation* a = core.find_allocation(dptr);
  if (!a || (a->kind != AllocKind::device && a->kind != AllocKind::managed))
    return reject(CUDA_ERROR_NOT_FOUND, "cuMemGetAddressRange", "not inside a device allocation");
  if (pbase) *pbase = a->base;
  if (psize) *psize = a->size;
  return CUDA_SUCCESS;
}

// --- copies ---

#define CUDAMUX_COPY_SYNC(NAME, DST_T, SRC_T, DST_DEV, SRC_DEV, PER_THREAD)                        \
  CUresult NAME(DST_T dst, SRC_T src, size_t n) {                                                  \
    return core::copy_linear(core::to_addr(dst), DST_DEV, core::to_addr(src), SRC_DEV, n, nullptr, \
                             PER_THREAD, Sync::blocking, #NAME);                                   \
  }
#define CUDAMUX_COPY_ASYNC(NAME, DST_T, SRC_T, DST_DEV, SRC_DEV, PER_THREAD)                 \
  CUresult NAME(DST_T dst, SRC_T src, size_t n, CUstream s) {                                \
    return core::copy_linear(core::to_addr(dst), DST_DEV, core::to_addr(src), SRC_DEV, n, s, \
                             PER_THREAD, Sync::async, #NAME);                                \
  }
CUDAMUX_COPY_SYNC(cuMemcpyHtoD_v2, CUdeviceptr, const void*, true, false, false)
CUDAMUX_COPY_SYNC(cuMemcpyHtoD_v2_ptds, CUdeviceptr, const void*, true, false, true)
CUDAMUX_COPY_SYNC(cuMemcpyDtoH_v2, void*, CUdeviceptr, false, true, false)
CUDAMUX_COPY_SYNC(cuMemcpyDtoH_v2_ptds, void*, CUdeviceptr, false, true, true)
CUDAMUX_COPY_SYNC(cuMemcpyDtoD_v2, CUdeviceptr, CUdeviceptr, true, true, false)
CUDAMUX_COPY_SYNC(cuMemcpyDtoD_v2_ptds, CUdeviceptr, CUdeviceptr, true, true, true)
CUDAMUX_COPY_SYNC(cuMemcpy, CUdeviceptr, CUdeviceptr, false, false, false)
CUDAMUX_COPY_SYNC(cuMemcpy_ptds, CUdeviceptr, CUdeviceptr, false, false, true)
CUDAMUX_COPY_ASYNC(cuMemcpyHtoDAsync_v2, CUdeviceptr, const void*, true, false, false)
CUDAMUX_COPY_ASYNC(cuMemcpyHtoDAsync_v2_ptsz, CUdeviceptr, const void*, true, false, true)
CUDAMUX_COPY_ASYNC(cuMemcpyDtoHAsync_v2, void*, CUdeviceptr, false, true, false)
CUDAMUX_COPY_ASYNC(cuMemcpyDtoHAsync_v2_ptsz, void*, CUdeviceptr, false, true, true)
CUDAMUX_COPY_ASYNC(cuMemcpyDtoDAsync_v2, CUdeviceptr, CUdeviceptr, true, true, false)
CUDAMUX_COPY_ASYNC(cuMemcpyDtoDAsync_v2_ptsz, CUdeviceptr, CUdeviceptr, true, true, true)
CUDAMUX_COPY_ASYNC(cuMemcpyAsync, CUdeviceptr, CUdeviceptr, false, false, false)
CUDAMUX_COPY_ASYNC(cuMemcpyAsync_ptsz, CUdeviceptr, CUdeviceptr, false, false, true)
#undef CUDAMUX_COPY_SYNC
#undef CUDAMUX_COPY_ASYNC

// A null context stands for the current one (NVIDIA's driver 580 copies with a null source
// context, measured on an H100); with none current it is invalid.
static CUresult check_peer_contexts(CUcontext a, CUcontext b, const char* fn) {
  const CUcontext current = core::current_context_handle();
  if (!core::context_of(a != nullptr ? a : current) ||
      !core::context_of(b != nullptr ? b : current))
    return reject(CUDA_ERROR_INVALID_CONTEXT, fn, "invalid context");
  return CUDA_SUCCESS;
}
CUresult cuMemcpyPeer(CUdeviceptr dst, CUcontext dstCtx, CUdeviceptr src, CUcontext srcCtx,
                      size_t n) {
  if (CUresult r = check_peer_contexts(dstCtx, srcCtx, "cuMemcpyPeer")) return r;
  if (CUresult r = core::serialize_peer_copy(dstCtx, srcCtx, "cuMemcpyPeer")) return r;
  return core::copy_linear(dst, true, src, true, n, nullptr, false, Sync::blocking, "cuMemcpyPeer");
}
CUresult cuMemcpyPeer_ptds(CUdeviceptr dst, CUcontext dstCtx, CUdeviceptr src, CUcontext srcCtx,
                           size_t n) {
  if (CUresult r = check_peer_contexts(dstCtx, srcCtx, "cuMemcpyPeer")) return r;
  if (CUresult r = core::serialize_peer_copy(dstCtx, srcCtx, "cuMemcpyPeer")) return r;
  return core::copy_linear(dst, true, src, true, n, nullptr, true, Sync::blocking, "cuMemcpyPeer");
}
CUresult cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dstCtx, CUdeviceptr src, CUcontext srcCtx,
                           size_t n, CUstream s) {
  if (CUresult r = check_peer_contexts(dstCtx, srcCtx, "cuMemcpyPeerAsync")) return r;
  return core::copy_linear(dst, true, src, true, n, s, false, Sync::async, "cuMemcpyPeerAsync");
}
CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr dst, CUcontext dstCtx, CUdeviceptr src,
                                CUcontext srcCtx, size_t n, CUstream s) {
  if (CUresult r = check_peer_contexts(dstCtx, srcCtx, "cuMemcpyPeerAsync")) return r;
  return core::copy_linear(dst, true, src, true, n, s, true, Sync::async, "cuMemcpyPeerAsync");
}

// --- issue 17: copies between arrays and linear memory along row 0 of the array ---

CUresult cuMemcpyHtoA_v2(CUarray dstArray, size_t dstOffset, const void* srcHost,
                         size_t ByteCount) {
  return core::copy_row(core::host_side(srcHost), core::array_side(dstArray, dstOffset), ByteCount,
                        nullptr, false, Sync::blocking, "cuMemcpyHtoA");
}
CUresult cuMemcpyHtoA_v2_ptds(CUarray dstArray, size_t dstOffset, const void* srcHost,
                              size_t ByteCount) {
  return core::copy_row(core::host_side(srcHost), core::array_side(dstArray, dstOffset), ByteCount,
                        nullptr, true, Sync::blocking, "cuMemcpyHtoA");
}
CUresult cuMemcpyAtoH_v2(void* dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount) {
  return core::copy_row(core::array_side(srcArray, srcOffset), core::host_side(dstHost), ByteCount,
                        nullptr, false, Sync::blocking, "cuMemcpyAtoH");
}
CUresult cuMemcpyAtoH_v2_ptds(void* dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount) {
  return core::copy_row(core::array_side(srcArray, srcOffset), core::host_side(dstHost), ByteCount,
                        nullptr, true, Sync::blocking, "cuMemcpyAtoH");
}
CUresult cuMemcpyDtoA_v2(CUarray dstArray, size_t dstOffset, CUdeviceptr srcDevice,
                         size_t ByteCount) {
  return core::copy_row(core::device_side(srcDevice), core::array_side(dstArray, dstOffset),
                        ByteCount, nullptr, false, Sync::blocking, "cuMemcpyDtoA");
}
CUresult cuMemcpyDtoA_v2_ptds(CUarray dstArray, size_t dstOffset, CUdeviceptr srcDevice,
                              size_t ByteCount) {
  return core::copy_row(core::device_side(srcDevice), core::array_side(dstArray, dstOffset),
                        ByteCount, nullptr, true, Sync::blocking, "cuMemcpyDtoA");
}
CUresult cuMemcpyAtoD_v2(CUdeviceptr dstDevice, CUarray srcArray, size_t srcOffset,
                         size_t ByteCount) {
  return core::copy_row(core::array_side(srcArray, srcOffset), core::device_side(dstDevice),
                        ByteCount, nullptr, false, Sync::blocking, "cuMemcpyAtoD");
}
CUresult cuMemcpyAtoD_v2_ptds(CUdeviceptr dstDevice, CUarray srcArray, size_t srcOffset,
                              size_t ByteCount) {
  return core::copy_row(core::array_side(srcArray, srcOffset), core::device_side(dstDevice),
                        ByteCount, nullptr, true, Sync::blocking, "cuMemcpyAtoD");
}
CUresult cuMemcpyAtoA_v2(CUarray dstArray, size_t dstOffset, CUarray srcArray, size_t srcOffset,
                         size_t ByteCount) {
  return core::copy_row(core::array_side(srcArray, srcOffset),
                        core::array_side(dstArray, dstOffset), ByteCount, nullptr, false,
                        Sync::blocking, "cuMemcpyAtoA");
}
CUresult cuMemcpyAtoA_v2_ptds(CUarray dstArray, size_t dstOffset, CUarray srcArray,
                              size_t srcOffset, size_t ByteCount) {
  return core::copy_row(core::array_side(srcArray, srcOffset),
                        core::array_side(dstArray, dstOffset), ByteCount, nullptr, true,
                        Sync::blocking, "cuMemcpyAtoA");
}
CUresult cuMemcpyHtoAAsync_v2(CUarray dstArray, size_t dstOffset, const void* srcHost,
                              size_t ByteCount, CUstream hStream) {
  return core::copy_row(core::host_side(srcHost), core::array_side(dstArray, dstOffset), ByteCount,
                        hStream, false, Sync::async, "cuMemcpyHtoAAsync");
}
CUresult cuMemcpyHtoAAsync_v2_ptsz(CUarray dstArray, size_t dstOffset, const void* srcHost,
                                   size_t ByteCount, CUstream hStream) {
  return core::copy_row(core::host_side(srcHost), core::array_side(dstArray, dstOffset), ByteCount,
                        hStream, true, Sync::async, "cuMemcpyHtoAAsync");
}
CUresult cuMemcpyAtoHAsync_v2(void* dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount,
                              CUstream hStream) {
  return core::copy_row(core::array_side(srcArray, srcOffset), core::host_side(dstHost), ByteCount,
                        hStream, false, Sync::async, "cuMemcpyAtoHAsync");
}
CUresult cuMemcpyAtoHAsync_v2_ptsz(void* dstHost, CUarray srcArray, size_t srcOffset,
                                   size_t ByteCount, CUstream hStream) {
  return core::copy_row(core::array_side(srcArray, srcOffset), core::host_side(dstHost), ByteCount,
                        hStream, true, Sync::async, "cuMemcpyAtoHAsync");
}

CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D* p) {
  return core::copy_2d(p, nullptr, false, Sync::blocking, "cuMemcpy2D");
}
CUresult cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D* p) {
  return core::copy_2d(p, nullptr, true, Sync::blocking, "cuMemcpy2D");
}
CUresult cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D* p) {
  return core::copy_2d(p, nullptr, false, Sync::blocking, "cuMemcpy2DUnaligned");
}
CUresult cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D* p) {
  return core::copy_2d(p, nullptr, true, Sync::blocking, "cuMemcpy2DUnaligned");
}
CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D* p, CUstream s) {
  return core::copy_2d(p, s, false, Sync::async, "cuMemcpy2DAsync");
}
CUresult cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D* p, CUstream s) {
  return core::copy_2d(p, s, true, Sync::async, "cuMemcpy2DAsync");
}
CUresult cuMemcpy3D_v2(const CUDA_MEMCPY3D* p) {
  return core::copy_3d_desc(p, nullptr, false, Sync::blocking, "cuMemcpy3D");
}
CUresult cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D* p) {
  return core::copy_3d_desc(p, nullptr, true, Sync::blocking, "cuMemcpy3D");
}
CUresult cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D* p, CUstream s) {
  return core::copy_3d_desc(p, s, false, Sync::async, "cuMemcpy3DAsync");
}
CUresult cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D* p, CUstream s) {
  return core::copy_3d_desc(p, s, true, Sync::async, "cuMemcpy3DAsync");
}
CUresult cuMemcpy3DPeer(const CUDA_MEMCPY3D_PEER* p) {
  return core::copy_3d_peer(p, nullptr, false, Sync::blocking, "cuMemcpy3DPeer");
}
CUresult cuMemcpy3DPeer_ptds(const CUDA_MEMCPY3D_PEER* p) {
  return core::copy_3d_peer(p, nullptr, true, Sync::blocking, "cuMemcpy3DPeer");
}
CUresult cuMemcpy3DPeerAsync(const CUDA_MEMCPY3D_PEER* p, CUstream s) {
  return core::copy_3d_peer(p, s, false, Sync::async, "cuMemcpy3DPeerAsync");
}
CUresult cuMemcpy3DPeerAsync_ptsz(const CUDA_MEMCPY3D_PEER* p, CUstream s) {
  return core::copy_3d_peer(p, s, true, Sync::async, "cuMemcpy3DPeerAsync");
}

// --- memsets ---

#define CUDAMUX_MEMSET(NAME, VT, ELEM, PER_THREAD)                                           \
  CUresult NAME(CUdeviceptr d, VT v, size_t n) {                                             \
    return core::memset_2d(d, 0, v, ELEM, n, 1, nullptr, PER_THREAD, Sync::blocking, #NAME); \
  }
#define CUDAMUX_MEMSET_ASYNC(NAME, VT, ELEM, PER_THREAD)                            \
  CUresult NAME(CUdeviceptr d, VT v, size_t n, CUstream s) {                        \
    return core::memset_2d(d, 0, v, ELEM, n, 1, s, PER_THREAD, Sync::async, #NAME); \
  }
#define CUDAMUX_MEMSET2D(NAME, VT, ELEM, PER_THREAD)                                             \
  CUresult NAME(CUdeviceptr d, size_t pitch, VT v, size_t w, size_t h) {                         \
    return core::memset_2d(d, pitch, v, ELEM, w, h, nullptr, PER_THREAD, Sync::blocking, #NAME); \
  }
#define CUDAMUX_MEMSET2D_ASYNC(NAME, VT, ELEM, PER_THREAD)                              \
  CUresult NAME(CUdeviceptr d, size_t pitch, VT v, size_t w, size_t h, CUstream s) {    \
    return core::memset_2d(d, pitch, v, ELEM, w, h, s, PER_THREAD, Sync::async, #NAME); \
  }
CUDAMUX_MEMSET(cuMemsetD8_v2, unsigned char, 1, false)
CUDAMUX_MEMSET(cuMemsetD8_v2_ptds, unsigned char, 1, true)
CUDAMUX_MEMSET(cuMemsetD16_v2, unsigned short, 2, false)
CUDAMUX_MEMSET(cuMemsetD16_v2_ptds, unsigned short, 2, true)
CUDAMUX_MEMSET(cuMemsetD32_v2, unsigned int, 4, false)
CUDAMUX_MEMSET(cuMemsetD32_v2_ptds, unsigned int, 4, true)
CUDAMUX_MEMSET_ASYNC(cuMemsetD8Async, unsigned char, 1, false)
CUDAMUX_MEMSET_ASYNC(cuMemsetD8Async_ptsz, unsigned char, 1, true)
CUDAMUX_MEMSET_ASYNC(cuMemsetD16Async, unsigned short, 2, false)
CUDAMUX_MEMSET_ASYNC(cuMemsetD16Async_ptsz, unsigned short, 2, true)
CUDAMUX_MEMSET_ASYNC(cuMemsetD32Async, unsigned int, 4, false)
CUDAMUX_MEMSET_ASYNC(cuMemsetD32Async_ptsz, unsigned int, 4, true)
CUDAMUX_MEMSET2D(cuMemsetD2D8_v2, unsigned char, 1, false)
CUDAMUX_MEMSET2D(cuMemsetD2D8_v2_ptds, unsigned char, 1, true)
CUDAMUX_MEMSET2D(cuMemsetD2D16_v2, unsigned short, 2, false)
CUDAMUX_MEMSET2D(cuMemsetD2D16_v2_ptds, unsigned short, 2, true)
CUDAMUX_MEMSET2D(cuMemsetD2D32_v2, unsigned int, 4, false)
CUDAMUX_MEMSET2D(cuMemsetD2D32_v2_ptds, unsigned int, 4, true)
CUDAMUX_MEMSET2D_ASYNC(cuMemsetD2D8Async, unsigned char, 1, false)
CUDAMUX_MEMSET2D_ASYNC(cuMemsetD2D8Async_ptsz, unsigned char, 1, true)
CUDAMUX_MEMSET2D_ASYNC(cuMemsetD2D16Async, unsigned short, 2, false)
CUDAMUX_MEMSET2D_ASYNC(cuMemsetD2D16Async_ptsz, unsigned short, 2, true)
CUDAMUX_MEMSET2D_ASYNC(cuMemsetD2D32Async, unsigned int, 4, false)
CUDAMUX_MEMSET2D_ASYNC(cuMemsetD2D32Async_ptsz, unsigned int, 4, true)
#undef CUDAMUX_MEMSET
#undef CUDAMUX_MEMSET_ASYNC
#undef CUDAMUX_MEMSET2D
#undef CUDAMUX_MEMSET2D_ASYNC

// --- pointer attributes ---

namespace {
// Writes one attribute of `a` (null: memory unknown to CUDA). Returns
// CUDA_ERROR_INVALID_VALUE where cuPointerGetAttribute must fail for unknown memory.
CUresult pointer_attribute(void* data, CUpointer_attribute attr, CUdeviceptr ptr,
                           const Allocation* a, bool strict) {
  const bool device_side = a && (a->kind == AllocKind::device || a->kind == AllocKind::managed);
  // CUDA documents these as booleans; NVIDIA's driver 580 writes them as 4-byte ints (measured
  // on an H200: build-gsamples/attrwidth.c), which callers read as int.
  auto put_bool = [&](bool v) { *static_cast<int*>(data) = v ? 1 : 0; };
  switch (attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
      if (!a && strict) return CUDA_ERROR_INVALID_VALUE;
      *static_cast<CUcontext*>(data) = a ? a->ctx_handle : nullptr;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      if (!a && strict) return CUDA_ERROR_INVALID_VALUE;
      *static_cast<unsigned int*>(data) =
          !a ? 0u
             : static_cast<unsigned int>(device_side ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
      if (!a && strict) return CUDA_ERROR_INVALID_VALUE;
      *static_cast<CUdeviceptr*>(data) = a ? ptr : 0;  // unified addressing: one address everywhere
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
      if (!a && strict) return CUDA_ERROR_INVALID_VALUE;
      if (a && a->kind == AllocKind::device) {
        if (strict) return CUDA_ERROR_INVALID_VALUE;  // device memory has no host address
        *static_cast<void**>(data) = nullptr;
      } else {
        *static_cast<void**>(data) = a ? reinterpret_cast<void*>(ptr) : nullptr;
      }
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
      if (!a && strict) return CUDA_ERROR_INVALID_VALUE;
      put_bool(false);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
      if (!a && strict) return CUDA_ERROR_INVALID_VALUE;
      *static_cast<unsigned long long*>(data) = a ? a->buffer_id : 0;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
      if (!a && strict) return CUDA_ERROR_INVALID_VALUE;
      put_bool(a && a->kind == AllocKind::managed);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      if (!a && strict) return CUDA_ERROR_INVALID_VALUE;
      *static_cast<int*>(data) = a ? a->device : -2;  // CUDA reports -2 for unknown memory
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
      if (!a && strict) return CUDA_ERROR_INVALID_VALUE;
      put_bool(false);  // IPC is not supported yet
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
      if (!a && strict) return CUDA_ERROR_INVALID_VALUE;
      *static_cast<void**>(data) = a ? reinterpret_cast<void*>(a->base) : nullptr;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
      if (!a && strict) return CUDA_ERROR_INVALID_VALUE;
      *static_cast<size_t*>(data) = a ? a->size : 0;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPED:
      if (!a && strict) return CUDA_ERROR_INVALID_VALUE;
      put_bool(a != nullptr);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
      if (!a && strict) return CUDA_ERROR_INVALID_VALUE;
      *static_cast<unsigned long long*>(data) = 0;  // no shareable handle types
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
      if (!a && strict) return CUDA_ERROR_INVALID_VALUE;
      put_bool(false);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
      if (!a && strict) return CUDA_ERROR_INVALID_VALUE;
      *static_cast<CUmemoryPool*>(data) = !a               ? nullptr
                                          : a->native_pool ? core::pool_handle(*a->native_pool)
                                                           : core::pool_of_pointer(a->base);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
      // CUDA_POINTER_ATTRIBUTE_ACCESS_FLAGS: 0x1 read-only, 0x3 read-write, 0 no access.
      if (!a && strict) return CUDA_ERROR_INVALID_VALUE;
      if (!a) {
        *static_cast<unsigned int*>(data) = 0u;
      } else {
        const bool read_only =
            a->kind == AllocKind::host_registered && (a->flags & CU_MEMHOSTREGISTER_READ_ONLY);
        *static_cast<unsigned int*>(data) = read_only ? 0x1u : 0x3u;
      }
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
      // Without the VMM API every allocation is exactly one mapping.
      if (!a && strict) return CUDA_ERROR_INVALID_VALUE;
      *static_cast<size_t*>(data) = a ? a->size : 0;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
      if (!a && strict) return CUDA_ERROR_INVALID_VALUE;
      *static_cast<void**>(data) = a ? reinterpret_cast<void*>(a->base) : nullptr;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
      // One physical allocation per allocation: the (never reused) buffer id serves.
      if (!a && strict) return CUDA_ERROR_INVALID_VALUE;
      *static_cast<unsigned long long*>(data) = a ? a->buffer_id : 0;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE:
      if (!a && strict) return CUDA_ERROR_INVALID_VALUE;
      put_bool(false);  // no backend exposes a decompression engine
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_P2P_TOKENS:
      return CUDA_ERROR_NOT_SUPPORTED;  // needs the nv-p2p kernel interface
    default:
      return CUDA_ERROR_INVALID_VALUE;  // not a CUpointer_attribute value
  }
}
}  // namespace

CUresult cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  if (!data) return reject(CUDA_ERROR_INVALID_VALUE, "cuPointerGetAttribute", "null out-pointer");
  Core& core = Core::get();
  std::shared_lock lock(core.alloc_mutex);
  const Allocation* a = core.find_allocation(ptr);
  const CUresult r = pointer_attribute(data, attribute, ptr, a, true);
  if (r == CUDA_ERROR_NOT_SUPPORTED)
    core.log().warn("cuPointerGetAttribute: attribute {} is not supported",
                    static_cast<int>(attribute));
  return r == CUDA_SUCCESS ? r
                           : reject(r, "cuPointerGetAttribute",
                                    a ? "attribute not available" : "unknown pointer");
}

CUresult cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute* attributes,
                                void** data, CUdeviceptr ptr) {
  if (numAttributes == 0 || !attributes || !data)
    return reject(CUDA_ERROR_INVALID_VALUE, "cuPointerGetAttributes",
                  "null or empty attribute list");
  Core& core = Core::get();
  std::shared_lock lock(core.alloc_mutex);
  const Allocation* a = core.find_allocation(ptr);
  for (unsigned i = 0; i < numAttributes; ++i) {
    if (!data[i])
      return reject(CUDA_ERROR_INVALID_VALUE, "cuPointerGetAttributes", "null out-pointer");
    // Unlike the singular form, unknown memory yields default values, not an error.
    if (CUresult r = pointer_attribute(data[i], attributes[i], ptr, a, false)) return r;
  }
  return CUDA_SUCCESS;
}

}  // namespace cudamux::impl
