// The [cuda] table of the cudamux configuration.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace spdlog {
class logger;
}
namespace toml {
inline namespace v3 {
class table;
}
}  // namespace toml

namespace cudamux::cuda {

enum class ContextMode {
  primary,  // every cudamux context on device N runs in N's primary context (retained)
  create,   // one cuCtxCreate'd context per cudamux context
};

struct CudaConfig {
  std::optional<std::string> driver;               // [cuda] driver: NVIDIA's libcuda.so.1
  std::string driver_origin;                       // "file:line:column" of that key
  std::optional<std::vector<std::string>> search;  // [cuda] search_path: replaces the defaults
  std::optional<std::string> nvrtc;                // [cuda] nvrtc: NVIDIA's libnvrtc.so.13
  std::string nvrtc_origin;
  std::optional<std::vector<std::string>> nvrtc_search;  // [cuda] nvrtc_search_path
  ContextMode contexts = ContextMode::primary;
};

// Fills `out` from `table` (null: all defaults). Returns an error message naming
// source:line:column and the key on a wrong type or value; warns about unknown keys.
std::optional<std::string> parse_config(const toml::table* table, std::string_view source,
                                        spdlog::logger& log, CudaConfig& out);

}  // namespace cudamux::cuda
