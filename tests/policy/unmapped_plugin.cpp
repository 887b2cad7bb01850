// A backend whose allocations can fail with native codes CUDA has no name for:
// cuMemAlloc of 1001 or 1002 bytes fails with native 1001 / 1002. Everything else is a
// minimal synchronous backend, just enough for contexts and streams.
#include <cstdlib>
#include <string>

#include "cudamux/backend.hpp"

namespace be = cudamux::backend;
namespace {

constexpr std::int32_t kUnmappedA = 1001;
constexpr std::int32_t kUnmappedB = 1002;

class Errors final : public be::ErrorDomain {
 public:
  std::optional<CUresult> to_cuda(std::int32_t native) const noexcept override {
    if (native == kUnmappedA || native == kUnmappedB) return std::nullopt;
    return static_cast<CUresult>(native);
  }
  std::string_view native_name(std::int32_t native) const noexcept override {
    if (native == kUnmappedA) return "UNMAPPED_A";
    if (native == kUnmappedB) return "UNMAPPED_B";
    return "CUresult";
  }
  be::Status not_ready() const noexcept override { return {CUDA_ERROR_NOT_READY}; }
  be::Status not_supported() const noexcept override { return {CUDA_ERROR_NOT_SUPPORTED}; }
  be::Status out_of_memory() const noexcept override { return {CUDA_ERROR_OUT_OF_MEMORY}; }
  be::Status invalid_value() const noexcept override { return {CUDA_ERROR_INVALID_VALUE}; }
};

class Devices final : public be::Devices {
 public:
  int count() const noexcept override { return 1; }
  be::Status properties(int, be::DeviceProperties& p) const override {
    p.name = "unmapped test device";
    p.total_memory = 1 << 30;
    p.cc_major = 9;
    return be::kOk;
  }
  be::Status attribute(int, CUdevice_attribute, int& v) const override {
    v = 1;
    return be::kOk;
  }
  be::Status memory_info(int, std::size_t& f, std::size_t& t) const override {
    f = t = 1 << 30;
    return be::kOk;
  }
  bool can_access_peer(int, int) const noexcept override { return false; }
};

class Event final : public be::Event {
 public:
  be::Status query() override { return be::kOk; }
  be::Status synchronize() override { return be::kOk; }
  be::Status elapsed_since(const be::Event&, float& ms) const override {
    ms = 0;
    return be::kOk;
  }
};

class Queue final : public be::Queue {
 public:
  be::Status copy(const be::CopyDesc&) override { return {CUDA_ERROR_NOT_SUPPORTED}; }
  be::Status copy_sync(const be::CopyDesc&) override { return {CUDA_ERROR_NOT_SUPPORTED}; }
  be::Status fill(const be::FillDesc&) override { return {CUDA_ERROR_NOT_SUPPORTED}; }
  be::Status host_function(void (*fn)(void*), void* user) override {
    fn(user);
    return be::kOk;
  }
  be::Status record(be::Event&) override { return be::kOk; }
  be::Status wait(be::Event&) override { return be::kOk; }
  be::Status query() override { return be::kOk; }
  be::Status synchronize() override { return be::kOk; }
  be::Status launch(const be::LaunchDesc&) override { return {CUDA_ERROR_NOT_SUPPORTED}; }
};

class Context final : public be::DeviceContext {
 public:
  int ordinal() const noexcept override { return 0; }
  be::Status allocate(std::size_t bytes, void** out) override {
    if (bytes == kUnmappedA || bytes == kUnmappedB) return {static_cast<std::int32_t>(bytes)};
    *out = std::malloc(bytes);
    return *out ? be::kOk : be::Status{CUDA_ERROR_OUT_OF_MEMORY};
  }
  be::Status free(void* p) override {
    std::free(p);
    return be::kOk;
  }
  be::Status allocate_host(std::size_t, unsigned, void**) override { return {CUDA_ERROR_NOT_SUPPORTED}; }
  be::Status free_host(void*) override { return {CUDA_ERROR_NOT_SUPPORTED}; }
  be::Status allocate_managed(std::size_t, unsigned, void**) override { return {CUDA_ERROR_NOT_SUPPORTED}; }
  be::Status free_managed(void*) override { return {CUDA_ERROR_NOT_SUPPORTED}; }
  be::Status register_host(void*, std::size_t, unsigned) override { return {CUDA_ERROR_NOT_SUPPORTED}; }
  be::Status unregister_host(void*) override { return {CUDA_ERROR_NOT_SUPPORTED}; }
  be::Status host_device_pointer(void*, void**) override { return {CUDA_ERROR_NOT_SUPPORTED}; }
  be::Status create_queue(unsigned, int, std::unique_ptr<be::Queue>& out) override {
    out = std::make_unique<Queue>();
    return be::kOk;
  }
  be::Status create_event(unsigned, std::unique_ptr<be::Event>& out) override {
    out = std::make_unique<Event>();
    return be::kOk;
  }
  be::Status synchronize() override { return be::kOk; }
  be::Status load_module(const be::ModuleImage&, std::unique_ptr<be::Module>&) override { return {CUDA_ERROR_NOT_SUPPORTED}; }
};

class Backend final : public be::Backend {
 public:
  std::string_view name() const noexcept override { return "unmapped"; }
  const be::ErrorDomain& errors() const noexcept override { return errors_; }
  be::Devices& devices() noexcept override { return devices_; }
  be::Status open_context(int, unsigned, std::unique_ptr<be::DeviceContext>& out) override {
    out = std::make_unique<Context>();
    return be::kOk;
  }
  be::Compiler* compiler() noexcept override { return nullptr; }

 private:
  Errors errors_;
  Devices devices_;
};

}  // namespace

CUDAMUX_PLUGIN_EXPORT std::uint32_t cudamux_backend_abi_version() { return be::kAbiVersion; }
CUDAMUX_PLUGIN_EXPORT be::Backend* cudamux_backend_create(const be::PluginHost&, std::string&) {
  return new Backend();
}
