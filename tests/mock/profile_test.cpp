// Device discovery, the device profile, error translation.
#include <set>

#include "mock_fixture.hpp"

namespace cudamux::mock::test {
namespace {

int attr(be::Backend& b, CUdevice_attribute a, int ordinal = 0) {
  int v = -12345;
  EXPECT_EQ(cu(b.devices().attribute(ordinal, a, v)), CUDA_SUCCESS) << "attribute " << a;
  return v;
}

TEST(MockProfile, AbiVersionMatches) { EXPECT_EQ(Plugin::get().abi(), be::kAbiVersion); }

TEST(MockProfile, DefaultsToOneH100LikeDevice) {
  auto b = make_backend();
  EXPECT_EQ(b->name(), "mock");
  ASSERT_EQ(b->devices().count(), 1);
  be::DeviceProperties p;
  ASSERT_EQ(cu(b->devices().properties(0, p)), CUDA_SUCCESS);
  EXPECT_EQ(p.name, "cudamux mock (H100-like)");
  EXPECT_EQ(p.total_memory, std::size_t{80} << 30);
  EXPECT_EQ(p.cc_major, 9);
  EXPECT_EQ(p.cc_minor, 0);
  std::size_t free_bytes = 0;
  std::size_t total = 0;
  ASSERT_EQ(cu(b->devices().memory_info(0, free_bytes, total)), CUDA_SUCCESS);
  EXPECT_EQ(total, std::size_t{80} << 30);
  EXPECT_EQ(free_bytes, total);
}

TEST(MockProfile, EveryCuda13AttributeHasAValue) {
  auto b = make_backend();
  for (int a = 1; a < CU_DEVICE_ATTRIBUTE_MAX; ++a) {
    int v = 0;
    EXPECT_EQ(cu(b->devices().attribute(0, static_cast<CUdevice_attribute>(a), v)), CUDA_SUCCESS)
        << "attribute " << a;
  }
}

TEST(MockProfile, H100LikeValues) {
  auto b = make_backend();
  EXPECT_EQ(attr(*b, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT), 132);
  EXPECT_EQ(attr(*b, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK), 1024);
  EXPECT_EQ(attr(*b, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR), 2048);
  EXPECT_EQ(attr(*b, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X), 2147483647);
  EXPECT_EQ(attr(*b, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y), 65535);
  EXPECT_EQ(attr(*b, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z), 65535);
  EXPECT_EQ(attr(*b, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z), 64);
  EXPECT_EQ(attr(*b, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK), 48 * 1024);
  EXPECT_EQ(attr(*b, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN), 227 * 1024);
  EXPECT_EQ(attr(*b, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK), 65536);
  EXPECT_EQ(attr(*b, CU_DEVICE_ATTRIBUTE_WARP_SIZE), 32);
  EXPECT_EQ(attr(*b, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING), 1);
  EXPECT_EQ(attr(*b, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY), 1);
  EXPECT_EQ(attr(*b, CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS), 1);
  EXPECT_EQ(attr(*b, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE), 50 * 1024 * 1024);
  EXPECT_EQ(attr(*b, CU_DEVICE_ATTRIBUTE_COMPUTE_MODE), CU_COMPUTEMODE_DEFAULT);
  EXPECT_EQ(attr(*b, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR), 9);
  EXPECT_EQ(attr(*b, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR), 0);
  EXPECT_GT(attr(*b, CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT), 0);
  EXPECT_GT(attr(*b, CU_DEVICE_ATTRIBUTE_CLOCK_RATE), 0);
  EXPECT_GT(attr(*b, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE), 0);
  EXPECT_EQ(attr(*b, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH), 5120);
  EXPECT_EQ(attr(*b, CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM), 1);
}

TEST(MockProfile, UnknownAttributesAndDevicesAreRefused) {
  auto b = make_backend();
  int v = 0;
  EXPECT_EQ(cu(b->devices().attribute(0, static_cast<CUdevice_attribute>(0), v)),
            CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(cu(b->devices().attribute(0, CU_DEVICE_ATTRIBUTE_MAX, v)), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(cu(b->devices().attribute(0, static_cast<CUdevice_attribute>(100000), v)),
            CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(cu(b->devices().attribute(1, CU_DEVICE_ATTRIBUTE_WARP_SIZE, v)),
            CUDA_ERROR_INVALID_DEVICE);
  EXPECT_EQ(cu(b->devices().attribute(-1, CU_DEVICE_ATTRIBUTE_WARP_SIZE, v)),
            CUDA_ERROR_INVALID_DEVICE);
  be::DeviceProperties p;
  EXPECT_EQ(cu(b->devices().properties(1, p)), CUDA_ERROR_INVALID_DEVICE);
  std::unique_ptr<be::DeviceContext> ctx;
  EXPECT_EQ(cu(b->open_context(1, 0, ctx)), CUDA_ERROR_INVALID_DEVICE);
  EXPECT_EQ(ctx, nullptr);
}

TEST(MockProfile, SeveralDevicesHaveDistinctIdentities) {
  auto b = make_backend("[mock]\ndevices = 4\nmemory = 1048576\n");
  ASSERT_EQ(b->devices().count(), 4);
  std::set<std::array<unsigned char, 16>> uuids;
  std::set<int> buses;
  for (int i = 0; i < 4; ++i) {
    be::DeviceProperties p;
    ASSERT_EQ(cu(b->devices().properties(i, p)), CUDA_SUCCESS);
    EXPECT_EQ(p.total_memory, 1048576u);
    uuids.insert(p.uuid);
    buses.insert(p.pci_bus);
    EXPECT_EQ(attr(*b, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, i), p.pci_bus);
    EXPECT_EQ(p.uuid[6] >> 4, 5) << "RFC 4122 version 5 (name-based)";
    EXPECT_EQ(p.uuid[8] & 0xC0, 0x80) << "RFC 4122 variant";
    for (int j = 0; j < 4; ++j) EXPECT_EQ(b->devices().can_access_peer(i, j), i != j);
  }
  EXPECT_EQ(uuids.size(), 4u);
  EXPECT_EQ(buses.size(), 4u);
  EXPECT_FALSE(b->devices().can_access_peer(0, 4));
}

TEST(MockProfile, UuidIsDeterministic) {
  auto a = make_backend("[mock]\ndevices = 2\nmemory = 1048576\n");
  auto b = make_backend("[mock]\ndevices = 2\nmemory = 1048576\n");
  for (int i = 0; i < 2; ++i) {
    be::DeviceProperties pa;
    be::DeviceProperties pb;
    ASSERT_EQ(cu(a->devices().properties(i, pa)), CUDA_SUCCESS);
    ASSERT_EQ(cu(b->devices().properties(i, pb)), CUDA_SUCCESS);
    EXPECT_EQ(pa.uuid, pb.uuid);
  }
}

TEST(MockProfile, OtherBuiltInProfiles) {
  auto a100 = make_backend("[mock]\nprofile = \"a100-sxm\"\n");
  be::DeviceProperties p;
  ASSERT_EQ(cu(a100->devices().properties(0, p)), CUDA_SUCCESS);
  EXPECT_EQ(p.name, "cudamux mock (A100-like)");
  EXPECT_EQ(p.cc_major, 8);
  EXPECT_EQ(p.cc_minor, 0);
  EXPECT_EQ(attr(*a100, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT), 108);
  auto rtx = make_backend("[mock]\nprofile = \"rtx4090\"\n");
  EXPECT_EQ(attr(*rtx, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR), 1536);
  EXPECT_EQ(attr(*rtx, CU_DEVICE_ATTRIBUTE_ECC_ENABLED), 0);
}

TEST(MockProfile, AttributeOverrides) {
  auto b = make_backend(R"([mock]
profile = "h100-sxm"
[mock.attributes]
CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 100
CU_DEVICE_ATTRIBUTE_SHARED_MEMORY_PER_BLOCK = 12345  # deprecated alias of MAX_SHARED_...
name = "My Test GPU"
compute_capability = "8.6"
)");
  EXPECT_EQ(attr(*b, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT), 100);
  EXPECT_EQ(attr(*b, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK), 12345);
  EXPECT_EQ(attr(*b, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR), 8);
  EXPECT_EQ(attr(*b, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR), 6);
  be::DeviceProperties p;
  ASSERT_EQ(cu(b->devices().properties(0, p)), CUDA_SUCCESS);
  EXPECT_EQ(p.name, "My Test GPU");
  EXPECT_EQ(p.cc_major, 8);
  EXPECT_EQ(p.cc_minor, 6);
}

TEST(MockErrors, NativeCodesAreCuresults) {
  auto b = make_backend();
  const auto& e = b->errors();
  EXPECT_EQ(e.to_cuda(0), CUDA_SUCCESS);
  EXPECT_EQ(e.to_cuda(CUDA_ERROR_ILLEGAL_ADDRESS), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_EQ(e.to_cuda(CUDA_ERROR_UNKNOWN), CUDA_ERROR_UNKNOWN);
  EXPECT_EQ(e.to_cuda(12345), std::nullopt);
  EXPECT_EQ(e.to_cuda(-1), std::nullopt);
  EXPECT_EQ(e.native_name(CUDA_ERROR_NOT_READY), "CUDA_ERROR_NOT_READY");
  EXPECT_EQ(e.native_name(0), "CUDA_SUCCESS");
  EXPECT_EQ(e.native_name(CUDA_ERROR_OUT_OF_MEMORY), "CUDA_ERROR_OUT_OF_MEMORY");
  EXPECT_EQ(cu(e.not_ready()), CUDA_ERROR_NOT_READY);
  EXPECT_EQ(cu(e.not_supported()), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(cu(e.out_of_memory()), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(cu(e.invalid_value()), CUDA_ERROR_INVALID_VALUE);
}

}  // namespace
}  // namespace cudamux::mock::test
