// Kernels for the mock's PTX back end (tests/ptx/run_test.cpp): compiled to emit_kernels.ptx
// by make_emit_fixtures.sh (nvcc -ptx); the test runs the PTX on the mock and compares with
// the same algorithms in C++. extern "C" keeps the names plain.
#include <cstdio>

struct Pair {
  int a;
  double b;
  char c;
};

__device__ int table[4] = {3, 1, 4, 1};
__device__ int* table_ptr = &table[2];
__constant__ float coef[3] = {0.5f, 2.0f, -1.0f};
__device__ unsigned counter;

// Integer and float arithmetic, conversions, comparisons and selects.
extern "C" __global__ void arith(int* out, float* fout, double* dout, int a, int b, float x) {
  const int t = threadIdx.x;
  const int u = a + t * 7919;
  const int v = b - t;
  int* o = out + t * 16;
  o[0] = u * v;
  o[1] = v != 0 ? u / v : -1;
  o[2] = v != 0 ? u % v : -1;
  o[3] = u >> (t & 31);
  o[4] = (unsigned)u >> (t & 31);
  o[5] = u << (t & 7);
  o[6] = min(u, v) ^ max(u, v);
  o[7] = __popc(u) + __clz(v) * 100;
  o[8] = __brev(u);
  o[9] = (int)(x * t);               // cvt.rzi.s32.f32
  o[10] = (unsigned)(x * t * 1000);  // cvt.rzi.u32.f32
  o[11] = __float2int_rn(x * t);     // cvt.rni
  o[12] = u > v ? 1 : 2;
  o[13] = (short)u;                  // cvt.s16.s32 then sign extension
  o[14] = __umulhi((unsigned)u, (unsigned)v);
  o[15] = (int)(((long long)u * v) >> 20);
  float* f = fout + t * 4;
  f[0] = x * t + 1.0f / (t + 1);
  f[1] = sqrtf(x + t);
  f[2] = fminf(x, t) - fmaxf(x, t);
  f[3] = (float)u / 3.0f;
  dout[t] = (double)x * u + 0.25;
}

// Branches and loops: Collatz step counts.
extern "C" __global__ void collatz(unsigned* steps, unsigned base) {
  unsigned long long n = base + blockIdx.x * blockDim.x + threadIdx.x;
  unsigned s = 0;
  while (n != 1) {
    n = (n & 1) ? 3 * n + 1 : n / 2;
    ++s;
  }
  steps[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

__device__ __noinline__ int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
__device__ __noinline__ int twice(int n) { return 2 * n; }
__device__ __noinline__ int square(int n) { return n * n; }
typedef int (*IntFn)(int);

// Device calls: recursion and a function pointer.
extern "C" __global__ void calls(int* out, int n, int which) {
  IntFn f = which ? square : twice;
  out[threadIdx.x] = fib(n + threadIdx.x) + f(threadIdx.x);
}

// Shared memory with barriers, then an atomic per block.
extern "C" __global__ void block_sum(const int* in, int* total, int* per_block) {
  __shared__ int s[256];
  const unsigned t = threadIdx.x;
  s[t] = in[blockIdx.x * blockDim.x + t];
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t == 0) {
    per_block[blockIdx.x] = s[0];
    atomicAdd(total, s[0]);
    atomicInc(&counter, 1000000);
  }
}

// Warp shuffles and votes.
extern "C" __global__ void warp_ops(int* out) {
  int v = threadIdx.x * 3 + 1;
  for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
  const unsigned ballot = __ballot_sync(0xffffffffu, threadIdx.x % 3 == 0);
  const int from = __shfl_sync(0xffffffffu, (int)threadIdx.x * 10, 31 - threadIdx.x % 32);
  out[threadIdx.x * 3] = v;
  out[threadIdx.x * 3 + 1] = (int)ballot;
  out[threadIdx.x * 3 + 2] = from;
}

// Local arrays with dynamic indices, dynamic shared memory, a struct by value, globals with
// initializers (one holding an address), printf.
extern "C" __global__ void misc(int* out, Pair p, int k) {
  extern __shared__ int dyn[];
  int local[16];
  for (int i = 0; i < 16; ++i) local[i] = i * i + k;
  dyn[threadIdx.x] = local[(threadIdx.x * 5 + k) & 15];
  __syncthreads();
  out[threadIdx.x] = dyn[blockDim.x - 1 - threadIdx.x] + table[threadIdx.x & 3] + *table_ptr +
                     (int)(coef[threadIdx.x % 3] * 10) + p.a + (int)p.b + p.c;
  if (threadIdx.x == 0) printf("misc k=%d a=%d b=%.2f\n", k, p.a, p.b);
}
