#include "memory.hpp"

#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>

#include "cudamux/device_abi.h"

namespace cudamux::mock {
namespace {

std::size_t page_size() {
  static const auto size = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return size;
}

constexpr std::size_t round_up(std::size_t v, std::size_t a) { return (v + a - 1) / a * a; }
constexpr std::size_t round_down(std::size_t v, std::size_t a) { return v / a * a; }

std::atomic<int> g_device_key{-1};

}  // namespace

int device_memory_key() noexcept { return g_device_key.load(std::memory_order_relaxed); }

int allocate_device_memory_key(std::string& why) {
  static std::once_flag once;
  static std::string failure;
  std::call_once(once, [] {
    // Access disabled for the calling thread; threads inherit their creator's rights, and
    // the kernel starts every process with all keys but 0 disabled.
    const int key = ::pkey_alloc(0, PKEY_DISABLE_ACCESS);
    if (key < 0) {
      failure = std::strerror(errno);
      return;
    }
    g_device_key.store(key, std::memory_order_relaxed);
  });
  why = failure;
  return device_memory_key();
}

DeviceMemoryAccess::DeviceMemoryAccess() noexcept {
  const int key = device_memory_key();
  if (key < 0) return;
  saved_ = ::pkey_get(key);
  if (saved_ != 0) ::pkey_set(key, 0);
}

DeviceMemoryAccess::~DeviceMemoryAccess() {
  if (saved_ > 0) ::pkey_set(device_memory_key(), static_cast<unsigned>(saved_));
}

void DeviceMemoryAccess::reassert() noexcept {
  if (const int key = device_memory_key(); key >= 0) ::pkey_set(key, 0);
}

std::unique_ptr<DeviceArena> DeviceArena::create(std::size_t capacity, std::string& error) {
  const std::size_t reserved = round_up(capacity, page_size());
  // Backed by a memfd (sparse: pages exist once touched) so that cuIpcGetMemHandle can share
  // an allocation with another process (issue 17); anonymous memory when that fails.
  int fd = ::memfd_create("cudamux-mock-device", MFD_CLOEXEC);
  if (fd >= 0 && ::ftruncate(fd, static_cast<off_t>(reserved)) != 0) {
    ::close(fd);
    fd = -1;
  }
  void* base = MAP_FAILED;
  if (fd >= 0) {
    base = ::mmap(nullptr, reserved, PROT_NONE, MAP_SHARED | MAP_NORESERVE, fd, 0);
    if (base == MAP_FAILED) {
      ::close(fd);
      fd = -1;
    }
  }
  if (base == MAP_FAILED)
    base = ::mmap(nullptr, reserved, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED) {
    error = std::string("cannot reserve ") + std::to_string(reserved) +
            " bytes of address space for a mock device: " + std::strerror(errno);
    return nullptr;
  }
  cudamux_memcheck_add_arena(base, reserved);  // issue 9: reports tell device memory apart
  return std::unique_ptr<DeviceArena>(new DeviceArena(static_cast<std::byte*>(base), reserved,
                                                      round_down(capacity, kDeviceAlignment), fd));
}

DeviceArena::DeviceArena(std::byte* base, std::size_t reserved, std::size_t capacity, int fd)
    : base_(base), reserved_(reserved), capacity_(capacity), fd_(fd) {
  if (capacity_ > 0) insert_free(0, capacity_);
}

DeviceArena::~DeviceArena() {
  cudamux_memcheck_remove_arena(base_);
  ::munmap(base_, reserved_);
  if (fd_ >= 0) ::close(fd_);
}

bool DeviceArena::locate(const void* ptr, std::size_t& offset, std::size_t& size) const {
  if (!contains(ptr)) return false;
  offset = static_cast<std::size_t>(static_cast<const std::byte*>(ptr) - base_);
  std::lock_guard lock(mu_);
  const auto it = live_.find(offset);
  if (it == live_.end() || it->second.kind != Kind::device) return false;
  size = it->second.size;
  return true;
}

void DeviceArena::insert_free(std::size_t offset, std::size_t size) {
  free_by_offset_.emplace(offset, size);
  free_by_size_.emplace(size, offset);
}

void DeviceArena::erase_free(std::map<std::size_t, std::size_t>::iterator it) {
  free_by_size_.erase({it->second, it->first});
  free_by_offset_.erase(it);
}

void DeviceArena::release_locked(std::size_t offset, std::size_t size) {
  const std::size_t freed_begin = offset;
  const std::size_t freed_end = offset + size;
  // Coalesce with the free neighbours on both sides.
  auto next = free_by_offset_.lower_bound(offset);
  if (next != free_by_offset_.end() && next->first == offset + size) {
    size += next->second;
    erase_free(next);
  }
  auto prev = free_by_offset_.lower_bound(offset);
  if (prev != free_by_offset_.begin()) {
    --prev;
    if (prev->first + prev->second == offset) {
      offset = prev->first;
      size += prev->second;
      erase_free(prev);
    }
  }
  insert_free(offset, size);

  // Pages wholly inside the coalesced free block hold no allocation: give back those the
  // freed range touched (the others went back earlier). They stay PROT_READ|WRITE, which
  // keeps the VMA count low; a later allocation faults fresh zero pages in.
  const std::size_t first =
      std::max(round_up(offset, page_size()), round_down(freed_begin, page_size()));
  const std::size_t last =
      std::min(round_down(offset + size, page_size()), round_up(freed_end, page_size()));
  if (last > first) {
    // A shared mapping keeps its pages in the memfd: punch them out of it (fresh zero pages
    // later, as MADV_DONTNEED gives anonymous memory).
    if (fd_ >= 0)
      (void)::fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(first),
                        static_cast<off_t>(last - first));
    else
      ::madvise(base_ + first, last - first, MADV_DONTNEED);
  }
}

CUresult DeviceArena::allocate(std::size_t bytes, Kind kind, void** out) {
  if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (bytes > capacity_) return CUDA_ERROR_OUT_OF_MEMORY;
  // Keyed device memory takes whole pages (a key belongs to a page).
  const bool keyed = key_ >= 0 && kind == Kind::device;
  const std::size_t size = round_up(bytes, key_ >= 0 ? page_size() : kDeviceAlignment);
  std::size_t offset = 0;
  {
    std::lock_guard lock(mu_);
    const auto fit = free_by_size_.lower_bound({size, 0});
    if (fit == free_by_size_.end()) return CUDA_ERROR_OUT_OF_MEMORY;
    const auto [block_size, block_offset] = *fit;
    erase_free(free_by_offset_.find(block_offset));
    if (block_size > size) insert_free(block_offset + size, block_size - size);
    offset = block_offset;
    live_.emplace(offset, Live{size, kind});
    used_ += size;
    // Commit under the lock: a concurrent free of a neighbour sharing a page must not
    // decommit it between our bookkeeping and our mprotect.
    const std::size_t first = round_down(offset, page_size());
    const std::size_t last = round_up(offset + size, page_size());
    const int rc = key_ >= 0 ? ::pkey_mprotect(base_ + first, last - first, PROT_READ | PROT_WRITE,
                                               keyed ? key_ : 0)
                             : ::mprotect(base_ + first, last - first, PROT_READ | PROT_WRITE);
    if (rc != 0) {
      // Out of VMAs or commit charge: undo and report like a full device.
      live_.erase(offset);
      used_ -= size;
      release_locked(offset, size);
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
  }
  *out = base_ + offset;
  // Issue 9: what kernels may touch. The requested size, not the rounded one: an access past
  // it is out of bounds although the arena's granule would hide it.
  cudamux_memcheck_track(*out, bytes,
                         kind == Kind::managed ? CUDAMUX_MEM_MANAGED : CUDAMUX_MEM_DEVICE);
  return CUDA_SUCCESS;
}

CUresult DeviceArena::free(void* ptr, Kind kind) {
  if (!contains(ptr)) return CUDA_ERROR_INVALID_VALUE;
  const auto offset = static_cast<std::size_t>(static_cast<std::byte*>(ptr) - base_);
  std::lock_guard lock(mu_);
  const auto it = live_.find(offset);
  if (it == live_.end() || it->second.kind != kind) return CUDA_ERROR_INVALID_VALUE;
  const std::size_t size = it->second.size;
  live_.erase(it);
  used_ -= size;
  cudamux_memcheck_untrack(ptr);  // before the range can be handed out again

  release_locked(offset, size);
  return CUDA_SUCCESS;
}

std::size_t DeviceArena::used() const {
  std::lock_guard lock(mu_);
  return used_;
}

bool DeviceArena::contains(const void* ptr) const noexcept {
  const auto* p = static_cast<const std::byte*>(ptr);
  return p >= base_ && p < base_ + capacity_;
}

HostMemory::~HostMemory() {
  // Pinned allocations the program leaked die with the backend, as with a real driver.
  for (const auto& [begin, range] : ranges_) {
    if (range.owned)
      std::free(reinterpret_cast<void*>(begin));  // NOLINT(performance-no-int-to-ptr)
  }
}

bool HostMemory::overlaps(std::uintptr_t begin, std::size_t size) const {
  auto it = ranges_.lower_bound(begin + size);  // first range starting at/after our end
  if (it == ranges_.begin()) return false;
  --it;
  return it->first + it->second.size > begin;
}

CUresult HostMemory::allocate(std::size_t bytes, void** out) {
  if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (bytes > std::numeric_limits<std::size_t>::max() / 2) return CUDA_ERROR_OUT_OF_MEMORY;
  const std::size_t size = round_up(bytes, page_size());
  void* p = std::aligned_alloc(page_size(), size);
  if (p == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  std::lock_guard lock(mu_);
  ranges_.emplace(reinterpret_cast<std::uintptr_t>(p), Range{size, true});
  cudamux_memcheck_track(p, bytes, CUDAMUX_MEM_HOST_PINNED);
  *out = p;
  return CUDA_SUCCESS;
}

CUresult HostMemory::free(void* ptr) {
  {
    std::lock_guard lock(mu_);
    const auto it = ranges_.find(reinterpret_cast<std::uintptr_t>(ptr));
    if (it == ranges_.end() || !it->second.owned) return CUDA_ERROR_INVALID_VALUE;
    ranges_.erase(it);
    cudamux_memcheck_untrack(ptr);
  }
  std::free(ptr);
  return CUDA_SUCCESS;
}

CUresult HostMemory::register_range(void* ptr, std::size_t bytes) {
  if (ptr == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  const auto begin = reinterpret_cast<std::uintptr_t>(ptr);
  if (begin + bytes < begin) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(mu_);
  if (overlaps(begin, bytes)) return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  ranges_.emplace(begin, Range{bytes, false});
  cudamux_memcheck_track(ptr, bytes, CUDAMUX_MEM_HOST_REGISTERED);
  return CUDA_SUCCESS;
}

CUresult HostMemory::unregister_range(void* ptr) {
  std::lock_guard lock(mu_);
  const auto it = ranges_.find(reinterpret_cast<std::uintptr_t>(ptr));
  if (it == ranges_.end() || it->second.owned) return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
  ranges_.erase(it);
  cudamux_memcheck_untrack(ptr);
  return CUDA_SUCCESS;
}

bool HostMemory::contains(const void* ptr) const {
  std::lock_guard lock(mu_);
  return overlaps(reinterpret_cast<std::uintptr_t>(ptr), 1);
}

}  // namespace cudamux::mock
