// NVIDIA's fat binary format (issue 14): the containers nvcc embeds in programs (section
// .nv_fatbin, registered through __cudaRegisterFatBinary) and that cuModuleLoadData and
// cuModuleLoadFatBinary accept. A standalone parser: no logging (errors come back as
// strings for the caller to log), no exception escapes (it is called from C entry points),
// every size and offset is checked against the caller's buffer, and payloads are only
// decompressed on request (frameworks carry hundreds of MB of fat binaries and use one entry
// of each).
//
// Layout (little-endian; established from CUDA 13.0's nvcc/fatbinary output and checked with
// cuobjdump; see tests/fatbin/make_fixtures.sh):
//
//   container header, 16 bytes            entry header, 64 bytes and more
//   0x00 u32 magic 0xBA55ED50              0x00 u16 kind (1 PTX, 2 ELF, 8 NVVM IR)
//   0x04 u16 version (1)                   0x02 u16 version (0x0101)
//   0x06 u16 header size (16)              0x04 u32 header size (64, 72, 80, ... 128)
//   0x08 u64 size of the entries that      0x08 u64 payload size, padded to 8
//            follow the header             0x10 u32 compressed size (0: not compressed)
//                                          0x14 u32 offset in the header of {u32 offset,
//   entries follow back to back; several         u32 size} of the options text (0: none)
//   containers may follow each other       0x18 u16 code version minor, 0x1a u16 major
//   (one per translation unit in a         0x1c u32 arch (75 for sm_75 / compute_75)
//   linked program's .nv_fatbin)           0x20 u32 identifier offset in the header
//                                          0x24 u32 identifier size
//                                          0x28 u64 flags (kFlag* below)
//                                          0x30 u64 0 (non-zero for obfuscated NVVM IR)
//                                          0x38 u64 uncompressed size (0: not compressed)
//                                          the payload follows the header
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cudamux::fatbin {

// __fatBinC_Wrapper_t (NVIDIA's fatbinary_section.h), what nvcc passes to
// __cudaRegisterFatBinary: {int magic; int version (1, or 2 for relocatable device code);
// const void* data (the container); void* filename_or_fatbins}.
inline constexpr std::uint32_t kWrapperMagic = 0x466243B1u;
inline constexpr std::uint32_t kContainerMagic = 0xBA55ED50u;
inline constexpr std::uint32_t kOldStyleMagic = 0x1EE55A01u;  // pre-CUDA 4 format, unsupported

// Limits beyond which a header is taken as corrupt (nothing real comes near them).
inline constexpr std::uint64_t kMaxContainerSize = std::uint64_t{2} << 30;     // 2 GiB
inline constexpr std::uint64_t kMaxUncompressedSize = std::uint64_t{1} << 30;  // 1 GiB

// The entry header's kind field. Other values are kept as they are (a newer toolkit's kind);
// the selection functions skip them.
enum class Kind : std::uint16_t { ptx = 1, elf = 2, nvvm = 8 };

// Entry flag bits (the entry header's u64 at 0x28).
inline constexpr std::uint64_t kFlag64Bit = 0x1;              // compile_size = 64bit (else 32)
inline constexpr std::uint64_t kFlagDebug = 0x2;              // "has debug info" (nvcc -G)
inline constexpr std::uint64_t kFlagHostLinux = 0x10;         // host = linux
inline constexpr std::uint64_t kFlagHostMac = 0x20;           // host = mac
inline constexpr std::uint64_t kFlagHostWindows = 0x40;       // host = windows
inline constexpr std::uint64_t kFlagCompressedMask = 0xF000;  // any of these: "compressed"
inline constexpr std::uint64_t kFlagLz4 = 0x2000;   // LZ4 block (fatbinary -compress-mode=speed)
inline constexpr std::uint64_t kFlagZstd = 0x8000;  // zstd frame (nvcc 13.0's default)
inline constexpr std::uint64_t kFlagObfuscated = 0x10000;     // encrypted payload (LTO NVVM IR)
inline constexpr std::uint64_t kFlagArchSpecific = 0x100000;  // sm_90a: this exact arch only
inline constexpr std::uint64_t kFlagArchFamily = 0x200000;    // sm_100f: this family only
// Seen on every sm_100+ ELF entry of CUDA 13.0 (whose header then also carries a 36-byte
// binary descriptor where PTX entries have their options); meaning unknown, not interpreted.
inline constexpr std::uint64_t kFlagBlackwellElf = 0x1000000;

// The arch suffix: sm_90a runs on CC 9.0 only, sm_100f on CC 10.x with x >= 0.
enum class Variant : std::uint8_t { none, specific /* 'a' */, family /* 'f' */ };

enum class Compression : std::uint8_t {
  none,
  lz4,
  zstd,
  unknown,  // compressed-flag bits this parser does not know (0x1000, 0x4000)
};

struct Entry {
  Kind kind = Kind::elf;
  unsigned arch = 0;  // 75 for sm_75 (ELF) or compute_75 (PTX)
  Variant variant = Variant::none;
  std::uint16_t code_version_major = 0;  // cuobjdump's "code version = [major,minor]":
  std::uint16_t code_version_minor = 0;  // ELF ABI [1,8], PTX ISA [9,0]
  std::uint64_t flags = 0;               // raw; see kFlag*
  Compression compression = Compression::none;
  // The bytes as stored (compressed or not), pointing into the caller's buffer: the
  // compressed size when compressed, else the padded payload (an uncompressed PTX ends at its
  // first NUL inside it).
  std::span<const std::byte> payload;
  // The header's uncompressed size when compressed (decompress() checks the stream against
  // it), else payload.size().
  std::uint64_t uncompressed_size = 0;
  // ptxas options (PTX: "-O2 -v", " -g --dont-merge-basicblocks ...") or NVVM options, from
  // the header, up to the first NUL; empty if none and always empty for ELF entries.
  std::string_view options;
  std::string_view identifier;        // the source file name (nvcc -G / -lineinfo), or empty
  std::span<const std::byte> header;  // the whole entry header, for fields not decoded here
  std::size_t container = 0;          // index of the container it came from (0, 1, ...)
  std::size_t offset = 0;             // offset of its header in the parsed bytes

  bool is_64bit() const noexcept { return (flags & kFlag64Bit) != 0; }
  bool has_debug_info() const noexcept { return (flags & kFlagDebug) != 0; }
  bool obfuscated() const noexcept { return (flags & kFlagObfuscated) != 0; }
};

// `wrapper` is a __fatBinC_Wrapper_t (magic 0x466243B1, version 1 or 2): sets `container` to
// its data pointer, which must point at a container (magic 0xBA55ED50). A pointer that is
// already a container is returned as is. False with `error` otherwise (null pointers, another
// magic, an unknown version). Reads 24 bytes at `wrapper` and 4 at the container.
bool unwrap(const void* wrapper, const void*& container, std::string& error) noexcept;

// The size of the container starting at `data` (header plus entries), read from its 16-byte
// header only: nullopt if `data` is null, not a container (magic, version), its header size
// is below 16 or the total exceeds kMaxContainerSize. Only the first container is measured:
// what follows it in memory may not belong to the caller (use parse() on a buffer of known
// size for several).
std::optional<std::size_t> extent(const void* data) noexcept;

// Parses the containers that tile `bytes` exactly (one, or several back to back, as in a
// linked program's .nv_fatbin section) into `out` (cleared first; empty on failure). Every
// header, size and offset is checked against the bounds of `bytes`; payloads are not
// decompressed. A truncated input fails unless it ends exactly between two containers.
bool parse(std::span<const std::byte> bytes, std::vector<Entry>& out, std::string& error) noexcept;

// `e`'s payload, decompressed (LZ4 block or zstd frame) or copied, into `out` (replaced).
// A compressed stream must yield exactly uncompressed_size bytes. PTX comes back as text
// ending with exactly one NUL: cut after its first NUL (uncompressed PTX is padded with
// zeros), one appended where missing. Fails (with `out` empty) for obfuscated entries,
// unknown compression and corrupt streams.
bool decompress(const Entry& e, std::vector<std::byte>& out, std::string& error) noexcept;

// The entry NVIDIA's driver would load on a device of compute capability `device_arch` (86
// for 8.6). SASS runs only within its major version and never on an older device: select_elf
// picks the ELF with the highest arch <= device_arch of the same major (an 'a' entry only on
// its exact arch; on a tie 'a' beats 'f' beats none). select_ptx picks the PTX with the
// highest arch <= device_arch (an 'a' PTX only on its exact arch, an 'f' PTX only within its
// major; ties as for ELF). nullopt when none fits. Callers try select_elf first, as the
// driver prefers SASS. Checked against driver 580 on an H100 (which entry a kernel of each
// of 17 made-up fat binaries came from); like it, the 64-bit flag and the host are ignored.
// Kinds other than ELF and PTX are never selected.
std::optional<std::size_t> select_elf(const std::vector<Entry>& entries,
                                      unsigned device_arch) noexcept;
std::optional<std::size_t> select_ptx(const std::vector<Entry>& entries,
                                      unsigned device_arch) noexcept;

// For a backend that runs PTX but not SASS: when NVIDIA's driver would run SASS of this fat
// binary on the device (select_elf finds one) and no PTX fits (select_ptx finds none), the
// PTX of the lowest newer arch (on a tie: no suffix, then 'f', then 'a'), which the SASS's
// source was also compiled to. CuPy's precompiled CUB carries SASS up to sm_120 and PTX for
// compute_120 only. nullopt otherwise.
std::optional<std::size_t> select_ptx_for_sass(const std::vector<Entry>& entries,
                                               unsigned device_arch) noexcept;

// What the entries are, for log lines: "sm_75 ELF, compute_75 PTX (zstd)". Compression,
// debug info and obfuscation go in parentheses.
std::string describe(const std::vector<Entry>& entries);

// The SM a cubin was built for, from its ELF header's e_flags and e_ident[EI_ABIVERSION]:
// bits 8..15 from ABI version 8 on (CUDA 13's ptxas writes 8), the low byte before.
unsigned cubin_arch(std::uint32_t e_flags, unsigned abi_version) noexcept;

}  // namespace cudamux::fatbin
