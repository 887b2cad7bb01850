// Peer access between contexts of different devices (issue 17): cuCtxEnablePeerAccess /
// cuCtxDisablePeerAccess, recorded per context pair, and the P2P link queries.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <mutex>
#include <shared_mutex>

#include "core.hpp"
#include "cudamux/driver_impl.hpp"

namespace cudamux::impl {
using core::Context;
using core::Core;
using core::reject;

namespace {

CUresult check_pair(CUdevice src, CUdevice dst, const char* fn) {
  Core& core = Core::get();
  if (!core.valid_device(src) || !core.valid_device(dst))
    return reject(CUDA_ERROR_INVALID_DEVICE, fn, "no such device ordinal");
  if (src == dst) return reject(CUDA_ERROR_INVALID_DEVICE, fn, "a device is not its own peer");
  return CUDA_SUCCESS;
}

bool can_access(CUdevice dev, CUdevice peer) {
  Core& core = Core::get();
  return dev != peer && core.backend().devices().can_access_peer(core.backend_ordinal(dev),
                                                                 core.backend_ordinal(peer));
}

// An enabled entry of `ctx` for `peer` (the live context it names).
auto find_peer(Context& ctx, const Context& peer) {
  return std::find_if(ctx.peers.begin(), ctx.peers.end(),
                      [&](const auto& p) { return p.first == peer.handle && p.second == peer.id; });
}

// Entries whose context was destroyed (or a primary context reset) name nothing any more.
void drop_stale_peers(Context& ctx) {
  std::erase_if(ctx.peers, [](const auto& p) {
    const Context* c = core::context_of(p.first);
    return c == nullptr || c->id != p.second;
  });
}

// What a link answers without a backend answer of its own: a peer-capable pair of one host
// has every capability (as two GPUs on one NVLink or PCIe switch with atomics do), the
// relative performance rank is 0 (the only link), and an unreachable pair has none.
int derived_p2p_attribute(CUdevice_P2PAttribute attr, bool access) {
  switch (attr) {
    case CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED:
    case CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED:
    case CU_DEVICE_P2P_ATTRIBUTE_CUDA_ARRAY_ACCESS_SUPPORTED:
      return access ? 1 : 0;
    case CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK:
    case CU_DEVICE_P2P_ATTRIBUTE_ONLY_PARTIAL_NATIVE_ATOMIC_SUPPORTED:
      return 0;
  }
  return 0;
}

// The native capabilities of each atomic operation over a link with all atomics native: what
// CUDA C++ offers on device memory (atomicInc / atomicDec are unsigned 32-bit; exchange and
// compare-and-swap are not reductions; float operations have no signedness).
unsigned native_atomic_capabilities(CUatomicOperation op) {
  constexpr unsigned kInt = CU_ATOMIC_CAPABILITY_SIGNED | CU_ATOMIC_CAPABILITY_UNSIGNED |
                            CU_ATOMIC_CAPABILITY_SCALAR_32 | CU_ATOMIC_CAPABILITY_SCALAR_64;
  switch (op) {
    case CU_ATOMIC_OPERATION_INTEGER_ADD:
    case CU_ATOMIC_OPERATION_INTEGER_MIN:
    case CU_ATOMIC_OPERATION_INTEGER_MAX:
    case CU_ATOMIC_OPERATION_AND:
    case CU_ATOMIC_OPERATION_OR:
    case CU_ATOMIC_OPERATION_XOR:
      return kInt | CU_ATOMIC_CAPABILITY_REDUCTION;
    case CU_ATOMIC_OPERATION_INTEGER_INCREMENT:
    case CU_ATOMIC_OPERATION_INTEGER_DECREMENT:
      return CU_ATOMIC_CAPABILITY_UNSIGNED | CU_ATOMIC_CAPABILITY_REDUCTION |
             CU_ATOMIC_CAPABILITY_SCALAR_32;
    case CU_ATOMIC_OPERATION_EXCHANGE:
    case CU_ATOMIC_OPERATION_CAS:
      return kInt;
    case CU_ATOMIC_OPERATION_FLOAT_ADD:
      return CU_ATOMIC_CAPABILITY_REDUCTION | CU_ATOMIC_CAPABILITY_SCALAR_32 |
             CU_ATOMIC_CAPABILITY_SCALAR_64;
    case CU_ATOMIC_OPERATION_FLOAT_MIN:
    case CU_ATOMIC_OPERATION_FLOAT_MAX:
      return CU_ATOMIC_CAPABILITY_REDUCTION | CU_ATOMIC_CAPABILITY_SCALAR_32;
    case CU_ATOMIC_OPERATION_MAX:
      break;
  }
  return 0;
}

}  // namespace

CUresult cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags) {
  constexpr const char* fn = "cuCtxEnablePeerAccess";
  Context* ctx = nullptr;
  if (CUresult r = core::current_context(ctx)) return r;
  if (Flags != 0) return reject(CUDA_ERROR_INVALID_VALUE, fn, "flags must be 0");
  Core& core = Core::get();
  // The peer must not be destroyed while the backend links the two.
  std::shared_lock lifetime(core.context_lifetime_mutex);
  Context* peer = core::context_of(peerContext);
  if (peer == nullptr) return reject(CUDA_ERROR_INVALID_CONTEXT, fn, "invalid peer context");
  // NVIDIA's driver (580) answers the current context itself as a device that cannot be its
  // own peer, not as an invalid context.
  if (peer == ctx)
    return reject(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, fn, "a context cannot be its own peer");
  if (!can_access(ctx->device, peer->device))
    return reject(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, fn,
                  "the current context's device cannot access the peer's device");
  std::lock_guard lock(ctx->state_mutex);
  drop_stale_peers(*ctx);
  if (find_peer(*ctx, *peer) != ctx->peers.end())
    return reject(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, fn, "already enabled");
  if (const auto st = ctx->impl->enable_peer_access(*peer->impl); !st.ok()) return core.map(st, fn);
  ctx->peers.emplace_back(peer->handle, peer->id);
  return CUDA_SUCCESS;
}

CUresult cuCtxDisablePeerAccess(CUcontext peerContext) {
  constexpr const char* fn = "cuCtxDisablePeerAccess";
  Context* ctx = nullptr;
  if (CUresult r = core::current_context(ctx)) return r;
  Core& core = Core::get();
  std::shared_lock lifetime(core.context_lifetime_mutex);
  Context* peer = core::context_of(peerContext);
  if (peer == nullptr) return reject(CUDA_ERROR_INVALID_CONTEXT, fn, "invalid peer context");
  std::lock_guard lock(ctx->state_mutex);
  drop_stale_peers(*ctx);
  const auto it = find_peer(*ctx, *peer);
  if (it == ctx->peers.end())
    return reject(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, fn, "peer access was not enabled");
  if (const auto st = ctx->impl->disable_peer_access(*peer->impl); !st.ok())
    return core.map(st, fn);
  ctx->peers.erase(it);
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetP2PAttribute(int* value, CUdevice_P2PAttribute attrib, CUdevice srcDevice,
                                 CUdevice dstDevice) {
  constexpr const char* fn = "cuDeviceGetP2PAttribute";
  if (!value) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  if (CUresult r = check_pair(srcDevice, dstDevice, fn)) return r;
  if (attrib < CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK ||
      attrib > CU_DEVICE_P2P_ATTRIBUTE_ONLY_PARTIAL_NATIVE_ATOMIC_SUPPORTED)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "unknown attribute");
  Core& core = Core::get();
  int v = 0;
  backend::Status st;
  if (core.backend().devices().p2p_attribute(core.backend_ordinal(srcDevice),
                                             core.backend_ordinal(dstDevice), attrib, v, st)) {
    if (!st.ok()) return core.map(st, fn);
  } else {
    v = derived_p2p_attribute(attrib, can_access(srcDevice, dstDevice));
  }
  *value = v;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetP2PAtomicCapabilities(unsigned int* capabilities,
                                          const CUatomicOperation* operations, unsigned int count,
                                          CUdevice srcDevice, CUdevice dstDevice) {
  constexpr const char* fn = "cuDeviceGetP2PAtomicCapabilities";
  if (!capabilities || !operations) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null array");
  if (count == 0) return reject(CUDA_ERROR_INVALID_VALUE, fn, "count is 0");
  if (CUresult r = check_pair(srcDevice, dstDevice, fn)) return r;
  for (unsigned i = 0; i < count; ++i) {
    if (static_cast<unsigned>(operations[i]) >= CU_ATOMIC_OPERATION_MAX)
      return reject(CUDA_ERROR_INVALID_VALUE, fn, "unknown atomic operation");
  }
  Core& core = Core::get();
  backend::Status status;
  if (core.backend().devices().p2p_atomic_capabilities(core.backend_ordinal(srcDevice),
                                                       core.backend_ordinal(dstDevice), operations,
                                                       count, capabilities, status))
    return core.map(status, fn);
  // Per operation from the link's NATIVE_ATOMIC_SUPPORTED answer: all of CUDA C++'s atomics
  // natively, or none (a link with only some native atomics has no finer answer here).
  int native = 0;
  if (CUresult r = impl::cuDeviceGetP2PAttribute(
          &native, CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED, srcDevice, dstDevice))
    return r;
  for (unsigned i = 0; i < count; ++i)
    capabilities[i] = native ? native_atomic_capabilities(operations[i]) : 0u;
  return CUDA_SUCCESS;
}

}  // namespace cudamux::impl
