// Kernels on the mock (issue 3): the compiler (CUDA C++ -> one CPU shared object per
// program, wrapped in a text module image), module loading, and the block worker pool.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "cudamux/backend.hpp"
#include "cudamux/device_abi.h"

namespace spdlog {
class logger;
}

namespace cudamux::mock {

namespace be = cudamux::backend;

// Image text: this line, a newline, the base64 of the shared object, a NUL.
inline constexpr std::string_view kImageHeader = "// cudamux mock module v1";
inline constexpr int kDefaultArch = 90;

// Where the mock finds its device runtime and built-in headers: beside the plugin folder
// (lib/cudamux/ of the build or install tree).
struct DeviceFiles {
  std::string include_dir;      // lib/cudamux/mock-include
  std::string lib_dir;          // lib/cudamux (libcudamux-device.so)
  std::string plugin_identity;  // path, size and mtime of the plugin (part of cache keys)
};
DeviceFiles device_files();

// A short tag of the host CPU (vendor, family, model, flags). Modules are built with
// -march=native: images carry the tag and load only where it matches (no SIGILL elsewhere).
const std::string& host_cpu_tag();

struct CompilerSettings {
  std::string compiler;   // "g++" unless [mock] compiler / CUDAMUX_MOCK_CXX say otherwise
  std::string cache_dir;  // empty: caching off
  bool fission = true;    // [mock] fission; CUDAMUX_MOCK_FISSION=0/1 overrides
  bool memcheck = false;  // [mock] memcheck; CUDAMUX_MEMCHECK=0/1 overrides (issue 9)
};
// [mock] compiler/cache_dir plus the environment (CUDAMUX_MOCK_CXX, CUDA_CACHE_DISABLE,
// CUDA_CACHE_PATH, XDG_CACHE_HOME, HOME, CUDAMUX_MOCK_FISSION, CUDAMUX_MEMCHECK).
CompilerSettings compiler_settings(const std::string& config_compiler,
                                   const std::string& config_cache_dir, bool config_fission = true,
                                   bool config_memcheck = false);

class MockCompiler final : public be::Compiler {
 public:
  MockCompiler(CompilerSettings settings, std::shared_ptr<spdlog::logger> log)
      : settings_(std::move(settings)), log_(std::move(log)) {}
  be::Status compile(const be::CompileRequest& request, be::CompileResult& result) override;
  [[nodiscard]] std::vector<int> supported_archs() const override;

  // Counters for tests: compiler runs and cache hits since creation.
  [[nodiscard]] unsigned runs() const noexcept { return runs_.load(); }
  [[nodiscard]] unsigned cache_hits() const noexcept { return hits_.load(); }

 private:
  const CompilerSettings settings_;
  const std::shared_ptr<spdlog::logger> log_;
  std::atomic<unsigned> runs_{0};
  std::atomic<unsigned> hits_{0};
};

// A loaded module: the dlopen'ed shared object, unloaded when the last user goes.
struct LoadedObject {
  void* handle = nullptr;
  const cudamux_module_desc* desc = nullptr;
  std::uintptr_t base = 0;  // load address, to tell the module's symbols from its dependencies'
  int arch = kDefaultArch;
  int fd = -1;                                    // the memfd holding the shared object
  std::map<std::uintptr_t, std::string> symbols;  // .symtab: offset from base -> name
  ~LoadedObject();
};

class MockFunction final : public be::Function {
 public:
  MockFunction(std::shared_ptr<LoadedObject> object, const cudamux_kernel_desc* desc,
               std::string name);
  [[nodiscard]] std::string_view name() const noexcept override { return name_; }
  be::Status attribute(CUfunction_attribute attr, int& value) const override;
  [[nodiscard]] const std::vector<be::ParamInfo>& params() const noexcept override {
    return params_;
  }
  [[nodiscard]] const cudamux_kernel_desc& desc() const noexcept { return *desc_; }
  [[nodiscard]] const std::shared_ptr<LoadedObject>& object() const noexcept { return object_; }

 private:
  std::shared_ptr<LoadedObject> object_;
  const cudamux_kernel_desc* desc_;
  std::string name_;
  std::vector<be::ParamInfo> params_;
};

// cuLink* on the mock (DeviceContext::link): images of whole programs linked into one bundle
// that load_module_image loads as one module: this line with the count and each image's
// length, a newline, the images back to back, a NUL. (Relocatable device code is not linked
// across images: each one must be a whole program.)
inline constexpr std::string_view kBundleHeader = "// cudamux mock bundle v1";
be::Status link_images(const std::vector<be::ModuleImage>& inputs, std::vector<unsigned char>& out,
                       std::string& log);

// Loads an image; native CUresult codes, with a log line for what was wrong.
be::Status load_module_image(const void* image, spdlog::logger& log,
                             std::unique_ptr<be::Module>& out);

// The symbol a name expression of a loaded module became ("" when unknown).
std::string lowered_name(be::Module& module, std::string_view expression);

// Blocks of launches run on these threads (plus the launching queue's own thread).
class BlockPool {
 public:
  explicit BlockPool(unsigned threads);
  ~BlockPool();
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;

  // Runs every block of the launch; returns 0 or the first failing block's CUresult.
  int run(const cudamux_launch& launch, unsigned shared_bytes, std::string& message);

 private:
  struct Job;
  void helper_loop();
  static void work(Job& job);

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job*> jobs_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

// A kernel launch as a queue executes it: validated, arguments copied.
struct KernelLaunch {
  std::shared_ptr<LoadedObject> object;  // keeps the code loaded while the launch is queued
  const cudamux_kernel_desc* desc = nullptr;
  std::shared_ptr<std::vector<std::byte>> args;
  unsigned grid[3]{};
  unsigned block[3]{};
  unsigned shared_bytes = 0;
  BlockPool* pool = nullptr;
  spdlog::logger* log = nullptr;
};
// Validation the core cannot do (launch bounds, dynamic shared memory, argument size).
be::Status prepare_launch(const be::LaunchDesc& desc, BlockPool& pool, spdlog::logger& log,
                          KernelLaunch& out);
// Returns 0 or a CUresult.
int execute_launch(const KernelLaunch& launch);

}  // namespace cudamux::mock
