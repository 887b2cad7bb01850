// The hip backend: CUDA semantics (kept by the core) over ROCm's HIP runtime, loaded with
// dlopen so that the plugin loads, and says why it has no devices, where ROCm is absent.
//
// Devices: HIP's "set the current device per thread" model (hipSetDevice), not hipCtx*:
// HIP's context API is deprecated and maps onto the same per-device primary context
// anyway; the core owns CUDA contexts, so each backend context is just "device N", made
// current for the calls that depend on it (allocation, stream/event creation, module
// loads) and cached per thread so a steady stream of calls costs no hipSetDevice.
// Every enum crossing the boundary goes through tables.inc (mapping.hpp).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <climits>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "code_object.hpp"
#include "common.hpp"
#include "compiler.hpp"
#include "config.hpp"
#include "cudamux/backend.hpp"
#include "hip_api.hpp"
#include "images.hpp"
#include "mapping.hpp"

namespace cudamux::hip {
namespace {

namespace be = cudamux::backend;
using mapping::Table;

class HipErrors final : public be::ErrorDomain {
 public:
  [[nodiscard]] std::optional<CUresult> to_cuda(std::int32_t native) const noexcept override {
    const auto c = mapping::to_cuda(Table::error, native);
    if (!c) return std::nullopt;
    return static_cast<CUresult>(*c);
  }
  [[nodiscard]] std::string_view native_name(std::int32_t native) const noexcept override {
    const auto* r = mapping::by_hip(Table::error, native);
    return r != nullptr ? r->hip_name : std::string_view("hipError_t <not in HIP 5.2's headers>");
  }
  [[nodiscard]] be::Status not_ready() const noexcept override { return status(hipErrorNotReady); }
  [[nodiscard]] be::Status not_supported() const noexcept override { return kNotSupported; }
  [[nodiscard]] be::Status out_of_memory() const noexcept override {
    return status(hipErrorOutOfMemory);
  }
  [[nodiscard]] be::Status invalid_value() const noexcept override { return kInvalidValue; }
};

// --- events ---

class HipEvent final : public be::Event {
 public:
  HipEvent(const HipApi& api, hipEvent_t e) : api_(api), event_(e) {}
  ~HipEvent() override { (void)api_.hipEventDestroy(event_); }
  HipEvent(const HipEvent&) = delete;
  HipEvent& operator=(const HipEvent&) = delete;

  be::Status query() override { return status(api_.hipEventQuery(event_)); }
  be::Status synchronize() override { return status(api_.hipEventSynchronize(event_)); }
  be::Status elapsed_since(const be::Event& start, float& ms) const override {
    return status(
        api_.hipEventElapsedTime(&ms, static_cast<const HipEvent&>(start).event_, event_));
  }
  [[nodiscard]] hipEvent_t handle() const noexcept { return event_; }

 private:
  const HipApi& api_;
  const hipEvent_t event_;
};

// --- modules ---

class HipFunction final : public be::Function {
 public:
  HipFunction(const HipApi& api, hipFunction_t f, KernelInfo info)
      : api_(api), f_(f), info_(std::move(info)) {
    for (const auto& a : info_.args) params_.push_back({a.offset, a.size});
  }
  [[nodiscard]] std::string_view name() const noexcept override { return info_.name; }
  be::Status attribute(CUfunction_attribute attr, int& value) const override {
    const auto h = mapping::to_hip(Table::function_attribute, attr);
    if (!h) return kNotSupported;
    if (api_.hipFuncGetAttribute(&value, static_cast<hipFunction_attribute>(*h), f_) == hipSuccess)
      return be::kOk;
    // What the code object's metadata says, where HIP cannot answer.
    switch (attr) {
      case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
        value = info_.max_flat_workgroup_size;
        return be::kOk;
      case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
        value = info_.group_segment_size;
        return be::kOk;
      case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES:
        value = info_.private_segment_size;
        return be::kOk;
      case CU_FUNC_ATTRIBUTE_NUM_REGS:
        value = info_.vgpr_count;
        return be::kOk;
      default:
        return kNotSupported;
    }
  }
  [[nodiscard]] const std::vector<be::ParamInfo>& params() const noexcept override {
    return params_;
  }
  [[nodiscard]] hipFunction_t handle() const noexcept { return f_; }

 private:
  const HipApi& api_;
  const hipFunction_t f_;
  const KernelInfo info_;
  std::vector<be::ParamInfo> params_;
};

class HipModule final : public be::Module {
 public:
  HipModule(const HipApi& api, hipModule_t m, CodeObject co)
      : api_(api), module_(m), code_(std::move(co)) {}
  ~HipModule() override { (void)api_.hipModuleUnload(module_); }
  HipModule(const HipModule&) = delete;
  HipModule& operator=(const HipModule&) = delete;

  be::Function* function(std::string_view name) noexcept override {
    try {
      std::lock_guard lock(mu_);
      if (auto it = functions_.find(name); it != functions_.end()) return it->second.get();
      const auto k = std::find_if(code_.kernels.begin(), code_.kernels.end(),
                                  [&](const KernelInfo& i) { return i.name == name; });
      if (k == code_.kernels.end()) return nullptr;
      hipFunction_t f = nullptr;
      if (api_.hipModuleGetFunction(&f, module_, k->name.c_str()) != hipSuccess) return nullptr;
      auto fn = std::make_unique<HipFunction>(api_, f, *k);
      auto* raw = fn.get();
      functions_.emplace(k->name, std::move(fn));
      return raw;
    } catch (...) {
      return nullptr;
    }
  }
  bool global(std::string_view name, void*& address, std::size_t& bytes) noexcept override {
    try {
      hipDeviceptr_t p = nullptr;
      if (api_.hipModuleGetGlobal(&p, &bytes, module_, std::string(name).c_str()) != hipSuccess)
        return false;
      address = p;
      return true;
    } catch (...) {
      return false;
    }
  }
  [[nodiscard]] std::vector<std::string_view> function_names() const override {
    std::vector<std::string_view> out;
    for (const auto& k : code_.kernels) out.push_back(k.name);
    return out;
  }

 private:
  const HipApi& api_;
  const hipModule_t module_;
  const CodeObject code_;
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<HipFunction>, std::less<>> functions_;
};

// --- queues ---

class HipQueue;
struct QueueRegistry {
  std::mutex mu;
  std::set<HipQueue*> queues;
};

hipMemcpyKind copy_kind(const be::CopyDesc& d) {
  CUmemorytype src = cuda_memory_type(d.src_kind), dst = cuda_memory_type(d.dst_kind);
  // Managed memory on either side: HIP infers the direction from the addresses.
  if (src == CU_MEMORYTYPE_UNIFIED || dst == CU_MEMORYTYPE_UNIFIED)
    src = dst = CU_MEMORYTYPE_UNIFIED;
  const auto k = mapping::to_hip(Table::memcpy_kind, mapping::pair(src, dst));
  return k ? static_cast<hipMemcpyKind>(*k) : hipMemcpyDefault;
}

// Rows between 2D slices of a 3D copy (HIP's pitched pointers count rows, not bytes).
std::size_t rows_per_slice(std::size_t slice, std::size_t pitch, std::size_t height) {
  return pitch != 0 ? slice / pitch : height;
}

// The device argument hipMemAdvise and hipMemPrefetchAsync take for a CUDA location, through
// the mem_location_type table: a device's ordinal, or hipCpuDeviceId for the host.
be::Status hip_device_argument(spdlog::logger& log, const CUmemLocation& location, const char* fn,
                               int& device) {
  const auto hip = mapping::to_hip(Table::mem_location_type, location.type);
  if (!hip) return unmapped_argument(log, Table::mem_location_type, location.type, fn);
  if (*hip == hipMemLocationTypeDevice) {
    if (location.id < 0) return status(hipErrorInvalidDevice);
    device = location.id;
    return be::kOk;
  }
  if (*hip == hipCpuDeviceId) {
    device = hipCpuDeviceId;
    return be::kOk;
  }
  return kInvalidValue;  // no location
}

struct HostCall {
  void (*fn)(void*);
  void* user;
};
void host_call_trampoline(hipStream_t, hipError_t, void* p) {
  const HostCall call = *static_cast<HostCall*>(p);
  delete static_cast<HostCall*>(p);
  call.fn(call.user);
}

class HipQueue final : public be::Queue {
 public:
  HipQueue(const HipApi& api, int ordinal, hipStream_t s, std::shared_ptr<QueueRegistry> registry,
           HipImages* images, spdlog::logger& log)
      : api_(api),
        ordinal_(ordinal),
        stream_(s),
        registry_(std::move(registry)),
        images_(images),
        log_(log) {
    std::lock_guard lock(registry_->mu);
    registry_->queues.insert(this);
  }
  ~HipQueue() override {
    {
      std::lock_guard lock(registry_->mu);
      registry_->queues.erase(this);
    }
    (void)api_.hipStreamDestroy(stream_);  // HIP finishes pending work on its own
  }
  HipQueue(const HipQueue&) = delete;
  HipQueue& operator=(const HipQueue&) = delete;

  be::Status copy(const be::CopyDesc& d) override {
    if (d.dst_array != 0 || d.src_array != 0)  // issue 17: ends in HIP arrays
      return images_ != nullptr ? images_->copy(d, stream_) : kNotSupported;
    const bool peer = d.src_kind == be::MemKind::device && d.dst_kind == be::MemKind::device &&
                      d.src_device >= 0 && d.dst_device >= 0 && d.src_device != d.dst_device;
    if (d.height == 1 && d.depth == 1) {
      if (peer) {
        return status(api_.hipMemcpyPeerAsync(d.dst, d.dst_device, d.src, d.src_device,
                                              d.width_bytes, stream_));
      }
      return status(api_.hipMemcpyAsync(d.dst, d.src, d.width_bytes, copy_kind(d), stream_));
    }
    const hipMemcpyKind kind = peer ? hipMemcpyDeviceToDevice : copy_kind(d);
    if (d.depth == 1) {
      return status(api_.hipMemcpy2DAsync(d.dst, d.dst_pitch, d.src, d.src_pitch, d.width_bytes,
                                          d.height, kind, stream_));
    }
    hipMemcpy3DParms p{};
    p.srcPtr = hipPitchedPtr{const_cast<void*>(d.src), d.src_pitch, d.width_bytes,
                             rows_per_slice(d.src_slice, d.src_pitch, d.height)};
    p.dstPtr = hipPitchedPtr{d.dst, d.dst_pitch, d.width_bytes,
                             rows_per_slice(d.dst_slice, d.dst_pitch, d.height)};
    p.extent = hipExtent{d.width_bytes, d.height, d.depth};
    p.kind = kind;
    return status(api_.hipMemcpy3DAsync(&p, stream_));
  }

  be::Status copy_sync(const be::CopyDesc& d) override {
    if (auto st = copy(d); !st.ok()) return st;
    return synchronize();
  }

  be::Status fill(const be::FillDesc& d) override {
    const std::size_t row_bytes = d.width_elems * d.elem_size;
    // Contiguous rows are one 1D fill.
    const bool one_run = d.height == 1 || d.pitch == row_bytes;
    const std::size_t count = one_run ? d.width_elems * d.height : d.width_elems;
    const std::size_t rows = one_run ? 1 : d.height;
    if (d.elem_size == 1 && !one_run) {
      return status(api_.hipMemset2DAsync(d.dst, d.pitch, static_cast<int>(d.value & 0xff),
                                          d.width_elems, d.height, stream_));
    }
    for (std::size_t r = 0; r < rows; ++r) {
      auto* row = static_cast<char*>(d.dst) + r * d.pitch;
      hipError_t e = hipErrorInvalidValue;
      switch (d.elem_size) {
        case 1:
          e = api_.hipMemsetD8Async(row, static_cast<unsigned char>(d.value), count, stream_);
          break;
        case 2:
          e = api_.hipMemsetD16Async(row, static_cast<unsigned short>(d.value), count, stream_);
          break;
        case 4:
          e = api_.hipMemsetD32Async(row, static_cast<int>(d.value), count, stream_);
          break;
        default:
          break;
      }
      if (e != hipSuccess) return status(e);
    }
    return be::kOk;
  }

  be::Status host_function(void (*fn)(void*), void* user) override {
    auto* call = new HostCall{fn, user};
    const hipError_t e = api_.hipStreamAddCallback(stream_, host_call_trampoline, call, 0);
    if (e != hipSuccess) delete call;
    return status(e);
  }
  be::Status record(be::Event& event) override {
    return status(api_.hipEventRecord(static_cast<HipEvent&>(event).handle(), stream_));
  }
  be::Status wait(be::Event& event) override {
    return status(api_.hipStreamWaitEvent(stream_, static_cast<HipEvent&>(event).handle(), 0));
  }
  be::Status query() override { return status(api_.hipStreamQuery(stream_)); }
  be::Status synchronize() override { return status(api_.hipStreamSynchronize(stream_)); }

  // Stream memory operations (issue 17). HIP takes a mask CUDA has not: all bits count.
  bool wait_value(void* addr, unsigned bytes, std::uint64_t value, unsigned flags,
                  be::Status& st) override {
    // The core refuses FLUSH (CAN_FLUSH_REMOTE_WRITES has no HIP answer); were it to pass it,
    // HIP 5.2 has no such flag and the table says so.
    const unsigned condition = flags & ~static_cast<unsigned>(CU_STREAM_WAIT_VALUE_FLUSH);
    if (flags != condition) {
      st = unmapped_argument(log_, Table::stream_wait_condition, CU_STREAM_WAIT_VALUE_FLUSH,
                             "cuStreamWaitValue");
      return true;
    }
    const auto hip_condition = mapping::to_hip(Table::stream_wait_condition, condition);
    if (!hip_condition) {
      st = unmapped_argument(log_, Table::stream_wait_condition, condition, "cuStreamWaitValue");
      return true;
    }
    const auto hip_flags = static_cast<unsigned>(*hip_condition);
    st = bytes == 8
             ? status(api_.hipStreamWaitValue64(stream_, addr, value, hip_flags, ~std::uint64_t{0}))
             : status(api_.hipStreamWaitValue32(stream_, addr, static_cast<std::uint32_t>(value),
                                                hip_flags, ~std::uint32_t{0}));
    return true;
  }
  bool write_value(void* addr, unsigned bytes, std::uint64_t value, unsigned /*flags*/,
                   be::Status& st) override {
    // HIP 5.2's write flags are reserved ("ignored for now"): 0. Its writes always follow a
    // release barrier, which CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER allows (it only permits
    // reordering with earlier writes, never demands it).
    st = bytes == 8 ? status(api_.hipStreamWriteValue64(stream_, addr, value, 0))
                    : status(api_.hipStreamWriteValue32(stream_, addr,
                                                        static_cast<std::uint32_t>(value), 0));
    return true;
  }

  // cuMemPrefetchAsync of managed memory (issue 17): in stream order, as CUDA's.
  be::Status prefetch(void* ptr, std::size_t bytes, CUmemLocation to) override {
    int device = hipCpuDeviceId;
    if (auto st = hip_device_argument(log_, to, "cuMemPrefetchAsync", device); !st.ok()) return st;
    return status(api_.hipMemPrefetchAsync(ptr, bytes, device, stream_));
  }

  be::Status launch(const be::LaunchDesc& d) override {
    if (d.cooperative)
      return kNotSupported;  // hipModuleLaunchCooperativeKernel: not in ROCm 5.2's ABI
    auto* f = static_cast<HipFunction*>(d.function);
    std::size_t size = d.args_size;
    // HIP copies the argument buffer before hipModuleLaunchKernel returns.
    void* extra[] = {HIP_LAUNCH_PARAM_BUFFER_POINTER, const_cast<void*>(d.args),
                     HIP_LAUNCH_PARAM_BUFFER_SIZE, &size, HIP_LAUNCH_PARAM_END};
    if (auto st = use_device(api_, ordinal_); !st.ok()) return st;
    return status(api_.hipModuleLaunchKernel(f->handle(), d.grid[0], d.grid[1], d.grid[2],
                                             d.block[0], d.block[1], d.block[2], d.shared_bytes,
                                             stream_, nullptr, d.args_size != 0 ? extra : nullptr));
  }

 private:
  const HipApi& api_;
  const int ordinal_;
  const hipStream_t stream_;
  const std::shared_ptr<QueueRegistry> registry_;
  HipImages* const images_;  // null: the runtime has no image functions
  spdlog::logger& log_;
};

// The IPC memory handles this process exported: CUDA refuses to open one in the process that
// made it (CUDA_ERROR_INVALID_CONTEXT) where ROCm's documentation promises nothing.
struct ExportedHandles {
  std::mutex mu;
  std::map<std::string, void*> handles;  // handle bytes -> the allocation (forgotten when freed)
  static std::string key(const hipIpcMemHandle_t& h) {
    return std::string(h.reserved, sizeof h.reserved);
  }
  void forget(void* base) {
    std::lock_guard lock(mu);
    std::erase_if(handles, [&](const auto& entry) { return entry.second == base; });
  }
};
ExportedHandles& exported_handles() {
  static ExportedHandles e;
  return e;
}

// --- devices ---

struct DeviceInfo {
  hipDevice_t device = 0;
  int least_priority = 0;  // HIP's range for this device
  int greatest_priority = 0;
};

class HipDevices final : public be::Devices {
 public:
  HipDevices(const HipApi* api, std::vector<DeviceInfo> devices, spdlog::logger& log)
      : api_(api), devices_(std::move(devices)), log_(log) {}

  [[nodiscard]] int count() const noexcept override { return static_cast<int>(devices_.size()); }
  [[nodiscard]] bool valid(int ordinal) const noexcept { return ordinal >= 0 && ordinal < count(); }
  [[nodiscard]] const DeviceInfo& info(int ordinal) const {
    return devices_[static_cast<std::size_t>(ordinal)];
  }

  be::Status properties(int ordinal, be::DeviceProperties& out) const override {
    if (!valid(ordinal)) return status(hipErrorInvalidDevice);
    const hipDevice_t dev = info(ordinal).device;
    char name[256] = {};
    if (auto e = api_->hipDeviceGetName(name, sizeof name - 1, dev)) return status(e);
    out.name = name;
    hipUUID uuid{};
    if (auto e = api_->hipDeviceGetUuid(&uuid, dev)) return status(e);
    std::memcpy(out.uuid.data(), uuid.bytes, out.uuid.size());
    if (auto e = api_->hipDeviceTotalMem(&out.total_memory, dev)) return status(e);
    const std::pair<CUdevice_attribute, int*> attrs[] = {
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &out.cc_major},
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &out.cc_minor},
        {CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, &out.pci_domain},
        {CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, &out.pci_bus},
        {CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, &out.pci_device}};
    for (const auto& [attr, value] : attrs) {
      if (auto st = attribute(ordinal, attr, *value); !st.ok()) return st;
    }
    return be::kOk;
  }

  be::Status attribute(int ordinal, CUdevice_attribute attr, int& value) const override {
    if (!valid(ordinal)) return status(hipErrorInvalidDevice);
    // Device attributes do not change while the process runs, and the core asks for
    // several on every launch: each is asked from HIP once.
    const auto index = static_cast<std::size_t>(attr);
    auto* cached =
        index < kAttributeCache ? &cache_[static_cast<std::size_t>(ordinal)][index] : nullptr;
    if (cached != nullptr) {
      const std::int64_t c = cached->load(std::memory_order_relaxed);
      if (c == kNoAnswer) return kNotSupported;
      if (c != kUnknown) {
        value = static_cast<int>(c);
        return be::kOk;
      }
    }
    const auto h = mapping::to_hip(Table::device_attribute, attr);
    if (!h) {
      if (cached != nullptr) cached->store(kNoAnswer, std::memory_order_relaxed);
      return kNotSupported;
    }
    const hipError_t e =
        api_->hipDeviceGetAttribute(&value, static_cast<hipDeviceAttribute_t>(*h), ordinal);
    // HIP rejects attributes it lists but cannot answer on AMD ("Cuda only") as invalid.
    if (e == hipErrorInvalidValue || e == hipErrorNotSupported) {
      log_.debug("hip backend: hipDeviceGetAttribute({}) returned {}: not supported",
                 mapping::by_hip(Table::device_attribute, *h)->hip_name, static_cast<int>(e));
      if (cached != nullptr) cached->store(kNoAnswer, std::memory_order_relaxed);
      return kNotSupported;
    }
    if (e == hipSuccess && cached != nullptr) cached->store(value, std::memory_order_relaxed);
    return status(e);
  }

  be::Status memory_info(int ordinal, std::size_t& free_bytes,
                         std::size_t& total_bytes) const override {
    if (!valid(ordinal)) return status(hipErrorInvalidDevice);
    if (auto st = use_device(*api_, ordinal); !st.ok()) return st;
    return status(api_->hipMemGetInfo(&free_bytes, &total_bytes));
  }

  [[nodiscard]] bool can_access_peer(int ordinal, int peer) const noexcept override {
    if (!valid(ordinal) || !valid(peer) || ordinal == peer) return false;
    int can = 0;
    return api_->hipDeviceCanAccessPeer(&can, ordinal, peer) == hipSuccess && can != 0;
  }

 private:
  static constexpr std::size_t kAttributeCache = CU_DEVICE_ATTRIBUTE_MAX;
  static constexpr std::int64_t kUnknown = INT64_MIN;       // not asked yet
  static constexpr std::int64_t kNoAnswer = INT64_MIN + 1;  // HIP cannot answer it
  using AttributeCache = std::array<std::atomic<std::int64_t>, kAttributeCache>;

  const HipApi* api_;
  const std::vector<DeviceInfo> devices_;
  spdlog::logger& log_;
  mutable std::unique_ptr<AttributeCache[]> cache_ = [this] {
    auto c = std::make_unique<AttributeCache[]>(devices_.size());
    for (std::size_t d = 0; d < devices_.size(); ++d)
      for (auto& a : c[d]) a.store(kUnknown, std::memory_order_relaxed);
    return c;
  }();
};

// --- contexts ---

class HipContext final : public be::DeviceContext {
 public:
  HipContext(const HipApi& api, const DeviceInfo& info, int ordinal, spdlog::logger& log,
             HipImages* images)
      : api_(api),
        info_(info),
        ordinal_(ordinal),
        log_(log),
        images_(images),
        queues_(std::make_shared<QueueRegistry>()) {}

  [[nodiscard]] int ordinal() const noexcept override { return ordinal_; }

  be::Status allocate(std::size_t bytes, void** out) override {
    if (auto st = use_device(api_, ordinal_); !st.ok()) return st;
    return status(api_.hipMalloc(out, bytes));
  }
  be::Status free(void* ptr) override {
    exported_handles().forget(ptr);
    return status(api_.hipFree(ptr));
  }
  be::Status allocate_host(std::size_t bytes, unsigned flags, void** out) override {
    unsigned hip_flags = 0;
    if (auto st = map_flags(log_, Table::host_alloc_flag, flags, hip_flags, "cuMemHostAlloc");
        !st.ok())
      return st;
    if (auto st = use_device(api_, ordinal_); !st.ok()) return st;
    return status(api_.hipHostMalloc(out, bytes, hip_flags));
  }
  be::Status free_host(void* ptr) override { return status(api_.hipHostFree(ptr)); }
  be::Status allocate_managed(std::size_t bytes, unsigned flags, void** out) override {
    const auto h = mapping::to_hip(Table::mem_attach_flag, flags);
    if (!h) return unmapped_argument(log_, Table::mem_attach_flag, flags, "cuMemAllocManaged");
    if (auto st = use_device(api_, ordinal_); !st.ok()) return st;
    return status(api_.hipMallocManaged(out, bytes, static_cast<unsigned>(*h)));
  }
  be::Status free_managed(void* ptr) override { return status(api_.hipFree(ptr)); }
  be::Status register_host(void* ptr, std::size_t bytes, unsigned flags) override {
    unsigned hip_flags = 0;
    if (auto st = map_flags(log_, Table::host_register_flag, flags, hip_flags, "cuMemHostRegister");
        !st.ok())
      return st;
    if (auto st = use_device(api_, ordinal_); !st.ok()) return st;
    return status(api_.hipHostRegister(ptr, bytes, hip_flags));
  }
  be::Status unregister_host(void* ptr) override { return status(api_.hipHostUnregister(ptr)); }
  be::Status host_device_pointer(void* host, void** device) override {
    if (auto st = use_device(api_, ordinal_); !st.ok()) return st;
    return status(api_.hipHostGetDevicePointer(device, host, 0));
  }

  be::Status create_queue(unsigned flags, int priority, std::unique_ptr<be::Queue>& out) override {
    unsigned hip_flags = 0;
    if (auto st = map_flags(log_, Table::stream_flag, flags, hip_flags, "cuStreamCreate"); !st.ok())
      return st;
    // Always non-blocking towards HIP's null stream: the core orders blocking streams
    // against its legacy stream itself (core/src/submit.inl) and never uses HIP's.
    (void)hip_flags;
    if (auto st = use_device(api_, ordinal_); !st.ok()) return st;
    hipStream_t s = nullptr;
    if (auto e = api_.hipStreamCreateWithPriority(&s, hipStreamNonBlocking, hip_priority(priority)))
      return status(e);
    out = std::make_unique<HipQueue>(api_, ordinal_, s, queues_, images_, log_);
    return be::kOk;
  }
  be::Status create_event(unsigned flags, std::unique_ptr<be::Event>& out) override {
    unsigned hip_flags = 0;
    if (auto st = map_flags(log_, Table::event_flag, flags, hip_flags, "cuEventCreate"); !st.ok())
      return st;
    if (auto st = use_device(api_, ordinal_); !st.ok()) return st;
    hipEvent_t e = nullptr;
    if (auto r = api_.hipEventCreateWithFlags(&e, hip_flags)) return status(r);
    out = std::make_unique<HipEvent>(api_, e);
    return be::kOk;
  }
  be::Status synchronize() override {
    std::lock_guard lock(queues_->mu);
    for (HipQueue* q : queues_->queues) {
      if (auto st = q->synchronize(); !st.ok()) return st;
    }
    return be::kOk;
  }
  // IPC (issue 17): HIP's handles are 64 bytes like CUDA's and carried as they are.
  static_assert(sizeof(hipIpcMemHandle_t) == sizeof(CUipcMemHandle));
  static_assert(sizeof(hipIpcEventHandle_t) == sizeof(CUipcEventHandle));
  bool ipc_export_memory(void* base, std::size_t /*bytes*/, CUipcMemHandle& out,
                         be::Status& st) override {
    if (st = use_device(api_, ordinal_); !st.ok()) return true;
    hipIpcMemHandle_t h{};
    st = status(api_.hipIpcGetMemHandle(&h, base));
    if (!st.ok()) return true;
    std::memcpy(&out, &h, sizeof out);
    auto& exported = exported_handles();
    std::lock_guard lock(exported.mu);
    exported.handles[ExportedHandles::key(h)] = base;
    return true;
  }
  bool ipc_open_memory(const CUipcMemHandle& handle, unsigned flags, void** out, std::size_t& bytes,
                       be::Status& st) override {
    hipIpcMemHandle_t h{};
    std::memcpy(&h, &handle, sizeof h);
    {
      auto& exported = exported_handles();
      std::lock_guard lock(exported.mu);
      if (exported.handles.contains(ExportedHandles::key(h))) {
        log_.warn("hip backend: cuIpcOpenMemHandle: the handle was made by this process");
        st = status(hipErrorInvalidContext);
        return true;
      }
    }
    unsigned hip_flags = 0;
    if (st = map_flags(log_, Table::ipc_mem_flag, flags, hip_flags, "cuIpcOpenMemHandle"); !st.ok())
      return true;
    if (st = use_device(api_, ordinal_); !st.ok()) return true;
    void* p = nullptr;
    if (st = status(api_.hipIpcOpenMemHandle(&p, h, hip_flags)); !st.ok()) return true;
    // The size the handle carries is HIP's private layout: asked of the opened mapping instead.
    hipDeviceptr_t base = nullptr;
    std::size_t size = 0;
    if (st = status(api_.hipMemGetAddressRange(&base, &size, p)); !st.ok()) {
      (void)api_.hipIpcCloseMemHandle(p);
      return true;
    }
    const auto offset = static_cast<std::size_t>(static_cast<char*>(p) - static_cast<char*>(base));
    bytes = offset < size ? size - offset : size;
    *out = p;
    return true;
  }
  bool ipc_close_memory(void* ptr, be::Status& st) override {
    if (st = use_device(api_, ordinal_); !st.ok()) return true;
    st = status(api_.hipIpcCloseMemHandle(ptr));
    return true;
  }
  bool ipc_export_event(be::Event& event, CUipcEventHandle& out, be::Status& st) override {
    hipIpcEventHandle_t h{};
    st = status(api_.hipIpcGetEventHandle(&h, static_cast<HipEvent&>(event).handle()));
    if (st.ok()) std::memcpy(&out, &h, sizeof out);
    return true;
  }
  bool ipc_open_event(const CUipcEventHandle& handle, std::unique_ptr<be::Event>& out,
                      be::Status& st) override {
    hipIpcEventHandle_t h{};
    std::memcpy(&h, &handle, sizeof h);
    if (st = use_device(api_, ordinal_); !st.ok()) return true;
    hipEvent_t e = nullptr;
    // ROCm 5.2 answers hipErrorInvalidContext for a handle of this process (and keeps the
    // event it made for it: nothing here to free).
    if (st = status(api_.hipIpcOpenEventHandle(&e, h)); !st.ok()) return true;
    out = std::make_unique<HipEvent>(api_, e);
    return true;
  }

  be::Status load_module(const be::ModuleImage& module_image,
                         std::unique_ptr<be::Module>& out) override {
    if (module_image.kind != be::ImageKind::native) {
      // PTX for HIP needs the PTX front end (issue 15); NVIDIA's SASS never runs here.
      const bool ptx = module_image.kind == be::ImageKind::ptx;
      log_.error(
          "hip backend: module image is NVIDIA {} for {}_{}; the hip backend loads AMD code "
          "objects (from its NVRTC)",
          ptx ? "PTX" : "SASS", ptx ? "compute" : "sm", module_image.arch);
      return status(ptx ? hipErrorInvalidImage : hipErrorNoBinaryForGpu);
    }
    const void* image = module_image.data;
    std::string why;
    const auto size = image_size(image, why);
    std::optional<CodeObject> co;
    if (size) co = parse_code_object(static_cast<const unsigned char*>(image), *size, why);
    if (!co) {
      log_.warn("hip backend: module image rejected: {}", why);
      return status(hipErrorInvalidImage);
    }
    if (auto st = use_device(api_, ordinal_); !st.ok()) return st;
    hipModule_t m = nullptr;
    if (auto e = api_.hipModuleLoadData(&m, image)) return status(e);
    out = std::make_unique<HipModule>(api_, m, std::move(*co));
    return be::kOk;
  }

 private:
  // CUDA priorities (0 = least .. -5 = greatest, clamped by the core) onto HIP's range.
  [[nodiscard]] int hip_priority(int cuda) const {
    const int span = info_.greatest_priority - info_.least_priority;
    return info_.least_priority +
           static_cast<int>(std::lround(static_cast<double>(cuda) / -5.0 * span));
  }

  const HipApi& api_;
  const DeviceInfo info_;
  const int ordinal_;
  spdlog::logger& log_;
  HipImages* const images_;
  const std::shared_ptr<QueueRegistry> queues_;
};

// --- the backend ---

struct Runtime {
  OpenedLibrary lib;
  HipApi api;
};
struct Rtc {
  OpenedLibrary lib;
  HiprtcApi api;
};

class HipBackend final : public be::Backend {
 public:
  HipBackend(std::unique_ptr<Runtime> runtime, std::unique_ptr<Rtc> rtc,
             std::vector<DeviceInfo> devices, HipConfig config, std::shared_ptr<spdlog::logger> log)
      : runtime_(std::move(runtime)),
        rtc_(std::move(rtc)),
        devices_(runtime_ ? &runtime_->api : nullptr, std::move(devices), *log),
        config_(std::move(config)),
        log_(std::move(log)) {
    if (runtime_ && HipImages::available(runtime_->api)) {
      images_ = std::make_unique<HipImages>(runtime_->api, *log_);
    } else if (runtime_) {
      log_->info("hip backend: no CUDA arrays, textures or surfaces: the runtime has no {}",
                 runtime_->api.images_missing);
    }
    if (rtc_) {
      compiler_ = std::make_unique<HiprtcCompiler>(
          rtc_->api, [this] { return compile_arch(); }, log_,
          CompilerCodes{hipErrorNotSupported, hipErrorInvalidValue, hipErrorUnknown});
    }
  }

  [[nodiscard]] std::string_view name() const noexcept override { return "hip"; }
  [[nodiscard]] std::string_view image_needs() const noexcept override {
    return "AMD code objects compiled by its NVRTC (hipRTC); NVIDIA's PTX needs the PTX front end";
  }
  [[nodiscard]] const be::ErrorDomain& errors() const noexcept override { return errors_; }
  [[nodiscard]] be::Devices& devices() noexcept override { return devices_; }
  [[nodiscard]] be::Compiler* compiler() noexcept override { return compiler_.get(); }
  [[nodiscard]] be::Images* images() noexcept override { return images_.get(); }

  // cuMemAdvise of managed memory (issue 17): hipMemAdvise, synchronous in both APIs.
  be::Status advise(std::uintptr_t ptr, std::size_t bytes, CUmem_advise advice,
                    CUmemLocation location) override {
    if (!runtime_) return kNotSupported;  // no managed memory can exist then
    const char* fn = "cuMemAdvise";
    const auto hip_advice = mapping::to_hip(Table::mem_advise, advice);
    if (!hip_advice) return unmapped_argument(*log_, Table::mem_advise, advice, fn);
    // Advice that names no location: CUDA ignores the argument; HIP 5.2 checks it is a device
    // or hipCpuDeviceId and otherwise uses it only for preferred location and accessed-by.
    int device = hipCpuDeviceId;
    if (advice == CU_MEM_ADVISE_SET_PREFERRED_LOCATION || advice == CU_MEM_ADVISE_SET_ACCESSED_BY ||
        advice == CU_MEM_ADVISE_UNSET_ACCESSED_BY) {
      if (auto st = hip_device_argument(*log_, location, fn, device); !st.ok()) return st;
      if (device != hipCpuDeviceId && !devices_.valid(device)) return status(hipErrorInvalidDevice);
      // ROCm 5.2 (ROCclr SetSvmAttributes) unsets accessed-by for GPU 0's agent whatever the
      // device argument, so the host's would undo GPU 0's advice instead: the hint is dropped
      // (the core still records it; pages stay mapped for the host, which costs no correctness).
      if (advice == CU_MEM_ADVISE_UNSET_ACCESSED_BY && device == hipCpuDeviceId) {
        if (!host_unset_logged_.exchange(true))
          log_->info(
              "hip backend: cuMemAdvise: UNSET_ACCESSED_BY for the host is not passed to HIP "
              "(ROCm 5.2 would apply it to GPU 0); the pages stay mapped for the host");
        return be::kOk;
      }
    }
    return status(runtime_->api.hipMemAdvise(reinterpret_cast<const void*>(ptr), bytes,
                                             static_cast<hipMemoryAdvise>(*hip_advice), device));
  }

  be::Status open_context(int ordinal, unsigned /*ctx flags: HIP's are per device, process-wide*/,
                          std::unique_ptr<be::DeviceContext>& out) override {
    if (!devices_.valid(ordinal)) return status(hipErrorInvalidDevice);
    out = std::make_unique<HipContext>(runtime_->api, devices_.info(ordinal), ordinal, *log_,
                                       images_.get());
    return be::kOk;
  }

 private:
  // The current AMD device's arch (gcnArchName, e.g. "gfx90a:sramecc+:xnack-"), or the
  // configured one when there is no device.
  std::string compile_arch() {
    if (devices_.count() > 0) {
      const int ordinal = t_device >= 0 ? t_device : 0;
      hipDeviceProp_t props{};
      if (runtime_->api.hipGetDeviceProperties(&props, ordinal) == hipSuccess &&
          props.gcnArchName[0] != '\0') {
        return std::string(props.gcnArchName, strnlen(props.gcnArchName, sizeof props.gcnArchName));
      }
      log_->warn(
          "hip backend: device {} did not report its arch; compiling for [hip] offload_arch = {}",
          ordinal, config_.offload_arch);
    }
    return config_.offload_arch;
  }

  std::unique_ptr<Runtime> runtime_;
  std::unique_ptr<Rtc> rtc_;
  HipErrors errors_;
  HipDevices devices_;
  const HipConfig config_;
  std::shared_ptr<spdlog::logger> log_;
  std::unique_ptr<HiprtcCompiler> compiler_;
  std::unique_ptr<HipImages> images_;
  std::atomic<bool> host_unset_logged_{false};
};

std::string hip_name(hipError_t e) {
  const auto* r = mapping::by_hip(Table::error, e);
  return r != nullptr ? std::string(r->hip_name)
                      : "hipError_t " + std::to_string(static_cast<int>(e));
}

be::Backend* create(const be::PluginHost& host, std::string& error) {
  if (host.abi_version != be::kAbiVersion) {
    error = "hip backend: host ABI version " + std::to_string(host.abi_version) +
            ", plugin built for " + std::to_string(be::kAbiVersion);
    return nullptr;
  }
  auto& log = *host.logger;
  HipConfig config;
  if (auto message = parse_config(host.config, host.config_source, log, config)) {
    error = std::move(*message);
    return nullptr;
  }

  auto rtc = std::make_unique<Rtc>();
  std::string why;
  if (auto lib = open_hiprtc(config.hiprtc, rtc->api, why)) {
    rtc->lib = std::move(*lib);
  } else {
    log.info("hip backend: no hipRTC, NVRTC unavailable: {}", why);
    rtc.reset();
  }

  auto runtime = std::make_unique<Runtime>();
  auto lib = open_runtime(config.runtime, runtime->api, why);
  if (!lib) {
    log.warn(
        "hip backend: no AMD GPU: ROCm's HIP runtime is not usable ({}); probed [hip] runtime = {}",
        why, config.runtime);
    return new HipBackend(nullptr, std::move(rtc), {}, config, host.logger);
  }
  runtime->lib = std::move(*lib);
  const HipApi& api = runtime->api;
  int count = 0;
  if (const hipError_t e = api.hipInit(0); e != hipSuccess) {
    log.warn(
        "hip backend: no AMD GPU: hipInit returned {} (runtime {}; it probes /dev/kfd and the kfd "
        "topology)",
        hip_name(e), runtime->lib.path);
    return new HipBackend(std::move(runtime), std::move(rtc), {}, config, host.logger);
  }
  if (const hipError_t e = api.hipGetDeviceCount(&count); e != hipSuccess || count <= 0) {
    log.warn(
        "hip backend: no AMD GPU: hipGetDeviceCount returned {} with {} device(s) (runtime {})",
        hip_name(e), count, runtime->lib.path);
    return new HipBackend(std::move(runtime), std::move(rtc), {}, config, host.logger);
  }
  std::vector<DeviceInfo> devices(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) {
    auto& d = devices[static_cast<std::size_t>(i)];
    if (auto e = api.hipDeviceGet(&d.device, i)) {
      error = "hip backend: hipDeviceGet(" + std::to_string(i) + ") returned " + hip_name(e);
      return nullptr;
    }
    if (auto st = use_device(api, i); !st.ok()) {
      error = "hip backend: hipSetDevice(" + std::to_string(i) + ") returned " +
              hip_name(static_cast<hipError_t>(st.native));
      return nullptr;
    }
    (void)api.hipDeviceGetStreamPriorityRange(&d.least_priority, &d.greatest_priority);
  }
  int driver = 0, rt = 0;
  (void)api.hipDriverGetVersion(&driver);
  (void)api.hipRuntimeGetVersion(&rt);
  log.debug("hip backend: runtime {} (driver {}, runtime {}), {} device(s)", runtime->lib.path,
            driver, rt, count);
  return new HipBackend(std::move(runtime), std::move(rtc), std::move(devices), config,
                        host.logger);
}

}  // namespace
}  // namespace cudamux::hip

CUDAMUX_PLUGIN_EXPORT std::uint32_t cudamux_backend_abi_version() {
  return cudamux::backend::kAbiVersion;
}

CUDAMUX_PLUGIN_EXPORT cudamux::backend::Backend* cudamux_backend_create(
    const cudamux::backend::PluginHost& host, std::string& error) {
  try {
    return cudamux::hip::create(host, error);
  } catch (const std::exception& e) {  // nothing may cross the C boundary
    error = std::string("hip backend: ") + e.what();
    return nullptr;
  }
}
