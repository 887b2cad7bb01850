// ABI check: every enum constant, macro value, sizeof/alignof and field offset of our
// cuda.h equals NVIDIA's. Both tables come from the same generated C probe compiled
// against each header (see gen_abi_probe.py and CMakeLists.txt).
#include <gtest/gtest.h>

#include <cstddef>
#include <map>
#include <string>

extern "C" {
struct cudamux_abi_entry {
  const char* name;
  long long value;
};
const cudamux_abi_entry* cudamux_abi_ours(std::size_t* count);
const cudamux_abi_entry* cudamux_abi_ours_internal(std::size_t* count);
#ifdef CUDAMUX_HAVE_NVIDIA_CUDA_H
const cudamux_abi_entry* cudamux_abi_nvidia(std::size_t* count);
const cudamux_abi_entry* cudamux_abi_nvidia_internal(std::size_t* count);
#endif
}

namespace {

using Probe = const cudamux_abi_entry* (*)(std::size_t*);

std::map<std::string, long long> load(Probe probe) {
  std::size_t n = 0;
  const cudamux_abi_entry* e = probe(&n);
  std::map<std::string, long long> out;
  for (std::size_t i = 0; i < n; ++i) out.emplace(e[i].name, e[i].value);
  return out;
}

[[maybe_unused]] void compare(Probe nvidia, Probe ours) {
  const auto theirs = load(nvidia);
  const auto mine = load(ours);
  ASSERT_GT(theirs.size(), 1000u) << "probe recorded suspiciously few facts";
  std::size_t differences = 0;
  for (const auto& [name, value] : theirs) {
    const auto it = mine.find(name);
    if (it == mine.end()) {
      ADD_FAILURE() << "missing in our cuda.h: " << name;
      ++differences;
    } else if (it->second != value) {
      ADD_FAILURE() << name << ": NVIDIA " << value << ", ours " << it->second;
      ++differences;
    }
  }
  for (const auto& [name, value] : mine) {
    if (!theirs.contains(name)) {
      ADD_FAILURE() << "only in our cuda.h: " << name << " = " << value;
      ++differences;
    }
  }
  EXPECT_EQ(differences, 0u) << "of " << theirs.size() << " ABI facts";
}

TEST(Abi, OurProbeRecordsFacts) {
  // Runs without a toolkit too: the probe compiled and spot values are right.
  const auto mine = load(cudamux_abi_ours);
  EXPECT_EQ(mine.at("macro CUDA_VERSION"), 13000);
  EXPECT_EQ(mine.at("sizeof CUuuid"), 16);
  EXPECT_EQ(mine.at("alignof CUtensorMap"), 128);
  EXPECT_EQ(mine.at("macro CU_STREAM_PER_THREAD"), 2);
  EXPECT_EQ(mine.at("enum CUDA_ERROR_NOT_SUPPORTED"), 801);
  EXPECT_GT(load(cudamux_abi_ours_internal).size(), mine.size());
}

TEST(Abi, MatchesNvidiaCudaH) {
#ifdef CUDAMUX_HAVE_NVIDIA_CUDA_H
  compare(cudamux_abi_nvidia, cudamux_abi_ours);
#else
  GTEST_SKIP() << "NVIDIA's CUDA toolkit (cuda.h) was not found at configure time";
#endif
}

TEST(Abi, MatchesNvidiaCudaHInternalMode) {
#ifdef CUDAMUX_HAVE_NVIDIA_CUDA_H
  compare(cudamux_abi_nvidia_internal, cudamux_abi_ours_internal);
#else
  GTEST_SKIP() << "NVIDIA's CUDA toolkit (cuda.h) was not found at configure time";
#endif
}

}  // namespace
