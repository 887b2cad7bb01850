#include "prefault.hpp"

#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

namespace cudamux::core {
namespace {

#ifdef MADV_POPULATE_READ
constexpr int kPopulateRead = MADV_POPULATE_READ;
#else
constexpr int kPopulateRead = 22;  // Linux 5.14's value; older C library headers lack the name
#endif

struct Segment {
  std::uintptr_t begin = 0, end = 0;
};
struct LoadedObject {
  std::string file;
  std::vector<Segment> code;
};

// Collected first, checked after: dl_iterate_phdr holds the loader's lock during its callback.
int collect(dl_phdr_info* info, std::size_t, void* data) noexcept {
  try {
    if (info->dlpi_name == nullptr || info->dlpi_name[0] == '\0') return 0;  // the program
    LoadedObject object{info->dlpi_name, {}};
    for (unsigned i = 0; i < info->dlpi_phnum; ++i) {
      const ElfW(Phdr)& ph = info->dlpi_phdr[i];
      if (ph.p_type != PT_LOAD || (ph.p_flags & PF_X) == 0 || ph.p_memsz == 0) continue;
      const std::uintptr_t start = info->dlpi_addr + ph.p_vaddr;
      object.code.push_back({start, start + ph.p_memsz});
    }
    if (!object.code.empty()) static_cast<std::vector<LoadedObject>*>(data)->push_back(object);
  } catch (...) {
  }
  return 0;
}

}  // namespace

PrefaultResult prefault_code(std::span<const std::filesystem::path> folders) noexcept {
  PrefaultResult result;
  try {
    std::vector<std::filesystem::path> wanted;
    for (const auto& f : folders) {
      std::error_code ec;
      auto real = std::filesystem::canonical(f, ec);
      if (!ec) wanted.push_back(std::move(real));
    }
    std::vector<LoadedObject> objects;
    dl_iterate_phdr(collect, &objects);
    const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
    for (const LoadedObject& object : objects) {
      std::error_code ec;
      const auto real = std::filesystem::canonical(object.file, ec);
      if (ec) continue;
      bool inside = false;
      for (const auto& w : wanted) inside = inside || real.parent_path() == w;
      if (!inside) continue;
      ++result.objects;
      for (const Segment& s : object.code) {
        const std::uintptr_t begin = s.begin & ~(page - 1);
        const std::uintptr_t end = (s.end + page - 1) & ~(page - 1);
        if (madvise(reinterpret_cast<void*>(begin), end - begin, kPopulateRead) == 0) {
          result.bytes += end - begin;
        } else if (errno == EINVAL) {
          result.supported = false;  // an older kernel: nothing more to try
          return result;
        }
      }
    }
  } catch (...) {
  }
  return result;
}

}  // namespace cudamux::core
