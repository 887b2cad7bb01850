// One named section of a 64-bit ELF file, read through a caller's reader (issue 14: the
// relocatable objects' fat binaries of an `nvcc -rdc` program sit in its `__nv_relfatbin`
// section, which is not loaded into memory, so the core reads the program's file). Every
// offset and size comes from the file and is checked against its size before anything is
// read or allocated; the file may be anything (tests/fuzz/elf_fuzzer.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace cudamux::elf {

// Reads `bytes` bytes at `offset` into `to`; false when the file cannot give them. Never
// asked for 0 bytes, nor for bytes past the file size given to find_section.
using ReadAt = std::function<bool(std::uint64_t offset, void* to, std::uint64_t bytes)>;

// The largest section find_section() reads (the fat binaries of a program's objects; anything
// larger is taken for damage).
inline constexpr std::uint64_t kMaxSectionBytes = std::uint64_t{1} << 30;

// The bytes of section `name` (not of type NULL or NOBITS) of the ELF file of `file_size` bytes that
// `read_at` reads. False with `why` when the file is no 64-bit ELF, a header points outside it
// or a size is out of bounds; false with `why` empty when there is no such section.
bool find_section(const ReadAt& read_at, std::uint64_t file_size, std::string_view name,
                  std::vector<std::byte>& out, std::string& why);

}  // namespace cudamux::elf
