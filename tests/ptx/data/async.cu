// Fixture (compute_80): cp.async pipelines.
#include <cuda_pipeline.h>
extern "C" __global__ void async_copy(const float4* in, float4* out) {
  __shared__ float4 buf[64];
  __pipeline_memcpy_async(&buf[threadIdx.x], &in[threadIdx.x], sizeof(float4));
  __pipeline_commit();
  __pipeline_wait_prior(0);
  __syncthreads();
  out[threadIdx.x] = buf[63 - threadIdx.x];
}
