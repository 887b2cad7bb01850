// The [mock] table of the cudamux configuration.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "faults.hpp"
#include "profile.hpp"

namespace spdlog {
class logger;
}
namespace toml {
inline namespace v3 {
class table;
}
}  // namespace toml

namespace cudamux::mock {

inline constexpr std::size_t kDefaultMemory = std::size_t{80} << 30;  // an 80 GB part
inline constexpr int kMaxDevices = 64;

struct MockConfig {
  int devices = 1;
  std::size_t memory = kDefaultMemory;  // bytes per device
  DeviceProfile profile;                // with [mock.attributes] applied
  // Kernels (issue 3): host compiler for NVRTC programs, compile cache folder (empty: the
  // default, see kernels.hpp), block worker threads (0: one per core).
  std::string compiler;
  std::string cache_dir;
  int workers = 0;
  // Loop fission at barriers for kernels it can prove safe (else fibers); false: fibers only.
  bool fission = true;
  // Memcheck (issue 9): kernels are compiled with every access checked (and without fission,
  // so that barriers are seen); CUDAMUX_MEMCHECK=0/1 overrides.
  bool memcheck = false;
  // [[mock.faults]] (issue 6): errors injected into the backend operations behind CUDA calls.
  std::vector<FaultSpec> faults;
};

// Fills `out` from `table` (null: all defaults). Returns an error message naming
// source:line:column and the key on a wrong type or value; warns about unknown keys.
std::optional<std::string> parse_config(const toml::table* table, std::string_view source,
                                        spdlog::logger& log, MockConfig& out);

}  // namespace cudamux::mock
