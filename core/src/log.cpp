#include "cudamux/log.hpp"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>

#include <atomic>
#include <exception>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include "cudamux/api_support.hpp"

namespace cudamux::log {
namespace {

constexpr const char* kConsolePattern = "[cudamux] [%^%l%$] %v";
// Several processes may append to one file: say when and who.
constexpr const char* kFilePattern = "[%Y-%m-%d %H:%M:%S.%e] [cudamux] [%P:%t] [%l] %v";

spdlog::level::level_enum to_spdlog(std::string_view level) {
  if (level == "trace") return spdlog::level::trace;
  if (level == "debug") return spdlog::level::debug;
  if (level == "info") return spdlog::level::info;
  if (level == "error") return spdlog::level::err;
  if (level == "critical") return spdlog::level::critical;
  if (level == "off") return spdlog::level::off;
  return spdlog::level::warn;  // config validated the name; warn is the default
}

std::shared_ptr<spdlog::logger> make_logger(spdlog::sink_ptr sink, spdlog::level::level_enum lvl) {
  auto logger = std::make_shared<spdlog::logger>("cudamux", std::move(sink));
  logger->set_level(lvl);
  // Programs crash or _exit() with work in flight; a diagnostic log must not lose lines.
  logger->flush_on(spdlog::level::trace);
  return logger;
}

std::shared_ptr<spdlog::logger> make_default() {
  auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  sink->set_pattern(kConsolePattern);
  return make_logger(std::move(sink), spdlog::level::warn);
}

// Intentionally leaked: CUDA calls from static destructors and atexit handlers
// must still find a logger after this library's own statics are gone. A mutex
// rather than atomic<shared_ptr>: GCC 12's is lock-based anyway, and opaque to TSan.
struct Current {
  std::mutex mutex;
  std::shared_ptr<spdlog::logger> logger = make_default();
};
Current& current() {
  static auto* holder = new Current;
  return *holder;
}

}  // namespace

std::shared_ptr<spdlog::logger> get() {
  Current& c = current();
  std::lock_guard lock(c.mutex);
  return c.logger;
}

void configure(const config::Settings& settings) {
  const auto level = to_spdlog(settings.log_level);
  std::string fallback_error;
  spdlog::sink_ptr sink;
  if (settings.log_sink == "stdout") {
    sink = std::make_shared<spdlog::sinks::stdout_color_sink_mt>();
    sink->set_pattern(kConsolePattern);
  } else if (settings.log_sink.rfind("file:", 0) == 0) {
    const std::string path = settings.log_sink.substr(5);
    try {
      sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(path, /*truncate=*/false);
      sink->set_pattern(kFilePattern);
    } catch (const std::exception& e) {
      fallback_error =
          "cannot open log file '" + path + "' (" + e.what() + "); logging to stderr instead";
    }
  }
  if (!sink) {
    sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
    sink->set_pattern(kConsolePattern);
  }
  auto logger = make_logger(std::move(sink), level);
  {
    Current& c = current();
    std::lock_guard lock(c.mutex);
    c.logger = logger;  // the previous one lives on in whoever still holds it
  }
  api::detail::g_trace.store(level == spdlog::level::trace, std::memory_order_relaxed);

  if (!fallback_error.empty()) logger->error("{}", fallback_error);
  if (logger->should_log(spdlog::level::debug)) {
    std::string paths;
    for (const std::string& p : settings.plugin_paths) paths += (paths.empty() ? "" : ":") + p;
    const std::pair<const char*, std::string> values[] = {
        {"backend", settings.backend},
        {"plugin_path", paths},
        {"log.level", settings.log_level},
        {"log.sink", settings.log_sink},
        {"driver_version", std::to_string(settings.driver_version)}};
    logger->debug("configuration from {}", settings.source);
    for (const auto& [key, value] : values) {
      const auto origin = settings.origins.find(key);
      logger->debug("  {} = '{}' (from {})", key, value,
                    origin == settings.origins.end() ? "built-in default" : origin->second);
    }
  }
}

}  // namespace cudamux::log
