// Initial values of device variables from a cubin's symbol table. See cubin_symbols.hpp.
#include "cubin_symbols.hpp"

#include <elf.h>

#include <cstring>

namespace cudamux::core {
namespace {

// Copies a T at `offset` of `bytes` if it fits.
template <class T>
bool read_at(std::span<const std::byte> bytes, std::size_t offset, T& out) noexcept {
  if (offset > bytes.size() || bytes.size() - offset < sizeof(T)) return false;
  std::memcpy(&out, bytes.data() + offset, sizeof(T));
  return true;
}

// Whether [offset, offset + size) lies inside `bytes`.
bool inside(std::span<const std::byte> bytes, std::uint64_t offset, std::uint64_t size) noexcept {
  return offset <= bytes.size() && size <= bytes.size() - offset;
}

}  // namespace

std::optional<std::vector<std::byte>> cubin_variable_bytes(std::span<const std::byte> elf,
                                                           std::string_view name,
                                                           std::string& why) {
  Elf64_Ehdr eh;
  if (!read_at(elf, 0, eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64) {
    why = "not a 64-bit ELF";
    return std::nullopt;
  }
  if (eh.e_shentsize != sizeof(Elf64_Shdr) ||
      !inside(elf, eh.e_shoff, std::uint64_t{eh.e_shnum} * sizeof(Elf64_Shdr))) {
    why = "section headers outside the image";
    return std::nullopt;
  }
  auto section = [&](std::size_t index, Elf64_Shdr& sh) {
    return index < eh.e_shnum && read_at(elf, eh.e_shoff + index * sizeof(Elf64_Shdr), sh);
  };
  for (std::size_t s = 0; s < eh.e_shnum; ++s) {
    Elf64_Shdr symtab, strtab;
    if (!section(s, symtab) || symtab.sh_type != SHT_SYMTAB) continue;
    if (symtab.sh_entsize != sizeof(Elf64_Sym) || !inside(elf, symtab.sh_offset, symtab.sh_size) ||
        !section(symtab.sh_link, strtab) || !inside(elf, strtab.sh_offset, strtab.sh_size)) {
      why = "symbol table outside the image";
      return std::nullopt;
    }
    const auto* names = reinterpret_cast<const char*>(elf.data() + strtab.sh_offset);
    for (std::uint64_t off = 0; off + sizeof(Elf64_Sym) <= symtab.sh_size;
         off += sizeof(Elf64_Sym)) {
      Elf64_Sym sym;
      (void)read_at(elf, symtab.sh_offset + off, sym);
      if (sym.st_name >= strtab.sh_size || ELF64_ST_TYPE(sym.st_info) != STT_OBJECT) continue;
      const std::size_t max = strtab.sh_size - sym.st_name;
      const std::string_view symbol(names + sym.st_name, ::strnlen(names + sym.st_name, max));
      if (symbol != name) continue;
      Elf64_Shdr home;
      if (sym.st_shndx == SHN_UNDEF || sym.st_shndx >= SHN_LORESERVE ||
          !section(sym.st_shndx, home)) {
        why = "the variable has no section";
        return std::nullopt;
      }
      if (sym.st_size > (std::uint64_t{1} << 32) || sym.st_value > home.sh_size ||
          sym.st_size > home.sh_size - sym.st_value) {
        why = "the variable lies outside its section";
        return std::nullopt;
      }
      std::vector<std::byte> bytes(sym.st_size);
      if (home.sh_type == SHT_NOBITS) return bytes;  // zero-initialised
      std::uint64_t at = 0;
      if (__builtin_add_overflow(home.sh_offset, sym.st_value, &at) ||
          !inside(elf, at, sym.st_size)) {
        why = "the variable's bytes lie outside the image";
        return std::nullopt;
      }
      if (!bytes.empty()) std::memcpy(bytes.data(), elf.data() + at, bytes.size());
      return bytes;
    }
  }
  why = "no such variable in the symbol table";
  return std::nullopt;
}

}  // namespace cudamux::core
