// The one-kernel source of the fat binary fixtures (tests/fatbin/make_fixtures.sh).
extern "C" __global__ void cudamux_fatbin_axpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
