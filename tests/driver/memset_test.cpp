// Memsets: 8/16/32-bit, linear and 2D, synchronous and on streams.
#include <cstring>
#include <vector>

#include "conformance.hpp"

namespace conformance {
namespace {

using Memset = Driver;

std::vector<unsigned char> read_back(CUdeviceptr p, size_t n) {
  std::vector<unsigned char> out(n);
  EXPECT_OK(cuMemcpyDtoH_v2(out.data(), p, n));
  return out;
}

template <class T>
T element(const std::vector<unsigned char>& bytes, size_t index) {
  T v;
  std::memcpy(&v, bytes.data() + index * sizeof(T), sizeof(T));
  return v;
}

TEST_F(Memset, LinearWritesExactlyTheRange) {
  const size_t n = 4096;
  DeviceBuffer d(n);
  ASSERT_OK(cuMemsetD8_v2(d.ptr, 0x00, n));
  ASSERT_OK(cuMemsetD8_v2(d.ptr + 3, 0x9c, 5));           // bytes 3..7
  ASSERT_OK(cuMemsetD16_v2(d.ptr + 16, 0xbeef, 3));       // bytes 16..21
  ASSERT_OK(cuMemsetD32_v2(d.ptr + 32, 0xdeadbeefu, 4));  // bytes 32..47
  const auto b = read_back(d.ptr, n);
  for (size_t i = 0; i < n; ++i) {
    if (i >= 3 && i < 8) {
      ASSERT_EQ(b[i], 0x9c) << i;
    } else if (i >= 16 && i < 22) {
      ASSERT_EQ(element<unsigned short>(b, i / 2), 0xbeef) << i;
    } else if (i >= 32 && i < 48) {
      ASSERT_EQ(element<unsigned>(b, i / 4), 0xdeadbeefu) << i;
    } else {
      ASSERT_EQ(b[i], 0) << "byte " << i << " outside every memset was written";
    }
  }
}

TEST_F(Memset, AsyncOnStreamsInOrder) {
  const size_t n = 1 << 16;
  DeviceBuffer d(n);
  CUstream s = nullptr;
  ASSERT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  // The last write wins: the stream runs them in submission order.
  ASSERT_OK(cuMemsetD8Async(d.ptr, 0x11, n, s));
  ASSERT_OK(cuMemsetD16Async(d.ptr, 0x2233, n / 2, s));
  ASSERT_OK(cuMemsetD32Async(d.ptr + 8, 0x44556677u, 2, s));
  ASSERT_OK(cuStreamSynchronize(s));
  const auto b = read_back(d.ptr, n);
  for (size_t i = 0; i < n / 2; ++i) {
    if (i >= 4 && i < 8) continue;
    ASSERT_EQ(element<unsigned short>(b, i), 0x2233) << i;
  }
  EXPECT_EQ(element<unsigned>(b, 2), 0x44556677u);
  EXPECT_EQ(element<unsigned>(b, 3), 0x44556677u);
  EXPECT_OK(cuStreamDestroy_v2(s));
}

TEST_F(Memset, TwoDimensional) {
  CUdeviceptr d = 0;
  size_t pitch = 0;
  const size_t rows = 9;
  ASSERT_OK(cuMemAllocPitch_v2(&d, &pitch, 256, rows, 4));
  ASSERT_OK(cuMemsetD8_v2(d, 0, pitch * rows));
  // 8-bit: 10 bytes per row at column 1; 16-bit: 7 elements at byte 40; 32-bit: 5 at byte 100.
  ASSERT_OK(cuMemsetD2D8_v2(d + 1, pitch, 0xa1, 10, rows));
  ASSERT_OK(cuMemsetD2D16_v2(d + 40, pitch, 0xb2c3, 7, rows - 1));
  CUstream s = nullptr;
  ASSERT_OK(cuStreamCreate(&s, 0));
  ASSERT_OK(cuMemsetD2D32Async(d + 100, pitch, 0xd4e5f607u, 5, rows - 2, s));
  ASSERT_OK(cuStreamSynchronize(s));
  const auto b = read_back(d, pitch * rows);
  for (size_t y = 0; y < rows; ++y) {
    for (size_t x = 0; x < pitch; ++x) {
      const size_t i = y * pitch + x;
      if (x >= 1 && x < 11) {
        ASSERT_EQ(b[i], 0xa1) << x << "," << y;
      } else if (x >= 40 && x < 54 && y < rows - 1) {
        ASSERT_EQ(element<unsigned short>(b, i / 2), 0xb2c3) << x << "," << y;
      } else if (x >= 100 && x < 120 && y < rows - 2) {
        ASSERT_EQ(element<unsigned>(b, i / 4), 0xd4e5f607u) << x << "," << y;
      } else {
        ASSERT_EQ(b[i], 0) << "outside every box: " << x << "," << y;
      }
    }
  }
  // The remaining async 2D forms.
  ASSERT_OK(cuMemsetD2D8Async(d, pitch, 0x01, pitch, rows, s));
  ASSERT_OK(cuMemsetD2D16Async(d, pitch, 0x0202, 2, rows, s));
  ASSERT_OK(cuStreamSynchronize(s));
  const auto c = read_back(d, pitch * rows);
  for (size_t y = 0; y < rows; ++y) {
    EXPECT_EQ(c[y * pitch + 0], 0x02);
    EXPECT_EQ(c[y * pitch + 3], 0x02);
    EXPECT_EQ(c[y * pitch + 4], 0x01);
    EXPECT_EQ(c[y * pitch + pitch - 1], 0x01);
  }
  ASSERT_OK(cuMemsetD2D32_v2(d, pitch, 7, 1, 1));
  EXPECT_EQ(element<unsigned>(read_back(d, 4), 0), 7u);
  EXPECT_OK(cuStreamDestroy_v2(s));
  EXPECT_OK(cuMemFree_v2(d));
}

TEST_F(Memset, BadArguments) {
  const size_t n = 1024;
  DeviceBuffer d(n);
  ASSERT_OK(cuMemsetD8_v2(d.ptr, 0x5f, n));
  // Misaligned element addresses.
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemsetD16_v2(d.ptr + 1, 1, 4));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemsetD32_v2(d.ptr + 2, 1, 4));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemsetD32_v2(d.ptr + 1, 1, 4));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemsetD16Async(d.ptr + 3, 1, 4, nullptr));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemsetD32Async(d.ptr + 2, 1, 4, nullptr));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemsetD2D16_v2(d.ptr + 1, 64, 1, 4, 2));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemsetD2D32_v2(d.ptr + 2, 64, 1, 4, 2));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemsetD2D16Async(d.ptr + 1, 64, 1, 4, 2, nullptr));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemsetD2D32Async(d.ptr + 2, 64, 1, 4, 2, nullptr));
  // Past the end.
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemsetD8_v2(d.ptr, 0, n + 1));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemsetD16_v2(d.ptr + n - 2, 0, 2));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemsetD32_v2(d.ptr, 0, n / 4 + 1));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemsetD8Async(d.ptr + 1, 0, n, nullptr));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemsetD2D8_v2(d.ptr, 64, 0, 64, n / 64 + 1));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemsetD2D8Async(d.ptr, 64, 0, 64, n / 64 + 1, nullptr));
  // Pitch narrower than a row.
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemsetD2D8_v2(d.ptr, 8, 0, 16, 2));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemsetD2D32_v2(d.ptr, 8, 0, 4, 2));
  // Unknown and null pointers.
  std::vector<unsigned char> host(64, 0x66);
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
            cuMemsetD8_v2(reinterpret_cast<CUdeviceptr>(host.data()), 0, 64));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemsetD8_v2(0, 0, 64));
  // Invalid streams.
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE,
            cuMemsetD8Async(d.ptr, 0, 16, reinterpret_cast<CUstream>(0x777)));
  ASSERT_OK(cuCtxSynchronize());
  for (unsigned char b : read_back(d.ptr, n)) ASSERT_EQ(b, 0x5f) << "a rejected memset wrote";
  for (unsigned char b : host) ASSERT_EQ(b, 0x66);
  // Zero elements: nothing to do.
  EXPECT_OK(cuMemsetD8_v2(d.ptr, 0, 0));
  EXPECT_OK(cuMemsetD32_v2(d.ptr, 0, 0));
  EXPECT_OK(cuMemsetD2D8_v2(d.ptr, 64, 0, 0, 5));
  // No context.
  std::thread([&] {
    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuMemsetD8_v2(d.ptr, 0, 16));
    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuMemsetD32Async(d.ptr, 0, 4, nullptr));
  }).join();
}

TEST_F(Memset, PinnedAndManagedTargets) {
  unsigned* pinned = nullptr;
  ASSERT_OK(cuMemHostAlloc(reinterpret_cast<void**>(&pinned), 4096, CU_MEMHOSTALLOC_DEVICEMAP));
  CUdeviceptr dp = 0;
  ASSERT_OK(cuMemHostGetDevicePointer_v2(&dp, pinned, 0));
  ASSERT_OK(cuMemsetD32_v2(dp, 0x01020304u, 1024));
  ASSERT_OK(cuCtxSynchronize());
  for (int i = 0; i < 1024; ++i) ASSERT_EQ(pinned[i], 0x01020304u) << i;
  CUdeviceptr m = 0;
  ASSERT_OK(cuMemAllocManaged(&m, 4096, CU_MEM_ATTACH_GLOBAL));
  ASSERT_OK(cuMemsetD16_v2(m, 0x0a0b, 2048));
  ASSERT_OK(cuCtxSynchronize());
  EXPECT_EQ(reinterpret_cast<unsigned short*>(m)[2047], 0x0a0b);
  EXPECT_OK(cuMemFree_v2(m));
  EXPECT_OK(cuMemFreeHost(pinned));
}

}  // namespace
}  // namespace conformance
