// Helpers shared by the NVRTC test programs.
#pragma once

#include <gtest/gtest.h>
#include <nvrtc.h>

#include <cstdlib>
#include <initializer_list>
#include <string>
#include <vector>

namespace nvrtc_test {

// Points cudamux at one backend before the first NVRTC call reads the configuration
// (CTest's environment cannot be relied on: every test sets its own).
inline void use_backend(const char* name, const char* plugin_dir) {
  setenv("CUDAMUX_BACKEND", name, 1);
  setenv("CUDAMUX_PLUGIN_PATH", plugin_dir, 1);
  setenv("CUDAMUX_CONFIG", "", 1);
  setenv("XDG_CONFIG_HOME", "/nonexistent-cudamux-test-config", 1);
}

inline std::string log_of(nvrtcProgram p) {
  size_t n = 0;
  if (nvrtcGetProgramLogSize(p, &n) != NVRTC_SUCCESS || n == 0) return "<no log>";
  std::string s(n, '\0');
  if (nvrtcGetProgramLog(p, s.data()) != NVRTC_SUCCESS) return "<no log>";
  s.resize(n - 1);
  return s;
}

inline std::string ptx_of(nvrtcProgram p) {
  size_t n = 0;
  if (nvrtcGetPTXSize(p, &n) != NVRTC_SUCCESS || n == 0) return "<no ptx>";
  std::string s(n, '\0');
  if (nvrtcGetPTX(p, s.data()) != NVRTC_SUCCESS) return "<no ptx>";
  s.resize(n - 1);
  return s;
}

// A program that is destroyed at scope exit.
class Program {
 public:
  explicit Program(const char* src = "extern \"C\" __global__ void k() {}\n",
                   const char* name = "test.cu", std::vector<const char*> headers = {},
                   std::vector<const char*> names = {}) {
    result_ = nvrtcCreateProgram(&prog_, src, name, static_cast<int>(headers.size()),
                                 headers.empty() ? nullptr : headers.data(),
                                 names.empty() ? nullptr : names.data());
  }
  ~Program() {
    if (prog_) nvrtcDestroyProgram(&prog_);
  }
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  nvrtcResult created() const { return result_; }
  nvrtcProgram get() const { return prog_; }
  nvrtcResult compile(std::initializer_list<const char*> options) const {
    std::vector<const char*> v(options);
    return nvrtcCompileProgram(prog_, static_cast<int>(v.size()), v.empty() ? nullptr : v.data());
  }
  std::string log() const { return log_of(prog_); }
  std::string ptx() const { return ptx_of(prog_); }

 private:
  nvrtcProgram prog_ = nullptr;
  nvrtcResult result_ = NVRTC_ERROR_INTERNAL_ERROR;
};

}  // namespace nvrtc_test
