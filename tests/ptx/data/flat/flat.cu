// Barrier-free kernels for tests/ptx/flat_test.cpp and flat_run_test.cpp: the flat twins of
// ptx/src/emit_split.cpp (emit_flat) against the kernels as written in the thunk's thread loop.
// flat.compute_80.ptx is nvcc's PTX of this file (make_fixtures.sh; nvcc is not needed to build
// or run the tests).
#include <cstdio>

extern "C" __global__ void saxpy(float a, const float* x, float* y, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

// Threads leave at different points: past the end, on negative input, inside a loop.
extern "C" __global__ void early_exit(const int* in, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int v = in[i];
  if (v < 0) {
    out[i] = -1;
    return;
  }
  int acc = 0;
  for (int k = 0; k < v; ++k) {
    acc += k * 3 + i;
    if (acc > 500) {
      out[i] = acc;
      return;
    }
  }
  out[i] = acc + 1000000;
}

// 3-D blocks in a 3-D grid: each thread writes its coordinates at its linear index.
extern "C" __global__ void coords3d(unsigned* out) {
  const unsigned b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  const unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const unsigned i = b * blockDim.x * blockDim.y * blockDim.z + t;
  out[2 * i] = threadIdx.x | (threadIdx.y << 10) | (threadIdx.z << 20);
  out[2 * i + 1] = blockIdx.x | (blockIdx.y << 10) | (blockIdx.z << 20);
}

// Device functions: one reads threadIdx itself (from the thread-local copy), one recurses.
__device__ __noinline__ unsigned mix(unsigned v) { return v * 31u + threadIdx.x + 7u * threadIdx.y; }
__device__ __noinline__ unsigned fib(unsigned k) { return k < 2 ? k : fib(k - 1) + fib(k - 2); }
extern "C" __global__ void calls(const unsigned* in, unsigned* out) {
  const unsigned t = threadIdx.x + blockDim.x * threadIdx.y;
  const unsigned i = blockIdx.x * blockDim.x * blockDim.y + t;
  out[i] = mix(in[i]) + fib(in[i] % 12u);
}

// An indirect call (a table of function pointers in device memory): an indirect call may reach
// anything, so this kernel gets no flat twin (it stays on fibers, as before).
__device__ __noinline__ unsigned twice(unsigned v) { return 2u * v; }
__device__ __noinline__ unsigned thrice(unsigned v) { return 3u * v; }
typedef unsigned (*op_fn)(unsigned);
__device__ op_fn ops[2] = {twice, thrice};
extern "C" __global__ void indirect(const unsigned* in, unsigned* out) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = ops[in[i] & 1u](in[i]);
}

// %laneid, %warpid and %clock64: read through the thread-local threadIdx.
extern "C" __global__ void lanes(unsigned* out) {
  unsigned lane, warp;
  const long long c0 = clock64();
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
  asm volatile("mov.u32 %0, %%warpid;" : "=r"(warp));
  const long long c1 = clock64();
  const unsigned t = threadIdx.x + blockDim.x * threadIdx.y;
  out[blockIdx.x * blockDim.x * blockDim.y + t] = lane | (warp << 8) | ((c1 >= c0 ? 1u : 0u) << 16);
}

// Atomics: each thread takes a ticket; threads of a block run in linear order.
extern "C" __global__ void tickets(unsigned* counter, unsigned* order) {
  const unsigned t = threadIdx.x + blockDim.x * threadIdx.y;
  order[blockIdx.x * blockDim.x * blockDim.y + t] = atomicAdd(counter, 1u);
}

// printf from some threads, and a write through a pointer given by the caller (a fault when it
// is not valid) or a trap in one thread.
extern "C" __global__ void say(int who) {
  const unsigned t = threadIdx.x + blockDim.x * threadIdx.y;
  if (t == static_cast<unsigned>(who)) printf("flat thread (%u,%u) of block %u\n", threadIdx.x, threadIdx.y, blockIdx.x);
}
extern "C" __global__ void poke(int* ok, int* bad, int who) {
  const unsigned t = threadIdx.x + blockDim.x * threadIdx.y;
  const unsigned i = blockIdx.x * blockDim.x * blockDim.y + t;
  if (t == static_cast<unsigned>(who)) {
    bad[i] = 1;
  } else {
    ok[i] = 2;
  }
}
extern "C" __global__ void trap_at(int* out, int who) {
  const unsigned t = threadIdx.x + blockDim.x * threadIdx.y;
  if (t == static_cast<unsigned>(who)) __trap();
  out[blockIdx.x * blockDim.x * blockDim.y + t] = 3;
}

// 2-D blocks writing out[i] for every thread: out of bounds when out holds fewer elements.
extern "C" __global__ void write2d(int* out) {
  const unsigned t = threadIdx.x + blockDim.x * threadIdx.y;
  const unsigned i = blockIdx.x * blockDim.x * blockDim.y + t;
  out[i] = static_cast<int>(i);
}

// Per-thread stack allocation: no flat twin (a thread's allocations would pile up in the
// twin's frame); the kernel keeps the thread loop.
extern "C" __global__ void with_alloca(int* out, int n) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  int* tmp = static_cast<int*>(alloca(n * sizeof(int)));
  for (int k = 0; k < n; ++k) tmp[k] = k * static_cast<int>(i);
  out[i] = tmp[n - 1];
}
