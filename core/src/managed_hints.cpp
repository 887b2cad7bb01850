// Managed memory hints (issue 17 item 6): cuMemAdvise, cuMemPrefetchAsync and the range
// attributes that report them. The core validates them as CUDA does and records them per page
// range of each managed allocation, so cuMemRangeGetAttribute(s) answer truthfully; the backend
// is told too (the cuda backend passes advice and prefetches to NVIDIA's driver, where they
// move pages; the mock's managed memory is host memory already, so they change no placement).
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>

#include "core.hpp"
#include "cudamux/driver_impl.hpp"

namespace cudamux::core {
namespace {

constexpr int kInvalidDevice = CU_DEVICE_INVALID;  // -2

// What the hints say of one run of pages.
struct PageState {
  bool read_mostly = false;
  CUmemLocationType preferred_type = CU_MEM_LOCATION_TYPE_INVALID;
  int preferred_id = kInvalidDevice;
  std::uint64_t accessed_by = 0;  // bit d: device d; bit 63: the host
  CUmemLocationType prefetched_type = CU_MEM_LOCATION_TYPE_INVALID;
  int prefetched_id = kInvalidDevice;
  bool operator==(const PageState&) const = default;
};

constexpr std::uint64_t kHostBit = std::uint64_t{1} << 63;

// Offset-keyed runs [offset, end) of one allocation; gaps hold the default state.
struct Runs {
  std::map<std::size_t, std::pair<std::size_t, PageState>> by_offset;  // offset -> (end, state)
};

struct Hints {
  std::mutex mutex;
  std::unordered_map<unsigned long long, Runs> by_buffer;  // Allocation::buffer_id
};

Hints& hints() {
  static Hints& h = *new Hints;  // outlives static destructors
  return h;
}

// Splits the run containing `at` so that a run starts there.
void split_at(Runs& r, std::size_t at) {
  auto it = r.by_offset.upper_bound(at);
  if (it == r.by_offset.begin()) return;
  --it;
  const std::size_t start = it->first;
  const std::size_t end = it->second.first;
  if (start < at && at < end) {
    const PageState s = it->second.second;
    it->second.first = at;
    r.by_offset.emplace(at, std::make_pair(end, s));
  }
}

// Applies `change` to every page of [lo, hi), creating runs for gaps.
template <class F>
void apply(Runs& r, std::size_t lo, std::size_t hi, F&& change) {
  split_at(r, lo);
  split_at(r, hi);
  std::size_t cursor = lo;
  auto it = r.by_offset.lower_bound(lo);
  while (cursor < hi) {
    if (it == r.by_offset.end() || it->first > cursor) {  // a gap: default state
      const std::size_t gap_end = it == r.by_offset.end() ? hi : std::min(hi, it->first);
      PageState s;
      change(s);
      it = r.by_offset.emplace(cursor, std::make_pair(gap_end, s)).first;
      cursor = gap_end;
      ++it;
      continue;
    }
    change(it->second.second);
    cursor = it->second.first;
    ++it;
  }
}

// The states of every page of [lo, hi), in order (gaps as the default).
std::vector<PageState> states(const Runs* r, std::size_t lo, std::size_t hi) {
  std::vector<PageState> out;
  std::size_t cursor = lo;
  if (r) {
    auto it = r->by_offset.upper_bound(lo);
    if (it != r->by_offset.begin()) --it;
    for (; it != r->by_offset.end() && it->first < hi; ++it) {
      if (it->second.first <= cursor) continue;
      if (it->first > cursor) out.emplace_back();  // gap
      out.push_back(it->second.second);
      cursor = it->second.first;
    }
  }
  if (cursor < hi) out.emplace_back();
  return out;
}

std::size_t page_size() {
  static const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

// The managed allocation holding [ptr, ptr+count); its pages [lo, hi) as offsets.
CUresult managed_range(CUdeviceptr ptr, std::size_t count, Allocation& out, std::size_t& lo,
                       std::size_t& hi, const char* fn) {
  if (ptr == 0 || count == 0) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null or empty range");
  Core& core = Core::get();
  std::shared_lock lock(core.alloc_mutex);
  const Allocation* a = core.find_allocation(ptr, count);
  if (!a || a->kind != AllocKind::managed)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "not a range of managed memory");
  out = *a;
  const std::size_t page = page_size();
  lo = (ptr - a->base) / page * page;
  hi = std::min<std::size_t>(a->size, (ptr - a->base + count + page - 1) / page * page);
  return CUDA_SUCCESS;
}

// A location given to advice or a prefetch: a device of ours, or the host. `bad_device` is the
// answer for a device we do not have: NVIDIA's driver 580 says CUDA_ERROR_INVALID_DEVICE for
// prefetches but CUDA_ERROR_INVALID_VALUE for cuMemAdvise_v2's locations (measured on an H100).
CUresult check_location(const CUmemLocation& l, bool allow_host, const char* fn,
                        CUresult bad_device = CUDA_ERROR_INVALID_DEVICE) {
  if (l.type == CU_MEM_LOCATION_TYPE_DEVICE) {
    if (!Core::get().valid_device(l.id)) return reject(bad_device, fn, "no such device");
    return CUDA_SUCCESS;
  }
  if (allow_host &&
      (l.type == CU_MEM_LOCATION_TYPE_HOST || l.type == CU_MEM_LOCATION_TYPE_HOST_NUMA ||
       l.type == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT))
    return CUDA_SUCCESS;
  return reject(CUDA_ERROR_INVALID_VALUE, fn, "unsupported memory location");
}

// The location in the backend's numbering. Advice that names no location is not checked, so
// its device may be anything: one we do not have reaches the backend as CU_DEVICE_INVALID.
CUmemLocation backend_location(CUmemLocation l) {
  if (l.type == CU_MEM_LOCATION_TYPE_DEVICE)
    l.id = Core::get().valid_device(l.id) ? Core::get().backend_ordinal(l.id) : kInvalidDevice;
  return l;
}

// CU_DEVICE_CPU / device ordinal of the first API's int form.
CUmemLocation location_of_device(CUdevice d) {
  CUmemLocation l{};
  if (d == CU_DEVICE_CPU) {
    l.type = CU_MEM_LOCATION_TYPE_HOST;
    l.id = 0;
  } else {
    l.type = CU_MEM_LOCATION_TYPE_DEVICE;
    l.id = d;
  }
  return l;
}

// The int form of a location: device ordinal, CU_DEVICE_CPU for the host, else invalid.
int device_of(CUmemLocationType type, int id) {
  if (type == CU_MEM_LOCATION_TYPE_DEVICE) return id;
  if (type == CU_MEM_LOCATION_TYPE_HOST || type == CU_MEM_LOCATION_TYPE_HOST_NUMA)
    return CU_DEVICE_CPU;
  return kInvalidDevice;
}

// Whether `advice` names a location (the others ignore the device they are given).
bool names_location(CUmem_advise advice) {
  return advice == CU_MEM_ADVISE_SET_PREFERRED_LOCATION ||
         advice == CU_MEM_ADVISE_SET_ACCESSED_BY || advice == CU_MEM_ADVISE_UNSET_ACCESSED_BY;
}

CUresult advise(CUdeviceptr ptr, std::size_t count, CUmem_advise advice, CUmemLocation location,
                const char* fn) {
  if (advice < CU_MEM_ADVISE_SET_READ_MOSTLY || advice > CU_MEM_ADVISE_UNSET_ACCESSED_BY)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "unknown advice");
  if (names_location(advice)) {  // cuMemAdvise (a CUdevice) checked its device already
    if (CUresult r = check_location(location, true, fn, CUDA_ERROR_INVALID_VALUE)) return r;
  }
  Allocation a;
  std::size_t lo = 0, hi = 0;
  if (CUresult r = managed_range(ptr, count, a, lo, hi, fn)) return r;
  Core& core = Core::get();
  if (CUresult r =
          core.map(core.backend().advise(ptr, count, advice, backend_location(location)), fn))
    return r;
  // Devices 0..62 and the host have a bit each; ordinals beyond are not recorded.
  const std::uint64_t bit = location.type != CU_MEM_LOCATION_TYPE_DEVICE ? kHostBit
                            : location.id >= 0 && location.id < 63 ? std::uint64_t{1} << location.id
                                                                   : 0;
  Hints& h = hints();
  std::lock_guard lock(h.mutex);
  apply(h.by_buffer[a.buffer_id], lo, hi, [&](PageState& s) {
    switch (advice) {
      case CU_MEM_ADVISE_SET_READ_MOSTLY:
        s.read_mostly = true;
        break;
      case CU_MEM_ADVISE_UNSET_READ_MOSTLY:
        s.read_mostly = false;
        break;
      case CU_MEM_ADVISE_SET_PREFERRED_LOCATION:
        s.preferred_type = location.type == CU_MEM_LOCATION_TYPE_DEVICE
                               ? CU_MEM_LOCATION_TYPE_DEVICE
                               : CU_MEM_LOCATION_TYPE_HOST;
        s.preferred_id = location.type == CU_MEM_LOCATION_TYPE_DEVICE ? location.id : 0;
        break;
      case CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION:
        s.preferred_type = CU_MEM_LOCATION_TYPE_INVALID;
        s.preferred_id = kInvalidDevice;
        break;
      case CU_MEM_ADVISE_SET_ACCESSED_BY:
        s.accessed_by |= bit;
        break;
      case CU_MEM_ADVISE_UNSET_ACCESSED_BY:
        s.accessed_by &= ~bit;
        break;
      default:
        break;
    }
  });
  return CUDA_SUCCESS;
}

CUresult prefetch(CUdeviceptr ptr, std::size_t count, CUmemLocation location, unsigned flags,
                  CUstream stream, bool per_thread, const char* fn) {
  if (flags != 0) return reject(CUDA_ERROR_INVALID_VALUE, fn, "flags must be 0");
  if (CUresult r = check_location(location, true, fn)) return r;
  Allocation a;
  std::size_t lo = 0, hi = 0;
  if (CUresult r = managed_range(ptr, count, a, lo, hi, fn)) return r;
  Stream* s = nullptr;
  if (CUresult r = resolve_stream(stream, per_thread, s)) return r;
  Core& core = Core::get();
  const CUmemLocation target = backend_location(location);
  if (CUresult r = core.map(submit(*s,
                                   [&](backend::Queue& q) {
                                     return q.prefetch(reinterpret_cast<void*>(ptr), count, target);
                                   }),
                            fn))
    return r;
  Hints& h = hints();
  std::lock_guard lock(h.mutex);
  apply(h.by_buffer[a.buffer_id], lo, hi, [&](PageState& st) {
    st.prefetched_type = location.type == CU_MEM_LOCATION_TYPE_DEVICE ? CU_MEM_LOCATION_TYPE_DEVICE
                                                                      : CU_MEM_LOCATION_TYPE_HOST;
    st.prefetched_id = location.type == CU_MEM_LOCATION_TYPE_DEVICE ? location.id : 0;
  });
  return CUDA_SUCCESS;
}

// One range attribute into `data` (`size` bytes), as cuMemRangeGetAttribute documents it.
CUresult range_attribute(void* data, std::size_t size, CUmem_range_attribute attribute,
                         CUdeviceptr ptr, std::size_t count, const char* fn) {
  if (!data) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null data");
  Allocation a;
  std::size_t lo = 0, hi = 0;
  if (CUresult r = managed_range(ptr, count, a, lo, hi, fn)) return r;
  std::vector<PageState> runs;
  {
    Hints& h = hints();
    std::lock_guard lock(h.mutex);
    const auto it = h.by_buffer.find(a.buffer_id);
    runs = states(it == h.by_buffer.end() ? nullptr : &it->second, lo, hi);
  }
  // A location the whole range shares, else (invalid, CU_DEVICE_INVALID).
  auto shared_location = [&](CUmemLocationType PageState::*type, int PageState::*id) {
    const PageState& first = runs.front();
    const bool same = std::all_of(runs.begin(), runs.end(), [&](const PageState& st) {
      return st.*type == first.*type && st.*id == first.*id;
    });
    return same && first.*type != CU_MEM_LOCATION_TYPE_INVALID
               ? std::pair(first.*type, first.*id)
               : std::pair(CU_MEM_LOCATION_TYPE_INVALID, kInvalidDevice);
  };
  const auto preferred = shared_location(&PageState::preferred_type, &PageState::preferred_id);
  const auto prefetched = shared_location(&PageState::prefetched_type, &PageState::prefetched_id);
  auto put_int = [&](int v) -> CUresult {
    if (size != sizeof(int)) return reject(CUDA_ERROR_INVALID_VALUE, fn, "dataSize must be 4");
    std::memcpy(data, &v, sizeof v);
    return CUDA_SUCCESS;
  };
  switch (attribute) {
    case CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY:
      return put_int(
          std::all_of(runs.begin(), runs.end(), [](const PageState& st) { return st.read_mostly; })
              ? 1
              : 0);
    case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION:
      return put_int(device_of(preferred.first, preferred.second));
    case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE:
      return put_int(static_cast<int>(preferred.first));
    case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID:
      return put_int(preferred.second);
    case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION:
      return put_int(device_of(prefetched.first, prefetched.second));
    case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE:
      return put_int(static_cast<int>(prefetched.first));
    case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID:
      return put_int(prefetched.second);
    case CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY: {
      if (size == 0 || size % sizeof(int) != 0)
        return reject(CUDA_ERROR_INVALID_VALUE, fn, "dataSize must be a positive multiple of 4");
      std::uint64_t common = ~std::uint64_t{0};
      for (const PageState& s : runs) common &= s.accessed_by;
      auto* out = static_cast<int*>(data);
      const std::size_t slots = size / sizeof(int);
      std::size_t n = 0;
      for (int d = 0; d < 63 && n < slots; ++d)
        if (common & (std::uint64_t{1} << d)) out[n++] = d;
      if ((common & kHostBit) && n < slots) out[n++] = CU_DEVICE_CPU;
      for (; n < slots; ++n) out[n] = kInvalidDevice;
      return CUDA_SUCCESS;
    }
    default:
      return reject(CUDA_ERROR_INVALID_VALUE, fn, "unknown range attribute");
  }
}

}  // namespace

void forget_managed_hints(unsigned long long buffer_id) noexcept {
  try {
    Hints& h = hints();
    std::lock_guard lock(h.mutex);
    h.by_buffer.erase(buffer_id);
  } catch (...) {
  }
}

}  // namespace cudamux::core

namespace cudamux::impl {
using core::reject;

CUresult cuMemAdvise(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUdevice device) {
  if (core::names_location(advice) && device != CU_DEVICE_CPU &&
      !core::Core::get().valid_device(device))
    return reject(CUDA_ERROR_INVALID_DEVICE, "cuMemAdvise", "no such device");
  return core::advise(devPtr, count, advice, core::location_of_device(device), "cuMemAdvise");
}
CUresult cuMemAdvise_v2(CUdeviceptr devPtr, size_t count, CUmem_advise advice,
                        CUmemLocation location) {
  return core::advise(devPtr, count, advice, location, "cuMemAdvise_v2");
}

CUresult cuMemPrefetchAsync(CUdeviceptr devPtr, size_t count, CUdevice dstDevice,
                            CUstream hStream) {
  if (dstDevice != CU_DEVICE_CPU && !core::Core::get().valid_device(dstDevice))
    return reject(CUDA_ERROR_INVALID_DEVICE, "cuMemPrefetchAsync", "no such device");
  return core::prefetch(devPtr, count, core::location_of_device(dstDevice), 0, hStream, false,
                        "cuMemPrefetchAsync");
}
CUresult cuMemPrefetchAsync_ptsz(CUdeviceptr devPtr, size_t count, CUdevice dstDevice,
                                 CUstream hStream) {
  if (dstDevice != CU_DEVICE_CPU && !core::Core::get().valid_device(dstDevice))
    return reject(CUDA_ERROR_INVALID_DEVICE, "cuMemPrefetchAsync", "no such device");
  return core::prefetch(devPtr, count, core::location_of_device(dstDevice), 0, hStream, true,
                        "cuMemPrefetchAsync");
}
CUresult cuMemPrefetchAsync_v2(CUdeviceptr devPtr, size_t count, CUmemLocation location,
                               unsigned int flags, CUstream hStream) {
  return core::prefetch(devPtr, count, location, flags, hStream, false, "cuMemPrefetchAsync_v2");
}
CUresult cuMemPrefetchAsync_v2_ptsz(CUdeviceptr devPtr, size_t count, CUmemLocation location,
                                    unsigned int flags, CUstream hStream) {
  return core::prefetch(devPtr, count, location, flags, hStream, true, "cuMemPrefetchAsync_v2");
}

CUresult cuMemRangeGetAttribute(void* data, size_t dataSize, CUmem_range_attribute attribute,
                                CUdeviceptr devPtr, size_t count) {
  return core::range_attribute(data, dataSize, attribute, devPtr, count, "cuMemRangeGetAttribute");
}
CUresult cuMemRangeGetAttributes(void** data, size_t* dataSizes, CUmem_range_attribute* attributes,
                                 size_t numAttributes, CUdeviceptr devPtr, size_t count) {
  const char* fn = "cuMemRangeGetAttributes";
  if (!data || !dataSizes || !attributes || numAttributes == 0)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "null or empty attribute arrays");
  for (size_t i = 0; i < numAttributes; ++i) {
    if (CUresult r = core::range_attribute(data[i], dataSizes[i], attributes[i], devPtr, count, fn))
      return r;
  }
  return CUDA_SUCCESS;
}

}  // namespace cudamux::impl
