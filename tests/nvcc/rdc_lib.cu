// Relocatable device code (nvcc -rdc=true), part 2 of 2: rdc_main.cu calls into this file's
// device code and reads its variable; each file also has its own static variable and printf
// format strings of the same names (internal symbols that must stay each file's own).
#include <cstdio>

__device__ int bias = 7;                 // read by rdc_main.cu through `extern`
static __device__ int own_value = 2000;  // this file's own
__device__ int scale_of(int i);          // defined in rdc_main.cu

__device__ int transformed(int i) { return scale_of(i) + bias + own_value; }

// A kernel defined here, launched from rdc_main.cu through its host stub.
__global__ void fill_from_lib(int* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = transformed(i);
  if (i == 0) printf("rdc_lib: fill_from_lib ran\n");
}
