// Kernel launches: validation, and blocks spread over a persistent pool of threads.
#include <dlfcn.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kernels.hpp"
#include "memory.hpp"

namespace cudamux::mock {
namespace {

constexpr be::Status status(CUresult r) { return be::Status{static_cast<std::int32_t>(r)}; }
constexpr unsigned kMaxDynamicShared = 227 * 1024;  // the profile's opt-in maximum

// Per-thread dynamic shared memory buffer, reused across blocks.
void* dyn_shared_buffer(unsigned bytes) {
  struct Buffer {
    void* p = nullptr;
    std::size_t size = 0;
    ~Buffer() { std::free(p); }
  };
  thread_local Buffer b;
  if (bytes > b.size) {
    std::free(b.p);
    b.size = (bytes + 4095u) & ~std::size_t{4095};
    b.p = std::aligned_alloc(128, b.size);
  }
  return b.p;
}

}  // namespace

struct BlockPool::Job {
  const cudamux_launch* launch = nullptr;
  unsigned shared_bytes = 0;
  std::uint64_t total = 0;
  std::uint64_t chunk = 1;  // blocks taken per fetch from `next`
  std::atomic<std::uint64_t> next{0};
  std::atomic<unsigned> active{0};  // threads inside work(); guarded by the pool's mutex on entry
  volatile int abort = 0;
  std::mutex mu;
  int result = 0;
  std::string message;
};

BlockPool::BlockPool(unsigned threads) {
  for (unsigned i = 0; i < threads; ++i) threads_.emplace_back([this] { helper_loop(); });
}

BlockPool::~BlockPool() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void BlockPool::work(Job& job) {
  const DeviceMemoryAccess access;  // kernels reach protected device memory (memcheck)
  const cudamux_launch& l = *job.launch;
  // PTX kernels' static .shared variables sit in front of the dynamic memory (one window).
  const unsigned prefix = l.static_shared_bytes;
  void* shared = static_cast<char*>(dyn_shared_buffer(prefix + job.shared_bytes)) + prefix;
  const std::uint64_t gx = l.grid.x;
  const std::uint64_t gxy = gx * l.grid.y;
  char message[1024];
  for (;;) {
    const std::uint64_t first = job.next.fetch_add(job.chunk, std::memory_order_relaxed);
    if (first >= job.total) break;
    const std::uint64_t last = std::min(job.total, first + job.chunk);
    for (std::uint64_t b = first; b < last; ++b) {
      // A block failed: the rest are skipped. Atomic: blocks of other threads set it.
      if (__atomic_load_n(&job.abort, __ATOMIC_RELAXED) != 0) break;
      const cudamux_u3 idx{static_cast<unsigned>(b % gx), static_cast<unsigned>((b % gxy) / gx),
                           static_cast<unsigned>(b / gxy)};
      message[0] = '\0';
      const int rc = cudamux_run_block(&l, idx, shared, message, sizeof message);
      if (rc != 0) {
        // A fault handler may have run (it resets the thread's protection-key rights).
        DeviceMemoryAccess::reassert();
        std::lock_guard lock(job.mu);
        if (job.result == 0) {
          job.result = rc;
          job.message = message;
        }
        __atomic_store_n(&job.abort, 1, __ATOMIC_RELAXED);
      }
    }
  }
}

void BlockPool::helper_loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
    if (stop_) return;
    Job* job = jobs_.front();
    if (job->next.load(std::memory_order_relaxed) >= job->total) {
      jobs_.pop_front();  // exhausted: its owner waits for the threads still inside
      continue;
    }
    job->active.fetch_add(1);
    lock.unlock();
    work(*job);
    lock.lock();
    if (job->active.fetch_sub(1) == 1) cv_.notify_all();
  }
}

int BlockPool::run(const cudamux_launch& launch, unsigned shared_bytes, std::string& message) {
  Job job;
  job.launch = &launch;
  job.shared_bytes = shared_bytes;
  job.total = std::uint64_t{launch.grid.x} * launch.grid.y * launch.grid.z;
  // Blocks are taken in chunks: one shared counter update per chunk instead of per block, while
  // keeping ~32 chunks per thread so that a descheduled thread does not hold back the launch.
  const std::uint64_t threads = threads_.size() + 1;
  job.chunk = std::clamp<std::uint64_t>(job.total / (threads * 32), 1, 64);
  const_cast<cudamux_launch&>(launch).abort = &job.abort;
  {
    std::lock_guard lock(mu_);
    job.active.fetch_add(1);  // the launching thread
    if (job.total > 1 && !threads_.empty()) jobs_.push_back(&job);
  }
  cv_.notify_all();
  work(job);
  std::unique_lock lock(mu_);
  std::erase(jobs_, &job);  // no helper can join it from now on
  job.active.fetch_sub(1);
  cv_.wait(lock, [&] { return job.active.load() == 0; });
  message = job.message;
  return job.result;
}

int BlockPool::run_cooperative(const cudamux_launch& launch, unsigned shared_bytes,
                               std::string& message) {
  const std::uint64_t total = std::uint64_t{launch.grid.x} * launch.grid.y * launch.grid.z;
  volatile int abort = 0;
  const_cast<cudamux_launch&>(launch).abort = &abort;
  std::mutex mu;
  int result = 0;
  auto block = [&](std::uint64_t b) {
    const DeviceMemoryAccess access;
    const unsigned prefix = launch.static_shared_bytes;
    // Each block's own buffer (its thread's): blocks run at the same time.
    void* shared = static_cast<char*>(dyn_shared_buffer(prefix + shared_bytes)) + prefix;
    const std::uint64_t gx = launch.grid.x, gxy = gx * launch.grid.y;
    const cudamux_u3 idx{static_cast<unsigned>(b % gx), static_cast<unsigned>((b % gxy) / gx),
                         static_cast<unsigned>(b / gxy)};
    char text[1024];
    text[0] = '\0';
    const int rc = cudamux_run_block(&launch, idx, shared, text, sizeof text);
    if (rc != 0) {
      DeviceMemoryAccess::reassert();
      std::lock_guard lock(mu);
      if (result == 0) {
        result = rc;
        message = text;
      }
      __atomic_store_n(&abort, 1, __ATOMIC_RELAXED);
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(total > 0 ? total - 1 : 0);
  try {
    for (std::uint64_t b = 1; b < total; ++b) threads.emplace_back(block, b);
  } catch (const std::exception& e) {
    // Not enough threads for every block: blocks waiting in grid.sync() would wait forever.
    __atomic_store_n(&abort, 1, __ATOMIC_RELAXED);
    for (auto& t : threads) t.join();
    message = std::string("cooperative launch: cannot start a thread per block: ") + e.what();
    return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
  }
  block(0);
  for (auto& t : threads) t.join();
  return result;
}

namespace {
// Grid-sync workspaces of cooperative launches (16 bytes each, zeroed per launch), in this
// library's static data so that memcheck accepts kernel accesses to them (loaded objects'
// data is device-reachable). Ring of 256: that many cooperative launches never run at once
// (each queue runs one launch at a time).
alignas(64) std::uint32_t g_grid_workspaces[256][16];
std::atomic<unsigned> g_next_workspace{0};
}  // namespace

be::Status prepare_launch(const be::LaunchDesc& desc, BlockPool& pool, spdlog::logger& log,
                          KernelLaunch& out) {
  auto* f = dynamic_cast<MockFunction*>(desc.function);
  if (f == nullptr) {
    // A PTX kernel compiled at its first launch (ptx_module.cpp).
    auto* lazy = dynamic_cast<LazyFunction*>(desc.function);
    if (lazy == nullptr) return status(CUDA_ERROR_INVALID_HANDLE);
    if (const auto st = lazy->materialize(f); !st.ok()) return st;
    // Its code is an object of its own: its module's other kernels are the lazy module's.
    out.siblings = [lazy](std::string_view name) { return lazy->sibling(name); };
  } else {
    out.siblings = f->siblings;
  }
  const cudamux_kernel_desc& k = f->desc();
  const std::uint64_t threads = std::uint64_t{desc.block[0]} * desc.block[1] * desc.block[2];
  const std::uint64_t blocks = std::uint64_t{desc.grid[0]} * desc.grid[1] * desc.grid[2];
  if (threads == 0 || blocks == 0) return status(CUDA_ERROR_INVALID_VALUE);
  if (k.max_threads > 0 && threads > static_cast<std::uint64_t>(k.max_threads)) {
    log.error(
        "mock backend: launch of {} with {} threads per block exceeds its __launch_bounds__ ({})",
        f->name(), threads, k.max_threads);
    return status(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
  }
  if (threads > 1024) return status(CUDA_ERROR_INVALID_VALUE);
  if (desc.shared_bytes > kMaxDynamicShared) {
    log.error("mock backend: launch of {} asks for {} bytes of dynamic shared memory (at most {})",
              f->name(), desc.shared_bytes, kMaxDynamicShared);
    return status(CUDA_ERROR_INVALID_VALUE);
  }
  if (k.args_size > 0 && (desc.args == nullptr || desc.args_size < k.args_size)) {
    log.error("mock backend: launch of {} with {} bytes of arguments; it takes {}", f->name(),
              desc.args == nullptr ? 0 : desc.args_size, k.args_size);
    return status(CUDA_ERROR_INVALID_VALUE);
  }
  out.object = f->object();
  out.desc = &k;
  out.args = std::make_shared<std::vector<std::byte>>(k.args_size);
  if (k.args_size > 0) std::memcpy(out.args->data(), desc.args, k.args_size);
  for (int i = 0; i < 3; ++i) {
    out.grid[i] = desc.grid[i];
    out.block[i] = desc.block[i];
  }
  out.shared_bytes = desc.shared_bytes;
  out.cooperative = desc.cooperative;
  out.pool = &pool;
  out.log = &log;
  return be::kOk;
}

namespace {

// Child grids launched by kernel code (dynamic parallelism): collected while the parent grid
// runs, run after it.
struct ChildLaunch {
  const cudamux_kernel_desc* desc = nullptr;  // its table entry (CUDA C++), or:
  std::string kernel;                         // its name in the parent's module (PTX)
  unsigned grid[3]{}, block[3]{};
  unsigned shared_bytes = 0;
  std::vector<std::byte> params;
};
struct ChildLaunches {
  std::mutex mu;
  std::vector<ChildLaunch> children;
  unsigned depth = 0;  // of the parent: 0 for a host launch
};
thread_local unsigned t_launch_depth = 0;  // nesting of execute_launch on this thread
constexpr unsigned kMaxLaunchDepth = 24;   // CUDA's limit on nested device-side launches
constexpr int kCudaErrorLaunchMaxDepthExceeded = 65;
constexpr int kCudaErrorInvalidDeviceFunction = 98;

// Kernel code's device-side launch: the entry its code took the address of is named by its
// symbol (emit_cpp's C++ function of an entry: the PTX name, or cudamux_e_<PTX name> in a
// kernel compiled alone).
int collect_child(void* user, const void* kernel, const cudamux_kernel_desc* desc, cudamux_u3 grid,
                  cudamux_u3 block, unsigned shared_bytes, const void* params,
                  unsigned params_size) {
  auto* c = static_cast<ChildLaunches*>(user);
  if (c->depth + 1 >= kMaxLaunchDepth) return kCudaErrorLaunchMaxDepthExceeded;
  ChildLaunch child;
  child.desc = desc;
  Dl_info info{};
  if (desc == nullptr &&
      (kernel == nullptr || ::dladdr(kernel, &info) == 0 || info.dli_sname == nullptr))
    return kCudaErrorInvalidDeviceFunction;
  if (desc == nullptr) child.kernel = info.dli_sname;
  if (constexpr std::string_view kEntryPrefix = "cudamux_e_";
      child.kernel.starts_with(kEntryPrefix))
    child.kernel.erase(0, kEntryPrefix.size());
  child.grid[0] = grid.x, child.grid[1] = grid.y, child.grid[2] = grid.z;
  child.block[0] = block.x, child.block[1] = block.y, child.block[2] = block.z;
  child.shared_bytes = shared_bytes;
  const auto* p = static_cast<const std::byte*>(params);
  child.params.assign(p, p + params_size);
  std::lock_guard lock(c->mu);
  c->children.push_back(std::move(child));
  return 0;
}

}  // namespace

int execute_launch(const KernelLaunch& k) {
  ChildLaunches children;
  children.depth = t_launch_depth;
  cudamux_launch l{};
  l.child_launch = collect_child;
  l.child_user = &children;
  l.loop = k.desc->loop;
  l.flags = k.desc->flags;
  l.args = k.args->data();
  l.grid = cudamux_u3{k.grid[0], k.grid[1], k.grid[2]};
  l.block = cudamux_u3{k.block[0], k.block[1], k.block[2]};
  // Issue 9: what fault and memcheck reports name.
  l.kernel_fn = k.desc->fn;
  l.args_size = k.desc->args_size;
  l.dyn_shared_bytes = k.shared_bytes;
  l.static_shared_bytes = k.desc->static_shared_bytes;
  static std::atomic<unsigned long long> next_id{1};
  l.id = next_id.fetch_add(1, std::memory_order_relaxed);
  if (k.log != nullptr) {
    l.hint_user = k.log;
    l.hint = [](void* user, const char* text) {
      static_cast<spdlog::logger*>(user)->warn("mock backend: {}", text);
    };
  }
  std::string message;
  int rc = 0;
  if (k.cooperative) {
    std::uint32_t* ws = g_grid_workspaces[g_next_workspace.fetch_add(1) % 256];
    std::memset(ws, 0, sizeof g_grid_workspaces[0]);
    l.grid_workspace = ws;
    rc = BlockPool::run_cooperative(l, k.shared_bytes, message);
  } else {
    rc = k.pool->run(l, k.shared_bytes, message);
  }
  if (rc != 0 && k.log != nullptr) {
    k.log->error("mock backend: kernel failed ({}): {}", rc, message);
  }
  // The child grids, in the order they were launched (each with its own children after it);
  // the launch completes, or fails, with them.
  for (const auto& c : children.children) {
    if (rc != 0) break;
    if (c.desc != nullptr) {
      // A kernel of the parent's own code (its table entry lives there).
      const std::uint64_t threads = std::uint64_t{c.block[0]} * c.block[1] * c.block[2];
      const std::uint64_t blocks = std::uint64_t{c.grid[0]} * c.grid[1] * c.grid[2];
      if (threads == 0 || threads > 1024 || blocks == 0 || c.shared_bytes > kMaxDynamicShared) {
        if (k.log != nullptr)
          k.log->error("mock backend: a device-side launch has an invalid configuration");
        rc = CUDA_ERROR_LAUNCH_FAILED;
        break;
      }
      KernelLaunch child = k;
      child.desc = c.desc;
      child.args = std::make_shared<std::vector<std::byte>>(
          c.params.begin(), c.params.begin() + static_cast<std::ptrdiff_t>(std::min<std::size_t>(
                                                   c.desc->args_size, c.params.size())));
      child.cooperative = false;
      for (int i = 0; i < 3; ++i) {
        child.grid[i] = c.grid[i];
        child.block[i] = c.block[i];
      }
      child.shared_bytes = c.shared_bytes;
      ++t_launch_depth;
      rc = execute_launch(child);
      --t_launch_depth;
      continue;
    }
    be::Function* fn = k.siblings ? k.siblings(c.kernel) : nullptr;
    if (fn == nullptr) {
      if (k.log != nullptr)
        k.log->error("mock backend: a device-side launch names kernel '{}', not in the module",
                     c.kernel);
      rc = CUDA_ERROR_LAUNCH_FAILED;
      break;
    }
    be::LaunchDesc d;
    d.function = fn;
    for (int i = 0; i < 3; ++i) {
      d.grid[i] = c.grid[i];
      d.block[i] = c.block[i];
    }
    d.shared_bytes = c.shared_bytes;
    d.args = c.params.data();
    d.args_size = c.params.size();
    KernelLaunch child;
    if (const auto st = prepare_launch(d, *k.pool, *k.log, child); !st.ok()) {
      rc = st.native;
      break;
    }
    ++t_launch_depth;
    rc = execute_launch(child);
    --t_launch_depth;
  }
  return rc;
}

}  // namespace cudamux::mock
