// Fixture: block reduction through __shared__ memory and __syncthreads, extern __shared__.
extern "C" __global__ void __launch_bounds__(256, 2) reduce_static(const int* in, int* out) {
  __shared__ int buf[256];
  unsigned t = threadIdx.x;
  buf[t] = in[blockIdx.x * 256 + t];
  __syncthreads();
  for (unsigned s = 128; s > 0; s >>= 1) {
    if (t < s) buf[t] += buf[t + s];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = buf[0];
}
extern "C" __global__ void reduce_dynamic(const float* in, float* out, int n) {
  extern __shared__ float dyn[];
  unsigned t = threadIdx.x;
  dyn[t] = t < (unsigned)n ? in[t] : 0.0f;
  __syncthreads();
  if (t == 0) {
    float s = 0;
    for (unsigned i = 0; i < blockDim.x; ++i) s += dyn[i];
    *out = s;
  }
}
