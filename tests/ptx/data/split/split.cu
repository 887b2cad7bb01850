// Kernels with barriers for the barrier-splitting tests (tests/ptx/split_test.cpp); the PTX
// next to this file is nvcc's (make_fixtures.sh). extern "C": plain names.
#include <cuda_fp16.h>

// Barriers in a loop, shared memory reused every round: a 1-D smoothing of `steps` steps.
extern "C" __global__ void smooth(const float* in, float* out, int steps) {
  __shared__ float buf[256];
  const int t = threadIdx.x, n = blockDim.x;
  float v = in[blockIdx.x * n + t];
  for (int s = 0; s < steps; ++s) {
    buf[t] = v;
    __syncthreads();
    const float l = buf[(t + n - 1) % n], r = buf[(t + 1) % n];
    v = 0.25f * l + 0.5f * v + 0.25f * r;
    __syncthreads();
  }
  out[blockIdx.x * n + t] = v;
}

// Early exits, and barriers in divergent code (every live thread still reaches one of them).
extern "C" __global__ void divergent(const int* in, int* out, int n) {
  __shared__ int s[256];
  const int t = threadIdx.x;
  const int g = blockIdx.x * blockDim.x + t;
  if (g >= n) return;  // the last block is partial
  s[t] = in[g];
  if (t & 1) {
    __syncthreads();
    out[g] = s[t] + s[t ^ 1];
  } else {
    __syncthreads();
    out[g] = s[t] - s[t ^ 1 < blockDim.x ? t ^ 1 : t];
  }
  if (in[g] < 0) return;
  __syncthreads();
  s[t] = out[g] * 2;
  __syncthreads();
  out[g] += s[(t + 2) % blockDim.x] > 1000 ? 1 : 0;
}

// Block reduction (tree in shared memory), blockDim.x a power of two.
extern "C" __global__ void reduce(const float* in, float* out, int n) {
  extern __shared__ float sdata[];
  const unsigned t = threadIdx.x;
  unsigned i = blockIdx.x * blockDim.x * 2 + t;
  float sum = 0.0f;
  if (i < n) sum = in[i];
  if (i + blockDim.x < n) sum += in[i + blockDim.x];
  sdata[t] = sum;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) sdata[t] = sum = sum + sdata[t + s];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = sum;
}

// Inclusive scan (Hillis-Steele, double-buffered) of one block.
extern "C" __global__ void scan(const int* in, int* out) {
  __shared__ int buf[2][512];
  const int t = threadIdx.x;
  int p = 0;
  buf[0][t] = in[blockIdx.x * blockDim.x + t];
  __syncthreads();
  for (int off = 1; off < blockDim.x; off <<= 1) {
    const int v = buf[p][t] + (t >= off ? buf[p][t - off] : 0);
    p ^= 1;
    buf[p][t] = v;
    __syncthreads();
  }
  out[blockIdx.x * blockDim.x + t] = buf[p][t];
}

// Tiled matrix multiply (C = A * B, n x n, n a multiple of 16), 16x16 blocks.
#define TILE 16
extern "C" __global__ void matmul(const float* A, const float* B, float* C, int n) {
  __shared__ float As[TILE][TILE], Bs[TILE][TILE];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
  float acc = 0.0f;
  for (int k = 0; k < n; k += TILE) {
    As[ty][tx] = A[row * n + k + tx];
    Bs[ty][tx] = B[(k + ty) * n + col];
    __syncthreads();
#pragma unroll
    for (int j = 0; j < TILE; ++j) acc += As[ty][j] * Bs[j][tx];
    __syncthreads();
  }
  C[row * n + col] = acc;
}

// Registers of many types live across barriers: pred, f64, b16 (half), u8, s64.
extern "C" __global__ void live_types(const double* d, const int* x, double* out, long long* lo) {
  __shared__ int s[128];
  const int t = threadIdx.x;
  const double a = d[t] * 1.5;
  const bool odd = (x[t] & 1) != 0;
  const __half h = __float2half(static_cast<float>(x[t]) * 0.5f);
  const unsigned char c = static_cast<unsigned char>(x[t] * 7);
  const long long big = static_cast<long long>(x[t]) << 40;
  s[t] = x[t];
  __syncthreads();
  const int other = s[(t + 1) % blockDim.x];
  __syncthreads();
  s[t] = other * 3;
  __syncthreads();
  out[t] = (odd ? a : -a) + __half2float(h) + c + s[(t + 5) % blockDim.x];
  lo[t] = big + other;
}

// __syncthreads_count / _and / _or (bar.red).
extern "C" __global__ void votes(const int* x, int* out) {
  const int t = threadIdx.x;
  const int v = x[blockIdx.x * blockDim.x + t];
  const int cnt = __syncthreads_count(v > 0);
  const int all = __syncthreads_and(v > 0);
  const int any = __syncthreads_or(v > 100);
  out[blockIdx.x * blockDim.x + t] = cnt * 100 + all * 10 + any;
}

// Warp shuffles mixed with barriers (stays on fibers; results must not change).
extern "C" __global__ void shfl_mix(const int* x, int* out) {
  __shared__ int warp_sums[32];
  const int t = threadIdx.x;
  int v = x[blockIdx.x * blockDim.x + t];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  if ((t & 31) == 0) warp_sums[t >> 5] = v;
  __syncthreads();
  int total = 0;
  for (int w = 0; w < (blockDim.x + 31) / 32; ++w) total += warp_sums[w];
  out[blockIdx.x * blockDim.x + t] = total + (t & 31);
}

// 3-D blocks: threadIdx as each thread resumes.
extern "C" __global__ void dims3(int* out) {
  __shared__ int s[4][4][8];
  const int x = threadIdx.x, y = threadIdx.y, z = threadIdx.z;
  s[z][y][x] = x + 10 * y + 100 * z;
  __syncthreads();
  const int lin = (z * blockDim.y + y) * blockDim.x + x;
  out[lin] = s[blockDim.z - 1 - z][blockDim.y - 1 - y][blockDim.x - 1 - x] * 1000 + threadIdx.x +
             10 * threadIdx.y + 100 * threadIdx.z;
}

// Warp points in the state machine: votes, ballot, segmented shuffles, match in divergent code
// (odd lanes only), mixed with barriers.
extern "C" __global__ void warp_ops(const int* x, unsigned* out) {
  __shared__ unsigned s[256];
  const int t = threadIdx.x;
  const int v = x[blockIdx.x * blockDim.x + t];
  unsigned r = __ballot_sync(0xffffffffu, v > 0);
  r += __all_sync(0xffffffffu, v > -100) ? 1000u : 0u;
  r += __any_sync(0xffffffffu, v > 50) ? 2000u : 0u;
  r += static_cast<unsigned>(__shfl_up_sync(0xffffffffu, v, 3, 8)) * 7u;
  r += static_cast<unsigned>(__shfl_xor_sync(0xffffffffu, v, 5, 16)) * 11u;
  s[t] = r;
  __syncthreads();
  unsigned m = 0;
  if (t & 1) m = __match_any_sync(0xaaaaaaaau, v & 3);
  out[blockIdx.x * blockDim.x + t] = s[(t + 32) % blockDim.x] + m * 3u;
}

// __activemask with a partial last warp.
extern "C" __global__ void active(unsigned* out) { out[threadIdx.x] = __activemask(); }

// redux.sync (sm_80): warp reductions, signed and unsigned, with a partial mask.
extern "C" __global__ void warp_reduce(const int* x, int* out) {
  const int t = threadIdx.x;
  const int v = x[blockIdx.x * blockDim.x + t];
  __syncthreads();
  const int add = __reduce_add_sync(0xffffffffu, v);
  const int mn = __reduce_min_sync(0xffffffffu, v);
  const unsigned mx = __reduce_max_sync(0xffffffffu, static_cast<unsigned>(v));
  const unsigned x_or = __reduce_xor_sync(0xffffffffu, static_cast<unsigned>(v));
  int half = 0;
  if ((t & 31) < 16) half = __reduce_add_sync(0x0000ffffu, v);
  out[(blockIdx.x * blockDim.x + t) * 5 + 0] = add;
  out[(blockIdx.x * blockDim.x + t) * 5 + 1] = mn;
  out[(blockIdx.x * blockDim.x + t) * 5 + 2] = static_cast<int>(mx);
  out[(blockIdx.x * blockDim.x + t) * 5 + 3] = static_cast<int>(x_or);
  out[(blockIdx.x * blockDim.x + t) * 5 + 4] = half;
}

// A trap after a barrier ends the launch (the split block unwinds and frees its slots).
extern "C" __global__ void trap_after_barrier(const int* x, int* out) {
  __shared__ int s[64];
  s[threadIdx.x] = x[threadIdx.x];
  __syncthreads();
  if (s[(threadIdx.x + 1) % blockDim.x] < 0) __trap();
  out[threadIdx.x] = s[threadIdx.x];
}
