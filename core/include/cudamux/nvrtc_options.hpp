// NVRTC compile options -> backend::CompileOptions. Every option NVRTC 13.0 documents is
// mapped to a field, accepted and recorded verbatim in CompileOptions::extra, or rejected
// with NVRTC_ERROR_INVALID_OPTION and a message for the program log.
#pragma once

#include <nvrtc.h>

#include <span>
#include <string>
#include <vector>

#include "cudamux/backend.hpp"

// Exported from libcudamux-core.so (see api_support.hpp).
#pragma GCC visibility push(default)

namespace cudamux::nvrtc_options {

struct Parsed {
  backend::CompileOptions options;
  std::string arch_spelling;          // e.g. "compute_90" / "sm_90a"; empty: the default
  std::string time_file;              // --time=<file>: where to write compile timings
  std::string time_trace_file;        // --fdevice-time-trace=<file>
  bool create_pch = false;            // --create-pch=<file> (explicit PCH: never created here)
  bool auto_pch = false;              // --pch
  bool syntax_only = false;           // --fdevice-syntax-only
  std::vector<std::string> warnings;  // for the program log ("nvrtc: warning: ...")
};

// Parses `options` (NVRTC's argument forms: --long=value, --long value, -short=value,
// -short value, and -Dx / -D x / -Ix / -Ux for the one-letter options). `supported_archs`
// validates --gpu-architecture (empty: any number accepted). On failure returns
// NVRTC_ERROR_INVALID_OPTION and sets `error` to one line naming the option and why.
nvrtcResult parse(std::span<const char* const> options, std::span<const int> supported_archs,
                  Parsed& out, std::string& error);

}  // namespace cudamux::nvrtc_options

#pragma GCC visibility pop
