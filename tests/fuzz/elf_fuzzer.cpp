// ELF section reader fuzzer (issue 14). The input is a file, as the program the core reads
// `__nv_relfatbin` from could be any file: find_section() must find a section or say why (or
// say nothing when there is none), never read outside the file, crash, leak or allocate more
// than the file's size. Seeds: tests/fuzz/corpus-elf (small objects with such a section).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cudamux/elf_section.hpp"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const cudamux::elf::ReadAt read_at = [data, size](std::uint64_t at, void* to, std::uint64_t n) {
    check(at <= size && n <= size - at);  // the reader is only asked for what the file holds
    std::memcpy(to, data + at, n);
    return true;
  };
  for (const char* name : {"__nv_relfatbin", ".shstrtab", ""}) {
    std::vector<std::byte> out;
    std::string why;
    if (cudamux::elf::find_section(read_at, size, name, out, why)) {
      check(why.empty() && out.size() <= size);
    } else {
      check(out.empty());
    }
  }
  return 0;
}
