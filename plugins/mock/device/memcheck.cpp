// Memory checks for kernels on the mock (issue 9).
//
// Two layers:
// - Always: SIGSEGV/SIGBUS raised by kernel code end the launch with CUDA_ERROR_ILLEGAL_ADDRESS
//   and a report (kernel, block, thread, address, nearest allocation) instead of killing the
//   process. The handler throws the block-abort exception through the signal frame; modules are
//   compiled with -fnon-call-exceptions so that every faulting instruction can be unwound.
// - Memcheck mode: modules are compiled with -fsanitize=kernel-address and outlined checks,
//   so every load and store of kernel code first calls cudamux_memcheck_access. An access is
//   valid when it lies in a live allocation the device can reach, the thread's own stack, its
//   block's shared memory, the launch's arguments or a loaded object (module code and data);
//   anything else fails the launch with a precise report. Shared-memory accesses also feed a
//   shadow that finds reads of bytes no thread wrote and accesses of two threads to one byte
//   with no barrier between them: those are hints, logged once per kind and launch.
#include <cxxabi.h>
#include <dlfcn.h>
#include <link.h>
#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <string>

#include "cudamux/device_abi.h"
#include "kernel_thread.hpp"

#define CUDAMUX_DEVICE_EXPORT extern "C" __attribute__((visibility("default")))

namespace cudamux::device {
namespace {

constexpr int kIllegalAddress = 700;  // CUDA_ERROR_ILLEGAL_ADDRESS
constexpr std::size_t kFreedHistory = 4096;

struct Allocation {
  std::uintptr_t size;
  int kind;
};
struct Freed {
  std::uintptr_t base;
  std::uintptr_t size;
  int kind;
};

// What kernels may reach. Written on allocation and free, read on the checks' slow path and
// in reports.
struct Registry {
  std::shared_mutex mu;
  std::map<std::uintptr_t, Allocation> live;
  std::deque<Freed> freed;  // newest last
  std::map<std::uintptr_t, std::uintptr_t> arenas;
};
Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: reachable from exit-time frees
  return *r;
}
// Bumped whenever a range found valid may have stopped being so (free, module unload).
std::atomic<std::uint64_t> g_generation{1};

const char* kind_name(int kind) {
  switch (kind) {
    case CUDAMUX_MEM_MANAGED:
      return "managed";
    case CUDAMUX_MEM_HOST_PINNED:
      return "pinned host";
    case CUDAMUX_MEM_HOST_REGISTERED:
      return "registered host";
    default:
      return "device";
  }
}

std::string kernel_name(const cudamux_launch* launch) {
  Dl_info info{};
  if (launch == nullptr || launch->kernel_fn == nullptr ||
      ::dladdr(launch->kernel_fn, &info) == 0 || info.dli_sname == nullptr)
    return "?";
  int status = 0;
  char* demangled = abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &status);
  std::string name = status == 0 && demangled != nullptr ? demangled : info.dli_sname;
  std::free(demangled);
  return name;
}

std::string triple(unsigned x, unsigned y, unsigned z) {
  return "(" + std::to_string(x) + "," + std::to_string(y) + "," + std::to_string(z) + ")";
}

std::string thread_of(unsigned linear) {
  const cudamux_u3 d = cudamux_blockDim;
  const unsigned dx = d.x == 0 ? 1 : d.x;
  const unsigned dy = d.y == 0 ? 1 : d.y;
  return triple(linear % dx, (linear / dx) % dy, linear / (dx * dy));
}

// "kernel 'k', block (x,y,z), thread (x,y,z)"
std::string who(const KernelThread& k, bool thread_known = true) {
  const cudamux_u3 b = cudamux_blockIdx;
  return "kernel '" + kernel_name(k.launch) + "', block " + triple(b.x, b.y, b.z) +
         (thread_known ? ", thread " + thread_of(k.thread) : std::string());
}

std::string hex(std::uintptr_t a) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%" PRIxPTR, a);
  return text;
}

// Where `a` (an access of `size` bytes, 0: unknown) lies relative to the allocations.
std::string describe_address(std::uintptr_t a, std::uintptr_t size) {
  Registry& r = registry();
  std::shared_lock lock(r.mu, std::try_to_lock);
  if (!lock.owns_lock()) return "allocation table busy";
  auto next = r.live.upper_bound(a);
  if (next != r.live.begin()) {
    auto prev = std::prev(next);
    const std::uintptr_t end = prev->first + prev->second.size;
    if (a + size <= end && a < end) {
      return "inside the " + std::to_string(prev->second.size) + "-byte " +
             kind_name(prev->second.kind) + " allocation at " + hex(prev->first) + " (offset " +
             std::to_string(a - prev->first) + ")";
    }
    if (a < end) {  // starts inside, runs past the end
      return "the access runs " + std::to_string(a + size - end) + " byte(s) past the end of the " +
             std::to_string(prev->second.size) + "-byte " + kind_name(prev->second.kind) +
             " allocation at " + hex(prev->first) + " (it starts at offset " +
             std::to_string(a - prev->first) + ")";
    }
  }
  for (auto it = r.freed.rbegin(); it != r.freed.rend(); ++it) {
    if (a >= it->base && a < it->base + it->size) {
      return "use after free: inside a " + std::to_string(it->size) + "-byte " +
             kind_name(it->kind) + " allocation at " + hex(it->base) + " that was freed (offset " +
             std::to_string(a - it->base) + ")";
    }
  }
  std::string near;
  std::uintptr_t best = ~std::uintptr_t{0};
  if (next != r.live.begin()) {
    auto prev = std::prev(next);
    const std::uintptr_t end = prev->first + prev->second.size;
    best = a - end;
    near = std::to_string(best) + " byte(s) after the end of the " +
           std::to_string(prev->second.size) + "-byte " + kind_name(prev->second.kind) +
           " allocation at " + hex(prev->first);
  }
  if (next != r.live.end() && next->first - a < best) {
    near = std::to_string(next->first - a) + " byte(s) before the " +
           std::to_string(next->second.size) + "-byte " + kind_name(next->second.kind) +
           " allocation at " + hex(next->first);
  }
  bool in_arena = false;
  auto arena = r.arenas.upper_bound(a);
  if (arena != r.arenas.begin()) {
    --arena;
    in_arena = a < arena->first + arena->second;
  }
  constexpr std::uintptr_t kNear = std::uintptr_t{1} << 20;  // farther: naming it misleads
  if (in_arena && near.empty()) return "in device memory, but no allocation is live";
  if (!in_arena && (near.empty() || best > kNear) &&
      (next == r.live.end() || next->first - a > kNear))
    return "not in any allocation the device can reach";
  return (in_arena ? "in device memory outside any allocation; nearest: "
                   : "not in any allocation; nearest: ") +
         near;
}

struct ObjectRanges {
  std::uintptr_t address;
  std::uintptr_t image_begin = 0, image_end = 0;
  std::uintptr_t tls_begin = 0, tls_end = 0;
};

int find_object_range(dl_phdr_info* info, std::size_t, void* data) {
  auto* q = static_cast<ObjectRanges*>(data);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_LOAD) {
      const std::uintptr_t b = info->dlpi_addr + ph.p_vaddr;
      if (q->address >= b && q->address < b + ph.p_memsz) {
        q->image_begin = b;
        q->image_end = b + ph.p_memsz;
        return 1;
      }
    } else if (ph.p_type == PT_TLS && info->dlpi_tls_data != nullptr) {
      const auto b = reinterpret_cast<std::uintptr_t>(info->dlpi_tls_data);
      if (q->address >= b && q->address < b + ph.p_memsz) {
        q->tls_begin = b;
        q->tls_end = b + ph.p_memsz;
        return 1;
      }
    }
  }
  return 0;
}

// --- shared-memory hazard hints ---

enum HintKind : unsigned {
  kUninitialised = 1,
  kReadAfterWrite = 2,
  kWriteAfterRead = 4,
  kWriteAfterWrite = 8
};

void send_hint(const KernelThread& k, HintKind kind, const std::string& text) {
  MemcheckState& m = *k.memcheck;
  if (m.hint_launch != k.launch->id) {
    m.hint_launch = k.launch->id;
    m.hint_kinds = 0;
  }
  if ((m.hint_kinds & kind) != 0) return;
  m.hint_kinds |= kind;
  // Once per launch and kind across all threads, too.
  static std::mutex mu;
  static std::map<std::pair<unsigned long long, unsigned>, bool> sent;
  {
    std::lock_guard lock(mu);
    if (sent.size() > 4096) sent.clear();
    if (!sent.emplace(std::make_pair(k.launch->id, unsigned{kind}), true).second) return;
  }
  if (k.launch->hint != nullptr) k.launch->hint(k.launch->hint_user, text.c_str());
}

// Both accesses in one barrier interval: nothing orders them.
bool unordered(unsigned other, std::uint32_t epoch, std::uint32_t warp_epoch,
               const KernelThread& k) {
  if (epoch != k.barrier_epoch) return false;
  if (other / 32 == k.thread / 32 && warp_epoch != k.warp_epoch) return false;
  return true;
}

void track_shared(const KernelThread& k, std::vector<ShadowCell>& shadow, std::size_t offset,
                  std::size_t size, bool is_write, const char* what) {
  if (shadow.size() < offset + size) shadow.resize(offset + size);
  const auto block = static_cast<std::uint32_t>(k.block_serial) | 1u;  // never 0
  const auto me = static_cast<std::uint16_t>(k.thread);
  const bool atomic = cudamux_memcheck_atomic != 0;
  for (std::size_t i = offset; i < offset + size; ++i) {
    ShadowCell& c = shadow[i];
    if (c.block != block) c = ShadowCell{block, 0, 0, 0, 0, 0, 0, 0};
    if (!is_write) {
      if ((c.state & 1u) == 0) {
        send_hint(k, kUninitialised,
                  "memcheck hint: " + who(k) + " reads " + std::to_string(size) + " byte(s) of " +
                      what + " at offset " + std::to_string(offset) +
                      " that no thread of the block has written (uninitialised shared memory)");
      } else if (!atomic && c.writer != me &&
                 unordered(c.writer, c.write_epoch, c.write_warp_epoch, k)) {
        send_hint(k, kReadAfterWrite,
                  "memcheck hint: " + who(k) + " reads " + what + " at offset " +
                      std::to_string(offset) + " that thread " + thread_of(c.writer) +
                      " wrote with no __syncthreads() between (read-after-write hazard)");
      }
      if (!atomic) {
        c.reader = me;
        c.read_epoch = k.barrier_epoch;
        c.read_warp_epoch = k.warp_epoch;
        c.state |= 2u;
      }
    } else {
      if (!atomic && (c.state & 1u) != 0 && c.writer != me &&
          unordered(c.writer, c.write_epoch, c.write_warp_epoch, k)) {
        send_hint(k, kWriteAfterWrite,
                  "memcheck hint: " + who(k) + " writes " + what + " at offset " +
                      std::to_string(offset) + " that thread " + thread_of(c.writer) +
                      " also wrote with no __syncthreads() between (write-after-write hazard)");
      } else if (!atomic && (c.state & 2u) != 0 && c.reader != me &&
                 unordered(c.reader, c.read_epoch, c.read_warp_epoch, k)) {
        send_hint(k, kWriteAfterRead,
                  "memcheck hint: " + who(k) + " writes " + what + " at offset " +
                      std::to_string(offset) + " that thread " + thread_of(c.reader) +
                      " read with no __syncthreads() between (write-after-read hazard)");
      }
      c.writer = me;
      c.write_epoch = k.barrier_epoch;
      c.write_warp_epoch = k.warp_epoch;
      c.state |= 1u;
    }
  }
}

[[noreturn]] void report_invalid(const KernelThread& k, std::uintptr_t a, std::uintptr_t size,
                                 bool is_write) {
  std::string where;
  const auto dyn = reinterpret_cast<std::uintptr_t>(k.dyn_shared);
  const std::uintptr_t dyn_bytes = k.launch->dyn_shared_bytes;
  if (dyn != 0 && a >= dyn && a < dyn + dyn_bytes + 4096) {
    where = (a < dyn + dyn_bytes ? "the access runs " + std::to_string(a + size - dyn - dyn_bytes) +
                                       " byte(s) past the end"
                                 : std::to_string(a - dyn - dyn_bytes) + " byte(s) after the end") +
            " of the block's " + std::to_string(dyn_bytes) + "-byte dynamic shared memory";
  } else if (k.memcheck->tls_end != 0 && a >= k.memcheck->tls_end &&
             a < k.memcheck->tls_end + 4096) {
    where = std::to_string(a - k.memcheck->tls_end) +
            " byte(s) after the end of the module's static shared memory";
  } else {
    where = describe_address(a, size);
  }
  const std::string text = "memcheck: invalid " + std::string(is_write ? "write" : "read") +
                           " of " + std::to_string(size) + " byte(s) at " + hex(a) + " by " +
                           who(k) + ": " + where;
  abort_block(kIllegalAddress, text.c_str());
}

}  // namespace

// --- the fault handler ---

namespace {
struct sigaction g_previous_segv {};
struct sigaction g_previous_bus {};

void chain(int sig, siginfo_t* info, void* context) {
  const struct sigaction& prev = sig == SIGBUS ? g_previous_bus : g_previous_segv;
  if ((prev.sa_flags & SA_SIGINFO) != 0 && prev.sa_sigaction != nullptr) {
    prev.sa_sigaction(sig, info, context);
    return;
  }
  if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN && prev.sa_handler != nullptr) {
    prev.sa_handler(sig);
    return;
  }
  // The default action: restore it; returning re-executes the access, which faults again.
  ::sigaction(sig, &prev, nullptr);
}

#ifndef SEGV_PKUERR
#define SEGV_PKUERR 4
#endif

// Host code touched device memory protected by memcheck's key: say so before the crash.
void report_host_access(const siginfo_t* info) {
  const auto a = reinterpret_cast<std::uintptr_t>(info->si_addr);
  const std::string text = "cudamux memcheck: host code touched device memory at " + hex(a) + " (" +
                           describe_address(a, 1) +
                           "); device memory is not host-accessible, as on a GPU: copy it "
                           "with cuMemcpy/cudaMemcpy or use managed or pinned memory\n";
  [[maybe_unused]] const auto n = ::write(2, text.data(), text.size());
}

void on_fault(int sig, siginfo_t* info, void* context) {
  KernelThread k;
  if (!current_kernel_thread(k)) {
    if (sig == SIGSEGV && info->si_code == SEGV_PKUERR) report_host_access(info);
    chain(sig, info, context);
    return;
  }
  const auto a = reinterpret_cast<std::uintptr_t>(info->si_addr);
  std::string cause = sig == SIGBUS ? "SIGBUS" : "SIGSEGV";
  cause += info->si_code == SEGV_ACCERR ? ", no access permission" : ", address not mapped";
  std::string where;
  const auto* uc = static_cast<const ucontext_t*>(context);
  const auto sp = static_cast<std::uintptr_t>(uc->uc_mcontext.gregs[REG_RSP]);
  if (a + 4096 >= sp && a < sp + 4096 && a < k.stack_top) {
    where = "stack overflow of the kernel thread (deep recursion or large local arrays)";
  } else {
    where = describe_address(a, 0);
  }
  // Without memcheck the thread loop may keep threadIdx in a register: only the block is
  // known for sure.
  const std::string text = "illegal memory access at " + hex(a) + " by " + who(k, false) + " (" +
                           cause + "): " + where +
                           "; thread and access size unknown (memcheck mode, "
                           "CUDAMUX_MEMCHECK=1, checks every access and names both)";
  abort_block(kIllegalAddress, text.c_str());
}
}  // namespace

void install_fault_handler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa {};
    sa.sa_sigaction = on_fault;
    // SA_NODEFER: the handler leaves by an exception, not by returning, so the signal must not
    // stay blocked. SA_ONSTACK: a kernel that overflowed its stack is handled too.
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGSEGV, &sa, &g_previous_segv);
    ::sigaction(SIGBUS, &sa, &g_previous_bus);
  });
}

AltStack::~AltStack() {
  if (memory_ == nullptr) return;
  stack_t current{};
  if (::sigaltstack(nullptr, &current) == 0 && current.ss_sp == memory_) {
    stack_t off{};
    off.ss_flags = SS_DISABLE;
    ::sigaltstack(&off, nullptr);
  }
  ::munmap(memory_, size_);
}

void AltStack::install() {
  stack_t current{};
  if (::sigaltstack(nullptr, &current) != 0 || (current.ss_flags & SS_DISABLE) == 0) return;
  size_ = 64 * 1024;
  void* p = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return;
  stack_t ss{};
  ss.ss_sp = p;
  ss.ss_size = size_;
  if (::sigaltstack(&ss, nullptr) != 0) {
    ::munmap(p, size_);
    return;
  }
  memory_ = p;
}

}  // namespace cudamux::device

using cudamux::device::KernelThread;

namespace {
void remember_valid(cudamux::device::MemcheckState& m, std::uintptr_t begin, std::uintptr_t end) {
  m.valid[m.next_slot] = {begin, end};
  m.next_slot = (m.next_slot + 1) % cudamux::device::MemcheckState::kValidSlots;
}
}  // namespace

CUDAMUX_DEVICE_EXPORT void cudamux_memcheck_access(const void* address, unsigned long size,
                                                   int is_write) {
  // Fast path: an allocation found valid before (no free since), or the thread's own frames
  // (from here up to where its kernel code started).
  cudamux::device::MemcheckState* mp = cudamux::device::t_memcheck;
  if (mp == nullptr) return;  // module initialisers, not kernels
  auto& m = *mp;
  const auto a = reinterpret_cast<std::uintptr_t>(address);
  const std::uintptr_t end = a + size;
  const std::uint64_t generation = cudamux::device::g_generation.load(std::memory_order_acquire);
  if (m.generation == generation) {
    for (const auto& r : m.valid)
      if (a >= r.begin && end <= r.end) return;
  } else {
    m.generation = generation;
    for (auto& r : m.valid) r = {};
    m.tls_begin = m.tls_end = 0;
  }
  const auto frame = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
  if (a >= frame && end <= m.stack_top) return;
  KernelThread k;
  if (!cudamux::device::current_kernel_thread(k)) return;
  const auto args = reinterpret_cast<std::uintptr_t>(k.launch->args);
  if (a >= args && end <= args + k.launch->args_size) return;
  const auto dyn = reinterpret_cast<std::uintptr_t>(k.dyn_shared);
  if (dyn != 0 && a >= dyn && end <= dyn + k.launch->dyn_shared_bytes) {
    cudamux::device::track_shared(k, m.dyn_shadow, a - dyn, size, is_write != 0,
                                  "dynamic shared memory");
    return;
  }
  // A PTX kernel's static .shared variables, just below the dynamic memory.
  if (dyn != 0 && a >= dyn - k.launch->static_shared_bytes && end <= dyn) return;
  if (a >= m.tls_begin && end <= m.tls_end) {
    if (m.tls_shadow_base != m.tls_begin) {
      m.tls_shadow.clear();
      m.tls_shadow_base = m.tls_begin;
    }
    cudamux::device::track_shared(k, m.tls_shadow, a - m.tls_begin, size, is_write != 0,
                                  "static shared memory");
    return;
  }
  {
    auto& r = cudamux::device::registry();
    std::shared_lock lock(r.mu);
    auto next = r.live.upper_bound(a);
    if (next != r.live.begin()) {
      auto prev = std::prev(next);
      if (end <= prev->first + prev->second.size) {
        remember_valid(m, prev->first, prev->first + prev->second.size);
        return;
      }
    }
  }
  cudamux::device::ObjectRanges q{a};
  ::dl_iterate_phdr(cudamux::device::find_object_range, &q);
  if (q.image_end != 0 && end <= q.image_end) {
    remember_valid(m, q.image_begin, q.image_end);
    return;
  }
  if (q.tls_end != 0 && end <= q.tls_end) {
    m.tls_begin = q.tls_begin;
    m.tls_end = q.tls_end;
    cudamux_memcheck_access(address, size, is_write);  // now classified: track the access
    return;
  }
  cudamux::device::report_invalid(k, a, size, is_write != 0);
}

CUDAMUX_DEVICE_EXPORT void cudamux_memcheck_track(const void* base, unsigned long long size,
                                                  int kind) {
  auto& r = cudamux::device::registry();
  const auto b = reinterpret_cast<std::uintptr_t>(base);
  std::unique_lock lock(r.mu);
  r.live[b] = cudamux::device::Allocation{static_cast<std::uintptr_t>(size), kind};
}

CUDAMUX_DEVICE_EXPORT void cudamux_memcheck_untrack(const void* base) {
  auto& r = cudamux::device::registry();
  const auto b = reinterpret_cast<std::uintptr_t>(base);
  {
    std::unique_lock lock(r.mu);
    auto it = r.live.find(b);
    if (it == r.live.end()) return;
    r.freed.push_back(cudamux::device::Freed{b, it->second.size, it->second.kind});
    if (r.freed.size() > cudamux::device::kFreedHistory) r.freed.pop_front();
    r.live.erase(it);
  }
  cudamux::device::g_generation.fetch_add(1, std::memory_order_acq_rel);
}

CUDAMUX_DEVICE_EXPORT void cudamux_memcheck_add_arena(const void* base, unsigned long long size) {
  auto& r = cudamux::device::registry();
  std::unique_lock lock(r.mu);
  r.arenas[reinterpret_cast<std::uintptr_t>(base)] = static_cast<std::uintptr_t>(size);
}

CUDAMUX_DEVICE_EXPORT void cudamux_memcheck_remove_arena(const void* base) {
  auto& r = cudamux::device::registry();
  {
    std::unique_lock lock(r.mu);
    const auto b = reinterpret_cast<std::uintptr_t>(base);
    auto it = r.arenas.find(b);
    if (it == r.arenas.end()) return;
    const std::uintptr_t e = b + it->second;
    r.arenas.erase(it);
    // Allocations of a destroyed arena are gone with it.
    r.live.erase(r.live.lower_bound(b), r.live.lower_bound(e));
    std::erase_if(r.freed,
                  [&](const cudamux::device::Freed& f) { return f.base >= b && f.base < e; });
  }
  cudamux::device::g_generation.fetch_add(1, std::memory_order_acq_rel);
}

CUDAMUX_DEVICE_EXPORT void cudamux_install_fault_handler(void) {
  cudamux::device::install_fault_handler();
}

CUDAMUX_DEVICE_EXPORT void cudamux_memcheck_modules_changed(void) {
  cudamux::device::g_generation.fetch_add(1, std::memory_order_acq_rel);
}
