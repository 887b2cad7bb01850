// Graph memory nodes (issue 16): memory allocation and free nodes, their capture from
// cuMemAllocAsync / cuMemFreeAsync, and the device's graph memory attributes.
//
// CUDA fixes an allocation node's address when the node is created and makes the memory
// usable between the node and its free node at each launch. cudamux allocates the memory when
// the node is created and keeps it while any graph or executable graph holds the node (or a
// clone of it): the address is stable, the nodes themselves run nothing, and an access outside
// the node's lifetime is, as in CUDA, the program's error (memcheck does not flag it here).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>

#include "cudamux/driver_impl.hpp"
#include "graph.hpp"

namespace cudamux::core {

namespace {

struct DeviceGraphMemory {
  std::size_t current = 0;
  std::size_t high = 0;
};
// Guarded by graph_mutex().
std::map<int, DeviceGraphMemory>& device_memory() {
  static auto* m = new std::map<int, DeviceGraphMemory>;
  return *m;
}
std::map<CUdeviceptr, std::weak_ptr<GraphAllocation>>& live_allocations() {
  static auto* m = new std::map<CUdeviceptr, std::weak_ptr<GraphAllocation>>;
  return *m;
}
// Set once a graph allocated memory: until then every free skips graph_mutex() (cuMemFreeAsync
// of pool memory asks on each call).
std::atomic<bool> g_graph_memory_made{false};

}  // namespace

struct GraphAllocation {
  CUdeviceptr ptr = 0;
  std::size_t bytes = 0;
  int device = 0;
  unsigned long long buffer_id = 0;
  // Runs under graph_mutex() (graphs and their nodes are destroyed under it).
  ~GraphAllocation() {
    live_allocations().erase(ptr);
    device_memory()[device].current -= bytes;
    free_graph_memory(ptr, buffer_id);
  }
};

CUresult prepare_alloc(CUDA_MEM_ALLOC_NODE_PARAMS& p, AllocParams& out, const char* fn) {
  if (p.bytesize == 0) return reject(CUDA_ERROR_INVALID_VALUE, fn, "zero size");
  if (p.poolProps.allocType != CU_MEM_ALLOCATION_TYPE_PINNED)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "allocation type must be pinned");
  if (p.poolProps.location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
      !Core::get().valid_device(p.poolProps.location.id))
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "the location must be a valid device");
  if (p.accessDescCount && !p.accessDescs)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "null access descriptors");
  Context* ctx = nullptr;
  if (CUresult r = current_context(ctx)) return r;
  if (ctx->device != p.poolProps.location.id)
    return reject(CUDA_ERROR_NOT_SUPPORTED, fn,
                  "graph memory of another device than the current context's");
  auto mem = std::make_shared<GraphAllocation>();
  if (CUresult r = allocate_graph_memory(*ctx, p.bytesize, mem->ptr, mem->buffer_id, fn)) {
    mem->ptr = 0;  // nothing to free
    live_allocations().erase(0);
    return r;
  }
  mem->bytes = p.bytesize;
  mem->device = ctx->device;
  DeviceGraphMemory& d = device_memory()[ctx->device];
  d.current += p.bytesize;
  d.high = std::max(d.high, d.current);
  live_allocations()[mem->ptr] = mem;
  g_graph_memory_made.store(true, std::memory_order_release);
  AllocParams a;
  a.params = p;
  a.access.assign(p.accessDescs, p.accessDescs + p.accessDescCount);
  a.params.accessDescs = a.access.empty() ? nullptr : a.access.data();
  a.params.dptr = mem->ptr;
  a.memory = std::move(mem);
  p.dptr = a.params.dptr;
  out = std::move(a);
  out.params.accessDescs = out.access.empty() ? nullptr : out.access.data();
  return CUDA_SUCCESS;
}

bool is_graph_memory(CUdeviceptr p) noexcept {
  if (!g_graph_memory_made.load(std::memory_order_acquire)) return false;
  std::lock_guard lock(graph_mutex());
  const auto it = live_allocations().find(p);
  return it != live_allocations().end() && !it->second.expired();
}

CUresult prepare_free(CUdeviceptr p, const char* fn) {
  const auto it = live_allocations().find(p);
  if (it == live_allocations().end() || it->second.expired())
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "not memory a graph allocated");
  return CUDA_SUCCESS;
}

}  // namespace cudamux::core

namespace cudamux::impl {
using core::GraphNode;
using core::reject;

CUresult cuGraphAddMemAllocNode(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t n,
                                CUDA_MEM_ALLOC_NODE_PARAMS* p) {
  const char* fn = "cuGraphAddMemAllocNode";
  if (!p) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null parameters");
  CUgraphNodeParams gp{};
  gp.type = CU_GRAPH_NODE_TYPE_MEM_ALLOC;
  std::memcpy(&gp.alloc, p, sizeof *p);
  const CUresult r = impl::cuGraphAddNode(out, g, deps, n, &gp);
  if (r == CUDA_SUCCESS) p->dptr = gp.alloc.dptr;
  return r;
}

CUresult cuGraphMemAllocNodeGetParams(CUgraphNode h, CUDA_MEM_ALLOC_NODE_PARAMS* p) {
  const char* fn = "cuGraphMemAllocNodeGetParams";
  if (!p) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  std::lock_guard lock(core::graph_mutex());
  GraphNode* n = core::node_of(h);
  if (!n || n->type != CU_GRAPH_NODE_TYPE_MEM_ALLOC)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "not a memory allocation node");
  *p = n->alloc.params;
  return CUDA_SUCCESS;
}

CUresult cuGraphAddMemFreeNode(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t n,
                               CUdeviceptr dptr) {
  CUgraphNodeParams gp{};
  gp.type = CU_GRAPH_NODE_TYPE_MEM_FREE;
  gp.free.dptr = dptr;
  return impl::cuGraphAddNode(out, g, deps, n, &gp);
}

CUresult cuGraphMemFreeNodeGetParams(CUgraphNode h, CUdeviceptr* dptr_out) {
  const char* fn = "cuGraphMemFreeNodeGetParams";
  if (!dptr_out) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  std::lock_guard lock(core::graph_mutex());
  GraphNode* n = core::node_of(h);
  if (!n || n->type != CU_GRAPH_NODE_TYPE_MEM_FREE)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "not a memory free node");
  *dptr_out = n->free_ptr;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGraphMemTrim(CUdevice device) {
  if (!core::Core::get().valid_device(device))
    return reject(CUDA_ERROR_INVALID_DEVICE, "cuDeviceGraphMemTrim", "invalid device");
  // Nothing is cached: graph memory goes back with the last graph that holds it.
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void* value) {
  const char* fn = "cuDeviceGetGraphMemAttribute";
  if (!value) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null out-pointer");
  if (!core::Core::get().valid_device(device))
    return reject(CUDA_ERROR_INVALID_DEVICE, fn, "invalid device");
  std::lock_guard lock(core::graph_mutex());
  const auto& d = core::device_memory()[device];
  cuuint64_t v = 0;
  switch (attr) {
    case CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT:
    case CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT:
      v = d.current;  // no caching: what is reserved is in use
      break;
    case CU_GRAPH_MEM_ATTR_USED_MEM_HIGH:
    case CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH:
      v = d.high;
      break;
    default:
      return reject(CUDA_ERROR_INVALID_VALUE, fn, "unknown attribute");
  }
  *static_cast<cuuint64_t*>(value) = v;
  return CUDA_SUCCESS;
}

CUresult cuDeviceSetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void* value) {
  const char* fn = "cuDeviceSetGraphMemAttribute";
  if (!value) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null value");
  if (!core::Core::get().valid_device(device))
    return reject(CUDA_ERROR_INVALID_DEVICE, fn, "invalid device");
  if (attr != CU_GRAPH_MEM_ATTR_USED_MEM_HIGH && attr != CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "only the high watermarks can be set");
  if (*static_cast<const cuuint64_t*>(value) != 0)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "a high watermark can only be reset to 0");
  std::lock_guard lock(core::graph_mutex());
  auto& d = core::device_memory()[device];
  d.high = d.current;
  return CUDA_SUCCESS;
}

}  // namespace cudamux::impl
