// Contexts: creation variants, the per-thread stack, queries, limits, primary contexts.
#include <future>
#include <set>
#include <thread>

#include "conformance.hpp"

namespace conformance {
namespace {

using Context = Driver;
using PrimaryContext = Driver;

CUcontext current() {
  CUcontext c = reinterpret_cast<CUcontext>(0x1);
  EXPECT_OK(cuCtxGetCurrent(&c));
  return c;
}

// Runs `fn` on a new host thread (which starts with no current context) and waits.
template <class F>
void on_other_thread(F&& fn) {
  std::thread t(std::forward<F>(fn));
  t.join();
}

TEST_F(Context, CreateVariantsPushAndDestroy) {
  CUDAMUX_SKIP_ON_ORACLE(
      "the legacy cuCtxCreate (v1) entry point answers CUDA_ERROR_OUT_OF_MEMORY on NVIDIA's driver "
      "580 (H200); cudamux keeps it an alias of the current one");
  CUcontext c1 = nullptr, c2 = nullptr, c3 = nullptr, c4 = nullptr, c5 = nullptr;
  ASSERT_OK(cuCtxCreate(&c1, 0, dev));
  EXPECT_EQ(current(), c1);
  ASSERT_OK(cuCtxCreate_v2(&c2, CU_CTX_SCHED_SPIN, dev));
  EXPECT_EQ(current(), c2);
  ASSERT_OK(cuCtxCreate_v3(&c3, nullptr, 0, CU_CTX_SCHED_YIELD, dev));
  EXPECT_EQ(current(), c3);
  ASSERT_OK(cuCtxCreate_v4(&c4, nullptr, CU_CTX_SCHED_BLOCKING_SYNC, dev));
  EXPECT_EQ(current(), c4);
  CUctxCreateParams params{};
  ASSERT_OK(cuCtxCreate_v4(&c5, &params, 0, dev));
  EXPECT_EQ(current(), c5);
  const std::set<CUcontext> all{ctx, c1, c2, c3, c4, c5};
  EXPECT_EQ(all.size(), 6u) << "every context has its own handle";
  // Destroying the current context pops it: the one below becomes current.
  EXPECT_OK(cuCtxDestroy_v2(c5));
  EXPECT_EQ(current(), c4);
  EXPECT_OK(cuCtxDestroy(c4));
  EXPECT_EQ(current(), c3);
  // Destroying a context below the top leaves it there, a stale handle until popped (NVIDIA's
  // driver 580, H200, build-gsamples/stackprobe2.c).
  EXPECT_OK(cuCtxDestroy_v2(c2));
  EXPECT_EQ(current(), c3);
  EXPECT_OK(cuCtxPopCurrent_v2(nullptr));
  EXPECT_EQ(current(), c2) << "the destroyed c2 stays on the stack";
  EXPECT_OK(cuCtxPopCurrent_v2(nullptr));
  EXPECT_EQ(current(), c1);
  EXPECT_OK(cuCtxDestroy_v2(c3));  // no longer on the stack
  EXPECT_OK(cuCtxDestroy_v2(c1));  // the top: popped
  EXPECT_EQ(current(), ctx);
}

// Destroying a context pops it only where it is the top of the thread's stack, once; entries of
// it further down stay there as stale handles (NVIDIA's driver 580 on an H200,
// build-gsamples/stackprobe2.c of 2026-11-27).
TEST_F(Context, DestroyPopsTheContextOnlyFromTheTop) {
  CUcontext c = nullptr;
  ASSERT_OK(cuCtxCreate_v2(&c, 0, dev));  // [ctx, c]
  ASSERT_OK(cuCtxPushCurrent_v2(ctx));    // [ctx, c, ctx]
  ASSERT_OK(cuCtxPushCurrent_v2(c));      // [ctx, c, ctx, c]
  ASSERT_OK(cuCtxDestroy_v2(c));          // [ctx, c (destroyed), ctx]
  EXPECT_EQ(current(), ctx);
  CUcontext popped = nullptr;
  ASSERT_OK(cuCtxPopCurrent_v2(&popped));
  EXPECT_EQ(popped, ctx);
  EXPECT_EQ(current(), c) << "the destroyed context stays below the top";
  EXPECT_NE(cuCtxSynchronize(), CUDA_SUCCESS) << "a destroyed context does no work";
  ASSERT_OK(cuCtxPopCurrent_v2(&popped));
  EXPECT_EQ(popped, c);
  EXPECT_EQ(current(), ctx);
  // Twice on top: popped once.
  CUcontext d = nullptr;
  ASSERT_OK(cuCtxCreate_v2(&d, 0, dev));  // [ctx, d]
  ASSERT_OK(cuCtxPushCurrent_v2(d));      // [ctx, d, d]
  ASSERT_OK(cuCtxDestroy_v2(d));          // [ctx, d (destroyed)]
  EXPECT_EQ(current(), d);
  ASSERT_OK(cuCtxPopCurrent_v2(&popped));
  EXPECT_EQ(popped, d);
  EXPECT_EQ(current(), ctx);
}

TEST_F(Context, CreateRejectsBadArguments) {
  CUcontext c = nullptr;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuCtxCreate_v2(nullptr, 0, dev));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuCtxCreate(nullptr, 0, dev));
  EXPECT_CU(CUDA_ERROR_INVALID_DEVICE, cuCtxCreate_v2(&c, 0, -1));
  EXPECT_CU(CUDA_ERROR_INVALID_DEVICE, cuCtxCreate_v2(&c, 0, 1 << 16));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuCtxCreate_v2(&c, 0x80000000u, dev));
  // oracle: verify on NVIDIA (two scheduling policies at once).
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
            cuCtxCreate_v2(&c, CU_CTX_SCHED_SPIN | CU_CTX_SCHED_YIELD, dev));
  // A negative count of affinity parameters is none (NVIDIA's driver 580, H200: created); a
  // positive one needs the array.
  ASSERT_OK(cuCtxCreate_v3(&c, nullptr, -1, 0, dev));
  ASSERT_OK(cuCtxDestroy_v2(c));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuCtxCreate_v3(&c, nullptr, 1, 0, dev));
  CUctxCreateParams params{};
  params.numExecAffinityParams = -2;
  ASSERT_OK(cuCtxCreate_v4(&c, &params, 0, dev));
  ASSERT_OK(cuCtxDestroy_v2(c));
  EXPECT_CU(CUDA_ERROR_INVALID_DEVICE, cuCtxCreate_v4(&c, nullptr, 0, 42));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuCtxCreate_v4(nullptr, nullptr, 0, dev));
  EXPECT_EQ(current(), ctx) << "failed creations push nothing";
}

TEST_F(Context, ExecAffinityRequests) {
  CUDAMUX_KNOWN_DIFFERENCE("cuda", "NVIDIA GPUs may support SM-count execution affinity");
  CUexecAffinityParam p{};
  p.type = CU_EXEC_AFFINITY_TYPE_SM_COUNT;
  p.param.smCount.val = 1;
  CUcontext c = nullptr;
  // oracle: verify on NVIDIA (what a GPU without affinity support returns).
  EXPECT_CU(CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY, cuCtxCreate_v3(&c, &p, 1, 0, dev));
  CUctxCreateParams params{};
  params.execAffinityParams = &p;
  params.numExecAffinityParams = 1;
  EXPECT_CU(CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY, cuCtxCreate_v4(&c, &params, 0, dev));
  EXPECT_EQ(current(), ctx);
}

TEST_F(Context, DestroyRejectsBadHandles) {
  CUDAMUX_SKIP_ON_ORACLE(
      "NVIDIA's driver 580 dereferences destroyed and made-up handles (the "
      "process ends)");
  CUcontext c = nullptr;
  ASSERT_OK(cuCtxCreate_v2(&c, 0, dev));
  ASSERT_OK(cuCtxDestroy_v2(c));
  EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxDestroy_v2(c));
  EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxDestroy(c));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuCtxDestroy_v2(nullptr));  // oracle: verify on NVIDIA
  EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxDestroy_v2(reinterpret_cast<CUcontext>(0xdead0)));
  EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxPushCurrent_v2(c));
  EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxPushCurrent(nullptr));
  EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxSetCurrent(c));
  unsigned long long id = 0;
  EXPECT_CU(CUDA_ERROR_CONTEXT_IS_DESTROYED, cuCtxGetId(c, &id));
  EXPECT_EQ(current(), ctx);
  CUdeviceptr p = 0;
  EXPECT_OK(cuMemAlloc_v2(&p, 64)) << "the current context still works";
  EXPECT_OK(cuMemFree_v2(p));
}

TEST_F(Context, PushPopStack) {
  CUDAMUX_SKIP_ON_ORACLE(
      "the legacy cuCtxPushCurrent (v1) entry point answers CUDA_ERROR_INVALID_CONTEXT on "
      "NVIDIA's driver 580 (H200); cudamux keeps it an alias of the current one");
  CUcontext a = ctx, b = nullptr;
  ASSERT_OK(cuCtxCreate_v2(&b, 0, dev));  // pushed on top of a
  CUcontext popped = nullptr;
  ASSERT_OK(cuCtxPopCurrent_v2(&popped));
  EXPECT_EQ(popped, b);
  EXPECT_EQ(current(), a);
  ASSERT_OK(cuCtxPushCurrent_v2(b));
  EXPECT_EQ(current(), b);
  ASSERT_OK(cuCtxPushCurrent(a));  // the same context may be on the stack twice
  EXPECT_EQ(current(), a);
  ASSERT_OK(cuCtxPopCurrent(&popped));
  EXPECT_EQ(popped, a);
  EXPECT_EQ(current(), b);
  // cuCtxSetCurrent replaces the top of the stack.
  ASSERT_OK(cuCtxSetCurrent(a));
  EXPECT_EQ(current(), a);
  ASSERT_OK(cuCtxPopCurrent_v2(&popped));
  EXPECT_EQ(popped, a);
  EXPECT_EQ(current(), a) << "below the replaced top is the fixture's context";
  ASSERT_OK(cuCtxPopCurrent_v2(&popped));
  EXPECT_EQ(current(), nullptr);
  EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxPopCurrent_v2(&popped));
  EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxPopCurrent(nullptr));
  ASSERT_OK(cuCtxSetCurrent(nullptr));  // nothing to pop: still fine
  EXPECT_EQ(current(), nullptr);
  ASSERT_OK(cuCtxSetCurrent(a));
  ASSERT_OK(cuCtxSetCurrent(nullptr));  // a null context pops the current one
  EXPECT_EQ(current(), nullptr);
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuCtxGetCurrent(nullptr));
  ASSERT_OK(cuCtxDestroy_v2(b));
  ASSERT_OK(cuCtxPushCurrent_v2(a));  // the fixture destroys it
}

TEST_F(Context, CurrentContextIsPerThread) {
  on_other_thread([&] {
    EXPECT_EQ(current(), nullptr) << "a new thread starts without a current context";
    CUdevice d = -1;
    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxGetDevice(&d));
    ASSERT_OK(cuCtxSetCurrent(ctx));
    EXPECT_EQ(current(), ctx);
    CUcontext other = nullptr;
    ASSERT_OK(cuCtxCreate_v2(&other, 0, dev));
    EXPECT_OK(cuCtxDestroy_v2(other));
    EXPECT_EQ(current(), ctx);
    EXPECT_OK(cuCtxPopCurrent_v2(nullptr));
  });
  EXPECT_EQ(current(), ctx) << "another thread's stack does not touch this one";
}

TEST_F(Context, NoCurrentContext) {
  on_other_thread([&] {
    CUdevice d = 0;
    unsigned flags = 0;
    size_t value = 0;
    CUfunc_cache cache{};
    int lo = 0, hi = 0;
    unsigned long long id = 0;
    unsigned version = 0;
    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxGetDevice(&d));
    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxGetDevice_v2(&d, nullptr));
    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxGetFlags(&flags));
    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxSetFlags(0));
    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxSynchronize());
    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxSynchronize_v2(nullptr));
    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxGetLimit(&value, CU_LIMIT_STACK_SIZE));
    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxSetLimit(CU_LIMIT_STACK_SIZE, 2048));
    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxGetCacheConfig(&cache));
    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxSetCacheConfig(CU_FUNC_CACHE_PREFER_L1));
    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxGetStreamPriorityRange(&lo, &hi));
    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxGetId(nullptr, &id));
    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxGetApiVersion(nullptr, &version));
    // With an explicit context these need no current one.
    EXPECT_OK(cuCtxGetDevice_v2(&d, ctx));
    EXPECT_EQ(d, dev);
    EXPECT_OK(cuCtxGetId(ctx, &id));
    EXPECT_OK(cuCtxGetApiVersion(ctx, &version));
    EXPECT_OK(cuCtxSynchronize_v2(ctx));
  });
}

TEST_F(Context, DestroyedWhileCurrentOnAnotherThread) {
  CUcontext victim = nullptr;
  ASSERT_OK(cuCtxCreate_v2(&victim, 0, dev));
  ASSERT_OK(cuCtxPopCurrent_v2(nullptr));
  std::promise<void> current_set, destroyed;
  auto worker = std::async(std::launch::async, [&] {
    EXPECT_OK(cuCtxSetCurrent(victim));
    current_set.set_value();
    destroyed.get_future().wait();
    CUdevice d = 0;
    CUdeviceptr p = 0;
    CUstream s = nullptr;
    unsigned flags = 0;
    // NVIDIA's driver 580 (H200) still answers these two for the destroyed context (success);
    // cudamux refuses every call on it alike.
    EXPECT_CU_CUDAMUX(CUDA_ERROR_CONTEXT_IS_DESTROYED, cuCtxGetDevice(&d));
    EXPECT_CU_CUDAMUX(CUDA_ERROR_CONTEXT_IS_DESTROYED, cuCtxGetFlags(&flags));
    EXPECT_CU(CUDA_ERROR_CONTEXT_IS_DESTROYED, cuCtxSynchronize());
    EXPECT_CU(CUDA_ERROR_CONTEXT_IS_DESTROYED, cuMemAlloc_v2(&p, 256));
    EXPECT_CU(CUDA_ERROR_CONTEXT_IS_DESTROYED, cuStreamCreate(&s, 0));
    EXPECT_CU(CUDA_ERROR_CONTEXT_IS_DESTROYED, cuStreamSynchronize(nullptr));
    // The thread recovers by making a live context current.
    EXPECT_OK(cuCtxSetCurrent(ctx));
    EXPECT_OK(cuCtxGetDevice(&d));
    EXPECT_OK(cuCtxPopCurrent_v2(nullptr));
  });
  current_set.get_future().wait();
  ASSERT_OK(cuCtxDestroy_v2(victim));
  destroyed.set_value();
  ASSERT_EQ(worker.wait_for(kTimeout), std::future_status::ready);
  worker.get();
}

TEST_F(Context, Queries) {
  CUdevice d = -1;
  ASSERT_OK(cuCtxGetDevice(&d));
  EXPECT_EQ(d, dev);
  d = -1;
  ASSERT_OK(cuCtxGetDevice_v2(&d, nullptr));
  EXPECT_EQ(d, dev);
  d = -1;
  ASSERT_OK(cuCtxGetDevice_v2(&d, ctx));
  EXPECT_EQ(d, dev);
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuCtxGetDevice(nullptr));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuCtxGetDevice_v2(nullptr, ctx));

  unsigned long long id1 = 0, id1b = 0, id2 = 0, id_current = 0;
  CUcontext other = nullptr;
  ASSERT_OK(cuCtxCreate_v2(&other, 0, dev));
  ASSERT_OK(cuCtxGetId(ctx, &id1));
  ASSERT_OK(cuCtxGetId(ctx, &id1b));
  ASSERT_OK(cuCtxGetId(other, &id2));
  ASSERT_OK(cuCtxGetId(nullptr, &id_current));
  EXPECT_EQ(id1, id1b) << "a context's id is stable";
  EXPECT_NE(id1, id2) << "contexts have distinct ids";
  EXPECT_EQ(id_current, id2) << "null means the current context";
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuCtxGetId(ctx, nullptr));
  ASSERT_OK(cuCtxDestroy_v2(other));
  EXPECT_CU(CUDA_ERROR_CONTEXT_IS_DESTROYED, cuCtxGetId(other, &id2));  // NVIDIA's 580, H200
  // A new context never reuses a destroyed one's id.
  ASSERT_OK(cuCtxCreate_v2(&other, 0, dev));
  unsigned long long id3 = 0;
  ASSERT_OK(cuCtxGetId(other, &id3));
  EXPECT_NE(id3, id2);
  EXPECT_NE(id3, id1);
  unsigned version = 0;
  ASSERT_OK(cuCtxGetApiVersion(other, &version));
  EXPECT_GE(version, 3020u);  // oracle: verify on NVIDIA (the exact value)
  ASSERT_OK(cuCtxDestroy_v2(other));
  EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxGetApiVersion(other, &version));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuCtxGetApiVersion(ctx, nullptr));
  EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxGetDevice_v2(&d, other));
}

TEST_F(Context, Flags) {
  unsigned flags = 0xffff;
  ASSERT_OK(cuCtxGetFlags(&flags));
  EXPECT_EQ(flags & CU_CTX_SCHED_MASK, unsigned{CU_CTX_SCHED_AUTO});
  CUcontext c = nullptr;
  ASSERT_OK(cuCtxCreate_v2(&c, CU_CTX_SCHED_BLOCKING_SYNC, dev));
  ASSERT_OK(cuCtxGetFlags(&flags));
  // oracle: verify on NVIDIA (other bits, e.g. CU_CTX_MAP_HOST, may be reported too).
  EXPECT_EQ(flags & CU_CTX_SCHED_MASK, unsigned{CU_CTX_SCHED_BLOCKING_SYNC});
  ASSERT_OK(cuCtxSetFlags(CU_CTX_SCHED_SPIN));
  ASSERT_OK(cuCtxGetFlags(&flags));
  EXPECT_EQ(flags & CU_CTX_SCHED_MASK, unsigned{CU_CTX_SCHED_SPIN});
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuCtxSetFlags(0x80000000u));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuCtxGetFlags(nullptr));
  ASSERT_OK(cuCtxGetFlags(&flags));
  EXPECT_EQ(flags & CU_CTX_SCHED_MASK, unsigned{CU_CTX_SCHED_SPIN})
      << "a rejected set changes nothing";
  ASSERT_OK(cuCtxDestroy_v2(c));
  ASSERT_OK(cuCtxGetFlags(&flags));
  EXPECT_EQ(flags & CU_CTX_SCHED_MASK, unsigned{CU_CTX_SCHED_AUTO}) << "flags are per context";
  // The non-scheduling flags are accepted and reported.
  const unsigned extra = CU_CTX_MAP_HOST | CU_CTX_LMEM_RESIZE_TO_MAX;
  ASSERT_OK(cuCtxCreate_v2(&c, CU_CTX_SCHED_YIELD | extra, dev));
  ASSERT_OK(cuCtxGetFlags(&flags));
  EXPECT_EQ(flags & extra, extra);
  EXPECT_EQ(flags & CU_CTX_SCHED_MASK, unsigned{CU_CTX_SCHED_YIELD});
  ASSERT_OK(cuCtxDestroy_v2(c));
}

TEST_F(Context, SynchronizeWaitsForStreamWork) {
  CUstream s = nullptr;
  ASSERT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  std::atomic<int> calls{0};
  Gate gate;
  ASSERT_OK(cuLaunchHostFunc(s, &Gate::block, &gate));
  ASSERT_OK(cuLaunchHostFunc(s, &count_call, &calls));
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    gate.release();
  });
  EXPECT_OK(cuCtxSynchronize());
  EXPECT_EQ(calls.load(), 1) << "cuCtxSynchronize returned before the stream's work ran";
  opener.join();
  ASSERT_OK(cuLaunchHostFunc(s, &count_call, &calls));
  EXPECT_OK(cuCtxSynchronize_v2(ctx));
  EXPECT_EQ(calls.load(), 2);
  ASSERT_OK(cuLaunchHostFunc(s, &count_call, &calls));
  EXPECT_OK(cuCtxSynchronize_v2(nullptr));
  EXPECT_EQ(calls.load(), 3);
  EXPECT_FALSE(gate.timed_out);
  EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxSynchronize_v2(reinterpret_cast<CUcontext>(0xbad0)));
  EXPECT_OK(cuStreamDestroy_v2(s));
}

TEST_F(Context, Limits) {
  int major = 0;
  ASSERT_OK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
  for (int l = CU_LIMIT_STACK_SIZE; l < CU_LIMIT_MAX; ++l) {
    size_t v = 0;
    // oracle (NVIDIA's driver 580, H100): no sync depth from compute capability 9.0 (CDP1 is
    // gone), no CIG fallback outside CIG contexts.
    const bool unsupported = l == CU_LIMIT_CIG_SHMEM_FALLBACK_ENABLED ||
                             (l == CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH && major >= 9);
    EXPECT_CU(unsupported ? CUDA_ERROR_UNSUPPORTED_LIMIT : CUDA_SUCCESS,
              cuCtxGetLimit(&v, static_cast<CUlimit>(l)))
        << "limit " << l;
  }
  // cuBLAS asks whether the context is a green (CIG) one; an ordinary context is not, and
  // the CIG limits describe the context, so they cannot be set (oracle: NVIDIA's driver 580).
  size_t cig = 1;
  ASSERT_OK(cuCtxGetLimit(&cig, CU_LIMIT_CIG_ENABLED));
  EXPECT_EQ(cig, size_t{0});
  EXPECT_CU(CUDA_ERROR_NOT_PERMITTED, cuCtxSetLimit(CU_LIMIT_CIG_ENABLED, 1));
  EXPECT_CU(CUDA_ERROR_NOT_PERMITTED, cuCtxSetLimit(CU_LIMIT_SHMEM_SIZE, 1024));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuCtxGetLimit(&cig, CU_LIMIT_MAX));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuCtxSetLimit(CU_LIMIT_MAX, 0));
  size_t stack = 0, heap = 0;
  ASSERT_OK(cuCtxGetLimit(&stack, CU_LIMIT_STACK_SIZE));
  EXPECT_GT(stack, size_t{0});
  ASSERT_OK(cuCtxSetLimit(CU_LIMIT_STACK_SIZE, 4096));
  ASSERT_OK(cuCtxGetLimit(&stack, CU_LIMIT_STACK_SIZE));
  EXPECT_EQ(stack, size_t{4096});
  ASSERT_OK(cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, size_t{32} << 20));
  ASSERT_OK(cuCtxGetLimit(&heap, CU_LIMIT_MALLOC_HEAP_SIZE));
  EXPECT_GE(heap, size_t{32} << 20);  // oracle: verify on NVIDIA (rounding)
  ASSERT_OK(cuCtxSetLimit(CU_LIMIT_MAX_L2_FETCH_GRANULARITY, 128));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuCtxSetLimit(CU_LIMIT_MAX_L2_FETCH_GRANULARITY, 4096));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuCtxGetLimit(nullptr, CU_LIMIT_STACK_SIZE));
  size_t v = 0;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuCtxGetLimit(&v, static_cast<CUlimit>(0x7f)));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuCtxSetLimit(static_cast<CUlimit>(0x7f), 1));
}

TEST_F(Context, LimitsBelongToTheContext) {
  CUDAMUX_KNOWN_DIFFERENCE("cuda",
                           "with contexts = \"primary\" NVIDIA's limits are those of the shared "
                           "primary context (docs/backends/cuda.md)");
  size_t v = 0;
  ASSERT_OK(cuCtxSetLimit(CU_LIMIT_STACK_SIZE, 4096));
  // A new context starts from the defaults.
  CUcontext other = nullptr;
  ASSERT_OK(cuCtxCreate_v2(&other, 0, dev));
  ASSERT_OK(cuCtxGetLimit(&v, CU_LIMIT_STACK_SIZE));
  EXPECT_NE(v, size_t{4096});
  ASSERT_OK(cuCtxDestroy_v2(other));
  ASSERT_OK(cuCtxGetLimit(&v, CU_LIMIT_STACK_SIZE));
  EXPECT_EQ(v, size_t{4096});
}

TEST_F(Context, CacheConfig) {
  CUfunc_cache c = CU_FUNC_CACHE_PREFER_EQUAL;
  ASSERT_OK(cuCtxGetCacheConfig(&c));
  EXPECT_EQ(c, CU_FUNC_CACHE_PREFER_NONE);
  for (CUfunc_cache want : {CU_FUNC_CACHE_PREFER_SHARED, CU_FUNC_CACHE_PREFER_L1,
                            CU_FUNC_CACHE_PREFER_EQUAL, CU_FUNC_CACHE_PREFER_NONE}) {
    ASSERT_OK(cuCtxSetCacheConfig(want));
    ASSERT_OK(cuCtxGetCacheConfig(&c));
    EXPECT_EQ(c, want);
  }
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuCtxSetCacheConfig(static_cast<CUfunc_cache>(17)));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuCtxGetCacheConfig(nullptr));
}

TEST_F(Context, StreamPriorityRange) {
  int least = 99, greatest = 99;
  ASSERT_OK(cuCtxGetStreamPriorityRange(&least, &greatest));
  EXPECT_LE(greatest, least) << "numerically lower is higher priority";
  EXPECT_EQ(least, 0);
  EXPECT_OK(cuCtxGetStreamPriorityRange(nullptr, &greatest));  // either output may be null
  EXPECT_OK(cuCtxGetStreamPriorityRange(&least, nullptr));
  EXPECT_OK(cuCtxGetStreamPriorityRange(nullptr, nullptr));
}

// --- primary contexts ---

TEST_F(PrimaryContext, RetainReleaseState) {
  unsigned flags = 99;
  int active = 99;
  ASSERT_OK(cuDevicePrimaryCtxGetState(dev, &flags, &active));
  EXPECT_EQ(active, 0);
  CUcontext p1 = nullptr, p2 = nullptr;
  ASSERT_OK(cuDevicePrimaryCtxRetain(&p1, dev));
  ASSERT_OK(cuDevicePrimaryCtxRetain(&p2, dev));
  EXPECT_EQ(p1, p2) << "one primary context per device";
  EXPECT_NE(p1, ctx);
  EXPECT_EQ(current(), ctx) << "retaining does not make it current";
  ASSERT_OK(cuDevicePrimaryCtxGetState(dev, &flags, &active));
  EXPECT_EQ(active, 1);
  // It is usable like any context.
  ASSERT_OK(cuCtxPushCurrent_v2(p1));
  CUdeviceptr mem = 0;
  ASSERT_OK(cuMemAlloc_v2(&mem, 1 << 20));
  CUcontext owner = nullptr;
  ASSERT_OK(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, mem));
  EXPECT_EQ(owner, p1);
  ASSERT_OK(cuCtxPopCurrent_v2(nullptr));
  // oracle: verify on NVIDIA (destroying a primary context with cuCtxDestroy).
  EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxDestroy_v2(p1));
  ASSERT_OK(cuDevicePrimaryCtxRelease_v2(dev));
  ASSERT_OK(cuDevicePrimaryCtxGetState(dev, &flags, &active));
  EXPECT_EQ(active, 1) << "still retained once";
  ASSERT_OK(cuDevicePrimaryCtxRelease(dev));
  ASSERT_OK(cuDevicePrimaryCtxGetState(dev, &flags, &active));
  EXPECT_EQ(active, 0);
  // The last release destroyed it with its memory (the fixture checks for leaks).
  EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxPushCurrent_v2(p1));
  // oracle: verify on NVIDIA (releasing a primary context that is not retained).
  EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuDevicePrimaryCtxRelease_v2(dev));
}

TEST_F(PrimaryContext, FlagsAndReset) {
  ASSERT_OK(cuDevicePrimaryCtxSetFlags(dev, CU_CTX_SCHED_YIELD));  // inactive: both forms work
  unsigned flags = 0;
  int active = 0;
  ASSERT_OK(cuDevicePrimaryCtxGetState(dev, &flags, &active));
  EXPECT_EQ(flags & CU_CTX_SCHED_MASK, unsigned{CU_CTX_SCHED_YIELD});
  CUcontext p = nullptr;
  ASSERT_OK(cuDevicePrimaryCtxRetain(&p, dev));
  ASSERT_OK(cuCtxPushCurrent_v2(p));
  unsigned ctx_flags = 0;
  ASSERT_OK(cuCtxGetFlags(&ctx_flags));
  EXPECT_EQ(ctx_flags & CU_CTX_SCHED_MASK, unsigned{CU_CTX_SCHED_YIELD})
      << "the primary context is created with the flags set before";
  // The CUDA 7.0 form refuses while active; _v2 changes the live context.
  EXPECT_CU(CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE, cuDevicePrimaryCtxSetFlags(dev, CU_CTX_SCHED_SPIN));
  ASSERT_OK(cuDevicePrimaryCtxSetFlags_v2(dev, CU_CTX_SCHED_BLOCKING_SYNC));
  ASSERT_OK(cuCtxGetFlags(&ctx_flags));
  EXPECT_EQ(ctx_flags & CU_CTX_SCHED_MASK, unsigned{CU_CTX_SCHED_BLOCKING_SYNC});
  ASSERT_OK(cuDevicePrimaryCtxGetState(dev, &flags, &active));
  EXPECT_EQ(flags & CU_CTX_SCHED_MASK, unsigned{CU_CTX_SCHED_BLOCKING_SYNC});
  EXPECT_EQ(active, 1);
  CUdeviceptr mem = 0;
  ASSERT_OK(cuMemAlloc_v2(&mem, 4096));
  ASSERT_OK(cuCtxPopCurrent_v2(nullptr));
  // Reset destroys it (and its memory) even while retained.
  ASSERT_OK(cuDevicePrimaryCtxReset_v2(dev));
  ASSERT_OK(cuDevicePrimaryCtxGetState(dev, &flags, &active));
  EXPECT_EQ(active, 0);
  EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxPushCurrent_v2(p));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemFree_v2(mem)) << "reset freed the allocation";
  // Retain after reset gives a working context again.
  CUcontext again = nullptr;
  ASSERT_OK(cuDevicePrimaryCtxRetain(&again, dev));
  ASSERT_OK(cuCtxPushCurrent_v2(again));
  ASSERT_OK(cuMemAlloc_v2(&mem, 4096));
  ASSERT_OK(cuCtxPopCurrent_v2(nullptr));
  ASSERT_OK(cuDevicePrimaryCtxReset(dev));
  ASSERT_OK(cuDevicePrimaryCtxSetFlags_v2(dev, 0));
  // "Resetting the primary context does not release it": both retains are still released,
  // which is documented to be safe after a reset.
  EXPECT_OK(cuDevicePrimaryCtxRelease_v2(dev));
  EXPECT_OK(cuDevicePrimaryCtxRelease_v2(dev));
  EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuDevicePrimaryCtxRelease_v2(dev))
      << "released more than retained";
  ASSERT_OK(cuDevicePrimaryCtxGetState(dev, &flags, &active));
  EXPECT_EQ(active, 0);

  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuDevicePrimaryCtxSetFlags_v2(dev, 0x80000000u));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuDevicePrimaryCtxSetFlags(dev, 0x80000000u));
}

TEST_F(PrimaryContext, ReleaseDoesNotPopTheContext) {
  // CUDA: "unlike cuCtxDestroy() this method does not pop the context from stack in any
  // circumstances".
  CUcontext p = nullptr;
  ASSERT_OK(cuDevicePrimaryCtxRetain(&p, dev));
  ASSERT_OK(cuCtxPushCurrent_v2(p));
  ASSERT_OK(cuDevicePrimaryCtxRelease_v2(dev));
  EXPECT_EQ(current(), p) << "the released primary context was popped";
  CUdevice d = 0;
  // oracle: verify on NVIDIA (a released-to-zero primary context that is still current).
  EXPECT_CU(CUDA_ERROR_CONTEXT_IS_DESTROYED, cuCtxGetDevice(&d));
  ASSERT_OK(cuCtxPopCurrent_v2(nullptr));
  EXPECT_EQ(current(), ctx);
  // The same holds for a reset.
  ASSERT_OK(cuDevicePrimaryCtxRetain(&p, dev));
  ASSERT_OK(cuCtxPushCurrent_v2(p));
  ASSERT_OK(cuDevicePrimaryCtxReset_v2(dev));
  EXPECT_EQ(current(), p) << "the reset primary context was popped";
  ASSERT_OK(cuCtxPopCurrent_v2(nullptr));
  EXPECT_OK(cuDevicePrimaryCtxRelease_v2(dev));
}

TEST_F(PrimaryContext, BadArguments) {
  CUcontext p = nullptr;
  unsigned flags = 0;
  int active = 0;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuDevicePrimaryCtxRetain(nullptr, dev));
  EXPECT_CU(CUDA_ERROR_INVALID_DEVICE, cuDevicePrimaryCtxRetain(&p, -1));
  EXPECT_CU(CUDA_ERROR_INVALID_DEVICE, cuDevicePrimaryCtxRelease_v2(1000));
  EXPECT_CU(CUDA_ERROR_INVALID_DEVICE, cuDevicePrimaryCtxRelease(1000));
  EXPECT_CU(CUDA_ERROR_INVALID_DEVICE, cuDevicePrimaryCtxReset_v2(-2));
  EXPECT_CU(CUDA_ERROR_INVALID_DEVICE, cuDevicePrimaryCtxReset(-2));
  EXPECT_CU(CUDA_ERROR_INVALID_DEVICE, cuDevicePrimaryCtxSetFlags_v2(77, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_DEVICE, cuDevicePrimaryCtxSetFlags(77, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_DEVICE, cuDevicePrimaryCtxGetState(77, &flags, &active));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuDevicePrimaryCtxGetState(dev, nullptr, &active));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuDevicePrimaryCtxGetState(dev, &flags, nullptr));
}

}  // namespace
}  // namespace conformance

#include <cudaProfiler.h>

namespace conformance {
namespace {

// Issue 14: NVIDIA's samples bracket their timed work with these. They need a current context.
TEST_F(Driver, ProfilerStartAndStopNeedAContext) {
  EXPECT_OK(cuProfilerStart());
  EXPECT_OK(cuProfilerStop());
  std::thread([] {
    // oracle: NVIDIA's answer without a current context.
    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuProfilerStart());
    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuProfilerStop());
  }).join();
}

}  // namespace
}  // namespace conformance
