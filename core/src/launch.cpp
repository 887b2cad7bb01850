// Kernel launches and occupancy (issue #3): validation against the device's limits,
// argument packing per backend::Function::params(), submission in stream order.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "core.hpp"
#include "cudamux/driver_impl.hpp"
#include "graph.hpp"

namespace cudamux::core {
namespace {

struct Limits {
  int block[3];
  int grid[3];
  int threads_per_block;
  int regs_per_block;
  int shared_per_block;
  int shared_optin;
  int sm_count;
  int threads_per_sm;
  int blocks_per_sm;
  int regs_per_sm;
  int shared_per_sm;
  int reserved_shared;
};

Limits read_limits(int dev) {
  auto a = [dev](CUdevice_attribute attr, int fallback) {
    return device_attribute_or(dev, attr, fallback);
  };
  Limits l{};
  l.block[0] = a(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, 1024);
  l.block[1] = a(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, 1024);
  l.block[2] = a(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, 64);
  l.grid[0] = a(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, 0x7fffffff);
  l.grid[1] = a(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, 65535);
  l.grid[2] = a(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, 65535);
  l.threads_per_block = a(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024);
  l.shared_per_block = a(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 48 * 1024);
  l.shared_optin =
      std::max(l.shared_per_block, a(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 0));
  l.regs_per_block = a(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, 65536);
  l.sm_count = std::max(1, a(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 1));
  l.threads_per_sm = a(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 2048);
  l.blocks_per_sm = a(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, 32);
  l.regs_per_sm = a(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, 65536);
  l.shared_per_sm = a(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, l.shared_optin);
  l.reserved_shared = a(CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, 0);
  return l;
}

// Device attributes never change after cuInit, and reading them costs a backend call each
// (a driver call on the cuda backend): read them once per device, not on every launch (which
// reads the copy in its context, Context::launch_limits).
const Limits& limits_of(int dev) {
  constexpr int kMaxCached = 256;
  struct alignas(64) Cached {
    std::atomic<bool> ready{false};
    Limits limits{};
  };
  static Cached cache[kMaxCached];
  static std::mutex fill_mutex;
  if (dev < 0 || dev >= kMaxCached) {
    thread_local Limits uncached;
    uncached = read_limits(dev);
    return uncached;
  }
  Cached& c = cache[dev];
  if (!c.ready.load(std::memory_order_acquire)) {
    std::lock_guard lock(fill_mutex);
    if (!c.ready.load(std::memory_order_relaxed)) {
      c.limits = read_limits(dev);
      c.ready.store(true, std::memory_order_release);
    }
  }
  return c.limits;
}

int fattr(const Function& f, CUfunction_attribute attr) {
  int v = 0;
  return function_attribute(f, attr, v) == CUDA_SUCCESS ? v : 0;
}

struct KernelLimits {
  int max_threads;
  int regs;
  std::size_t args_bytes;
  std::span<const backend::ParamInfo> params;
};

// Function::launch_* (core.hpp): the same values fattr() and params() give, read once.
KernelLimits kernel_limits(Function& f) {
  if (f.launch_ready.load(std::memory_order_acquire)) {
    return {f.launch_max_threads.load(std::memory_order_relaxed),
            f.launch_regs.load(std::memory_order_relaxed),
            f.launch_args_bytes.load(std::memory_order_relaxed),
            {f.launch_params.load(std::memory_order_relaxed),
             f.launch_param_count.load(std::memory_order_relaxed)}};
  }
  const auto& params = f.impl->params();
  KernelLimits k{fattr(f, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK),
                 fattr(f, CU_FUNC_ATTRIBUTE_NUM_REGS), 0, params};
  for (const auto& p : params) k.args_bytes = std::max(k.args_bytes, p.offset + p.size);
  // Threads racing here store the same values.
  f.launch_max_threads.store(k.max_threads, std::memory_order_relaxed);
  f.launch_regs.store(k.regs, std::memory_order_relaxed);
  f.launch_args_bytes.store(k.args_bytes, std::memory_order_relaxed);
  f.launch_params.store(params.data(), std::memory_order_relaxed);
  f.launch_param_count.store(params.size(), std::memory_order_relaxed);
  f.launch_ready.store(true, std::memory_order_release);
  return k;
}

// Blocks of `block_size` threads with `dyn_shared` bytes that fit on one multiprocessor
// (the occupancy calculator's model: threads, blocks, registers, shared memory).
int blocks_per_sm(const Function& f, const Limits& l, long long block_size,
                  std::size_t dyn_shared) {
  if (block_size <= 0 || block_size > fattr(f, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)) return 0;
  const long long warps = (block_size + 31) / 32;
  long long n = std::min<long long>(l.blocks_per_sm, l.threads_per_sm / (warps * 32));
  if (const int regs = fattr(f, CU_FUNC_ATTRIBUTE_NUM_REGS); regs > 0) {
    const long long per_warp =
        (regs * 32LL + 255) / 256 * 256;  // allocated per warp in units of 256
    n = std::min(n, l.regs_per_sm / (per_warp * warps));
  }
  const long long shared =
      fattr(f, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES) + static_cast<long long>(dyn_shared);
  if (shared > 0) {
    if (dyn_shared >
        static_cast<std::size_t>(fattr(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)))
      return 0;
    n = std::min(n, l.shared_per_sm / (shared + l.reserved_shared));
  }
  return static_cast<int>(std::max(0LL, n));
}

// blocks_per_sm as the device's own calculator answers it where the backend has one (`st`
// then holds its status); the core's model otherwise.
int device_blocks_per_sm(const Function& f, const Limits& l, int block_size, std::size_t dyn_shared,
                         unsigned flags, backend::Status& st) {
  backend::OccupancyQuery q;
  q.kind = backend::OccupancyKind::active_blocks;
  q.block_size = block_size;
  q.dyn_shared = dyn_shared;
  q.flags = flags;
  std::size_t value = 0;
  st = backend::kOk;
  if (f.impl->occupancy(q, value, st)) return st.ok() ? static_cast<int>(value) : 0;
  return blocks_per_sm(f, l, block_size, dyn_shared);
}

struct LaunchRequest {
  const char* fn;
  CUfunction f;
  unsigned grid[3];
  unsigned block[3];
  unsigned shared;
  CUstream stream;
  void** params;
  void** extra;
  bool per_thread;
  bool cooperative;
  unsigned cluster[3] = {1, 1, 1};  // cuLaunchKernelEx's CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
};

// Validates a launch of `f` in `ctx` against the device's and the kernel's limits; `total`
// gets the extent of the packed arguments.
CUresult check_launch(Function& f, Context& ctx, const LaunchShape& q, KernelLimits& kernel,
                      const char* fn) {
  const LaunchLimits& l = ctx.launch_limits;
  unsigned long long threads = 1;
  for (int i = 0; i < 3; ++i) {
    if (q.grid[i] == 0 || q.block[i] == 0)
      return reject(CUDA_ERROR_INVALID_VALUE, fn, "zero grid or block dimension");
    if (q.block[i] > static_cast<unsigned>(l.block[i]))
      return reject(CUDA_ERROR_INVALID_VALUE, fn, "block dimension above the device's maximum");
    if (q.grid[i] > static_cast<unsigned>(l.grid[i]))
      return reject(CUDA_ERROR_INVALID_VALUE, fn, "grid dimension above the device's maximum");
    threads *= q.block[i];
  }
  if (threads > static_cast<unsigned>(l.threads_per_block))
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "more threads per block than the device allows");
  const KernelLimits k = kernel_limits(f);
  if (threads > static_cast<unsigned>(k.max_threads))
    return reject(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, fn,
                  "more threads per block than the kernel allows");
  if (const int regs = k.regs;
      regs > 0 && threads * static_cast<unsigned>(regs) > static_cast<unsigned>(l.regs_per_block))
    return reject(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, fn, "too many registers for this block size");
  // Read on each launch: cuFuncSetAttribute / cuKernelSetAttribute may change it. Without
  // dynamic shared memory no limit can be exceeded, so the common launch skips the query.
  if (q.shared > 0 &&
      q.shared > static_cast<unsigned>(fattr(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)))
    return reject(CUDA_ERROR_INVALID_VALUE, fn,
                  "dynamic shared memory above the kernel's limit (raise it with "
                  "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)");

  // Thread block clusters: each cluster dimension must divide the grid's; zero divides
  // nothing. NVIDIA's driver (580, H200) answers both with CUDA_ERROR_INVALID_CLUSTER_SIZE.
  // Checked before the backend's capability so that a bad configuration gets the same answer
  // on every backend. Size limits (8 blocks portable) are the backend's to judge.
  if (q.cluster[0] != 1 || q.cluster[1] != 1 || q.cluster[2] != 1) {
    for (int i = 0; i < 3; ++i) {
      if (q.cluster[i] == 0 || q.grid[i] % q.cluster[i] != 0)
        return reject(CUDA_ERROR_INVALID_CLUSTER_SIZE, fn,
                      "cluster dimension zero or not a divisor of the grid's");
    }
    // The one place that decides (backend.hpp, Backend::launches_clusters): a backend that
    // cannot co-schedule a cluster never gets one to run as independent blocks.
    if (!Core::get().backend().launches_clusters()) {
      Core::get().log().warn(
          "{}: the {} backend has no thread block clusters: returning CUDA_ERROR_NOT_SUPPORTED", fn,
          Core::get().backend().name());
      return CUDA_ERROR_NOT_SUPPORTED;
    }
  }

  if (q.cooperative) {
    if (!device_attribute_or(ctx.device, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, 0))
      return reject(CUDA_ERROR_NOT_SUPPORTED, fn, "the device has no cooperative launches");
    const Limits& device = limits_of(ctx.device);
    const unsigned long long blocks = 1ULL * q.grid[0] * q.grid[1] * q.grid[2];
    const unsigned long long fit =
        1ULL * blocks_per_sm(f, device, static_cast<long long>(threads), q.shared) *
        static_cast<unsigned>(device.sm_count);
    if (blocks > fit)
      return reject(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, fn,
                    "grid larger than the blocks that can be co-resident");
  }
  kernel = k;
  return CUDA_SUCCESS;
}

// Packs kernelParams or `extra` into `buf` (`total` bytes, per Function::params()).
CUresult pack_args(std::span<const backend::ParamInfo> params, std::size_t total, void** kparams,
                   void** extra, std::byte* buf, const char* fn) {
  if (kparams && extra)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "both kernelParams and extra given");
  if (kparams) {
    for (std::size_t i = 0; i < params.size(); ++i) {
      if (!kparams[i]) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null kernel parameter pointer");
      std::memcpy(buf + params[i].offset, kparams[i], params[i].size);
    }
  } else if (extra) {
    const void* pointer = nullptr;
    const std::size_t* size = nullptr;
    for (void** e = extra; *e != CU_LAUNCH_PARAM_END; e += 2) {
      if (*e == CU_LAUNCH_PARAM_BUFFER_POINTER) {
        pointer = e[1];
      } else if (*e == CU_LAUNCH_PARAM_BUFFER_SIZE) {
        size = static_cast<const std::size_t*>(e[1]);
      } else {
        return reject(CUDA_ERROR_INVALID_VALUE, fn, "unknown key in extra");
      }
    }
    if (total > 0 || pointer || size) {
      if (!pointer || !size)
        return reject(CUDA_ERROR_INVALID_VALUE, fn,
                      "extra needs both BUFFER_POINTER and BUFFER_SIZE");
      if (*size < total)
        return reject(CUDA_ERROR_INVALID_VALUE, fn,
                      "argument buffer smaller than the kernel's parameters");
      std::memcpy(buf, pointer, total);
    }
  } else if (!params.empty()) {
    return reject(CUDA_ERROR_INVALID_VALUE, fn,
                  "the kernel takes parameters but neither kernelParams nor extra was given");
  }
  return CUDA_SUCCESS;
}

CUresult launch(const LaunchRequest& q) {
  const char* fn = q.fn;
  Stream* s = nullptr;
  if (CUresult r = resolve_stream(q.stream, q.per_thread, s)) return r;
  Function* f = nullptr;
  if (CUresult r = function_for_launch(q.f, s->ctx, f)) return r;
  if (f->ctx != s->ctx)
    return reject(CUDA_ERROR_INVALID_HANDLE, fn,
                  "function and stream belong to different contexts");
  if (CUresult r = sticky_error(*s->ctx)) return r;
  const LaunchShape shape{{q.grid[0], q.grid[1], q.grid[2]},
                          {q.block[0], q.block[1], q.block[2]},
                          q.shared,
                          q.cooperative,
                          {q.cluster[0], q.cluster[1], q.cluster[2]}};
  KernelLimits kernel{};
  if (CUresult r = check_launch(*f, *s->ctx, shape, kernel, fn)) return r;
  const std::size_t total = kernel.args_bytes;

  // Arguments are copied here: the caller may reuse its storage once we return.
  std::array<std::byte, 512> small;
  std::vector<std::byte> large;
  std::byte* buf = small.data();
  if (total > small.size()) {
    large.resize(total);
    buf = large.data();
  }
  if (CUresult r = pack_args(kernel.params, total, q.params, q.extra, buf, fn)) return r;
  // issue 16: a capturing stream records the launch as a kernel node instead.
  if (capture_applies(*s)) return capture_kernel(*s, *f, shape, buf, total, fn);

  backend::LaunchDesc desc;
  desc.function = f->impl;
  for (int i = 0; i < 3; ++i) {
    desc.grid[i] = q.grid[i];
    desc.block[i] = q.block[i];
  }
  desc.shared_bytes = q.shared;
  desc.args = total ? buf : nullptr;
  desc.args_size = total;
  desc.params = kernel.params.data();
  desc.param_count = kernel.params.size();
  desc.cooperative = q.cooperative;
  for (int i = 0; i < 3; ++i) desc.cluster[i] = q.cluster[i];
  const backend::Status st = submit(*s, [&](backend::Queue& queue) { return queue.launch(desc); });
  if (st.ok() && !s->ctx->launch_blocking) [[likely]]
    return CUDA_SUCCESS;
  Core& core = Core::get();
  // A sticky error reported by the launch itself (an injected fault, issue 6) sticks as it would
  // later.
  const CUresult r = note_sticky(*s->ctx, core.map(st, fn));
  if (r != CUDA_SUCCESS) return r;
  // issue 8: CUDA_LAUNCH_BLOCKING=1: the launch waits for its kernel, so the kernel's own errors
  // (assert, illegal address) surface here, and stick to the context as they would later.
  return note_sticky(*s->ctx, core.map(s->queue->synchronize(), fn));
}

CUresult launch_ex(const CUlaunchConfig* config, CUfunction f, void** kernelParams, void** extra,
                   bool per_thread) {
  const char* fn = "cuLaunchKernelEx";
  if (!config) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null config");
  if (config->numAttrs > 0 && !config->attrs)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "null attribute array");
  bool cooperative = false;
  unsigned cluster[3] = {1, 1, 1};
  CUevent after[2] = {};
  std::size_t events_after = 0;
  for (unsigned i = 0; i < config->numAttrs; ++i) {
    const CUlaunchAttribute& a = config->attrs[i];
    switch (a.id) {
      case CU_LAUNCH_ATTRIBUTE_IGNORE:
        break;
      case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
        cooperative = a.value.cooperative != 0;
        break;
      // Scheduling and cache hints: honoured by running the kernel (they change no result).
      case CU_LAUNCH_ATTRIBUTE_PRIORITY:
      case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
      case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
      case CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
      case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
      case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
      case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
      case CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION:
      case CU_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING:
      // Programmatic dependent launch (CUB and Thrust ask for it): it only allows the kernel
      // to start before the previous one ends; running it after is what the kernel must cope
      // with anyway (griddepcontrol.wait returns at once when nothing is outstanding).
      case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
        break;
      // Events that fire when the kernel lets dependents start (programmatic) or completes:
      // recorded after the kernel, the latest moment either may fire, so every waiter still
      // sees the kernel's work.
      case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT:
      case CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT: {
        const CUevent e = a.id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT
                              ? a.value.programmaticEvent.event
                              : a.value.launchCompletionEvent.event;
        if (!event_of(e)) return reject(CUDA_ERROR_INVALID_HANDLE, fn, "invalid launch event");
        if (events_after >= std::size(after)) {
          return reject(CUDA_ERROR_INVALID_VALUE, fn, "more than two launch events");
        }
        after[events_after++] = e;
        break;
      }
      // Checked against the grid by launch(), then passed to the backend (or refused there).
      case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
        cluster[0] = a.value.clusterDim.x;
        cluster[1] = a.value.clusterDim.y;
        cluster[2] = a.value.clusterDim.z;
        break;
      default:
        if (static_cast<unsigned>(a.id) >= CU_LAUNCH_ATTRIBUTE_MAX)
          return reject(CUDA_ERROR_INVALID_VALUE, fn, "unknown launch attribute");
        Core::get().log().warn(
            "{}: launch attribute {} is not supported: returning CUDA_ERROR_NOT_SUPPORTED", fn,
            static_cast<int>(a.id));
        return CUDA_ERROR_NOT_SUPPORTED;
    }
  }
  if (CUresult r = launch({fn,
                           f,
                           {config->gridDimX, config->gridDimY, config->gridDimZ},
                           {config->blockDimX, config->blockDimY, config->blockDimZ},
                           config->sharedMemBytes,
                           config->hStream,
                           kernelParams,
                           extra,
                           per_thread,
                           cooperative,
                           {cluster[0], cluster[1], cluster[2]}}))
    return r;
  for (std::size_t i = 0; i < events_after; ++i) {
    const CUresult r = per_thread ? impl::cuEventRecord_ptsz(after[i], config->hStream)
                                  : impl::cuEventRecord(after[i], config->hStream);
    if (r) return r;
  }
  return CUDA_SUCCESS;
}

CUresult function_arg(CUfunction h, Function*& f, const char* fn) {
  Context* ctx = nullptr;
  if (core::current_context_handle()) (void)current_context(ctx);
  if (CUresult r = function_for_launch(h, ctx, f)) return reject(r, fn, "invalid function");
  return sticky_error(*f->module->ctx);
}

CUresult max_active_blocks(int* numBlocks, CUfunction func, int blockSize, size_t dyn,
                           unsigned flags, const char* fn) {
  if (!numBlocks) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  if (flags & ~static_cast<unsigned>(CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE))
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "invalid flags");
  Function* f = nullptr;
  if (CUresult r = function_arg(func, f, fn)) return r;
  if (blockSize <= 0) return reject(CUDA_ERROR_INVALID_VALUE, fn, "block size must be positive");
  backend::Status st;
  const int blocks =
      device_blocks_per_sm(*f, limits_of(f->module->ctx->device), blockSize, dyn, flags, st);
  if (CUresult r = Core::get().map(st, fn)) return r;
  *numBlocks = blocks;
  return CUDA_SUCCESS;
}

CUresult max_block_size(int* minGridSize, int* blockSize, CUfunction func, CUoccupancyB2DSize b2d,
                        size_t dyn, int limit, unsigned flags, const char* fn) {
  if (!minGridSize || !blockSize) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  if (flags & ~static_cast<unsigned>(CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE))
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "invalid flags");
  if (limit < 0) return reject(CUDA_ERROR_INVALID_VALUE, fn, "negative block size limit");
  Function* f = nullptr;
  if (CUresult r = function_arg(func, f, fn)) return r;
  const Limits l = limits_of(f->module->ctx->device);
  int top = std::min(l.threads_per_block, fattr(*f, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK));
  if (limit > 0) top = std::min(top, limit);
  // The calculator's search: the largest block size (warp granularity) that reaches the
  // highest number of resident threads per multiprocessor.
  int best_size = 0, best_blocks = 0;
  long long best_threads = 0;
  for (int size = top; size > 0; size = (size % 32) ? size - size % 32 : size - 32) {
    const std::size_t shared = b2d ? b2d(size) : dyn;
    backend::Status ignored;  // a size the device refuses fits no block
    const int blocks = device_blocks_per_sm(*f, l, size, shared, flags, ignored);
    if (1LL * blocks * size > best_threads) {
      best_threads = 1LL * blocks * size;
      best_size = size;
      best_blocks = blocks;
    }
  }
  *blockSize = best_size;
  *minGridSize = best_blocks * l.sm_count;
  return CUDA_SUCCESS;
}

// Thread block clusters (issue 14: cuBLAS asks before it creates a handle). The calculator's
// model: a cluster of `size` blocks needs `size` block slots on the multiprocessors of one GPU
// processing cluster; resident clusters are the device's block slots divided by the cluster
// size. Portable clusters have at most 8 blocks, 16 where the kernel allows non-portable sizes.
CUresult cluster_query(CUfunction func, const CUlaunchConfig* config, Function*& f, int& blocks,
                       int& max_size, unsigned& size, const char* fn) {
  if (!config) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null launch configuration");
  if (config->numAttrs > 0 && !config->attrs)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "attributes counted but the array is null");
  if (CUresult r = function_arg(func, f, fn)) return r;
  if (!Core::get().backend().launches_clusters()) {
    Core::get().log().warn(
        "{}: the '{}' backend runs no thread block clusters: returning "
        "CUDA_ERROR_NOT_SUPPORTED",
        fn, Core::get().backend().name());
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  size = 0;
  for (unsigned i = 0; i < config->numAttrs; ++i) {
    const CUlaunchAttribute& a = config->attrs[i];
    if (a.id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
      size = a.value.clusterDim.x * a.value.clusterDim.y * a.value.clusterDim.z;
  }
  const unsigned threads = config->blockDimX * config->blockDimY * config->blockDimZ;
  if (threads == 0) return reject(CUDA_ERROR_INVALID_VALUE, fn, "a block dimension is 0");
  const Limits l = limits_of(f->module->ctx->device);
  blocks = blocks_per_sm(*f, l, static_cast<int>(threads), config->sharedMemBytes) * l.sm_count;
  max_size = fattr(*f, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED) > 0 ? 16 : 8;
  return CUDA_SUCCESS;
}

// The device's own answer to a cluster query where the backend has one (see
// backend::Function::occupancy); nullopt when the core's model must answer.
std::optional<CUresult> backend_cluster_occupancy(const Function& f, const CUlaunchConfig& config,
                                                  backend::OccupancyKind kind, int& out,
                                                  const char* fn) {
  CUlaunchConfig without_stream = config;
  without_stream.hStream = nullptr;  // a handle of ours, meaningless to the backend
  backend::OccupancyQuery q;
  q.kind = kind;
  q.config = &without_stream;
  std::size_t value = 0;
  backend::Status st;
  if (!f.impl->occupancy(q, value, st)) return std::nullopt;
  if (CUresult r = Core::get().map(st, fn)) return r;
  out = static_cast<int>(value);
  return CUDA_SUCCESS;
}

}  // namespace

LaunchLimits launch_limits_of(int device) {
  const Limits& l = limits_of(device);
  LaunchLimits out;
  for (int i = 0; i < 3; ++i) {
    out.block[i] = l.block[i];
    out.grid[i] = l.grid[i];
  }
  out.threads_per_block = l.threads_per_block;
  out.regs_per_block = l.regs_per_block;
  return out;
}

CUresult check_and_pack_launch(Function& f, Context& ctx, const LaunchShape& shape, void** params,
                               void** extra, std::vector<std::byte>& args, const char* fn) {
  KernelLimits kernel{};
  if (CUresult r = check_launch(f, ctx, shape, kernel, fn)) return r;
  args.assign(kernel.args_bytes, std::byte{0});
  return pack_args(kernel.params, kernel.args_bytes, params, extra, args.data(), fn);
}

}  // namespace cudamux::core

namespace cudamux::impl {
using core::reject;

CUresult cuOccupancyMaxActiveClusters(int* numClusters, CUfunction func,
                                      const CUlaunchConfig* config) {
  const char* fn = "cuOccupancyMaxActiveClusters";
  if (!numClusters) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  core::Function* f = nullptr;
  int blocks = 0, max_size = 0;
  unsigned size = 0;
  if (CUresult r = core::cluster_query(func, config, f, blocks, max_size, size, fn)) return r;
  if (std::optional<CUresult> r = core::backend_cluster_occupancy(
          *f, *config, backend::OccupancyKind::active_clusters, *numClusters, fn))
    return *r;
  if (size == 0) return reject(CUDA_ERROR_INVALID_VALUE, fn, "no cluster dimension given");
  *numClusters = size > static_cast<unsigned>(max_size) ? 0 : blocks / static_cast<int>(size);
  return CUDA_SUCCESS;
}
CUresult cuOccupancyMaxPotentialClusterSize(int* clusterSize, CUfunction func,
                                            const CUlaunchConfig* config) {
  const char* fn = "cuOccupancyMaxPotentialClusterSize";
  if (!clusterSize) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  core::Function* f = nullptr;
  int blocks = 0, max_size = 0;
  unsigned size = 0;
  if (CUresult r = core::cluster_query(func, config, f, blocks, max_size, size, fn)) return r;
  if (std::optional<CUresult> r = core::backend_cluster_occupancy(
          *f, *config, backend::OccupancyKind::potential_cluster_size, *clusterSize, fn))
    return *r;
  *clusterSize = blocks > 0 ? max_size : 0;
  return CUDA_SUCCESS;
}

CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                        unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared,
                        CUstream s, void** kernelParams, void** extra) {
  return core::launch({"cuLaunchKernel",
                       f,
                       {gx, gy, gz},
                       {bx, by, bz},
                       shared,
                       s,
                       kernelParams,
                       extra,
                       false,
                       false});
}
CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                             unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared,
                             CUstream s, void** kernelParams, void** extra) {
  return core::launch({"cuLaunchKernel",
                       f,
                       {gx, gy, gz},
                       {bx, by, bz},
                       shared,
                       s,
                       kernelParams,
                       extra,
                       true,
                       false});
}
CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                                   unsigned int bx, unsigned int by, unsigned int bz,
                                   unsigned int shared, CUstream s, void** kernelParams) {
  return core::launch({"cuLaunchCooperativeKernel",
                       f,
                       {gx, gy, gz},
                       {bx, by, bz},
                       shared,
                       s,
                       kernelParams,
                       nullptr,
                       false,
                       true});
}
CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy,
                                        unsigned int gz, unsigned int bx, unsigned int by,
                                        unsigned int bz, unsigned int shared, CUstream s,
                                        void** kernelParams) {
  return core::launch({"cuLaunchCooperativeKernel",
                       f,
                       {gx, gy, gz},
                       {bx, by, bz},
                       shared,
                       s,
                       kernelParams,
                       nullptr,
                       true,
                       true});
}
CUresult cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** kernelParams,
                          void** extra) {
  return core::launch_ex(config, f, kernelParams, extra, false);
}
CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f, void** kernelParams,
                               void** extra) {
  return core::launch_ex(config, f, kernelParams, extra, true);
}

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int* numBlocks, CUfunction func, int blockSize,
                                                     size_t dynamicSMemSize) {
  return core::max_active_blocks(numBlocks, func, blockSize, dynamicSMemSize, 0,
                                 "cuOccupancyMaxActiveBlocksPerMultiprocessor");
}
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* numBlocks, CUfunction func,
                                                              int blockSize, size_t dynamicSMemSize,
                                                              unsigned int flags) {
  return core::max_active_blocks(numBlocks, func, blockSize, dynamicSMemSize, flags,
                                 "cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags");
}
CUresult cuOccupancyMaxPotentialBlockSize(int* minGridSize, int* blockSize, CUfunction func,
                                          CUoccupancyB2DSize blockSizeToDynamicSMemSize,
                                          size_t dynamicSMemSize, int blockSizeLimit) {
  return core::max_block_size(minGridSize, blockSize, func, blockSizeToDynamicSMemSize,
                              dynamicSMemSize, blockSizeLimit, 0,
                              "cuOccupancyMaxPotentialBlockSize");
}
CUresult cuOccupancyMaxPotentialBlockSizeWithFlags(int* minGridSize, int* blockSize,
                                                   CUfunction func,
                                                   CUoccupancyB2DSize blockSizeToDynamicSMemSize,
                                                   size_t dynamicSMemSize, int blockSizeLimit,
                                                   unsigned int flags) {
  return core::max_block_size(minGridSize, blockSize, func, blockSizeToDynamicSMemSize,
                              dynamicSMemSize, blockSizeLimit, flags,
                              "cuOccupancyMaxPotentialBlockSizeWithFlags");
}
CUresult cuOccupancyAvailableDynamicSMemPerBlock(size_t* dynamicSmemSize, CUfunction func,
                                                 int numBlocks, int blockSize) {
  const char* fn = "cuOccupancyAvailableDynamicSMemPerBlock";
  if (!dynamicSmemSize) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  core::Function* f = nullptr;
  if (CUresult r = core::function_arg(func, f, fn)) return r;
  if (numBlocks <= 0 || blockSize <= 0)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "non-positive block count or size");
  cudamux::backend::OccupancyQuery q;
  q.kind = cudamux::backend::OccupancyKind::available_dynamic_shared;
  q.block_size = blockSize;
  q.num_blocks = numBlocks;
  std::size_t value = 0;
  cudamux::backend::Status st;
  if (f->impl->occupancy(q, value, st)) {
    if (CUresult r = core::Core::get().map(st, fn)) return r;
    *dynamicSmemSize = value;
    return CUDA_SUCCESS;
  }
  const core::Limits l = core::limits_of(f->module->ctx->device);
  // No blocks of this size fit at all: nothing is available.
  if (core::blocks_per_sm(*f, l, blockSize, 0) < numBlocks) {
    *dynamicSmemSize = 0;
    return CUDA_SUCCESS;
  }
  const long long per_block = l.shared_per_sm / numBlocks - l.reserved_shared -
                              core::fattr(*f, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
  const long long cap = core::fattr(*f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);
  *dynamicSmemSize = static_cast<size_t>(std::clamp(per_block, 0LL, cap));
  return CUDA_SUCCESS;
}

}  // namespace cudamux::impl
