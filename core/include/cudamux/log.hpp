// The "cudamux" logger. Never registered with spdlog's global registry: libcuda is
// loaded into arbitrary programs, some of which use (the same shared) spdlog themselves.
#pragma once

#include <spdlog/logger.h>

#include <memory>

#include "cudamux/config.hpp"

// The core's interface to the API libraries (libcuda, libnvrtc, libcudart) and tests:
// exported from libcudamux-core.so, everything else there stays hidden.
#pragma GCC visibility push(default)

namespace cudamux::log {

// Replaces the logger with one per settings (level, sink; pattern
// "[cudamux] [level] message", file sinks add time and pid:tid), sets
// api::detail::g_trace to (level == trace), then logs at debug level where each
// setting came from. settings.warnings are the caller's to log (cuInit does).
// Never throws: a file sink that can't be opened falls back to stderr with an
// error message saying so.
void configure(const config::Settings& settings);

// The current logger; before configure(), a stderr logger at warn level so that
// early errors are never lost. Cheap enough to call per message.
std::shared_ptr<spdlog::logger> get();

}  // namespace cudamux::log

#pragma GCC visibility pop
