// Device management: cuDevice*.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdio>
#include <cstring>
#include <string>

#include "core.hpp"
#include "cudamux/driver_impl.hpp"

namespace cudamux::impl {
using core::Core;
using core::reject;

namespace {
CUresult check_device(CUdevice dev, const char* fn) {
  if (!Core::get().valid_device(dev))
    return reject(CUDA_ERROR_INVALID_DEVICE, fn, "no such device ordinal");
  return CUDA_SUCCESS;
}
int attribute_or(CUdevice dev, CUdevice_attribute attr, int fallback) {
  int v = 0;
  return Core::get().backend().devices().attribute(Core::get().backend_ordinal(dev), attr, v).ok()
             ? v
             : fallback;
}
}  // namespace

CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  if (!device) return reject(CUDA_ERROR_INVALID_VALUE, "cuDeviceGet", "null out-pointer");
  if (!Core::get().valid_device(ordinal))
    return reject(CUDA_ERROR_INVALID_DEVICE, "cuDeviceGet", "ordinal out of range");
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int* count) {
  if (!count) return reject(CUDA_ERROR_INVALID_VALUE, "cuDeviceGetCount", "null out-pointer");
  *count = Core::get().device_count();
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  if (!name || len <= 0)
    return reject(CUDA_ERROR_INVALID_VALUE, "cuDeviceGetName", "null or empty buffer");
  if (CUresult r = check_device(dev, "cuDeviceGetName")) return r;
  const std::string& n = Core::get().device(dev).props.name;
  const std::size_t copied = std::min(n.size(), static_cast<std::size_t>(len) - 1);
  std::memcpy(name, n.data(), copied);
  name[copied] = '\0';
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice dev) {
  if (!uuid) return reject(CUDA_ERROR_INVALID_VALUE, "cuDeviceGetUuid", "null out-pointer");
  if (CUresult r = check_device(dev, "cuDeviceGetUuid")) return r;
  const auto& u = Core::get().device(dev).props.uuid;
  std::memcpy(uuid->bytes, u.data(), sizeof uuid->bytes);
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice dev) { return impl::cuDeviceGetUuid_v2(uuid, dev); }

CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  if (!bytes) return reject(CUDA_ERROR_INVALID_VALUE, "cuDeviceTotalMem", "null out-pointer");
  if (CUresult r = check_device(dev, "cuDeviceTotalMem")) return r;
  *bytes = Core::get().device(dev).props.total_memory;
  return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem(unsigned int* bytes, CUdevice dev) {
  // The 32-bit variant of CUDA 2.0: saturate rather than wrap.
  size_t full = 0;
  if (!bytes) return reject(CUDA_ERROR_INVALID_VALUE, "cuDeviceTotalMem", "null out-pointer");
  if (CUresult r = impl::cuDeviceTotalMem_v2(&full, dev)) return r;
  *bytes = static_cast<unsigned int>(std::min<size_t>(full, UINT_MAX));
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib, CUdevice dev) {
  if (!pi) return reject(CUDA_ERROR_INVALID_VALUE, "cuDeviceGetAttribute", "null out-pointer");
  if (CUresult r = check_device(dev, "cuDeviceGetAttribute")) return r;
  if (static_cast<int>(attrib) <= 0 || attrib >= CU_DEVICE_ATTRIBUTE_MAX)
    return reject(CUDA_ERROR_INVALID_VALUE, "cuDeviceGetAttribute", "unknown attribute");
  Core& core = Core::get();
  const auto st = core.backend().devices().attribute(core.backend_ordinal(dev), attrib, *pi);
  if (st.native == core.backend().errors().not_supported().native)
    // An attribute CUDA defines but the backend cannot answer: an argument we
    // cannot honour, never an invented value.
    core.log().warn("cuDeviceGetAttribute: attribute {} is not available on backend '{}'",
                    static_cast<int>(attrib), core.backend().name());
  return core.map(st, "cuDeviceGetAttribute");
}

CUresult cuDeviceComputeCapability(int* major, int* minor, CUdevice dev) {
  if (!major || !minor)
    return reject(CUDA_ERROR_INVALID_VALUE, "cuDeviceComputeCapability", "null out-pointer");
  if (CUresult r = check_device(dev, "cuDeviceComputeCapability")) return r;
  const auto& p = Core::get().device(dev).props;
  *major = p.cc_major;
  *minor = p.cc_minor;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetProperties(CUdevprop* prop, CUdevice dev) {
  if (!prop) return reject(CUDA_ERROR_INVALID_VALUE, "cuDeviceGetProperties", "null out-pointer");
  if (CUresult r = check_device(dev, "cuDeviceGetProperties")) return r;
  *prop = CUdevprop{};
  prop->maxThreadsPerBlock = attribute_or(dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 0);
  prop->maxThreadsDim[0] = attribute_or(dev, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, 0);
  prop->maxThreadsDim[1] = attribute_or(dev, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, 0);
  prop->maxThreadsDim[2] = attribute_or(dev, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, 0);
  prop->maxGridSize[0] = attribute_or(dev, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, 0);
  prop->maxGridSize[1] = attribute_or(dev, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, 0);
  prop->maxGridSize[2] = attribute_or(dev, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, 0);
  prop->sharedMemPerBlock = attribute_or(dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 0);
  prop->totalConstantMemory = attribute_or(dev, CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY, 0);
  prop->SIMDWidth = attribute_or(dev, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 32);
  prop->memPitch = attribute_or(dev, CU_DEVICE_ATTRIBUTE_MAX_PITCH, 0);
  prop->regsPerBlock = attribute_or(dev, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, 0);
  prop->clockRate = attribute_or(dev, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 0);
  prop->textureAlign = attribute_or(dev, CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT, 0);
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetPCIBusId(char* pciBusId, int len, CUdevice dev) {
  if (!pciBusId || len <= 0)
    return reject(CUDA_ERROR_INVALID_VALUE, "cuDeviceGetPCIBusId", "null or empty buffer");
  if (CUresult r = check_device(dev, "cuDeviceGetPCIBusId")) return r;
  const auto& p = Core::get().device(dev).props;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%08X:%02X:%02X.0", static_cast<unsigned>(p.pci_domain),
                static_cast<unsigned>(p.pci_bus), static_cast<unsigned>(p.pci_device));
  const std::size_t n = std::min(std::strlen(buf), static_cast<std::size_t>(len) - 1);
  std::memcpy(pciBusId, buf, n);
  pciBusId[n] = '\0';
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetByPCIBusId(CUdevice* dev, const char* pciBusId) {
  if (!dev || !pciBusId)
    return reject(CUDA_ERROR_INVALID_VALUE, "cuDeviceGetByPCIBusId", "null argument");
  // Accepted forms: [domain]:[bus]:[device].[function] and [bus]:[device].[function], hex.
  unsigned domain = 0, bus = 0, device = 0, function = 0;
  char tail = 0;
  if (std::sscanf(pciBusId, "%x:%x:%x.%x%c", &domain, &bus, &device, &function, &tail) != 4) {
    domain = 0;
    if (std::sscanf(pciBusId, "%x:%x.%x%c", &bus, &device, &function, &tail) != 3)
      return reject(CUDA_ERROR_INVALID_VALUE, "cuDeviceGetByPCIBusId", "malformed PCI bus id");
  }
  Core& core = Core::get();
  for (int i = 0; i < core.device_count(); ++i) {
    const auto& p = core.device(i).props;
    if (static_cast<unsigned>(p.pci_domain) == domain && static_cast<unsigned>(p.pci_bus) == bus &&
        static_cast<unsigned>(p.pci_device) == device) {
      *dev = i;
      return CUDA_SUCCESS;
    }
  }
  return reject(CUDA_ERROR_INVALID_DEVICE, "cuDeviceGetByPCIBusId", "no device at that PCI bus id");
}

CUresult cuDeviceCanAccessPeer(int* canAccessPeer, CUdevice dev, CUdevice peerDev) {
  if (!canAccessPeer)
    return reject(CUDA_ERROR_INVALID_VALUE, "cuDeviceCanAccessPeer", "null out-pointer");
  if (CUresult r = check_device(dev, "cuDeviceCanAccessPeer")) return r;
  if (CUresult r = check_device(peerDev, "cuDeviceCanAccessPeer")) return r;
  *canAccessPeer =
      dev != peerDev && Core::get().backend().devices().can_access_peer(
                            Core::get().backend_ordinal(dev), Core::get().backend_ordinal(peerDev));
  return CUDA_SUCCESS;
}

}  // namespace cudamux::impl
