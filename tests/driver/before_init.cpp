// Calls before cuInit: a process of its own (cuInit cannot be undone). Every function that
// needs the driver returns CUDA_ERROR_NOT_INITIALIZED; the few that CUDA allows before
// cuInit work; cuInit(1) is rejected without initialising; cuInit(0) then succeeds.
#include <cuda.h>

#include <cstdio>
#include <cstring>
#include <string>

namespace {

int failures = 0;

void expect(CUresult want, CUresult got, const char* call) {
  if (want == got) return;
  const char* w = nullptr;
  const char* g = nullptr;
  cuGetErrorName(want, &w);
  cuGetErrorName(got, &g);
  std::printf("FAILED: %s returned %s (%d), expected %s\n", call, g ? g : "?",
              static_cast<int>(got), w ? w : "?");
  ++failures;
}
#define EXPECT(want, call) expect(want, call, #call)
#define NOT_INIT(call) expect(CUDA_ERROR_NOT_INITIALIZED, call, #call)

void CUDA_CB host_fn(void*) {}

}  // namespace

int main() {
  // What CUDA allows before cuInit.
  int version = 0;
  EXPECT(CUDA_SUCCESS, cuDriverGetVersion(&version));
  if (version < CUDA_VERSION) {
    std::printf("FAILED: cuDriverGetVersion reported %d before cuInit\n", version);
    ++failures;
  }
  const char* name = nullptr;
  EXPECT(CUDA_SUCCESS, cuGetErrorName(CUDA_ERROR_NOT_INITIALIZED, &name));
  if (!name || std::strcmp(name, "CUDA_ERROR_NOT_INITIALIZED") != 0) {
    std::printf("FAILED: cuGetErrorName before cuInit gave %s\n", name ? name : "(null)");
    ++failures;
  }
  EXPECT(CUDA_SUCCESS, cuGetErrorString(CUDA_ERROR_INVALID_VALUE, &name));
  // cuGetProcAddress works before cuInit (the CUDA runtime fetches cuInit itself this way).
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  EXPECT(CUDA_SUCCESS,
         cuGetProcAddress_v2("cuInit", &fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &status));
  if (!fn || status != CU_GET_PROC_ADDRESS_SUCCESS) {
    std::printf("FAILED: cuGetProcAddress(\"cuInit\") before cuInit gave no function\n");
    ++failures;
  }
  void* get_count = nullptr;
  EXPECT(CUDA_SUCCESS, cuGetProcAddress_v2("cuDeviceGetCount", &get_count, CUDA_VERSION,
                                           CU_GET_PROC_ADDRESS_DEFAULT, &status));
  int via_proc = -1;
  if (get_count)
    EXPECT(CUDA_ERROR_NOT_INITIALIZED, reinterpret_cast<CUresult (*)(int*)>(get_count)(&via_proc));

  // Everything else.
  int count = 0, value = 0;
  CUdevice dev = 0;
  char buf[64];
  size_t bytes = 0, free = 0;
  CUuuid uuid;
  CUcontext ctx = nullptr;
  CUdeviceptr dptr = 0;
  void* host = nullptr;
  CUstream stream = nullptr;
  CUevent event = nullptr;
  unsigned flags = 0;
  int active = 0;
  CUdevprop prop;
  NOT_INIT(cuDeviceGetCount(&count));
  NOT_INIT(cuDeviceGet(&dev, 0));
  NOT_INIT(cuDeviceGetName(buf, sizeof buf, 0));
  NOT_INIT(cuDeviceGetUuid_v2(&uuid, 0));
  NOT_INIT(cuDeviceTotalMem_v2(&bytes, 0));
  NOT_INIT(cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 0));
  NOT_INIT(cuDeviceGetProperties(&prop, 0));
  NOT_INIT(cuDeviceComputeCapability(&value, &count, 0));
  NOT_INIT(cuDeviceGetPCIBusId(buf, sizeof buf, 0));
  NOT_INIT(cuDeviceGetByPCIBusId(&dev, "0000:00:00.0"));
  NOT_INIT(cuDeviceCanAccessPeer(&value, 0, 0));
  NOT_INIT(cuDevicePrimaryCtxRetain(&ctx, 0));
  NOT_INIT(cuDevicePrimaryCtxGetState(0, &flags, &active));
  NOT_INIT(cuDevicePrimaryCtxRelease_v2(0));
  NOT_INIT(cuDevicePrimaryCtxReset_v2(0));
  NOT_INIT(cuDevicePrimaryCtxSetFlags_v2(0, 0));
  NOT_INIT(cuCtxCreate_v2(&ctx, 0, 0));
  NOT_INIT(cuCtxCreate_v4(&ctx, nullptr, 0, 0));
  NOT_INIT(cuCtxGetCurrent(&ctx));
  NOT_INIT(cuCtxSetCurrent(nullptr));
  NOT_INIT(cuCtxPushCurrent_v2(nullptr));
  NOT_INIT(cuCtxPopCurrent_v2(&ctx));
  NOT_INIT(cuCtxGetDevice(&dev));
  NOT_INIT(cuCtxSynchronize());
  NOT_INIT(cuCtxGetLimit(&bytes, CU_LIMIT_STACK_SIZE));
  NOT_INIT(cuMemAlloc_v2(&dptr, 16));
  NOT_INIT(cuMemFree_v2(0));
  NOT_INIT(cuMemGetInfo_v2(&free, &bytes));
  NOT_INIT(cuMemAllocHost_v2(&host, 16));
  NOT_INIT(cuMemFreeHost(nullptr));
  NOT_INIT(cuMemHostRegister_v2(buf, sizeof buf, 0));
  NOT_INIT(cuMemcpyHtoD_v2(dptr, buf, 16));
  NOT_INIT(cuMemcpyHtoD_v2_ptds(dptr, buf, 16));
  NOT_INIT(cuMemcpyAsync_ptsz(dptr, dptr, 16, nullptr));
  NOT_INIT(cuMemsetD8_v2(dptr, 0, 16));
  NOT_INIT(cuPointerGetAttribute(&value, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, dptr));
  NOT_INIT(cuStreamCreate(&stream, 0));
  NOT_INIT(cuStreamQuery(nullptr));
  NOT_INIT(cuStreamSynchronize_ptsz(nullptr));
  NOT_INIT(cuLaunchHostFunc(nullptr, &host_fn, nullptr));
  NOT_INIT(cuEventCreate(&event, 0));
  NOT_INIT(cuEventQuery(nullptr));

  // A rejected cuInit initialises nothing.
  EXPECT(CUDA_ERROR_INVALID_VALUE, cuInit(1));
  NOT_INIT(cuDeviceGetCount(&count));
  EXPECT(CUDA_SUCCESS, reinterpret_cast<CUresult (*)(unsigned)>(fn)(0));  // cuInit via the pointer
  EXPECT(CUDA_SUCCESS, cuDeviceGetCount(&count));
  if (count < 1) {
    std::printf("FAILED: no devices after cuInit\n");
    ++failures;
  }
  EXPECT(CUDA_SUCCESS, cuCtxGetCurrent(&ctx));
  EXPECT(CUDA_ERROR_INVALID_VALUE, cuInit(1));
  EXPECT(CUDA_SUCCESS, cuInit(0));

  if (failures) {
    std::printf("%d failure(s)\n", failures);
    return 1;
  }
  std::printf("before_init: all checks passed\n");
  return 0;
}
