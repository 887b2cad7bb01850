// The per-thread default stream entry points (_ptds / _ptsz): the null stream means the
// calling host thread's own default stream.
#include <cstring>
#include <future>
#include <set>
#include <thread>
#include <vector>

#include "conformance.hpp"

namespace conformance {
namespace {

using PerThread = Driver;

std::vector<unsigned char> pattern(size_t n, unsigned seed) {
  std::vector<unsigned char> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<unsigned char>(i * 7u + seed);
  return v;
}

std::vector<unsigned char> read_back(CUdeviceptr p, size_t n) {
  std::vector<unsigned char> out(n);
  EXPECT_OK(cuMemcpyDtoH_v2_ptds(out.data(), p, n));
  return out;
}

TEST_F(PerThread, NullStreamIsThePerThreadStream) {
  unsigned long long legacy = 0, per_thread = 0, via_ptsz = 0, via_ptsz_explicit = 0;
  ASSERT_OK(cuStreamGetId(nullptr, &legacy));
  ASSERT_OK(cuStreamGetId(CU_STREAM_PER_THREAD, &per_thread));
  ASSERT_OK(cuStreamGetId_ptsz(nullptr, &via_ptsz));
  ASSERT_OK(cuStreamGetId_ptsz(CU_STREAM_PER_THREAD, &via_ptsz_explicit));
  EXPECT_NE(legacy, per_thread);
  EXPECT_EQ(via_ptsz, per_thread);
  EXPECT_EQ(via_ptsz_explicit, per_thread);
  unsigned long long legacy_via_ptsz = 0;
  ASSERT_OK(cuStreamGetId_ptsz(CU_STREAM_LEGACY, &legacy_via_ptsz));
  EXPECT_EQ(legacy_via_ptsz, legacy) << "CU_STREAM_LEGACY is explicit in either mode";
  // The remaining getters.
  CUcontext c = nullptr;
  CUgreenCtx g = reinterpret_cast<CUgreenCtx>(0x1);
  CUdevice d = -1;
  unsigned flags = 99;
  int prio = 99, least = 0, greatest = 0;
  ASSERT_OK(cuStreamGetCtx_ptsz(nullptr, &c));
  EXPECT_EQ(c, ctx);
  c = nullptr;
  ASSERT_OK(cuStreamGetCtx_v2_ptsz(nullptr, &c, &g));
  EXPECT_EQ(c, ctx);
  EXPECT_EQ(g, nullptr);
  ASSERT_OK(cuStreamGetDevice_ptsz(nullptr, &d));
  EXPECT_EQ(d, dev);
  ASSERT_OK(cuStreamGetFlags_ptsz(nullptr, &flags));
  EXPECT_EQ(flags, 0u) << "the per-thread stream is a blocking stream";
  ASSERT_OK(cuCtxGetStreamPriorityRange(&least, &greatest));
  ASSERT_OK(cuStreamGetPriority_ptsz(nullptr, &prio));
  EXPECT_EQ(prio, least);
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuStreamGetId_ptsz(nullptr, nullptr));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuStreamGetCtx_v2_ptsz(nullptr, &c, nullptr));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE,
            cuStreamGetFlags_ptsz(reinterpret_cast<CUstream>(0x5555), &flags));
}

// The _ptsz forms of the stream attribute calls: the null stream is the per-thread stream,
// whose attributes are its own (the legacy stream's stay as they were).
TEST_F(PerThread, StreamAttributesOfThePerThreadStream) {
  CUstreamAttrValue v{};
  v.syncPolicy = CU_SYNC_POLICY_YIELD;
  ASSERT_OK(cuStreamSetAttribute_ptsz(nullptr, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, &v));
  CUstreamAttrValue read{};
  ASSERT_OK(cuStreamGetAttribute(CU_STREAM_PER_THREAD, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY,
                                 &read));
  EXPECT_EQ(read.syncPolicy, CU_SYNC_POLICY_YIELD);
  ASSERT_OK(
      cuStreamGetAttribute(CU_STREAM_LEGACY, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, &read));
  EXPECT_NE(read.syncPolicy, CU_SYNC_POLICY_YIELD);
  CUstream s = nullptr;
  ASSERT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  ASSERT_OK(cuStreamCopyAttributes_ptsz(s, nullptr));
  read = {};
  ASSERT_OK(cuStreamGetAttribute_ptsz(s, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, &read));
  EXPECT_EQ(read.syncPolicy, CU_SYNC_POLICY_YIELD);
  ASSERT_OK(cuStreamDestroy_v2(s));
}

TEST_F(PerThread, EachHostThreadHasItsOwnStream) {
  unsigned long long mine = 0;
  ASSERT_OK(cuStreamGetId_ptsz(nullptr, &mine));
  std::set<unsigned long long> ids{mine};
  for (int i = 0; i < 3; ++i) {
    std::thread([&] {
      ASSERT_OK(cuCtxSetCurrent(ctx));
      unsigned long long id = 0, again = 0;
      ASSERT_OK(cuStreamGetId_ptsz(nullptr, &id));
      ASSERT_OK(cuStreamGetId(CU_STREAM_PER_THREAD, &again));
      EXPECT_EQ(id, again);
      ids.insert(id);
      EXPECT_OK(cuCtxPopCurrent_v2(nullptr));
    }).join();
  }
  EXPECT_EQ(ids.size(), 4u) << "threads share a per-thread default stream";
  unsigned long long again = 0;
  ASSERT_OK(cuStreamGetId_ptsz(nullptr, &again));
  EXPECT_EQ(again, mine) << "a thread keeps its stream";
}

TEST_F(PerThread, OneThreadsBlockedStreamDoesNotBlockAnother) {
  Gate gate;
  std::atomic<int> mine{0};
  ASSERT_OK(cuLaunchHostFunc_ptsz(nullptr, &Gate::block, &gate));
  ASSERT_OK(cuLaunchHostFunc_ptsz(nullptr, &count_call, &mine));
  ASSERT_TRUE(eventually([&] { return gate.entered.load(); }));
  EXPECT_CU(CUDA_ERROR_NOT_READY, cuStreamQuery_ptsz(nullptr));
  DeviceBuffer d(4096);
  auto other = std::async(std::launch::async, [&] {
    EXPECT_OK(cuCtxSetCurrent(ctx));
    EXPECT_OK(cuStreamQuery_ptsz(nullptr)) << "another thread's stream is idle";
    // No host function here: CUDA may run all host functions on one thread.
    EXPECT_OK(cuMemsetD8Async_ptsz(d.ptr, 0x21, 4096, nullptr));
    EXPECT_OK(cuStreamSynchronize_ptsz(nullptr));
    const auto b = read_back(d.ptr, 4096);
    EXPECT_EQ(b[0], 0x21);
    EXPECT_EQ(b[4095], 0x21);
    EXPECT_OK(cuCtxPopCurrent_v2(nullptr));
  });
  ASSERT_EQ(other.wait_for(kTimeout), std::future_status::ready)
      << "the other thread's per-thread stream waited for this thread's";
  other.get();
  EXPECT_EQ(mine.load(), 0);
  gate.release();
  ASSERT_OK(cuStreamSynchronize_ptsz(nullptr));
  EXPECT_EQ(mine.load(), 1);
  EXPECT_FALSE(gate.timed_out);
}

TEST_F(PerThread, SynchronousCopiesAndMemsets) {
  const size_t n = 8192;
  const auto src = pattern(n, 3);
  DeviceBuffer a(n), b(n);
  ASSERT_OK(cuMemcpyHtoD_v2_ptds(a.ptr, src.data(), n));
  ASSERT_OK(cuMemcpyDtoD_v2_ptds(b.ptr, a.ptr, n));
  EXPECT_EQ(read_back(b.ptr, n), src);
  std::vector<unsigned char> host(n, 0);
  ASSERT_OK(cuMemcpy_ptds(reinterpret_cast<CUdeviceptr>(host.data()), b.ptr, n));
  EXPECT_EQ(host, src);
  ASSERT_OK(cuMemsetD8_v2_ptds(b.ptr, 0, n));
  ASSERT_OK(cuMemcpyPeer_ptds(b.ptr, ctx, a.ptr, ctx, n));
  EXPECT_EQ(read_back(b.ptr, n), src);

  ASSERT_OK(cuMemsetD8_v2_ptds(a.ptr, 0x01, 16));
  ASSERT_OK(cuMemsetD16_v2_ptds(a.ptr + 16, 0x0203, 8));
  ASSERT_OK(cuMemsetD32_v2_ptds(a.ptr + 32, 0x04050607u, 4));
  ASSERT_OK(cuMemsetD2D8_v2_ptds(a.ptr + 64, 32, 0x08, 4, 2));
  ASSERT_OK(cuMemsetD2D16_v2_ptds(a.ptr + 128, 32, 0x090a, 2, 2));
  ASSERT_OK(cuMemsetD2D32_v2_ptds(a.ptr + 192, 32, 0x0b0c0d0eu, 1, 2));
  const auto m = read_back(a.ptr, 256);
  EXPECT_EQ(m[0], 0x01);
  EXPECT_EQ(m[15], 0x01);
  unsigned short s16;
  std::memcpy(&s16, &m[30], 2);
  EXPECT_EQ(s16, 0x0203);
  unsigned s32;
  std::memcpy(&s32, &m[44], 4);
  EXPECT_EQ(s32, 0x04050607u);
  EXPECT_EQ(m[64], 0x08);
  EXPECT_EQ(m[99], 0x08);
  EXPECT_EQ(m[100], src[100]) << "outside the 2D box";
  std::memcpy(&s16, &m[162], 2);
  EXPECT_EQ(s16, 0x090a);
  std::memcpy(&s32, &m[224], 4);
  EXPECT_EQ(s32, 0x0b0c0d0eu);
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemsetD16_v2_ptds(a.ptr + 1, 0, 1));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemsetD32_v2_ptds(a.ptr + 2, 0, 1));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemcpyHtoD_v2_ptds(a.ptr, src.data(), n + 1));

  // 2D and 3D.
  CUDA_MEMCPY2D c2{};
  c2.srcMemoryType = CU_MEMORYTYPE_HOST;
  c2.srcHost = src.data();
  c2.srcPitch = 64;
  c2.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  c2.dstDevice = b.ptr;
  c2.dstPitch = 128;
  c2.WidthInBytes = 48;
  c2.Height = 10;
  ASSERT_OK(cuMemsetD8_v2_ptds(b.ptr, 0, n));
  ASSERT_OK(cuMemcpy2D_v2_ptds(&c2));
  auto got = read_back(b.ptr, 128 * 10);
  for (size_t y = 0; y < 10; ++y)
    for (size_t x = 0; x < 128; ++x)
      ASSERT_EQ(got[y * 128 + x], x < 48 ? src[y * 64 + x] : 0) << x << "," << y;
  ASSERT_OK(cuMemsetD8_v2_ptds(b.ptr, 0, n));
  ASSERT_OK(cuMemcpy2DUnaligned_v2_ptds(&c2));
  EXPECT_EQ(read_back(b.ptr, 128 * 10), got);
  CUDA_MEMCPY3D c3{};
  c3.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  c3.srcDevice = b.ptr;
  c3.srcPitch = 128;
  c3.srcHeight = 5;
  c3.dstMemoryType = CU_MEMORYTYPE_HOST;
  std::vector<unsigned char> box(48 * 5 * 2, 0);
  c3.dstHost = box.data();
  c3.dstPitch = 48;
  c3.dstHeight = 5;
  c3.WidthInBytes = 48;
  c3.Height = 5;
  c3.Depth = 2;
  ASSERT_OK(cuMemcpy3D_v2_ptds(&c3));
  for (size_t row = 0; row < 10; ++row)
    for (size_t x = 0; x < 48; ++x) ASSERT_EQ(box[row * 48 + x], src[row * 64 + x]);
  CUDA_MEMCPY3D_PEER p3{};
  p3.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  p3.srcDevice = b.ptr;
  p3.srcContext = ctx;
  p3.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  p3.dstDevice = a.ptr;
  p3.dstContext = ctx;
  p3.WidthInBytes = 1280;
  p3.Height = 1;
  p3.Depth = 1;
  ASSERT_OK(cuMemcpy3DPeer_ptds(&p3));
  EXPECT_EQ(read_back(a.ptr, 1280), got);
}

TEST_F(PerThread, AsyncFormsOnThePerThreadStream) {
  const size_t n = 4096;
  const auto src = pattern(n, 9);
  DeviceBuffer a(n), b(n), c(n);
  unsigned char* pinned = nullptr;
  ASSERT_OK(cuMemAllocHost_v2(reinterpret_cast<void**>(&pinned), n));
  std::memcpy(pinned, src.data(), n);
  // Gate the per-thread stream so that every operation below is observably queued on it.
  Gate gate;
  ASSERT_OK(cuLaunchHostFunc_ptsz(nullptr, &Gate::block, &gate));
  ASSERT_OK(cuMemcpyHtoDAsync_v2_ptsz(a.ptr, pinned, n, nullptr));
  ASSERT_OK(cuMemcpyDtoDAsync_v2_ptsz(b.ptr, a.ptr, n, nullptr));
  ASSERT_OK(cuMemcpyAsync_ptsz(c.ptr, b.ptr, n, nullptr));
  ASSERT_OK(cuMemcpyPeerAsync_ptsz(a.ptr, ctx, c.ptr, ctx, n, nullptr));
  ASSERT_OK(cuMemsetD8Async_ptsz(b.ptr, 0x10, 64, nullptr));
  ASSERT_OK(cuMemsetD16Async_ptsz(b.ptr + 64, 0x1112, 32, nullptr));
  ASSERT_OK(cuMemsetD32Async_ptsz(b.ptr + 128, 0x13141516u, 16, nullptr));
  ASSERT_OK(cuMemsetD2D8Async_ptsz(b.ptr + 256, 64, 0x17, 8, 2, nullptr));
  ASSERT_OK(cuMemsetD2D16Async_ptsz(b.ptr + 512, 64, 0x1819, 4, 2, nullptr));
  ASSERT_OK(cuMemsetD2D32Async_ptsz(b.ptr + 768, 64, 0x1a1b1c1du, 2, 2, nullptr));
  CUDA_MEMCPY2D c2{};
  c2.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  c2.srcDevice = a.ptr;
  c2.srcPitch = 64;
  c2.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  c2.dstDevice = c.ptr;
  c2.dstPitch = 64;
  c2.WidthInBytes = 64;
  c2.Height = 64;
  ASSERT_OK(cuMemcpy2DAsync_v2_ptsz(&c2, nullptr));
  CUDA_MEMCPY3D c3{};
  c3.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  c3.srcDevice = b.ptr;
  c3.dstMemoryType = CU_MEMORYTYPE_HOST;
  c3.dstHost = pinned;
  c3.WidthInBytes = 1024;
  c3.Height = 1;
  c3.Depth = 1;
  ASSERT_OK(cuMemcpy3DAsync_v2_ptsz(&c3, nullptr));
  CUevent e = nullptr;
  ASSERT_OK(cuEventCreate(&e, 0));
  ASSERT_OK(cuEventRecord_ptsz(e, nullptr));
  std::atomic<int> calls{0};
  struct Cb {
    static void CUDA_CB fn(CUstream, CUresult status, void* p) {
      if (status == CUDA_SUCCESS) static_cast<std::atomic<int>*>(p)->fetch_add(1);
    }
  };
  ASSERT_OK(cuStreamAddCallback_ptsz(nullptr, &Cb::fn, &calls, 0));
  EXPECT_CU(CUDA_ERROR_NOT_READY, cuEventQuery(e));
  EXPECT_CU(CUDA_ERROR_NOT_READY, cuStreamQuery_ptsz(nullptr));
  EXPECT_OK(cuStreamQuery(nullptr)) << "the legacy stream is not the per-thread one";
  // A non-blocking stream waits for the per-thread stream through the event.
  CUstream s = nullptr;
  ASSERT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  ASSERT_OK(cuStreamWaitEvent_ptsz(s, e, 0));
  CUevent done = nullptr;
  ASSERT_OK(cuEventCreate(&done, 0));
  ASSERT_OK(cuEventRecordWithFlags_ptsz(done, s, 0));
  EXPECT_CU(CUDA_ERROR_NOT_READY, cuEventQuery(done));
  // And the per-thread stream can wait on another stream's event.
  ASSERT_OK(cuStreamWaitEvent_ptsz(nullptr, done, 0));
  ASSERT_OK(cuMemcpyDtoHAsync_v2_ptsz(pinned + 2048, c.ptr + 100, 100, nullptr));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemcpy3DPeerAsync_ptsz(nullptr, nullptr));
  gate.release();
  ASSERT_OK(cuStreamSynchronize_ptsz(nullptr));
  EXPECT_OK(cuEventQuery(done));
  EXPECT_EQ(calls.load(), 1);
  // Results: a == src (round trip through b and c), b has the memsets, c's first 4096 = a.
  EXPECT_EQ(read_back(a.ptr, n), src);
  const auto bb = read_back(b.ptr, 1024);
  EXPECT_EQ(std::memcmp(pinned, bb.data(), 1024), 0);
  EXPECT_EQ(bb[0], 0x10);
  EXPECT_EQ(bb[63], 0x10);
  EXPECT_EQ(bb[64], 0x12);
  EXPECT_EQ(bb[65], 0x11);
  EXPECT_EQ(bb[128], 0x16);
  EXPECT_EQ(bb[256], 0x17);
  EXPECT_EQ(bb[264], src[264]);
  EXPECT_EQ(bb[320], 0x17);
  EXPECT_EQ(bb[512], 0x19);
  EXPECT_EQ(bb[768], 0x1d);
  EXPECT_EQ(std::memcmp(pinned + 2048, src.data() + 100, 100), 0);
  EXPECT_EQ(read_back(c.ptr, n), src);
  CUDA_MEMCPY3D_PEER p3{};
  p3.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  p3.srcDevice = a.ptr;
  p3.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  p3.dstDevice = c.ptr;
  p3.WidthInBytes = n;
  p3.Height = 1;
  p3.Depth = 1;
  ASSERT_OK(cuMemsetD8Async_ptsz(c.ptr, 0, n, nullptr));
  ASSERT_OK(cuMemcpy3DPeerAsync_ptsz(&p3, nullptr));
  ASSERT_OK(cuStreamSynchronize_ptsz(nullptr));
  EXPECT_EQ(read_back(c.ptr, n), src);
  EXPECT_FALSE(gate.timed_out);
  EXPECT_OK(cuEventDestroy_v2(e));
  EXPECT_OK(cuEventDestroy_v2(done));
  EXPECT_OK(cuStreamDestroy_v2(s));
  EXPECT_OK(cuMemFreeHost(pinned));
}

}  // namespace
}  // namespace conformance
