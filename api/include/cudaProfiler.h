/* cudamux: NVIDIA's cudaProfiler.h (CUDA 13.0): the driver's profiler control, exported by
 * libcuda.so.1. cuProfilerInitialize was removed in CUDA 12. */
#ifndef __cuda_profiler_h__
#define __cuda_profiler_h__

#include <cuda.h>

#ifdef __cplusplus
extern "C" {
#endif

CUresult CUDAAPI cuProfilerStart(void);
CUresult CUDAAPI cuProfilerStop(void);

#ifdef __cplusplus
}
#endif

#endif /* __cuda_profiler_h__ */
