// The mock backend: CUDA semantics on the CPU, for running CUDA programs without a GPU.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/uuid/name_generator_sha1.hpp>
#include <boost/uuid/uuid.hpp>
#include <iterator>
#include <string>
#include <vector>

#include "config.hpp"
#include "cudamux/backend.hpp"
#include "faults.hpp"
#include "images.hpp"
#include "ipc.hpp"
#include "kernels.hpp"
#include "memory.hpp"
#include "queue.hpp"
#include "vmm.hpp"

namespace cudamux::mock {
namespace {

constexpr be::Status status(CUresult r) { return be::Status{static_cast<std::int32_t>(r)}; }

struct ResultName {
  std::int32_t value;
  std::string_view name;
};
constexpr ResultName kResultNames[] = {
#include "cuda_result_names.inc"
};

const ResultName* find_result(std::int32_t native) noexcept {
  const auto* it =
      std::lower_bound(std::begin(kResultNames), std::end(kResultNames), native,
                       [](const ResultName& r, std::int32_t v) { return r.value < v; });
  return it != std::end(kResultNames) && it->value == native ? it : nullptr;
}

// The mock's native codes are CUresult values (identity mapping) plus its own codes with
// no CUDA counterpart (faults.hpp), for which it only reports "none": the core decides.
class MockErrors final : public be::ErrorDomain {
 public:
  [[nodiscard]] std::optional<CUresult> to_cuda(std::int32_t native) const noexcept override {
    if (find_result(native) == nullptr) return std::nullopt;
    return static_cast<CUresult>(native);
  }
  [[nodiscard]] std::string_view native_name(std::int32_t native) const noexcept override {
    if (const char* mock = mock_error_name(native)) return mock;
    const auto* r = find_result(native);
    return r != nullptr ? r->name : std::string_view("MOCK_ERROR_<unknown>");
  }
  [[nodiscard]] be::Status not_ready() const noexcept override {
    return status(CUDA_ERROR_NOT_READY);
  }
  [[nodiscard]] be::Status not_supported() const noexcept override {
    return status(CUDA_ERROR_NOT_SUPPORTED);
  }
  [[nodiscard]] be::Status out_of_memory() const noexcept override {
    return status(CUDA_ERROR_OUT_OF_MEMORY);
  }
  [[nodiscard]] be::Status invalid_value() const noexcept override {
    return status(CUDA_ERROR_INVALID_VALUE);
  }
};

struct MockDevice {
  be::DeviceProperties properties;
  std::array<std::optional<int>, kAttributeLimit> attributes{};
  std::unique_ptr<DeviceArena> arena;
};

class MockDevices final : public be::Devices {
 public:
  explicit MockDevices(std::vector<MockDevice> devices) : devices_(std::move(devices)) {}

  [[nodiscard]] int count() const noexcept override { return static_cast<int>(devices_.size()); }

  be::Status properties(int ordinal, be::DeviceProperties& out) const override {
    if (!valid(ordinal)) return status(CUDA_ERROR_INVALID_DEVICE);
    out = devices_[static_cast<std::size_t>(ordinal)].properties;
    return be::kOk;
  }

  be::Status attribute(int ordinal, CUdevice_attribute attr, int& value) const override {
    if (!valid(ordinal)) return status(CUDA_ERROR_INVALID_DEVICE);
    const auto index = static_cast<int>(attr);
    if (index <= 0 || index >= kAttributeLimit) return status(CUDA_ERROR_NOT_SUPPORTED);
    const auto& v =
        devices_[static_cast<std::size_t>(ordinal)].attributes[static_cast<std::size_t>(index)];
    if (!v) return status(CUDA_ERROR_NOT_SUPPORTED);
    value = *v;
    return be::kOk;
  }

  be::Status memory_info(int ordinal, std::size_t& free_bytes,
                         std::size_t& total_bytes) const override {
    if (!valid(ordinal)) return status(CUDA_ERROR_INVALID_DEVICE);
    const auto& arena = *devices_[static_cast<std::size_t>(ordinal)].arena;
    total_bytes = arena.capacity();
    free_bytes = total_bytes - arena.used();
    return be::kOk;
  }

  [[nodiscard]] bool can_access_peer(int ordinal, int peer) const noexcept override {
    // One address space for all mock devices: every pair of distinct devices is peer-capable.
    return valid(ordinal) && valid(peer) && ordinal != peer;
  }

  [[nodiscard]] bool valid(int ordinal) const noexcept { return ordinal >= 0 && ordinal < count(); }
  DeviceArena& arena(int ordinal) { return *devices_[static_cast<std::size_t>(ordinal)].arena; }

 private:
  std::vector<MockDevice> devices_;
};

// Injects [[mock.faults]] into a queue's operations, then forwards to the real queue.
// Events stay undecorated (the queue downcasts them).
class FaultQueue final : public be::Queue {
 public:
  FaultQueue(std::unique_ptr<be::Queue> inner, std::shared_ptr<Faults> faults)
      : inner_(std::move(inner)), faults_(std::move(faults)) {}
  be::Status copy(const be::CopyDesc& d) override {
    return run(Op::copy, [&] { return inner_->copy(d); });
  }
  be::Status copy_sync(const be::CopyDesc& d) override {
    return run(Op::copy_sync, [&] { return inner_->copy_sync(d); });
  }
  be::Status fill(const be::FillDesc& d) override {
    return run(Op::fill, [&] { return inner_->fill(d); });
  }
  be::Status host_function(void (*fn)(void*), void* user) override {
    return run(Op::host_function, [&] { return inner_->host_function(fn, user); });
  }
  be::Status record(be::Event& e) override {
    return run(Op::record, [&] { return inner_->record(e); });
  }
  be::Status wait(be::Event& e) override {
    return run(Op::wait, [&] { return inner_->wait(e); });
  }
  be::Status query() override {
    return run(Op::queue_query, [&] { return inner_->query(); });
  }
  be::Status synchronize() override {
    return run(Op::queue_synchronize, [&] { return inner_->synchronize(); });
  }
  be::Status launch(const be::LaunchDesc& d) override {
    return run(Op::launch, [&] { return inner_->launch(d); });
  }
  bool wait_value(void* addr, unsigned bytes, std::uint64_t value, unsigned flags,
                  be::Status& st) override {
    return inner_->wait_value(addr, bytes, value, flags, st);
  }
  bool write_value(void* addr, unsigned bytes, std::uint64_t value, unsigned flags,
                   be::Status& st) override {
    return inner_->write_value(addr, bytes, value, flags, st);
  }

 private:
  template <class F>
  be::Status run(Op op, F&& forward) {
    if (const auto st = faults_->check(op); !st.ok()) return st;
    return forward();
  }
  std::unique_ptr<be::Queue> inner_;
  std::shared_ptr<Faults> faults_;
};

// nvrtcCompileProgram faults fire here, before the real compiler runs.
class FaultCompiler final : public be::Compiler {
 public:
  FaultCompiler(be::Compiler& inner, Faults& faults) : inner_(inner), faults_(faults) {}
  be::Status compile(const be::CompileRequest& request, be::CompileResult& result) override {
    if (const auto st = faults_.check(Op::compile); !st.ok()) return st;
    return inner_.compile(request, result);
  }
  [[nodiscard]] std::vector<int> supported_archs() const override {
    return inner_.supported_archs();
  }

 private:
  be::Compiler& inner_;
  Faults& faults_;
};

class MockContext final : public be::DeviceContext {
 public:
  MockContext(int ordinal, DeviceArena& arena, HostMemory& host, std::shared_ptr<KernelEnv> kernels,
              std::shared_ptr<Faults> faults)
      : ordinal_(ordinal),
        arena_(arena),
        host_(host),
        queues_(std::make_shared<QueueRegistry>()),
        kernels_(std::move(kernels)),
        faults_(std::move(faults)) {}

  [[nodiscard]] int ordinal() const noexcept override { return ordinal_; }

  be::Status allocate(std::size_t bytes, void** out) override {
    if (const auto st = faults_->check(Op::allocate); !st.ok()) return st;
    return status(arena_.allocate(bytes, DeviceArena::Kind::device, out));
  }
  be::Status free(void* ptr) override {
    if (const auto st = faults_->check(Op::free); !st.ok()) return st;
    return status(arena_.free(ptr, DeviceArena::Kind::device));
  }
  be::Status allocate_host(std::size_t bytes, unsigned /*flags: all mean "host memory" here*/,
                           void** out) override {
    if (const auto st = faults_->check(Op::allocate_host); !st.ok()) return st;
    return status(host_.allocate(bytes, out));
  }
  be::Status free_host(void* ptr) override {
    if (const auto st = faults_->check(Op::free_host); !st.ok()) return st;
    return status(host_.free(ptr));
  }
  be::Status allocate_managed(std::size_t bytes, unsigned /*attach flags*/, void** out) override {
    if (const auto st = faults_->check(Op::allocate_managed); !st.ok()) return st;
    return status(arena_.allocate(bytes, DeviceArena::Kind::managed, out));
  }
  be::Status free_managed(void* ptr) override {
    if (const auto st = faults_->check(Op::free_managed); !st.ok()) return st;
    return status(arena_.free(ptr, DeviceArena::Kind::managed));
  }
  be::Status register_host(void* ptr, std::size_t bytes, unsigned /*flags*/) override {
    if (const auto st = faults_->check(Op::register_host); !st.ok()) return st;
    return status(host_.register_range(ptr, bytes));
  }
  be::Status unregister_host(void* ptr) override {
    if (const auto st = faults_->check(Op::unregister_host); !st.ok()) return st;
    return status(host_.unregister_range(ptr));
  }
  be::Status host_device_pointer(void* host, void** device) override {
    // Unified addressing: the device reaches pinned host memory at the host's address.
    if (!host_.contains(host)) return status(CUDA_ERROR_INVALID_VALUE);
    *device = host;
    return be::kOk;
  }

  be::Status create_queue(unsigned flags, int priority, std::unique_ptr<be::Queue>& out) override {
    if (const auto st = faults_->check(Op::create_queue); !st.ok()) return st;
    auto queue = std::make_unique<MockQueue>(queues_, flags, priority, kernels_);
    // Undecorated when no fault is configured: no cost on the common path.
    if (faults_->any())
      out = std::make_unique<FaultQueue>(std::move(queue), faults_);
    else
      out = std::move(queue);
    return be::kOk;
  }
  be::Status create_event(unsigned flags, std::unique_ptr<be::Event>& out) override {
    if (const auto st = faults_->check(Op::create_event); !st.ok()) return st;
    out = std::make_unique<MockEvent>(flags);
    return be::kOk;
  }
  be::Status synchronize() override {
    // Holding the registry lock keeps queues alive while we wait on them; a queue being
    // destroyed meanwhile drains itself anyway.
    if (const auto st = faults_->check(Op::context_synchronize); !st.ok()) return st;
    std::lock_guard lock(queues_->mu);
    be::Status result = be::kOk;
    for (auto* q : queues_->queues) {
      const auto st = q->synchronize();  // a failed kernel's error (sticky)
      if (result.ok() && !st.ok()) result = st;
    }
    return result;
  }
  bool link(const std::vector<be::ModuleImage>& inputs,
            const std::vector<std::pair<CUjit_option, void*>>& /*options: nothing to tune*/,
            std::vector<unsigned char>& out, std::string& log, be::Status& st) override {
    // PTX inputs are linked with each other first (their extern declarations reach each
    // other's definitions), into one native image.
    std::vector<be::ModuleImage> ptx_inputs;
    std::vector<be::ModuleImage> native;
    for (const auto& in : inputs)
      (in.kind == be::ImageKind::ptx ? ptx_inputs : native).push_back(in);
    std::vector<char> from_ptx;
    if (!ptx_inputs.empty()) {
      st = link_ptx(ptx_inputs, *kernels_->compiler, *kernels_->log, from_ptx, log);
      if (!st.ok()) return true;
      native.push_back(be::ModuleImage{be::ImageKind::native, from_ptx.data(), from_ptx.size(),
                                       ptx_inputs.front().arch});
    }
    // Relocatable device code (-rdc) is linked as nvlink would, into one module image that
    // joins the whole programs' bundle.
    std::vector<std::string_view> objects;
    std::vector<std::string> names;
    std::vector<be::ModuleImage> wholes;
    for (const auto& in : native) {
      if (in.kind == be::ImageKind::native && in.data != nullptr &&
          std::string_view(static_cast<const char*>(in.data)).starts_with(kObjectHeader)) {
        objects.emplace_back(static_cast<const char*>(in.data));
        names.emplace_back(in.name != nullptr ? in.name : "");
      } else {
        wholes.push_back(in);
      }
    }
    std::vector<char> linked;
    if (!objects.empty()) {
      st = kernels_->compiler->link_objects(objects, linked, log, names);
      if (!st.ok()) return true;
      wholes.push_back(be::ModuleImage{be::ImageKind::native, linked.data(), linked.size(),
                                       native.front().arch});
    }
    st = link_images(wholes, out, log);
    return true;
  }
  // IPC (issue 17; ipc.hpp).
  bool ipc_export_memory(void* base, std::size_t /*bytes*/, CUipcMemHandle& out,
                         be::Status& st) override {
    st = status(mock::ipc_export_memory(arena_, base, out));
    return true;
  }
  bool ipc_open_memory(const CUipcMemHandle& handle, unsigned /*flags: one address space*/,
                       void** out, std::size_t& bytes, be::Status& st) override {
    st = status(mock::ipc_open_memory(handle, out, bytes));
    return true;
  }
  bool ipc_close_memory(void* ptr, be::Status& st) override {
    st = status(mock::ipc_close_memory(ptr));
    return true;
  }
  bool ipc_export_event(be::Event& event, CUipcEventHandle& out, be::Status& st) override {
    auto* e = dynamic_cast<MockEvent*>(&event);
    st = e ? status(e->export_ipc(out)) : status(CUDA_ERROR_INVALID_HANDLE);
    return true;
  }
  bool ipc_open_event(const CUipcEventHandle& handle, std::unique_ptr<be::Event>& out,
                      be::Status& st) override {
    CUresult r = CUDA_SUCCESS;
    auto shared = IpcEventState::open(handle, r);
    if (shared) out = std::make_unique<MockEvent>(std::move(shared));
    st = status(r);
    return true;
  }
  void interrupt_waits() noexcept override {
    std::lock_guard lock(queues_->mu);
    for (auto* q : queues_->queues) q->interrupt_waits();
  }
  be::Status load_module(const be::ModuleImage& image, std::unique_ptr<be::Module>& out) override {
    if (const auto st = faults_->check(Op::load_module); !st.ok()) return st;
    switch (image.kind) {
      case be::ImageKind::native: {
        // Relocatable device code loaded as it is: linked alone (NVIDIA's driver likewise
        // loads an -rdc program whose symbols are all its own).
        if (image.data != nullptr &&
            std::string_view(static_cast<const char*>(image.data)).starts_with(kObjectHeader)) {
          std::vector<char> linked;
          std::string log;
          if (const auto st = kernels_->compiler->link_objects(
                  {std::string_view(static_cast<const char*>(image.data))}, linked, log);
              !st.ok()) {
            kernels_->log->error("mock backend: relocatable device code does not load alone: {}",
                                 log);
            return st;
          }
          return load_module_image(linked.data(), *kernels_->log, out);
        }
        return load_module_image(image.data, *kernels_->log, out);
      }
      case be::ImageKind::ptx:
        return load_ptx_module(image, *kernels_->compiler, *kernels_->log, out);
      case be::ImageKind::cubin:
      case be::ImageKind::nvidia_fatbin:
      case be::ImageKind::host_object:
      case be::ImageKind::host_library:
        break;
    }
    kernels_->log->error(
        "mock backend: module image is an NVIDIA {}: the mock runs PTX and modules compiled by "
        "cudamux's NVRTC, not NVIDIA's machine code (SASS)",
        image.kind == be::ImageKind::cubin ? "cubin (sm_" + std::to_string(image.arch) + ")"
                                           : std::string("fat binary"));
    return status(CUDA_ERROR_NO_BINARY_FOR_GPU);
  }

 private:
  const int ordinal_;
  DeviceArena& arena_;
  HostMemory& host_;
  const std::shared_ptr<QueueRegistry> queues_;
  const std::shared_ptr<KernelEnv> kernels_;
  const std::shared_ptr<Faults> faults_;
};

class MockBackend final : public be::Backend {
 public:
  MockBackend(std::vector<MockDevice> devices, const MockConfig& config,
              std::shared_ptr<spdlog::logger> log)
      : devices_(std::move(devices)),
        kernels_(std::make_shared<KernelEnv>()),
        compiler_(
            compiler_settings(config.compiler, config.cache_dir, config.fission, config.memcheck),
            log),
        faults_(std::make_shared<Faults>(config.faults, log)),
        fault_compiler_(compiler_, *faults_) {
    kernels_->log = std::move(log);
    kernels_->images = &images_;      // issue 17: copies with array ends
    kernels_->compiler = &compiler_;  // issue 15: PTX modules
    // [mock] workers counts every thread running blocks, the launching queue's included.
    kernels_->workers = config.workers > 0 ? config.workers - 1 : -1;
  }

  [[nodiscard]] std::string_view name() const noexcept override { return "mock"; }
  [[nodiscard]] std::string_view image_needs() const noexcept override {
    return "PTX and modules compiled by cudamux's NVRTC (not NVIDIA's SASS)";
  }
  [[nodiscard]] unsigned image_kinds() const noexcept override {
    return be::image_kind_bit(be::ImageKind::native) | be::image_kind_bit(be::ImageKind::ptx);
  }
  [[nodiscard]] const be::ErrorDomain& errors() const noexcept override { return errors_; }
  [[nodiscard]] be::Devices& devices() noexcept override { return devices_; }
  be::Status open_context(int ordinal, unsigned /*ctx flags: scheduling is the OS's*/,
                          std::unique_ptr<be::DeviceContext>& out) override {
    if (!devices_.valid(ordinal)) return status(CUDA_ERROR_INVALID_DEVICE);
    if (const auto st = faults_->check(Op::open_context); !st.ok()) return st;
    out = std::make_unique<MockContext>(ordinal, devices_.arena(ordinal), host_, kernels_, faults_);
    return be::kOk;
  }
  [[nodiscard]] be::Compiler* compiler() noexcept override {
    return faults_->any() ? static_cast<be::Compiler*>(&fault_compiler_) : &compiler_;
  }
  [[nodiscard]] be::VirtualMemory* virtual_memory() noexcept override { return &vmm_; }
  [[nodiscard]] be::Images* images() noexcept override { return &images_; }

 private:
  MockErrors errors_;
  MockVirtualMemory vmm_;
  HostMemory host_;
  MockDevices devices_;
  std::shared_ptr<KernelEnv> kernels_;
  MockCompiler compiler_;
  std::shared_ptr<Faults> faults_;
  FaultCompiler fault_compiler_;
  MockImages images_{[this](int ordinal) -> DeviceArena* {
    return devices_.valid(ordinal) ? &devices_.arena(ordinal) : nullptr;
  }};
};

std::array<unsigned char, 16> device_uuid(int ordinal) {
  // Name-based (SHA-1, RFC 4122 version 5) in a namespace of our own: stable across runs
  // and machines, distinct per ordinal.
  constexpr boost::uuids::uuid kNamespace = {{0x6b, 0x1f, 0x3c, 0x52, 0x8e, 0x0d, 0x4a, 0x7b, 0x9c,
                                              0x41, 0x2d, 0x7e, 0x55, 0xa0, 0x13, 0xc9}};
  boost::uuids::name_generator_sha1 gen(kNamespace);
  const auto u = gen("cudamux-mock-device-" + std::to_string(ordinal));
  std::array<unsigned char, 16> out{};
  std::copy(u.begin(), u.end(), out.begin());
  return out;
}

be::Backend* create(const be::PluginHost& host, std::string& error) {
  if (host.abi_version != be::kAbiVersion) {
    error = "mock backend: host ABI version " + std::to_string(host.abi_version) +
            ", plugin built for " + std::to_string(be::kAbiVersion);
    return nullptr;
  }
  MockConfig config;
  if (auto message = parse_config(host.config, host.config_source, *host.logger, config)) {
    error = std::move(*message);
    return nullptr;
  }
  const bool memcheck =
      compiler_settings(config.compiler, config.cache_dir, config.fission, config.memcheck)
          .memcheck;
  std::vector<MockDevice> devices;
  devices.reserve(static_cast<std::size_t>(config.devices));
  for (int i = 0; i < config.devices; ++i) {
    MockDevice d;
    d.attributes = config.profile.attributes;
    // Per-ordinal identity: distinct PCI location and board.
    auto& bus = d.attributes[CU_DEVICE_ATTRIBUTE_PCI_BUS_ID];
    bus = bus.value_or(0) + i;
    d.attributes[CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID] =
        d.attributes[CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID].value_or(0) + i;
    auto& p = d.properties;
    p.name = config.profile.device_name;
    p.uuid = device_uuid(i);
    p.total_memory = config.memory;
    p.cc_major = d.attributes[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR].value_or(0);
    p.cc_minor = d.attributes[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR].value_or(0);
    p.pci_domain = d.attributes[CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID].value_or(0);
    p.pci_bus = *bus;
    p.pci_device = d.attributes[CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID].value_or(0);
    d.arena = DeviceArena::create(config.memory, error);
    if (!d.arena) return nullptr;
    if (memcheck) {
      // Issue 9: host code touching device memory faults, as on a GPU, where the CPU has
      // memory protection keys.
      std::string why;
      const int key = allocate_device_memory_key(why);
      if (key >= 0) {
        d.arena->protect_device_allocations(key);
        cudamux_install_fault_handler();  // its report names what host code touched
      } else if (i == 0) {
        host.logger->warn(
            "mock backend: memcheck cannot make host accesses to device memory fault here (no "
            "memory protection keys: {}); kernel accesses are still checked",
            why);
      }
    }
    p.total_memory = d.arena->capacity();
    devices.push_back(std::move(d));
  }
  host.logger->debug("mock backend: {} device(s) \"{}\" ({}), {} bytes each", config.devices,
                     config.profile.device_name, config.profile.key, config.memory);
  return new MockBackend(std::move(devices), config, host.logger);
}

}  // namespace
}  // namespace cudamux::mock

CUDAMUX_PLUGIN_EXPORT std::uint32_t cudamux_backend_abi_version() {
  return cudamux::backend::kAbiVersion;
}

CUDAMUX_PLUGIN_EXPORT cudamux::backend::Backend* cudamux_backend_create(
    const cudamux::backend::PluginHost& host, std::string& error) {
  try {
    return cudamux::mock::create(host, error);
  } catch (const std::exception& e) {  // nothing may cross the C boundary
    error = std::string("mock backend: ") + e.what();
    return nullptr;
  }
}
