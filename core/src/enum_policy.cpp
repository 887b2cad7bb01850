// The central enum policy; rules are numbered in docs/policy.md and cited in logs.
#include "cudamux/enum_policy.hpp"

#include <spdlog/spdlog.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <vector>

#include "cudamux/log.hpp"

namespace cudamux::policy {
namespace {

// First invented value of every type: far above what CUDA defines for its result
// types, so invented values read as such in a debugger; collisions are skipped anyway.
constexpr std::int64_t kFirstInvented = 0x10000;

struct TypeState {
  bool output = false;
  std::set<std::int64_t> defined;
  bool hallucinate = false;
  std::int64_t next = kFirstInvented;
  std::map<std::pair<std::string, std::int32_t>, std::int64_t> by_native;  // (backend, native)
  std::map<std::int64_t, Invented> by_value;
  std::set<std::int64_t> warned_strict;  // native values already warned about (strict)
};

struct Registered {
  std::string type;
  bool output;
  std::vector<std::int64_t> defined;
};

struct State {
  std::mutex mutex;
  std::map<std::string, TypeState, std::less<>> types;
  std::vector<Registered> registered;  // register_type calls, re-applied after a reset
  bool default_hallucinate = false;
  bool builtins_loaded = false;
};

State& state() {
  static State* s = new State();  // never destroyed: used from atexit paths too
  return *s;
}

#define CUDAMUX_ENUM_TYPE(NAME, OUTPUT, ...)                \
  {                                                         \
    static constexpr std::int64_t values[] = {__VA_ARGS__}; \
    add_locked(s, #NAME, OUTPUT, values);                   \
  }

void add_locked(State& s, std::string_view type, bool output,
                std::span<const std::int64_t> defined) {
  auto [it, inserted] = s.types.try_emplace(std::string(type));
  if (!inserted) return;
  it->second.output = output;
  it->second.defined.insert(defined.begin(), defined.end());
  it->second.hallucinate = output && s.default_hallucinate;
}

void load_builtins_locked(State& s) {
  if (s.builtins_loaded) return;
  s.builtins_loaded = true;
#include "cudamux/enum_types.inc"
  for (const auto& r : s.registered) add_locked(s, r.type, r.output, r.defined);
}

// The last strict mapping on this thread, for origin_of (rule 3 across libraries).
struct StrictOrigin {
  std::string type;
  std::int64_t generic = 0;
  Origin origin;
};
thread_local std::optional<StrictOrigin> t_strict;

TypeState* find_locked(State& s, std::string_view type) {
  load_builtins_locked(s);
  auto it = s.types.find(type);
  return it == s.types.end() ? nullptr : &it->second;
}

std::string env_name(std::string_view type) {
  return "CUDAMUX_" + std::string(type) + "_HALLUCINATE";
}

// Invented names follow the spelling of the type's own constants where there is one.
std::string invented_name(std::string_view type, std::string_view backend,
                          std::string_view native_name) {
  std::string prefix;
  if (type == "CUresult")
    prefix = "CUDA_ERROR_CUDAMUX_";
  else if (type == "cudaError_t")
    prefix = "cudaErrorCudamux_";
  else if (type == "nvrtcResult")
    prefix = "NVRTC_ERROR_CUDAMUX_";
  else
    prefix = std::string(type) + "_CUDAMUX_";
  return prefix + std::string(backend) + "_" + std::string(native_name);
}

bool set_locked(State& s, std::string_view type, bool enable, std::string* error) {
  if (type == "default") {
    s.default_hallucinate = enable;
    for (auto& [name, t] : s.types) t.hallucinate = t.output && enable;
    return true;
  }
  TypeState* t = find_locked(s, type);
  if (!t) {
    if (error) *error = "unknown CUDA enum type '" + std::string(type) + "'";
    return false;
  }
  if (enable && !t->output) {
    if (error)
      *error =
          "'" + std::string(type) +
          "' only ever flows from the program to the backend; hallucinating it is refused (rule 5)";
    return false;
  }
  t->hallucinate = enable;
  return true;
}

}  // namespace

std::optional<bool> parse_bool(std::string_view text) {
  std::string v(text);
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
  if (v == "1" || v == "true" || v == "t" || v == "yes" || v == "y") return true;
  if (v == "0" || v == "false" || v == "f" || v == "no" || v == "n") return false;
  return std::nullopt;
}

void register_type(std::string_view type, bool output, std::span<const std::int64_t> defined) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  load_builtins_locked(s);
  if (s.types.count(type) == 0)
    s.registered.push_back({std::string(type), output, {defined.begin(), defined.end()}});
  add_locked(s, type, output, defined);
}

bool known_type(std::string_view type) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  return find_locked(s, type) != nullptr;
}

bool is_output_type(std::string_view type) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  const TypeState* t = find_locked(s, type);
  return t && t->output;
}

void configure(const toml::table* hallucinate, const std::string& source) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  load_builtins_locked(s);
  // Rule 6: TOML first ("default" before the named types), then the environment.
  if (hallucinate) {
    auto apply = [&](std::string_view key, const toml::node& node) {
      const auto& where = node.source().begin;
      const auto* value = node.as_boolean();
      if (!value)
        throw PolicyError(source + ":" + std::to_string(where.line) + ":" +
                          std::to_string(where.column) + ": error: key 'hallucinate." +
                          std::string(key) + "': expected a boolean");
      std::string why;
      if (!set_locked(s, key, value->get(), &why))
        throw PolicyError(source + ":" + std::to_string(where.line) + ":" +
                          std::to_string(where.column) + ": error: key 'hallucinate." +
                          std::string(key) + "': " + why);
    };
    if (const toml::node* d = hallucinate->get("default")) apply("default", *d);
    for (const auto& [key, node] : *hallucinate)
      if (key.str() != "default") apply(key.str(), node);
  }
  std::vector<std::string> names{"default"};  // CUDAMUX_default_HALLUCINATE first, like TOML
  names.reserve(s.types.size() + 1);
  for (const auto& [name, t] : s.types) names.push_back(name);
  for (const std::string& name : names) {
    const std::string var = env_name(name);
    const char* raw = std::getenv(var.c_str());
    if (!raw) continue;
    const auto parsed = parse_bool(raw);
    if (!parsed)
      throw PolicyError(
          "environment variable " + var + "='" + raw +
          "': not a boolean; accepted (any case): 1, true, t, yes, y, 0, false, f, no, n (rule 7)");
    std::string why;
    if (!set_locked(s, name, *parsed, &why))
      throw PolicyError("environment variable " + var + ": " + why);
  }
}

bool set_hallucinate(std::string_view type, bool enable, std::string* error) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  return set_locked(s, type, enable, error);
}

std::optional<bool> hallucinate(std::string_view type) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  const TypeState* t = find_locked(s, type);
  if (!t) return std::nullopt;
  return t->hallucinate;
}

std::int64_t unmapped(std::string_view type, std::string_view backend, std::int32_t native,
                      std::string_view native_name, std::int64_t generic) {
  State& s = state();
  std::unique_lock lock(s.mutex);
  TypeState* t = find_locked(s, type);
  if (!t || !t->hallucinate) {
    const bool first = t ? t->warned_strict.insert(native).second : true;
    lock.unlock();
    t_strict = StrictOrigin{std::string(type), generic,
                            Origin{std::string(backend), native, std::string(native_name)}};
    if (first)
      log::get()->warn(
          "{} value {} ({}) of backend '{}' has no CUDA counterpart: the program sees the "
          "generic value {} (rule 2; set CUDAMUX_{}_HALLUCINATE=1 to get a distinct value)",
          type, native_name, native, backend, generic, type);
    return generic;
  }
  const auto key = std::make_pair(std::string(backend), native);
  if (auto it = t->by_native.find(key); it != t->by_native.end()) return it->second;
  std::int64_t value = t->next;
  while (t->defined.count(value) || t->by_value.count(value)) ++value;
  t->next = value + 1;
  Invented inv{value, invented_name(type, backend, native_name),
               "backend '" + std::string(backend) + "' reported " + std::string(native_name) +
                   " (" + std::to_string(native) + "), which " + std::string(type) +
                   " has no name for; value invented by cudamux (docs/policy.md, rule 3)",
               Origin{std::string(backend), native, std::string(native_name)}};
  t->by_native.emplace(key, value);
  const std::string name = inv.name;
  t->by_value.emplace(value, std::move(inv));
  lock.unlock();
  log::get()->warn(
      "{} value {} ({}) of backend '{}' has no CUDA counterpart: hallucinating {} = {} "
      "(rule 3; logged once per value)",
      type, native_name, native, backend, name, value);
  return value;
}

std::optional<Invented> invented(std::string_view type, std::int64_t value) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  const TypeState* t = find_locked(s, type);
  if (!t) return std::nullopt;
  auto it = t->by_value.find(value);
  if (it == t->by_value.end()) return std::nullopt;
  return it->second;
}

std::optional<Origin> origin_of(std::string_view type, std::int64_t value, std::int64_t generic) {
  if (auto inv = invented(type, value)) return std::move(inv->origin);
  if (value != generic || !t_strict || t_strict->type != type || t_strict->generic != generic)
    return std::nullopt;
  std::optional<Origin> out = std::move(t_strict->origin);
  t_strict.reset();
  return out;
}

void reset_for_testing() {
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.types.clear();
  s.default_hallucinate = false;
  s.builtins_loaded = false;
}

}  // namespace cudamux::policy
