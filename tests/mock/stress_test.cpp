// Many host threads at once: results must stay exact (TSan runs this too).
#include <atomic>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "mock_fixture.hpp"

namespace cudamux::mock::test {
namespace {

constexpr int kThreads = 8;
using MockStress = MockTest;

TEST_F(MockStress, ThreadsWithOwnQueues) {
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::unique_ptr<be::Queue> q;
      std::unique_ptr<be::Event> e;
      if (ctx->create_queue(0, 0, q).native != 0 || ctx->create_event(0, e).native != 0) {
        ++failures;
        return;
      }
      constexpr std::size_t kN = 4096;
      std::vector<std::uint32_t> host(kN);
      std::vector<std::uint32_t> back(kN);
      for (std::uint32_t i = 0; i < 150; ++i) {
        void* d = nullptr;
        if (ctx->allocate(kN * 4, &d).native != 0) {
          ++failures;
          return;
        }
        const std::uint32_t v = (static_cast<std::uint32_t>(t) << 24) | i;
        q->fill(fill_1d(d, 4, v, kN));
        q->copy(copy_1d(host.data(), d, kN * 4));
        q->record(*e);
        e->synchronize();
        for (auto x : host) failures += x != v;
        host[7] = ~v;  // host -> device -> host through copy_sync
        q->copy_sync(copy_1d(d, host.data(), kN * 4));
        q->copy_sync(copy_1d(back.data(), d, kN * 4));
        failures += back != host;
        if (ctx->free(d).native != 0) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  std::size_t f = 0, total = 0;
  ASSERT_EQ(cu(backend->devices().memory_info(0, f, total)), CUDA_SUCCESS);
  EXPECT_EQ(f, total) << "leaked or double-counted allocations";
}

TEST_F(MockStress, ConcurrentAllocFree) {
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t));
      std::vector<std::pair<std::uint8_t*, std::size_t>> mine;
      for (int i = 0; i < 3000; ++i) {
        if (mine.empty() || rng() % 3 != 0) {
          const std::size_t n = 1 + rng() % 65536;
          void* p = nullptr;
          if (ctx->allocate(n, &p).native != 0) continue;  // OOM is fine under pressure
          std::memset(p, t, n);  // another thread's block overlapping ours would clobber this
          mine.emplace_back(static_cast<std::uint8_t*>(p), n);
        } else {
          const auto k = rng() % mine.size();
          auto [p, n] = mine[k];
          failures += p[0] != t || p[n - 1] != t;
          failures += ctx->free(p).native != 0;
          mine.erase(mine.begin() + static_cast<std::ptrdiff_t>(k));
        }
      }
      for (auto [p, n] : mine) {
        failures += p[n / 2] != t;
        failures += ctx->free(p).native != 0;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  std::size_t f = 0, total = 0;
  ASSERT_EQ(cu(backend->devices().memory_info(0, f, total)), CUDA_SUCCESS);
  EXPECT_EQ(f, total);
  void* all = dalloc(total);  // everything coalesced again
  EXPECT_NE(all, nullptr);
  EXPECT_EQ(cu(ctx->free(all)), CUDA_SUCCESS);
}

TEST_F(MockStress, ThreadsSharingOneQueueKeepTheirOwnOrder) {
  auto q = queue();
  std::atomic<int> failures{0};
  std::atomic<int> callbacks{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      void* d = nullptr;
      if (ctx->allocate(1024, &d).native != 0) {
        ++failures;
        return;
      }
      std::vector<std::uint32_t> out(256);
      for (std::uint32_t i = 0; i < 300; ++i) {
        const std::uint32_t v = (static_cast<std::uint32_t>(t) << 16) | i;
        q->fill(fill_1d(d, 4, v, 256));
        q->host_function([](void* c) { ++*static_cast<std::atomic<int>*>(c); }, &callbacks);
        q->copy_sync(copy_1d(out.data(), d, 1024));  // must see this thread's fill
        for (auto x : out) failures += x != v;
      }
      failures += ctx->free(d).native != 0;
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(callbacks.load(), kThreads * 300);
}

TEST_F(MockStress, CrossQueueEventPingPong) {
  // Two queues hand a buffer back and forth through events; each step increments it.
  auto a = queue();
  auto b = queue();
  auto ea = event();
  auto eb = event();
  std::uint64_t counter = 0;
  auto inc = [](void* c) { ++*static_cast<std::uint64_t*>(c); };
  for (int i = 0; i < 500; ++i) {
    a->wait(*eb);
    a->host_function(inc, &counter);
    a->record(*ea);
    b->wait(*ea);
    b->host_function(inc, &counter);
    b->record(*eb);
  }
  ASSERT_EQ(cu(eb->synchronize()), CUDA_SUCCESS);
  ASSERT_EQ(cu(a->synchronize()), CUDA_SUCCESS);
  EXPECT_EQ(counter, 1000u);  // TSan flags this if the waits did not order the increments
}

}  // namespace
}  // namespace cudamux::mock::test
