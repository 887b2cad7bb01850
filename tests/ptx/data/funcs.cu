// Fixture: device functions (non-inlined), recursion, function pointers, printf, assert.
#include <cassert>
#include <cstdio>
typedef int (*binop)(int, int);
__device__ __noinline__ int add_op(int a, int b) { return a + b; }
__device__ __noinline__ int mul_op(int a, int b) { return a * b; }
__device__ binop ops[2] = {add_op, mul_op};
// Two recursive calls: nvcc cannot turn this into a loop.
__device__ __noinline__ int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
extern "C" __global__ void funcs(int* out, int sel, int n) {
  binop f = ops[sel & 1];
  out[0] = f(n, 3);
  out[1] = fib(n);
  printf("thread %d n=%d %f\n", threadIdx.x, n, 1.5);
  assert(n >= 0);
}
