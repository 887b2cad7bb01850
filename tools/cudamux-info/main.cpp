// cudamux-info: what cudamux does in this environment, like deviceQuery and vulkaninfo.
// Config files and the values that won, every plugin found or refused (with the reason),
// the backend chosen and why, CUDA's environment variables, every device with all its
// attributes, the enum policy per type and the compile cache. --json for scripts.
// docs/tools/cudamux-info.md.
#include <cuda.h>
#include <dlfcn.h>
#include <toml++/toml.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "cudamux/backend.hpp"
#include "cudamux/config.hpp"
#include "cudamux/cuda_env.hpp"
#include "cudamux/enum_policy.hpp"
#include "cudamux/plugin_loader.hpp"

namespace {

namespace fs = std::filesystem;

struct AttributeName {
  const char* name;
  int value;
  const char* aliases;
};
constexpr AttributeName kAttributes[] = {
#define CUDAMUX_DEVICE_ATTRIBUTE(name, value, aliases) {#name, value, aliases},
#include "device_attributes.inc"
#undef CUDAMUX_DEVICE_ATTRIBUTE
};

struct EnumType {
  const char* name;
  bool output;
};
constexpr EnumType kEnumTypes[] = {
#define CUDAMUX_ENUM_TYPE(name, output, ...) {#name, output},
#include "cudamux/enum_types.inc"
#undef CUDAMUX_ENUM_TYPE
};

std::string env_or(const char* name, const char* fallback = nullptr) {
  const char* v = std::getenv(name);
  if (v) return v;
  return fallback ? fallback : std::string();
}

std::string error_name(CUresult r) {
  const char* name = nullptr;
  if (cuGetErrorName(r, &name) != CUDA_SUCCESS || !name) return "CUresult " + std::to_string(r);
  return name;
}

// --- plugins: each file tried with the loader's checks (loads, exports both entry points,
// ABI version matches); plugins are never unloaded (see plugin_loader.hpp). ---
struct PluginReport {
  std::string name;
  std::string file;
  std::string dir_origin;
  bool usable = false;
  bool shadowed = false;  // an earlier folder has the same name: the loader never reaches this one
  std::string detail;     // "ABI 2" or the reason it is refused
};

PluginReport probe(const fs::path& file) {
  PluginReport r;
  r.file = file.string();
  void* h = dlopen(r.file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    r.detail = std::string("the dynamic loader refused it: ") + (e ? e : "?");
    return r;
  }
  void* abi = dlsym(h, cudamux::backend::kAbiVersionSymbol);
  void* create = dlsym(h, cudamux::backend::kCreateSymbol);
  if (!abi || !create) {
    r.detail = std::string("not a cudamux plugin: it does not export '") +
               (!abi ? cudamux::backend::kAbiVersionSymbol : cudamux::backend::kCreateSymbol) + "'";
    return r;
  }
  const std::uint32_t version = reinterpret_cast<std::uint32_t (*)()>(abi)();
  if (version != cudamux::backend::kAbiVersion) {
    r.detail = "plugin ABI version " + std::to_string(version) + ", this cudamux expects " +
               std::to_string(cudamux::backend::kAbiVersion);
    return r;
  }
  r.usable = true;
  r.detail = "ABI " + std::to_string(version);
  return r;
}

struct SearchDir {
  std::string path;
  std::string origin;
  bool exists = false;
};

std::vector<SearchDir> search_dirs(const cudamux::config::Settings& s) {
  std::vector<SearchDir> out;
  const std::vector<std::string> paths = cudamux::plugins::search_paths(s);
  for (std::size_t i = 0; i < paths.size(); ++i) {
    SearchDir d{paths[i], i < s.plugin_path_origins.size() ? s.plugin_path_origins[i] : "default",
                false};
    if (i >= s.plugin_paths.size()) d.origin = "default (beside libcudamux-core.so.0)";
    std::error_code ec;
    d.exists = fs::is_directory(d.path, ec);
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<PluginReport> scan_plugins(const std::vector<SearchDir>& dirs) {
  std::vector<PluginReport> out;
  std::set<std::string> seen;
  for (const SearchDir& d : dirs) {
    if (!d.exists) continue;
    std::vector<fs::path> files;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(d.path, ec)) {
      const std::string f = entry.path().filename().string();
      if (f.rfind("libcudamux-", 0) == 0 && f.size() > 14 && f.ends_with(".so"))
        files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    for (const fs::path& f : files) {
      const std::string file_name = f.filename().string();
      const std::string name = file_name.substr(11, file_name.size() - 14);
      PluginReport r;
      if (seen.count(name)) {
        r.file = f.string();
        r.shadowed = true;
        r.detail = "shadowed by an earlier folder's " + file_name;
      } else {
        r = probe(f);
        seen.insert(name);
      }
      r.name = name;
      r.dir_origin = d.origin;
      out.push_back(std::move(r));
    }
  }
  return out;
}

// --- the mock's compile cache, resolved as plugins/mock/src/compiler.cpp
// (compiler_settings) does: CUDA_CACHE_DISABLE=1 > [mock] cache_dir > CUDA_CACHE_PATH >
// $XDG_CACHE_HOME/cudamux > ~/.cache/cudamux. Keep in step with it. ---
struct CacheReport {
  std::string path;  // empty: disabled or unknown
  std::string why;
};

CacheReport compile_cache(const std::string& backend, const cudamux::config::Settings& s) {
  if (backend != "mock") return {"", "the '" + backend + "' backend reports no compile cache"};
  if (env_or("CUDA_CACHE_DISABLE") == "1") return {"", "disabled by CUDA_CACHE_DISABLE=1"};
  if (const auto* dir = s.document["mock"]["cache_dir"].as_string()) {
    return {dir->get(), "[mock] cache_dir in " + s.source};
  }
  if (const std::string p = env_or("CUDA_CACHE_PATH"); !p.empty()) return {p, "CUDA_CACHE_PATH"};
  if (const std::string x = env_or("XDG_CACHE_HOME"); !x.empty())
    return {x + "/cudamux", "$XDG_CACHE_HOME/cudamux"};
  if (const std::string h = env_or("HOME"); !h.empty())
    return {h + "/.cache/cudamux", "~/.cache/cudamux"};
  return {"", "no CUDA_CACHE_PATH, XDG_CACHE_HOME or HOME: caching off"};
}

struct Device {
  int ordinal = 0;
  int backend_ordinal = -1;
  std::string name;
  std::string uuid;
  std::string pci_bus_id;
  std::size_t total_memory = 0;
  int cc_major = 0, cc_minor = 0;
  std::vector<std::pair<const AttributeName*, std::optional<int>>>
      attributes;  // nullopt: not supported
};

void usage(std::FILE* to) {
  std::fputs(
      "usage: cudamux-info [--json] [--backend NAME] [--config FILE]\n"
      "  Shows the config files read and the values that won, every plugin found or refused,\n"
      "  the backend chosen and why, CUDA's environment variables, every device with all its\n"
      "  attributes, the enum policy per type and the compile cache.\n"
      "  --json          one JSON document on stdout (logs stay on stderr)\n"
      "  --backend NAME  as CUDAMUX_BACKEND=NAME\n"
      "  --config FILE   as CUDAMUX_CONFIG=FILE\n",
      to);
}

}  // namespace

int main(int argc, char** argv) {
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--json") {
      json = true;
    } else if ((a == "--backend" || a == "--config") && i + 1 < argc) {
      setenv(a == "--backend" ? "CUDAMUX_BACKEND" : "CUDAMUX_CONFIG", argv[++i], 1);
    } else if (a == "--version") {
      std::printf("cudamux %s\n", CUDAMUX_VERSION_STRING);
      return 0;
    } else if (a == "-h" || a == "--help") {
      usage(stdout);
      return 0;
    } else {
      std::fprintf(stderr, "cudamux-info: unknown argument '%s'\n", argv[i]);
      usage(stderr);
      return 2;
    }
  }

  toml::table doc;
  int status = 0;
  doc.insert("version", CUDAMUX_VERSION_STRING);
  {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&cuInit), &info) && info.dli_fname) {
      std::error_code ec;
      const fs::path p = fs::canonical(info.dli_fname, ec);
      doc.insert("libcuda", ec ? std::string(info.dli_fname) : p.string());
    }
  }

  // Configuration: the same load() cuInit runs.
  cudamux::config::Settings settings;
  std::string config_error;
  try {
    settings = cudamux::config::load();
  } catch (const cudamux::config::ConfigError& e) {
    config_error = e.what();
    status = 1;
  }
  toml::table cfg;
  {
    toml::array candidates;
    for (const std::string& c : cudamux::config::candidate_files()) {
      std::error_code ec;
      toml::table t;
      t.insert("file", c);
      t.insert("exists", fs::exists(c, ec));
      candidates.push_back(std::move(t));
    }
    cfg.insert("candidates", std::move(candidates));
    if (!config_error.empty()) cfg.insert("error", config_error);
    cfg.insert("source", settings.source);
    auto origin = [&](const char* key) {
      auto it = settings.origins.find(key);
      return it == settings.origins.end() ? std::string("built-in default") : it->second;
    };
    toml::table values;
    auto value = [&](const char* key, auto v) {
      toml::table t;
      t.insert("value", v);
      t.insert("from", origin(key));
      values.insert(key, std::move(t));
    };
    value("backend", settings.backend);
    value("log.level", settings.log_level);
    value("log.sink", settings.log_sink);
    value("driver_version", static_cast<std::int64_t>(settings.driver_version));
    toml::array paths;
    for (std::size_t i = 0; i < settings.plugin_paths.size(); ++i) {
      toml::table t;
      t.insert("path", settings.plugin_paths[i]);
      t.insert("from",
               i < settings.plugin_path_origins.size() ? settings.plugin_path_origins[i] : "?");
      paths.push_back(std::move(t));
    }
    values.insert("plugin_path", std::move(paths));
    cfg.insert("values", std::move(values));
    toml::array warnings;
    for (const std::string& w : settings.warnings) warnings.push_back(w);
    cfg.insert("warnings", std::move(warnings));
  }
  doc.insert("config", std::move(cfg));

  // Plugins.
  const std::vector<SearchDir> dirs = search_dirs(settings);
  const std::vector<PluginReport> plugins = scan_plugins(dirs);
  {
    toml::array sp;
    for (const SearchDir& d : dirs) {
      toml::table t;
      t.insert("path", d.path);
      t.insert("from", d.origin);
      t.insert("exists", d.exists);
      sp.push_back(std::move(t));
    }
    doc.insert("plugin_search_path", std::move(sp));
    toml::array arr;
    for (const PluginReport& p : plugins) {
      toml::table t;
      t.insert("name", p.name);
      t.insert("file", p.file);
      t.insert("folder_from", p.dir_origin);
      t.insert("status", p.shadowed ? "shadowed" : p.usable ? "ok" : "refused");
      t.insert(p.usable ? "detail" : "reason", p.detail);
      arr.push_back(std::move(t));
    }
    doc.insert("plugins", std::move(arr));
  }

  // Backend and devices, through libcuda.so.1 as a program sees them.
  const CUresult init = config_error.empty() ? cuInit(0) : CUDA_ERROR_INVALID_VALUE;
  std::string backend_name;
  {
    toml::table b;
    b.insert("cuInit", error_name(init));
    if (auto chosen = cudamux::cuda_env::loaded_backend()) {
      backend_name = chosen->name;
      b.insert("name", chosen->name);
      b.insert("file", chosen->file);
      b.insert("reason", chosen->reason);
    } else {
      b.insert("error",
               "no backend loaded (see the log above: cuInit returned " + error_name(init) + ")");
    }
    doc.insert("backend", std::move(b));
  }
  if (init != CUDA_SUCCESS && init != CUDA_ERROR_NO_DEVICE) status = 1;

  {
    toml::table e;
    for (const char* var : {"CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_LAUNCH_BLOCKING",
                            "CUDA_MODULE_LOADING", "CUDA_CACHE_DISABLE", "CUDA_CACHE_PATH"}) {
      if (const char* v = std::getenv(var)) e.insert(var, v);
    }
    toml::table eff;
    eff.insert("launch_blocking",
               cudamux::cuda_env::launch_blocking(std::getenv("CUDA_LAUNCH_BLOCKING")));
    CUmoduleLoadingMode mode{};
    if (init == CUDA_SUCCESS && cuModuleGetLoadingMode(&mode) == CUDA_SUCCESS)
      eff.insert("module_loading", mode == CU_MODULE_EAGER_LOADING ? "EAGER" : "LAZY");
    toml::array notes;
    for (const std::string& n : cudamux::cuda_env::selection_notes()) notes.push_back(n);
    eff.insert("device_selection_notes", std::move(notes));
    toml::table env;
    env.insert("set", std::move(e));
    env.insert("effect", std::move(eff));
    doc.insert("cuda_environment", std::move(env));
  }

  std::vector<Device> devices;
  if (init == CUDA_SUCCESS) {
    int count = 0;
    (void)cuDeviceGetCount(&count);
    const std::vector<int> map = cudamux::cuda_env::visible_backend_ordinals();
    for (int i = 0; i < count; ++i) {
      Device d;
      d.ordinal = i;
      d.backend_ordinal = i < static_cast<int>(map.size()) ? map[static_cast<std::size_t>(i)] : -1;
      CUdevice dev{};
      if (cuDeviceGet(&dev, i) != CUDA_SUCCESS) continue;
      char name[256] = {};
      (void)cuDeviceGetName(name, sizeof name, dev);
      d.name = name;
      CUuuid uuid{};
      if (cuDeviceGetUuid_v2(&uuid, dev) == CUDA_SUCCESS) {
        std::array<unsigned char, 16> u{};
        std::memcpy(u.data(), uuid.bytes, 16);
        d.uuid = cudamux::cuda_env::uuid_string(u);
      }
      char bus[64] = {};
      if (cuDeviceGetPCIBusId(bus, sizeof bus, dev) == CUDA_SUCCESS) d.pci_bus_id = bus;
      (void)cuDeviceTotalMem(&d.total_memory, dev);
      (void)cuDeviceGetAttribute(&d.cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
      (void)cuDeviceGetAttribute(&d.cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
      for (const AttributeName& a : kAttributes) {
        int v = 0;
        const CUresult r = cuDeviceGetAttribute(&v, static_cast<CUdevice_attribute>(a.value), dev);
        d.attributes.emplace_back(&a, r == CUDA_SUCCESS ? std::optional<int>(v) : std::nullopt);
      }
      devices.push_back(std::move(d));
    }
  }
  {
    toml::array arr;
    for (const Device& d : devices) {
      toml::table t;
      t.insert("ordinal", d.ordinal);
      t.insert("backend_ordinal", d.backend_ordinal);
      t.insert("name", d.name);
      t.insert("uuid", d.uuid);
      t.insert("pci_bus_id", d.pci_bus_id);
      t.insert("total_memory", static_cast<std::int64_t>(d.total_memory));
      t.insert("compute_capability", std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor));
      toml::table attrs;
      toml::array unsupported;
      for (const auto& [a, v] : d.attributes) {
        if (v)
          attrs.insert(a->name, *v);
        else
          unsupported.push_back(a->name);
      }
      t.insert("attributes", std::move(attrs));
      t.insert("attributes_not_supported", std::move(unsupported));
      arr.push_back(std::move(t));
    }
    doc.insert("devices", std::move(arr));
  }

  // Enum policy (configured by cuInit from [hallucinate] and CUDAMUX_<Type>_HALLUCINATE).
  toml::table policy;
  for (const EnumType& t : kEnumTypes) {
    if (!t.output) continue;  // input-only types are never hallucinated (docs/policy.md)
    const auto h = cudamux::policy::hallucinate(t.name);
    policy.insert(t.name, h && *h ? "hallucinate" : "strict");
  }
  doc.insert("enum_policy", policy);

  const CacheReport cache = compile_cache(backend_name, settings);
  {
    toml::table c;
    c.insert("path", cache.path);
    c.insert("from", cache.why);
    doc.insert("compile_cache", std::move(c));
  }

  if (json) {
    std::cout << toml::json_formatter{doc} << "\n";
    return status;
  }

  // Text report.
  std::cout << "cudamux " << CUDAMUX_VERSION_STRING << "  ("
            << doc["libcuda"].value_or(std::string("?")) << ")\n";
  std::cout << "\nConfiguration\n  files considered, in order:\n";
  for (const std::string& c : cudamux::config::candidate_files()) {
    std::error_code ec;
    std::cout << "    " << c << (fs::exists(c, ec) ? "" : "  (missing)")
              << (c == settings.source ? "  <- read" : "") << "\n";
  }
  if (!config_error.empty()) std::cout << "  ERROR: " << config_error << "\n";
  std::cout << "  source: " << settings.source << "\n";
  for (const char* key : {"backend", "log.level", "log.sink", "driver_version"}) {
    const auto* t = doc["config"]["values"][key].as_table();
    std::cout << "  " << key << " = ";
    if (const auto* s = (*t)["value"].as_string())
      std::cout << '"' << s->get() << '"';
    else
      std::cout << (*t)["value"].value_or<std::int64_t>(0);
    std::cout << "  (from " << (*t)["from"].value_or(std::string("?")) << ")\n";
  }
  for (std::size_t i = 0; i < settings.plugin_paths.size(); ++i) {
    std::cout << "  plugin_path[" << i << "] = \"" << settings.plugin_paths[i] << "\"  (from "
              << (i < settings.plugin_path_origins.size() ? settings.plugin_path_origins[i] : "?")
              << ")\n";
  }
  for (const std::string& w : settings.warnings) std::cout << "  warning: " << w << "\n";

  std::cout << "\nPlugins\n  search path, in order:\n";
  for (const SearchDir& d : dirs)
    std::cout << "    " << d.path << "  (from " << d.origin << ")"
              << (d.exists ? "" : "  (missing)") << "\n";
  if (plugins.empty()) std::cout << "  no libcudamux-*.so found\n";
  for (const PluginReport& p : plugins) {
    std::cout << "  " << p.name << ": "
              << (p.shadowed ? "shadowed"
                  : p.usable ? "ok"
                             : "REFUSED")
              << "  " << p.file << "\n      " << (p.usable ? "" : "reason: ") << p.detail << "\n";
  }

  std::cout << "\nBackend\n  cuInit: " << error_name(init) << "\n";
  if (auto chosen = cudamux::cuda_env::loaded_backend()) {
    std::cout << "  " << chosen->name << "  (" << chosen->file << ")\n  why: " << chosen->reason
              << "\n";
  } else {
    std::cout << "  none loaded (the log above says why)\n";
  }

  std::cout << "\nCUDA environment\n";
  for (const auto& [k, v] : *doc["cuda_environment"]["set"].as_table())
    std::cout << "  " << k << "=" << v.value_or(std::string()) << "\n";
  std::cout << "  launch blocking: "
            << (doc["cuda_environment"]["effect"]["launch_blocking"].value_or(false) ? "yes" : "no")
            << "\n";
  if (auto m = doc["cuda_environment"]["effect"]["module_loading"].value<std::string>())
    std::cout << "  module loading: " << *m << "\n";
  for (const std::string& n : cudamux::cuda_env::selection_notes())
    std::cout << "  note: " << n << "\n";

  std::cout << "\nDevices: " << devices.size() << "\n";
  for (const Device& d : devices) {
    std::cout << "  Device " << d.ordinal << " (backend device " << d.backend_ordinal
              << "): " << d.name << "\n"
              << "    UUID " << d.uuid << "  PCI " << d.pci_bus_id << "  compute capability "
              << d.cc_major << "." << d.cc_minor << "  memory " << d.total_memory / (1024 * 1024)
              << " MiB\n";
    for (const auto& [a, v] : d.attributes) {
      std::cout << "    " << a->name << " = ";
      if (v)
        std::cout << *v;
      else
        std::cout << "(not supported)";
      if (*a->aliases) std::cout << "  [also " << a->aliases << "]";
      std::cout << "\n";
    }
  }

  std::cout << "\nEnum policy (output types; docs/policy.md)\n";
  std::string strict, hallucinate;
  for (const auto& [k, v] : policy) {
    std::string& list = v.value_or(std::string()) == "hallucinate" ? hallucinate : strict;
    list += (list.empty() ? "" : " ") + std::string(k.str());
  }
  std::cout << "  hallucinate: " << (hallucinate.empty() ? "(none)" : hallucinate)
            << "\n  strict: " << strict << "\n";

  std::cout << "\nCompile cache\n  " << (cache.path.empty() ? "(none)" : cache.path) << "  ("
            << cache.why << ")\n";
  return status;
}
