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
      // "unsupported": the device cannot answer it (cuDeviceGetAttribute refuses it with
      // CUDA_ERROR_NOT_SUPPORTED), for testing programs' and cudamux's handling of that.
      if (const auto* text = node.as_string()) {
        if (text->get() != "unsupported")
          fail(source, node, key,
               fmt::format("expected an integer or \"unsupported\", got \"{}\"", text->get()));
        profile.attributes[*attr] = std::nullopt;
        continue;
      }
      profile.attributes[*attr] = static_cast<int>(integer(
          source, node, key, std::numeric_limits<int>::min(), std::numeric_limits<int>::max()));
    } else {
      const auto& b = k.source().begin;
      log.warn("{}:{}:{}: [mock] unknown key '{}' ignored", source, b.line, b.column, key);
    }
  }
}

// One [[mock.faults]] entry: call and error are required; unknown keys are errors (a
// misspelt `count` would otherwise make a fault fire forever).
FaultSpec parse_fault(std::string_view source, const toml::node& node, std::size_t index) {
  const std::string base = fmt::format("faults[{}]", index);
  const auto* t = node.as_table();
  if (t == nullptr)
    fail(source, node, base, fmt::format("expected a table, got {}", type_name(node)));
  FaultSpec f;
  bool has_call = false;
  bool has_error = false;
  for (const auto& [k, value] : *t) {
    const std::string_view name = k.str();
    const std::string key = fmt::format("{}.{}", base, name);
    if (name == "call") {
      f.call = std::string(string(source, value, key));
      f.ops = operations_of(f.call);
      if (f.ops.empty())
        fail(source, value, key,
             fmt::format(
                 "unknown call \"{}\": expected the base name of a CUDA entry point the mock "
                 "can fail, like \"cuMemAlloc\", \"cudaMalloc\", \"cuLaunchKernel\" or "
                 "\"nvrtcCompileProgram\" (list in docs/backends/mock.md)",
                 f.call));
      has_call = true;
    } else if (name == "error") {
      f.error_name = std::string(string(source, value, key));
      const auto code = error_by_name(f.error_name);
      if (!code)
        fail(source, value, key,
             fmt::format("unknown error \"{}\": expected a CUresult name like "
                         "\"CUDA_ERROR_OUT_OF_MEMORY\" or a mock error (\"MOCK_ERROR_UNMAPPED\", "
                         "\"MOCK_ERROR_UNMAPPED_2\")",
                         f.error_name));
      f.error = *code;
      has_error = true;
    } else if (name == "after") {
      f.after = static_cast<std::uint64_t>(
          integer(source, value, key, 0, std::numeric_limits<std::int64_t>::max()));
    } else if (name == "count") {
      f.count = static_cast<std::uint64_t>(
          integer(source, value, key, 1, std::numeric_limits<std::int64_t>::max()));
    } else {
      fail(source, value, key, "unknown key (a fault has call, error, after and count)");
    }
  }
  if (!has_call) fail(source, node, base + ".call", "missing: every fault names the call it fails");
  if (!has_error)
    fail(source, node, base + ".error", "missing: every fault names the error it injects");
  return f;
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
        } else if (key == "memcheck") {
          const auto v = node.value<bool>();
          if (!v)
            fail(source, node, key, fmt::format("expected a boolean, got {}", type_name(node)));
          out.memcheck = *v;
        } else if (key == "workers") {
          out.workers = static_cast<int>(integer(source, node, key, 0, 1024));
        } else if (key == "faults") {
          const auto* list = node.as_array();
          if (list == nullptr)
            fail(source, node, key,
                 fmt::format("expected an array of tables ([[mock.faults]]), got {}",
                             type_name(node)));
          for (std::size_t i = 0; i < list->size(); ++i)
            out.faults.push_back(parse_fault(source, *list->get(i), i));
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
