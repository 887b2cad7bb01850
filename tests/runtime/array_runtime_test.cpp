// The runtime's CUDA arrays (issue 17) on the mock: allocation from channel descriptors, the
// channel format mapping both ways, info queries, every array copy of the runtime, mipmapped
// arrays, 3D copies with arrays (also as graph nodes and between devices), and refusals.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <numeric>
#include <vector>

namespace {

#define ASSERT_RT(call) ASSERT_EQ((call), cudaSuccess) << #call
#define EXPECT_RT(call) EXPECT_EQ((call), cudaSuccess) << #call

class RuntimeArray : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_RT(cudaSetDevice(0));
    (void)cudaGetLastError();
  }
  void TearDown() override { (void)cudaGetLastError(); }
};

// cuda_runtime.h's helpers (this suite includes only cuda_runtime_api.h).
cudaExtent make_cudaExtent(size_t w, size_t h, size_t d) { return {w, h, d}; }
cudaPos make_cudaPos(size_t x, size_t y, size_t z) { return {x, y, z}; }
cudaPitchedPtr make_cudaPitchedPtr(void* p, size_t pitch, size_t xsize, size_t ysize) {
  return {p, pitch, xsize, ysize};
}

bool same(const cudaChannelFormatDesc& a, const cudaChannelFormatDesc& b) {
  return a.x == b.x && a.y == b.y && a.z == b.z && a.w == b.w && a.f == b.f;
}

TEST_F(RuntimeArray, ChannelDescriptorsRoundTrip) {
  const cudaChannelFormatDesc descs[] = {
      cudaCreateChannelDesc(8, 0, 0, 0, cudaChannelFormatKindUnsigned),
      cudaCreateChannelDesc(16, 16, 0, 0, cudaChannelFormatKindSigned),
      cudaCreateChannelDesc(32, 32, 32, 32, cudaChannelFormatKindFloat),
      cudaCreateChannelDesc(16, 0, 0, 0, cudaChannelFormatKindFloat),
      cudaCreateChannelDesc(32, 0, 0, 0, cudaChannelFormatKindSigned),
      cudaCreateChannelDesc(8, 0, 0, 0, cudaChannelFormatKindUnsignedNormalized8X1),
      cudaCreateChannelDesc(8, 8, 0, 0, cudaChannelFormatKindUnsignedNormalized8X2),
      cudaCreateChannelDesc(16, 16, 16, 16, cudaChannelFormatKindSignedNormalized16X4),
      cudaCreateChannelDesc(10, 10, 10, 2, cudaChannelFormatKindUnsignedNormalized1010102),
  };
  for (const cudaChannelFormatDesc& d : descs) {
    cudaArray_t a = nullptr;
    ASSERT_RT(cudaMallocArray(&a, &d, 32, 4));
    cudaChannelFormatDesc got{};
    EXPECT_RT(cudaGetChannelDesc(&got, a));
    EXPECT_TRUE(same(got, d)) << d.x << "," << d.y << "," << d.z << "," << d.w << " kind " << d.f
                              << " came back as " << got.x << "," << got.y << "," << got.z << ","
                              << got.w << " kind " << got.f;
    cudaExtent extent{};
    unsigned flags = 7;
    EXPECT_RT(cudaArrayGetInfo(&got, &extent, &flags, a));
    EXPECT_EQ(extent.width, 32u);
    EXPECT_EQ(extent.height, 4u);
    EXPECT_EQ(extent.depth, 0u);
    EXPECT_EQ(flags, 0u);
    EXPECT_RT(cudaArrayGetInfo(nullptr, nullptr, nullptr, a));  // any may be null
    EXPECT_RT(cudaFreeArray(a));
  }
  // The driver sees the mapped format.
  cudaArray_t a = nullptr;
  const cudaChannelFormatDesc f4 =
      cudaCreateChannelDesc(32, 32, 32, 32, cudaChannelFormatKindFloat);
  ASSERT_RT(cudaMallocArray(&a, &f4, 8));
  CUDA_ARRAY3D_DESCRIPTOR d{};
  ASSERT_EQ(cuArray3DGetDescriptor(&d, reinterpret_cast<CUarray>(a)), CUDA_SUCCESS);
  EXPECT_EQ(d.Format, CU_AD_FORMAT_FLOAT);
  EXPECT_EQ(d.NumChannels, 4u);
  EXPECT_EQ(d.Height, 0u);
  EXPECT_RT(cudaFreeArray(a));
}

TEST_F(RuntimeArray, BadChannelDescriptorsAndRefusals) {
  cudaArray_t a = nullptr;
  const cudaChannelFormatDesc three =
      cudaCreateChannelDesc(8, 8, 8, 0, cudaChannelFormatKindUnsigned);
  EXPECT_EQ(cudaMallocArray(&a, &three, 16), cudaErrorInvalidChannelDescriptor);
  const cudaChannelFormatDesc mixed =
      cudaCreateChannelDesc(8, 16, 0, 0, cudaChannelFormatKindSigned);
  EXPECT_EQ(cudaMallocArray(&a, &mixed, 16), cudaErrorInvalidChannelDescriptor);
  const cudaChannelFormatDesc float8 =
      cudaCreateChannelDesc(8, 0, 0, 0, cudaChannelFormatKindFloat);
  EXPECT_EQ(cudaMallocArray(&a, &float8, 16), cudaErrorInvalidChannelDescriptor);
  const cudaChannelFormatDesc none = cudaCreateChannelDesc(0, 0, 0, 0, cudaChannelFormatKindNone);
  EXPECT_EQ(cudaMallocArray(&a, &none, 16), cudaErrorInvalidChannelDescriptor);
  const cudaChannelFormatDesc nv12 = cudaCreateChannelDesc(8, 8, 8, 0, cudaChannelFormatKindNV12);
  EXPECT_EQ(cudaMallocArray(&a, &nv12, 16, 16), cudaErrorNotSupported);
  const cudaChannelFormatDesc ok = cudaCreateChannelDesc(32, 0, 0, 0, cudaChannelFormatKindFloat);
  EXPECT_EQ(cudaMallocArray(&a, &ok, 0), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMallocArray(&a, nullptr, 16), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMalloc3DArray(&a, &ok, make_cudaExtent(16, 16, 16), cudaArraySparse),
            cudaErrorNotSupported);
  EXPECT_RT(cudaFreeArray(nullptr));
  EXPECT_RT(cudaFreeMipmappedArray(nullptr));

  ASSERT_RT(cudaMallocArray(&a, &ok, 16, 16, cudaArraySurfaceLoadStore));
  cudaArrayMemoryRequirements req{};
  EXPECT_EQ(cudaArrayGetMemoryRequirements(&req, a, 0), cudaErrorInvalidValue);
  cudaArraySparseProperties sparse{};
  EXPECT_EQ(cudaArrayGetSparseProperties(&sparse, a), cudaErrorInvalidValue);
  cudaArray_t plane = nullptr;
  EXPECT_EQ(cudaArrayGetPlane(&plane, a, 0), cudaErrorInvalidValue);
  unsigned flags = 0;
  EXPECT_RT(cudaArrayGetInfo(nullptr, nullptr, &flags, a));
  EXPECT_EQ(flags, static_cast<unsigned>(cudaArraySurfaceLoadStore));
  EXPECT_RT(cudaFreeArray(a));
  EXPECT_EQ(cudaFreeArray(a), cudaErrorInvalidResourceHandle);  // freed already
}

TEST_F(RuntimeArray, TwoDimensionalAndDeprecatedCopies) {
  constexpr size_t kW = 16, kH = 8;  // of int (4 bytes)
  const cudaChannelFormatDesc i1 = cudaCreateChannelDesc(32, 0, 0, 0, cudaChannelFormatKindSigned);
  cudaArray_t a = nullptr, b = nullptr;
  ASSERT_RT(cudaMallocArray(&a, &i1, kW, kH));
  ASSERT_RT(cudaMallocArray(&b, &i1, kW, kH));
  std::vector<int> in(kW * kH);
  std::iota(in.begin(), in.end(), 0);
  ASSERT_RT(cudaMemcpy2DToArray(a, 0, 0, in.data(), kW * 4, kW * 4, kH, cudaMemcpyHostToDevice));
  std::vector<int> out(kW * kH, -1);
  ASSERT_RT(cudaMemcpy2DFromArray(out.data(), kW * 4, a, 0, 0, kW * 4, kH, cudaMemcpyDeviceToHost));
  EXPECT_EQ(out, in);

  // A 3 x 2 box from (2, 1) of a to (10, 5) of b, then b to device memory and back.
  std::vector<int> zero(kW * kH, 0);
  ASSERT_RT(cudaMemcpy2DToArray(b, 0, 0, zero.data(), kW * 4, kW * 4, kH, cudaMemcpyDefault));
  ASSERT_RT(cudaMemcpy2DArrayToArray(b, 10 * 4, 5, a, 2 * 4, 1, 3 * 4, 2));
  void* dev = nullptr;
  ASSERT_RT(cudaMalloc(&dev, kW * kH * 4));
  ASSERT_RT(cudaMemcpy2DFromArray(dev, kW * 4, b, 0, 0, kW * 4, kH, cudaMemcpyDeviceToDevice));
  ASSERT_RT(cudaMemcpy(out.data(), dev, kW * kH * 4, cudaMemcpyDeviceToHost));
  for (size_t y = 0; y < kH; ++y)
    for (size_t x = 0; x < kW; ++x) {
      const bool in_box = x >= 10 && x < 13 && y >= 5 && y < 7;
      EXPECT_EQ(out[y * kW + x], in_box ? in[(y - 4) * kW + (x - 8)] : 0) << x << "," << y;
    }

  // The deprecated forms run on across rows: 20 ints from (12, 2) end at (15, 3).
  std::vector<int> run(20);
  std::iota(run.begin(), run.end(), 500);
  ASSERT_RT(cudaMemcpyToArray(a, 12 * 4, 2, run.data(), run.size() * 4, cudaMemcpyHostToDevice));
  std::vector<int> got(20, 0);
  ASSERT_RT(cudaMemcpyFromArray(got.data(), a, 12 * 4, 2, got.size() * 4, cudaMemcpyDeviceToHost));
  EXPECT_EQ(got, run);
  ASSERT_RT(cudaMemcpy2DFromArray(out.data(), kW * 4, a, 0, 0, kW * 4, kH, cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < kW * kH; ++i) {
    const size_t start = 2 * kW + 12;
    EXPECT_EQ(out[i], i >= start && i < start + 20 ? 500 + static_cast<int>(i - start) : in[i])
        << i;
  }
  ASSERT_RT(cudaMemcpyArrayToArray(b, 0, 0, a, 0, 0, kW * kH * 4));
  ASSERT_RT(cudaMemcpyFromArray(got.data(), b, 12 * 4, 2, got.size() * 4, cudaMemcpyDefault));
  EXPECT_EQ(got, run);

  // Asynchronous forms on a stream, per-thread forms.
  cudaStream_t s = nullptr;
  ASSERT_RT(cudaStreamCreate(&s));
  ASSERT_RT(
      cudaMemcpy2DToArrayAsync(a, 0, 0, in.data(), kW * 4, kW * 4, kH, cudaMemcpyHostToDevice, s));
  ASSERT_RT(cudaMemcpyToArrayAsync(a, 0, 7, run.data(), 4 * 4, cudaMemcpyHostToDevice, s));
  std::fill(out.begin(), out.end(), -1);
  ASSERT_RT(cudaMemcpy2DFromArrayAsync(out.data(), kW * 4, a, 0, 0, kW * 4, kH,
                                       cudaMemcpyDeviceToHost, s));
  std::fill(got.begin(), got.end(), 0);
  ASSERT_RT(cudaMemcpyFromArrayAsync(got.data(), a, 0, 7, 4 * 4, cudaMemcpyDeviceToHost, s));
  ASSERT_RT(cudaStreamSynchronize(s));
  for (size_t i = 0; i < kW * kH; ++i)
    EXPECT_EQ(out[i], i >= 7 * kW && i < 7 * kW + 4 ? 500 + static_cast<int>(i - 7 * kW) : in[i]);
  EXPECT_TRUE(std::equal(got.begin(), got.begin() + 4, run.begin()));
  EXPECT_RT(cudaStreamDestroy(s));

  // Refusals: past the array, a pitch below the width, a kind that says the array is host.
  EXPECT_EQ(cudaMemcpy2DToArray(a, 4, 0, in.data(), kW * 4, kW * 4, kH, cudaMemcpyHostToDevice),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy2DToArray(a, 0, 0, in.data(), 8, kW * 4, kH, cudaMemcpyHostToDevice),
            cudaErrorInvalidPitchValue);
  EXPECT_EQ(cudaMemcpy2DToArray(a, 0, 0, in.data(), kW * 4, kW * 4, kH, cudaMemcpyDeviceToHost),
            cudaErrorInvalidMemcpyDirection);
  EXPECT_EQ(cudaMemcpy2DToArray(a, 0, 0, dev, kW * 4, kW * 4, kH, cudaMemcpyHostToDevice),
            cudaErrorInvalidValue);  // the source is device memory, the kind says host
  (void)cudaGetLastError();
  EXPECT_RT(cudaFree(dev));
  EXPECT_RT(cudaFreeArray(a));
  EXPECT_RT(cudaFreeArray(b));
}

TEST_F(RuntimeArray, ThreeDimensionalCopiesMipmapsAndPeers) {
  const cudaChannelFormatDesc h2 = cudaCreateChannelDesc(16, 16, 0, 0, cudaChannelFormatKindFloat);
  cudaArray_t a = nullptr;
  const cudaExtent ext = make_cudaExtent(8, 4, 3);  // elements of 4 bytes
  ASSERT_RT(cudaMalloc3DArray(&a, &h2, ext, cudaArrayLayered));
  cudaExtent got_ext{};
  unsigned flags = 0;
  ASSERT_RT(cudaArrayGetInfo(nullptr, &got_ext, &flags, a));
  EXPECT_EQ(got_ext.depth, 3u);
  EXPECT_EQ(flags, static_cast<unsigned>(cudaArrayLayered));
  std::vector<unsigned char> in(8 * 4 * 4 * 3);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<unsigned char>(i * 13 + 1);
  cudaMemcpy3DParms p{};
  p.srcPtr = make_cudaPitchedPtr(in.data(), 8 * 4, 8 * 4, 4);
  p.dstArray = a;
  p.extent = ext;  // in elements: an array takes part
  p.kind = cudaMemcpyHostToDevice;
  ASSERT_RT(cudaMemcpy3D(&p));
  // Elements (2..5, 1..2, layer 1..2) back, with positions in elements for the array.
  std::vector<unsigned char> out(4 * 4 * 2 * 2, 0);
  cudaMemcpy3DParms q{};
  q.srcArray = a;
  q.srcPos = make_cudaPos(2, 1, 1);
  q.dstPtr = make_cudaPitchedPtr(out.data(), 4 * 4, 4 * 4, 2);
  q.extent = make_cudaExtent(4, 2, 2);
  q.kind = cudaMemcpyDeviceToHost;
  cudaStream_t s = nullptr;
  ASSERT_RT(cudaStreamCreate(&s));
  ASSERT_RT(cudaMemcpy3DAsync(&q, s));
  ASSERT_RT(cudaStreamSynchronize(s));
  for (size_t z = 0; z < 2; ++z)
    for (size_t y = 0; y < 2; ++y)
      for (size_t x = 0; x < 16; ++x)
        EXPECT_EQ(out[(z * 2 + y) * 16 + x], in[((z + 1) * 4 + (y + 1)) * 32 + 8 + x]);

  // The same copy through cudaMemcpy3DPeer (device 0 to device 0).
  std::fill(out.begin(), out.end(), 0);
  cudaMemcpy3DPeerParms peer{};
  peer.srcArray = a;
  peer.srcPos = make_cudaPos(2, 1, 1);
  peer.srcDevice = 0;
  peer.dstPtr = make_cudaPitchedPtr(out.data(), 4 * 4, 4 * 4, 2);
  peer.dstDevice = 0;
  peer.extent = make_cudaExtent(4, 2, 2);
  ASSERT_RT(cudaMemcpy3DPeer(&peer));
  EXPECT_EQ(out[0], in[(1 * 4 + 1) * 32 + 8]);
  ASSERT_RT(cudaMemcpy3DPeerAsync(&peer, s));
  ASSERT_RT(cudaStreamSynchronize(s));
  peer.srcDevice = 99;
  EXPECT_EQ(cudaMemcpy3DPeer(&peer), cudaErrorInvalidDevice);
  (void)cudaGetLastError();

  // As a graph node: GetParams gives the array and element positions back.
  cudaGraph_t g = nullptr;
  ASSERT_RT(cudaGraphCreate(&g, 0));
  cudaGraphNode_t n = nullptr;
  ASSERT_RT(cudaGraphAddMemcpyNode(&n, g, nullptr, 0, &q));
  cudaMemcpy3DParms back{};
  ASSERT_RT(cudaGraphMemcpyNodeGetParams(n, &back));
  EXPECT_EQ(back.srcArray, a);
  EXPECT_EQ(back.srcPos.x, 2u);
  EXPECT_EQ(back.extent.width, 4u);
  cudaGraphExec_t x = nullptr;
  ASSERT_RT(cudaGraphInstantiate(&x, g, 0));
  std::fill(out.begin(), out.end(), 0);
  ASSERT_RT(cudaGraphLaunch(x, s));
  ASSERT_RT(cudaStreamSynchronize(s));
  EXPECT_EQ(out[0], in[(1 * 4 + 1) * 32 + 8]);
  EXPECT_RT(cudaGraphExecDestroy(x));
  EXPECT_RT(cudaGraphDestroy(g));
  EXPECT_RT(cudaStreamDestroy(s));
  EXPECT_RT(cudaFreeArray(a));

  // Mipmapped arrays.
  cudaMipmappedArray_t m = nullptr;
  ASSERT_RT(cudaMallocMipmappedArray(&m, &h2, make_cudaExtent(16, 16, 0), 3, 0));
  cudaArray_t level = nullptr;
  ASSERT_RT(cudaGetMipmappedArrayLevel(&level, m, 2));
  cudaExtent lext{};
  ASSERT_RT(cudaArrayGetInfo(nullptr, &lext, nullptr, level));
  EXPECT_EQ(lext.width, 4u);
  EXPECT_EQ(lext.height, 4u);
  EXPECT_EQ(cudaGetMipmappedArrayLevel(&level, m, 3), cudaErrorInvalidValue);
  cudaArrayMemoryRequirements req{};
  EXPECT_EQ(cudaMipmappedArrayGetMemoryRequirements(&req, m, 0), cudaErrorInvalidValue);
  cudaArraySparseProperties sparse{};
  EXPECT_EQ(cudaMipmappedArrayGetSparseProperties(&sparse, m), cudaErrorInvalidValue);
  (void)cudaGetLastError();
  EXPECT_RT(cudaFreeMipmappedArray(m));
}

}  // namespace
