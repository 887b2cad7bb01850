// Fixture: the simplest kernel (params, special registers, guarded branch).
extern "C" __global__ void saxpy(int n, float a, const float* __restrict__ x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
