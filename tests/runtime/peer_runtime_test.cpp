// The runtime's peer access, P2P queries, peer and batch copies (issue 17). The multi-device
// cases skip with one device; CTest runs them again on a two-device mock (runtime.mock2.*).
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

class RuntimePeer : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_RT(cudaSetDevice(0));
    ASSERT_RT(cudaGetDeviceCount(&devices));
    (void)cudaGetLastError();
  }
  void TearDown() override {
    (void)cudaSetDevice(0);
    EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "a test left an error behind";
  }
  int devices = 0;
};

TEST_F(RuntimePeer, LinkQueries) {
  int v = -1;
  EXPECT_EQ(cudaDeviceGetP2PAttribute(&v, cudaDevP2PAttrAccessSupported, 0, 0),
            cudaErrorInvalidDevice);
  EXPECT_EQ(cudaDeviceGetP2PAttribute(nullptr, cudaDevP2PAttrAccessSupported, 0, 0),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaDeviceGetP2PAttribute(&v, cudaDevP2PAttrAccessSupported, 0, devices),
            cudaErrorInvalidDevice);
  unsigned caps = 0;
  const cudaAtomicOperation op = cudaAtomicOperationIntegerAdd;
  EXPECT_EQ(cudaDeviceGetP2PAtomicCapabilities(&caps, &op, 0, 0, 0), cudaErrorInvalidValue);
  EXPECT_EQ(cudaDeviceGetP2PAtomicCapabilities(&caps, &op, 1, 0, 0), cudaErrorInvalidDevice);
  (void)cudaGetLastError();
  if (devices < 2) GTEST_SKIP() << "one device configured";
  int can = -1;
  ASSERT_RT(cudaDeviceCanAccessPeer(&can, 0, 1));
  EXPECT_EQ(can, 1) << "mock devices share one address space";
  ASSERT_RT(cudaDeviceGetP2PAttribute(&v, cudaDevP2PAttrAccessSupported, 0, 1));
  EXPECT_EQ(v, 1);
  ASSERT_RT(cudaDeviceGetP2PAttribute(&v, cudaDevP2PAttrNativeAtomicSupported, 1, 0));
  EXPECT_EQ(v, 1);
  ASSERT_RT(cudaDeviceGetP2PAtomicCapabilities(&caps, &op, 1, 0, 1));
  EXPECT_NE(caps & CU_ATOMIC_CAPABILITY_SCALAR_32, 0u);
}

TEST_F(RuntimePeer, DevicePropertiesPerDevice) {
  if (devices < 2) GTEST_SKIP() << "one device configured";
  cudaDeviceProp p0{}, p1{};
  ASSERT_RT(cudaGetDeviceProperties(&p0, 0));
  ASSERT_RT(cudaGetDeviceProperties(&p1, 1));
  EXPECT_NE(std::memcmp(&p0.uuid, &p1.uuid, sizeof p0.uuid), 0);
  EXPECT_NE(p0.pciBusID, p1.pciBusID);
  EXPECT_EQ(p0.major, p1.major);
  EXPECT_EQ(p0.totalGlobalMem, p1.totalGlobalMem);
  // Each device's memory is its own.
  size_t free0 = 0, free1 = 0, total = 0, after0 = 0, after1 = 0;
  ASSERT_RT(cudaMemGetInfo(&free0, &total));
  ASSERT_RT(cudaSetDevice(1));
  ASSERT_RT(cudaMemGetInfo(&free1, &total));
  void* p = nullptr;
  ASSERT_RT(cudaMalloc(&p, size_t{32} << 20));
  ASSERT_RT(cudaMemGetInfo(&after1, &total));
  EXPECT_LE(after1 + (size_t{32} << 20), free1);
  cudaPointerAttributes attr{};
  ASSERT_RT(cudaPointerGetAttributes(&attr, p));
  EXPECT_EQ(attr.device, 1);
  ASSERT_RT(cudaSetDevice(0));
  ASSERT_RT(cudaMemGetInfo(&after0, &total));
  EXPECT_EQ(after0, free0);
  ASSERT_RT(cudaFree(p));
}

TEST_F(RuntimePeer, PeerAccessIsTheDriversRecord) {
  EXPECT_EQ(cudaDeviceEnablePeerAccess(0, 1), cudaErrorInvalidValue);
  (void)cudaGetLastError();
  if (devices < 2) GTEST_SKIP() << "one device configured";
  ASSERT_RT(cudaDeviceEnablePeerAccess(1, 0));
  EXPECT_EQ(cudaDeviceEnablePeerAccess(1, 0), cudaErrorPeerAccessAlreadyEnabled);
  (void)cudaGetLastError();
  // The runtime enabled the current context's access to device 1's primary context.
  CUdevice one = 0;
  CUcontext primary1 = nullptr;
  ASSERT_EQ(cuDeviceGet(&one, 1), CUDA_SUCCESS);
  ASSERT_EQ(cuDevicePrimaryCtxRetain(&primary1, one), CUDA_SUCCESS);
  EXPECT_EQ(cuCtxEnablePeerAccess(primary1, 0), CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED);
  EXPECT_EQ(cuCtxDisablePeerAccess(primary1), CUDA_SUCCESS);
  EXPECT_EQ(cudaDeviceDisablePeerAccess(1), cudaErrorPeerAccessNotEnabled);
  (void)cudaGetLastError();
  ASSERT_EQ(cuDevicePrimaryCtxRelease_v2(one), CUDA_SUCCESS);
  // Device 1 enabling device 0 is a separate, one-way grant.
  ASSERT_RT(cudaSetDevice(1));
  ASSERT_RT(cudaDeviceEnablePeerAccess(0, 0));
  ASSERT_RT(cudaDeviceDisablePeerAccess(0));
}

TEST_F(RuntimePeer, Memcpy3DPeer) {
  constexpr size_t kW = 24, kH = 3, kPitch = 32;
  std::vector<unsigned char> host(kPitch * kH), back(kPitch * kH, 0);
  std::iota(host.begin(), host.end(), static_cast<unsigned char>(1));
  const int other = devices > 1 ? 1 : 0;
  void* src = nullptr;
  void* dst = nullptr;
  ASSERT_RT(cudaMalloc(&src, kPitch * kH));
  ASSERT_RT(cudaMemcpy(src, host.data(), host.size(), cudaMemcpyHostToDevice));
  ASSERT_RT(cudaSetDevice(other));
  ASSERT_RT(cudaMalloc(&dst, kPitch * kH));
  ASSERT_RT(cudaMemset(dst, 0, kPitch * kH));
  ASSERT_RT(cudaSetDevice(0));
  cudaMemcpy3DPeerParms p{};
  p.srcPtr = {src, kPitch, kW, kH};
  p.srcDevice = 0;
  p.dstPtr = {dst, kPitch, kW, kH};
  p.dstDevice = other;
  p.extent = {kW, kH, 1};
  ASSERT_RT(cudaMemcpy3DPeer(&p));
  ASSERT_RT(cudaMemcpy(back.data(), dst, back.size(), cudaMemcpyDeviceToHost));
  for (size_t y = 0; y < kH; ++y)
    for (size_t x = 0; x < kPitch; ++x)
      EXPECT_EQ(back[y * kPitch + x], x < kW ? host[y * kPitch + x] : 0) << x << "," << y;
  cudaStream_t s = nullptr;
  ASSERT_RT(cudaStreamCreate(&s));
  ASSERT_RT(cudaMemcpy3DPeerAsync(&p, s));
  ASSERT_RT(cudaStreamSynchronize(s));
  ASSERT_RT(cudaStreamDestroy(s));
  p.dstDevice = devices;
  EXPECT_EQ(cudaMemcpy3DPeer(&p), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaMemcpy3DPeer(nullptr), cudaErrorInvalidValue);
  (void)cudaGetLastError();
  ASSERT_RT(cudaFree(src));
  ASSERT_RT(cudaFree(dst));
}

TEST_F(RuntimePeer, BatchCopies) {
  constexpr size_t kN = 64;
  std::vector<std::uint32_t> host(kN), back(kN, 0);
  std::iota(host.begin(), host.end(), 5u);
  void* d = nullptr;
  ASSERT_RT(cudaMalloc(&d, kN * 4));
  cudaStream_t s = nullptr;
  ASSERT_RT(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  void* dsts[] = {d};
  const void* srcs[] = {host.data()};
  size_t sizes[] = {kN * 4};
  cudaMemcpyAttributes attr{};
  attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  size_t idx = 0;
  ASSERT_RT(cudaMemcpyBatchAsync(dsts, srcs, sizes, 1, &attr, &idx, 1, s));
  EXPECT_EQ(cudaMemcpyBatchAsync(dsts, srcs, sizes, 1, &attr, &idx, 1, nullptr),
            cudaErrorInvalidValue)
      << "the legacy NULL stream is not allowed";
  (void)cudaGetLastError();
  // Back out through a 3D batch of pointer operands.
  cudaMemcpy3DBatchOp op{};
  op.src.type = cudaMemcpyOperandTypePointer;
  op.src.op.ptr.ptr = d;
  op.dst.type = cudaMemcpyOperandTypePointer;
  op.dst.op.ptr.ptr = back.data();
  op.extent = {kN * 4, 1, 1};
  op.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  ASSERT_RT(cudaMemcpy3DBatchAsync(1, &op, 0, s));
  ASSERT_RT(cudaStreamSynchronize(s));
  EXPECT_EQ(back, host);
  op.dst.type = cudaMemcpyOperandTypeArray;
  EXPECT_EQ(cudaMemcpy3DBatchAsync(1, &op, 0, s), cudaErrorNotSupported)
      << "CUDA array operands come with arrays";
  (void)cudaGetLastError();
  ASSERT_RT(cudaStreamDestroy(s));
  ASSERT_RT(cudaFree(d));
}

}  // namespace
