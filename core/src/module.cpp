// Modules, functions, libraries and kernels (issue #3), and the sticky-error record.
//
// A module is a backend module image loaded into one context; its functions are handed
// out once per name. A library (CUlibrary) is context-independent: it loads one module
// per context on first use, and its kernels (CUkernel) resolve to that module's functions.
#include <elf.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <iterator>
#include <mutex>
#include <optional>
#include <set>

#include "core.hpp"
#include "cudamux/driver_impl.hpp"
#include "cudamux/fatbin.hpp"
#include "module_image.hpp"

namespace cudamux::core {

namespace {

// Guards every module list, function map and library map. Loading and unloading are
// rare and never on a launch path, so one lock keeps the lifetimes simple.
std::mutex g_registry;

// Bytes of an image whose format tells its length (ELF, NVIDIA fat binary, NUL-terminated
// text); nullopt otherwise. A library keeps a copy when it can, since CUDA lets the caller
// free the image after cuLibraryLoadData while we load it into later contexts lazily.
std::optional<std::size_t> image_extent(const void* image) noexcept {
  const auto* b = static_cast<const unsigned char*>(image);
  if (std::memcmp(b, ELFMAG, SELFMAG) == 0 && b[EI_CLASS] == ELFCLASS64) {
    Elf64_Ehdr eh;
    std::memcpy(&eh, b, sizeof eh);
    std::size_t end =
        std::max<std::size_t>(sizeof eh, eh.e_shoff + std::size_t{eh.e_shnum} * eh.e_shentsize);
    end = std::max<std::size_t>(end, eh.e_phoff + std::size_t{eh.e_phnum} * eh.e_phentsize);
    for (unsigned i = 0; i < eh.e_phnum; ++i) {
      Elf64_Phdr ph;
      std::memcpy(&ph, b + eh.e_phoff + std::size_t{i} * eh.e_phentsize, sizeof ph);
      end = std::max<std::size_t>(end, ph.p_offset + ph.p_filesz);
    }
    return end;
  }
  if (const auto fat = fatbin::extent(image)) return fat;
  // Text images (PTX and friends): printable up to their NUL.
  std::size_t n = 0;
  for (; b[n] != 0; ++n) {
    if (b[n] < 0x20 && b[n] != '\n' && b[n] != '\r' && b[n] != '\t') return std::nullopt;
  }
  return n + 1;
}

// Frees a module whose handle was erased by the caller. Registry lock held.
void destroy_module_locked(Module* m) noexcept {
  Core& core = Core::get();
  if (!m->registered_globals.empty()) {
    std::unique_lock lock(core.alloc_mutex);
    for (auto base : m->registered_globals) core.allocations.erase(base);
  }
  for (auto& [name, f] : m->functions) {
    if (core.functions.erase(reinterpret_cast<std::uintptr_t>(f->handle))) delete f;
  }
  m->functions.clear();
  if (m->ctx) std::erase(m->ctx->modules, m);
  if (m->library) m->library->modules.erase(m->ctx);
  delete m;
}

CUresult load_module_locked(Context& ctx, const void* image, Library* lib, Module*& out,
                            const char* fn) {
  Core& core = Core::get();
  ResolvedImage resolved;
  if (const CUresult r = resolve_image(image, core.backend(), ctx.device, resolved, fn)) return r;
  auto m = std::make_unique<Module>();
  m->ctx = &ctx;
  m->library = lib;
  std::vector<unsigned char> linked;
  if (!resolved.link_inputs.empty()) {
    // Relocatable device code's PTX (module_image.hpp): linked as cuLink* would, then loaded.
    std::string link_log;
    backend::Status link_st;
    if (!ctx.impl->link(resolved.link_inputs, {}, linked, link_log, link_st)) {
      core.log().error("{} (and the backend links no PTX)", resolved.link_error);
      return CUDA_ERROR_NO_BINARY_FOR_GPU;
    }
    if (!link_st.ok()) {
      core.log().error("{}: linking the relocatable objects' PTX failed: {}", fn, link_log);
      return CUDA_ERROR_NO_BINARY_FOR_GPU;
    }
    resolved.image = backend::native_image(linked.data());
  }
  auto st = ctx.impl->load_module(resolved.image, m->impl);
  if (!st.ok() && resolved.image.kind == backend::ImageKind::nvidia_fatbin) {
    // The linked SASS of an -rdc program built for another GPU: NVIDIA's driver refuses it,
    // and NVIDIA's runtime then links the objects' relocatable fat binaries for the GPU
    // (measured: nvcc -rdc for sm_75 runs on an H100). So does cudamux, with the backend's
    // linker (the driver JIT-compiles each object's PTX).
    std::vector<std::byte> section;
    std::vector<fatbin::Entry> entries;
    std::string why;
    if (relocatable_fat_binaries(resolved.image.data, section, entries, why)) {
      std::vector<backend::ModuleImage> inputs;
      for (std::size_t at = 0; at < section.size();) {
        const auto n = fatbin::extent(section.data() + at);
        if (!n || *n > section.size() - at) break;
        inputs.push_back({backend::ImageKind::nvidia_fatbin, section.data() + at, *n, 0});
        at += *n;
      }
      std::string link_log;
      backend::Status link_st;
      if (!inputs.empty() && ctx.impl->link(inputs, {}, linked, link_log, link_st) &&
          link_st.ok()) {
        core.log().info(
            "{}: the fat binary's linked SASS did not load; its {} relocatable "
            "object(s) were linked for the device instead",
            fn, inputs.size());
        st = ctx.impl->load_module(backend::native_image(linked.data()), m->impl);
      } else if (!link_log.empty()) {
        core.log().warn("{}: linking the relocatable objects failed: {}", fn, link_log);
      }
    } else if (!why.empty()) {
      core.log().warn("{}: {}", fn, why);
    }
  }
  if (!st.ok()) {
    const CUresult r = core.map(st, fn);
    core.log().warn("{}: the '{}' backend did not load the module image ({})", fn,
                    core.backend().name(), core.backend().errors().native_name(st.native));
    return r;
  }
  if (!m->impl) return reject(CUDA_ERROR_INVALID_IMAGE, fn, "backend returned no module");
  Module* raw = m.release();
  const auto handle = core.modules.insert(raw);
  if (!handle) {
    delete raw;
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  raw->handle = reinterpret_cast<CUmodule>(handle);
  ctx.modules.push_back(raw);
  if (lib) lib->modules[&ctx] = raw;
  out = raw;
  return CUDA_SUCCESS;
}

// The CUfunction for `name` in `m` (one per name). Registry lock held.
CUresult function_locked(Module& m, std::string_view name, Function*& out, const char* fn) {
  if (auto it = m.functions.find(name); it != m.functions.end()) {
    out = it->second;
    return CUDA_SUCCESS;
  }
  backend::Function* impl = m.impl->function(name);
  if (!impl) {
    Core::get().log().debug("{}: no function named '{}' in the module", fn, name);
    return CUDA_ERROR_NOT_FOUND;
  }
  auto f = std::make_unique<Function>();
  f->module = &m;
  f->ctx = m.ctx;
  f->impl = impl;
  f->name = std::string(name);
  if (m.library) {  // cuKernelSetAttribute values reach every context's function
    if (auto it = m.library->kernels.find(name); it != m.library->kernels.end()) {
      f->max_dynamic_shared = it->second->max_dynamic_shared.load();
      f->preferred_carveout = it->second->preferred_carveout.load();
      // issue 7: and the backend's function too (validated when they were set).
      if (int v = f->max_dynamic_shared.load(); v >= 0)
        (void)impl->set_attribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, v);
      if (int v = f->preferred_carveout.load(); v >= 0)
        (void)impl->set_attribute(CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, v);
    }
  }
  Function* raw = f.release();
  const auto handle = Core::get().functions.insert(raw);
  if (!handle) {
    delete raw;
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  raw->handle = reinterpret_cast<CUfunction>(handle);
  m.functions.emplace(raw->name, raw);
  out = raw;
  return CUDA_SUCCESS;
}

// The library's module in `ctx`, loaded on first use. Registry lock held.
CUresult library_module_locked(Library& lib, Context& ctx, Module*& out, const char* fn) {
  if (auto it = lib.modules.find(&ctx); it != lib.modules.end()) {
    out = it->second;
    return CUDA_SUCCESS;
  }
  return load_module_locked(ctx, lib.image_ptr, &lib, out, fn);
}

CUresult module_of(CUmodule h, Module*& out, const char* fn) {
  out = Core::get().modules.find(reinterpret_cast<std::uintptr_t>(h));
  if (!out) return reject(CUDA_ERROR_INVALID_HANDLE, fn, "invalid module");
  return sticky_error(*out->ctx);
}
CUresult function_of(CUfunction h, Function*& out, const char* fn) {
  out = Core::get().functions.find(reinterpret_cast<std::uintptr_t>(h));
  if (!out) return reject(CUDA_ERROR_INVALID_HANDLE, fn, "invalid function");
  return sticky_error(*out->module->ctx);
}
CUresult library_of(CUlibrary h, Library*& out, const char* fn) {
  out = Core::get().libraries.find(reinterpret_cast<std::uintptr_t>(h));
  return out ? CUDA_SUCCESS : reject(CUDA_ERROR_INVALID_HANDLE, fn, "invalid library");
}
CUresult kernel_of(CUkernel h, Kernel*& out, const char* fn) {
  out = Core::get().kernels.find(reinterpret_cast<std::uintptr_t>(h));
  return out ? CUDA_SUCCESS : reject(CUDA_ERROR_INVALID_HANDLE, fn, "invalid kernel");
}

// The kernel's function in the current context (loading the library there if needed).
CUresult kernel_function(Kernel& k, Context* ctx, Function*& out, const char* fn) {
  if (!ctx) {
    if (CUresult r = current_context(ctx)) return r;
  }
  std::lock_guard lock(g_registry);
  Module* m = nullptr;
  if (CUresult r = library_module_locked(*k.library, *ctx, m, fn)) return r;
  return function_locked(*m, k.name, out, fn);
}

// JIT options of cuModuleLoadDataEx / cuLibraryLoadData: validated; the log buffers get
// our messages and the wall time is reported, as a JIT would.
struct JitOptions {
  unsigned count = 0;
  CUjit_option* options = nullptr;
  void** values = nullptr;
};

CUresult check_jit_options(const JitOptions& o, const char* fn) {
  if (o.count == 0) return CUDA_SUCCESS;
  if (!o.options || !o.values)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "null JIT option arrays");
  for (unsigned i = 0; i < o.count; ++i) {
    if (static_cast<unsigned>(o.options[i]) >= CU_JIT_NUM_OPTIONS)
      return reject(CUDA_ERROR_INVALID_VALUE, fn, "unknown JIT option");
  }
  return CUDA_SUCCESS;
}

void fill_jit_outputs(const JitOptions& o, CUresult result, float ms) {
  auto size_of = [&](CUjit_option which) -> std::size_t {
    for (unsigned i = 0; i < o.count; ++i)
      if (o.options[i] == which)
        return static_cast<std::size_t>(reinterpret_cast<std::uintptr_t>(o.values[i]));
    return 0;
  };
  auto set_size = [&](CUjit_option which, std::size_t n) {
    for (unsigned i = 0; i < o.count; ++i)
      if (o.options[i] == which)
        o.values[i] = reinterpret_cast<void*>(static_cast<std::uintptr_t>(n));
  };
  const std::string backend(Core::get().backend().name());
  const std::string info =
      result == CUDA_SUCCESS ? "cudamux: module loaded by the '" + backend + "' backend" : "";
  std::string error;
  if (result != CUDA_SUCCESS) {
    const char* name = nullptr;
    impl::cuGetErrorName(result, &name);
    error = "cudamux: the '" + backend + "' backend did not load the image (" +
            (name ? name : "?") + ")";
  }
  for (unsigned i = 0; i < o.count; ++i) {
    switch (o.options[i]) {
      case CU_JIT_WALL_TIME:
        std::memcpy(&o.values[i], &ms, sizeof ms);
        break;
      case CU_JIT_INFO_LOG_BUFFER:
      case CU_JIT_ERROR_LOG_BUFFER: {
        const bool is_info = o.options[i] == CU_JIT_INFO_LOG_BUFFER;
        const auto size_opt =
            is_info ? CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES : CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES;
        const std::size_t cap = size_of(size_opt);
        const std::string& text = is_info ? info : error;
        if (auto* buf = static_cast<char*>(o.values[i]); buf && cap > 0) {
          const std::size_t n = std::min(text.size(), cap - 1);
          std::memcpy(buf, text.data(), n);
          buf[n] = '\0';
          set_size(size_opt, n + 1);
        }
        break;
      }
      default:
        break;  // inputs (optimisation level, target, ...) mean nothing to a loader here
    }
  }
}

CUresult load_data(CUmodule* module, const void* image, const JitOptions& jit, const char* fn) {
  if (!module) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  if (!image) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null image");
  if (CUresult r = check_jit_options(jit, fn)) return r;
  Context* ctx = nullptr;
  if (CUresult r = current_context(ctx)) return r;
  const auto start = std::chrono::steady_clock::now();
  Module* m = nullptr;
  CUresult r;
  {
    std::lock_guard lock(g_registry);
    r = load_module_locked(*ctx, image, nullptr, m, fn);
  }
  const float ms =
      std::chrono::duration<float, std::milli>(std::chrono::steady_clock::now() - start).count();
  fill_jit_outputs(jit, r, ms);
  if (r == CUDA_SUCCESS) *module = m->handle;
  return r;
}

CUresult read_file(const char* path, std::vector<char>& out, const char* fn) {
  if (!path) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null file name");
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    Core::get().log().debug("{}: cannot open '{}'", fn, path);
    return CUDA_ERROR_FILE_NOT_FOUND;
  }
  out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (out.empty()) return reject(CUDA_ERROR_INVALID_IMAGE, fn, "empty file");
  out.push_back('\0');  // text images are read as C strings
  return CUDA_SUCCESS;
}

}  // namespace

CUresult note_sticky(Context& ctx, CUresult r) noexcept {
  if (is_sticky_error(r)) {
    CUresult expected = CUDA_SUCCESS;
    if (ctx.sticky.compare_exchange_strong(expected, r, std::memory_order_acq_rel)) {
      const char* name = nullptr;
      impl::cuGetErrorName(r, &name);
      try {
        Core::get().log().error(
            "context {}: a kernel failed with {}; the context is unusable until destroyed or reset",
            ctx.id, name ? name : "?");
      } catch (...) {
      }
    }
  }
  return r;
}

int device_attribute_or(int ordinal, CUdevice_attribute attr, int fallback) noexcept {
  int v = 0;
  try {
    if (Core::get()
            .backend()
            .devices()
            .attribute(Core::get().backend_ordinal(ordinal), attr, v)
            .ok())
      return v;
  } catch (...) {
  }
  return fallback;
}

CUresult function_attribute(const Function& f, CUfunction_attribute attr, int& value) noexcept {
  const int dev = f.module->ctx->device;
  switch (attr) {
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
      if (int v = f.max_dynamic_shared.load(); v >= 0) {
        value = v;
        return CUDA_SUCCESS;
      }
      break;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
      if (int v = f.preferred_carveout.load(); v >= 0) {
        value = v;
        return CUDA_SUCCESS;
      }
      break;
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
      value = f.non_portable_cluster;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
      value = f.cluster_scheduling;
      return CUDA_SUCCESS;
    default:
      break;
  }
  if (f.impl->attribute(attr, value).ok()) return CUDA_SUCCESS;
  // Defaults for what a backend does not track: a kernel with no static resources.
  auto shared_static = [&] {
    int s = 0;
    return f.impl->attribute(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, s).ok() ? s : 0;
  };
  const int major = device_attribute_or(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0);
  const int minor = device_attribute_or(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0);
  switch (attr) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      value = device_attribute_or(dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024);
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
    case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES:
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES:
    case CU_FUNC_ATTRIBUTE_NUM_REGS:
    case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA:
    case CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
      value = 0;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION:
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION:
      value = major * 10 + minor;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
      value = std::max(
          0, device_attribute_or(dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 48 * 1024) -
                 shared_static());
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
      value = -1;
      return CUDA_SUCCESS;
    default:
      return reject(CUDA_ERROR_INVALID_VALUE, "cuFuncGetAttribute", "unknown attribute");
  }
}

CUresult function_for_launch(CUfunction h, Context* ctx, Function*& out) noexcept {
  try {
    Core& core = Core::get();
    if ((out = core.functions.find(reinterpret_cast<std::uintptr_t>(h)))) return CUDA_SUCCESS;
    // CUDA: a CUkernel cast to CUfunction launches in the stream's (or current) context.
    if (Kernel* k = core.kernels.find(reinterpret_cast<std::uintptr_t>(h))) {
      if (ctx) {
        Function* last = core.functions.find(k->launch_function.load(std::memory_order_relaxed));
        if (last && last->ctx == ctx) {
          out = last;
          return CUDA_SUCCESS;
        }
      }
      const CUresult r = kernel_function(*k, ctx, out, "cuLaunchKernel");
      if (r == CUDA_SUCCESS)
        k->launch_function.store(reinterpret_cast<std::uintptr_t>(out->handle),
                                 std::memory_order_relaxed);
      return r;
    }
    return reject(CUDA_ERROR_INVALID_HANDLE, "cuLaunchKernel", "invalid function");
  } catch (...) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
}

void unload_context_modules(Context& ctx) noexcept {
  Core& core = Core::get();
  std::lock_guard lock(g_registry);
  const std::vector<Module*> modules = ctx.modules;
  for (Module* m : modules) {
    if (core.modules.erase(reinterpret_cast<std::uintptr_t>(m->handle))) destroy_module_locked(m);
  }
  ctx.modules.clear();
}

}  // namespace cudamux::core

namespace cudamux::impl {
using core::Context;
using core::Core;
using core::Function;
using core::Kernel;
using core::Library;
using core::Module;
using core::reject;

// --- modules ---

CUresult cuModuleLoadData(CUmodule* module, const void* image) {
  return core::load_data(module, image, {}, "cuModuleLoadData");
}

CUresult cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned int numOptions,
                            CUjit_option* options, void** optionValues) {
  return core::load_data(module, image, {numOptions, options, optionValues}, "cuModuleLoadDataEx");
}

CUresult cuModuleLoadFatBinary(CUmodule* module, const void* fatCubin) {
  return core::load_data(module, fatCubin, {}, "cuModuleLoadFatBinary");
}

CUresult cuModuleLoad(CUmodule* module, const char* fname) {
  if (!module) return reject(CUDA_ERROR_INVALID_VALUE, "cuModuleLoad", "null out-pointer");
  std::vector<char> bytes;
  if (CUresult r = core::read_file(fname, bytes, "cuModuleLoad")) return r;
  return core::load_data(module, bytes.data(), {}, "cuModuleLoad");
}

CUresult cuModuleUnload(CUmodule hmod) {
  Core& core = Core::get();
  std::lock_guard lock(core::g_registry);
  Module* m = core.modules.find(reinterpret_cast<std::uintptr_t>(hmod));
  if (!m) return reject(CUDA_ERROR_INVALID_HANDLE, "cuModuleUnload", "invalid module");
  // NVIDIA's answer (driver 580, H200: tests/driver/oracle).
  if (m->library)
    return reject(CUDA_ERROR_NOT_PERMITTED, "cuModuleUnload",
                  "a library's module is unloaded with cuLibraryUnload");
  // Work already queued with its functions keeps running on the backend's own references.
  core.modules.erase(reinterpret_cast<std::uintptr_t>(hmod));
  core::destroy_module_locked(m);
  return CUDA_SUCCESS;
}

CUresult cuModuleGetLoadingMode(CUmoduleLoadingMode* mode) {
  if (!mode) return reject(CUDA_ERROR_INVALID_VALUE, "cuModuleGetLoadingMode", "null out-pointer");
  // issue 8: CUDA_MODULE_LOADING as read at cuInit (LAZY by default, as CUDA since 12.2). Modules
  // are loaded whole either way; the mode only changes what the program is told.
  *mode = Core::get().module_loading();
  return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction* hfunc, CUmodule hmod, const char* name) {
  if (!hfunc || !name)
    return reject(CUDA_ERROR_INVALID_VALUE, "cuModuleGetFunction", "null argument");
  Module* m = nullptr;
  if (CUresult r = core::module_of(hmod, m, "cuModuleGetFunction")) return r;
  std::lock_guard lock(core::g_registry);
  Function* f = nullptr;
  if (CUresult r = core::function_locked(*m, name, f, "cuModuleGetFunction")) return r;
  *hfunc = f->handle;
  return CUDA_SUCCESS;
}

CUresult cuModuleGetFunctionCount(unsigned int* count, CUmodule mod) {
  if (!count)
    return reject(CUDA_ERROR_INVALID_VALUE, "cuModuleGetFunctionCount", "null out-pointer");
  Module* m = nullptr;
  if (CUresult r = core::module_of(mod, m, "cuModuleGetFunctionCount")) return r;
  *count = static_cast<unsigned>(m->impl->function_names().size());
  return CUDA_SUCCESS;
}

CUresult cuModuleEnumerateFunctions(CUfunction* functions, unsigned int numFunctions,
                                    CUmodule mod) {
  if (!functions)
    return reject(CUDA_ERROR_INVALID_VALUE, "cuModuleEnumerateFunctions", "null array");
  Module* m = nullptr;
  if (CUresult r = core::module_of(mod, m, "cuModuleEnumerateFunctions")) return r;
  const auto names = m->impl->function_names();
  // Room for more than the module has is no error on NVIDIA's driver (580, H200:
  // tests/driver/oracle): the module's functions are written, the rest left as it was.
  const std::size_t count = std::min<std::size_t>(numFunctions, names.size());
  std::lock_guard lock(core::g_registry);
  for (std::size_t i = 0; i < count; ++i) {
    Function* f = nullptr;
    if (CUresult r = core::function_locked(*m, names[i], f, "cuModuleEnumerateFunctions")) return r;
    functions[i] = f->handle;
  }
  return CUDA_SUCCESS;
}

CUresult cuModuleGetGlobal_v2(CUdeviceptr* dptr, size_t* bytes, CUmodule hmod, const char* name) {
  if (!name) return reject(CUDA_ERROR_INVALID_VALUE, "cuModuleGetGlobal", "null name");
  if (!dptr && !bytes)
    return reject(CUDA_ERROR_INVALID_VALUE, "cuModuleGetGlobal", "both out-pointers null");
  Module* m = nullptr;
  if (CUresult r = core::module_of(hmod, m, "cuModuleGetGlobal")) return r;
  void* address = nullptr;
  std::size_t size = 0;
  if (!m->impl->global(name, address, size))
    return reject(CUDA_ERROR_NOT_FOUND, "cuModuleGetGlobal", "no such global");
  // A global is device memory to every other call (copies, memsets, pointer attributes).
  const auto base = reinterpret_cast<std::uintptr_t>(address);
  if (size > 0) {
    std::lock_guard lock(core::g_registry);
    Core& core = Core::get();
    std::unique_lock alloc_lock(core.alloc_mutex);
    if (!core.allocations.contains(base)) {
      core::Allocation a;
      a.base = base;
      a.size = size;
      a.kind = core::AllocKind::device;
      a.ctx = m->ctx;
      a.ctx_handle = m->ctx->handle;
      a.device = m->ctx->device;
      a.buffer_id = core.next_buffer_id.fetch_add(1);
      core.allocations.emplace(base, a);
      m->registered_globals.push_back(base);
    }
  }
  if (dptr) *dptr = reinterpret_cast<CUdeviceptr>(address);
  if (bytes) *bytes = size;
  return CUDA_SUCCESS;
}

// --- functions ---

CUresult cuFuncGetAttribute(int* pi, CUfunction_attribute attrib, CUfunction hfunc) {
  if (!pi) return reject(CUDA_ERROR_INVALID_VALUE, "cuFuncGetAttribute", "null out-pointer");
  Function* f = nullptr;
  if (CUresult r = core::function_of(hfunc, f, "cuFuncGetAttribute")) return r;
  if (static_cast<unsigned>(attrib) >= CU_FUNC_ATTRIBUTE_MAX)
    return reject(CUDA_ERROR_INVALID_VALUE, "cuFuncGetAttribute", "unknown attribute");
  return core::function_attribute(*f, attrib, *pi);
}

static CUresult set_function_attribute(Function& f, CUfunction_attribute attrib, int value,
                                       const char* fn) {
  const int dev = f.module->ctx->device;
  switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: {
      int shared_static = 0;
      (void)core::function_attribute(f, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, shared_static);
      const int optin = core::device_attribute_or(
          dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
          core::device_attribute_or(dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
                                    48 * 1024));
      if (value < 0 || value > optin - shared_static)
        return reject(CUDA_ERROR_INVALID_VALUE, fn,
                      "dynamic shared memory beyond the device's opt-in limit");
      // issue 7: the backend hears of it first (NVIDIA's driver needs it for the launch itself).
      if (const auto st = f.impl->set_attribute(attrib, value); !st.ok())
        return Core::get().map(st, fn);
      f.max_dynamic_shared = value;
      return CUDA_SUCCESS;
    }
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
      if (value < -1 || value > 100)
        return reject(CUDA_ERROR_INVALID_VALUE, fn, "carveout is -1 or 0..100");
      if (const auto st = f.impl->set_attribute(attrib, value); !st.ok())
        return Core::get().map(st, fn);
      f.preferred_carveout = value;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
      if (!core::device_attribute_or(dev, CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH, 0))
        return reject(CUDA_ERROR_NOT_SUPPORTED, fn, "the device has no thread block clusters");
      if (attrib == CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED) {
        f.non_portable_cluster = value != 0;
        return CUDA_SUCCESS;
      }
      if (attrib == CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE) {
        f.cluster_scheduling = value;
        return CUDA_SUCCESS;
      }
      return reject(CUDA_ERROR_NOT_SUPPORTED, fn,
                    "required cluster dimensions are fixed at compile time here");
    default:
      return reject(CUDA_ERROR_INVALID_VALUE, fn, "attribute is read-only or unknown");
  }
}

CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value) {
  Function* f = nullptr;
  if (CUresult r = core::function_of(hfunc, f, "cuFuncSetAttribute")) return r;
  return set_function_attribute(*f, attrib, value, "cuFuncSetAttribute");
}

CUresult cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config) {
  Function* f = nullptr;
  if (CUresult r = core::function_of(hfunc, f, "cuFuncSetCacheConfig")) return r;
  if (static_cast<unsigned>(config) > CU_FUNC_CACHE_PREFER_EQUAL)
    return reject(CUDA_ERROR_INVALID_VALUE, "cuFuncSetCacheConfig", "unknown cache configuration");
  f->cache_config = config;  // a preference: nothing to change on backends without an L1 split
  return CUDA_SUCCESS;
}

CUresult cuFuncSetSharedMemConfig(CUfunction hfunc, CUsharedconfig config) {
  Function* f = nullptr;
  if (CUresult r = core::function_of(hfunc, f, "cuFuncSetSharedMemConfig")) return r;
  if (static_cast<unsigned>(config) > CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE)
    return reject(CUDA_ERROR_INVALID_VALUE, "cuFuncSetSharedMemConfig",
                  "unknown bank configuration");
  f->shared_config = config;  // as on current GPUs: accepted, no effect
  return CUDA_SUCCESS;
}

CUresult cuFuncGetModule(CUmodule* hmod, CUfunction hfunc) {
  if (!hmod) return reject(CUDA_ERROR_INVALID_VALUE, "cuFuncGetModule", "null out-pointer");
  Function* f = nullptr;
  if (CUresult r = core::function_of(hfunc, f, "cuFuncGetModule")) return r;
  *hmod = f->module->handle;
  return CUDA_SUCCESS;
}

CUresult cuFuncGetName(const char** name, CUfunction hfunc) {
  if (!name) return reject(CUDA_ERROR_INVALID_VALUE, "cuFuncGetName", "null out-pointer");
  Function* f = nullptr;
  if (CUresult r = core::function_of(hfunc, f, "cuFuncGetName")) return r;
  *name = f->name.c_str();
  return CUDA_SUCCESS;
}

static CUresult param_info(const Function& f, size_t index, size_t* offset, size_t* size,
                           const char* fn) {
  if (!offset && !size) return reject(CUDA_ERROR_INVALID_VALUE, fn, "both out-pointers null");
  const auto& params = f.impl->params();
  if (index >= params.size())
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "parameter index out of range");
  if (offset) *offset = params[index].offset;
  if (size) *size = params[index].size;
  return CUDA_SUCCESS;
}

CUresult cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t* paramOffset,
                            size_t* paramSize) {
  Function* f = nullptr;
  if (CUresult r = core::function_of(func, f, "cuFuncGetParamInfo")) return r;
  return param_info(*f, paramIndex, paramOffset, paramSize, "cuFuncGetParamInfo");
}

CUresult cuFuncIsLoaded(CUfunctionLoadingState* state, CUfunction function) {
  if (!state) return reject(CUDA_ERROR_INVALID_VALUE, "cuFuncIsLoaded", "null out-pointer");
  Function* f = nullptr;
  if (CUresult r = core::function_of(function, f, "cuFuncIsLoaded")) return r;
  *state = CU_FUNCTION_LOADING_STATE_LOADED;  // modules are loaded eagerly
  return CUDA_SUCCESS;
}

CUresult cuFuncLoad(CUfunction function) {
  Function* f = nullptr;
  return core::function_of(function, f, "cuFuncLoad");  // already loaded
}

// --- libraries and kernels ---

static CUresult library_load(CUlibrary* library, const void* code, const core::JitOptions& jit,
                             CUlibraryOption* libraryOptions, void** libraryOptionValues,
                             unsigned numLibraryOptions, std::vector<char>* owned, const char* fn) {
  if (!library) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  if (!code) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null image");
  if (CUresult r = core::check_jit_options(jit, fn)) return r;
  if (numLibraryOptions > 0 && !libraryOptions)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "null library option array");
  // A null value array is accepted, as NVIDIA's driver does (cuBLAS 13 passes one option and
  // no values): every option then has the value 0.
  for (unsigned i = 0; i < numLibraryOptions; ++i) {
    if (static_cast<unsigned>(libraryOptions[i]) >= CU_LIBRARY_NUM_OPTIONS)
      return reject(CUDA_ERROR_INVALID_VALUE, fn, "unknown library option");
  }
  // CU_LIBRARY_BINARY_IS_PRESERVED: the caller keeps the image alive (NVIDIA's runtime passes it
  // with the registered fat binary's wrapper), so no copy is needed.
  bool preserved = false;
  for (unsigned i = 0; i < numLibraryOptions; ++i) {
    // The value travels in the pointer itself, as JIT option values do; never dereferenced.
    if (libraryOptions[i] == CU_LIBRARY_BINARY_IS_PRESERVED)
      preserved = libraryOptionValues != nullptr && libraryOptionValues[i] != nullptr;
  }
  Core& core = Core::get();
  auto lib = std::make_unique<Library>();
  if (owned) {
    lib->image = std::move(*owned);
  } else if (preserved) {
  } else if (auto n = core::image_extent(code)) {
    const auto* b = static_cast<const char*>(code);
    lib->image.assign(b, b + *n);
  } else {
    core.log().warn(
        "{}: image format of unknown length: it must stay valid while the library is loaded", fn);
  }
  lib->image_ptr = lib->image.empty() ? code : lib->image.data();
  // Loaded at once in the current context (if any), so that a bad image fails here.
  Context* ctx = nullptr;
  const bool have_ctx = core::current_context_handle() != nullptr;
  if (have_ctx) {
    if (CUresult r = core::current_context(ctx)) return r;
  }
  std::lock_guard lock(core::g_registry);
  Library* raw = lib.release();
  if (ctx) {
    core::Module* m = nullptr;
    const auto start = std::chrono::steady_clock::now();
    const CUresult r = core::library_module_locked(*raw, *ctx, m, fn);
    core::fill_jit_outputs(
        jit, r,
        std::chrono::duration<float, std::milli>(std::chrono::steady_clock::now() - start).count());
    if (r != CUDA_SUCCESS) {
      delete raw;
      return r;
    }
  }
  const auto handle = core.libraries.insert(raw);
  if (!handle) {
    for (auto [c, m] : std::map(raw->modules))
      if (core.modules.erase(reinterpret_cast<std::uintptr_t>(m->handle)))
        core::destroy_module_locked(m);
    delete raw;
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  raw->handle = reinterpret_cast<CUlibrary>(handle);
  *library = raw->handle;
  return CUDA_SUCCESS;
}

CUresult cuLibraryLoadData(CUlibrary* library, const void* code, CUjit_option* jitOptions,
                           void** jitOptionsValues, unsigned int numJitOptions,
                           CUlibraryOption* libraryOptions, void** libraryOptionValues,
                           unsigned int numLibraryOptions) {
  return library_load(library, code, {numJitOptions, jitOptions, jitOptionsValues}, libraryOptions,
                      libraryOptionValues, numLibraryOptions, nullptr, "cuLibraryLoadData");
}

CUresult cuLibraryLoadFromFile(CUlibrary* library, const char* fileName, CUjit_option* jitOptions,
                               void** jitOptionsValues, unsigned int numJitOptions,
                               CUlibraryOption* libraryOptions, void** libraryOptionValues,
                               unsigned int numLibraryOptions) {
  if (!library)
    return reject(CUDA_ERROR_INVALID_VALUE, "cuLibraryLoadFromFile", "null out-pointer");
  std::vector<char> bytes;
  if (CUresult r = core::read_file(fileName, bytes, "cuLibraryLoadFromFile")) return r;
  const void* code = bytes.data();
  return library_load(library, code, {numJitOptions, jitOptions, jitOptionsValues}, libraryOptions,
                      libraryOptionValues, numLibraryOptions, &bytes, "cuLibraryLoadFromFile");
}

CUresult cuLibraryUnload(CUlibrary library) {
  Core& core = Core::get();
  std::lock_guard lock(core::g_registry);
  Library* lib = core.libraries.erase(reinterpret_cast<std::uintptr_t>(library));
  if (!lib) return reject(CUDA_ERROR_INVALID_HANDLE, "cuLibraryUnload", "invalid library");
  for (auto [c, m] : std::map(lib->modules))
    if (core.modules.erase(reinterpret_cast<std::uintptr_t>(m->handle)))
      core::destroy_module_locked(m);
  for (auto& [name, k] : lib->kernels)
    if (core.kernels.erase(reinterpret_cast<std::uintptr_t>(k->handle))) delete k;
  delete lib;
  return CUDA_SUCCESS;
}

// The library's module in the current context, loaded on demand.
static CUresult current_library_module(Library& lib, Module*& m, const char* fn) {
  Context* ctx = nullptr;
  if (CUresult r = core::current_context(ctx)) return r;
  return core::library_module_locked(lib, *ctx, m, fn);
}

// Library and kernel queries are context-independent (CUDA 12): with no current context NVIDIA's
// driver answers them too (cuda.core asks for a kernel before making a context current). Here
// the device's primary context answers (created if needed, not retained, as the runtime's
// entry does). Called before g_registry is taken: the primary context's mutex comes first.
static CUresult query_context(CUdevice dev, CUcontext& h) {
  h = core::current_context_handle();
  return h ? CUDA_SUCCESS : core::primary_context_peek(&h, dev);
}

// The library's module in context `h` (from query_context), loaded on demand.
static CUresult query_library_module(Library& lib, CUcontext h, Module*& m, const char* fn) {
  Context* ctx = core::context_of(h);
  if (!ctx) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  if (CUresult r = core::sticky_error(*ctx)) return r;
  return core::library_module_locked(lib, *ctx, m, fn);
}

// Every kernel name of the library, enumerated once from a module of it (one loaded in the
// current context if none is). Only cuLibraryGetKernelCount / EnumerateKernels need the whole
// list: enumerating a library of thousands of kernels (cuBLAS's) costs a driver call each.
static CUresult library_names(Library& lib, CUcontext h, const char* fn) {
  if (lib.names_listed) return CUDA_SUCCESS;
  Module* m = nullptr;
  if (!lib.modules.empty()) {
    m = lib.modules.begin()->second;
  } else if (CUresult r = query_library_module(lib, h, m, fn)) {
    return r;
  }
  lib.kernel_names.clear();
  for (auto n : m->impl->function_names()) lib.kernel_names.emplace_back(n);
  lib.names_listed = true;
  return CUDA_SUCCESS;
}

// Whether the library has a kernel `name`: asked of one module for that name alone.
static CUresult library_has_kernel(Library& lib, CUcontext h, const char* name, bool& has,
                                   const char* fn) {
  if (lib.names_listed) {
    has =
        std::find(lib.kernel_names.begin(), lib.kernel_names.end(), name) != lib.kernel_names.end();
    return CUDA_SUCCESS;
  }
  Module* m = nullptr;
  if (!lib.modules.empty()) {
    m = lib.modules.begin()->second;
  } else if (CUresult r = query_library_module(lib, h, m, fn)) {
    return r;
  }
  has = m->impl->function(name) != nullptr;
  return CUDA_SUCCESS;
}

CUresult cuLibraryGetKernel(CUkernel* pKernel, CUlibrary library, const char* name) {
  if (!pKernel || !name)
    return reject(CUDA_ERROR_INVALID_VALUE, "cuLibraryGetKernel", "null argument");
  Library* lib = nullptr;
  if (CUresult r = core::library_of(library, lib, "cuLibraryGetKernel")) return r;
  CUcontext h = nullptr;
  if (CUresult r = query_context(0, h)) return r;
  std::lock_guard lock(core::g_registry);
  if (auto it = lib->kernels.find(name); it != lib->kernels.end()) {
    *pKernel = it->second->handle;
    return CUDA_SUCCESS;
  }
  bool has = false;
  if (CUresult r = library_has_kernel(*lib, h, name, has, "cuLibraryGetKernel")) return r;
  if (!has) return reject(CUDA_ERROR_NOT_FOUND, "cuLibraryGetKernel", "no kernel of that name");
  auto k = std::make_unique<Kernel>();
  k->library = lib;
  k->name = name;
  Core& core = Core::get();
  Kernel* raw = k.release();
  const auto handle = core.kernels.insert(raw);
  if (!handle) {
    delete raw;
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  raw->handle = reinterpret_cast<CUkernel>(handle);
  lib->kernels.emplace(raw->name, raw);
  *pKernel = raw->handle;
  return CUDA_SUCCESS;
}

CUresult cuLibraryGetKernelCount(unsigned int* count, CUlibrary library) {
  if (!count)
    return reject(CUDA_ERROR_INVALID_VALUE, "cuLibraryGetKernelCount", "null out-pointer");
  Library* lib = nullptr;
  if (CUresult r = core::library_of(library, lib, "cuLibraryGetKernelCount")) return r;
  CUcontext h = nullptr;
  if (CUresult r = query_context(0, h)) return r;
  std::lock_guard lock(core::g_registry);
  if (CUresult r = library_names(*lib, h, "cuLibraryGetKernelCount")) return r;
  *count = static_cast<unsigned>(lib->kernel_names.size());
  return CUDA_SUCCESS;
}

CUresult cuLibraryEnumerateKernels(CUkernel* kernels, unsigned int numKernels, CUlibrary library) {
  if (!kernels) return reject(CUDA_ERROR_INVALID_VALUE, "cuLibraryEnumerateKernels", "null array");
  Library* lib = nullptr;
  if (CUresult r = core::library_of(library, lib, "cuLibraryEnumerateKernels")) return r;
  CUcontext h = nullptr;
  if (CUresult r = query_context(0, h)) return r;
  std::vector<std::string> names;
  {
    std::lock_guard lock(core::g_registry);
    if (CUresult r = library_names(*lib, h, "cuLibraryEnumerateKernels")) return r;
    names = lib->kernel_names;
  }
  if (numKernels > names.size())
    return reject(CUDA_ERROR_INVALID_VALUE, "cuLibraryEnumerateKernels",
                  "more kernels asked than the library has");
  for (unsigned i = 0; i < numKernels; ++i)
    if (CUresult r = impl::cuLibraryGetKernel(&kernels[i], library, names[i].c_str())) return r;
  return CUDA_SUCCESS;
}

CUresult cuLibraryGetModule(CUmodule* pMod, CUlibrary library) {
  if (!pMod) return reject(CUDA_ERROR_INVALID_VALUE, "cuLibraryGetModule", "null out-pointer");
  Library* lib = nullptr;
  if (CUresult r = core::library_of(library, lib, "cuLibraryGetModule")) return r;
  std::lock_guard lock(core::g_registry);
  Module* m = nullptr;
  if (CUresult r = current_library_module(*lib, m, "cuLibraryGetModule")) return r;
  *pMod = m->handle;
  return CUDA_SUCCESS;
}

CUresult cuLibraryGetGlobal(CUdeviceptr* dptr, size_t* bytes, CUlibrary library, const char* name) {
  CUmodule mod = nullptr;
  if (!name) return reject(CUDA_ERROR_INVALID_VALUE, "cuLibraryGetGlobal", "null name");
  if (CUresult r = impl::cuLibraryGetModule(&mod, library)) return r;
  return impl::cuModuleGetGlobal_v2(dptr, bytes, mod, name);
}

CUresult cuKernelGetFunction(CUfunction* pFunc, CUkernel kernel) {
  if (!pFunc) return reject(CUDA_ERROR_INVALID_VALUE, "cuKernelGetFunction", "null out-pointer");
  Kernel* k = nullptr;
  if (CUresult r = core::kernel_of(kernel, k, "cuKernelGetFunction")) return r;
  Function* f = nullptr;
  if (CUresult r = core::kernel_function(*k, nullptr, f, "cuKernelGetFunction")) return r;
  *pFunc = f->handle;
  return CUDA_SUCCESS;
}

CUresult cuKernelGetLibrary(CUlibrary* pLib, CUkernel kernel) {
  if (!pLib) return reject(CUDA_ERROR_INVALID_VALUE, "cuKernelGetLibrary", "null out-pointer");
  Kernel* k = nullptr;
  if (CUresult r = core::kernel_of(kernel, k, "cuKernelGetLibrary")) return r;
  *pLib = k->library->handle;
  return CUDA_SUCCESS;
}

// The kernel's function in the current context, which must be on `dev` (or, with none current,
// in dev's primary context: see query_context).
static CUresult kernel_function_on(Kernel& k, CUdevice dev, Function*& f, const char* fn) {
  if (!Core::get().valid_device(dev))
    return reject(CUDA_ERROR_INVALID_DEVICE, fn, "no such device");
  CUcontext h = nullptr;
  if (CUresult r = query_context(dev, h)) return r;
  Context* ctx = core::context_of(h);
  if (!ctx) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  if (CUresult r = core::sticky_error(*ctx)) return r;
  if (ctx->device != dev)
    return reject(CUDA_ERROR_NOT_SUPPORTED, fn,
                  "querying another device than the current context's");
  return core::kernel_function(k, ctx, f, fn);
}

CUresult cuKernelGetAttribute(int* pi, CUfunction_attribute attrib, CUkernel kernel, CUdevice dev) {
  if (!pi) return reject(CUDA_ERROR_INVALID_VALUE, "cuKernelGetAttribute", "null out-pointer");
  Kernel* k = nullptr;
  if (CUresult r = core::kernel_of(kernel, k, "cuKernelGetAttribute")) return r;
  if (static_cast<unsigned>(attrib) >= CU_FUNC_ATTRIBUTE_MAX)
    return reject(CUDA_ERROR_INVALID_VALUE, "cuKernelGetAttribute", "unknown attribute");
  Function* f = nullptr;
  if (CUresult r = kernel_function_on(*k, dev, f, "cuKernelGetAttribute")) return r;
  return core::function_attribute(*f, attrib, *pi);
}

CUresult cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel, CUdevice dev) {
  Kernel* k = nullptr;
  if (CUresult r = core::kernel_of(kernel, k, "cuKernelSetAttribute")) return r;
  Function* f = nullptr;
  if (CUresult r = kernel_function_on(*k, dev, f, "cuKernelSetAttribute")) return r;
  if (CUresult r = set_function_attribute(*f, attrib, val, "cuKernelSetAttribute")) return r;
  // Remembered on the kernel so that its functions in contexts loaded later get it too.
  if (attrib == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) k->max_dynamic_shared = val;
  if (attrib == CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT) k->preferred_carveout = val;
  std::lock_guard lock(core::g_registry);
  for (auto [c, m] : k->library->modules) {
    if (auto it = m->functions.find(k->name); it != m->functions.end()) {
      const bool forwarded = attrib == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES ||
                             attrib == CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT;
      if (forwarded && it->second != f)
        (void)it->second->impl->set_attribute(attrib, val);  // issue 7
      it->second->max_dynamic_shared = k->max_dynamic_shared.load();
      it->second->preferred_carveout = k->preferred_carveout.load();
    }
  }
  return CUDA_SUCCESS;
}

CUresult cuKernelSetCacheConfig(CUkernel kernel, CUfunc_cache config, CUdevice dev) {
  Kernel* k = nullptr;
  if (CUresult r = core::kernel_of(kernel, k, "cuKernelSetCacheConfig")) return r;
  Function* f = nullptr;
  if (CUresult r = kernel_function_on(*k, dev, f, "cuKernelSetCacheConfig")) return r;
  return impl::cuFuncSetCacheConfig(f->handle, config);
}

CUresult cuKernelGetName(const char** name, CUkernel hfunc) {
  if (!name) return reject(CUDA_ERROR_INVALID_VALUE, "cuKernelGetName", "null out-pointer");
  Kernel* k = nullptr;
  if (CUresult r = core::kernel_of(hfunc, k, "cuKernelGetName")) return r;
  *name = k->name.c_str();
  return CUDA_SUCCESS;
}

CUresult cuKernelGetParamInfo(CUkernel kernel, size_t paramIndex, size_t* paramOffset,
                              size_t* paramSize) {
  Kernel* k = nullptr;
  if (CUresult r = core::kernel_of(kernel, k, "cuKernelGetParamInfo")) return r;
  Function* f = nullptr;
  if (CUresult r = core::kernel_function(*k, nullptr, f, "cuKernelGetParamInfo")) return r;
  return param_info(*f, paramIndex, paramOffset, paramSize, "cuKernelGetParamInfo");
}

}  // namespace cudamux::impl

// --- linker (cuLink*): inputs are kept by the state and linked by the context's backend ---

namespace cudamux::core {
namespace {

struct LinkState {
  CUcontext ctx = nullptr;  // looked up again when linking: the context may be gone
  JitOptions jit;           // CUDA: output option values must stay valid for the state's life
  std::vector<std::vector<unsigned char>> storage;
  std::vector<backend::ModuleImage> inputs;
  std::deque<std::string> names;  // the inputs' names (a deque: their addresses stay put)
  std::vector<unsigned char> output;
};

std::set<LinkState*> g_link_states;  // live states; guarded by g_registry

CUresult link_state_of(CUlinkState h, LinkState*& out, const char* fn) {
  auto* s = reinterpret_cast<LinkState*>(h);
  if (!s || g_link_states.count(s) == 0)
    return reject(CUDA_ERROR_INVALID_HANDLE, fn, "not a live CUlinkState");
  out = s;
  return CUDA_SUCCESS;
}

// The JIT options a linker gets: all but those the core answers (log buffers, wall time).
std::vector<std::pair<CUjit_option, void*>> linker_options(const JitOptions& o) {
  std::vector<std::pair<CUjit_option, void*>> out;
  for (unsigned i = 0; i < o.count; ++i) {
    switch (o.options[i]) {
      case CU_JIT_WALL_TIME:
      case CU_JIT_INFO_LOG_BUFFER:
      case CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES:
      case CU_JIT_ERROR_LOG_BUFFER:
      case CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES:
      case CU_JIT_LOG_VERBOSE:
        break;
      default:
        out.emplace_back(o.options[i], o.values[i]);
    }
  }
  return out;
}

// Writes `text` into the program's log buffer option `which` (info or error), as the driver's
// linker does, with the size option updated to the bytes written.
void fill_link_log(const JitOptions& o, CUjit_option which, const std::string& text) {
  const CUjit_option size_opt = which == CU_JIT_INFO_LOG_BUFFER
                                    ? CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES
                                    : CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES;
  char* buf = nullptr;
  std::size_t cap = 0;
  for (unsigned i = 0; i < o.count; ++i) {
    if (o.options[i] == which) buf = static_cast<char*>(o.values[i]);
    if (o.options[i] == size_opt)
      cap = static_cast<std::size_t>(reinterpret_cast<std::uintptr_t>(o.values[i]));
  }
  if (!buf || cap == 0) return;
  const std::size_t n = std::min(text.size(), cap - 1);
  std::memcpy(buf, text.data(), n);
  buf[n] = '\0';
  for (unsigned i = 0; i < o.count; ++i)
    if (o.options[i] == size_opt)
      o.values[i] = reinterpret_cast<void*>(static_cast<std::uintptr_t>(n + 1));
}

CUresult link_add(LinkState& s, CUjitInputType type, const void* input, std::size_t size,
                  const char* name, const char* fn) {
  Core& core = Core::get();
  backend::ModuleImage image;
  // The classifier reads fixed-size headers: a copy padded with zeros keeps it inside the
  // program's `size` bytes however short they are.
  const auto* in = static_cast<const unsigned char*>(input);
  std::vector<unsigned char> padded(in, in + size);
  padded.resize(size + 64, 0);
  const void* data = padded.data();
  switch (type) {
    case CU_JIT_INPUT_CUBIN:
    case CU_JIT_INPUT_PTX:
    case CU_JIT_INPUT_FATBINARY: {
      std::string why;
      if (classify_image(data, image, why) != CUDA_SUCCESS)
        return reject(type == CU_JIT_INPUT_PTX ? CUDA_ERROR_INVALID_PTX : CUDA_ERROR_INVALID_IMAGE,
                      fn, ("malformed input: " + why).c_str());
      const bool wanted_text = type == CU_JIT_INPUT_PTX;
      const bool is_text =
          image.kind == backend::ImageKind::ptx || image.kind == backend::ImageKind::native;
      if (type == CU_JIT_INPUT_FATBINARY && image.kind != backend::ImageKind::nvidia_fatbin)
        return reject(CUDA_ERROR_INVALID_IMAGE, fn,
                      "CU_JIT_INPUT_FATBINARY input is no fat binary");
      if (wanted_text && !is_text)
        return reject(CUDA_ERROR_INVALID_PTX, fn, "CU_JIT_INPUT_PTX input is not PTX text");
      break;
    }
    case CU_JIT_INPUT_OBJECT:
      image.kind = backend::ImageKind::host_object;
      break;
    case CU_JIT_INPUT_LIBRARY:
      image.kind = backend::ImageKind::host_library;
      break;
    case CU_JIT_INPUT_NVVM:
      return reject(CUDA_ERROR_NOT_SUPPORTED, fn,
                    "NVVM IR inputs (link-time optimisation) are not supported");
    default:
      return reject(CUDA_ERROR_INVALID_VALUE, fn, "unknown CUjitInputType");
  }
  // A backend that loads only its own images links only those: say so at once, as NVIDIA's
  // linker refuses an input it cannot read when it is added.
  const unsigned kinds = core.backend().image_kinds();
  const bool linkable = image.kind == backend::ImageKind::host_object ||
                                image.kind == backend::ImageKind::host_library
                            ? (kinds & backend::image_kind_bit(backend::ImageKind::cubin)) != 0
                            : (kinds & backend::image_kind_bit(image.kind)) != 0;
  if (!linkable) {
    const CUresult r =
        image.kind == backend::ImageKind::ptx ? CUDA_ERROR_INVALID_PTX : CUDA_ERROR_INVALID_IMAGE;
    const std::string why = "the '" + std::string(core.backend().name()) +
                            "' backend cannot link this input; it takes " +
                            std::string(core.backend().image_needs());
    return reject(r, fn, why.c_str());
  }
  // The program's bytes (a text input NUL-terminated), followed by the zero padding.
  if (image.size == 0 || image.size > size) image.size = size;
  s.storage.push_back(std::move(padded));
  image.data = s.storage.back().data();
  if (image.kind == backend::ImageKind::ptx || image.kind == backend::ImageKind::native) {
    const auto& kept = s.storage.back();
    image.size = size;
    while (image.size > 0 && kept[image.size - 1] == 0) --image.size;
    ++image.size;  // with its NUL (the padding holds one)
  }
  s.names.emplace_back(name != nullptr ? name : "");
  image.name = s.names.back().c_str();
  s.inputs.push_back(image);
  return CUDA_SUCCESS;
}

}  // namespace
}  // namespace cudamux::core

namespace cudamux::impl {
using core::Context;
using core::Core;
using core::reject;

CUresult cuLinkCreate_v2(unsigned int numOptions, CUjit_option* options, void** optionValues,
                         CUlinkState* stateOut) {
  if (!stateOut) return reject(CUDA_ERROR_INVALID_VALUE, "cuLinkCreate", "null out-pointer");
  const core::JitOptions jit{numOptions, options, optionValues};
  if (CUresult r = core::check_jit_options(jit, "cuLinkCreate")) return r;
  Context* ctx = nullptr;
  if (CUresult r = core::current_context(ctx)) return r;
  auto s = std::make_unique<core::LinkState>();
  s->ctx = ctx->handle;
  s->jit = jit;
  std::lock_guard lock(core::g_registry);
  core::g_link_states.insert(s.get());
  *stateOut = reinterpret_cast<CUlinkState>(s.release());
  return CUDA_SUCCESS;
}

CUresult cuLinkCreate(unsigned int numOptions, CUjit_option* options, void** optionValues,
                      CUlinkState* stateOut) {
  return impl::cuLinkCreate_v2(numOptions, options, optionValues, stateOut);
}

CUresult cuLinkAddData_v2(CUlinkState state, CUjitInputType type, void* data, size_t size,
                          const char* name, unsigned int numOptions, CUjit_option* options,
                          void** optionValues) {
  const char* fn = "cuLinkAddData";
  if (CUresult r = core::check_jit_options({numOptions, options, optionValues}, fn)) return r;
  if (!data || size == 0) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null or empty input");
  std::lock_guard lock(core::g_registry);
  core::LinkState* s = nullptr;
  if (CUresult r = core::link_state_of(state, s, fn)) return r;
  return core::link_add(*s, type, data, size, name, fn);
}

CUresult cuLinkAddData(CUlinkState state, CUjitInputType type, void* data, size_t size,
                       const char* name, unsigned int numOptions, CUjit_option* options,
                       void** optionValues) {
  return impl::cuLinkAddData_v2(state, type, data, size, name, numOptions, options, optionValues);
}

CUresult cuLinkAddFile_v2(CUlinkState state, CUjitInputType type, const char* path,
                          unsigned int numOptions, CUjit_option* options, void** optionValues) {
  const char* fn = "cuLinkAddFile";
  if (CUresult r = core::check_jit_options({numOptions, options, optionValues}, fn)) return r;
  {
    std::lock_guard lock(core::g_registry);
    core::LinkState* s = nullptr;
    if (CUresult r = core::link_state_of(state, s, fn)) return r;
  }
  std::vector<char> bytes;
  if (CUresult r = core::read_file(path, bytes, fn)) return r;
  const std::size_t size = bytes.size() - 1;  // read_file appends a NUL for text images
  std::lock_guard lock(core::g_registry);
  core::LinkState* s = nullptr;
  if (CUresult r = core::link_state_of(state, s, fn)) return r;
  return core::link_add(*s, type, bytes.data(), size, path, fn);
}

CUresult cuLinkAddFile(CUlinkState state, CUjitInputType type, const char* path,
                       unsigned int numOptions, CUjit_option* options, void** optionValues) {
  return impl::cuLinkAddFile_v2(state, type, path, numOptions, options, optionValues);
}

CUresult cuLinkComplete(CUlinkState state, void** cubinOut, size_t* sizeOut) {
  const char* fn = "cuLinkComplete";
  if (!cubinOut || !sizeOut) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  Core& core = Core::get();
  std::lock_guard lock(core::g_registry);
  core::LinkState* s = nullptr;
  if (CUresult r = core::link_state_of(state, s, fn)) return r;
  if (s->inputs.empty()) return reject(CUDA_ERROR_INVALID_VALUE, fn, "nothing was added to link");
  Context* ctx = core::context_of(s->ctx);
  if (!ctx) return reject(CUDA_ERROR_INVALID_CONTEXT, fn, "the state's context was destroyed");
  const auto start = std::chrono::steady_clock::now();
  std::string log;
  backend::Status st;
  s->output.clear();
  if (!ctx->impl->link(s->inputs, core::linker_options(s->jit), s->output, log, st))
    return reject(
        CUDA_ERROR_NOT_SUPPORTED, fn,
        ("the '" + std::string(core.backend().name()) + "' backend has no linker").c_str());
  const float ms =
      std::chrono::duration<float, std::milli>(std::chrono::steady_clock::now() - start).count();
  for (unsigned i = 0; i < s->jit.count; ++i)
    if (s->jit.options[i] == CU_JIT_WALL_TIME) std::memcpy(&s->jit.values[i], &ms, sizeof ms);
  if (!st.ok()) {
    core::fill_link_log(s->jit, CU_JIT_ERROR_LOG_BUFFER, log);
    const CUresult r = core.map(st, fn);
    core.log().warn("{}: the '{}' backend did not link ({}){}{}", fn, core.backend().name(),
                    core.backend().errors().native_name(st.native), log.empty() ? "" : ": ", log);
    return r;
  }
  core::fill_link_log(s->jit, CU_JIT_INFO_LOG_BUFFER, log);
  *cubinOut = s->output.data();
  *sizeOut = s->output.size();
  return CUDA_SUCCESS;
}

CUresult cuLinkDestroy(CUlinkState state) {
  std::unique_ptr<core::LinkState> owned;
  {
    std::lock_guard lock(core::g_registry);
    core::LinkState* s = nullptr;
    if (CUresult r = core::link_state_of(state, s, "cuLinkDestroy")) return r;
    core::g_link_states.erase(s);
    owned.reset(s);
  }
  return CUDA_SUCCESS;
}

}  // namespace cudamux::impl
