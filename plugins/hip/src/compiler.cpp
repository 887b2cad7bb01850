#include "compiler.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <mutex>
#include <regex>

#include "code_object.hpp"

namespace cudamux::hip {
namespace be = cudamux::backend;

namespace {

// Headers CUDA programs include that hipRTC lacks; hipRTC already declares what they would.
constexpr const char* kEmptyHeaders[] = {"cuda_runtime.h", "cuda_runtime_api.h",
                                         "device_launch_parameters.h"};

// CUDA spellings of warp operations, in terms of HIP's (hipRTC 5.2 knows only the HIP
// names). The mask is accepted and ignored: HIP 5.2 has no masked variants; CUDA code
// passing a full mask behaves the same.
constexpr const char* kPrelude = R"(// cudamux prelude (CUDA device spellings over HIP)
template <class T> __device__ inline T __shfl_sync(unsigned long long, T v, int src, int w = warpSize) { return __shfl(v, src, w); }
template <class T> __device__ inline T __shfl_up_sync(unsigned long long, T v, unsigned d, int w = warpSize) { return __shfl_up(v, d, w); }
template <class T> __device__ inline T __shfl_down_sync(unsigned long long, T v, unsigned d, int w = warpSize) { return __shfl_down(v, d, w); }
template <class T> __device__ inline T __shfl_xor_sync(unsigned long long, T v, int m, int w = warpSize) { return __shfl_xor(v, m, w); }
__device__ inline unsigned long long __ballot_sync(unsigned long long, int p) { return __ballot(p); }
__device__ inline int __any_sync(unsigned long long, int p) { return __any(p); }
__device__ inline int __all_sync(unsigned long long, int p) { return __all(p); }
__device__ inline unsigned long long __activemask() { return __ballot(1); }
__device__ inline void __syncwarp(unsigned long long = ~0ull) { __builtin_amdgcn_wave_barrier(); }
)";

bool known_feature(const std::string& f) {
  return f == "xnack+" || f == "xnack-" || f == "sramecc+" || f == "sramecc-";
}

}  // namespace

const std::vector<std::string>& supported_offload_archs() {
  static const std::vector<std::string> archs = {
#include "offload_archs.inc"
  };
  return archs;
}

bool valid_offload_arch(const std::string& arch) {
  const auto colon = arch.find(':');
  const std::string base = arch.substr(0, colon);
  const auto& all = supported_offload_archs();
  if (std::find(all.begin(), all.end(), base) == all.end()) return false;
  std::size_t pos = colon;
  while (pos != std::string::npos) {
    const auto next = arch.find(':', pos + 1);
    if (!known_feature(arch.substr(pos + 1, next == std::string::npos ? next : next - pos - 1)))
      return false;
    pos = next;
  }
  return true;
}

std::string supported_offload_archs_text() {
  std::string out;
  for (const auto& a : supported_offload_archs()) out += (out.empty() ? "" : " ") + a;
  return out + " (each optionally with :xnack+/- and :sramecc+/-)";
}

HiprtcCompiler::HiprtcCompiler(const HiprtcApi& api, std::function<std::string()> device_arch,
                               std::shared_ptr<spdlog::logger> log, CompilerCodes codes)
    : api_(api), device_arch_(std::move(device_arch)), log_(std::move(log)), codes_(codes) {}

std::vector<int> HiprtcCompiler::supported_archs() const {
  // The CUDA architectures NVRTC 13.0 accepts: any of them means "the AMD device's arch".
  return {75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121};
}

std::vector<std::string> HiprtcCompiler::translate(const be::CompileOptions& o,
                                                   const std::string& arch) {
  std::vector<std::string> out{"--offload-arch=" + arch};
  if (!o.fmad) out.emplace_back("-ffp-contract=off");
  if (o.device_debug) out.emplace_back("-g");
  if (o.relocatable) out.emplace_back("-fgpu-rdc");
  if (!o.std.empty()) out.push_back("-std=" + o.std);
  for (const auto& [name, value] : o.defines)
    out.push_back("-D" + name + (value.empty() ? "" : "=" + value));
  for (const auto& name : o.undefines) out.push_back("-U" + name);
  for (const auto& dir : o.include_paths) out.push_back("-I" + dir);
  for (const auto& file : o.pre_includes) {
    out.emplace_back("-include");
    out.push_back(file);
  }
  return out;
}

std::string HiprtcCompiler::prelude(const be::CompileOptions& o) {
  std::string p = kPrelude;
  // -default-device: unannotated functions become __host__ __device__ (clang's pragma;
  // hipRTC ignores NVRTC's option).
  if (o.default_device) p += "#pragma clang force_cuda_host_device begin\n";
  return p;
}

be::Status HiprtcCompiler::compile(const be::CompileRequest& rq, be::CompileResult& out) {
  // hipRTC 5.2 (through comgr) is not documented as safe for concurrent compiles.
  static std::mutex serial;
  std::lock_guard lock(serial);
  const std::string arch = device_arch_();
  if (!valid_offload_arch(arch)) {
    // hipRTC 5.2 would abort the process (heap corruption) on this arch.
    log_->error(
        "hip backend: cannot compile for offload arch '{}': the installed hipRTC supports {}", arch,
        supported_offload_archs_text());
    out.log = "hip backend: error: offload arch '" + arch +
              "' is not supported by this hipRTC; supported: " + supported_offload_archs_text() +
              "\n";
    return {codes_.not_supported};
  }
  const std::string name = rq.name.empty() ? "default_program" : std::string(rq.name);
  if (name.find('"') != std::string::npos || name.find('\n') != std::string::npos) {
    out.log = "hip backend: error: program name must not contain quotes or newlines\n";
    return {codes_.invalid_value};
  }
  // Messages about the user's code carry the user's file name and line numbers.
  std::string source = prelude(rq.options) + "#line 1 \"" + name + "\"\n" + std::string(rq.source);
  if (rq.options.default_device) source += "\n#pragma clang force_cuda_host_device end\n";

  std::vector<std::string> header_names, header_texts;
  for (const auto& [n, t] : rq.headers) {
    header_names.push_back(n);
    header_texts.push_back(t);
  }
  for (const char* h : kEmptyHeaders) {
    if (std::find(header_names.begin(), header_names.end(), h) == header_names.end()) {
      header_names.emplace_back(h);
      header_texts.emplace_back("// provided empty by cudamux: hipRTC declares what it would\n");
    }
  }
  std::vector<const char*> hn, ht;
  for (std::size_t i = 0; i < header_names.size(); ++i) {
    hn.push_back(header_names[i].c_str());
    ht.push_back(header_texts[i].c_str());
  }

  hiprtcProgram prog = nullptr;
  if (auto r = api_.hiprtcCreateProgram(&prog, source.c_str(), name.c_str(),
                                        static_cast<int>(hn.size()), ht.data(), hn.data());
      r != HIPRTC_SUCCESS) {
    out.log = "hip backend: hiprtcCreateProgram failed (" + std::to_string(r) + ")\n";
    return {codes_.unknown};
  }
  struct Destroy {
    const HiprtcApi& api;
    hiprtcProgram& p;
    ~Destroy() { (void)api.hiprtcDestroyProgram(&p); }
  } destroy{api_, prog};

  for (const auto& e : rq.name_expressions) {
    if (api_.hiprtcAddNameExpression(prog, e.c_str()) != HIPRTC_SUCCESS) {
      out.log += "hip backend: error: name expression '" + e + "' was not accepted by hipRTC\n";
      return be::kOk;  // success == false: a compile error of the program
    }
  }
  const auto options = translate(rq.options, arch);
  std::vector<const char*> argv;
  for (const auto& o : options) argv.push_back(o.c_str());
  log_->debug("hip backend: hipRTC compiling '{}' for {} ({} options)", name, arch, argv.size());
  const hiprtcResult r =
      api_.hiprtcCompileProgram(prog, static_cast<int>(argv.size()), argv.data());

  std::size_t log_size = 0;
  if (api_.hiprtcGetProgramLogSize(prog, &log_size) == HIPRTC_SUCCESS && log_size > 1) {
    std::string log(log_size, '\0');
    if (api_.hiprtcGetProgramLog(prog, log.data()) == HIPRTC_SUCCESS) {
      log.resize(std::min(log.size(), log.find('\0')));
      // comgr compiles a temporary copy; point at the user's file instead.
      static const std::regex temp_source(R"(/tmp/comgr-[^/\s]+/input/CompileSource)");
      out.log += std::regex_replace(log, temp_source, "<cudamux prelude>");
    }
  }
  if (r != HIPRTC_SUCCESS) {
    out.success = false;
    if (out.log.empty())
      out.log = "hip backend: hipRTC failed (hiprtcResult " + std::to_string(r) + ")\n";
    return be::kOk;
  }
  std::size_t code_size = 0;
  if (api_.hiprtcGetCodeSize(prog, &code_size) != HIPRTC_SUCCESS || code_size == 0) {
    out.log += "hip backend: hipRTC produced no code object\n";
    return {codes_.unknown};
  }
  out.image.resize(code_size);
  if (api_.hiprtcGetCode(prog, out.image.data()) != HIPRTC_SUCCESS) return {codes_.unknown};
  std::string why;
  if (!image_size(out.image.data(), why)) {
    out.log +=
        "hip backend: hipRTC returned something that is not an AMDGPU code object: " + why + "\n";
    return {codes_.unknown};
  }
  // The code object serves as both "PTX" and "CUBIN": it is what the device runs.
  out.cubin = out.image;
  for (std::size_t i = 0; i < rq.name_expressions.size(); ++i) {
    const std::string& e = rq.name_expressions[i];
    const char* lowered = nullptr;
    if (api_.hiprtcGetLoweredName(prog, e.c_str(), &lowered) == HIPRTC_SUCCESS &&
        lowered != nullptr) {
      out.lowered_names.emplace_back(e, lowered);
    } else if (auto symbol =
                   hiprtc_lowered_name(reinterpret_cast<const unsigned char*>(out.image.data()),
                                       out.image.size(), i + 1)) {
      // hipRTC 5.2 answers success with no name: read it from the code object.
      out.lowered_names.emplace_back(e, std::move(*symbol));
    } else {
      log_->warn("hip backend: no lowered name for name expression '{}'", e);
    }
  }
  out.success = true;
  return be::kOk;
}

}  // namespace cudamux::hip
