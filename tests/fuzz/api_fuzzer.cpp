// API-sequence fuzzer (issue 9). The input is a small bytecode: one opcode byte, then the
// bytes its arguments need. Each op calls one driver (or runtime) function with handles,
// pointers, sizes and flags chosen by the input from a shadow model of what is live:
// a valid handle, a stale one (destroyed earlier), null, CUDA's special stream values
// or raw garbage. The core must answer every call with an error code, never crash, hang,
// leak or trip a sanitizer.
//
// What is never passed, because it would legitimately crash a real program too: host
// pointers the API cannot check (only buffers this fuzzer owns, with sizes that fit
// them, go to the host side of a copy). Device pointers may be anything: the core checks
// them against its allocation registry.
//
// After each input everything the input created is released and the per-thread context
// stack emptied, so inputs are independent and memory does not grow across runs.
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

// Reads arguments from the input; zeros once it runs out.
class Reader {
 public:
  Reader(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  bool empty() const { return pos_ >= size_; }
  std::uint8_t u8() { return pos_ < size_ ? data_[pos_++] : 0; }
  std::uint16_t u16() { return static_cast<std::uint16_t>(u8() | (u8() << 8)); }
  std::uint32_t u32() {
    return static_cast<std::uint32_t>(u16()) | (static_cast<std::uint32_t>(u16()) << 16);
  }
  std::uint64_t u64() {
    return static_cast<std::uint64_t>(u32()) | (static_cast<std::uint64_t>(u32()) << 32);
  }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

constexpr std::size_t kHostBuf = 64 * 1024;  // every host buffer the fuzzer owns is this large
constexpr std::size_t kMaxLive = 32;         // per kind: bounds memory and run time

struct DevAlloc {
  CUdeviceptr ptr;
  std::size_t size;
  CUcontext ctx;  // context it belongs to (null: runtime/primary)
};
struct HostAlloc {
  void* ptr;
  bool registered;  // malloc'ed + cuMemHostRegister'ed (else cuMemAllocHost/HostAlloc)
  CUcontext ctx;    // destroying it frees pinned memory and drops registrations
};
struct Stream {
  CUstream s;
  CUcontext ctx;
};
struct Event {
  CUevent e;
  CUcontext ctx;
};

struct Model {
  CUdevice device = 0;
  int primary_retains = 0;
  CUcontext primary = nullptr;
  std::vector<CUcontext> ctxs;  // created with cuCtxCreate
  int pushed = 0;               // pushes not yet popped by the input
  std::vector<DevAlloc> dev;
  std::vector<HostAlloc> host;
  std::vector<Stream> streams;
  std::vector<Event> events;
  // Handles destroyed by this or an earlier input: stale on purpose.
  std::vector<CUcontext> stale_ctxs;
  std::vector<CUstream> stale_streams;
  std::vector<CUevent> stale_events;
  std::vector<CUdeviceptr> stale_dev;
  std::vector<std::uint8_t> pageable = std::vector<std::uint8_t>(kHostBuf);
  std::vector<std::uint8_t> pageable2 = std::vector<std::uint8_t>(kHostBuf);
};

Model& model() {
  static Model* m = new Model;  // immortal: reachable, so LeakSanitizer ignores it
  return *m;
}

template <class T>
void remember_stale(std::vector<T>& v, T h) {
  if (v.size() >= 64) v.erase(v.begin());
  v.push_back(h);
}

// Picks a context handle: live, stale, null or garbage.
CUcontext pick_ctx(Reader& r, Model& m) {
  const std::uint8_t sel = r.u8();
  switch (sel % 6) {
    case 0:
    case 1:
      if (!m.ctxs.empty()) return m.ctxs[r.u8() % m.ctxs.size()];
      return m.primary;
    case 2:
      return m.primary;
    case 3:
      if (!m.stale_ctxs.empty()) return m.stale_ctxs[r.u8() % m.stale_ctxs.size()];
      return nullptr;
    case 4:
      return nullptr;
    default:
      return reinterpret_cast<CUcontext>(static_cast<std::uintptr_t>(r.u64()));
  }
}

CUstream pick_stream(Reader& r, Model& m) {
  const std::uint8_t sel = r.u8();
  switch (sel % 8) {
    case 0:
    case 1:
    case 2:
      if (!m.streams.empty()) return m.streams[r.u8() % m.streams.size()].s;
      return nullptr;
    case 3:
      return nullptr;
    case 4:
      return CU_STREAM_LEGACY;
    case 5:
      return CU_STREAM_PER_THREAD;
    case 6:
      if (!m.stale_streams.empty()) return m.stale_streams[r.u8() % m.stale_streams.size()];
      return nullptr;
    default:
      return reinterpret_cast<CUstream>(static_cast<std::uintptr_t>(r.u64()));
  }
}

CUevent pick_event(Reader& r, Model& m) {
  const std::uint8_t sel = r.u8();
  switch (sel % 5) {
    case 0:
    case 1:
      if (!m.events.empty()) return m.events[r.u8() % m.events.size()].e;
      return nullptr;
    case 2:
      if (!m.stale_events.empty()) return m.stale_events[r.u8() % m.stale_events.size()];
      return nullptr;
    case 3:
      return nullptr;
    default:
      return reinterpret_cast<CUevent>(static_cast<std::uintptr_t>(r.u64()));
  }
}

// A device pointer with the size the input may use from it: inside a live allocation
// (possibly offset, possibly running past its end), stale, host-side, null or garbage.
struct DevRange {
  CUdeviceptr ptr;
  std::size_t size;
  bool host = false;  // pinned host memory (a host buffer of ours, kHostBuf bytes)
};
//
// `unified`: the pointer goes where unified addressing decides host or device from the
// address alone (cuMemcpy, cudaMemcpyDefault, CU_MEMORYTYPE_UNIFIED). There an address
// outside every allocation *is* host memory, for CUDA as for us, so stale and garbage
// pointers would be wild host pointers: they become null instead.
DevRange pick_dev(Reader& r, Model& m, bool unified = false) {
  const std::uint8_t sel = r.u8();
  if (unified && (sel % 8 == 4 || sel % 8 == 7)) return {0, 0};
  switch (sel % 8) {
    case 0:
    case 1:
    case 2:
    case 3:
      if (!m.dev.empty()) {
        const DevAlloc& a = m.dev[r.u8() % m.dev.size()];
        const std::size_t off = (sel & 0x80) ? r.u16() % (a.size + 1) : 0;
        return {a.ptr + off, a.size - off};
      }
      return {0, 0};
    case 4:
      if (!m.stale_dev.empty()) return {m.stale_dev[r.u8() % m.stale_dev.size()], 256};
      return {0, 0};
    case 5:
      if (!m.host.empty()) {  // pinned host memory is device-accessible (UVA)
        return {reinterpret_cast<CUdeviceptr>(m.host[r.u8() % m.host.size()].ptr), kHostBuf, true};
      }
      return {0, 0};
    case 6:
      return {0, 0};
    default:
      return {static_cast<CUdeviceptr>(r.u64()), 256};
  }
}

// A host buffer the fuzzer owns (pageable or pinned), always kHostBuf bytes.
void* pick_host(Reader& r, Model& m) {
  const std::uint8_t sel = r.u8();
  if ((sel & 3) == 0 && !m.host.empty()) return m.host[r.u8() % m.host.size()].ptr;
  return (sel & 4) ? m.pageable2.data() : m.pageable.data();
}

// A size: mostly small and sensible, sometimes zero, sometimes huge.
std::size_t pick_size(Reader& r, std::size_t fit) {
  const std::uint8_t sel = r.u8();
  switch (sel % 8) {
    case 0:
      return 0;
    case 1:
      return fit;
    case 2:
      return static_cast<std::size_t>(r.u64());  // garbage
    case 3:
      return fit + 1 + r.u8();  // just past the end
    default:
      return fit == 0 ? r.u16() : r.u16() % (fit + 1);
  }
}

// A size a copy may use with a host buffer we own: never more than kHostBuf, so a wrong
// answer from the core shows up as a sanitizer report, not as our own overflow.
std::size_t host_fit(std::size_t n) { return std::min(n, kHostBuf); }

unsigned pick_flags(Reader& r) {
  const std::uint8_t sel = r.u8();
  if (sel < 160) return sel & 0x7;
  return r.u32();
}

void CUDART_CB host_fn(void* user) { ++*static_cast<int*>(user); }
void CUDA_CB stream_cb(CUstream, CUresult, void* user) { ++*static_cast<int*>(user); }
int g_callbacks = 0;

// Moves everything tied to `ctx` (null: none) to the stale lists; used when a context
// is destroyed or the primary context reset, which frees its resources.
void forget_ctx(Model& m, CUcontext ctx) {
  for (auto it = m.dev.begin(); it != m.dev.end();) {
    if (it->ctx == ctx) {
      remember_stale(m.stale_dev, it->ptr);
      it = m.dev.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = m.host.begin(); it != m.host.end();) {
    if (it->ctx == ctx) {
      if (it->registered) std::free(it->ptr);  // ours; only the registration went away
      it = m.host.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = m.streams.begin(); it != m.streams.end();) {
    if (it->ctx == ctx) {
      remember_stale(m.stale_streams, it->s);
      it = m.streams.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = m.events.begin(); it != m.events.end();) {
    if (it->ctx == ctx) {
      remember_stale(m.stale_events, it->e);
      it = m.events.erase(it);
    } else {
      ++it;
    }
  }
}

// The device's primary context as it is now (the runtime may have re-created it after a
// reset, under a new handle), or null when inactive. Retain + release leaves the count.
CUcontext primary_now(Model& m) {
  unsigned flags = 0;
  int active = 0;
  if (cuDevicePrimaryCtxGetState(m.device, &flags, &active) != CUDA_SUCCESS || !active) {
    return nullptr;
  }
  CUcontext c = nullptr;
  if (cuDevicePrimaryCtxRetain(&c, m.device) != CUDA_SUCCESS) return nullptr;
  cuDevicePrimaryCtxRelease(m.device);
  return c;
}

// The primary context was reset or released for good: everything of it, under any of
// its handles, is gone.
void forget_primary(Model& m, CUcontext now) {
  if (now != nullptr) forget_ctx(m, now);
  if (m.primary != nullptr && m.primary != now) forget_ctx(m, m.primary);
}

CUcontext current() {
  CUcontext c = nullptr;
  cuCtxGetCurrent(&c);
  return c;
}

// Makes sure a context is current, so allocation ops have somewhere to go. Returns it.
CUcontext ensure_current(Model& m) {
  CUcontext c = current();
  if (c != nullptr) return c;
  if (m.primary == nullptr || m.primary_retains == 0) {
    if (cuDevicePrimaryCtxRetain(&m.primary, m.device) != CUDA_SUCCESS) std::abort();
    ++m.primary_retains;
  }
  cuCtxSetCurrent(m.primary);
  return m.primary;
}

// Releases what the input left behind and empties this thread's context stack.
void cleanup(Model& m) {
  for (const Stream& s : m.streams) {
    cuStreamSynchronize(s.s);
  }
  for (CUcontext c : m.ctxs) {
    cuCtxPushCurrent(c);
    cuCtxSynchronize();
    CUcontext popped = nullptr;
    cuCtxPopCurrent(&popped);
  }
  if (m.primary != nullptr && m.primary_retains > 0) {
    cuCtxPushCurrent(m.primary);
    cuCtxSynchronize();
    CUcontext popped = nullptr;
    cuCtxPopCurrent(&popped);
  }
  for (const Stream& s : m.streams) {
    cuStreamDestroy(s.s);
    remember_stale(m.stale_streams, s.s);
  }
  for (const Event& e : m.events) {
    cuEventDestroy(e.e);
    remember_stale(m.stale_events, e.e);
  }
  for (const DevAlloc& a : m.dev) {
    cuMemFree(a.ptr);
    remember_stale(m.stale_dev, a.ptr);
  }
  for (const HostAlloc& h : m.host) {
    if (h.registered) {
      cuMemHostUnregister(h.ptr);
      std::free(h.ptr);
    } else {
      cuMemFreeHost(h.ptr);
    }
  }
  m.streams.clear();
  m.events.clear();
  m.dev.clear();
  m.host.clear();
  for (CUcontext c : m.ctxs) {
    cuCtxDestroy(c);
    remember_stale(m.stale_ctxs, c);
  }
  m.ctxs.clear();
  while (current() != nullptr) {
    CUcontext popped = nullptr;
    if (cuCtxPopCurrent(&popped) != CUDA_SUCCESS) break;
  }
  cuCtxSetCurrent(nullptr);
  while (m.primary_retains > 0) {
    cuDevicePrimaryCtxRelease(m.device);
    --m.primary_retains;
  }
  m.pushed = 0;
  cudaGetLastError();  // the runtime's per-thread error is state too
}

enum Op : std::uint8_t {
  kMemAlloc,
  kMemFree,
  kMemAllocHost,
  kMemFreeHost,
  kHostRegister,
  kHostUnregister,
  kMemcpyHtoD,
  kMemcpyDtoH,
  kMemcpyDtoD,
  kMemcpyHtoDAsync,
  kMemcpyDtoHAsync,
  kMemcpyAsync,
  kMemset,
  kMemsetAsync,
  kMemset2D,
  kMemcpy2D,
  kMemGetInfo,
  kAddressRange,
  kPointerAttribute,
  kStreamCreate,
  kStreamDestroy,
  kStreamSync,
  kStreamQuery,
  kStreamWaitEvent,
  kStreamGetters,
  kEventCreate,
  kEventRecord,
  kEventQuerySync,
  kEventDestroy,
  kEventElapsed,
  kCtxCreate,
  kCtxDestroy,
  kCtxPush,
  kCtxPop,
  kCtxSetCurrent,
  kCtxSync,
  kCtxLimits,
  kPrimaryRetain,
  kPrimaryRelease,
  kPrimaryReset,
  kHostFunc,
  kStreamCallback,
  kMemAllocManaged,
  kDeviceQueries,
  kLaunchGarbage,
  kRtMalloc,
  kRtMemcpy,
  kRtMemset,
  kRtStream,
  kRtEvent,
  kRtDevice,
  kOpCount
};

void step(Reader& r, Model& m) {
  const std::uint8_t op = r.u8() % kOpCount;
  switch (op) {
    case kMemAlloc: {
      if (m.dev.size() >= kMaxLive) break;
      const CUcontext ctx = (r.u8() & 1) ? ensure_current(m) : current();
      std::size_t size = pick_size(r, 4096);
      if (size > (1u << 20) && size < (std::size_t{1} << 40)) size &= 0xfffff;  // no RAM hogs
      CUdeviceptr p = 0;
      if (cuMemAlloc(&p, size) == CUDA_SUCCESS) m.dev.push_back({p, size, ctx});
      break;
    }
    case kMemFree: {
      const std::uint8_t sel = r.u8();
      if ((sel & 3) != 0 && !m.dev.empty()) {
        const std::size_t i = r.u8() % m.dev.size();
        const CUdeviceptr p = m.dev[i].ptr;
        if (cuMemFree(p) == CUDA_SUCCESS) {
          remember_stale(m.stale_dev, p);
          m.dev.erase(m.dev.begin() + static_cast<std::ptrdiff_t>(i));
        }
      } else {
        // Stale, offset-into, host or garbage: must be refused, and must not free anything.
        const DevRange d = pick_dev(r, m);
        bool is_live_base = false;
        for (const DevAlloc& a : m.dev) is_live_base |= (a.ptr == d.ptr);
        if (!is_live_base) cuMemFree(d.ptr);
      }
      break;
    }
    case kMemAllocHost: {
      if (m.host.size() >= 8) break;
      const CUcontext ctx = ensure_current(m);
      void* p = nullptr;
      const CUresult rc = (r.u8() & 1) ? cuMemAllocHost(&p, kHostBuf)
                                       : cuMemHostAlloc(&p, kHostBuf, pick_flags(r) & 0xf);
      if (rc == CUDA_SUCCESS) m.host.push_back({p, false, ctx});
      break;
    }
    case kMemFreeHost: {
      const std::uint8_t sel = r.u8();
      if ((sel & 1) && !m.host.empty()) {
        const std::size_t i = r.u8() % m.host.size();
        if (m.host[i].registered) break;
        if (cuMemFreeHost(m.host[i].ptr) == CUDA_SUCCESS) {
          m.host.erase(m.host.begin() + static_cast<std::ptrdiff_t>(i));
        }
      } else {
        cuMemFreeHost(m.pageable.data());  // not pinned: must be refused
      }
      break;
    }
    case kHostRegister: {
      if (m.host.size() >= 8) break;
      const CUcontext ctx = ensure_current(m);
      void* p = std::malloc(kHostBuf);
      const std::size_t size = (r.u8() & 1) ? kHostBuf : (r.u16() % kHostBuf);
      if (cuMemHostRegister(p, size, pick_flags(r) & 0xf) == CUDA_SUCCESS) {
        m.host.push_back({p, true, ctx});
      } else {
        std::free(p);
      }
      break;
    }
    case kHostUnregister: {
      const std::uint8_t sel = r.u8();
      for (std::size_t i = 0; i < m.host.size(); ++i) {
        if (m.host[i].registered && (sel & 1)) {
          if (cuMemHostUnregister(m.host[i].ptr) == CUDA_SUCCESS) {
            std::free(m.host[i].ptr);
            m.host.erase(m.host.begin() + static_cast<std::ptrdiff_t>(i));
          }
          return;
        }
      }
      cuMemHostUnregister(m.pageable.data() + (sel & 0x3f));  // never registered
      break;
    }
    case kMemcpyHtoD: {
      const DevRange d = pick_dev(r, m);
      void* h = pick_host(r, m);
      cuMemcpyHtoD(d.ptr, h, host_fit(pick_size(r, d.size)));
      break;
    }
    case kMemcpyDtoH: {
      const DevRange d = pick_dev(r, m);
      void* h = pick_host(r, m);
      cuMemcpyDtoH(h, d.ptr, host_fit(pick_size(r, d.size)));
      break;
    }
    case kMemcpyDtoD: {
      const DevRange a = pick_dev(r, m);
      const DevRange b = pick_dev(r, m);
      const std::size_t n = pick_size(r, std::min(a.size, b.size));
      if (r.u8() & 1) {
        cuMemcpyDtoD(a.ptr, b.ptr, n);
      } else {
        cuMemcpyDtoDAsync(a.ptr, b.ptr, n, pick_stream(r, m));
      }
      break;
    }
    case kMemcpyHtoDAsync: {
      const DevRange d = pick_dev(r, m);
      void* h = pick_host(r, m);
      cuMemcpyHtoDAsync(d.ptr, h, host_fit(pick_size(r, d.size)), pick_stream(r, m));
      break;
    }
    case kMemcpyDtoHAsync: {
      const DevRange d = pick_dev(r, m);
      void* h = pick_host(r, m);
      cuMemcpyDtoHAsync(h, d.ptr, host_fit(pick_size(r, d.size)), pick_stream(r, m));
      break;
    }
    case kMemcpyAsync: {
      // Unified cuMemcpy: either side may be host memory we own or a device range.
      const bool src_host = r.u8() & 1;
      const bool dst_host = r.u8() & 1;
      const DevRange d1 = pick_dev(r, m, true);
      const DevRange d2 = pick_dev(r, m, true);
      const CUdeviceptr dst = dst_host ? reinterpret_cast<CUdeviceptr>(pick_host(r, m)) : d1.ptr;
      const CUdeviceptr src = src_host ? reinterpret_cast<CUdeviceptr>(pick_host(r, m)) : d2.ptr;
      std::size_t n =
          pick_size(r, std::min(dst_host ? kHostBuf : d1.size, src_host ? kHostBuf : d2.size));
      // Past the end of pinned memory is host memory to a unified copy: keep within ours.
      if (src_host || dst_host || d1.host || d2.host) n = host_fit(n);
      if (r.u8() & 1) {
        cuMemcpy(dst, src, n);
      } else {
        cuMemcpyAsync(dst, src, n, pick_stream(r, m));
      }
      break;
    }
    case kMemset: {
      const DevRange d = pick_dev(r, m);
      const std::uint8_t kind = r.u8() % 3;
      const std::size_t n = pick_size(r, d.size >> kind);
      const std::uint32_t v = r.u32();
      if (kind == 0) cuMemsetD8(d.ptr, static_cast<unsigned char>(v), n);
      if (kind == 1) cuMemsetD16(d.ptr, static_cast<unsigned short>(v), n);
      if (kind == 2) cuMemsetD32(d.ptr, v, n);
      break;
    }
    case kMemsetAsync: {
      const DevRange d = pick_dev(r, m);
      const std::uint8_t kind = r.u8() % 3;
      const std::size_t n = pick_size(r, d.size >> kind);
      const std::uint32_t v = r.u32();
      const CUstream s = pick_stream(r, m);
      if (kind == 0) cuMemsetD8Async(d.ptr, static_cast<unsigned char>(v), n, s);
      if (kind == 1) cuMemsetD16Async(d.ptr, static_cast<unsigned short>(v), n, s);
      if (kind == 2) cuMemsetD32Async(d.ptr, v, n, s);
      break;
    }
    case kMemset2D: {
      const DevRange d = pick_dev(r, m);
      const std::size_t pitch = (r.u8() & 1) ? r.u16() : static_cast<std::size_t>(r.u64());
      const std::size_t width = r.u16();
      const std::size_t height = r.u8();
      const std::uint8_t kind = r.u8() % 3;
      const std::uint32_t v = r.u32();
      if (kind == 0) cuMemsetD2D8(d.ptr, pitch, static_cast<unsigned char>(v), width, height);
      if (kind == 1) cuMemsetD2D16(d.ptr, pitch, static_cast<unsigned short>(v), width, height);
      if (kind == 2) cuMemsetD2D32Async(d.ptr, pitch, v, width, height, pick_stream(r, m));
      break;
    }
    case kMemcpy2D: {
      // Device to device only: a host side would need a box we can bound, and the
      // interesting checks (pitch, extents against the allocation) are on the device side.
      const DevRange a = pick_dev(r, m);
      const DevRange b = pick_dev(r, m, true);  // the source may be CU_MEMORYTYPE_UNIFIED
      CUDA_MEMCPY2D c{};
      c.srcMemoryType =
          (r.u8() & 7) == 0 ? static_cast<CUmemorytype>(r.u8()) : CU_MEMORYTYPE_DEVICE;
      c.srcDevice = b.ptr;
      c.srcXInBytes = r.u8();
      c.srcY = r.u8() % 8;
      c.srcPitch = (r.u8() & 1) ? r.u16() : static_cast<std::size_t>(r.u64());
      c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
      c.dstDevice = a.ptr;
      c.dstXInBytes = r.u8();
      c.dstY = r.u8() % 8;
      c.dstPitch = r.u16();
      c.WidthInBytes = r.u16();
      c.Height = r.u8();
      if (b.host) c.srcMemoryType = CU_MEMORYTYPE_DEVICE;  // typed: checked against its range
      if (c.srcMemoryType != CU_MEMORYTYPE_DEVICE && c.srcMemoryType != CU_MEMORYTYPE_UNIFIED) {
        c.srcMemoryType = static_cast<CUmemorytype>(0x7f);  // invalid type: never a host read
      }
      if (r.u8() & 1) {
        cuMemcpy2D(&c);
      } else {
        cuMemcpy2DAsync(&c, pick_stream(r, m));
      }
      break;
    }
    case kMemGetInfo: {
      std::size_t free_b = 0, total = 0;
      cuMemGetInfo(&free_b, &total);
      cuMemGetInfo(nullptr, &total);
      break;
    }
    case kAddressRange: {
      const DevRange d = pick_dev(r, m);
      CUdeviceptr base = 0;
      std::size_t size = 0;
      cuMemGetAddressRange(&base, &size, d.ptr);
      cuMemGetAddressRange(nullptr, nullptr, d.ptr);
      break;
    }
    case kPointerAttribute: {
      const DevRange d = pick_dev(r, m);
      alignas(16) std::uint8_t out[64] = {};
      const auto attr = static_cast<CUpointer_attribute>(r.u8() % 24);
      cuPointerGetAttribute(out, attr, d.ptr);
      CUpointer_attribute attrs[3] = {CU_POINTER_ATTRIBUTE_CONTEXT, attr,
                                      CU_POINTER_ATTRIBUTE_MEMORY_TYPE};
      void* outs[3] = {out, out + 16, out + 32};
      cuPointerGetAttributes(3, attrs, outs, d.ptr);
      break;
    }
    case kStreamCreate: {
      if (m.streams.size() >= kMaxLive) break;
      const CUcontext ctx = (r.u8() & 3) ? ensure_current(m) : current();
      CUstream s = nullptr;
      const unsigned flags = pick_flags(r);
      const CUresult rc = (r.u8() & 1)
                              ? cuStreamCreate(&s, flags)
                              : cuStreamCreateWithPriority(&s, flags, static_cast<int>(r.u32()));
      if (rc == CUDA_SUCCESS) m.streams.push_back({s, ctx});
      break;
    }
    case kStreamDestroy: {
      const std::uint8_t sel = r.u8();
      if ((sel & 1) && !m.streams.empty()) {
        const std::size_t i = r.u8() % m.streams.size();
        if (cuStreamDestroy(m.streams[i].s) == CUDA_SUCCESS) {
          remember_stale(m.stale_streams, m.streams[i].s);
          m.streams.erase(m.streams.begin() + static_cast<std::ptrdiff_t>(i));
        }
      } else {
        const CUstream s = pick_stream(r, m);
        bool live = false;
        for (const Stream& x : m.streams) live |= (x.s == s);
        if (!live) cuStreamDestroy(s);
      }
      break;
    }
    case kStreamSync:
      cuStreamSynchronize(pick_stream(r, m));
      break;
    case kStreamQuery:
      cuStreamQuery(pick_stream(r, m));
      break;
    case kStreamWaitEvent:
      cuStreamWaitEvent(pick_stream(r, m), pick_event(r, m), pick_flags(r) & 0x3);
      break;
    case kStreamGetters: {
      const CUstream s = pick_stream(r, m);
      unsigned flags = 0;
      int prio = 0;
      CUcontext c = nullptr;
      CUdevice dv = 0;
      unsigned long long id = 0;
      cuStreamGetFlags(s, &flags);
      cuStreamGetPriority(s, &prio);
      cuStreamGetCtx(s, &c);
      cuStreamGetDevice(s, &dv);
      cuStreamGetId(s, &id);
      cuStreamGetFlags(s, nullptr);
      break;
    }
    case kEventCreate: {
      if (m.events.size() >= kMaxLive) break;
      const CUcontext ctx = (r.u8() & 3) ? ensure_current(m) : current();
      CUevent e = nullptr;
      if (cuEventCreate(&e, pick_flags(r)) == CUDA_SUCCESS) m.events.push_back({e, ctx});
      break;
    }
    case kEventRecord: {
      const CUevent e = pick_event(r, m);
      const CUstream s = pick_stream(r, m);
      if (r.u8() & 1) {
        cuEventRecord(e, s);
      } else {
        cuEventRecordWithFlags(e, s, pick_flags(r));
      }
      break;
    }
    case kEventQuerySync: {
      const CUevent e = pick_event(r, m);
      if (r.u8() & 1) {
        cuEventQuery(e);
      } else {
        cuEventSynchronize(e);
      }
      break;
    }
    case kEventDestroy: {
      const std::uint8_t sel = r.u8();
      if ((sel & 1) && !m.events.empty()) {
        const std::size_t i = r.u8() % m.events.size();
        if (cuEventDestroy(m.events[i].e) == CUDA_SUCCESS) {
          remember_stale(m.stale_events, m.events[i].e);
          m.events.erase(m.events.begin() + static_cast<std::ptrdiff_t>(i));
        }
      } else {
        const CUevent e = pick_event(r, m);
        bool live = false;
        for (const Event& x : m.events) live |= (x.e == e);
        if (!live) cuEventDestroy(e);
      }
      break;
    }
    case kEventElapsed: {
      float ms = 0;
      const CUevent a = pick_event(r, m);
      const CUevent b = pick_event(r, m);
      cuEventElapsedTime(&ms, a, b);
      cuEventElapsedTime(nullptr, a, b);
      break;
    }
    case kCtxCreate: {
      if (m.ctxs.size() >= 4) break;
      CUcontext c = nullptr;
      const CUdevice dv = (r.u8() & 7) ? m.device : static_cast<CUdevice>(r.u32());
      if (cuCtxCreate(&c, nullptr, pick_flags(r), dv) == CUDA_SUCCESS) {
        m.ctxs.push_back(c);
        ++m.pushed;  // cuCtxCreate pushes it
      }
      break;
    }
    case kCtxDestroy: {
      const std::uint8_t sel = r.u8();
      if ((sel & 1) && !m.ctxs.empty()) {
        const std::size_t i = r.u8() % m.ctxs.size();
        const CUcontext c = m.ctxs[i];
        if (cuCtxDestroy(c) == CUDA_SUCCESS) {
          forget_ctx(m, c);
          remember_stale(m.stale_ctxs, c);
          m.ctxs.erase(m.ctxs.begin() + static_cast<std::ptrdiff_t>(i));
        }
      } else {
        const CUcontext c = pick_ctx(r, m);
        bool live = c == m.primary;
        for (CUcontext x : m.ctxs) live |= (x == c);
        if (!live) cuCtxDestroy(c);
      }
      break;
    }
    case kCtxPush:
      if (m.pushed < 16 && cuCtxPushCurrent(pick_ctx(r, m)) == CUDA_SUCCESS) ++m.pushed;
      break;
    case kCtxPop: {
      CUcontext c = nullptr;
      if (cuCtxPopCurrent((r.u8() & 7) ? &c : nullptr) == CUDA_SUCCESS && m.pushed > 0) --m.pushed;
      break;
    }
    case kCtxSetCurrent:
      cuCtxSetCurrent(pick_ctx(r, m));
      break;
    case kCtxSync:
      cuCtxSynchronize();
      break;
    case kCtxLimits: {
      std::size_t v = 0;
      const auto limit = static_cast<CUlimit>(r.u8() % 12);
      cuCtxGetLimit(&v, limit);
      // Only limits that cannot make the mock reserve much: stack size and printf FIFO
      // are bounded by the input's 16 bits.
      if (r.u8() & 1) cuCtxSetLimit(limit, r.u16());
      CUfunc_cache cfg{};
      cuCtxGetCacheConfig(&cfg);
      cuCtxSetCacheConfig(static_cast<CUfunc_cache>(r.u8() % 6));
      unsigned flags = 0;
      cuCtxGetFlags(&flags);
      unsigned api = 0;
      cuCtxGetApiVersion(pick_ctx(r, m), &api);
      unsigned long long id = 0;
      cuCtxGetId(pick_ctx(r, m), &id);
      int lo = 0, hi = 0;
      cuCtxGetStreamPriorityRange(&lo, &hi);
      break;
    }
    case kPrimaryRetain: {
      if (m.primary_retains >= 4) break;
      CUcontext c = nullptr;
      const CUdevice dv = (r.u8() & 7) ? m.device : static_cast<CUdevice>(r.u32());
      if (cuDevicePrimaryCtxRetain(&c, dv) == CUDA_SUCCESS) {
        m.primary = c;
        ++m.primary_retains;
      }
      break;
    }
    case kPrimaryRelease: {
      if (m.primary_retains > 0 && (r.u8() & 1)) {
        const CUcontext now = primary_now(m);
        if (cuDevicePrimaryCtxRelease(m.device) == CUDA_SUCCESS) {
          --m.primary_retains;
          // Inactive now (the runtime may hold a retain of its own): its resources are gone.
          unsigned flags = 0;
          int active = 1;
          if (m.primary_retains == 0 &&
              cuDevicePrimaryCtxGetState(m.device, &flags, &active) == CUDA_SUCCESS && !active) {
            forget_primary(m, now);
          }
        }
      } else {
        cuDevicePrimaryCtxRelease(static_cast<CUdevice>(r.u32()) | 0x100);  // no such device
      }
      break;
    }
    case kPrimaryReset: {
      // Frees everything of the primary context, as cudaDeviceReset does.
      const CUcontext now = primary_now(m);
      if (cuDevicePrimaryCtxReset(m.device) == CUDA_SUCCESS) forget_primary(m, now);
      unsigned flags = 0;
      int active = 0;
      cuDevicePrimaryCtxGetState(m.device, &flags, &active);
      cuDevicePrimaryCtxSetFlags(m.device, pick_flags(r));
      break;
    }
    case kHostFunc:
      cuLaunchHostFunc(pick_stream(r, m), host_fn, &g_callbacks);
      break;
    case kStreamCallback:
      cuStreamAddCallback(pick_stream(r, m), stream_cb, &g_callbacks, pick_flags(r) & 1);
      break;
    case kMemAllocManaged: {
      if (m.dev.size() >= kMaxLive) break;
      const CUcontext ctx = current();
      std::size_t size = pick_size(r, 4096);
      if (size > (1u << 20) && size < (std::size_t{1} << 40)) size &= 0xfffff;
      CUdeviceptr p = 0;
      if (cuMemAllocManaged(&p, size, pick_flags(r)) == CUDA_SUCCESS)
        m.dev.push_back({p, size, ctx});
      break;
    }
    case kDeviceQueries: {
      const CUdevice dv = (r.u8() & 3) ? m.device : static_cast<CUdevice>(r.u32());
      int v = 0;
      cuDeviceGetAttribute(&v, static_cast<CUdevice_attribute>(r.u8()), dv);
      char name[64];
      cuDeviceGetName(name, static_cast<int>(r.u8() % sizeof name), dv);
      std::size_t total = 0;
      cuDeviceTotalMem(&total, dv);
      CUdevice got = 0;
      cuDeviceGet(&got, static_cast<int>(r.u32()));
      char bus[32];
      cuDeviceGetPCIBusId(bus, static_cast<int>(r.u8() % sizeof bus), dv);
      const char* s = nullptr;
      cuGetErrorString(static_cast<CUresult>(r.u16()), &s);
      cuGetErrorName(static_cast<CUresult>(r.u16()), &s);
      int can = 0;
      cuDeviceCanAccessPeer(&can, dv, m.device);
      break;
    }
    case kLaunchGarbage: {
      // Garbage function handles: the launch must be refused before anything runs.
      const auto f = reinterpret_cast<CUfunction>(static_cast<std::uintptr_t>(r.u64()));
      void* args[1] = {nullptr};
      cuLaunchKernel(f, r.u8(), 1, 1, r.u8(), 1, 1, r.u16(), pick_stream(r, m), args, nullptr);
      CUmodule mod = reinterpret_cast<CUmodule>(static_cast<std::uintptr_t>(r.u64()));
      CUfunction out = nullptr;
      cuModuleGetFunction(&out, mod, "k");
      cuModuleUnload(mod);
      int v = 0;
      cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f);
      break;
    }
    // The runtime API: the same objects through libcudart (primary context of the device).
    case kRtMalloc: {
      if (m.dev.size() >= kMaxLive) break;
      const std::uint8_t sel = r.u8();
      if (sel & 1) {
        void* p = nullptr;
        std::size_t size = pick_size(r, 4096);
        if (size > (1u << 20) && size < (std::size_t{1} << 40)) size &= 0xfffff;
        // cudaMalloc makes the primary context current when none is.
        if (cudaMalloc(&p, size) == cudaSuccess) {
          m.dev.push_back({reinterpret_cast<CUdeviceptr>(p), size, current()});
          if (m.primary == nullptr) {
            CUcontext c = nullptr;
            cuDevicePrimaryCtxRetain(&c, m.device);
            m.primary = c;
            ++m.primary_retains;
          }
        }
      } else {
        const DevRange d = pick_dev(r, m);
        bool live = false;
        for (const DevAlloc& a : m.dev) live |= (a.ptr == d.ptr);
        if (!live) cudaFree(reinterpret_cast<void*>(d.ptr));
      }
      break;
    }
    case kRtMemcpy: {
      const std::uint8_t kind = r.u8() % 6;
      // Typed kinds (0, 1, 3) make the runtime check the device side; the others decide
      // by address (see pick_dev).
      const DevRange d = pick_dev(r, m, kind == 2 || kind >= 4);
      void* h = pick_host(r, m);
      const std::size_t n = host_fit(pick_size(r, d.size));
      void* dp = reinterpret_cast<void*>(d.ptr);
      switch (kind) {
        case 0:
          cudaMemcpy(dp, h, n, cudaMemcpyHostToDevice);
          break;
        case 1:
          cudaMemcpy(h, dp, n, cudaMemcpyDeviceToHost);
          break;
        case 2:
          cudaMemcpy(dp, h, n, cudaMemcpyDefault);
          break;
        case 3:
          cudaMemcpyAsync(h, dp, n, cudaMemcpyDeviceToHost,
                          reinterpret_cast<cudaStream_t>(pick_stream(r, m)));
          break;
        case 4:
          // Wrong direction for the pointers: the runtime must check, not trust, kind.
          cudaMemcpy(dp, dp, std::min(n, d.size), static_cast<cudaMemcpyKind>(r.u8() % 6));
          break;
        default:
          cudaMemcpy(dp, h, n, static_cast<cudaMemcpyKind>(r.u32()));
          break;
      }
      break;
    }
    case kRtMemset: {
      const DevRange d = pick_dev(r, m);
      const std::size_t n = pick_size(r, d.size);
      if (r.u8() & 1) {
        cudaMemset(reinterpret_cast<void*>(d.ptr), r.u8(), n);
      } else {
        cudaMemsetAsync(reinterpret_cast<void*>(d.ptr), r.u8(), n,
                        reinterpret_cast<cudaStream_t>(pick_stream(r, m)));
      }
      break;
    }
    case kRtStream: {
      const std::uint8_t sel = r.u8() % 4;
      const auto s = reinterpret_cast<cudaStream_t>(pick_stream(r, m));
      if (sel == 0) cudaStreamSynchronize(s);
      if (sel == 1) cudaStreamQuery(s);
      if (sel == 2) {
        unsigned flags = 0;
        cudaStreamGetFlags(s, &flags);
      }
      if (sel == 3) {
        bool live = false;
        for (const Stream& x : m.streams) live |= (reinterpret_cast<cudaStream_t>(x.s) == s);
        if (!live && s != nullptr) cudaStreamDestroy(s);
      }
      break;
    }
    case kRtEvent: {
      const auto e = reinterpret_cast<cudaEvent_t>(pick_event(r, m));
      const auto s = reinterpret_cast<cudaStream_t>(pick_stream(r, m));
      switch (r.u8() % 4) {
        case 0:
          cudaEventRecord(e, s);
          break;
        case 1:
          cudaEventQuery(e);
          break;
        case 2:
          cudaEventSynchronize(e);
          break;
        default: {
          float ms = 0;
          cudaEventElapsedTime(&ms, e, reinterpret_cast<cudaEvent_t>(pick_event(r, m)));
        }
      }
      break;
    }
    case kRtDevice: {
      int v = 0;
      switch (r.u8() % 6) {
        case 0:
          cudaGetDevice(&v);
          break;
        case 1:
          cudaSetDevice(static_cast<int>(r.u32()));  // garbage ordinals refused
          break;
        case 2:
          cudaDeviceGetAttribute(&v, static_cast<cudaDeviceAttr>(r.u8()),
                                 static_cast<int>(r.u8() % 3));
          break;
        case 3:
          cudaPeekAtLastError();
          cudaGetLastError();
          break;
        case 4:
          cudaDeviceSynchronize();
          break;
        default: {
          std::size_t f = 0, t = 0;
          cudaMemGetInfo(&f, &t);
        }
      }
      cudaSetDevice(0);  // the model assumes device 0 for the runtime
      break;
    }
    default:
      break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Hermetic: no user config, the mock backend from the build tree, quiet logs.
  setenv("CUDAMUX_BACKEND", "mock", 1);
  setenv("CUDAMUX_LOG_LEVEL", "off", 0);
  setenv("XDG_CONFIG_HOME", "/nonexistent-cudamux-fuzz", 1);
  unsetenv("CUDAMUX_CONFIG");
  if (cuInit(0) != CUDA_SUCCESS) std::abort();
  if (cuDeviceGet(&model().device, 0) != CUDA_SUCCESS) std::abort();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Model& m = model();
  Reader r(data, size);
  for (int ops = 0; ops < 256 && !r.empty(); ++ops) step(r, m);
  cleanup(m);
  return 0;
}
