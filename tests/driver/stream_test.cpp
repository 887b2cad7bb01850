// Streams: creation, getters, query/sync, ordering, callbacks, host functions, the legacy
// default stream's synchronisation with blocking streams, cross-stream event waits.
#include <algorithm>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "conformance.hpp"

namespace conformance {
namespace {

using Stream = Driver;

TEST_F(Stream, CreateFlagsAndPriorities) {
  CUstream a = nullptr, b = nullptr;
  ASSERT_OK(cuStreamCreate(&a, CU_STREAM_DEFAULT));
  ASSERT_OK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
  EXPECT_NE(a, b);
  unsigned flags = 99;
  ASSERT_OK(cuStreamGetFlags(a, &flags));
  EXPECT_EQ(flags, unsigned{CU_STREAM_DEFAULT});
  ASSERT_OK(cuStreamGetFlags(b, &flags));
  EXPECT_EQ(flags, unsigned{CU_STREAM_NON_BLOCKING});
  int least = 0, greatest = 0, prio = 99;
  ASSERT_OK(cuCtxGetStreamPriorityRange(&least, &greatest));
  ASSERT_OK(cuStreamGetPriority(a, &prio));
  EXPECT_EQ(prio, least) << "the default priority is the least one";

  // Requests outside the range are clamped to it.
  CUstream hi = nullptr, lo = nullptr, mid = nullptr;
  ASSERT_OK(cuStreamCreateWithPriority(&hi, CU_STREAM_NON_BLOCKING, greatest - 100));
  ASSERT_OK(cuStreamCreateWithPriority(&lo, 0, least + 100));
  ASSERT_OK(cuStreamCreateWithPriority(&mid, 0, greatest));
  ASSERT_OK(cuStreamGetPriority(hi, &prio));
  EXPECT_EQ(prio, greatest);
  ASSERT_OK(cuStreamGetPriority(lo, &prio));
  EXPECT_EQ(prio, least);
  ASSERT_OK(cuStreamGetPriority(mid, &prio));
  EXPECT_EQ(prio, greatest);
  ASSERT_OK(cuStreamGetFlags(hi, &flags));
  EXPECT_EQ(flags, unsigned{CU_STREAM_NON_BLOCKING});

  CUstream bad = nullptr;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuStreamCreate(&bad, 0x4));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuStreamCreate(nullptr, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuStreamCreateWithPriority(&bad, 0x80, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuStreamCreateWithPriority(nullptr, 0, 0));
  for (CUstream s : {a, b, hi, lo, mid}) EXPECT_OK(cuStreamDestroy_v2(s));
  std::thread([] {
    CUstream s = nullptr;
    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuStreamCreate(&s, 0));
    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuStreamCreateWithPriority(&s, 0, 0));
    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuStreamQuery(nullptr));
    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuStreamSynchronize(CU_STREAM_LEGACY));
  }).join();
}

TEST_F(Stream, Getters) {
  CUstream s = nullptr, t = nullptr;
  ASSERT_OK(cuStreamCreate(&s, 0));
  ASSERT_OK(cuStreamCreate(&t, 0));
  for (CUstream h : {s, static_cast<CUstream>(nullptr), CU_STREAM_LEGACY, CU_STREAM_PER_THREAD}) {
    CUcontext c = nullptr;
    CUdevice d = -1;
    ASSERT_OK(cuStreamGetCtx(h, &c));
    EXPECT_EQ(c, ctx);
    CUgreenCtx g = reinterpret_cast<CUgreenCtx>(0x1);
    c = nullptr;
    ASSERT_OK(cuStreamGetCtx_v2(h, &c, &g));
    EXPECT_EQ(c, ctx);
    EXPECT_EQ(g, nullptr);
    ASSERT_OK(cuStreamGetDevice(h, &d));
    EXPECT_EQ(d, dev);
  }
  unsigned long long ids[5] = {};
  ASSERT_OK(cuStreamGetId(s, &ids[0]));
  ASSERT_OK(cuStreamGetId(t, &ids[1]));
  ASSERT_OK(cuStreamGetId(CU_STREAM_LEGACY, &ids[2]));
  ASSERT_OK(cuStreamGetId(CU_STREAM_PER_THREAD, &ids[3]));
  ASSERT_OK(cuStreamGetId(nullptr, &ids[4]));
  EXPECT_EQ(std::set<unsigned long long>(ids, ids + 4).size(), 4u) << "streams have distinct ids";
  EXPECT_EQ(ids[4], ids[2]) << "the null stream is the legacy stream here";
  unsigned long long again = 0;
  ASSERT_OK(cuStreamGetId(s, &again));
  EXPECT_EQ(again, ids[0]);
  unsigned flags = 99;
  ASSERT_OK(cuStreamGetFlags(CU_STREAM_LEGACY, &flags));
  EXPECT_EQ(flags, 0u);

  // Null out-pointers and dead handles.
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuStreamGetFlags(s, nullptr));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuStreamGetPriority(s, nullptr));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuStreamGetCtx(s, nullptr));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuStreamGetId(s, nullptr));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuStreamGetDevice(s, nullptr));
  CUcontext c = nullptr;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuStreamGetCtx_v2(s, &c, nullptr));
  ASSERT_OK(cuStreamDestroy_v2(t));
  int prio = 0;
  CUdevice d = 0;
  unsigned long long id = 0;
  CUgreenCtx g = nullptr;
  // oracle: verify on NVIDIA (using a destroyed stream handle).
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuStreamGetFlags(t, &flags));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuStreamGetPriority(t, &prio));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuStreamGetCtx(t, &c));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuStreamGetCtx_v2(t, &c, &g));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuStreamGetId(t, &id));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuStreamGetDevice(t, &d));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuStreamQuery(t));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuStreamSynchronize(t));
  EXPECT_OK(cuStreamDestroy_v2(s));
}

TEST_F(Stream, DestroyRejectsDefaultAndDeadStreams) {
  CUstream s = nullptr;
  ASSERT_OK(cuStreamCreate(&s, 0));
  ASSERT_OK(cuStreamDestroy(s));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuStreamDestroy_v2(s));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuStreamDestroy(s));
  // oracle: verify on NVIDIA (destroying the default streams).
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuStreamDestroy_v2(nullptr));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuStreamDestroy_v2(CU_STREAM_LEGACY));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuStreamDestroy_v2(CU_STREAM_PER_THREAD));
  // The default streams still work.
  EXPECT_OK(cuStreamSynchronize(nullptr));
  EXPECT_OK(cuStreamSynchronize(CU_STREAM_PER_THREAD));
}

TEST_F(Stream, DestroyWithPendingWorkReturnsAndTheWorkCompletes) {
  // CUDA: "in case the device is still doing work in the stream when cuStreamDestroy() is
  // called, the function will return immediately and the resources are released
  // automatically once the device has completed all work".
  CUstream s = nullptr;
  ASSERT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  DeviceBuffer d(4096);
  std::atomic<int> calls{0};
  Gate gate;
  ASSERT_OK(cuLaunchHostFunc(s, &Gate::block, &gate));
  ASSERT_OK(cuMemsetD8Async(d.ptr, 0x3d, 4096, s));
  ASSERT_OK(cuLaunchHostFunc(s, &count_call, &calls));
  const auto start = std::chrono::steady_clock::now();
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    gate.release();
  });
  ASSERT_OK(cuStreamDestroy_v2(s));
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_LT(took, std::chrono::milliseconds(400)) << "cuStreamDestroy waited for the stream's work";
  opener.join();
  ASSERT_OK(cuCtxSynchronize());
  EXPECT_EQ(calls.load(), 1) << "the destroyed stream's work did not complete";
  std::vector<unsigned char> out(4096);
  ASSERT_OK(cuMemcpyDtoH_v2(out.data(), d.ptr, out.size()));
  for (unsigned char b : out) ASSERT_EQ(b, 0x3d);
}

TEST_F(Stream, QueryAndSynchronizeFollowTheWork) {
  CUstream s = nullptr;
  ASSERT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  EXPECT_OK(cuStreamQuery(s)) << "an empty stream is complete";
  EXPECT_OK(cuStreamSynchronize(s));
  Gate gate;
  std::atomic<int> calls{0};
  ASSERT_OK(cuLaunchHostFunc(s, &Gate::block, &gate));
  ASSERT_OK(cuLaunchHostFunc(s, &count_call, &calls));
  ASSERT_TRUE(eventually([&] { return gate.entered.load(); }));
  EXPECT_CU(CUDA_ERROR_NOT_READY, cuStreamQuery(s));
  EXPECT_CU(CUDA_ERROR_NOT_READY, cuStreamQuery(s)) << "querying does not change anything";
  EXPECT_EQ(calls.load(), 0);
  gate.release();
  ASSERT_OK(cuStreamSynchronize(s));
  EXPECT_EQ(calls.load(), 1);
  EXPECT_OK(cuStreamQuery(s));
  EXPECT_FALSE(gate.timed_out);
  EXPECT_OK(cuStreamDestroy_v2(s));
}

TEST_F(Stream, ManyAsyncOperationsOnOneStreamGiveExactResults) {
  const size_t n = 1 << 14;  // words
  DeviceBuffer a(n * 4), b(n * 4);
  unsigned* pinned = nullptr;
  ASSERT_OK(cuMemAllocHost_v2(reinterpret_cast<void**>(&pinned), n * 4));
  CUstream s = nullptr;
  ASSERT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  // Each round depends on the previous one: any reordering changes the final value.
  std::vector<unsigned> model(n, 0);
  ASSERT_OK(cuMemsetD32Async(a.ptr, 0, n, s));
  for (unsigned round = 1; round <= 40; ++round) {
    const size_t off = (round * 97) % (n / 2);
    const size_t len = n / 4 + round;
    ASSERT_OK(cuMemsetD32Async(b.ptr + off * 4, round * 0x01010101u, len, s));
    ASSERT_OK(cuMemcpyDtoDAsync_v2(a.ptr + (round % 7) * 4, b.ptr + off * 4, len * 4, s));
    for (size_t i = 0; i < len; ++i) model[(round % 7) + i] = round * 0x01010101u;
  }
  ASSERT_OK(cuMemcpyDtoHAsync_v2(pinned, a.ptr, n * 4, s));
  ASSERT_OK(cuStreamSynchronize(s));
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(pinned[i], model[i]) << i;
  EXPECT_OK(cuStreamDestroy_v2(s));
  EXPECT_OK(cuMemFreeHost(pinned));
}

struct CallbackLog {
  std::mutex mu;
  std::vector<int> order;
  std::vector<CUstream> streams;
  std::vector<CUresult> statuses;
};
struct CallbackArg {
  CallbackLog* log;
  int index;
};
void CUDA_CB record_callback(CUstream s, CUresult status, void* p) {
  auto* a = static_cast<CallbackArg*>(p);
  std::lock_guard lock(a->log->mu);
  a->log->order.push_back(a->index);
  a->log->streams.push_back(s);
  a->log->statuses.push_back(status);
}
void CUDA_CB record_host(void* p) {
  auto* a = static_cast<CallbackArg*>(p);
  std::lock_guard lock(a->log->mu);
  a->log->order.push_back(a->index);
}

TEST_F(Stream, CallbacksAndHostFunctionsRunInOrder) {
  CUstream s = nullptr;
  ASSERT_OK(cuStreamCreate(&s, 0));
  CallbackLog log;
  std::vector<CallbackArg> args;
  for (int i = 0; i < 20; ++i) args.push_back({&log, i});
  for (int i = 0; i < 20; ++i) {
    if (i % 2)
      ASSERT_OK(cuStreamAddCallback(s, &record_callback, &args[i], 0));
    else
      ASSERT_OK(cuLaunchHostFunc(s, &record_host, &args[i]));
  }
  ASSERT_OK(cuStreamSynchronize(s));
  std::vector<int> want(20);
  for (int i = 0; i < 20; ++i) want[i] = i;
  EXPECT_EQ(log.order, want);
  for (CUstream got : log.streams) EXPECT_EQ(got, s) << "the callback gets its stream";
  for (CUresult r : log.statuses) EXPECT_EQ(r, CUDA_SUCCESS);
  // On the legacy stream the callback sees the handle it was given.
  log.streams.clear();
  ASSERT_OK(cuStreamAddCallback(nullptr, &record_callback, &args[0], 0));
  ASSERT_OK(cuStreamSynchronize(nullptr));
  ASSERT_EQ(log.streams.size(), 1u);
  EXPECT_EQ(log.streams[0], nullptr);

  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuStreamAddCallback(s, nullptr, nullptr, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuStreamAddCallback(s, &record_callback, &args[0], 1));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuLaunchHostFunc(s, nullptr, nullptr));
  ASSERT_OK(cuStreamDestroy_v2(s));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuStreamAddCallback(s, &record_callback, &args[0], 0));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuLaunchHostFunc(s, &record_host, &args[0]));
  EXPECT_EQ(log.order.size(), 21u) << "rejected submissions never run";
}

// --- the legacy default stream ---

TEST_F(Stream, BlockingStreamWaitsForEarlierLegacyWork) {
  const size_t n = 4096;
  DeviceBuffer d(n);
  ASSERT_OK(cuMemsetD8_v2(d.ptr, 0, n));
  unsigned char* pinned = nullptr;
  ASSERT_OK(cuMemAllocHost_v2(reinterpret_cast<void**>(&pinned), n));
  std::memset(pinned, 0xff, n);
  CUstream s = nullptr;
  ASSERT_OK(cuStreamCreate(&s, CU_STREAM_DEFAULT));
  Gate gate;
  ASSERT_OK(cuLaunchHostFunc(CU_STREAM_LEGACY, &Gate::block, &gate));
  ASSERT_OK(cuMemsetD8Async(d.ptr, 0x5c, n, nullptr));   // legacy work behind the gate
  ASSERT_OK(cuMemcpyDtoHAsync_v2(pinned, d.ptr, n, s));  // blocking stream: after it
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_CU(CUDA_ERROR_NOT_READY, cuStreamQuery(s))
      << "the blocking stream did not wait for legacy work";
  gate.release();
  ASSERT_OK(cuStreamSynchronize(s));
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(pinned[i], 0x5c) << i;
  EXPECT_FALSE(gate.timed_out);
  EXPECT_OK(cuStreamDestroy_v2(s));
  EXPECT_OK(cuMemFreeHost(pinned));
}

TEST_F(Stream, LegacyWorkWaitsForBlockingStreams) {
  CUstream s = nullptr;
  ASSERT_OK(cuStreamCreate(&s, CU_STREAM_DEFAULT));
  Gate gate;
  std::atomic<int> calls{0};
  ASSERT_OK(cuLaunchHostFunc(s, &Gate::block, &gate));
  ASSERT_OK(cuLaunchHostFunc(nullptr, &count_call, &calls));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(calls.load(), 0) << "legacy-stream work ran while a blocking stream was blocked";
  EXPECT_CU(CUDA_ERROR_NOT_READY, cuStreamQuery(CU_STREAM_LEGACY));
  gate.release();
  ASSERT_OK(cuStreamSynchronize(CU_STREAM_LEGACY));
  EXPECT_EQ(calls.load(), 1);
  EXPECT_FALSE(gate.timed_out);
  EXPECT_OK(cuStreamDestroy_v2(s));
}

TEST_F(Stream, LegacyWorkDoesNotWaitForNonBlockingStreams) {
  // Probes are event records, not host functions: CUDA may run all host functions on one
  // thread, so a blocked one would hold back every other.
  CUstream s = nullptr;
  ASSERT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUevent probe = nullptr;
  ASSERT_OK(cuEventCreate(&probe, CU_EVENT_DISABLE_TIMING));
  Gate gate;
  ASSERT_OK(cuLaunchHostFunc(s, &Gate::block, &gate));
  ASSERT_OK(cuEventRecord(probe, CU_STREAM_LEGACY));
  EXPECT_TRUE(eventually([&] { return cuEventQuery(probe) == CUDA_SUCCESS; }))
      << "legacy-stream work waited for a non-blocking stream";
  EXPECT_CU(CUDA_ERROR_NOT_READY, cuStreamQuery(s));
  gate.release();
  ASSERT_OK(cuStreamSynchronize(s));
  // And work on the non-blocking stream does not wait for the legacy stream either.
  Gate legacy_gate;
  ASSERT_OK(cuLaunchHostFunc(CU_STREAM_LEGACY, &Gate::block, &legacy_gate));
  ASSERT_OK(cuEventRecord(probe, s));
  EXPECT_TRUE(eventually([&] { return cuEventQuery(probe) == CUDA_SUCCESS; }))
      << "non-blocking-stream work waited for the legacy stream";
  EXPECT_CU(CUDA_ERROR_NOT_READY, cuStreamQuery(CU_STREAM_LEGACY));
  legacy_gate.release();
  ASSERT_OK(cuCtxSynchronize());
  EXPECT_FALSE(gate.timed_out);
  EXPECT_FALSE(legacy_gate.timed_out);
  EXPECT_OK(cuEventDestroy_v2(probe));
  EXPECT_OK(cuStreamDestroy_v2(s));
}

TEST_F(Stream, PerThreadStreamIsBlockingAgainstLegacy) {
  // "The per-thread default stream is not a non-blocking stream and will synchronize with
  // the legacy default stream if both are used in a program."
  Gate gate;
  std::atomic<int> calls{0};
  ASSERT_OK(cuLaunchHostFunc(CU_STREAM_PER_THREAD, &Gate::block, &gate));
  ASSERT_OK(cuLaunchHostFunc(CU_STREAM_LEGACY, &count_call, &calls));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(calls.load(), 0);
  gate.release();
  ASSERT_OK(cuStreamSynchronize(CU_STREAM_LEGACY));
  EXPECT_EQ(calls.load(), 1);
  EXPECT_FALSE(gate.timed_out);
}

TEST_F(Stream, DestroyedBlockingStreamStillOrdersLaterLegacyWork) {
  // Legacy-stream work waits for all prior work of blocking streams, including work of
  // a stream destroyed (with cuStreamDestroy returning at once) before it was submitted.
  CUstream s = nullptr;
  ASSERT_OK(cuStreamCreate(&s, CU_STREAM_DEFAULT));
  Gate gate;
  std::atomic<int> calls{0};
  ASSERT_OK(cuLaunchHostFunc(s, &Gate::block, &gate));
  ASSERT_OK(cuStreamDestroy_v2(s));
  ASSERT_OK(cuLaunchHostFunc(CU_STREAM_LEGACY, &count_call, &calls));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(calls.load(), 0) << "legacy work overtook a destroyed blocking stream's work";
  gate.release();
  ASSERT_OK(cuStreamSynchronize(CU_STREAM_LEGACY));
  EXPECT_EQ(calls.load(), 1);
  EXPECT_FALSE(gate.timed_out);
}

TEST_F(Stream, ManyDestroyedStreamsWithPendingWork) {
  // Streams retired with pending work are freed later; none of their work is lost. Half are
  // blocked behind a gate; the other half must complete meanwhile (probed by events, as
  // CUDA may serialise host functions).
  Gate gate;
  std::atomic<int> calls{0};
  std::vector<CUevent> probes;
  for (int i = 0; i < 32; ++i) {
    CUstream s = nullptr;
    ASSERT_OK(cuStreamCreate(&s, i % 2 ? CU_STREAM_NON_BLOCKING : 0));
    if (i < 16) {
      ASSERT_OK(cuLaunchHostFunc(s, &Gate::block, &gate));
      ASSERT_OK(cuLaunchHostFunc(s, &count_call, &calls));
    } else {
      CUevent e = nullptr;
      ASSERT_OK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
      ASSERT_OK(cuEventRecord(e, s));
      probes.push_back(e);
    }
    ASSERT_OK(cuStreamDestroy_v2(s));
  }
  for (CUevent e : probes)
    EXPECT_TRUE(eventually([&] { return cuEventQuery(e) == CUDA_SUCCESS; }))
        << "an ungated stream stalled";
  EXPECT_EQ(calls.load(), 0);
  gate.release();
  ASSERT_OK(cuCtxSynchronize());
  EXPECT_EQ(calls.load(), 16);
  for (CUevent e : probes) EXPECT_OK(cuEventDestroy_v2(e));
}

// --- cross-stream waits ---

TEST_F(Stream, WaitEventOrdersAcrossStreams) {
  CUstream producer = nullptr, consumer = nullptr;
  ASSERT_OK(cuStreamCreate(&producer, CU_STREAM_NON_BLOCKING));
  ASSERT_OK(cuStreamCreate(&consumer, CU_STREAM_NON_BLOCKING));
  CUevent e = nullptr;
  ASSERT_OK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
  const size_t n = 1 << 16;
  DeviceBuffer d(n);
  unsigned char* pinned = nullptr;
  ASSERT_OK(cuMemAllocHost_v2(reinterpret_cast<void**>(&pinned), n));
  std::memset(pinned, 0, n);
  Gate gate;
  std::atomic<int> consumed{0};
  ASSERT_OK(cuLaunchHostFunc(producer, &Gate::block, &gate));
  ASSERT_OK(cuMemsetD8Async(d.ptr, 0x77, n, producer));
  ASSERT_OK(cuEventRecord(e, producer));
  ASSERT_OK(cuStreamWaitEvent(consumer, e, CU_EVENT_WAIT_DEFAULT));
  ASSERT_OK(cuMemcpyDtoHAsync_v2(pinned, d.ptr, n, consumer));
  ASSERT_OK(cuLaunchHostFunc(consumer, &count_call, &consumed));
  // Re-recording the event afterwards does not retarget the wait already queued.
  ASSERT_OK(cuEventRecord(e, consumer));
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_EQ(consumed.load(), 0) << "the consumer ran before the event it waits for";
  EXPECT_CU(CUDA_ERROR_NOT_READY, cuStreamQuery(consumer));
  gate.release();
  ASSERT_OK(cuStreamSynchronize(consumer));
  EXPECT_EQ(consumed.load(), 1);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(pinned[i], 0x77) << i;

  // Waiting on the legacy/per-thread streams and the _ptsz variant.
  ASSERT_OK(cuEventRecord(e, producer));
  EXPECT_OK(cuStreamWaitEvent(nullptr, e, 0));
  EXPECT_OK(cuStreamWaitEvent(CU_STREAM_PER_THREAD, e, 0));
  EXPECT_OK(cuStreamWaitEvent(consumer, e, CU_EVENT_WAIT_EXTERNAL));
  ASSERT_OK(cuCtxSynchronize());

  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuStreamWaitEvent(consumer, e, 0x10));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuStreamWaitEvent(consumer, nullptr, 0));
  ASSERT_OK(cuEventDestroy_v2(e));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuStreamWaitEvent(consumer, e, 0)) << "destroyed event";
  ASSERT_OK(cuStreamDestroy_v2(producer));
  CUevent f = nullptr;
  ASSERT_OK(cuEventCreate(&f, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuStreamWaitEvent(producer, f, 0)) << "destroyed stream";
  EXPECT_OK(cuEventDestroy_v2(f));
  EXPECT_FALSE(gate.timed_out);
  EXPECT_OK(cuStreamDestroy_v2(consumer));
  EXPECT_OK(cuMemFreeHost(pinned));
}

TEST_F(Stream, WaitEventFromAnotherContext) {
  // "hEvent may be from a different context or device than hStream."
  CUcontext other = nullptr;
  ASSERT_OK(cuCtxCreate_v2(&other, 0, dev));
  CUstream producer = nullptr;
  CUevent e = nullptr;
  ASSERT_OK(cuStreamCreate(&producer, CU_STREAM_NON_BLOCKING));
  ASSERT_OK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
  Gate gate;
  ASSERT_OK(cuLaunchHostFunc(producer, &Gate::block, &gate));
  ASSERT_OK(cuEventRecord(e, producer));
  ASSERT_OK(cuCtxPopCurrent_v2(nullptr));
  CUstream consumer = nullptr;
  ASSERT_OK(cuStreamCreate(&consumer, CU_STREAM_NON_BLOCKING));
  std::atomic<int> calls{0};
  ASSERT_OK(cuStreamWaitEvent(consumer, e, 0));
  ASSERT_OK(cuLaunchHostFunc(consumer, &count_call, &calls));
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_EQ(calls.load(), 0) << "the wait on another context's event was ignored";
  gate.release();
  ASSERT_OK(cuStreamSynchronize(consumer));
  EXPECT_EQ(calls.load(), 1);
  EXPECT_OK(cuStreamDestroy_v2(consumer));
  ASSERT_OK(cuCtxDestroy_v2(other));
  EXPECT_FALSE(gate.timed_out);
}

TEST_F(Stream, StreamsOfAnotherContext) {
  CUcontext other = nullptr;
  ASSERT_OK(cuCtxCreate_v2(&other, 0, dev));
  CUstream s = nullptr;
  ASSERT_OK(cuStreamCreate(&s, 0));
  ASSERT_OK(cuCtxPopCurrent_v2(nullptr));
  CUcontext c = nullptr;
  ASSERT_OK(cuStreamGetCtx(s, &c));
  EXPECT_EQ(c, other) << "a stream reports its own context, not the current one";
  EXPECT_OK(cuStreamSynchronize(s));
  ASSERT_OK(cuCtxDestroy_v2(other));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuStreamGetCtx(s, &c)) << "streams die with their context";
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuStreamDestroy_v2(s));
}

TEST_F(Stream, WaitingOnANeverRecordedEventIsANoOp) {
  CUstream s = nullptr;
  ASSERT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUevent e = nullptr;
  ASSERT_OK(cuEventCreate(&e, 0));
  ASSERT_OK(cuStreamWaitEvent(s, e, 0));
  std::atomic<int> calls{0};
  ASSERT_OK(cuLaunchHostFunc(s, &count_call, &calls));
  EXPECT_TRUE(eventually([&] { return calls.load() == 1; })) << "the stream waits for nothing";
  ASSERT_OK(cuStreamSynchronize(s));
  // Recording the event later does not affect the wait already queued.
  Gate gate;
  CUstream other = nullptr;
  ASSERT_OK(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING));
  ASSERT_OK(cuLaunchHostFunc(other, &Gate::block, &gate));
  ASSERT_OK(cuEventRecord(e, other));
  CUevent probe = nullptr;  // an event, not a host function: CUDA may serialise those
  ASSERT_OK(cuEventCreate(&probe, CU_EVENT_DISABLE_TIMING));
  ASSERT_OK(cuEventRecord(probe, s));
  EXPECT_TRUE(eventually([&] { return cuEventQuery(probe) == CUDA_SUCCESS; }));
  EXPECT_OK(cuEventDestroy_v2(probe));
  gate.release();
  ASSERT_OK(cuCtxSynchronize());
  EXPECT_OK(cuEventDestroy_v2(e));
  EXPECT_OK(cuStreamDestroy_v2(s));
  EXPECT_OK(cuStreamDestroy_v2(other));
}

}  // namespace
}  // namespace conformance

namespace conformance {
namespace {

// Issue 14: frameworks ask before every launch whether a stream is being captured. Nothing is
// (cuStreamBeginCapture is not supported yet), so every valid stream answers NONE.
TEST_F(Driver, NoStreamIsCapturing) {
  CUstream user = nullptr;
  ASSERT_OK(cuStreamCreate(&user, CU_STREAM_NON_BLOCKING));
  for (CUstream s :
       {static_cast<CUstream>(nullptr), CU_STREAM_LEGACY, CU_STREAM_PER_THREAD, user}) {
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
    EXPECT_OK(cuStreamIsCapturing(s, &status));
    EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_NONE);
    status = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
    EXPECT_OK(cuStreamIsCapturing_ptsz(s, &status));
    EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_NONE);
    cuuint64_t id = 0;
    status = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
    EXPECT_OK(cuStreamGetCaptureInfo(s, &status, &id));
    EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_NONE);
    EXPECT_OK(cuStreamGetCaptureInfo_ptsz(s, &status, &id));
    EXPECT_OK(cuStreamGetCaptureInfo_v2(s, &status, nullptr, nullptr, nullptr, nullptr));
    EXPECT_OK(cuStreamGetCaptureInfo_v2_ptsz(s, &status, nullptr, nullptr, nullptr, nullptr));
    EXPECT_OK(cuStreamGetCaptureInfo_v3(s, &status, nullptr, nullptr, nullptr, nullptr, nullptr));
    EXPECT_OK(
        cuStreamGetCaptureInfo_v3_ptsz(s, &status, nullptr, nullptr, nullptr, nullptr, nullptr));
    EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_NONE);
  }
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuStreamIsCapturing(user, nullptr));
  ASSERT_OK(cuStreamDestroy(user));
  CUstreamCaptureStatus status;
  EXPECT_NE(cuStreamIsCapturing(user, &status), CUDA_SUCCESS) << "a destroyed stream";
}

// Stream attributes (NVIDIA's simpleAttributes sets an L2 access policy window on a stream):
// defaults, round trips, CUDA's refusals and cuStreamCopyAttributes.
TEST_F(Stream, AttributesRoundTripAndAreValidated) {
  CUstream s = nullptr, other = nullptr;
  ASSERT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  ASSERT_OK(cuStreamCreate(&other, 0));
  CUstreamAttrValue v{};
  ASSERT_OK(cuStreamGetAttribute(s, CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW, &v));
  EXPECT_EQ(v.accessPolicyWindow.num_bytes, 0u) << "no window until one is set";
  ASSERT_OK(cuStreamGetAttribute(s, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, &v));
  EXPECT_EQ(static_cast<int>(v.syncPolicy), -1) << "oracle: NVIDIA's 580 reports -1 until set";

  int max_window = 0;
  ASSERT_OK(
      cuDeviceGetAttribute(&max_window, CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE, dev));
  DeviceBuffer buffer(1 << 20);
  CUstreamAttrValue window{};
  window.accessPolicyWindow.base_ptr = reinterpret_cast<void*>(buffer.ptr);
  window.accessPolicyWindow.num_bytes = std::min<size_t>(buffer.bytes, max_window);
  window.accessPolicyWindow.hitRatio = 0.6f;
  window.accessPolicyWindow.hitProp = CU_ACCESS_PROPERTY_PERSISTING;
  window.accessPolicyWindow.missProp = CU_ACCESS_PROPERTY_STREAMING;
  if (max_window > 0) {
    ASSERT_OK(cuStreamSetAttribute(s, CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW, &window));
    ASSERT_OK(cuStreamGetAttribute(s, CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW, &v));
    EXPECT_EQ(v.accessPolicyWindow.base_ptr, window.accessPolicyWindow.base_ptr);
    EXPECT_EQ(v.accessPolicyWindow.num_bytes, window.accessPolicyWindow.num_bytes);
    EXPECT_FLOAT_EQ(v.accessPolicyWindow.hitRatio, 0.6f);
    EXPECT_EQ(v.accessPolicyWindow.hitProp, CU_ACCESS_PROPERTY_PERSISTING);
    EXPECT_EQ(v.accessPolicyWindow.missProp, CU_ACCESS_PROPERTY_STREAMING);
    CUstreamAttrValue too_big = window;
    too_big.accessPolicyWindow.num_bytes = static_cast<size_t>(max_window) + 1;
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
              cuStreamSetAttribute(s, CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW, &too_big));
  }
  CUstreamAttrValue policy{};
  policy.syncPolicy = CU_SYNC_POLICY_BLOCKING_SYNC;
  ASSERT_OK(cuStreamSetAttribute(s, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, &policy));
  ASSERT_OK(cuStreamGetAttribute(s, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, &v));
  EXPECT_EQ(v.syncPolicy, CU_SYNC_POLICY_BLOCKING_SYNC);

  // Not attributes of streams, and missing values.
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
            cuStreamSetAttribute(s, CU_LAUNCH_ATTRIBUTE_COOPERATIVE, &policy));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
            cuStreamGetAttribute(s, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, &v));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
            cuStreamSetAttribute(s, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, nullptr));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
            cuStreamGetAttribute(s, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, nullptr));

  // The copy carries the window and the policy over.
  ASSERT_OK(cuStreamCopyAttributes(other, s));
  ASSERT_OK(cuStreamGetAttribute(other, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, &v));
  EXPECT_EQ(v.syncPolicy, CU_SYNC_POLICY_BLOCKING_SYNC);
  if (max_window > 0) {
    ASSERT_OK(cuStreamGetAttribute(other, CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW, &v));
    EXPECT_EQ(v.accessPolicyWindow.num_bytes, window.accessPolicyWindow.num_bytes);
  }
  // Persisting lines go back to normal (simpleAttributes does this after its kernels).
  EXPECT_OK(cuCtxResetPersistingL2Cache());
  // Work still runs on a stream with attributes.
  ASSERT_OK(cuMemsetD8Async(buffer.ptr, 0x5a, buffer.bytes, s));
  ASSERT_OK(cuStreamSynchronize(s));
  unsigned char byte = 0;
  ASSERT_OK(cuMemcpyDtoH_v2(&byte, buffer.ptr + 17, 1));
  EXPECT_EQ(byte, 0x5a);
  ASSERT_OK(cuStreamDestroy_v2(s));
  ASSERT_OK(cuStreamDestroy_v2(other));
  EXPECT_NE(cuStreamGetAttribute(s, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, &v), CUDA_SUCCESS)
      << "a destroyed stream";
}

}  // namespace
}  // namespace conformance
