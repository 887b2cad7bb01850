// CUDA's environment variables as cudamux reads them (core/src/cuda_env.cpp): device
// selection (CUDA_VISIBLE_DEVICES over CUDA_DEVICE_ORDER), CUDA_LAUNCH_BLOCKING and
// CUDA_MODULE_LOADING parsing.
#include "cudamux/cuda_env.hpp"

#include <gtest/gtest.h>

namespace ce = cudamux::cuda_env;

namespace {
// Three devices: backend order 0, 1, 2; PCI buses 0x30, 0x10, 0x20; device 2 the fastest.
std::vector<ce::DeviceFacts> three() {
  std::vector<ce::DeviceFacts> d(3);
  for (int i = 0; i < 3; ++i) {
    d[static_cast<std::size_t>(i)].uuid.fill(static_cast<unsigned char>(0x11 * (i + 1)));
    d[static_cast<std::size_t>(i)].cc_major = 9;
    d[static_cast<std::size_t>(i)].speed = 100;
  }
  d[0].pci_bus = 0x30;
  d[1].pci_bus = 0x10;
  d[2].pci_bus = 0x20;
  d[2].speed = 200;
  return d;
}
std::vector<int> sel(const char* visible, const char* order = nullptr) {
  return ce::select_devices(three(), visible, order).backend_ordinals;
}
using V = std::vector<int>;
}  // namespace

TEST(CudaVisibleDevices, UnsetShowsAllFastestFirst) { EXPECT_EQ(sel(nullptr), (V{2, 0, 1})); }

TEST(CudaVisibleDevices, PciBusIdOrder) {
  EXPECT_EQ(sel(nullptr, "PCI_BUS_ID"), (V{1, 2, 0}));
  EXPECT_EQ(sel(nullptr, "pci_bus_id"), (V{1, 2, 0}));
}

TEST(CudaVisibleDevices, UnknownOrderFallsBackWithANote) {
  const auto s = ce::select_devices(three(), nullptr, "SLOWEST_FIRST");
  EXPECT_EQ(s.backend_ordinals, (V{2, 0, 1}));
  ASSERT_EQ(s.notes.size(), 1u);
  EXPECT_NE(s.notes[0].find("SLOWEST_FIRST"), std::string::npos);
}

TEST(CudaVisibleDevices, IndicesReorderAndHide) {
  // Indices count in the enumeration order (PCI: 1, 2, 0).
  EXPECT_EQ(sel("2,0", "PCI_BUS_ID"), (V{0, 1}));
  EXPECT_EQ(sel(" 1 , 0 ", "PCI_BUS_ID"), (V{2, 1}));
  EXPECT_EQ(sel("1"), (V{0}));
}

TEST(CudaVisibleDevices, EmptyShowsNothing) { EXPECT_TRUE(sel("").empty()); }

TEST(CudaVisibleDevices, InvalidEntryEndsTheList) {
  for (const char* spec : {"0,5,1", "0,-1,1", "0,x,1", "0,1x,1", "0,0,1", "0,,1"}) {
    const auto s = ce::select_devices(three(), spec, "PCI_BUS_ID");
    EXPECT_EQ(s.backend_ordinals, (V{1})) << spec;
    EXPECT_EQ(s.notes.size(), 1u) << spec;
  }
  EXPECT_TRUE(sel("garbage").empty());
}

TEST(CudaVisibleDevices, UuidsAndUniquePrefixes) {
  const auto d = three();
  const std::string u1 = ce::uuid_string(d[1].uuid);
  EXPECT_EQ(u1, "GPU-22222222-2222-2222-2222-222222222222");
  EXPECT_EQ(sel(u1.c_str()), (V{1}));
  EXPECT_EQ(sel("GPU-3333"), (V{2}));
  EXPECT_EQ(sel("gpu-3333,GPU-1"), (V{2, 0}));
  EXPECT_TRUE(sel("GPU-").empty());      // matches every device: ambiguous
  EXPECT_TRUE(sel("GPU-4444").empty());  // matches none
  EXPECT_EQ(sel("GPU-1111,GPU-9"), (V{0}));
  EXPECT_TRUE(sel("MIG-1111").empty());  // no MIG instances on any backend
}

TEST(CudaLaunchBlocking, OnlyOneSwitchesItOn) {
  EXPECT_TRUE(ce::launch_blocking("1"));
  EXPECT_FALSE(ce::launch_blocking(nullptr));
  EXPECT_FALSE(ce::launch_blocking("0"));
  EXPECT_FALSE(ce::launch_blocking("yes"));
}

TEST(CudaModuleLoading, LazyByDefaultEagerOnRequest) {
  EXPECT_EQ(ce::module_loading(nullptr), ce::ModuleLoading::lazy);
  EXPECT_EQ(ce::module_loading(""), ce::ModuleLoading::lazy);
  EXPECT_EQ(ce::module_loading("LAZY"), ce::ModuleLoading::lazy);
  EXPECT_EQ(ce::module_loading("eager"), ce::ModuleLoading::eager);
  EXPECT_EQ(ce::module_loading("sometimes"), std::nullopt);
}
