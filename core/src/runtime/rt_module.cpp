// Runtime API: the registration hooks nvcc-generated host code calls
// (__cudaRegisterFatBinary, __cudaRegisterFunction, __cudaRegisterVar, ...), device
// variables for cudaMemcpyToSymbol, the launch configuration stack and CUDA 13's
// __cudaGetKernel/__cudaLaunchKernel path. cudaLaunchKernel and the other functions that
// take a `const void* func` are in rt_kernel.cpp (they ask registered() here first).
//
// Registration always succeeds and keeps what it is given. Launching a registered
// kernel needs a backend that runs the fat binary's code (PTX/SASS); none does yet, so
// such launches fail with cudaErrorNoKernelImageForDevice and a log line saying why.
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

#include "cudamux/driver_impl.hpp"
#include "cudamux/log.hpp"
#include "cudamux/runtime_impl.hpp"
#include "rt_internal.hpp"

namespace cudamux::rt {
namespace {

namespace drv = cudamux::impl;

struct Module {
  void* fatbin = nullptr;  // the __fatDeviceText wrapper nvcc emitted
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

// Launch of a registered kernel: no backend runs nvcc-compiled device code yet.
cudaError_t launch_registered(Function& fn, dim3 grid, dim3 block, cudaStream_t stream, bool pt,
                              const char* api) {
  if (cudaError_t e = enter()) return e;
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || block.x == 0 || block.y == 0 || block.z == 0)
    return reject(cudaErrorInvalidConfiguration, api, "a grid or block dimension is 0");
  core::Stream* s = nullptr;
  if (const CUresult r = core::resolve_stream(stream, pt, s)) return map(r);
  return registered_has_no_code(&fn, api);
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
  auto& slot = r.copies[{symbol, ctx}];
  if (slot && core::context_of(ctx)) {
    address = slot;
    return cudaSuccess;
  }
  // First use in this context: allocate and start from the host shadow's bytes (nvcc
  // gives the shadow the variable's initialiser).
  CUdeviceptr p = 0;
  if (const CUresult res = drv::cuMemAlloc_v2(&p, sym.size ? sym.size : 1)) return map(res);
  if (sym.host_shadow && sym.size) {
    if (const CUresult res = drv::cuMemcpyHtoD_v2(p, sym.host_shadow, sym.size)) {
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
  std::lock_guard lock(r.mutex);
  if (const auto it = r.functions.find(func); it != r.functions.end()) return it->second.get();
  // CUDA 13's kernel handle of a registered stub (__cudaGetKernel) is its record.
  return r.records.contains(func) ? func : nullptr;
}

const char* registered_name(const void* record) noexcept {
  return static_cast<const Function*>(record)->device_name.c_str();
}

cudaError_t registered_has_no_code(const void* record, const char* api) noexcept {
  auto& fn = *static_cast<Function*>(const_cast<void*>(record));
  try {
    auto& log = *log::get();
    const auto level = fn.explained.exchange(true) ? spdlog::level::debug : spdlog::level::err;
    log.log(level,
            "{}: kernel '{}' was compiled by nvcc to PTX/SASS, which the '{}' backend cannot run; "
            "returning cudaErrorNoKernelImageForDevice (load kernels through NVRTC and "
            "cudaLibraryLoadData/cuModuleLoadData on a backend that executes them)",
            api, fn.device_name, core::Core::get().backend().name());
  } catch (...) {
  }
  return cudaErrorNoKernelImageForDevice;
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
  if (slot) r.records.erase(slot.get());  // registered again: the old record goes
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
  // Managed variables get their memory here, before the program first touches them.
  if (enter() != cudaSuccess) return 0;
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  for (auto& [host, e] : r.symbols) {
    if (e.module != fatCubinHandle || !e.sym.managed || !e.sym.managed_slot || *e.sym.managed_slot)
      continue;
    CUdeviceptr p = 0;
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

namespace {
cudaError_t launch_kernel_handle(cudaKernel_t kernel, dim3 grid, dim3 block, cudaStream_t stream,
                                 bool pt) {
  if (!kernel || !is_kernel_handle(kernel))
    return reject(cudaErrorInvalidResourceHandle, "__cudaLaunchKernel", "not a kernel handle");
  return launch_registered(*reinterpret_cast<Function*>(kernel), grid, block, stream, pt,
                           "__cudaLaunchKernel");
}
}  // namespace

cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void**, size_t,
                               cudaStream_t stream) {
  return launch_kernel_handle(kernel, gridDim, blockDim, stream, false);
}
cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void**,
                                    size_t, cudaStream_t stream) {
  return launch_kernel_handle(kernel, gridDim, blockDim, stream, true);
}
}  // namespace cudamux::rt::impl
