// The cubin symbol reader: a variable's bytes from its section, zeros from a NOBITS section,
// and malformed ELF images refused without reading out of bounds.
#include "cubin_symbols.hpp"

#include <elf.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace cudamux::core {
namespace {

// A minimal 64-bit ELF: sections null, .nv.global.init (data), .nv.global (NOBITS), .symtab,
// .strtab; symbols "counter" (4 bytes = 42 at offset 4 of .nv.global.init), "zeros" (8 bytes in
// .nv.global) and "kernel" (a function).
std::vector<std::byte> make_elf() {
  const std::string strtab = std::string("\0counter\0zeros\0kernel\0", 22);
  std::vector<std::uint8_t> data = {1, 2, 3, 4, 42, 0, 0, 0};
  Elf64_Sym syms[4] = {};
  syms[1] = {1, ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT), 0, 1, 4, 4};
  syms[2] = {9, ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT), 0, 2, 0, 8};
  syms[3] = {15, ELF64_ST_INFO(STB_GLOBAL, STT_FUNC), 0, 1, 0, 4};
  const std::size_t data_at = sizeof(Elf64_Ehdr);
  const std::size_t syms_at = data_at + data.size();
  const std::size_t str_at = syms_at + sizeof syms;
  const std::size_t sh_at = (str_at + strtab.size() + 7) / 8 * 8;
  Elf64_Shdr sh[5] = {};
  sh[1] = {0, SHT_PROGBITS, 0, 0, data_at, data.size(), 0, 0, 4, 0};
  sh[2] = {0, SHT_NOBITS, 0, 0, 0, 64, 0, 0, 4, 0};
  sh[3] = {0, SHT_SYMTAB, 0, 0, syms_at, sizeof syms, 4, 1, 8, sizeof(Elf64_Sym)};
  sh[4] = {0, SHT_STRTAB, 0, 0, str_at, strtab.size(), 0, 0, 1, 0};
  Elf64_Ehdr eh = {};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_machine = 190;
  eh.e_shoff = sh_at;
  eh.e_shentsize = sizeof(Elf64_Shdr);
  eh.e_shnum = 5;
  std::vector<std::byte> out(sh_at + sizeof sh);
  std::memcpy(out.data(), &eh, sizeof eh);
  std::memcpy(out.data() + data_at, data.data(), data.size());
  std::memcpy(out.data() + syms_at, syms, sizeof syms);
  std::memcpy(out.data() + str_at, strtab.data(), strtab.size());
  std::memcpy(out.data() + sh_at, sh, sizeof sh);
  return out;
}

TEST(CubinSymbols, VariablesAndTheirInitialBytes) {
  const auto elf = make_elf();
  std::string why;
  const auto counter = cubin_variable_bytes(elf, "counter", why);
  ASSERT_TRUE(counter) << why;
  ASSERT_EQ(counter->size(), 4u);
  int value = 0;
  std::memcpy(&value, counter->data(), 4);
  EXPECT_EQ(value, 42);
  const auto zeros = cubin_variable_bytes(elf, "zeros", why);
  ASSERT_TRUE(zeros) << why;
  EXPECT_EQ(*zeros, std::vector<std::byte>(8));
  EXPECT_FALSE(cubin_variable_bytes(elf, "kernel", why)) << "functions are not variables";
  EXPECT_FALSE(cubin_variable_bytes(elf, "missing", why));
  EXPECT_EQ(why, "no such variable in the symbol table");
}

TEST(CubinSymbols, MalformedImagesAreRefused) {
  std::string why;
  const auto elf = make_elf();
  // Every truncation fails cleanly or still finds the bytes (never reads past the end: ASan).
  for (std::size_t n = 0; n < elf.size(); ++n) {
    const std::vector<std::byte> cut(elf.begin(), elf.begin() + static_cast<std::ptrdiff_t>(n));
    (void)cubin_variable_bytes(cut, "counter", why);
  }
  EXPECT_FALSE(cubin_variable_bytes({}, "counter", why));
  EXPECT_EQ(why, "not a 64-bit ELF");
  // A symbol whose size runs past its section.
  auto bad = elf;
  Elf64_Sym sym;
  const std::size_t sym1 = sizeof(Elf64_Ehdr) + 8 + sizeof(Elf64_Sym);
  std::memcpy(&sym, bad.data() + sym1, sizeof sym);
  sym.st_size = 1000;
  std::memcpy(bad.data() + sym1, &sym, sizeof sym);
  EXPECT_FALSE(cubin_variable_bytes(bad, "counter", why));
  EXPECT_EQ(why, "the variable lies outside its section");
  // Section headers pointing outside the image.
  bad = elf;
  Elf64_Ehdr eh;
  std::memcpy(&eh, bad.data(), sizeof eh);
  eh.e_shoff = ~0ull - 8;
  std::memcpy(bad.data(), &eh, sizeof eh);
  EXPECT_FALSE(cubin_variable_bytes(bad, "counter", why));
  EXPECT_EQ(why, "section headers outside the image");
}

}  // namespace
}  // namespace cudamux::core
