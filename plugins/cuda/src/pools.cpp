// Stream-ordered memory pools of the cuda backend (issue 16): NVIDIA's cuMemPool* as they are.
#include "pools.hpp"

#include "nvidia_status.hpp"

namespace cudamux::cuda {
namespace {

CUmemoryPool nvidia_pool(std::uint64_t pool) noexcept {
  return reinterpret_cast<CUmemoryPool>(pool);  // NOLINT(performance-no-int-to-ptr)
}

// The program's current context, made NVIDIA's current one, when it has one: pool calls need no
// particular context, but NVIDIA's driver may want some context current.
backend::Status enter(backend::DeviceContext* ctx) {
  return ctx ? make_context_current(*ctx) : backend::kOk;
}

}  // namespace

bool NvidiaPools::available(const NvidiaApi& api) noexcept {
  bool complete = true;
#define CUDAMUX_NVIDIA_HAS(name) complete = complete && api.name != nullptr;
  CUDAMUX_NVIDIA_POOL_FUNCTIONS(CUDAMUX_NVIDIA_HAS)
#undef CUDAMUX_NVIDIA_HAS
  return complete;
}

CUmemLocation NvidiaPools::nvidia_location(CUmemLocation location) const noexcept {
  if (location.type == CU_MEM_LOCATION_TYPE_DEVICE) {
    location.id = location.id >= 0 && static_cast<std::size_t>(location.id) < devices_.size()
                      ? devices_[static_cast<std::size_t>(location.id)]
                      : -1;
  }
  return location;
}

backend::Status NvidiaPools::create(backend::DeviceContext* ctx, const CUmemPoolProps& props,
                                    std::uint64_t& pool) {
  if (auto st = enter(ctx); !st.ok()) return st;
  CUmemPoolProps nvidia_props = props;
  nvidia_props.location = nvidia_location(props.location);
  CUmemoryPool p = nullptr;
  const CUresult r = api_.cuMemPoolCreate(&p, &nvidia_props);
  pool = reinterpret_cast<std::uint64_t>(p);
  return status(r);
}

backend::Status NvidiaPools::destroy(backend::DeviceContext* ctx, std::uint64_t pool) {
  if (auto st = enter(ctx); !st.ok()) return st;
  return status(api_.cuMemPoolDestroy(nvidia_pool(pool)));
}

backend::Status NvidiaPools::default_pool(backend::DeviceContext* ctx,
                                          const CUmemLocation& location, CUmemAllocationType type,
                                          std::uint64_t& pool) {
  if (auto st = enter(ctx); !st.ok()) return st;
  CUmemoryPool p = nullptr;
  CUresult r = CUDA_SUCCESS;
  CUmemLocation where = nvidia_location(location);
  if (type == CU_MEM_ALLOCATION_TYPE_PINNED && where.type == CU_MEM_LOCATION_TYPE_DEVICE) {
    r = api_.cuDeviceGetDefaultMemPool(&p, where.id);
  } else if (api_.cuMemGetDefaultMemPool) {  // CUDA 13.0: the host's and managed memory's pools
    r = api_.cuMemGetDefaultMemPool(&p, &where, type);
  } else {
    r = CUDA_ERROR_NOT_SUPPORTED;
  }
  pool = reinterpret_cast<std::uint64_t>(p);
  return status(r);
}

backend::Status NvidiaPools::set_attribute(backend::DeviceContext* ctx, std::uint64_t pool,
                                           CUmemPool_attribute attr, void* value) {
  if (auto st = enter(ctx); !st.ok()) return st;
  return status(api_.cuMemPoolSetAttribute(nvidia_pool(pool), attr, value));
}

backend::Status NvidiaPools::get_attribute(backend::DeviceContext* ctx, std::uint64_t pool,
                                           CUmemPool_attribute attr, void* value) {
  if (auto st = enter(ctx); !st.ok()) return st;
  return status(api_.cuMemPoolGetAttribute(nvidia_pool(pool), attr, value));
}

backend::Status NvidiaPools::trim_to(backend::DeviceContext* ctx, std::uint64_t pool,
                                     std::size_t keep) {
  if (auto st = enter(ctx); !st.ok()) return st;
  return status(api_.cuMemPoolTrimTo(nvidia_pool(pool), keep));
}

backend::Status NvidiaPools::set_access(backend::DeviceContext* ctx, std::uint64_t pool,
                                        const std::vector<CUmemAccessDesc>& descs) {
  if (auto st = enter(ctx); !st.ok()) return st;
  std::vector<CUmemAccessDesc> nvidia_descs = descs;
  for (CUmemAccessDesc& d : nvidia_descs) d.location = nvidia_location(d.location);
  return status(
      api_.cuMemPoolSetAccess(nvidia_pool(pool), nvidia_descs.data(), nvidia_descs.size()));
}

backend::Status NvidiaPools::get_access(backend::DeviceContext* ctx, std::uint64_t pool,
                                        const CUmemLocation& location, CUmemAccess_flags& flags) {
  if (auto st = enter(ctx); !st.ok()) return st;
  CUmemLocation where = nvidia_location(location);
  return status(api_.cuMemPoolGetAccess(&flags, nvidia_pool(pool), &where));
}

backend::Status NvidiaPools::export_pool(backend::DeviceContext* ctx, std::uint64_t pool, int& fd) {
  if (auto st = enter(ctx); !st.ok()) return st;
  return status(api_.cuMemPoolExportToShareableHandle(&fd, nvidia_pool(pool),
                                                      CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
}

backend::Status NvidiaPools::import_pool(backend::DeviceContext* ctx, int fd, std::uint64_t& pool) {
  if (auto st = enter(ctx); !st.ok()) return st;
  CUmemoryPool p = nullptr;
  // CUDA passes a POSIX descriptor by value in the pointer argument.
  const CUresult r = api_.cuMemPoolImportFromShareableHandle(
      &p, reinterpret_cast<void*>(static_cast<std::intptr_t>(fd)),  // NOLINT
      CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
  pool = reinterpret_cast<std::uint64_t>(p);
  return status(r);
}

backend::Status NvidiaPools::export_pointer(backend::DeviceContext* ctx, void* ptr,
                                            CUmemPoolPtrExportData& out) {
  if (auto st = enter(ctx); !st.ok()) return st;
  return status(api_.cuMemPoolExportPointer(&out, reinterpret_cast<CUdeviceptr>(ptr)));
}

backend::Status NvidiaPools::import_pointer(backend::DeviceContext& ctx, std::uint64_t pool,
                                            const CUmemPoolPtrExportData& data, void** out,
                                            std::size_t& bytes) {
  if (auto st = make_context_current(ctx); !st.ok()) return st;
  CUmemPoolPtrExportData copy = data;  // NVIDIA's prototype takes it non-const
  CUdeviceptr p = 0;
  if (CUresult r = api_.cuMemPoolImportPointer(&p, nvidia_pool(pool), &copy)) return status(r);
  *out = reinterpret_cast<void*>(p);  // NOLINT(performance-no-int-to-ptr)
  // The size, for the core's registry: NVIDIA's own range query.
  bytes = 0;
  CUdeviceptr base = 0;
  std::size_t size = 0;
  if (api_.cuMemGetAddressRange_v2 && api_.cuMemGetAddressRange_v2(&base, &size, p) == CUDA_SUCCESS)
    bytes = size - (p - base);
  return backend::kOk;
}

}  // namespace cudamux::cuda
