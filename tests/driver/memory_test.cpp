// Memory: device, pitched, pinned, registered and managed allocations; address ranges.
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "conformance.hpp"

namespace conformance {
namespace {

using Memory = Driver;

std::vector<unsigned char> read_back(CUdeviceptr p, size_t n) {
  std::vector<unsigned char> out(n);
  EXPECT_OK(cuMemcpyDtoH_v2(out.data(), p, n));
  return out;
}

TEST_F(Memory, AllocDistinctAlignedAndUsable) {
  std::vector<CUdeviceptr> ptrs;
  std::vector<size_t> sizes{1, 3, 256, 4097, size_t{1} << 20};
  for (size_t n : sizes) {
    CUdeviceptr p = 0;
    ASSERT_OK(cuMemAlloc_v2(&p, n));
    EXPECT_NE(p, CUdeviceptr{0});
    EXPECT_EQ(p % 256, 0u) << "CUDA allocations are at least 256-byte aligned";
    ptrs.push_back(p);
  }
  for (size_t i = 0; i < ptrs.size(); ++i)
    for (size_t j = i + 1; j < ptrs.size(); ++j)
      EXPECT_TRUE(ptrs[i] + sizes[i] <= ptrs[j] || ptrs[j] + sizes[j] <= ptrs[i]) << i << " " << j;
  // Each one holds its own bytes.
  for (size_t i = 0; i < ptrs.size(); ++i)
    ASSERT_OK(cuMemsetD8_v2(ptrs[i], static_cast<unsigned char>(0x10 + i), sizes[i]));
  for (size_t i = 0; i < ptrs.size(); ++i) {
    const auto bytes = read_back(ptrs[i], sizes[i]);
    for (unsigned char b : bytes) ASSERT_EQ(b, 0x10 + i);
  }
  for (CUdeviceptr p : ptrs) EXPECT_OK(cuMemFree_v2(p));
}

TEST_F(Memory, AllocBadArguments) {
  CUdeviceptr p = 0;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAlloc_v2(nullptr, 16));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAlloc_v2(&p, 0));
  EXPECT_CU(CUDA_ERROR_OUT_OF_MEMORY, cuMemAlloc_v2(&p, size_t{1} << 62));
  EXPECT_CU(CUDA_ERROR_OUT_OF_MEMORY, cuMemAlloc_v2(&p, SIZE_MAX));
  size_t free = 0, total = 0;
  ASSERT_OK(cuMemGetInfo_v2(&free, &total));
  EXPECT_CU(CUDA_ERROR_OUT_OF_MEMORY, cuMemAlloc_v2(&p, total + 1));
  // Later calls still work.
  ASSERT_OK(cuMemAlloc_v2(&p, 1024));
  EXPECT_OK(cuMemFree_v2(p));
}

TEST_F(Memory, GetInfoTracksAllocations) {
  size_t free0 = 0, total = 0, free1 = 0, free2 = 0;
  ASSERT_OK(cuMemGetInfo_v2(&free0, &total));
  EXPECT_LE(free0, total);
  const size_t n = size_t{64} << 20;
  CUdeviceptr p = 0;
  ASSERT_OK(cuMemAlloc_v2(&p, n));
  ASSERT_OK(cuMemGetInfo_v2(&free1, &total));
  EXPECT_LE(free1 + n, free0) << "allocating " << n << " bytes lowers free memory by at least that";
  ASSERT_OK(cuMemFree_v2(p));
  ASSERT_OK(cuMemGetInfo_v2(&free2, &total));
  EXPECT_EQ(free2, free0);
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemGetInfo_v2(nullptr, &total));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemGetInfo_v2(&free0, nullptr));
}

TEST_F(Memory, FreeBadPointers) {
  EXPECT_OK(cuMemFree_v2(0));  // freeing null is a no-op
  CUdeviceptr p = 0;
  ASSERT_OK(cuMemAlloc_v2(&p, 4096));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemFree_v2(p + 16)) << "interior pointer";
  int on_stack = 0;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemFree_v2(reinterpret_cast<CUdeviceptr>(&on_stack)));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemFreeHost(reinterpret_cast<void*>(p))) << "device memory";
  EXPECT_OK(cuMemFree_v2(p));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemFree_v2(p)) << "double free";
  void* host = nullptr;
  ASSERT_OK(cuMemAllocHost_v2(&host, 4096));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemFree_v2(reinterpret_cast<CUdeviceptr>(host)))
      << "pinned host memory is freed with cuMemFreeHost";
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemFreeHost(static_cast<char*>(host) + 8));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemFreeHost(&on_stack));
  EXPECT_OK(cuMemFreeHost(host));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemFreeHost(host)) << "double free";
  EXPECT_OK(cuMemFreeHost(nullptr));
  // Later calls still work.
  ASSERT_OK(cuMemAlloc_v2(&p, 64));
  EXPECT_OK(cuMemFree_v2(p));
}

TEST_F(Memory, FreeWaitsForPendingWork) {
  // cuMemFree synchronises: work queued on the buffer completes first.
  CUstream s = nullptr;
  ASSERT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUdeviceptr p = 0;
  ASSERT_OK(cuMemAlloc_v2(&p, 1 << 16));
  std::atomic<int> calls{0};
  Gate gate;
  ASSERT_OK(cuLaunchHostFunc(s, &Gate::block, &gate));
  ASSERT_OK(cuMemsetD8Async(p, 1, 1 << 16, s));
  ASSERT_OK(cuLaunchHostFunc(s, &count_call, &calls));
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    gate.release();
  });
  EXPECT_OK(cuMemFree_v2(p));
  EXPECT_EQ(calls.load(), 1) << "cuMemFree returned while work was still queued";
  opener.join();
  EXPECT_OK(cuStreamDestroy_v2(s));
}

// Found by the API-sequence fuzzer (issue 9): memory was freed after waiting for its own
// context's queues only, while a stream of another context still had work on it.
TEST_F(Memory, FreeWaitsForWorkOfOtherContextsOnTheMemory) {
  CUcontext other = nullptr;
  ASSERT_OK(cuCtxCreate_v2(&other, 0, dev));  // pushed: allocations below belong to it
  CUdeviceptr p = 0;
  void* h = nullptr;
  ASSERT_OK(cuMemAlloc_v2(&p, 1 << 16));
  ASSERT_OK(cuMemAllocHost_v2(&h, 1 << 16));
  ASSERT_OK(cuCtxPopCurrent_v2(nullptr));
  // Work on that memory queued in this test's context, held back by a gate.
  CUstream s = nullptr;
  ASSERT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  for (int round = 0; round < 3; ++round) {
    if (round == 2) {  // a fresh pinned buffer of the other context
      ASSERT_OK(cuCtxPushCurrent_v2(other));
      ASSERT_OK(cuMemAllocHost_v2(&h, 1 << 16));
      ASSERT_OK(cuCtxPopCurrent_v2(nullptr));
    }
    std::atomic<int> calls{0};
    Gate gate;
    ASSERT_OK(cuLaunchHostFunc(s, &Gate::block, &gate));
    ASSERT_OK(cuMemsetD8Async(round == 0 ? p : reinterpret_cast<CUdeviceptr>(h), 7, 1 << 16, s));
    ASSERT_OK(cuLaunchHostFunc(s, &count_call, &calls));
    std::thread opener([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
      gate.release();
    });
    if (round == 0) {
      EXPECT_OK(cuMemFree_v2(p));
    }
    if (round == 1) {
      EXPECT_OK(cuMemFreeHost(h));
    }
    if (round == 2) {
      EXPECT_OK(cuCtxDestroy_v2(other));  // destroying the owner frees what is left in it
    }
    EXPECT_EQ(calls.load(), 1)
        << "memory freed while another context's work on it was queued (round " << round << ")";
    opener.join();
  }
  EXPECT_OK(cuStreamDestroy_v2(s));
}

TEST_F(Memory, FreeMemoryOfAnotherContext) {
  // With unified addressing the allocation identifies its context; the current one does
  // not matter. oracle: verify on NVIDIA.
  CUcontext other = nullptr;
  ASSERT_OK(cuCtxCreate_v2(&other, 0, dev));
  CUdeviceptr p = 0;
  void* h = nullptr;
  ASSERT_OK(cuMemAlloc_v2(&p, 1 << 20));
  ASSERT_OK(cuMemAllocHost_v2(&h, 4096));
  ASSERT_OK(cuCtxPopCurrent_v2(nullptr));
  CUcontext owner = nullptr;
  ASSERT_OK(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, p));
  EXPECT_EQ(owner, other);
  EXPECT_OK(cuMemFree_v2(p));
  EXPECT_OK(cuMemFreeHost(h));
  ASSERT_OK(cuCtxDestroy_v2(other));
}

TEST_F(Memory, NoContext) {
  std::thread([] {
    CUdeviceptr p = 0;
    void* h = nullptr;
    size_t free = 0, total = 0, pitch = 0;
    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuMemAlloc_v2(&p, 16));
    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuMemAllocPitch_v2(&p, &pitch, 64, 4, 4));
    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuMemAllocHost_v2(&h, 16));
    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuMemHostAlloc(&h, 16, 0));
    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuMemAllocManaged(&p, 16, CU_MEM_ATTACH_GLOBAL));
    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuMemGetInfo_v2(&free, &total));
    char buf[64];
    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuMemHostRegister_v2(buf, sizeof buf, 0));
  }).join();
}

TEST_F(Memory, AllocPitch) {
  CUdeviceptr p = 0;
  size_t pitch = 0;
  const size_t width = 1000, height = 37;
  ASSERT_OK(cuMemAllocPitch_v2(&p, &pitch, width, height, 4));
  EXPECT_GE(pitch, width);
  EXPECT_EQ(p % 256, 0u);
  int align = 0;
  ASSERT_OK(cuDeviceGetAttribute(&align, CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT, dev));
  if (align > 0) {
    EXPECT_EQ(pitch % static_cast<size_t>(align), 0u) << "pitch " << pitch;
  }
  CUdeviceptr base = 0;
  size_t size = 0;
  ASSERT_OK(cuMemGetAddressRange_v2(&base, &size, p));
  EXPECT_EQ(base, p);
  EXPECT_GE(size, pitch * height);
  // Every row of the pitched allocation is writable.
  ASSERT_OK(cuMemsetD2D8_v2(p, pitch, 0x5a, pitch, height));
  const auto bytes = read_back(p, pitch * height);
  for (unsigned char b : bytes) ASSERT_EQ(b, 0x5a);
  EXPECT_OK(cuMemFree_v2(p));

  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAllocPitch_v2(&p, &pitch, width, height, 3));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAllocPitch_v2(&p, &pitch, width, height, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAllocPitch_v2(&p, &pitch, 0, height, 4));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAllocPitch_v2(&p, &pitch, width, 0, 4));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAllocPitch_v2(nullptr, &pitch, width, height, 4));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAllocPitch_v2(&p, nullptr, width, height, 4));
  EXPECT_CU(CUDA_ERROR_OUT_OF_MEMORY,
            cuMemAllocPitch_v2(&p, &pitch, size_t{1} << 40, size_t{1} << 30, 4));
}

TEST_F(Memory, AddressRange) {
  CUdeviceptr p = 0;
  ASSERT_OK(cuMemAlloc_v2(&p, 10000));
  for (size_t off : {size_t{0}, size_t{1}, size_t{4999}, size_t{9999}}) {
    CUdeviceptr base = 0;
    size_t size = 0;
    ASSERT_OK(cuMemGetAddressRange_v2(&base, &size, p + off)) << off;
    EXPECT_EQ(base, p);
    EXPECT_EQ(size, 10000u);
  }
  CUdeviceptr base = 0;
  size_t size = 0;
  EXPECT_OK(cuMemGetAddressRange_v2(nullptr, &size, p + 5));  // either output may be null
  EXPECT_OK(cuMemGetAddressRange_v2(&base, nullptr, p + 5));
  EXPECT_EQ(base, p);
  EXPECT_CU(CUDA_ERROR_NOT_FOUND, cuMemGetAddressRange_v2(&base, &size, p + 10000))
      << "one past the end";
  int on_stack = 0;
  EXPECT_CU(CUDA_ERROR_NOT_FOUND,
            cuMemGetAddressRange_v2(&base, &size, reinterpret_cast<CUdeviceptr>(&on_stack)));
  EXPECT_CU(CUDA_ERROR_NOT_FOUND, cuMemGetAddressRange_v2(&base, &size, 0));
  ASSERT_OK(cuMemFree_v2(p));
  EXPECT_CU(CUDA_ERROR_NOT_FOUND, cuMemGetAddressRange_v2(&base, &size, p)) << "freed";
}

TEST_F(Memory, HostAllocAndFlags) {
  void* a = nullptr;
  ASSERT_OK(cuMemAllocHost_v2(&a, 1 << 16));
  ASSERT_NE(a, nullptr);
  std::memset(a, 0x33, 1 << 16);  // plain host memory to the program
  void* b = nullptr;
  const unsigned want = CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP;
  ASSERT_OK(cuMemHostAlloc(&b, 4096, want));
  unsigned flags = 0;
  ASSERT_OK(cuMemHostGetFlags(&flags, b));
  EXPECT_EQ(flags & want, want);
  ASSERT_OK(cuMemHostGetFlags(&flags, static_cast<char*>(b) + 100)) << "any address inside";
  EXPECT_EQ(flags & want, want);
  void* c = nullptr;
  ASSERT_OK(cuMemHostAlloc(&c, 4096, CU_MEMHOSTALLOC_WRITECOMBINED));
  ASSERT_OK(cuMemHostGetFlags(&flags, c));
  EXPECT_TRUE(flags & CU_MEMHOSTALLOC_WRITECOMBINED);

  int on_stack = 0;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemHostGetFlags(&flags, &on_stack));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemHostGetFlags(nullptr, b));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemHostGetFlags(&flags, nullptr));
  void* bad = nullptr;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemHostAlloc(&bad, 4096, 0x80));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemHostAlloc(nullptr, 4096, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAllocHost_v2(nullptr, 4096));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemHostAlloc(&bad, 0, 0));  // oracle: verify on NVIDIA
  EXPECT_CU(CUDA_ERROR_OUT_OF_MEMORY, cuMemAllocHost_v2(&bad, size_t{1} << 62));
  EXPECT_OK(cuMemFreeHost(a));
  EXPECT_OK(cuMemFreeHost(b));
  EXPECT_OK(cuMemFreeHost(c));
}

TEST_F(Memory, HostDevicePointerOfPinnedMemory) {
  unsigned char* h = nullptr;
  ASSERT_OK(cuMemHostAlloc(reinterpret_cast<void**>(&h), 4096, CU_MEMHOSTALLOC_DEVICEMAP));
  std::memset(h, 0, 4096);
  CUdeviceptr d = 0, d_mid = 0;
  ASSERT_OK(cuMemHostGetDevicePointer_v2(&d, h, 0));
  ASSERT_OK(cuMemHostGetDevicePointer_v2(&d_mid, h + 100, 0));
  EXPECT_EQ(d_mid, d + 100) << "offsets carry over";
  // Device-side writes through the mapping land in the host buffer.
  ASSERT_OK(cuMemsetD8_v2(d + 10, 0x7e, 20));
  ASSERT_OK(cuCtxSynchronize());
  for (int i = 0; i < 40; ++i) EXPECT_EQ(h[i], (i >= 10 && i < 30) ? 0x7e : 0) << i;

  int on_stack = 0;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemHostGetDevicePointer_v2(&d, &on_stack, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemHostGetDevicePointer_v2(&d, h, 1));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemHostGetDevicePointer_v2(nullptr, h, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemHostGetDevicePointer_v2(&d, nullptr, 0));
  CUdeviceptr dev_mem = 0;
  ASSERT_OK(cuMemAlloc_v2(&dev_mem, 64));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
            cuMemHostGetDevicePointer_v2(&d, reinterpret_cast<void*>(dev_mem), 0));
  EXPECT_OK(cuMemFree_v2(dev_mem));
  EXPECT_OK(cuMemFreeHost(h));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemHostGetDevicePointer_v2(&d, h, 0)) << "freed";
}

TEST_F(Memory, HostRegister) {
  const size_t n = 3 * 4096 + 123;
  std::vector<unsigned char> buf(n, 0);
  ASSERT_OK(cuMemHostRegister_v2(buf.data(), n, CU_MEMHOSTREGISTER_DEVICEMAP));
  CUdeviceptr d = 0;
  ASSERT_OK(cuMemHostGetDevicePointer_v2(&d, buf.data() + 7, 0));
  ASSERT_OK(cuMemsetD8_v2(d, 0x42, 5));
  ASSERT_OK(cuCtxSynchronize());
  for (size_t i = 0; i < 16; ++i) EXPECT_EQ(buf[i], (i >= 7 && i < 12) ? 0x42 : 0) << i;
  // An async copy from registered memory is a pinned copy.
  CUdeviceptr dev_mem = 0;
  ASSERT_OK(cuMemAlloc_v2(&dev_mem, n));
  CUstream s = nullptr;
  ASSERT_OK(cuStreamCreate(&s, 0));
  ASSERT_OK(cuMemcpyHtoDAsync_v2(dev_mem, buf.data(), n, s));
  ASSERT_OK(cuStreamSynchronize(s));
  EXPECT_EQ(read_back(dev_mem, n), buf);

  EXPECT_CU(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, cuMemHostRegister_v2(buf.data(), n, 0));
  EXPECT_CU(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, cuMemHostRegister(buf.data() + 4096, 100, 0))
      << "overlapping range";
  EXPECT_CU(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, cuMemHostUnregister(buf.data() + 1))
      << "not the registered base";
  EXPECT_OK(cuMemHostUnregister(buf.data()));
  EXPECT_CU(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, cuMemHostUnregister(buf.data()));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemHostUnregister(nullptr));
  // The CUDA 4.0 symbol registers too.
  ASSERT_OK(cuMemHostRegister(buf.data(), 4096, 0));
  EXPECT_OK(cuMemHostUnregister(buf.data()));

  ASSERT_OK(cuMemHostRegister_v2(buf.data(), 4096, CU_MEMHOSTREGISTER_PORTABLE));
  unsigned flags = 0;
  // oracle: verify on NVIDIA (cuMemHostGetFlags names only cuMemHostAlloc/cuMemAllocHost memory).
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemHostGetFlags(&flags, buf.data()));
  EXPECT_OK(cuMemHostUnregister(buf.data()));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemHostRegister_v2(nullptr, 4096, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemHostRegister_v2(buf.data(), 0, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemHostRegister_v2(buf.data(), 4096, 0x100));
  void* pinned = nullptr;
  ASSERT_OK(cuMemAllocHost_v2(&pinned, 4096));
  // oracle: verify on NVIDIA (registering memory that is already page-locked by cuMemAllocHost).
  EXPECT_NE(cuMemHostRegister_v2(pinned, 4096, 0), CUDA_SUCCESS);
  EXPECT_OK(cuMemFreeHost(pinned));
  EXPECT_OK(cuStreamDestroy_v2(s));
  EXPECT_OK(cuMemFree_v2(dev_mem));
}

TEST_F(Memory, Managed) {
  CUdeviceptr m = 0;
  const size_t n = 1 << 16;
  ASSERT_OK(cuMemAllocManaged(&m, n, CU_MEM_ATTACH_GLOBAL));
  ASSERT_OK(cuMemsetD32_v2(m, 0xabcdef01u, n / 4));
  ASSERT_OK(cuCtxSynchronize());
  // Managed memory is directly accessible from the host after synchronisation.
  const auto* words = reinterpret_cast<const unsigned*>(m);
  for (size_t i = 0; i < n / 4; ++i) ASSERT_EQ(words[i], 0xabcdef01u) << i;
  reinterpret_cast<unsigned char*>(m)[5] = 0x11;
  const auto bytes = read_back(m, 8);
  EXPECT_EQ(bytes[5], 0x11);
  CUdeviceptr base = 0;
  size_t size = 0;
  ASSERT_OK(cuMemGetAddressRange_v2(&base, &size, m + 100));
  EXPECT_EQ(base, m);
  EXPECT_EQ(size, n);
  CUdeviceptr h = 0;
  ASSERT_OK(cuMemAllocManaged(&h, 4096, CU_MEM_ATTACH_HOST));
  EXPECT_OK(cuMemFree_v2(h));
  EXPECT_OK(cuMemFree_v2(m));

  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAllocManaged(&m, n, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAllocManaged(&m, n, CU_MEM_ATTACH_SINGLE));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAllocManaged(&m, 0, CU_MEM_ATTACH_GLOBAL));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAllocManaged(nullptr, n, CU_MEM_ATTACH_GLOBAL));
  EXPECT_CU(CUDA_ERROR_OUT_OF_MEMORY, cuMemAllocManaged(&m, size_t{1} << 62, CU_MEM_ATTACH_GLOBAL));
}

TEST_F(Memory, DestroyingTheContextFreesEverything) {
  CUcontext c = nullptr;
  ASSERT_OK(cuCtxCreate_v2(&c, 0, dev));
  CUdeviceptr d = 0, m = 0;
  void* h = nullptr;
  ASSERT_OK(cuMemAlloc_v2(&d, size_t{8} << 20));
  ASSERT_OK(cuMemAllocManaged(&m, 4096, CU_MEM_ATTACH_GLOBAL));
  ASSERT_OK(cuMemAllocHost_v2(&h, 4096));
  std::vector<char> reg(4096);
  ASSERT_OK(cuMemHostRegister_v2(reg.data(), reg.size(), 0));
  ASSERT_OK(cuCtxDestroy_v2(c));
  // The handles died with the context (the fixture checks the memory came back).
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemFree_v2(d));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemFreeHost(h));
  EXPECT_CU(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, cuMemHostUnregister(reg.data()));
  // The range may be registered again.
  ASSERT_OK(cuMemHostRegister_v2(reg.data(), reg.size(), 0));
  EXPECT_OK(cuMemHostUnregister(reg.data()));
}

}  // namespace
}  // namespace conformance
