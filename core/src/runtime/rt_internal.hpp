// Internal state of the runtime API layer (libcudart.so.13 semantics on the core):
// implicit initialisation, the per-thread current device bound to the device's
// primary context, per-thread last errors, sticky errors, registered fat binaries.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>

#include "../core.hpp"
#include "cudamux/runtime_support.hpp"

namespace cudamux::rt {

namespace detail {
// Bumped whenever every thread must re-check its binding on its next call: a device
// reset (primary contexts replaced) or a sticky error.
extern std::atomic<std::uint32_t> g_epoch;
struct ThreadState {
  int device = 0;             // the runtime's current device of this thread
  std::uint32_t epoch = ~0u;  // g_epoch when this thread last bound successfully
  cudaError_t last_error = cudaSuccess;
};
extern thread_local ThreadState t_state;
cudaError_t enter_slow() noexcept;
}  // namespace detail

// Prologue of every runtime call that needs a device: initialises the driver on first
// use and makes the thread's device's primary context current unless a context is
// already current (a driver-created one wins, as with NVIDIA's runtime). Returns a
// sticky error when the current device has one.
inline cudaError_t enter() noexcept {
  if (api::initialized() &&
      detail::t_state.epoch == detail::g_epoch.load(std::memory_order_relaxed) &&
      core::current_context_handle() != nullptr) [[likely]]
    return cudaSuccess;
  return detail::enter_slow();
}

// The initialisation part of enter() only (device queries that need no context).
cudaError_t ensure_init() noexcept;

// Reads the device's launch limits the runtime checks every launch against (rt_kernel.cpp),
// once per device and process.
void warm_launch_limits(int device) noexcept;

// The device of the current context (after enter()).
int current_device() noexcept;

// The runtime's retained primary context of `device`, retaining it on first use.
cudaError_t primary_context(int device, CUcontext& out) noexcept;

// cudaDeviceReset's bookkeeping after the primary context of `device` was reset.
void after_reset(int device) noexcept;

// Errors after which a context is unusable until cudaDeviceReset (CUDA's sticky set).
bool is_sticky(cudaError_t e) noexcept;

// Sticky error of a device (cudaSuccess when none).
cudaError_t sticky_error(int device) noexcept;
void clear_sticky(int device) noexcept;

// A rejected call: logs at debug level with the reason, returns `error`. Cold, as the
// driver's reject (core.hpp).
[[gnu::cold]] cudaError_t reject(cudaError_t error, const char* function, const char* why) noexcept;

inline cudaError_t map(CUresult r) noexcept {
  return r == CUDA_SUCCESS ? cudaSuccess : to_runtime(r);
}

// Registered device variables (__cudaRegisterVar / __cudaRegisterManagedVar).
struct Symbol {
  const char* name = nullptr;
  std::size_t size = 0;
  bool constant = false;
  bool managed = false;
  const void* host_shadow = nullptr;  // the host variable (its bytes are the initial value)
  void** managed_slot = nullptr;      // managed: where the program reads the pointer
};
// Device address of a registered symbol on the current device: the loaded module's own variable,
// or where the module does not load, a copy allocated and initialised from the host shadow on
// first use. cudaErrorInvalidSymbol if unknown.
cudaError_t symbol_address(const void* symbol, CUdeviceptr& address, std::size_t& size) noexcept;
// Forgets the device copies of symbols on `device` (its primary context was reset).
void forget_symbols(int device) noexcept;

// Registered kernels (__cudaRegisterFunction), for the functions that take `const void* func`
// (rt_kernel.cpp). The record of a registered host stub, or of CUDA 13's kernel handle
// for one (__cudaGetKernel), found by exact address; nullptr for anything else.
const void* registered(const void* func) noexcept;
// The device-side name nvcc registered for the record.
const char* registered_name(const void* record) noexcept;
// The CUfunction of a registered kernel in the current context: its fat binary is loaded there
// on first use. When the backend runs nothing in it, logs why (once at error level per kernel)
// and returns cudaErrorNoKernelImageForDevice (cudaErrorInvalidKernelImage if it is damaged).
cudaError_t registered_function(const void* record, CUfunction& out, const char* api) noexcept;

// issue 17 (rt_array.cpp): the sides of a cudaMemcpy3DParms / cudaMemcpy3DPeerParms with an
// array end as the driver's CUDA_MEMCPY3D (extents and array positions count the array's
// elements; linear positions count bytes). `peer`: no kind, linear ends are unified memory.
cudaError_t array_params_3d(const cudaArray* src_array, cudaPos src_pos, cudaPitchedPtr src_ptr,
                            const cudaArray* dst_array, cudaPos dst_pos, cudaPitchedPtr dst_ptr,
                            cudaExtent extent, cudaMemcpyKind kind, bool peer, CUDA_MEMCPY3D& d,
                            const char* fn) noexcept;
// cudaMemcpy3D(Async) with an array end (after enter()).
cudaError_t array_copy_3d(const cudaMemcpy3DParms& p, cudaStream_t stream, bool async, bool pt,
                          const char* fn) noexcept;

}  // namespace cudamux::rt
