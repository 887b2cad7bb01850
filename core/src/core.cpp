// Core state, initialisation, error mapping and the per-thread context stack.
#include "core.hpp"

#include <spdlog/spdlog.h>
#include <toml++/toml.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <new>
#include <utility>

#include "cudamux/api_support.hpp"
#include "cudamux/config.hpp"
#include "cudamux/cuda_env.hpp"  // issue 8
#include "cudamux/driver_impl.hpp"
#include "cudamux/enum_policy.hpp"
#include "cudamux/log.hpp"
#include "cudamux/plugin_loader.hpp"
#include "driver_logs.hpp"
#include "prefault.hpp"

namespace cudamux::api::detail {
std::atomic<bool> g_initialized{false};
std::atomic<bool> g_trace{false};
}  // namespace cudamux::api::detail

namespace cudamux::api {

CUresult not_supported(std::atomic<bool>& logged, const char* symbol) noexcept {
  if (!logged.exchange(true, std::memory_order_relaxed)) {
    try {
      cudamux::log::get()->warn(
          "{} is not supported by cudamux yet: returning CUDA_ERROR_NOT_SUPPORTED", symbol);
    } catch (...) {
    }
  }
  return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult on_exception(const char* symbol) noexcept {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    try {
      cudamux::log::get()->error("{}: out of host memory", symbol);
    } catch (...) {
    }
    return CUDA_ERROR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    try {
      cudamux::log::get()->error("{}: internal error: {}", symbol, e.what());
    } catch (...) {
    }
  } catch (...) {
    try {
      cudamux::log::get()->error("{}: internal error (unknown exception)", symbol);
    } catch (...) {
    }
  }
  return CUDA_ERROR_UNKNOWN;
}

void trace_call(const char* symbol, const std::string& args, CUresult result,
                std::chrono::nanoseconds duration) noexcept {
  try {
    const char* name = nullptr;
    if (cudamux::impl::cuGetErrorName(result, &name) != CUDA_SUCCESS) name = "?";
    cudamux::log::get()->trace("{}({}) -> {} [{} ns]", symbol, args, name, duration.count());
  } catch (...) {
  }
}

}  // namespace cudamux::api

namespace cudamux::core {

Core& Core::get() noexcept {
  // Never destroyed: plugin objects and handles may be used from atexit handlers
  // and from other libraries' destructors.
  static Core* instance = new Core();
  return *instance;
}

CUresult Core::initialize(unsigned flags) {
  if (flags != 0) return reject(CUDA_ERROR_INVALID_VALUE, "cuInit", "flags must be 0");
  std::lock_guard lock(init_mutex_);
  if (!init_attempted_) {
    init_attempted_ = true;
    init_result_ = do_initialize();
    if (init_result_ == CUDA_SUCCESS)
      api::detail::g_initialized.store(true, std::memory_order_release);
  }
  return init_result_;
}

// Config, logging and the backend plugin, loaded once per process and shared by cuInit
// and NVRTC, which needs no cuInit (backend_for_compilation). The result is sticky.
CUresult Core::load_backend() {
  std::lock_guard lock(backend_mutex_);
  if (!backend_attempted_) {
    backend_attempted_ = true;
    backend_result_ = do_load_backend();
  }
  return backend_result_;
}

backend::Backend* Core::backend_for_compilation() {
  return load_backend() == CUDA_SUCCESS ? backend_ : nullptr;
}

CUresult Core::do_load_backend() {
  config::Settings settings;
  try {
    settings = config::load();
  } catch (const config::ConfigError& e) {
    log::get()->error("cuInit failed: configuration error: {}", e.what());
    return CUDA_ERROR_INVALID_VALUE;
  }
  try {
    log::configure(settings);
  } catch (const std::exception& e) {
    log::get()->error("cuInit failed: logging configuration: {}", e.what());
    return CUDA_ERROR_INVALID_VALUE;
  }
  logger_ = log::get();
  for (const auto& warning : settings.warnings) logger_->warn("{}", warning);
  try {
    const toml::node* table = settings.document.get("hallucinate");
    policy::configure(table ? table->as_table() : nullptr, settings.source);
  } catch (const policy::PolicyError& e) {
    logger_->error("cuInit failed: enum policy: {}", e.what());
    return CUDA_ERROR_INVALID_VALUE;
  }
  driver_version_ = settings.driver_version;

  try {
    plugins::LoadedBackend loaded = plugins::load_backend(std::move(settings), logger_);
    backend_ = loaded.backend;
    logger_->info("backend '{}' from {} ({})", loaded.name, loaded.file, loaded.reason);
    backend_name_ = loaded.name;  // issue 8: for cudamux-info (cuda_env::loaded_backend)
    backend_file_ = loaded.file;
    backend_reason_ = loaded.reason;
  } catch (const plugins::PluginError& e) {
    logger_->error("cuInit failed: {}", e.what());
    return CUDA_ERROR_SHARED_OBJECT_INIT_FAILED;
  }
  // The code a first kernel load runs, mapped now rather than a page fault at a time then.
  const auto start = std::chrono::steady_clock::now();
  const std::filesystem::path ours[] = {plugins::core_library_dir(),
                                        std::filesystem::path(backend_file_).parent_path()};
  const PrefaultResult mapped = prefault_code(ours);
  logger_->debug(
      "code of {} of cudamux's libraries mapped: {} KiB in {} us{}", mapped.objects,
      mapped.bytes >> 10,
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() -
                                                            start)
          .count(),
      mapped.supported ? "" : " (MADV_POPULATE_READ refused, as before Linux 5.14: none mapped)");
  return CUDA_SUCCESS;
}

CUresult Core::do_initialize() {
  if (CUresult r = load_backend(); r != CUDA_SUCCESS) return r;
  const int count = backend_->devices().count();
  std::vector<backend::DeviceProperties> props(static_cast<std::size_t>(std::max(count, 0)));
  std::vector<cuda_env::DeviceFacts> facts(props.size());
  for (int i = 0; i < count; ++i) {
    auto& p = props[static_cast<std::size_t>(i)];
    if (auto st = backend_->devices().properties(i, p); !st.ok()) {
      logger_->error("cuInit failed: device {} of backend '{}' did not report its properties", i,
                     backend_->name());
      return map(st, "cuInit");
    }
    auto& f = facts[static_cast<std::size_t>(i)];
    f = {p.uuid, p.pci_domain, p.pci_bus, p.pci_device, p.cc_major, p.cc_minor, 0};
    int sms = 0, clock = 0;
    if (backend_->devices().attribute(i, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, sms).ok() &&
        backend_->devices().attribute(i, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, clock).ok())
      f.speed = 1LL * sms * clock;
  }
  // issue 8: CUDA_DEVICE_ORDER and CUDA_VISIBLE_DEVICES decide which backend devices the
  // program sees and their CUDA ordinals (Core::backend_ordinal maps them back).
  cuda_env::Selection sel = cuda_env::select_devices(facts, std::getenv("CUDA_VISIBLE_DEVICES"),
                                                     std::getenv("CUDA_DEVICE_ORDER"));
  for (const std::string& note : sel.notes) logger_->warn("{}", note);
  selection_notes_ = std::move(sel.notes);
  for (const int b : sel.backend_ordinals) {
    auto state = std::make_unique<DeviceState>();
    state->props = props[static_cast<std::size_t>(b)];
    state->backend_ordinal = b;
    logger_->debug("device {} is backend '{}' device {} ({}, {} order)", devices_.size(),
                   backend_->name(), b, state->props.name, sel.order);
    devices_.push_back(std::move(state));
  }
  launch_blocking_ = cuda_env::launch_blocking(std::getenv("CUDA_LAUNCH_BLOCKING"));
  if (launch_blocking_) logger_->info("CUDA_LAUNCH_BLOCKING=1: every launch waits for its kernel");
  const char* loading = std::getenv("CUDA_MODULE_LOADING");
  if (auto mode = cuda_env::module_loading(loading)) {
    module_loading_ =
        *mode == cuda_env::ModuleLoading::eager ? CU_MODULE_EAGER_LOADING : CU_MODULE_LAZY_LOADING;
  } else {
    logger_->warn("CUDA_MODULE_LOADING='{}' is neither LAZY nor EAGER; using LAZY", loading);
  }
  if (count == 0) {
    logger_->warn("backend '{}' reports no devices", backend_->name());
    return CUDA_ERROR_NO_DEVICE;
  }
  if (devices_.empty()) {
    logger_->warn("CUDA_VISIBLE_DEVICES='{}' hides all {} device(s) of backend '{}'",
                  std::getenv("CUDA_VISIBLE_DEVICES"), count, backend_->name());
    return CUDA_ERROR_NO_DEVICE;
  }
  return CUDA_SUCCESS;
}

CUresult Core::map(backend::Status status, const char* what) noexcept {
  if (status.ok()) return CUDA_SUCCESS;
  const auto& errors = backend_->errors();
  if (auto mapped = errors.to_cuda(status.native)) return *mapped;
  // No CUDA counterpart: the central policy decides (strict or hallucinate).
  try {
    logger_->debug("{}: backend '{}' returned {} ({})", what, backend_->name(),
                   errors.native_name(status.native), status.native);
    return static_cast<CUresult>(policy::unmapped("CUresult", backend_->name(), status.native,
                                                  errors.native_name(status.native),
                                                  CUDA_ERROR_UNKNOWN));
  } catch (...) {
    return CUDA_ERROR_UNKNOWN;
  }
}

const Allocation* Core::find_allocation(std::uintptr_t ptr, std::size_t bytes) const noexcept {
  auto it = allocations.upper_bound(ptr);
  if (it == allocations.begin()) return nullptr;
  --it;
  const Allocation& a = it->second;
  if (ptr < a.base || ptr - a.base >= a.size) return nullptr;
  if (bytes > a.size - (ptr - a.base)) return nullptr;
  return &a;
}

const Allocation* Core::find_span(std::uintptr_t ptr, std::size_t bytes) const noexcept {
  if (const Allocation* a = find_allocation(ptr, bytes)) return a;
  const Allocation* first = find_allocation(ptr);
  std::uintptr_t end = 0;
  if (!first || !first->virtual_mapping || __builtin_add_overflow(ptr, bytes, &end)) return nullptr;
  std::uintptr_t covered = first->base + first->size;
  for (auto it = std::next(allocations.find(first->base)); covered < end; ++it) {
    if (it == allocations.end() || it->first != covered || !it->second.virtual_mapping)
      return nullptr;
    covered += it->second.size;
  }
  return first;
}

CUresult reject(CUresult result, const char* function, const char* why) noexcept {
  try {
    const char* name = nullptr;
    cudamux::impl::cuGetErrorName(result, &name);
    log::get()->debug("{}: {} ({})", function, name ? name : "?", why);
  } catch (...) {
  }
  record_driver_log(CU_LOG_LEVEL_ERROR, function, why);
  return result;
}

// --- per-thread context stack ---

namespace {
// The top of the stack is read by almost every call: keep it in initial-exec TLS
// (a dlopen'ed library's general-dynamic TLS costs a __tls_get_addr call).
[[gnu::tls_model("initial-exec")]] thread_local CUcontext t_current = nullptr;
thread_local std::vector<CUcontext> t_below;  // the rest of the stack, bottom first
thread_local std::vector<std::pair<CUcontext, CUstream>> t_per_thread_streams;
}  // namespace

CUcontext current_context_handle() noexcept { return t_current; }

CUresult current_context(Context*& out) noexcept {
  const CUcontext h = t_current;
  if (!h) return CUDA_ERROR_INVALID_CONTEXT;
  out = context_of(h);
  if (!out) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  return sticky_error(*out);  // issue #3: a context hit by a kernel fault stays unusable
}

void push_context(CUcontext h) {
  if (t_current) t_below.push_back(t_current);
  t_current = h;
}
CUcontext pop_context() noexcept {
  const CUcontext top = t_current;
  if (t_below.empty()) {
    t_current = nullptr;
  } else {
    t_current = t_below.back();
    t_below.pop_back();
  }
  return top;
}
void set_current_context(CUcontext h) noexcept { t_current = h; }

// Called when a context dies: it leaves this thread's stack (other threads find a
// stale handle and get CUDA_ERROR_CONTEXT_IS_DESTROYED, as with CUDA).
void forget_context_on_this_thread(CUcontext h) noexcept {
  // NVIDIA's rule (driver 580, H200, 2026-11-27): the destroyed context is popped when it is the
  // top of this thread's stack, once; entries of it further down stay, as stale handles that
  // later calls refuse (CUDA_ERROR_CONTEXT_IS_DESTROYED) until they are popped.
  if (t_current == h) pop_context();
  std::erase_if(t_per_thread_streams, [h](const auto& p) { return p.first == h; });
}

CUresult resolve_stream(CUstream h, bool per_thread_default, Stream*& out) noexcept {
  if (h == nullptr) h = per_thread_default ? CU_STREAM_PER_THREAD : CU_STREAM_LEGACY;
  if (h != CU_STREAM_LEGACY && h != CU_STREAM_PER_THREAD) {
    out = stream_of(h);
    if (!out) return CUDA_ERROR_INVALID_HANDLE;
    return sticky_error(*out->ctx);  // issue #3: sticky kernel errors
  }
  Context* ctx = nullptr;
  if (CUresult r = current_context(ctx); r != CUDA_SUCCESS) return r;
  if (h == CU_STREAM_LEGACY) {
    out = ctx->legacy.get();
    return CUDA_SUCCESS;
  }
  for (const auto& [c, s] : t_per_thread_streams) {
    if (c == ctx->handle) {
      out = stream_of(s);
      if (out) return CUDA_SUCCESS;
    }
  }
  try {
    std::unique_ptr<Stream> stream;
    if (CUresult r = make_stream(*ctx, StreamKind::per_thread, 0, 0, stream); r != CUDA_SUCCESS)
      return r;
    Stream* raw = stream.release();
    const auto handle = Core::get().streams.insert(raw);
    if (!handle) {
      delete raw;
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    raw->handle = reinterpret_cast<CUstream>(handle);
    {
      std::lock_guard lock(ctx->order_mutex);
      ctx->streams.push_back(raw);
    }
    t_per_thread_streams.emplace_back(ctx->handle, raw->handle);
    out = raw;
    return CUDA_SUCCESS;
  } catch (...) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
}

}  // namespace cudamux::core

// --- cuInit / cuDriverGetVersion ---

namespace cudamux::impl {

CUresult cuInit(unsigned int Flags) { return core::Core::get().initialize(Flags); }

CUresult cuDriverGetVersion(int* driverVersion) {
  if (!driverVersion)
    return core::reject(CUDA_ERROR_INVALID_VALUE, "cuDriverGetVersion", "null out-pointer");
  // Before cuInit the config is not read yet; report the compiled-in version then.
  *driverVersion = api::initialized() ? core::Core::get().driver_version() : CUDA_VERSION;
  return CUDA_SUCCESS;
}

}  // namespace cudamux::impl

// --- issue 8: what cudamux-info reports (cudamux/cuda_env.hpp) ---
namespace cudamux::core {
struct Diagnostics {
  static std::optional<cuda_env::BackendChoice> backend() {
    Core& c = Core::get();
    std::lock_guard lock(c.backend_mutex_);
    if (!c.backend_) return std::nullopt;
    return cuda_env::BackendChoice{c.backend_name_, c.backend_file_, c.backend_reason_};
  }
  static std::vector<int> ordinals() {
    Core& c = Core::get();
    std::lock_guard lock(c.init_mutex_);
    std::vector<int> out;
    for (const auto& d : c.devices_) out.push_back(d->backend_ordinal);
    return out;
  }
  static std::vector<std::string> notes() {
    Core& c = Core::get();
    std::lock_guard lock(c.init_mutex_);
    return c.selection_notes_;
  }
};
}  // namespace cudamux::core

namespace cudamux::cuda_env {
std::optional<BackendChoice> loaded_backend() { return core::Diagnostics::backend(); }
std::vector<int> visible_backend_ordinals() { return core::Diagnostics::ordinals(); }
std::vector<std::string> selection_notes() { return core::Diagnostics::notes(); }
}  // namespace cudamux::cuda_env
