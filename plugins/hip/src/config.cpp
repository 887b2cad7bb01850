#include "config.hpp"

#include <spdlog/spdlog.h>
#include <toml++/toml.h>

#include <cstdlib>

#include "compiler.hpp"

namespace cudamux::hip {
namespace {

struct ConfigError {
  std::string message;
};

std::string where(std::string_view source, const toml::node& node) {
  const auto& b = node.source().begin;
  return fmt::format("{}:{}:{}", source.empty() ? "<config>" : source, b.line, b.column);
}

std::string string(std::string_view source, const toml::node& node, std::string_view key) {
  const auto* s = node.as_string();
  if (s == nullptr)
    throw ConfigError{
        fmt::format("{}: [hip] key '{}': expected a string", where(source, node), key)};
  if (s->get().empty())
    throw ConfigError{
        fmt::format("{}: [hip] key '{}': must not be empty", where(source, node), key)};
  return s->get();
}

}  // namespace

std::optional<std::string> parse_config(const toml::table* table, std::string_view source,
                                        spdlog::logger& log, HipConfig& out) {
  try {
    if (table != nullptr) {
      for (const auto& [k, node] : *table) {
        const std::string_view key = k.str();
        if (key == "runtime") {
          out.runtime = string(source, node, key);
        } else if (key == "hiprtc") {
          out.hiprtc = string(source, node, key);
        } else if (key == "offload_arch") {
          out.offload_arch = string(source, node, key);
          if (!valid_offload_arch(out.offload_arch)) {
            throw ConfigError{fmt::format(
                "{}: [hip] key 'offload_arch': \"{}\" is not supported by the installed "
                "hipRTC; supported: {}",
                where(source, node), out.offload_arch, supported_offload_archs_text())};
          }
        } else {
          const auto& b = k.source().begin;
          log.warn("{}:{}:{}: [hip] unknown key '{}' ignored", source, b.line, b.column, key);
        }
      }
    }
  } catch (const ConfigError& e) {
    return e.message;
  }
  // The environment wins over the file (tests point the backend at a fake runtime).
  if (const char* v = std::getenv("CUDAMUX_HIP_RUNTIME"); v != nullptr && *v != '\0')
    out.runtime = v;
  if (const char* v = std::getenv("CUDAMUX_HIP_HIPRTC"); v != nullptr && *v != '\0') out.hiprtc = v;
  return std::nullopt;
}

}  // namespace cudamux::hip
