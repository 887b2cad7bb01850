// The build-and-run harness of the PTX back end's tests (emit_test.cpp, split_test.cpp,
// flat_test.cpp): a translated module is built as the mock builds modules (-shared, the prelude
// forced in, linked to libcudamux-device; split and flat cache it in the build folder by the hash
// of its source, the device headers and the command), and its kernels run block by block
// through cudamux_run_block.
#pragma once

#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "cudamux/device_abi.h"

namespace ptx_harness {

inline std::string temp_path(const char* prefix, const std::string& suffix) {
  std::string tmpl = "/tmp/cudamux_" + std::string(prefix) + "_XXXXXX";
  const int fd = mkstemp(tmpl.data());
  if (fd >= 0) close(fd);
  std::remove(tmpl.c_str());
  return tmpl + suffix;
}

struct Loaded {
  void* handle = nullptr;
  const cudamux_module_desc* desc = nullptr;
  std::string error, source;
  ~Loaded() {
    if (handle) dlclose(handle);
  }
  const cudamux_kernel_desc* kernel(const char* name) const {
    for (unsigned k = 0; desc && k < desc->num_kernels; ++k) {
      Dl_info info{};
      if (dladdr(desc->kernels[k]->fn, &info) && info.dli_sname &&
          std::string(info.dli_sname) == name)
        return desc->kernels[k];
    }
    return nullptr;
  }
};

inline std::string file_text(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

// ctest runs every case in a process of its own: the built module is kept in the build folder,
// named by the hash of the source, the device headers and the command, and built once.
inline std::unique_ptr<Loaded> build(const std::string& source, const std::string& cache_dir,
                                     const char* prefix) {
  auto l = std::make_unique<Loaded>();
  l->source = source;
  const std::string flags = " -O2 -march=native -fPIC -shared -fno-gnu-unique -std=c++17 -I" +
                            std::string(CUDAMUX_DEVICE_INCLUDE) + " -I" +
                            CUDAMUX_DEVICE_ABI_INCLUDE + " -include cudamux/prelude.h ";
  const std::string inc = std::string(CUDAMUX_DEVICE_INCLUDE) + "/cudamux/";
  const std::size_t key = std::hash<std::string>{}(source + flags + file_text(inc + "prelude.h") +
                                                   file_text(inc + "ptx_ops.h"));
  const std::string so = cache_dir + "/" + prefix + "_" + std::to_string(key) + ".so";
  if (access(so.c_str(), R_OK) != 0) {
    const std::string src = temp_path(prefix, ".cpp"), tmp = temp_path(prefix, ".so"),
                      log = src + ".log";
    std::ofstream(src) << source;
    const std::string cmd = std::string(CUDAMUX_TEST_CXX) + flags + src + " -o " + tmp + " -L" +
                            CUDAMUX_DEVICE_LIB_DIR + " -lcudamux-device -Wl,-rpath," +
                            CUDAMUX_DEVICE_LIB_DIR + " > " + log + " 2>&1";
    const int rc = std::system(cmd.c_str());
    const std::string out = file_text(log);
    std::remove(src.c_str());
    std::remove(log.c_str());
    if (rc != 0) {
      l->error = out.substr(0, 4000);
      return l;
    }
    std::rename(tmp.c_str(), so.c_str());  // atomic: parallel cases see all or nothing
  }
  l->handle = dlopen(so.c_str(), RTLD_LAZY | RTLD_LOCAL);
  if (!l->handle) {
    l->error = dlerror();
    return l;
  }
  auto fn = reinterpret_cast<cudamux_module_fn>(dlsym(l->handle, CUDAMUX_MODULE_SYMBOL));
  if (!fn) {
    l->error = "no cudamux_module";
    return l;
  }
  l->desc = fn();
  return l;
}

template <class T>
std::vector<unsigned char> arg(T v) {
  std::vector<unsigned char> b(sizeof v);
  std::memcpy(b.data(), &v, sizeof v);
  return b;
}
template <class T>
std::vector<unsigned char> ptr(T* p) {
  return arg(reinterpret_cast<unsigned long long>(p));
}

inline int launch(const cudamux_kernel_desc* k, cudamux_u3 grid, cudamux_u3 block,
                  std::vector<std::vector<unsigned char>> args, std::uint64_t static_shared = 0,
                  unsigned dyn_shared = 0, std::string* message = nullptr) {
  std::vector<unsigned char> buf(k->args_size + 1);
  if (args.size() != k->num_params) return -1;
  for (unsigned i = 0; i < k->num_params; ++i) {
    if (args[i].size() != k->param_sizes[i]) return -2;
    std::memcpy(buf.data() + k->param_offsets[i], args[i].data(), args[i].size());
  }
  volatile int abort_flag = 0;
  cudamux_launch L{};
  L.loop = k->loop;
  L.args = buf.data();
  L.grid = grid;
  L.block = block;
  L.abort = &abort_flag;
  L.flags = k->flags;
  L.kernel_fn = k->fn;
  L.args_size = k->args_size;
  L.dyn_shared_bytes = dyn_shared;
  L.static_shared_bytes = static_cast<unsigned>(static_shared);
  alignas(64) static unsigned char shared[1 << 16];
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x) {
        std::memset(shared, 0xcd, sizeof shared);
        char msg[256] = {};
        const int rc =
            cudamux_run_block(&L, cudamux_u3{x, y, z}, shared + static_shared, msg, sizeof msg);
        if (rc != 0) {
          if (message) *message = msg;
          return rc;
        }
      }
  return 0;
}

}  // namespace ptx_harness
