// Fixture: half and bfloat16 math (compute_80 for bf16 arithmetic).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
extern "C" __global__ void halfmath(__half* h, __half2* h2, __nv_bfloat16* b, float* f) {
  int i = threadIdx.x;
  __half x = h[i];
  h[i] = __hfma(x, __float2half(2.0f), __hneg(x));
  h2[i] = __hmul2(h2[i], __floats2half2_rn(0.5f, 1.5f));
  __nv_bfloat16 y = b[i];
  b[i] = __hadd(y, __float2bfloat16(1.0f));
  f[i] = __half2float(x) + __bfloat162float(y) + (__hlt(x, __float2half(0.f)) ? 1.f : 0.f);
}
