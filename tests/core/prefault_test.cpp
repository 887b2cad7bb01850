// prefault_code (core/src/prefault.cpp): the executable segments of the objects in the given
// folders are in the process's page tables afterwards (read from /proc/self/pagemap), on kernels
// with MADV_POPULATE_READ; on older ones it says so and maps nothing. cuInit does it for the
// core's own folder.
#include "prefault.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using cudamux::core::prefault_code;

struct Range {
  std::uintptr_t begin, end;
};

// Executable segments of the loaded object whose file (symlinks resolved) is `file`.
std::vector<Range> code_of(const fs::path& file) {
  struct Query {
    fs::path file;
    std::vector<Range> code;
  } q{fs::canonical(file), {}};
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) {
        auto* query = static_cast<Query*>(data);
        std::error_code ec;
        if (!info->dlpi_name || !*info->dlpi_name ||
            fs::canonical(info->dlpi_name, ec) != query->file)
          return 0;
        for (unsigned i = 0; i < info->dlpi_phnum; ++i) {
          const auto& ph = info->dlpi_phdr[i];
          if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X) && ph.p_filesz > 0)
            query->code.push_back(
                {info->dlpi_addr + ph.p_vaddr, info->dlpi_addr + ph.p_vaddr + ph.p_filesz});
        }
        return 0;
      },
      &q);
  return q.code;
}

// Pages of `ranges` not present in the page tables; -1 when pagemap cannot be read.
long pages_missing(const std::vector<Range>& ranges) {
  const int fd = open("/proc/self/pagemap", O_RDONLY);
  if (fd < 0) return -1;
  const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  long missing = 0;
  for (const Range& r : ranges) {
    for (std::uintptr_t p = r.begin & ~(page - 1); p < r.end; p += page) {
      std::uint64_t entry = 0;
      if (pread(fd, &entry, sizeof entry, static_cast<off_t>(p / page * sizeof entry)) !=
          static_cast<ssize_t>(sizeof entry)) {
        close(fd);
        return -1;
      }
      if (!(entry >> 63 & 1)) ++missing;  // bit 63: present
    }
  }
  close(fd);
  return missing;
}

// Whether this kernel knows MADV_POPULATE_READ (Linux 5.14), asked of a page of this test's code.
bool kernel_populates() {
  const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  auto* here =
      reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(&kernel_populates) & ~(page - 1));
  return madvise(here, page, 22 /* MADV_POPULATE_READ */) == 0 || errno != EINVAL;
}

fs::path file_of(const void* address) {
  Dl_info info{};
  if (!dladdr(address, &info) || !info.dli_fname) return {};
  return fs::canonical(info.dli_fname);
}

TEST(Prefault, MapsTheCodeOfObjectsInTheFolders) {
  // The C library: loaded in every process, most of its code never run by this one.
  const fs::path libc = file_of(reinterpret_cast<const void*>(&std::fopen));
  ASSERT_FALSE(libc.empty());
  const auto code = code_of(libc);
  ASSERT_FALSE(code.empty());
  const fs::path folders[] = {libc.parent_path()};
  const auto result = prefault_code(folders);
  if (!kernel_populates()) {
    EXPECT_FALSE(result.supported);
    EXPECT_EQ(result.bytes, 0u);
    return;
  }
  EXPECT_TRUE(result.supported);
  EXPECT_GE(result.objects, 1u);
  std::uintptr_t libc_bytes = 0;
  for (const Range& r : code) libc_bytes += r.end - r.begin;
  EXPECT_GE(result.bytes, libc_bytes);
  const long missing = pages_missing(code);
  if (missing < 0) GTEST_SKIP() << "/proc/self/pagemap cannot be read here";
  EXPECT_EQ(missing, 0) << "pages of " << libc << "'s code not mapped";
}

TEST(Prefault, FoldersWithoutLoadedObjectsMapNothing) {
  const fs::path empty =
      fs::temp_directory_path() / ("cudamux_prefault_" + std::to_string(getpid()));
  fs::create_directories(empty);
  const fs::path folders[] = {empty, empty / "absent"};
  const auto result = prefault_code(folders);
  EXPECT_EQ(result.objects, 0u);
  EXPECT_EQ(result.bytes, 0u);
  fs::remove_all(empty);
}

TEST(Prefault, CuInitMapsTheCoresCode) {
  void* driver = dlopen(CUDAMUX_LIBCUDA, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(driver, nullptr) << dlerror();
  using InitFn = int (*)(unsigned);
  auto init = reinterpret_cast<InitFn>(dlsym(driver, "cuInit"));
  ASSERT_NE(init, nullptr);
  ASSERT_EQ(init(0), 0);  // the mock backend (the tests' environment)
  // The core: the object libcuda.so.1 depends on, beside it.
  const fs::path core =
      fs::canonical(fs::path(CUDAMUX_LIBCUDA).parent_path() / "libcudamux-core.so.0");
  const auto code = code_of(core);
  ASSERT_FALSE(code.empty()) << core << " is not loaded";
  if (!kernel_populates()) return;  // nothing to check: the kernel maps on first use only
  const long missing = pages_missing(code);
  if (missing < 0) GTEST_SKIP() << "/proc/self/pagemap cannot be read here";
  EXPECT_EQ(missing, 0) << "pages of the core's code not mapped after cuInit";
}

}  // namespace
