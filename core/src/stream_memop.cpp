// Stream memory operations (issue 17): cuStreamWaitValue32/64, cuStreamWriteValue32/64 and
// cuStreamBatchMemOp in every symbol flavour, validated as CUDA validates them, run through
// Queue::wait_value / write_value; captured into batch memory operation graph nodes.
#include "stream_memop.hpp"

#include <spdlog/spdlog.h>

#include <mutex>
#include <shared_mutex>
#include <vector>

#include "core.hpp"
#include "cudamux/driver_impl.hpp"
#include "graph.hpp"

namespace cudamux::core {

namespace {

constexpr unsigned kWaitConditions = 0xFu;  // GEQ, EQ, AND, NOR live in the low bits

bool device_can(const Context& ctx, CUdevice_attribute attr) noexcept {
  return device_attribute_or(ctx.device, attr, 0) != 0;
}

// The address of one operation: aligned, inside device-accessible memory cudamux knows (device
// memory, pinned or registered host memory), never managed memory (CUDA's rule).
CUresult check_address(CUdeviceptr addr, unsigned bytes, const char* fn) {
  if (addr == 0) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null address");
  if (addr % bytes != 0)
    return reject(CUDA_ERROR_INVALID_VALUE, fn,
                  bytes == 8 ? "address not aligned to 8 bytes" : "address not aligned to 4 bytes");
  Core& core = Core::get();
  std::shared_lock lock(core.alloc_mutex);
  const Allocation* a = core.find_allocation(static_cast<std::uintptr_t>(addr), bytes);
  if (!a) return reject(CUDA_ERROR_INVALID_VALUE, fn, "not device-accessible memory");
  if (a->kind == AllocKind::managed)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "managed memory is not allowed");
  return CUDA_SUCCESS;
}

}  // namespace

CUresult prepare_memop(const Context& ctx, const CUstreamBatchMemOpParams& p, bool v2, MemOp& out,
                       const char* fn) {
  out = MemOp{};
  switch (p.operation) {
    case CU_STREAM_MEM_OP_WAIT_VALUE_32:
    case CU_STREAM_MEM_OP_WAIT_VALUE_64: {
      const bool wide = p.operation == CU_STREAM_MEM_OP_WAIT_VALUE_64;
      const unsigned flags = p.waitValue.flags;
      if (flags & ~(kWaitConditions | CU_STREAM_WAIT_VALUE_FLUSH))
        return reject(CUDA_ERROR_INVALID_VALUE, fn, "invalid wait flags");
      if ((flags & kWaitConditions) > CU_STREAM_WAIT_VALUE_NOR)
        return reject(CUDA_ERROR_INVALID_VALUE, fn, "unknown wait condition");
      if (wide && !device_can(ctx, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS))
        return reject(CUDA_ERROR_NOT_SUPPORTED, fn, "the device has no 64-bit memory operations");
      if ((flags & kWaitConditions) == CU_STREAM_WAIT_VALUE_NOR &&
          !device_can(ctx, v2 ? CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR
                              : CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR_V1))
        return reject(CUDA_ERROR_NOT_SUPPORTED, fn, "the device cannot wait with NOR");
      if ((flags & CU_STREAM_WAIT_VALUE_FLUSH) &&
          !device_can(ctx, CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES))
        return reject(CUDA_ERROR_NOT_SUPPORTED, fn, "the device cannot flush remote writes");
      out.kind = MemOp::Kind::wait;
      out.bytes = wide ? 8 : 4;
      out.addr = p.waitValue.address;
      out.value = wide ? p.waitValue.value64 : p.waitValue.value;
      out.flags = flags;
      return check_address(out.addr, out.bytes, fn);
    }
    case CU_STREAM_MEM_OP_WRITE_VALUE_32:
    case CU_STREAM_MEM_OP_WRITE_VALUE_64: {
      const bool wide = p.operation == CU_STREAM_MEM_OP_WRITE_VALUE_64;
      const unsigned flags = p.writeValue.flags;
      // CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER "is not supported in the v2 API".
      const unsigned allowed =
          v2 ? 0u : static_cast<unsigned>(CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER);
      if (flags & ~allowed) return reject(CUDA_ERROR_INVALID_VALUE, fn, "invalid write flags");
      if (wide && !device_can(ctx, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS))
        return reject(CUDA_ERROR_NOT_SUPPORTED, fn, "the device has no 64-bit memory operations");
      out.kind = MemOp::Kind::write;
      out.bytes = wide ? 8 : 4;
      out.addr = p.writeValue.address;
      out.value = wide ? p.writeValue.value64 : p.writeValue.value;
      out.flags = flags;
      return check_address(out.addr, out.bytes, fn);
    }
    case CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES:
      if (p.flushRemoteWrites.flags != 0)
        return reject(CUDA_ERROR_INVALID_VALUE, fn, "flush flags must be 0");
      if (!device_can(ctx, CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES))
        return reject(CUDA_ERROR_NOT_SUPPORTED, fn, "the device cannot flush remote writes");
      out.kind = MemOp::Kind::fence;
      return CUDA_SUCCESS;
    case CU_STREAM_MEM_OP_BARRIER:
      if (!v2) return reject(CUDA_ERROR_INVALID_VALUE, fn, "memory barriers need the _v2 API");
      if (p.memoryBarrier.flags != CU_STREAM_MEMORY_BARRIER_TYPE_SYS &&
          p.memoryBarrier.flags != CU_STREAM_MEMORY_BARRIER_TYPE_GPU)
        return reject(CUDA_ERROR_INVALID_VALUE, fn, "unknown memory barrier type");
      out.kind = MemOp::Kind::fence;
      return CUDA_SUCCESS;
    default:
      return reject(CUDA_ERROR_INVALID_VALUE, fn, "unknown memory operation");
  }
}

CUresult prepare_memops(const Context& ctx, unsigned count, const CUstreamBatchMemOpParams* ops,
                        unsigned flags, bool v2, std::vector<MemOp>& out, const char* fn) {
  if (flags != 0) return reject(CUDA_ERROR_INVALID_VALUE, fn, "flags must be 0");
  if (count > 0 && !ops) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null operation array");
  if (count >= kMaxBatchMemOps)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "more than 255 operations");
  out.assign(count, MemOp{});
  for (unsigned i = 0; i < count; ++i)
    if (CUresult r = prepare_memop(ctx, ops[i], v2, out[i], fn)) return r;
  return CUDA_SUCCESS;
}

backend::Status submit_memop(backend::Queue& q, const MemOp& op, bool& supported) {
  backend::Status st;
  void* addr = reinterpret_cast<void*>(static_cast<std::uintptr_t>(op.addr));
  switch (op.kind) {
    case MemOp::Kind::wait:
      supported = q.wait_value(addr, op.bytes, op.value, op.flags, st);
      return st;
    case MemOp::Kind::write:
      supported = q.write_value(addr, op.bytes, op.value, op.flags, st);
      return st;
    case MemOp::Kind::fence:
      // A queue runs its operations in order and every backend's writes are visible to the
      // work after them, so a barrier or flush has nothing left to do.
      supported = true;
      return backend::kOk;
  }
  supported = true;
  return backend::kOk;
}

CUresult run_memops(Stream& s, const std::vector<MemOp>& ops, const char* fn) {
  if (ops.empty()) return CUDA_SUCCESS;
  bool supported = true;
  const auto st = submit(s, [&](backend::Queue& q) {
    for (const MemOp& op : ops) {
      const auto one = submit_memop(q, op, supported);
      if (!supported) return backend::kOk;
      if (!one.ok()) return one;
    }
    return backend::kOk;
  });
  if (!supported)
    return reject(CUDA_ERROR_NOT_SUPPORTED, fn, "the backend has no stream memory operations");
  return Core::get().map(st, fn);
}

}  // namespace cudamux::core

namespace cudamux::impl {
using core::Context;
using core::MemOp;
using core::reject;
using core::Stream;

namespace {

CUresult batch(CUstream h, unsigned count, const CUstreamBatchMemOpParams* ops, unsigned flags,
               bool v2, bool per_thread, const char* fn) {
  Stream* s = nullptr;
  if (CUresult r = core::resolve_stream(h, per_thread, s)) return r;
  std::vector<MemOp> prepared;
  if (CUresult r = core::prepare_memops(*s->ctx, count, ops, flags, v2, prepared, fn)) return r;
  if (core::capture_applies(*s)) return core::capture_memops(*s, count, ops, v2, fn);
  return core::run_memops(*s, prepared, fn);
}

CUresult single(CUstream h, CUdeviceptr addr, std::uint64_t value, unsigned flags,
                CUstreamBatchMemOpType type, bool v2, bool per_thread, const char* fn) {
  CUstreamBatchMemOpParams p{};
  p.operation = type;
  if (type == CU_STREAM_MEM_OP_WAIT_VALUE_32 || type == CU_STREAM_MEM_OP_WAIT_VALUE_64) {
    p.waitValue.address = addr;
    p.waitValue.value64 = value;
    if (type == CU_STREAM_MEM_OP_WAIT_VALUE_32) p.waitValue.value = static_cast<cuuint32_t>(value);
    p.waitValue.flags = flags;
  } else {
    p.writeValue.address = addr;
    p.writeValue.value64 = value;
    if (type == CU_STREAM_MEM_OP_WRITE_VALUE_32)
      p.writeValue.value = static_cast<cuuint32_t>(value);
    p.writeValue.flags = flags;
  }
  return batch(h, 1, &p, 0, v2, per_thread, fn);
}

}  // namespace

#define CUDAMUX_MEMOP(NAME, VALUE_T, OP)                                          \
  CUresult NAME(CUstream s, CUdeviceptr a, VALUE_T v, unsigned int f) {           \
    return single(s, a, v, f, OP, false, false, #NAME);                           \
  }                                                                               \
  CUresult NAME##_ptsz(CUstream s, CUdeviceptr a, VALUE_T v, unsigned int f) {    \
    return single(s, a, v, f, OP, false, true, #NAME);                            \
  }                                                                               \
  CUresult NAME##_v2(CUstream s, CUdeviceptr a, VALUE_T v, unsigned int f) {      \
    return single(s, a, v, f, OP, true, false, #NAME);                            \
  }                                                                               \
  CUresult NAME##_v2_ptsz(CUstream s, CUdeviceptr a, VALUE_T v, unsigned int f) { \
    return single(s, a, v, f, OP, true, true, #NAME);                             \
  }
CUDAMUX_MEMOP(cuStreamWaitValue32, cuuint32_t, CU_STREAM_MEM_OP_WAIT_VALUE_32)
CUDAMUX_MEMOP(cuStreamWaitValue64, cuuint64_t, CU_STREAM_MEM_OP_WAIT_VALUE_64)
CUDAMUX_MEMOP(cuStreamWriteValue32, cuuint32_t, CU_STREAM_MEM_OP_WRITE_VALUE_32)
CUDAMUX_MEMOP(cuStreamWriteValue64, cuuint64_t, CU_STREAM_MEM_OP_WRITE_VALUE_64)
#undef CUDAMUX_MEMOP

CUresult cuStreamBatchMemOp(CUstream s, unsigned int count, CUstreamBatchMemOpParams* ops,
                            unsigned int flags) {
  return batch(s, count, ops, flags, false, false, "cuStreamBatchMemOp");
}
CUresult cuStreamBatchMemOp_ptsz(CUstream s, unsigned int count, CUstreamBatchMemOpParams* ops,
                                 unsigned int flags) {
  return batch(s, count, ops, flags, false, true, "cuStreamBatchMemOp");
}
CUresult cuStreamBatchMemOp_v2(CUstream s, unsigned int count, CUstreamBatchMemOpParams* ops,
                               unsigned int flags) {
  return batch(s, count, ops, flags, true, false, "cuStreamBatchMemOp");
}
CUresult cuStreamBatchMemOp_v2_ptsz(CUstream s, unsigned int count, CUstreamBatchMemOpParams* ops,
                                    unsigned int flags) {
  return batch(s, count, ops, flags, true, true, "cuStreamBatchMemOp");
}

}  // namespace cudamux::impl
