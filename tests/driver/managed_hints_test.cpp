// Managed memory hints (issue 17): cuMemAdvise, cuMemPrefetchAsync and cuMemRangeGetAttribute(s)
// report what was advised and prefetched, page range by page range, with CUDA's refusals.
#include "conformance.hpp"

namespace conformance {
namespace {

using ManagedHints = Driver;

int range_int(CUmem_range_attribute attribute, CUdeviceptr p, size_t bytes) {
  int v = 12345;
  EXPECT_OK(cuMemRangeGetAttribute(&v, sizeof v, attribute, p, bytes));
  return v;
}

TEST_F(ManagedHints, AdviceIsReportedPerRange) {
  constexpr size_t kBytes = size_t{1} << 20;
  CUdeviceptr m = 0;
  ASSERT_OK(cuMemAllocManaged(&m, kBytes, CU_MEM_ATTACH_GLOBAL));
  const size_t half = kBytes / 2;
  EXPECT_EQ(range_int(CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, m, kBytes), 0) << "nothing advised";
  EXPECT_EQ(range_int(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, m, kBytes), CU_DEVICE_INVALID);

  ASSERT_OK(cuMemAdvise(m, kBytes, CU_MEM_ADVISE_SET_READ_MOSTLY, dev));
  ASSERT_OK(cuMemAdvise(m + half, half, CU_MEM_ADVISE_UNSET_READ_MOSTLY, dev));
  EXPECT_EQ(range_int(CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, m, half), 1);
  EXPECT_EQ(range_int(CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, m, kBytes), 0) << "not every page";

  CUmemLocation on_device{};
  on_device.type = CU_MEM_LOCATION_TYPE_DEVICE;
  on_device.id = dev;
  ASSERT_OK(cuMemAdvise_v2(m, kBytes, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, on_device));
  EXPECT_EQ(range_int(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, m, kBytes), dev);
  EXPECT_EQ(range_int(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE, m, kBytes),
            CU_MEM_LOCATION_TYPE_DEVICE);
  EXPECT_EQ(range_int(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID, m, kBytes), dev);
  ASSERT_OK(cuMemAdvise(m, half, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, CU_DEVICE_CPU));
  EXPECT_EQ(range_int(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, m, half), CU_DEVICE_CPU);
  EXPECT_EQ(range_int(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, m, kBytes), CU_DEVICE_INVALID)
      << "two preferred locations in the range";
  ASSERT_OK(cuMemAdvise(m, kBytes, CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION, dev));
  EXPECT_EQ(range_int(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, m, kBytes), CU_DEVICE_INVALID);

  ASSERT_OK(cuMemAdvise(m, kBytes, CU_MEM_ADVISE_SET_ACCESSED_BY, dev));
  int accessed[4] = {};
  ASSERT_OK(cuMemRangeGetAttribute(accessed, sizeof accessed, CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, m,
                                   kBytes));
  EXPECT_EQ(accessed[0], dev);
  EXPECT_EQ(accessed[1], CU_DEVICE_INVALID);
  EXPECT_EQ(accessed[3], CU_DEVICE_INVALID);
  ASSERT_OK(cuMemAdvise(m, kBytes, CU_MEM_ADVISE_UNSET_ACCESSED_BY, dev));
  ASSERT_OK(cuMemRangeGetAttribute(accessed, sizeof accessed, CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, m,
                                   kBytes));
  EXPECT_EQ(accessed[0], CU_DEVICE_INVALID);

  // Refusals: memory that is not managed, unknown advice or device, wrong data sizes.
  DeviceBuffer plain(4096);
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
            cuMemAdvise(plain.ptr, 4096, CU_MEM_ADVISE_SET_READ_MOSTLY, dev));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAdvise(m, kBytes, static_cast<CUmem_advise>(99), dev));
  EXPECT_CU(CUDA_ERROR_INVALID_DEVICE,
            cuMemAdvise(m, kBytes, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, 4096));
  long long wide = 0;
  EXPECT_CU(
      CUDA_ERROR_INVALID_VALUE,
      cuMemRangeGetAttribute(&wide, sizeof wide, CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, m, kBytes));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
            cuMemRangeGetAttribute(&wide, 4, CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, plain.ptr, 4096));
  ASSERT_OK(cuMemFree_v2(m));
}

// Which advice looks at its device, and what a device that does not exist gets: measured on an
// H100 with driver 580 (cuMemAdvise with a CUdevice, cuMemAdvise_v2 with a location).
TEST_F(ManagedHints, OnlyAdviceNamingALocationChecksTheDevice) {
  constexpr size_t kBytes = size_t{1} << 16;
  CUdeviceptr m = 0;
  ASSERT_OK(cuMemAllocManaged(&m, kBytes, CU_MEM_ATTACH_GLOBAL));
  for (const CUdevice missing : {4096, -7}) {
    SCOPED_TRACE(missing);
    CUmemLocation nowhere{};
    nowhere.type = CU_MEM_LOCATION_TYPE_DEVICE;
    nowhere.id = missing;
    // Read-mostly and unsetting the preferred location name no location: the device is ignored.
    EXPECT_OK(cuMemAdvise(m, kBytes, CU_MEM_ADVISE_SET_READ_MOSTLY, missing));
    EXPECT_EQ(range_int(CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, m, kBytes), 1);
    EXPECT_OK(cuMemAdvise_v2(m, kBytes, CU_MEM_ADVISE_UNSET_READ_MOSTLY, nowhere));
    EXPECT_EQ(range_int(CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, m, kBytes), 0);
    EXPECT_OK(cuMemAdvise(m, kBytes, CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION, missing));
    EXPECT_OK(cuMemAdvise_v2(m, kBytes, CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION, nowhere));
    // The others name one: no such device (a CUdevice) or an invalid location (_v2).
    for (const CUmem_advise advice :
         {CU_MEM_ADVISE_SET_PREFERRED_LOCATION, CU_MEM_ADVISE_SET_ACCESSED_BY,
          CU_MEM_ADVISE_UNSET_ACCESSED_BY}) {
      SCOPED_TRACE(advice);
      EXPECT_CU(CUDA_ERROR_INVALID_DEVICE, cuMemAdvise(m, kBytes, advice, missing));
      EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAdvise_v2(m, kBytes, advice, nowhere));
    }
    EXPECT_CU(CUDA_ERROR_INVALID_DEVICE, cuMemPrefetchAsync_v2(m, kBytes, nowhere, 0, nullptr));
  }
  ASSERT_OK(cuMemFree_v2(m));
}

TEST_F(ManagedHints, PrefetchesAreStreamOrderedAndReported) {
  constexpr size_t kBytes = size_t{1} << 20;
  CUdeviceptr m = 0;
  ASSERT_OK(cuMemAllocManaged(&m, kBytes, CU_MEM_ATTACH_GLOBAL));
  CUstream s = nullptr;
  ASSERT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  ASSERT_OK(cuMemsetD8Async(m, 0x3c, kBytes, s));
  CUmemLocation on_device{};
  on_device.type = CU_MEM_LOCATION_TYPE_DEVICE;
  on_device.id = dev;
  ASSERT_OK(cuMemPrefetchAsync_v2(m, kBytes, on_device, 0, s));
  ASSERT_OK(cuStreamSynchronize(s));
  EXPECT_EQ(range_int(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, m, kBytes), dev);
  EXPECT_EQ(range_int(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE, m, kBytes),
            CU_MEM_LOCATION_TYPE_DEVICE);
  EXPECT_EQ(range_int(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID, m, kBytes), dev);
  ASSERT_OK(cuMemPrefetchAsync(m, kBytes / 2, CU_DEVICE_CPU, s));
  ASSERT_OK(cuStreamSynchronize(s));
  EXPECT_EQ(range_int(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, m, kBytes / 2), CU_DEVICE_CPU);
  // The data is where the program left it, wherever it was moved.
  EXPECT_EQ(reinterpret_cast<volatile unsigned char*>(m)[kBytes - 1], 0x3c);

  // Both attributes at once.
  int read_mostly = 7, last = 7;
  void* data[2] = {&read_mostly, &last};
  size_t sizes[2] = {sizeof(int), sizeof(int)};
  CUmem_range_attribute which[2] = {CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY,
                                    CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION};
  ASSERT_OK(cuMemRangeGetAttributes(data, sizes, which, 2, m + kBytes / 2, kBytes / 2));
  EXPECT_EQ(read_mostly, 0);
  EXPECT_EQ(last, dev);

  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemPrefetchAsync_v2(m, kBytes, on_device, 1, s)) << "flags";
  EXPECT_CU(CUDA_ERROR_INVALID_DEVICE, cuMemPrefetchAsync(m, kBytes, 4096, s));
  // The per-thread forms, on the per-thread stream.
  ASSERT_OK(cuMemPrefetchAsync_ptsz(m, kBytes, dev, nullptr));
  ASSERT_OK(cuMemPrefetchAsync_v2_ptsz(m, kBytes, on_device, 0, nullptr));
  ASSERT_OK(cuStreamSynchronize(CU_STREAM_PER_THREAD));
  ASSERT_OK(cuStreamDestroy_v2(s));
  ASSERT_OK(cuMemFree_v2(m));
}

}  // namespace
}  // namespace conformance
