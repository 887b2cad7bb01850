#include "config.hpp"

#include <spdlog/spdlog.h>
#include <toml++/toml.h>

#include <charconv>
#include <cstdint>
#include <limits>

namespace cudamux::mock {
namespace {

// Thrown inside parse_config only; turned into the returned message.
struct ConfigError {
  std::string message;
};

[[noreturn]] void fail(std::string_view source, const toml::node& node, std::string_view key,
                       std::string_view what) {
  const auto& begin = node.source().begin;
  throw ConfigError{fmt::format("{}:{}:{}: [mock] key '{}': {}",
                                source.empty() ? "<config>" : source, begin.line, begin.column, key,
                                what)};
}

std::string_view type_name(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    default:
      return "a date/time";
  }
}

std::int64_t integer(std::string_view source, const toml::node& node, std::string_view key,
                     std::int64_t lo, std::int64_t hi) {
  const auto v = node.value_exact<std::int64_t>();
  if (!v) fail(source, node, key, fmt::format("expected an integer, got {}", type_name(node)));
  if (*v < lo || *v > hi) {
    fail(source, node, key, fmt::format("{} is out of range [{}, {}]", *v, lo, hi));
  }
  return *v;
}

std::string_view string(std::string_view source, const toml::node& node, std::string_view key) {
  const auto* s = node.as_string();
  if (s == nullptr)
    fail(source, node, key, fmt::format("expected a string, got {}", type_name(node)));
  return s->get();
}

void parse_compute_capability(std::string_view source, const toml::node& node, std::string_view key,
                              DeviceProfile& profile) {
  const auto text = string(source, node, key);
  int major = 0;
  int minor = 0;
  const char* end = text.data() + text.size();
  auto r = std::from_chars(text.data(), end, major);
  bool ok = r.ec == std::errc{} && r.ptr != end && *r.ptr == '.';
  if (ok) {
    r = std::from_chars(r.ptr + 1, end, minor);
    ok = r.ec == std::errc{} && r.ptr == end && major >= 1 && major <= 99 && minor >= 0 &&
         minor <= 9;
  }
  if (!ok)
    fail(source, node, key, fmt::format("expected \"MAJOR.MINOR\" like \"9.0\", got \"{}\"", text));
  profile.attributes[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR] = major;
  profile.attributes[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR] = minor;
}

void parse_attributes(std::string_view source, const toml::table& table, spdlog::logger& log,
                      DeviceProfile& profile) {
  // compute_capability first so that explicit COMPUTE_CAPABILITY_* keys win regardless of order.
  if (const auto* cc = table.get("compute_capability")) {
    parse_compute_capability(source, *cc, "attributes.compute_capability", profile);
  }
  for (const auto& [k, node] : table) {
    const std::string_view name = k.str();
    const std::string key = fmt::format("attributes.{}", name);
    if (name == "compute_capability") continue;
    if (name == "name") {
      const auto text = string(source, node, key);
      if (text.empty()) fail(source, node, key, "the device name must not be empty");
      profile.device_name = std::string(text);
    } else if (const auto attr = attribute_by_name(name)) {
      profile.attributes[*attr] = static_cast<int>(integer(
          source, node, key, std::numeric_limits<int>::min(), std::numeric_limits<int>::max()));
    } else {
      const auto& b = k.source().begin;
      log.warn("{}:{}:{}: [mock] unknown key '{}' ignored", source, b.line, b.column, key);
    }
  }
}

}  // namespace

std::optional<std::string> parse_config(const toml::table* table, std::string_view source,
                                        spdlog::logger& log, MockConfig& out) {
  try {
    const ProfileSpec* spec = find_profile(default_profile_key());
    const toml::table* attributes = nullptr;
    if (table != nullptr) {
      for (const auto& [k, node] : *table) {
        const std::string_view key = k.str();
        if (key == "devices") {
          out.devices = static_cast<int>(integer(source, node, key, 1, kMaxDevices));
        } else if (key == "memory") {
          // At least one page; at most 16 TiB so that 64 devices fit the 47-bit address space.
          out.memory =
              static_cast<std::size_t>(integer(source, node, key, 4096, std::int64_t{1} << 44));
        } else if (key == "profile") {
          const auto name = string(source, node, key);
          spec = find_profile(name);
          if (spec == nullptr) {
            std::string known;
            for (const auto& p : profile_specs()) known += fmt::format(" \"{}\"", p.key);
            fail(source, node, key, fmt::format("unknown profile \"{}\" (known:{})", name, known));
          }
        } else if (key == "compiler") {
          out.compiler = std::string(string(source, node, key));
          if (out.compiler.empty()) fail(source, node, key, "must not be empty");
        } else if (key == "cache_dir") {
          out.cache_dir = std::string(string(source, node, key));
        } else if (key == "fission") {
          const auto v = node.value<bool>();
          if (!v)
            fail(source, node, key, fmt::format("expected a boolean, got {}", type_name(node)));
          out.fission = *v;
        } else if (key == "workers") {
          out.workers = static_cast<int>(integer(source, node, key, 0, 1024));
        } else if (key == "attributes") {
          attributes = node.as_table();
          if (attributes == nullptr) {
            fail(source, node, key, fmt::format("expected a table, got {}", type_name(node)));
          }
        } else {
          const auto& b = k.source().begin;
          log.warn("{}:{}:{}: [mock] unknown key '{}' ignored", source, b.line, b.column, key);
        }
      }
    }
    out.profile = resolve_profile(*spec);
    if (attributes != nullptr) parse_attributes(source, *attributes, log, out.profile);
  } catch (const ConfigError& e) {
    return e.message;
  }
  return std::nullopt;
}

}  // namespace cudamux::mock
