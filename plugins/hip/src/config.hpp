// The [hip] table of the cudamux configuration.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace spdlog {
class logger;
}
namespace toml {
inline namespace v3 {
class table;
}
}  // namespace toml

namespace cudamux::hip {

inline constexpr const char* kDefaultRuntime = "libamdhip64.so.5";

struct HipConfig {
  std::string runtime = kDefaultRuntime;  // [hip] runtime / CUDAMUX_HIP_RUNTIME
  std::string hiprtc = kDefaultRuntime;   // [hip] hiprtc / CUDAMUX_HIP_HIPRTC
  std::string offload_arch = "gfx90a";    // [hip] offload_arch: NVRTC target without a device
};

// Fills `out` from `table` (null: defaults), then the environment. Returns an error naming
// source:line:column and the key on a wrong type or value; warns about unknown keys.
std::optional<std::string> parse_config(const toml::table* table, std::string_view source,
                                        spdlog::logger& log, HipConfig& out);

}  // namespace cudamux::hip
