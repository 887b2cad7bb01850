// Warp-level matrix kernels (issue 15 item 2): mma.sync through inline PTX in every sm_80 shape
// the mock executes, ldmatrix/movmatrix, and nvcuda::wmma. Each kernel takes (A, B, C, D); a warp
// handles one tile (tile = global warp index), operands row-major unless the name says col.
// Fragments are built by hand from the PTX ISA's layouts ("Matrix fragments for mma.m16n8k*"),
// as real code does. Shared by tests/nvcc/tensor_cores.cu (built by nvcc, run on the mock and
// on GPUs) and tests/ptx/mma_test.cpp (this file's PTX, mma.compute_80.ptx, through the driver).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>
#include <stdint.h>

#define TILE_SETUP                                                              \
  const unsigned lane = threadIdx.x % 32u;                                      \
  const unsigned tile = blockIdx.x * (blockDim.x / 32u) + threadIdx.x / 32u;    \
  const unsigned g = lane / 4u, t = lane % 4u;                                  \
  (void)g;                                                                      \
  (void)t;

__device__ inline uint32_t pack16(const uint16_t* p, unsigned lo, unsigned hi) {
  return static_cast<uint32_t>(p[lo]) | static_cast<uint32_t>(p[hi]) << 16;
}
__device__ inline uint32_t pack8(const uint8_t* p, unsigned i0, unsigned stride) {
  return static_cast<uint32_t>(p[i0]) | static_cast<uint32_t>(p[i0 + stride]) << 8 |
         static_cast<uint32_t>(p[i0 + 2 * stride]) << 16 |
         static_cast<uint32_t>(p[i0 + 3 * stride]) << 24;
}

// 16x16 (f16/bf16) A, 16x8 B, 16x8 C/D: a[r] row g + 8 (r & 1), columns 2t + 8 (r >> 1), +1;
// b[r] rows 2t + 8r, +1, column g; c[r] row g + 8 (r >> 1), column 2t + (r & 1).
__device__ inline void frag_a16(const uint16_t* A, unsigned K, unsigned g, unsigned t, uint32_t* a,
                                unsigned n) {
  for (unsigned r = 0; r < n; ++r) {
    const unsigned row = g + 8 * (r & 1), col = 2 * t + 8 * (r >> 1);
    a[r] = pack16(A, row * K + col, row * K + col + 1);
  }
}
__device__ inline void frag_b16(const uint16_t* B, unsigned g, unsigned t, uint32_t* b, unsigned n) {
  for (unsigned r = 0; r < n; ++r) {
    const unsigned k = 2 * t + 8 * r;
    b[r] = pack16(B, k * 8 + g, (k + 1) * 8 + g);
  }
}
__device__ inline unsigned cidx(unsigned g, unsigned t, unsigned r) {
  return (g + 8 * (r >> 1)) * 8 + 2 * t + (r & 1);
}

extern "C" __global__ void mma_f16_f32_k16(const uint16_t* A, const uint16_t* B, const float* C,
                                           float* D) {
  TILE_SETUP
  A += tile * 256;
  B += tile * 128;
  C += tile * 128;
  D += tile * 128;
  uint32_t a[4], b[2];
  float c[4], d[4];
  frag_a16(A, 16, g, t, a, 4);
  frag_b16(B, g, t, b, 2);
  for (unsigned r = 0; r < 4; ++r) c[r] = C[cidx(g, t, r)];
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%10,%11,%12,%13};"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]),
        "f"(c[2]), "f"(c[3]));
  for (unsigned r = 0; r < 4; ++r) D[cidx(g, t, r)] = d[r];
}

// f16 accumulators: c[r] (r = 0, 1) packs row g + 8r, columns 2t, 2t + 1.
extern "C" __global__ void mma_f16_f16_k16(const uint16_t* A, const uint16_t* B, const uint16_t* C,
                                           uint16_t* D) {
  TILE_SETUP
  A += tile * 256;
  B += tile * 128;
  C += tile * 128;
  D += tile * 128;
  uint32_t a[4], b[2], c[2], d[2];
  frag_a16(A, 16, g, t, a, 4);
  frag_b16(B, g, t, b, 2);
  for (unsigned r = 0; r < 2; ++r) c[r] = pack16(C, (g + 8 * r) * 8 + 2 * t, (g + 8 * r) * 8 + 2 * t + 1);
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0,%1}, {%2,%3,%4,%5}, {%6,%7}, {%8,%9};"
      : "=r"(d[0]), "=r"(d[1])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(c[0]), "r"(c[1]));
  for (unsigned r = 0; r < 2; ++r) {
    D[(g + 8 * r) * 8 + 2 * t] = static_cast<uint16_t>(d[r]);
    D[(g + 8 * r) * 8 + 2 * t + 1] = static_cast<uint16_t>(d[r] >> 16);
  }
}

// m16n8k8: A 16x8, B 8x8.
extern "C" __global__ void mma_f16_f32_k8(const uint16_t* A, const uint16_t* B, const float* C,
                                          float* D) {
  TILE_SETUP
  A += tile * 128;
  B += tile * 64;
  C += tile * 128;
  D += tile * 128;
  uint32_t a[2], b[1];
  float c[4], d[4];
  frag_a16(A, 8, g, t, a, 2);
  frag_b16(B, g, t, b, 1);
  for (unsigned r = 0; r < 4; ++r) c[r] = C[cidx(g, t, r)];
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, "
      "{%7,%8,%9,%10};"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(b[0]), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
  for (unsigned r = 0; r < 4; ++r) D[cidx(g, t, r)] = d[r];
}

extern "C" __global__ void mma_bf16_f32_k16(const uint16_t* A, const uint16_t* B, const float* C,
                                            float* D) {
  TILE_SETUP
  A += tile * 256;
  B += tile * 128;
  C += tile * 128;
  D += tile * 128;
  uint32_t a[4], b[2];
  float c[4], d[4];
  frag_a16(A, 16, g, t, a, 4);
  frag_b16(B, g, t, b, 2);
  for (unsigned r = 0; r < 4; ++r) c[r] = C[cidx(g, t, r)];
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%10,%11,%12,%13};"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]),
        "f"(c[2]), "f"(c[3]));
  for (unsigned r = 0; r < 4; ++r) D[cidx(g, t, r)] = d[r];
}

// tf32 m16n8k8: a[r] row g + 8 (r & 1), column t + 4 (r >> 1); b[r] row t + 4r, column g.
extern "C" __global__ void mma_tf32_k8(const uint32_t* A, const uint32_t* B, const float* C,
                                       float* D) {
  TILE_SETUP
  A += tile * 128;
  B += tile * 64;
  C += tile * 128;
  D += tile * 128;
  uint32_t a[4], b[2];
  float c[4], d[4];
  for (unsigned r = 0; r < 4; ++r) a[r] = A[(g + 8 * (r & 1)) * 8 + t + 4 * (r >> 1)];
  for (unsigned r = 0; r < 2; ++r) b[r] = B[(t + 4 * r) * 8 + g];
  for (unsigned r = 0; r < 4; ++r) c[r] = C[cidx(g, t, r)];
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%10,%11,%12,%13};"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]),
        "f"(c[2]), "f"(c[3]));
  for (unsigned r = 0; r < 4; ++r) D[cidx(g, t, r)] = d[r];
}

// tf32 m16n8k4: a[r] row g + 8r, column t; b row t, column g.
extern "C" __global__ void mma_tf32_k4(const uint32_t* A, const uint32_t* B, const float* C,
                                       float* D) {
  TILE_SETUP
  A += tile * 64;
  B += tile * 32;
  C += tile * 128;
  D += tile * 128;
  uint32_t a[2], b;
  float c[4], d[4];
  for (unsigned r = 0; r < 2; ++r) a[r] = A[(g + 8 * r) * 4 + t];
  b = B[t * 8 + g];
  for (unsigned r = 0; r < 4; ++r) c[r] = C[cidx(g, t, r)];
  asm volatile(
      "mma.sync.aligned.m16n8k4.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, "
      "{%7,%8,%9,%10};"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(b), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
  for (unsigned r = 0; r < 4; ++r) D[cidx(g, t, r)] = d[r];
}

// f64 m8n8k4: a row g column t; b row t column g; c[j] row g column 2t + j.
extern "C" __global__ void mma_f64(const double* A, const double* B, const double* C, double* D) {
  TILE_SETUP
  A += tile * 32;
  B += tile * 32;
  C += tile * 64;
  D += tile * 64;
  double a = A[g * 4 + t], b = B[t * 8 + g], c0 = C[g * 8 + 2 * t], c1 = C[g * 8 + 2 * t + 1], d0,
         d1;
  asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%4,%5};"
               : "=d"(d0), "=d"(d1)
               : "d"(a), "d"(b), "d"(c0), "d"(c1));
  D[g * 8 + 2 * t] = d0;
  D[g * 8 + 2 * t + 1] = d1;
}

// s8 m16n8k32: a[r] row g + 8 (r & 1), columns 4t + 16 (r >> 1) + 0..3; b[r] rows 4t + 16r +
// 0..3, column g. Saturating.
extern "C" __global__ void mma_s8_k32_satfinite(const uint8_t* A, const uint8_t* B, const int* C,
                                                int* D) {
  TILE_SETUP
  A += tile * 512;
  B += tile * 256;
  C += tile * 128;
  D += tile * 128;
  uint32_t a[4], b[2];
  int c[4], d[4];
  for (unsigned r = 0; r < 4; ++r) a[r] = pack8(A, (g + 8 * (r & 1)) * 32 + 4 * t + 16 * (r >> 1), 1);
  for (unsigned r = 0; r < 2; ++r) b[r] = pack8(B, (4 * t + 16 * r) * 8 + g, 8);
  for (unsigned r = 0; r < 4; ++r) c[r] = C[cidx(g, t, r)];
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%10,%11,%12,%13};"
      : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(c[0]), "r"(c[1]),
        "r"(c[2]), "r"(c[3]));
  for (unsigned r = 0; r < 4; ++r) D[cidx(g, t, r)] = d[r];
}

// u8 m16n8k16 (wrapping): a[r] row g + 8r, columns 4t + 0..3; b rows 4t + 0..3, column g.
extern "C" __global__ void mma_u8_k16(const uint8_t* A, const uint8_t* B, const int* C, int* D) {
  TILE_SETUP
  A += tile * 256;
  B += tile * 128;
  C += tile * 128;
  D += tile * 128;
  uint32_t a[2], b;
  int c[4], d[4];
  for (unsigned r = 0; r < 2; ++r) a[r] = pack8(A, (g + 8 * r) * 16 + 4 * t, 1);
  b = pack8(B, 4 * t * 8 + g, 8);
  for (unsigned r = 0; r < 4; ++r) c[r] = C[cidx(g, t, r)];
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.s32.u8.u8.s32 {%0,%1,%2,%3}, {%4,%5}, {%6}, "
      "{%7,%8,%9,%10};"
      : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(b), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]));
  for (unsigned r = 0; r < 4; ++r) D[cidx(g, t, r)] = d[r];
}

// ldmatrix from shared memory: A is 32 rows of 8 halves (four 8x8 matrices); lane l gives row
// l. D per lane: .x4, .x2, .x1, .x4.trans results (11 words), raw.
extern "C" __global__ void ldmatrix_raw(const uint16_t* A, const void*, const void*, uint32_t* D) {
  TILE_SETUP
  __shared__ uint16_t s[4][256];
  uint16_t* sw = s[threadIdx.x / 32];
  A += tile * 256;
  for (unsigned i = lane; i < 256; i += 32) sw[i] = A[i];
  __syncwarp();
  const uint32_t row = static_cast<uint32_t>(__cvta_generic_to_shared(sw + lane * 8));
  uint32_t* o = D + tile * 32 * 11 + lane * 11;
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(o[0]), "=r"(o[1]), "=r"(o[2]), "=r"(o[3])
               : "r"(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];"
               : "=r"(o[4]), "=r"(o[5])
               : "r"(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];" : "=r"(o[6]) : "r"(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(o[7]), "=r"(o[8]), "=r"(o[9]), "=r"(o[10])
               : "r"(row));
}

// A GEMM tile the way hand-written kernels feed tensor cores: A (16x16) with ldmatrix.x4 and a
// row-major B (16x8) with ldmatrix.x2.trans, through shared memory, then mma.m16n8k16.
extern "C" __global__ void ldmatrix_mma(const uint16_t* A, const uint16_t* B, const float* C,
                                        float* D) {
  TILE_SETUP
  __shared__ uint16_t sa[4][256], sb[4][128];
  const unsigned w = threadIdx.x / 32;
  A += tile * 256;
  B += tile * 128;
  C += tile * 128;
  D += tile * 128;
  for (unsigned i = lane; i < 256; i += 32) sa[w][i] = A[i];
  for (unsigned i = lane; i < 128; i += 32) sb[w][i] = B[i];
  __syncwarp();
  uint32_t a[4], b[2];
  float c[4], d[4];
  const uint32_t pa =
      static_cast<uint32_t>(__cvta_generic_to_shared(&sa[w][(lane % 16) * 16 + 8 * (lane / 16)]));
  const uint32_t pb = static_cast<uint32_t>(__cvta_generic_to_shared(&sb[w][(lane % 16) * 8]));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
               : "r"(pa));
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];"
               : "=r"(b[0]), "=r"(b[1])
               : "r"(pb));
  for (unsigned r = 0; r < 4; ++r) c[r] = C[cidx(g, t, r)];
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%10,%11,%12,%13};"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]),
        "f"(c[2]), "f"(c[3]));
  for (unsigned r = 0; r < 4; ++r) D[cidx(g, t, r)] = d[r];
}

// movmatrix: lane l's word is A's words [tile * 32 + l]; D the transposed fragment.
extern "C" __global__ void movmatrix_raw(const uint32_t* A, const void*, const void*, uint32_t* D) {
  TILE_SETUP
  uint32_t d;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;" : "=r"(d) : "r"(A[tile * 32 + lane]));
  D[tile * 32 + lane] = d;
}

// nvcuda::wmma, 16x16x16. Accumulator elements are doubled after the load (elementwise access
// to a fragment: the same on any layout).
using namespace nvcuda;
extern "C" __global__ void wmma_f16_f32_rowcol(const __half* A, const __half* B, const float* C,
                                               float* D) {
  TILE_SETUP
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
  wmma::load_matrix_sync(a, A + tile * 256, 16);
  wmma::load_matrix_sync(b, B + tile * 256, 16);  // B stored column-major
  wmma::load_matrix_sync(c, C + tile * 256, 16, wmma::mem_row_major);
  for (int i = 0; i < c.num_elements; ++i) c.x[i] *= 2.0f;
  wmma::mma_sync(c, a, b, c);
  wmma::store_matrix_sync(D + tile * 256, c, 16, wmma::mem_row_major);
}
// A column-major, B row-major, f16 accumulators stored column-major.
extern "C" __global__ void wmma_f16_f16_colrow(const __half* A, const __half* B, const __half* C,
                                               __half* D) {
  TILE_SETUP
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::col_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 16, __half> c;
  wmma::load_matrix_sync(a, A + tile * 256, 16);
  wmma::load_matrix_sync(b, B + tile * 256, 16);
  wmma::load_matrix_sync(c, C + tile * 256, 16, wmma::mem_col_major);
  for (int i = 0; i < c.num_elements; ++i) c.x[i] = __hadd(c.x[i], c.x[i]);
  wmma::mma_sync(c, a, b, c);
  wmma::store_matrix_sync(D + tile * 256, c, 16, wmma::mem_col_major);
}
extern "C" __global__ void wmma_bf16_f32_rowrow(const __nv_bfloat16* A, const __nv_bfloat16* B,
                                                const float* C, float* D) {
  TILE_SETUP
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
  wmma::load_matrix_sync(a, A + tile * 256, 16);
  wmma::load_matrix_sync(b, B + tile * 256, 16);
  wmma::load_matrix_sync(c, C + tile * 256, 16, wmma::mem_row_major);
  for (int i = 0; i < c.num_elements; ++i) c.x[i] *= 2.0f;
  wmma::mma_sync(c, a, b, c);
  wmma::store_matrix_sync(D + tile * 256, c, 16, wmma::mem_row_major);
}
// tf32 m16n16k8: A 16x8 row-major, B 8x16 row-major.
extern "C" __global__ void wmma_tf32_f32_rowrow(const float* A, const float* B, const float* C,
                                                float* D) {
  TILE_SETUP
  wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 8, float> c;
  wmma::load_matrix_sync(a, A + tile * 128, 8);
  wmma::load_matrix_sync(b, B + tile * 128, 16);
  for (int i = 0; i < a.num_elements; ++i) a.x[i] = wmma::__float_to_tf32(a.x[i]);
  for (int i = 0; i < b.num_elements; ++i) b.x[i] = wmma::__float_to_tf32(b.x[i]);
  wmma::load_matrix_sync(c, C + tile * 256, 16, wmma::mem_row_major);
  for (int i = 0; i < c.num_elements; ++i) c.x[i] *= 2.0f;
  wmma::mma_sync(c, a, b, c);
  wmma::store_matrix_sync(D + tile * 256, c, 16, wmma::mem_row_major);
}
