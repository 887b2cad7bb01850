// Virtual memory management on the CPU (issue 17): reserved ranges are PROT_NONE mappings of
// the process, physical allocations are memfd files (so their descriptors can be exported to
// another process and mapped there), cuMemMap maps the file over the reservation and
// cuMemSetAccess sets the protection. Kernels run in this process and touch the same pages.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cudamux/backend.hpp"

namespace cudamux::mock {

class MockVirtualMemory final : public backend::VirtualMemory {
 public:
  // 2 MiB, as NVIDIA's data-centre GPUs report for both granularities.
  static constexpr std::size_t kGranularity = std::size_t{2} << 20;

  backend::Status granularity(int ordinal, unsigned shareable, bool recommended,
                              std::size_t& out) override;
  backend::Status reserve(std::size_t size, std::size_t alignment, std::uintptr_t fixed,
                          std::uintptr_t& out) override;
  backend::Status free_range(std::uintptr_t base, std::size_t size) override;
  backend::Status create(int ordinal, std::size_t size, unsigned shareable,
                         unsigned char& compression, std::uint64_t& handle) override;
  backend::Status release(std::uint64_t handle) override;
  backend::Status map(std::uintptr_t va, std::size_t size, std::size_t offset,
                      std::uint64_t handle) override;
  backend::Status unmap(std::uintptr_t va, std::size_t size) override;
  backend::Status set_access(std::uintptr_t va, std::size_t size, int ordinal,
                             unsigned prot) override;
  backend::Status export_fd(std::uint64_t handle, int& fd) override;
  backend::Status import_fd(int fd, std::uint64_t& handle, std::size_t& size) override;
};

}  // namespace cudamux::mock
