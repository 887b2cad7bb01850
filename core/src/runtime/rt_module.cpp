// Runtime API: the registration hooks nvcc-generated host code calls
// (__cudaRegisterFatBinary, __cudaRegisterFunction, __cudaRegisterVar, ...), device
// variables for cudaMemcpyToSymbol, the launch configuration stack and CUDA 13's
// __cudaGetKernel/__cudaLaunchKernel path. cudaLaunchKernel and the other functions that
// take a `const void* func` are in rt_kernel.cpp (they ask registered() here first).
//
// Registration always succeeds and keeps what it is given. A registered fat binary is loaded
// lazily, once per context, on the first use of one of its kernels or variables (as NVIDIA's
// runtime does with lazy loading), through the driver's module loader, which hands the backend
// what it runs (issue 14): the cuda backend takes the fat binary whole. Where the backend runs
// nothing in it (the mock and hip until they take PTX), kernels answer
// cudaErrorNoKernelImageForDevice with a log line naming the kernel, and variables fall back to
// device copies made from their host shadows, so host-side code keeps working.
#include <spdlog/spdlog.h>

#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "../cubin_symbols.hpp"
#include "cudamux/driver_impl.hpp"
#include "cudamux/fatbin.hpp"
#include "cudamux/log.hpp"
#include "cudamux/runtime_impl.hpp"
#include "rt_internal.hpp"

namespace cudamux::rt {
namespace {

namespace drv = cudamux::impl;

struct Module {
  void* fatbin = nullptr;  // the __fatDeviceText wrapper nvcc emitted
  // The driver module per context it was loaded into, or the error loading it gave (kept so
  // that a fat binary the backend cannot run is parsed and reported once per context).
  std::map<CUcontext, CUmodule> loaded;
  std::map<CUcontext, CUresult> failed;
  // One of the fat binary's cubins, decompressed on first need: device variables' initial
  // values where no module loads (read_once set when tried).
  std::vector<std::byte> cubin;
  bool read_once = false;
};

struct Function {
  void** module = nullptr;
  const void* host_stub = nullptr;
  std::string device_name;
  std::atomic<bool> explained{false};  // the "cannot run" reason was logged once
};

struct SymbolEntry {
  void** module = nullptr;
  Symbol sym;
};

struct Registry {
  std::mutex mutex;
  std::map<void**, std::unique_ptr<Module>> modules;
  std::unordered_map<const void*, std::unique_ptr<Function>> functions;  // by host stub
  // The records above, which are also CUDA 13's kernel handles of registered stubs: every
  // launch of a `const void*` asks whether it is one, so the answer is a hash lookup.
  std::unordered_set<const void*> records;
  // records.size(), readable without the lock: a program with no nvcc-registered kernels
  // (NVRTC + cudaLibrary*) skips the lookup on every launch.
  std::atomic<std::size_t> live{0};
  // Bumped whenever a record goes (unregistered, or replaced by a second registration), so
  // that the per-thread memo of registered() never answers with a freed record.
  std::atomic<std::uint64_t> removals{0};
  std::unordered_map<const void*, SymbolEntry> symbols;  // by host shadow
  // Device copies of symbols, per context they were created in.
  std::map<std::pair<const void*, CUcontext>, CUdeviceptr> copies;
};
Registry& registry() {
  static auto* r = new Registry();  // never destroyed: fat binaries unregister from atexit
  return *r;
}

struct LaunchConfig {
  dim3 grid, block;
  std::size_t shared = 0;
  cudaStream_t stream = nullptr;
};
thread_local std::vector<LaunchConfig> t_configs;

// The registered fat binary `handle` loaded into the current context `ctx`. Registry lock held.
CUresult module_here_locked(Registry& r, void** handle, CUcontext ctx, CUmodule& out) noexcept {
  const auto it = r.modules.find(handle);
  if (it == r.modules.end()) return CUDA_ERROR_NOT_FOUND;
  Module& m = *it->second;
  if (const auto f = m.failed.find(ctx); f != m.failed.end()) {
    if (core::context_of(ctx)) return f->second;
    m.failed.erase(f);  // a destroyed context's handle is never reused; tidy up
  }
  core::Core& core = core::Core::get();
  if (const auto l = m.loaded.find(ctx); l != m.loaded.end()) {
    // Still loaded, unless a reset of the context unloaded its modules (then load again, as
    // NVIDIA's runtime does after cudaDeviceReset).
    if (core.modules.find(reinterpret_cast<std::uintptr_t>(l->second))) {
      out = l->second;
      return CUDA_SUCCESS;
    }
    m.loaded.erase(l);
  }
  CUmodule mod = nullptr;
  const CUresult res = drv::cuModuleLoadFatBinary(&mod, m.fatbin);
  try {
    if (res != CUDA_SUCCESS) {
      m.failed[ctx] = res;
      return res;
    }
    m.loaded[ctx] = mod;
  } catch (...) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  out = mod;
  return CUDA_SUCCESS;
}

// The initial bytes of the device variable `name` of the fat binary `handle` (nvcc's host shadow
// is zero; the initialiser lives in the cubins). Empty when there is none. Registry lock held.
std::vector<std::byte> initial_value_locked(Registry& r, void** handle, const char* name) {
  const auto it = r.modules.find(handle);
  if (it == r.modules.end() || !name) return {};
  Module& m = *it->second;
  std::string why;
  if (!m.read_once) {
    m.read_once = true;
    const void* container = nullptr;
    std::vector<fatbin::Entry> entries;
    if (const auto size =
            fatbin::unwrap(m.fatbin, container, why) ? fatbin::extent(container) : std::nullopt;
        size && fatbin::parse({static_cast<const std::byte*>(container), *size}, entries, why)) {
      // Any cubin will do: initial values do not depend on the architecture.
      for (const fatbin::Entry& e : entries) {
        if (e.kind == fatbin::Kind::elf && fatbin::decompress(e, m.cubin, why)) break;
      }
    }
  }
  if (m.cubin.empty()) return {};
  auto bytes = core::cubin_variable_bytes(m.cubin, name, why);
  return bytes ? std::move(*bytes) : std::vector<std::byte>{};
}

// The runtime's error for a fat binary that did not load.
cudaError_t load_error(CUresult r) noexcept {
  switch (r) {
    case CUDA_ERROR_NO_BINARY_FOR_GPU:
    case CUDA_ERROR_NOT_FOUND:
      return cudaErrorNoKernelImageForDevice;
    case CUDA_ERROR_INVALID_IMAGE:
      return cudaErrorInvalidKernelImage;
    default:
      return map(r);
  }
}

Function* find_function(const void* stub) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  const auto it = r.functions.find(stub);
  return it == r.functions.end() ? nullptr : it->second.get();
}

bool is_kernel_handle(const void* k) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  return r.records.contains(k);
}

}  // namespace

cudaError_t symbol_address(const void* symbol, CUdeviceptr& address, std::size_t& size) noexcept {
  if (!symbol) return cudaErrorInvalidSymbol;
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  const auto it = r.symbols.find(symbol);
  if (it == r.symbols.end()) return cudaErrorInvalidSymbol;
  const Symbol& sym = it->second.sym;
  size = sym.size;
  if (sym.managed) {
    if (!sym.managed_slot || !*sym.managed_slot) return cudaErrorInvalidSymbol;
    address = reinterpret_cast<CUdeviceptr>(*sym.managed_slot);
    return cudaSuccess;
  }
  const CUcontext ctx = core::current_context_handle();
  // The module's own storage, which its kernels use, initialised from the image.
  if (CUmodule mod = nullptr;
      module_here_locked(r, it->second.module, ctx, mod) == CUDA_SUCCESS && sym.name) {
    CUdeviceptr p = 0;
    std::size_t bytes = 0;
    if (drv::cuModuleGetGlobal_v2(&p, &bytes, mod, sym.name) == CUDA_SUCCESS) {
      address = p;
      size = bytes;
      return cudaSuccess;
    }
  }
  auto& slot = r.copies[{symbol, ctx}];
  if (slot && core::context_of(ctx)) {
    address = slot;
    return cudaSuccess;
  }
  // No module here (its code does not run on this backend): a device copy, allocated on first
  // use in this context and started from the host shadow's bytes (nvcc gives the shadow the
  // variable's initialiser).
  CUdeviceptr p = 0;
  if (const CUresult res = drv::cuMemAlloc_v2(&p, sym.size ? sym.size : 1)) return map(res);
  std::vector<std::byte> initial;
  try {
    initial = initial_value_locked(r, it->second.module, sym.name);
  } catch (...) {
  }
  const void* start = initial.size() == sym.size ? initial.data() : sym.host_shadow;
  if (start && sym.size) {
    if (const CUresult res = drv::cuMemcpyHtoD_v2(p, start, sym.size)) {
      (void)drv::cuMemFree_v2(p);
      return map(res);
    }
  }
  slot = p;
  address = p;
  return cudaSuccess;
}

void forget_symbols(int /*device*/) noexcept {
  // Copies whose context is gone (reset) are recreated on next use.
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  std::erase_if(r.copies, [](const auto& kv) { return !core::context_of(kv.first.second); });
}

const void* registered(const void* func) noexcept {
  if (!func) return nullptr;
  Registry& r = registry();
  if (r.live.load(std::memory_order_acquire) == 0) return nullptr;
  // Launch loops ask for one kernel again and again: the last answer of this thread stands
  // while no record has gone since (records only ever appear otherwise).
  struct Last {
    const void* func = nullptr;
    const void* record = nullptr;
    std::uint64_t removals = 0;
  };
  thread_local Last t_last;
  const std::uint64_t removals = r.removals.load(std::memory_order_acquire);
  if (t_last.func == func && t_last.removals == removals) return t_last.record;
  const void* record = nullptr;
  {
    std::lock_guard lock(r.mutex);
    if (const auto it = r.functions.find(func); it != r.functions.end()) {
      record = it->second.get();
    } else if (r.records.contains(func)) {
      record = func;  // CUDA 13's kernel handle of a registered stub (__cudaGetKernel)
    }
  }
  if (record) t_last = {func, record, removals};
  return record;
}

const char* registered_name(const void* record) noexcept {
  return static_cast<const Function*>(record)->device_name.c_str();
}

cudaError_t registered_function(const void* record, CUfunction& out, const char* api) noexcept {
  auto& fn = *static_cast<Function*>(const_cast<void*>(record));
  const CUcontext ctx = core::current_context_handle();
  core::Core& core = core::Core::get();
  // Launch loops reuse one kernel in one context: remember the last answer per thread. The
  // function handle is checked for life (a context reset unloads modules) without a lock.
  struct Last {
    const void* record;
    CUcontext ctx;
    CUfunction function;
  };
  thread_local Last t_last{};
  if (t_last.record == record && t_last.ctx == ctx &&
      core.functions.find(reinterpret_cast<std::uintptr_t>(t_last.function))) {
    out = t_last.function;
    return cudaSuccess;
  }
  CUresult res;
  {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    CUmodule mod = nullptr;
    res = module_here_locked(r, fn.module, ctx, mod);
    if (res == CUDA_SUCCESS) res = drv::cuModuleGetFunction(&out, mod, fn.device_name.c_str());
  }
  if (res == CUDA_SUCCESS) {
    t_last = {record, ctx, out};
    return cudaSuccess;
  }
  const cudaError_t e = load_error(res);
  try {
    const char* driver_name = "?";
    (void)drv::cuGetErrorName(res, &driver_name);
    const char* runtime_name = impl::cudaGetErrorName(e);
    const auto level = fn.explained.exchange(true) ? spdlog::level::debug : spdlog::level::err;
    log::get()->log(level,
                    "{}: kernel '{}' cannot run on the '{}' backend: its fat binary {} ({}); "
                    "returning {}",
                    api, fn.device_name, core.backend().name(),
                    res == CUDA_ERROR_NOT_FOUND ? "has no such kernel" : "did not load",
                    driver_name, runtime_name);
  } catch (...) {
  }
  return e;
}

}  // namespace cudamux::rt

namespace cudamux::rt::impl {

namespace drv = cudamux::impl;

void** __cudaRegisterFatBinary(void* fatCubin) {
  auto m = std::make_unique<Module>();
  m->fatbin = fatCubin;
  // The handle is an address the program keeps and passes back; one per fat binary.
  auto** handle = new void*(fatCubin);
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.modules.emplace(handle, std::move(m));
  return handle;
}

void __cudaRegisterFatBinaryEnd(void** fatCubinHandle) {
  try {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    std::size_t fns = 0, vars = 0;
    for (const auto& [stub, fn] : r.functions) fns += fn->module == fatCubinHandle;
    for (const auto& [host, v] : r.symbols) vars += v.module == fatCubinHandle;
    log::get()->debug("registered fat binary {}: {} kernels, {} variables",
                      static_cast<void*>(fatCubinHandle), fns, vars);
  } catch (...) {
  }
}

void __cudaUnregisterFatBinary(void** fatCubinHandle) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  if (r.modules.erase(fatCubinHandle) == 0) return;
  std::erase_if(r.functions, [&](const auto& kv) {
    if (kv.second->module != fatCubinHandle) return false;
    r.records.erase(kv.second.get());
    return true;
  });
  r.removals.fetch_add(1, std::memory_order_acq_rel);
  r.live.store(r.records.size(), std::memory_order_release);
  std::erase_if(r.symbols, [&](const auto& kv) { return kv.second.module == fatCubinHandle; });
  // Device copies stay with their contexts (freed when the context goes); runs from
  // atexit, when calling into the backend is no longer safe.
  delete fatCubinHandle;
}

void __cudaRegisterFunction(void** fatCubinHandle, const char* hostFun, char* deviceFun,
                            const char* deviceName, int, uint3*, uint3*, dim3*, dim3*, int*) {
  auto fn = std::make_unique<Function>();
  fn->module = fatCubinHandle;
  fn->host_stub = hostFun;
  fn->device_name = deviceName ? deviceName : (deviceFun ? deviceFun : "?");
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  auto& slot = r.functions[hostFun];
  if (slot) {  // registered again: the old record goes
    r.records.erase(slot.get());
    r.removals.fetch_add(1, std::memory_order_acq_rel);
  }
  r.records.insert(fn.get());
  slot = std::move(fn);
  r.live.store(r.records.size(), std::memory_order_release);
}

void __cudaRegisterVar(void** fatCubinHandle, char* hostVar, char*, const char* deviceName, int,
                       size_t size, int constant, int) {
  SymbolEntry e;
  e.module = fatCubinHandle;
  e.sym.name = deviceName;
  e.sym.size = size;
  e.sym.constant = constant != 0;
  e.sym.host_shadow = hostVar;
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.symbols[hostVar] = e;
}

void __cudaRegisterManagedVar(void** fatCubinHandle, void** hostVarPtrAddress, char*,
                              const char* deviceName, int, size_t size, int constant, int) {
  SymbolEntry e;
  e.module = fatCubinHandle;
  e.sym.name = deviceName;
  e.sym.size = size;
  e.sym.constant = constant != 0;
  e.sym.managed = true;
  e.sym.managed_slot = hostVarPtrAddress;
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  // The program reaches a managed variable through *hostVarPtrAddress; the symbol
  // argument of cudaMemcpyToSymbol is the slot.
  r.symbols[hostVarPtrAddress] = e;
}

char __cudaInitModule(void** fatCubinHandle) {
  // Managed variables get their memory here, before the program first touches them: the
  // module's own where it loads (its kernels use that), else fresh managed memory.
  if (enter() != cudaSuccess) return 0;
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  CUmodule mod = nullptr;
  const bool loaded =
      module_here_locked(r, fatCubinHandle, core::current_context_handle(), mod) == CUDA_SUCCESS;
  for (auto& [host, e] : r.symbols) {
    if (e.module != fatCubinHandle || !e.sym.managed || !e.sym.managed_slot || *e.sym.managed_slot)
      continue;
    CUdeviceptr p = 0;
    std::size_t bytes = 0;
    if (loaded && e.sym.name &&
        drv::cuModuleGetGlobal_v2(&p, &bytes, mod, e.sym.name) == CUDA_SUCCESS) {
      *e.sym.managed_slot = reinterpret_cast<void*>(p);
      continue;
    }
    if (drv::cuMemAllocManaged(&p, e.sym.size ? e.sym.size : 1, CU_MEM_ATTACH_GLOBAL) !=
        CUDA_SUCCESS)
      return 0;
    std::memset(reinterpret_cast<void*>(p), 0, e.sym.size);
    *e.sym.managed_slot = reinterpret_cast<void*>(p);
  }
  return 1;
}

unsigned int __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
                                         CUstream_st* stream) {
  t_configs.push_back({gridDim, blockDim, sharedMem, stream});
  return 0;
}

cudaError_t __cudaPopCallConfiguration(dim3* gridDim, dim3* blockDim, size_t* sharedMem,
                                       void* stream) {
  if (t_configs.empty())
    return reject(cudaErrorMissingConfiguration, "__cudaPopCallConfiguration",
                  "no pushed launch configuration");
  const LaunchConfig c = t_configs.back();
  t_configs.pop_back();
  if (gridDim) *gridDim = c.grid;
  if (blockDim) *blockDim = c.block;
  if (sharedMem) *sharedMem = c.shared;
  if (stream) *static_cast<cudaStream_t*>(stream) = c.stream;
  return cudaSuccess;
}

cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* entryFuncAddr) {
  if (!kernel) return reject(cudaErrorInvalidValue, "__cudaGetKernel", "null out-pointer");
  Function* fn = find_function(entryFuncAddr);
  if (!fn)
    return reject(cudaErrorInvalidDeviceFunction, "__cudaGetKernel", "not a registered kernel");
  // Our kernel handle for a registered stub is its registry record.
  *kernel = reinterpret_cast<cudaKernel_t>(fn);
  return cudaSuccess;
}

// CUDA 13's launch of a kernel handle from __cudaGetKernel: our handle is the registry record,
// which cudaLaunchKernel accepts as it accepts the stub.
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void** args,
                               size_t sharedMem, cudaStream_t stream) {
  if (!kernel || !is_kernel_handle(kernel))
    return reject(cudaErrorInvalidResourceHandle, "__cudaLaunchKernel", "not a kernel handle");
  return rt::impl::cudaLaunchKernel(static_cast<const void*>(kernel), gridDim, blockDim, args,
                                    sharedMem, stream);
}
cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void** args,
                                    size_t sharedMem, cudaStream_t stream) {
  if (!kernel || !is_kernel_handle(kernel))
    return reject(cudaErrorInvalidResourceHandle, "__cudaLaunchKernel", "not a kernel handle");
  return rt::impl::cudaLaunchKernel_ptsz(static_cast<const void*>(kernel), gridDim, blockDim, args,
                                         sharedMem, stream);
}
}  // namespace cudamux::rt::impl
