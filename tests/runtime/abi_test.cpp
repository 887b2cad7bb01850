// ABI check of our runtime headers: every enum constant, integer macro, typedef size and
// record size/alignment/field offset equals NVIDIA's (same generated probe, both headers).
#include <gtest/gtest.h>

#include <cstddef>
#include <map>
#include <string>

extern "C" {
struct cudamux_abi_entry {
  const char* name;
  long long value;
};
const cudamux_abi_entry* cudamux_rt_abi_ours(std::size_t* count);
#ifdef CUDAMUX_HAVE_NVIDIA_RUNTIME_H
const cudamux_abi_entry* cudamux_rt_abi_nvidia(std::size_t* count);
#endif
}

namespace {

std::map<std::string, long long> load(const cudamux_abi_entry* (*probe)(std::size_t*)) {
  std::size_t n = 0;
  const cudamux_abi_entry* e = probe(&n);
  std::map<std::string, long long> out;
  for (std::size_t i = 0; i < n; ++i) out.emplace(e[i].name, e[i].value);
  return out;
}

TEST(RuntimeAbi, OurProbeRecordsFacts) {
  const auto mine = load(cudamux_rt_abi_ours);
  EXPECT_GT(mine.size(), 1500u);
  EXPECT_EQ(mine.at("enum cudaErrorNotSupported"), 801);
  EXPECT_EQ(mine.at("sizeof struct cudaDeviceProp"), 1008);
  EXPECT_EQ(mine.at("macro cudaStreamPerThread"), 2);
  EXPECT_EQ(mine.at("alignof struct float4"), 16);
}

TEST(RuntimeAbi, MatchesNvidiaRuntimeHeaders) {
#ifdef CUDAMUX_HAVE_NVIDIA_RUNTIME_H
  const auto theirs = load(cudamux_rt_abi_nvidia);
  const auto mine = load(cudamux_rt_abi_ours);
  std::size_t differences = 0;
  for (const auto& [name, value] : theirs) {
    const auto it = mine.find(name);
    if (it == mine.end()) {
      ADD_FAILURE() << "missing in our headers: " << name;
      ++differences;
    } else if (it->second != value) {
      ADD_FAILURE() << name << ": NVIDIA " << value << ", ours " << it->second;
      ++differences;
    }
  }
  EXPECT_EQ(mine.size(), theirs.size());
  EXPECT_EQ(differences, 0u) << "of " << theirs.size() << " ABI facts";
#else
  GTEST_SKIP() << "NVIDIA's cuda_runtime_api.h was not found at configure time";
#endif
}

}  // namespace
