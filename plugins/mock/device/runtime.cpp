// libcudamux-device.so: the per-thread state kernel code reads, and the block scheduler.
//
// A block's threads run as a plain loop inside the compiled kernel (the module's thunk) on
// one fiber. Only when a thread reaches a barrier or a warp collective does the scheduler
// get involved: the fiber parks with that thread, and a new fiber continues the loop at the
// next thread (the parked one is "handed off": once its thread finishes it stops instead of
// continuing the loop). When every live thread of the block (or warp) has arrived, parked
// fibers resume in thread order. Threads that returned count as arrived.
//
// Kernels the compiler proved barrier-free (CUDAMUX_KERNEL_NO_BARRIERS: no barrier in reach,
// or barriers removed by loop fission) skip all of this: their loop runs on the worker's own
// stack.
//
// Fibers are Boost.Context fibers, persistent per pool thread (no allocation per block).
// The state kernel code reads (threadIdx, ...) is initial-exec TLS of this library, so
// dlopen'ed modules reach it without __tls_get_addr, and one copy serves all modules.
#include <sched.h>

#include <algorithm>
#include <boost/context/fiber.hpp>
#include <boost/context/protected_fixedsize_stack.hpp>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cudamux/device_abi.h"
#include "kernel_thread.hpp"

#define CUDAMUX_DEVICE_EXPORT extern "C" __attribute__((visibility("default")))
#define CUDAMUX_IE __attribute__((tls_model("initial-exec")))

// Definitions inside an extern "C" block (a lone `extern "C"` declaration with an
// initialiser is what -Wextra warns about).
extern "C" {
__attribute__((visibility("default"))) __thread cudamux_u3 cudamux_threadIdx CUDAMUX_IE;
__attribute__((visibility("default"))) __thread cudamux_u3 cudamux_blockIdx CUDAMUX_IE;
__attribute__((visibility("default"))) __thread cudamux_u3 cudamux_blockDim CUDAMUX_IE;
__attribute__((visibility("default"))) __thread cudamux_u3 cudamux_gridDim CUDAMUX_IE;
__attribute__((visibility("default"))) __thread void* cudamux_dyn_shared CUDAMUX_IE;
// Nonzero while the running fiber was handed off: its loop stops after the current thread.
__attribute__((visibility("default"))) __thread unsigned cudamux_handed_off CUDAMUX_IE;
// Nesting depth of atomics in memcheck modules (their accesses are not shared-memory hazards).
__attribute__((visibility("default"))) __thread unsigned cudamux_memcheck_atomic CUDAMUX_IE;
// The grid-sync workspace of a cooperative launch (PTX reads it as %envreg1:%envreg2, high and
// low halves, as nvcc's inlined grid.sync() does); null outside cooperative launches.
__attribute__((visibility("default"))) __thread void* cudamux_grid_workspace CUDAMUX_IE;
// Distinct per block run on this thread: per-block state kept in TLS (named barriers) is
// reset when it changes.
__attribute__((visibility("default"))) __thread unsigned long long cudamux_block_serial CUDAMUX_IE;
}

namespace {

namespace bc = boost::context;

constexpr int kAssert = 710;        // CUDA_ERROR_ASSERT
constexpr int kLaunchFailed = 719;  // CUDA_ERROR_LAUNCH_FAILED
constexpr std::size_t kStackBytes = 256 * 1024;

struct BlockAbort {};  // unwinds a thread's frames when its block is aborted

enum class State { idle, fresh, running, parked_block, parked_warp };

struct Rec {
  bc::fiber self;
  State state = State::idle;
  // Job: the loop to run and where it starts.
  void (*loop)(const void*, unsigned) = nullptr;
  const void* args = nullptr;
  unsigned start = 0;
  // Thread bookkeeping.
  unsigned thread = 0;     // thread it is parked with / runs
  unsigned accounted = 0;  // threads of this fiber below this index have exited
  bool handed_off = false;
  std::uintptr_t stack_top = 0;  // kernel frames on this fiber lie below (memcheck, issue 9)
  cudamux_u3 tid{};
  // Collective in flight.
  int op = 0;
  unsigned mask = 0;
  unsigned long long value = 0;
  int arg = 0;
  int width = 32;
  unsigned long long result = 0;
};

struct Worker {
  bc::fiber sched;                           // the scheduler's continuation while a fiber runs
  std::vector<std::unique_ptr<Rec>> fibers;  // every fiber this thread created
  std::vector<Rec*> idle;
  std::deque<Rec*> ready;
  Rec* current = nullptr;

  // The block being run.
  unsigned n = 0;
  cudamux_u3 dim{};
  unsigned exited = 0;
  std::vector<Rec*> parked_block;
  std::vector<unsigned> exited_warp;
  std::vector<unsigned> parked_warp_count;
  std::vector<std::array<Rec*, 32>> warp_lanes;
  bool direct = false;  // running a barrier-free block on this thread's own stack
  int abort = 0;
  std::string message;

  // What memcheck and fault reports need (issue 9): the launch, the block's shared memory
  // and its barrier epochs (a released barrier bumps the block's; a released warp collective
  // its warp's). Where kernel frames end is memcheck.stack_top.
  const cudamux_launch* launch = nullptr;
  void* dyn_shared = nullptr;
  std::uint64_t block_serial = 0;
  std::uint32_t barrier_epoch = 0;
  std::vector<std::uint32_t> warp_epoch;
  cudamux::device::AltStack alt_stack;  // where the fault handler runs (stack overflows)
  cudamux::device::MemcheckState memcheck;
};

// Initial-exec: the fault handler reads it (no __tls_get_addr inside a signal handler).
__thread Worker* t_worker CUDAMUX_IE = nullptr;

Worker& worker() {
  // Owned by a thread_local holder: freed at thread exit.
  thread_local std::unique_ptr<Worker> holder;
  if (!holder) {
    holder = std::make_unique<Worker>();
    t_worker = holder.get();
    cudamux::device::install_fault_handler();
    holder->alt_stack.install();
  }
  return *holder;
}

unsigned lanes_in_warp(const Worker& w, unsigned warp) { return std::min(32u, w.n - warp * 32); }

void account_exits(Worker& w, unsigned begin, unsigned end) {
  if (end <= begin) return;
  w.exited += end - begin;
  for (unsigned t = begin; t < end;) {
    const unsigned warp = t / 32;
    const unsigned stop = std::min(end, (warp + 1) * 32);
    w.exited_warp[warp] += stop - t;
    t = stop;
  }
}

void fiber_main(Rec* r) {
  Worker& w = *t_worker;
  r->stack_top = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
  w.memcheck.stack_top = r->stack_top;
  for (;;) {
    try {
      if (w.abort == 0) r->loop(r->args, r->start);
    } catch (const BlockAbort&) {
    } catch (const bc::detail::forced_unwind&) {
      throw;
    } catch (const std::exception& e) {
      if (w.abort == 0) {
        w.abort = kLaunchFailed;
        w.message = std::string("exception in kernel code: ") + e.what();
      }
    }
    // This fiber's threads are done: a handed-off fiber ran just its parked thread, the
    // tail fiber ran to the block's end.
    account_exits(w, r->accounted, r->handed_off ? r->thread + 1 : w.n);
    r->state = State::idle;
    w.sched = std::move(w.sched).resume();
  }
}

Rec* spawn(Worker& w, void (*loop)(const void*, unsigned), const void* args, unsigned start) {
  Rec* r = nullptr;
  if (!w.idle.empty()) {
    r = w.idle.back();
    w.idle.pop_back();
  } else {
    w.fibers.push_back(std::make_unique<Rec>());
    r = w.fibers.back().get();
    r->self = bc::fiber(std::allocator_arg, bc::protected_fixedsize_stack(kStackBytes),
                        [r](bc::fiber&& sched) {
                          t_worker->sched = std::move(sched);
                          fiber_main(r);
                          return bc::fiber{};  // never reached: fibers live as long as the thread
                        });
  }
  r->state = State::fresh;
  r->loop = loop;
  r->args = args;
  r->start = start;
  r->thread = start;
  r->accounted = start;
  r->handed_off = false;
  return r;
}

unsigned linear_thread(const Worker& w) {
  const cudamux_u3 t = cudamux_threadIdx;
  return t.x + w.dim.x * (t.y + w.dim.y * t.z);
}

// Called on the running fiber: park it at a barrier (block) or collective (warp) and
// switch to the scheduler. Returns the collective's result once released.
unsigned long long park(State kind, int op, unsigned mask, unsigned long long value, int arg,
                        int width) {
  Worker& w = *t_worker;
  Rec* r = w.current;
  if (r == nullptr) {
    if (w.direct) {
      // The compiler proved this kernel barrier-free; reaching one means that proof was
      // wrong. Fail the launch loudly rather than run the threads out of order.
      if (w.abort == 0) {
        w.abort = kLaunchFailed;
        w.message =
            "internal error: a barrier or warp collective was reached by a kernel "
            "compiled as barrier-free";
      }
      throw BlockAbort{};
    }
    return value;  // not inside a launch (cannot happen from a kernel)
  }
  const unsigned t = linear_thread(w);
  account_exits(w, r->accounted, t);  // threads this fiber finished before this one
  r->accounted = t;
  r->thread = t;
  r->tid = cudamux_threadIdx;
  r->state = kind;
  r->op = op;
  r->mask = mask;
  r->value = value;
  r->arg = arg;
  r->width = width;
  if (kind == State::parked_block) {
    w.parked_block.push_back(r);
  } else {
    w.warp_lanes[t / 32][t % 32] = r;
    ++w.parked_warp_count[t / 32];
  }
  if (!r->handed_off && t + 1 < w.n) {
    r->handed_off = true;
    w.ready.push_front(spawn(w, r->loop, r->args, t + 1));
  }
  w.sched = std::move(w.sched).resume();
  if (w.abort != 0) throw BlockAbort{};
  return r->result;
}

unsigned long long reduce(int op, unsigned long long a, unsigned long long b) {
  switch (op) {
    case CUDAMUX_WARP_REDUCE_ADD:
      return static_cast<unsigned>(a + b);
    case CUDAMUX_WARP_REDUCE_MIN:
      return static_cast<unsigned>(std::min(a, b));  // the caller biases signed values
    case CUDAMUX_WARP_REDUCE_MAX:
      return static_cast<unsigned>(std::max(a, b));
    case CUDAMUX_WARP_REDUCE_AND:
      return a & b;
    case CUDAMUX_WARP_REDUCE_OR:
      return a | b;
    default:
      return a ^ b;
  }
}

void release_warp(Worker& w, unsigned warp) {
  ++w.warp_epoch[warp];
  auto& lanes = w.warp_lanes[warp];
  const unsigned count = lanes_in_warp(w, warp);
  unsigned present = 0;  // lanes parked here
  for (unsigned l = 0; l < count; ++l)
    if (lanes[l] != nullptr) present |= 1u << l;
  for (unsigned l = 0; l < count; ++l) {
    Rec* r = lanes[l];
    if (r == nullptr) continue;
    const unsigned part = present & r->mask;  // lanes taking part in this lane's collective
    unsigned long long res = r->value;
    const int width = (r->width <= 0 || r->width > 32) ? 32 : r->width;
    const unsigned base = l & ~static_cast<unsigned>(width - 1);
    auto value_of = [&](int src) -> unsigned long long {
      if (src < 0 || static_cast<unsigned>(src) >= count) return r->value;
      // A source lane outside the member mask, or not taking part: PTX leaves the value
      // undefined; GPUs read zero there, and code such as NVIDIA's reduction sample (a
      // shuffle reduction over the first lanes only) relies on it.
      if (lanes[src] == nullptr || ((r->mask >> src) & 1u) == 0) return 0;
      return lanes[src]->value;
    };
    switch (r->op) {
      case CUDAMUX_WARP_SYNC:
        res = 0;
        break;
      case CUDAMUX_WARP_SHFL:
        res = value_of(static_cast<int>(base + (static_cast<unsigned>(r->arg) % width)));
        break;
      case CUDAMUX_WARP_SHFL_UP:
        res = (l - base) >= static_cast<unsigned>(r->arg) ? value_of(static_cast<int>(l) - r->arg)
                                                          : r->value;
        break;
      case CUDAMUX_WARP_SHFL_DOWN:
        res = (l - base) + static_cast<unsigned>(r->arg) < static_cast<unsigned>(width)
                  ? value_of(static_cast<int>(l) + r->arg)
                  : r->value;
        break;
      case CUDAMUX_WARP_SHFL_XOR: {
        const unsigned src = l ^ static_cast<unsigned>(r->arg);
        // A lane may read earlier groups of `width` lanes, never later ones.
        res = src < base + width ? value_of(static_cast<int>(src)) : r->value;
        break;
      }
      case CUDAMUX_WARP_BALLOT:
      case CUDAMUX_WARP_ANY:
      case CUDAMUX_WARP_ALL: {
        unsigned ballot = 0;
        for (unsigned s = 0; s < count; ++s)
          if ((part >> s) & 1u && lanes[s]->value != 0) ballot |= 1u << s;
        res = r->op == CUDAMUX_WARP_BALLOT ? ballot
              : r->op == CUDAMUX_WARP_ANY  ? (ballot != 0)
                                           : (ballot == part);
        break;
      }
      case CUDAMUX_WARP_ACTIVEMASK:
        res = present;
        break;
      case CUDAMUX_WARP_MATCH_ANY:
      case CUDAMUX_WARP_MATCH_ALL: {
        unsigned same = 0;
        for (unsigned s = 0; s < count; ++s)
          if ((part >> s) & 1u && lanes[s]->value == r->value) same |= 1u << s;
        res = r->op == CUDAMUX_WARP_MATCH_ANY ? same : (same == part ? part : 0);
        break;
      }
      default: {  // reductions over the taking-part lanes
        bool first = true;
        for (unsigned s = 0; s < count; ++s) {
          if (!((part >> s) & 1u)) continue;
          res = first ? lanes[s]->value : reduce(r->op, res, lanes[s]->value);
          first = false;
        }
        break;
      }
    }
    r->result = res;
  }
  for (unsigned l = 0; l < count; ++l) {
    if (Rec* r = lanes[l]) {
      r->state = State::running;
      w.ready.push_back(r);
      lanes[l] = nullptr;
    }
  }
  w.parked_warp_count[warp] = 0;
}

void release_block(Worker& w) {
  ++w.barrier_epoch;
  std::sort(w.parked_block.begin(), w.parked_block.end(),
            [](const Rec* a, const Rec* b) { return a->thread < b->thread; });
  unsigned count = 0;
  for (Rec* r : w.parked_block) count += r->value != 0 ? 1 : 0;
  const bool all = count == w.parked_block.size();  // exited threads do not vote
  for (Rec* r : w.parked_block) {
    switch (r->op) {
      case CUDAMUX_BAR_COUNT:
        r->result = count;
        break;
      case CUDAMUX_BAR_AND:
        r->result = all ? 1 : 0;
        break;
      case CUDAMUX_BAR_OR:
        r->result = count != 0 ? 1 : 0;
        break;
      default:
        r->result = 0;
    }
    r->state = State::running;
    w.ready.push_back(r);
  }
  w.parked_block.clear();
}

void check_releases(Worker& w) {
  if (!w.parked_block.empty() && w.parked_block.size() + w.exited == w.n) release_block(w);
  for (unsigned warp = 0; warp < w.parked_warp_count.size(); ++warp) {
    const unsigned p = w.parked_warp_count[warp];
    if (p != 0 && p + w.exited_warp[warp] == lanes_in_warp(w, warp)) release_warp(w, warp);
  }
}

void resume(Worker& w, Rec* r) {
  w.current = r;
  w.memcheck.stack_top = r->stack_top;  // 0 for a fresh fiber: fiber_main sets it
  if (r->state != State::fresh) cudamux_threadIdx = r->tid;
  cudamux_handed_off = r->handed_off ? 1u : 0u;
  r->state = State::running;
  r->self = std::move(r->self).resume();
  w.current = nullptr;
}

// Wakes every parked fiber so that it unwinds (w.abort is set).
void unwind_parked(Worker& w) {
  for (;;) {
    std::vector<Rec*> stuck;
    for (Rec* r : w.parked_block) stuck.push_back(r);
    w.parked_block.clear();
    for (unsigned warp = 0; warp < w.warp_lanes.size(); ++warp) {
      for (auto& lane : w.warp_lanes[warp]) {
        if (lane != nullptr) stuck.push_back(lane);
        lane = nullptr;
      }
      w.parked_warp_count[warp] = 0;
    }
    while (!w.ready.empty()) {
      stuck.push_back(w.ready.front());
      w.ready.pop_front();
    }
    if (stuck.empty()) return;
    for (Rec* r : stuck) {
      if (r->state == State::fresh) {  // never started: nothing to unwind
        r->state = State::idle;
        w.idle.push_back(r);
        continue;
      }
      resume(w, r);
      if (r->state == State::idle) w.idle.push_back(r);
    }
  }
}

std::mutex g_print_mu;

}  // namespace

namespace {

// A block of a kernel without reachable barriers: the thread loop runs right here, on the
// worker's stack (no fiber switch, no scheduler bookkeeping).
int run_direct(Worker& w, const cudamux_launch* launch, char* message, unsigned message_size) {
  w.direct = true;
  w.abort = 0;
  // Kernel frames of a direct run lie below this one.
  w.memcheck.stack_top = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
  cudamux_handed_off = 0;
  try {
    launch->loop(launch->args, 0);
  } catch (const BlockAbort&) {
  } catch (const std::exception& e) {
    if (w.abort == 0) {
      w.abort = kLaunchFailed;
      w.message = std::string("exception in kernel code: ") + e.what();
    }
  }
  w.direct = false;
  if (w.abort > 0) {
    if (launch->abort != nullptr) __atomic_store_n(launch->abort, 1, __ATOMIC_RELAXED);
    if (message != nullptr && message_size > 0)
      std::snprintf(message, message_size, "%s", w.message.c_str());
  }
  return w.abort > 0 ? w.abort : 0;
}

}  // namespace

CUDAMUX_DEVICE_EXPORT int cudamux_run_block(const cudamux_launch* launch, cudamux_u3 block_idx,
                                            void* dyn_shared, char* message,
                                            unsigned message_size) {
  Worker& w = worker();
  // The memory checks' fast path sees this state while the block runs, and nothing after.
  struct Scope {
    explicit Scope(cudamux::device::MemcheckState* m) { cudamux::device::t_memcheck = m; }
    ~Scope() { cudamux::device::t_memcheck = nullptr; }
  } memcheck_scope(&w.memcheck);
  const unsigned n = launch->block.x * launch->block.y * launch->block.z;
  cudamux_blockIdx = block_idx;
  cudamux_blockDim = launch->block;
  cudamux_gridDim = launch->grid;
  cudamux_dyn_shared = dyn_shared;
  cudamux_memcheck_atomic = 0;
  w.launch = launch;
  w.dyn_shared = dyn_shared;
  ++w.block_serial;
  cudamux_block_serial = (reinterpret_cast<std::uintptr_t>(&w) << 20) ^ w.block_serial;
  cudamux_grid_workspace = launch->grid_workspace;
  w.barrier_epoch = 0;
  if ((launch->flags & CUDAMUX_KERNEL_NO_BARRIERS) != 0)
    return run_direct(w, launch, message, message_size);
  w.n = n;
  w.dim = launch->block;
  w.exited = 0;
  w.abort = 0;
  w.message.clear();
  const unsigned warps = (n + 31) / 32;
  w.exited_warp.assign(warps, 0);
  w.parked_warp_count.assign(warps, 0);
  w.warp_epoch.assign(warps, 0);
  if (w.warp_lanes.size() < warps) w.warp_lanes.resize(warps);
  for (unsigned i = 0; i < warps; ++i) w.warp_lanes[i].fill(nullptr);
  w.parked_block.clear();
  w.ready.clear();

  w.ready.push_back(spawn(w, launch->loop, launch->args, 0));
  while (!w.ready.empty()) {
    Rec* r = w.ready.front();
    w.ready.pop_front();
    resume(w, r);
    if (r->state == State::idle) w.idle.push_back(r);
    if (w.abort != 0) {
      if (launch->abort != nullptr) __atomic_store_n(launch->abort, 1, __ATOMIC_RELAXED);
      unwind_parked(w);
      break;
    }
    if (launch->abort != nullptr &&
        __atomic_load_n(launch->abort, __ATOMIC_RELAXED) != 0) {  // another block failed
      w.abort = -1;
      unwind_parked(w);
      w.abort = 0;
      break;
    }
    if (w.ready.empty()) check_releases(w);
  }
  bool stuck = !w.parked_block.empty();
  for (unsigned c : w.parked_warp_count) stuck = stuck || c != 0;
  if (stuck && w.abort == 0) {
    // Some threads wait at a barrier or collective that the others never reach (a block
    // barrier mixed with a warp collective, or one in divergent code).
    w.abort = kLaunchFailed;
    w.message = "threads of block (" + std::to_string(block_idx.x) + "," +
                std::to_string(block_idx.y) + "," + std::to_string(block_idx.z) +
                ") wait at a barrier or warp collective that the other threads never reach";
    if (launch->abort != nullptr) __atomic_store_n(launch->abort, 1, __ATOMIC_RELAXED);
    unwind_parked(w);
  }
  if (w.abort > 0 && message != nullptr && message_size > 0) {
    std::snprintf(message, message_size, "%s", w.message.c_str());
  }
  return w.abort > 0 ? w.abort : 0;
}

CUDAMUX_DEVICE_EXPORT int cudamux_syncthreads_op(int op, int predicate) {
  return static_cast<int>(park(State::parked_block, op, ~0u, predicate != 0 ? 1 : 0, 0, 32));
}

CUDAMUX_DEVICE_EXPORT unsigned long long cudamux_warp_op(int op, unsigned mask,
                                                         unsigned long long value, int arg,
                                                         int width) {
  return park(State::parked_warp, op, mask, value, arg, width);
}

CUDAMUX_DEVICE_EXPORT int cudamux_vprintf(const char* format, __builtin_va_list args) {
  char small[512];
  va_list copy;
  va_copy(copy, args);
  const int n = std::vsnprintf(small, sizeof small, format, args);
  std::string big;
  const char* text = small;
  if (n >= static_cast<int>(sizeof small)) {
    big.resize(static_cast<std::size_t>(n) + 1);
    std::vsnprintf(big.data(), big.size(), format, copy);
    text = big.c_str();
  }
  va_end(copy);
  if (n > 0) {
    // One printf is one write: lines from concurrent blocks never interleave.
    std::lock_guard lock(g_print_mu);
    std::fwrite(text, 1, static_cast<std::size_t>(n), stdout);
    std::fflush(stdout);
  }
  return n;
}

CUDAMUX_DEVICE_EXPORT void cudamux_assert_fail(const char* expression, const char* file,
                                               unsigned line, const char* function) {
  const cudamux_u3 b = cudamux_blockIdx;
  const cudamux_u3 t = cudamux_threadIdx;
  char text[1024];
  // CUDA's wording: "file:line: function: block: [x,y,z], thread: [x,y,z] Assertion `e` failed."
  std::snprintf(text, sizeof text,
                "%s:%u: %s: block: [%u,%u,%u], thread: [%u,%u,%u] Assertion `%s` failed.", file,
                line, function, b.x, b.y, b.z, t.x, t.y, t.z, expression);
  {
    std::lock_guard lock(g_print_mu);
    std::fprintf(stderr, "%s\n", text);
    std::fflush(stderr);
  }
  if (Worker* w = t_worker; w != nullptr && (w->current != nullptr || w->direct)) {
    if (w->abort == 0) {
      w->abort = kAssert;
      w->message = text;
    }
    throw BlockAbort{};
  }
}

CUDAMUX_DEVICE_EXPORT void cudamux_trap(void) {
  if (Worker* w = t_worker; w != nullptr && (w->current != nullptr || w->direct)) {
    if (w->abort == 0) {
      w->abort = kLaunchFailed;
      w->message = "__trap() called";
    }
    throw BlockAbort{};
  }
}

CUDAMUX_DEVICE_EXPORT void cudamux_yield(void) {
  Worker* wp = t_worker;
  if (wp == nullptr || wp->current == nullptr) {
    // Barrier-free and split blocks cannot switch threads here: a spinning OS thread gives
    // its core to the others (blocks it may wait for; cooperative grids have more threads
    // than cores). When another block failed the launch, the spinning block ends as the
    // fibers' scheduler ends it (nothing it waits for may ever come): run_direct catches this.
    if (wp != nullptr && wp->direct && wp->launch != nullptr && wp->launch->abort != nullptr &&
        __atomic_load_n(wp->launch->abort, __ATOMIC_RELAXED) != 0) {
      wp->abort = -1;  // not this block's failure
      throw BlockAbort{};
    }
    sched_yield();
    return;
  }
  Worker& w = *wp;
  Rec* r = w.current;
  const unsigned t = linear_thread(w);
  account_exits(w, r->accounted, t);  // threads this fiber finished before this one
  r->accounted = t;
  r->thread = t;
  r->tid = cudamux_threadIdx;
  if (!r->handed_off && t + 1 < w.n) {
    r->handed_off = true;
    w.ready.push_front(spawn(w, r->loop, r->args, t + 1));
  }
  // Threads parked at a warp collective or barrier that is now complete go on too (the ready
  // queue is never empty while a thread spins, so the scheduler would not release them).
  check_releases(w);
  // Alone in the block's ready queue: the awaited write can only come from another block
  // (another OS thread), so let it run.
  if (w.ready.empty()) sched_yield();
  w.ready.push_back(r);  // runnable again after the others
  w.sched = std::move(w.sched).resume();
  if (w.abort != 0) throw BlockAbort{};
}

// A GPU suspends the thread for about ns (the ISA allows [0, 2 ns], at most 1 ms): programs use
// it for back-off in spin loops and for delays they then measure with events. The other threads
// of the block run first (their sleeps overlap this one, as they started before it resumes);
// the rest of the time passes here: short waits yield the core in a loop (a sleep syscall would
// overshoot them; other blocks' threads, a spin-wait's producer among them, get the CPU).
CUDAMUX_DEVICE_EXPORT void cudamux_nanosleep(unsigned ns) {
  using clock = std::chrono::steady_clock;
  const auto end = clock::now() + std::chrono::nanoseconds(std::min(ns, 1000000u));
  cudamux_yield();
  if (auto now = clock::now(); end - now > std::chrono::microseconds(100))
    std::this_thread::sleep_until(end);
  while (clock::now() < end) sched_yield();
}

// The SM clock (clock(), clock64(), %clock64): nanoseconds of the steady clock plus, for each
// reading, kClockStepPerRead more. A GPU's resident threads spin on the clock together, so a
// block of N threads each waiting T cycles takes about T; the mock runs a block's threads one
// after another, and without the step such a block took N * T (NVIDIA's graphMemoryFootprint
// sample: minutes). With it a spin-wait ends after about T / kClockStepPerRead readings, while
// every thread still sees its clock only grow and deltas at least as large as the time that
// passed. %globaltimer stays real nanoseconds.
constexpr unsigned long long kClockStepPerRead = 1024;

CUDAMUX_DEVICE_EXPORT unsigned long long cudamux_clock64(void) {
  static thread_local unsigned long long skew = 0;
  skew += kClockStepPerRead;
  return static_cast<unsigned long long>(
             std::chrono::steady_clock::now().time_since_epoch().count()) +
         skew;
}

CUDAMUX_DEVICE_EXPORT unsigned long long cudamux_globaltimer(void) {
  return static_cast<unsigned long long>(
      std::chrono::steady_clock::now().time_since_epoch().count());
}

// cudaGraphSetConditional. A conditional handle is the address of the value the core keeps
// for it (core/src/graph.hpp, CondHandle), in host memory every kernel thread reaches; the
// conditional node reads it once its dependencies are done. A release store: CUDA's device
// runtime makes the value visible to the node after the kernel, as this does.
CUDAMUX_DEVICE_EXPORT void cudamux_graph_set_conditional(unsigned long long handle,
                                                         unsigned value) {
  if (handle == 0) cudamux_trap();  // no handle: an illegal access on a GPU as well
  __atomic_store_n(reinterpret_cast<unsigned*>(static_cast<std::uintptr_t>(handle)), value,
                   __ATOMIC_RELEASE);
}

// Dynamic parallelism: the parameter buffer carries the launch's configuration in front of
// the parameters, so that cudamux_cdp_launch needs only the buffer (as CUDA's does).
namespace {
struct CdpHeader {
  const void* kernel;
  const cudamux_kernel_desc* desc;
  cudamux_u3 grid, block;
  unsigned shared_bytes;
};
static_assert(sizeof(CdpHeader) % 16 == 0, "parameters stay 16-byte aligned after the header");
constexpr int kCudaErrorNotSupported = 801;
constexpr int kCudaErrorInvalidValue = 1;
}  // namespace

CUDAMUX_DEVICE_EXPORT void* cudamux_cdp_parameter_buffer(const void* kernel, cudamux_u3 grid,
                                                         cudamux_u3 block, unsigned shared_bytes) {
  void* raw = std::calloc(1, sizeof(CdpHeader) + CUDAMUX_CDP_PARAMS_MAX);
  if (raw == nullptr) return nullptr;
  auto* h = static_cast<CdpHeader*>(raw);
  h->kernel = kernel;
  h->desc = nullptr;
  h->grid = grid;
  h->block = block;
  h->shared_bytes = shared_bytes;
  return h + 1;
}

CUDAMUX_DEVICE_EXPORT void* cudamux_cdp_parameter_buffer_for(const cudamux_kernel_desc* desc,
                                                             cudamux_u3 grid, cudamux_u3 block,
                                                             unsigned shared_bytes) {
  void* params =
      cudamux_cdp_parameter_buffer(desc != nullptr ? desc->fn : nullptr, grid, block, shared_bytes);
  if (params != nullptr) (static_cast<CdpHeader*>(params) - 1)->desc = desc;
  return params;
}

CUDAMUX_DEVICE_EXPORT int cudamux_cdp_launch(void* parameter_buffer, void* /*stream: children
                                                run after the parent grid in any stream*/) {
  if (parameter_buffer == nullptr) return kCudaErrorInvalidValue;
  auto* h = static_cast<CdpHeader*>(parameter_buffer) - 1;
  const Worker* w = t_worker;
  const cudamux_launch* launch = w != nullptr ? w->launch : nullptr;
  int rc = kCudaErrorNotSupported;
  if (launch != nullptr && launch->child_launch != nullptr)
    rc = launch->child_launch(launch->child_user, h->kernel, h->desc, h->grid, h->block,
                              h->shared_bytes, parameter_buffer, CUDAMUX_CDP_PARAMS_MAX);
  std::free(h);
  return rc;
}

namespace cudamux::device {

__thread MemcheckState* t_memcheck __attribute__((tls_model("initial-exec"))) = nullptr;

bool current_kernel_thread(KernelThread& out) {
  Worker* w = t_worker;
  if (w == nullptr || (w->current == nullptr && !w->direct) || w->launch == nullptr) return false;
  out.launch = w->launch;
  out.dyn_shared = w->dyn_shared;
  out.block_serial = w->block_serial;
  out.barrier_epoch = w->barrier_epoch;
  const cudamux_u3 t = cudamux_threadIdx;
  const cudamux_u3 d = cudamux_blockDim;
  out.thread = t.x + d.x * (t.y + d.y * t.z);
  out.memcheck = &w->memcheck;
  out.stack_top = w->memcheck.stack_top;  // kept current by resume(), fiber_main, run_direct
  if (w->current != nullptr) {
    const unsigned warp = out.thread / 32;
    out.warp_epoch = warp < w->warp_epoch.size() ? w->warp_epoch[warp] : 0;
  } else {
    out.warp_epoch = 0;  // a direct run reaches no warp collective
  }
  return true;
}

void abort_block(int code, const char* message) {
  Worker& w = *t_worker;
  if (w.abort == 0) {
    w.abort = code;
    w.message = message;
  }
  throw BlockAbort{};
}

}  // namespace cudamux::device
