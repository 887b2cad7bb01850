// Stream-ordered memory pools (CUDA 13.0): cuMemPool*, cuMemAllocAsync, cuMemFreeAsync,
// cuMemAllocFromPoolAsync, the default and current pools of devices and of the host and managed
// locations (cuMemGetMemPool), and in-process sharing of pools and their pointers. Pools of
// device memory, of pinned host memory and of managed memory. Memory comes from the backend through
// the path cuMemAlloc uses and is registered in Core::allocations while handed out; the pool caches
// freed blocks and hands them out again under CUDA's reuse rules (docs/memory-pools.md).
#include "mempool.hpp"

#include <spdlog/spdlog.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <vector>

#include "core.hpp"
#include "cudamux/driver_impl.hpp"
#include "graph.hpp"

namespace cudamux::core {

// A stretch of backend memory owned by a pool: handed out (live) or cached (freed).
struct Block {
  std::uintptr_t base = 0;
  std::size_t size = 0;                // what the pool accounts (the request rounded up)
  Context* ctx = nullptr;              // whose backend allocated it, and frees it
  AllocKind kind = AllocKind::device;  // device, host_alloc (host pools) or managed
  // Cached blocks: where the free happened. stream_id 0: nothing to order against (a
  // synchronous free, or a free whose event is known to have completed).
  unsigned long long stream_id = 0;
  std::uint64_t seq = 0;         // the free's number on that stream (follow-dependency rule)
  std::unique_ptr<Event> event;  // recorded on the freeing stream at the free
};

struct MemPool {
  CUmemoryPool handle = nullptr;
  unsigned long long uid = 0;  // names the pool in exported handles and pointers
  int device = 0;  // the location's device; -1 for host and managed pools placed elsewhere
  CUmemPoolProps props{};
  bool is_default = false;
  bool destroyed = false;  // cuMemPoolDestroy ran; kept until its memory is back
  // Imported (cuMemPoolImportFromShareableHandle): a view of another pool, never allocates.
  bool imported = false;
  pid_t origin_pid = 0;
  unsigned long long origin_uid = 0;

  bool follow_event_dependencies = true;
  bool allow_opportunistic = true;
  bool allow_internal_dependencies = true;
  std::uint64_t release_threshold = 0;
  std::size_t reserved = 0, reserved_high = 0, used = 0, used_high = 0;
  std::map<int, CUmemAccess_flags> peer_access;  // devices other than the pool's

  std::vector<Block> cached;
  std::map<std::uintptr_t, Block> live;
  std::map<std::uintptr_t, int> imports;  // imported pools: pointers imported, and how often

  // A pool of the backend's own driver (Backend::native_pools; issue 16): the driver keeps
  // its memory, reuse, accounting and sharing, so `cached` and `live` stay empty and the
  // counters above unused.
  bool native = false;
  std::uint64_t native_handle = 0;
  // Its blocks handed out (and allocations under way): a destroyed pool stays until 0. Blocks
  // are entered in Core::allocations only (Allocation::native_pool), not in `live` and
  // State::owner, so that an allocation and a free take the pool lock at most once.
  std::atomic<long> native_live{0};
  // Native imports: the context that imported each (the driver frees it there), and whether
  // this process entered it in Core::allocations (an import that returned an address the
  // registry already held, the exporter's own block, is not entered twice).
  struct NativeImport {
    Context* ctx = nullptr;
    bool entered = false;
  };
  std::map<std::uintptr_t, NativeImport> native_imports;
};

namespace {

constexpr std::size_t kPoolAlignment = 512;         // every block starts and ends on it
constexpr std::uint32_t kShareMagic = 0x6c6f6f70u;  // "pool"
// In an exported pool's record (ShareRecord::size, unused for pools): a host NUMA pool, its node
// in the low 32 bits.
constexpr std::uint64_t kHostNumaPoolTag = std::uint64_t{1} << 63;

// cuMemFreeAsync of cuMemAlloc memory: released once its event has completed.
struct Deferred {
  std::uintptr_t base = 0;
  Context* ctx = nullptr;
  std::unique_ptr<Event> event;
};

// What a cuEventRecord carried: for each stream, the last free on it the record follows.
using Deps = std::map<unsigned long long, std::uint64_t>;

struct State {
  // Guards everything here and every pool's contents. Lock order: Core::alloc_mutex before
  // this one (pointer queries hold it), so allocations are (un)registered outside this lock.
  std::mutex mutex;
  std::vector<std::unique_ptr<MemPool>> pools;         // live and destroyed-but-busy ones
  std::vector<MemPool*> default_pools, current_pools;  // per device, created lazily
  // Default and current pools of the other locations and allocation types (host, host NUMA
  // node, managed memory), keyed by location_key(); created lazily.
  std::map<std::uint64_t, MemPool*> located_defaults, located_currents;
  std::map<std::uintptr_t, MemPool*> owner;  // live block base -> pool
  std::vector<Deferred> deferred;
  std::atomic<bool> has_cached{false};  // fast path of the synchronize hook
  std::atomic<bool> tracking{false};    // a free happened: event records carry dependencies
  // Per device: its default pool while that is the driver's own and the device's current pool,
  // else null; read without the lock by cuMemAllocAsync (default pools are never deleted).
  std::array<std::atomic<MemPool*>, 64> native_default_current{};
  std::uint64_t next_seq = 1;
  unsigned long long next_uid = 1;
  std::map<unsigned long long, std::uint64_t> last_free;  // stream id -> seq of its last free
  std::map<unsigned long long, Deps> known;  // stream id -> frees it follows through waits
  std::map<const Event*, Deps> recorded;     // event -> what its last record follows
};

State& state() {
  static State& s = *new State;  // outlives static destructors: exit handlers may still call in
  return s;
}

backend::NativePools* native_pools() noexcept { return Core::get().backend().native_pools(); }

// The backend context current on this thread, for the native pools' calls; null without one.
backend::DeviceContext* current_backend_context() noexcept {
  Context* c = nullptr;
  return current_context(c) == CUDA_SUCCESS && c ? c->impl.get() : nullptr;
}

// A location as the backend numbers devices.
CUmemLocation backend_location(CUmemLocation loc) noexcept {
  if (loc.type == CU_MEM_LOCATION_TYPE_DEVICE && Core::get().valid_device(loc.id))
    loc.id = Core::get().backend_ordinal(loc.id);
  return loc;
}

// On a backend with native pools, a default pool is the driver's default pool of its location.
CUresult attach_native_default(MemPool& p, const char* fn) {
  backend::NativePools* np = native_pools();
  if (!np) return CUDA_SUCCESS;
  std::uint64_t h = 0;
  const auto status = np->default_pool(current_backend_context(),
                                       backend_location(p.props.location), p.props.allocType, h);
  if (!status.ok()) return Core::get().map(status, fn);
  p.native = true;
  p.native_handle = h;
  return CUDA_SUCCESS;
}

void bump_high(MemPool& p) noexcept {
  p.reserved_high = std::max(p.reserved_high, p.reserved);
  p.used_high = std::max(p.used_high, p.used);
}

// What the pool's memory is: device, pinned host or managed.
AllocKind kind_of(const MemPool& p) noexcept {
  if (p.props.allocType == CU_MEM_ALLOCATION_TYPE_MANAGED) return AllocKind::managed;
  return p.props.location.type == CU_MEM_LOCATION_TYPE_DEVICE ? AllocKind::device
                                                              : AllocKind::host_alloc;
}

// Gives a block back to the backend that allocated it, by the path of its kind.
void free_block(const Block& b) {
  void* mem = reinterpret_cast<void*>(b.base);
  switch (b.kind) {
    case AllocKind::host_alloc:
      (void)b.ctx->impl->free_host(mem);
      break;
    case AllocKind::managed:
      (void)b.ctx->impl->free_managed(mem);
      break;
    default:
      (void)b.ctx->impl->free(mem);
      break;
  }
}

// A free event: destroyed now when complete, else handed to its context's retired list,
// which frees it once complete (as cuEventDestroy does).
void retire(std::unique_ptr<Event> e) {
  if (!e || e->impl->query().ok()) return;
  Context& ctx = *e->ctx;
  std::lock_guard lock(ctx.order_mutex);
  ctx.retired_events.push_back(std::move(e));
}

// Whether a cached block's free has run on the device.
bool free_completed(Block& b) {
  if (b.stream_id == 0) return true;
  if (!b.event || !b.event->impl->query().ok()) return false;
  b.stream_id = 0;  // stays true: no need to ask again
  b.event.reset();
  return true;
}

// Gives cached memory whose free has completed back to the backend until `p` holds at most
// `keep` bytes. State mutex held.
void release_cached(MemPool& p, std::size_t keep) {
  for (auto it = p.cached.begin(); it != p.cached.end() && p.reserved > keep;) {
    if (!free_completed(*it)) {
      ++it;
      continue;
    }
    free_block(*it);
    p.reserved -= it->size;
    it = p.cached.erase(it);
  }
}

// Destroyed pools whose memory is all back are deleted; deferred frees that completed run.
// State mutex held.
void sweep(State& st) {
  for (auto it = st.deferred.begin(); it != st.deferred.end();) {
    if (it->event && !it->event->impl->query().ok()) {
      ++it;
      continue;
    }
    (void)it->ctx->impl->free(reinterpret_cast<void*>(it->base));
    it = st.deferred.erase(it);
  }
  for (auto it = st.pools.begin(); it != st.pools.end();) {
    MemPool& p = **it;
    if (p.destroyed) release_cached(p, 0);
    if (p.destroyed && p.cached.empty() && p.live.empty() && p.native_live.load() == 0) {
      it = st.pools.erase(it);
    } else {
      ++it;
    }
  }
}

// The pool a handle names, under the state mutex; null for anything else.
MemPool* pool_of(CUmemoryPool h) noexcept {
  return Core::get().mempools.find(reinterpret_cast<std::uintptr_t>(h));
}

CUresult register_pool(State& st, std::unique_ptr<MemPool> p, MemPool*& out) {
  const auto h = Core::get().mempools.insert(p.get());
  if (!h) return CUDA_ERROR_OUT_OF_MEMORY;
  p->handle = reinterpret_cast<CUmemoryPool>(h);
  p->uid = st.next_uid++;
  out = p.get();
  st.pools.push_back(std::move(p));
  return CUDA_SUCCESS;
}

// Keeps State::native_default_current of `device` true to the pools. State mutex held.
void refresh_native_default(State& st, int device) noexcept {
  const auto d = static_cast<std::size_t>(device);
  if (d >= st.native_default_current.size() || d >= st.default_pools.size()) return;
  MemPool* dflt = st.default_pools[d];
  const bool fast = dflt && dflt->native && !st.current_pools[d];
  st.native_default_current[d].store(fast ? dflt : nullptr, std::memory_order_release);
}

// The default pool of `device`, created on first use. State mutex held.
CUresult default_pool(State& st, int device, MemPool*& out) {
  Core& core = Core::get();
  if (st.default_pools.empty()) {
    st.default_pools.assign(static_cast<std::size_t>(core.device_count()), nullptr);
    st.current_pools.assign(static_cast<std::size_t>(core.device_count()), nullptr);
  }
  MemPool*& slot = st.default_pools[static_cast<std::size_t>(device)];
  if (!slot) {
    auto p = std::make_unique<MemPool>();
    p->device = device;
    p->is_default = true;
    p->props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    p->props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
    p->props.location = {CU_MEM_LOCATION_TYPE_DEVICE, device};
    if (CUresult r = attach_native_default(*p, "cuDeviceGetDefaultMemPool")) return r;
    if (CUresult r = register_pool(st, std::move(p), slot)) return r;
    refresh_native_default(st, device);
  }
  out = slot;
  return CUDA_SUCCESS;
}

// The current pool of `device` (cuDeviceSetMemPool's, else the default). State mutex held.
CUresult current_pool(State& st, int device, MemPool*& out) {
  if (CUresult r = default_pool(st, device, out)) return r;
  if (MemPool* c = st.current_pools[static_cast<std::size_t>(device)]) out = c;
  return CUDA_SUCCESS;
}

// How a cached block may serve an allocation on stream `s`; lower is better, -1: it may not.
int reuse_rank(State& st, const MemPool& p, Block& b, const Stream& s) {
  if (b.stream_id == 0 || b.stream_id == s.id) return 0;  // the stream order covers it
  if (p.allow_opportunistic && free_completed(b)) return 1;
  if (p.follow_event_dependencies) {
    auto k = st.known.find(s.id);
    if (k != st.known.end()) {
      auto f = k->second.find(b.stream_id);
      if (f != k->second.end() && f->second >= b.seq) return 2;
    }
  }
  if (p.allow_internal_dependencies && b.event) return 3;
  return -1;
}

void merge(Deps& into, const Deps& from) {
  for (const auto& [stream, seq] : from) {
    std::uint64_t& v = into[stream];
    v = std::max(v, seq);
  }
}

// Whether the host has NUMA node `id` (what NVIDIA's driver checks for HOST_NUMA locations).
bool host_numa_node_exists(int id) {
  if (id < 0) return false;
  std::error_code ec;
  const auto node = "/sys/devices/system/node/node" + std::to_string(id);
  // Without sysfs (containers), node 0 is the one node a machine always has.
  if (!std::filesystem::exists("/sys/devices/system/node", ec)) return id == 0;
  return std::filesystem::exists(node, ec);
}

// The locations and allocation types pools exist for (measured on NVIDIA's driver 580, H200):
// pinned memory on a device, on the host (the id is ignored) or on a host NUMA node; managed
// memory preferring a device, the host, a host NUMA node or nothing (NONE).
CUresult check_location(const CUmemLocation* loc, CUmemAllocationType type, const char* fn) {
  if (!loc) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null location");
  if (type != CU_MEM_ALLOCATION_TYPE_PINNED && type != CU_MEM_ALLOCATION_TYPE_MANAGED)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "unknown allocation type");
  switch (loc->type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
      if (!Core::get().valid_device(loc->id))
        return reject(CUDA_ERROR_INVALID_VALUE, fn, "no such device");
      return CUDA_SUCCESS;
    case CU_MEM_LOCATION_TYPE_HOST:
      return CUDA_SUCCESS;
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
      if (!host_numa_node_exists(loc->id))
        return reject(CUDA_ERROR_INVALID_VALUE, fn, "no such host NUMA node");
      return CUDA_SUCCESS;
    case CU_MEM_LOCATION_TYPE_NONE:
      if (type == CU_MEM_ALLOCATION_TYPE_MANAGED) return CUDA_SUCCESS;
      return reject(CUDA_ERROR_INVALID_VALUE, fn, "pinned memory needs a location");
    default:
      return reject(CUDA_ERROR_INVALID_VALUE, fn, "unknown location type");
  }
}

bool device_pinned(const CUmemLocation& loc, CUmemAllocationType type) noexcept {
  return type == CU_MEM_ALLOCATION_TYPE_PINNED && loc.type == CU_MEM_LOCATION_TYPE_DEVICE;
}

// Names a (checked) location and allocation type other than a device's pinned memory: the
// host's id is ignored, as NVIDIA's driver ignores it.
std::uint64_t location_key(const CUmemLocation& loc, CUmemAllocationType type) noexcept {
  const bool has_id =
      loc.type == CU_MEM_LOCATION_TYPE_DEVICE || loc.type == CU_MEM_LOCATION_TYPE_HOST_NUMA;
  return (static_cast<std::uint64_t>(type) << 48) | (static_cast<std::uint64_t>(loc.type) << 32) |
         static_cast<std::uint32_t>(has_id ? loc.id : 0);
}

// The default pool of a location other than a device's pinned memory. State mutex held.
CUresult located_default_pool(State& st, const CUmemLocation& loc, CUmemAllocationType type,
                              MemPool*& out) {
  MemPool*& slot = st.located_defaults[location_key(loc, type)];
  if (!slot) {
    auto p = std::make_unique<MemPool>();
    p->is_default = true;
    p->props.allocType = type;
    p->props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
    p->props.location = loc;
    if (loc.type == CU_MEM_LOCATION_TYPE_HOST || loc.type == CU_MEM_LOCATION_TYPE_NONE)
      p->props.location.id = 0;
    p->device = loc.type == CU_MEM_LOCATION_TYPE_DEVICE ? loc.id : -1;
    if (CUresult r = attach_native_default(*p, "cuMemGetDefaultMemPool")) return r;
    if (CUresult r = register_pool(st, std::move(p), slot)) return r;
  }
  out = slot;
  return CUDA_SUCCESS;
}

// The record behind an exported pool's descriptor and an exported pointer (the 64 bytes of
// CUmemPoolPtrExportData). `ipc` is the start of the block's IPC memory handle
// (DeviceContext::ipc_export_memory), through which another process maps the block; all zero
// when the backend has none or its handle does not fit.
struct ShareRecord {
  std::uint32_t magic = kShareMagic;
  std::int32_t pid = 0;
  std::uint64_t uid = 0;
  std::uint64_t base = 0;  // pointers: the exporter's address; pools: the device ordinal
  std::uint64_t size = 0;
  unsigned char ipc[32] = {};
};
static_assert(sizeof(ShareRecord) == sizeof(CUmemPoolPtrExportData));

bool has_ipc(const ShareRecord& rec) {
  for (unsigned char b : rec.ipc)
    if (b != 0) return true;
  return false;
}

}  // namespace

// --- the stream-ordered allocator ---

CUresult pool_alloc_async(MemPool* pool, std::size_t bytes, Stream& s, CUdeviceptr& out) {
  const char* fn = "cuMemAllocAsync";
  if (bytes == 0) {  // NVIDIA's driver 580 accepts it and hands out no memory
    out = 0;
    return CUDA_SUCCESS;
  }
  if (bytes > SIZE_MAX - (kPoolAlignment - 1))
    return reject(CUDA_ERROR_OUT_OF_MEMORY, fn, "size overflows");
  const std::size_t size = (bytes + kPoolAlignment - 1) / kPoolAlignment * kPoolAlignment;
  Core& core = Core::get();
  State& st = state();
  Block block;
  MemPool* p = pool;
  bool native = false;
  std::uint64_t native_handle = 0;
  const auto device = static_cast<std::size_t>(s.ctx->device);
  MemPool* fast = pool || device >= st.native_default_current.size()
                      ? nullptr
                      : st.native_default_current[device].load(std::memory_order_acquire);
  if (fast) {  // the driver's default pool, current: nothing of the core's to decide
    p = fast;
    native = true;
    native_handle = fast->native_handle;
    block.kind = AllocKind::device;
    fast->native_live.fetch_add(1);
  } else {
    std::lock_guard lock(st.mutex);
    sweep(st);
    if (!p) {
      if (CUresult r = current_pool(st, s.ctx->device, p)) return r;
    } else if (std::none_of(st.pools.begin(), st.pools.end(),
                            [p](const auto& q) { return q.get() == p && !q->destroyed; })) {
      return reject(CUDA_ERROR_INVALID_VALUE, fn, "the pool was destroyed");  // raced a destroy
    }
    if (p->imported) return reject(CUDA_ERROR_INVALID_VALUE, fn, "imported pools cannot allocate");
    // Host and managed memory serve a stream of any device.
    if (kind_of(*p) == AllocKind::device && p->device != s.ctx->device) {
      core.log().warn(
          "{}: a pool of device {} on a stream of device {} is not supported by cudamux yet: "
          "returning CUDA_ERROR_NOT_SUPPORTED",
          fn, p->device, s.ctx->device);
      return CUDA_ERROR_NOT_SUPPORTED;
    }
    if (p->native) {
      native = true;
      native_handle = p->native_handle;
      block.kind = kind_of(*p);
      p->native_live.fetch_add(1);
    } else {
      // The best cached block: the lowest rank, then the smallest; blocks more than twice the
      // request stay for larger requests.
      auto best = p->cached.end();
      int best_rank = 4;
      for (auto it = p->cached.begin(); it != p->cached.end(); ++it) {
        if (it->size < size || it->size / 2 >= size) continue;
        const int rank = reuse_rank(st, *p, *it, s);
        if (rank < 0) continue;
        if (rank < best_rank || (rank == best_rank && it->size < best->size)) {
          best = it;
          best_rank = rank;
        }
      }
      if (best != p->cached.end()) {
        if (best_rank == 3) {  // the allocator's own dependency on the free
          Event& e = *best->event;
          if (auto r = core.map(submit(s, [&](backend::Queue& q) { return q.wait(*e.impl); }), fn))
            return r;
        }
        block = std::move(*best);
        p->cached.erase(best);
        retire(std::move(block.event));
        block.stream_id = 0;
      } else {
        if (const std::size_t max = p->props.maxSize; max && p->reserved + size > max) {
          if (size <= max) release_cached(*p, max - size);  // completed frees make room
          if (p->reserved + size > max)
            return reject(CUDA_ERROR_OUT_OF_MEMORY, fn, "the pool's maxSize is reached");
        }
        void* mem = nullptr;
        const AllocKind kind = kind_of(*p);
        const auto allocate = [&] {
          switch (kind) {
            case AllocKind::host_alloc:  // pinned, mapped, every context's (portable)
              return s.ctx->impl->allocate_host(
                  size, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP, &mem);
            case AllocKind::managed:
              return s.ctx->impl->allocate_managed(size, CU_MEM_ATTACH_GLOBAL, &mem);
            default:
              return s.ctx->impl->allocate(size, &mem);
          }
        };
        auto status = allocate();
        if (!status.ok()) {  // cached memory of the pool goes back first, then one more try
          release_cached(*p, 0);
          status = allocate();
        }
        if (!status.ok()) return core.map(status, fn);
        block.base = reinterpret_cast<std::uintptr_t>(mem);
        block.size = size;
        block.ctx = s.ctx;
        block.kind = kind;
        p->reserved += size;
      }
      p->used += block.size;
      bump_high(*p);
      st.owner[block.base] = p;
      st.has_cached.store(true, std::memory_order_relaxed);
      p->live.emplace(block.base,
                      Block{block.base, block.size, block.ctx, block.kind, 0, 0, nullptr});
    }
  }
  if (native) {  // the driver's pool, in the stream's order (outside the lock: it may block)
    void* mem = nullptr;
    const auto status = submit(s, [&](backend::Queue& q) {
      backend::Status result;
      if (!q.allocate_from_pool(native_handle, bytes, &mem, result))
        result = core.backend().errors().not_supported();
      return result;
    });
    if (!status.ok()) {
      p->native_live.fetch_sub(1);
      return core.map(status, fn);
    }
    block.base = reinterpret_cast<std::uintptr_t>(mem);
    block.ctx = s.ctx;
  }
  // The flags cuMemHostAlloc / cuMemAllocManaged would have recorded for such memory.
  unsigned flags = 0;
  if (block.kind == AllocKind::host_alloc)
    flags = CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP;
  if (block.kind == AllocKind::managed) flags = CU_MEM_ATTACH_GLOBAL;
  Allocation a{block.base,        bytes, block.kind, block.ctx, block.ctx->handle,
               block.ctx->device, flags, 0};
  a.buffer_id = core.next_buffer_id.fetch_add(1);
  if (native) a.native_pool = p;
  {
    std::unique_lock lock(core.alloc_mutex);
    core.allocations[a.base] = a;
  }
  out = static_cast<CUdeviceptr>(block.base);
  return CUDA_SUCCESS;
}

namespace {

// Takes a live allocation out of the registry: pool memory (its pool is returned) or, when
// `plain` is set, a cuMemAlloc allocation (returned in `alloc`). Imported pointers are only
// forgotten (`imported` set).
CUresult unregister_for_free(CUdeviceptr p, bool plain, MemPool*& pool, Block& block,
                             Allocation& alloc, bool& imported, bool& unmap_import,
                             Context*& native_import, const char* fn) {
  Core& core = Core::get();
  State& st = state();
  const auto base = static_cast<std::uintptr_t>(p);
  std::unique_lock alloc_lock(core.alloc_mutex);
  // A block of the driver's pool: the registry alone knows it.
  if (auto it = core.allocations.find(base);
      it != core.allocations.end() && it->second.native_pool) {
    pool = it->second.native_pool;
    block.base = base;
    block.ctx = it->second.ctx;
    core.allocations.erase(it);
    return CUDA_SUCCESS;
  }
  {
    std::lock_guard lock(st.mutex);
    // An importer frees its import before the exporter frees the memory (CUDA's rule).
    for (auto& q : st.pools) {
      auto it = q->imports.find(base);
      if (it == q->imports.end()) continue;
      if (--it->second == 0) {
        q->imports.erase(it);
        // Another process's block: this process mapped it (cuMemPoolImportPointer).
        unmap_import = !q->native && q->origin_pid != getpid();
        // The driver's import: the driver frees it, in the context that imported it.
        if (auto r = q->native_imports.find(base); r != q->native_imports.end()) {
          native_import = r->second.ctx;
          if (r->second.entered) core.allocations.erase(base);
          q->native_imports.erase(r);
        }
      }
      imported = true;
      return CUDA_SUCCESS;
    }
    auto o = st.owner.find(base);
    if (o != st.owner.end()) {
      pool = o->second;
      auto l = pool->live.find(base);
      block = std::move(l->second);
      pool->live.erase(l);
      st.owner.erase(o);
      core.allocations.erase(base);
      return CUDA_SUCCESS;
    }
  }
  if (!plain) return CUDA_ERROR_INVALID_VALUE;
  auto it = core.allocations.find(base);
  if (it == core.allocations.end() || it->second.kind != AllocKind::device ||
      it->second.virtual_mapping)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "not the base of a live device allocation");
  alloc = it->second;
  core.allocations.erase(it);
  return CUDA_SUCCESS;
}

}  // namespace

CUresult pool_free_async(CUdeviceptr p, Stream& s) {
  const char* fn = "cuMemFreeAsync";
  if (p == 0) return CUDA_SUCCESS;              // freeing null does nothing (NVIDIA's driver 580)
  if (is_graph_memory(p)) return CUDA_SUCCESS;  // graph memory: the graph keeps it
  State& st = state();
  MemPool* pool = nullptr;
  Block block;
  Allocation alloc;
  bool imported = false, unmap_import = false;
  Context* native_import = nullptr;
  if (CUresult r = unregister_for_free(p, true, pool, block, alloc, imported, unmap_import,
                                       native_import, fn))
    return r;
  // The driver's pools: the driver frees in the stream's order (a destroyed pool whose last
  // block this was goes at the next sweep).
  if ((pool && pool->native) || native_import) {
    const auto status = submit(s, [&](backend::Queue& q) {
      backend::Status result;
      if (!q.free_to_pool(reinterpret_cast<void*>(p), result))
        result = Core::get().backend().errors().not_supported();
      return result;
    });
    if (pool) pool->native_live.fetch_sub(1);  // the last touch: a sweep may delete it after
    return Core::get().map(status, fn);
  }
  // The mapping of another process's block goes once this process's work is done with it
  // (cuIpcCloseMemHandle waits for every context).
  if (imported) return unmap_import ? impl::cuIpcCloseMemHandle(p) : CUDA_SUCCESS;
  // The free's position in the stream: an event recorded there.
  auto e = std::make_unique<Event>();
  e->ctx = s.ctx;
  e->flags = CU_EVENT_DISABLE_TIMING;
  auto status = s.ctx->impl->create_event(CU_EVENT_DISABLE_TIMING, e->impl);
  if (status.ok()) status = submit(s, [&](backend::Queue& q) { return q.record(*e->impl); });
  if (!status.ok()) {
    // The memory cannot be ordered: wait for the stream instead (the program sees the free
    // succeed, as the work before it still runs first).
    (void)s.queue->synchronize();
    e.reset();
  }
  std::lock_guard lock(st.mutex);
  st.tracking.store(true, std::memory_order_relaxed);
  st.has_cached.store(true, std::memory_order_relaxed);
  const std::uint64_t seq = st.next_seq++;
  st.last_free[s.id] = seq;
  if (!pool) {
    st.deferred.push_back({alloc.base, alloc.ctx, std::move(e)});
    sweep(st);
    return CUDA_SUCCESS;
  }
  pool->used -= block.size;
  block.stream_id = e ? s.id : 0;
  block.seq = seq;
  block.event = std::move(e);
  pool->cached.push_back(std::move(block));
  return CUDA_SUCCESS;
}

bool pool_free_sync(CUdeviceptr p, CUresult& result) {
  MemPool* pool = nullptr;
  Block block;
  Allocation alloc;
  bool imported = false, unmap_import = false;
  Context* native_import = nullptr;
  if (unregister_for_free(p, false, pool, block, alloc, imported, unmap_import, native_import,
                          "cuMemFree") != CUDA_SUCCESS)
    return false;
  result = CUDA_SUCCESS;
  // The driver's pools: its cuMemFree takes pool memory and imports; like every cuMemFree here it
  // waits for every context first (the driver itself does not synchronize for pool memory).
  Context* native_ctx =
      native_import ? native_import : (pool && pool->native ? block.ctx : nullptr);
  if (native_ctx) {
    quiesce_all_contexts();
    result = Core::get().map(native_ctx->impl->free(reinterpret_cast<void*>(p)), "cuMemFree");
    if (pool) pool->native_live.fetch_sub(1);
    return true;
  }
  if (imported) {
    if (unmap_import) result = impl::cuIpcCloseMemHandle(p);
    return true;
  }
  // cuMemFree of pool memory synchronizes (CUDA's rule), of every context (issue 9).
  quiesce_all_contexts();
  State& st = state();
  int device = 0;
  {
    std::lock_guard lock(st.mutex);
    pool->used -= block.size;
    block.stream_id = 0;
    pool->cached.push_back(std::move(block));
    device = pool->device;
  }
  pool_after_synchronize(device);
  return true;
}

// --- hooks ---

void pool_note_event_record(const Event& e, const Stream& s) noexcept {
  State& st = state();
  if (!st.tracking.load(std::memory_order_relaxed)) return;
  std::lock_guard lock(st.mutex);
  Deps deps;
  if (auto k = st.known.find(s.id); k != st.known.end()) deps = k->second;
  if (auto f = st.last_free.find(s.id); f != st.last_free.end()) deps[s.id] = f->second;
  if (deps.empty()) {
    st.recorded.erase(&e);
  } else {
    st.recorded[&e] = std::move(deps);
  }
}

void pool_note_stream_wait(const Stream& s, const Event& e) noexcept {
  State& st = state();
  if (!st.tracking.load(std::memory_order_relaxed)) return;
  std::lock_guard lock(st.mutex);
  auto r = st.recorded.find(&e);
  if (r == st.recorded.end()) return;
  merge(st.known[s.id], r->second);
}

void pool_after_synchronize(int device) noexcept {
  State& st = state();
  if (!st.has_cached.load(std::memory_order_relaxed)) return;
  std::lock_guard lock(st.mutex);
  sweep(st);
  bool any = !st.deferred.empty();
  for (auto& p : st.pools) {
    if (p->device != device && p->device >= 0) continue;  // host pools: every device's sync
    // The host has seen these frees complete: any stream may reuse the blocks now.
    for (Block& b : p->cached) (void)free_completed(b);
    if (p->reserved > p->release_threshold)
      release_cached(*p, static_cast<std::size_t>(p->release_threshold));
    any = any || !p->cached.empty() || !p->live.empty();
  }
  if (!any) st.has_cached.store(false, std::memory_order_relaxed);
}

void pool_forget_context(Context& ctx) noexcept {
  State& st = state();
  Core& core = Core::get();
  // The driver's pool memory of the context: out of the registry (whose sweep would free host
  // and managed blocks by the wrong path), then freed by the driver's cuMemFree.
  std::vector<std::pair<std::uintptr_t, MemPool*>> native_blocks;
  {
    std::unique_lock alloc_lock(core.alloc_mutex);
    for (auto it = core.allocations.begin(); it != core.allocations.end();) {
      if (it->second.ctx == &ctx && it->second.native_pool) {
        native_blocks.emplace_back(it->first, it->second.native_pool);
        it = core.allocations.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (const auto& [base, pool] : native_blocks) {
    (void)ctx.impl->free(reinterpret_cast<void*>(base));
    pool->native_live.fetch_sub(1);
  }
  std::lock_guard lock(st.mutex);
  for (auto& p : st.pools) {
    std::erase_if(p->native_imports, [&](const auto& kv) { return kv.second.ctx == &ctx; });
    for (auto it = p->cached.begin(); it != p->cached.end();) {
      if (it->event && it->event->ctx == &ctx) {  // complete: the context was quiesced
        it->event.reset();
        it->stream_id = 0;
      }
      if (it->ctx != &ctx) {
        ++it;
        continue;
      }
      free_block(*it);
      p->reserved -= it->size;
      it = p->cached.erase(it);
    }
    // Live blocks of the context are freed by its allocation sweep (they are registered).
    for (auto it = p->live.begin(); it != p->live.end();) {
      if (it->second.ctx != &ctx) {
        ++it;
        continue;
      }
      p->used -= it->second.size;
      p->reserved -= it->second.size;
      st.owner.erase(it->first);
      it = p->live.erase(it);
    }
  }
  for (auto& d : st.deferred) {
    if (d.event && d.event->ctx == &ctx) d.event.reset();
  }
  for (auto it = st.deferred.begin(); it != st.deferred.end();) {
    if (it->ctx == &ctx) {
      (void)ctx.impl->free(reinterpret_cast<void*>(it->base));
      it = st.deferred.erase(it);
    } else {
      ++it;
    }
  }
  sweep(st);
}

namespace {

// cuMemPoolImportPointer on a pool of the driver's own: the driver maps the allocation into the
// current context, and it becomes device memory of that context here.
CUresult import_native_pointer(CUmemoryPool pool, const CUmemPoolPtrExportData& data,
                               CUdeviceptr& out) {
  const char* fn = "cuMemPoolImportPointer";
  Context* ctx = nullptr;
  if (CUresult r = current_context(ctx)) return reject(r, fn, "no current context");
  Core& core = Core::get();
  State& st = state();
  std::uint64_t handle = 0;
  {
    std::lock_guard lock(st.mutex);
    MemPool* p = pool_of(pool);
    if (!p) return reject(CUDA_ERROR_INVALID_VALUE, fn, "invalid pool");
    handle = p->native_handle;
  }
  void* mem = nullptr;
  std::size_t bytes = 0;
  if (auto status = native_pools()->import_pointer(*ctx->impl, handle, data, &mem, bytes);
      !status.ok())
    return core.map(status, fn);
  const auto base = reinterpret_cast<std::uintptr_t>(mem);
  bool entered = false;
  {
    std::unique_lock alloc_lock(core.alloc_mutex);
    if (!core.allocations.contains(base)) {
      Allocation a{base, bytes, AllocKind::device, ctx, ctx->handle, ctx->device, 0, 0};
      a.buffer_id = core.next_buffer_id.fetch_add(1);
      core.allocations[base] = a;
      entered = true;
    }
    std::lock_guard lock(st.mutex);
    MemPool* p = pool_of(pool);
    if (p) {
      ++p->imports[base];
      p->native_imports.try_emplace(base, MemPool::NativeImport{ctx, entered});
    }
  }
  out = static_cast<CUdeviceptr>(base);
  return CUDA_SUCCESS;
}

}  // namespace

CUmemoryPool pool_handle(const MemPool& pool) noexcept { return pool.handle; }

CUmemoryPool pool_of_pointer(std::uintptr_t base) noexcept {
  State& st = state();
  std::lock_guard lock(st.mutex);
  auto it = st.owner.find(base);
  return it == st.owner.end() ? nullptr : it->second->handle;
}

}  // namespace cudamux::core

namespace cudamux::impl {
using core::Core;
using core::MemPool;
using core::reject;
using core::Stream;

namespace {

CUresult alloc_async(CUdeviceptr* dptr, size_t bytes, CUmemoryPool pool, CUstream h,
                     bool per_thread, const char* fn) {
  if (!dptr) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  Stream* s = nullptr;
  if (CUresult r = core::resolve_stream(h, per_thread, s)) return r;
  MemPool* p = nullptr;
  if (pool) {
    std::lock_guard lock(core::state().mutex);
    p = core::pool_of(pool);
  }
  if (pool && !p) return reject(CUDA_ERROR_INVALID_VALUE, fn, "invalid pool");
  // In a capture the allocation becomes a graph memory allocation node (graph_memory.cpp).
  if (core::capture_applies(*s)) {
    if (bytes == 0) return reject(CUDA_ERROR_INVALID_VALUE, fn, "zero size");
    return core::capture_mem_alloc(*s, bytes, *dptr, fn);
  }
  return core::pool_alloc_async(p, bytes, *s, *dptr);
}

CUresult free_async(CUdeviceptr p, CUstream h, bool per_thread) {
  Stream* s = nullptr;
  if (CUresult r = core::resolve_stream(h, per_thread, s)) return r;
  if (core::capture_applies(*s)) return core::capture_mem_free(*s, p, "cuMemFreeAsync");
  return core::pool_free_async(p, *s);
}

}  // namespace

CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  return alloc_async(dptr, bytesize, nullptr, hStream, false, "cuMemAllocAsync");
}
CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  return alloc_async(dptr, bytesize, nullptr, hStream, true, "cuMemAllocAsync");
}
CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                 CUstream hStream) {
  if (!pool) return reject(CUDA_ERROR_INVALID_VALUE, "cuMemAllocFromPoolAsync", "null pool");
  return alloc_async(dptr, bytesize, pool, hStream, false, "cuMemAllocFromPoolAsync");
}
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                      CUstream hStream) {
  if (!pool) return reject(CUDA_ERROR_INVALID_VALUE, "cuMemAllocFromPoolAsync", "null pool");
  return alloc_async(dptr, bytesize, pool, hStream, true, "cuMemAllocFromPoolAsync");
}
CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
  return free_async(dptr, hStream, false);
}
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) {
  return free_async(dptr, hStream, true);
}

// --- pools ---

CUresult cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* props) {
  const char* fn = "cuMemPoolCreate";
  if (!pool || !props) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null argument");
  if (CUresult r = core::check_location(&props->location, props->allocType, fn)) return r;
  const unsigned types = props->handleTypes;
  if (types & CU_MEM_HANDLE_TYPE_FABRIC) {
    Core::get().log().warn(
        "{}: fabric handles are not supported: returning CUDA_ERROR_NOT_SUPPORTED", fn);
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  if (types & ~static_cast<unsigned>(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "handle types other than none or a POSIX fd");
  if (props->usage & ~static_cast<unsigned>(CU_MEM_POOL_CREATE_USAGE_HW_DECOMPRESS))
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "unknown usage bits");
  for (unsigned char c : props->reserved)
    if (c != 0) return reject(CUDA_ERROR_INVALID_VALUE, fn, "reserved bytes must be zero");
  // Pools of the host (HOST location) and managed pools are not IPC capable, those of a host NUMA
  // node are (what cuda.core's IPC-enabled pinned memory resource creates); managed pools have no
  // maximum size and no usage (NVIDIA's driver 580 on an H100 refuses each with INVALID_VALUE).
  const bool ipc_capable = core::device_pinned(props->location, props->allocType) ||
                           (props->allocType == CU_MEM_ALLOCATION_TYPE_PINNED &&
                            props->location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA);
  if (!ipc_capable && types != 0)
    return reject(CUDA_ERROR_INVALID_VALUE, fn,
                  "pools of the host location and managed pools have no handle types");
  if (props->allocType == CU_MEM_ALLOCATION_TYPE_MANAGED && (props->maxSize != 0 || props->usage))
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "managed pools have no maxSize and no usage");
  auto p = std::make_unique<MemPool>();
  p->device = props->location.type == CU_MEM_LOCATION_TYPE_DEVICE ? props->location.id : -1;
  p->props = *props;
  p->props.win32SecurityAttributes = nullptr;
  backend::NativePools* np = core::native_pools();
  backend::DeviceContext* ctx = core::current_backend_context();
  if (np) {  // the driver's own pool: its rules for what the properties may say apply
    CUmemPoolProps native_props = p->props;
    native_props.location = core::backend_location(props->location);
    if (auto status = np->create(ctx, native_props, p->native_handle); !status.ok())
      return Core::get().map(status, fn);
    p->native = true;
  }
  core::State& st = core::state();
  std::lock_guard lock(st.mutex);
  const std::uint64_t native_handle = p->native ? p->native_handle : 0;
  MemPool* out = nullptr;
  if (CUresult r = core::register_pool(st, std::move(p), out)) {
    if (np) (void)np->destroy(ctx, native_handle);
    return r;
  }
  *pool = out->handle;
  return CUDA_SUCCESS;
}

CUresult cuMemPoolDestroy(CUmemoryPool pool) {
  const char* fn = "cuMemPoolDestroy";
  core::State& st = core::state();
  std::lock_guard lock(st.mutex);
  MemPool* p = core::pool_of(pool);
  if (!p) return reject(CUDA_ERROR_INVALID_VALUE, fn, "invalid pool");
  if (p->is_default) return reject(CUDA_ERROR_INVALID_VALUE, fn, "a device's default pool");
  // The driver's pool: the driver keeps it until its outstanding allocations are freed.
  if (p->native) {
    if (auto status =
            core::native_pools()->destroy(core::current_backend_context(), p->native_handle);
        !status.ok())
      return Core::get().map(status, fn);
  }
  Core::get().mempools.erase(reinterpret_cast<std::uintptr_t>(pool));
  // The device whose current pool it was gets its default pool back (CUDA's rule).
  for (std::size_t d = 0; d < st.current_pools.size(); ++d) {
    if (st.current_pools[d] != p) continue;
    st.current_pools[d] = nullptr;
    core::refresh_native_default(st, static_cast<int>(d));
  }
  std::erase_if(st.located_currents, [p](const auto& kv) { return kv.second == p; });
  // Outstanding allocations keep it alive until they are freed (CUDA's rule).
  p->destroyed = true;
  p->imports.clear();
  core::sweep(st);
  return CUDA_SUCCESS;
}

CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
  const char* fn = "cuMemPoolSetAttribute";
  if (!value) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null value");
  core::State& st = core::state();
  std::lock_guard lock(st.mutex);
  MemPool* p = core::pool_of(pool);
  if (!p) return reject(CUDA_ERROR_INVALID_VALUE, fn, "invalid pool");
  if (p->native)
    return Core::get().map(core::native_pools()->set_attribute(core::current_backend_context(),
                                                               p->native_handle, attr, value),
                           fn);
  const auto u64 = [&] { return *static_cast<const cuuint64_t*>(value); };
  switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
      p->follow_event_dependencies = *static_cast<const int*>(value) != 0;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
      p->allow_opportunistic = *static_cast<const int*>(value) != 0;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
      p->allow_internal_dependencies = *static_cast<const int*>(value) != 0;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
      p->release_threshold = u64();
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
      if (u64() != 0)
        return reject(CUDA_ERROR_INVALID_VALUE, fn, "a high watermark resets to 0 only");
      p->reserved_high = p->reserved;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
      if (u64() != 0)
        return reject(CUDA_ERROR_INVALID_VALUE, fn, "a high watermark resets to 0 only");
      p->used_high = p->used;
      return CUDA_SUCCESS;
    default:
      return reject(CUDA_ERROR_INVALID_VALUE, fn, "not a settable pool attribute");
  }
}

CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
  const char* fn = "cuMemPoolGetAttribute";
  if (!value) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null value");
  core::State& st = core::state();
  std::lock_guard lock(st.mutex);
  MemPool* p = core::pool_of(pool);
  if (!p) return reject(CUDA_ERROR_INVALID_VALUE, fn, "invalid pool");
  if (p->native)
    return Core::get().map(core::native_pools()->get_attribute(core::current_backend_context(),
                                                               p->native_handle, attr, value),
                           fn);
  const auto put = [&](cuuint64_t v) { *static_cast<cuuint64_t*>(value) = v; };
  switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
      *static_cast<int*>(value) = p->follow_event_dependencies;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
      *static_cast<int*>(value) = p->allow_opportunistic;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
      *static_cast<int*>(value) = p->allow_internal_dependencies;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
      put(p->release_threshold);
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
      put(p->reserved);
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
      put(p->reserved_high);
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
      put(p->used);
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
      put(p->used_high);
      return CUDA_SUCCESS;
    default:
      return reject(CUDA_ERROR_INVALID_VALUE, fn, "not a pool attribute");
  }
}

CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep) {
  core::State& st = core::state();
  std::lock_guard lock(st.mutex);
  MemPool* p = core::pool_of(pool);
  if (!p) return reject(CUDA_ERROR_INVALID_VALUE, "cuMemPoolTrimTo", "invalid pool");
  if (p->native)
    return Core::get().map(core::native_pools()->trim_to(core::current_backend_context(),
                                                         p->native_handle, minBytesToKeep),
                           "cuMemPoolTrimTo");
  // Only memory whose frees have completed can go: the rest may still be in use by the device.
  core::release_cached(*p, minBytesToKeep);
  return CUDA_SUCCESS;
}

CUresult cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc* map, size_t count) {
  const char* fn = "cuMemPoolSetAccess";
  // NVIDIA's driver 580 refuses a null list even with a count of 0.
  if (!map) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null descriptor list");
  Core& core = Core::get();
  core::State& st = core::state();
  std::lock_guard lock(st.mutex);
  MemPool* p = core::pool_of(pool);
  if (!p) return reject(CUDA_ERROR_INVALID_VALUE, fn, "invalid pool");
  for (size_t i = 0; i < count; ++i) {  // all checked before any applies
    const CUmemAccessDesc& d = map[i];
    // NVIDIA's driver 580 answers a bad device, and revoking the pool's own device's access,
    // with INVALID_DEVICE.
    if (d.location.type != CU_MEM_LOCATION_TYPE_DEVICE)
      return reject(CUDA_ERROR_INVALID_VALUE, fn, "location is not a device");
    if (!core.valid_device(d.location.id))
      return reject(CUDA_ERROR_INVALID_DEVICE, fn, "no such device");
    if (d.flags != CU_MEM_ACCESS_FLAGS_PROT_NONE && d.flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
        d.flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
      return reject(CUDA_ERROR_INVALID_VALUE, fn, "unknown access flags");
    // Host and managed pools: any device may be given or denied access (NVIDIA's driver 580).
    if (core::kind_of(*p) != core::AllocKind::device) continue;
    if (d.location.id == p->device && d.flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
      return reject(CUDA_ERROR_INVALID_DEVICE, fn,
                    "the pool's own device always has read-write access");
    if (d.location.id != p->device && d.flags != CU_MEM_ACCESS_FLAGS_PROT_NONE &&
        !core.backend().devices().can_access_peer(core.backend_ordinal(d.location.id),
                                                  core.backend_ordinal(p->device)))
      return reject(CUDA_ERROR_INVALID_DEVICE, fn, "the device cannot access the pool's device");
  }
  if (p->native) {  // checked as NVIDIA's driver checks; the driver applies it
    std::vector<CUmemAccessDesc> descs(map, map + count);
    for (CUmemAccessDesc& d : descs) d.location = core::backend_location(d.location);
    return core.map(
        core::native_pools()->set_access(core::current_backend_context(), p->native_handle, descs),
        fn);
  }
  const bool device_pool = core::kind_of(*p) == core::AllocKind::device;
  for (size_t i = 0; i < count; ++i)
    if (!device_pool || map[i].location.id != p->device)
      p->peer_access[map[i].location.id] = map[i].flags;
  return CUDA_SUCCESS;
}

CUresult cuMemPoolGetAccess(CUmemAccess_flags* flags, CUmemoryPool memPool,
                            CUmemLocation* location) {
  const char* fn = "cuMemPoolGetAccess";
  if (!flags || !location) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null argument");
  core::State& st = core::state();
  std::lock_guard lock(st.mutex);
  MemPool* p = core::pool_of(memPool);
  if (!p) return reject(CUDA_ERROR_INVALID_VALUE, fn, "invalid pool");
  if (p->native) {
    if (location->type == CU_MEM_LOCATION_TYPE_DEVICE && !Core::get().valid_device(location->id))
      return reject(CUDA_ERROR_INVALID_VALUE, fn, "no such device");
    return Core::get().map(
        core::native_pools()->get_access(core::current_backend_context(), p->native_handle,
                                         core::backend_location(*location), *flags),
        fn);
  }
  const bool device_pool = core::kind_of(*p) == core::AllocKind::device;
  // A host pool's memory is the host's to read and write (NVIDIA's driver 580 answers so).
  if (core::kind_of(*p) == core::AllocKind::host_alloc &&
      (location->type == CU_MEM_LOCATION_TYPE_HOST ||
       location->type == CU_MEM_LOCATION_TYPE_HOST_NUMA)) {
    *flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    return CUDA_SUCCESS;
  }
  if (location->type != CU_MEM_LOCATION_TYPE_DEVICE || !Core::get().valid_device(location->id))
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "location is not a device");
  // Devices have no access to host and managed pools until cuMemPoolSetAccess grants it (what
  // NVIDIA's driver 580 reports).
  if (device_pool && location->id == p->device) {
    *flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  } else {
    auto it = p->peer_access.find(location->id);
    *flags = it == p->peer_access.end() ? CU_MEM_ACCESS_FLAGS_PROT_NONE : it->second;
  }
  return CUDA_SUCCESS;
}

// --- a device's pools ---

CUresult cuDeviceGetDefaultMemPool(CUmemoryPool* pool_out, CUdevice dev) {
  const char* fn = "cuDeviceGetDefaultMemPool";
  if (!pool_out) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  if (!Core::get().valid_device(dev))
    return reject(CUDA_ERROR_INVALID_DEVICE, fn, "no such device");
  core::State& st = core::state();
  std::lock_guard lock(st.mutex);
  MemPool* p = nullptr;
  if (CUresult r = core::default_pool(st, dev, p)) return r;
  *pool_out = p->handle;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetMemPool(CUmemoryPool* pool, CUdevice dev) {
  const char* fn = "cuDeviceGetMemPool";
  if (!pool) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  // NVIDIA's driver 580 answers a negative ordinal with INVALID_VALUE, a large one with
  // INVALID_DEVICE.
  if (dev < 0) return reject(CUDA_ERROR_INVALID_VALUE, fn, "negative device ordinal");
  if (!Core::get().valid_device(dev))
    return reject(CUDA_ERROR_INVALID_DEVICE, fn, "no such device");
  core::State& st = core::state();
  std::lock_guard lock(st.mutex);
  MemPool* p = nullptr;
  if (CUresult r = core::current_pool(st, dev, p)) return r;
  *pool = p->handle;
  return CUDA_SUCCESS;
}

CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool) {
  const char* fn = "cuDeviceSetMemPool";
  if (!Core::get().valid_device(dev))  // INVALID_VALUE, as NVIDIA's driver 580 answers
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "no such device");
  core::State& st = core::state();
  std::lock_guard lock(st.mutex);
  MemPool* p = core::pool_of(pool);
  if (!p) return reject(CUDA_ERROR_INVALID_VALUE, fn, "invalid pool");
  if (p->imported) return reject(CUDA_ERROR_INVALID_VALUE, fn, "an imported pool");
  // A pool placed on the host (pinned or managed) is no device's (INVALID_VALUE, as NVIDIA's
  // driver 580 answers); a managed pool preferring this device is accepted, as there.
  if (p->props.location.type != CU_MEM_LOCATION_TYPE_DEVICE)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "the pool is not on a device");
  if (p->device != dev)
    return reject(CUDA_ERROR_INVALID_DEVICE, fn, "the pool is another device's");
  MemPool* dflt = nullptr;
  if (CUresult r = core::default_pool(st, dev, dflt)) return r;
  st.current_pools[static_cast<std::size_t>(dev)] = p == dflt ? nullptr : p;
  core::refresh_native_default(st, dev);
  return CUDA_SUCCESS;
}

CUresult cuMemGetDefaultMemPool(CUmemoryPool* pool_out, CUmemLocation* location,
                                CUmemAllocationType type) {
  const char* fn = "cuMemGetDefaultMemPool";
  if (!pool_out) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  if (CUresult r = core::check_location(location, type, fn)) return r;
  if (core::device_pinned(*location, type))
    return impl::cuDeviceGetDefaultMemPool(pool_out, location->id);
  core::State& st = core::state();
  std::lock_guard lock(st.mutex);
  MemPool* p = nullptr;
  if (CUresult r = core::located_default_pool(st, *location, type, p)) return r;
  *pool_out = p->handle;
  return CUDA_SUCCESS;
}

CUresult cuMemGetMemPool(CUmemoryPool* pool, CUmemLocation* location, CUmemAllocationType type) {
  const char* fn = "cuMemGetMemPool";
  if (!pool) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  if (CUresult r = core::check_location(location, type, fn)) return r;
  if (core::device_pinned(*location, type)) return impl::cuDeviceGetMemPool(pool, location->id);
  core::State& st = core::state();
  std::lock_guard lock(st.mutex);
  if (auto it = st.located_currents.find(core::location_key(*location, type));
      it != st.located_currents.end()) {
    *pool = it->second->handle;
    return CUDA_SUCCESS;
  }
  MemPool* p = nullptr;
  if (CUresult r = core::located_default_pool(st, *location, type, p)) return r;
  *pool = p->handle;
  return CUDA_SUCCESS;
}

CUresult cuMemSetMemPool(CUmemLocation* location, CUmemAllocationType type, CUmemoryPool pool) {
  const char* fn = "cuMemSetMemPool";
  if (CUresult r = core::check_location(location, type, fn)) return r;
  if (core::device_pinned(*location, type)) {
    if (CUresult r = impl::cuDeviceSetMemPool(location->id, pool))
      return r == CUDA_ERROR_INVALID_DEVICE ? CUDA_ERROR_INVALID_VALUE : r;
    return CUDA_SUCCESS;
  }
  core::State& st = core::state();
  std::lock_guard lock(st.mutex);
  MemPool* p = core::pool_of(pool);
  if (!p) return reject(CUDA_ERROR_INVALID_VALUE, fn, "invalid pool");
  if (p->imported) return reject(CUDA_ERROR_INVALID_VALUE, fn, "an imported pool");
  const auto key = core::location_key(*location, type);
  // The pool's own location and type, as NVIDIA's driver requires (INVALID_VALUE otherwise).
  if (core::location_key(p->props.location, p->props.allocType) != key)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "the pool is of another location or type");
  MemPool* dflt = nullptr;
  if (CUresult r = core::located_default_pool(st, *location, type, dflt)) return r;
  if (p == dflt) {
    st.located_currents.erase(key);
  } else {
    st.located_currents[key] = p;
  }
  return CUDA_SUCCESS;
}

// --- sharing: within this process (the exported descriptor names the pool) ---

CUresult cuMemPoolExportToShareableHandle(void* handle_out, CUmemoryPool pool,
                                          CUmemAllocationHandleType handleType,
                                          unsigned long long flags) {
  const char* fn = "cuMemPoolExportToShareableHandle";
  if (!handle_out) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  if (flags != 0) return reject(CUDA_ERROR_INVALID_VALUE, fn, "flags must be 0");
  if (handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "only POSIX file descriptors are supported");
  core::ShareRecord rec;
  {
    core::State& st = core::state();
    std::lock_guard lock(st.mutex);
    MemPool* p = core::pool_of(pool);
    if (!p) return reject(CUDA_ERROR_INVALID_VALUE, fn, "invalid pool");
    if (p->imported || !(p->props.handleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
      return reject(CUDA_ERROR_INVALID_VALUE, fn,
                    "the pool was not created exportable as a POSIX fd");
    if (p->native)  // the driver's descriptor, which another process's driver imports
      return Core::get().map(
          core::native_pools()->export_pool(core::current_backend_context(), p->native_handle,
                                            *static_cast<int*>(handle_out)),
          fn);
    rec.pid = getpid();
    rec.uid = p->uid;
    rec.base = static_cast<std::uint64_t>(p->device);
    // A host NUMA pool: its node, so that another process's view is a host pool.
    if (p->props.location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA)
      rec.size = core::kHostNumaPoolTag | static_cast<std::uint32_t>(p->props.location.id);
  }
  const int fd = memfd_create("cudamux-mempool", MFD_CLOEXEC);
  if (fd < 0) return reject(CUDA_ERROR_OUT_OF_MEMORY, fn, "memfd_create failed");
  if (pwrite(fd, &rec, sizeof rec, 0) != static_cast<ssize_t>(sizeof rec)) {
    close(fd);
    return reject(CUDA_ERROR_OUT_OF_MEMORY, fn, "writing the pool's descriptor failed");
  }
  *static_cast<int*>(handle_out) = fd;
  return CUDA_SUCCESS;
}

CUresult cuMemPoolImportFromShareableHandle(CUmemoryPool* pool_out, void* handle,
                                            CUmemAllocationHandleType handleType,
                                            unsigned long long flags) {
  const char* fn = "cuMemPoolImportFromShareableHandle";
  if (!pool_out) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  if (flags != 0) return reject(CUDA_ERROR_INVALID_VALUE, fn, "flags must be 0");
  if (handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "only POSIX file descriptors are supported");
  const int fd =
      static_cast<int>(reinterpret_cast<std::intptr_t>(handle));  // CUDA passes the fd by value
  if (backend::NativePools* np = core::native_pools()) {
    // The driver's pool, a view that imports its pointers and never allocates; its device is
    // the driver's to know (access queries pass through).
    auto p = std::make_unique<MemPool>();
    if (auto status = np->import_pool(core::current_backend_context(), fd, p->native_handle);
        !status.ok())
      return Core::get().map(status, fn);
    p->native = true;
    p->device = -1;
    p->props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    p->props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    p->props.location = {CU_MEM_LOCATION_TYPE_DEVICE, -1};
    p->imported = true;
    core::State& st = core::state();
    std::lock_guard lock(st.mutex);
    MemPool* out = nullptr;
    if (CUresult r = core::register_pool(st, std::move(p), out)) return r;
    *pool_out = out->handle;
    return CUDA_SUCCESS;
  }
  core::ShareRecord rec;
  rec.magic = 0;
  if (fd < 0 || pread(fd, &rec, sizeof rec, 0) != static_cast<ssize_t>(sizeof rec) ||
      rec.magic != core::kShareMagic)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "not a descriptor of an exported pool");
  if (rec.pid != getpid()) {
    // Another process's pool: a view that imports its pointers (their blocks are mapped
    // through the backend's IPC memory handles, cuMemPoolImportPointer).
    const bool host_numa = (rec.size & core::kHostNumaPoolTag) == core::kHostNumaPoolTag;
    int count = 0;
    if (CUresult r = impl::cuDeviceGetCount(&count)) return r;
    if (!host_numa && rec.base >= static_cast<std::uint64_t>(count))
      return reject(CUDA_ERROR_INVALID_VALUE, fn, "the exported pool's device does not exist here");
    auto p = std::make_unique<MemPool>();
    p->props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    p->props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    if (host_numa) {
      p->device = -1;
      p->props.location = {CU_MEM_LOCATION_TYPE_HOST_NUMA,
                           static_cast<int>(rec.size & 0xffffffffu)};
    } else {
      p->device = static_cast<int>(rec.base);
      p->props.location = {CU_MEM_LOCATION_TYPE_DEVICE, p->device};
    }
    p->imported = true;
    p->origin_pid = static_cast<pid_t>(rec.pid);
    p->origin_uid = rec.uid;
    core::State& st = core::state();
    std::lock_guard lock(st.mutex);
    MemPool* out = nullptr;
    if (CUresult r = core::register_pool(st, std::move(p), out)) return r;
    *pool_out = out->handle;
    return CUDA_SUCCESS;
  }
  core::State& st = core::state();
  std::lock_guard lock(st.mutex);
  const MemPool* origin = nullptr;
  for (const auto& p : st.pools)
    if (p->uid == rec.uid && !p->destroyed && !p->imported) origin = p.get();
  if (!origin) return reject(CUDA_ERROR_INVALID_VALUE, fn, "the exported pool no longer exists");
  auto p = std::make_unique<MemPool>();
  p->device = origin->device;
  p->props = origin->props;
  p->imported = true;
  p->origin_pid = static_cast<pid_t>(rec.pid);
  p->origin_uid = origin->uid;
  MemPool* out = nullptr;
  if (CUresult r = core::register_pool(st, std::move(p), out)) return r;
  *pool_out = out->handle;
  return CUDA_SUCCESS;
}

CUresult cuMemPoolExportPointer(CUmemPoolPtrExportData* shareData_out, CUdeviceptr ptr) {
  const char* fn = "cuMemPoolExportPointer";
  if (!shareData_out) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  {  // a block of the driver's pool: the driver's export data
    Core& core = Core::get();
    std::shared_lock alloc_lock(core.alloc_mutex);
    auto a = core.allocations.find(static_cast<std::uintptr_t>(ptr));
    if (a != core.allocations.end() && a->second.native_pool) {
      if (!(a->second.native_pool->props.handleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
        return reject(CUDA_ERROR_INVALID_VALUE, fn, "the pool is not exportable");
      return core.map(
          core::native_pools()->export_pointer(core::current_backend_context(),
                                               reinterpret_cast<void*>(ptr), *shareData_out),
          fn);
    }
  }
  core::State& st = core::state();
  std::lock_guard lock(st.mutex);
  auto it = st.owner.find(static_cast<std::uintptr_t>(ptr));
  if (it == st.owner.end())
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "not the base of a live pool allocation");
  const MemPool& p = *it->second;
  if (!(p.props.handleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "the pool is not exportable");
  core::ShareRecord rec;
  rec.pid = getpid();
  rec.uid = p.uid;
  rec.base = ptr;
  const core::Block& block = p.live.at(it->first);
  rec.size = block.size;
  // For another process: the block's IPC handle, when the backend has one and it fits.
  CUipcMemHandle ipc{};
  backend::Status ipc_status;
  if (block.ctx &&
      block.ctx->impl->ipc_export_memory(reinterpret_cast<void*>(block.base), block.size, ipc,
                                         ipc_status) &&
      ipc_status.ok() &&
      std::all_of(ipc.reserved + sizeof rec.ipc, std::end(ipc.reserved),
                  [](char c) { return c == 0; }))
    std::memcpy(rec.ipc, ipc.reserved, sizeof rec.ipc);
  std::memset(shareData_out, 0, sizeof *shareData_out);
  std::memcpy(shareData_out->reserved, &rec, sizeof rec);
  return CUDA_SUCCESS;
}

CUresult cuMemPoolImportPointer(CUdeviceptr* ptr_out, CUmemoryPool pool,
                                CUmemPoolPtrExportData* shareData) {
  const char* fn = "cuMemPoolImportPointer";
  if (!ptr_out || !shareData) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null argument");
  core::State& st = core::state();
  std::unique_lock lock(st.mutex);
  MemPool* p = core::pool_of(pool);
  if (!p) return reject(CUDA_ERROR_INVALID_VALUE, fn, "invalid pool");
  if (p->native) {
    lock.unlock();
    return core::import_native_pointer(pool, *shareData, *ptr_out);
  }
  core::ShareRecord rec;
  std::memcpy(&rec, shareData->reserved, sizeof rec);
  if (rec.magic != core::kShareMagic)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "not exported pointer data");
  if (!p->imported || p->origin_uid != rec.uid || p->origin_pid != rec.pid)
    return reject(CUDA_ERROR_INVALID_VALUE, fn,
                  "the pointer was not exported from this pool's origin");
  if (rec.pid != getpid()) {
    // Another process's block: mapped here through its IPC memory handle (the core's IPC
    // bookkeeping makes it device memory of the current context; the free unmaps it).
    if (!has_ipc(rec)) {
      Core::get().log().warn(
          "{}: the exporting process's backend gave no IPC handle for this pointer: returning "
          "CUDA_ERROR_NOT_SUPPORTED",
          fn);
      return CUDA_ERROR_NOT_SUPPORTED;
    }
    lock.unlock();  // the IPC calls take the allocation lock, which is taken before this one
    CUipcMemHandle ipc{};
    std::memcpy(ipc.reserved, rec.ipc, sizeof rec.ipc);
    CUdeviceptr mapped = 0;
    if (CUresult r = impl::cuIpcOpenMemHandle_v2(&mapped, ipc, 0)) return r;
    lock.lock();
    p = core::pool_of(pool);
    if (!p) {
      lock.unlock();
      (void)impl::cuIpcCloseMemHandle(mapped);
      return reject(CUDA_ERROR_INVALID_VALUE, fn, "the pool was destroyed meanwhile");
    }
    ++p->imports[static_cast<std::uintptr_t>(mapped)];
    *ptr_out = mapped;
    return CUDA_SUCCESS;
  }
  auto o = st.owner.find(static_cast<std::uintptr_t>(rec.base));
  if (o == st.owner.end() || o->second->uid != rec.uid)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "the exported allocation was freed");
  // One address space: the import is the exporter's address.
  ++p->imports[static_cast<std::uintptr_t>(rec.base)];
  *ptr_out = static_cast<CUdeviceptr>(rec.base);
  return CUDA_SUCCESS;
}

}  // namespace cudamux::impl
