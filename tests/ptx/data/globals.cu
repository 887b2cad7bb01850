// Fixture: __device__ / __constant__ globals with initializers, pointers to other globals.
__device__ int table[4] = {1, -2, 3, 0x7fffffff};
__device__ int* ptr = &table[2];
__constant__ float coeffs[3] = {1.5f, -0.25f, 3.0f};
__constant__ double dbl = -2.5;
__device__ unsigned long long big = 0xfedcba9876543210ull;
__device__ const char* msg_ptr = "hi";
__device__ short shorts[3] = {1, -1, 7};
struct Pair {
  int a;
  float b;
};
__device__ Pair pairs[2] = {{1, 2.0f}, {3, 4.0f}};
__device__ int zeroed[8];
extern "C" __global__ void globals(float* out) {
  out[0] = coeffs[threadIdx.x % 3] * (float)dbl + (float)*ptr + (float)big + msg_ptr[0] +
           shorts[1] + pairs[1].b + zeroed[threadIdx.x & 7] + table[1];
}
