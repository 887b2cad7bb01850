/* Our cuda.h must compile warning-free as C11 (built with -Werror -Wall -Wextra -Wpedantic). */
#include <cuda.h>

_Static_assert(CUDA_VERSION == 13000, "cudamux implements the CUDA 13.0 driver API");
_Static_assert(sizeof(CUdeviceptr) == sizeof(void*), "CUdeviceptr is pointer-sized");

/* Uses of renamed API names must resolve to declared entry points. */
#if !defined(__CUDA_API_VERSION_INTERNAL) /* internal mode has no renames */
CUresult cudamux_header_probe(CUdeviceptr* p);
CUresult cudamux_header_probe(CUdeviceptr* p) { return cuMemAlloc(p, 1) != CUDA_SUCCESS ? cuMemFree(*p) : CUDA_SUCCESS; }
#endif
