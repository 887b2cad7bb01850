// Fixture: atomics of every kind, spaces and scopes.
extern "C" __global__ void atomics(int* i, unsigned* u, unsigned long long* ull, float* f,
                                   double* d) {
  __shared__ int sh;
  if (threadIdx.x == 0) sh = 0;
  __syncthreads();
  atomicAdd(i, 1);
  atomicSub(i + 1, 2);
  atomicExch(i + 2, 3);
  atomicMin(i + 3, -4);
  atomicMax(i + 4, 5);
  atomicInc(u, 10u);
  atomicDec(u + 1, 10u);
  atomicCAS(i + 5, 0, 6);
  atomicAnd(i + 6, 0xf0);
  atomicOr(i + 7, 0x0f);
  atomicXor(i + 8, 0xff);
  atomicAdd(ull, 1ull);
  atomicCAS(ull + 1, 0ull, 2ull);
  atomicAdd(f, 1.5f);
  atomicExch(f + 1, 2.5f);
  atomicAdd(d, 0.25);
  atomicAdd(&sh, 1);
  atomicAdd_block(i + 9, 1);
  atomicAdd_system(i + 10, 1);
  atomicMax(ull + 2, 7ull);
  __syncthreads();
  if (threadIdx.x == 0) i[11] = sh;
}
