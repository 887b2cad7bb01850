// Sizes whose products overflow size_t: rejected with CUDA_ERROR_INVALID_VALUE, never
// a wrapped-around extent that lets the backend write past an allocation.
#include <cstdint>
#include <vector>

#include "conformance.hpp"

namespace conformance {
namespace {

using Overflow = Driver;

constexpr size_t kMax = SIZE_MAX;

TEST_F(Overflow, Memsets) {
  DeviceBuffer d(4096);
  ASSERT_OK(cuMemsetD8_v2(d.ptr, 0x5a, d.bytes));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemsetD8_v2(d.ptr, 0, kMax));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemsetD16_v2(d.ptr, 0, kMax / 2 + 2));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemsetD32_v2(d.ptr, 0, kMax / 4 + 2));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemsetD32Async(d.ptr, 0, kMax / 4 + 2, nullptr));
  // 2D: rows * pitch wraps around.
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
            cuMemsetD2D8_v2(d.ptr, size_t{1} << 32, 0, 1, (size_t{1} << 32) + 1));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemsetD2D32_v2(d.ptr, kMax / 4 + 2, 0, kMax / 16 + 1, 2));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemsetD2D16Async(d.ptr, 64, 0, kMax / 2 + 2, 1, nullptr));
  ASSERT_OK(cuCtxSynchronize());
  std::vector<unsigned char> back(d.bytes);
  ASSERT_OK(cuMemcpyDtoH_v2(back.data(), d.ptr, back.size()));
  for (unsigned char b : back) ASSERT_EQ(b, 0x5a);
}

TEST_F(Overflow, Copies) {
  DeviceBuffer a(4096), b(4096);
  std::vector<unsigned char> host(4096, 0x11);
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemcpyHtoD_v2(a.ptr, host.data(), kMax));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemcpyDtoD_v2(a.ptr, b.ptr, kMax));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemcpyDtoH_v2(host.data(), a.ptr + 8, kMax - 4));
  CUDA_MEMCPY2D c{};
  c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  c.srcDevice = b.ptr;
  c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  c.dstDevice = a.ptr;
  c.WidthInBytes = 16;
  c.srcPitch = c.dstPitch = size_t{1} << 32;
  c.Height = (size_t{1} << 32) + 1;  // (Height - 1) * pitch wraps to 0
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemcpy2D_v2(&c));
  c.srcPitch = c.dstPitch = 0;
  c.WidthInBytes = kMax;
  c.Height = 1;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemcpy2D_v2(&c));
  c.WidthInBytes = 16;
  c.dstPitch = 16;
  c.srcPitch = 16;
  c.dstY = kMax / 16 + 1;  // the start address wraps around
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemcpy2D_v2(&c));
  CUDA_MEMCPY3D d{};
  d.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  d.srcDevice = b.ptr;
  d.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  d.dstDevice = a.ptr;
  d.WidthInBytes = 16;
  d.Height = 2;
  d.srcPitch = d.dstPitch = 16;
  d.srcHeight = d.dstHeight = size_t{1} << 31;
  d.Depth = (size_t{1} << 28) + 1;  // (Depth - 1) * slice wraps to 0
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemcpy3D_v2(&d));
  d.Depth = 1;
  d.srcHeight = d.dstHeight = 0;
  d.srcZ = kMax / 32 + 1;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemcpy3D_v2(&d));
  ASSERT_OK(cuCtxSynchronize());
  // Later calls still work.
  ASSERT_OK(cuMemcpyHtoD_v2(a.ptr, host.data(), host.size()));
}

TEST_F(Overflow, Allocations) {
  CUdeviceptr p = 0;
  size_t pitch = 0;
  // oracle: verify on NVIDIA (CUDA_ERROR_INVALID_VALUE or CUDA_ERROR_OUT_OF_MEMORY).
  EXPECT_NE(cuMemAllocPitch_v2(&p, &pitch, kMax, 1, 4), CUDA_SUCCESS);
  EXPECT_NE(cuMemAllocPitch_v2(&p, &pitch, kMax - 100, 3, 16), CUDA_SUCCESS);
  EXPECT_NE(cuMemAllocPitch_v2(&p, &pitch, 4096, kMax / 1024, 4), CUDA_SUCCESS);
  std::vector<char> buf(4096);
  EXPECT_NE(cuMemHostRegister_v2(buf.data(), kMax, 0), CUDA_SUCCESS);
  EXPECT_NE(
      cuMemHostRegister_v2(buf.data(), kMax - reinterpret_cast<std::uintptr_t>(buf.data()) + 10, 0),
      CUDA_SUCCESS);
  void* h = nullptr;
  EXPECT_NE(cuMemHostAlloc(&h, kMax, 0), CUDA_SUCCESS);
  EXPECT_NE(cuMemAllocManaged(&p, kMax, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  // Later calls still work.
  ASSERT_OK(cuMemHostRegister_v2(buf.data(), buf.size(), 0));
  EXPECT_OK(cuMemHostUnregister(buf.data()));
  ASSERT_OK(cuMemAllocPitch_v2(&p, &pitch, 100, 2, 4));
  EXPECT_OK(cuMemFree_v2(p));
}

}  // namespace
}  // namespace conformance
