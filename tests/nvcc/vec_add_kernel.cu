// The kernel of tests/nvcc/multi_device.cu's vmm case, built alone by `nvcc -fatbin` (nvcc's
// defaults: sm_75 SASS and compute_75 PTX) and loaded with cuModuleLoadData, as NVIDIA's
// vectorAddMMAP sample loads its kernel.
extern "C" __global__ void vec_add(const float* a, const float* b, float* c, int n) {
  const int i = blockDim.x * blockIdx.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
