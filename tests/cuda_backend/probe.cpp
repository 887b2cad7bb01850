// A small driver API client for the cuda backend tests: prints what it saw, one fact a
// line, and always exits 0 (the test reads the lines). With the argument "kernels" it
// loads a module of the fake NVIDIA driver (tests/cuda_backend/fake_nvidia.cpp) and
// launches its saxpy through the core. With "steady <fake driver path>" it prints which
// driver calls launches and queries in steady state made (issue 7: one each). With
// "pools <fake driver path>" it uses stream-ordered pools and prints the fake driver's log
// afterwards (issue 16: NVIDIA's pools pass through).
#include <cuda.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <vector>

static const char* name(CUresult r) {
  const char* s = "?";
  cuGetErrorName(r, &s);
  return s;
}

static void kernels(CUdevice dev) {
  CUcontext ctx = nullptr;
  cuCtxCreate(&ctx, nullptr, 0, dev);
  static const char image[] = "fake-module\nfunction saxpy 4@0 4@4 8@8 8@16\n";
  CUmodule mod = nullptr;
  std::printf("cuModuleLoadData %s\n", name(cuModuleLoadData(&mod, image)));
  CUfunction f = nullptr;
  std::printf("cuModuleGetFunction %s\n", name(cuModuleGetFunction(&f, mod, "saxpy")));
  std::printf("cuModuleGetFunction missing %s\n", name(cuModuleGetFunction(&f, mod, "nope")));
  cuModuleGetFunction(&f, mod, "saxpy");
  size_t offset = 0, size = 0;
  const CUresult info = cuFuncGetParamInfo(f, 3, &offset, &size);
  std::printf("cuFuncGetParamInfo 3 %s %zu %zu\n", name(info), offset, size);
  int n = 8;
  float a = 2.0f;
  CUdeviceptr x = 0, y = 0;
  cuMemAlloc(&x, n * sizeof(float));
  cuMemAlloc(&y, n * sizeof(float));
  std::vector<float> hx(n), hy(n), back(n);
  for (int i = 0; i < n; ++i) {
    hx[i] = static_cast<float>(i);
    hy[i] = 100.0f;
  }
  cuMemcpyHtoD(x, hx.data(), n * sizeof(float));
  cuMemcpyHtoD(y, hy.data(), n * sizeof(float));
  void* params[] = {&n, &a, &x, &y};
  std::printf("cuLaunchKernel 65536 before set %s\n",
              name(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 65536, nullptr, params, nullptr)));
  std::printf("cuFuncSetAttribute %s\n",
              name(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 65536)));
  std::printf("cuLaunchKernel 65536 %s\n",
              name(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 65536, nullptr, params, nullptr)));
  // The same through CU_LAUNCH_PARAM_BUFFER_POINTER: the core repacks it as kernelParams.
  unsigned char buffer[24] = {};
  std::memcpy(buffer, &n, 4);
  std::memcpy(buffer + 4, &a, 4);
  std::memcpy(buffer + 8, &x, 8);
  std::memcpy(buffer + 16, &y, 8);
  size_t buffer_size = sizeof buffer;
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buffer, CU_LAUNCH_PARAM_BUFFER_SIZE,
                   &buffer_size, CU_LAUNCH_PARAM_END};
  std::printf("cuLaunchKernel extra %s\n",
              name(cuLaunchKernel(f, 2, 1, 1, 64, 1, 1, 0, nullptr, nullptr, extra)));
  // Thread block clusters: checked against the grid by the core, then NVIDIA's cuLaunchKernelEx.
  CUlaunchAttribute cluster = {};
  cluster.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  cluster.value.clusterDim.x = 2;
  cluster.value.clusterDim.y = cluster.value.clusterDim.z = 1;
  CUlaunchConfig config = {};
  config.gridDimX = 4;
  config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = 32;
  config.blockDimY = config.blockDimZ = 1;
  config.attrs = &cluster;
  config.numAttrs = 1;
  std::printf("cuLaunchKernelEx cluster %s\n", name(cuLaunchKernelEx(&config, f, params, nullptr)));
  cluster.value.clusterDim.x = 3;
  std::printf("cuLaunchKernelEx cluster 3 %s\n",
              name(cuLaunchKernelEx(&config, f, params, nullptr)));
  cuCtxSynchronize();
  cuMemcpyDtoH(back.data(), y, n * sizeof(float));
  bool ok = true;  // three launches ran, each adding 2 * x
  for (int i = 0; i < n; ++i) ok = ok && back[i] == 100.0f + 3 * (2.0f * static_cast<float>(i));
  std::printf("saxpy %s\n", ok ? "ok" : "BAD");
  std::printf("cuModuleUnload %s\n", name(cuModuleUnload(mod)));
  cuCtxDestroy(ctx);
}

using Counts = std::map<std::string, unsigned long long>;
static Counts counts(const char* (*get)()) {
  Counts out;
  std::istringstream in(get());
  std::string fn;
  unsigned long long n = 0;
  while (in >> fn >> n) out[fn] = n;
  return out;
}

// 100 x (launch on a non-blocking stream, launch on the legacy stream, query the stream)
// after one warm-up round; prints "calls <function> <count>" for every driver function
// the 100 rounds called.
static void steady(CUdevice dev, const char* fake) {
  void* h = dlopen(fake, RTLD_NOW | RTLD_NOLOAD);  // the one the cuda backend loaded
  auto* get =
      h ? reinterpret_cast<const char* (*)()>(dlsym(h, "fake_nvidia_call_counts")) : nullptr;
  if (!get) {
    std::printf("steady: fake driver not loaded\n");
    return;
  }
  CUcontext ctx = nullptr;
  cuDevicePrimaryCtxRetain(&ctx, dev);
  cuCtxSetCurrent(ctx);
  CUstream s = nullptr;
  cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
  static const char image[] = "fake-module\nfunction empty 8@0\n";
  CUmodule mod = nullptr;
  CUfunction f = nullptr;
  CUdeviceptr p = 0;
  cuModuleLoadData(&mod, image);
  cuModuleGetFunction(&f, mod, "empty");
  cuMemAlloc(&p, 64);
  void* params[] = {&p};
  CUresult worst = CUDA_SUCCESS;
  auto round = [&] {
    for (CUresult r :
         {cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, params, nullptr),
          cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr), cuStreamQuery(s)})
      if (r != CUDA_SUCCESS) worst = r;
  };
  round();
  const Counts before = counts(get);
  for (int i = 0; i < 100; ++i) round();
  const Counts after = counts(get);
  std::printf("steady %s\n", name(worst));
  for (const auto& [fn, n] : after) {
    const auto it = before.find(fn);
    const unsigned long long d = n - (it == before.end() ? 0 : it->second);
    if (d > 0) std::printf("calls %s %llu\n", fn.c_str(), d);
  }
  cuMemFree(p);
  cuModuleUnload(mod);
  cuStreamDestroy(s);
  cuDevicePrimaryCtxRelease(dev);
}

// Stream-ordered pools on the fake driver: every line "pools <step> <result> [facts]", then
// the fake's call log as "fake: <line>".
static void pools(CUdevice dev, const char* fake) {
  void* h = dlopen(fake, RTLD_NOW | RTLD_NOLOAD);
  auto* get_log = h ? reinterpret_cast<const char* (*)()>(dlsym(h, "fake_nvidia_log")) : nullptr;
  if (!get_log) {
    std::printf("pools: fake driver not loaded\n");
    return;
  }
  CUcontext ctx = nullptr;
  cuCtxCreate(&ctx, nullptr, 0, dev);
  CUstream s = nullptr;
  cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
  // The device's default pool: allocation, a round trip through it, its pool and NVIDIA's
  // counters (1000 bytes: NVIDIA's count, where the core's own pools round to 512).
  CUdeviceptr d = 0;
  std::printf("pools alloc %s\n", name(cuMemAllocAsync(&d, 1000, s)));
  std::vector<unsigned char> out(1000), back(1000);
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<unsigned char>(i * 7);
  cuMemcpyHtoDAsync(d, out.data(), out.size(), s);
  cuMemcpyDtoHAsync(back.data(), d, back.size(), s);
  cuStreamSynchronize(s);
  std::printf("pools roundtrip %s\n", out == back ? "ok" : "BAD");
  CUmemoryPool dflt = nullptr, of_pointer = nullptr;
  cuDeviceGetDefaultMemPool(&dflt, dev);
  cuPointerGetAttribute(&of_pointer, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, d);
  std::printf("pools handle %s\n", dflt && dflt == of_pointer ? "matches" : "differs");
  cuuint64_t used = 12345;
  cuMemPoolGetAttribute(dflt, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used);
  std::printf("pools used %llu\n", static_cast<unsigned long long>(used));
  std::printf("pools free %s\n", name(cuMemFreeAsync(d, s)));
  cuMemPoolGetAttribute(dflt, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used);
  std::printf("pools used after free %llu\n", static_cast<unsigned long long>(used));
  cuuint64_t threshold = 1 << 20, read = 0;
  cuMemPoolSetAttribute(dflt, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold);
  cuMemPoolGetAttribute(dflt, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &read);
  std::printf("pools threshold %llu\n", static_cast<unsigned long long>(read));
  // An explicit, exportable pool: device numbering, access, sharing, synchronous free.
  CUmemPoolProps props = {};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = 0;
  props.maxSize = 1 << 20;
  CUmemoryPool pool = nullptr;
  std::printf("pools create %s\n", name(cuMemPoolCreate(&pool, &props)));
  CUmemAccessDesc access = {};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = 1;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  std::printf("pools set access %s\n", name(cuMemPoolSetAccess(pool, &access, 1)));
  CUmemAccess_flags flags = CU_MEM_ACCESS_FLAGS_PROT_NONE;
  cuMemPoolGetAccess(&flags, pool, &access.location);
  std::printf("pools access of device 1 %d\n", static_cast<int>(flags));
  CUdeviceptr e = 0;
  std::printf("pools alloc from pool %s\n", name(cuMemAllocFromPoolAsync(&e, 4096, pool, s)));
  CUdeviceptr too_big = 0;
  std::printf("pools beyond maxSize %s\n",
              name(cuMemAllocFromPoolAsync(&too_big, 2 << 20, pool, s)));
  int fd = -1;
  std::printf("pools export %s\n", name(cuMemPoolExportToShareableHandle(
                                       &fd, pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0)));
  CUmemoryPool imported = nullptr;
  std::printf("pools import %s\n",
              name(cuMemPoolImportFromShareableHandle(
                  &imported, reinterpret_cast<void*>(static_cast<intptr_t>(fd)),
                  CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0)));
  CUmemPoolPtrExportData data = {};
  std::printf("pools export pointer %s\n", name(cuMemPoolExportPointer(&data, e)));
  CUdeviceptr again = 0;
  const CUresult import_result = cuMemPoolImportPointer(&again, imported, &data);
  std::printf("pools import pointer %s %s\n", name(import_result), again == e ? "same" : "other");
  std::printf("pools free import %s\n", name(cuMemFreeAsync(again, s)));
  std::printf("pools cuMemFree %s\n", name(cuMemFree(e)));
  std::printf("pools destroy %s\n", name(cuMemPoolDestroy(pool)));
  // A host pool's block still out when its context goes: freed by NVIDIA's cuMemFree.
  CUmemLocation host = {CU_MEM_LOCATION_TYPE_HOST, 0};
  CUmemoryPool host_pool = nullptr;
  std::printf("pools host default %s\n",
              name(cuMemGetDefaultMemPool(&host_pool, &host, CU_MEM_ALLOCATION_TYPE_PINNED)));
  CUdeviceptr h_block = 0;
  std::printf("pools host alloc %s\n", name(cuMemAllocFromPoolAsync(&h_block, 256, host_pool, s)));
  cuStreamDestroy(s);
  std::printf("pools cuCtxDestroy %s\n", name(cuCtxDestroy(ctx)));
  std::istringstream log(get_log());
  for (std::string line; std::getline(log, line);) std::printf("fake: %s\n", line.c_str());
}

int main(int argc, char** argv) {
  const CUresult init = cuInit(0);
  std::printf("cuInit %s\n", name(init));
  if (init != CUDA_SUCCESS) return 0;
  if (argc > 1 && std::strcmp(argv[1], "kernels") == 0) {
    CUdevice dev = 0;
    cuDeviceGet(&dev, 0);
    kernels(dev);
    return 0;
  }
  if (argc > 2 && std::strcmp(argv[1], "pools") == 0) {
    CUdevice dev = 0;
    cuDeviceGet(&dev, 0);
    pools(dev, argv[2]);
    return 0;
  }
  if (argc > 2 && std::strcmp(argv[1], "steady") == 0) {
    CUdevice dev = 0;
    cuDeviceGet(&dev, 0);
    steady(dev, argv[2]);
    return 0;
  }
  int count = 0;
  cuDeviceGetCount(&count);
  std::printf("devices %d\n", count);
  CUdevice dev = 0;
  char device_name[256] = {};
  cuDeviceGet(&dev, 0);
  cuDeviceGetName(device_name, sizeof device_name, dev);
  std::printf("name %s\n", device_name);
  CUcontext ctx = nullptr;
  std::printf("cuCtxCreate %s\n", name(cuCtxCreate(&ctx, nullptr, 0, dev)));
  const size_t n = 1 << 16;
  std::vector<unsigned> host(n), back(n);
  for (size_t i = 0; i < n; ++i) host[i] = static_cast<unsigned>(i * 2654435761u);
  CUdeviceptr d = 0;
  std::printf("cuMemAlloc %s\n", name(cuMemAlloc(&d, n * 4)));
  CUstream s = nullptr;
  std::printf("cuStreamCreate %s\n", name(cuStreamCreate(&s, 0)));
  std::printf("cuMemcpyHtoDAsync %s\n", name(cuMemcpyHtoDAsync(d, host.data(), n * 4, s)));
  std::printf("cuMemsetD32Async %s\n", name(cuMemsetD32Async(d + 64, 0xdeadbeef, 16, s)));
  std::printf("cuMemcpyDtoHAsync %s\n", name(cuMemcpyDtoHAsync(back.data(), d, n * 4, s)));
  std::printf("cuStreamSynchronize %s\n", name(cuStreamSynchronize(s)));
  for (size_t i = 16; i < 32; ++i) host[i] = 0xdeadbeef;
  std::printf("roundtrip %s\n", host == back ? "ok" : "BAD");
  cuStreamDestroy(s);
  cuMemFree(d);
  std::printf("cuCtxDestroy %s\n", name(cuCtxDestroy(ctx)));
  return 0;
}
