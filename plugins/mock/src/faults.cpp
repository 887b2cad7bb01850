#include "faults.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <iterator>
#include <utility>

namespace cudamux::mock {
namespace {

struct ResultName {
  std::int32_t value;
  std::string_view name;
};
constexpr ResultName kCudaNames[] = {
#include "cuda_result_names.inc"
};

struct CallOps {
  std::string_view call;
  Op op;
};
// Base names of the entry points, driver and runtime alike, and the backend operation
// each reaches on the mock. One name may reach several operations (listed twice).
constexpr CallOps kCalls[] = {
    {"cuMemAlloc", Op::allocate},
    {"cuMemAllocPitch", Op::allocate},
    {"cudaMalloc", Op::allocate},
    {"cudaMallocPitch", Op::allocate},
    {"cudaMalloc3D", Op::allocate},
    {"cuMemFree", Op::free},
    {"cudaFree", Op::free},
    {"cuMemAllocHost", Op::allocate_host},
    {"cuMemHostAlloc", Op::allocate_host},
    {"cudaMallocHost", Op::allocate_host},
    {"cudaHostAlloc", Op::allocate_host},
    {"cuMemFreeHost", Op::free_host},
    {"cudaFreeHost", Op::free_host},
    {"cuMemAllocManaged", Op::allocate_managed},
    {"cudaMallocManaged", Op::allocate_managed},
    {"cuMemHostRegister", Op::register_host},
    {"cudaHostRegister", Op::register_host},
    {"cuMemHostUnregister", Op::unregister_host},
    {"cudaHostUnregister", Op::unregister_host},
    {"cuCtxCreate", Op::open_context},
    {"cuDevicePrimaryCtxRetain", Op::open_context},
    {"cuStreamCreate", Op::create_queue},
    {"cuStreamCreateWithPriority", Op::create_queue},
    {"cudaStreamCreate", Op::create_queue},
    {"cudaStreamCreateWithFlags", Op::create_queue},
    {"cudaStreamCreateWithPriority", Op::create_queue},
    {"cuEventCreate", Op::create_event},
    {"cudaEventCreate", Op::create_event},
    {"cudaEventCreateWithFlags", Op::create_event},
    {"cuCtxSynchronize", Op::context_synchronize},
    {"cudaDeviceSynchronize", Op::context_synchronize},
    {"cuModuleLoad", Op::load_module},
    {"cuModuleLoadData", Op::load_module},
    {"cuModuleLoadDataEx", Op::load_module},
    {"cuModuleLoadFatBinary", Op::load_module},
    {"cuLibraryLoadData", Op::load_module},
    {"cuLibraryLoadFromFile", Op::load_module},
    {"cuMemcpy", Op::copy_sync},
    {"cuMemcpyHtoD", Op::copy_sync},
    {"cuMemcpyDtoH", Op::copy_sync},
    {"cuMemcpyDtoD", Op::copy_sync},
    {"cuMemcpy2D", Op::copy_sync},
    {"cuMemcpy2DUnaligned", Op::copy_sync},
    {"cuMemcpy3D", Op::copy_sync},
    {"cuMemcpyPeer", Op::copy_sync},
    {"cudaMemcpy", Op::copy_sync},
    {"cudaMemcpy2D", Op::copy_sync},
    {"cudaMemcpy3D", Op::copy_sync},
    {"cudaMemcpyPeer", Op::copy_sync},
    {"cudaMemcpyToSymbol", Op::copy_sync},
    {"cudaMemcpyFromSymbol", Op::copy_sync},
    {"cuMemcpyAsync", Op::copy},
    {"cuMemcpyHtoDAsync", Op::copy},
    {"cuMemcpyDtoHAsync", Op::copy},
    {"cuMemcpyDtoDAsync", Op::copy},
    {"cuMemcpy2DAsync", Op::copy},
    {"cuMemcpy3DAsync", Op::copy},
    {"cuMemcpyPeerAsync", Op::copy},
    {"cudaMemcpyAsync", Op::copy},
    {"cudaMemcpy2DAsync", Op::copy},
    {"cudaMemcpy3DAsync", Op::copy},
    {"cudaMemcpyPeerAsync", Op::copy},
    {"cudaMemcpyToSymbolAsync", Op::copy},
    {"cudaMemcpyFromSymbolAsync", Op::copy},
    {"cuMemsetD8", Op::fill},
    {"cuMemsetD16", Op::fill},
    {"cuMemsetD32", Op::fill},
    {"cuMemsetD2D8", Op::fill},
    {"cuMemsetD2D16", Op::fill},
    {"cuMemsetD2D32", Op::fill},
    {"cuMemsetD8Async", Op::fill},
    {"cuMemsetD16Async", Op::fill},
    {"cuMemsetD32Async", Op::fill},
    {"cuMemsetD2D8Async", Op::fill},
    {"cuMemsetD2D16Async", Op::fill},
    {"cuMemsetD2D32Async", Op::fill},
    {"cudaMemset", Op::fill},
    {"cudaMemset2D", Op::fill},
    {"cudaMemsetAsync", Op::fill},
    {"cudaMemset2DAsync", Op::fill},
    {"cuLaunchHostFunc", Op::host_function},
    {"cudaLaunchHostFunc", Op::host_function},
    {"cuEventRecord", Op::record},
    {"cuEventRecordWithFlags", Op::record},
    {"cudaEventRecord", Op::record},
    {"cudaEventRecordWithFlags", Op::record},
    {"cuStreamWaitEvent", Op::wait},
    {"cudaStreamWaitEvent", Op::wait},
    {"cuStreamQuery", Op::queue_query},
    {"cudaStreamQuery", Op::queue_query},
    {"cuStreamSynchronize", Op::queue_synchronize},
    {"cudaStreamSynchronize", Op::queue_synchronize},
    {"cuLaunchKernel", Op::launch},
    {"cuLaunchKernelEx", Op::launch},
    {"cuLaunchCooperativeKernel", Op::launch},
    {"cudaLaunchKernel", Op::launch},
    {"cudaLaunchKernelExC", Op::launch},
    {"cudaLaunchCooperativeKernel", Op::launch},
    {"nvrtcCompileProgram", Op::compile},
};

}  // namespace

const char* mock_error_name(std::int32_t native) noexcept {
  switch (native) {
    case kMockErrorUnmapped:
      return "MOCK_ERROR_UNMAPPED";
    case kMockErrorUnmapped2:
      return "MOCK_ERROR_UNMAPPED_2";
    default:
      return nullptr;
  }
}

std::optional<std::int32_t> error_by_name(std::string_view name) noexcept {
  for (std::int32_t code : {kMockErrorUnmapped, kMockErrorUnmapped2})
    if (name == mock_error_name(code)) return code;
  for (const auto& r : kCudaNames)
    if (r.value != 0 && r.name == name) return r.value;
  return std::nullopt;
}

std::vector<Op> operations_of(std::string_view call) {
  std::vector<Op> ops;
  for (const auto& c : kCalls)
    if (c.call == call) ops.push_back(c.op);
  return ops;
}

Faults::Faults(const std::vector<FaultSpec>& specs, std::shared_ptr<spdlog::logger> log)
    : by_op_(static_cast<std::size_t>(Op::count_)), log_(std::move(log)) {
  for (const auto& spec : specs) {
    auto entry = std::make_unique<Entry>();
    entry->spec = spec;
    for (Op op : spec.ops) by_op_[static_cast<std::size_t>(op)].push_back(entry.get());
    entries_.push_back(std::move(entry));
  }
}

be::Status Faults::check(Op op) noexcept {
  const auto& entries = by_op_[static_cast<std::size_t>(op)];
  be::Status result = be::kOk;
  // Every entry counts every call of its operations, whether or not an earlier one fired.
  for (Entry* e : entries) {
    const std::uint64_t n = e->calls.fetch_add(1, std::memory_order_relaxed);
    const bool fires = n >= e->spec.after && (!e->spec.count || n - e->spec.after < *e->spec.count);
    if (!fires || !result.ok()) continue;
    result = be::Status{e->spec.error};
    try {
      log_->info("mock: injected fault: {} fails with {} (call {} of its backend operation)",
                 e->spec.call, e->spec.error_name, n + 1);
    } catch (...) {
    }
  }
  return result;
}

}  // namespace cudamux::mock
