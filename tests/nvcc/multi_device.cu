// What NVIDIA's multi-device samples do (issue 17), in an nvcc-built program of our own run on a
// mock with two devices (tests/driver/mock2.toml): their kernels come from nvcc's PTX, as the
// samples' do (docs/multi-device.md). Built with -cudart shared and with the static runtime.
//
//   multi_device <vec_add.fatbin>
//
// peer:      simpleP2P: peer access both ways, cudaMemcpyPeer, a kernel on each device reading
//            the other's memory through the pointer it was allocated at
// split:     simpleMultiGPU: one slice of the input per device, each on its own stream,
//            reduced there and summed on the host
// vmm:       vectorAddMMAP: cuMemCreate stripes on every device mapped into one reserved range,
//            readable and writable from device 0 (cuMemSetAccess), a kernel from an
//            nvcc -fatbin file loaded with cuModuleLoadData
// Prints "PASS: 0 failures" when every result is exact.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

static int failures = 0;
#define EXPECT(cond)                                                           \
  do {                                                                         \
    if (!(cond)) {                                                             \
      std::fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                              \
    }                                                                          \
  } while (0)
#define EXPECT_RT(call)                                                                         \
  do {                                                                                          \
    const cudaError_t e_ = (call);                                                              \
    if (e_ != cudaSuccess) {                                                                    \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorName(e_)); \
      ++failures;                                                                               \
    }                                                                                           \
  } while (0)
#define EXPECT_DRV(call)                                                                       \
  do {                                                                                         \
    const CUresult r_ = (call);                                                                \
    if (r_ != CUDA_SUCCESS) {                                                                  \
      const char* name_ = nullptr;                                                             \
      cuGetErrorName(r_, &name_);                                                              \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, name_ ? name_ : "?"); \
      ++failures;                                                                              \
    }                                                                                          \
  } while (0)

// Doubles the peer's values into this device's buffer.
__global__ void scale_from_peer(const int* peer_src, int* dst, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) dst[i] = 2 * peer_src[i];
}

// A block-wide tree reduction in shared memory, then one atomic per block.
__global__ void reduce_slice(const int* in, int n, unsigned long long* sum) {
  __shared__ int partial[256];
  int acc = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    acc += in[i];
  partial[threadIdx.x] = acc;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(sum, static_cast<unsigned long long>(partial[0]));
}

static void peer() {
  const int n = 1 << 16;
  int can01 = 0, can10 = 0;
  EXPECT_RT(cudaDeviceCanAccessPeer(&can01, 0, 1));
  EXPECT_RT(cudaDeviceCanAccessPeer(&can10, 1, 0));
  EXPECT(can01 == 1 && can10 == 1);

  int *on0 = nullptr, *on1 = nullptr;
  EXPECT_RT(cudaSetDevice(0));
  EXPECT_RT(cudaDeviceEnablePeerAccess(1, 0));
  EXPECT_RT(cudaMalloc(&on0, n * sizeof(int)));
  EXPECT_RT(cudaSetDevice(1));
  EXPECT_RT(cudaDeviceEnablePeerAccess(0, 0));
  EXPECT_RT(cudaMalloc(&on1, n * sizeof(int)));

  cudaPointerAttributes attributes{};
  EXPECT_RT(cudaPointerGetAttributes(&attributes, on1));
  EXPECT(attributes.type == cudaMemoryTypeDevice && attributes.device == 1);

  std::vector<int> host(n);
  for (int i = 0; i < n; ++i) host[i] = i - n / 2;
  EXPECT_RT(cudaMemcpy(on0, host.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  // device 0 -> device 1 by the runtime's peer copy, then back through the kernel
  EXPECT_RT(cudaMemcpyPeer(on1, 1, on0, 0, n * sizeof(int)));
  EXPECT_RT(cudaSetDevice(0));
  scale_from_peer<<<n / 256, 256>>>(on1, on0, n);  // device 0 reads device 1's memory
  EXPECT_RT(cudaGetLastError());
  EXPECT_RT(cudaDeviceSynchronize());
  EXPECT_RT(cudaSetDevice(1));
  scale_from_peer<<<n / 256, 256>>>(on0, on1, n);  // device 1 reads device 0's memory
  EXPECT_RT(cudaGetLastError());
  EXPECT_RT(cudaDeviceSynchronize());

  std::vector<int> back(n);
  EXPECT_RT(cudaMemcpy(back.data(), on1, n * sizeof(int), cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (int i = 0; i < n; ++i) wrong += back[i] != 4 * host[i];
  EXPECT(wrong == 0);

  EXPECT_RT(cudaDeviceDisablePeerAccess(0));  // device 1's access to device 0
  EXPECT(cudaDeviceDisablePeerAccess(0) == cudaErrorPeerAccessNotEnabled);
  EXPECT(cudaGetLastError() == cudaErrorPeerAccessNotEnabled);  // and it is the last error
  EXPECT_RT(cudaFree(on1));
  EXPECT_RT(cudaSetDevice(0));
  EXPECT_RT(cudaDeviceDisablePeerAccess(1));
  EXPECT_RT(cudaFree(on0));
  std::printf("peer: 2 devices, %d values doubled twice across them, %d wrong\n", n, wrong);
}

static void split(int devices) {
  const int per_device = 1 << 18;
  const int n = per_device * devices;
  std::vector<int> host(n);
  long long expected = 0;
  for (int i = 0; i < n; ++i) {
    host[i] = (i * 7919) % 1000 - 500;
    expected += host[i];
  }
  struct Slice {
    cudaStream_t stream = nullptr;
    int* in = nullptr;
    unsigned long long* sum = nullptr;
    unsigned long long result = 0;
  };
  std::vector<Slice> slices(devices);
  for (int d = 0; d < devices; ++d) {
    Slice& s = slices[d];
    EXPECT_RT(cudaSetDevice(d));
    EXPECT_RT(cudaStreamCreate(&s.stream));
    EXPECT_RT(cudaMalloc(&s.in, per_device * sizeof(int)));
    EXPECT_RT(cudaMalloc(&s.sum, sizeof(unsigned long long)));
    EXPECT_RT(cudaMemsetAsync(s.sum, 0, sizeof(unsigned long long), s.stream));
    EXPECT_RT(cudaMemcpyAsync(s.in, host.data() + d * per_device, per_device * sizeof(int),
                              cudaMemcpyHostToDevice, s.stream));
    reduce_slice<<<64, 256, 0, s.stream>>>(s.in, per_device, s.sum);
    EXPECT_RT(cudaGetLastError());
    EXPECT_RT(cudaMemcpyAsync(&s.result, s.sum, sizeof s.result, cudaMemcpyDeviceToHost, s.stream));
  }
  long long total = 0;
  for (int d = 0; d < devices; ++d) {
    Slice& s = slices[d];
    EXPECT_RT(cudaSetDevice(d));
    EXPECT_RT(cudaStreamSynchronize(s.stream));
    total += static_cast<long long>(s.result);  // two's complement wrap-around of the atomics
    EXPECT_RT(cudaFree(s.in));
    EXPECT_RT(cudaFree(s.sum));
    EXPECT_RT(cudaStreamDestroy(s.stream));
  }
  EXPECT(total == expected);
  std::printf("split: %d devices, sum %lld (host %lld)\n", devices, total, expected);
}

static void vmm(int devices, const char* fatbin_path) {
  std::ifstream file(fatbin_path, std::ios::binary);
  const std::string fatbin((std::istreambuf_iterator<char>(file)),
                           std::istreambuf_iterator<char>());
  EXPECT(!fatbin.empty());
  if (fatbin.empty()) return;

  EXPECT_RT(cudaSetDevice(0));
  EXPECT_RT(cudaFree(nullptr));  // the primary context of device 0 becomes current
  CUmodule module = nullptr;
  CUfunction vec_add = nullptr;
  EXPECT_DRV(cuModuleLoadData(&module, fatbin.data()));
  EXPECT_DRV(cuModuleGetFunction(&vec_add, module, "vec_add"));

  // One stripe of the range on each device; the granularity is the largest of theirs.
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  size_t granularity = 0;
  for (int d = 0; d < devices; ++d) {
    size_t g = 0;
    prop.location.id = d;
    EXPECT_DRV(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    if (g > granularity) granularity = g;
  }
  EXPECT(granularity > 0);
  if (granularity == 0) return;
  const int n = 3 * static_cast<int>(granularity / sizeof(float)) / 2;  // crosses a stripe
  const size_t stripe =
      ((n * sizeof(float) + devices * granularity - 1) / (devices * granularity)) * granularity;
  const size_t size = stripe * devices;

  CUdeviceptr ranges[3] = {};
  for (CUdeviceptr& range : ranges) {
    EXPECT_DRV(cuMemAddressReserve(&range, size, 0, 0, 0));
    for (int d = 0; d < devices; ++d) {
      CUmemGenericAllocationHandle handle = 0;
      prop.location.id = d;
      EXPECT_DRV(cuMemCreate(&handle, stripe, &prop, 0));
      EXPECT_DRV(cuMemMap(range + d * stripe, stripe, 0, handle, 0));
      EXPECT_DRV(cuMemRelease(handle));  // the mapping keeps the memory
    }
    CUmemAccessDesc access{};
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = 0;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    EXPECT_DRV(cuMemSetAccess(range, size, &access, 1));
  }

  std::vector<float> a(n), b(n), c(n);
  for (int i = 0; i < n; ++i) {
    a[i] = 0.5f * static_cast<float>(i % 1024);
    b[i] = static_cast<float>(i % 77) - 3.0f;
  }
  EXPECT_DRV(cuMemcpyHtoD(ranges[0], a.data(), n * sizeof(float)));
  EXPECT_DRV(cuMemcpyHtoD(ranges[1], b.data(), n * sizeof(float)));
  int count = n;
  void* args[] = {&ranges[0], &ranges[1], &ranges[2], &count};
  EXPECT_DRV(cuLaunchKernel(vec_add, (n + 255) / 256, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr));
  EXPECT_DRV(cuMemcpyDtoH(c.data(), ranges[2], n * sizeof(float)));
  int wrong = 0;
  for (int i = 0; i < n; ++i) wrong += c[i] != a[i] + b[i];
  EXPECT(wrong == 0);

  for (CUdeviceptr range : ranges) {
    EXPECT_DRV(cuMemUnmap(range, size));
    EXPECT_DRV(cuMemAddressFree(range, size));
  }
  EXPECT_DRV(cuModuleUnload(module));
  std::printf("vmm: %d stripes of %zu bytes, %d sums, %d wrong\n", devices, stripe, n, wrong);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <vec_add.fatbin>\n", argv[0]);
    return 2;
  }
  int devices = 0;
  EXPECT_RT(cudaGetDeviceCount(&devices));
  if (devices < 2) {
    std::fprintf(stderr, "needs 2 devices, has %d (CUDAMUX_CONFIG=tests/driver/mock2.toml)\n",
                 devices);
    return 1;
  }
  peer();
  split(devices);
  vmm(devices, argv[1]);
  std::printf("PASS: %d failures\n", failures);
  return failures == 0 ? 0 : 1;
}
