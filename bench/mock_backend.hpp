// The mock backend for the benches that drive it directly (bench_kernels, bench_ptx,
// bench_ptx_first_launch): its plugin loaded once from CUDAMUX_MOCK_PLUGIN_PATH, one backend
// per configuration text. A failure prints "<program>: <why>" and exits: a bench without its
// backend has nothing to measure.
#pragma once

#include <dlfcn.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <toml++/toml.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "cudamux/backend.hpp"

namespace cudamux::bench {

[[noreturn]] inline void die(const char* program, const std::string& what) {
  std::fprintf(stderr, "%s: %s\n", program, what.c_str());
  std::exit(1);
}

// `verbose`: the mock's debug log (compile times) on stderr; otherwise nothing is logged.
inline std::unique_ptr<backend::Backend> make_mock_backend(const char* program,
                                                           const std::string& toml_text,
                                                           bool verbose = false) {
  static void* handle = ::dlopen(CUDAMUX_MOCK_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) die(program, ::dlerror());
  auto create = reinterpret_cast<backend::Backend* (*)(const backend::PluginHost&, std::string&)>(
      ::dlsym(handle, backend::kCreateSymbol));
  if (create == nullptr) die(program, "the mock plugin has no backend entry point");
  backend::PluginHost host;
  if (verbose) {
    host.logger = std::make_shared<spdlog::logger>(
        "bench", std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
    host.logger->set_level(spdlog::level::debug);
  } else {
    host.logger =
        std::make_shared<spdlog::logger>("bench", std::make_shared<spdlog::sinks::null_sink_mt>());
  }
  const toml::table doc = toml::parse(toml_text);  // read during creation only
  host.config = doc["mock"].as_table();
  std::string error;
  std::unique_ptr<backend::Backend> b(create(host, error));
  if (!b) die(program, error);
  return b;
}

}  // namespace cudamux::bench
