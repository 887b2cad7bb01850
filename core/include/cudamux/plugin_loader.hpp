// Finds, loads and starts the backend plugin (libcudamux-<name>.so). Plugins are
// never unloaded: objects, vtables and deleters from them may outlive anything.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "cudamux/backend.hpp"
#include "cudamux/config.hpp"

namespace spdlog {
class logger;
}

// The core's interface to the API libraries (libcuda, libnvrtc, libcudart) and tests:
// exported from libcudamux-core.so, everything else there stays hidden.
#pragma GCC visibility push(default)

namespace cudamux::plugins {

// The message names the backend, the file(s) tried, the loader's own message and
// every folder searched, so a misconfiguration never shows up as "0 devices".
class PluginError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct LoadedBackend {
  backend::Backend* backend = nullptr;  // never null; lives (with its library) until process exit
  std::string name;                     // resolved backend name ("auto" resolved)
  std::string file;                     // full path loaded
  std::string reason;                   // why this backend was chosen
};

// "libcudamux-<name>.so".
std::string plugin_file_name(std::string_view backend_name);

// The folder of the shared object containing the core, symlinks resolved.
std::string core_library_dir();

// core_library_dir()/cudamux/plugins.
std::string default_plugin_dir();

// Folders searched, in order: CUDAMUX_PLUGIN_PATH entries, config plugin_path
// entries (both already in settings.plugin_paths), then default_plugin_dir().
std::vector<std::string> search_paths(const config::Settings& settings);

// Resolves settings.backend ("auto": see detail::choose_auto), loads the first libcudamux-<name>.so
// found in search_paths() (a broken file is an error, not a reason to try the next folder), checks
// its entry symbols and ABI version and creates the backend with the plugin's config table. A null
// logger means log::get(). Throws PluginError.
LoadedBackend load_backend(const config::Settings& settings,
                           std::shared_ptr<spdlog::logger> logger);
// Same, taking over the parsed document so the plugin's table keeps its source
// positions (file:line:column in the plugin's own config errors). cuInit uses this.
LoadedBackend load_backend(config::Settings&& settings, std::shared_ptr<spdlog::logger> logger);

namespace detail {
struct AmdGpuProbe {
  bool present = false;
  std::string detail;  // what was found or missing, for LoadedBackend::reason
};
// An AMD GPU is present when <root>/dev/kfd exists and some
// <root>/sys/class/kfd/kfd/topology/nodes/*/properties has "simd_count N", N > 0
// (CPU nodes have 0). `root` exists for tests.
AmdGpuProbe probe_amd_gpu(const std::string& root = "/");

struct NvidiaGpuProbe {
  bool present = false;
  std::string detail;
};
// An NVIDIA GPU and its kernel driver are present when <root>/proc/driver/nvidia/version
// or <root>/dev/nvidia0 exists. `root` exists for tests.
NvidiaGpuProbe probe_nvidia_gpu(const std::string& root = "/");

struct AutoChoice {
  std::string name;    // backend chosen by "auto"
  std::string reason;  // for LoadedBackend::reason
  bool warn = false;   // a GPU was found but its plugin was not
};
// "auto": hip when an AMD GPU is present and the hip plugin was found; else cuda when an
// NVIDIA GPU is present and the cuda plugin was found; else mock.
AutoChoice choose_auto(const AmdGpuProbe& amd, bool hip_plugin, const NvidiaGpuProbe& nvidia,
                       bool cuda_plugin);
}  // namespace detail

}  // namespace cudamux::plugins

#pragma GCC visibility pop
