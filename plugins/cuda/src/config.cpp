#include "config.hpp"

#include <spdlog/spdlog.h>
#include <toml++/toml.h>

namespace cudamux::cuda {
namespace {

struct ConfigError {
  std::string message;
};

std::string where(std::string_view source, const toml::node& node) {
  const auto& b = node.source().begin;
  return fmt::format("{}:{}:{}", source.empty() ? "<config>" : source, b.line, b.column);
}

[[noreturn]] void fail(std::string_view source, const toml::node& node, std::string_view key,
                       std::string_view what) {
  throw ConfigError{fmt::format("{}: [cuda] key '{}': {}", where(source, node), key, what)};
}

std::string string(std::string_view source, const toml::node& node, std::string_view key) {
  const auto* s = node.as_string();
  if (s == nullptr) fail(source, node, key, "expected a string");
  if (s->get().empty()) fail(source, node, key, "must not be empty");
  return s->get();
}

}  // namespace

std::optional<std::string> parse_config(const toml::table* table, std::string_view source,
                                        spdlog::logger& log, CudaConfig& out) {
  if (table == nullptr) return std::nullopt;
  try {
    for (const auto& [k, node] : *table) {
      const std::string_view key = k.str();
      if (key == "driver") {
        out.driver = string(source, node, key);
        if (out.driver->front() != '/') {
          fail(source, node, key,
               fmt::format("\"{}\" is not an absolute path (give the full path of NVIDIA's "
                           "libcuda.so.1: a bare name would find cudamux's own)",
                           *out.driver));
        }
        out.driver_origin = where(source, node);
      } else if (key == "nvrtc") {
        out.nvrtc = string(source, node, key);
        if (out.nvrtc->front() != '/') {
          fail(source, node, key,
               fmt::format("\"{}\" is not an absolute path (give the full path of NVIDIA's "
                           "libnvrtc.so.13: a bare name would find cudamux's own)",
                           *out.nvrtc));
        }
        out.nvrtc_origin = where(source, node);
      } else if (key == "nvrtc_search_path") {
        const auto* array = node.as_array();
        if (array == nullptr) fail(source, node, key, "expected an array of folder names");
        std::vector<std::string> dirs;
        for (const auto& entry : *array) dirs.push_back(string(source, entry, key));
        out.nvrtc_search = std::move(dirs);
      } else if (key == "search_path") {
        const auto* array = node.as_array();
        if (array == nullptr) fail(source, node, key, "expected an array of folder names");
        std::vector<std::string> dirs;
        for (const auto& entry : *array) dirs.push_back(string(source, entry, key));
        out.search = std::move(dirs);
      } else if (key == "contexts") {
        const std::string mode = string(source, node, key);
        if (mode == "primary") {
          out.contexts = ContextMode::primary;
        } else if (mode == "create") {
          out.contexts = ContextMode::create;
        } else {
          fail(source, node, key,
               fmt::format("unknown mode \"{}\" (known: \"primary\" \"create\")", mode));
        }
      } else {
        const auto& b = k.source().begin;
        log.warn("{}:{}:{}: [cuda] unknown key '{}' ignored", source, b.line, b.column, key);
      }
    }
  } catch (const ConfigError& e) {
    return e.message;
  }
  return std::nullopt;
}

}  // namespace cudamux::cuda
