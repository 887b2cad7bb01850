// Queues (streams) and events: copies, fills, ordering, asynchrony, event semantics.
#include <atomic>
#include <chrono>
#include <cstring>
#include <numeric>
#include <thread>
#include <vector>

#include "mock_fixture.hpp"

namespace cudamux::mock::test {
namespace {

using namespace std::chrono_literals;
using MockQueue = MockTest;
using MockEvents = MockTest;

// Blocks a queue in a host function until opened: makes "not yet executed" observable.
struct Gate {
  std::atomic<bool> open{false};
  static void block(void* self) { static_cast<Gate*>(self)->open.wait(false); }
  void release() {
    open = true;
    open.notify_all();
  }
};

void set_flag(void* flag) { static_cast<std::atomic<int>*>(flag)->store(1); }

std::vector<std::uint8_t> pattern(std::size_t n, unsigned seed) {
  std::vector<std::uint8_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint8_t>((i * 131 + seed) % 251);
  return v;
}

TEST_F(MockQueue, Copy1DRoundTrip) {
  auto q = queue();
  const auto src = pattern(1 << 20, 1);
  std::vector<std::uint8_t> back(src.size());
  void* d = dalloc(src.size());
  ASSERT_EQ(cu(q->copy(copy_1d(d, src.data(), src.size()))), CUDA_SUCCESS);
  ASSERT_EQ(cu(q->copy(copy_1d(back.data(), d, src.size()))), CUDA_SUCCESS);
  ASSERT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
  EXPECT_EQ(back, src);
  std::vector<std::uint8_t> back2(src.size());
  ASSERT_EQ(cu(q->copy_sync(copy_1d(back2.data(), d, src.size()))), CUDA_SUCCESS);
  EXPECT_EQ(back2, src);
}

TEST_F(MockQueue, Copy2DWithPitchesLeavesPaddingAlone) {
  auto q = queue();
  constexpr std::size_t kWidth = 70;
  constexpr std::size_t kHeight = 13;
  constexpr std::size_t kSrcPitch = 100;
  constexpr std::size_t kDevPitch = 128;
  const auto src = pattern(kSrcPitch * kHeight, 3);
  auto* d = static_cast<std::uint8_t*>(dalloc(kDevPitch * kHeight));
  std::memset(d, 0xAB, kDevPitch * kHeight);
  be::CopyDesc c;
  c.dst = d;
  c.src = src.data();
  c.dst_kind = be::MemKind::device;
  c.dst_device = 0;
  c.width_bytes = kWidth;
  c.height = kHeight;
  c.dst_pitch = kDevPitch;
  c.src_pitch = kSrcPitch;
  ASSERT_EQ(cu(q->copy(c)), CUDA_SUCCESS);
  ASSERT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
  for (std::size_t y = 0; y < kHeight; ++y) {
    for (std::size_t x = 0; x < kDevPitch; ++x) {
      const auto want = x < kWidth ? src[y * kSrcPitch + x] : 0xAB;
      ASSERT_EQ(d[y * kDevPitch + x], want) << "x=" << x << " y=" << y;
    }
  }
}

TEST_F(MockQueue, Copy3DWithPitchesAndSlices) {
  auto q = queue();
  constexpr std::size_t kW = 33, kH = 7, kD = 5;
  constexpr std::size_t kSP = 40, kSS = kSP * 9;  // source: rows 40 apart, slices of 9 rows
  constexpr std::size_t kDP = 64, kDS = kDP * 8;
  const auto src = pattern(kSS * kD, 5);
  std::vector<std::uint8_t> dst(kDS * kD, 0xCD);
  auto* dev = dalloc(kDS * kD);
  be::CopyDesc c;
  c.width_bytes = kW;
  c.height = kH;
  c.depth = kD;
  // Host -> device with the destination layout, then device -> host tightly: checks both.
  c.dst = dev;
  c.src = src.data();
  c.dst_pitch = kDP;
  c.dst_slice = kDS;
  c.src_pitch = kSP;
  c.src_slice = kSS;
  ASSERT_EQ(cu(q->copy(c)), CUDA_SUCCESS);
  c.dst = dst.data();
  c.src = dev;
  c.src_pitch = kDP;
  c.src_slice = kDS;
  c.dst_pitch = kW;
  c.dst_slice = kW * kH;
  ASSERT_EQ(cu(q->copy_sync(c)), CUDA_SUCCESS);
  for (std::size_t z = 0; z < kD; ++z) {
    for (std::size_t y = 0; y < kH; ++y) {
      for (std::size_t x = 0; x < kW; ++x) {
        ASSERT_EQ(dst[z * kW * kH + y * kW + x], src[z * kSS + y * kSP + x])
            << x << "," << y << "," << z;
      }
    }
  }
  EXPECT_EQ(dst[kW * kH * kD], 0xCD) << "copy wrote past the packed box";
}

TEST_F(MockQueue, Fills) {
  auto q = queue();
  constexpr std::size_t kN = 1001;
  auto* d = static_cast<std::byte*>(dalloc(kN * 4 + 256));
  std::memset(d, 0, kN * 4 + 256);
  ASSERT_EQ(cu(q->fill(fill_1d(d, 1, 0x1234A5, kN))), CUDA_SUCCESS);  // only the low byte counts
  ASSERT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
  for (std::size_t i = 0; i < kN; ++i) ASSERT_EQ(std::to_integer<int>(d[i]), 0xA5);
  EXPECT_EQ(std::to_integer<int>(d[kN]), 0);

  ASSERT_EQ(cu(q->fill(fill_1d(d, 2, 0xBEEF, kN))), CUDA_SUCCESS);
  ASSERT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
  for (std::size_t i = 0; i < kN; ++i) {
    std::uint16_t v = 0;
    std::memcpy(&v, d + 2 * i, 2);
    ASSERT_EQ(v, 0xBEEF);
  }
  for (std::uint32_t value : {0x12345678u, 0xFFFFFFFFu, 0u}) {
    ASSERT_EQ(cu(q->fill(fill_1d(d, 4, value, kN))), CUDA_SUCCESS);
    ASSERT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
    for (std::size_t i = 0; i < kN; ++i) {
      std::uint32_t v = 1;
      std::memcpy(&v, d + 4 * i, 4);
      ASSERT_EQ(v, value) << i;
    }
  }
  EXPECT_EQ(cu(q->fill(fill_1d(d, 3, 0, kN))), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(MockQueue, Fill2DHonoursPitch) {
  auto q = queue();
  constexpr std::size_t kPitch = 512, kW = 100, kH = 9;
  for (unsigned elem : {1u, 2u, 4u}) {
    auto* d = static_cast<std::uint8_t*>(dalloc(kPitch * kH));
    std::memset(d, 0xEE, kPitch * kH);
    be::FillDesc f = fill_1d(d, elem, 0x01020304u, kW);
    f.height = kH;
    f.pitch = kPitch;
    ASSERT_EQ(cu(q->fill(f)), CUDA_SUCCESS);
    ASSERT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
    for (std::size_t y = 0; y < kH; ++y) {
      for (std::size_t x = 0; x < kPitch; ++x) {
        const std::size_t e = x / elem;
        // Little-endian bytes of the low elem bytes of 0x01020304.
        const std::uint8_t want =
            e < kW ? static_cast<std::uint8_t>(0x01020304u >> (8 * (x % elem))) : 0xEE;
        ASSERT_EQ(d[y * kPitch + x], want) << "elem " << elem << " x=" << x << " y=" << y;
      }
    }
  }
}

TEST_F(MockQueue, ManyOperationsRunInSubmissionOrder) {
  auto q = queue();
  constexpr std::uint32_t kOps = 2000;
  auto* scratch = dalloc(4096);
  std::vector<std::uint32_t> out(kOps * 1024);
  // Each fill overwrites the scratch buffer the previous copy read: any reordering or
  // overlap shows up as a wrong value in `out`.
  for (std::uint32_t i = 0; i < kOps; ++i) {
    ASSERT_EQ(cu(q->fill(fill_1d(scratch, 4, i, 1024))), CUDA_SUCCESS);
    ASSERT_EQ(cu(q->copy(copy_1d(out.data() + i * 1024, scratch, 4096))), CUDA_SUCCESS);
  }
  ASSERT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
  for (std::uint32_t i = 0; i < kOps; ++i) {
    for (std::uint32_t j = 0; j < 1024; ++j) ASSERT_EQ(out[i * 1024 + j], i) << "op " << i;
  }
}

TEST_F(MockQueue, HostFunctionsRunInOrderOffTheCallingThread) {
  auto q = queue();
  struct Log {
    std::vector<int> order;
    std::thread::id thread;
    int next = 0;
  } log;
  struct Step {
    Log* log;
    int index;
    static void run(void* p) {
      auto* s = static_cast<Step*>(p);
      s->log->order.push_back(s->index);
      s->log->thread = std::this_thread::get_id();
    }
  };
  std::vector<Step> steps;
  for (int i = 0; i < 100; ++i) steps.push_back({&log, i});
  for (auto& s : steps) ASSERT_EQ(cu(q->host_function(&Step::run, &s)), CUDA_SUCCESS);
  ASSERT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
  std::vector<int> want(100);
  std::iota(want.begin(), want.end(), 0);
  EXPECT_EQ(log.order, want);
  EXPECT_NE(log.thread, std::this_thread::get_id());
  EXPECT_EQ(cu(q->host_function(nullptr, nullptr)), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(MockQueue, WorkIsAsynchronousAndQueryReflectsIt) {
  auto q = queue();
  EXPECT_EQ(cu(q->query()), CUDA_SUCCESS);
  Gate gate;
  std::atomic<int> flag{0};
  ASSERT_EQ(cu(q->host_function(&Gate::block, &gate)), CUDA_SUCCESS);
  ASSERT_EQ(cu(q->host_function(&set_flag, &flag)), CUDA_SUCCESS);
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(cu(q->query()), CUDA_ERROR_NOT_READY);
  EXPECT_EQ(flag.load(), 0);
  gate.release();
  ASSERT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
  EXPECT_EQ(flag.load(), 1);
  EXPECT_EQ(cu(q->query()), CUDA_SUCCESS);
}

TEST_F(MockQueue, CopySyncWaitsForEarlierWork) {
  auto q = queue();
  Gate gate;
  auto* d = dalloc(4096);
  std::vector<std::uint32_t> out(1024, 0);
  ASSERT_EQ(cu(q->host_function(&Gate::block, &gate)), CUDA_SUCCESS);
  ASSERT_EQ(cu(q->fill(fill_1d(d, 4, 77, 1024))), CUDA_SUCCESS);
  std::thread opener([&] {
    std::this_thread::sleep_for(30ms);
    gate.release();
  });
  ASSERT_EQ(cu(q->copy_sync(copy_1d(out.data(), d, 4096))), CUDA_SUCCESS);  // must not overtake
  opener.join();
  EXPECT_EQ(out, std::vector<std::uint32_t>(1024, 77));
}

TEST_F(MockQueue, DestructionDrains) {
  std::atomic<int> count{0};
  {
    auto q = queue();
    Gate gate;
    ASSERT_EQ(cu(q->host_function(&Gate::block, &gate)), CUDA_SUCCESS);
    for (int i = 0; i < 100; ++i) {
      ASSERT_EQ(cu(q->host_function([](void* c) { ++*static_cast<std::atomic<int>*>(c); }, &count)),
                CUDA_SUCCESS);
    }
    std::thread opener([&] {
      std::this_thread::sleep_for(20ms);
      gate.release();
    });
    q.reset();
    opener.join();
  }
  EXPECT_EQ(count.load(), 100);
}

TEST_F(MockQueue, ContextSynchronizeWaitsForAllQueues) {
  auto q1 = queue();
  auto q2 = queue();
  std::atomic<int> a{0};
  std::atomic<int> b{0};
  auto slow = [](void* f) {
    std::this_thread::sleep_for(30ms);
    set_flag(f);
  };
  ASSERT_EQ(cu(q1->host_function(slow, &a)), CUDA_SUCCESS);
  ASSERT_EQ(cu(q2->host_function(slow, &b)), CUDA_SUCCESS);
  ASSERT_EQ(cu(ctx->synchronize()), CUDA_SUCCESS);
  EXPECT_EQ(a.load(), 1);
  EXPECT_EQ(b.load(), 1);
}

TEST_F(MockEvents, NeverRecordedIsComplete) {
  auto e = event();
  EXPECT_EQ(cu(e->query()), CUDA_SUCCESS);
  EXPECT_EQ(cu(e->synchronize()), CUDA_SUCCESS);
  auto q = queue();
  std::atomic<int> flag{0};
  ASSERT_EQ(cu(q->wait(*e)), CUDA_SUCCESS);  // nothing to wait for
  ASSERT_EQ(cu(q->host_function(&set_flag, &flag)), CUDA_SUCCESS);
  ASSERT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
  EXPECT_EQ(flag.load(), 1);
  float ms = 0;
  auto e2 = event();
  EXPECT_NE(cu(e->elapsed_since(*e2, ms)), CUDA_SUCCESS);
}

TEST_F(MockEvents, RecordCompletesInQueueOrder) {
  auto q = queue();
  auto e = event();
  Gate gate;
  ASSERT_EQ(cu(q->host_function(&Gate::block, &gate)), CUDA_SUCCESS);
  ASSERT_EQ(cu(q->record(*e)), CUDA_SUCCESS);
  std::this_thread::sleep_for(10ms);
  EXPECT_EQ(cu(e->query()), CUDA_ERROR_NOT_READY);
  gate.release();
  ASSERT_EQ(cu(e->synchronize()), CUDA_SUCCESS);
  EXPECT_EQ(cu(e->query()), CUDA_SUCCESS);
}

TEST_F(MockEvents, ElapsedTimeIsPlausible) {
  auto q = queue();
  auto start = event();
  auto stop = event();
  ASSERT_EQ(cu(q->record(*start)), CUDA_SUCCESS);
  ASSERT_EQ(cu(q->host_function([](void*) { std::this_thread::sleep_for(25ms); }, nullptr)),
            CUDA_SUCCESS);
  ASSERT_EQ(cu(q->record(*stop)), CUDA_SUCCESS);
  float ms = -1;
  EXPECT_EQ(cu(stop->elapsed_since(*start, ms)), CUDA_ERROR_NOT_READY);  // still sleeping
  ASSERT_EQ(cu(stop->synchronize()), CUDA_SUCCESS);
  ASSERT_EQ(cu(stop->elapsed_since(*start, ms)), CUDA_SUCCESS);
  EXPECT_GE(ms, 24.0f);
  EXPECT_LT(ms, 5000.0f);
  ASSERT_EQ(cu(start->elapsed_since(*start, ms)), CUDA_SUCCESS);
  EXPECT_EQ(ms, 0.0f);
  ASSERT_EQ(cu(start->elapsed_since(*stop, ms)), CUDA_SUCCESS);
  EXPECT_LE(ms, -24.0f);  // CUDA reports negative times for reversed events too
}

TEST_F(MockEvents, ElapsedNeedsTimingAndCompletion) {
  auto q = queue();
  auto timed = event();
  auto untimed = event(CU_EVENT_DISABLE_TIMING | CU_EVENT_BLOCKING_SYNC);
  ASSERT_EQ(cu(q->record(*timed)), CUDA_SUCCESS);
  ASSERT_EQ(cu(q->record(*untimed)), CUDA_SUCCESS);
  ASSERT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
  float ms = 0;
  EXPECT_EQ(cu(untimed->elapsed_since(*timed, ms)), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cu(timed->elapsed_since(*untimed, ms)), CUDA_ERROR_INVALID_HANDLE);
  Gate gate;
  auto late = event();
  ASSERT_EQ(cu(q->host_function(&Gate::block, &gate)), CUDA_SUCCESS);
  ASSERT_EQ(cu(q->record(*late)), CUDA_SUCCESS);
  EXPECT_EQ(cu(late->elapsed_since(*timed, ms)), CUDA_ERROR_NOT_READY);
  gate.release();
  ASSERT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
  EXPECT_EQ(cu(late->elapsed_since(*timed, ms)), CUDA_SUCCESS);
}

TEST_F(MockEvents, WaitBlocksAnotherQueueUntilTheRecordRuns) {
  auto producer = queue();
  auto consumer = queue();
  auto e = event();
  Gate gate;
  std::atomic<int> flag{0};
  ASSERT_EQ(cu(producer->host_function(&Gate::block, &gate)), CUDA_SUCCESS);
  ASSERT_EQ(cu(producer->record(*e)), CUDA_SUCCESS);
  ASSERT_EQ(cu(consumer->wait(*e)), CUDA_SUCCESS);
  ASSERT_EQ(cu(consumer->host_function(&set_flag, &flag)), CUDA_SUCCESS);
  std::this_thread::sleep_for(30ms);
  EXPECT_EQ(flag.load(), 0) << "consumer ran past the wait";
  EXPECT_EQ(cu(consumer->query()), CUDA_ERROR_NOT_READY);
  gate.release();
  ASSERT_EQ(cu(consumer->synchronize()), CUDA_SUCCESS);
  EXPECT_EQ(flag.load(), 1);
}

TEST_F(MockEvents, WaitTargetsTheRecordSubmittedBeforeIt) {
  auto blocked = queue();
  auto idle = queue();
  auto consumer = queue();
  auto e = event();
  Gate gate;
  std::atomic<int> flag{0};
  ASSERT_EQ(cu(blocked->host_function(&Gate::block, &gate)), CUDA_SUCCESS);
  ASSERT_EQ(cu(blocked->record(*e)), CUDA_SUCCESS);  // record #1: held up
  ASSERT_EQ(cu(consumer->wait(*e)), CUDA_SUCCESS);   // waits for #1 ...
  ASSERT_EQ(cu(consumer->host_function(&set_flag, &flag)), CUDA_SUCCESS);
  ASSERT_EQ(cu(idle->record(*e)), CUDA_SUCCESS);  // ... even after #2 completes at once
  ASSERT_EQ(cu(idle->synchronize()), CUDA_SUCCESS);
  EXPECT_EQ(cu(e->query()), CUDA_SUCCESS) << "the event's state is its last record's";
  std::this_thread::sleep_for(30ms);
  EXPECT_EQ(flag.load(), 0) << "re-recording retargeted an earlier wait";
  gate.release();
  ASSERT_EQ(cu(consumer->synchronize()), CUDA_SUCCESS);
  EXPECT_EQ(flag.load(), 1);
}

TEST_F(MockEvents, WaitIgnoresRecordsSubmittedAfterIt) {
  auto blocked = queue();
  auto consumer = queue();
  auto e = event();
  ASSERT_EQ(cu(blocked->record(*e)), CUDA_SUCCESS);
  ASSERT_EQ(cu(e->synchronize()), CUDA_SUCCESS);
  ASSERT_EQ(cu(consumer->wait(*e)), CUDA_SUCCESS);  // the completed record: no wait
  Gate gate;
  ASSERT_EQ(cu(blocked->host_function(&Gate::block, &gate)), CUDA_SUCCESS);
  ASSERT_EQ(cu(blocked->record(*e)), CUDA_SUCCESS);  // later record, held up
  std::atomic<int> flag{0};
  ASSERT_EQ(cu(consumer->host_function(&set_flag, &flag)), CUDA_SUCCESS);
  ASSERT_EQ(cu(consumer->synchronize()),
            CUDA_SUCCESS);  // would hang if it waited for the new record
  EXPECT_EQ(flag.load(), 1);
  EXPECT_EQ(cu(e->query()), CUDA_ERROR_NOT_READY);
  gate.release();
  ASSERT_EQ(cu(e->synchronize()), CUDA_SUCCESS);
}

TEST_F(MockEvents, EventMayBeDestroyedWithRecordsPending) {
  auto q = queue();
  Gate gate;
  ASSERT_EQ(cu(q->host_function(&Gate::block, &gate)), CUDA_SUCCESS);
  {
    auto e = event();
    ASSERT_EQ(cu(q->record(*e)), CUDA_SUCCESS);
  }
  gate.release();
  EXPECT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
}

}  // namespace
}  // namespace cudamux::mock::test
