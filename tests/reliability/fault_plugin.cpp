// Backend plugins that fail in their initialisation, one per define (issue 9):
//   CUDAMUX_FAULT_CRASH  cudamux_backend_create dies of SIGSEGV;
//   CUDAMUX_FAULT_HANG   cudamux_backend_create never returns.
#include <signal.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "cudamux/backend.hpp"

namespace be = cudamux::backend;

CUDAMUX_PLUGIN_EXPORT std::uint32_t cudamux_backend_abi_version() { return be::kAbiVersion; }

CUDAMUX_PLUGIN_EXPORT be::Backend* cudamux_backend_create(const be::PluginHost&, std::string&) {
#if defined(CUDAMUX_FAULT_CRASH)
  // raise() rather than a null store: the same signal a wild access gives, without
  // undefined behaviour a sanitizer would report first.
  ::raise(SIGSEGV);
#elif defined(CUDAMUX_FAULT_HANG)
  for (;;) ::pause();
#endif
  return nullptr;
}
