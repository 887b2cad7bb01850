// Settings loading: file lookup, TOML validation with file:line:column messages,
// then environment overrides. Nothing here logs: the logger is configured from
// the result, so warnings are collected in Settings::warnings instead.
#include "cudamux/config.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string_view>

namespace cudamux::config {
namespace {

namespace fs = std::filesystem;
using namespace std::string_view_literals;

constexpr const char* kBuiltInOrigin = "built-in default";

// Backend tables we know of; their contents belong to the plugin.
constexpr std::string_view kBackendTables[] = {"mock"sv, "hip"sv, "cuda"sv};

// Environment value, treating set-but-empty as unset (so `CUDAMUX_BACKEND= prog` is harmless).
const char* env(const char* name) {
  const char* v = std::getenv(name);
  return (v != nullptr && *v != '\0') ? v : nullptr;
}

std::string position(const std::string& file, const toml::source_region& r) {
  return file + ":" + std::to_string(r.begin.line) + ":" + std::to_string(r.begin.column);
}

[[noreturn]] void fail_at(const std::string& file, const toml::source_region& r,
                          std::string_view key, std::string_view message) {
  throw ConfigError(position(file, r) + ": error: key '" + std::string(key) +
                    "': " + std::string(message));
}

[[noreturn]] void fail_env(const char* var, std::string_view value, std::string_view message) {
  throw ConfigError("environment variable " + std::string(var) + "='" + std::string(value) +
                    "': " + std::string(message));
}

std::string_view type_name(toml::node_type t) {
  switch (t) {
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a floating-point number";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::date:
      return "a date";
    case toml::node_type::time:
      return "a time";
    case toml::node_type::date_time:
      return "a date-time";
    case toml::node_type::none:
      break;
  }
  return "nothing";
}

std::string expected(std::string_view what, const toml::node& n) {
  return "expected " + std::string(what) + ", found " + std::string(type_name(n.type()));
}

std::string single_quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

// Lower-cases and accepts spdlog's own spelling "warning"; nullopt when unknown.
std::optional<std::string> normalize_level(std::string_view in) {
  std::string s(in);
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (s == "warning") s = "warn";
  for (const char* l : kLogLevels) {
    if (s == l) return s;
  }
  return std::nullopt;
}

std::string level_list() {
  std::string out;
  for (const char* l : kLogLevels) {
    if (!out.empty()) out += ", ";
    out += l;
  }
  return out;
}

// Empty when valid; `base` resolves a relative file: path (config file's folder).
std::string check_sink(std::string& sink, const fs::path& base) {
  if (sink == "stderr" || sink == "stdout") return {};
  if (sink.rfind("file:", 0) == 0) {
    fs::path p = sink.substr(5);
    if (p.empty()) return "'file:' needs a path, e.g. file:/tmp/cudamux.log";
    if (p.is_relative()) sink = "file:" + (base / p).lexically_normal().string();
    return {};
  }
  return "expected stderr, stdout or file:<path>";
}

// Backend names become file names (libcudamux-<name>.so): no slashes or oddities.
std::string check_backend_name(std::string_view name) {
  if (name.empty()) return "must not be empty";
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) {
      return "invalid backend name (letters, digits, '_' and '-' only; e.g. auto, mock, hip)";
    }
  }
  return {};
}

std::string read_text(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    throw ConfigError("cannot read config file '" + path + "': is a directory");
  }
  // Opening a FIFO for reading blocks until a writer comes, possibly forever; sockets
  // cannot be opened at all. Character devices stay allowed: /dev/null means "defaults".
  if (fs::is_fifo(path, ec) || fs::is_socket(path, ec)) {
    throw ConfigError("cannot read config file '" + path + "': not a regular file (a " +
                      (fs::is_fifo(path, ec) ? "FIFO" : "socket") + ")");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw ConfigError("cannot read config file '" + path + "': " + std::strerror(errno));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    throw ConfigError("cannot read config file '" + path + "': read error");
  }
  return std::move(text).str();
}

void parse_log_table(Settings& s, const toml::table& log, const fs::path& base) {
  const std::string& file = s.source;
  if (const toml::node* n = log.get("level")) {
    const auto* str = n->as_string();
    if (str == nullptr) fail_at(file, n->source(), "log.level", expected("a string", *n));
    auto level = normalize_level(str->get());
    if (!level) {
      fail_at(file, n->source(), "log.level",
              "unknown log level " + single_quoted(str->get()) + " (expected one of " +
                  level_list() + ")");
    }
    s.log_level = *level;
    s.origins["log.level"] = position(file, n->source());
  }
  if (const toml::node* n = log.get("sink")) {
    const auto* str = n->as_string();
    if (str == nullptr) fail_at(file, n->source(), "log.sink", expected("a string", *n));
    std::string sink = str->get();
    if (auto problem = check_sink(sink, base); !problem.empty()) {
      fail_at(file, n->source(), "log.sink",
              "invalid sink " + single_quoted(str->get()) + ": " + problem);
    }
    s.log_sink = sink;
    s.origins["log.sink"] = position(file, n->source());
  }
}

void add_plugin_path(Settings& s, const toml::node& n, const fs::path& base) {
  const auto* str = n.as_string();
  if (str == nullptr) {
    fail_at(s.source, n.source(), "plugin_path", expected("a string or an array of strings", n));
  }
  if (str->get().empty()) fail_at(s.source, n.source(), "plugin_path", "empty folder name");
  fs::path p = str->get();
  if (p.is_relative()) p = base / p;  // relative to the config file, not the program's cwd
  s.plugin_paths.push_back(p.lexically_normal().string());
  s.plugin_path_origins.push_back(position(s.source, n.source()));
}

// Validates the keys cudamux owns; unknown keys are reported later (check_unknown).
void parse_file_into(Settings& s, const std::string& path) {
  const std::string text = read_text(path);
  s.source = path;
  try {
    s.document = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    throw ConfigError(position(path, e.source()) +
                      ": error: malformed TOML: " + std::string(e.description()));
  }
  const fs::path base = fs::absolute(fs::path(path)).parent_path();

  for (auto&& [k, v] : s.document) {
    const std::string_view key = k.str();
    if (key == "backend") {
      const auto* str = v.as_string();
      if (str == nullptr) fail_at(path, v.source(), key, expected("a string", v));
      if (auto problem = check_backend_name(str->get()); !problem.empty()) {
        fail_at(path, v.source(), key, single_quoted(str->get()) + ": " + problem);
      }
      s.backend = str->get();
      s.origins["backend"] = position(path, v.source());
    } else if (key == "plugin_path") {
      if (const auto* arr = v.as_array()) {
        for (const toml::node& item : *arr) add_plugin_path(s, item, base);
      } else {
        add_plugin_path(s, v, base);
      }
      s.origins["plugin_path"] = position(path, v.source());
    } else if (key == "driver_version") {
      const auto* i = v.as_integer();
      if (i == nullptr) fail_at(path, v.source(), key, expected("an integer", v));
      if (i->get() <= 0 || i->get() > INT_MAX) {
        fail_at(path, v.source(), key,
                "out of range: " + std::to_string(i->get()) +
                    " (expected 1000*major + 10*minor, e.g. 13000 for 13.0)");
      }
      s.driver_version = static_cast<int>(i->get());
      s.origins["driver_version"] = position(path, v.source());
    } else if (key == "log") {
      const auto* log = v.as_table();
      if (log == nullptr) fail_at(path, v.source(), key, expected("a table", v));
      parse_log_table(s, *log, base);
    } else if (key == "hallucinate" ||
               std::find(std::begin(kBackendTables), std::end(kBackendTables), key) !=
                   std::end(kBackendTables)) {
      // Contents are validated by their owner (the plugin; the core for [hallucinate]).
      if (!v.is_table()) fail_at(path, v.source(), key, expected("a table", v));
    }
  }
}

bool is_backend_table(std::string_view key, const Settings& s) {
  return key == s.backend || std::find(std::begin(kBackendTables), std::end(kBackendTables), key) !=
                                 std::end(kBackendTables);
}

// Run after environment overrides: a table named after the backend in use
// (e.g. [myplugin] with CUDAMUX_BACKEND=myplugin) is that plugin's, not unknown.
void check_unknown(Settings& s) {
  static constexpr std::string_view kTopLevel[] = {"backend"sv, "plugin_path"sv, "driver_version"sv,
                                                   "log"sv, "hallucinate"sv};
  for (auto&& [k, v] : s.document) {
    const std::string_view key = k.str();
    if (std::find(std::begin(kTopLevel), std::end(kTopLevel), key) != std::end(kTopLevel)) {
      if (key == "log") {
        for (auto&& [lk, lv] : *v.as_table()) {
          if (lk.str() != "level" && lk.str() != "sink") {
            s.warnings.push_back(position(s.source, lk.source()) + ": warning: unknown key 'log." +
                                 std::string(lk.str()) + "' (ignored; [log] has level and sink)");
          }
        }
      }
      continue;
    }
    if (is_backend_table(key, s)) {
      if (!v.is_table()) fail_at(s.source, v.source(), key, expected("a table", v));
      continue;
    }
    s.warnings.push_back(position(s.source, k.source()) + ": warning: unknown key '" +
                         std::string(key) + "' (ignored)");
  }
}

void apply_env(Settings& s) {
  if (const char* v = env("CUDAMUX_BACKEND")) {
    if (auto problem = check_backend_name(v); !problem.empty()) {
      fail_env("CUDAMUX_BACKEND", v, problem);
    }
    s.backend = v;
    s.origins["backend"] = "CUDAMUX_BACKEND";
  }
  if (const char* v = env("CUDAMUX_PLUGIN_PATH")) {
    std::vector<std::string> paths;
    std::string_view rest = v;
    while (!rest.empty()) {
      const auto colon = rest.find(':');
      const std::string_view entry = rest.substr(0, colon);
      if (!entry.empty()) {  // "a::b" and a trailing ':' are tolerated, like $PATH
        std::error_code ec;
        fs::path p = fs::absolute(fs::path(entry), ec);
        paths.push_back((ec ? fs::path(entry) : p).lexically_normal().string());
      }
      if (colon == std::string_view::npos) break;
      rest.remove_prefix(colon + 1);
    }
    // Searched first: prepend to whatever the file configured.
    s.plugin_path_origins.insert(s.plugin_path_origins.begin(), paths.size(),
                                 "CUDAMUX_PLUGIN_PATH");
    s.plugin_paths.insert(s.plugin_paths.begin(), paths.begin(), paths.end());
    std::string& origin = s.origins["plugin_path"];
    origin =
        origin == kBuiltInOrigin ? "CUDAMUX_PLUGIN_PATH" : "CUDAMUX_PLUGIN_PATH, then " + origin;
  }
  if (const char* v = env("CUDAMUX_LOG_LEVEL")) {
    auto level = normalize_level(v);
    if (!level)
      fail_env("CUDAMUX_LOG_LEVEL", v, "unknown log level (expected one of " + level_list() + ")");
    s.log_level = *level;
    s.origins["log.level"] = "CUDAMUX_LOG_LEVEL";
  }
  if (const char* v = env("CUDAMUX_LOG_SINK")) {
    std::string sink = v;
    if (auto problem = check_sink(sink, fs::current_path()); !problem.empty()) {
      fail_env("CUDAMUX_LOG_SINK", v, problem);
    }
    s.log_sink = sink;
    s.origins["log.sink"] = "CUDAMUX_LOG_SINK";
  }
}

Settings defaults() {
  Settings s;
  s.source = kBuiltInSource;
  for (const char* key : {"backend", "plugin_path", "log.level", "log.sink", "driver_version"}) {
    s.origins[key] = kBuiltInOrigin;
  }
  return s;
}

}  // namespace

std::vector<std::string> candidate_files() {
  if (const char* explicit_file = env("CUDAMUX_CONFIG")) return {explicit_file};
  std::vector<std::string> out;
  // XDG base-directory spec: a relative XDG_CONFIG_HOME is invalid and ignored.
  const char* xdg = env("XDG_CONFIG_HOME");
  if (xdg != nullptr && fs::path(xdg).is_absolute()) {
    out.push_back((fs::path(xdg) / "cudamux" / "config.toml").string());
  } else if (const char* home = env("HOME")) {
    out.push_back((fs::path(home) / ".config" / "cudamux" / "config.toml").string());
  }
  out.emplace_back("/etc/cudamux/config.toml");
  return out;
}

Settings load_file(const std::string& path) {
  Settings s = defaults();
  std::error_code ec;
  if (!fs::exists(path, ec)) throw ConfigError("config file '" + path + "' does not exist");
  s.candidates = {path};
  parse_file_into(s, path);
  check_unknown(s);
  return s;
}

Settings load() {
  Settings s = defaults();
  s.candidates = candidate_files();
  if (const char* explicit_file = env("CUDAMUX_CONFIG")) {
    std::error_code ec;
    if (!fs::exists(explicit_file, ec)) {
      throw ConfigError("environment variable CUDAMUX_CONFIG='" + std::string(explicit_file) +
                        "': file does not exist (unset it to use the default lookup)");
    }
    parse_file_into(s, explicit_file);
  } else {
    for (const std::string& candidate : s.candidates) {
      std::error_code ec;
      // A file that exists but can't be read is an error, not a silent fall-through.
      if (fs::exists(candidate, ec)) {
        parse_file_into(s, candidate);
        break;
      }
    }
  }
  apply_env(s);
  check_unknown(s);
  return s;
}

}  // namespace cudamux::config
