// Tensor maps (cuTensorMapEncode*, cuTensorMapReplaceAddress): descriptors of global memory for
// the tensor memory accelerator of compute capability 9.0 and later. Their 128 bytes are the
// device's own format, so the core checks what it can and hands the call to a backend that
// has its driver's encoder (the cuda backend: NVIDIA's, the pointers being NVIDIA's too).
// Backends without one have no TMA to run such descriptors: CUDA_ERROR_NOT_SUPPORTED.
#include <spdlog/spdlog.h>

#include <atomic>
#include <cstdint>

#include "core.hpp"
#include "cudamux/driver_impl.hpp"

namespace cudamux::core {
namespace {

constexpr unsigned kMaxTensorRank = 5;

// The backend's encoder `name`, or null with CUDA_ERROR_NOT_SUPPORTED logged.
template <class Fn>
Fn native(const char* name) {
  Core& core = Core::get();
  if (void* f = core.backend().native_host_function(name)) return reinterpret_cast<Fn>(f);
  static std::atomic<bool> logged{false};  // once per function: each has its own Fn
  if (!logged.exchange(true))
    core.log().warn(
        "{}: the '{}' backend has no tensor memory accelerator to describe memory "
        "for: returning CUDA_ERROR_NOT_SUPPORTED",
        name, core.backend().name());
  return nullptr;
}

CUresult check_map(const CUtensorMap* map, const char* fn) {
  if (!map) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null tensor map");
  // CUDA documents 64-byte alignment for the map, but NVIDIA's driver 580 encodes into any
  // address (it is host memory until copied into a kernel parameter): so does cudamux.
  return CUDA_SUCCESS;
}

CUresult check_tensor(const CUtensorMap* map, cuuint32_t rank, const void* address,
                      const cuuint64_t* dims, const cuuint64_t* strides,
                      const cuuint32_t* element_strides, const char* fn) {
  if (CUresult r = check_map(map, fn)) return r;
  if (rank == 0 || rank > kMaxTensorRank)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "tensor rank outside 1..5");
  if (reinterpret_cast<std::uintptr_t>(address) % 16 != 0)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "global address not aligned to 16 bytes");
  if (!dims || !element_strides || (rank > 1 && !strides))
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "null dimension or stride array");
  return CUDA_SUCCESS;
}

}  // namespace
}  // namespace cudamux::core

namespace cudamux::impl {
using core::reject;

CUresult cuTensorMapEncodeTiled(CUtensorMap* tensorMap, CUtensorMapDataType tensorDataType,
                                cuuint32_t tensorRank, void* globalAddress,
                                const cuuint64_t* globalDim, const cuuint64_t* globalStrides,
                                const cuuint32_t* boxDim, const cuuint32_t* elementStrides,
                                CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
                                CUtensorMapL2promotion l2Promotion,
                                CUtensorMapFloatOOBfill oobFill) {
  const char* fn = "cuTensorMapEncodeTiled";
  if (CUresult r = core::check_tensor(tensorMap, tensorRank, globalAddress, globalDim,
                                      globalStrides, elementStrides, fn))
    return r;
  if (!boxDim) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null box dimensions");
  auto encode = core::native<decltype(&::cuTensorMapEncodeTiled)>(fn);
  if (!encode) return CUDA_ERROR_NOT_SUPPORTED;
  return encode(tensorMap, tensorDataType, tensorRank, globalAddress, globalDim, globalStrides,
                boxDim, elementStrides, interleave, swizzle, l2Promotion, oobFill);
}

CUresult cuTensorMapEncodeIm2col(CUtensorMap* tensorMap, CUtensorMapDataType tensorDataType,
                                 cuuint32_t tensorRank, void* globalAddress,
                                 const cuuint64_t* globalDim, const cuuint64_t* globalStrides,
                                 const int* pixelBoxLowerCorner, const int* pixelBoxUpperCorner,
                                 cuuint32_t channelsPerPixel, cuuint32_t pixelsPerColumn,
                                 const cuuint32_t* elementStrides, CUtensorMapInterleave interleave,
                                 CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion,
                                 CUtensorMapFloatOOBfill oobFill) {
  const char* fn = "cuTensorMapEncodeIm2col";
  if (CUresult r = core::check_tensor(tensorMap, tensorRank, globalAddress, globalDim,
                                      globalStrides, elementStrides, fn))
    return r;
  if (tensorRank < 3) return reject(CUDA_ERROR_INVALID_VALUE, fn, "im2col needs rank 3..5");
  if (!pixelBoxLowerCorner || !pixelBoxUpperCorner)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "null pixel box corners");
  auto encode = core::native<decltype(&::cuTensorMapEncodeIm2col)>(fn);
  if (!encode) return CUDA_ERROR_NOT_SUPPORTED;
  return encode(tensorMap, tensorDataType, tensorRank, globalAddress, globalDim, globalStrides,
                pixelBoxLowerCorner, pixelBoxUpperCorner, channelsPerPixel, pixelsPerColumn,
                elementStrides, interleave, swizzle, l2Promotion, oobFill);
}

CUresult cuTensorMapEncodeIm2colWide(
    CUtensorMap* tensorMap, CUtensorMapDataType tensorDataType, cuuint32_t tensorRank,
    void* globalAddress, const cuuint64_t* globalDim, const cuuint64_t* globalStrides,
    int pixelBoxLowerCornerWidth, int pixelBoxUpperCornerWidth, cuuint32_t channelsPerPixel,
    cuuint32_t pixelsPerColumn, const cuuint32_t* elementStrides, CUtensorMapInterleave interleave,
    CUtensorMapIm2ColWideMode mode, CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion,
    CUtensorMapFloatOOBfill oobFill) {
  const char* fn = "cuTensorMapEncodeIm2colWide";
  if (CUresult r = core::check_tensor(tensorMap, tensorRank, globalAddress, globalDim,
                                      globalStrides, elementStrides, fn))
    return r;
  if (tensorRank < 3) return reject(CUDA_ERROR_INVALID_VALUE, fn, "im2col needs rank 3..5");
  auto encode = core::native<decltype(&::cuTensorMapEncodeIm2colWide)>(fn);
  if (!encode) return CUDA_ERROR_NOT_SUPPORTED;
  return encode(tensorMap, tensorDataType, tensorRank, globalAddress, globalDim, globalStrides,
                pixelBoxLowerCornerWidth, pixelBoxUpperCornerWidth, channelsPerPixel,
                pixelsPerColumn, elementStrides, interleave, mode, swizzle, l2Promotion, oobFill);
}

CUresult cuTensorMapReplaceAddress(CUtensorMap* tensorMap, void* globalAddress) {
  const char* fn = "cuTensorMapReplaceAddress";
  if (CUresult r = core::check_map(tensorMap, fn)) return r;
  if (reinterpret_cast<std::uintptr_t>(globalAddress) % 16 != 0)
    return reject(CUDA_ERROR_INVALID_VALUE, fn, "global address not aligned to 16 bytes");
  auto replace = core::native<decltype(&::cuTensorMapReplaceAddress)>(fn);
  if (!replace) return CUDA_ERROR_NOT_SUPPORTED;
  return replace(tensorMap, globalAddress);
}

}  // namespace cudamux::impl
