#include "cudamux/elf_section.hpp"

#include <elf.h>

#include <cstring>
#include <new>

namespace cudamux::elf {

bool find_section(const ReadAt& read_at, std::uint64_t file_size, std::string_view name,
                  std::vector<std::byte>& out, std::string& why) {
  why.clear();
  out.clear();
  // [offset, offset + bytes) lies inside the file.
  auto inside = [file_size](std::uint64_t offset, std::uint64_t bytes) {
    return offset <= file_size && bytes <= file_size - offset;
  };
  try {
    Elf64_Ehdr eh{};
    if (!inside(0, sizeof eh) || !read_at(0, &eh, sizeof eh) ||
        std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64) {
      why = "not a 64-bit ELF file";
      return false;
    }
    if (eh.e_shnum == 0) return false;  // no section headers: no such section
    if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shstrndx >= eh.e_shnum) {
      why = "section header size or name table index out of bounds";
      return false;
    }
    const std::uint64_t headers_bytes = std::uint64_t{eh.e_shnum} * sizeof(Elf64_Shdr);
    if (!inside(eh.e_shoff, headers_bytes)) {
      why = "section headers outside the file";
      return false;
    }
    std::vector<Elf64_Shdr> sh(eh.e_shnum);
    if (!read_at(eh.e_shoff, sh.data(), headers_bytes)) {
      why = "section headers unreadable";
      return false;
    }
    const Elf64_Shdr& strtab = sh[eh.e_shstrndx];
    if (strtab.sh_type == SHT_NOBITS || !inside(strtab.sh_offset, strtab.sh_size) ||
        strtab.sh_size > kMaxSectionBytes) {
      why = "section name table outside the file";
      return false;
    }
    // One NUL beyond the table: a name without its own ends there.
    std::string names(static_cast<std::size_t>(strtab.sh_size), '\0');
    if (!names.empty() && !read_at(strtab.sh_offset, names.data(), names.size())) {
      why = "section name table unreadable";
      return false;
    }
    for (const Elf64_Shdr& s : sh) {
      if (s.sh_name >= names.size() || s.sh_type == SHT_NULL || s.sh_type == SHT_NOBITS) continue;
      if (std::string_view(names.c_str() + s.sh_name) != name) continue;
      if (!inside(s.sh_offset, s.sh_size) || s.sh_size > kMaxSectionBytes) {
        why = "section '" + std::string(name) + "' outside the file";
        return false;
      }
      out.resize(static_cast<std::size_t>(s.sh_size));
      if (!out.empty() && !read_at(s.sh_offset, out.data(), out.size())) {
        out.clear();
        why = "section '" + std::string(name) + "' unreadable";
        return false;
      }
      return true;
    }
    return false;
  } catch (const std::bad_alloc&) {
    out.clear();
    why = "out of memory";
    return false;
  }
}

}  // namespace cudamux::elf
