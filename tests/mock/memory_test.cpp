// Device, pinned, registered and managed memory.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "mock_fixture.hpp"

namespace cudamux::mock::test {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr std::size_t kCapacity = 256 * kMiB;  // MockTest's configured memory

using MockMemory = MockTest;

bool inside(const void* p, const void* base, std::size_t size) {
  const auto* b = static_cast<const std::byte*>(base);
  const auto* q = static_cast<const std::byte*>(p);
  return q >= b && q < b + size;
}

std::size_t free_bytes(be::Backend& b, int ordinal = 0) {
  std::size_t f = 0;
  std::size_t t = 0;
  EXPECT_EQ(cu(b.devices().memory_info(ordinal, f, t)), CUDA_SUCCESS);
  return f;
}

TEST_F(MockMemory, AllocationsAreAlignedDisjointAndUsable) {
  std::mt19937 rng(42);
  std::vector<std::pair<std::byte*, std::size_t>> blocks;
  for (int i = 0; i < 500; ++i) {
    const std::size_t n = 1 + rng() % 20000;
    auto* p = static_cast<std::byte*>(dalloc(n));
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 256, 0u);
    std::memset(p, i & 0xFF, n);  // committed and writable
    blocks.emplace_back(p, n);
  }
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const auto [p, n] = blocks[i];
    EXPECT_EQ(p[0], std::byte(i & 0xFF));
    EXPECT_EQ(p[n - 1], std::byte(i & 0xFF)) << "a later allocation overlapped block " << i;
  }
  std::sort(blocks.begin(), blocks.end());
  for (std::size_t i = 1; i < blocks.size(); ++i) {
    EXPECT_GE(blocks[i].first, blocks[i - 1].first + blocks[i - 1].second);
  }
  for (auto [p, n] : blocks) EXPECT_EQ(cu(ctx->free(p)), CUDA_SUCCESS);
  EXPECT_EQ(free_bytes(*backend), kCapacity);
}

TEST_F(MockMemory, DeviceRangeNeverOverlapsHostMemory) {
  void* all = dalloc(kCapacity);  // the whole device: any host pointer inside would be a bug
  ASSERT_NE(all, nullptr);
  int on_stack = 0;
  std::vector<void*> heap;
  for (std::size_t n :
       {std::size_t{16}, std::size_t{4096}, std::size_t{1} << 20, std::size_t{64} << 20}) {
    heap.push_back(std::malloc(n));  // small ones from brk, big ones mmap'd
    EXPECT_FALSE(inside(heap.back(), all, kCapacity));
  }
  EXPECT_FALSE(inside(&on_stack, all, kCapacity));
  void* pinned = nullptr;
  ASSERT_EQ(cu(ctx->allocate_host(kMiB, 0, &pinned)), CUDA_SUCCESS);
  EXPECT_FALSE(inside(pinned, all, kCapacity));
  for (void* p : heap) std::free(p);
  EXPECT_EQ(cu(ctx->free_host(pinned)), CUDA_SUCCESS);
  EXPECT_EQ(cu(ctx->free(all)), CUDA_SUCCESS);
}

TEST_F(MockMemory, OutOfMemoryAtConfiguredLimit) {
  void* p = nullptr;
  EXPECT_EQ(cu(ctx->allocate(kCapacity + 1, &p)), CUDA_ERROR_OUT_OF_MEMORY);
  void* a = dalloc(kCapacity - 256);
  EXPECT_EQ(free_bytes(*backend), 256u);
  void* b = dalloc(200);  // rounds to the last 256 bytes
  EXPECT_EQ(free_bytes(*backend), 0u);
  EXPECT_EQ(cu(ctx->allocate(1, &p)), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(cu(ctx->allocate_managed(1, 0, &p)), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(cu(ctx->free(b)), CUDA_SUCCESS);
  EXPECT_EQ(cu(ctx->allocate(1, &p)), CUDA_SUCCESS);
  EXPECT_EQ(cu(ctx->free(p)), CUDA_SUCCESS);
  EXPECT_EQ(cu(ctx->free(a)), CUDA_SUCCESS);
  EXPECT_EQ(cu(ctx->allocate(0, &p)), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(MockMemory, FreeCoalescesSoTheWholeDeviceCanBeAllocatedAgain) {
  std::mt19937 rng(7);
  for (int round = 0; round < 3; ++round) {
    std::vector<void*> blocks;
    for (;;) {  // fill the device with mixed sizes
      void* p = nullptr;
      const auto r = cu(ctx->allocate(256 * (1 + rng() % 4096), &p));
      if (r == CUDA_ERROR_OUT_OF_MEMORY) break;
      ASSERT_EQ(r, CUDA_SUCCESS);
      blocks.push_back(p);
    }
    ASSERT_GT(blocks.size(), 100u);
    std::shuffle(blocks.begin(), blocks.end(), rng);
    for (void* p : blocks) ASSERT_EQ(cu(ctx->free(p)), CUDA_SUCCESS);
    EXPECT_EQ(free_bytes(*backend), kCapacity);
    void* all = dalloc(kCapacity);
    ASSERT_NE(all, nullptr) << "free blocks were not coalesced";
    ASSERT_EQ(cu(ctx->free(all)), CUDA_SUCCESS);
  }
}

TEST_F(MockMemory, BadFreesAreRejected) {
  auto* p = static_cast<std::byte*>(dalloc(4096));
  int host = 0;
  EXPECT_EQ(cu(ctx->free(nullptr)), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cu(ctx->free(&host)), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cu(ctx->free(p + 256)), CUDA_ERROR_INVALID_VALUE);    // interior pointer
  EXPECT_EQ(cu(ctx->free_managed(p)), CUDA_ERROR_INVALID_VALUE);  // wrong kind
  EXPECT_EQ(cu(ctx->free_host(p)), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cu(ctx->free(p)), CUDA_SUCCESS);
  EXPECT_EQ(cu(ctx->free(p)), CUDA_ERROR_INVALID_VALUE);  // double free
  EXPECT_EQ(free_bytes(*backend), kCapacity);
}

TEST_F(MockMemory, ManagedMemoryIsDeviceMemoryTheHostCanTouch) {
  void* m = nullptr;
  ASSERT_EQ(cu(ctx->allocate_managed(10000, CU_MEM_ATTACH_GLOBAL, &m)), CUDA_SUCCESS);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(m) % 256, 0u);
  EXPECT_EQ(free_bytes(*backend), kCapacity - 10240);
  std::memset(m, 0x5A, 10000);
  EXPECT_EQ(static_cast<unsigned char*>(m)[9999], 0x5A);
  EXPECT_EQ(cu(ctx->free(m)), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cu(ctx->free_managed(m)), CUDA_SUCCESS);
  EXPECT_EQ(free_bytes(*backend), kCapacity);
}

TEST_F(MockMemory, PinnedHostMemory) {
  void* h = nullptr;
  ASSERT_EQ(cu(ctx->allocate_host(10000, CU_MEMHOSTALLOC_DEVICEMAP, &h)), CUDA_SUCCESS);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(h) % 4096, 0u);
  std::memset(h, 1, 10000);
  void* d = nullptr;
  ASSERT_EQ(cu(ctx->host_device_pointer(static_cast<char*>(h) + 100, &d)), CUDA_SUCCESS);
  EXPECT_EQ(d, static_cast<char*>(h) + 100);
  int pageable = 0;
  EXPECT_EQ(cu(ctx->host_device_pointer(&pageable, &d)), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cu(ctx->free_host(static_cast<char*>(h) + 1)), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cu(ctx->free(h)), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cu(ctx->free_host(h)), CUDA_SUCCESS);
  EXPECT_EQ(cu(ctx->free_host(h)), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cu(ctx->host_device_pointer(h, &d)), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(MockMemory, RegisteredHostMemory) {
  std::vector<char> buf(100000);
  void* d = nullptr;
  EXPECT_EQ(cu(ctx->host_device_pointer(buf.data() + 50, &d)), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(cu(ctx->register_host(buf.data(), buf.size(), 0)), CUDA_SUCCESS);
  ASSERT_EQ(cu(ctx->host_device_pointer(buf.data() + 50, &d)), CUDA_SUCCESS);
  EXPECT_EQ(d, buf.data() + 50);
  EXPECT_EQ(cu(ctx->register_host(buf.data() + 10, 10, 0)),
            CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
  EXPECT_EQ(cu(ctx->unregister_host(buf.data() + 10)), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
  EXPECT_EQ(cu(ctx->free_host(buf.data())), CUDA_ERROR_INVALID_VALUE);  // registered, not ours
  EXPECT_EQ(cu(ctx->unregister_host(buf.data())), CUDA_SUCCESS);
  EXPECT_EQ(cu(ctx->unregister_host(buf.data())), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
  EXPECT_EQ(cu(ctx->host_device_pointer(buf.data() + 50, &d)), CUDA_ERROR_INVALID_VALUE);
}

TEST(MockMemoryMulti, DevicesHaveSeparateRangesAndBudgets) {
  auto b = make_backend("[mock]\ndevices = 2\nmemory = 1048576\n");
  std::unique_ptr<be::DeviceContext> c0;
  std::unique_ptr<be::DeviceContext> c1;
  ASSERT_EQ(cu(b->open_context(0, 0, c0)), CUDA_SUCCESS);
  ASSERT_EQ(cu(b->open_context(1, 0, c1)), CUDA_SUCCESS);
  EXPECT_EQ(c1->ordinal(), 1);
  void* p0 = nullptr;
  void* p1 = nullptr;
  ASSERT_EQ(cu(c0->allocate(1048576, &p0)), CUDA_SUCCESS);
  ASSERT_EQ(cu(c1->allocate(1048576, &p1)), CUDA_SUCCESS);  // device 1 has its own budget
  EXPECT_FALSE(inside(p1, p0, 1048576));
  EXPECT_FALSE(inside(p0, p1, 1048576));
  EXPECT_EQ(free_bytes(*b, 0), 0u);
  // Contexts of one device share its memory, as CUDA allocations are device-wide.
  std::unique_ptr<be::DeviceContext> c0b;
  ASSERT_EQ(cu(b->open_context(0, 0, c0b)), CUDA_SUCCESS);
  EXPECT_EQ(cu(c0b->free(p0)), CUDA_SUCCESS);
  EXPECT_EQ(cu(c1->free(p1)), CUDA_SUCCESS);
}

}  // namespace
}  // namespace cudamux::mock::test
