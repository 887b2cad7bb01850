// cuGetProcAddress / cuGetProcAddress_v2: (API name, CUDA version, stream flavor) -> entry
// point, over the table generated from api/driver/driver_api.json.
//
// Rules (NVIDIA's documented semantics):
//  - the variant chosen is the newest one whose version is <= the requested version;
//  - CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM picks the per-thread (_ptds/_ptsz)
//    variant where one exists at that version, and is ignored otherwise;
//    CU_GET_PROC_ADDRESS_DEFAULT and CU_GET_PROC_ADDRESS_LEGACY_STREAM pick legacy;
//  - unknown name -> CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND, known name but every variant
//    newer than requested -> CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT, *pfn = NULL. With a
//    status out-pointer (cuGetProcAddress_v2) the call itself succeeds and the status
//    carries the answer, as NVIDIA's driver 580 does (tests/driver/oracle); without one
//    (cuGetProcAddress) CUDA_ERROR_NOT_FOUND is the only way to say it;
//  - not-supported functions still resolve (to their stub), so callers get a clean
//    CUDA_ERROR_NOT_SUPPORTED at call time rather than a NULL they may not check.

// Internal mode: API names are not renamed to their newest variant, and every exported
// symbol is declared, so the generated rows can take each entry point's address.
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <cudaProfiler.h>

#include <algorithm>
#include <cudamux/api_support.hpp>
#include <cudamux/driver_impl.hpp>
#include <iterator>
#include <string_view>

namespace {

using cudamux::api::ProcEntry;
using cudamux::api::StreamFlavor;

const ProcEntry kProcs[] = {
#include <cudamux/driver_procs.inc>
};

bool name_less(const ProcEntry& e, std::string_view name) { return e.name < name; }
bool less_name(std::string_view name, const ProcEntry& e) { return name < e.name; }

CUresult lookup(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags,
                CUdriverProcAddressQueryResult* status) noexcept {
  if (pfn != nullptr) *pfn = nullptr;
  if (symbol == nullptr || pfn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  constexpr cuuint64_t kLegacy = CU_GET_PROC_ADDRESS_LEGACY_STREAM;
  constexpr cuuint64_t kPerThread = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  // Unknown bits, or both stream flavors at once, cannot be honoured.
  if ((flags & ~(kLegacy | kPerThread)) != 0 || flags == (kLegacy | kPerThread)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const std::string_view name(symbol);
  const auto lo = std::lower_bound(std::begin(kProcs), std::end(kProcs), name, name_less);
  const auto hi = std::upper_bound(lo, std::end(kProcs), name, less_name);
  if (lo == hi) {
    if (status == nullptr) return CUDA_ERROR_NOT_FOUND;
    *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_SUCCESS;
  }
  // Rows of one name are sorted by version: the last one <= requested of each kind wins.
  // The generator checks that the newest per-thread row is always the twin of the
  // newest legacy row, so both candidates share a signature.
  const ProcEntry* legacy = nullptr;
  const ProcEntry* per_thread = nullptr;
  for (auto it = lo; it != hi && it->version <= cuda_version; ++it) {
    (it->flavor == StreamFlavor::per_thread ? per_thread : legacy) = &*it;
  }
  const ProcEntry* hit = ((flags & kPerThread) != 0 && per_thread != nullptr) ? per_thread : legacy;
  if (hit == nullptr) {
    if (status == nullptr) return CUDA_ERROR_NOT_FOUND;
    *status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
    return CUDA_SUCCESS;
  }
  *pfn = hit->fn;
  if (status != nullptr) *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}

}  // namespace

CUresult cudamux::impl::cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion,
                                         cuuint64_t flags) {
  return lookup(symbol, pfn, cudaVersion, flags, nullptr);
}

CUresult cudamux::impl::cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion,
                                            cuuint64_t flags,
                                            CUdriverProcAddressQueryResult* symbolStatus) {
  return lookup(symbol, pfn, cudaVersion, flags, symbolStatus);
}
