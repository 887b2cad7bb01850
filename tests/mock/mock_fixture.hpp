// Loads libcudamux-mock.so once per process and creates backends from TOML text.
#pragma once

#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <toml++/toml.h>

#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>

#include "cudamux/backend.hpp"

namespace cudamux::mock::test {

namespace be = cudamux::backend;

struct Plugin {
  using AbiFn = std::uint32_t (*)();
  using CreateFn = be::Backend* (*)(const be::PluginHost&, std::string&);
  AbiFn abi = nullptr;
  CreateFn create = nullptr;

  // Never dlclose'd: backends may outlive a test's scope until process exit.
  static const Plugin& get() {
    static const Plugin plugin = [] {
      Plugin p;
      void* handle = ::dlopen(CUDAMUX_MOCK_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
      if (handle == nullptr) throw std::runtime_error(std::string("dlopen: ") + ::dlerror());
      p.abi = reinterpret_cast<AbiFn>(::dlsym(handle, be::kAbiVersionSymbol));
      p.create = reinterpret_cast<CreateFn>(::dlsym(handle, be::kCreateSymbol));
      if (p.abi == nullptr || p.create == nullptr)
        throw std::runtime_error("missing plugin symbols");
      return p;
    }();
    return plugin;
  }
};

// A backend plus what its creation logged.
struct Created {
  std::unique_ptr<be::Backend> backend;
  std::string error;
  std::shared_ptr<std::ostringstream> log = std::make_shared<std::ostringstream>();
};

// `toml_text` is a whole config file; its [mock] table (if any) goes to the plugin.
inline Created create_backend(const std::string& toml_text = "",
                              const std::string& source = "test/cudamux.toml") {
  Created c;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(*c.log);
  be::PluginHost host;
  host.logger = std::make_shared<spdlog::logger>("mock-test", sink);
  host.logger->set_level(spdlog::level::trace);
  host.config_source = source;
  const toml::table doc = toml::parse(toml_text, source);
  host.config = doc["mock"].as_table();
  c.backend.reset(Plugin::get().create(host, c.error));
  return c;
}

inline std::unique_ptr<be::Backend> make_backend(const std::string& toml_text = "") {
  auto c = create_backend(toml_text);
  if (!c.backend) throw std::runtime_error("mock backend creation failed: " + c.error);
  return std::move(c.backend);
}

inline CUresult cu(be::Status s) { return static_cast<CUresult>(s.native); }

// A backend with one context and a helper for device buffers; small memory keeps OOM tests fast.
class MockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    backend = make_backend(config());
    ASSERT_EQ(cu(backend->open_context(0, 0, ctx)), CUDA_SUCCESS);
  }
  void TearDown() override {
    ctx.reset();
    backend.reset();
  }
  virtual std::string config() { return "[mock]\nmemory = 268435456\n"; }  // 256 MiB

  void* dalloc(std::size_t bytes) {
    void* p = nullptr;
    EXPECT_EQ(cu(ctx->allocate(bytes, &p)), CUDA_SUCCESS);
    return p;
  }
  std::unique_ptr<be::Queue> queue() {
    std::unique_ptr<be::Queue> q;
    EXPECT_EQ(cu(ctx->create_queue(CU_STREAM_NON_BLOCKING, 0, q)), CUDA_SUCCESS);
    return q;
  }
  std::unique_ptr<be::Event> event(unsigned flags = CU_EVENT_DEFAULT) {
    std::unique_ptr<be::Event> e;
    EXPECT_EQ(cu(ctx->create_event(flags, e)), CUDA_SUCCESS);
    return e;
  }

  std::unique_ptr<be::Backend> backend;
  std::unique_ptr<be::DeviceContext> ctx;
};

inline be::CopyDesc copy_1d(void* dst, const void* src, std::size_t bytes) {
  be::CopyDesc d;
  d.dst = dst;
  d.src = src;
  d.width_bytes = bytes;
  return d;
}

inline be::FillDesc fill_1d(void* dst, unsigned elem_size, std::uint32_t value, std::size_t n) {
  be::FillDesc f;
  f.dst = dst;
  f.elem_size = elem_size;
  f.value = value;
  f.width_elems = n;
  return f;
}

}  // namespace cudamux::mock::test
