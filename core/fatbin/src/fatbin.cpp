// NVIDIA's fat binary format: see cudamux/fatbin.hpp for the layout and the contract.
#include "cudamux/fatbin.hpp"

#include <lz4.h>
#include <zstd.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <climits>
#include <cstring>
#include <new>

namespace cudamux::fatbin {
namespace {

static_assert(std::endian::native == std::endian::little,
              "fat binaries are little-endian and read in place");

constexpr std::size_t kContainerHeaderSize = 16;
constexpr std::size_t kEntryHeaderSize = 64;  // the fixed part; extensions follow it

// Entry header field offsets.
constexpr std::size_t kOffKind = 0x00;
constexpr std::size_t kOffHeaderSize = 0x04;
constexpr std::size_t kOffPaddedSize = 0x08;
constexpr std::size_t kOffCompressedSize = 0x10;
constexpr std::size_t kOffOptionsField = 0x14;
constexpr std::size_t kOffCodeVersionMinor = 0x18;
constexpr std::size_t kOffCodeVersionMajor = 0x1a;
constexpr std::size_t kOffArch = 0x1c;
constexpr std::size_t kOffIdentifierOffset = 0x20;
constexpr std::size_t kOffIdentifierSize = 0x24;
constexpr std::size_t kOffFlags = 0x28;
constexpr std::size_t kOffUncompressedSize = 0x38;

constexpr std::uint64_t kZstdBlockMax = 128 * 1024;  // RFC 8878: Block_Maximum_Size

template <class T>
T load(const void* p) noexcept {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <class T>
T load(std::span<const std::byte> bytes, std::size_t at) noexcept {
  return load<T>(bytes.data() + at);
}

// "0x1f40"
std::string hex(std::uint64_t v) {
  char buf[2 + 16];
  buf[0] = '0';
  buf[1] = 'x';
  const auto r = std::to_chars(buf + 2, buf + sizeof buf, v, 16);
  return std::string(buf, r.ptr);
}

std::string dec(std::uint64_t v) { return std::to_string(v); }

// Text up to its first NUL.
std::string_view text_of(std::span<const std::byte> bytes) noexcept {
  const auto* p = reinterpret_cast<const char*>(bytes.data());
  const auto* nul = static_cast<const char*>(std::memchr(p, 0, bytes.size()));
  return {p, nul ? static_cast<std::size_t>(nul - p) : bytes.size()};
}

Compression compression_of(std::uint64_t flags) noexcept {
  // cuobjdump decodes LZ4 when both LZ4 and zstd bits are set; so does this.
  if (flags & kFlagLz4) return Compression::lz4;
  if (flags & kFlagZstd) return Compression::zstd;
  if (flags & kFlagCompressedMask) return Compression::unknown;
  return Compression::none;
}

Variant variant_of(std::uint64_t flags) noexcept {
  if (flags & kFlagArchSpecific) return Variant::specific;
  if (flags & kFlagArchFamily) return Variant::family;
  return Variant::none;
}

// Prefix for error messages about one entry.
std::string where(std::size_t container, std::size_t entry, std::size_t offset) {
  return "container " + dec(container) + ", entry " + dec(entry) + " (header at offset " +
         hex(offset) + "): ";
}

// Parses the entries of one container, which occupy [base, end) of `bytes`.
bool parse_entries(std::span<const std::byte> bytes, std::size_t base, std::size_t end,
                   std::size_t container, std::vector<Entry>& out, std::string& error) {
  std::size_t at = base;
  for (std::size_t index = 0; at < end; ++index) {
    const std::size_t left = end - at;
    if (left < kEntryHeaderSize) {
      error = where(container, index, at) + dec(left) +
              " bytes left in the container, too few for a " + dec(kEntryHeaderSize) +
              "-byte entry header";
      return false;
    }
    const std::span<const std::byte> fixed = bytes.subspan(at, kEntryHeaderSize);
    const auto header_size = load<std::uint32_t>(fixed, kOffHeaderSize);
    const auto padded_size = load<std::uint64_t>(fixed, kOffPaddedSize);
    const auto compressed_size = load<std::uint32_t>(fixed, kOffCompressedSize);
    const auto options_field = load<std::uint32_t>(fixed, kOffOptionsField);
    const auto identifier_offset = load<std::uint32_t>(fixed, kOffIdentifierOffset);
    const auto identifier_size = load<std::uint32_t>(fixed, kOffIdentifierSize);
    const auto uncompressed_size = load<std::uint64_t>(fixed, kOffUncompressedSize);
    const auto here = [&] { return where(container, index, at); };

    if (header_size < kEntryHeaderSize) {
      error = here() + "header size " + dec(header_size) + " is below the minimum of " +
              dec(kEntryHeaderSize);
      return false;
    }
    if (header_size > left) {
      error = here() + "header size " + dec(header_size) + " extends past the container end (" +
              dec(left) + " bytes left)";
      return false;
    }
    if (padded_size > left - header_size) {
      error = here() + "payload size " + dec(padded_size) + " extends past the container end (" +
              dec(left - header_size) + " bytes left after the " + dec(header_size) +
              "-byte header)";
      return false;
    }
    const std::span<const std::byte> header = bytes.subspan(at, header_size);

    Entry e;
    e.kind = static_cast<Kind>(load<std::uint16_t>(fixed, kOffKind));
    e.arch = load<std::uint32_t>(fixed, kOffArch);
    e.code_version_minor = load<std::uint16_t>(fixed, kOffCodeVersionMinor);
    e.code_version_major = load<std::uint16_t>(fixed, kOffCodeVersionMajor);
    e.flags = load<std::uint64_t>(fixed, kOffFlags);
    e.variant = variant_of(e.flags);
    e.compression = compression_of(e.flags);
    e.header = header;
    e.container = container;
    e.offset = at;

    const std::size_t payload_at = at + header_size;
    if (e.compression == Compression::none) {
      e.payload = bytes.subspan(payload_at, static_cast<std::size_t>(padded_size));
      e.uncompressed_size = padded_size;
    } else {
      if (compressed_size == 0 || compressed_size > padded_size) {
        error = here() + "compressed size " + dec(compressed_size) +
                " does not fit the padded payload size " + dec(padded_size);
        return false;
      }
      if (uncompressed_size == 0 || uncompressed_size > kMaxUncompressedSize) {
        error = here() + "uncompressed size " + dec(uncompressed_size) +
                (uncompressed_size == 0 ? " of a compressed payload"
                                        : " exceeds the limit of " + dec(kMaxUncompressedSize));
        return false;
      }
      e.payload = bytes.subspan(payload_at, compressed_size);
      e.uncompressed_size = uncompressed_size;
    }

    if (identifier_size != 0) {
      if (identifier_offset < kEntryHeaderSize || identifier_offset > header_size ||
          identifier_size > header_size - identifier_offset) {
        error = here() + "identifier (offset " + dec(identifier_offset) + ", size " +
                dec(identifier_size) + ") lies outside the header extension (bytes " +
                dec(kEntryHeaderSize) + " to " + dec(header_size) + ")";
        return false;
      }
      e.identifier = text_of(header.subspan(identifier_offset, identifier_size));
    }
    if (options_field != 0) {
      // {u32 offset, u32 size} inside the header. PTX and NVVM entries keep their compiler
      // options there; sm_100+ ELF entries a binary descriptor (not interpreted).
      if (options_field < kEntryHeaderSize || options_field > header_size ||
          header_size - options_field < 8) {
        error = here() + "options descriptor at " + dec(options_field) +
                " lies outside the header extension (bytes " + dec(kEntryHeaderSize) + " to " +
                dec(header_size) + ")";
        return false;
      }
      const auto options_offset = load<std::uint32_t>(header, options_field);
      const auto options_size = load<std::uint32_t>(header, options_field + 4);
      if (options_size != 0 && (options_offset < kEntryHeaderSize || options_offset > header_size ||
                                options_size > header_size - options_offset)) {
        error = here() + "options (offset " + dec(options_offset) + ", size " + dec(options_size) +
                ") lie outside the header extension (bytes " + dec(kEntryHeaderSize) + " to " +
                dec(header_size) + ")";
        return false;
      }
      if (options_size != 0 && e.kind != Kind::elf)
        e.options = text_of(header.subspan(options_offset, options_size));
    }
    out.push_back(e);
    at = payload_at + static_cast<std::size_t>(padded_size);
  }
  return true;
}

bool fail(std::vector<std::byte>& out, std::string& error, std::string message) {
  out.clear();
  error = std::move(message);
  return false;
}

bool decompress_lz4(const Entry& e, std::vector<std::byte>& out, std::string& error) {
  const std::uint64_t size = e.uncompressed_size;
  // One input byte yields at most 255 output bytes in an LZ4 block (a length byte of 255).
  if (size > std::uint64_t{e.payload.size()} * 255 + 255)
    return fail(out, error,
                "LZ4 block of " + dec(e.payload.size()) + " bytes cannot expand to the declared " +
                    dec(size) + " bytes");
  if (e.payload.size() > static_cast<std::size_t>(INT_MAX))
    return fail(out, error, "LZ4 block of " + dec(e.payload.size()) + " bytes is too large");
  out.resize(static_cast<std::size_t>(size));
  const int n = LZ4_decompress_safe(reinterpret_cast<const char*>(e.payload.data()),
                                    reinterpret_cast<char*>(out.data()),
                                    static_cast<int>(e.payload.size()), static_cast<int>(size));
  if (n < 0)
    return fail(out, error,
                "corrupt LZ4 block (" + dec(e.payload.size()) + " bytes, " + dec(size) +
                    " declared): LZ4_decompress_safe returned " + std::to_string(n));
  if (static_cast<std::uint64_t>(n) != size)
    return fail(out, error,
                "LZ4 block decodes to " + dec(static_cast<unsigned>(n)) +
                    " bytes, the entry header declares " + dec(size));
  return true;
}

bool decompress_zstd(const Entry& e, std::vector<std::byte>& out, std::string& error) {
  const std::uint64_t size = e.uncompressed_size;
  const unsigned long long framed = ZSTD_getFrameContentSize(e.payload.data(), e.payload.size());
  if (framed == ZSTD_CONTENTSIZE_ERROR)
    return fail(out, error, "payload is not a zstd frame (" + dec(e.payload.size()) + " bytes)");
  if (framed != ZSTD_CONTENTSIZE_UNKNOWN && framed != size)
    return fail(
        out, error,
        "zstd frame declares " + dec(framed) + " bytes, the entry header declares " + dec(size));
  if (framed == ZSTD_CONTENTSIZE_UNKNOWN) {
    // Without a declared content size, bound the allocation by what the input can produce:
    // every block needs a 3-byte header and holds at most 128 KiB.
    if (size > (std::uint64_t{e.payload.size()} / 3 + 1) * kZstdBlockMax)
      return fail(out, error,
                  "zstd stream of " + dec(e.payload.size()) +
                      " bytes cannot expand to the declared " + dec(size) + " bytes");
  }
  out.resize(static_cast<std::size_t>(size));
  const std::size_t n = ZSTD_decompress(out.data(), out.size(), e.payload.data(), e.payload.size());
  if (ZSTD_isError(n))
    return fail(out, error,
                std::string("corrupt zstd stream (") + ZSTD_getErrorName(n) + "; " +
                    dec(e.payload.size()) + " bytes, " + dec(size) + " declared)");
  if (n != size)
    return fail(
        out, error,
        "zstd stream decodes to " + dec(n) + " bytes, the entry header declares " + dec(size));
  return true;
}

// How much a variant restricts where an entry runs; on equal archs the more specific wins.
int rank(Variant v) noexcept {
  switch (v) {
    case Variant::specific:
      return 2;
    case Variant::family:
      return 1;
    case Variant::none:
      break;
  }
  return 0;
}

template <class Fits>
std::optional<std::size_t> select(const std::vector<Entry>& entries, Kind kind, Fits fits) {
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    // The 64-bit flag is not looked at: NVIDIA's driver (580) loads entries without it.
    if (e.kind != kind || !fits(e)) continue;
    if (!best) {
      best = i;
      continue;
    }
    const Entry& b = entries[*best];
    if (e.arch > b.arch || (e.arch == b.arch && rank(e.variant) > rank(b.variant))) best = i;
  }
  return best;
}

std::string_view suffix(Variant v) noexcept {
  switch (v) {
    case Variant::specific:
      return "a";
    case Variant::family:
      return "f";
    case Variant::none:
      break;
  }
  return "";
}

}  // namespace

bool unwrap(const void* wrapper, const void*& container, std::string& error) noexcept {
  try {
    container = nullptr;
    if (wrapper == nullptr) {
      error = "null fat binary wrapper";
      return false;
    }
    const auto* w = static_cast<const std::byte*>(wrapper);
    const auto magic = load<std::uint32_t>(w);
    if (magic == kContainerMagic) {
      container = wrapper;
      return true;
    }
    if (magic != kWrapperMagic) {
      error = "not a fat binary wrapper: magic " + hex(magic) + ", expected " + hex(kWrapperMagic);
      return false;
    }
    const auto version = load<std::uint32_t>(w + 4);
    if (version != 1 && version != 2) {
      error = "fat binary wrapper version " + dec(version) + " (known: 1, 2)";
      return false;
    }
    const auto* data = load<const void*>(w + 8);
    if (data == nullptr) {
      error = "fat binary wrapper with a null data pointer";
      return false;
    }
    const auto data_magic = load<std::uint32_t>(data);
    if (data_magic != kContainerMagic) {
      error = "fat binary wrapper whose data does not start with a fat binary container (magic " +
              hex(data_magic) + ", expected " + hex(kContainerMagic) + ")";
      return false;
    }
    container = data;
    return true;
  } catch (...) {
    error = "out of memory";
    return false;
  }
}

std::optional<std::size_t> extent(const void* data) noexcept {
  if (data == nullptr) return std::nullopt;
  const auto* p = static_cast<const std::byte*>(data);
  if (load<std::uint32_t>(p) != kContainerMagic || load<std::uint16_t>(p + 4) != 1)
    return std::nullopt;
  const auto header_size = load<std::uint16_t>(p + 6);
  const auto fat_size = load<std::uint64_t>(p + 8);
  if (header_size < kContainerHeaderSize || fat_size > kMaxContainerSize - header_size)
    return std::nullopt;
  return static_cast<std::size_t>(header_size + fat_size);
}

bool parse(std::span<const std::byte> bytes, std::vector<Entry>& out, std::string& error) noexcept {
  try {
    out.clear();
    if (bytes.data() == nullptr || bytes.empty()) {
      error = "empty fat binary";
      return false;
    }
    std::size_t at = 0;
    for (std::size_t container = 0; at < bytes.size(); ++container) {
      const auto here = [&] {
        return "container " + dec(container) + " (offset " + hex(at) + "): ";
      };
      const std::size_t left = bytes.size() - at;
      if (left < kContainerHeaderSize) {
        error = here() + dec(left) + " bytes left, too few for a " + dec(kContainerHeaderSize) +
                "-byte container header";
        out.clear();
        return false;
      }
      const auto magic = load<std::uint32_t>(bytes, at);
      if (magic != kContainerMagic) {
        if (magic == kWrapperMagic)
          error = here() + "a fat binary wrapper (magic " + hex(magic) +
                  "), not a container: unwrap it first";
        else if (magic == kOldStyleMagic)
          error = here() + "an old-style (pre-CUDA 4) fat binary, not supported";
        else
          error = here() + "bad magic " + hex(magic) + ", expected " + hex(kContainerMagic);
        out.clear();
        return false;
      }
      const auto version = load<std::uint16_t>(bytes, at + 4);
      const auto header_size = load<std::uint16_t>(bytes, at + 6);
      const auto fat_size = load<std::uint64_t>(bytes, at + 8);
      if (version != 1) {
        error = here() + "container version " + dec(version) + " (known: 1)";
        out.clear();
        return false;
      }
      if (header_size < kContainerHeaderSize) {
        error = here() + "header size " + dec(header_size) + " is below the minimum of " +
                dec(kContainerHeaderSize);
        out.clear();
        return false;
      }
      if (header_size > left || fat_size > left - header_size) {
        error = here() + "declares " + dec(header_size) + " + " + dec(fat_size) +
                " bytes (header + entries), only " + dec(left) + " are left";
        out.clear();
        return false;
      }
      const std::size_t end = at + header_size + static_cast<std::size_t>(fat_size);
      if (!parse_entries(bytes, at + header_size, end, container, out, error)) {
        out.clear();
        return false;
      }
      at = end;
    }
    return true;
  } catch (...) {
    out.clear();
    error = "out of memory";
    return false;
  }
}

bool decompress(const Entry& e, std::vector<std::byte>& out, std::string& error) noexcept {
  try {
    out.clear();
    if (e.obfuscated())
      return fail(out, error,
                  "the payload is obfuscated (flags " + hex(e.flags) +
                      "); only NVIDIA's tools can read it");
    if (e.payload.data() == nullptr && !e.payload.empty()) return fail(out, error, "null payload");
    switch (e.compression) {
      case Compression::none:
        out.assign(e.payload.begin(), e.payload.end());
        break;
      case Compression::lz4:
        if (e.uncompressed_size == 0 || e.uncompressed_size > kMaxUncompressedSize)
          return fail(out, error,
                      "uncompressed size " + dec(e.uncompressed_size) + " out of range");
        if (!decompress_lz4(e, out, error)) return false;
        break;
      case Compression::zstd:
        if (e.uncompressed_size == 0 || e.uncompressed_size > kMaxUncompressedSize)
          return fail(out, error,
                      "uncompressed size " + dec(e.uncompressed_size) + " out of range");
        if (!decompress_zstd(e, out, error)) return false;
        break;
      case Compression::unknown:
      default:
        return fail(out, error, "compressed with an unknown method (flags " + hex(e.flags) + ")");
    }
    if (e.kind == Kind::ptx) {
      const auto nul = std::find(out.begin(), out.end(), std::byte{0});
      if (nul == out.end())
        out.push_back(std::byte{0});
      else
        out.erase(nul + 1, out.end());
    }
    return true;
  } catch (...) {
    out.clear();
    error = "out of memory decompressing " + std::to_string(e.uncompressed_size) + " bytes";
    return false;
  }
}

std::optional<std::size_t> select_elf(const std::vector<Entry>& entries,
                                      unsigned device_arch) noexcept {
  return select(entries, Kind::elf, [device_arch](const Entry& e) {
    // SASS: same major version, never newer than the device; 'a' on its own arch only.
    if (e.arch > device_arch || e.arch / 10 != device_arch / 10) return false;
    return e.variant != Variant::specific || e.arch == device_arch;
  });
}

std::optional<std::size_t> select_ptx(const std::vector<Entry>& entries,
                                      unsigned device_arch) noexcept {
  return select(entries, Kind::ptx, [device_arch](const Entry& e) {
    // PTX JIT-compiles for any newer device, except arch-specific and family PTX.
    if (e.arch > device_arch) return false;
    switch (e.variant) {
      case Variant::specific:
        return e.arch == device_arch;
      case Variant::family:
        return e.arch / 10 == device_arch / 10;
      case Variant::none:
        break;
    }
    return true;
  });
}

std::optional<std::size_t> select_ptx_for_sass(const std::vector<Entry>& entries,
                                               unsigned device_arch) noexcept {
  if (!select_elf(entries, device_arch) || select_ptx(entries, device_arch)) return std::nullopt;
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    if (e.kind != Kind::ptx || e.arch <= device_arch) continue;
    if (!best) {
      best = i;
      continue;
    }
    const Entry& b = entries[*best];
    // The closest arch, and among equals the most portable PTX (rank orders none < f < a).
    if (e.arch < b.arch || (e.arch == b.arch && rank(e.variant) < rank(b.variant))) best = i;
  }
  return best;
}

std::string describe(const std::vector<Entry>& entries) {
  std::string s;
  for (const Entry& e : entries) {
    if (!s.empty()) s += ", ";
    const std::string arch = std::to_string(e.arch) + std::string(suffix(e.variant));
    switch (e.kind) {
      case Kind::elf:
        s += "sm_" + arch + " ELF";
        break;
      case Kind::ptx:
        s += "compute_" + arch + " PTX";
        break;
      case Kind::nvvm:
        s += "lto_" + arch + " NVVM IR";
        break;
      default:
        s += "sm_" + arch + " kind " + hex(static_cast<std::uint16_t>(e.kind));
        break;
    }
    std::string notes;
    const auto note = [&notes](std::string_view n) {
      if (!notes.empty()) notes += ", ";
      notes += n;
    };
    switch (e.compression) {
      case Compression::lz4:
        note("lz4");
        break;
      case Compression::zstd:
        note("zstd");
        break;
      case Compression::unknown:
        note("unknown compression");
        break;
      case Compression::none:
        break;
    }
    if (e.has_debug_info()) note("debug");
    if (e.obfuscated()) note("obfuscated");
    if (!e.is_64bit()) note("32-bit");
    if (!notes.empty()) s += " (" + notes + ")";
  }
  return s;
}

unsigned cubin_arch(std::uint32_t e_flags, unsigned abi_version) noexcept {
  // EF_CUDA_SM: the low byte up to ELF ABI version 7 (CUDA 12 and older, sm_20..sm_90a);
  // bits 8..15 from version 8 (CUDA 13), where the low byte holds other flags.
  return abi_version >= 8 ? (e_flags >> 8) & 0xffu : e_flags & 0xffu;
}

}  // namespace cudamux::fatbin
