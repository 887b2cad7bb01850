#include "vmm.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace cudamux::mock {
namespace {

backend::Status st(CUresult r) noexcept { return {static_cast<std::int32_t>(r)}; }

// Physical handles are the memfd descriptors themselves (never 0: descriptor 0 is stdin).
int fd_of(std::uint64_t handle) noexcept { return static_cast<int>(handle); }

}  // namespace

backend::Status MockVirtualMemory::granularity(int, unsigned shareable, bool, std::size_t& out) {
  if (shareable & CU_MEM_HANDLE_TYPE_FABRIC) return st(CUDA_ERROR_NOT_SUPPORTED);  // no fabric
  out = kGranularity;
  return backend::kOk;
}

backend::Status MockVirtualMemory::reserve(std::size_t size, std::size_t alignment,
                                           std::uintptr_t fixed, std::uintptr_t& out) {
  if (alignment < kGranularity) alignment = kGranularity;
  constexpr int kFlags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
  if (fixed != 0 && fixed % alignment == 0) {
    // The requested address when it is free (MAP_FIXED_NOREPLACE never replaces a mapping).
    void* p = ::mmap(reinterpret_cast<void*>(fixed), size, PROT_NONE, kFlags | MAP_FIXED_NOREPLACE,
                     -1, 0);
    if (p != MAP_FAILED) {
      if (reinterpret_cast<std::uintptr_t>(p) == fixed) {
        out = fixed;
        return backend::kOk;
      }
      ::munmap(p, size);  // a kernel without MAP_FIXED_NOREPLACE took it as a hint
    }
  }
  // Anywhere: over-reserve, then give back the unaligned head and the tail.
  if (size > SIZE_MAX - alignment) return st(CUDA_ERROR_OUT_OF_MEMORY);
  const std::size_t span = size + alignment;
  void* p = ::mmap(nullptr, span, PROT_NONE, kFlags, -1, 0);
  if (p == MAP_FAILED) return st(CUDA_ERROR_OUT_OF_MEMORY);
  const auto raw = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t base = (raw + alignment - 1) / alignment * alignment;
  if (base > raw) ::munmap(p, base - raw);
  if (raw + span > base + size)
    ::munmap(reinterpret_cast<void*>(base + size), raw + span - base - size);
  out = base;
  return backend::kOk;
}

backend::Status MockVirtualMemory::free_range(std::uintptr_t base, std::size_t size) {
  return ::munmap(reinterpret_cast<void*>(base), size) == 0 ? backend::kOk
                                                            : st(CUDA_ERROR_INVALID_VALUE);
}

backend::Status MockVirtualMemory::create(int, std::size_t size, unsigned shareable,
                                          unsigned char& compression, std::uint64_t& handle) {
  if (shareable & CU_MEM_HANDLE_TYPE_FABRIC) return st(CUDA_ERROR_NOT_SUPPORTED);
  // Compressible memory reads and writes as any other; the mock keeps what was asked, so that a
  // program checking it (NVIDIA's cudaCompressibleMemory) sees what a GPU that has it answers.
  if (compression != CU_MEM_ALLOCATION_COMP_GENERIC) compression = CU_MEM_ALLOCATION_COMP_NONE;
  const int fd = ::memfd_create("cudamux-vmm", MFD_CLOEXEC);
  if (fd < 0) return st(CUDA_ERROR_OUT_OF_MEMORY);
  if (::ftruncate(fd, static_cast<off_t>(size)) != 0) {
    ::close(fd);
    return st(CUDA_ERROR_OUT_OF_MEMORY);
  }
  handle = static_cast<std::uint64_t>(fd);
  return backend::kOk;
}

backend::Status MockVirtualMemory::release(std::uint64_t handle) {
  return ::close(fd_of(handle)) == 0 ? backend::kOk : st(CUDA_ERROR_INVALID_VALUE);
}

backend::Status MockVirtualMemory::map(std::uintptr_t va, std::size_t size, std::size_t offset,
                                       std::uint64_t handle) {
  void* p = ::mmap(reinterpret_cast<void*>(va), size, PROT_NONE, MAP_SHARED | MAP_FIXED,
                   fd_of(handle), static_cast<off_t>(offset));
  return p == MAP_FAILED ? st(CUDA_ERROR_OUT_OF_MEMORY) : backend::kOk;
}

backend::Status MockVirtualMemory::unmap(std::uintptr_t va, std::size_t size) {
  // Back to a reserved hole, so that the range stays ours until cuMemAddressFree.
  void* p = ::mmap(reinterpret_cast<void*>(va), size, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
  return p == MAP_FAILED ? st(CUDA_ERROR_OUT_OF_MEMORY) : backend::kOk;
}

// One address space serves every mock device: the last access set for a range is its
// protection (CUDA's per-device access is not modelled).
backend::Status MockVirtualMemory::set_access(std::uintptr_t va, std::size_t size, int,
                                              unsigned prot) {
  int native = PROT_NONE;
  if (prot == CU_MEM_ACCESS_FLAGS_PROT_READ) native = PROT_READ;
  if (prot == CU_MEM_ACCESS_FLAGS_PROT_READWRITE) native = PROT_READ | PROT_WRITE;
  return ::mprotect(reinterpret_cast<void*>(va), size, native) == 0 ? backend::kOk
                                                                    : st(CUDA_ERROR_INVALID_VALUE);
}

backend::Status MockVirtualMemory::export_fd(std::uint64_t handle, int& fd) {
  fd = ::fcntl(fd_of(handle), F_DUPFD_CLOEXEC, 0);
  return fd < 0 ? st(CUDA_ERROR_OUT_OF_MEMORY) : backend::kOk;
}

backend::Status MockVirtualMemory::import_fd(int fd, std::uint64_t& handle, std::size_t& size) {
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode) || info.st_size <= 0)
    return st(CUDA_ERROR_INVALID_VALUE);
  const int own = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (own < 0) return st(CUDA_ERROR_OUT_OF_MEMORY);
  handle = static_cast<std::uint64_t>(own);
  size = static_cast<std::size_t>(info.st_size);
  return backend::kOk;
}

}  // namespace cudamux::mock
