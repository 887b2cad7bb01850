// One source, several tiny plugins (one per CUDAMUX_TEST_PLUGIN_* define), each
// exercising one way loading can go right or wrong.
#include <spdlog/logger.h>
#include <toml++/toml.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "cudamux/backend.hpp"

namespace be = cudamux::backend;

#if defined(CUDAMUX_TEST_PLUGIN_OK)
namespace {
class Errors final : public be::ErrorDomain {
 public:
  std::optional<CUresult> to_cuda(std::int32_t) const noexcept override { return std::nullopt; }
  std::string_view native_name(std::int32_t) const noexcept override { return "testok"; }
  be::Status not_ready() const noexcept override { return {1}; }
  be::Status not_supported() const noexcept override { return {2}; }
  be::Status out_of_memory() const noexcept override { return {3}; }
  be::Status invalid_value() const noexcept override { return {4}; }
};

// count() reads the config table on every call, so a test can prove the table the
// host passed outlives the Settings it came from.
class Devices final : public be::Devices {
 public:
  explicit Devices(const toml::table* config) : config_(config) {}
  int count() const noexcept override {
    return config_ != nullptr ? (*config_)["devices"].value_or(0) : 0;
  }
  be::Status properties(int, be::DeviceProperties&) const override { return {2}; }
  be::Status attribute(int, CUdevice_attribute, int&) const override { return {2}; }
  be::Status memory_info(int, std::size_t&, std::size_t&) const override { return {2}; }
  bool can_access_peer(int, int) const noexcept override { return false; }

 private:
  const toml::table* config_;
};

class Backend final : public be::Backend {
 public:
  explicit Backend(const toml::table* config) : devices_(config) {}
  std::string_view name() const noexcept override { return "testok"; }
  const be::ErrorDomain& errors() const noexcept override { return errors_; }
  be::Devices& devices() noexcept override { return devices_; }
  be::Status open_context(int, unsigned, std::unique_ptr<be::DeviceContext>&) override {
    return {2};
  }
  be::Compiler* compiler() noexcept override { return nullptr; }

 private:
  Errors errors_;
  Devices devices_;
};
}  // namespace

CUDAMUX_PLUGIN_EXPORT std::uint32_t cudamux_backend_abi_version() { return be::kAbiVersion; }
CUDAMUX_PLUGIN_EXPORT be::Backend* cudamux_backend_create(const be::PluginHost& host,
                                                          std::string& error) {
  if (host.abi_version != be::kAbiVersion || !host.logger) {
    error = "testok: bad PluginHost";
    return nullptr;
  }
  host.logger->info("testok: created with config from {} ({} table)", host.config_source,
                    host.config != nullptr ? "with" : "without");
  return new Backend(host.config);
}

#elif defined(CUDAMUX_TEST_PLUGIN_NOENTRY)
// A perfectly loadable library that is not a cudamux plugin.
CUDAMUX_PLUGIN_EXPORT int cudamux_test_not_a_plugin() { return 42; }

#elif defined(CUDAMUX_TEST_PLUGIN_ABIONLY)
CUDAMUX_PLUGIN_EXPORT std::uint32_t cudamux_backend_abi_version() { return be::kAbiVersion; }

#elif defined(CUDAMUX_TEST_PLUGIN_BADABI)
CUDAMUX_PLUGIN_EXPORT std::uint32_t cudamux_backend_abi_version() { return be::kAbiVersion + 41; }
CUDAMUX_PLUGIN_EXPORT be::Backend* cudamux_backend_create(const be::PluginHost&, std::string&) {
  throw std::logic_error("badabi: create must not be called after an ABI mismatch");
}

#elif defined(CUDAMUX_TEST_PLUGIN_FAILCREATE)
CUDAMUX_PLUGIN_EXPORT std::uint32_t cudamux_backend_abi_version() { return be::kAbiVersion; }
CUDAMUX_PLUGIN_EXPORT be::Backend* cudamux_backend_create(const be::PluginHost& host,
                                                          std::string& error) {
  error = "failcreate: the frobnicator is missing (config from " + host.config_source + ")";
  return nullptr;
}

#elif defined(CUDAMUX_TEST_PLUGIN_THROWCREATE)
CUDAMUX_PLUGIN_EXPORT std::uint32_t cudamux_backend_abi_version() { return be::kAbiVersion; }
CUDAMUX_PLUGIN_EXPORT be::Backend* cudamux_backend_create(const be::PluginHost&, std::string&) {
  throw std::runtime_error("throwcreate: boom");
}

#elif defined(CUDAMUX_TEST_PLUGIN_UNRESOLVED)
// Linked with an undefined symbol (allowed for shared objects): RTLD_NOW must reject it.
extern "C" int cudamux_test_symbol_that_does_not_exist();
CUDAMUX_PLUGIN_EXPORT std::uint32_t cudamux_backend_abi_version() {
  return static_cast<std::uint32_t>(cudamux_test_symbol_that_does_not_exist());
}
CUDAMUX_PLUGIN_EXPORT be::Backend* cudamux_backend_create(const be::PluginHost&, std::string&) {
  return nullptr;
}

#else
#error "define one CUDAMUX_TEST_PLUGIN_* variant"
#endif
