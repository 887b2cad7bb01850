// Batch copies (issue 17; CUDA 12.8 and 13.0): cuMemcpyBatchAsync and cuMemcpy3DBatchAsync.
// The whole batch is validated first (no copy runs when any is refused), then its copies are
// queued one by one in stream order, which is one of the orders CUDA allows (copies within a
// batch are unordered).
#include <spdlog/spdlog.h>

#include <cstdint>
#include <vector>

#include "core.hpp"
#include "cudamux/driver_impl.hpp"
#include "graph.hpp"

namespace cudamux::impl {
using core::Core;
using core::reject;
using core::Stream;

namespace {

constexpr std::size_t kNoIndex = SIZE_MAX;  // failIdx of an error that names no copy

struct BatchCopy {
  backend::CopyDesc desc;
  bool during_call = false;  // CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL
};

// The batch calls reject the legacy NULL stream, explicit or implicit; the per-thread
// stream is an ordinary stream to them.
CUresult batch_stream(CUstream stream, bool per_thread, Stream*& out, const char* fn) {
  if (CUresult r = core::resolve_stream(stream, per_thread, out)) return r;
  if (out->kind == core::StreamKind::legacy)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "the legacy NULL stream is not allowed");
  return CUDA_SUCCESS;
}

CUresult check_order_and_flags(CUmemcpySrcAccessOrder order, unsigned flags, const char* fn) {
  if (order != CU_MEMCPY_SRC_ACCESS_ORDER_STREAM &&
      order != CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL &&
      order != CU_MEMCPY_SRC_ACCESS_ORDER_ANY)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "invalid srcAccessOrder");
  if (flags & ~static_cast<unsigned>(CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE))
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "unknown copy flags");
  return CUDA_SUCCESS;
}

// Queues the validated copies. A source read during the call, or pageable host memory, is
// copied before returning (after the stream's earlier work, which satisfies both orders).
CUresult run_batch(Stream& s, const std::vector<BatchCopy>& copies, const char* fn) {
  Core& core = Core::get();
  for (const BatchCopy& c : copies) {
    const auto& d = c.desc;
    const bool sync = c.during_call || d.src_kind == backend::MemKind::host_pageable ||
                      d.dst_kind == backend::MemKind::host_pageable;
    if (core::capture_applies(s)) {
      if (CUresult r = core::capture_copy(s, d, false, fn)) return r;
      continue;
    }
    const auto st =
        core::submit(s, [&](backend::Queue& q) { return sync ? q.copy_sync(d) : q.copy(d); });
    if (!st.ok()) return core.map(st, fn);
  }
  return CUDA_SUCCESS;
}

CUresult batch_1d(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
                  CUmemcpyAttributes* attrs, size_t* attrsIdxs, size_t numAttrs, size_t* failIdx,
                  CUstream hStream, bool per_thread) {
  constexpr const char* fn = "cuMemcpyBatchAsync";
  auto fail = [&](std::size_t index, CUresult r) {
    if (failIdx) *failIdx = index;
    return r;
  };
  Stream* s = nullptr;
  if (CUresult r = batch_stream(hStream, per_thread, s, fn)) return fail(kNoIndex, r);
  if (count == 0) return fail(kNoIndex, reject(CUDA_ERROR_INVALID_VALUE, fn, "count is 0"));
  if (!dsts || !srcs || !sizes)
    return fail(kNoIndex, reject(CUDA_ERROR_INVALID_VALUE, fn, "null copy array"));
  if (!attrs || !attrsIdxs || numAttrs == 0)
    return fail(kNoIndex, reject(CUDA_ERROR_INVALID_VALUE, fn, "no attributes"));
  if (numAttrs > count)
    return fail(kNoIndex, reject(CUDA_ERROR_INVALID_VALUE, fn, "more attributes than copies"));
  if (attrsIdxs[0] != 0)
    return fail(kNoIndex, reject(CUDA_ERROR_INVALID_VALUE, fn, "attrsIdxs[0] must be 0"));
  for (std::size_t k = 1; k < numAttrs; ++k) {
    if (attrsIdxs[k] <= attrsIdxs[k - 1] || attrsIdxs[k] >= count)
      return fail(kNoIndex, reject(CUDA_ERROR_INVALID_VALUE, fn,
                                   "attrsIdxs must increase and stay below count"));
  }
  std::vector<BatchCopy> copies;
  copies.reserve(count);
  std::size_t k = 0;
  for (std::size_t i = 0; i < count; ++i) {
    while (k + 1 < numAttrs && attrsIdxs[k + 1] <= i) ++k;
    const CUmemcpyAttributes& a = attrs[k];
    if (CUresult r = check_order_and_flags(a.srcAccessOrder, a.flags, fn)) return fail(i, r);
    if (sizes[i] == 0) continue;
    // A pointer pair of unified addressing, validated as cuMemcpyAsync validates it.
    CUDA_MEMCPY3D p{};
    p.srcMemoryType = p.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
    p.srcDevice = srcs[i];
    p.dstDevice = dsts[i];
    p.WidthInBytes = sizes[i];
    p.Height = p.Depth = 1;
    BatchCopy c;
    c.during_call = a.srcAccessOrder == CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL;
    bool empty = false;
    if (CUresult r = core::describe_copy_3d(p, c.desc, empty, fn)) return fail(i, r);
    if (!empty) copies.push_back(c);
  }
  if (CUresult r = run_batch(*s, copies, fn)) return fail(kNoIndex, r);
  return CUDA_SUCCESS;
}

// One operand of a 3D batch copy as a side of CUDA_MEMCPY3D (element size 1: pointers only).
CUresult operand_side(const CUmemcpy3DOperand& o, const CUextent3D& e, bool src, CUDA_MEMCPY3D& p,
                      const char* fn) {
  if (o.type == CU_MEMCPY_OPERAND_TYPE_ARRAY)
    return reject(CUDA_ERROR_NOT_SUPPORTED, fn, "CUDA array operands are not supported yet");
  if (o.type != CU_MEMCPY_OPERAND_TYPE_POINTER)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "unknown operand type");
  const auto& ptr = o.op.ptr;
  if (ptr.rowLength != 0 && ptr.rowLength < e.width)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "rowLength smaller than the copy width");
  if (ptr.layerHeight != 0 && ptr.layerHeight < e.height)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "layerHeight smaller than the copy height");
  const std::size_t pitch = ptr.rowLength ? ptr.rowLength : e.width;
  const std::size_t rows = ptr.layerHeight ? ptr.layerHeight : e.height;
  if (src) {
    p.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
    p.srcDevice = ptr.ptr;
    p.srcPitch = pitch;
    p.srcHeight = rows;
  } else {
    p.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
    p.dstDevice = ptr.ptr;
    p.dstPitch = pitch;
    p.dstHeight = rows;
  }
  return CUDA_SUCCESS;
}

CUresult batch_3d(size_t numOps, CUDA_MEMCPY3D_BATCH_OP* opList, size_t* failIdx,
                  unsigned long long flags, CUstream hStream, bool per_thread) {
  constexpr const char* fn = "cuMemcpy3DBatchAsync";
  auto fail = [&](std::size_t index, CUresult r) {
    if (failIdx) *failIdx = index;
    return r;
  };
  Stream* s = nullptr;
  if (CUresult r = batch_stream(hStream, per_thread, s, fn)) return fail(kNoIndex, r);
  if (flags != 0) return fail(kNoIndex, reject(CUDA_ERROR_INVALID_VALUE, fn, "flags must be 0"));
  if (numOps == 0) return fail(kNoIndex, reject(CUDA_ERROR_INVALID_VALUE, fn, "numOps is 0"));
  if (!opList) return fail(kNoIndex, reject(CUDA_ERROR_INVALID_VALUE, fn, "null opList"));
  std::vector<BatchCopy> copies;
  copies.reserve(numOps);
  for (std::size_t i = 0; i < numOps; ++i) {
    const CUDA_MEMCPY3D_BATCH_OP& op = opList[i];
    if (CUresult r = check_order_and_flags(op.srcAccessOrder, op.flags, fn)) return fail(i, r);
    const CUextent3D& e = op.extent;
    if (e.width == 0 || e.height == 0 || e.depth == 0)
      return fail(i, reject(CUDA_ERROR_INVALID_VALUE, fn, "a zero extent"));
    CUDA_MEMCPY3D p{};
    if (CUresult r = operand_side(op.src, e, true, p, fn)) return fail(i, r);
    if (CUresult r = operand_side(op.dst, e, false, p, fn)) return fail(i, r);
    p.WidthInBytes = e.width;
    p.Height = e.height;
    p.Depth = e.depth;
    BatchCopy c;
    c.during_call = op.srcAccessOrder == CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL;
    bool empty = false;
    if (CUresult r = core::describe_copy_3d(p, c.desc, empty, fn)) return fail(i, r);
    if (!empty) copies.push_back(c);
  }
  if (CUresult r = run_batch(*s, copies, fn)) return fail(kNoIndex, r);
  return CUDA_SUCCESS;
}

}  // namespace

// CUDA 12.8's forms report the failing copy through failIdx; 13.0's (_v2) have none.
CUresult cuMemcpyBatchAsync(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
                            CUmemcpyAttributes* attrs, size_t* attrsIdxs, size_t numAttrs,
                            size_t* failIdx, CUstream hStream) {
  return batch_1d(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, failIdx, hStream, false);
}
CUresult cuMemcpyBatchAsync_ptsz(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
                                 CUmemcpyAttributes* attrs, size_t* attrsIdxs, size_t numAttrs,
                                 size_t* failIdx, CUstream hStream) {
  return batch_1d(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, failIdx, hStream, true);
}
CUresult cuMemcpyBatchAsync_v2(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
                               CUmemcpyAttributes* attrs, size_t* attrsIdxs, size_t numAttrs,
                               CUstream hStream) {
  return batch_1d(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, nullptr, hStream, false);
}
CUresult cuMemcpyBatchAsync_v2_ptsz(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes,
                                    size_t count, CUmemcpyAttributes* attrs, size_t* attrsIdxs,
                                    size_t numAttrs, CUstream hStream) {
  return batch_1d(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, nullptr, hStream, true);
}

CUresult cuMemcpy3DBatchAsync(size_t numOps, CUDA_MEMCPY3D_BATCH_OP* opList, size_t* failIdx,
                              unsigned long long flags, CUstream hStream) {
  return batch_3d(numOps, opList, failIdx, flags, hStream, false);
}
CUresult cuMemcpy3DBatchAsync_ptsz(size_t numOps, CUDA_MEMCPY3D_BATCH_OP* opList, size_t* failIdx,
                                   unsigned long long flags, CUstream hStream) {
  return batch_3d(numOps, opList, failIdx, flags, hStream, true);
}
CUresult cuMemcpy3DBatchAsync_v2(size_t numOps, CUDA_MEMCPY3D_BATCH_OP* opList,
                                 unsigned long long flags, CUstream hStream) {
  return batch_3d(numOps, opList, nullptr, flags, hStream, false);
}
CUresult cuMemcpy3DBatchAsync_v2_ptsz(size_t numOps, CUDA_MEMCPY3D_BATCH_OP* opList,
                                      unsigned long long flags, CUstream hStream) {
  return batch_3d(numOps, opList, nullptr, flags, hStream, true);
}

}  // namespace cudamux::impl
