// What the generated NVRTC entry points (libnvrtc.so.13, generated from api/nvrtc/) call
// into besides cudamux::nvrtc_impl: set-up, the exception barrier, stubs and trace lines.
#pragma once

#include <nvrtc.h>

#include <atomic>
#include <chrono>
#include <string>

#include "cudamux/api_support.hpp"

// Exported from libcudamux-core.so (see api_support.hpp).
#pragma GCC visibility push(default)

namespace cudamux::nvrtc_api {

namespace detail {
extern std::atomic<bool> g_setup_done;
void setup_slow() noexcept;
}  // namespace detail

// NVRTC needs no cuInit, but it reads the same configuration: the first NVRTC call loads
// config, logging and the backend plugin (shared with cuInit). One acquire load afterwards.
inline void ensure_setup() noexcept {
  if (!detail::g_setup_done.load(std::memory_order_acquire)) detail::setup_slow();
}

// A function not supported yet: logs once per symbol, returns NVRTC_ERROR_INTERNAL_ERROR
// (NVRTC has no "not supported" code; this one cannot be mistaken for a user error).
nvrtcResult not_supported(std::atomic<bool>& logged, const char* symbol) noexcept;

// From the catch(...) of every entry point: std::bad_alloc -> NVRTC_ERROR_OUT_OF_MEMORY,
// anything else -> NVRTC_ERROR_INTERNAL_ERROR, with a log line.
nvrtcResult on_exception(const char* symbol) noexcept;

void trace_call(const char* symbol, const std::string& args, nvrtcResult result,
                std::chrono::nanoseconds duration) noexcept;

template <class Call, class... Named>
nvrtcResult traced(const char* symbol, Call&& call, const Named&... named) {
  std::string args;
  (api::append_arg(args, named.first, named.second), ...);
  const auto start = std::chrono::steady_clock::now();
  const nvrtcResult result = call();
  trace_call(symbol, args, result, std::chrono::steady_clock::now() - start);
  return result;
}

}  // namespace cudamux::nvrtc_api

#pragma GCC visibility pop
