// A fake HIP runtime for testing the hip backend without an AMD GPU: every hip* entry
// point the plugin uses (plugins/hip/src/hip_functions.inc), backed by host memory, with
// real asynchronous streams (one worker thread each), and a log of every call with its
// arguments, pointers and handles named symbolically (dev1+0x10, stream2) so that logs
// are comparable across runs (golden files). Test hooks: fakehip_* below.
//
// Environment: FAKE_HIP_DEVICES (default 1; 0: hipInit returns hipErrorNoDevice),
// FAKE_HIP_MEMORY (bytes per device, default 1 GiB), FAKE_HIP_ARCH (gcnArchName,
// default "gfx90a:sramecc+:xnack-"), FAKE_HIP_LOG (also append every line to this file),
// FAKE_HIP_QUIET=1 (keep no log).
#define __HIP_PLATFORM_AMD__
#include <elf.h>
#include <fcntl.h>
#include <hip/hip_runtime_api.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <vector>

#define FAKE_API extern "C" __attribute__((visibility("default")))

namespace {

using Clock = std::chrono::steady_clock;

struct PageHints;  // managed memory hints, below
struct Alloc {
  std::size_t size;
  std::string kind;  // dev, host, managed, reg
  int id;
  int device;
  bool owned;  // memory the fake allocated (freed on release)
  // Device memory lives in its own memfd (MAP_SHARED) so that another process can open it
  // through hipIpcOpenMemHandle (/proc/<pid>/fd/<fd>); -1 for everything else.
  int fd = -1;
  std::size_t mapped = 0;  // bytes of the fd's mapping (munmap'ed on release)
  // Managed memory: the HSA SVM attributes of each page, once advised or prefetched (they go
  // with the allocation, so a later allocation at the same address starts clean).
  std::shared_ptr<std::vector<PageHints>> hints;
};

struct State {
  std::mutex mu;  // everything below
  std::vector<std::string> log;
  std::map<std::uintptr_t, Alloc> allocs;
  std::map<std::string, std::pair<int, int>> inject;  // function -> (error, remaining)
  std::map<const void*, std::string> handles;         // streams, events, modules, functions
  std::vector<std::size_t> used;                      // per device
  int next_id = 1;
  int devices = 1;
  std::size_t memory = std::size_t{1} << 30;
  std::string arch = "gfx90a:sramecc+:xnack-";
  FILE* file = nullptr;
  State() {
    if (const char* v = std::getenv("FAKE_HIP_DEVICES")) devices = std::atoi(v);
    if (const char* v = std::getenv("FAKE_HIP_MEMORY")) memory = std::strtoull(v, nullptr, 0);
    if (const char* v = std::getenv("FAKE_HIP_ARCH")) arch = v;
    if (const char* v = std::getenv("FAKE_HIP_LOG"); v && *v) file = std::fopen(v, "a");
    used.assign(static_cast<std::size_t>(devices > 0 ? devices : 0), 0);
  }
};
State& S() {
  static State* s = new State();  // never destroyed: stream workers may outlive main
  return *s;
}
thread_local int t_current = 0;

// Events complete on stream workers; one condition variable for all of them.
std::mutex g_event_mu;
std::condition_variable g_event_cv;

std::string name_of_locked(const void* p) {
  State& s = S();
  if (p == nullptr) return "null";
  if (auto h = s.handles.find(p); h != s.handles.end()) return h->second;
  const auto v = reinterpret_cast<std::uintptr_t>(p);
  auto it = s.allocs.upper_bound(v);
  if (it != s.allocs.begin()) {
    --it;
    if (v - it->first < std::max<std::size_t>(it->second.size, 1)) {
      char buf[64];
      const auto off = v - it->first;
      if (off == 0)
        std::snprintf(buf, sizeof buf, "%s%d", it->second.kind.c_str(), it->second.id);
      else
        std::snprintf(buf, sizeof buf, "%s%d+0x%zx", it->second.kind.c_str(), it->second.id,
                      static_cast<std::size_t>(off));
      return buf;
    }
  }
  return "hostmem";  // memory the fake does not know: the program's pageable memory
}
std::string N(const void* p) {
  std::lock_guard lock(S().mu);
  return name_of_locked(p);
}

const char* err_name(hipError_t e) {
  switch (e) {
    case hipSuccess:
      return "hipSuccess";
    case hipErrorInvalidValue:
      return "hipErrorInvalidValue";
    case hipErrorOutOfMemory:
      return "hipErrorOutOfMemory";
    case hipErrorNoDevice:
      return "hipErrorNoDevice";
    case hipErrorInvalidDevice:
      return "hipErrorInvalidDevice";
    case hipErrorInvalidImage:
      return "hipErrorInvalidImage";
    case hipErrorNotFound:
      return "hipErrorNotFound";
    case hipErrorNotReady:
      return "hipErrorNotReady";
    case hipErrorNotSupported:
      return "hipErrorNotSupported";
    case hipErrorInvalidHandle:
      return "hipErrorInvalidHandle";
    case hipErrorHostMemoryAlreadyRegistered:
      return "hipErrorHostMemoryAlreadyRegistered";
    case hipErrorHostMemoryNotRegistered:
      return "hipErrorHostMemoryNotRegistered";
    case hipErrorInvalidContext:
      return "hipErrorInvalidContext";
    case hipErrorInvalidDevicePointer:
      return "hipErrorInvalidDevicePointer";
    case hipErrorInvalidConfiguration:
      return "hipErrorInvalidConfiguration";
    default: {
      static thread_local char buf[32];
      std::snprintf(buf, sizeof buf, "hipError_t(%d)", static_cast<int>(e));
      return buf;
    }
  }
}

// FAKE_HIP_QUIET=1 (benchmarks): nothing is kept, so the log cannot grow without bound.
const bool g_quiet = [] {
  const char* v = std::getenv("FAKE_HIP_QUIET");
  return v != nullptr && *v == '1';
}();

void record(const std::string& line) {
  if (g_quiet) return;
  State& s = S();
  std::lock_guard lock(s.mu);
  s.log.push_back(line);
  if (s.file) {
    std::fprintf(s.file, "%s\n", line.c_str());
    std::fflush(s.file);
  }
}

std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* f, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, f);
  std::vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
}

// An injected failure for `fn`, if one is pending.
bool injected(const char* fn, hipError_t& e) {
  State& s = S();
  std::lock_guard lock(s.mu);
  auto it = s.inject.find(fn);
  if (it == s.inject.end() || it->second.second == 0) return false;
  e = static_cast<hipError_t>(it->second.first);
  if (it->second.second > 0) --it->second.second;
  return true;
}

// Logs "fn(args) -> result" and returns the result.
hipError_t done(const char* fn, const std::string& args, hipError_t e,
                const std::string& out = "") {
  if (g_quiet) return e;  // benchmarks: no log line built
  record(std::string(fn) + "(" + args + ") -> " + err_name(e) + (out.empty() ? "" : " " + out));
  return e;
}

#define FAKE_INJECT(fn, args)                                                  \
  do {                                                                         \
    hipError_t injected_error_;                                                \
    if (injected(fn, injected_error_)) return done(fn, args, injected_error_); \
  } while (0)

const char* kind_name(hipMemcpyKind k) {
  switch (k) {
    case hipMemcpyHostToHost:
      return "HostToHost";
    case hipMemcpyHostToDevice:
      return "HostToDevice";
    case hipMemcpyDeviceToHost:
      return "DeviceToHost";
    case hipMemcpyDeviceToDevice:
      return "DeviceToDevice";
    case hipMemcpyDefault:
      return "Default";
  }
  return "?";
}

// --- streams: a worker thread runs each stream's operations in order ---
struct Stream {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::function<void()>> ops;
  std::uint64_t submitted = 0, completed = 0;
  bool closing = false;
  int device = 0;

  void submit(std::function<void()> op) {
    {
      std::lock_guard lock(mu);
      ops.push_back(std::move(op));
      ++submitted;
    }
    cv.notify_all();
  }
  static void run(std::shared_ptr<Stream> self) {
    for (;;) {
      std::function<void()> op;
      {
        std::unique_lock lock(self->mu);
        self->cv.wait(lock, [&] { return !self->ops.empty() || self->closing; });
        if (self->ops.empty()) return;  // closing and drained
        op = std::move(self->ops.front());
        self->ops.pop_front();
      }
      op();
      {
        std::lock_guard lock(self->mu);
        ++self->completed;
      }
      self->cv.notify_all();
    }
  }
  void wait_idle() {
    std::unique_lock lock(mu);
    const auto target = submitted;
    cv.wait(lock, [&] { return completed >= target; });
  }
  bool idle() {
    std::lock_guard lock(mu);
    return completed == submitted;
  }
};
std::mutex g_streams_mu;
std::map<hipStream_t, std::shared_ptr<Stream>> g_streams;

std::shared_ptr<Stream> stream_of(hipStream_t s) {
  std::lock_guard lock(g_streams_mu);
  auto it = g_streams.find(s);
  return it == g_streams.end() ? nullptr : it->second;
}

// An interprocess event's counters, in a memfd both processes map (ROCm 5.2 keeps its IPC
// event's signals in a shared-memory file too, hip_event_ipc.cpp).
struct IpcEventShared {
  std::int32_t exporter_pid;  // set by hipIpcGetEventHandle (ROCm: owners_process_id)
  std::atomic<std::uint64_t> recorded;
  std::atomic<std::uint64_t> done;
};
struct Event {
  unsigned flags = 0;
  std::uint64_t recorded = 0;  // records submitted
  std::uint64_t done = 0;      // records completed
  Clock::time_point when{};
  IpcEventShared* shared = nullptr;  // interprocess events: the counters live there
  int shared_fd = -1;                // the exporter's memfd (-1 in an importer)
  Event() = default;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event() {
    if (shared != nullptr) ::munmap(shared, sizeof(IpcEventShared));
    if (shared_fd >= 0) ::close(shared_fd);
  }
  // Interprocess events are polled: the other process cannot notify this one's cv.
  [[nodiscard]] std::uint64_t submitted() const {
    return shared != nullptr ? shared->recorded.load() : recorded;
  }
  [[nodiscard]] std::uint64_t completed() const {
    return shared != nullptr ? shared->done.load() : done;
  }
};
// Waits (g_event_mu held) until `e` completed `target` records.
void wait_event_locked(std::unique_lock<std::mutex>& lock, const Event& e, std::uint64_t target);
std::mutex g_events_mu;
std::map<hipEvent_t, std::shared_ptr<Event>> g_events;
std::shared_ptr<Event> event_of(hipEvent_t e) {
  std::lock_guard lock(g_events_mu);
  auto it = g_events.find(e);
  return it == g_events.end() ? nullptr : it->second;
}

std::string new_handle(const void* p, const char* kind) {
  State& s = S();
  std::lock_guard lock(s.mu);
  std::string n = std::string(kind) + std::to_string(s.next_id++);
  s.handles[p] = n;
  return n;
}
void drop_handle(const void* p) {
  std::lock_guard lock(S().mu);
  S().handles.erase(p);
}

constexpr std::size_t kMaxHostBytes = std::size_t{1} << 46;  // 64 TiB: more than any host

bool valid_device(int d) { return d >= 0 && d < S().devices; }

void add_alloc(void* p, std::size_t size, const char* kind, bool owned, std::string& name) {
  State& s = S();
  std::lock_guard lock(s.mu);
  const int dev = t_current;
  s.allocs[reinterpret_cast<std::uintptr_t>(p)] = Alloc{size, kind, s.next_id, dev, owned};
  name = std::string(kind) + std::to_string(s.next_id++);
}

// Finds the allocation starting at p; removes it when its kind is one of `kinds`.
hipError_t release(void* p, std::initializer_list<const char*> kinds, hipError_t not_found) {
  State& s = S();
  Alloc a;
  {
    std::lock_guard lock(s.mu);
    auto it = s.allocs.find(reinterpret_cast<std::uintptr_t>(p));
    if (it == s.allocs.end()) return not_found;
    bool match = false;
    for (const char* k : kinds) match = match || it->second.kind == k;
    if (!match) return not_found;
    a = it->second;
    if (a.kind == "dev" || a.kind == "managed")
      s.used[static_cast<std::size_t>(a.device)] -= a.size;
    s.allocs.erase(it);
  }
  if (a.fd >= 0) {
    ::munmap(p, a.mapped);
    ::close(a.fd);
  } else if (a.owned) {
    std::free(p);
  }
  return hipSuccess;
}

std::size_t elf_size(const void* image) {
  Elf64_Ehdr h;
  std::memcpy(&h, image, sizeof h);
  return std::max<std::size_t>(h.e_shoff + std::size_t{h.e_shnum} * h.e_shentsize, sizeof h);
}

struct Module {
  std::vector<char> image;
  std::map<std::string, std::vector<char>> globals;
};
struct Function {
  std::string name;
};

bool image_has_symbol(const Module& m, const char* name) {
  const std::string needle = std::string(1, '\0') + name + std::string(1, '\0');
  return std::search(m.image.begin(), m.image.end(), needle.begin(), needle.end()) != m.image.end();
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Test hooks
FAKE_API const char* fakehip_log() {
  static std::string joined;
  std::lock_guard lock(S().mu);
  joined.clear();
  for (const auto& l : S().log) joined += l + "\n";
  return joined.c_str();
}
FAKE_API void fakehip_log_clear() {
  std::lock_guard lock(S().mu);
  S().log.clear();
}
// The next `count` calls of `fn` (all of them if count < 0) return `error` and do nothing.
FAKE_API void fakehip_inject(const char* fn, int error, int count) {
  std::lock_guard lock(S().mu);
  S().inject[fn] = {error, count};
}

// ---------------------------------------------------------------------------------------
// Initialisation and devices
FAKE_API hipError_t hipInit(unsigned flags) {
  FAKE_INJECT("hipInit", fmt("%u", flags));
  return done("hipInit", fmt("%u", flags), S().devices > 0 ? hipSuccess : hipErrorNoDevice);
}
FAKE_API hipError_t hipDriverGetVersion(int* v) {
  *v = 50221153;
  return done("hipDriverGetVersion", "", hipSuccess, fmt("%d", *v));
}
FAKE_API hipError_t hipRuntimeGetVersion(int* v) {
  *v = 50221153;
  return done("hipRuntimeGetVersion", "", hipSuccess, fmt("%d", *v));
}
FAKE_API hipError_t hipGetDeviceCount(int* n) {
  FAKE_INJECT("hipGetDeviceCount", "");
  *n = S().devices;
  return done("hipGetDeviceCount", "", S().devices > 0 ? hipSuccess : hipErrorNoDevice,
              fmt("%d", *n));
}
FAKE_API hipError_t hipSetDevice(int d) {
  FAKE_INJECT("hipSetDevice", fmt("%d", d));
  if (!valid_device(d)) return done("hipSetDevice", fmt("%d", d), hipErrorInvalidDevice);
  t_current = d;
  return done("hipSetDevice", fmt("%d", d), hipSuccess);
}
FAKE_API hipError_t hipDeviceGet(hipDevice_t* dev, int ordinal) {
  if (!valid_device(ordinal))
    return done("hipDeviceGet", fmt("%d", ordinal), hipErrorInvalidDevice);
  *dev = ordinal;
  return done("hipDeviceGet", fmt("%d", ordinal), hipSuccess);
}
FAKE_API hipError_t hipDeviceGetName(char* name, int len, hipDevice_t dev) {
  if (!valid_device(dev) || len <= 0)
    return done("hipDeviceGetName", fmt("%d", dev), hipErrorInvalidValue);
  std::snprintf(name, static_cast<std::size_t>(len),
                "Fake AMD Instinct MI210 #%d (cudamux fake HIP)", dev);
  return done("hipDeviceGetName", fmt("%d", dev), hipSuccess);
}
FAKE_API hipError_t hipGetDeviceProperties(hipDeviceProp_t* p, int dev) {
  if (!valid_device(dev))
    return done("hipGetDeviceProperties", fmt("%d", dev), hipErrorInvalidDevice);
  *p = hipDeviceProp_t{};
  std::snprintf(p->name, sizeof p->name, "Fake AMD Instinct MI210 #%d (cudamux fake HIP)", dev);
  std::snprintf(p->gcnArchName, sizeof p->gcnArchName, "%s", S().arch.c_str());
  p->totalGlobalMem = S().memory;
  p->warpSize = 64;
  return done("hipGetDeviceProperties", fmt("%d", dev), hipSuccess);
}
FAKE_API hipError_t hipDeviceGetUuid(hipUUID* uuid, hipDevice_t dev) {
  if (!valid_device(dev)) return done("hipDeviceGetUuid", fmt("%d", dev), hipErrorInvalidDevice);
  for (int i = 0; i < 16; ++i) uuid->bytes[i] = static_cast<char>(0xa0 + i + 16 * dev);
  return done("hipDeviceGetUuid", fmt("%d", dev), hipSuccess);
}
FAKE_API hipError_t hipDeviceTotalMem(size_t* bytes, hipDevice_t dev) {
  if (!valid_device(dev)) return done("hipDeviceTotalMem", fmt("%d", dev), hipErrorInvalidDevice);
  *bytes = S().memory;
  return done("hipDeviceTotalMem", fmt("%d", dev), hipSuccess, fmt("%zu", *bytes));
}
FAKE_API hipError_t hipDeviceGetAttribute(int* value, hipDeviceAttribute_t attr, int dev) {
  const std::string args = g_quiet ? std::string() : fmt("%d, %d", static_cast<int>(attr), dev);
  FAKE_INJECT("hipDeviceGetAttribute", args);
  if (!valid_device(dev)) return done("hipDeviceGetAttribute", args, hipErrorInvalidDevice);
  // An MI210-like device. What HIP on AMD cannot answer ("Cuda only") is hipErrorInvalidValue.
  static const std::map<hipDeviceAttribute_t, int> kValues = {
      {hipDeviceAttributeMaxThreadsPerBlock, 1024},
      {hipDeviceAttributeMaxBlockDimX, 1024},
      {hipDeviceAttributeMaxBlockDimY, 1024},
      {hipDeviceAttributeMaxBlockDimZ, 1024},
      {hipDeviceAttributeMaxGridDimX, 2147483647},
      {hipDeviceAttributeMaxGridDimY, 65536},
      {hipDeviceAttributeMaxGridDimZ, 65536},
      {hipDeviceAttributeMaxSharedMemoryPerBlock, 65536},
      {hipDeviceAttributeTotalConstantMemory, 2147483647},
      {hipDeviceAttributeWarpSize, 64},
      {hipDeviceAttributeMaxRegistersPerBlock, 65536},
      {hipDeviceAttributeClockRate, 1700000},
      {hipDeviceAttributeMultiprocessorCount, 104},
      {hipDeviceAttributeIntegrated, 0},
      {hipDeviceAttributeCanMapHostMemory, 1},
      {hipDeviceAttributeComputeMode, 0},
      {hipDeviceAttributeConcurrentKernels, 1},
      {hipDeviceAttributeEccEnabled, 1},
      {hipDeviceAttributePciBusId, 3},
      {hipDeviceAttributePciDeviceId, 0},
      {hipDeviceAttributePciDomainID, 0},
      {hipDeviceAttributeMemoryClockRate, 1600000},
      {hipDeviceAttributeMemoryBusWidth, 4096},
      {hipDeviceAttributeL2CacheSize, 8388608},
      {hipDeviceAttributeMaxThreadsPerMultiProcessor, 2048},
      {hipDeviceAttributeComputeCapabilityMajor, 9},
      {hipDeviceAttributeComputeCapabilityMinor, 0},
      {hipDeviceAttributeManagedMemory, 1},
      {hipDeviceAttributeConcurrentManagedAccess, 1},
      {hipDeviceAttributeCooperativeLaunch, 1},
      {hipDeviceAttributeMaxSharedMemoryPerMultiprocessor, 65536},
      {hipDeviceAttributeMaxRegistersPerMultiprocessor, 131072},
      {hipDeviceAttributeKernelExecTimeout, 0},
      {hipDeviceAttributeMaxPitch, 2147483647},
      {hipDeviceAttributeTextureAlignment, 256},
      {hipDeviceAttributeIsMultiGpuBoard, 0},
      {hipDeviceAttributeMaxTexture1DWidth, 16384},
      {hipDeviceAttributePageableMemoryAccess, 0},
      {hipDeviceAttributeDirectManagedMemAccessFromHost, 0},
      // What ROCm 5.2 answers from its device properties for CUDA-compatible attributes.
      {hipDeviceAttributeAsyncEngineCount, 2},
      {hipDeviceAttributeDeviceOverlap, 1},
      {hipDeviceAttributeUnifiedAddressing, 1},
      {hipDeviceAttributeTexturePitchAlignment, 256},
      {hipDeviceAttributeSurfaceAlignment, 256},
      {hipDeviceAttributeSharedMemPerBlockOptin, 65536},
      {hipDeviceAttributeMaxBlocksPerMultiProcessor, 32},
      {hipDeviceAttributeStreamPrioritiesSupported, 1},
      {hipDeviceAttributeGlobalL1CacheSupported, 1},
      {hipDeviceAttributeLocalL1CacheSupported, 1},
      {hipDeviceAttributeHostNativeAtomicSupported, 1},
      {hipDeviceAttributeSingleToDoublePrecisionPerfRatio, 1},
      {hipDeviceAttributeComputePreemptionSupported, 0},
      {hipDeviceAttributeCanUseHostPointerForRegisteredMem, 0},
      {hipDeviceAttributeCooperativeMultiDeviceLaunch, 1},
      {hipDeviceAttributeTccDriver, 0},
      {hipDeviceAttributeMultiGpuBoardGroupID, 0},
      {hipDeviceAttributePageableMemoryAccessUsesHostPageTables, 0},
      {hipDeviceAttributePersistingL2CacheMaxSize, 0},
      {hipDeviceAttributeAccessPolicyMaxWindowSize, 0},
      {hipDeviceAttributeReservedSharedMemPerBlock, 0},
      {hipDeviceAttributeMemoryPoolsSupported, 0},
      {hipDeviceAttributeMaxTexture2DWidth, 16384},
      {hipDeviceAttributeMaxTexture2DHeight, 16384},
      {hipDeviceAttributeMaxTexture3DWidth, 16384},
      {hipDeviceAttributeMaxTexture3DHeight, 16384},
      {hipDeviceAttributeMaxTexture3DDepth, 8192},
      {hipDeviceAttributeMaxTexture1DLinear, 134217728},
      {hipDeviceAttributeMaxTexture1DMipmap, 16384},
      {hipDeviceAttributeMaxTextureCubemap, 16384},
      {hipDeviceAttributeMaxSurface1D, 16384},
      {hipDeviceAttributeMaxSurfaceCubemap, 16384},
      // ROCm 5.2 answers the device's aqlBarrierValue_ (1 on gfx90a).
      {hipDeviceAttributeCanUseStreamWaitValue, 1},
  };
  auto it = kValues.find(attr);
  if (it == kValues.end()) return done("hipDeviceGetAttribute", args, hipErrorInvalidValue);
  *value = it->second + (attr == hipDeviceAttributePciBusId ? dev : 0);
  return done("hipDeviceGetAttribute", args, hipSuccess, fmt("%d", *value));
}
FAKE_API hipError_t hipDeviceGetStreamPriorityRange(int* least, int* greatest) {
  *least = 0;
  *greatest = -2;
  return done("hipDeviceGetStreamPriorityRange", "", hipSuccess, "0 -2");
}
FAKE_API hipError_t hipDeviceCanAccessPeer(int* can, int dev, int peer) {
  if (!valid_device(dev) || !valid_device(peer))
    return done("hipDeviceCanAccessPeer", fmt("%d, %d", dev, peer), hipErrorInvalidDevice);
  *can = dev != peer;
  return done("hipDeviceCanAccessPeer", fmt("%d, %d", dev, peer), hipSuccess, fmt("%d", *can));
}
FAKE_API hipError_t hipMemGetInfo(size_t* free_bytes, size_t* total) {
  {
    std::lock_guard lock(S().mu);
    *total = S().memory;
    *free_bytes = S().memory - S().used[static_cast<std::size_t>(t_current)];
  }
  return done("hipMemGetInfo", "", hipSuccess);
}

// ---------------------------------------------------------------------------------------
// Memory
static hipError_t device_alloc(const char* fn, void** out, size_t size, const char* kind,
                               const std::string& args) {
  State& s = S();
  bool fits = false;
  {
    std::lock_guard lock(s.mu);
    auto& used = s.used[static_cast<std::size_t>(t_current)];
    fits = size <= s.memory - used;
    if (fits) used += size;
  }
  if (!fits) return done(fn, args, hipErrorOutOfMemory);
  const bool shareable = std::strcmp(kind, "dev") == 0;
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t mapped = (std::max<size_t>(size, 1) + page - 1) / page * page;
  int fd = -1;
  void* p = nullptr;
  if (shareable) {
    fd = ::memfd_create("fakehip-device", MFD_CLOEXEC);
    if (fd >= 0 && ::ftruncate(fd, static_cast<off_t>(mapped)) == 0) {
      p = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (p == MAP_FAILED) p = nullptr;
    }
    if (p == nullptr && fd >= 0) ::close(fd);
  } else {
    p = std::aligned_alloc(256, (std::max<size_t>(size, 1) + 255) / 256 * 256);
  }
  if (p == nullptr) {
    std::lock_guard lock(s.mu);
    s.used[static_cast<std::size_t>(t_current)] -= size;
    return done(fn, args, hipErrorOutOfMemory);
  }
  std::string name;
  add_alloc(p, size, kind, true, name);
  if (shareable) {
    std::lock_guard lock(s.mu);
    auto& a = s.allocs[reinterpret_cast<std::uintptr_t>(p)];
    a.fd = fd;
    a.mapped = mapped;
  }
  *out = p;
  return done(fn, args, hipSuccess, name);
}
FAKE_API hipError_t hipMalloc(void** out, size_t size) {
  FAKE_INJECT("hipMalloc", fmt("%zu", size));
  return device_alloc("hipMalloc", out, size, "dev", fmt("%zu", size));
}
FAKE_API hipError_t hipMallocManaged(void** out, size_t size, unsigned flags) {
  const std::string args = fmt("%zu, 0x%x", size, flags);
  FAKE_INJECT("hipMallocManaged", args);
  if (flags != hipMemAttachGlobal && flags != hipMemAttachHost)
    return done("hipMallocManaged", args, hipErrorInvalidValue);
  return device_alloc("hipMallocManaged", out, size, "managed", args);
}
FAKE_API hipError_t hipFree(void* p) {
  const std::string args = N(p);
  if (p == nullptr) return done("hipFree", args, hipSuccess);
  return done("hipFree", args, release(p, {"dev", "managed"}, hipErrorInvalidValue));
}
FAKE_API hipError_t hipHostMalloc(void** out, size_t size, unsigned flags) {
  const std::string args = fmt("%zu, 0x%x", size, flags);
  FAKE_INJECT("hipHostMalloc", args);
  if (size > kMaxHostBytes) return done("hipHostMalloc", args, hipErrorOutOfMemory);
  void* p = std::aligned_alloc(256, (std::max<size_t>(size, 1) + 255) / 256 * 256);
  if (p == nullptr) return done("hipHostMalloc", args, hipErrorOutOfMemory);
  std::string name;
  add_alloc(p, size, "host", true, name);
  *out = p;
  return done("hipHostMalloc", args, hipSuccess, name);
}
FAKE_API hipError_t hipHostFree(void* p) {
  const std::string args = N(p);
  if (p == nullptr) return done("hipHostFree", args, hipSuccess);
  return done("hipHostFree", args, release(p, {"host"}, hipErrorInvalidValue));
}
FAKE_API hipError_t hipHostRegister(void* p, size_t size, unsigned flags) {
  const std::string args = fmt("hostmem, %zu, 0x%x", size, flags);
  FAKE_INJECT("hipHostRegister", args);
  // Like a real runtime, the fake cannot pin more than the machine could have.
  if (p == nullptr || size == 0 || size > kMaxHostBytes ||
      reinterpret_cast<std::uintptr_t>(p) + size < reinterpret_cast<std::uintptr_t>(p))
    return done("hipHostRegister", args, hipErrorInvalidValue);
  if (N(p) != "hostmem") return done("hipHostRegister", args, hipErrorHostMemoryAlreadyRegistered);
  std::string name;
  add_alloc(p, size, "reg", false, name);
  return done("hipHostRegister", args, hipSuccess, name);
}
FAKE_API hipError_t hipHostUnregister(void* p) {
  const std::string args = N(p);
  return done("hipHostUnregister", args, release(p, {"reg"}, hipErrorHostMemoryNotRegistered));
}
FAKE_API hipError_t hipHostGetDevicePointer(void** dev, void* host, unsigned flags) {
  const std::string name = N(host);
  const std::string args = fmt("%s, 0x%x", name.c_str(), flags);
  if (!name.starts_with("host") || name == "hostmem") {
    if (!name.starts_with("reg"))
      return done("hipHostGetDevicePointer", args, hipErrorInvalidValue);
  }
  *dev = host;  // one address space
  return done("hipHostGetDevicePointer", args, hipSuccess);
}

// ---------------------------------------------------------------------------------------
// Streams and events
FAKE_API hipError_t hipStreamCreateWithPriority(hipStream_t* out, unsigned flags, int priority) {
  const std::string args = fmt("0x%x, %d", flags, priority);
  FAKE_INJECT("hipStreamCreateWithPriority", args);
  auto s = std::make_shared<Stream>();
  s->device = t_current;
  auto* handle = reinterpret_cast<hipStream_t>(new char);  // a unique address
  {
    std::lock_guard lock(g_streams_mu);
    g_streams[handle] = s;
  }
  std::thread(Stream::run, s).detach();
  *out = handle;
  return done("hipStreamCreateWithPriority", args, hipSuccess, new_handle(handle, "stream"));
}
FAKE_API hipError_t hipStreamDestroy(hipStream_t h) {
  const std::string args = N(h);
  std::shared_ptr<Stream> s;
  {
    std::lock_guard lock(g_streams_mu);
    auto it = g_streams.find(h);
    if (it == g_streams.end()) return done("hipStreamDestroy", args, hipErrorInvalidHandle);
    s = it->second;
    g_streams.erase(it);
  }
  {
    std::lock_guard lock(s->mu);
    s->closing = true;  // the worker finishes pending work, then exits
  }
  s->cv.notify_all();
  drop_handle(h);
  delete reinterpret_cast<char*>(h);
  return done("hipStreamDestroy", args, hipSuccess);
}
FAKE_API hipError_t hipStreamQuery(hipStream_t h) {
  auto s = stream_of(h);
  if (g_quiet)
    return !s ? hipErrorInvalidHandle : s->idle() ? hipSuccess : hipErrorNotReady;  // benchmarks
  if (!s) return done("hipStreamQuery", N(h), hipErrorInvalidHandle);
  return done("hipStreamQuery", N(h), s->idle() ? hipSuccess : hipErrorNotReady);
}
FAKE_API hipError_t hipStreamSynchronize(hipStream_t h) {
  auto s = stream_of(h);
  if (!s) return done("hipStreamSynchronize", N(h), hipErrorInvalidHandle);
  FAKE_INJECT("hipStreamSynchronize", N(h));
  s->wait_idle();
  return done("hipStreamSynchronize", N(h), hipSuccess);
}
FAKE_API hipError_t hipStreamAddCallback(hipStream_t h, hipStreamCallback_t cb, void* user,
                                         unsigned flags) {
  const std::string args = fmt("%s, fn, user, %u", N(h).c_str(), flags);
  auto s = stream_of(h);
  if (!s || cb == nullptr || flags != 0)
    return done("hipStreamAddCallback", args, hipErrorInvalidValue);
  s->submit([h, cb, user] { cb(h, hipSuccess, user); });
  return done("hipStreamAddCallback", args, hipSuccess);
}
FAKE_API hipError_t hipEventCreateWithFlags(hipEvent_t* out, unsigned flags) {
  const std::string args = fmt("0x%x", flags);
  FAKE_INJECT("hipEventCreateWithFlags", args);
  if (flags & ~unsigned{hipEventBlockingSync | hipEventDisableTiming | hipEventInterprocess})
    return done("hipEventCreateWithFlags", args, hipErrorInvalidValue);
  if ((flags & hipEventInterprocess) && !(flags & hipEventDisableTiming))
    return done("hipEventCreateWithFlags", args, hipErrorInvalidValue);
  auto e = std::make_shared<Event>();
  e->flags = flags;
  if (flags & hipEventInterprocess) {
    e->shared_fd = ::memfd_create("fakehip-ipc-event", MFD_CLOEXEC);
    void* m = MAP_FAILED;
    if (e->shared_fd >= 0 && ::ftruncate(e->shared_fd, sizeof(IpcEventShared)) == 0)
      m = ::mmap(nullptr, sizeof(IpcEventShared), PROT_READ | PROT_WRITE, MAP_SHARED, e->shared_fd,
                 0);
    if (m == MAP_FAILED) return done("hipEventCreateWithFlags", args, hipErrorOutOfMemory);
    e->shared = new (m) IpcEventShared{0, {0}, {0}};
  }
  auto* handle = reinterpret_cast<hipEvent_t>(new char);
  {
    std::lock_guard lock(g_events_mu);
    g_events[handle] = e;
  }
  *out = handle;
  return done("hipEventCreateWithFlags", args, hipSuccess, new_handle(handle, "event"));
}
FAKE_API hipError_t hipEventDestroy(hipEvent_t h) {
  const std::string args = N(h);
  {
    std::lock_guard lock(g_events_mu);
    if (g_events.erase(h) == 0) return done("hipEventDestroy", args, hipErrorInvalidHandle);
  }
  drop_handle(h);
  delete reinterpret_cast<char*>(h);
  return done("hipEventDestroy", args, hipSuccess);
}
FAKE_API hipError_t hipEventRecord(hipEvent_t h, hipStream_t sh) {
  const std::string args = N(h) + ", " + N(sh);
  auto e = event_of(h);
  auto s = stream_of(sh);
  if (!e || !s) return done("hipEventRecord", args, hipErrorInvalidHandle);
  std::uint64_t gen;
  {
    std::lock_guard lock(g_event_mu);
    gen = e->shared != nullptr ? ++e->shared->recorded : ++e->recorded;
  }
  s->submit([e, gen] {
    {
      std::lock_guard lock(g_event_mu);
      if (e->shared != nullptr) {
        std::uint64_t seen = e->shared->done.load();
        while (seen < gen && !e->shared->done.compare_exchange_weak(seen, gen)) {
        }
      } else {
        e->done = std::max(e->done, gen);
      }
      e->when = Clock::now();
    }
    g_event_cv.notify_all();
  });
  return done("hipEventRecord", args, hipSuccess);
}
FAKE_API hipError_t hipEventQuery(hipEvent_t h) {
  auto e = event_of(h);
  if (g_quiet) {  // benchmarks: no formatting
    if (!e) return hipErrorInvalidHandle;
    std::lock_guard lock(g_event_mu);
    return e->completed() >= e->submitted() ? hipSuccess : hipErrorNotReady;
  }
  if (!e) return done("hipEventQuery", N(h), hipErrorInvalidHandle);
  std::lock_guard lock(g_event_mu);
  return done("hipEventQuery", N(h),
              e->completed() >= e->submitted() ? hipSuccess : hipErrorNotReady);
}
FAKE_API hipError_t hipEventSynchronize(hipEvent_t h) {
  auto e = event_of(h);
  if (!e) return done("hipEventSynchronize", N(h), hipErrorInvalidHandle);
  std::unique_lock lock(g_event_mu);
  wait_event_locked(lock, *e, e->submitted());
  lock.unlock();
  return done("hipEventSynchronize", N(h), hipSuccess);
}
FAKE_API hipError_t hipEventElapsedTime(float* ms, hipEvent_t start, hipEvent_t stop) {
  const std::string args = N(start) + ", " + N(stop);
  auto a = event_of(start), b = event_of(stop);
  if (!a || !b) return done("hipEventElapsedTime", args, hipErrorInvalidHandle);
  std::lock_guard lock(g_event_mu);
  if ((a->flags | b->flags) & hipEventDisableTiming)
    return done("hipEventElapsedTime", args, hipErrorInvalidHandle);
  if (a->done == 0 || b->done == 0 || a->done != a->recorded || b->done != b->recorded)
    return done("hipEventElapsedTime", args, hipErrorNotReady);
  *ms = std::chrono::duration<float, std::milli>(b->when - a->when).count();
  return done("hipEventElapsedTime", args, hipSuccess);
}
FAKE_API hipError_t hipStreamWaitEvent(hipStream_t sh, hipEvent_t h, unsigned flags) {
  const std::string args = N(sh) + ", " + N(h) + fmt(", %u", flags);
  auto e = event_of(h);
  auto s = stream_of(sh);
  if (!e || !s) return done("hipStreamWaitEvent", args, hipErrorInvalidHandle);
  std::uint64_t target;
  {
    std::lock_guard lock(g_event_mu);
    target = e->submitted();
  }
  s->submit([e, target] {
    std::unique_lock lock(g_event_mu);
    wait_event_locked(lock, *e, target);
  });
  return done("hipStreamWaitEvent", args, hipSuccess);
}

namespace {
void wait_event_locked(std::unique_lock<std::mutex>& lock, const Event& e, std::uint64_t target) {
  if (e.shared == nullptr) {
    g_event_cv.wait(lock, [&] { return e.done >= target; });
    return;
  }
  while (e.shared->done.load() < target) {
    lock.unlock();
    std::this_thread::sleep_for(std::chrono::microseconds(100));
    lock.lock();
  }
}
}  // namespace

// ---------------------------------------------------------------------------------------
// Copies and fills (enqueued on the stream)
static hipError_t enqueue(const char* fn, const std::string& args, hipStream_t sh,
                          std::function<void()> op) {
  auto s = stream_of(sh);
  if (!s) return done(fn, args, hipErrorInvalidHandle);
  s->submit(std::move(op));
  return done(fn, args, hipSuccess);
}
FAKE_API hipError_t hipMemcpyAsync(void* dst, const void* src, size_t n, hipMemcpyKind kind,
                                   hipStream_t s) {
  const std::string args =
      fmt("%s, %s, %zu, %s, %s", N(dst).c_str(), N(src).c_str(), n, kind_name(kind), N(s).c_str());
  FAKE_INJECT("hipMemcpyAsync", args);
  return enqueue("hipMemcpyAsync", args, s, [=] { std::memmove(dst, src, n); });
}
FAKE_API hipError_t hipMemcpyPeerAsync(void* dst, int dd, const void* src, int sd, size_t n,
                                       hipStream_t s) {
  const std::string args =
      fmt("%s, %d, %s, %d, %zu, %s", N(dst).c_str(), dd, N(src).c_str(), sd, n, N(s).c_str());
  if (!valid_device(dd) || !valid_device(sd))
    return done("hipMemcpyPeerAsync", args, hipErrorInvalidDevice);
  return enqueue("hipMemcpyPeerAsync", args, s, [=] { std::memmove(dst, src, n); });
}
FAKE_API hipError_t hipMemcpy2DAsync(void* dst, size_t dp, const void* src, size_t sp, size_t w,
                                     size_t h, hipMemcpyKind kind, hipStream_t s) {
  const std::string args = fmt("%s, %zu, %s, %zu, %zu, %zu, %s, %s", N(dst).c_str(), dp,
                               N(src).c_str(), sp, w, h, kind_name(kind), N(s).c_str());
  if (w > dp || w > sp) return done("hipMemcpy2DAsync", args, hipErrorInvalidPitchValue);
  return enqueue("hipMemcpy2DAsync", args, s, [=] {
    for (size_t r = 0; r < h; ++r)
      std::memmove(static_cast<char*>(dst) + r * dp, static_cast<const char*>(src) + r * sp, w);
  });
}
FAKE_API hipError_t hipMemcpy3DAsync(const hipMemcpy3DParms* p, hipStream_t s) {
  const hipMemcpy3DParms q = *p;
  const std::string args =
      fmt("{src %s pitch %zu ysize %zu, dst %s pitch %zu ysize %zu, extent %zux%zux%zu, %s}, %s",
          N(q.srcPtr.ptr).c_str(), q.srcPtr.pitch, q.srcPtr.ysize, N(q.dstPtr.ptr).c_str(),
          q.dstPtr.pitch, q.dstPtr.ysize, q.extent.width, q.extent.height, q.extent.depth,
          kind_name(q.kind), N(s).c_str());
  return enqueue("hipMemcpy3DAsync", args, s, [q] {
    for (size_t z = 0; z < q.extent.depth; ++z)
      for (size_t y = 0; y < q.extent.height; ++y)
        std::memmove(
            static_cast<char*>(q.dstPtr.ptr) + (z * q.dstPtr.ysize + y) * q.dstPtr.pitch,
            static_cast<const char*>(q.srcPtr.ptr) + (z * q.srcPtr.ysize + y) * q.srcPtr.pitch,
            q.extent.width);
  });
}
template <class T>
static hipError_t fill(const char* fn, void* dst, T value, size_t count, hipStream_t s) {
  const std::string args = g_quiet
                               ? std::string()
                               : fmt("%s, 0x%llx, %zu, %s", N(dst).c_str(),
                                     static_cast<unsigned long long>(value), count, N(s).c_str());
  FAKE_INJECT(fn, args);
  return enqueue(fn, args, s, [=] {
    for (size_t i = 0; i < count; ++i)
      std::memcpy(static_cast<char*>(dst) + i * sizeof(T), &value, sizeof(T));
  });
}
FAKE_API hipError_t hipMemsetD8Async(hipDeviceptr_t d, unsigned char v, size_t n, hipStream_t s) {
  return fill("hipMemsetD8Async", d, v, n, s);
}
FAKE_API hipError_t hipMemsetD16Async(hipDeviceptr_t d, unsigned short v, size_t n, hipStream_t s) {
  return fill("hipMemsetD16Async", d, v, n, s);
}
FAKE_API hipError_t hipMemsetD32Async(hipDeviceptr_t d, int v, size_t n, hipStream_t s) {
  return fill("hipMemsetD32Async", d, static_cast<unsigned>(v), n, s);
}
FAKE_API hipError_t hipMemset2DAsync(void* dst, size_t pitch, int v, size_t w, size_t h,
                                     hipStream_t s) {
  const std::string args =
      fmt("%s, %zu, 0x%x, %zu, %zu, %s", N(dst).c_str(), pitch, v, w, h, N(s).c_str());
  return enqueue("hipMemset2DAsync", args, s, [=] {
    for (size_t r = 0; r < h; ++r) std::memset(static_cast<char*>(dst) + r * pitch, v, w);
  });
}

// ---------------------------------------------------------------------------------------
// Modules and launches
FAKE_API hipError_t hipModuleLoadData(hipModule_t* out, const void* image) {
  FAKE_INJECT("hipModuleLoadData", "image");
  const auto* p = static_cast<const unsigned char*>(image);
  if (p == nullptr || std::memcmp(p, ELFMAG, SELFMAG) != 0)
    return done("hipModuleLoadData", "image", hipErrorInvalidImage);
  Elf64_Ehdr h;
  std::memcpy(&h, p, sizeof h);
  if (h.e_machine != 224) return done("hipModuleLoadData", "image", hipErrorInvalidImage);
  const std::size_t size = elf_size(image);
  auto* m = new Module{std::vector<char>(p, p + size), {}};
  *out = reinterpret_cast<hipModule_t>(m);
  return done("hipModuleLoadData", fmt("ELF %zu bytes", size), hipSuccess, new_handle(m, "module"));
}
FAKE_API hipError_t hipModuleUnload(hipModule_t mod) {
  const std::string args = N(mod);
  drop_handle(mod);
  delete reinterpret_cast<Module*>(mod);
  return done("hipModuleUnload", args, hipSuccess);
}
FAKE_API hipError_t hipModuleGetFunction(hipFunction_t* out, hipModule_t mod, const char* name) {
  const std::string args = N(mod) + ", \"" + name + "\"";
  auto* m = reinterpret_cast<Module*>(mod);
  if (!image_has_symbol(*m, name)) return done("hipModuleGetFunction", args, hipErrorNotFound);
  auto* f = new Function{name};  // owned by the fake for the process's life
  *out = reinterpret_cast<hipFunction_t>(f);
  return done("hipModuleGetFunction", args, hipSuccess,
              new_handle(f, ("function:" + std::string(name) + "#").c_str()));
}
FAKE_API hipError_t hipModuleGetGlobal(hipDeviceptr_t* dptr, size_t* bytes, hipModule_t mod,
                                       const char* name) {
  const std::string args = N(mod) + ", \"" + name + "\"";
  auto* m = reinterpret_cast<Module*>(mod);
  if (!image_has_symbol(*m, name)) return done("hipModuleGetGlobal", args, hipErrorNotFound);
  auto& storage = m->globals[name];
  if (storage.empty()) storage.resize(256);  // the fake does not read symbol sizes
  *dptr = storage.data();
  *bytes = storage.size();
  return done("hipModuleGetGlobal", args, hipSuccess, fmt("%zu bytes", *bytes));
}
FAKE_API hipError_t hipModuleLaunchKernel(hipFunction_t f, unsigned gx, unsigned gy, unsigned gz,
                                          unsigned bx, unsigned by, unsigned bz, unsigned shared,
                                          hipStream_t s, void** params, void** extra) {
  std::string args = fmt("%s, grid %ux%ux%u, block %ux%ux%u, shared %u, %s", N(f).c_str(), gx, gy,
                         gz, bx, by, bz, shared, N(s).c_str());
  if (params != nullptr) args += ", kernelParams";
  if (extra != nullptr) {
    // {BUFFER_POINTER, p, BUFFER_SIZE, &size, END}: log the packed arguments as bytes.
    if (extra[0] != HIP_LAUNCH_PARAM_BUFFER_POINTER || extra[2] != HIP_LAUNCH_PARAM_BUFFER_SIZE ||
        extra[4] != HIP_LAUNCH_PARAM_END)
      return done("hipModuleLaunchKernel", args + ", bad extra", hipErrorInvalidValue);
    const auto* bytes = static_cast<const unsigned char*>(extra[1]);
    const size_t n = *static_cast<size_t*>(extra[3]);
    args += fmt(", args %zu bytes:", n);
    for (size_t i = 0; i < n; ++i) args += fmt("%s%02x", i % 8 == 0 ? " " : "", bytes[i]);
  }
  FAKE_INJECT("hipModuleLaunchKernel", args);
  if (bx * by * bz > 1024 || bx * by * bz == 0)
    return done("hipModuleLaunchKernel", args, hipErrorInvalidConfiguration);
  return enqueue("hipModuleLaunchKernel", args, s, [] {});
}
FAKE_API hipError_t hipFuncGetAttribute(int* value, hipFunction_attribute attr, hipFunction_t f) {
  const std::string args = fmt("%d, %s", static_cast<int>(attr), N(f).c_str());
  if (attr == HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK) {
    *value = 1024;
    return done("hipFuncGetAttribute", args, hipSuccess, "1024");
  }
  return done("hipFuncGetAttribute", args, hipErrorNotSupported);
}

// ---------------------------------------------------------------------------------------
// Arrays, texture and surface objects, with ROCm 5.2.3's semantics (hipamd src/hip_memory.cpp,
// src/hip_texture.cpp, src/hip_surface.cpp): an array is host memory of packed rows and
// slices; positions and widths of array ends are bytes that HIP divides by the element size.
// Where HIP 5.2 asserts or ignores a bad argument, the fake answers hipErrorInvalidValue, so
// that a wrong translation fails a test instead of passing unnoticed.
namespace {

struct ArrayStore {
  std::vector<unsigned char> bytes;
};
struct FakeArray {
  std::shared_ptr<ArrayStore> store;  // shared by a mipmapped array and its level views
  std::size_t elem = 0;               // bytes per element
  std::size_t w = 0, h = 1, d = 1;    // extent in elements, rows and slices (layers)
  std::string name;
  int device = 0;           // whose memory the array uses
  std::size_t charged = 0;  // bytes of device memory it holds (0 for a level view)
};
struct FakeMipmapped {
  std::vector<std::shared_ptr<ArrayStore>> levels;
  std::vector<std::array<std::size_t, 3>> extents;
  std::size_t elem = 0;
  hipArray_Format format{};
  unsigned channels = 0;
  std::string name;
  int device = 0;
  std::size_t charged = 0;
};
struct FakeTexture {
  HIP_RESOURCE_DESC resource{};
  HIP_TEXTURE_DESC texture{};
};
std::mutex g_images_mu;
std::map<const hipArray*, FakeArray> g_arrays;  // arrays and level views
std::map<const void*, FakeMipmapped> g_mipmapped;
std::map<const void*, FakeTexture> g_textures;
std::map<const void*, hipResourceDesc> g_surfaces;
const hipArray* g_last_array = nullptr;

std::size_t channel_bytes(int format) {
  switch (format) {
    case HIP_AD_FORMAT_UNSIGNED_INT8:
    case HIP_AD_FORMAT_SIGNED_INT8:
      return 1;
    case HIP_AD_FORMAT_UNSIGNED_INT16:
    case HIP_AD_FORMAT_SIGNED_INT16:
    case HIP_AD_FORMAT_HALF:
      return 2;
    case HIP_AD_FORMAT_UNSIGNED_INT32:
    case HIP_AD_FORMAT_SIGNED_INT32:
    case HIP_AD_FORMAT_FLOAT:
      return 4;
    default:
      return 0;
  }
}

std::string desc_text(const HIP_ARRAY3D_DESCRIPTOR& d) {
  return fmt("{%zux%zux%zu, format 0x%x, %u ch, flags 0x%x}", d.Width, d.Height, d.Depth,
             static_cast<unsigned>(d.Format), d.NumChannels, d.Flags);
}

// HIP 5.2's shape rules (hip::getCLMemObjectType): flags 0 or hipArrayLayered only.
bool valid_shape(const HIP_ARRAY3D_DESCRIPTOR& d) {
  if (d.Width == 0) return false;
  if (d.Flags == hipArrayDefault) return d.Height != 0 || d.Depth == 0;
  if (d.Flags == hipArrayLayered) return d.Depth != 0;
  return false;
}

std::string array_name(const hipArray* a) {
  auto it = g_arrays.find(a);
  return it == g_arrays.end() ? fmt("unknown-array(%p)", static_cast<const void*>(a))
                              : it->second.name;
}

hipArray* new_hip_array(const HIP_ARRAY3D_DESCRIPTOR& d) {
  auto* a = new hipArray{};
  a->data = a;  // HIP: the image object; only compared against null
  a->desc = hipChannelFormatDesc{};
  a->width = static_cast<unsigned>(d.Width);
  a->height = static_cast<unsigned>(d.Height);
  a->depth = static_cast<unsigned>(d.Depth);
  a->Format = d.Format;
  a->NumChannels = d.NumChannels;
  return a;
}

// Arrays use device memory as HIP's images do (hipMemGetInfo sees them).
bool charge(std::size_t bytes) {
  std::lock_guard lock(S().mu);
  auto& used = S().used[static_cast<std::size_t>(t_current)];
  if (bytes > S().memory - used) return false;
  used += bytes;
  return true;
}
void uncharge(int device, std::size_t bytes) {
  std::lock_guard lock(S().mu);
  S().used[static_cast<std::size_t>(device)] -= bytes;
}

// One end of a 3D copy after HIP's resolution of its memory type.
struct End {
  const hipArray* array = nullptr;
  unsigned char* ptr = nullptr;
  std::size_t pitch = 0, rows = 0, x = 0, y = 0, z = 0;
};

}  // namespace

FAKE_API hipError_t hipArray3DCreate(hipArray** out, const HIP_ARRAY3D_DESCRIPTOR* d) {
  if (out == nullptr || d == nullptr) return done("hipArray3DCreate", "null", hipErrorInvalidValue);
  const std::string args = desc_text(*d);
  FAKE_INJECT("hipArray3DCreate", args);
  if (d->NumChannels != 1 && d->NumChannels != 2 && d->NumChannels != 4)
    return done("hipArray3DCreate", args, hipErrorInvalidValue);
  if (d->Flags & (hipArraySurfaceLoadStore | hipArrayCubemap | hipArrayTextureGather))
    return done("hipArray3DCreate", args, hipErrorNotSupported);
  if (!valid_shape(*d) || channel_bytes(d->Format) == 0)
    return done("hipArray3DCreate", args, hipErrorInvalidValue);
  FakeArray fa;
  fa.elem = channel_bytes(d->Format) * d->NumChannels;
  fa.w = d->Width;
  fa.h = std::max<std::size_t>(d->Height, 1);
  fa.d = std::max<std::size_t>(d->Depth, 1);
  const std::size_t bytes = fa.elem * fa.w * fa.h * fa.d;
  if (!charge(bytes)) return done("hipArray3DCreate", args, hipErrorOutOfMemory);
  fa.device = t_current;
  fa.charged = bytes;
  fa.store = std::make_shared<ArrayStore>();
  fa.store->bytes.assign(bytes, 0xcd);
  hipArray* a = new_hip_array(*d);
  {
    std::lock_guard lock(S().mu);
    fa.name = "array" + std::to_string(S().next_id++);
  }
  const std::string name = fa.name;
  {
    std::lock_guard lock(g_images_mu);
    g_arrays[a] = std::move(fa);
    g_last_array = a;
  }
  *out = a;
  return done("hipArray3DCreate", args, hipSuccess, name);
}
FAKE_API hipError_t hipArrayDestroy(hipArray* a) {
  std::unique_lock lock(g_images_mu);
  auto it = g_arrays.find(a);
  if (it == g_arrays.end()) {
    lock.unlock();
    return done("hipArrayDestroy", "unknown", hipErrorInvalidValue);
  }
  const std::string name = it->second.name;
  const int device = it->second.device;
  const std::size_t charged = it->second.charged;
  g_arrays.erase(it);
  if (g_last_array == a) g_last_array = nullptr;
  lock.unlock();
  uncharge(device, charged);
  delete a;
  return done("hipArrayDestroy", name, hipSuccess);
}
FAKE_API hipError_t hipMipmappedArrayCreate(hipMipmappedArray_t* out, HIP_ARRAY3D_DESCRIPTOR* d,
                                            unsigned levels) {
  if (out == nullptr || d == nullptr)
    return done("hipMipmappedArrayCreate", "null", hipErrorInvalidValue);
  const std::string args = desc_text(*d) + fmt(", %u levels", levels);
  // ihipMipmapArrayCreate checks no flags itself; its image type allows none but layered.
  if (!valid_shape(*d) || channel_bytes(d->Format) == 0 ||
      (d->NumChannels != 1 && d->NumChannels != 2 && d->NumChannels != 4))
    return done("hipMipmappedArrayCreate", args, hipErrorInvalidValue);
  const bool layered = d->Flags & hipArrayLayered;
  std::size_t largest = std::max(d->Width, d->Height);
  if (!layered) largest = std::max(largest, d->Depth);
  unsigned most = 0;
  for (; largest > 0; largest >>= 1) ++most;
  if (levels == 0 || levels > most)
    return done("hipMipmappedArrayCreate", args, hipErrorInvalidValue);
  FakeMipmapped m;
  m.elem = channel_bytes(d->Format) * d->NumChannels;
  m.format = d->Format;
  m.channels = d->NumChannels;
  for (unsigned l = 0; l < levels; ++l) {
    auto half = [l](std::size_t v) { return std::max<std::size_t>(1, v >> l); };
    const std::array<std::size_t, 3> e = {half(d->Width), d->Height ? half(d->Height) : 1,
                                          layered    ? d->Depth
                                          : d->Depth ? half(d->Depth)
                                                     : 1};
    auto store = std::make_shared<ArrayStore>();
    store->bytes.assign(m.elem * e[0] * e[1] * e[2], 0xcd);
    m.charged += store->bytes.size();
    m.levels.push_back(store);
    m.extents.push_back(e);
  }
  if (!charge(m.charged)) return done("hipMipmappedArrayCreate", args, hipErrorOutOfMemory);
  m.device = t_current;
  auto* handle = new hipMipmappedArray{};
  handle->format = d->Format;
  handle->flags = d->Flags;
  handle->max_mipmap_level = levels;
  {
    std::lock_guard lock(S().mu);
    m.name = "mipmapped" + std::to_string(S().next_id++);
  }
  const std::string name = m.name;
  {
    std::lock_guard lock(g_images_mu);
    g_mipmapped[handle] = std::move(m);
  }
  *out = handle;
  return done("hipMipmappedArrayCreate", args, hipSuccess, name);
}
FAKE_API hipError_t hipMipmappedArrayGetLevel(hipArray_t* out, hipMipmappedArray_t m,
                                              unsigned level) {
  std::unique_lock lock(g_images_mu);
  auto it = g_mipmapped.find(m);
  if (out == nullptr || it == g_mipmapped.end() || level >= it->second.levels.size()) {
    lock.unlock();
    return done("hipMipmappedArrayGetLevel", fmt("level %u", level), hipErrorInvalidValue);
  }
  // As HIP 5.2: a new hipArray (an image view) on every call, freed by hipArrayDestroy.
  const auto& e = it->second.extents[level];
  HIP_ARRAY3D_DESCRIPTOR d{e[0], e[1], e[2], it->second.format, it->second.channels, 0};
  hipArray* a = new_hip_array(d);
  FakeArray fa;
  fa.store = it->second.levels[level];
  fa.elem = it->second.elem;
  fa.w = e[0];
  fa.h = e[1];
  fa.d = e[2];
  const std::string args = it->second.name + fmt(", %u", level);
  {
    std::lock_guard slock(S().mu);
    fa.name =
        it->second.name + ".level" + std::to_string(level) + "#" + std::to_string(S().next_id++);
  }
  const std::string name = fa.name;
  g_arrays[a] = std::move(fa);
  g_last_array = a;
  lock.unlock();
  *out = a;
  return done("hipMipmappedArrayGetLevel", args, hipSuccess, name);
}
FAKE_API hipError_t hipMipmappedArrayDestroy(hipMipmappedArray_t m) {
  std::unique_lock lock(g_images_mu);
  auto it = g_mipmapped.find(m);
  if (it == g_mipmapped.end()) {
    lock.unlock();
    return done("hipMipmappedArrayDestroy", "unknown", hipErrorInvalidValue);
  }
  const std::string name = it->second.name;
  const int device = it->second.device;
  const std::size_t charged = it->second.charged;
  g_mipmapped.erase(it);
  lock.unlock();
  uncharge(device, charged);
  delete m;
  return done("hipMipmappedArrayDestroy", name, hipSuccess);
}

FAKE_API hipError_t hipDrvMemcpy3DAsync(const HIP_MEMCPY3D* pc, hipStream_t sh) {
  if (pc == nullptr) return done("hipDrvMemcpy3DAsync", "null", hipErrorInvalidValue);
  HIP_MEMCPY3D p = *pc;
  auto side = [](hipMemoryType t, const void* host, const void* dev, const hipArray* array,
                 unsigned pitch, unsigned height, unsigned x, unsigned y, unsigned z) {
    if (t == hipMemoryTypeArray)
      return fmt("array %s x %u y %u z %u", array_name(array).c_str(), x, y, z);
    return fmt("%s host %s dev %s pitch %u height %u x %u y %u z %u",
               t == hipMemoryTypeHost      ? "Host"
               : t == hipMemoryTypeDevice  ? "Device"
               : t == hipMemoryTypeUnified ? "Unified"
                                           : "bad-type",
               N(host).c_str(), N(dev).c_str(), pitch, height, x, y, z);
  };
  std::string args;
  {
    std::lock_guard lock(g_images_mu);
    args = "{src " +
           side(p.srcMemoryType, p.srcHost, p.srcDevice, p.srcArray, p.srcPitch, p.srcHeight,
                p.srcXInBytes, p.srcY, p.srcZ) +
           ", dst " +
           side(p.dstMemoryType, p.dstHost, p.dstDevice, p.dstArray, p.dstPitch, p.dstHeight,
                p.dstXInBytes, p.dstY, p.dstZ) +
           fmt(", %ux%ux%u}, ", p.WidthInBytes, p.Height, p.Depth) + N(sh);
  }
  FAKE_INJECT("hipDrvMemcpy3DAsync", args);
  auto s = stream_of(sh);
  if (!s) return done("hipDrvMemcpy3DAsync", args, hipErrorInvalidValue);
  if (p.WidthInBytes == 0 || p.Height == 0 || p.Depth == 0)
    return done("hipDrvMemcpy3DAsync", args, hipSuccess);
  // HIP 5.2's resolution of unified and pinned ends (ihipGetMemcpyParam3DCommand), bug
  // included: a pinned host destination keeps dstDevice as given.
  auto known = [](const void* ptr) { return ptr != nullptr && N(ptr) != "hostmem"; };
  hipMemoryType st = p.srcMemoryType, dt = p.dstMemoryType;
  if (st == hipMemoryTypeUnified) {
    st = known(p.srcDevice) ? hipMemoryTypeDevice : hipMemoryTypeHost;
    if (st == hipMemoryTypeHost) p.srcHost = p.srcDevice;
  }
  if (dt == hipMemoryTypeUnified) {
    dt = known(p.dstDevice) ? hipMemoryTypeDevice : hipMemoryTypeHost;
    if (st == hipMemoryTypeHost) p.dstHost = p.dstDevice;
  }
  if (st == hipMemoryTypeHost && known(p.srcHost)) {
    st = hipMemoryTypeDevice;
    p.srcDevice = const_cast<void*>(p.srcHost);
  }
  if (dt == hipMemoryTypeHost && known(p.dstHost)) dt = hipMemoryTypeDevice;
  for (hipMemoryType t : {st, dt})
    if (t != hipMemoryTypeHost && t != hipMemoryTypeDevice && t != hipMemoryTypeArray)
      return done("hipDrvMemcpy3DAsync", args, hipErrorInvalidValue);

  std::lock_guard lock(g_images_mu);
  // Element size: the source array's, else the destination's (HIP converts with one size).
  std::size_t elem = 1;
  if (st == hipMemoryTypeArray || dt == hipMemoryTypeArray) {
    const hipArray* a = st == hipMemoryTypeArray ? p.srcArray : p.dstArray;
    auto it = g_arrays.find(a);
    if (it == g_arrays.end()) return done("hipDrvMemcpy3DAsync", args, hipErrorInvalidValue);
    elem = it->second.elem;
  }
  const std::size_t row_bytes = (st == hipMemoryTypeArray || dt == hipMemoryTypeArray)
                                    ? p.WidthInBytes / elem * elem
                                    : p.WidthInBytes;
  auto resolve = [&](hipMemoryType t, const void* host, const void* dev, const hipArray* array,
                     unsigned pitch, unsigned height, unsigned x, unsigned y, unsigned z, End& e) {
    e.y = y;
    e.z = z;
    if (t == hipMemoryTypeArray) {
      auto it = g_arrays.find(array);
      if (it == g_arrays.end()) return false;
      const FakeArray& fa = it->second;
      e.array = array;
      e.x = x / elem;
      e.pitch = fa.w * fa.elem;
      e.rows = fa.h;
      e.ptr = fa.store->bytes.data();
      return e.x + p.WidthInBytes / elem <= fa.w && y + p.Height <= fa.h && z + p.Depth <= fa.d &&
             p.WidthInBytes / elem > 0;
    }
    e.ptr = static_cast<unsigned char*>(const_cast<void*>(t == hipMemoryTypeHost ? host : dev));
    e.x = x;
    e.pitch = pitch;
    e.rows = height;
    // HIP's BufferRect: rows must hold the width, slices the rows.
    return e.ptr != nullptr && pitch >= x + row_bytes && (p.Depth == 1 || height >= y + p.Height);
  };
  End src, dst;
  if (!resolve(st, p.srcHost, p.srcDevice, p.srcArray, p.srcPitch, p.srcHeight, p.srcXInBytes,
               p.srcY, p.srcZ, src) ||
      !resolve(dt, p.dstHost, p.dstDevice, p.dstArray, p.dstPitch, p.dstHeight, p.dstXInBytes,
               p.dstY, p.dstZ, dst))
    return done("hipDrvMemcpy3DAsync", args, hipErrorInvalidValue);
  // Array ends count x in elements of `elem` bytes from here on.
  auto at = [elem](const End& e, std::size_t row, std::size_t slice) {
    const std::size_t x_bytes = e.array != nullptr ? e.x * elem : e.x;
    return e.ptr + ((e.z + slice) * e.rows + e.y + row) * e.pitch + x_bytes;
  };
  // The arrays' storage stays alive with the copy (a destroyed array's store is freed last).
  std::shared_ptr<ArrayStore> keep_src, keep_dst;
  if (src.array) keep_src = g_arrays[src.array].store;
  if (dst.array) keep_dst = g_arrays[dst.array].store;
  s->submit([=] {
    (void)keep_src;
    (void)keep_dst;
    for (std::size_t z = 0; z < p.Depth; ++z)
      for (std::size_t y = 0; y < p.Height; ++y)
        std::memmove(at(dst, y, z), at(src, y, z), row_bytes);
  });
  return done("hipDrvMemcpy3DAsync", args, hipSuccess);
}

FAKE_API hipError_t hipTexObjectCreate(hipTextureObject_t* out, const HIP_RESOURCE_DESC* r,
                                       const HIP_TEXTURE_DESC* t, const HIP_RESOURCE_VIEW_DESC* v) {
  if (out == nullptr || r == nullptr || t == nullptr)
    return done("hipTexObjectCreate", "null", hipErrorInvalidValue);
  std::string res;
  {
    std::lock_guard lock(g_images_mu);
    switch (r->resType) {
      case HIP_RESOURCE_TYPE_ARRAY:
        res = "array " + array_name(r->res.array.hArray);
        break;
      case HIP_RESOURCE_TYPE_MIPMAPPED_ARRAY:
        res = "mipmapped";
        break;
      case HIP_RESOURCE_TYPE_LINEAR:
        res = fmt("linear %s format 0x%x x%u %zu bytes", N(r->res.linear.devPtr).c_str(),
                  static_cast<unsigned>(r->res.linear.format), r->res.linear.numChannels,
                  r->res.linear.sizeInBytes);
        break;
      case HIP_RESOURCE_TYPE_PITCH2D:
        res = fmt("pitch2D %s format 0x%x x%u %zux%zu pitch %zu", N(r->res.pitch2D.devPtr).c_str(),
                  static_cast<unsigned>(r->res.pitch2D.format), r->res.pitch2D.numChannels,
                  r->res.pitch2D.width, r->res.pitch2D.height, r->res.pitch2D.pitchInBytes);
        break;
      default:
        res = fmt("bad type %d", static_cast<int>(r->resType));
    }
  }
  std::string args =
      "{" + res +
      fmt("}, {address %d,%d,%d filter %d flags 0x%x mipmap filter %d aniso %u bias %g clamp "
          "%g..%g border %g,%g,%g,%g}",
          t->addressMode[0], t->addressMode[1], t->addressMode[2], t->filterMode, t->flags,
          t->mipmapFilterMode, t->maxAnisotropy, t->mipmapLevelBias, t->minMipmapLevelClamp,
          t->maxMipmapLevelClamp, t->borderColor[0], t->borderColor[1], t->borderColor[2],
          t->borderColor[3]);
  args += v == nullptr ? ", no view"
                       : fmt(", view {format 0x%x %zux%zux%zu levels %u..%u layers %u..%u}",
                             static_cast<unsigned>(v->format), v->width, v->height, v->depth,
                             v->firstMipmapLevel, v->lastMipmapLevel, v->firstLayer, v->lastLayer);
  FAKE_INJECT("hipTexObjectCreate", args);
  auto bad = [&] { return done("hipTexObjectCreate", args, hipErrorInvalidValue); };
  // Stricter than HIP 5.2, which ignores what it does not know.
  if (r->flags != 0 || (t->flags & ~unsigned{HIP_TRSF_READ_AS_INTEGER |
                                             HIP_TRSF_NORMALIZED_COORDINATES | HIP_TRSF_SRGB}))
    return bad();
  for (int i = 0; i < 3; ++i)
    if (t->addressMode[i] < HIP_TR_ADDRESS_MODE_WRAP ||
        t->addressMode[i] > HIP_TR_ADDRESS_MODE_BORDER)
      return bad();
  for (HIPfilter_mode f : {t->filterMode, t->mipmapFilterMode})
    if (f != HIP_TR_FILTER_MODE_POINT && f != HIP_TR_FILTER_MODE_LINEAR) return bad();
  // HIP 5.2's own checks, in its order.
  if (v != nullptr && r->resType != HIP_RESOURCE_TYPE_ARRAY &&
      r->resType != HIP_RESOURCE_TYPE_MIPMAPPED_ARRAY)
    return bad();
  if (v != nullptr &&
      (v->format == HIP_RES_VIEW_FORMAT_NONE || v->format > HIP_RES_VIEW_FORMAT_UNSIGNED_BC7))
    return bad();  // HIP 5.2 converts the view's format without a "none"
  auto aligned = [](const void* ptr) { return reinterpret_cast<std::uintptr_t>(ptr) % 256 == 0; };
  switch (r->resType) {
    case HIP_RESOURCE_TYPE_ARRAY: {
      std::lock_guard lock(g_images_mu);
      if (g_arrays.count(r->res.array.hArray) == 0) return bad();
      break;
    }
    case HIP_RESOURCE_TYPE_MIPMAPPED_ARRAY:
      if (r->res.mipmap.hMipmappedArray == nullptr || !(t->flags & HIP_TRSF_NORMALIZED_COORDINATES))
        return bad();
      return done("hipTexObjectCreate", args, hipErrorNotSupported);
    case HIP_RESOURCE_TYPE_LINEAR:
      if (r->res.linear.devPtr == nullptr || !aligned(r->res.linear.devPtr) ||
          channel_bytes(r->res.linear.format) == 0 || N(r->res.linear.devPtr).rfind("dev", 0) != 0)
        return bad();
      break;
    case HIP_RESOURCE_TYPE_PITCH2D:
      if (r->res.pitch2D.devPtr == nullptr || !aligned(r->res.pitch2D.devPtr) ||
          r->res.pitch2D.pitchInBytes % 256 != 0 || channel_bytes(r->res.pitch2D.format) == 0)
        return bad();
      break;
    default:
      return bad();
  }
  if (t->maxAnisotropy != 0 || t->mipmapLevelBias != 0 || t->minMipmapLevelClamp != 0 ||
      t->maxMipmapLevelClamp != 0)
    return done("hipTexObjectCreate", args, hipErrorNotSupported);
  auto* handle = reinterpret_cast<hipTextureObject_t>(new char);
  {
    std::lock_guard lock(g_images_mu);
    g_textures[handle] = FakeTexture{*r, *t};
  }
  *out = handle;
  return done("hipTexObjectCreate", args, hipSuccess, new_handle(handle, "texture"));
}
FAKE_API hipError_t hipTexObjectDestroy(hipTextureObject_t o) {
  const std::string args = N(o);
  {
    std::lock_guard lock(g_images_mu);
    if (g_textures.erase(o) == 0) return done("hipTexObjectDestroy", args, hipErrorInvalidValue);
  }
  drop_handle(o);
  delete reinterpret_cast<char*>(o);
  return done("hipTexObjectDestroy", args, hipSuccess);
}

// C++ linkage, as ROCm 5.2 declares and exports them (see hip_image_functions.inc).
__attribute__((visibility("default"))) hipError_t hipCreateSurfaceObject(hipSurfaceObject_t* out,
                                                                         const hipResourceDesc* r) {
  if (out == nullptr || r == nullptr)
    return done("hipCreateSurfaceObject", "null", hipErrorInvalidValue);
  std::unique_lock lock(g_images_mu);
  const bool array = r->resType == hipResourceTypeArray && g_arrays.count(r->res.array.array) != 0;
  const std::string args =
      array ? "array " + array_name(r->res.array.array) : fmt("type %d", r->resType);
  if (!array) {
    lock.unlock();
    return done("hipCreateSurfaceObject", args, hipErrorInvalidValue);
  }
  auto* handle = reinterpret_cast<hipSurfaceObject_t>(new char);
  g_surfaces[handle] = *r;
  lock.unlock();
  *out = handle;
  return done("hipCreateSurfaceObject", args, hipSuccess, new_handle(handle, "surface"));
}
__attribute__((visibility("default"))) hipError_t hipDestroySurfaceObject(hipSurfaceObject_t o) {
  const std::string args = N(o);
  {
    std::lock_guard lock(g_images_mu);
    if (g_surfaces.erase(o) == 0)
      return done("hipDestroySurfaceObject", args, hipErrorInvalidValue);
  }
  drop_handle(o);
  delete reinterpret_cast<char*>(o);
  return done("hipDestroySurfaceObject", args, hipSuccess);
}

// Test hooks: live image objects, and the storage of the array last created (or the level
// last asked for): its bytes, packed rows and slices.
FAKE_API void fakehip_live_images(int* arrays, int* mipmapped, int* textures, int* surfaces) {
  std::lock_guard lock(g_images_mu);
  *arrays = static_cast<int>(g_arrays.size());
  *mipmapped = static_cast<int>(g_mipmapped.size());
  *textures = static_cast<int>(g_textures.size());
  *surfaces = static_cast<int>(g_surfaces.size());
}
FAKE_API unsigned char* fakehip_last_array(std::size_t* bytes) {
  std::lock_guard lock(g_images_mu);
  auto it = g_arrays.find(g_last_array);
  if (it == g_arrays.end()) return nullptr;
  *bytes = it->second.store->bytes.size();
  return it->second.store->bytes.data();
}

// ---------------------------------------------------------------------------------------
// Address ranges, stream memory operations and IPC (issue 17), as ROCm 5.2's hipamd does them
// (hip_memory.cpp, hip_stream_ops.cpp, hip_event_ipc.cpp at rocm-5.2.1).
namespace {

// The allocation holding p (ROCm: getMemoryObject, which knows every allocation HIP made or
// registered); false for memory HIP does not know.
bool find_alloc(const void* p, std::uintptr_t& base, Alloc& out) {
  State& s = S();
  std::lock_guard lock(s.mu);
  const auto v = reinterpret_cast<std::uintptr_t>(p);
  auto it = s.allocs.upper_bound(v);
  if (it == s.allocs.begin()) return false;
  --it;
  if (v - it->first >= std::max<std::size_t>(it->second.size, 1)) return false;
  base = it->first;
  out = it->second;
  return true;
}
bool known_memory(const void* p) {
  std::uintptr_t base = 0;
  Alloc a;
  return find_alloc(p, base, a);
}

// The condition of hipStreamWaitValue32/64 as HIP 5.2's header states it (unsigned values).
template <class T>
bool wait_satisfied(T memory, T value, unsigned flags, T mask) {
  const T m = memory & mask;
  switch (flags) {
    case hipStreamWaitValueGte:
      return m >= value;
    case hipStreamWaitValueEq:
      return m == value;
    case hipStreamWaitValueAnd:
      return (m & value) != 0;
    case hipStreamWaitValueNor:
      return static_cast<T>(~(m | (value & mask))) != 0;
    default:
      return true;
  }
}

template <class T>
hipError_t stream_wait(const char* fn, hipStream_t sh, void* ptr, T value, unsigned flags, T mask) {
  const std::string args =
      fmt("%s, %s, 0x%llx, %u, 0x%llx", N(sh).c_str(), N(ptr).c_str(),
          static_cast<unsigned long long>(value), flags, static_cast<unsigned long long>(mask));
  FAKE_INJECT(fn, args);
  if (!known_memory(ptr)) return done(fn, args, hipErrorInvalidValue);
  // ROCm 5.2 reaches ShouldNotReachHere() for another flag (later releases: invalid value).
  if (flags > hipStreamWaitValueNor) return done(fn, args, hipErrorInvalidValue);
  return enqueue(fn, args, sh, [=] {
    // Later work on this stream waits here. Memory freed under the wait ends it (a GPU would
    // fault; the fake must not read unmapped memory).
    while (known_memory(ptr) &&
           !wait_satisfied<T>(__atomic_load_n(static_cast<T*>(ptr), __ATOMIC_ACQUIRE), value, flags,
                              mask)) {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  });
}

template <class T>
hipError_t stream_write(const char* fn, hipStream_t sh, void* ptr, T value, unsigned flags) {
  const std::string args = fmt("%s, %s, 0x%llx, %u", N(sh).c_str(), N(ptr).c_str(),
                               static_cast<unsigned long long>(value), flags);
  FAKE_INJECT(fn, args);
  if (!known_memory(ptr)) return done(fn, args, hipErrorInvalidValue);
  // HIP 5.2: "flags - reserved, ignored for now".
  return enqueue(fn, args, sh,
                 [=] { __atomic_store_n(static_cast<T*>(ptr), value, __ATOMIC_RELEASE); });
}

// The fake's handles: where ROCm puts its ROCr handle (32 bytes) the fake puts the exporter's
// pid and memfd; psize and poffset follow at ROCm's offsets (ihipIpcMemHandle_t).
constexpr char kHandleTag[8] = "fakehip";
struct FakeIpcMemHandle {
  char tag[8];
  std::int32_t pid;
  std::int32_t fd;
  std::uint64_t mapped;
  std::uint64_t pad;
  std::uint64_t psize;
  std::uint64_t poffset;
  char reserved[16];
};
static_assert(sizeof(FakeIpcMemHandle) == sizeof(hipIpcMemHandle_t));
struct FakeIpcEventHandle {  // ROCm: a 32-byte shared-memory file name, then zeros
  char tag[8];
  std::int32_t pid;
  std::int32_t fd;
  char unused[48];
};
static_assert(sizeof(FakeIpcEventHandle) == sizeof(hipIpcEventHandle_t));

int open_remote(std::int32_t pid, std::int32_t fd) {
  const std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
  return ::open(path.c_str(), O_RDWR | O_CLOEXEC);
}

}  // namespace

FAKE_API hipError_t hipMemGetAddressRange(hipDeviceptr_t* pbase, size_t* psize,
                                          hipDeviceptr_t dptr) {
  const std::string args = N(dptr);
  std::uintptr_t base = 0;
  Alloc a;
  if (!find_alloc(dptr, base, a))
    return done("hipMemGetAddressRange", args, hipErrorInvalidDevicePointer);
  *pbase = reinterpret_cast<hipDeviceptr_t>(base);
  *psize = a.size;
  return done("hipMemGetAddressRange", args, hipSuccess, fmt("%zu", a.size));
}

FAKE_API hipError_t hipStreamWaitValue32(hipStream_t s, void* ptr, uint32_t value,
                                         unsigned int flags, uint32_t mask) {
  return stream_wait<std::uint32_t>("hipStreamWaitValue32", s, ptr, value, flags, mask);
}
FAKE_API hipError_t hipStreamWaitValue64(hipStream_t s, void* ptr, uint64_t value,
                                         unsigned int flags, uint64_t mask) {
  return stream_wait<std::uint64_t>("hipStreamWaitValue64", s, ptr, value, flags, mask);
}
FAKE_API hipError_t hipStreamWriteValue32(hipStream_t s, void* ptr, uint32_t value,
                                          unsigned int flags) {
  return stream_write<std::uint32_t>("hipStreamWriteValue32", s, ptr, value, flags);
}
FAKE_API hipError_t hipStreamWriteValue64(hipStream_t s, void* ptr, uint64_t value,
                                          unsigned int flags) {
  return stream_write<std::uint64_t>("hipStreamWriteValue64", s, ptr, value, flags);
}

FAKE_API hipError_t hipIpcGetMemHandle(hipIpcMemHandle_t* handle, void* ptr) {
  const std::string args = N(ptr);
  FAKE_INJECT("hipIpcGetMemHandle", args);
  if (handle == nullptr || ptr == nullptr)
    return done("hipIpcGetMemHandle", args, hipErrorInvalidValue);
  std::uintptr_t base = 0;
  Alloc a;
  // ROCm: IpcCreate fails for memory that is not a device allocation of this process.
  if (!find_alloc(ptr, base, a) || a.kind != "dev" || a.fd < 0)
    return done("hipIpcGetMemHandle", args, hipErrorInvalidDevicePointer);
  FakeIpcMemHandle h{};
  std::memcpy(h.tag, kHandleTag, sizeof h.tag);
  h.pid = static_cast<std::int32_t>(::getpid());
  h.fd = a.fd;
  h.mapped = a.mapped;
  h.psize = a.size;
  h.poffset = reinterpret_cast<std::uintptr_t>(ptr) - base;
  std::memcpy(handle, &h, sizeof h);
  return done("hipIpcGetMemHandle", args, hipSuccess);
}
FAKE_API hipError_t hipIpcOpenMemHandle(void** dev_ptr, hipIpcMemHandle_t handle,
                                        unsigned int flags) {
  FakeIpcMemHandle h{};
  std::memcpy(&h, &handle, sizeof h);
  const std::string args =
      fmt("{size %llu, offset %llu}, 0x%x", static_cast<unsigned long long>(h.psize),
          static_cast<unsigned long long>(h.poffset), flags);
  FAKE_INJECT("hipIpcOpenMemHandle", args);
  // ROCm 5.2: flags must be hipIpcMemLazyEnablePeerAccess (0).
  if (dev_ptr == nullptr || flags != hipIpcMemLazyEnablePeerAccess)
    return done("hipIpcOpenMemHandle", args, hipErrorInvalidValue);
  if (h.psize == 0) return done("hipIpcOpenMemHandle", args, hipErrorInvalidValue);
  // ROCm: IpcAttach failing is hipErrorInvalidDevicePointer.
  if (std::memcmp(h.tag, kHandleTag, sizeof h.tag) != 0 || h.mapped < h.psize ||
      h.poffset >= h.psize)
    return done("hipIpcOpenMemHandle", args, hipErrorInvalidDevicePointer);
  const int fd = open_remote(h.pid, h.fd);
  if (fd < 0) return done("hipIpcOpenMemHandle", args, hipErrorInvalidDevicePointer);
  void* base = ::mmap(nullptr, h.mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (base == MAP_FAILED) return done("hipIpcOpenMemHandle", args, hipErrorInvalidDevicePointer);
  std::string name;
  add_alloc(base, h.psize, "ipc", false, name);
  {
    std::lock_guard lock(S().mu);
    S().allocs[reinterpret_cast<std::uintptr_t>(base)].mapped = h.mapped;
  }
  *dev_ptr = static_cast<char*>(base) + h.poffset;
  return done("hipIpcOpenMemHandle", args, hipSuccess, name);
}
FAKE_API hipError_t hipIpcCloseMemHandle(void* dev_ptr) {
  const std::string args = N(dev_ptr);
  if (dev_ptr == nullptr) return done("hipIpcCloseMemHandle", args, hipErrorInvalidValue);
  std::uintptr_t base = 0;
  Alloc a;
  if (!find_alloc(dev_ptr, base, a) || a.kind != "ipc")
    return done("hipIpcCloseMemHandle", args, hipErrorInvalidHandle);  // ROCm: IpcDetach fails
  {
    std::lock_guard lock(S().mu);
    S().allocs.erase(base);
  }
  ::munmap(reinterpret_cast<void*>(base), a.mapped);
  return done("hipIpcCloseMemHandle", args, hipSuccess);
}

FAKE_API hipError_t hipIpcGetEventHandle(hipIpcEventHandle_t* handle, hipEvent_t event) {
  const std::string args = N(event);
  if (handle == nullptr || event == nullptr)
    return done("hipIpcGetEventHandle", args, hipErrorInvalidValue);
  auto e = event_of(event);
  if (!e) return done("hipIpcGetEventHandle", args, hipErrorInvalidHandle);
  // ROCm: a plain event's GetHandle is hipErrorInvalidConfiguration.
  if (e->shared == nullptr || e->shared_fd < 0)
    return done("hipIpcGetEventHandle", args, hipErrorInvalidConfiguration);
  e->shared->exporter_pid = static_cast<std::int32_t>(::getpid());
  FakeIpcEventHandle h{};
  std::memcpy(h.tag, kHandleTag, sizeof h.tag);
  h.pid = static_cast<std::int32_t>(::getpid());
  h.fd = e->shared_fd;
  std::memcpy(handle, &h, sizeof h);
  return done("hipIpcGetEventHandle", args, hipSuccess);
}
FAKE_API hipError_t hipIpcOpenEventHandle(hipEvent_t* event, hipIpcEventHandle_t handle) {
  if (event == nullptr) return done("hipIpcOpenEventHandle", "", hipErrorInvalidValue);
  FakeIpcEventHandle h{};
  std::memcpy(&h, &handle, sizeof h);
  // ROCm creates the event first and keeps it when opening fails (the caller's to destroy).
  auto e = std::make_shared<Event>();
  e->flags = hipEventDisableTiming | hipEventInterprocess;
  auto* eh = reinterpret_cast<hipEvent_t>(new char);
  {
    std::lock_guard lock(g_events_mu);
    g_events[eh] = e;
  }
  *event = eh;
  const std::string name = new_handle(eh, "event");
  const int fd = std::memcmp(h.tag, kHandleTag, sizeof h.tag) == 0 ? open_remote(h.pid, h.fd) : -1;
  void* m = fd >= 0
                ? ::mmap(nullptr, sizeof(IpcEventShared), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                : MAP_FAILED;
  if (fd >= 0) ::close(fd);
  if (m == MAP_FAILED) return done("hipIpcOpenEventHandle", name, hipErrorInvalidValue);
  e->shared = static_cast<IpcEventShared*>(m);
  if (e->shared->exporter_pid == static_cast<std::int32_t>(::getpid()))
    return done("hipIpcOpenEventHandle", name, hipErrorInvalidContext);  // as ROCm 5.2
  return done("hipIpcOpenEventHandle", name, hipSuccess);
}

// ---------------------------------------------------------------------------------------
// Managed memory hints (issue 17), as ROCm 5.2.3 gives them on a kernel driver with HMM
// support (hipamd src/hip_hmm.cpp; ROCclr device/rocm rocdevice.cpp SetSvmAttributesInt and
// rocvirtual.cpp submitSvmPrefetchAsync): each advice sets one HSA SVM attribute of the pages
// in range, a prefetch moves them in stream order. The fake keeps those attributes per 4 KiB
// page of each managed allocation; hipMemRangeGetAttribute (which the plugin does not call)
// lets tests read what HIP was told.
namespace {
struct PageHints {
  bool read_mostly = false;
  bool coarse_grain = false;
  int preferred = hipInvalidDeviceId;
  std::uint64_t accessed_by = 0;  // bit d: GPU d; bit 63: the CPU
  int prefetched = hipInvalidDeviceId;
};
constexpr std::size_t kHintPage = 4096;
constexpr std::uint64_t kCpuBit = std::uint64_t{1} << 63;

// Calls `each` (S().mu held) for every page of [p, p+n) in one managed allocation; false when
// the range is not wholly inside one. ROCm 5.2 hands any range to HSA (its SVM tracking is
// off by default, ROC_HMM_FLAGS=0); the fake refuses other memory so that a wrong pointer or
// size fails a test instead of passing unnoticed.
template <class F>
bool for_managed_pages(const void* p, std::size_t n, F&& each) {
  State& s = S();
  std::lock_guard lock(s.mu);
  const auto v = reinterpret_cast<std::uintptr_t>(p);
  auto it = s.allocs.upper_bound(v);
  if (it == s.allocs.begin()) return false;
  --it;
  Alloc& a = it->second;
  const std::size_t offset = v - it->first;
  if (a.kind != "managed" || offset >= a.size || n > a.size - offset) return false;
  if (!a.hints)
    a.hints = std::make_shared<std::vector<PageHints>>((a.size + kHintPage - 1) / kHintPage);
  for (std::size_t page = offset / kHintPage; page < (offset + n + kHintPage - 1) / kHintPage;
       ++page)
    each((*a.hints)[page]);
  return true;
}

const char* advice_name(hipMemoryAdvise a) {
  switch (a) {
    case hipMemAdviseSetReadMostly:
      return "hipMemAdviseSetReadMostly";
    case hipMemAdviseUnsetReadMostly:
      return "hipMemAdviseUnsetReadMostly";
    case hipMemAdviseSetPreferredLocation:
      return "hipMemAdviseSetPreferredLocation";
    case hipMemAdviseUnsetPreferredLocation:
      return "hipMemAdviseUnsetPreferredLocation";
    case hipMemAdviseSetAccessedBy:
      return "hipMemAdviseSetAccessedBy";
    case hipMemAdviseUnsetAccessedBy:
      return "hipMemAdviseUnsetAccessedBy";
    case hipMemAdviseSetCoarseGrain:
      return "hipMemAdviseSetCoarseGrain";
    case hipMemAdviseUnsetCoarseGrain:
      return "hipMemAdviseUnsetCoarseGrain";
  }
  return "hipMemoryAdvise(?)";
}
}  // namespace

FAKE_API hipError_t hipMemAdvise(const void* p, size_t n, hipMemoryAdvise advice, int device) {
  const char* fn = "hipMemAdvise";
  const std::string args = fmt("%s, %zu, %s, %d", N(p).c_str(), n, advice_name(advice), device);
  FAKE_INJECT(fn, args);
  // hipamd: a device that is neither a GPU nor hipCpuDeviceId is an invalid value.
  if (p == nullptr || n == 0 || (device != hipCpuDeviceId && !valid_device(device)))
    return done(fn, args, hipErrorInvalidValue);
  // ROCclr acts for GPU `device`, or GPU 0 for hipCpuDeviceId where the CPU's agent is not used
  // (unsetting accessed-by always names the GPU's agent).
  const int gpu = device == hipCpuDeviceId ? 0 : device;
  const bool cpu = device == hipCpuDeviceId;
  const std::uint64_t agent_bit = cpu ? kCpuBit : std::uint64_t{1} << device;
  bool known_advice = true;
  const bool ok = for_managed_pages(p, n, [&](PageHints& h) {
    switch (advice) {
      case hipMemAdviseSetReadMostly:
        h.read_mostly = true;
        break;
      case hipMemAdviseUnsetReadMostly:
        h.read_mostly = false;
        break;
      case hipMemAdviseSetPreferredLocation:
        h.preferred = cpu ? hipCpuDeviceId : device;
        break;
      case hipMemAdviseUnsetPreferredLocation:
        h.preferred = hipInvalidDeviceId;
        break;
      case hipMemAdviseSetAccessedBy:
        h.accessed_by |= agent_bit;
        break;
      case hipMemAdviseUnsetAccessedBy:
        h.accessed_by &= ~(std::uint64_t{1} << gpu);
        break;
      case hipMemAdviseSetCoarseGrain:
        h.coarse_grain = true;
        break;
      case hipMemAdviseUnsetCoarseGrain:
        h.coarse_grain = false;
        break;
      default:
        known_advice = false;  // ROCclr: "return false" -> hipErrorInvalidValue
    }
  });
  return done(fn, args, ok && known_advice ? hipSuccess : hipErrorInvalidValue);
}

FAKE_API hipError_t hipMemPrefetchAsync(const void* p, size_t n, int device, hipStream_t sh) {
  const char* fn = "hipMemPrefetchAsync";
  const std::string args = fmt("%s, %zu, %d, %s", N(p).c_str(), n, device, N(sh).c_str());
  FAKE_INJECT(fn, args);
  if (p == nullptr || n == 0) return done(fn, args, hipErrorInvalidValue);
  if (sh != nullptr && !stream_of(sh)) return done(fn, args, hipErrorContextIsDestroyed);
  std::uintptr_t base = 0;
  Alloc a;
  if (!find_alloc(p, base, a) || n > a.size - (reinterpret_cast<std::uintptr_t>(p) - base))
    return done(fn, args, hipErrorInvalidValue);
  if (device != hipCpuDeviceId && !valid_device(device))
    return done(fn, args, hipErrorInvalidDevice);
  // Memory HIP knows but HSA's SVM does not: ROCm logs the failed prefetch on its queue; the
  // call has already succeeded.
  return enqueue(fn, args, sh,
                 [=] { for_managed_pages(p, n, [&](PageHints& h) { h.prefetched = device; }); });
}

// What HIP holds for [p, p+n), answered as ROCm's hipMemRangeGetAttribute documents it: a
// value every page shares, else hipInvalidDeviceId (0 for read-mostly); accessed-by lists the
// GPUs, then hipCpuDeviceId, then fills with hipInvalidDeviceId.
FAKE_API hipError_t hipMemRangeGetAttribute(void* data, size_t size, hipMemRangeAttribute attribute,
                                            const void* p, size_t n) {
  const char* fn = "hipMemRangeGetAttribute";
  const std::string args =
      fmt("%zu, %d, %s, %zu", size, static_cast<int>(attribute), N(p).c_str(), n);
  if (data == nullptr || size == 0 || p == nullptr || n == 0)
    return done(fn, args, hipErrorInvalidValue);
  std::vector<PageHints> pages;
  if (!for_managed_pages(p, n, [&](PageHints& h) { pages.push_back(h); }))
    return done(fn, args, hipErrorInvalidValue);
  auto* out = static_cast<int*>(data);
  auto common = [&](int PageHints::*field) {
    for (const PageHints& h : pages)
      if (h.*field != pages.front().*field) return static_cast<int>(hipInvalidDeviceId);
    return pages.front().*field;
  };
  switch (attribute) {
    case hipMemRangeAttributeReadMostly:
      *out =
          std::all_of(pages.begin(), pages.end(), [](const PageHints& h) { return h.read_mostly; });
      break;
    case hipMemRangeAttributePreferredLocation:
      *out = common(&PageHints::preferred);
      break;
    case hipMemRangeAttributeLastPrefetchLocation:
      *out = common(&PageHints::prefetched);
      break;
    case hipMemRangeAttributeAccessedBy: {
      std::uint64_t all = ~std::uint64_t{0};
      for (const PageHints& h : pages) all &= h.accessed_by;
      std::size_t k = 0;
      const std::size_t slots = size / sizeof(int);
      for (int d = 0; d < S().devices && k < slots; ++d)
        if (all & (std::uint64_t{1} << d)) out[k++] = d;
      if ((all & kCpuBit) && k < slots) out[k++] = hipCpuDeviceId;
      for (; k < slots; ++k) out[k] = hipInvalidDeviceId;
      break;
    }
    default:
      return done(fn, args, hipErrorInvalidValue);
  }
  return done(fn, args, hipSuccess);
}
