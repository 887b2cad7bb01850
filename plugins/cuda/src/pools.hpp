// Stream-ordered memory pools of the cuda backend (issue 16): NVIDIA's own, so that NVIDIA's
// sub-allocation, reuse, accounting, release threshold and IPC apply to cudaMallocAsync and
// cuMemPool* (the core's pools allocate one cuMemAlloc per block, which is what NVIDIA's pools
// exist to avoid). A pool handle is NVIDIA's CUmemoryPool as it is. The stream-ordered
// allocation and free are NvidiaQueue::allocate_from_pool / free_to_pool (plugin.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "cudamux/backend.hpp"
#include "nvidia_api.hpp"

namespace cudamux::cuda {

// Makes the NVIDIA context behind one of the backend's DeviceContexts current on this thread
// (plugin.cpp, which knows the context class).
backend::Status make_context_current(backend::DeviceContext& ctx);

class NvidiaPools final : public backend::NativePools {
 public:
  // `devices`: NVIDIA's CUdevice per backend ordinal.
  NvidiaPools(const NvidiaApi& api, std::vector<CUdevice> devices)
      : api_(api), devices_(std::move(devices)) {}
  // Whether the driver has every function this needs (else the core's pools serve).
  static bool available(const NvidiaApi& api) noexcept;

  backend::Status create(backend::DeviceContext* ctx, const CUmemPoolProps& props,
                         std::uint64_t& pool) override;
  backend::Status destroy(backend::DeviceContext* ctx, std::uint64_t pool) override;
  backend::Status default_pool(backend::DeviceContext* ctx, const CUmemLocation& location,
                               CUmemAllocationType type, std::uint64_t& pool) override;
  backend::Status set_attribute(backend::DeviceContext* ctx, std::uint64_t pool,
                                CUmemPool_attribute attr, void* value) override;
  backend::Status get_attribute(backend::DeviceContext* ctx, std::uint64_t pool,
                                CUmemPool_attribute attr, void* value) override;
  backend::Status trim_to(backend::DeviceContext* ctx, std::uint64_t pool,
                          std::size_t keep) override;
  backend::Status set_access(backend::DeviceContext* ctx, std::uint64_t pool,
                             const std::vector<CUmemAccessDesc>& descs) override;
  backend::Status get_access(backend::DeviceContext* ctx, std::uint64_t pool,
                             const CUmemLocation& location, CUmemAccess_flags& flags) override;
  backend::Status export_pool(backend::DeviceContext* ctx, std::uint64_t pool, int& fd) override;
  backend::Status import_pool(backend::DeviceContext* ctx, int fd, std::uint64_t& pool) override;
  backend::Status export_pointer(backend::DeviceContext* ctx, void* ptr,
                                 CUmemPoolPtrExportData& out) override;
  backend::Status import_pointer(backend::DeviceContext& ctx, std::uint64_t pool,
                                 const CUmemPoolPtrExportData& data, void** out,
                                 std::size_t& bytes) override;

 private:
  // A location with NVIDIA's CUdevice for a device's backend ordinal.
  [[nodiscard]] CUmemLocation nvidia_location(CUmemLocation location) const noexcept;

  const NvidiaApi& api_;
  const std::vector<CUdevice> devices_;
};

}  // namespace cudamux::cuda
