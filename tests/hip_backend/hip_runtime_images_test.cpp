// The runtime API's arrays, texture and surface objects on the hip backend over the fake HIP
// runtime (issue 17): allocation from channel descriptors, copies to and from arrays with
// pitches and offsets, 3D copies, mipmapped levels, objects, and what HIP 5.2 lacks. A file of
// its own: cuda_runtime_api.h and HIP's headers do not mix in one translation unit.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fake_hip_hooks.hpp"

namespace {

using namespace fake_hip_hooks;

#define ASSERT_RT(call) ASSERT_EQ((call), cudaSuccess) << #call
#define EXPECT_RT(call) EXPECT_EQ((call), cudaSuccess) << #call

int live_arrays() {
  static auto* fn = reinterpret_cast<void (*)(int*, int*, int*, int*)>(
      dlsym(fake_library(), "fakehip_live_images"));
  int a = 0, m = 0, t = 0, s = 0;
  fn(&a, &m, &t, &s);
  return a + m + t + s;
}

std::vector<unsigned char> pattern(size_t n, unsigned seed) {
  std::vector<unsigned char> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<unsigned char>(i * 29 + seed * 13 + i / 256);
  return v;
}

class HipRuntimeImages : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(fake_library(), nullptr) << "the fake HIP runtime is not loaded";
    ASSERT_RT(cudaSetDevice(0));
    (void)cudaGetLastError();
    before_ = live_arrays();
    fake_clear();
  }
  void TearDown() override {
    (void)cudaGetLastError();
    EXPECT_EQ(live_arrays(), before_) << "image objects left behind";
  }
  int before_ = 0;
};

TEST_F(HipRuntimeImages, ArraysFromChannelDescriptorsAndCopiesWithPitches) {
  // float2: 8-byte elements, 10 x 6.
  const cudaChannelFormatDesc f2 = cudaCreateChannelDesc(32, 32, 0, 0, cudaChannelFormatKindFloat);
  cudaArray_t a = nullptr;
  ASSERT_RT(cudaMallocArray(&a, &f2, 10, 6, cudaArraySurfaceLoadStore));
  EXPECT_TRUE(logged("hipArray3DCreate({10x6x0, format 0x20, 2 ch, flags 0x0}) -> hipSuccess"))
      << fake_log();
  cudaChannelFormatDesc got{};
  cudaExtent extent{};
  unsigned flags = 0;
  ASSERT_RT(cudaArrayGetInfo(&got, &extent, &flags, a));
  EXPECT_EQ(got.x, 32);
  EXPECT_EQ(got.y, 32);
  EXPECT_EQ(got.z, 0);
  EXPECT_EQ(got.f, cudaChannelFormatKindFloat);
  EXPECT_EQ(extent.width, 10u);
  EXPECT_EQ(extent.height, 6u);
  EXPECT_EQ(flags, unsigned{cudaArraySurfaceLoadStore});

  // Rows of 96 bytes into the array at element (2, 1): 5 elements x 4 rows.
  const auto src = pattern(96 * 4, 1);
  ASSERT_RT(cudaMemcpy2DToArray(a, 16, 1, src.data(), 96, 40, 4, cudaMemcpyHostToDevice));
  std::vector<unsigned char> whole(80 * 6, 0);
  ASSERT_RT(cudaMemcpy2DFromArray(whole.data(), 80, a, 0, 0, 80, 6, cudaMemcpyDeviceToHost));
  for (size_t y = 0; y < 6; ++y)
    for (size_t x = 0; x < 80; ++x) {
      const bool inside = y >= 1 && y < 5 && x >= 16 && x < 56;
      const unsigned char want = inside ? src[(y - 1) * 96 + (x - 16)] : 0xcd;
      ASSERT_EQ(whole[y * 80 + x], want) << "x " << x << " y " << y;
    }
  // Array to array (the runtime counts offsets in bytes), then a box back with a wide pitch.
  cudaArray_t b = nullptr;
  ASSERT_RT(cudaMallocArray(&b, &f2, 10, 6));
  ASSERT_RT(cudaMemcpy2DArrayToArray(b, 0, 0, a, 16, 1, 40, 4, cudaMemcpyDeviceToDevice));
  std::vector<unsigned char> box(128 * 4, 0);
  ASSERT_RT(cudaMemcpy2DFromArray(box.data(), 128, b, 0, 0, 40, 4, cudaMemcpyDeviceToHost));
  for (size_t y = 0; y < 4; ++y) EXPECT_EQ(std::memcmp(&box[y * 128], &src[y * 96], 40), 0) << y;

  // Texture and surface objects over it.
  cudaResourceDesc r{};
  r.resType = cudaResourceTypeArray;
  r.res.array.array = a;
  cudaTextureDesc t{};
  t.addressMode[0] = t.addressMode[1] = t.addressMode[2] = cudaAddressModeClamp;
  t.filterMode = cudaFilterModePoint;
  t.readMode = cudaReadModeElementType;
  cudaTextureObject_t tex = 0;
  fake_clear();
  ASSERT_RT(cudaCreateTextureObject(&tex, &r, &t, nullptr));
  EXPECT_TRUE(logged("{address 1,1,1 filter 0 flags 0x1 ")) << fake_log();
  cudaResourceDesc rback{};
  ASSERT_RT(cudaGetTextureObjectResourceDesc(&rback, tex));
  EXPECT_EQ(rback.res.array.array, a);
  ASSERT_RT(cudaDestroyTextureObject(tex));
  cudaSurfaceObject_t surf = 0;
  ASSERT_RT(cudaCreateSurfaceObject(&surf, &r));
  EXPECT_TRUE(logged("hipCreateSurfaceObject(array ")) << fake_log();
  ASSERT_RT(cudaDestroySurfaceObject(surf));
  ASSERT_RT(cudaFreeArray(a));
  ASSERT_RT(cudaFreeArray(b));
}

TEST_F(HipRuntimeImages, ThreeDimensionalArraysAndMipmapLevels) {
  const cudaChannelFormatDesc u8 = cudaCreateChannelDesc(8, 0, 0, 0, cudaChannelFormatKindUnsigned);
  cudaArray_t a = nullptr;
  ASSERT_RT(cudaMalloc3DArray(&a, &u8, cudaExtent{12, 5, 4}));
  EXPECT_TRUE(logged("hipArray3DCreate({12x5x4, format 0x1, 1 ch, flags 0x0})")) << fake_log();
  // A 6 x 3 x 2 box from a pitched host buffer (pitch 16, slices of 4 rows) to (3, 1, 2).
  const auto src = pattern(16 * 4 * 2, 2);
  cudaMemcpy3DParms in{};
  in.srcPtr = cudaPitchedPtr{const_cast<unsigned char*>(src.data()), 16, 6, 4};
  in.dstArray = a;
  in.dstPos = cudaPos{3, 1, 2};
  in.extent = cudaExtent{6, 3, 2};
  in.kind = cudaMemcpyHostToDevice;
  ASSERT_RT(cudaMemcpy3D(&in));
  std::vector<unsigned char> out(12 * 5 * 4, 0);
  cudaMemcpy3DParms back{};
  back.srcArray = a;
  back.dstPtr = cudaPitchedPtr{out.data(), 12, 12, 5};
  back.extent = cudaExtent{12, 5, 4};
  back.kind = cudaMemcpyDeviceToHost;
  ASSERT_RT(cudaMemcpy3D(&back));
  for (size_t z = 0; z < 4; ++z)
    for (size_t y = 0; y < 5; ++y)
      for (size_t x = 0; x < 12; ++x) {
        const bool inside = z >= 2 && y >= 1 && y < 4 && x >= 3 && x < 9;
        const unsigned char want = inside ? src[((z - 2) * 4 + (y - 1)) * 16 + (x - 3)] : 0xcd;
        ASSERT_EQ(out[(z * 5 + y) * 12 + x], want) << x << "," << y << "," << z;
      }
  ASSERT_RT(cudaFreeArray(a));

  // Mipmapped: levels are HIP's level views.
  cudaMipmappedArray_t m = nullptr;
  const cudaChannelFormatDesc f1 = cudaCreateChannelDesc(32, 0, 0, 0, cudaChannelFormatKindFloat);
  fake_clear();
  ASSERT_RT(cudaMallocMipmappedArray(&m, &f1, cudaExtent{32, 16, 0}, 4));
  EXPECT_TRUE(logged("hipMipmappedArrayCreate({32x16x0, format 0x20, 1 ch, flags 0x0}, 4 levels)"))
      << fake_log();
  cudaArray_t level = nullptr;
  ASSERT_RT(cudaGetMipmappedArrayLevel(&level, m, 2));
  cudaChannelFormatDesc ld{};
  cudaExtent e{};
  unsigned lflags = 0;
  ASSERT_RT(cudaArrayGetInfo(&ld, &e, &lflags, level));
  EXPECT_EQ(e.width, 8u);
  EXPECT_EQ(e.height, 4u);
  const auto lv = pattern(8 * 4 * 4, 3);
  ASSERT_RT(cudaMemcpy2DToArray(level, 0, 0, lv.data(), 32, 32, 4, cudaMemcpyHostToDevice));
  std::vector<unsigned char> lback(lv.size());
  ASSERT_RT(cudaMemcpy2DFromArray(lback.data(), 32, level, 0, 0, 32, 4, cudaMemcpyDeviceToHost));
  EXPECT_EQ(lback, lv);
  ASSERT_RT(cudaFreeMipmappedArray(m));
}

TEST_F(HipRuntimeImages, WhatHip52LacksIsNotSupported) {
  const cudaChannelFormatDesc f1 = cudaCreateChannelDesc(32, 0, 0, 0, cudaChannelFormatKindFloat);
  cudaArray_t a = nullptr;
  EXPECT_EQ(cudaMalloc3DArray(&a, &f1, cudaExtent{16, 16, 6}, cudaArrayCubemap),
            cudaErrorNotSupported);
  EXPECT_EQ(cudaMallocArray(&a, &f1, 16, 16, cudaArrayTextureGather), cudaErrorNotSupported);
  const cudaChannelFormatDesc unorm =
      cudaCreateChannelDesc(8, 0, 0, 0, cudaChannelFormatKindUnsignedNormalized8X1);
  EXPECT_EQ(cudaMallocArray(&a, &unorm, 16, 16), cudaErrorNotSupported);
  EXPECT_FALSE(logged("hipArray3DCreate")) << fake_log();
}

}  // namespace
