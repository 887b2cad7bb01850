// Tests of libcuda.so.1's exported surface and cuGetProcAddress over the whole API
// table. The library is dlopen'ed, as a CUDA program's loader (or cudart) would.
#include <cuda.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace {

struct Row {
  const char* name;
  int version;
  const char* flavor;
  const char* symbol;
  bool implemented;
  bool needs_init;
};
const Row kRows[] = {
#include <cudamux/driver_symbols.inc>
};

using GetProcV1 = CUresult (*)(const char*, void**, int, cuuint64_t);
using GetProcV2 = CUresult (*)(const char*, void**, int, cuuint64_t,
                               CUdriverProcAddressQueryResult*);

constexpr cuuint64_t kDefault = CU_GET_PROC_ADDRESS_DEFAULT;
constexpr cuuint64_t kLegacy = CU_GET_PROC_ADDRESS_LEGACY_STREAM;
constexpr cuuint64_t kPerThread = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;

class Driver : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    handle_ = dlopen(CUDAMUX_LIBCUDA_PATH, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << dlerror();
    v1_ = reinterpret_cast<GetProcV1>(dlsym(handle_, "cuGetProcAddress"));
    v2_ = reinterpret_cast<GetProcV2>(dlsym(handle_, "cuGetProcAddress_v2"));
    ASSERT_NE(v1_, nullptr);
    ASSERT_NE(v2_, nullptr);
  }

  static void* sym(const char* name) { return dlsym(handle_, name); }

  // Resolves through cuGetProcAddress_v2, checking the status/return pairing.
  static void* resolve(const char* name, int version, cuuint64_t flags,
                       CUdriverProcAddressQueryResult expect = CU_GET_PROC_ADDRESS_SUCCESS) {
    void* pfn = reinterpret_cast<void*>(0x1);
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
    const CUresult r = v2_(name, &pfn, version, flags, &status);
    EXPECT_EQ(status, expect) << name << "@" << version << " flags " << flags;
    // With a status pointer the call succeeds and the status carries the answer (NVIDIA 580).
    EXPECT_EQ(r, CUDA_SUCCESS) << name << "@" << version;
    if (expect != CU_GET_PROC_ADDRESS_SUCCESS) {
      EXPECT_EQ(pfn, nullptr) << name << "@" << version;
    }
    // The v1 entry point must agree.
    void* pfn1 = reinterpret_cast<void*>(0x1);
    // v1 has no status to answer through: not found is CUDA_ERROR_NOT_FOUND there.
    EXPECT_EQ(v1_(name, &pfn1, version, flags),
              expect == CU_GET_PROC_ADDRESS_SUCCESS ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND)
        << name << "@" << version;
    EXPECT_EQ(pfn1, pfn) << name << "@" << version;
    return pfn;
  }

  // Newest row of `name` with version <= `version` and the given kind.
  static const Row* newest(std::string_view name, int version, bool per_thread) {
    const Row* best = nullptr;
    for (const Row& r : kRows) {
      if (name == r.name && r.version <= version &&
          (std::string_view(r.flavor) == "per_thread") == per_thread &&
          (best == nullptr || r.version > best->version)) {
        best = &r;
      }
    }
    return best;
  }

  static inline void* handle_ = nullptr;
  static inline GetProcV1 v1_ = nullptr;
  static inline GetProcV2 v2_ = nullptr;
};

TEST_F(Driver, TableIsSortedAndUnique) {
  ASSERT_GT(std::size(kRows), 600u);
  for (std::size_t i = 1; i < std::size(kRows); ++i) {
    const int c = std::strcmp(kRows[i - 1].name, kRows[i].name);
    EXPECT_TRUE(c < 0 || (c == 0 && kRows[i - 1].version <= kRows[i].version))
        << kRows[i - 1].symbol << " / " << kRows[i].symbol;
  }
  std::set<std::string> symbols;
  for (const Row& r : kRows) EXPECT_TRUE(symbols.insert(r.symbol).second) << r.symbol;
}

TEST_F(Driver, EveryRowResolvesToItsOwnSymbolAtItsVersion) {
  for (const Row& r : kRows) {
    void* exported = sym(r.symbol);
    ASSERT_NE(exported, nullptr) << r.symbol << " is not exported";
    const bool per_thread = std::string_view(r.flavor) == "per_thread";
    if (per_thread) {
      EXPECT_EQ(resolve(r.name, r.version, kPerThread), exported) << r.symbol;
      // The legacy flavor at the same version is the newest legacy variant, never this one.
      const Row* legacy = newest(r.name, r.version, false);
      ASSERT_NE(legacy, nullptr) << r.symbol;
      EXPECT_EQ(resolve(r.name, r.version, kLegacy), sym(legacy->symbol)) << r.symbol;
      EXPECT_EQ(resolve(r.name, r.version, kDefault), sym(legacy->symbol)) << r.symbol;
    } else {
      EXPECT_EQ(resolve(r.name, r.version, kDefault), exported) << r.symbol;
      EXPECT_EQ(resolve(r.name, r.version, kLegacy), exported) << r.symbol;
      if (std::string_view(r.flavor) == "none") {
        // No per-thread variant: the flag is ignored.
        EXPECT_EQ(resolve(r.name, r.version, kPerThread), exported) << r.symbol;
      }
    }
  }
}

TEST_F(Driver, NewestVariantAndFlavorAtEveryVersionBoundary) {
  std::map<std::string, std::vector<int>> versions;
  for (const Row& r : kRows) versions[r.name].push_back(r.version);
  for (const auto& [name, vs] : versions) {
    for (int v : vs) {
      for (int probe : {v, v + 1, 99999}) {
        const Row* legacy = newest(name, probe, false);
        const Row* per_thread = newest(name, probe, true);
        ASSERT_NE(legacy, nullptr) << name << "@" << probe;
        void* want_pt = sym((per_thread != nullptr ? per_thread : legacy)->symbol);
        EXPECT_EQ(resolve(name.c_str(), probe, kPerThread), want_pt) << name << "@" << probe;
        EXPECT_EQ(resolve(name.c_str(), probe, kDefault), sym(legacy->symbol))
            << name << "@" << probe;
      }
    }
  }
}

TEST_F(Driver, VersionNotSufficientBelowTheOldestVariant) {
  std::map<std::string, int> oldest;
  for (const Row& r : kRows) {
    auto [it, fresh] = oldest.emplace(r.name, r.version);
    if (!fresh) it->second = std::min(it->second, r.version);
  }
  for (const auto& [name, v] : oldest) {
    for (cuuint64_t flags : {kDefault, kLegacy, kPerThread}) {
      resolve(name.c_str(), v - 1, flags, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    }
    resolve(name.c_str(), 0, kDefault, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    resolve(name.c_str(), -1, kDefault, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  }
}

TEST_F(Driver, UnknownNamesAreNotFound) {
  // Exported symbol names are not API names: only the un-suffixed name is looked up.
  for (const char* name :
       {"", "cu", "cuDoesNotExist", "cumemalloc", "cuMemAlloc_v2", "cuMemcpy_ptds",
        "cuStreamQuery_ptsz", "cuInitX", "zcuInit", "cuInit "}) {
    resolve(name, 13000, kDefault, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    resolve(name, 13000, kPerThread, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  }
}

TEST_F(Driver, InvalidArguments) {
  void* pfn = reinterpret_cast<void*>(0x1);
  CUdriverProcAddressQueryResult status{};
  EXPECT_EQ(v2_(nullptr, &pfn, 13000, kDefault, &status), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(pfn, nullptr);
  EXPECT_EQ(v2_("cuInit", nullptr, 13000, kDefault, &status), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(v1_(nullptr, &pfn, 13000, kDefault), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(v1_("cuInit", nullptr, 13000, kDefault), CUDA_ERROR_INVALID_VALUE);
  for (cuuint64_t flags : {cuuint64_t{4}, cuuint64_t{kLegacy | kPerThread}, ~cuuint64_t{0}}) {
    pfn = reinterpret_cast<void*>(0x1);
    EXPECT_EQ(v2_("cuInit", &pfn, 13000, flags, &status), CUDA_ERROR_INVALID_VALUE) << flags;
    EXPECT_EQ(pfn, nullptr);
    EXPECT_EQ(v1_("cuInit", &pfn, 13000, flags), CUDA_ERROR_INVALID_VALUE) << flags;
  }
  // The status pointer is optional.
  EXPECT_EQ(v2_("cuInit", &pfn, 13000, kDefault, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(pfn, sym("cuInit"));
}

// Expectations from NVIDIA's documented versions, independent of our table.
TEST_F(Driver, KnownVariants) {
  EXPECT_EQ(resolve("cuCtxCreate", 2000, kDefault), sym("cuCtxCreate"));
  EXPECT_EQ(resolve("cuCtxCreate", 3020, kDefault), sym("cuCtxCreate_v2"));
  EXPECT_EQ(resolve("cuCtxCreate", 11040, kDefault), sym("cuCtxCreate_v3"));
  EXPECT_EQ(resolve("cuCtxCreate", 12050, kDefault), sym("cuCtxCreate_v4"));
  EXPECT_EQ(resolve("cuCtxCreate", 13000, kPerThread), sym("cuCtxCreate_v4"));
  EXPECT_EQ(resolve("cuMemAlloc", 3010, kDefault), sym("cuMemAlloc"));
  EXPECT_EQ(resolve("cuMemAlloc", 3020, kDefault), sym("cuMemAlloc_v2"));
  EXPECT_EQ(resolve("cuMemcpyHtoD", 3020, kDefault), sym("cuMemcpyHtoD_v2"));
  EXPECT_EQ(resolve("cuMemcpyHtoD", 13000, kPerThread), sym("cuMemcpyHtoD_v2_ptds"));
  EXPECT_EQ(resolve("cuMemcpyHtoDAsync", 7000, kPerThread), sym("cuMemcpyHtoDAsync_v2_ptsz"));
  EXPECT_EQ(resolve("cuStreamQuery", 13000, kPerThread), sym("cuStreamQuery_ptsz"));
  EXPECT_EQ(resolve("cuStreamQuery", 13000, kLegacy), sym("cuStreamQuery"));
  EXPECT_EQ(resolve("cuMemcpy", 13000, kPerThread), sym("cuMemcpy_ptds"));
  EXPECT_EQ(resolve("cuMemcpy", 13000, kDefault), sym("cuMemcpy"));
  EXPECT_EQ(resolve("cuGetProcAddress", 12000, kDefault), sym("cuGetProcAddress_v2"));
  EXPECT_EQ(resolve("cuGetProcAddress", 11030, kDefault), sym("cuGetProcAddress"));
  resolve("cuGetProcAddress", 11020, kDefault, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  for (const char* s : {"cuCtxCreate", "cuMemAlloc", "cuMemcpy", "cuInit"}) {
    EXPECT_NE(resolve(s, 13000, kDefault), nullptr) << s;
  }
}

std::vector<std::pair<std::string, std::string>> dynamic_symbols() {
  // name, section index: `readelf --dyn-syms -W` lists exactly what the loader sees.
  std::vector<std::pair<std::string, std::string>> out;
  const std::string cmd =
      std::string(CUDAMUX_READELF) + " --dyn-syms -W '" + CUDAMUX_LIBCUDA_PATH + "'";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char line[4096];
  while (std::fgets(line, sizeof line, p) != nullptr) {
    std::istringstream in(line);
    std::string num, value, size, type, bind, vis, ndx, name;
    if (!(in >> num >> value >> size >> type >> bind >> vis >> ndx >> name)) continue;
    if (num.empty() || num.back() != ':' || !std::isdigit(static_cast<unsigned char>(num[0])) ||
        bind == "LOCAL") {
      continue;
    }
    out.emplace_back(name, ndx);
  }
  pclose(p);
  return out;
}

TEST_F(Driver, ExportsExactlyTheTableSymbols) {
  if (std::string_view(CUDAMUX_READELF).empty()) GTEST_SKIP() << "readelf not found";
  std::set<std::string> exported;
  for (const auto& [name, ndx] : dynamic_symbols()) {
    if (ndx == "UND") continue;  // imports
    EXPECT_EQ(name.rfind("cu", 0), 0u) << "exported symbol outside the CUDA API: " << name;
    EXPECT_EQ(name.find('@'), std::string::npos) << "libcuda has no symbol versions: " << name;
    exported.insert(name);
  }
  ASSERT_FALSE(exported.empty()) << "could not read " << CUDAMUX_LIBCUDA_PATH;
  std::set<std::string> table;
  for (const Row& r : kRows) {
    table.insert(r.symbol);
    EXPECT_TRUE(exported.contains(r.symbol)) << r.symbol << " missing from libcuda.so.1";
  }
  for (const std::string& name : exported) {
    EXPECT_TRUE(table.contains(name)) << name << " exported but not in the API table";
  }
}

TEST_F(Driver, NotSupportedStubReturnsNotSupported) {
  // Graphics interop has no backend to map onto: certain to stay a stub.
  constexpr const char* kStub = "cuGraphicsSubResourceGetMappedArray";
  const Row* row = newest("cuGraphicsSubResourceGetMappedArray", 99999, false);
  ASSERT_NE(row, nullptr);
  ASSERT_FALSE(row->implemented) << "pick another not-supported function for this test";
  using Fn = CUresult (*)(CUarray*, CUgraphicsResource, unsigned int, unsigned int);
  auto direct = reinterpret_cast<Fn>(sym(kStub));
  ASSERT_NE(direct, nullptr);
  CUarray array = nullptr;
  EXPECT_EQ(direct(&array, nullptr, 0, 0), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(direct(&array, nullptr, 0, 0), CUDA_ERROR_NOT_SUPPORTED);  // also after the first log
  auto via_proc = reinterpret_cast<Fn>(resolve(kStub, 13000, kDefault));
  ASSERT_EQ(via_proc, direct);
  EXPECT_EQ(via_proc(&array, nullptr, 0, 0), CUDA_ERROR_NOT_SUPPORTED);
}

TEST_F(Driver, GetProcAddressNeedsNoInit) {
  // Nothing has called cuInit in this process; lookups work regardless.
  void* pfn = nullptr;
  EXPECT_EQ(v2_("cuInit", &pfn, 2000, kDefault, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(pfn, sym("cuInit"));
  for (const Row& r : kRows) {
    if (std::string_view(r.name).starts_with("cuGetProcAddress")) {
      EXPECT_FALSE(r.needs_init);
    }
  }
}

}  // namespace
