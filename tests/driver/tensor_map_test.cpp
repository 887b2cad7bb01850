// Tensor maps (cuTensorMapEncode*, cuTensorMapReplaceAddress): the core's argument checks on
// every backend, NVIDIA's encoder behind the cuda backend, CUDA_ERROR_NOT_SUPPORTED where the
// backend has no tensor memory accelerator (the mock, hip).
#include <cstdint>

#include "conformance.hpp"

namespace conformance {
namespace {

using TensorMap = Driver;

bool backend_has_tma() { return backend() == "cuda"; }

TEST_F(TensorMap, EncodersCheckArgumentsAndEncodeWhereTheDeviceCan) {
  DeviceBuffer buffer(64 * 64 * sizeof(float));
  alignas(64) CUtensorMap map{};
  const cuuint64_t dims[2] = {64, 64};
  const cuuint64_t strides[1] = {64 * sizeof(float)};
  const cuuint32_t box[2] = {16, 16};
  const cuuint32_t element_strides[2] = {1, 1};
  void* address = reinterpret_cast<void*>(buffer.ptr);
  auto tiled = [&](CUtensorMap* m, cuuint32_t rank, void* a) {
    return cuTensorMapEncodeTiled(m, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, rank, a, dims, strides, box,
                                  element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                  CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  };
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, tiled(nullptr, 2, address));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, tiled(&map, 0, address));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, tiled(&map, 6, address));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, tiled(&map, 2, static_cast<char*>(address) + 4));

  const CUresult expected = backend_has_tma() ? CUDA_SUCCESS : CUDA_ERROR_NOT_SUPPORTED;
  // oracle: NVIDIA's driver 580 encodes into a map that is not 64-byte aligned, despite the
  // documentation; cudamux does not refuse it either.
  alignas(64) unsigned char storage[sizeof(CUtensorMap) + 64] = {};
  EXPECT_CU(expected, tiled(reinterpret_cast<CUtensorMap*>(storage + 8), 2, address));
  EXPECT_CU(expected, tiled(&map, 2, address));
  EXPECT_CU(expected, cuTensorMapReplaceAddress(&map, static_cast<char*>(address) + 256));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
            cuTensorMapReplaceAddress(&map, static_cast<char*>(address) + 4));

  // Im2col forms: NHWC tensors of rank 3..5.
  const cuuint64_t dims4[4] = {16, 8, 8, 2};  // C, W, H, N
  const cuuint64_t strides4[3] = {16 * 4, 16 * 4 * 8, 16 * 4 * 8 * 8};
  const cuuint32_t estrides4[4] = {1, 1, 1, 1};
  const int lower[2] = {0, 0};
  const int upper[2] = {0, 0};
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
            cuTensorMapEncodeIm2col(
                &map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, address, dims4, strides4, lower, upper,
                16, 8, estrides4, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
  EXPECT_CU(expected,
            cuTensorMapEncodeIm2col(
                &map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, address, dims4, strides4, lower, upper,
                16, 8, estrides4, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
  const CUresult wide = cuTensorMapEncodeIm2colWide(
      &map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, address, dims4, strides4, 0, 0, 16, 8, estrides4,
      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_IM2COL_WIDE_MODE_W, CU_TENSOR_MAP_SWIZZLE_NONE,
      CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  // The wide form exists from compute capability 10.0: an H100 may refuse it.
  if (backend_has_tma())
    EXPECT_TRUE(wide == CUDA_SUCCESS || wide == CUDA_ERROR_INVALID_VALUE) << wide;
  else
    EXPECT_CU(CUDA_ERROR_NOT_SUPPORTED, wide);
}

}  // namespace
}  // namespace conformance
