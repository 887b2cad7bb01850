/* The runtime flow of HIP Python's CUDA interop example, as a plain C program against the
 * CUDA runtime API: allocate 100 ints on the device, fill them through a stream, zero them
 * with an async memset, copy them back and check that every element is 0.
 *
 *   cc runtime_flow.c -I<cudamux>/api/include -L<build>/lib -lcudart    (or NVIDIA's headers)
 *   LD_LIBRARY_PATH=<build>/lib ./a.out                                  (runs on the mock)
 */
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

#define CHECK(call)                                                                       \
  do {                                                                                    \
    cudaError_t err_ = (call);                                                            \
    if (err_ != cudaSuccess) {                                                            \
      fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", __FILE__, __LINE__, #call,            \
              cudaGetErrorName(err_), cudaGetErrorString(err_));                          \
      return 1;                                                                           \
    }                                                                                     \
  } while (0)

enum { N = 100 };

int main(void) {
  int host[N];
  for (int i = 0; i < N; ++i) host[i] = i + 1;

  int* device = NULL;
  cudaStream_t stream = NULL;
  CHECK(cudaMalloc((void**)&device, N * sizeof(int)));
  CHECK(cudaStreamCreate(&stream));
  CHECK(cudaMemcpyAsync(device, host, N * sizeof(int), cudaMemcpyHostToDevice, stream));
  CHECK(cudaMemsetAsync(device, 0, N * sizeof(int), stream));
  CHECK(cudaMemcpyAsync(host, device, N * sizeof(int), cudaMemcpyDeviceToHost, stream));
  CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaStreamDestroy(stream));
  CHECK(cudaFree(device));

  for (int i = 0; i < N; ++i) {
    if (host[i] != 0) {
      fprintf(stderr, "element %d is %d, expected 0\n", i, host[i]);
      return 1;
    }
  }
  int device_index = -1, runtime_version = 0;
  CHECK(cudaGetDevice(&device_index));
  CHECK(cudaRuntimeGetVersion(&runtime_version));
  printf("runtime_flow: %d ints copied in, zeroed by cudaMemsetAsync and copied back on device %d "
         "(runtime %d): all zero\n", N, device_index, runtime_version);
  return 0;
}
