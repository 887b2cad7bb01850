// Issue 17's small families: the legacy launch API (cuFuncSetBlockShape, cuFuncSetSharedSize,
// cuParamSet*, cuLaunch, cuLaunchGrid, cuLaunchGridAsync), cuCtxRecordEvent / cuCtxWaitEvent
// and cuStreamAttachMemAsync.
#include <nvrtc.h>

#include <cstdint>
#include <string>
#include <vector>

#include "conformance.hpp"
#include "nvrtc_compile.hpp"

namespace conformance {
namespace {

using LegacyLaunch = Driver;
using ContextEvent = Driver;
using AttachMem = Driver;

constexpr char kFillSource[] =
    R"(extern "C" __global__ void fill(unsigned* out, unsigned v, float f) {
  const unsigned block = blockIdx.y * gridDim.x + blockIdx.x;
  out[block * blockDim.x + threadIdx.x] = v + (unsigned)f + block;
}
)";

// NVRTC through cudamux's libnvrtc (the backend's compiler).
bool compile(const char* source, std::string& image, std::string& log) {
  return conformance::compile_ptx(source, "legacy.cu", image, log);
}

// The block shape, shared memory size and argument buffer are the function's state; each
// launch form uses them.
TEST_F(LegacyLaunch, StatePerFunction) {
  CUDAMUX_KNOWN_DIFFERENCE("hip", "the fake HIP runtime of the tests runs no kernels");
  CUDAMUX_SKIP_ON_ORACLE("NVIDIA's driver (580) crashed in this case; cudamux over it passes");
  std::string image, log;
  ASSERT_TRUE(compile(kFillSource, image, log)) << log;
  CUmodule m = nullptr;
  ASSERT_OK(cuModuleLoadData(&m, image.data()));
  CUfunction f = nullptr;
  ASSERT_OK(cuModuleGetFunction(&f, m, "fill"));
  DeviceBuffer buf(4 * 64);
  ASSERT_OK(cuMemsetD32_v2(buf.ptr, 0, 64));
  ASSERT_OK(cuFuncSetBlockShape(f, 4, 1, 1));
  ASSERT_OK(cuFuncSetSharedSize(f, 0));
  CUdeviceptr out = buf.ptr;
  ASSERT_OK(cuParamSetv(f, 0, &out, sizeof out));
  ASSERT_OK(cuParamSeti(f, 8, 100));
  ASSERT_OK(cuParamSetf(f, 12, 20.0f));
  ASSERT_OK(cuParamSetSize(f, 16));
  ASSERT_OK(cuLaunchGrid(f, 2, 3));  // 6 blocks of 4 threads
  ASSERT_OK(cuCtxSynchronize());
  std::vector<unsigned> got(64);
  ASSERT_OK(cuMemcpyDtoH_v2(got.data(), buf.ptr, 4 * 64));
  for (unsigned i = 0; i < 24; ++i) EXPECT_EQ(got[i], 120u + i / 4) << "thread " << i;
  EXPECT_EQ(got[24], 0u);
  // cuLaunch: one block; a new value for the second parameter.
  ASSERT_OK(cuMemsetD32_v2(buf.ptr, 0, 64));
  ASSERT_OK(cuParamSeti(f, 8, 1));
  ASSERT_OK(cuLaunch(f));
  ASSERT_OK(cuCtxSynchronize());
  ASSERT_OK(cuMemcpyDtoH_v2(got.data(), buf.ptr, 4 * 64));
  EXPECT_EQ(got[0], 21u);
  EXPECT_EQ(got[3], 21u);
  EXPECT_EQ(got[4], 0u);
  // cuLaunchGridAsync on a stream, with a wider block.
  ASSERT_OK(cuFuncSetBlockShape(f, 8, 1, 1));
  CUstream s = nullptr;
  ASSERT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  ASSERT_OK(cuLaunchGridAsync(f, 2, 1, s));
  ASSERT_OK(cuStreamSynchronize(s));
  ASSERT_OK(cuMemcpyDtoH_v2(got.data(), buf.ptr, 4 * 64));
  EXPECT_EQ(got[7], 21u);
  EXPECT_EQ(got[15], 22u);
  ASSERT_OK(cuStreamDestroy_v2(s));
  // Bad handles and shapes.
  CUfunction bad = reinterpret_cast<CUfunction>(0x10);
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuFuncSetBlockShape(bad, 1, 1, 1));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuParamSetSize(bad, 4));
  EXPECT_CU_CUDAMUX(CUDA_ERROR_INVALID_VALUE, cuFuncSetBlockShape(f, 0, 1, 1));
  EXPECT_CU_CUDAMUX(CUDA_ERROR_INVALID_VALUE, cuParamSeti(f, -4, 1));
  ASSERT_OK(cuModuleUnload(m));
}

// cuCtxRecordEvent captures all of the context's work so far; cuCtxWaitEvent holds back the
// context's streams until the event completes.
TEST_F(ContextEvent, RecordAndWait) {
  CUDAMUX_SKIP_ON_ORACLE("NVIDIA's driver (580) crashed in this case; cudamux over it passes");
  CUstream a = nullptr, b = nullptr;
  ASSERT_OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
  ASSERT_OK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
  CUevent e = nullptr;
  ASSERT_OK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
  Gate gate;
  ASSERT_OK(cuLaunchHostFunc(a, &Gate::block, &gate));
  ASSERT_OK(cuCtxRecordEvent(ctx, e));
  EXPECT_CU(CUDA_ERROR_NOT_READY, cuEventQuery(e)) << "stream a's work is not done";
  std::atomic<int> calls{0};
  ASSERT_OK(cuCtxWaitEvent(ctx, e));
  ASSERT_OK(cuLaunchHostFunc(b, &count_call, &calls));
  EXPECT_CU(CUDA_ERROR_NOT_READY, cuStreamQuery(b)) << "b waits for the event";
  EXPECT_EQ(calls.load(), 0);
  gate.release();
  ASSERT_OK(cuEventSynchronize(e));
  ASSERT_OK(cuStreamSynchronize(b));
  EXPECT_EQ(calls.load(), 1);
  EXPECT_FALSE(gate.timed_out.load());
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuCtxRecordEvent(ctx, reinterpret_cast<CUevent>(0x10)));
  ASSERT_OK(cuEventDestroy_v2(e));
  ASSERT_OK(cuStreamDestroy_v2(a));
  ASSERT_OK(cuStreamDestroy_v2(b));
}

TEST_F(AttachMem, ManagedMemory) {
  CUdeviceptr managed = 0;
  ASSERT_OK(cuMemAllocManaged(&managed, 4096, CU_MEM_ATTACH_GLOBAL));
  CUstream s = nullptr;
  ASSERT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  EXPECT_OK(cuStreamAttachMemAsync(s, managed, 0, CU_MEM_ATTACH_SINGLE));
  EXPECT_OK(cuStreamAttachMemAsync(s, managed, 4096, CU_MEM_ATTACH_HOST));
  EXPECT_OK(cuStreamAttachMemAsync_ptsz(s, managed, 0, CU_MEM_ATTACH_GLOBAL));
  ASSERT_OK(cuStreamSynchronize(s));
  // The memory stays usable from the host and the device.
  ASSERT_OK(cuMemsetD32_v2(managed, 7, 1024));
  ASSERT_OK(cuCtxSynchronize());
  EXPECT_EQ(*reinterpret_cast<unsigned*>(managed), 7u);
  // "It is illegal to attach singly to the NULL stream ... An error will be returned".
  EXPECT_NE(CUDA_SUCCESS, cuStreamAttachMemAsync(nullptr, managed, 0, CU_MEM_ATTACH_SINGLE));
  EXPECT_CU_CUDAMUX(CUDA_ERROR_INVALID_VALUE,
                    cuStreamAttachMemAsync(nullptr, managed, 0, CU_MEM_ATTACH_SINGLE));
  EXPECT_CU_CUDAMUX(CUDA_ERROR_INVALID_VALUE, cuStreamAttachMemAsync(s, managed, 0, 0));
  EXPECT_CU_CUDAMUX(CUDA_ERROR_INVALID_VALUE,
                    cuStreamAttachMemAsync(s, managed, 100, CU_MEM_ATTACH_GLOBAL));
  DeviceBuffer device(4096);
  EXPECT_CU_CUDAMUX(CUDA_ERROR_INVALID_VALUE,
                    cuStreamAttachMemAsync(s, device.ptr, 0, CU_MEM_ATTACH_GLOBAL));
  ASSERT_OK(cuStreamDestroy_v2(s));
  ASSERT_OK(cuMemFree_v2(managed));
}

}  // namespace
}  // namespace conformance
