// cuGetErrorName / cuGetErrorString: CUDA's names, descriptions in our own words.
#include <algorithm>
#include <array>
#include <iterator>
#include <map>
#include <mutex>
#include <string>

#include "core.hpp"
#include "cudamux/driver_impl.hpp"
#include "cudamux/enum_policy.hpp"

namespace cudamux::impl {
namespace {

struct ErrorText {
  CUresult code;
  const char* name;
  const char* text;
};

#define E(CODE, TEXT) \
  ErrorText { CODE, #CODE, TEXT }
// Sorted by value (checked by a test) so lookups are a binary search.
constexpr std::array kErrors{
    E(CUDA_SUCCESS, "no error"),
    E(CUDA_ERROR_INVALID_VALUE, "an argument is outside the range of accepted values"),
    E(CUDA_ERROR_OUT_OF_MEMORY, "the allocation could not be satisfied: out of memory"),
    E(CUDA_ERROR_NOT_INITIALIZED,
      "the driver has not been initialised with cuInit, or cuInit failed"),
    E(CUDA_ERROR_DEINITIALIZED, "the driver is shutting down"),
    E(CUDA_ERROR_PROFILER_DISABLED, "the profiler is disabled for this run"),
    E(CUDA_ERROR_PROFILER_NOT_INITIALIZED, "the profiler was not initialised (deprecated)"),
    E(CUDA_ERROR_PROFILER_ALREADY_STARTED, "the profiler is already started (deprecated)"),
    E(CUDA_ERROR_PROFILER_ALREADY_STOPPED, "the profiler is already stopped (deprecated)"),
    E(CUDA_ERROR_STUB_LIBRARY, "a stub driver library was loaded instead of a real one"),
    E(CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER,
      "this call needs a newer driver than the one installed"),
    E(CUDA_ERROR_DEVICE_UNAVAILABLE, "the device cannot be used right now (busy or exclusive)"),
    E(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device was found"),
    E(CUDA_ERROR_INVALID_DEVICE, "the device ordinal does not name a device"),
    E(CUDA_ERROR_DEVICE_NOT_LICENSED, "the device lacks a license for this operation"),
    E(CUDA_ERROR_INVALID_IMAGE, "the module image is not valid for this device"),
    E(CUDA_ERROR_INVALID_CONTEXT,
      "no valid context: none is current, or the handle is not a context"),
    E(CUDA_ERROR_CONTEXT_ALREADY_CURRENT, "the context is already current (deprecated)"),
    E(CUDA_ERROR_MAP_FAILED, "a map or register operation failed"),
    E(CUDA_ERROR_UNMAP_FAILED, "an unmap or unregister operation failed"),
    E(CUDA_ERROR_ARRAY_IS_MAPPED, "the array is mapped and cannot be destroyed"),
    E(CUDA_ERROR_ALREADY_MAPPED, "the resource is already mapped"),
    E(CUDA_ERROR_NO_BINARY_FOR_GPU, "the module has no code for this device"),
    E(CUDA_ERROR_ALREADY_ACQUIRED, "the resource has already been acquired"),
    E(CUDA_ERROR_NOT_MAPPED, "the resource is not mapped"),
    E(CUDA_ERROR_NOT_MAPPED_AS_ARRAY, "the mapped resource is not accessible as an array"),
    E(CUDA_ERROR_NOT_MAPPED_AS_POINTER, "the mapped resource is not accessible as a pointer"),
    E(CUDA_ERROR_ECC_UNCORRECTABLE, "an uncorrectable memory (ECC) error was detected"),
    E(CUDA_ERROR_UNSUPPORTED_LIMIT, "the limit is not supported by this device"),
    E(CUDA_ERROR_CONTEXT_ALREADY_IN_USE, "the context is already in use by another thread"),
    E(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, "peer access between these devices is not supported"),
    E(CUDA_ERROR_INVALID_PTX, "the PTX could not be compiled"),
    E(CUDA_ERROR_INVALID_GRAPHICS_CONTEXT, "the graphics context is not valid"),
    E(CUDA_ERROR_NVLINK_UNCORRECTABLE, "an uncorrectable NVLink error was detected"),
    E(CUDA_ERROR_JIT_COMPILER_NOT_FOUND, "the JIT compiler library is missing"),
    E(CUDA_ERROR_UNSUPPORTED_PTX_VERSION,
      "the PTX was produced by a newer toolchain than the JIT understands"),
    E(CUDA_ERROR_JIT_COMPILATION_DISABLED, "JIT compilation is disabled"),
    E(CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY, "the execution affinity type is not supported"),
    E(CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC,
      "the code uses device-side synchronisation, which is unsupported here"),
    E(CUDA_ERROR_CONTAINED, "an error was contained by the device; the context is unusable"),
    E(CUDA_ERROR_INVALID_SOURCE, "the kernel source is invalid"),
    E(CUDA_ERROR_FILE_NOT_FOUND, "the file was not found"),
    E(CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND,
      "a symbol of a shared object could not be resolved"),
    E(CUDA_ERROR_SHARED_OBJECT_INIT_FAILED,
      "a shared object (for cudamux: a backend plugin) failed to initialise"),
    E(CUDA_ERROR_OPERATING_SYSTEM, "an operating system call failed"),
    E(CUDA_ERROR_INVALID_HANDLE,
      "the handle is not valid (wrong type, destroyed, or never created)"),
    E(CUDA_ERROR_ILLEGAL_STATE, "the resource is not in a state that allows this operation"),
    E(CUDA_ERROR_LOSSY_QUERY, "the query cannot be answered without losing information"),
    // NVIDIA's own words, which programs match: CuPy's tests expect "named symbol not found"
    // from cuModuleGetFunction of a name the module lacks.
    E(CUDA_ERROR_NOT_FOUND, "named symbol not found"),
    E(CUDA_ERROR_NOT_READY, "the asynchronous work has not completed yet"),
    E(CUDA_ERROR_ILLEGAL_ADDRESS,
      "a kernel accessed an illegal memory address; the context is unusable"),
    E(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "the launch needs more resources than the device has"),
    E(CUDA_ERROR_LAUNCH_TIMEOUT, "the kernel ran longer than the watchdog allows"),
    E(CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING, "the launch uses an incompatible texturing mode"),
    E(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, "peer access is already enabled for this context"),
    E(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, "peer access has not been enabled for this context"),
    E(CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE,
      "the primary context is active, so this cannot be changed"),
    E(CUDA_ERROR_CONTEXT_IS_DESTROYED, "the current context has been destroyed"),
    E(CUDA_ERROR_ASSERT, "a device-side assertion failed; the context is unusable"),
    E(CUDA_ERROR_TOO_MANY_PEERS, "too many peer mappings are active"),
    E(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "the host memory range is already registered"),
    E(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "the host memory was not registered"),
    E(CUDA_ERROR_HARDWARE_STACK_ERROR,
      "a device call stack error occurred; the context is unusable"),
    E(CUDA_ERROR_ILLEGAL_INSTRUCTION,
      "a kernel executed an illegal instruction; the context is unusable"),
    E(CUDA_ERROR_MISALIGNED_ADDRESS,
      "a kernel accessed a misaligned address; the context is unusable"),
    E(CUDA_ERROR_INVALID_ADDRESS_SPACE,
      "a kernel used an address in the wrong address space; the context is unusable"),
    E(CUDA_ERROR_INVALID_PC,
      "a kernel jumped to an invalid program counter; the context is unusable"),
    E(CUDA_ERROR_LAUNCH_FAILED, "a kernel failed; the context is unusable"),
    E(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE,
      "the cooperative launch has more blocks than can be resident"),
    E(CUDA_ERROR_TENSOR_MEMORY_LEAK, "a kernel exited without freeing its tensor memory"),
    E(CUDA_ERROR_NOT_PERMITTED, "the operation is not permitted"),
    E(CUDA_ERROR_NOT_SUPPORTED,
      "the operation is not supported (by this device, backend or cudamux yet)"),
    E(CUDA_ERROR_SYSTEM_NOT_READY, "the system is not ready to start CUDA work"),
    E(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, "the driver and kernel-mode driver versions do not match"),
    E(CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE,
      "forward compatibility is not supported on this device"),
    E(CUDA_ERROR_MPS_CONNECTION_FAILED, "the MPS client could not connect to the server"),
    E(CUDA_ERROR_MPS_RPC_FAILURE, "a remote call to the MPS server failed"),
    E(CUDA_ERROR_MPS_SERVER_NOT_READY, "the MPS server is not ready"),
    E(CUDA_ERROR_MPS_MAX_CLIENTS_REACHED, "the MPS server has reached its client limit"),
    E(CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED, "the MPS server has reached its connection limit"),
    E(CUDA_ERROR_MPS_CLIENT_TERMINATED, "the MPS client was terminated by the server"),
    E(CUDA_ERROR_CDP_NOT_SUPPORTED, "dynamic parallelism is not supported here"),
    E(CUDA_ERROR_CDP_VERSION_MISMATCH, "dynamic parallelism versions do not match"),
    E(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "the operation cannot be captured into a graph"),
    E(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
      "the stream capture was invalidated by an earlier error"),
    E(CUDA_ERROR_STREAM_CAPTURE_MERGE, "the operation would merge two separate captures"),
    E(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, "the capture was not started in this stream"),
    E(CUDA_ERROR_STREAM_CAPTURE_UNJOINED, "a forked capture stream was not joined back"),
    E(CUDA_ERROR_STREAM_CAPTURE_ISOLATION, "the dependency would cross a capture boundary"),
    E(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT,
      "the operation would synchronise implicitly with a capturing stream"),
    E(CUDA_ERROR_CAPTURED_EVENT, "the event was recorded in a capture and cannot be used this way"),
    E(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD,
      "the capture must be ended by the thread that began it"),
    E(CUDA_ERROR_TIMEOUT, "the wait timed out"),
    E(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, "the executable graph could not be updated in place"),
    E(CUDA_ERROR_EXTERNAL_DEVICE, "an external device reported an error"),
    E(CUDA_ERROR_INVALID_CLUSTER_SIZE, "the cluster size is not valid"),
    E(CUDA_ERROR_FUNCTION_NOT_LOADED, "the function has not been loaded yet"),
    E(CUDA_ERROR_INVALID_RESOURCE_TYPE, "the resource type is not valid for this operation"),
    E(CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION, "the resource configuration is not valid"),
    E(CUDA_ERROR_KEY_ROTATION, "the operation failed during key rotation"),
    E(CUDA_ERROR_UNKNOWN, "an unknown internal error occurred"),
};
#undef E

static_assert(std::is_sorted(kErrors.begin(), kErrors.end(),
                             [](const ErrorText& a, const ErrorText& b) {
                               return a.code < b.code;
                             }),
              "kErrors must be sorted by value");

const ErrorText* find_error(CUresult code) noexcept {
  const auto it = std::lower_bound(kErrors.begin(), kErrors.end(), code,
                                   [](const ErrorText& e, CUresult c) { return e.code < c; });
  return it != kErrors.end() && it->code == code ? &*it : nullptr;
}

}  // namespace

namespace {
// Invented CUresult values (hallucination policy) keep their strings for the process's
// life, so the pointers handed out stay valid like CUDA's static strings.
const char* invented_text(CUresult error, bool name) {
  static std::mutex mutex;
  static auto* strings = new std::map<std::pair<long long, bool>, std::string>();
  const auto inv = policy::invented("CUresult", error);
  if (!inv) return nullptr;
  std::lock_guard lock(mutex);
  auto [it, inserted] = strings->try_emplace({error, name}, name ? inv->name : inv->description);
  return it->second.c_str();
}
}  // namespace

CUresult cuGetErrorName(CUresult error, const char** pStr) {
  if (!pStr) return CUDA_ERROR_INVALID_VALUE;
  const ErrorText* e = find_error(error);
  if (!e) {
    if (const char* text = invented_text(error, true)) {
      *pStr = text;
      return CUDA_SUCCESS;
    }
    *pStr = nullptr;  // CUDA leaves no name for values it does not define
    return CUDA_ERROR_INVALID_VALUE;
  }
  *pStr = e->name;
  return CUDA_SUCCESS;
}

CUresult cuGetErrorString(CUresult error, const char** pStr) {
  if (!pStr) return CUDA_ERROR_INVALID_VALUE;
  const ErrorText* e = find_error(error);
  if (!e) {
    if (const char* text = invented_text(error, false)) {
      *pStr = text;
      return CUDA_SUCCESS;
    }
    *pStr = nullptr;
    return CUDA_ERROR_INVALID_VALUE;
  }
  *pStr = e->text;
  return CUDA_SUCCESS;
}

}  // namespace cudamux::impl
