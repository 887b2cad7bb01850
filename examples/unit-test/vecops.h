/* "Your own CUDA code": a small library that scales a vector on the GPU with a kernel
 * compiled at run time by NVRTC. The GoogleTest suite beside it tests it on cudamux's mock
 * backend, so it runs on any machine, GPU or not. */
#pragma once
#include <cuda.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* data[i] *= factor for i < n, on device `ordinal`. CUDA_ERROR_INVALID_VALUE for a null
 * pointer with n > 0; any CUDA error of the calls made is returned as is. */
CUresult vec_scale(float* data, size_t n, float factor, int ordinal);

#ifdef __cplusplus
}
#endif
