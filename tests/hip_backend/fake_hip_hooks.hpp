// The fake HIP runtime's hooks (fake_hip.cpp), for the hip backend's tests: the library the
// plugin opened (CUDAMUX_HIP_RUNTIME; dlopen hands back the same handle), its functions by name,
// and its log of the HIP calls it received.
#pragma once

#include <dlfcn.h>

#include <cstddef>
#include <cstdlib>
#include <string>

namespace fake_hip_hooks {

inline void* fake_library() {
  const char* path = std::getenv("CUDAMUX_HIP_RUNTIME");
  static void* handle = dlopen(path ? path : "", RTLD_NOW | RTLD_LOCAL);
  return handle;
}
// A function of the fake (a hook or a HIP function); nullptr when it has none of that name.
template <class Fn>
Fn* fake_fn(const char* name) {
  return reinterpret_cast<Fn*>(dlsym(fake_library(), name));
}
inline std::string fake_log() {
  auto* log = fake_fn<const char*()>("fakehip_log");
  return log != nullptr ? log() : "";
}
inline void fake_clear() {
  if (auto* clear = fake_fn<void()>("fakehip_log_clear")) clear();
}
// How many times `needle` stands in the log.
inline std::size_t count_of(const std::string& needle) {
  const std::string log = fake_log();
  std::size_t n = 0;
  for (auto at = log.find(needle); at != std::string::npos; at = log.find(needle, at + 1)) ++n;
  return n;
}
inline bool logged(const std::string& needle) { return count_of(needle) != 0; }

}  // namespace fake_hip_hooks
