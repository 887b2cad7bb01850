// A stand-in for NVIDIA's libcuda.so.1: the functions the cuda backend resolves, run
// synchronously on the CPU, with a call log the tests read (fake_nvidia_log). Device
// handles differ from ordinals (100 + ordinal) so that the tests see the mapping.
// Built as <standins>/fake/libcuda.so.1 (and broken/, where cuInit fails).
// Modules are text images (see cuModuleLoadData below); the kernel "saxpy" really runs.
// Every cu* function counts its calls (fake_nvidia_call_counts); with FAKE_NVIDIA_QUIET=1
// in the environment nothing is logged, so that bench/bench_passthrough.cpp times cudamux's
// cost over functions that do almost nothing.
#include <cuda.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cubin_symbols.hpp"
#include "cudamux/fatbin.hpp"

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

constexpr int kDevices = 2;
constexpr std::size_t kTotal = std::size_t{1} << 30;

struct FakeContext {
  int device = 0;
  unsigned flags = 0;
  bool primary = false;
  std::map<int, std::size_t> limits;  // cuCtxSetLimit's record
};
struct FakeEvent {
  unsigned flags = 0;
  bool recorded = false;
  std::chrono::steady_clock::time_point at;
};

std::mutex g_mu;
std::string g_log;
bool g_busy = false;
std::map<CUdeviceptr, std::size_t> g_allocations;
FakeContext g_primary[kDevices];
int g_primary_refs[kDevices] = {};
unsigned g_primary_flags[kDevices] = {};
thread_local std::vector<CUcontext> t_stack;

const bool g_quiet = [] {
  const char* q = std::getenv("FAKE_NVIDIA_QUIET");
  return q != nullptr && *q != '\0' && *q != '0';
}();

// FAKE_NVIDIA_LAUNCH_EVICT=<bytes>: every launch writes one byte per cache line of a buffer
// that large, as NVIDIA's launch path displaces the caller's cache lines (its pushbuffer,
// channel and scheduling state). scripts/launch-footprint.sh counts, under a cache simulator,
// the lines cudamux then misses on each launch.
std::vector<unsigned char>& evict_buffer() {
  static std::vector<unsigned char> buffer = [] {
    const char* e = std::getenv("FAKE_NVIDIA_LAUNCH_EVICT");
    return std::vector<unsigned char>(e != nullptr ? std::strtoull(e, nullptr, 10) : 0);
  }();
  return buffer;
}
// 64 KiB of straight-line code: run once per launch when evicting, it displaces the caller's
// code from a 32 KiB instruction cache as NVIDIA's launch code does.
[[gnu::noinline]] void run_code_sled() { asm volatile(".rept 65536\n\tnop\n\t.endr" ::: "memory"); }
void evict_caches() {
  auto& buffer = evict_buffer();
  if (buffer.empty()) return;
  for (std::size_t i = 0; i < buffer.size(); i += 64) buffer[i] = static_cast<unsigned char>(i);
  run_code_sled();
}

// FAKE_NVIDIA_LOG=stderr: every line also goes to stderr, for tests that run whole programs.
const bool g_echo = [] {
  const char* e = std::getenv("FAKE_NVIDIA_LOG");
  return e != nullptr && std::strcmp(e, "stderr") == 0;
}();

void log(const std::string& line) {
  if (g_quiet) return;
  std::lock_guard lock(g_mu);
  g_log += line + "\n";
  if (g_echo) std::fprintf(stderr, "[fake nvidia] %s\n", line.c_str());
}
// log() for callers that hold g_mu.
void log_locked(const std::string& line) {
  if (g_quiet) return;
  g_log += line + "\n";
  if (g_echo) std::fprintf(stderr, "[fake nvidia] %s\n", line.c_str());
}
std::size_t used() {
  std::size_t n = 0;
  for (const auto& [p, s] : g_allocations) n += s;
  return n;
}
bool valid_device(CUdevice d) { return d >= 100 && d < 100 + kDevices; }
void* ptr(CUdeviceptr p) { return reinterpret_cast<void*>(p); }

// One per function, registered on its first call. The increment is a relaxed load and
// store, not a locked add: a few lost counts under concurrent calls do not matter to the
// single-threaded benchmark that reads them, and a locked add would weigh on the
// nanoseconds it measures.
struct CallCounter {
  explicit CallCounter(const char* n) : name(n), next(head.load()) {
    while (!head.compare_exchange_weak(next, this)) {
    }
  }
  void bump() noexcept {
    calls.store(calls.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  const char* name;
  CallCounter* next;
  std::atomic<unsigned long long> calls{0};
  static inline std::atomic<CallCounter*> head{nullptr};
};
#define FAKE_COUNT()                         \
  static CallCounter fake_counter(__func__); \
  fake_counter.bump()

}  // namespace

// "name count" lines, one per function called so far.
FAKE_EXPORT const char* fake_nvidia_call_counts() {
  thread_local std::string text;
  text.clear();
  for (const CallCounter* c = CallCounter::head.load(); c != nullptr; c = c->next)
    text += std::string(c->name) + " " + std::to_string(c->calls.load()) + "\n";
  return text.c_str();
}

FAKE_EXPORT const char* fake_nvidia_log() {
  std::lock_guard lock(g_mu);
  static std::string copy;
  copy = g_log;
  return copy.c_str();
}
FAKE_EXPORT void fake_nvidia_clear_log() {
  std::lock_guard lock(g_mu);
  g_log.clear();
}
FAKE_EXPORT void fake_nvidia_set_busy(int busy) { g_busy = busy != 0; }

FAKE_EXPORT CUresult cuInit(unsigned flags) {
  FAKE_COUNT();
  log("cuInit " + std::to_string(flags));
#ifdef FAKE_NVIDIA_BROKEN
  return CUDA_ERROR_SYSTEM_DRIVER_MISMATCH;  // a driver whose kernel module disagrees
#else
  return CUDA_SUCCESS;
#endif
}
FAKE_EXPORT CUresult cuDriverGetVersion(int* v) {
  FAKE_COUNT();
  *v = 13000;
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuGetErrorName(CUresult r, const char** s) {
  FAKE_COUNT();
  switch (r) {
    case CUDA_SUCCESS:
      *s = "CUDA_SUCCESS";
      return CUDA_SUCCESS;
    case CUDA_ERROR_INVALID_VALUE:
      *s = "CUDA_ERROR_INVALID_VALUE";
      return CUDA_SUCCESS;
    case CUDA_ERROR_OUT_OF_MEMORY:
      *s = "CUDA_ERROR_OUT_OF_MEMORY";
      return CUDA_SUCCESS;
    case CUDA_ERROR_INVALID_CONTEXT:
      *s = "CUDA_ERROR_INVALID_CONTEXT";
      return CUDA_SUCCESS;
    case CUDA_ERROR_NOT_READY:
      *s = "CUDA_ERROR_NOT_READY";
      return CUDA_SUCCESS;
    case CUDA_ERROR_INVALID_HANDLE:
      *s = "CUDA_ERROR_INVALID_HANDLE";
      return CUDA_SUCCESS;
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
      *s = "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH";
      return CUDA_SUCCESS;
    case CUDA_ERROR_INVALID_IMAGE:
      *s = "CUDA_ERROR_INVALID_IMAGE";
      return CUDA_SUCCESS;
    case CUDA_ERROR_NOT_FOUND:
      *s = "CUDA_ERROR_NOT_FOUND";
      return CUDA_SUCCESS;
    default:
      *s = nullptr;
      return CUDA_ERROR_INVALID_VALUE;
  }
}
FAKE_EXPORT CUresult cuGetErrorString(CUresult r, const char** s) {
  FAKE_COUNT();
  return cuGetErrorName(r, s);
}

FAKE_EXPORT CUresult cuDeviceGetCount(int* n) {
  FAKE_COUNT();
  *n = kDevices;
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuDeviceGet(CUdevice* d, int ordinal) {
  FAKE_COUNT();
  if (ordinal < 0 || ordinal >= kDevices) return CUDA_ERROR_INVALID_DEVICE;
  *d = 100 + ordinal;
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuDeviceGetName(char* name, int len, CUdevice d) {
  FAKE_COUNT();
  if (!valid_device(d)) return CUDA_ERROR_INVALID_DEVICE;
  std::snprintf(name, static_cast<std::size_t>(len), "Fake NVIDIA H100 #%d", d);
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuDeviceGetUuid_v2(CUuuid* u, CUdevice d) {
  FAKE_COUNT();
  if (!valid_device(d)) return CUDA_ERROR_INVALID_DEVICE;
  std::memset(u->bytes, d, sizeof u->bytes);
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuDeviceTotalMem_v2(std::size_t* bytes, CUdevice d) {
  FAKE_COUNT();
  if (!valid_device(d)) return CUDA_ERROR_INVALID_DEVICE;
  *bytes = kTotal;
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuDeviceGetAttribute(int* v, CUdevice_attribute a, CUdevice d) {
  FAKE_COUNT();
  if (!valid_device(d)) return CUDA_ERROR_INVALID_DEVICE;
  switch (a) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      *v = 9;
      return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
      *v = 0;
      return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID:
      *v = 0;
      return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
      *v = 0x40 + (d - 100);
      return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID:
      *v = 0;
      return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      *v = 132;
      return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
      *v = 48 * 1024;
      return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
      *v = 227 * 1024;
      return CUDA_SUCCESS;
    // An H100's launch limits, for the launch checks of clients such as NVIDIA's runtime.
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y:
      *v = 1024;
      return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z:
      *v = 64;
      return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X:
      *v = 2147483647;
      return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y:
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z:
      *v = 65535;
      return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
      *v = 32;
      return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
      *v = 2048;
      return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR:
      *v = 32;
      return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK:
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR:
      *v = 65536;
      return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR:
      *v = 228 * 1024;
      return CUDA_SUCCESS;
    default:
      // NVIDIA answers every defined attribute (NVIDIA's static runtime asks for 111 of them
      // and gives up on any error): 0 here; INVALID_VALUE for values it does not define.
      if (a > 0 && a < CU_DEVICE_ATTRIBUTE_MAX) {
        *v = 0;
        return CUDA_SUCCESS;
      }
      return CUDA_ERROR_INVALID_VALUE;
  }
}
FAKE_EXPORT CUresult cuDeviceCanAccessPeer(int* can, CUdevice a, CUdevice b) {
  FAKE_COUNT();
  *can = valid_device(a) && valid_device(b) && a != b;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext* c, CUdevice d) {
  FAKE_COUNT();
  if (!valid_device(d)) return CUDA_ERROR_INVALID_DEVICE;
  log("cuDevicePrimaryCtxRetain " + std::to_string(d));
  std::lock_guard lock(g_mu);
  auto& p = g_primary[d - 100];
  p = {d - 100, g_primary_flags[d - 100], true};
  ++g_primary_refs[d - 100];
  *c = reinterpret_cast<CUcontext>(&p);
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) {
  FAKE_COUNT();
  if (!valid_device(d)) return CUDA_ERROR_INVALID_DEVICE;
  log("cuDevicePrimaryCtxRelease_v2 " + std::to_string(d));
  std::lock_guard lock(g_mu);
  if (g_primary_refs[d - 100] == 0) return CUDA_ERROR_INVALID_CONTEXT;
  --g_primary_refs[d - 100];
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice d, unsigned flags) {
  FAKE_COUNT();
  if (!valid_device(d)) return CUDA_ERROR_INVALID_DEVICE;
  log("cuDevicePrimaryCtxSetFlags_v2 " + std::to_string(d) + " " + std::to_string(flags));
  g_primary_flags[d - 100] = flags;
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice d, unsigned* flags, int* active) {
  FAKE_COUNT();
  if (!valid_device(d)) return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard lock(g_mu);
  *flags = g_primary_flags[d - 100];
  *active = g_primary_refs[d - 100] > 0;
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuCtxCreate_v4(CUcontext* c, CUctxCreateParams*, unsigned flags, CUdevice d) {
  FAKE_COUNT();
  if (!valid_device(d)) return CUDA_ERROR_INVALID_DEVICE;
  log("cuCtxCreate_v4 " + std::to_string(d) + " " + std::to_string(flags));
  *c = reinterpret_cast<CUcontext>(new FakeContext{d - 100, flags, false});
  t_stack.push_back(*c);
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuCtxDestroy_v2(CUcontext c) {
  FAKE_COUNT();
  log("cuCtxDestroy_v2");
  delete reinterpret_cast<FakeContext*>(c);
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuCtxSetCurrent(CUcontext c) {
  FAKE_COUNT();
  log("cuCtxSetCurrent");
  if (t_stack.empty()) {
    t_stack.push_back(c);
  } else {
    t_stack.back() = c;
  }
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuCtxPopCurrent_v2(CUcontext* c) {
  FAKE_COUNT();
  log("cuCtxPopCurrent_v2");
  if (t_stack.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  if (c) *c = t_stack.back();
  t_stack.pop_back();
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuCtxGetCurrent(CUcontext* c) {
  FAKE_COUNT();
  *c = t_stack.empty() ? nullptr : t_stack.back();
  return CUDA_SUCCESS;
}
static bool has_current() { return !t_stack.empty() && t_stack.back() != nullptr; }

FAKE_EXPORT CUresult cuMemGetInfo_v2(std::size_t* free, std::size_t* total) {
  FAKE_COUNT();
  if (!has_current()) return CUDA_ERROR_INVALID_CONTEXT;
  std::lock_guard lock(g_mu);
  *total = kTotal;
  *free = kTotal - used();
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* p, std::size_t bytes) {
  FAKE_COUNT();
  if (!has_current()) return CUDA_ERROR_INVALID_CONTEXT;
  std::lock_guard lock(g_mu);
  if (bytes > kTotal - used()) return CUDA_ERROR_OUT_OF_MEMORY;
  *p = reinterpret_cast<CUdeviceptr>(std::malloc(bytes));
  g_allocations[*p] = bytes;
  return CUDA_SUCCESS;
}
namespace {
bool release_pool_block(CUdeviceptr p);  // below, with the pools
}  // namespace
FAKE_EXPORT CUresult cuMemFree_v2(CUdeviceptr p) {
  FAKE_COUNT();
  std::lock_guard lock(g_mu);
  if (release_pool_block(p)) {  // NVIDIA's cuMemFree takes pool memory too
    log_locked("cuMemFree_v2 pool");
    return CUDA_SUCCESS;
  }
  if (g_allocations.erase(p) == 0) return CUDA_ERROR_INVALID_VALUE;
  std::free(ptr(p));
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuMemAllocManaged(CUdeviceptr* p, std::size_t bytes, unsigned flags) {
  FAKE_COUNT();
  log("cuMemAllocManaged " + std::to_string(flags));
  return cuMemAlloc_v2(p, bytes);
}
FAKE_EXPORT CUresult cuMemHostAlloc(void** p, std::size_t bytes, unsigned flags) {
  FAKE_COUNT();
  log("cuMemHostAlloc " + std::to_string(bytes) + " " + std::to_string(flags));
  *p = std::malloc(bytes);
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuMemFreeHost(void* p) {
  FAKE_COUNT();
  std::free(p);
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuMemHostRegister_v2(void*, std::size_t bytes, unsigned flags) {
  FAKE_COUNT();
  log("cuMemHostRegister_v2 " + std::to_string(bytes) + " " + std::to_string(flags));
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuMemHostUnregister(void*) {
  FAKE_COUNT();
  log("cuMemHostUnregister");
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr* d, void* p, unsigned) {
  FAKE_COUNT();
  *d = reinterpret_cast<CUdeviceptr>(p) + 0x1000;  // a different address, as NVIDIA may give
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuStreamCreateWithPriority(CUstream* s, unsigned flags, int priority) {
  FAKE_COUNT();
  if (!has_current()) return CUDA_ERROR_INVALID_CONTEXT;
  log("cuStreamCreateWithPriority " + std::to_string(flags) + " " + std::to_string(priority));
  *s = reinterpret_cast<CUstream>(new int(0));
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuStreamDestroy_v2(CUstream s) {
  FAKE_COUNT();
  delete reinterpret_cast<int*>(s);
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuStreamQuery(CUstream) {
  FAKE_COUNT();
  return g_busy ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuStreamSynchronize(CUstream) {
  FAKE_COUNT();
  log("cuStreamSynchronize");
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuStreamWaitEvent(CUstream, CUevent, unsigned flags) {
  FAKE_COUNT();
  log("cuStreamWaitEvent " + std::to_string(flags));
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuLaunchHostFunc(CUstream, CUhostFn fn, void* user) {
  FAKE_COUNT();
  log("cuLaunchHostFunc");
  fn(user);
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuEventCreate(CUevent* e, unsigned flags) {
  FAKE_COUNT();
  if (!has_current()) return CUDA_ERROR_INVALID_CONTEXT;
  log("cuEventCreate " + std::to_string(flags));
  *e = reinterpret_cast<CUevent>(new FakeEvent{flags, false, {}});
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuEventDestroy_v2(CUevent e) {
  FAKE_COUNT();
  delete reinterpret_cast<FakeEvent*>(e);
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuEventRecord(CUevent e, CUstream s) {
  FAKE_COUNT();
  if (!g_quiet) log(s == CU_STREAM_LEGACY ? "cuEventRecord legacy" : "cuEventRecord");
  auto* ev = reinterpret_cast<FakeEvent*>(e);
  ev->recorded = true;
  ev->at = std::chrono::steady_clock::now();
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuEventQuery(CUevent) {
  FAKE_COUNT();
  return g_busy ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuEventSynchronize(CUevent) {
  FAKE_COUNT();
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuEventElapsedTime_v2(float* ms, CUevent a, CUevent b) {
  FAKE_COUNT();
  auto* s = reinterpret_cast<FakeEvent*>(a);
  auto* e = reinterpret_cast<FakeEvent*>(b);
  if ((s->flags | e->flags) & CU_EVENT_DISABLE_TIMING) return CUDA_ERROR_INVALID_HANDLE;
  *ms = std::chrono::duration<float, std::milli>(e->at - s->at).count();
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, std::size_t n, CUstream) {
  FAKE_COUNT();
  log("cuMemcpyAsync " + std::to_string(n));
  std::memcpy(ptr(dst), ptr(src), n);
  return CUDA_SUCCESS;
}
namespace {
const char* type_name(CUmemorytype t) {
  return t == CU_MEMORYTYPE_HOST ? "host" : t == CU_MEMORYTYPE_UNIFIED ? "unified" : "other";
}
void copy_box(char* dst, std::size_t dpitch, std::size_t dslice, const char* src,
              std::size_t spitch, std::size_t sslice, std::size_t w, std::size_t h, std::size_t d) {
  for (std::size_t z = 0; z < d; ++z)
    for (std::size_t y = 0; y < h; ++y)
      std::memcpy(dst + z * dslice + y * dpitch, src + z * sslice + y * spitch, w);
}
CUresult copy_2d(const CUDA_MEMCPY2D* p, const char* fn) {
  log(std::string(fn) + " " + type_name(p->srcMemoryType) + "->" + type_name(p->dstMemoryType));
  const char* src = p->srcMemoryType == CU_MEMORYTYPE_HOST
                        ? static_cast<const char*>(p->srcHost)
                        : static_cast<const char*>(ptr(p->srcDevice));
  char* dst = p->dstMemoryType == CU_MEMORYTYPE_HOST ? static_cast<char*>(p->dstHost)
                                                     : static_cast<char*>(ptr(p->dstDevice));
  copy_box(dst + p->dstY * p->dstPitch + p->dstXInBytes, p->dstPitch, 0,
           src + p->srcY * p->srcPitch + p->srcXInBytes, p->srcPitch, 0, p->WidthInBytes, p->Height,
           1);
  return CUDA_SUCCESS;
}
CUresult copy_3d(const CUDA_MEMCPY3D* p, const char* fn) {
  log(std::string(fn) + " " + type_name(p->srcMemoryType) + "->" + type_name(p->dstMemoryType) +
      " heights " + std::to_string(p->srcHeight) + "," + std::to_string(p->dstHeight));
  const char* src = p->srcMemoryType == CU_MEMORYTYPE_HOST
                        ? static_cast<const char*>(p->srcHost)
                        : static_cast<const char*>(ptr(p->srcDevice));
  char* dst = p->dstMemoryType == CU_MEMORYTYPE_HOST ? static_cast<char*>(p->dstHost)
                                                     : static_cast<char*>(ptr(p->dstDevice));
  copy_box(dst, p->dstPitch, p->dstPitch * p->dstHeight, src, p->srcPitch,
           p->srcPitch * p->srcHeight, p->WidthInBytes, p->Height, p->Depth);
  return CUDA_SUCCESS;
}
}  // namespace
FAKE_EXPORT CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D* p, CUstream) {
  FAKE_COUNT();
  return copy_2d(p, "cuMemcpy2DAsync_v2");
}
FAKE_EXPORT CUresult cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D* p, CUstream) {
  FAKE_COUNT();
  return copy_3d(p, "cuMemcpy3DAsync_v2");
}
// NVIDIA's synchronous copies (on its legacy stream).
FAKE_EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, std::size_t n) {
  FAKE_COUNT();
  if (!has_current()) return CUDA_ERROR_INVALID_CONTEXT;
  log("cuMemcpyHtoD_v2 " + std::to_string(n));
  std::memcpy(ptr(dst), src, n);
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D* p) {
  FAKE_COUNT();
  if (!has_current()) return CUDA_ERROR_INVALID_CONTEXT;
  return copy_2d(p, "cuMemcpy2D_v2");
}
FAKE_EXPORT CUresult cuMemcpy3D_v2(const CUDA_MEMCPY3D* p) {
  FAKE_COUNT();
  if (!has_current()) return CUDA_ERROR_INVALID_CONTEXT;
  return copy_3d(p, "cuMemcpy3D_v2");
}

namespace {
template <class T>
CUresult fill(CUdeviceptr dst, std::size_t pitch, T value, std::size_t w, std::size_t h,
              const char* fn) {
  log(std::string(fn) + " " + std::to_string(w) + "x" + std::to_string(h) + " pitch " +
      std::to_string(pitch));
  for (std::size_t y = 0; y < h; ++y) {
    auto* row = reinterpret_cast<T*>(static_cast<char*>(ptr(dst)) + y * pitch);
    for (std::size_t x = 0; x < w; ++x) row[x] = value;
  }
  return CUDA_SUCCESS;
}
}  // namespace
FAKE_EXPORT CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, std::size_t n, CUstream) {
  FAKE_COUNT();
  return fill(d, n, v, n, 1, "cuMemsetD8Async");
}
FAKE_EXPORT CUresult cuMemsetD16Async(CUdeviceptr d, unsigned short v, std::size_t n, CUstream) {
  FAKE_COUNT();
  return fill(d, n * 2, v, n, 1, "cuMemsetD16Async");
}
FAKE_EXPORT CUresult cuMemsetD32Async(CUdeviceptr d, unsigned v, std::size_t n, CUstream) {
  FAKE_COUNT();
  return fill(d, n * 4, v, n, 1, "cuMemsetD32Async");
}
FAKE_EXPORT CUresult cuMemsetD2D8Async(CUdeviceptr d, std::size_t p, unsigned char v, std::size_t w,
                                       std::size_t h, CUstream) {
  FAKE_COUNT();
  return fill(d, p, v, w, h, "cuMemsetD2D8Async");
}
FAKE_EXPORT CUresult cuMemsetD2D16Async(CUdeviceptr d, std::size_t p, unsigned short v,
                                        std::size_t w, std::size_t h, CUstream) {
  FAKE_COUNT();
  return fill(d, p, v, w, h, "cuMemsetD2D16Async");
}
FAKE_EXPORT CUresult cuMemsetD2D32Async(CUdeviceptr d, std::size_t p, unsigned v, std::size_t w,
                                        std::size_t h, CUstream) {
  FAKE_COUNT();
  return fill(d, p, v, w, h, "cuMemsetD2D32Async");
}

// --- modules and launches ---
// A module image is text: "fake-module\n" then one line per symbol,
//   "function <name> <size>@<offset> ..." (its parameters) or "global <name> <bytes>".
// Launching "saxpy" (int n, float a, float* x, float* y) computes y = a*x + y.
namespace {
struct FakeFunction {
  std::string name;
  std::vector<std::pair<std::size_t, std::size_t>> params;  // offset, size
  int max_dynamic_shared = 48 * 1024;
};
struct FakeModule {
  std::vector<FakeFunction*> functions;
  std::map<std::string, std::vector<char>> globals;
  // Loaded from an NVIDIA fat binary: its PTX names the kernels and their parameters, its
  // cubin holds the variables and their initial values (both read on demand).
  std::string ptx;
  std::vector<std::byte> cubin;
  ~FakeModule() {
    for (auto* f : functions) delete f;
  }
};

// The next blank-separated token of PTX text from `at`, with '(' ')' ',' ';' as their own.
std::string ptx_token(const std::string& text, std::size_t& at) {
  while (at < text.size() && std::isspace(static_cast<unsigned char>(text[at]))) ++at;
  if (at >= text.size()) return {};
  if (std::strchr("(),;", text[at])) return std::string(1, text[at++]);
  const std::size_t begin = at;
  while (at < text.size() && !std::isspace(static_cast<unsigned char>(text[at])) &&
         !std::strchr("(),;", text[at]))
    ++at;
  return text.substr(begin, at - begin);
}

// The parameter list of `.entry name(...)` in `ptx`: each `.param [.align N] .type name[[M]]`.
// Enough PTX for a stand-in driver, not a PTX parser (the mock gets a real one).
FakeFunction* ptx_function(const std::string& ptx, const std::string& name) {
  for (std::size_t at = 0; at < ptx.size();) {
    if (ptx_token(ptx, at) != ".entry" || ptx_token(ptx, at) != name) continue;
    if (ptx_token(ptx, at) != "(") return nullptr;
    auto* f = new FakeFunction{name, {}};
    std::size_t offset = 0;
    for (std::string t = ptx_token(ptx, at); !t.empty() && t != ")"; t = ptx_token(ptx, at)) {
      if (t != ".param") continue;
      std::size_t align = 0, size = 0;
      std::string type = ptx_token(ptx, at);
      if (type == ".align") {
        align = std::stoul(ptx_token(ptx, at));
        type = ptx_token(ptx, at);
      }
      size = type.size() >= 3 ? std::stoul(type.substr(2)) / 8 : 0;
      const std::string param = ptx_token(ptx, at);
      if (const auto open = param.find('['); open != std::string::npos)
        size *= std::stoul(param.substr(open + 1));
      if (align == 0) align = size ? size : 1;
      offset = (offset + align - 1) / align * align;
      f->params.emplace_back(offset, size);
      offset += size;
    }
    return f;
  }
  return nullptr;
}
std::string dims(unsigned x, unsigned y, unsigned z) {
  return std::to_string(x) + "," + std::to_string(y) + "," + std::to_string(z);
}
void log_launch(const char* fn, const FakeFunction& k, unsigned gx, unsigned gy, unsigned gz,
                unsigned bx, unsigned by, unsigned bz, unsigned shared, void** params,
                void** extra) {
  std::string line = std::string(fn) + " " + k.name + " grid " + dims(gx, gy, gz) + " block " +
                     dims(bx, by, bz) + " shared " + std::to_string(shared) + " extra " +
                     (extra ? "yes" : "no") + " params";
  for (std::size_t i = 0; i < k.params.size(); ++i) {
    if (!params) break;
    const auto* bytes = static_cast<const unsigned char*>(params[i]);
    char hex[3];
    line += " ";
    for (std::size_t b = 0; b < k.params[i].second; ++b) {
      std::snprintf(hex, sizeof hex, "%02x", bytes[b]);
      line += hex;
    }
  }
  log(line);
}
CUresult launch(const char* fn, CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                unsigned by, unsigned bz, unsigned shared, void** params, void** extra) {
  auto* k = reinterpret_cast<FakeFunction*>(f);
  evict_caches();
  if (!g_quiet) log_launch(fn, *k, gx, gy, gz, bx, by, bz, shared, params, extra);
  if (static_cast<int>(shared) > k->max_dynamic_shared) return CUDA_ERROR_INVALID_VALUE;
  if (k->name == "saxpy" && params) {
    int n = 0;
    float a = 0;
    float* x = nullptr;
    float* y = nullptr;
    std::memcpy(&n, params[0], sizeof n);
    std::memcpy(&a, params[1], sizeof a);
    std::memcpy(&x, params[2], sizeof x);
    std::memcpy(&y, params[3], sizeof y);
    for (int i = 0; i < n; ++i) y[i] = a * x[i] + y[i];
  }
  return CUDA_SUCCESS;
}
}  // namespace

FAKE_EXPORT CUresult cuModuleLoadData(CUmodule* m, const void* image) {
  FAKE_COUNT();
  if (!has_current()) return CUDA_ERROR_INVALID_CONTEXT;
  if (const auto size = cudamux::fatbin::extent(image)) {
    // An NVIDIA fat binary, as nvcc-built programs register them: the newest PTX and a cubin.
    log("cuModuleLoadData fatbin " + std::to_string(*size) + " bytes");
    std::vector<cudamux::fatbin::Entry> entries;
    std::string why;
    if (!cudamux::fatbin::parse({static_cast<const std::byte*>(image), *size}, entries, why)) {
      log("cuModuleLoadData fatbin invalid: " + why);
      return CUDA_ERROR_INVALID_IMAGE;
    }
    auto mod = std::make_unique<FakeModule>();
    std::vector<std::byte> bytes;
    if (const auto pick = cudamux::fatbin::select_ptx(entries, 1000);
        pick && cudamux::fatbin::decompress(entries[*pick], bytes, why))
      mod->ptx.assign(reinterpret_cast<const char*>(bytes.data()));
    for (const auto& e : entries) {
      if (e.kind == cudamux::fatbin::Kind::elf && cudamux::fatbin::decompress(e, mod->cubin, why))
        break;
    }
    // Every kernel, as NVIDIA's driver enumerates them (cuModuleEnumerateFunctions).
    for (std::size_t at = 0; at < mod->ptx.size();) {
      if (ptx_token(mod->ptx, at) != ".entry") continue;
      std::size_t name_at = at;
      if (FakeFunction* k = ptx_function(mod->ptx, ptx_token(mod->ptx, name_at)))
        mod->functions.push_back(k);
    }
    *m = reinterpret_cast<CUmodule>(mod.release());
    return CUDA_SUCCESS;
  }
  const std::string text(static_cast<const char*>(image));
  log("cuModuleLoadData " + std::to_string(text.size()) + " bytes");
  if (!text.starts_with("fake-module\n")) return CUDA_ERROR_INVALID_IMAGE;
  auto mod = std::make_unique<FakeModule>();
  std::size_t pos = text.find('\n') + 1;
  while (pos < text.size()) {
    const std::size_t end = text.find('\n', pos);
    std::string l = text.substr(pos, end - pos);
    pos = end == std::string::npos ? text.size() : end + 1;
    char kind[16] = {}, name[64] = {};
    int used = 0;
    if (std::sscanf(l.c_str(), "%15s %63s%n", kind, name, &used) != 2) continue;
    if (std::string(kind) == "global") {
      mod->globals[name].resize(std::strtoul(l.c_str() + used, nullptr, 10));
      continue;
    }
    auto* f = new FakeFunction{name, {}};
    const char* p = l.c_str() + used;
    std::size_t size = 0, offset = 0;
    int n = 0;
    while (std::sscanf(p, " %zu@%zu%n", &size, &offset, &n) == 2) {
      f->params.emplace_back(offset, size);
      p += n;
    }
    mod->functions.push_back(f);
  }
  *m = reinterpret_cast<CUmodule>(mod.release());
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuModuleUnload(CUmodule m) {
  FAKE_COUNT();
  log("cuModuleUnload");
  delete reinterpret_cast<FakeModule*>(m);
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuModuleGetFunction(CUfunction* f, CUmodule m, const char* name) {
  FAKE_COUNT();
  log(std::string("cuModuleGetFunction ") + name);
  auto* mod = reinterpret_cast<FakeModule*>(m);
  for (auto* k : mod->functions) {
    if (k->name == name) {
      *f = reinterpret_cast<CUfunction>(k);
      return CUDA_SUCCESS;
    }
  }
  if (FakeFunction* k = mod->ptx.empty() ? nullptr : ptx_function(mod->ptx, name)) {
    mod->functions.push_back(k);
    *f = reinterpret_cast<CUfunction>(k);
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_NOT_FOUND;
}
FAKE_EXPORT CUresult cuModuleGetGlobal_v2(CUdeviceptr* p, std::size_t* bytes, CUmodule m,
                                          const char* name) {
  FAKE_COUNT();
  log(std::string("cuModuleGetGlobal_v2 ") + name);
  auto* mod = reinterpret_cast<FakeModule*>(m);
  auto& globals = mod->globals;
  auto it = globals.find(name);
  if (it == globals.end() && !mod->cubin.empty()) {
    std::string why;
    if (auto initial = cudamux::core::cubin_variable_bytes(mod->cubin, name, why)) {
      std::vector<char> storage(initial->size());
      std::memcpy(storage.data(), initial->data(), initial->size());
      it = globals.emplace(name, std::move(storage)).first;
    }
  }
  if (it == globals.end()) return CUDA_ERROR_NOT_FOUND;
  *p = reinterpret_cast<CUdeviceptr>(it->second.data());
  *bytes = it->second.size();
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuModuleGetFunctionCount(unsigned* count, CUmodule m) {
  FAKE_COUNT();
  *count = static_cast<unsigned>(reinterpret_cast<FakeModule*>(m)->functions.size());
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuModuleEnumerateFunctions(CUfunction* fs, unsigned n, CUmodule m) {
  FAKE_COUNT();
  log("cuModuleEnumerateFunctions " + std::to_string(n));
  const auto& all = reinterpret_cast<FakeModule*>(m)->functions;
  if (n > all.size()) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < n; ++i) fs[i] = reinterpret_cast<CUfunction>(all[i]);
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuFuncGetName(const char** name, CUfunction f) {
  FAKE_COUNT();
  *name = reinterpret_cast<FakeFunction*>(f)->name.c_str();
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuFuncGetParamInfo(CUfunction f, std::size_t i, std::size_t* offset,
                                        std::size_t* size) {
  FAKE_COUNT();
  if (f == nullptr) return CUDA_ERROR_INVALID_VALUE;  // as NVIDIA's driver 580 answers
  const auto& params = reinterpret_cast<FakeFunction*>(f)->params;
  if (i >= params.size()) return CUDA_ERROR_INVALID_VALUE;
  *offset = params[i].first;
  *size = params[i].second;
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuFuncGetAttribute(int* v, CUfunction_attribute a, CUfunction f) {
  FAKE_COUNT();
  log("cuFuncGetAttribute " + std::to_string(a));
  switch (a) {
    case CU_FUNC_ATTRIBUTE_NUM_REGS:
      *v = 42;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      *v = 1024;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
      *v = reinterpret_cast<FakeFunction*>(f)->max_dynamic_shared;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}
FAKE_EXPORT CUresult cuFuncSetAttribute(CUfunction f, CUfunction_attribute a, int v) {
  FAKE_COUNT();
  log("cuFuncSetAttribute " + std::to_string(a) + " " + std::to_string(v));
  if (a == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
    if (v > 227 * 1024) return CUDA_ERROR_INVALID_VALUE;
    reinterpret_cast<FakeFunction*>(f)->max_dynamic_shared = v;
  }
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                    unsigned bx, unsigned by, unsigned bz, unsigned shared,
                                    CUstream, void** params, void** extra) {
  FAKE_COUNT();
  return launch("cuLaunchKernel", f, gx, gy, gz, bx, by, bz, shared, params, extra);
}
// Logs the attributes (one line), then the launch as the others do.
FAKE_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig* c, CUfunction f, void** params,
                                      void** extra) {
  FAKE_COUNT();
  if (c == nullptr || (c->numAttrs > 0 && c->attrs == nullptr)) return CUDA_ERROR_INVALID_VALUE;
  std::string line = "cuLaunchKernelEx attrs";
  for (unsigned i = 0; i < c->numAttrs; ++i) {
    const CUlaunchAttribute& a = c->attrs[i];
    if (a.id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
      line += " cluster " + dims(a.value.clusterDim.x, a.value.clusterDim.y, a.value.clusterDim.z);
    } else if (a.id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE) {
      line += " cooperative " + std::to_string(a.value.cooperative);
    } else {
      line += " id " + std::to_string(static_cast<int>(a.id));
    }
  }
  line += c->hStream != nullptr ? " stream" : " legacy";
  if (!g_quiet) log(line);
  return launch("cuLaunchKernelEx", f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX,
                c->blockDimY, c->blockDimZ, c->sharedMemBytes, params, extra);
}
FAKE_EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                               unsigned bx, unsigned by, unsigned bz,
                                               unsigned shared, CUstream, void** params) {
  FAKE_COUNT();
  return launch("cuLaunchCooperativeKernel", f, gx, gy, gz, bx, by, bz, shared, params, nullptr);
}

// Occupancy: fixed, recognisable answers, so a test sees that NVIDIA's calculator answered
// and not the core's model; the arguments are logged.
FAKE_EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* n, CUfunction f,
                                                                          int block,
                                                                          std::size_t dyn,
                                                                          unsigned flags) {
  FAKE_COUNT();
  log("cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags " +
      reinterpret_cast<FakeFunction*>(f)->name + " " + std::to_string(block) + " " +
      std::to_string(dyn) + " " + std::to_string(flags));
  if (block > 1024) return CUDA_ERROR_INVALID_VALUE;
  *n = 7;
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuOccupancyAvailableDynamicSMemPerBlock(std::size_t* bytes, CUfunction,
                                                             int blocks, int block) {
  FAKE_COUNT();
  log("cuOccupancyAvailableDynamicSMemPerBlock " + std::to_string(blocks) + " " +
      std::to_string(block));
  *bytes = 12345;
  return CUDA_SUCCESS;
}
static std::string cluster_config(const CUlaunchConfig* c) {
  std::string line =
      "block " + std::to_string(c->blockDimX) + " shared " + std::to_string(c->sharedMemBytes);
  for (unsigned i = 0; i < c->numAttrs; ++i) {
    if (c->attrs[i].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
      line += " cluster " + std::to_string(c->attrs[i].value.clusterDim.x);
  }
  return line + (c->hStream != nullptr ? " stream" : " no stream");
}
FAKE_EXPORT CUresult cuOccupancyMaxActiveClusters(int* n, CUfunction, const CUlaunchConfig* c) {
  FAKE_COUNT();
  log("cuOccupancyMaxActiveClusters " + cluster_config(c));
  *n = 11;
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuOccupancyMaxPotentialClusterSize(int* n, CUfunction,
                                                        const CUlaunchConfig* c) {
  FAKE_COUNT();
  log("cuOccupancyMaxPotentialClusterSize " + cluster_config(c));
  *n = 16;
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuCtxGetLimit(std::size_t* v, CUlimit limit) {
  FAKE_COUNT();
  log("cuCtxGetLimit " + std::to_string(limit));
  if (!has_current()) return CUDA_ERROR_INVALID_CONTEXT;
  const auto& limits = reinterpret_cast<FakeContext*>(t_stack.back())->limits;
  const auto it = limits.find(limit);
  *v = it == limits.end() ? 1000 + static_cast<std::size_t>(limit) : it->second;
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuCtxSetLimit(CUlimit limit, std::size_t v) {
  FAKE_COUNT();
  log("cuCtxSetLimit " + std::to_string(limit) + " " + std::to_string(v));
  if (!has_current()) return CUDA_ERROR_INVALID_CONTEXT;
  if (limit == CU_LIMIT_STACK_SIZE && v > (std::size_t{1} << 20)) return CUDA_ERROR_INVALID_VALUE;
  reinterpret_cast<FakeContext*>(t_stack.back())->limits[limit] = v;
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuStreamSetAttribute(CUstream, CUlaunchAttributeID id,
                                          const CUlaunchAttributeValue* v) {
  FAKE_COUNT();
  if (v == nullptr) return CUDA_ERROR_INVALID_VALUE;
  log("cuStreamSetAttribute " + std::to_string(static_cast<int>(id)) + " first word " +
      std::to_string(v->pad[0]));
  if (id == CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY && v->syncPolicy > 4)
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

// --- stream-ordered pools (issue 16: the backend passes NVIDIA's pools through) ---
// A pool hands out malloc'ed blocks and keeps NVIDIA's counters; its handle is the object's
// address. Each device has a default pool; the host and managed memory theirs (13.0 form).
namespace {
struct FakePool {
  CUmemPoolProps props{};
  bool destroyed = false;
  cuuint64_t release_threshold = 0;
  int reuse[3] = {1, 1, 1};  // follow events, opportunistic, internal dependencies
  std::size_t used = 0, used_high = 0, reserved = 0, reserved_high = 0;
  std::map<int, CUmemAccess_flags> access;  // other devices' access
};
std::map<CUmemoryPool, std::unique_ptr<FakePool>> g_pools;
std::map<CUdeviceptr, CUmemoryPool> g_pool_blocks;
std::map<std::string, CUmemoryPool> g_default_pools;
std::map<CUdeviceptr, int> g_imports;  // imported pointers (the exporter's address) and count

FakePool* fake_pool(CUmemoryPool p) {
  auto it = g_pools.find(p);
  return it == g_pools.end() || it->second->destroyed ? nullptr : it->second.get();
}
CUmemoryPool new_pool(const CUmemPoolProps& props) {
  auto pool = std::make_unique<FakePool>();
  pool->props = props;
  auto h = reinterpret_cast<CUmemoryPool>(pool.get());
  g_pools[h] = std::move(pool);
  return h;
}
std::string location_text(const CUmemLocation& l) {
  return "location " + std::to_string(static_cast<int>(l.type)) + ":" + std::to_string(l.id);
}
// Gives a pool block back (g_mu held); false when `p` is none.
bool release_pool_block(CUdeviceptr p) {
  if (auto i = g_imports.find(p); i != g_imports.end()) {  // an import's free drops it only
    if (--i->second == 0) g_imports.erase(i);
    log_locked("import released");
    return true;
  }
  auto b = g_pool_blocks.find(p);
  if (b == g_pool_blocks.end()) return false;
  FakePool& pool = *g_pools.at(b->second);
  pool.used -= g_allocations.at(p);
  g_allocations.erase(p);
  g_pool_blocks.erase(b);
  std::free(ptr(p));
  return true;
}
}  // namespace

FAKE_EXPORT CUresult cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* props) {
  FAKE_COUNT();
  if (!pool || !props) return CUDA_ERROR_INVALID_VALUE;
  if (props->location.type == CU_MEM_LOCATION_TYPE_DEVICE && !valid_device(props->location.id))
    return CUDA_ERROR_INVALID_VALUE;
  log("cuMemPoolCreate " + location_text(props->location) + " type " +
      std::to_string(props->allocType) + " handles " + std::to_string(props->handleTypes) +
      " maxSize " + std::to_string(props->maxSize));
  std::lock_guard lock(g_mu);
  *pool = new_pool(*props);
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool) {
  FAKE_COUNT();
  std::lock_guard lock(g_mu);
  FakePool* p = fake_pool(pool);
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  p->destroyed = true;  // kept: blocks still out belong to it until freed
  log_locked("cuMemPoolDestroy");
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool* pool, CUdevice d) {
  FAKE_COUNT();
  if (!valid_device(d)) return CUDA_ERROR_INVALID_DEVICE;
  log("cuDeviceGetDefaultMemPool " + std::to_string(d));
  std::lock_guard lock(g_mu);
  CUmemoryPool& slot = g_default_pools["device " + std::to_string(d)];
  if (!slot) {
    CUmemPoolProps props{};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location = {CU_MEM_LOCATION_TYPE_DEVICE, d};
    slot = new_pool(props);
  }
  *pool = slot;
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuMemGetDefaultMemPool(CUmemoryPool* pool, CUmemLocation* l,
                                            CUmemAllocationType type) {
  FAKE_COUNT();
  if (!pool || !l) return CUDA_ERROR_INVALID_VALUE;
  log("cuMemGetDefaultMemPool " + location_text(*l) + " type " + std::to_string(type));
  std::lock_guard lock(g_mu);
  CUmemoryPool& slot = g_default_pools[location_text(*l) + " " + std::to_string(type)];
  if (!slot) {
    CUmemPoolProps props{};
    props.allocType = type;
    props.location = *l;
    slot = new_pool(props);
  }
  *pool = slot;
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr* out, std::size_t bytes, CUmemoryPool pool,
                                             CUstream) {
  FAKE_COUNT();
  if (!has_current()) return CUDA_ERROR_INVALID_CONTEXT;
  std::lock_guard lock(g_mu);
  FakePool* p = fake_pool(pool);
  if (!p || !out) return CUDA_ERROR_INVALID_VALUE;
  if (p->props.maxSize && p->used + bytes > p->props.maxSize) return CUDA_ERROR_OUT_OF_MEMORY;
  *out = reinterpret_cast<CUdeviceptr>(std::malloc(bytes));
  g_allocations[*out] = bytes;
  g_pool_blocks[*out] = pool;
  p->used += bytes;
  p->reserved = std::max(p->reserved, p->used);
  p->used_high = std::max(p->used_high, p->used);
  p->reserved_high = std::max(p->reserved_high, p->reserved);
  log_locked("cuMemAllocFromPoolAsync " + std::to_string(bytes) + " " +
             location_text(p->props.location));
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuMemFreeAsync(CUdeviceptr p, CUstream) {
  FAKE_COUNT();
  std::lock_guard lock(g_mu);
  if (!release_pool_block(p)) return CUDA_ERROR_INVALID_VALUE;
  log_locked("cuMemFreeAsync");
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute a, void* v) {
  FAKE_COUNT();
  std::lock_guard lock(g_mu);
  FakePool* p = fake_pool(pool);
  if (!p || !v) return CUDA_ERROR_INVALID_VALUE;
  const auto u64 = *static_cast<cuuint64_t*>(v);
  switch (a) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
      p->reuse[a - CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES] = *static_cast<int*>(v);
      break;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
      p->release_threshold = u64;
      break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
      if (u64 != 0) return CUDA_ERROR_INVALID_VALUE;
      p->reserved_high = p->reserved;
      break;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
      if (u64 != 0) return CUDA_ERROR_INVALID_VALUE;
      p->used_high = p->used;
      break;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  log_locked("cuMemPoolSetAttribute " + std::to_string(a));
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute a, void* v) {
  FAKE_COUNT();
  std::lock_guard lock(g_mu);
  FakePool* p = fake_pool(pool);
  if (!p || !v) return CUDA_ERROR_INVALID_VALUE;
  auto* u64 = static_cast<cuuint64_t*>(v);
  switch (a) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
      *static_cast<int*>(v) = p->reuse[a - CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES];
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
      *u64 = p->release_threshold;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
      *u64 = p->reserved;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
      *u64 = p->reserved_high;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
      *u64 = p->used;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
      *u64 = p->used_high;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}
FAKE_EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool pool, std::size_t keep) {
  FAKE_COUNT();
  std::lock_guard lock(g_mu);
  FakePool* p = fake_pool(pool);
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  p->reserved = std::max(p->used, std::min(p->reserved, keep));
  log_locked("cuMemPoolTrimTo " + std::to_string(keep));
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc* map,
                                        std::size_t count) {
  FAKE_COUNT();
  std::lock_guard lock(g_mu);
  FakePool* p = fake_pool(pool);
  if (!p || !map) return CUDA_ERROR_INVALID_VALUE;
  for (std::size_t i = 0; i < count; ++i)
    if (map[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE || !valid_device(map[i].location.id))
      return CUDA_ERROR_INVALID_DEVICE;
  for (std::size_t i = 0; i < count; ++i) {
    p->access[map[i].location.id] = map[i].flags;
    log_locked("cuMemPoolSetAccess " + location_text(map[i].location) + " flags " +
               std::to_string(map[i].flags));
  }
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuMemPoolGetAccess(CUmemAccess_flags* flags, CUmemoryPool pool,
                                        CUmemLocation* l) {
  FAKE_COUNT();
  std::lock_guard lock(g_mu);
  FakePool* p = fake_pool(pool);
  if (!p || !flags || !l || l->type != CU_MEM_LOCATION_TYPE_DEVICE || !valid_device(l->id))
    return CUDA_ERROR_INVALID_VALUE;
  auto it = p->access.find(l->id);
  *flags = it != p->access.end()           ? it->second
           : l->id == p->props.location.id ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE
                                           : CU_MEM_ACCESS_FLAGS_PROT_NONE;
  return CUDA_SUCCESS;
}
// Sharing within the process: the descriptor is a pipe holding the pool's handle; exported
// pointer data holds the pointer and a magic word.
FAKE_EXPORT CUresult cuMemPoolExportToShareableHandle(void* out, CUmemoryPool pool,
                                                      CUmemAllocationHandleType type,
                                                      unsigned long long) {
  FAKE_COUNT();
  std::lock_guard lock(g_mu);
  FakePool* p = fake_pool(pool);
  if (!p || !out || type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR ||
      !(p->props.handleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
    return CUDA_ERROR_INVALID_VALUE;
  int fds[2];
  if (::pipe(fds) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
  if (::write(fds[1], &pool, sizeof pool) != static_cast<ssize_t>(sizeof pool)) {
    ::close(fds[0]);
    ::close(fds[1]);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  ::close(fds[1]);
  *static_cast<int*>(out) = fds[0];
  log_locked("cuMemPoolExportToShareableHandle");
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuMemPoolImportFromShareableHandle(CUmemoryPool* pool, void* handle,
                                                        CUmemAllocationHandleType type,
                                                        unsigned long long) {
  FAKE_COUNT();
  const int fd = static_cast<int>(reinterpret_cast<std::intptr_t>(handle));
  CUmemoryPool origin = nullptr;
  if (!pool || type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR ||
      ::read(fd, &origin, sizeof origin) != static_cast<ssize_t>(sizeof origin))
    return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(g_mu);
  if (!fake_pool(origin)) return CUDA_ERROR_INVALID_VALUE;
  *pool = origin;
  log_locked("cuMemPoolImportFromShareableHandle");
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuMemPoolExportPointer(CUmemPoolPtrExportData* out, CUdeviceptr p) {
  FAKE_COUNT();
  std::lock_guard lock(g_mu);
  if (!out || !g_pool_blocks.contains(p)) return CUDA_ERROR_INVALID_VALUE;
  std::memset(out, 0, sizeof *out);
  const std::uint64_t magic = 0xfa4e;
  std::memcpy(out->reserved, &magic, sizeof magic);
  std::memcpy(out->reserved + 8, &p, sizeof p);
  log_locked("cuMemPoolExportPointer");
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuMemPoolImportPointer(CUdeviceptr* out, CUmemoryPool pool,
                                            CUmemPoolPtrExportData* data) {
  FAKE_COUNT();
  if (!has_current()) return CUDA_ERROR_INVALID_CONTEXT;
  std::uint64_t magic = 0;
  CUdeviceptr p = 0;
  if (!out || !data) return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(&magic, data->reserved, sizeof magic);
  std::memcpy(&p, data->reserved + 8, sizeof p);
  std::lock_guard lock(g_mu);
  auto b = g_pool_blocks.find(p);
  if (magic != 0xfa4e || b == g_pool_blocks.end() || b->second != pool)
    return CUDA_ERROR_INVALID_VALUE;
  *out = p;  // one address space: the exporter's block
  ++g_imports[p];
  log_locked("cuMemPoolImportPointer");
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr* base, std::size_t* size, CUdeviceptr p) {
  FAKE_COUNT();
  std::lock_guard lock(g_mu);
  for (const auto& [b, s] : g_allocations) {
    if (p >= b && p < b + s) {
      if (base) *base = b;
      if (size) *size = s;
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_NOT_FOUND;
}
