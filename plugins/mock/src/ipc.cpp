#include "ipc.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "cudamux/device_abi.h"
#include "memory.hpp"

namespace cudamux::mock {
namespace {

constexpr std::uint32_t kMemMagic = 0x434d584du;    // "CMXM"
constexpr std::uint32_t kEventMagic = 0x434d5845u;  // "CMXE"

// What a CUipcMemHandle carries on the mock (64 bytes of reserved space).
struct MemHandle {
  std::uint32_t magic;
  std::int32_t pid;
  std::int32_t fd;
  std::uint32_t pad;
  std::uint64_t offset;
  std::uint64_t size;
};
static_assert(sizeof(MemHandle) <= sizeof(CUipcMemHandle));

struct EventHandle {
  std::uint32_t magic;
  std::int32_t pid;
  std::int32_t fd;
};
static_assert(sizeof(EventHandle) <= sizeof(CUipcEventHandle));

std::size_t page_size() {
  static const auto size = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return size;
}

// Opens another process's descriptor; -1 when it is gone.
int open_remote(std::int32_t pid, std::int32_t fd) {
  const std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
  return ::open(path.c_str(), O_RDWR | O_CLOEXEC);
}

struct Mapping {
  void* base;
  std::size_t length;
};
std::mutex g_mu;
std::map<std::uintptr_t, Mapping> g_mappings;  // what ipc_open_memory handed out

}  // namespace

CUresult ipc_export_memory(const DeviceArena& arena, void* base, CUipcMemHandle& out) {
  std::size_t offset = 0, size = 0;
  if (!arena.locate(base, offset, size)) return CUDA_ERROR_INVALID_VALUE;
  if (arena.shared_fd() < 0) return CUDA_ERROR_NOT_SUPPORTED;  // no memfd on this system
  MemHandle h{kMemMagic, static_cast<std::int32_t>(::getpid()), arena.shared_fd(), 0, offset, size};
  std::memset(&out, 0, sizeof out);
  std::memcpy(&out, &h, sizeof h);
  return CUDA_SUCCESS;
}

CUresult ipc_open_memory(const CUipcMemHandle& handle, void** out, std::size_t& bytes) {
  MemHandle h{};
  std::memcpy(&h, &handle, sizeof h);
  if (h.magic != kMemMagic || h.size == 0) return CUDA_ERROR_INVALID_VALUE;
  if (h.pid == ::getpid()) return CUDA_ERROR_INVALID_CONTEXT;
  const int fd = open_remote(h.pid, h.fd);
  if (fd < 0) return CUDA_ERROR_INVALID_VALUE;  // the exporter is gone
  const std::size_t first = h.offset / page_size() * page_size();
  const std::size_t length =
      (h.offset + h.size + page_size() - 1) / page_size() * page_size() - first;
  void* base =
      ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, static_cast<off_t>(first));
  ::close(fd);
  if (base == MAP_FAILED) return CUDA_ERROR_MAP_FAILED;
  void* p = static_cast<std::byte*>(base) + (h.offset - first);
  {
    std::lock_guard lock(g_mu);
    g_mappings[reinterpret_cast<std::uintptr_t>(p)] = Mapping{base, length};
  }
  cudamux_memcheck_track(p, h.size, CUDAMUX_MEM_DEVICE);  // kernels may touch it (issue 9)
  *out = p;
  bytes = h.size;
  return CUDA_SUCCESS;
}

CUresult ipc_close_memory(void* ptr) {
  Mapping m{};
  {
    std::lock_guard lock(g_mu);
    const auto it = g_mappings.find(reinterpret_cast<std::uintptr_t>(ptr));
    if (it == g_mappings.end()) return CUDA_ERROR_INVALID_VALUE;
    m = it->second;
    g_mappings.erase(it);
  }
  cudamux_memcheck_untrack(ptr);
  ::munmap(m.base, m.length);
  return CUDA_SUCCESS;
}

std::shared_ptr<IpcEventState> IpcEventState::create(std::uint64_t submitted,
                                                     std::uint64_t completed) {
  const int fd = ::memfd_create("cudamux-mock-event", MFD_CLOEXEC);
  if (fd < 0) return nullptr;
  void* p = MAP_FAILED;
  if (::ftruncate(fd, static_cast<off_t>(page_size())) == 0)
    p = ::mmap(nullptr, page_size(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    ::close(fd);
    return nullptr;
  }
  auto* c = static_cast<IpcEventCounters*>(p);
  c->submitted = submitted;
  c->completed = completed;
  c->magic = kEventMagic;
  return std::shared_ptr<IpcEventState>(new IpcEventState(fd, c));
}

std::shared_ptr<IpcEventState> IpcEventState::open(const CUipcEventHandle& handle, CUresult& r) {
  EventHandle h{};
  std::memcpy(&h, &handle, sizeof h);
  r = CUDA_ERROR_INVALID_VALUE;
  if (h.magic != kEventMagic) return nullptr;
  const int fd = open_remote(h.pid, h.fd);
  if (fd < 0) return nullptr;
  void* p = ::mmap(nullptr, page_size(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) {
    r = CUDA_ERROR_MAP_FAILED;
    return nullptr;
  }
  auto* c = static_cast<IpcEventCounters*>(p);
  if (c->magic != kEventMagic) {
    ::munmap(p, page_size());
    return nullptr;
  }
  r = CUDA_SUCCESS;
  return std::shared_ptr<IpcEventState>(new IpcEventState(-1, c));
}

IpcEventState::~IpcEventState() {
  ::munmap(counters_, page_size());
  if (fd_ >= 0) ::close(fd_);
}

void IpcEventState::handle(CUipcEventHandle& out) const noexcept {
  const EventHandle h{kEventMagic, static_cast<std::int32_t>(::getpid()), fd_};
  std::memset(&out, 0, sizeof out);
  std::memcpy(&out, &h, sizeof h);
}

std::uint64_t IpcEventState::begin_record() noexcept {
  return std::atomic_ref(counters_->submitted).fetch_add(1, std::memory_order_acq_rel) + 1;
}

void IpcEventState::complete(std::uint64_t generation) noexcept {
  std::atomic_ref done(counters_->completed);
  std::uint64_t seen = done.load(std::memory_order_acquire);
  while (seen < generation &&
         !done.compare_exchange_weak(seen, generation, std::memory_order_acq_rel)) {
  }
}

std::uint64_t IpcEventState::submitted() const noexcept {
  return std::atomic_ref(counters_->submitted).load(std::memory_order_acquire);
}

bool IpcEventState::done(std::uint64_t generation) const noexcept {
  return std::atomic_ref(counters_->completed).load(std::memory_order_acquire) >= generation;
}

void IpcEventState::wait(std::uint64_t generation, const std::atomic<bool>* stop) const noexcept {
  // The other process has no way to wake us: poll, briefly spinning, then sleeping.
  auto pause = std::chrono::microseconds(0);
  for (unsigned spins = 0; !done(generation); ++spins) {
    if (stop && stop->load(std::memory_order_acquire)) return;
    if (spins < 64) {
      std::this_thread::yield();
      continue;
    }
    pause = std::min(std::chrono::microseconds(1000), pause + std::chrono::microseconds(20));
    std::this_thread::sleep_for(pause);
  }
}

}  // namespace cudamux::mock
