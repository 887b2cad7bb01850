// Runtime API state: implicit initialisation, per-thread device binding, last and
// sticky errors, error names and descriptions, versions.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <iterator>
#include <map>
#include <mutex>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "cudamux/driver_impl.hpp"
#include "cudamux/enum_policy.hpp"
#include "cudamux/log.hpp"
#include "cudamux/runtime_impl.hpp"
#include "rt_internal.hpp"

namespace cudamux::rt {

namespace detail {
std::atomic<std::uint32_t> g_epoch{0};
thread_local ThreadState t_state;
}  // namespace detail

namespace {

using detail::t_state;

constexpr int kMaxDevices = 64;  // the mock's limit; larger ordinals are rejected anyway

struct RtDevice {
  std::mutex mutex;
  bool retained = false;  // the runtime holds one retain of the primary context
  std::atomic<int> sticky{cudaSuccess};
};
std::array<RtDevice, kMaxDevices>& rt_devices() noexcept {
  static auto* devices = new std::array<RtDevice, kMaxDevices>();  // never destroyed (atexit users)
  return *devices;
}

struct ErrorName {
  int value;
  const char* name;
};
#define CUDAMUX_RT_ERROR_NAME(V, N) ErrorName{V, N},
constexpr ErrorName kErrorNames[] = {
#include <cudamux/runtime_errors.inc>
};
#undef CUDAMUX_RT_ERROR_NAME

struct ErrorMap {
  CUresult cu;
  cudaError_t rt;
};
#define CUDAMUX_RT_ERROR_MAP(CU, RT) ErrorMap{CU, RT},
constexpr ErrorMap kErrorMap[] = {
#include <cudamux/runtime_errors.inc>
};
#undef CUDAMUX_RT_ERROR_MAP

// Descriptions of the codes the driver API lacks (the shared ones reuse the driver's
// descriptions: the same condition, the same words).
struct ErrorText {
  cudaError_t code;
  const char* text;
};
constexpr ErrorText kRuntimeOnlyTexts[] = {
    {cudaErrorInvalidConfiguration,
     "the launch configuration (grid, block or shared memory) is not valid for the device"},
    {cudaErrorInvalidPitchValue, "a pitch is smaller than the row width or larger than allowed"},
    {cudaErrorInvalidSymbol, "the symbol is not a registered __device__ or __constant__ variable"},
    {cudaErrorInvalidHostPointer, "the host pointer is not valid for this call"},
    {cudaErrorInvalidDevicePointer, "the device pointer is not valid for this call"},
    {cudaErrorInvalidTexture, "the texture is not valid"},
    {cudaErrorInvalidTextureBinding, "the texture binding is not valid"},
    {cudaErrorInvalidChannelDescriptor, "the channel descriptor is not valid"},
    {cudaErrorInvalidMemcpyDirection,
     "the copy kind is not a cudaMemcpyKind, or does not match the pointers"},
    {cudaErrorAddressOfConstant, "the address of a constant variable cannot be taken (deprecated)"},
    {cudaErrorTextureFetchFailed, "a texture fetch failed (deprecated)"},
    {cudaErrorTextureNotBound, "the texture is not bound (deprecated)"},
    {cudaErrorSynchronizationError, "a synchronisation operation failed (deprecated)"},
    {cudaErrorInvalidFilterSetting, "linear filtering is not allowed for this format"},
    {cudaErrorInvalidNormSetting, "normalised reads are not allowed for this format"},
    {cudaErrorMixedDeviceExecution, "device code and emulation mixed (deprecated)"},
    {cudaErrorNotYetImplemented, "not implemented (deprecated)"},
    {cudaErrorMemoryValueTooLarge,
     "an emulated device pointer exceeds the 32-bit range (deprecated)"},
    {cudaErrorInsufficientDriver, "the installed driver is older than this runtime"},
    {cudaErrorInvalidSurface, "the surface is not valid"},
    {cudaErrorDuplicateVariableName, "two registered variables share one name"},
    {cudaErrorDuplicateTextureName, "two registered textures share one name"},
    {cudaErrorDuplicateSurfaceName, "two registered surfaces share one name"},
    {cudaErrorIncompatibleDriverContext,
     "the current driver context was not created by a compatible runtime"},
    {cudaErrorMissingConfiguration, "a launch was requested without a launch configuration"},
    {cudaErrorPriorLaunchFailure, "an earlier launch failed (deprecated)"},
    {cudaErrorLaunchMaxDepthExceeded, "device-side launches nest deeper than allowed"},
    {cudaErrorLaunchFileScopedTex, "device-side launches cannot use file-scoped textures"},
    {cudaErrorLaunchFileScopedSurf, "device-side launches cannot use file-scoped surfaces"},
    {cudaErrorSyncDepthExceeded, "device-side synchronisation nests deeper than allowed"},
    {cudaErrorLaunchPendingCountExceeded, "too many device-side launches are pending"},
    {cudaErrorInvalidDeviceFunction,
     "the function is not a registered kernel, or has no code for the device"},
    {cudaErrorSoftwareValidityNotEstablished,
     "the software validity of the device is not established"},
    {cudaErrorStartupFailure, "the runtime failed to start up"},
    {cudaErrorApiFailureBase, "an API failure (deprecated base value)"},
};

// cudaError_t joins the enum policy (docs/policy.md) with the values runtime_errors.inc
// defines (our cuda_runtime_api.h's, which the ABI test proves equal to NVIDIA's).
[[maybe_unused]] const bool kPolicyRegistered = [] {
  std::vector<std::int64_t> values;
  for (const ErrorName& n : kErrorNames) values.push_back(n.value);
  policy::register_type("cudaError_t", true, values);
  return true;
}();

// Invented cudaError_t names and descriptions, kept for the process's life (the program
// holds the pointers as it would CUDA's static strings).
const char* invented_text(cudaError_t e, bool name) noexcept {
  try {
    static std::mutex mutex;
    static auto* strings = new std::map<std::pair<int, bool>, std::string>();
    const auto inv = policy::invented("cudaError_t", e);
    if (!inv) return nullptr;
    std::lock_guard lock(mutex);
    auto [it, inserted] =
        strings->try_emplace({static_cast<int>(e), name}, name ? inv->name : inv->description);
    return it->second.c_str();
  } catch (...) {
    return nullptr;
  }
}

const char* error_name(cudaError_t e) noexcept {
  const auto it =
      std::lower_bound(std::begin(kErrorNames), std::end(kErrorNames), static_cast<int>(e),
                       [](const ErrorName& n, int v) { return n.value < v; });
  return it != std::end(kErrorNames) && it->value == static_cast<int>(e) ? it->name : nullptr;
}

}  // namespace

// Errors after which a context is unusable until cudaDeviceReset (CUDA's sticky set).
bool is_sticky(cudaError_t e) noexcept {
  switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchTimeout:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchFailure:
    case cudaErrorECCUncorrectable:
    case cudaErrorAssert:
    case cudaErrorContained:
    case cudaErrorTensorMemoryLeak:
      return true;
    default:
      return false;
  }
}

cudaError_t to_runtime(CUresult result) noexcept {
  // A backend value CUDA has no name for reached us as CUDA_ERROR_UNKNOWN (CUresult
  // strict) or an invented CUresult: the policy decides for cudaError_t with the same
  // backend value (rule 3), strict giving cudaErrorUnknown.
  if (result == CUDA_ERROR_UNKNOWN || result > CUDA_ERROR_UNKNOWN) {
    try {
      if (auto o = policy::origin_of("CUresult", result, CUDA_ERROR_UNKNOWN))
        return static_cast<cudaError_t>(policy::unmapped("cudaError_t", o->backend, o->native,
                                                         o->native_name, cudaErrorUnknown));
    } catch (...) {
      return cudaErrorUnknown;
    }
  }
  const auto it = std::lower_bound(std::begin(kErrorMap), std::end(kErrorMap), result,
                                   [](const ErrorMap& m, CUresult r) { return m.cu < r; });
  if (it != std::end(kErrorMap) && it->cu == result) return it->rt;
  // A CUresult outside cuda.h's set cannot come from the core (its policy maps native
  // codes); keep the strict answer rather than inventing one.
  return cudaErrorUnknown;
}

cudaError_t reject(cudaError_t error, const char* function, const char* why) noexcept {
  try {
    const char* name = error_name(error);
    log::get()->debug("{}: {} ({})", function, name ? name : "?", why);
  } catch (...) {
  }
  return error;
}

void record_error(cudaError_t error) noexcept {
  t_state.last_error = error;
  if (is_sticky(error) && api::initialized()) {
    const int dev = current_device();
    if (dev >= 0 && dev < kMaxDevices) {
      int expected = cudaSuccess;
      if (rt_devices()[static_cast<std::size_t>(dev)].sticky.compare_exchange_strong(expected,
                                                                                     error)) {
        detail::g_epoch.fetch_add(1, std::memory_order_relaxed);
        try {
          log::get()->error(
              "device {}: sticky error {}: the context is unusable until cudaDeviceReset", dev,
              error_name(error) ? error_name(error) : "?");
        } catch (...) {
        }
      }
    }
  }
}

cudaError_t sticky_error(int device) noexcept {
  if (device < 0 || device >= kMaxDevices) return cudaSuccess;
  return static_cast<cudaError_t>(rt_devices()[static_cast<std::size_t>(device)].sticky.load());
}
void clear_sticky(int device) noexcept {
  if (device >= 0 && device < kMaxDevices)
    rt_devices()[static_cast<std::size_t>(device)].sticky.store(cudaSuccess);
}

cudaError_t not_supported(std::atomic<bool>& logged, const char* symbol) noexcept {
  if (!logged.exchange(true, std::memory_order_relaxed)) {
    try {
      log::get()->warn("{} is not supported by cudamux yet: returning cudaErrorNotSupported",
                       symbol);
    } catch (...) {
    }
  }
  record_error(cudaErrorNotSupported);
  return cudaErrorNotSupported;
}

cudaError_t on_exception(const char* symbol) noexcept {
  return api::on_exception(symbol) == CUDA_ERROR_OUT_OF_MEMORY ? cudaErrorMemoryAllocation
                                                               : cudaErrorUnknown;
}

void trace_call(const char* symbol, const std::string& args, cudaError_t result,
                std::chrono::nanoseconds duration) noexcept {
  try {
    const char* name = error_name(result);
    log::get()->trace("{}({}) -> {} [{} ns]", symbol, args, name ? name : "?", duration.count());
  } catch (...) {
  }
}

cudaError_t ensure_init() noexcept {
  if (api::initialized()) [[likely]]
    return cudaSuccess;
  const CUresult r = cudamux::impl::cuInit(0);
  if (r == CUDA_SUCCESS) return cudaSuccess;
  // NVIDIA's runtime reports a missing device as such, and any other driver failure
  // as an initialisation error.
  return r == CUDA_ERROR_NO_DEVICE ? cudaErrorNoDevice : cudaErrorInitializationError;
}

cudaError_t primary_context(int device, CUcontext& out) noexcept {
  if (cudaError_t e = ensure_init()) return e;
  if (!core::Core::get().valid_device(device) || device >= kMaxDevices)
    return cudaErrorInvalidDevice;
  RtDevice& d = rt_devices()[static_cast<std::size_t>(device)];
  std::lock_guard lock(d.mutex);
  CUcontext h = nullptr;
  if (const CUresult r = cudamux::impl::cuDevicePrimaryCtxRetain(&h, device)) return map(r);
  if (d.retained) {
    // One retain per process is enough: give back the extra one taken to read the handle.
    (void)cudamux::impl::cuDevicePrimaryCtxRelease_v2(device);
  } else {
    // Read with the context, as NVIDIA's runtime reads the device's properties, not at the
    // first launch: NVIDIA's first answers to these queries cost 15-20 us in all (H100).
    warm_launch_limits(device);
  }
  d.retained = true;
  out = h;
  return cudaSuccess;
}

int current_device() noexcept {
  core::Context* ctx = nullptr;
  if (core::current_context(ctx) == CUDA_SUCCESS && ctx) return ctx->device;
  return t_state.device;
}

cudaError_t detail::enter_slow() noexcept {
  if (cudaError_t e = ensure_init()) return e;
  const std::uint32_t epoch = g_epoch.load(std::memory_order_relaxed);
  CUcontext cur = core::current_context_handle();
  if (cur && !core::context_of(cur)) {
    // The primary context this thread had was reset (cudaDeviceReset on any thread):
    // bind the new one, as NVIDIA's runtime re-creates it on next use.
    core::set_current_context(nullptr);
    cur = nullptr;
  }
  if (!cur) {
    CUcontext h = nullptr;
    if (cudaError_t e = primary_context(t_state.device, h)) return e;
    core::set_current_context(h);
  }
  if (cudaError_t s = sticky_error(current_device())) return s;
  t_state.epoch = epoch;
  return cudaSuccess;
}

// Called by cudaDeviceReset after the primary context of `device` was destroyed.
void after_reset(int device) noexcept {
  RtDevice& d = rt_devices()[static_cast<std::size_t>(device)];
  {
    std::lock_guard lock(d.mutex);
    if (d.retained) (void)cudamux::impl::cuDevicePrimaryCtxRelease_v2(device);
    d.retained = false;
  }
  clear_sticky(device);
  forget_symbols(device);
  detail::g_epoch.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace cudamux::rt

// --- errors and versions ---
namespace cudamux::rt::impl {

cudaError_t cudaGetLastError() {
  const cudaError_t e = detail::t_state.last_error;
  detail::t_state.last_error = cudaSuccess;
  // A sticky error outlives the reset of the per-thread error: it is the state of the context.
  if (api::initialized()) {
    if (cudaError_t s = sticky_error(current_device())) return s;
  }
  return e;
}

cudaError_t cudaPeekAtLastError() {
  if (api::initialized()) {
    if (cudaError_t s = sticky_error(current_device())) return s;
  }
  return detail::t_state.last_error;
}

const char* cudaGetErrorName(cudaError_t error) {
  const char* n = error_name(error);
  if (!n) n = invented_text(error, true);
  return n ? n : "cudaErrorUnknown";
}

const char* cudaGetErrorString(cudaError_t error) {
  for (const ErrorText& t : kRuntimeOnlyTexts)
    if (t.code == error) return t.text;
  if (error_name(error)) {
    // Same value in both APIs: the driver's description of the same condition.
    const char* text = nullptr;
    if (cudamux::impl::cuGetErrorString(static_cast<CUresult>(error), &text) == CUDA_SUCCESS &&
        text)
      return text;
  }
  if (const char* text = invented_text(error, false)) return text;
  return "unrecognized error code";
}

cudaError_t cudaRuntimeGetVersion(int* runtimeVersion) {
  if (!runtimeVersion)
    return reject(cudaErrorInvalidValue, "cudaRuntimeGetVersion", "null out-pointer");
  *runtimeVersion = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int* driverVersion) {
  if (!driverVersion)
    return reject(cudaErrorInvalidValue, "cudaDriverGetVersion", "null out-pointer");
  return map(cudamux::impl::cuDriverGetVersion(driverVersion));
}

}  // namespace cudamux::rt::impl
