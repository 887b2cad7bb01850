#include "cudamux/plugin_loader.hpp"

#include <dlfcn.h>
#include <link.h>
#include <signal.h>
#include <spdlog/logger.h>
#include <unistd.h>

#include <algorithm>
#include <boost/dll/shared_library.hpp>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <sstream>
#include <thread>
#include <utility>

#include "cudamux/log.hpp"

namespace cudamux::plugins {
namespace {

namespace fs = std::filesystem;

struct SearchDir {
  std::string path;
  std::string origin;  // "CUDAMUX_PLUGIN_PATH", "file:line:col" or "default"
};

// Everything a loaded plugin needs to stay valid. Never destroyed: see the header.
struct Holder {
  boost::dll::shared_library library;
  std::unique_ptr<toml::table> config;  // the plugin may keep pointers into its table
  // The whole parsed config when the caller gave it up (load_backend(Settings&&)): the
  // plugin's table then points into it and keeps its source positions, which a copy
  // of a toml++ table loses (plugins' config errors name file:line:column).
  std::unique_ptr<toml::table> document;
  const toml::table* host_table = nullptr;  // what the plugin was given
  backend::Backend* backend = nullptr;
};

// Intentionally leaked (reachable from a static pointer, so LeakSanitizer is quiet):
// destroying a Holder would dlclose() the plugin under objects that still use it.
std::mutex& holders_mutex() {
  static auto* m = new std::mutex;
  return *m;
}
std::vector<Holder*>& holders() {
  static auto* v = new std::vector<Holder*>;
  return *v;
}

std::vector<SearchDir> search_dirs(const config::Settings& s) {
  std::vector<SearchDir> out;
  for (std::size_t i = 0; i < s.plugin_paths.size(); ++i) {
    out.push_back({s.plugin_paths[i], i < s.plugin_path_origins.size()
                                          ? s.plugin_path_origins[i]
                                          : std::string("plugin_path")});
  }
  if (s.use_default_plugin_dir) out.push_back({default_plugin_dir(), "default"});
  return out;
}

std::string searched_list(const std::vector<SearchDir>& dirs, std::string_view file_name) {
  std::string out = "\n  searched, in order:";
  for (const SearchDir& d : dirs) {
    out += "\n    " + (fs::path(d.path) / file_name).string() + "  (from " + d.origin + ")";
  }
  return out;
}

// First existing plugin file in search order, or empty.
std::string find_plugin(const std::vector<SearchDir>& dirs, std::string_view name) {
  const std::string file = plugin_file_name(name);
  for (const SearchDir& d : dirs) {
    const fs::path candidate = fs::path(d.path) / file;
    std::error_code ec;
    if (fs::exists(candidate, ec)) return candidate.string();
  }
  return {};
}

// Boost.DLL wraps dlerror() as "...load() failed (dlerror system message: TEXT): Bad file
// descriptor"; TEXT is the loader's own, useful message.
std::string loader_message(const std::exception& e) {
  const std::string_view what = e.what();
  constexpr std::string_view kPrefix = "(dlerror system message: ";
  const auto begin = what.find(kPrefix);
  const auto end = what.rfind("): ");
  if (begin == std::string_view::npos || end == std::string_view::npos || end < begin) {
    return std::string(what);
  }
  return std::string(what.substr(begin + kPrefix.size(), end - begin - kPrefix.size()));
}

// ---- cudamux_backend_create under watch (issue 9) -------------------------------------
// A plugin that hangs in its init must not hang the program's cuInit: create() runs on a
// thread of its own and the caller waits at most CUDAMUX_PLUGIN_INIT_TIMEOUT seconds
// (default 120; 0 = no limit, called on the caller's thread). A timed-out thread cannot be
// cancelled safely: it is abandoned (detached; its state is shared, so a late return is
// harmless) and cuInit fails. A plugin that crashes in its init takes the process down,
// as a crashing driver does; a handler installed only around create() first writes one
// line naming the plugin to stderr, then lets the previous disposition act.

constexpr int kDefaultInitTimeoutS = 120;

int init_timeout_seconds(std::shared_ptr<spdlog::logger>& logger) {
  const char* v = std::getenv("CUDAMUX_PLUGIN_INIT_TIMEOUT");
  if (v == nullptr || *v == '\0') return kDefaultInitTimeoutS;
  char* end = nullptr;
  errno = 0;
  const long n = std::strtol(v, &end, 10);
  if (errno != 0 || *end != '\0' || n < 0 || n > 86400) {
    logger->warn("CUDAMUX_PLUGIN_INIT_TIMEOUT='{}' is not a number of seconds (0..86400); using {}",
                 v, kDefaultInitTimeoutS);
    return kDefaultInitTimeoutS;
  }
  return static_cast<int>(n);
}

// The message the crash handler writes: built before create() runs, since the handler
// may only call async-signal-safe functions.
char g_crash_message[1024];
std::size_t g_crash_message_len = 0;
constexpr int kCrashSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
struct sigaction g_previous[std::size(kCrashSignals)];

void on_crash_in_create(int sig) {
  [[maybe_unused]] ssize_t w = ::write(STDERR_FILENO, g_crash_message, g_crash_message_len);
  for (std::size_t i = 0; i < std::size(kCrashSignals); ++i) {
    if (kCrashSignals[i] == sig) ::sigaction(sig, &g_previous[i], nullptr);
  }
  // Pending until this handler returns (the signal is blocked meanwhile); then the
  // previous handler or the default action (core dump) takes it.
  ::raise(sig);
}

class CrashNotice {
 public:
  explicit CrashNotice(const std::string& file) {
    const std::string msg = "cudamux: fatal: backend plugin " + file +
                            " crashed in cudamux_backend_create (its initialisation); the "
                            "process cannot continue\n";
    g_crash_message_len = std::min(msg.size(), sizeof g_crash_message);
    std::memcpy(g_crash_message, msg.data(), g_crash_message_len);
    struct sigaction sa {};
    sa.sa_handler = on_crash_in_create;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;
    for (std::size_t i = 0; i < std::size(kCrashSignals); ++i) {
      ::sigaction(kCrashSignals[i], &sa, &g_previous[i]);
    }
  }
  ~CrashNotice() {
    for (std::size_t i = 0; i < std::size(kCrashSignals); ++i) {
      ::sigaction(kCrashSignals[i], &g_previous[i], nullptr);
    }
  }
  CrashNotice(const CrashNotice&) = delete;
  CrashNotice& operator=(const CrashNotice&) = delete;
};

struct CreateCall {
  std::mutex mutex;
  std::condition_variable done_cv;
  bool done = false;
  backend::Backend* backend = nullptr;
  std::string error;
  std::exception_ptr exception;
};

}  // namespace

std::string plugin_file_name(std::string_view backend_name) {
  return "libcudamux-" + std::string(backend_name) + ".so";
}

std::string core_library_dir() {
  // The core is linked statically into libcuda.so.1 (or into a test executable):
  // the object holding this very function is where the plugins folder hangs off.
  Dl_info info{};
  link_map* map = nullptr;
  fs::path object;
  if (dladdr1(reinterpret_cast<void*>(&core_library_dir), &info, reinterpret_cast<void**>(&map),
              RTLD_DL_LINKMAP) != 0 &&
      map != nullptr && map->l_name != nullptr && map->l_name[0] != '\0') {
    object = map->l_name;
  } else {
    object = "/proc/self/exe";  // the main program has an empty link-map name
  }
  std::error_code ec;
  // Resolve symlinks: /usr/lib/libcuda.so.1 -> /opt/cudamux/lib/libcuda.so.1 means
  // the plugins live under /opt/cudamux/lib.
  fs::path real = fs::canonical(object, ec);
  if (ec) real = object;
  return real.parent_path().string();
}

std::string default_plugin_dir() {
  return (fs::path(core_library_dir()) / "cudamux" / "plugins").string();
}

std::vector<std::string> search_paths(const config::Settings& settings) {
  std::vector<std::string> out;
  for (SearchDir& d : search_dirs(settings)) out.push_back(std::move(d.path));
  return out;
}

namespace detail {

AmdGpuProbe probe_amd_gpu(const std::string& root) {
  const fs::path kfd = fs::path(root) / "dev" / "kfd";
  std::error_code ec;
  if (!fs::exists(kfd, ec)) return {false, kfd.string() + " does not exist"};
  const fs::path nodes = fs::path(root) / "sys" / "class" / "kfd" / "kfd" / "topology" / "nodes";
  int gpus = 0;
  for (fs::directory_iterator it(nodes, ec), end; !ec && it != end; it.increment(ec)) {
    std::ifstream props(it->path() / "properties");
    std::string key;
    long long value = 0;
    while (props >> key >> value) {
      if (key == "simd_count") {
        if (value > 0) ++gpus;
        break;
      }
    }
  }
  if (gpus == 0) {
    return {false,
            kfd.string() + " exists but no node under " + nodes.string() + " has simd_count > 0"};
  }
  std::string detail = std::to_string(gpus) + " GPU node(s) under " + nodes.string();
  if (::access(kfd.c_str(), R_OK | W_OK) != 0) {
    detail +=
        "; but " + kfd.string() + " is not accessible to this user (add it to the 'render' group?)";
  }
  return {true, std::move(detail)};
}

NvidiaGpuProbe probe_nvidia_gpu(const std::string& root) {
  const fs::path version = fs::path(root) / "proc" / "driver" / "nvidia" / "version";
  const fs::path dev = fs::path(root) / "dev" / "nvidia0";
  std::error_code ec;
  if (fs::exists(version, ec)) {
    std::ifstream in(version);
    std::string first;
    std::getline(in, first);
    return {true, version.string() + (first.empty() ? std::string() : ": " + first)};
  }
  if (fs::exists(dev, ec)) return {true, dev.string() + " exists"};
  return {false, "neither " + version.string() + " nor " + dev.string() + " exists"};
}

AutoChoice choose_auto(const AmdGpuProbe& amd, bool hip_plugin, const NvidiaGpuProbe& nvidia,
                       bool cuda_plugin) {
  if (amd.present && hip_plugin)
    return {"hip", "auto: AMD GPU found (" + amd.detail + "), using hip"};
  if (amd.present) {
    return {"mock",
            "auto: AMD GPU found (" + amd.detail + ") but no " + plugin_file_name("hip") +
                " in the plugin search path, using mock",
            true};
  }
  const std::string no_amd = "auto: no AMD GPU found (" + amd.detail + "), ";
  if (nvidia.present && cuda_plugin) {
    return {"cuda", no_amd + "NVIDIA GPU found (" + nvidia.detail + "), using cuda"};
  }
  if (nvidia.present) {
    return {"mock",
            no_amd + "NVIDIA GPU found (" + nvidia.detail + ") but no " + plugin_file_name("cuda") +
                " in the plugin search path, using mock",
            true};
  }
  return {"mock", no_amd + "no NVIDIA GPU found (" + nvidia.detail + "), using mock"};
}

}  // namespace detail

namespace {
LoadedBackend load_backend_impl(const config::Settings& settings,
                                std::shared_ptr<spdlog::logger> logger,
                                std::unique_ptr<toml::table> document);
}  // namespace

LoadedBackend load_backend(const config::Settings& settings,
                           std::shared_ptr<spdlog::logger> logger) {
  return load_backend_impl(settings, std::move(logger), nullptr);
}

LoadedBackend load_backend(config::Settings&& settings, std::shared_ptr<spdlog::logger> logger) {
  auto document = std::make_unique<toml::table>(std::move(settings.document));
  return load_backend_impl(settings, std::move(logger), std::move(document));
}

namespace {
LoadedBackend load_backend_impl(const config::Settings& settings,
                                std::shared_ptr<spdlog::logger> logger,
                                std::unique_ptr<toml::table> document) {
  if (!logger) logger = log::get();
  const std::vector<SearchDir> dirs = search_dirs(settings);

  LoadedBackend result;
  if (settings.backend == "auto") {
    const detail::AmdGpuProbe amd = detail::probe_amd_gpu("/");
    const detail::NvidiaGpuProbe nvidia = detail::probe_nvidia_gpu("/");
    detail::AutoChoice choice = detail::choose_auto(amd, !find_plugin(dirs, "hip").empty(), nvidia,
                                                    !find_plugin(dirs, "cuda").empty());
    result.name = std::move(choice.name);
    result.reason = std::move(choice.reason);
    if (choice.warn) logger->warn("{}", result.reason);
  } else {
    const auto origin = settings.origins.find("backend");
    result.name = settings.backend;
    result.reason =
        "backend '" + settings.backend + "' set by " +
        (origin == settings.origins.end() ? std::string("configuration") : origin->second);
  }

  const std::string file_name = plugin_file_name(result.name);
  const std::string searched = searched_list(dirs, file_name);
  const std::string what =
      "cannot load cudamux backend '" + result.name + "' (" + result.reason + ")";

  result.file = find_plugin(dirs, result.name);
  if (result.file.empty()) {
    throw PluginError(what + ": no " + file_name + " found in the plugin search path" + searched +
                      "\n  set CUDAMUX_PLUGIN_PATH or plugin_path to the folder holding it, or "
                      "choose another backend with CUDAMUX_BACKEND");
  }
  const std::string from = what + " from " + result.file + ": ";
  logger->debug("loading backend '{}' from {} ({})", result.name, result.file, result.reason);

  auto holder = std::make_unique<Holder>();
  try {
    // rtld_now: an unresolved symbol fails here, with a message, not mid-run.
    holder->library.load(boost::dll::fs::path(result.file),
                         boost::dll::load_mode::rtld_local | boost::dll::load_mode::rtld_now);
  } catch (const std::exception& e) {
    throw PluginError(from + "the dynamic loader refused it: " + loader_message(e) + searched);
  }

  using AbiVersionFn = std::uint32_t();
  using CreateFn = backend::Backend*(const backend::PluginHost&, std::string&);
  AbiVersionFn* abi_version = nullptr;
  CreateFn* create = nullptr;
  for (const char* symbol : {backend::kAbiVersionSymbol, backend::kCreateSymbol}) {
    if (!holder->library.has(symbol)) {
      throw PluginError(from + "not a cudamux plugin: it does not export '" + symbol +
                        "' (plugins export cudamux_backend_abi_version and "
                        "cudamux_backend_create with CUDAMUX_PLUGIN_EXPORT)" +
                        searched);
    }
  }
  try {
    abi_version = &holder->library.get<AbiVersionFn>(backend::kAbiVersionSymbol);
    create = &holder->library.get<CreateFn>(backend::kCreateSymbol);
  } catch (const std::exception& e) {
    throw PluginError(from + "cannot resolve its entry symbols: " + loader_message(e) + searched);
  }

  // Keep the library loaded whatever happens next: its static constructors have run.
  Holder* h = holder.get();
  {
    std::lock_guard lock(holders_mutex());
    holders().push_back(holder.release());
  }

  const std::uint32_t version = abi_version();
  if (version != backend::kAbiVersion) {
    throw PluginError(from + "plugin ABI version " + std::to_string(version) +
                      ", this cudamux expects " + std::to_string(backend::kAbiVersion) +
                      " (rebuild the plugin against this cudamux's backend.hpp)" + searched);
  }

  if (document) {
    h->document = std::move(document);
    if (toml::table* table = (*h->document)[result.name].as_table()) h->host_table = table;
  } else if (const toml::table* table = settings.document[result.name].as_table()) {
    h->config = std::make_unique<toml::table>(*table);
    h->host_table = h->config.get();
  }
  const backend::PluginHost host{backend::kAbiVersion, logger, h->host_table, settings.source};
  const int timeout_s = init_timeout_seconds(logger);
  auto call = std::make_shared<CreateCall>();
  auto run_create = [call, create, host] {
    backend::Backend* b = nullptr;
    std::string err;
    std::exception_ptr ex;
    try {
      b = create(host, err);
    } catch (...) {
      ex = std::current_exception();
    }
    std::lock_guard lock(call->mutex);
    call->backend = b;
    call->error = std::move(err);
    call->exception = ex;
    call->done = true;
    call->done_cv.notify_all();
  };
  {
    CrashNotice notice(result.file);
    if (timeout_s == 0) {
      run_create();
    } else {
      std::thread(run_create).detach();
      std::unique_lock lock(call->mutex);
      if (!call->done_cv.wait_for(lock, std::chrono::seconds(timeout_s),
                                  [&] { return call->done; })) {
        // A late crash of the abandoned thread gets the previous disposition (restored
        // when `notice` goes out of scope).
        throw PluginError(from + "cudamux_backend_create did not return within " +
                          std::to_string(timeout_s) +
                          " s (CUDAMUX_PLUGIN_INIT_TIMEOUT; 0 waits forever); its thread is "
                          "abandoned" +
                          searched);
      }
    }
  }
  std::string error;
  {
    std::lock_guard lock(call->mutex);
    h->backend = call->backend;
    error = call->error;
    if (call->exception) {
      try {
        std::rethrow_exception(call->exception);
      } catch (const std::exception& e) {
        throw PluginError(from + "cudamux_backend_create threw: " + e.what() + searched);
      } catch (...) {
        throw PluginError(from + "cudamux_backend_create threw a non-standard exception" +
                          searched);
      }
    }
  }
  if (h->backend == nullptr) {
    throw PluginError(from + "the plugin failed to start: " +
                      (error.empty() ? std::string("(it gave no reason)") : error) + searched);
  }
  if (h->backend->name() != result.name) {
    logger->warn("plugin {} calls itself '{}', expected '{}'", result.file, h->backend->name(),
                 result.name);
  }
  logger->debug("backend '{}' created", result.name);  // cuInit logs the choice at info
  result.backend = h->backend;
  return result;
}
}  // namespace

}  // namespace cudamux::plugins
