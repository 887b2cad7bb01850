// A library named libcuda.so.1 that is not NVIDIA's driver: it has cuInit and nothing
// else the cuda backend needs, so the backend must refuse it.
#include <cuda.h>
extern "C" __attribute__((visibility("default"))) CUresult cuInit(unsigned) { return CUDA_SUCCESS; }
