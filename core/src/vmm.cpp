// Virtual memory management (cuMemAddressReserve, cuMemCreate, cuMemMap, cuMemSetAccess, ...),
// issue 17: CUDA's argument rules and the bookkeeping of handles, reservations and mappings live
// here, once; the backend's VirtualMemory owns the address ranges and the physical memory.
// Mapped ranges with access enter the allocation registry as device memory of no context, so
// copies, memsets, kernels' arguments and pointer queries accept them as they accept cuMemAlloc's.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "core.hpp"
#include "cudamux/driver_impl.hpp"

namespace cudamux::core {
namespace {

struct Physical {
  std::uint64_t backend = 0;  // the backend's handle
  std::size_t size = 0;
  CUmemAllocationProp prop{};
  int retains = 1;   // cuMemCreate / import and each cuMemRetainAllocationHandle
  int mappings = 0;  // live cuMemMap ranges showing it
};

struct Mapping {
  std::size_t size = 0;
  CUmemGenericAllocationHandle handle = 0;
  std::vector<unsigned> access;  // CU_MEM_ACCESS_FLAGS_PROT_* per device ordinal
  bool registered = false;       // in Core::allocations
};

struct State {
  std::mutex mutex;
  std::map<CUmemGenericAllocationHandle, Physical> physicals;
  std::map<std::uintptr_t, std::size_t> reservations;  // base -> size
  std::map<std::uintptr_t, Mapping> mappings;          // va -> mapping
  CUmemGenericAllocationHandle next = 1;
};

State& state() {
  static State& s = *new State;  // outlives static destructors: exit handlers may still call in
  return s;
}

constexpr unsigned kKnownHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR |
                                       CU_MEM_HANDLE_TYPE_WIN32 | CU_MEM_HANDLE_TYPE_WIN32_KMT |
                                       CU_MEM_HANDLE_TYPE_FABRIC;

CUresult vmm_backend(backend::VirtualMemory*& out, const char* fn) {
  Core& core = Core::get();
  out = core.backend().virtual_memory();
  if (out) return CUDA_SUCCESS;
  core.log().warn(
      "{}: the '{}' backend has no virtual memory management: returning "
      "CUDA_ERROR_NOT_SUPPORTED",
      fn, core.backend().name());
  return CUDA_ERROR_NOT_SUPPORTED;
}

// CUDA's rules for an allocation's properties; the device's (CUDA) ordinal on success.
CUresult check_prop(const CUmemAllocationProp* prop, int& device, const char* fn) {
  if (!prop) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null allocation properties");
  if (prop->type != CU_MEM_ALLOCATION_TYPE_PINNED)
    return reject(CUDA_ERROR_INVALID_VALUE, fn,
                  "allocation type is not CU_MEM_ALLOCATION_TYPE_PINNED");
  if (prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
    Core::get().log().warn(
        "{}: memory located elsewhere than on a device is not supported by "
        "cudamux yet: returning CUDA_ERROR_NOT_SUPPORTED",
        fn);
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  if (!Core::get().valid_device(prop->location.id))
    return reject(CUDA_ERROR_INVALID_DEVICE, fn, "no such device");
  const unsigned types = prop->requestedHandleTypes;
  if (types & ~kKnownHandleTypes)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "unknown handle type");
  if (types & (CU_MEM_HANDLE_TYPE_WIN32 | CU_MEM_HANDLE_TYPE_WIN32_KMT))
    return reject(CUDA_ERROR_NOT_SUPPORTED, fn, "Windows handle types on Linux");
  device = prop->location.id;
  return CUDA_SUCCESS;
}

CUresult granularity_of(backend::VirtualMemory& vm, int device, unsigned types, bool recommended,
                        std::size_t& out, const char* fn) {
  Core& core = Core::get();
  if (CUresult r =
          core.map(vm.granularity(core.backend_ordinal(device), types, recommended, out), fn))
    return r;
  if (out == 0 || (out & (out - 1)) != 0)
    return reject(CUDA_ERROR_UNKNOWN, fn, "the backend's granularity is not a power of two");
  return CUDA_SUCCESS;
}

bool aligned(std::uint64_t v, std::size_t to) noexcept { return to != 0 && v % to == 0; }

// The reservation containing [va, va+size), if any. State mutex held.
bool inside_reservation(const State& s, std::uintptr_t va, std::size_t size) {
  auto it = s.reservations.upper_bound(va);
  if (it == s.reservations.begin()) return false;
  --it;
  return va >= it->first && size <= it->second && va - it->first <= it->second - size;
}

// The mappings overlapping [va, va+size), in address order. State mutex held.
std::vector<std::map<std::uintptr_t, Mapping>::iterator> overlapping(State& s, std::uintptr_t va,
                                                                     std::size_t size) {
  std::vector<std::map<std::uintptr_t, Mapping>::iterator> out;
  auto it = s.mappings.upper_bound(va);
  if (it != s.mappings.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second.size > va) out.push_back(prev);
  }
  for (; it != s.mappings.end() && it->first < va + size; ++it) out.push_back(it);
  return out;
}

// Whether the mappings cover [va, va+size) without a gap.
bool covered(const std::vector<std::map<std::uintptr_t, Mapping>::iterator>& maps,
             std::uintptr_t va, std::size_t size) {
  std::uintptr_t next = va;
  for (const auto& it : maps) {
    if (it->first > next) return false;
    next = std::max<std::uintptr_t>(next, it->first + it->second.size);
  }
  return !maps.empty() && next >= va + size;
}

// Drops the physical memory once nothing holds it. State mutex held.
void maybe_free(State& s, CUmemGenericAllocationHandle h) {
  auto it = s.physicals.find(h);
  if (it == s.physicals.end() || it->second.retains > 0 || it->second.mappings > 0) return;
  if (backend::VirtualMemory* vm = Core::get().backend().virtual_memory())
    (void)vm->release(it->second.backend);
  s.physicals.erase(it);
}

// The allocation behind a handle the program still holds; null when released or unknown.
// State mutex held.
Physical* live_physical(State& s, CUmemGenericAllocationHandle h) {
  const auto it = s.physicals.find(h);
  return it == s.physicals.end() || it->second.retains == 0 ? nullptr : &it->second;
}

// Shareable handles other than POSIX file descriptors: not yet, said once per call.
CUresult refuse_handle_type(CUmemAllocationHandleType type, const char* fn) {
  Core::get().log().warn(
      "{}: handle type {} is not supported by cudamux yet (POSIX file "
      "descriptors are): returning CUDA_ERROR_NOT_SUPPORTED",
      fn, static_cast<int>(type));
  return CUDA_ERROR_NOT_SUPPORTED;
}

void register_mapping(std::uintptr_t va, Mapping& m, int device) {
  if (m.registered) return;
  Allocation a;
  a.base = va;
  a.size = m.size;
  a.kind = AllocKind::device;
  a.device = device;
  a.virtual_mapping = true;
  Core& core = Core::get();
  a.buffer_id = core.next_buffer_id.fetch_add(1);
  std::unique_lock lock(core.alloc_mutex);
  core.allocations[va] = a;
  m.registered = true;
}

void unregister_mapping(std::uintptr_t va, Mapping& m) {
  if (!m.registered) return;
  Core& core = Core::get();
  std::unique_lock lock(core.alloc_mutex);
  core.allocations.erase(va);
  m.registered = false;
}

}  // namespace
}  // namespace cudamux::core

namespace cudamux::impl {
using core::reject;

CUresult cuMemGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp* prop,
                                       CUmemAllocationGranularity_flags option) {
  const char* fn = "cuMemGetAllocationGranularity";
  if (!granularity) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  if (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM && option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "unknown granularity option");
  if (!prop) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null allocation properties");
  // NVIDIA's driver 580 answers without checking the type or the device (one granularity
  // per system there): so does cudamux, with the first device's for an unknown one.
  int device = prop->location.id;
  if (!core::Core::get().valid_device(device)) device = 0;
  if (core::Core::get().device_count() == 0) return reject(CUDA_ERROR_NO_DEVICE, fn, "no device");
  backend::VirtualMemory* vm = nullptr;
  if (CUresult r = core::vmm_backend(vm, fn)) return r;
  return core::granularity_of(*vm, device, prop->requestedHandleTypes,
                              option == CU_MEM_ALLOC_GRANULARITY_RECOMMENDED, *granularity, fn);
}

CUresult cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr addr,
                             unsigned long long flags) {
  const char* fn = "cuMemAddressReserve";
  if (!ptr) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  if (size == 0 || !core::aligned(size, page))
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "size is not a positive multiple of the page size");
  if (alignment & (alignment - 1))
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "alignment is not a power of two");
  if (addr != 0 && !core::aligned(addr, page))
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "address is not a multiple of the page size");
  if (flags != 0) return reject(CUDA_ERROR_INVALID_VALUE, fn, "flags must be 0");
  backend::VirtualMemory* vm = nullptr;
  if (CUresult r = core::vmm_backend(vm, fn)) return r;
  // Reservations are there to be mapped: aligned to the mapping granularity by default.
  std::size_t granule = page;
  if (core::Core::get().device_count() > 0)
    (void)vm->granularity(core::Core::get().backend_ordinal(0), 0, false, granule);
  std::uintptr_t base = 0;
  if (CUresult r = core::Core::get().map(
          vm->reserve(size, std::max<std::size_t>(alignment, granule), addr, base), fn))
    return r;
  core::State& s = core::state();
  std::lock_guard lock(s.mutex);
  s.reservations[base] = size;
  *ptr = base;
  return CUDA_SUCCESS;
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  const char* fn = "cuMemAddressFree";
  backend::VirtualMemory* vm = nullptr;
  if (CUresult r = core::vmm_backend(vm, fn)) return r;
  core::State& s = core::state();
  std::lock_guard lock(s.mutex);
  const auto it = s.reservations.find(ptr);
  if (it == s.reservations.end() || it->second != size)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "not a reservation of this size");
  if (!core::overlapping(s, ptr, size).empty())
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "the range is still mapped (cuMemUnmap first)");
  if (CUresult r = core::Core::get().map(vm->free_range(ptr, size), fn)) return r;
  s.reservations.erase(it);
  return CUDA_SUCCESS;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                     const CUmemAllocationProp* prop, unsigned long long flags) {
  const char* fn = "cuMemCreate";
  if (!handle) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  if (flags != 0) return reject(CUDA_ERROR_INVALID_VALUE, fn, "flags must be 0");
  int device = 0;
  if (CUresult r = core::check_prop(prop, device, fn)) return r;
  backend::VirtualMemory* vm = nullptr;
  if (CUresult r = core::vmm_backend(vm, fn)) return r;
  std::size_t granule = 0;
  if (CUresult r =
          core::granularity_of(*vm, device, prop->requestedHandleTypes, false, granule, fn))
    return r;
  if (size == 0 || !core::aligned(size, granule))
    return reject(CUDA_ERROR_INVALID_VALUE, fn,
                  "size is not a positive multiple of the granularity");
  core::Physical p;
  p.size = size;
  p.prop = *prop;
  core::Core& c = core::Core::get();
  unsigned char compression = prop->allocFlags.compressionType;
  if (CUresult r = c.map(vm->create(c.backend_ordinal(device), size, prop->requestedHandleTypes,
                                    compression, p.backend),
                         fn))
    return r;
  p.prop.allocFlags.compressionType = compression;  // what the device gave (CUDA's query)
  core::State& s = core::state();
  std::lock_guard lock(s.mutex);
  const CUmemGenericAllocationHandle h = (s.next++ << 8) | 0xc8;  // never 0
  s.physicals.emplace(h, p);
  *handle = h;
  return CUDA_SUCCESS;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  const char* fn = "cuMemRelease";
  core::State& s = core::state();
  std::lock_guard lock(s.mutex);
  core::Physical* p = core::live_physical(s, handle);
  if (!p) return reject(CUDA_ERROR_INVALID_VALUE, fn, "not a live allocation handle");
  --p->retains;  // the memory itself goes with its last mapping
  core::maybe_free(s, handle);
  return CUDA_SUCCESS;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags) {
  const char* fn = "cuMemMap";
  if (flags != 0) return reject(CUDA_ERROR_INVALID_VALUE, fn, "flags must be 0");
  backend::VirtualMemory* vm = nullptr;
  if (CUresult r = core::vmm_backend(vm, fn)) return r;
  core::State& s = core::state();
  std::lock_guard lock(s.mutex);
  core::Physical* p = core::live_physical(s, handle);
  if (!p) return reject(CUDA_ERROR_INVALID_VALUE, fn, "not a live allocation handle");
  std::size_t granule = 0;
  if (CUresult r = core::granularity_of(*vm, p->prop.location.id, p->prop.requestedHandleTypes,
                                        false, granule, fn))
    return r;
  if (size == 0 || !core::aligned(ptr, granule) || !core::aligned(size, granule) ||
      offset % granule != 0)
    return reject(CUDA_ERROR_INVALID_VALUE, fn,
                  "address, size or offset is not a multiple of the granularity");
  // An imported allocation's size may be unknown (0): the backend checks it then.
  // NVIDIA's driver 580 answers CUDA_ERROR_NOT_SUPPORTED for a range larger than the memory.
  if (p->size != 0 && (offset > p->size || size > p->size - offset))
    return reject(CUDA_ERROR_NOT_SUPPORTED, fn, "offset + size exceeds the allocation");
  if (!core::inside_reservation(s, ptr, size))
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "the range is not inside one reservation");
  if (!core::overlapping(s, ptr, size).empty())
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "the range is already mapped");
  if (CUresult r = core::Core::get().map(vm->map(ptr, size, offset, p->backend), fn)) return r;
  core::Mapping m;
  m.size = size;
  m.handle = handle;
  m.access.assign(static_cast<std::size_t>(core::Core::get().device_count()),
                  CU_MEM_ACCESS_FLAGS_PROT_NONE);
  s.mappings.emplace(ptr, std::move(m));
  ++p->mappings;
  return CUDA_SUCCESS;
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  const char* fn = "cuMemUnmap";
  backend::VirtualMemory* vm = nullptr;
  if (CUresult r = core::vmm_backend(vm, fn)) return r;
  // Work already queued may still use the range: CUDA's unmap waits for it, as cuMemFree does.
  core::quiesce_all_contexts();
  core::State& s = core::state();
  std::lock_guard lock(s.mutex);
  // Every mapping inside the range goes; unmapped gaps are fine (NVIDIA's driver 580 unmaps
  // what a larger range holds), a mapping cut by the range's ends is not.
  const auto maps = core::overlapping(s, ptr, size);
  if (maps.empty()) return reject(CUDA_ERROR_INVALID_VALUE, fn, "nothing is mapped there");
  if (maps.front()->first < ptr || maps.back()->first + maps.back()->second.size > ptr + size)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "the range cuts a mapping");
  for (const auto& it : maps) {
    if (CUresult r = core::Core::get().map(vm->unmap(it->first, it->second.size), fn)) return r;
    core::unregister_mapping(it->first, it->second);
    const CUmemGenericAllocationHandle h = it->second.handle;
    if (auto p = s.physicals.find(h); p != s.physicals.end()) --p->second.mappings;
    s.mappings.erase(it);
    core::maybe_free(s, h);
  }
  return CUDA_SUCCESS;
}

CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count) {
  const char* fn = "cuMemSetAccess";
  if (!desc || count == 0) return reject(CUDA_ERROR_INVALID_VALUE, fn, "no access descriptors");
  core::Core& c = core::Core::get();
  for (size_t i = 0; i < count; ++i) {
    if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE)
      return reject(CUDA_ERROR_INVALID_VALUE, fn, "access for a location that is not a device");
    if (!c.valid_device(desc[i].location.id))
      return reject(CUDA_ERROR_INVALID_DEVICE, fn, "no such device");
    const unsigned f = desc[i].flags;
    if (f != CU_MEM_ACCESS_FLAGS_PROT_NONE && f != CU_MEM_ACCESS_FLAGS_PROT_READ &&
        f != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
      return reject(CUDA_ERROR_INVALID_VALUE, fn, "unknown access flags");
  }
  backend::VirtualMemory* vm = nullptr;
  if (CUresult r = core::vmm_backend(vm, fn)) return r;
  core::State& s = core::state();
  std::lock_guard lock(s.mutex);
  const auto maps = core::overlapping(s, ptr, size);
  if (!core::covered(maps, ptr, size))
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "the range is not entirely mapped");
  for (const auto& it : maps) {
    const std::uintptr_t lo = std::max<std::uintptr_t>(it->first, ptr);
    const std::uintptr_t hi = std::min<std::uintptr_t>(it->first + it->second.size, ptr + size);
    for (size_t i = 0; i < count; ++i) {
      const int dev = desc[i].location.id;
      if (CUresult r =
              c.map(vm->set_access(lo, hi - lo, c.backend_ordinal(dev), desc[i].flags), fn))
        return r;
      it->second.access[static_cast<std::size_t>(dev)] = desc[i].flags;
    }
    // Device memory for the registry once some device may touch it.
    const auto& access = it->second.access;
    const bool reachable = std::any_of(access.begin(), access.end(), [](unsigned f) {
      return f != CU_MEM_ACCESS_FLAGS_PROT_NONE;
    });
    const auto p = s.physicals.find(it->second.handle);
    if (reachable && p != s.physicals.end())
      core::register_mapping(it->first, it->second, p->second.prop.location.id);
    else if (!reachable)
      core::unregister_mapping(it->first, it->second);
  }
  return CUDA_SUCCESS;
}

CUresult cuMemGetAccess(unsigned long long* flags, const CUmemLocation* location, CUdeviceptr ptr) {
  const char* fn = "cuMemGetAccess";
  if (!flags || !location) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null argument");
  if (location->type != CU_MEM_LOCATION_TYPE_DEVICE ||
      !core::Core::get().valid_device(location->id))
    return reject(CUDA_ERROR_INVALID_DEVICE, fn, "not a device location");
  core::State& s = core::state();
  std::lock_guard lock(s.mutex);
  const auto maps = core::overlapping(s, ptr, 1);
  if (maps.empty()) return reject(CUDA_ERROR_INVALID_VALUE, fn, "not a mapped address");
  *flags = maps.front()->second.access[static_cast<std::size_t>(location->id)];
  return CUDA_SUCCESS;
}

CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle* handle, void* addr) {
  const char* fn = "cuMemRetainAllocationHandle";
  if (!handle) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  core::State& s = core::state();
  std::lock_guard lock(s.mutex);
  const auto maps = core::overlapping(s, reinterpret_cast<std::uintptr_t>(addr), 1);
  if (maps.empty()) return reject(CUDA_ERROR_INVALID_VALUE, fn, "not a mapped address");
  const CUmemGenericAllocationHandle h = maps.front()->second.handle;
  ++s.physicals.at(h).retains;
  *handle = h;
  return CUDA_SUCCESS;
}

CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp* prop,
                                                CUmemGenericAllocationHandle handle) {
  const char* fn = "cuMemGetAllocationPropertiesFromHandle";
  if (!prop) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  core::State& s = core::state();
  std::lock_guard lock(s.mutex);
  core::Physical* p = core::live_physical(s, handle);
  if (!p) return reject(CUDA_ERROR_INVALID_VALUE, fn, "not a live allocation handle");
  *prop = p->prop;
  return CUDA_SUCCESS;
}

CUresult cuMemExportToShareableHandle(void* shareableHandle, CUmemGenericAllocationHandle handle,
                                      CUmemAllocationHandleType handleType,
                                      unsigned long long flags) {
  const char* fn = "cuMemExportToShareableHandle";
  if (!shareableHandle) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  if (flags != 0) return reject(CUDA_ERROR_INVALID_VALUE, fn, "flags must be 0");
  if (handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
    return core::refuse_handle_type(handleType, fn);
  backend::VirtualMemory* vm = nullptr;
  if (CUresult r = core::vmm_backend(vm, fn)) return r;
  core::State& s = core::state();
  std::lock_guard lock(s.mutex);
  core::Physical* p = core::live_physical(s, handle);
  if (!p) return reject(CUDA_ERROR_INVALID_VALUE, fn, "not a live allocation handle");
  if (!(p->prop.requestedHandleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
    return reject(CUDA_ERROR_INVALID_VALUE, fn,
                  "the allocation was not created exportable as a file descriptor");
  int fd = -1;
  if (CUresult r = core::Core::get().map(vm->export_fd(p->backend, fd), fn)) return r;
  *static_cast<int*>(shareableHandle) = fd;
  return CUDA_SUCCESS;
}

CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle* handle, void* osHandle,
                                        CUmemAllocationHandleType shHandleType) {
  const char* fn = "cuMemImportFromShareableHandle";
  if (!handle) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  if (shHandleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
    return core::refuse_handle_type(shHandleType, fn);
  // The descriptor travels in the pointer's value, as CUDA documents for POSIX handles.
  const auto fd = static_cast<int>(reinterpret_cast<std::intptr_t>(osHandle));
  if (fd < 0) return reject(CUDA_ERROR_INVALID_VALUE, fn, "negative file descriptor");
  backend::VirtualMemory* vm = nullptr;
  if (CUresult r = core::vmm_backend(vm, fn)) return r;
  core::Physical p;
  if (CUresult r = core::Core::get().map(vm->import_fd(fd, p.backend, p.size), fn)) return r;
  // A descriptor does not say which device it came from: the calling thread's.
  CUdevice device = 0;
  if (core::current_context_handle()) (void)impl::cuCtxGetDevice(&device);
  p.prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  p.prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  p.prop.location.id = device;
  p.prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  core::State& s = core::state();
  std::lock_guard lock(s.mutex);
  const CUmemGenericAllocationHandle h = (s.next++ << 8) | 0xc8;
  s.physicals.emplace(h, p);
  *handle = h;
  return CUDA_SUCCESS;
}

}  // namespace cudamux::impl
