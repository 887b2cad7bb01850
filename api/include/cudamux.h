/* cudamux extensions: what a program can ask of cudamux beyond the CUDA API.
 * Link with -lcudamux (libcudamux.so, next to our libcuda.so.1). C and C++. */
#ifndef CUDAMUX_H
#define CUDAMUX_H

#include <cuda.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Switches the hallucination policy of one CUDA enum type at run time ("CUresult",
 * "cudaError_t", "nvrtcResult", ... as spelled in CUDA's headers, or "default" for every
 * output type). enable: 0 strict (the default), nonzero hallucinate. See docs/policy.md.
 * Returns CUDA_ERROR_INVALID_VALUE for an unknown type, for a type that only flows from
 * the program to the backend (rule 5), or for a null name. Wins over TOML and env. */
CUresult cudamuxSetHallucinate(const char* enumType, int enable);

/* Current setting of one enum type: *enabled = 0 or 1. */
CUresult cudamuxGetHallucinate(const char* enumType, int* enabled);

#ifdef __cplusplus
}
#endif

#endif /* CUDAMUX_H */
