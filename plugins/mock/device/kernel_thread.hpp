// Inside libcudamux-device.so: what the block scheduler (runtime.cpp) tells the memory checks
// and the fault handler (memcheck.cpp) about the kernel thread running on the calling thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cudamux/device_abi.h"

// Initial-exec TLS defined in runtime.cpp (see there).
extern "C" {
extern __thread cudamux_u3 cudamux_blockIdx __attribute__((tls_model("initial-exec")));
extern __thread cudamux_u3 cudamux_blockDim __attribute__((tls_model("initial-exec")));
extern __thread unsigned cudamux_memcheck_atomic __attribute__((tls_model("initial-exec")));
}

namespace cudamux::device {

// Shared-memory shadow for hazard hints: who last wrote and read a byte, at which barrier
// epochs, in which block (cells of another block count as never touched).
struct ShadowCell {
  std::uint32_t block = 0;  // low bits of the block serial; 0: never touched
  std::uint16_t writer = 0;
  std::uint16_t reader = 0;
  std::uint32_t write_epoch = 0;
  std::uint32_t write_warp_epoch = 0;
  std::uint32_t read_epoch = 0;
  std::uint32_t read_warp_epoch = 0;
  std::uint8_t state = 0;  // bit 0: written, bit 1: read
};

// Per-thread memcheck state, owned by the scheduler's per-thread record: ranges found valid
// (valid while the registry generation is unchanged) and the shadow of shared memory.
struct MemcheckState {
  std::uint64_t generation = ~std::uint64_t{0};
  struct Range {
    std::uintptr_t begin = 0, end = 0;
  };
  // Ranges found valid (live allocations, loaded objects' segments): a few, since kernels
  // read and write several buffers and may read module data between.
  static constexpr unsigned kValidSlots = 6;
  Range valid[kValidSlots];
  unsigned next_slot = 0;
  std::uintptr_t stack_top = 0;  // the running kernel thread's frames lie below this address
  std::uintptr_t tls_begin = 0, tls_end = 0;  // a module's TLS block: static __shared__
  std::vector<ShadowCell> tls_shadow;
  std::vector<ShadowCell> dyn_shadow;
  std::uintptr_t tls_shadow_base = 0;
  unsigned long long hint_launch = 0;  // hint kinds already sent for this launch
  unsigned hint_kinds = 0;
};

struct KernelThread {
  const cudamux_launch* launch = nullptr;
  void* dyn_shared = nullptr;
  std::uintptr_t stack_top = 0;  // the running kernel thread's frames lie below this address
  std::uint64_t block_serial = 0;
  std::uint32_t barrier_epoch = 0;  // block barriers released so far in this block
  std::uint32_t warp_epoch = 0;     // warp collectives released so far in this thread's warp
  unsigned thread = 0;              // linear index of the thread in its block
  MemcheckState* memcheck = nullptr;
};

// The calling thread's memcheck state while it runs a block, else null (the checks' fast path).
extern __thread MemcheckState* t_memcheck __attribute__((tls_model("initial-exec")));

// False when the calling thread is not running kernel code. Async-signal-safe.
bool current_kernel_thread(KernelThread& out);

// Ends the running block: the launch fails with `code` and `message` (the first one wins).
// Unwinds the kernel thread's frames with an exception; also used from the fault handler,
// which is why modules are compiled with -fnon-call-exceptions.
[[noreturn]] void abort_block(int code, const char* message);

// SIGSEGV/SIGBUS in kernel code become a failed launch (CUDA_ERROR_ILLEGAL_ADDRESS) instead of
// the end of the process; faults elsewhere go to the handler that was there before. Idempotent.
void install_fault_handler();

// A per-thread alternate signal stack, so that a kernel overflowing its stack still reaches
// the handler. Leaves a stack the thread already had (a sanitizer's) in place.
class AltStack {
 public:
  AltStack() = default;
  ~AltStack();
  AltStack(const AltStack&) = delete;
  AltStack& operator=(const AltStack&) = delete;
  void install();

 private:
  void* memory_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace cudamux::device
