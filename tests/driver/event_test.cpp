// Events: flags, record, query, synchronize, elapsed time, destroy.
#include <thread>

#include "conformance.hpp"

namespace conformance {
namespace {

using Event = Driver;

void CUDA_CB sleep_20ms(void*) { std::this_thread::sleep_for(std::chrono::milliseconds(20)); }

TEST_F(Event, CreateFlags) {
  for (unsigned flags : {unsigned{CU_EVENT_DEFAULT}, unsigned{CU_EVENT_BLOCKING_SYNC},
                         unsigned{CU_EVENT_DISABLE_TIMING},
                         unsigned{CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING}}) {
    CUevent e = nullptr;
    ASSERT_OK(cuEventCreate(&e, flags)) << flags;
    EXPECT_OK(cuEventRecord(e, nullptr));
    EXPECT_OK(cuEventSynchronize(e));
    EXPECT_OK(cuEventDestroy_v2(e));
  }
  CUevent e = nullptr;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuEventCreate(&e, 0x100));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuEventCreate(&e, CU_EVENT_INTERPROCESS))
      << "interprocess events must disable timing";
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuEventCreate(nullptr, 0));
  std::thread([] {
    CUevent x = nullptr;
    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuEventCreate(&x, 0));
  }).join();
}

TEST_F(Event, NeverRecordedEventIsComplete) {
  CUevent e = nullptr;
  ASSERT_OK(cuEventCreate(&e, 0));
  EXPECT_OK(cuEventQuery(e));
  EXPECT_OK(cuEventSynchronize(e));
  EXPECT_OK(cuEventDestroy_v2(e));
}

TEST_F(Event, RecordQuerySynchronizeFollowTheWork) {
  CUstream s = nullptr;
  ASSERT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUevent e = nullptr;
  ASSERT_OK(cuEventCreate(&e, CU_EVENT_BLOCKING_SYNC));
  Gate gate;
  ASSERT_OK(cuLaunchHostFunc(s, &Gate::block, &gate));
  ASSERT_OK(cuEventRecord(e, s));
  EXPECT_CU(CUDA_ERROR_NOT_READY, cuEventQuery(e));
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    gate.release();
  });
  EXPECT_OK(cuEventSynchronize(e));
  EXPECT_OK(cuEventQuery(e));
  opener.join();
  EXPECT_FALSE(gate.timed_out);
  // Re-recording makes it pending again, and it completes again.
  Gate second;
  ASSERT_OK(cuLaunchHostFunc(s, &Gate::block, &second));
  ASSERT_OK(cuEventRecordWithFlags(e, s, CU_EVENT_RECORD_DEFAULT));
  EXPECT_CU(CUDA_ERROR_NOT_READY, cuEventQuery(e));
  second.release();
  EXPECT_OK(cuEventSynchronize(e));
  ASSERT_OK(cuEventRecordWithFlags(e, s, CU_EVENT_RECORD_EXTERNAL));
  EXPECT_OK(cuEventSynchronize(e));
  EXPECT_OK(cuEventDestroy_v2(e));
  EXPECT_OK(cuStreamDestroy_v2(s));
}

TEST_F(Event, RecordRejectsBadArguments) {
  CUevent e = nullptr;
  CUstream s = nullptr;
  ASSERT_OK(cuEventCreate(&e, 0));
  ASSERT_OK(cuStreamCreate(&s, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuEventRecordWithFlags(e, s, 0x8));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuEventRecord(nullptr, s));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuEventRecord(reinterpret_cast<CUevent>(0xabc0), s));
  ASSERT_OK(cuStreamDestroy_v2(s));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuEventRecord(e, s)) << "destroyed stream";
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuEventRecordWithFlags(e, s, 0));
  // An event and a stream of different contexts.
  CUcontext other = nullptr;
  ASSERT_OK(cuCtxCreate_v2(&other, 0, dev));
  CUstream foreign = nullptr;
  ASSERT_OK(cuStreamCreate(&foreign, 0));
  ASSERT_OK(cuCtxPopCurrent_v2(nullptr));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuEventRecord(e, foreign));
  ASSERT_OK(cuCtxDestroy_v2(other));  // destroys its streams
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuStreamQuery(foreign));
  ASSERT_OK(cuEventDestroy_v2(e));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuEventRecord(e, nullptr)) << "destroyed event";
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuEventQuery(e));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuEventSynchronize(e));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuEventDestroy_v2(e));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuEventDestroy(e));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuEventQuery(nullptr));
  // An event dies with its context.
  ASSERT_OK(cuCtxCreate_v2(&other, 0, dev));
  CUevent orphan = nullptr;
  ASSERT_OK(cuEventCreate(&orphan, 0));
  ASSERT_OK(cuCtxDestroy_v2(other));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuEventQuery(orphan));
}

TEST_F(Event, ElapsedTimeIsNonNegativeAndMonotone) {
  CUstream s = nullptr;
  ASSERT_OK(cuStreamCreate(&s, 0));
  CUevent e[4];
  for (auto& x : e) ASSERT_OK(cuEventCreate(&x, CU_EVENT_DEFAULT));
  ASSERT_OK(cuEventRecord(e[0], s));
  ASSERT_OK(cuLaunchHostFunc(s, &sleep_20ms, nullptr));
  ASSERT_OK(cuEventRecord(e[1], s));
  ASSERT_OK(cuEventRecord(e[2], s));  // nothing in between
  ASSERT_OK(cuLaunchHostFunc(s, &sleep_20ms, nullptr));
  ASSERT_OK(cuEventRecord(e[3], s));
  ASSERT_OK(cuEventSynchronize(e[3]));
  float t01 = -1, t12 = -1, t23 = -1, t03 = -1, t03_v1 = -1;
  ASSERT_OK(cuEventElapsedTime_v2(&t01, e[0], e[1]));
  ASSERT_OK(cuEventElapsedTime_v2(&t12, e[1], e[2]));
  ASSERT_OK(cuEventElapsedTime_v2(&t23, e[2], e[3]));
  ASSERT_OK(cuEventElapsedTime_v2(&t03, e[0], e[3]));
  ASSERT_OK(cuEventElapsedTime(&t03_v1, e[0], e[3]));
  EXPECT_GE(t01, 15.0f) << "a 20 ms host function lies between the events";
  EXPECT_GE(t12, 0.0f);
  EXPECT_GE(t23, 15.0f);
  EXPECT_GE(t03, t01);
  EXPECT_GE(t03, t23);
  EXPECT_NEAR(t03, t01 + t12 + t23, 1.0f);
  EXPECT_FLOAT_EQ(t03, t03_v1);
  float same = -1;
  ASSERT_OK(cuEventElapsedTime_v2(&same, e[1], e[1]));
  EXPECT_FLOAT_EQ(same, 0.0f);
  for (auto& x : e) EXPECT_OK(cuEventDestroy_v2(x));
  EXPECT_OK(cuStreamDestroy_v2(s));
}

TEST_F(Event, ElapsedTimeErrors) {
  CUevent a = nullptr, b = nullptr, untimed = nullptr, never = nullptr;
  ASSERT_OK(cuEventCreate(&a, 0));
  ASSERT_OK(cuEventCreate(&b, 0));
  ASSERT_OK(cuEventCreate(&untimed, CU_EVENT_DISABLE_TIMING));
  ASSERT_OK(cuEventCreate(&never, 0));
  ASSERT_OK(cuEventRecord(a, nullptr));
  ASSERT_OK(cuEventRecord(untimed, nullptr));
  float ms = 0;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuEventElapsedTime_v2(nullptr, a, a));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuEventElapsedTime_v2(&ms, a, untimed));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuEventElapsedTime_v2(&ms, untimed, a));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuEventElapsedTime_v2(&ms, a, never)) << "never recorded";
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuEventElapsedTime_v2(&ms, nullptr, a));
  // Not complete yet.
  CUstream s = nullptr;
  ASSERT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  Gate gate;
  ASSERT_OK(cuLaunchHostFunc(s, &Gate::block, &gate));
  ASSERT_OK(cuEventRecord(b, s));
  ASSERT_OK(cuEventSynchronize(a));
  EXPECT_CU(CUDA_ERROR_NOT_READY, cuEventElapsedTime_v2(&ms, a, b));
  EXPECT_CU(CUDA_ERROR_NOT_READY, cuEventElapsedTime(&ms, a, b));
  gate.release();
  ASSERT_OK(cuEventSynchronize(b));
  EXPECT_OK(cuEventElapsedTime_v2(&ms, a, b));
  EXPECT_GE(ms, 0.0f);
  ASSERT_OK(cuEventDestroy_v2(b));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuEventElapsedTime_v2(&ms, a, b)) << "destroyed";
  for (CUevent e : {a, untimed, never}) EXPECT_OK(cuEventDestroy_v2(e));
  EXPECT_OK(cuStreamDestroy_v2(s));
}

TEST_F(Event, DestroyWhileRecordIsPending) {
  CUstream s = nullptr;
  ASSERT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUevent e = nullptr;
  ASSERT_OK(cuEventCreate(&e, 0));
  Gate gate;
  std::atomic<int> calls{0};
  ASSERT_OK(cuLaunchHostFunc(s, &Gate::block, &gate));
  ASSERT_OK(cuEventRecord(e, s));
  ASSERT_OK(cuLaunchHostFunc(s, &count_call, &calls));
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    gate.release();
  });
  // CUDA: destroying an event whose record is pending "does not block on completion of
  // the event"; the record and the work after it still complete.
  const auto start = std::chrono::steady_clock::now();
  EXPECT_OK(cuEventDestroy_v2(e));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(300))
      << "cuEventDestroy waited for the pending record";
  opener.join();
  ASSERT_OK(cuStreamSynchronize(s));
  EXPECT_EQ(calls.load(), 1);
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuEventQuery(e));
  EXPECT_OK(cuStreamDestroy_v2(s));
}

}  // namespace
}  // namespace conformance
