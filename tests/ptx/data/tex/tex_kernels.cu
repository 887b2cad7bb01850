// Texture and surface kernels for tests/ptx/texture_ptx_test.cpp (issue 15): compiled by nvcc
// to PTX (make_tex_ptx.sh; the .ptx is committed) and, with CUDAMUX_NVRTC_REF defined, by the
// mock's NVRTC, whose texture functions are the reference the PTX path must match. Kernels
// that need inline PTX (txq, suq, sured) exist only in the nvcc build.
#ifndef CUDAMUX_NVRTC_REF
#include <cuda_runtime.h>
#endif

#define IDX int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= n) return;

extern "C" __global__ void tex1d(cudaTextureObject_t t, const float* c, float4* out, int n) {
  IDX out[i] = tex1D<float4>(t, c[i]);
}
extern "C" __global__ void tex2d(cudaTextureObject_t t, const float* c, float4* out, int n) {
  IDX out[i] = tex2D<float4>(t, c[2 * i], c[2 * i + 1]);
}
extern "C" __global__ void tex2d_f(cudaTextureObject_t t, const float* c, float* out, int n) {
  IDX out[i] = tex2D<float>(t, c[2 * i], c[2 * i + 1]);
}
extern "C" __global__ void tex2d_i4(cudaTextureObject_t t, const float* c, int4* out, int n) {
  IDX out[i] = tex2D<int4>(t, c[2 * i], c[2 * i + 1]);
}
extern "C" __global__ void tex2d_u4(cudaTextureObject_t t, const float* c, uint4* out, int n) {
  IDX out[i] = tex2D<uint4>(t, c[2 * i], c[2 * i + 1]);
}
extern "C" __global__ void tex3d(cudaTextureObject_t t, const float* c, float4* out, int n) {
  IDX out[i] = tex3D<float4>(t, c[3 * i], c[3 * i + 1], c[3 * i + 2]);
}
extern "C" __global__ void tex1d_layered(cudaTextureObject_t t, const float* c, float4* out,
                                         int n, int layer) {
  IDX out[i] = tex1DLayered<float4>(t, c[i], layer);
}
extern "C" __global__ void tex2d_layered(cudaTextureObject_t t, const float* c, float4* out,
                                         int n, int layer) {
  IDX out[i] = tex2DLayered<float4>(t, c[2 * i], c[2 * i + 1], layer);
}
extern "C" __global__ void cube(cudaTextureObject_t t, const float* c, float4* out, int n) {
  IDX out[i] = texCubemap<float4>(t, c[3 * i], c[3 * i + 1], c[3 * i + 2]);
}
extern "C" __global__ void cube_layered(cudaTextureObject_t t, const float* c, float4* out,
                                        int n, int layer) {
  IDX out[i] = texCubemapLayered<float4>(t, c[3 * i], c[3 * i + 1], c[3 * i + 2], layer);
}
extern "C" __global__ void tex2d_lod(cudaTextureObject_t t, const float* c, float4* out, int n,
                                     float lod) {
  IDX out[i] = tex2DLod<float4>(t, c[2 * i], c[2 * i + 1], lod);
}
extern "C" __global__ void tex2d_grad(cudaTextureObject_t t, const float* c, float4* out, int n,
                                      float g) {
  IDX out[i] = tex2DGrad<float4>(t, c[2 * i], c[2 * i + 1], make_float2(g, 0), make_float2(0, g));
}
extern "C" __global__ void fetch_f4(cudaTextureObject_t t, float4* out, int n, int offset) {
  IDX out[i] = tex1Dfetch<float4>(t, i + offset);
}
extern "C" __global__ void fetch_i4(cudaTextureObject_t t, int4* out, int n, int offset) {
  IDX out[i] = tex1Dfetch<int4>(t, i + offset);
}
extern "C" __global__ void gather(cudaTextureObject_t t, const float* c, float4* out, int n) {
  IDX for (int k = 0; k < 4; ++k) out[4 * i + k] = tex2Dgather<float4>(t, c[2 * i], c[2 * i + 1], k);
}
extern "C" __global__ void gather_i(cudaTextureObject_t t, const float* c, int4* out, int n) {
  IDX out[i] = tex2Dgather<int4>(t, c[2 * i], c[2 * i + 1], 1);
}
// Surfaces: x in bytes. Each thread doubles-and-adds its element, through several widths.
extern "C" __global__ void surf2d_f(cudaSurfaceObject_t s, int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  if (x < w && y < h) surf2Dwrite(surf2Dread<float>(s, x * 4, y) * 2.0f + 1.0f, s, x * 4, y);
}
extern "C" __global__ void surf2d_uc4(cudaSurfaceObject_t s, int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  if (x >= w || y >= h) return;
  uchar4 v = surf2Dread<uchar4>(s, x * 4, y);
  surf2Dwrite(make_uchar4(v.w + 1, v.z, v.y, v.x), s, x * 4, y);
}
extern "C" __global__ void surf2d_s2(cudaSurfaceObject_t s, int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  if (x >= w || y >= h) return;
  short2 v = surf2Dread<short2>(s, x * 4, y);
  surf2Dwrite(make_short2(v.y, v.x - 3), s, x * 4, y);
}
extern "C" __global__ void surf2d_f4(cudaSurfaceObject_t s, int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  if (x >= w || y >= h) return;
  float4 v = surf2Dread<float4>(s, x * 16, y);
  surf2Dwrite(make_float4(v.w, v.z, v.y, v.x + 0.5f), s, x * 16, y);
}
extern "C" __global__ void surf2d_ll(cudaSurfaceObject_t s, int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  if (x >= w || y >= h) return;
  long long v = surf2Dread<long long>(s, x * 8, y);
  surf2Dwrite(v * 3 - 1, s, x * 8, y);
}
extern "C" __global__ void surf1d_f(cudaSurfaceObject_t s, int w) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  if (x < w) surf1Dwrite(surf1Dread<float>(s, x * 4) + 10.0f, s, x * 4);
}
extern "C" __global__ void surf3d_f(cudaSurfaceObject_t s, int w, int h, int d) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y, z = blockIdx.z;
  if (x < w && y < h && z < d) surf3Dwrite(surf3Dread<float>(s, x * 4, y, z) - 1.0f, s, x * 4, y, z);
}
extern "C" __global__ void surf2d_layered_f(cudaSurfaceObject_t s, int w, int h, int layer) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  if (x < w && y < h)
    surf2DLayeredwrite(surf2DLayeredread<float>(s, x * 4, y, layer) * 4.0f, s, x * 4, y, layer);
}
extern "C" __global__ void surf_edges(cudaSurfaceObject_t s, float* out, int w) {
  out[0] = surf2Dread<float>(s, -4, 0, cudaBoundaryModeZero);
  out[1] = surf2Dread<float>(s, w * 4, 0, cudaBoundaryModeClamp);
  out[2] = surf2Dread<float>(s, -4, 1, cudaBoundaryModeClamp);
  surf2Dwrite(99.0f, s, w * 4, 0, cudaBoundaryModeZero);
  surf2Dwrite(77.0f, s, w * 4 + 8, 1, cudaBoundaryModeClamp);
}
extern "C" __global__ void surf_trap(cudaSurfaceObject_t s, float* out, int w) {
  out[0] = surf2Dread<float>(s, w * 4, 0, cudaBoundaryModeTrap);
}

// ---- nvcc only (the test cuts the NVRTC source here) ----
#ifndef CUDAMUX_NVRTC_REF
// Queries (no CUDA C++ function emits txq / suq): out[] as the PTX ISA lists them.
extern "C" __global__ void queries(cudaTextureObject_t t, cudaSurfaceObject_t s, int* out) {
  int v;
  asm("txq.width.b32 %0, [%1];" : "=r"(v) : "l"(t)); out[0] = v;
  asm("txq.height.b32 %0, [%1];" : "=r"(v) : "l"(t)); out[1] = v;
  asm("txq.depth.b32 %0, [%1];" : "=r"(v) : "l"(t)); out[2] = v;
  asm("txq.num_mipmap_levels.b32 %0, [%1];" : "=r"(v) : "l"(t)); out[3] = v;
  asm("txq.normalized_coords.b32 %0, [%1];" : "=r"(v) : "l"(t)); out[4] = v;
  asm("txq.filter_mode.b32 %0, [%1];" : "=r"(v) : "l"(t)); out[5] = v;
  asm("txq.addr_mode_0.b32 %0, [%1];" : "=r"(v) : "l"(t)); out[6] = v;
  asm("txq.addr_mode_1.b32 %0, [%1];" : "=r"(v) : "l"(t)); out[7] = v;
  asm("txq.channel_data_type.b32 %0, [%1];" : "=r"(v) : "l"(t)); out[8] = v;
  asm("txq.channel_order.b32 %0, [%1];" : "=r"(v) : "l"(t)); out[9] = v;
  asm("txq.level.width.b32 %0, [%1], %2;" : "=r"(v) : "l"(t), "r"(1)); out[10] = v;
  asm("suq.width.b32 %0, [%1];" : "=r"(v) : "l"(s)); out[11] = v;
  asm("suq.height.b32 %0, [%1];" : "=r"(v) : "l"(s)); out[12] = v;
  asm("suq.depth.b32 %0, [%1];" : "=r"(v) : "l"(s)); out[13] = v;
  asm("suq.channel_data_type.b32 %0, [%1];" : "=r"(v) : "l"(s)); out[14] = v;
  asm("suq.array_size.b32 %0, [%1];" : "=r"(v) : "l"(s)); out[15] = v;
}
// sured (no CUDA C++ function emits it): atomic add into a u32 surface, every thread of a
// column onto the same element.
extern "C" __global__ void sured_add(cudaSurfaceObject_t s, int w) {
  int x = (blockIdx.x * blockDim.x + threadIdx.x) % w;
  asm volatile("sured.b.add.2d.u32.trap [%0, {%1, %2}], %3;" ::"l"(s), "r"(x * 4), "r"(0), "r"(1));
}
#endif
