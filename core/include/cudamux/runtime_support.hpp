// What the generated runtime entry points (libcudart.so.13, generated from the runtime
// API table) call into. The hot path is inline: a successful call costs one compare
// after the implementation returns; only failures touch the per-thread error state.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <chrono>
#include <string>

#include "cudamux/api_support.hpp"

// Exported from libcudamux-core.so (see api_support.hpp).
#pragma GCC visibility push(default)

namespace cudamux::rt {

// Records a failed result as the calling thread's last error (cudaErrorNotReady is a
// status, not an error, and is never recorded) and applies the sticky-error rule.
void record_error(cudaError_t error) noexcept;

inline cudaError_t record(cudaError_t result) noexcept {
  if (result != cudaSuccess && result != cudaErrorNotReady) [[unlikely]]
    record_error(result);
  return result;
}

// Entry point of a function not supported yet: logs once per symbol, returns
// cudaErrorNotSupported and records it as the last error.
cudaError_t not_supported(std::atomic<bool>& logged, const char* symbol) noexcept;

// Called from the catch(...) of every entry point: std::bad_alloc becomes
// cudaErrorMemoryAllocation, anything else cudaErrorUnknown (logged).
cudaError_t on_exception(const char* symbol) noexcept;

void trace_call(const char* symbol, const std::string& args, cudaError_t result,
                std::chrono::nanoseconds duration) noexcept;

// Runs `call` and records it at trace level with its arguments.
template <class Call, class... Named>
cudaError_t traced(const char* symbol, Call&& call, const Named&... named) {
  std::string args;
  (api::append_arg(args, named.first, named.second), ...);
  const auto start = std::chrono::steady_clock::now();
  const cudaError_t result = call();
  trace_call(symbol, args, result, std::chrono::steady_clock::now() - start);
  return result;
}

// The runtime's CUresult -> cudaError_t mapping (one data table, core/src/runtime).
cudaError_t to_runtime(CUresult result) noexcept;

}  // namespace cudamux::rt

#pragma GCC visibility pop
