// The backend interface: what a plugin (mock, hip, cuda, ...) implements.
//
// The core owns every CUDA semantic (initialisation, contexts, handle validation,
// allocation tracking, stream-ordering rules, error mapping). A backend only does
// the work: discover devices, allocate, copy, run queues, time events.
//
// Rules for implementers:
//  * Every operation returns a Status holding the backend's *native* code; 0 is
//    success for every backend. The core maps native codes through
//    ErrorDomain::to_cuda(); a backend never decides what the program sees.
//  * Values the program passes in arrive as CUDA enum values (the core's lingua
//    franca). A backend that cannot honour one returns ErrorDomain::not_supported().
//  * Objects handed out (DeviceContext, Queue, Event) are destroyed by the core
//    before the backend itself; the plugin is never unloaded while any live.
//  * Host and plugins share one C++ runtime; the ABI version below is bumped on
//    any change to this file and checked when a plugin is loaded.
#pragma once

#include <cuda.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace spdlog {
class logger;
}
namespace toml {
inline namespace v3 {
class table;
}
}  // namespace toml

namespace cudamux::backend {

// Bump on every change of this header's types or virtual functions.
// 3: Function::set_attribute; 4: LaunchDesc::cluster, Backend::launches_clusters (issue 7)
// 5: typed module images (ModuleImage, Backend::image_kinds; issue 14)
// 6: Function::occupancy, DeviceContext::get_limit/set_limit (the device's own answers)
// 7: Queue::set_attribute (stream attributes), DeviceContext::reset_persisting_l2_cache,
//    Backend::virtual_memory (VirtualMemory), Backend::native_host_function,
//    Backend::advise, Queue::prefetch (managed memory hints)
// 8: NativeGraph, Queue::capture_graph / launch_graph (CUDA graphs run by the device; issue 16)
// 9: issue 17: Images (arrays, texture and surface objects) and CopyDesc array ends;
//    Queue::wait_value / write_value (stream memory operations); DeviceContext IPC, peer
//    access and link; Devices::p2p_attribute
// 10: NativeCondScope, DeviceContext::create_cond_scope / create_cond_handle, the scope
//     argument of Queue::capture_graph and Queue::conditional (conditional nodes run by the
//     device)
// 11: NativePools, Backend::native_pools, Queue::allocate_from_pool / free_to_pool
//     (stream-ordered pools of the device's own driver; issue 16); the compression argument of
//     VirtualMemory::create, Devices::p2p_atomic_capabilities
// 12: ModuleImage::name (the name a program gave a cuLink* input)
// 13: LaunchDesc::params / param_count
inline constexpr std::uint32_t kAbiVersion = 13;

// Names of the symbols every plugin exports (extern "C"):
//   std::uint32_t cudamux_backend_abi_version();
//   cudamux::backend::Backend* cudamux_backend_create(const PluginHost&, std::string& error);
// cudamux_backend_create returns nullptr and fills `error` when it cannot start
// (bad config, missing runtime). "No devices" is not an error: return a backend
// whose Devices::count() is 0.
inline constexpr const char* kAbiVersionSymbol = "cudamux_backend_abi_version";
inline constexpr const char* kCreateSymbol = "cudamux_backend_create";

struct Status {
  std::int32_t native = 0;
  [[nodiscard]] constexpr bool ok() const noexcept { return native == 0; }
};
inline constexpr Status kOk{};

// What the core passes to a plugin at creation.
struct PluginHost {
  std::uint32_t abi_version = kAbiVersion;
  std::shared_ptr<spdlog::logger> logger;  // never null
  const toml::table* config = nullptr;  // the plugin's own table ([mock], [hip], ...), may be null
  std::string config_source;            // file the table came from, for error messages
};

// Where a pointer lives; the core knows this from its allocation registry and tells
// the backend so that e.g. HIP can choose hipMemcpyKind.
enum class MemKind : std::uint8_t {
  host_pageable,  // unknown to cudamux: ordinary host memory
  host_pinned,    // cuMemAllocHost / cuMemHostAlloc / cuMemHostRegister
  device,         // cuMemAlloc / cuMemAllocPitch
  managed,        // cuMemAllocManaged (host-visible on the mock)
};

// A strided box copy in bytes; 1D is height = depth = 1, 2D is depth = 1.
struct CopyDesc {
  void* dst = nullptr;
  const void* src = nullptr;
  MemKind dst_kind = MemKind::host_pageable;
  MemKind src_kind = MemKind::host_pageable;
  int dst_device = -1;  // ordinal owning dst (-1 for host memory)
  int src_device = -1;
  std::size_t width_bytes = 0;
  std::size_t height = 1;
  std::size_t depth = 1;
  std::size_t dst_pitch = 0;  // bytes between rows
  std::size_t src_pitch = 0;
  std::size_t dst_slice = 0;  // bytes between 2D slices
  std::size_t src_slice = 0;
  // An end inside a CUDA array (an Images::create_array handle; 0: linear memory): the box
  // starts at byte x_bytes of row y of slice z (z is the layer, or 6 * layer + face, for
  // layered and cubemap arrays), and that end's pointer, pitch and slice are unused. Only
  // for a backend with Backend::images(); the core has checked the box against the array.
  std::uint64_t dst_array = 0;
  std::uint64_t src_array = 0;
  std::size_t dst_x_bytes = 0, dst_y = 0, dst_z = 0;
  std::size_t src_x_bytes = 0, src_y = 0, src_z = 0;
};

// A 2D fill of elements of 1, 2 or 4 bytes (cuMemsetD8/D16/D32 and their 2D forms).
struct FillDesc {
  void* dst = nullptr;
  MemKind dst_kind = MemKind::device;
  std::uint32_t value = 0;      // low elem_size bytes are used
  unsigned elem_size = 1;       // 1, 2 or 4
  std::size_t width_elems = 0;  // elements per row
  std::size_t height = 1;
  std::size_t pitch = 0;  // bytes between rows
};

struct DeviceProperties {
  std::string name;
  std::array<unsigned char, 16> uuid{};
  std::size_t total_memory = 0;
  int cc_major = 0;
  int cc_minor = 0;
  int pci_domain = 0;
  int pci_bus = 0;
  int pci_device = 0;
};

// Translation of the backend's native codes. Central policy (strict/hallucinate)
// lives in the core; this only answers "which CUresult is this, if any".
class ErrorDomain {
 public:
  virtual ~ErrorDomain() = default;
  // nullopt: the native value has no CUDA counterpart.
  [[nodiscard]] virtual std::optional<CUresult> to_cuda(std::int32_t native) const noexcept = 0;
  // Backend's own spelling, e.g. "hipErrorNoBinaryForGpu"; used in logs and invented names.
  [[nodiscard]] virtual std::string_view native_name(std::int32_t native) const noexcept = 0;
  // Native codes for the situations the core must recognise.
  [[nodiscard]] virtual Status not_ready() const noexcept = 0;
  [[nodiscard]] virtual Status not_supported() const noexcept = 0;
  [[nodiscard]] virtual Status out_of_memory() const noexcept = 0;
  [[nodiscard]] virtual Status invalid_value() const noexcept = 0;
};

// --- compilation (NVRTC) ---

// CUDA compile options, parsed and validated by the core (unknown options never
// reach a backend). Backends honour what means something to them.
struct CompileOptions {
  int arch = 0;                 // 90 for compute_90 / sm_90; 0: the backend's default
  bool real_arch = false;       // sm_XX (a CUBIN was asked for) rather than compute_XX
  bool fmad = true;             // --fmad=false: no FMA contraction
  bool device_debug = false;    // -G
  bool line_info = false;       // -lineinfo
  bool default_device = false;  // -default-device: unannotated functions are __device__
  bool relocatable = false;     // -rdc=true / -dc
  std::string std;              // "c++17", "c++20", ...; empty: the default
  std::vector<std::pair<std::string, std::string>> defines;  // -D name[=value] (value may be empty)
  std::vector<std::string> undefines;                        // -U name
  std::vector<std::string> include_paths;                    // -I / --include-path, in order
  std::vector<std::string> pre_includes;                     // --pre-include
  std::vector<std::string>
      extra;  // accepted options with no meaning for any backend so far, verbatim
};

struct CompileRequest {
  std::string_view source;
  std::string_view name;  // the program's file name, for messages ("default_program" if none)
  std::vector<std::pair<std::string, std::string>> headers;  // include name -> contents
  CompileOptions options;
  std::vector<std::string> name_expressions;  // from nvrtcAddNameExpression, in order
};

struct CompileResult {
  bool success = false;
  std::string log;  // compiler messages, in terms of the user's file names and lines
  // The module image handed out as "PTX" / "CUBIN": self-delimiting (cuModuleLoadData
  // gets no size) and accepted by this backend's DeviceContext::load_module.
  std::vector<char> image;
  std::vector<char> cubin;  // empty when the backend has no distinct CUBIN form
  std::vector<std::pair<std::string, std::string>> lowered_names;  // expression -> symbol
};

class Compiler {
 public:
  virtual ~Compiler() = default;
  // Status is for failures of the compiler itself (not found, crashed): a program with
  // errors is a successful call with result.success == false. A request the backend cannot
  // honour answers not_supported() (NVRTC_ERROR_INVALID_OPTION, e.g. an unknown target
  // architecture) or invalid_value() (NVRTC_ERROR_INVALID_INPUT), with a line in result.log.
  virtual Status compile(const CompileRequest& request, CompileResult& result) = 0;
  // Architectures accepted in CompileOptions::arch, ascending (nvrtcGetSupportedArchs).
  [[nodiscard]] virtual std::vector<int> supported_archs() const = 0;
};

// --- modules and launches ---

struct ParamInfo {
  std::size_t offset = 0;  // in the packed argument buffer of a launch
  std::size_t size = 0;
};

enum class OccupancyKind : std::uint8_t {
  active_blocks,             // cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags
  available_dynamic_shared,  // cuOccupancyAvailableDynamicSMemPerBlock
  active_clusters,           // cuOccupancyMaxActiveClusters
  potential_cluster_size,    // cuOccupancyMaxPotentialClusterSize
};

struct OccupancyQuery {
  OccupancyKind kind = OccupancyKind::active_blocks;
  int block_size = 0;          // active_blocks, available_dynamic_shared
  int num_blocks = 0;          // available_dynamic_shared
  std::size_t dyn_shared = 0;  // active_blocks
  unsigned flags = 0;          // active_blocks: CU_OCCUPANCY_*
  // The clusters' launch configuration as the caller gave it, with hStream cleared (the
  // backend's streams are not the caller's handles).
  const CUlaunchConfig* config = nullptr;
};

class Function {
 public:
  virtual ~Function() = default;
  [[nodiscard]] virtual std::string_view name() const noexcept = 0;  // mangled or extern "C" name
  // Every CU_FUNC_ATTRIBUTE_* the backend can answer; not_supported() otherwise.
  virtual Status attribute(CUfunction_attribute attr, int& value) const = 0;
  // Layout of the parameters (cuFuncGetParamInfo); the core packs kernelParams with it.
  // Fixed once the function exists: the core keeps a pointer to the elements (and passes it
  // back in LaunchDesc::params) for as long as the function lives.
  [[nodiscard]] virtual const std::vector<ParamInfo>& params() const noexcept = 0;
  // A cuFuncSetAttribute / cuKernelSetAttribute value, already validated by the core,
  // which records it only when this succeeds. NVIDIA's driver must be told (it refuses
  // launches above 48 KiB of dynamic shared memory otherwise); backends that take the
  // limits from the core's record need nothing, hence the default (issue 7).
  virtual Status set_attribute(CUfunction_attribute attr, int value) {
    (void)attr;
    (void)value;
    return kOk;
  }
  // The occupancy calculator of the device itself, for a backend that has one (NVIDIA's
  // driver): libraries such as cuBLAS choose kernels by these answers, so a model's
  // approximation is not good enough there. Returns false when the backend has none; the
  // core's calculator model answers then. The core has validated the arguments.
  virtual bool occupancy(const OccupancyQuery& query, std::size_t& value, Status& status) const {
    (void)query;
    (void)value;
    (void)status;
    return false;
  }
};

class Module {
 public:
  virtual ~Module() = default;
  // Function by name; nullptr when the module has none of that name. Owned by the module.
  [[nodiscard]] virtual Function* function(std::string_view name) noexcept = 0;
  // A __device__ / __constant__ variable: device address and size; not found -> false.
  [[nodiscard]] virtual bool global(std::string_view name, void*& address,
                                    std::size_t& bytes) noexcept = 0;
  // Every function name, for diagnostics and cuModuleEnumerateFunctions.
  [[nodiscard]] virtual std::vector<std::string_view> function_names() const = 0;
};

// What a module image is. The core tells NVIDIA's formats apart (and opens fat binaries), so a
// backend never guesses: it gets the kind, the bytes and, for NVIDIA's per-architecture
// images, the architecture.
enum class ImageKind : std::uint8_t {
  native,         // the backend's own image: what its Compiler produced (or an AMD code object)
  nvidia_fatbin,  // a whole NVIDIA fat binary container (magic 0xBA55ED50), entries as stored
  cubin,          // an NVIDIA ELF for sm_<arch>
  ptx,            // PTX text for compute_<arch>, NUL-terminated
  // Link inputs only (DeviceContext::link; CU_JIT_INPUT_OBJECT / CU_JIT_INPUT_LIBRARY): a host
  // object or archive carrying device code, as nvcc -dc and nvcc -lib write them.
  host_object,
  host_library,
};
// ImageKind as a bit of Backend::image_kinds().
constexpr unsigned image_kind_bit(ImageKind k) noexcept { return 1u << static_cast<unsigned>(k); }

struct ModuleImage {
  ImageKind kind = ImageKind::native;
  const void* data = nullptr;  // valid during load_module only: keep a copy if needed later
  std::size_t size = 0;        // bytes; 0 when unknown (native images delimit themselves)
  unsigned arch = 0;           // cubin: 75 for sm_75; ptx: 75 for compute_75; else 0
  const char* name = nullptr;  // cuLink* inputs: the program's name for it (linker messages)
};

// A backend's own image, which delimits itself.
inline ModuleImage native_image(const void* data) noexcept {
  return {ImageKind::native, data, 0, 0};
}

struct LaunchDesc {
  Function* function = nullptr;
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  unsigned shared_bytes = 0;   // dynamic shared memory
  const void* args = nullptr;  // packed per Function::params(); valid only during launch()
  std::size_t args_size = 0;
  // function->params(), as the core read it (the backend need not touch its function object
  // again to place the arguments); null with param_count 0 when the core did not set it.
  const ParamInfo* params = nullptr;
  std::size_t param_count = 0;
  bool cooperative = false;
  // Thread block cluster dimensions (cuLaunchKernelEx's CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION),
  // validated by the core: each divides the grid's. Above 1x1x1 only for a backend whose
  // Backend::launches_clusters() is true.
  unsigned cluster[3] = {1, 1, 1};
};

class Devices {
 public:
  virtual ~Devices() = default;
  [[nodiscard]] virtual int count() const noexcept = 0;
  virtual Status properties(int ordinal, DeviceProperties& out) const = 0;
  // Value of any CU_DEVICE_ATTRIBUTE_*; not_supported() for attributes it cannot answer.
  virtual Status attribute(int ordinal, CUdevice_attribute attr, int& value) const = 0;
  // Free and total bytes of device memory on `ordinal`.
  virtual Status memory_info(int ordinal, std::size_t& free_bytes,
                             std::size_t& total_bytes) const = 0;
  [[nodiscard]] virtual bool can_access_peer(int ordinal, int peer) const noexcept = 0;
  // cuDeviceGetP2PAttribute for two distinct valid ordinals. false: the backend has no answer
  // of its own and the core derives one from can_access_peer.
  virtual bool p2p_attribute(int ordinal, int peer, CUdevice_P2PAttribute attr, int& value,
                             Status& status) const {
    (void)ordinal;
    (void)peer;
    (void)attr;
    (void)value;
    (void)status;
    return false;
  }
  // cuDeviceGetP2PAtomicCapabilities for two distinct valid ordinals and checked operations.
  // false: the backend has no answer of its own and the core derives one from p2p_attribute.
  virtual bool p2p_atomic_capabilities(int ordinal, int peer, const CUatomicOperation* operations,
                                       unsigned count, unsigned* capabilities,
                                       Status& status) const {
    (void)ordinal;
    (void)peer;
    (void)operations;
    (void)count;
    (void)capabilities;
    (void)status;
    return false;
  }
};

// An executable graph the device runs itself (NVIDIA's CUgraphExec), made by
// Queue::capture_graph and launched with Queue::launch_graph.
class NativeGraph {
 public:
  virtual ~NativeGraph() = default;
};

// The device's graph that owns conditional handles its device code sets (NVIDIA's kernels call
// NVIDIA's cudaGraphSetConditional, which only knows NVIDIA's handles). The core keeps one per
// graph that creates handles; Queue::capture_graph records into it so that the conditional
// nodes and their handles belong to the same device graph.
class NativeCondScope {
 public:
  virtual ~NativeCondScope() = default;
};

class Event {
 public:
  virtual ~Event() = default;
  virtual Status
  query() = 0;  // ok when the last record completed (or never recorded), else not_ready
  virtual Status synchronize() = 0;  // blocks until the last record completed
  // Milliseconds from `start`'s last completed record to this event's; both must be
  // completed and created with timing enabled (the core checks flags and states).
  virtual Status elapsed_since(const Event& start, float& ms) const = 0;
};

// A stream: operations run in submission order, asynchronously to the host.
class Queue {
 public:
  virtual ~Queue() = default;
  virtual Status copy(const CopyDesc& desc) = 0;
  // Submit and wait for completion; backends may run it on the calling thread
  // when the queue is idle (the synchronous cuMemcpy* family uses this).
  virtual Status copy_sync(const CopyDesc& desc) = 0;
  virtual Status fill(const FillDesc& desc) = 0;
  // Runs fn(user) on a backend thread when preceding work is done; later work waits for it.
  virtual Status host_function(void (*fn)(void*), void* user) = 0;
  virtual Status record(Event& event) = 0;
  // Later work waits for the event's record that was last submitted before this call.
  virtual Status wait(Event& event) = 0;
  virtual Status query() = 0;  // ok when idle, else not_ready
  virtual Status synchronize() = 0;
  // Enqueues a kernel launch; copies desc.args before returning. Errors found while the
  // kernel runs (assert, illegal address) surface from later query/synchronize calls.
  virtual Status launch(const LaunchDesc& desc) = 0;
  // A stream attribute (cuStreamSetAttribute; the ids valid for streams), validated by the
  // core, which records it for cuStreamGetAttribute only when this succeeds. A device that
  // acts on them is told (NVIDIA's L2 access policy window, synchronisation policy); backends
  // with nothing to act on keep the default.
  virtual Status set_attribute(CUlaunchAttributeID id, const CUlaunchAttributeValue& value) {
    (void)id;
    (void)value;
    return kOk;
  }
  // cuMemPrefetchAsync of managed memory (validated by the core, which records the location):
  // moves its pages to `to` (a device in the backend's numbering, or the host) in stream
  // order. Memory that lives in one place for every device has nothing to move.
  virtual Status prefetch(void* ptr, std::size_t bytes, CUmemLocation to) {
    (void)ptr;
    (void)bytes;
    (void)to;
    return kOk;
  }  // CUDA graphs (issue 16). A backend whose device runs graphs natively records what `replay`
  // submits to the queue it is handed (one operation after another, in a topological order of
  // the graph; event records and waits there have external semantics: they stand for the
  // graph's event nodes) into `out`, which launch_graph then runs on this queue. Leaving `out`
  // empty (the default) means the core replays the graph's operations itself at each launch.
  // `scope`, when not null, is the device graph to record into (it owns the handles of the
  // graph's conditional nodes; see Queue::conditional).
  virtual Status capture_graph(const std::function<Status(Queue&)>& replay,
                               std::unique_ptr<NativeGraph>& out, NativeCondScope* scope) {
    (void)replay;
    (void)scope;
    out.reset();
    return kOk;
  }
  // Only on the queue capture_graph hands to `replay`: a conditional node of the device's own,
  // after everything submitted so far, with the handle from DeviceContext::create_cond_handle;
  // bodies[i] submits body i onto the queue it is given. false: the backend has none (the
  // core's replay runs conditional nodes itself); else `status` holds the outcome.
  virtual bool conditional(std::uint64_t handle, CUgraphConditionalNodeType type,
                           const std::vector<std::function<Status(Queue&)>>& bodies,
                           Status& status) {
    (void)handle;
    (void)type;
    (void)bodies;
    (void)status;
    return false;
  }
  virtual Status launch_graph(NativeGraph& graph) {
    (void)graph;
    return kOk;  // never called: capture_graph made no graph
  }
  // Stream memory operations (cuStreamWaitValue32/64, cuStreamWriteValue32/64 and
  // cuStreamBatchMemOp; issue 17). `addr` is device-visible memory the core has validated and
  // `bytes` is 4 or 8. wait_value: later work on this queue waits until the value at addr
  // satisfies the CU_STREAM_WAIT_VALUE_* condition in `flags` against `value` (the host,
  // another queue or a kernel may write it). write_value: stores `value` in stream order
  // (flags: CU_STREAM_WRITE_VALUE_*). false: the backend has none (the core answers
  // CUDA_ERROR_NOT_SUPPORTED); else `status` holds the outcome.
  virtual bool wait_value(void* addr, unsigned bytes, std::uint64_t value, unsigned flags,
                          Status& status) {
    (void)addr;
    (void)bytes;
    (void)value;
    (void)flags;
    (void)status;
    return false;
  }
  virtual bool write_value(void* addr, unsigned bytes, std::uint64_t value, unsigned flags,
                           Status& status) {
    (void)addr;
    (void)bytes;
    (void)value;
    (void)flags;
    (void)status;
    return false;
  }
  // Stream-ordered allocation from a pool of NativePools (the handle it gave), and the free of
  // such memory (also of a pointer NativePools::import_pointer mapped), in this queue's order.
  // Called only on backends with native_pools(); false: the backend has none.
  virtual bool allocate_from_pool(std::uint64_t pool, std::size_t bytes, void** out,
                                  Status& status) {
    (void)pool;
    (void)bytes;
    (void)out;
    (void)status;
    return false;
  }
  virtual bool free_to_pool(void* ptr, Status& status) {
    (void)ptr;
    (void)status;
    return false;
  }
};

// Per-device execution state; one per CUDA context.
class DeviceContext {
 public:
  virtual ~DeviceContext() = default;
  [[nodiscard]] virtual int ordinal() const noexcept = 0;

  virtual Status allocate(std::size_t bytes, void** out) = 0;  // device memory
  virtual Status free(void* ptr) = 0;
  virtual Status allocate_host(std::size_t bytes, unsigned cu_memhostalloc_flags, void** out) = 0;
  virtual Status free_host(void* ptr) = 0;
  virtual Status allocate_managed(std::size_t bytes, unsigned cu_memattach_flags, void** out) = 0;
  virtual Status free_managed(void* ptr) = 0;
  virtual Status register_host(void* ptr, std::size_t bytes, unsigned cu_memhostregister_flags) = 0;
  virtual Status unregister_host(void* ptr) = 0;
  // Device address through which the device reaches pinned host memory `host`.
  virtual Status host_device_pointer(void* host, void** device) = 0;

  // flags: CU_STREAM_*; priority already clamped by the core to the device's range.
  virtual Status create_queue(unsigned cu_stream_flags, int priority,
                              std::unique_ptr<Queue>& out) = 0;
  // flags: CU_EVENT_* (the core validates them).
  virtual Status create_event(unsigned cu_event_flags, std::unique_ptr<Event>& out) = 0;
  virtual Status synchronize() = 0;  // all queues of this context
  // Loads a module image of a kind in Backend::image_kinds() (the core opens fat binaries for
  // backends that do not take them whole). Images the backend does not recognise give the
  // native code for CUDA_ERROR_INVALID_IMAGE.
  virtual Status load_module(const ModuleImage& image, std::unique_ptr<Module>& out) = 0;
  // cuCtxGetLimit / cuCtxSetLimit for a device that keeps its own (NVIDIA's driver sizes the
  // device heap, stack and printf buffer by them). false: the backend has none and the core
  // keeps the record. The core has validated the limit and value.
  virtual bool get_limit(CUlimit limit, std::size_t& value, Status& status) {
    (void)limit;
    (void)value;
    (void)status;
    return false;
  }
  // Conditional handles set by device code (Queue::conditional): false when the core keeps
  // them itself (its device code sets the core's handles). create_cond_scope makes the device
  // graph a core graph's handles belong to; create_cond_handle makes one there.
  virtual bool create_cond_scope(std::shared_ptr<NativeCondScope>& out, Status& status) {
    (void)out;
    (void)status;
    return false;
  }
  virtual Status create_cond_handle(NativeCondScope& scope, unsigned default_value, unsigned flags,
                                    std::uint64_t& handle) {
    (void)scope;
    (void)default_value;
    (void)flags;
    (void)handle;
    return kOk;  // never called: create_cond_scope made no scope
  }
  // cuCtxResetPersistingL2Cache: L2 lines kept by access policy windows go back to normal.
  // A device without persisting L2 lines has nothing to do.
  virtual Status reset_persisting_l2_cache() { return kOk; }
  virtual bool set_limit(CUlimit limit, std::size_t value, Status& status) {
    (void)limit;
    (void)value;
    (void)status;
    return false;
  }

  // Peer access (cuCtxEnablePeerAccess / cuCtxDisablePeerAccess): this context's kernels and
  // copies may reach `peer`'s device memory. The core validates and records it; a device that
  // shares one address space with its peers has nothing to do.
  virtual Status enable_peer_access(DeviceContext& peer) {
    (void)peer;
    return kOk;
  }
  virtual Status disable_peer_access(DeviceContext& peer) {
    (void)peer;
    return kOk;
  }

  // IPC (issue 17). Memory: a handle for the device allocation [base, base+bytes) (from
  // allocate) that another process opens with ipc_open_memory (flags:
  // CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS), getting its own address and the size; ipc_close_memory
  // unmaps what ipc_open_memory mapped. Events: a handle for an event created with
  // CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING; the opened event sees the exporter's
  // records. false: the backend has no IPC (the core answers CUDA_ERROR_NOT_SUPPORTED);
  // else `status` holds the outcome.
  virtual bool ipc_export_memory(void* base, std::size_t bytes, CUipcMemHandle& out,
                                 Status& status) {
    (void)base;
    (void)bytes;
    (void)out;
    (void)status;
    return false;
  }
  virtual bool ipc_open_memory(const CUipcMemHandle& handle, unsigned flags, void** out,
                               std::size_t& bytes, Status& status) {
    (void)handle;
    (void)flags;
    (void)out;
    (void)bytes;
    (void)status;
    return false;
  }
  virtual bool ipc_close_memory(void* ptr, Status& status) {
    (void)ptr;
    (void)status;
    return false;
  }
  virtual bool ipc_export_event(Event& event, CUipcEventHandle& out, Status& status) {
    (void)event;
    (void)out;
    (void)status;
    return false;
  }
  virtual bool ipc_open_event(const CUipcEventHandle& handle, std::unique_ptr<Event>& out,
                              Status& status) {
    (void)handle;
    (void)out;
    (void)status;
    return false;
  }

  // The context is being destroyed (issue 17): pending and later Queue::wait_value operations
  // of its queues end as if satisfied, so that the destruction's synchronisation cannot hang
  // on a wait nothing will ever satisfy. A backend whose waits the device ends by itself (or
  // that has none) keeps the default.
  virtual void interrupt_waits() noexcept {}

  // cuLinkCreate ... cuLinkComplete: links `inputs` (kinds from Backend::image_kinds(), plus
  // host objects and libraries for a device that links them) into one image that load_module
  // takes, written to `out`; `options` are the program's JIT options other than the log
  // buffers and wall time, which the core fills from `log` (the linker's messages). false: the
  // backend cannot link (the core answers CUDA_ERROR_NOT_SUPPORTED); else `status` holds the
  // outcome.
  virtual bool link(const std::vector<ModuleImage>& inputs,
                    const std::vector<std::pair<CUjit_option, void*>>& options,
                    std::vector<unsigned char>& out, std::string& log, Status& status) {
    (void)inputs;
    (void)options;
    (void)out;
    (void)log;
    (void)status;
    return false;
  }
};

// CUDA arrays, texture and surface objects (issue 17). The core validates descriptors against
// CUDA's rules, keeps CUarray / CUmipmappedArray handles and their descriptors, and answers the
// Get* calls; the backend owns the storage and the objects kernels use. Array copies reach
// Queue::copy as CopyDesc array ends.
class Images {
 public:
  virtual ~Images() = default;
  // A CUDA array on `ordinal`; mip_levels 0 for a plain array, else a mipmapped array of that
  // many levels. The handle is the backend's own.
  virtual Status create_array(int ordinal, const CUDA_ARRAY3D_DESCRIPTOR& desc, unsigned mip_levels,
                              std::uint64_t& handle) = 0;
  virtual Status destroy_array(std::uint64_t handle) = 0;
  // Level `level` of a mipmapped array as an array handle, valid while the mipmapped array is.
  virtual Status mip_level(std::uint64_t mipmapped, unsigned level,
                           std::uint64_t& level_handle) = 0;
  // A texture object over `resource` (CUarray / CUmipmappedArray fields hold create_array
  // handles, pointers are device pointers). `object` is what kernels receive as CUtexObject.
  virtual Status create_texture(const CUDA_RESOURCE_DESC& resource,
                                const CUDA_TEXTURE_DESC& texture,
                                const CUDA_RESOURCE_VIEW_DESC* view, std::uint64_t& object) = 0;
  virtual Status destroy_texture(std::uint64_t object) = 0;
  // A surface object over an array created with CUDA_ARRAY3D_SURFACE_LDST.
  virtual Status create_surface(const CUDA_RESOURCE_DESC& resource, std::uint64_t& object) = 0;
  virtual Status destroy_surface(std::uint64_t object) = 0;
};

// Virtual memory management (cuMemAddressReserve, cuMemCreate, cuMemMap, ...). The core checks
// arguments against CUDA's rules, keeps the handles, reservations and mappings, and registers
// mapped ranges as device memory (copies and pointer queries know them); the backend owns
// address ranges and physical memory. Ordinals are the backend's. Addresses and sizes reach it
// aligned to its granularity.
class VirtualMemory {
 public:
  virtual ~VirtualMemory() = default;
  // The granularity of physical allocations on `ordinal`: minimum or recommended; `shareable`
  // holds the CU_MEM_HANDLE_TYPE_* bits the allocation must export to.
  virtual Status granularity(int ordinal, unsigned shareable, bool recommended,
                             std::size_t& out) = 0;
  // A range of `size` bytes aligned to `alignment`, at `fixed` if not 0 and it is free (else
  // anywhere).
  virtual Status reserve(std::size_t size, std::size_t alignment, std::uintptr_t fixed,
                         std::uintptr_t& out) = 0;
  virtual Status free_range(std::uintptr_t base, std::size_t size) = 0;
  // Physical memory of `size` bytes on `ordinal`; the handle is the backend's own.
  // `compression`: in, the CU_MEM_ALLOCATION_COMP_* asked for; out, what the memory is (a device
  // may give plain memory where compression was asked, as CUDA allows).
  virtual Status create(int ordinal, std::size_t size, unsigned shareable,
                        unsigned char& compression, std::uint64_t& handle) = 0;
  virtual Status release(std::uint64_t handle) = 0;
  // [va, va+size) of a reservation shows [offset, offset+size) of the physical memory; no
  // device may access it until set_access.
  virtual Status map(std::uintptr_t va, std::size_t size, std::size_t offset,
                     std::uint64_t handle) = 0;
  virtual Status unmap(std::uintptr_t va, std::size_t size) = 0;
  // Access of device `ordinal` to mapped [va, va+size): CU_MEM_ACCESS_FLAGS_PROT_*.
  virtual Status set_access(std::uintptr_t va, std::size_t size, int ordinal, unsigned prot) = 0;
  // CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR: a new descriptor the caller owns; import takes
  // one from this or another process (the caller keeps its descriptor) and tells the size.
  virtual Status export_fd(std::uint64_t handle, int& fd) = 0;
  virtual Status import_fd(int fd, std::uint64_t& handle, std::size_t& size) = 0;
};

// Stream-ordered memory pools of the device's own driver (issue 16), for a backend whose driver
// has them (cuda): the core checks arguments, keeps the program's pool handles, the current
// pools and the allocation registry, and passes the rest through, so the driver's own reuse,
// accounting, release and sharing rules apply. Locations name devices by backend ordinal; pools
// are the 64-bit handles given here. `ctx`, when not null, is the context current on the
// calling thread (the driver may need one). Stream-ordered allocation and free are on the
// Queue. Memory of such a pool is freed synchronously with DeviceContext::free.
class NativePools {
 public:
  virtual ~NativePools() = default;
  virtual Status create(DeviceContext* ctx, const CUmemPoolProps& props, std::uint64_t& pool) = 0;
  virtual Status destroy(DeviceContext* ctx, std::uint64_t pool) = 0;
  // The default pool of a location and allocation type (a device's pinned memory, the host's,
  // managed memory).
  virtual Status default_pool(DeviceContext* ctx, const CUmemLocation& location,
                              CUmemAllocationType type, std::uint64_t& pool) = 0;
  // `value` points at an int or a cuuint64_t, as CUDA defines for `attr`.
  virtual Status set_attribute(DeviceContext* ctx, std::uint64_t pool, CUmemPool_attribute attr,
                               void* value) = 0;
  virtual Status get_attribute(DeviceContext* ctx, std::uint64_t pool, CUmemPool_attribute attr,
                               void* value) = 0;
  virtual Status trim_to(DeviceContext* ctx, std::uint64_t pool, std::size_t keep) = 0;
  virtual Status set_access(DeviceContext* ctx, std::uint64_t pool,
                            const std::vector<CUmemAccessDesc>& descs) = 0;
  virtual Status get_access(DeviceContext* ctx, std::uint64_t pool, const CUmemLocation& location,
                            CUmemAccess_flags& flags) = 0;
  // Sharing between processes: a POSIX file descriptor names the pool, 64 bytes an allocation.
  virtual Status export_pool(DeviceContext* ctx, std::uint64_t pool, int& fd) = 0;
  virtual Status import_pool(DeviceContext* ctx, int fd, std::uint64_t& pool) = 0;
  virtual Status export_pointer(DeviceContext* ctx, void* ptr, CUmemPoolPtrExportData& out) = 0;
  // Maps the exported allocation into `ctx`; `bytes` is its size.
  virtual Status import_pointer(DeviceContext& ctx, std::uint64_t pool,
                                const CUmemPoolPtrExportData& data, void** out,
                                std::size_t& bytes) = 0;
};

// The plugin's root object.
class Backend {
 public:
  virtual ~Backend() = default;
  [[nodiscard]] virtual std::string_view name() const noexcept = 0;  // "mock", "hip", ...
  [[nodiscard]] virtual const ErrorDomain& errors() const noexcept = 0;
  [[nodiscard]] virtual Devices& devices() noexcept = 0;
  // flags: CU_CTX_* as given to cuCtxCreate / primary-context flags.
  virtual Status open_context(int ordinal, unsigned cu_ctx_flags,
                              std::unique_ptr<DeviceContext>& out) = 0;
  // The backend's compiler for NVRTC; nullptr when it has none.
  [[nodiscard]] virtual Compiler* compiler() noexcept = 0;
  // Whether LaunchDesc::cluster above 1x1x1 runs as thread block clusters. The core answers
  // CUDA_ERROR_NOT_SUPPORTED for cluster launches on a backend that says no, so that one
  // place decides and a backend that knows nothing of clusters can never run one as plain
  // independent blocks by ignoring the field; hence false by default.
  [[nodiscard]] virtual bool launches_clusters() const noexcept { return false; }
  // The ImageKinds load_module runs, as image_kind_bit()s: the core picks a fat binary's entry
  // (or passes it whole) by this, and names what is missing when nothing fits.
  [[nodiscard]] virtual unsigned image_kinds() const noexcept {
    return image_kind_bit(ImageKind::native);
  }
  // For log lines when an image is refused: what this backend loads, in words.
  [[nodiscard]] virtual std::string_view image_needs() const noexcept {
    return "modules compiled by its own NVRTC";
  }
  // Virtual memory management; nullptr when the backend has none (the core answers
  // CUDA_ERROR_NOT_SUPPORTED for every cuMem* VMM call then).
  [[nodiscard]] virtual VirtualMemory* virtual_memory() noexcept { return nullptr; }
  // Arrays, textures and surfaces; nullptr when the backend has none (the core answers
  // CUDA_ERROR_NOT_SUPPORTED for those calls then).
  [[nodiscard]] virtual Images* images() noexcept { return nullptr; }
  // Stream-ordered pools of the device's own driver; nullptr: the core's pools serve
  // cuMemPool* and cuMemAllocAsync over DeviceContext::allocate.
  [[nodiscard]] virtual NativePools* native_pools() noexcept { return nullptr; }
  // cuMemAdvise of managed memory (validated and recorded by the core; the location in the
  // backend's numbering): for a backend whose placement it can steer.
  virtual Status advise(std::uintptr_t ptr, std::size_t bytes, CUmem_advise advice,
                        CUmemLocation location) {
    (void)ptr;
    (void)bytes;
    (void)advice;
    (void)location;
    return kOk;
  }
  // A function of the device's own driver that works on host data alone (it encodes a
  // descriptor and takes no handles, so the program's arguments mean the same to it), for the
  // core to call as is: cuTensorMapEncodeTiled, cuTensorMapEncodeIm2col,
  // cuTensorMapEncodeIm2colWide, cuTensorMapReplaceAddress. nullptr when there is none.
  [[nodiscard]] virtual void* native_host_function(std::string_view name) noexcept {
    (void)name;
    return nullptr;
  }
};

}  // namespace cudamux::backend

#define CUDAMUX_PLUGIN_EXPORT extern "C" __attribute__((visibility("default")))
