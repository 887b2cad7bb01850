// Fault injection ([[mock.faults]], issue 6) and the mock's own error codes.
//
// A fault names a CUDA entry point; it fires in the backend operation(s) behind that
// call, so the core maps it like any real backend error (policy, sticky rules).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cudamux/backend.hpp"

namespace spdlog {
class logger;
}

namespace cudamux::mock {

namespace be = cudamux::backend;

// The mock's native codes are CUresult values, plus these, which have no CUDA (or
// runtime, or NVRTC) counterpart. Far outside every CUresult value ('MO' in the high bytes).
inline constexpr std::int32_t kMockErrorUnmapped = 0x4d4f0001;
inline constexpr std::int32_t kMockErrorUnmapped2 = 0x4d4f0002;

// Name of a mock-only code; nullptr for any other value.
const char* mock_error_name(std::int32_t native) noexcept;
// Native code for a CUDA error name ("CUDA_ERROR_OUT_OF_MEMORY") or a mock one
// ("MOCK_ERROR_UNMAPPED"); nullopt when it is neither (CUDA_SUCCESS is no error).
std::optional<std::int32_t> error_by_name(std::string_view name) noexcept;

// The backend operations a fault can fire in.
enum class Op : std::uint8_t {
  allocate,
  free,
  allocate_host,
  free_host,
  allocate_managed,
  free_managed,
  register_host,
  unregister_host,
  open_context,
  create_queue,
  create_event,
  context_synchronize,
  load_module,
  copy,
  copy_sync,
  fill,
  host_function,
  record,
  wait,
  queue_query,
  queue_synchronize,
  launch,
  compile,
  count_
};

// The operations behind a CUDA entry point's base name; empty when the mock cannot fail it.
std::vector<Op> operations_of(std::string_view call);

struct FaultSpec {
  std::string call;                    // as written: "cudaMalloc"
  std::string error_name;              // as written: "MOCK_ERROR_UNMAPPED"
  std::int32_t error = 0;              // native code
  std::uint64_t after = 0;             // calls that succeed first
  std::optional<std::uint64_t> count;  // failing calls; nullopt: every later one
  std::vector<Op> ops;
};

// Thread-safe: each entry counts the calls of its operations with an atomic counter.
class Faults {
 public:
  Faults(const std::vector<FaultSpec>& specs, std::shared_ptr<spdlog::logger> log);
  // kOk, or the native code of the first entry that fires for this call of `op`.
  be::Status check(Op op) noexcept;
  [[nodiscard]] bool any() const noexcept { return !entries_.empty(); }

 private:
  struct Entry {
    FaultSpec spec;
    std::atomic<std::uint64_t> calls{0};
  };
  std::vector<std::unique_ptr<Entry>> entries_;
  std::vector<std::vector<Entry*>> by_op_;
  std::shared_ptr<spdlog::logger> log_;
};

}  // namespace cudamux::mock
