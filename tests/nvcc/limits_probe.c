/* Issue 14, GPU machine: every cuCtxGetLimit of CUDA 13.0 and the refusals of cuCtxSetLimit,
   printed so that NVIDIA's driver and cudamux (cuda backend) can be diffed line by line
   (scripts/gpu-nvcc.sh). cuBLAS asks CU_LIMIT_CIG_ENABLED before it runs its kernels. */
#include <cuda.h>
#include <stdio.h>

int main(void) {
  CUdevice dev;
  CUcontext ctx;
  if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
      cuCtxSetCurrent(ctx))
    return 1;
  for (int limit = 0; limit <= CU_LIMIT_MAX; ++limit) {
    size_t value = 0;
    CUresult r = cuCtxGetLimit(&value, (CUlimit)limit);
    printf("get %d -> %d value %zu\n", limit, (int)r, r == CUDA_SUCCESS ? value : 0);
  }
  for (int limit = CU_LIMIT_SHMEM_SIZE; limit <= CU_LIMIT_MAX; ++limit)
    printf("set %d 0 -> %d\n", limit, (int)cuCtxSetLimit((CUlimit)limit, 0));
  printf("set heap 64MiB -> %d\n", (int)cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 64u << 20));
  size_t heap = 0;
  cuCtxGetLimit(&heap, CU_LIMIT_MALLOC_HEAP_SIZE);
  printf("heap now %zu\n", heap);
  return 0;
}
