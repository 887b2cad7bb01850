// What the generated driver entry points (api/, generated from the API table) call
// into. Kept tiny and inline on the hot path: an implemented entry point costs one
// relaxed load (init check), one relaxed load (trace check) and the call.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>

#include <cuda.h>

// The core's interface to the API libraries (libcuda, libnvrtc, libcudart) and tests:
// exported from libcudamux-core.so, everything else there stays hidden.
#pragma GCC visibility push(default)

namespace cudamux::api {

namespace detail {
// Set once by cuInit; read on every call. Defined in core.
extern std::atomic<bool> g_initialized;
// True while the log level is trace: entry points then log arguments, result, duration.
extern std::atomic<bool> g_trace;
}  // namespace detail

[[nodiscard]] inline bool initialized() noexcept {
  return detail::g_initialized.load(std::memory_order_acquire);
}
[[nodiscard]] inline bool trace_enabled() noexcept {
  return detail::g_trace.load(std::memory_order_relaxed);
}

// Entry point of a function not supported yet: logs once per symbol (guarded by
// `logged`), returns CUDA_ERROR_NOT_SUPPORTED.
CUresult not_supported(std::atomic<bool>& logged, const char* symbol) noexcept;

// Called from the catch(...) of every entry point: logs, maps std::bad_alloc to
// CUDA_ERROR_OUT_OF_MEMORY and anything else to CUDA_ERROR_UNKNOWN.
CUresult on_exception(const char* symbol) noexcept;

// Trace-level record of one call. `args` is "name=value, ..." built by the caller.
void trace_call(const char* symbol, const std::string& args, CUresult result,
                std::chrono::nanoseconds duration) noexcept;

// Formats one argument for the trace line (pointers in hex, integers in decimal).
template <class T>
void append_arg(std::string& out, const char* name, const T& value) {
  if (!out.empty()) out += ", ";
  out += name;
  out += '=';
  if constexpr (std::is_same_v<T, const char*>) {  // char* is an output buffer: not read
    // Names (symbols, module paths) are what a trace reader needs; cap them so a
    // garbage pointer to a huge unterminated buffer cannot flood the log.
    if (value == nullptr) {
      out += "null";
    } else {
      constexpr std::size_t kMaxShown = 128;
      const std::size_t length = strnlen(value, kMaxShown + 1);
      out += '"';
      out.append(value, length > kMaxShown ? kMaxShown : length);
      if (length > kMaxShown) out += "...";
      out += '"';
    }
  } else if constexpr (std::is_pointer_v<T>) {
    char buf[2 + 16 + 1];
    std::snprintf(buf, sizeof buf, "%p", reinterpret_cast<const void*>(value));
    out += buf;
  } else if constexpr (std::is_enum_v<T>) {
    out += std::to_string(static_cast<long long>(value));
  } else if constexpr (std::is_integral_v<T>) {
    out += std::to_string(value);
  } else if constexpr (std::is_floating_point_v<T>) {
    out += std::to_string(value);
  } else {
    out += "{...}";  // structs passed by value
  }
}

// Runs `call` and records it at trace level with its arguments.
template <class Call, class... Named>
CUresult traced(const char* symbol, Call&& call, const Named&... named) {
  std::string args;
  (append_arg(args, named.first, named.second), ...);
  const auto start = std::chrono::steady_clock::now();
  const CUresult result = call();
  trace_call(symbol, args, result, std::chrono::steady_clock::now() - start);
  return result;
}

// One row of the cuGetProcAddress table (generated from the API table).
enum class StreamFlavor : std::uint8_t {
  none,        // the function has no per-thread-stream variant: the flag is ignored
  legacy,      // legacy-default-stream variant of a function that has both
  per_thread,  // _ptsz / _ptds variant
};
struct ProcEntry {
  const char* name;  // the un-suffixed API name, e.g. "cuMemAlloc"
  int version;       // CUDA version the variant appeared in, e.g. 3020
  StreamFlavor flavor;
  void* fn;
};

}  // namespace cudamux::api

#pragma GCC visibility pop

#define CUDAMUX_EXPORT extern "C" __attribute__((visibility("default")))
