// Internal state of the core: devices, contexts, streams, events, allocations.
// Every CUDA rule the driver API promises is implemented here once, on top of
// the backend interface (cudamux/backend.hpp).
#pragma once

#include <cuda.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include "cudamux/backend.hpp"
#include "handles.hpp"

namespace spdlog {
class logger;
}

namespace cudamux::core {

struct Context;
struct Stream;
struct Event;
struct Module;         // issue #3
struct Function;       // issue #3
struct Library;        // issue #3
struct Kernel;         // issue #3
struct StreamCapture;  // issue 16 (graph.hpp)
struct EventCapture;   // issue 16 (capture.cpp)
struct MemPool;        // stream-ordered memory pools (mempool.cpp)

enum class StreamKind : std::uint8_t { legacy, per_thread, user };

// Every submission reads the first fields (the context, queue, capture state, kind and
// flags): they come first, in one cache line (issue 14: a launch's cost is mostly the lines it
// misses after NVIDIA's driver ran).
struct Stream {
  Context* ctx = nullptr;
  std::unique_ptr<backend::Queue> queue;
  // issue 16: set while the stream takes part in a stream capture (capture.cpp); every
  // submission path checks it and adds a graph node instead of running the work.
  std::atomic<StreamCapture*> capture{nullptr};
  CUstream handle = nullptr;  // our encoded handle (legacy/per-thread ones too)
  StreamKind kind = StreamKind::user;
  unsigned flags = 0;
  int priority = 0;
  unsigned long long id = 0;
  // cuStreamSetAttribute's record (priority lives above), guarded by Context::state_mutex.
  struct Attributes {
    CUaccessPolicyWindow access_policy_window{};
    // NVIDIA's driver 580 reports -1 ("never set") until a policy is set.
    CUsynchronizationPolicy synchronization_policy = static_cast<CUsynchronizationPolicy>(-1);
    CUlaunchMemSyncDomainMap mem_sync_domain_map{0, 1};
    CUlaunchMemSyncDomain mem_sync_domain = CU_LAUNCH_MEM_SYNC_DOMAIN_DEFAULT;
    unsigned nvlink_util_centric_scheduling = 0;
  } attributes;
  // Marker used to order this stream against the legacy default stream.
  std::unique_ptr<backend::Event> marker;
  // Legacy-stream ordering state, guarded by Context::order_mutex.
  bool has_unsynced_work = false;  // work the legacy stream has not waited for yet
  std::uint64_t legacy_seen = 0;   // legacy submissions this stream already waited for

  [[nodiscard]] bool blocking() const noexcept {
    return kind != StreamKind::legacy && !(flags & CU_STREAM_NON_BLOCKING);
  }
};

struct Event {
  Context* ctx = nullptr;
  CUevent handle = nullptr;
  unsigned flags = 0;
  std::atomic<bool> recorded{false};
  std::unique_ptr<backend::Event> impl;
  // issue 16: the capture this event was last recorded in, and the nodes it stands for
  // (guarded by graph_mutex(); null when last recorded outside a capture).
  std::shared_ptr<EventCapture> captured;
  std::atomic<bool> in_capture{false};  // captured != null, readable without the lock
};

inline constexpr std::size_t kLimitCount = 0x10;  // > every CUlimit value of 13.0

// The device's limits every launch checks (launch.cpp; the others stay with the device).
struct LaunchLimits {
  int block[3] = {0, 0, 0};
  int grid[3] = {0, 0, 0};
  int threads_per_block = 0;
  int regs_per_block = 0;
};

// What every launch reads comes first, in one cache line (see Stream).
struct alignas(64) Context {
  CUcontext handle = nullptr;
  int device = 0;
  // issue #3: set when a query/synchronize reports an unrecoverable kernel error; from then on
  // every call that uses this context returns it (CUDA's rule).
  std::atomic<CUresult> sticky{CUDA_SUCCESS};
  std::unique_ptr<Stream> legacy;
  LaunchLimits launch_limits;    // the device's, copied when the context is made
  bool launch_blocking = false;  // Core::launch_blocking() when made
  bool primary = false;
  unsigned flags = 0;
  unsigned long long id = 0;
  std::unique_ptr<backend::DeviceContext> impl;

  std::mutex state_mutex;  // limits, cache config
  std::array<std::size_t, kLimitCount> limits{};
  CUfunc_cache cache_config = CU_FUNC_CACHE_PREFER_NONE;

  // Serialises submissions that must be ordered against the legacy stream, and
  // guards the stream list.
  std::mutex order_mutex;
  std::vector<Stream*> streams;        // user + per-thread streams, owned via the handle table
  std::uint64_t legacy_submitted = 0;  // submissions to the legacy stream
  std::uint64_t legacy_marker_at = 0;  // legacy_submitted when its marker was last recorded
  // Streams and events destroyed while their work was pending: cuStreamDestroy and
  // cuEventDestroy return at once (CUDA's rule) and the objects are freed once idle, at
  // the latest with the context. Guarded by order_mutex.
  std::vector<std::unique_ptr<Stream>> retired_streams;
  std::vector<std::unique_ptr<Event>> retired_events;
  // issue 16: blocking streams of this context that are capturing; while any is, work on the
  // legacy stream is an illegal implicit dependency (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT).
  std::atomic<int> blocking_captures{0};
  // cuCtxRecordEvent (issue 17): a queue of no stream that waits for every stream's work so
  // far and records the event; made on first use, guarded by order_mutex.
  std::unique_ptr<backend::Queue> gather_queue;

  // --- issue #3 (module.cpp, launch.cpp) ---
  // Loaded modules (owned via Core::modules), unloaded with the context. Guarded by the
  // module registry lock (module.cpp): loading and unloading are rare, launches never take it.
  std::vector<Module*> modules;

  // --- issue 14 (export_tables.cpp) ---
  // Context-local storage of NVIDIA's static runtime (its per-context state), with the
  // destructor it gave, called when the context is destroyed or reset. Guarded by state_mutex.
  struct LocalStorage {
    void* key = nullptr;
    void* value = nullptr;
    void (*destructor)(CUcontext, void*, void*) = nullptr;
  };
  std::vector<LocalStorage> local_storage;
  // The same keys and values for readers without the lock (NVIDIA's static runtime reads its
  // state on every launch): an immutable copy published on each change. Replaced copies stay
  // until the context goes, since a reader may still hold one; past kMaxLocalStorageViews
  // changes nothing is published and reads take state_mutex (the view stays null).
  struct LocalStorageView {
    std::vector<std::pair<void*, void*>> entries;
  };
  static constexpr std::size_t kMaxLocalStorageViews = 64;
  std::atomic<const LocalStorageView*> local_storage_view{nullptr};
  std::vector<std::unique_ptr<const LocalStorageView>> local_storage_views;  // state_mutex

  // --- issue 17 (peer.cpp) ---
  // Contexts whose memory this one may reach (cuCtxEnablePeerAccess), by handle and id: a
  // primary context's handle outlives a reset, its id does not. Guarded by state_mutex.
  std::vector<std::pair<CUcontext, unsigned long long>> peers;
};

// Runs and forgets the context-local storage destructors of `ctx` (export_tables.cpp); called
// before a context is destroyed or reset, without core locks held, since they call back in.
void release_local_storage(CUcontext ctx) noexcept;
// Drops the record of an IPC mapping of `ctx` (ipc.cpp), unmapped with its context.
void forget_ipc_mapping(Context& ctx, std::uintptr_t base) noexcept;

enum class AllocKind : std::uint8_t { device, host_alloc, host_registered, managed };

struct Allocation {
  std::uintptr_t base = 0;
  std::size_t size = 0;
  AllocKind kind = AllocKind::device;
  Context* ctx = nullptr;
  CUcontext ctx_handle = nullptr;
  int device = 0;
  unsigned flags = 0;
  unsigned long long buffer_id = 0;
  // A mapping of virtual memory management (vmm.cpp): device memory of no context, freed only
  // through cuMemUnmap (cuMemFree refuses it).
  bool virtual_mapping = false;
  // Another process's allocation opened with cuIpcOpenMemHandle (ipc.cpp): device memory of
  // `ctx`, unmapped by cuIpcCloseMemHandle (cuMemFree refuses it) or with its context.
  bool ipc_mapping = false;
  // A block of a pool of the backend's own driver (mempool.cpp, issue 16): the pool, which the
  // driver frees it back to.
  MemPool* native_pool = nullptr;
};

struct PrimaryContext {
  std::mutex mutex;
  unsigned flags = 0;
  int retain_count = 0;
  // Reserved for the device on first use: live while the context exists (retained, or looked up
  // by NVIDIA's runtime through CUDART_INTERFACE), dead after a reset or the last release
  // until the next retain revives it. Never reused for another object.
  CUcontext handle = nullptr;
};

struct DeviceState {
  backend::DeviceProperties props;
  PrimaryContext primary;
  int backend_ordinal = 0;  // issue 8: CUDA_VISIBLE_DEVICES / CUDA_DEVICE_ORDER may renumber
};

class Core {
 public:
  static Core& get() noexcept;

  CUresult initialize(unsigned flags);  // cuInit
  // The configured backend without cuInit, for NVRTC: reads the config, sets up logging and
  // loads the plugin once (thread-safe), sharing the instance cuInit uses. nullptr when
  // loading failed (the reason is logged once).
  backend::Backend* backend_for_compilation();
  [[nodiscard]] int driver_version() const noexcept { return driver_version_; }

  backend::Backend& backend() noexcept { return *backend_; }
  spdlog::logger& log() noexcept { return *logger_; }
  [[nodiscard]] int device_count() const noexcept { return static_cast<int>(devices_.size()); }
  DeviceState& device(int ordinal) noexcept { return *devices_[static_cast<std::size_t>(ordinal)]; }
  // issue 8: the program's (CUDA) ordinals are not the backend's once CUDA_VISIBLE_DEVICES or
  // CUDA_DEVICE_ORDER applies. Every ordinal handed to the backend goes through this.
  // Negative values (host memory in CopyDesc) pass through.
  [[nodiscard]] int backend_ordinal(int ordinal) const noexcept {
    return ordinal < 0 ? ordinal : devices_[static_cast<std::size_t>(ordinal)]->backend_ordinal;
  }
  // issue 8: CUDA_LAUNCH_BLOCKING=1 and CUDA_MODULE_LOADING, read at cuInit.
  [[nodiscard]] bool launch_blocking() const noexcept { return launch_blocking_; }
  [[nodiscard]] CUmoduleLoadingMode module_loading() const noexcept { return module_loading_; }
  [[nodiscard]] bool valid_device(CUdevice dev) const noexcept {
    return dev >= 0 && dev < static_cast<int>(devices_.size());
  }

  // Maps a backend status to what the program sees (the central enum policy).
  CUresult map(backend::Status status, const char* what) noexcept;

  // Each kind has its own handle tag (never 0, 1, 2: null / CU_STREAM_LEGACY / _PER_THREAD).
  HandleTable<Context> contexts{0xc1};
  HandleTable<Stream> streams{0xc2};
  HandleTable<Event> events{0xc3};
  // issue #3: modules, functions, libraries, kernels (module.cpp)
  HandleTable<Module> modules{0xc4};
  HandleTable<Function> functions{0xc5};
  HandleTable<Library> libraries{0xc6};
  HandleTable<Kernel> kernels{0xc7};
  HandleTable<MemPool> mempools{0xc8};  // mempool.cpp

  std::atomic<unsigned long long> next_context_id{1};
  std::atomic<unsigned long long> next_stream_id{1};
  std::atomic<unsigned long long> next_buffer_id{1};

  // Allocation registry (device, pinned, registered, managed), keyed by base.
  std::shared_mutex alloc_mutex;
  std::map<std::uintptr_t, Allocation> allocations;
  // Containing allocation of [ptr, ptr+bytes), if any. Caller holds alloc_mutex.
  const Allocation* find_allocation(std::uintptr_t ptr, std::size_t bytes = 1) const noexcept;
  // The allocation holding ptr when [ptr, ptr+bytes) lies inside it or, from a mapping of
  // virtual memory management, runs on through mappings that follow it without a gap: a
  // reserved range is one buffer to copies and memsets whatever allocations back it (CUDA's
  // VMM; NVIDIA's vectorAddMMAP stripes a buffer over devices so). Caller holds alloc_mutex.
  const Allocation* find_span(std::uintptr_t ptr, std::size_t bytes) const noexcept;

  // Held shared while another context's queues are waited on (quiesce_all_contexts), and
  // exclusively while a context is destroyed, so a context is never freed mid-wait.
  std::shared_mutex context_lifetime_mutex;

 private:
  Core() = default;
  CUresult do_initialize();
  CUresult load_backend();  // config + logging + plugin, once (see backend_for_compilation)
  CUresult do_load_backend();
  std::mutex backend_mutex_;
  bool backend_attempted_ = false;
  CUresult backend_result_ = CUDA_ERROR_NOT_INITIALIZED;

  std::mutex init_mutex_;
  bool init_attempted_ = false;
  CUresult init_result_ = CUDA_ERROR_NOT_INITIALIZED;
  int driver_version_ = CUDA_VERSION;
  backend::Backend* backend_ = nullptr;
  std::shared_ptr<spdlog::logger> logger_;
  std::vector<std::unique_ptr<DeviceState>> devices_;
  // issue 8 (cuda_env.hpp): CUDA's environment variables and what cudamux-info reports.
  bool launch_blocking_ = false;
  CUmoduleLoadingMode module_loading_ = CU_MODULE_LAZY_LOADING;
  std::string backend_name_, backend_file_, backend_reason_;
  std::vector<std::string> selection_notes_;
  friend struct Diagnostics;
};

// --- helpers shared by the API implementation files ---

inline Context* context_of(CUcontext h) noexcept {
  return Core::get().contexts.find(reinterpret_cast<std::uintptr_t>(h));
}
inline Stream* stream_of(CUstream h) noexcept {
  return Core::get().streams.find(reinterpret_cast<std::uintptr_t>(h));
}
inline Event* event_of(CUevent h) noexcept {
  return Core::get().events.find(reinterpret_cast<std::uintptr_t>(h));
}

// The calling thread's current context; CUDA_ERROR_INVALID_CONTEXT when none,
// CUDA_ERROR_CONTEXT_IS_DESTROYED when it was destroyed under us.
CUresult current_context(Context*& out) noexcept;
CUcontext current_context_handle() noexcept;
void push_context(CUcontext h);
CUcontext pop_context() noexcept;
void set_current_context(CUcontext h) noexcept;
void forget_context_on_this_thread(CUcontext h) noexcept;

// Resolves a stream argument (null, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD or a
// handle) in the current context. `per_thread_default`: the call was a _ptsz/_ptds
// variant, so the null stream means the per-thread stream.
CUresult resolve_stream(CUstream h, bool per_thread_default, Stream*& out) noexcept;

// Submits one operation on `s`, first applying the legacy-default-stream rules.
template <class Op>
backend::Status submit(Stream& s, Op&& op);

// Creates a stream object in `ctx` (not registered as a handle by itself).
CUresult make_stream(Context& ctx, StreamKind kind, unsigned flags, int priority,
                     std::unique_ptr<Stream>& out);
// Creates a context (not pushed) / destroys one by handle.
// `revive`: a primary context's kept handle (see HandleTable::revive) to give the new context.
CUresult create_context(int device, unsigned flags, bool primary, CUcontext& out,
                        CUcontext revive = nullptr);
// The device's primary context, created if it does not exist (under primary.mutex); its handle
// is the device's for the life of the process, across resets and releases.
CUresult primary_context_locked(PrimaryContext& primary, int device);
// CUDART_INTERFACE's primary-context entry (issue 14): the handle, without retaining.
CUresult primary_context_peek(CUcontext* out, CUdevice dev);
// `pop`: also remove it from the calling thread's context stack (cuCtxDestroy does,
// the primary-context release and reset do not).
// keep_handle: a primary context, whose handle stays reserved for the next one.
CUresult destroy_context(CUcontext handle, bool pop = true, bool keep_handle = false);
// Destroys a context and everything in it (streams, events, allocations).
void destroy_context_contents(Context& ctx);
// Waits for the queued work of every context (issue 9). Memory is released only after
// this: with unified addressing any context's stream may use any allocation, so waiting
// for the owner's queues alone let a copy queued in another context write to freed
// memory. Takes context_lifetime_mutex shared unless `lifetime_held`.
void quiesce_all_contexts(bool lifetime_held = false);

// Logs a rejected call at debug level with its reason; returns `result`. Cold: the compiler
// moves every path that ends here out of the hot code (issue 14: a launch's validation then
// costs fewer instruction-cache lines after NVIDIA's driver ran).
[[gnu::cold]] CUresult reject(CUresult result, const char* function, const char* why) noexcept;

// --- issue #3: modules, functions, libraries (module.cpp) and sticky errors ---

// The fields a launch reads come first, in one cache line (see Stream).
struct alignas(64) Function {
  Module* module = nullptr;
  Context* ctx = nullptr;             // module->ctx, without the second object
  backend::Function* impl = nullptr;  // owned by module->impl
  // What every launch checks that cannot change once the function is loaded (launch.cpp):
  // read from the backend on the first launch (each is a virtual call, a driver call on a
  // cache miss of the cuda backend), then kept. Written before launch_ready is set.
  std::atomic<bool> launch_ready{false};
  std::atomic<int> launch_max_threads{0};         // CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK
  std::atomic<int> launch_regs{0};                // CU_FUNC_ATTRIBUTE_NUM_REGS
  std::atomic<std::size_t> launch_args_bytes{0};  // extent of the packed parameters
  // impl->params(), which the backend never changes once the function exists.
  std::atomic<const backend::ParamInfo*> launch_params{nullptr};
  std::atomic<std::size_t> launch_param_count{0};
  CUfunction handle = nullptr;
  std::string name;  // NUL-terminated copy for cuFuncGetName
  // cuFuncSetAttribute / cuFuncSetCacheConfig state (the backend keeps none).
  std::atomic<int> max_dynamic_shared{-1};  // -1: not set (the backend's value applies)
  std::atomic<int> preferred_carveout{-1};
  std::atomic<int> non_portable_cluster{0};
  std::atomic<int> cluster_scheduling{0};
  std::atomic<CUfunc_cache> cache_config{CU_FUNC_CACHE_PREFER_NONE};
  std::atomic<CUsharedconfig> shared_config{CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE};
  // The legacy launch API's state (cuFuncSetBlockShape, cuFuncSetSharedSize, cuParamSet*;
  // legacy_launch.cpp), per function as in NVIDIA's driver; guarded by legacy_mutex.
  std::mutex legacy_mutex;
  int legacy_block[3] = {0, 0, 0};  // 0: never set
  unsigned legacy_shared = 0;
  std::vector<std::byte> legacy_params;  // the cuParamSet* buffer
  std::size_t legacy_param_size = 0;     // cuParamSetSize
};

struct Module {
  Context* ctx = nullptr;
  CUmodule handle = nullptr;
  Library* library = nullptr;  // set when loaded on behalf of a CUlibrary
  std::unique_ptr<backend::Module> impl;
  // Handles handed out, by name (one CUfunction per name, as CUDA). Registry lock.
  std::map<std::string, Function*, std::less<>> functions;
  // Globals entered in the allocation registry (so copies and pointer queries accept them),
  // removed on unload. Registry lock.
  std::vector<std::uintptr_t> registered_globals;
};

struct Kernel {
  Library* library = nullptr;
  CUkernel handle = nullptr;
  std::string name;
  // cuKernelSetAttribute values, applied to the kernel's function in every context.
  std::atomic<int> max_dynamic_shared{-1};
  std::atomic<int> preferred_carveout{-1};
  // The CUfunction handle its last launch resolved to (function_for_launch): a launch in the
  // same context takes it after one handle-table check instead of the registry lock and two
  // map lookups (a registered kernel's <<<>>> launches by CUkernel, issue 14). A stale handle
  // fails the table's generation check, so unloads need not clear it.
  std::atomic<std::uintptr_t> launch_function{0};
};

struct Library {
  CUlibrary handle = nullptr;
  std::vector<char> image;          // our copy when its extent is known
  const void* image_ptr = nullptr;  // what the module loads read: image.data() or the caller's
  // Guarded by the module registry lock (module.cpp):
  std::map<Context*, Module*> modules;  // per-context, loaded lazily
  std::map<std::string, Kernel*, std::less<>> kernels;
  std::vector<std::string> kernel_names;  // every kernel, once listed (names_listed)
  bool names_listed = false;
};

// The device's launch limits (launch.cpp), read once per device.
LaunchLimits launch_limits_of(int device);
// Function for a CUfunction handle, or for a CUkernel cast to CUfunction (CUDA allows
// that for launches): the kernel's function in `ctx`, loaded on demand.
CUresult function_for_launch(CUfunction f, Context* ctx, Function*& out) noexcept;
// A device attribute from the backend, or `fallback` when it cannot answer.
int device_attribute_or(int ordinal, CUdevice_attribute attr, int fallback) noexcept;
// Drops the managed-memory hints recorded for an allocation that is freed (managed_hints.cpp).
void forget_managed_hints(unsigned long long buffer_id) noexcept;
// Whether the core's own limit record answers `limit` for ctx's device (context.cpp).
bool limit_supported(const Context& ctx, CUlimit limit);
// A function attribute: the values set through cuFuncSetAttribute first, then the backend,
// then a sensible default derived from the device.
CUresult function_attribute(const Function& f, CUfunction_attribute attr, int& value) noexcept;
// Unloads every module of `ctx` (its functions' handles die with them).
void unload_context_modules(Context& ctx) noexcept;

// Whether `r` leaves the context unusable (CUDA's unrecoverable kernel errors).
constexpr bool is_sticky_error(CUresult r) noexcept {
  switch (r) {
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
      return true;
    default:
      return false;
  }
}
// Records `r` as the context's sticky error when it is one; returns `r`.
CUresult note_sticky(Context& ctx, CUresult r) noexcept;
// The context's sticky error (CUDA_SUCCESS while it is usable).
inline CUresult sticky_error(const Context& ctx) noexcept {
  return ctx.sticky.load(std::memory_order_acquire);
}

}  // namespace cudamux::core

#include "submit.inl"
