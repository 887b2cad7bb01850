// Launch validation and execution: bounds, shared memory, arguments, ordering, concurrency.
#include <atomic>
#include <thread>

#include "kernel_fixture.hpp"

namespace cudamux::mock::test {
namespace {

using MockLaunch = KernelTest;

const char* kKernels = R"(
extern "C" __global__ void __launch_bounds__(128) bounded(int* p) { p[threadIdx.x] = 1; }
extern "C" __global__ void add(int* p, int v) { p[blockIdx.x * blockDim.x + threadIdx.x] += v; }
extern "C" __global__ void none() {}
)";

TEST_F(MockLaunch, LaunchBoundsExceededIsOutOfResources) {
  auto m = build(kKernels);
  ASSERT_TRUE(m);
  auto* p = dev<int>(1024);
  auto q = queue();
  EXPECT_EQ(launch(*q, m->function("bounded"), {1}, {129}, 0, p), CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
  EXPECT_EQ(launch(*q, m->function("bounded"), {1}, {64, 2}, 0, p), CUDA_SUCCESS);
  EXPECT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
  int v = 0;
  ASSERT_TRUE(m->function("bounded")->attribute(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, v).ok());
  EXPECT_EQ(v, 128);
  ASSERT_TRUE(m->function("add")->attribute(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, v).ok());
  EXPECT_EQ(v, 1024);
}

TEST_F(MockLaunch, TooMuchDynamicSharedMemoryIsInvalidValue) {
  auto m = build(kKernels);
  ASSERT_TRUE(m);
  auto q = queue();
  EXPECT_EQ(launch(*q, m->function("none"), {1}, {1}, 228 * 1024), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(launch(*q, m->function("none"), {1}, {1}, 64 * 1024), CUDA_SUCCESS);
  EXPECT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
}

TEST_F(MockLaunch, MissingArgumentsAreInvalidValue) {
  auto m = build(kKernels);
  ASSERT_TRUE(m);
  auto q = queue();
  be::LaunchDesc d;
  d.function = m->function("add");
  EXPECT_EQ(cu(q->launch(d)), CUDA_ERROR_INVALID_VALUE);  // null args for a kernel with two
  int small = 0;
  d.args = &small;
  d.args_size = sizeof small;
  EXPECT_EQ(cu(q->launch(d)), CUDA_ERROR_INVALID_VALUE);
  be::LaunchDesc none;
  none.function = m->function("none");
  EXPECT_EQ(cu(q->launch(none)), CUDA_SUCCESS);  // no parameters: no buffer needed
  EXPECT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
}

TEST_F(MockLaunch, AttributesAnswerEveryFunctionAttribute) {
  auto m = build(kKernels);
  ASSERT_TRUE(m);
  auto* f = m->function("add");
  for (int a = 0; a < CU_FUNC_ATTRIBUTE_MAX; ++a) {
    int v = -12345;
    EXPECT_TRUE(f->attribute(static_cast<CUfunction_attribute>(a), v).ok()) << a;
    EXPECT_NE(v, -12345) << a;
  }
  int v = 0;
  EXPECT_EQ(cu(f->attribute(CU_FUNC_ATTRIBUTE_MAX, v)), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(MockLaunch, LaunchesAreAsynchronousAndOrdered) {
  auto m = build(kKernels);
  ASSERT_TRUE(m);
  constexpr int kN = 4096;
  auto* p = dev<int>(kN);
  auto q = queue();
  std::vector<int> zero(kN, 0), back(kN);
  ASSERT_EQ(cu(q->copy(copy_1d(p, zero.data(), kN * 4))), CUDA_SUCCESS);
  for (int i = 1; i <= 20; ++i)
    ASSERT_EQ(launch(*q, m->function("add"), {kN / 256}, {256}, 0, p, i), CUDA_SUCCESS);
  ASSERT_EQ(cu(q->copy(copy_1d(back.data(), p, kN * 4))), CUDA_SUCCESS);
  ASSERT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
  for (int i = 0; i < kN; ++i) ASSERT_EQ(back[i], 210) << i;
}

TEST_F(MockLaunch, ConcurrentQueuesLaunchInParallel) {
  auto m = build(kKernels);
  ASSERT_TRUE(m);
  constexpr int kQueues = 4, kN = 1 << 16;
  std::vector<int*> bufs;
  std::vector<std::unique_ptr<be::Queue>> qs;
  for (int i = 0; i < kQueues; ++i) {
    bufs.push_back(dev<int>(kN));
    std::fill(bufs.back(), bufs.back() + kN, 0);
    qs.push_back(queue());
  }
  std::vector<std::thread> threads;
  for (int i = 0; i < kQueues; ++i) {
    threads.emplace_back([&, i] {
      for (int r = 0; r < 10; ++r) EXPECT_EQ(launch(*qs[i], m->function("add"), {kN / 128}, {128}, 0, bufs[i], i + 1), CUDA_SUCCESS);
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < kQueues; ++i) {
    ASSERT_EQ(cu(qs[i]->synchronize()), CUDA_SUCCESS);
    for (int j = 0; j < kN; ++j) ASSERT_EQ(bufs[i][j], 10 * (i + 1));
  }
}

TEST_F(MockLaunch, ModuleOutlivesItsUnloadWhileLaunchesArePending) {
  auto m = build(kKernels);
  ASSERT_TRUE(m);
  auto* p = dev<int>(256);
  std::fill(p, p + 256, 0);
  auto q = queue();
  for (int i = 0; i < 50; ++i) ASSERT_EQ(launch(*q, m->function("add"), {1}, {256}, 0, p, 1), CUDA_SUCCESS);
  m.reset();  // the queued launches keep the code loaded
  ASSERT_EQ(cu(q->synchronize()), CUDA_SUCCESS);
  EXPECT_EQ(p[255], 50);
}

}  // namespace
}  // namespace cudamux::mock::test
