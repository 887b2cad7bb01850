// "Your code": vector functions implemented with CUDA kernels (vecmath.cu).
#pragma once
#include <cuda_runtime.h>

#include <cstddef>

// y = a * x + y on the device; host pointers in and out.
cudaError_t vec_axpy(float a, const float* x, float* y, std::size_t n);
// The sum of v (a block reduction in shared memory, then warp shuffles).
cudaError_t vec_sum(const int* v, std::size_t n, long long* sum);
// Inclusive prefix sum of v within blocks of 256 (a Hillis-Steele scan with barriers).
cudaError_t vec_block_scan(const int* v, std::size_t n, int* out);
