// Handles of one kind passed where another kind is expected, garbage handles, and the
// reserved values: each is rejected with CUDA's error code and harms no live object.
#include <vector>

#include "conformance.hpp"

namespace conformance {
namespace {

using Handles = Driver;

template <class To, class From>
To as(From h) {
  return reinterpret_cast<To>(h);
}

TEST_F(Handles, WrongKindOfHandleIsRejected) {
  // Several live objects of each kind, so that any handle aliasing between kinds shows.
  std::vector<CUcontext> ctxs{ctx};
  std::vector<CUstream> streams;
  std::vector<CUevent> events;
  for (int i = 0; i < 6; ++i) {
    CUcontext c = nullptr;
    ASSERT_OK(cuCtxCreate_v2(&c, 0, dev));
    ASSERT_OK(cuCtxPopCurrent_v2(nullptr));
    ctxs.push_back(c);
    CUstream s = nullptr;
    ASSERT_OK(cuStreamCreate(&s, 0));
    streams.push_back(s);
    CUevent e = nullptr;
    ASSERT_OK(cuEventCreate(&e, 0));
    events.push_back(e);
  }
  unsigned long long id = 0;
  for (CUstream s : streams) {
    EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuEventQuery(as<CUevent>(s)));
    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxGetId(as<CUcontext>(s), &id));
  }
  for (CUevent e : events) {
    EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuStreamQuery(as<CUstream>(e)));
    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxGetId(as<CUcontext>(e), &id));
  }
  for (CUcontext c : ctxs) {
    EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuStreamQuery(as<CUstream>(c)));
    EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuEventQuery(as<CUevent>(c)));
  }
  // Everything is still alive and of its own kind.
  for (CUstream s : streams) EXPECT_OK(cuStreamQuery(s));
  for (CUevent e : events) EXPECT_OK(cuEventQuery(e));
  for (CUcontext c : ctxs) EXPECT_OK(cuCtxGetId(c, &id));
  for (CUevent e : events) EXPECT_OK(cuEventDestroy_v2(e));
  for (CUstream s : streams) EXPECT_OK(cuStreamDestroy_v2(s));
  for (size_t i = 1; i < ctxs.size(); ++i) EXPECT_OK(cuCtxDestroy_v2(ctxs[i]));
}

TEST_F(Handles, GarbageAndReservedValues) {
  const std::uintptr_t garbage[] = {
      0x3, 0x10, 0xc0, 0xc1, 0x1c0, 0xdeadbeef, 0xffffffffffffffc0, ~std::uintptr_t{0}};
  unsigned flags = 0;
  unsigned long long id = 0;
  for (std::uintptr_t g : garbage) {
    EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuStreamQuery(as<CUstream>(g))) << g;
    EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuStreamGetFlags(as<CUstream>(g), &flags)) << g;
    EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuStreamDestroy_v2(as<CUstream>(g))) << g;
    EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuEventQuery(as<CUevent>(g))) << g;
    EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuEventDestroy_v2(as<CUevent>(g))) << g;
    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxGetId(as<CUcontext>(g), &id)) << g;
    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxPushCurrent_v2(as<CUcontext>(g))) << g;
    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxSetCurrent(as<CUcontext>(g))) << g;
    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxDestroy_v2(as<CUcontext>(g))) << g;
  }
  // The reserved stream values are not events or contexts.
  for (CUstream s : {CU_STREAM_LEGACY, CU_STREAM_PER_THREAD}) {
    EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuEventQuery(as<CUevent>(s)));
    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxGetId(as<CUcontext>(s), &id));
  }
  CUcontext current = nullptr;
  ASSERT_OK(cuCtxGetCurrent(&current));
  EXPECT_EQ(current, ctx);
}

}  // namespace
}  // namespace conformance
