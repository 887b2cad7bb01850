// NVRTC (libnvrtc.so.13) implemented once in the core: program objects behind validated
// handles, option parsing, and compilation by the active backend's Compiler. NVRTC needs no
// cuInit: Core::backend_for_compilation loads the same config and plugin cuInit uses.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core.hpp"
#include "cudamux/enum_policy.hpp"
#include "cudamux/log.hpp"
#include "cudamux/nvrtc_impl.hpp"
#include "cudamux/nvrtc_options.hpp"
#include "cudamux/nvrtc_support.hpp"

namespace be = cudamux::backend;

// --- support for the generated entry points ---

namespace cudamux::nvrtc_api {

namespace detail {
std::atomic<bool> g_setup_done{false};

void setup_slow() noexcept {
  try {
    // A failure is logged by the loader and reported by the calls that need a backend.
    (void)core::Core::get().backend_for_compilation();
  } catch (...) {
  }
  g_setup_done.store(true, std::memory_order_release);
}
}  // namespace detail

nvrtcResult not_supported(std::atomic<bool>& logged, const char* symbol) noexcept {
  if (!logged.exchange(true, std::memory_order_relaxed)) {
    try {
      log::get()->warn("{} is not supported by cudamux yet: returning NVRTC_ERROR_INTERNAL_ERROR",
                       symbol);
    } catch (...) {
    }
  }
  return NVRTC_ERROR_INTERNAL_ERROR;
}

nvrtcResult on_exception(const char* symbol) noexcept {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    try {
      log::get()->error("{}: out of host memory", symbol);
    } catch (...) {
    }
    return NVRTC_ERROR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    try {
      log::get()->error("{}: internal error: {}", symbol, e.what());
    } catch (...) {
    }
  } catch (...) {
    try {
      log::get()->error("{}: internal error (unknown exception)", symbol);
    } catch (...) {
    }
  }
  return NVRTC_ERROR_INTERNAL_ERROR;
}

void trace_call(const char* symbol, const std::string& args, nvrtcResult result,
                std::chrono::nanoseconds duration) noexcept {
  try {
    log::get()->trace("{}({}) -> {} [{} ns]", symbol, args, nvrtc_impl::nvrtcGetErrorString(result),
                      duration.count());
  } catch (...) {
  }
}

}  // namespace cudamux::nvrtc_api

// --- programs ---

namespace cudamux::nvrtc_core {
namespace {

struct Program {
  std::mutex mutex;  // NVRTC lets programs be used from any thread, one call at a time each
  std::string source;
  std::string name;
  std::vector<std::pair<std::string, std::string>> headers;
  std::vector<std::string> name_expressions;
  int (*callback)(void*, void*) = nullptr;
  void* payload = nullptr;

  // Results of the last nvrtcCompileProgram that reached the compiler.
  bool compile_attempted = false;
  bool compiled = false;  // ... and succeeded
  bool real_arch = false;
  std::string log;
  std::vector<char> image;  // "PTX": the backend's module image
  std::vector<char> cubin;  // the backend's CUBIN form, empty when it has none
  std::vector<std::pair<std::string, std::string>> lowered;
  nvrtcResult pch_status = NVRTC_ERROR_NO_PCH_CREATE_ATTEMPTED;

  // CUBIN: only for a real architecture (sm_XX); the image when the backend has no other form.
  [[nodiscard]] const std::vector<char>* cubin_data() const noexcept {
    if (!compiled || !real_arch) return nullptr;
    return cubin.empty() ? &image : &cubin;
  }
};

// Handles are never reused (a 64-bit counter), so a destroyed handle stays invalid; a
// garbage value is simply not in the map. Objects are shared_ptr so a concurrent destroy
// cannot free a program under a call that found it.
class Registry {
 public:
  nvrtcProgram insert(std::shared_ptr<Program> p) {
    std::lock_guard lock(mutex_);
    const std::uintptr_t h = (next_++ << 4) | kTag;
    programs_.emplace(h, std::move(p));
    return reinterpret_cast<nvrtcProgram>(h);
  }
  std::shared_ptr<Program> find(nvrtcProgram prog) {
    std::lock_guard lock(mutex_);
    auto it = programs_.find(reinterpret_cast<std::uintptr_t>(prog));
    return it == programs_.end() ? nullptr : it->second;
  }
  bool erase(nvrtcProgram prog) {
    std::shared_ptr<Program> doomed;  // destroyed outside the lock
    std::lock_guard lock(mutex_);
    auto it = programs_.find(reinterpret_cast<std::uintptr_t>(prog));
    if (it == programs_.end()) return false;
    doomed = std::move(it->second);
    programs_.erase(it);
    return true;
  }

 private:
  static constexpr std::uintptr_t kTag = 0x9;
  std::mutex mutex_;
  std::uintptr_t next_ = 1;
  std::unordered_map<std::uintptr_t, std::shared_ptr<Program>> programs_;
};

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: used from atexit handlers too
  return *r;
}

std::atomic<std::size_t> g_pch_heap_size{std::size_t{256} << 20};  // NVRTC's default

const char* name_of(nvrtcResult r) noexcept;

nvrtcResult reject(nvrtcResult r, const char* function, const char* why) noexcept {
  try {
    log::get()->debug("{}: {} ({})", function, name_of(r), why);
  } catch (...) {
  }
  return r;
}

// The compiler of the configured backend, or nullptr with `why` set and logged.
be::Compiler* compiler_for(const char* function, std::string& why) {
  be::Backend* backend = core::Core::get().backend_for_compilation();
  if (!backend) {
    why = "no backend could be loaded (the reason is logged above)";
  } else if (be::Compiler* c = backend->compiler()) {
    return c;
  } else {
    why = "backend '" + std::string(backend->name()) +
          "' has no compiler (NVRTC is not available on it)";
  }
  log::get()->error("{}: {}: returning NVRTC_ERROR_INTERNAL_ERROR", function, why);
  return nullptr;
}

void copy_out(const std::string& s, char* out) {
  std::memcpy(out, s.data(), s.size());
  out[s.size()] = '\0';
}

// --time=<file>: NVRTC's CSV layout; "-" appends it to the program log, as NVRTC does.
bool write_time_file(const std::string& path, Program& p, const std::string& backend_name,
                     double ms) {
  char line[512];
  std::snprintf(line, sizeof line,
                "File name, phase name, metric, unit\n%s, cudamux %s compiler, %.3f, ms\n",
                p.name.c_str(), backend_name.c_str(), ms);
  if (path == "-") {
    p.log += line;
    return true;
  }
  std::FILE* f = std::fopen(path.c_str(), "a");
  if (!f) return false;
  const bool ok = std::fputs(line, f) >= 0;
  return std::fclose(f) == 0 && ok;
}

// --fdevice-time-trace=<file>: one complete event in the Chrome trace format.
bool write_time_trace(const std::string& path, const Program& p, double ms) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return false;
  std::string name;
  for (char c : p.name) {
    if (c == '"' || c == '\\') name += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) name += c;
  }
  const bool ok = std::fprintf(f,
                               "{\"traceEvents\":[{\"name\":\"compile %s\",\"ph\":\"X\",\"ts\":0,"
                               "\"dur\":%.0f,\"pid\":%d,\"tid\":0}]}\n",
                               name.c_str(), ms * 1000.0, static_cast<int>(getpid())) > 0;
  return std::fclose(f) == 0 && ok;
}

constexpr std::pair<int, const char*> kResults[] = {
#include "cudamux/nvrtc_results.inc"
};

// nvrtcResult joins the enum policy (docs/policy.md) with the values nvrtc.h defines.
[[maybe_unused]] const bool kPolicyRegistered = [] {
  std::vector<std::int64_t> values;
  for (const auto& r : kResults) values.push_back(r.first);
  policy::register_type("nvrtcResult", true, values);
  return true;
}();

// Invented nvrtcResult names, kept for the process's life like NVRTC's static strings.
const char* invented_name(nvrtcResult r) noexcept {
  try {
    static std::mutex mutex;
    static auto* names = new std::unordered_map<int, std::string>();
    const auto inv = policy::invented("nvrtcResult", r);
    if (!inv) return nullptr;
    std::lock_guard lock(mutex);
    return names->try_emplace(static_cast<int>(r), inv->name).first->second.c_str();
  } catch (...) {
    return nullptr;
  }
}

const char* name_of(nvrtcResult r) noexcept {
  for (const auto& [value, name] : kResults)
    if (value == static_cast<int>(r)) return name;
  if (const char* name = invented_name(r)) return name;
  return "NVRTC_ERROR unknown";
}

}  // namespace
}  // namespace cudamux::nvrtc_core

// --- the API ---

namespace cudamux::nvrtc_impl {

using nvrtc_core::registry;
using nvrtc_core::reject;

const char* nvrtcGetErrorString(nvrtcResult result) { return nvrtc_core::name_of(result); }

nvrtcResult nvrtcVersion(int* major, int* minor) {
  if (!major || !minor)
    return reject(NVRTC_ERROR_INVALID_INPUT, "nvrtcVersion", "null out-pointer");
  *major = kVersionMajor;
  *minor = kVersionMinor;
  return NVRTC_SUCCESS;
}

nvrtcResult nvrtcGetNumSupportedArchs(int* numArchs) {
  if (!numArchs)
    return reject(NVRTC_ERROR_INVALID_INPUT, "nvrtcGetNumSupportedArchs", "null out-pointer");
  std::string why;
  be::Compiler* c = nvrtc_core::compiler_for("nvrtcGetNumSupportedArchs", why);
  if (!c) return NVRTC_ERROR_INTERNAL_ERROR;
  *numArchs = static_cast<int>(c->supported_archs().size());
  return NVRTC_SUCCESS;
}

nvrtcResult nvrtcGetSupportedArchs(int* supportedArchs) {
  if (!supportedArchs)
    return reject(NVRTC_ERROR_INVALID_INPUT, "nvrtcGetSupportedArchs", "null out-pointer");
  std::string why;
  be::Compiler* c = nvrtc_core::compiler_for("nvrtcGetSupportedArchs", why);
  if (!c) return NVRTC_ERROR_INTERNAL_ERROR;
  const std::vector<int> archs = c->supported_archs();
  std::copy(archs.begin(), archs.end(), supportedArchs);
  return NVRTC_SUCCESS;
}

nvrtcResult nvrtcCreateProgram(nvrtcProgram* prog, const char* src, const char* name,
                               int numHeaders, const char* const* headers,
                               const char* const* includeNames) {
  constexpr const char* fn = "nvrtcCreateProgram";
  if (!prog) return reject(NVRTC_ERROR_INVALID_PROGRAM, fn, "null program out-pointer");
  if (!src) return reject(NVRTC_ERROR_INVALID_INPUT, fn, "null source");
  if (numHeaders < 0) return reject(NVRTC_ERROR_INVALID_INPUT, fn, "negative numHeaders");
  if (numHeaders > 0 && (!headers || !includeNames))
    return reject(NVRTC_ERROR_INVALID_INPUT, fn,
                  "numHeaders > 0 with a null headers or includeNames array");
  auto p = std::make_shared<nvrtc_core::Program>();
  p->source = src;
  p->name = (name && *name) ? name : "default_program";
  for (int i = 0; i < numHeaders; ++i) {
    if (!headers[i] || !includeNames[i])
      return reject(NVRTC_ERROR_INVALID_INPUT, fn, "null header source or include name");
    p->headers.emplace_back(includeNames[i], headers[i]);
  }
  *prog = registry().insert(std::move(p));
  return NVRTC_SUCCESS;
}

nvrtcResult nvrtcDestroyProgram(nvrtcProgram* prog) {
  if (!prog) return reject(NVRTC_ERROR_INVALID_PROGRAM, "nvrtcDestroyProgram", "null pointer");
  if (!registry().erase(*prog))
    return reject(NVRTC_ERROR_INVALID_PROGRAM, "nvrtcDestroyProgram", "not a live program");
  *prog = nullptr;
  return NVRTC_SUCCESS;
}

#define CUDAMUX_NVRTC_PROGRAM(var, prog, fn)                                            \
  const auto var##_ref = registry().find(prog);                                         \
  if (!var##_ref) return reject(NVRTC_ERROR_INVALID_PROGRAM, fn, "not a live program"); \
  nvrtc_core::Program& var = *var##_ref;                                                \
  std::lock_guard var##_lock(var.mutex)

nvrtcResult nvrtcCompileProgram(nvrtcProgram prog, int numOptions, const char* const* options) {
  constexpr const char* fn = "nvrtcCompileProgram";
  CUDAMUX_NVRTC_PROGRAM(p, prog, fn);
  if (numOptions < 0) return reject(NVRTC_ERROR_INVALID_INPUT, fn, "negative numOptions");
  if (numOptions > 0 && !options)
    return reject(NVRTC_ERROR_INVALID_INPUT, fn, "null options array");
  for (int i = 0; i < numOptions; ++i)
    if (!options[i]) return reject(NVRTC_ERROR_INVALID_INPUT, fn, "null option string");

  // A new compilation replaces every result of the previous one.
  p.compiled = false;
  p.log.clear();
  p.image.clear();
  p.cubin.clear();
  p.lowered.clear();
  p.pch_status = NVRTC_ERROR_NO_PCH_CREATE_ATTEMPTED;

  std::string why;
  be::Compiler* compiler = nvrtc_core::compiler_for(fn, why);
  if (!compiler) {
    p.log = "nvrtc: error: " + why + "\n";
    return NVRTC_ERROR_INTERNAL_ERROR;
  }
  const std::vector<int> archs = compiler->supported_archs();
  nvrtc_options::Parsed parsed;
  if (nvrtc_options::parse({options, static_cast<std::size_t>(numOptions)}, archs, parsed, why) !=
      NVRTC_SUCCESS) {
    p.log = "nvrtc: error: " + why + "\n";
    log::get()->warn("{}: program '{}': {}: returning NVRTC_ERROR_INVALID_OPTION", fn, p.name, why);
    return NVRTC_ERROR_INVALID_OPTION;
  }
  for (const auto& w : parsed.warnings) p.log += "nvrtc: warning: " + w + "\n";
  if (parsed.create_pch) {
    // Honest answer to nvrtcGetPCHCreateStatus: the program compiles, but no PCH is written.
    p.pch_status = NVRTC_ERROR_PCH_CREATE;
    p.log += "nvrtc: warning: precompiled headers are not supported by cudamux: none was created\n";
  }

  // The flow callback is asked before and after the backend runs (cudamux cannot
  // interrupt a backend's compiler midway).
  auto cancelled = [&] { return p.callback && p.callback(p.payload, nullptr) == 1; };
  if (cancelled()) return NVRTC_ERROR_CANCELLED;

  be::CompileRequest request;
  request.source = p.source;
  request.name = p.name;
  request.headers = p.headers;
  request.options = std::move(parsed.options);
  request.name_expressions = p.name_expressions;
  be::CompileResult result;
  p.compile_attempted = true;
  const auto start = std::chrono::steady_clock::now();
  const be::Status status = compiler->compile(request, result);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  be::Backend& backend = *core::Core::get().backend_for_compilation();
  // issue 8: slow operations are logged at info with their duration (a first compile that
  // misses the backend's cache is the usual one).
  if (ms > 1000.0)
    log::get()->info("{}: program '{}' took {:.1f} s to compile on backend '{}'", fn, p.name,
                     ms / 1000.0, backend.name());
  if (!status.ok()) {
    const std::string_view native = backend.errors().native_name(status.native);
    // The failure of the compiler itself, through the enum policy (rule 1): a counterpart
    // CUDA names maps to NVRTC's nearest result, one it does not goes to the policy.
    nvrtcResult r = NVRTC_ERROR_INTERNAL_ERROR;
    if (const auto cu = backend.errors().to_cuda(status.native)) {
      if (*cu == CUDA_ERROR_OUT_OF_MEMORY) r = NVRTC_ERROR_OUT_OF_MEMORY;
      // The backend cannot honour what was asked (e.g. an architecture its compiler does
      // not know, which would crash hipRTC 5.2): an option problem, not an internal one.
      if (*cu == CUDA_ERROR_NOT_SUPPORTED) r = NVRTC_ERROR_INVALID_OPTION;
      if (*cu == CUDA_ERROR_INVALID_VALUE) r = NVRTC_ERROR_INVALID_INPUT;
    } else {
      r = static_cast<nvrtcResult>(policy::unmapped("nvrtcResult", backend.name(), status.native,
                                                    native, NVRTC_ERROR_INTERNAL_ERROR));
    }
    log::get()->error(
        "{}: program '{}': the compiler of backend '{}' failed with {} ({}): returning {}", fn,
        p.name, backend.name(), native, status.native, nvrtc_core::name_of(r));
    p.log += "nvrtc: error: the compiler of backend '" + std::string(backend.name()) +
             "' failed (" + std::string(native) + ")\n" + result.log;
    return r;
  }
  if (cancelled()) return NVRTC_ERROR_CANCELLED;
  p.log += result.log;
  if (!parsed.time_file.empty() &&
      !nvrtc_core::write_time_file(parsed.time_file, p, std::string(backend.name()), ms)) {
    log::get()->warn("{}: could not write the --time file {}", fn, parsed.time_file);
    return NVRTC_ERROR_TIME_FILE_WRITE_FAILED;
  }
  if (!parsed.time_trace_file.empty() &&
      !nvrtc_core::write_time_trace(parsed.time_trace_file, p, ms)) {
    log::get()->warn("{}: could not write the --fdevice-time-trace file {}", fn,
                     parsed.time_trace_file);
    return NVRTC_ERROR_TIME_TRACE_FILE_WRITE_FAILED;
  }
  if (!result.success) {
    log::get()->debug("{}: program '{}' has compile errors: NVRTC_ERROR_COMPILATION", fn, p.name);
    return NVRTC_ERROR_COMPILATION;
  }
  p.compiled = true;
  p.real_arch = request.options.real_arch;
  p.image = std::move(result.image);
  p.cubin = std::move(result.cubin);
  p.lowered = std::move(result.lowered_names);
  return NVRTC_SUCCESS;
}

namespace {
// "PTX": the image plus a terminating NUL, so programs that treat it as a C string stay in bounds.
nvrtcResult size_of(nvrtcProgram prog, std::size_t* out, const char* fn,
                    std::size_t (*measure)(const nvrtc_core::Program&)) {
  CUDAMUX_NVRTC_PROGRAM(p, prog, fn);
  if (!out) return reject(NVRTC_ERROR_INVALID_INPUT, fn, "null out-pointer");
  *out = measure(p);
  return NVRTC_SUCCESS;
}
}  // namespace

// Text images that already end in their NUL (NVIDIA's PTX, the mock's module text) are
// handed out as they are, so the size matches NVIDIA's NVRTC; anything else (binary code
// objects may well end in a zero byte of their own) gets one appended.
static std::size_t ptx_size(const nvrtc_core::Program& p) {
  const auto& im = p.image;
  const bool nul_terminated_text =
      !im.empty() && im.back() == '\0' && std::memchr(im.data(), 0, im.size() - 1) == nullptr;
  return nul_terminated_text ? im.size() : im.size() + 1;
}

nvrtcResult nvrtcGetPTXSize(nvrtcProgram prog, size_t* ptxSizeRet) {
  return size_of(prog, ptxSizeRet, "nvrtcGetPTXSize", &ptx_size);
}

nvrtcResult nvrtcGetPTX(nvrtcProgram prog, char* ptx) {
  CUDAMUX_NVRTC_PROGRAM(p, prog, "nvrtcGetPTX");
  if (!ptx) return reject(NVRTC_ERROR_INVALID_INPUT, "nvrtcGetPTX", "null buffer");
  if (!p.image.empty()) std::memcpy(ptx, p.image.data(), p.image.size());  // data() may be null
  if (ptx_size(p) > p.image.size()) ptx[p.image.size()] = '\0';
  return NVRTC_SUCCESS;
}

// No CUBIN for a virtual architecture (compute_XX): size 0, and nvrtcGetCUBIN then writes
// nothing and succeeds, which is what NVIDIA's NVRTC 13.0 does (measured).
nvrtcResult nvrtcGetCUBINSize(nvrtcProgram prog, size_t* cubinSizeRet) {
  return size_of(prog, cubinSizeRet, "nvrtcGetCUBINSize", [](const nvrtc_core::Program& p) {
    const auto* c = p.cubin_data();
    return c ? c->size() : std::size_t{0};
  });
}

nvrtcResult nvrtcGetCUBIN(nvrtcProgram prog, char* cubin) {
  CUDAMUX_NVRTC_PROGRAM(p, prog, "nvrtcGetCUBIN");
  if (!cubin) return reject(NVRTC_ERROR_INVALID_INPUT, "nvrtcGetCUBIN", "null buffer");
  if (const auto* c = p.cubin_data()) std::memcpy(cubin, c->data(), c->size());
  return NVRTC_SUCCESS;
}

// LTO IR and OptiX IR: the options that ask for them (-dlto, -optix-ir) are rejected, so a
// program never has any: size 0 and nothing written, as NVIDIA's NVRTC does without them.
nvrtcResult nvrtcGetLTOIRSize(nvrtcProgram prog, size_t* LTOIRSizeRet) {
  return size_of(prog, LTOIRSizeRet, "nvrtcGetLTOIRSize",
                 [](const nvrtc_core::Program&) { return std::size_t{0}; });
}

nvrtcResult nvrtcGetLTOIR(nvrtcProgram prog, char* LTOIR) {
  CUDAMUX_NVRTC_PROGRAM(p, prog, "nvrtcGetLTOIR");
  if (!LTOIR) return reject(NVRTC_ERROR_INVALID_INPUT, "nvrtcGetLTOIR", "null buffer");
  return NVRTC_SUCCESS;
}

nvrtcResult nvrtcGetOptiXIRSize(nvrtcProgram prog, size_t* optixirSizeRet) {
  return size_of(prog, optixirSizeRet, "nvrtcGetOptiXIRSize",
                 [](const nvrtc_core::Program&) { return std::size_t{0}; });
}

nvrtcResult nvrtcGetOptiXIR(nvrtcProgram prog, char* optixir) {
  CUDAMUX_NVRTC_PROGRAM(p, prog, "nvrtcGetOptiXIR");
  if (!optixir) return reject(NVRTC_ERROR_INVALID_INPUT, "nvrtcGetOptiXIR", "null buffer");
  return NVRTC_SUCCESS;
}

nvrtcResult nvrtcGetProgramLogSize(nvrtcProgram prog, size_t* logSizeRet) {
  return size_of(prog, logSizeRet, "nvrtcGetProgramLogSize",
                 [](const nvrtc_core::Program& p) { return p.log.size() + 1; });
}

nvrtcResult nvrtcGetProgramLog(nvrtcProgram prog, char* log) {
  CUDAMUX_NVRTC_PROGRAM(p, prog, "nvrtcGetProgramLog");
  if (!log) return reject(NVRTC_ERROR_INVALID_INPUT, "nvrtcGetProgramLog", "null buffer");
  nvrtc_core::copy_out(p.log, log);
  return NVRTC_SUCCESS;
}

nvrtcResult nvrtcAddNameExpression(nvrtcProgram prog, const char* const name_expression) {
  constexpr const char* fn = "nvrtcAddNameExpression";
  CUDAMUX_NVRTC_PROGRAM(p, prog, fn);
  if (!name_expression) return reject(NVRTC_ERROR_INVALID_INPUT, fn, "null name expression");
  if (p.compile_attempted)
    return reject(NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION, fn,
                  "the program was compiled already");
  if (std::find(p.name_expressions.begin(), p.name_expressions.end(), name_expression) ==
      p.name_expressions.end())
    p.name_expressions.emplace_back(name_expression);
  return NVRTC_SUCCESS;
}

nvrtcResult nvrtcGetLoweredName(nvrtcProgram prog, const char* const name_expression,
                                const char** lowered_name) {
  constexpr const char* fn = "nvrtcGetLoweredName";
  CUDAMUX_NVRTC_PROGRAM(p, prog, fn);
  if (!name_expression || !lowered_name)
    return reject(NVRTC_ERROR_INVALID_INPUT, fn, "null argument");
  if (!p.compiled)
    return reject(NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION, fn,
                  "the program is not compiled");
  for (const auto& [expression, symbol] : p.lowered) {
    if (expression == name_expression) {
      *lowered_name = symbol.c_str();  // lives until nvrtcDestroyProgram (or a recompile)
      return NVRTC_SUCCESS;
    }
  }
  return reject(NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID, fn,
                "not added with nvrtcAddNameExpression before compiling");
}

nvrtcResult nvrtcGetPCHHeapSize(size_t* ret) {
  if (!ret) return reject(NVRTC_ERROR_INVALID_INPUT, "nvrtcGetPCHHeapSize", "null out-pointer");
  *ret = nvrtc_core::g_pch_heap_size.load(std::memory_order_relaxed);
  return NVRTC_SUCCESS;
}

// cudamux creates no PCH, so the heap is only a number remembered for nvrtcGetPCHHeapSize.
nvrtcResult nvrtcSetPCHHeapSize(size_t size) {
  nvrtc_core::g_pch_heap_size.store(size, std::memory_order_relaxed);
  return NVRTC_SUCCESS;
}

nvrtcResult nvrtcGetPCHCreateStatus(nvrtcProgram prog) {
  CUDAMUX_NVRTC_PROGRAM(p, prog, "nvrtcGetPCHCreateStatus");
  return p.pch_status;
}

// No PCH is ever created, so none needs heap: 0 (NVIDIA's answer without a PCH, measured).
nvrtcResult nvrtcGetPCHHeapSizeRequired(nvrtcProgram prog, size_t* size) {
  return size_of(prog, size, "nvrtcGetPCHHeapSizeRequired",
                 [](const nvrtc_core::Program&) { return std::size_t{0}; });
}

nvrtcResult nvrtcSetFlowCallback(nvrtcProgram prog, int (*callback)(void*, void*), void* payload) {
  CUDAMUX_NVRTC_PROGRAM(p, prog, "nvrtcSetFlowCallback");
  if (!callback) return reject(NVRTC_ERROR_INVALID_INPUT, "nvrtcSetFlowCallback", "null callback");
  p.callback = callback;
  p.payload = payload;
  return NVRTC_SUCCESS;
}

#undef CUDAMUX_NVRTC_PROGRAM

}  // namespace cudamux::nvrtc_impl
