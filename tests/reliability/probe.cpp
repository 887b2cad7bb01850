// A CUDA program reduced to what the fault tests observe: dlopens libcuda.so.1 (argv[1],
// default "libcuda.so.1") so a test can run a copy from a folder without plugins, calls
// cuInit and cuDeviceGetCount, prints both results, and exits 0 only if both succeeded.
// (A plain C-style program on purpose: no test framework in the process under fault.)
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

using CUresult = int;
using InitFn = CUresult(unsigned);
using CountFn = CUresult(int*);

int main(int argc, char** argv) {
  const char* lib = argc > 1 ? argv[1] : "libcuda.so.1";
  void* h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    std::printf("dlopen failed: %s\n", dlerror());
    return 2;
  }
  auto* init = reinterpret_cast<InitFn*>(dlsym(h, "cuInit"));
  auto* count = reinterpret_cast<CountFn*>(dlsym(h, "cuDeviceGetCount"));
  if (init == nullptr || count == nullptr) return 2;
  const CUresult r = init(0);
  std::printf("cuInit=%d\n", r);
  // PROBE_CLOBBER=<file>: the config changes under a running program; nothing may notice.
  if (const char* clobber = std::getenv("PROBE_CLOBBER"); clobber != nullptr && r == 0) {
    if (std::FILE* f = std::fopen(clobber, "w")) {
      std::fputs("backend = [ this is not TOML\n", f);
      std::fclose(f);
    }
    std::printf("cuInit again=%d\n", init(0));
  }
  int n = -1;
  const CUresult c = count(&n);
  std::printf("cuDeviceGetCount=%d devices=%d\n", c, n);
  std::fflush(stdout);
  return r == 0 && c == 0 ? 0 : 3;
}
