// Memory of the mock: device ranges of their own, and tracked host memory.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>

namespace cudamux::mock {

inline constexpr std::size_t kDeviceAlignment = 256;  // what cuMemAlloc guarantees

// Memcheck (issue 9): device memory can carry a memory protection key (x86 PKU) that host
// threads lack, so host code touching it faults as it does on a GPU. The mock's own threads
// enable the key while they copy, fill or run kernels (DeviceMemoryAccess).
// The process-wide key, or -1 (not allocated: memcheck off, or no protection keys here).
int device_memory_key() noexcept;
// Allocates the key once per process; -1 with `why` filled when the CPU or kernel has none.
int allocate_device_memory_key(std::string& why);
// While it lives, the calling thread may touch keyed device memory.
class DeviceMemoryAccess {
 public:
  DeviceMemoryAccess() noexcept;
  ~DeviceMemoryAccess();
  DeviceMemoryAccess(const DeviceMemoryAccess&) = delete;
  DeviceMemoryAccess& operator=(const DeviceMemoryAccess&) = delete;
  // After a fault handler ran on this thread (it resets the thread's key rights).
  static void reassert() noexcept;

 private:
  int saved_ = -1;
};

// One device's memory: a PROT_NONE/MAP_NORESERVE reservation of `capacity` bytes that no
// host allocation can ever land in, sub-allocated best-fit with metadata kept outside
// the range (so user overruns cannot corrupt the allocator). Pages are committed with
// mprotect on allocation and handed back with MADV_DONTNEED once no allocation uses them.
class DeviceArena {
 public:
  enum class Kind : std::uint8_t { device, managed };

  // nullptr and `error` filled when the address range cannot be reserved.
  static std::unique_ptr<DeviceArena> create(std::size_t capacity, std::string& error);
  ~DeviceArena();
  DeviceArena(const DeviceArena&) = delete;
  DeviceArena& operator=(const DeviceArena&) = delete;

  CUresult allocate(std::size_t bytes, Kind kind, void** out);
  // CUDA_ERROR_INVALID_VALUE unless `ptr` is the base of a live allocation of `kind`.
  CUresult free(void* ptr, Kind kind);

  [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }
  [[nodiscard]] std::size_t used() const;
  [[nodiscard]] bool contains(const void* ptr) const noexcept;
  // IPC (issue 17): the file descriptor backing the arena (a memfd another process opens
  // through /proc/<pid>/fd/<fd>; -1 when it could not be made) and where the live device
  // allocation based at `ptr` lies in it. false when `ptr` is no such base.
  [[nodiscard]] int shared_fd() const noexcept { return fd_; }
  bool locate(const void* ptr, std::size_t& offset, std::size_t& size) const;
  // Device allocations from now on carry `key` (see device_memory_key) and take whole pages,
  // so that no page is shared with managed memory, which host code may touch.
  void protect_device_allocations(int key) noexcept { key_ = key; }

 private:
  DeviceArena(std::byte* base, std::size_t reserved, std::size_t capacity, int fd);
  void insert_free(std::size_t offset, std::size_t size);
  void erase_free(std::map<std::size_t, std::size_t>::iterator it);
  // Returns [offset, offset+size) to the free lists, coalescing; mu_ held.
  void release_locked(std::size_t offset, std::size_t size);

  struct Live {
    std::size_t size;
    Kind kind;
  };

  std::byte* const base_;
  const std::size_t reserved_;
  const std::size_t capacity_;
  mutable std::mutex mu_;
  std::map<std::size_t, std::size_t> free_by_offset_;           // offset -> size
  std::set<std::pair<std::size_t, std::size_t>> free_by_size_;  // (size, offset): best fit
  std::unordered_map<std::size_t, Live> live_;                  // offset -> allocation
  std::size_t used_ = 0;
  int key_ = -1;
  const int fd_ = -1;
};

// Page-locked (here: ordinary, page-aligned) host allocations and registered host ranges.
// Shared by all contexts, as CUDA's portable pinned memory is.
class HostMemory {
 public:
  HostMemory() = default;
  ~HostMemory();
  HostMemory(const HostMemory&) = delete;
  HostMemory& operator=(const HostMemory&) = delete;

  CUresult allocate(std::size_t bytes, void** out);
  CUresult free(void* ptr);
  CUresult register_range(void* ptr, std::size_t bytes);
  CUresult unregister_range(void* ptr);
  // True when `ptr` lies in a pinned allocation or registered range.
  [[nodiscard]] bool contains(const void* ptr) const;

 private:
  struct Range {
    std::size_t size;
    bool owned;  // allocated by us (free) rather than registered (unregister)
  };
  [[nodiscard]] bool overlaps(std::uintptr_t begin, std::size_t size) const;

  mutable std::mutex mu_;
  std::map<std::uintptr_t, Range> ranges_;
};

}  // namespace cudamux::mock
