// Virtual memory management (issue 17): granularity, reservations, physical allocations, maps,
// access, handles and POSIX file descriptor export/import, checked through the driver API on
// every backend (oracle: NVIDIA's driver on the GPU machine).
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "conformance.hpp"

namespace conformance {
namespace {

using Vmm = Driver;

constexpr const char* kHipHasNoVmm =
    "the hip backend offers no virtual memory management yet (docs/backends/hip.md)";

CUmemAllocationProp device_prop(CUdevice dev, unsigned handle_types = 0) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = dev;
  prop.requestedHandleTypes = static_cast<CUmemAllocationHandleType>(handle_types);
  return prop;
}

size_t granularity_of(CUdevice dev) {
  const CUmemAllocationProp prop = device_prop(dev);
  size_t g = 0;
  EXPECT_OK(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  return g;
}

CUmemAccessDesc read_write(CUdevice dev) {
  CUmemAccessDesc d{};
  d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  d.location.id = dev;
  d.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  return d;
}

// Programs ask before they use VMM (NVIDIA's vectorAddMMAP waives without it).
TEST_F(Vmm, TheDeviceSaysItHasVmmAndFileDescriptorHandles) {
  CUDAMUX_KNOWN_DIFFERENCE("hip", kHipHasNoVmm);
  int vmm = 0, fds = 0;
  ASSERT_OK(
      cuDeviceGetAttribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, dev));
  EXPECT_EQ(1, vmm);
  ASSERT_OK(cuDeviceGetAttribute(
      &fds, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, dev));
  EXPECT_EQ(1, fds);
}

TEST_F(Vmm, GranularityIsAPowerOfTwoAndPropertiesAreChecked) {
  CUDAMUX_KNOWN_DIFFERENCE("hip", kHipHasNoVmm);
  const CUmemAllocationProp prop = device_prop(dev);
  size_t minimum = 0, recommended = 0;
  ASSERT_OK(cuMemGetAllocationGranularity(&minimum, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  ASSERT_OK(
      cuMemGetAllocationGranularity(&recommended, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
  EXPECT_GT(minimum, 0u);
  EXPECT_EQ(minimum & (minimum - 1), 0u) << minimum;
  EXPECT_GE(recommended, minimum);
  EXPECT_EQ(minimum % static_cast<size_t>(sysconf(_SC_PAGESIZE)), 0u);

  size_t g = 0;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
            cuMemGetAllocationGranularity(nullptr, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
            cuMemGetAllocationGranularity(&g, nullptr, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  EXPECT_CU(
      CUDA_ERROR_INVALID_VALUE,
      cuMemGetAllocationGranularity(&g, &prop, static_cast<CUmemAllocationGranularity_flags>(7)));
  // The properties are checked where memory is made, not here (oracle: NVIDIA's driver 580
  // answers an invalid type or device with the system's granularity).
  CUmemAllocationProp bad = prop;
  bad.type = CU_MEM_ALLOCATION_TYPE_INVALID;
  CUmemGenericAllocationHandle h = 0;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemCreate(&h, minimum, &bad, 0));
  bad = prop;
  bad.location.id = 4096;
  EXPECT_NE(cuMemCreate(&h, minimum, &bad, 0), CUDA_SUCCESS);
}

// Two physical allocations mapped side by side in one reservation behave as one buffer to
// copies and memsets once they are accessible; handles come back from addresses.
TEST_F(Vmm, MappedMemoryIsDeviceMemory) {
  CUDAMUX_KNOWN_DIFFERENCE("hip", kHipHasNoVmm);
  const size_t g = granularity_of(dev);
  ASSERT_GT(g, 0u);
  CUdeviceptr base = 0;
  ASSERT_OK(cuMemAddressReserve(&base, 2 * g, 0, 0, 0));
  ASSERT_NE(base, 0u);
  EXPECT_EQ(base % g, 0u) << "reservations are aligned for mapping";
  const CUmemAllocationProp prop = device_prop(dev);
  CUmemGenericAllocationHandle a = 0, b = 0;
  ASSERT_OK(cuMemCreate(&a, g, &prop, 0));
  ASSERT_OK(cuMemCreate(&b, g, &prop, 0));
  ASSERT_OK(cuMemMap(base, g, 0, a, 0));
  ASSERT_OK(cuMemMap(base + g, g, 0, b, 0));
  const CUmemAccessDesc rw = read_write(dev);
  ASSERT_OK(cuMemSetAccess(base, 2 * g, &rw, 1));  // one call over both mappings
  unsigned long long flags = 0;
  ASSERT_OK(cuMemGetAccess(&flags, &rw.location, base + g + 64));
  EXPECT_EQ(flags, static_cast<unsigned long long>(CU_MEM_ACCESS_FLAGS_PROT_READWRITE));

  ASSERT_OK(cuMemsetD8_v2(base, 0x11, g));
  std::vector<unsigned char> pattern(g);
  for (size_t i = 0; i < g; ++i) pattern[i] = static_cast<unsigned char>(i * 7);
  ASSERT_OK(cuMemcpyHtoD_v2(base + g, pattern.data(), g));
  std::vector<unsigned char> back(g);
  ASSERT_OK(cuMemcpyDtoH_v2(back.data(), base + g, g));
  EXPECT_EQ(back, pattern);
  ASSERT_OK(cuMemcpyDtoH_v2(back.data(), base, 16));
  EXPECT_EQ(back[0], 0x11);
  EXPECT_EQ(back[15], 0x11);
  unsigned type = 0;
  ASSERT_OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, base + 8));
  EXPECT_EQ(type, static_cast<unsigned>(CU_MEMORYTYPE_DEVICE));

  CUmemGenericAllocationHandle retained = 0;
  ASSERT_OK(cuMemRetainAllocationHandle(&retained, reinterpret_cast<void*>(base + g + 100)));
  EXPECT_EQ(retained, b);
  ASSERT_OK(cuMemRelease(retained));
  CUmemAllocationProp read_back{};
  ASSERT_OK(cuMemGetAllocationPropertiesFromHandle(&read_back, a));
  EXPECT_EQ(read_back.location.id, dev);
  EXPECT_EQ(read_back.type, CU_MEM_ALLOCATION_TYPE_PINNED);

  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemFree_v2(base)) << "mapped memory is not cuMemAlloc's";
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAddressFree(base, 2 * g)) << "still mapped";
  ASSERT_OK(cuMemUnmap(base, 2 * g));
  ASSERT_OK(cuMemRelease(a));
  ASSERT_OK(cuMemRelease(b));
  ASSERT_OK(cuMemAddressFree(base, 2 * g));
}

// Compressible memory (NVIDIA's cudaCompressibleMemory asks for it and checks what it got): the
// allocation's properties say what the device gave, which a device may make plain memory; the mock
// gives what was asked (it reads and writes as any memory).
TEST_F(Vmm, CompressibleAllocationsReportWhatTheyGot) {
  CUDAMUX_KNOWN_DIFFERENCE("hip", kHipHasNoVmm);
  int supported = 0;
  ASSERT_OK(
      cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED, dev));
  if (!supported) GTEST_SKIP() << "the device has no generic compression";
  const size_t g = granularity_of(dev);
  CUmemAllocationProp prop = device_prop(dev);
  prop.allocFlags.compressionType = CU_MEM_ALLOCATION_COMP_GENERIC;
  CUmemGenericAllocationHandle compressible = 0, plain = 0;
  ASSERT_OK(cuMemCreate(&compressible, g, &prop, 0));
  const CUmemAllocationProp plain_prop = device_prop(dev);
  ASSERT_OK(cuMemCreate(&plain, g, &plain_prop, 0));
  CUmemAllocationProp got{};
  ASSERT_OK(cuMemGetAllocationPropertiesFromHandle(&got, compressible));
  if (backend() == "mock") {
    EXPECT_EQ(got.allocFlags.compressionType, CU_MEM_ALLOCATION_COMP_GENERIC);
  } else {
    EXPECT_TRUE(got.allocFlags.compressionType == CU_MEM_ALLOCATION_COMP_GENERIC ||
                got.allocFlags.compressionType == CU_MEM_ALLOCATION_COMP_NONE);
  }
  ASSERT_OK(cuMemGetAllocationPropertiesFromHandle(&got, plain));
  EXPECT_EQ(got.allocFlags.compressionType, CU_MEM_ALLOCATION_COMP_NONE);
  // Mapped, compressible memory holds what is written to it.
  CUdeviceptr base = 0;
  ASSERT_OK(cuMemAddressReserve(&base, g, 0, 0, 0));
  ASSERT_OK(cuMemMap(base, g, 0, compressible, 0));
  const CUmemAccessDesc rw = read_write(dev);
  ASSERT_OK(cuMemSetAccess(base, g, &rw, 1));
  ASSERT_OK(cuMemsetD32_v2(base, 0xc0ffee, g / 4));
  unsigned last = 0;
  ASSERT_OK(cuMemcpyDtoH_v2(&last, base + g - 4, 4));
  EXPECT_EQ(last, 0xc0ffeeu);
  ASSERT_OK(cuMemUnmap(base, g));
  ASSERT_OK(cuMemAddressFree(base, g));
  ASSERT_OK(cuMemRelease(compressible));
  ASSERT_OK(cuMemRelease(plain));
}

// A reservation is one range of addresses however many allocations back it: copies and memsets
// run from one mapping into the next (NVIDIA's vectorAddMMAP maps its buffers so; PyTorch's
// expandable segments put tensors across such seams). Only mapped, accessible memory counts.
TEST_F(Vmm, CopiesAndMemsetsRunAcrossTheSeamOfTwoMappings) {
  CUDAMUX_KNOWN_DIFFERENCE("hip", kHipHasNoVmm);
  const size_t g = granularity_of(dev);
  ASSERT_GE(g, 16384u);
  CUdeviceptr base = 0;
  ASSERT_OK(cuMemAddressReserve(&base, 3 * g, 0, 0, 0));  // the third granule stays unmapped
  const CUmemAllocationProp prop = device_prop(dev);
  CUmemGenericAllocationHandle a = 0, b = 0;
  ASSERT_OK(cuMemCreate(&a, g, &prop, 0));
  ASSERT_OK(cuMemCreate(&b, g, &prop, 0));
  ASSERT_OK(cuMemMap(base, g, 0, a, 0));
  ASSERT_OK(cuMemMap(base + g, g, 0, b, 0));
  ASSERT_OK(cuMemRelease(a));
  ASSERT_OK(cuMemRelease(b));
  const CUmemAccessDesc rw = read_write(dev);
  ASSERT_OK(cuMemSetAccess(base, 2 * g, &rw, 1));

  ASSERT_OK(cuMemsetD32_v2(base, 0x5a5a5a5au, 2 * g / 4));  // both mappings in one call
  constexpr size_t kWindow = 8192;                          // half on each side of the seam
  const CUdeviceptr seam = base + g - kWindow / 2;
  std::vector<unsigned char> pattern(kWindow), back(kWindow + 8);
  for (size_t i = 0; i < kWindow; ++i) pattern[i] = static_cast<unsigned char>(i * 13 + 1);
  ASSERT_OK(cuMemcpyHtoD_v2(seam, pattern.data(), kWindow));
  ASSERT_OK(cuMemcpyDtoH_v2(back.data(), seam - 4, kWindow + 8));
  EXPECT_EQ(std::vector<unsigned char>(back.begin() + 4, back.end() - 4), pattern);
  EXPECT_EQ(back[0], 0x5a) << "before the window: the memset's";
  EXPECT_EQ(back[kWindow + 7], 0x5a) << "after the window: the memset's";

  // Device to device, out of the seam into the first mapping and back across it.
  ASSERT_OK(cuMemcpyDtoD_v2(base, seam, kWindow));
  std::fill(back.begin(), back.end(), 0);
  ASSERT_OK(cuMemcpyDtoH_v2(back.data(), base, kWindow));
  EXPECT_EQ(std::vector<unsigned char>(back.begin(), back.begin() + kWindow), pattern);
  ASSERT_OK(cuMemsetD8_v2(seam, 0x77, kWindow));
  ASSERT_OK(cuMemcpyDtoD_v2(seam, base, kWindow));
  std::fill(back.begin(), back.end(), 0);
  // Unified addressing (cuMemcpy) reads across the seam as well.
  ASSERT_OK(cuMemcpy(reinterpret_cast<CUdeviceptr>(back.data()), seam, kWindow));
  EXPECT_EQ(std::vector<unsigned char>(back.begin(), back.begin() + kWindow), pattern);
  // A 2D memset whose rows straddle the seam.
  ASSERT_OK(cuMemsetD2D8_v2(seam, 1024, 0x33, 512, 8));
  ASSERT_OK(cuMemcpyDtoH_v2(back.data(), seam + 7 * 1024, 4));
  EXPECT_EQ(back[0], 0x33);

  // Past the second mapping the range is not mapped: cudamux refuses the copy (NVIDIA's driver
  // leaves it undefined).
  EXPECT_CU_CUDAMUX(CUDA_ERROR_INVALID_VALUE,
                    cuMemcpyHtoD_v2(base + 2 * g - kWindow / 2, pattern.data(), kWindow));
  EXPECT_CU_CUDAMUX(CUDA_ERROR_INVALID_VALUE, cuMemsetD8_v2(base + g, 0, g + 1));

  ASSERT_OK(cuMemUnmap(base, 2 * g));
  ASSERT_OK(cuMemAddressFree(base, 3 * g));
}

TEST_F(Vmm, MapRulesAreEnforced) {
  CUDAMUX_KNOWN_DIFFERENCE("hip", kHipHasNoVmm);
  const size_t g = granularity_of(dev);
  ASSERT_GT(g, 0u);
  CUdeviceptr base = 0;
  ASSERT_OK(cuMemAddressReserve(&base, 2 * g, 0, 0, 0));
  const CUmemAllocationProp prop = device_prop(dev);
  CUmemGenericAllocationHandle h = 0;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemCreate(&h, g / 2, &prop, 0)) << "not a granule";
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemCreate(&h, g, &prop, 1)) << "flags";
  ASSERT_OK(cuMemCreate(&h, g, &prop, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemMap(base + 4096, g, 0, h, 0)) << "unaligned";
  // oracle: NVIDIA's driver 580 answers CUDA_ERROR_NOT_SUPPORTED here.
  EXPECT_CU(CUDA_ERROR_NOT_SUPPORTED, cuMemMap(base, 2 * g, 0, h, 0)) << "past the allocation";
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemMap(base, g, 0, h, 1)) << "flags";
  ASSERT_OK(cuMemMap(base, g, 0, h, 0));
  const CUmemAccessDesc rw = read_write(dev);
  EXPECT_NE(cuMemSetAccess(base, 2 * g, &rw, 1), CUDA_SUCCESS) << "half of it is not mapped";
  // A range with unmapped space in it unmaps what is mapped there (oracle: NVIDIA's 580).
  ASSERT_OK(cuMemUnmap(base, 2 * g));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemSetAccess(base, g, &rw, 1)) << "no longer mapped";
  ASSERT_OK(cuMemMap(base, g, 0, h, 0));
  // Released while mapped: the memory lives until the unmap.
  ASSERT_OK(cuMemSetAccess(base, g, &rw, 1));
  ASSERT_OK(cuMemRelease(h));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemRelease(h)) << "released twice";
  ASSERT_OK(cuMemsetD32_v2(base, 0xabcdef01u, g / 4));
  unsigned word = 0;
  ASSERT_OK(cuMemcpyDtoH_v2(&word, base + g - 4, 4));
  EXPECT_EQ(word, 0xabcdef01u);
  ASSERT_OK(cuMemUnmap(base, g));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAddressFree(base, g)) << "not the reserved size";
  ASSERT_OK(cuMemAddressFree(base, 2 * g));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAddressReserve(&base, 4095, 0, 0, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAddressReserve(&base, g, 3, 0, 0));
}

// A POSIX file descriptor names the same physical memory: what one mapping writes, the
// other reads.
TEST_F(Vmm, FileDescriptorsShareThePhysicalMemory) {
  CUDAMUX_KNOWN_DIFFERENCE("hip", kHipHasNoVmm);
  const size_t g = granularity_of(dev);
  ASSERT_GT(g, 0u);
  const CUmemAllocationProp prop = device_prop(dev, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  CUmemGenericAllocationHandle h = 0, not_exportable = 0;
  ASSERT_OK(cuMemCreate(&h, g, &prop, 0));
  int fd = -1;
  ASSERT_OK(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  ASSERT_GE(fd, 0);
  const CUmemAllocationProp plain = device_prop(dev);
  ASSERT_OK(cuMemCreate(&not_exportable, g, &plain, 0));
  int other_fd = -1;
  EXPECT_NE(cuMemExportToShareableHandle(&other_fd, not_exportable,
                                         CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
            CUDA_SUCCESS);
  ASSERT_OK(cuMemRelease(not_exportable));
  CUmemGenericAllocationHandle imported = 0;
  ASSERT_OK(cuMemImportFromShareableHandle(&imported,
                                           reinterpret_cast<void*>(static_cast<intptr_t>(fd)),
                                           CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
  close(fd);
  CUdeviceptr first = 0, second = 0;
  ASSERT_OK(cuMemAddressReserve(&first, g, 0, 0, 0));
  ASSERT_OK(cuMemAddressReserve(&second, g, 0, 0, 0));
  ASSERT_OK(cuMemMap(first, g, 0, h, 0));
  ASSERT_OK(cuMemMap(second, g, 0, imported, 0));
  const CUmemAccessDesc rw = read_write(dev);
  ASSERT_OK(cuMemSetAccess(first, g, &rw, 1));
  ASSERT_OK(cuMemSetAccess(second, g, &rw, 1));
  const unsigned value = 0x5eedf00d;
  ASSERT_OK(cuMemcpyHtoD_v2(first + 256, &value, sizeof value));
  unsigned seen = 0;
  ASSERT_OK(cuMemcpyDtoH_v2(&seen, second + 256, sizeof seen));
  EXPECT_EQ(seen, value);
  ASSERT_OK(cuMemUnmap(first, g));
  ASSERT_OK(cuMemUnmap(second, g));
  ASSERT_OK(cuMemRelease(h));
  ASSERT_OK(cuMemRelease(imported));
  ASSERT_OK(cuMemAddressFree(first, g));
  ASSERT_OK(cuMemAddressFree(second, g));
}

// Another process imports the exported descriptor and sees the same memory: it reads what
// this process wrote and writes an answer this process reads (driver_vmm_importer).
TEST_F(Vmm, AnotherProcessMapsTheExportedMemory) {
  CUDAMUX_KNOWN_DIFFERENCE("hip", kHipHasNoVmm);
  char self[4096] = {};
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  ASSERT_GT(n, 0);
  std::string importer(self, static_cast<size_t>(n));
  importer = importer.substr(0, importer.rfind('/') + 1) + "driver_vmm_importer";
  if (access(importer.c_str(), X_OK) != 0) GTEST_SKIP() << "no " << importer << " beside the suite";
  const size_t g = granularity_of(dev);
  ASSERT_GT(g, 0u);
  const CUmemAllocationProp prop = device_prop(dev, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  CUmemGenericAllocationHandle h = 0;
  ASSERT_OK(cuMemCreate(&h, g, &prop, 0));
  CUdeviceptr va = 0;
  ASSERT_OK(cuMemAddressReserve(&va, g, 0, 0, 0));
  ASSERT_OK(cuMemMap(va, g, 0, h, 0));
  const CUmemAccessDesc rw = read_write(dev);
  ASSERT_OK(cuMemSetAccess(va, g, &rw, 1));
  const unsigned value = 0x0badcafe;
  ASSERT_OK(cuMemcpyHtoD_v2(va + 4096, &value, sizeof value));
  int fd = -1;
  ASSERT_OK(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  ASSERT_GE(fd, 0);
  ASSERT_EQ(fcntl(fd, F_SETFD, 0), 0);  // inherited by the child
  const std::string command =
      importer + " " + std::to_string(fd) + " " + std::to_string(g) + " 4096";
  FILE* child = popen(command.c_str(), "r");
  ASSERT_NE(child, nullptr);
  char line[64] = {};
  const bool got = fgets(line, sizeof line, child) != nullptr;
  const int status = pclose(child);
  close(fd);
  EXPECT_TRUE(got);
  EXPECT_STREQ(line, "0badcafe\n");
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "importer status " << status;
  unsigned reply = 0;
  ASSERT_OK(cuMemcpyDtoH_v2(&reply, va + 4096 + 4, sizeof reply));
  EXPECT_EQ(reply, ~value) << "the other process wrote into the same memory";
  ASSERT_OK(cuMemUnmap(va, g));
  ASSERT_OK(cuMemRelease(h));
  ASSERT_OK(cuMemAddressFree(va, g));
}

}  // namespace
}  // namespace conformance
