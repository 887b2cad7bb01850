// cudamux::elf::find_section (issue 14: the `__nv_relfatbin` section of nvcc -rdc programs) on
// ELF files built here, damaged copies of them, and this test's own executable.
#include "cudamux/elf_section.hpp"

#include <elf.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace elf = cudamux::elf;

namespace {

using Bytes = std::vector<std::byte>;

struct Section {
  std::string name;
  std::string contents;
  std::uint32_t type = SHT_PROGBITS;
};

// A 64-bit ELF file: header, each section's contents, the name table, then the section
// headers (index 0 the null section, the name table last).
Bytes make_elf(const std::vector<Section>& sections) {
  std::string names(1, '\0');
  std::vector<std::uint32_t> name_at;
  for (const auto& s : sections) {
    name_at.push_back(static_cast<std::uint32_t>(names.size()));
    names += s.name + '\0';
  }
  const auto table_name = static_cast<std::uint32_t>(names.size());
  names += std::string(".shstrtab") + '\0';
  Bytes file(sizeof(Elf64_Ehdr));
  auto append = [&file](const void* p, std::size_t n) {
    const auto at = file.size();
    file.resize(at + n);
    if (n) std::memcpy(file.data() + at, p, n);
    return at;
  };
  std::vector<Elf64_Shdr> headers(1);
  for (std::size_t i = 0; i < sections.size(); ++i) {
    Elf64_Shdr h{};
    h.sh_name = name_at[i];
    h.sh_type = sections[i].type;
    h.sh_size = sections[i].contents.size();
    h.sh_offset = sections[i].type == SHT_NOBITS
                      ? file.size()
                      : append(sections[i].contents.data(), sections[i].contents.size());
    headers.push_back(h);
  }
  Elf64_Shdr table{};
  table.sh_name = table_name;
  table.sh_type = SHT_STRTAB;
  table.sh_size = names.size();
  table.sh_offset = append(names.data(), names.size());
  headers.push_back(table);
  while (file.size() % 8) file.push_back(std::byte{0});
  const auto header_at = append(headers.data(), headers.size() * sizeof(Elf64_Shdr));
  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_type = ET_REL;
  eh.e_machine = EM_X86_64;
  eh.e_version = EV_CURRENT;
  eh.e_ehsize = sizeof(Elf64_Ehdr);
  eh.e_shoff = header_at;
  eh.e_shentsize = sizeof(Elf64_Shdr);
  eh.e_shnum = static_cast<Elf64_Half>(headers.size());
  eh.e_shstrndx = static_cast<Elf64_Half>(headers.size() - 1);
  std::memcpy(file.data(), &eh, sizeof eh);
  return file;
}

struct Result {
  bool found = false;
  std::string contents;
  std::string why;
};

Result find(const Bytes& file, std::string_view name) {
  const elf::ReadAt read_at = [&file](std::uint64_t at, void* to, std::uint64_t n) {
    if (at > file.size() || n > file.size() - at) return false;
    std::memcpy(to, file.data() + at, n);
    return true;
  };
  std::vector<std::byte> out;
  Result r;
  r.found = elf::find_section(read_at, file.size(), name, out, r.why);
  r.contents.assign(reinterpret_cast<const char*>(out.data()), out.size());
  if (!r.found) {
    EXPECT_TRUE(out.empty());
  }
  return r;
}

Elf64_Ehdr header_of(const Bytes& file) {
  Elf64_Ehdr eh{};
  std::memcpy(&eh, file.data(), sizeof eh);
  return eh;
}
void set_header(Bytes& file, const Elf64_Ehdr& eh) { std::memcpy(file.data(), &eh, sizeof eh); }
Elf64_Shdr section_header(const Bytes& file, std::size_t i) {
  Elf64_Shdr h{};
  std::memcpy(&h, file.data() + header_of(file).e_shoff + i * sizeof h, sizeof h);
  return h;
}
void set_section_header(Bytes& file, std::size_t i, const Elf64_Shdr& h) {
  std::memcpy(file.data() + header_of(file).e_shoff + i * sizeof h, &h, sizeof h);
}

const std::vector<Section> kSections = {{".text", "code"},
                                        {"__nv_relfatbin", std::string("fat\0binaries", 12)},
                                        {".bss", "", SHT_NOBITS}};

TEST(ElfSection, FindsTheNamedSectionsBytes) {
  const Bytes file = make_elf(kSections);
  Result r = find(file, "__nv_relfatbin");
  EXPECT_TRUE(r.found) << r.why;
  EXPECT_EQ(r.contents, std::string("fat\0binaries", 12));
  r = find(file, ".text");
  EXPECT_TRUE(r.found);
  EXPECT_EQ(r.contents, "code");
}

TEST(ElfSection, AnEmptySectionIsFoundEmptyWithoutReadingIt) {
  const Bytes file = make_elf({{"__nv_relfatbin", ""}});
  std::vector<std::byte> out(3);
  std::string why;
  int reads = 0;
  const elf::ReadAt read_at = [&](std::uint64_t at, void* to, std::uint64_t n) {
    ++reads;
    EXPECT_GT(n, 0u) << "no read of 0 bytes (fuzzer finding: a null destination)";
    std::memcpy(to, file.data() + at, n);
    return true;
  };
  EXPECT_TRUE(elf::find_section(read_at, file.size(), "__nv_relfatbin", out, why)) << why;
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(reads, 3) << "the file header, the section headers and the name table";
}

TEST(ElfSection, AbsentAndNobitsSectionsAreNotFoundWithoutAReason) {
  const Bytes file = make_elf(kSections);
  for (const char* name : {"__nv_fatbin", ".bss", "", "__nv_relfatbin_more", "__nv_relfat"}) {
    const Result r = find(file, name);
    EXPECT_FALSE(r.found) << name;
    EXPECT_EQ(r.why, "") << name;
  }
}

TEST(ElfSection, NotAnElfFileSaysSo) {
  Bytes file = make_elf(kSections);
  file[1] = std::byte{'X'};
  EXPECT_EQ(find(file, "__nv_relfatbin").why, "not a 64-bit ELF file");
  Bytes elf32 = make_elf(kSections);
  elf32[EI_CLASS] = std::byte{ELFCLASS32};
  EXPECT_EQ(find(elf32, "__nv_relfatbin").why, "not a 64-bit ELF file");
  EXPECT_EQ(find(Bytes(10), "x").why, "not a 64-bit ELF file") << "shorter than a header";
}

TEST(ElfSection, HeadersOutsideTheFileAreDamage) {
  const Bytes good = make_elf(kSections);
  Bytes file = good;
  Elf64_Ehdr eh = header_of(file);
  eh.e_shoff = file.size() - 10;
  set_header(file, eh);
  EXPECT_EQ(find(file, "__nv_relfatbin").why, "section headers outside the file");
  eh.e_shoff = ~std::uint64_t{0};
  set_header(file, eh);
  EXPECT_EQ(find(file, "__nv_relfatbin").why, "section headers outside the file");

  file = good;
  eh = header_of(file);
  eh.e_shstrndx = eh.e_shnum;
  set_header(file, eh);
  EXPECT_FALSE(find(file, "__nv_relfatbin").why.empty());
  eh = header_of(good);
  eh.e_shentsize = 32;
  file = good;
  set_header(file, eh);
  EXPECT_FALSE(find(file, "__nv_relfatbin").why.empty());
}

TEST(ElfSection, SizesAndOffsetsBeyondTheFileAreDamageNotAllocations) {
  const Bytes good = make_elf(kSections);
  const std::size_t fat = 2;  // __nv_relfatbin's index (0 is the null section)
  for (const std::uint64_t size :
       {std::uint64_t{good.size()}, std::uint64_t{1} << 40, ~std::uint64_t{0}}) {
    Bytes file = good;
    Elf64_Shdr h = section_header(file, fat);
    h.sh_size = size;
    set_section_header(file, fat, h);
    const Result r = find(file, "__nv_relfatbin");
    EXPECT_FALSE(r.found) << size;
    EXPECT_EQ(r.why, "section '__nv_relfatbin' outside the file") << size;
  }
  Bytes file = good;
  Elf64_Shdr h = section_header(file, fat);
  h.sh_offset = ~std::uint64_t{0} - 2;
  set_section_header(file, fat, h);
  EXPECT_EQ(find(file, "__nv_relfatbin").why, "section '__nv_relfatbin' outside the file");
  // The name table itself out of bounds.
  file = good;
  const std::size_t table = header_of(file).e_shstrndx;
  h = section_header(file, table);
  h.sh_size = std::uint64_t{1} << 50;
  set_section_header(file, table, h);
  EXPECT_EQ(find(file, "__nv_relfatbin").why, "section name table outside the file");
}

TEST(ElfSection, NameOffsetsPastTheTableAreSkipped) {
  Bytes file = make_elf(kSections);
  Elf64_Shdr h = section_header(file, 1);
  h.sh_name = 1u << 30;
  set_section_header(file, 1, h);
  EXPECT_FALSE(find(file, ".text").found);
  EXPECT_TRUE(find(file, "__nv_relfatbin").found) << "the other sections are still read";
}

TEST(ElfSection, ReadsThisTestsOwnExecutable) {
  std::ifstream in("/proc/self/exe", std::ios::binary);
  ASSERT_TRUE(in);
  in.seekg(0, std::ios::end);
  const auto size = static_cast<std::uint64_t>(in.tellg());
  const elf::ReadAt read_at = [&in](std::uint64_t at, void* to, std::uint64_t n) {
    in.seekg(static_cast<std::streamoff>(at));
    return static_cast<bool>(in.read(static_cast<char*>(to), static_cast<std::streamsize>(n)));
  };
  std::vector<std::byte> out;
  std::string why;
  ASSERT_TRUE(elf::find_section(read_at, size, ".text", out, why)) << why;
  EXPECT_GT(out.size(), 1000u);
  EXPECT_FALSE(elf::find_section(read_at, size, "__nv_relfatbin", out, why));
  EXPECT_EQ(why, "") << "an ordinary program has no such section";
}

}  // namespace
