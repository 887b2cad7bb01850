// cudamux settings: read once at cuInit from a TOML file, then overridden by
// CUDAMUX_* environment variables. See docs/configuration.md for every key.
#pragma once

#include <toml++/toml.h>

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

// The core's interface to the API libraries (libcuda, libnvrtc, libcudart) and tests:
// exported from libcudamux-core.so, everything else there stays hidden.
#pragma GCC visibility push(default)

namespace cudamux::config {

struct Settings {
  std::string backend = "auto";           // auto | mock | hip | cuda | any plugin name
  std::vector<std::string> plugin_paths;  // extra folders searched before the default, in order
  std::string log_level = "warn";         // trace|debug|info|warn|error|critical|off
  std::string log_sink = "stderr";        // stderr | stdout | file:/path
  int driver_version = 13000;             // what cuDriverGetVersion reports
  std::string source;                     // file read, or "<built-in defaults>"
  toml::table document;                   // the whole parsed file (backend tables go to plugins)
  std::vector<std::string> warnings;      // e.g. unknown keys; logged once the logger exists

  // Provenance, for diagnostics (cudamux-info, trace logs):
  // where each entry of plugin_paths came from ("CUDAMUX_PLUGIN_PATH" or "file:line:col"),
  std::vector<std::string> plugin_path_origins;
  // where each scalar setting came from, keyed "backend", "plugin_path", "log.level",
  // "log.sink", "driver_version": "built-in default", "file:line:col" or "CUDAMUX_...".
  std::map<std::string, std::string, std::less<>> origins;
  // every config file considered by load(), in lookup order (the one read is `source`).
  std::vector<std::string> candidates;
  // Search <core library dir>/cudamux/plugins after plugin_paths. Not a config key: tests
  // (and tools that must not pick up the installed plugins) switch it off.
  bool use_default_plugin_dir = true;
};

inline constexpr const char* kBuiltInSource = "<built-in defaults>";

// Errors name the file, line, column and key ("path:3:9: error: key 'log.level': ..."),
// or the environment variable for a bad override.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Lookup: $CUDAMUX_CONFIG (must exist if set), $XDG_CONFIG_HOME/cudamux/config.toml
// (default ~/.config), /etc/cudamux/config.toml, built-in defaults; then the
// environment overrides CUDAMUX_BACKEND, CUDAMUX_PLUGIN_PATH, CUDAMUX_LOG_LEVEL,
// CUDAMUX_LOG_SINK. Throws ConfigError.
Settings load();

// Reads exactly `path` (no lookup, no environment overrides). Throws ConfigError.
Settings load_file(const std::string& path);

// The config files load() would consider, in order, given the current environment
// (CUDAMUX_CONFIG alone when it is set).
std::vector<std::string> candidate_files();

// Valid log level names, in increasing severity.
inline constexpr const char* kLogLevels[] = {"trace", "debug",    "info", "warn",
                                             "error", "critical", "off"};

}  // namespace cudamux::config

#pragma GCC visibility pop
