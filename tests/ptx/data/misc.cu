// Fixture (-rdc): managed and extern variables, libcu++ atomics, alloca, nanosleep, trap,
// printf with many arguments, fast intrinsics, wmma, cache operators, fp8, texture and
// surface variants, sm_90 vector atomics and cuda::ptx wrappers.
#include <cuda/atomic>
#include <cuda/ptx>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <mma.h>
#include <cstdio>
using namespace nvcuda;
__device__ __managed__ int managed_x = 3;
extern __device__ int ext_sym;
__device__ int dev_fn_rdc(int a);
extern "C" __global__ void misc_atomics(int* p, float* f, size_t n) {
  cuda::atomic_ref<int, cuda::thread_scope_device> r(*p);
  r.fetch_add(1, cuda::memory_order_relaxed);
  r.store(5, cuda::memory_order_release);
  int v = r.load(cuda::memory_order_acquire);
  __nanosleep(100);
  if (v < 0) __trap();
  int* dyn = (int*)alloca(n * sizeof(int));
  for (size_t i = 0; i < n; ++i) dyn[i] = (int)i * v;
  p[1] = dyn[n / 2] + managed_x + dev_fn_rdc(ext_sym);
  printf("%d %f %s %p %lld %c\n", v, (double)f[0], "x", p, (long long)n, 'c');
  f[2] = __expf(f[3]) + __sinf(f[4]) + __fdividef(f[5], f[6]) + rsqrtf(f[7]) + __frcp_rn(f[8]);
  p[3] = __popc(v) + __clz(v) + __brev(v) + __byte_perm(v, 0, 0x3210) + __funnelshift_l(v, v, 3);
  p[4] = __vadd2(v, v) + __dp4a(v, v, v) + __sad(v, v, 1) + __mul24(v, v) + __umulhi(v, v);
}
extern "C" __global__ void misc_wmma(const half* a, const half* b, float* c) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
  wmma::fill_fragment(fc, 0.0f);
  wmma::load_matrix_sync(fa, a, 16);
  wmma::load_matrix_sync(fb, b, 16);
  wmma::mma_sync(fc, fa, fb, fc);
  wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}
extern "C" __global__ void misc_memory(float* f, double* d, half2* h, int4* v, __nv_fp8_e4m3* e,
                                       cudaTextureObject_t t, cudaSurfaceObject_t s) {
  int i = threadIdx.x;
  f[i] = __ldg(f + i + 1) + __ldcs(f + i + 2) + __ldlu(f + i + 3);
  __stcg(f + i, 1.0f);
  __stwt(f + i + 4, 2.0f);
  d[i] = __shfl_sync(~0u, d[i], 3);
  atomicAdd(h + i, __floats2half2_rn(1.f, 2.f));
  v[i] = __ldg(v + i + 1);
  e[i] = __nv_fp8_e4m3(f[i]);
  f[i + 5] = float(e[i + 1]);
  f[i + 6] = tex1Dfetch<float>(t, i) + tex3D<float>(t, 0.5f, 0.5f, 0.5f) +
             texCubemap<float>(t, 1.f, 0.f, 0.f) + tex2DLayered<float>(t, 0.5f, 0.5f, 1);
  float r;
  surf2Dread(&r, s, 0, 0);
  f[i + 7] = r;
  d[i + 1] = __dsqrt_rn(d[i]) + __fma_rz(d[i], d[i], d[i]);
#if __CUDA_ARCH__ >= 900
  atomicAdd(reinterpret_cast<float2*>(f), make_float2(1.f, 2.f));
  cuda::ptx::fence_proxy_async();
  f[i + 9] = cuda::ptx::get_sreg_clusterid_x();
#endif
}
