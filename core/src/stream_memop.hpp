// Stream memory operations (issue 17), shared by the stream calls (stream_memop.cpp) and batch
// memory operation graph nodes (graph.cpp, graph_exec.cpp, capture.cpp).
#pragma once

#include <cuda.h>

#include <cstdint>
#include <vector>

#include "core.hpp"

namespace cudamux::core {

// cuStreamBatchMemOp: "count ... must be less than 256".
inline constexpr unsigned kMaxBatchMemOps = 256;

// One validated operation.
struct MemOp {
  enum class Kind : std::uint8_t { wait, write, fence };  // fence: barrier or flush
  Kind kind = Kind::fence;
  CUdeviceptr addr = 0;
  unsigned bytes = 4;
  std::uint64_t value = 0;
  unsigned flags = 0;
};

// Validates one operation as CUDA does for `ctx`'s device (v2: the _v2 API's rules).
CUresult prepare_memop(const Context& ctx, const CUstreamBatchMemOpParams& p, bool v2, MemOp& out,
                       const char* fn);
// Validates a batch (count, array, flags) and each of its operations.
CUresult prepare_memops(const Context& ctx, unsigned count, const CUstreamBatchMemOpParams* ops,
                        unsigned flags, bool v2, std::vector<MemOp>& out, const char* fn);
// Submits one operation to a queue; `supported` false when the backend has none.
backend::Status submit_memop(backend::Queue& q, const MemOp& op, bool& supported);
// Submits prepared operations to `s` in order (one submission).
CUresult run_memops(Stream& s, const std::vector<MemOp>& ops, const char* fn);
// A capturing stream records a batch memory operation node instead (capture.cpp).
CUresult capture_memops(Stream& s, unsigned count, const CUstreamBatchMemOpParams* ops, bool v2,
                        const char* fn);

}  // namespace cudamux::core
