// Plugins cudamux must refuse, for cudamux-info's report (tests/ecosystem/info_test.py).
// Built twice: CUDAMUX_FAKE_WRONG_ABI exports both entry points with ABI version 999;
// without it the library exports only the create function (no ABI version symbol).
#include <cstdint>
#include <string>

namespace cudamux::backend {
class Backend;
struct PluginHost;
}  // namespace cudamux::backend

#ifdef CUDAMUX_FAKE_WRONG_ABI
extern "C" __attribute__((visibility("default"))) std::uint32_t cudamux_backend_abi_version() {
  return 999;
}
#endif
extern "C" __attribute__((visibility("default"))) cudamux::backend::Backend* cudamux_backend_create(
    const cudamux::backend::PluginHost&, std::string& error) {
  error = "this test plugin never starts";
  return nullptr;
}
