// The fat binary parser (issue 14) against real nvcc output and damaged copies of it.
//
// The fixtures in data/ come from tests/fatbin/make_fixtures.sh (CUDA 13.0's nvcc); the
// expectations below are what cuobjdump says about them (data/cuobjdump.txt, rewritten by
// the script: `cuobjdump -lelf -lptx F` for the list of entries, plain `cuobjdump F` for each
// entry's arch, code version, host, compile_size, "has debug info", "compressed",
// identifier and ptxasOptions) plus the raw header fields, read with a hex dump
// (`xxd F | head`): the entry header's flags u64 at +0x28 and sizes at +0x08/+0x10/+0x38.
#include "cudamux/fatbin.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

namespace fb = cudamux::fatbin;

namespace {

using Bytes = std::vector<std::byte>;

Bytes read_fixture(const std::string& name) {
  std::ifstream in(std::string(CUDAMUX_FATBIN_DATA) + "/" + name, std::ios::binary);
  EXPECT_TRUE(in) << "missing fixture " << name;
  const std::vector<char> chars((std::istreambuf_iterator<char>(in)), {});
  Bytes b(chars.size());
  if (!chars.empty()) std::memcpy(b.data(), chars.data(), chars.size());
  return b;
}

template <class T>
void put(Bytes& b, std::size_t at, T v) {
  ASSERT_LE(at + sizeof v, b.size());
  std::memcpy(b.data() + at, &v, sizeof v);
}

template <class T>
T get(const Bytes& b, std::size_t at) {
  T v{};
  std::memcpy(&v, b.data() + at, sizeof v);
  return v;
}

std::string_view text(const Bytes& b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

// Parses `bytes` and expects success.
std::vector<fb::Entry> parse_ok(const Bytes& bytes) {
  std::vector<fb::Entry> entries;
  std::string error;
  EXPECT_TRUE(fb::parse(bytes, entries, error)) << error;
  return entries;
}

// Parses `bytes` and expects failure with `needle` in the message.
void expect_parse_error(const Bytes& bytes, std::string_view needle) {
  std::vector<fb::Entry> entries(1);
  std::string error;
  EXPECT_FALSE(fb::parse(bytes, entries, error));
  EXPECT_TRUE(entries.empty());
  EXPECT_NE(error.find(needle), std::string::npos) << "error: " << error;
}

Bytes decompress_ok(const fb::Entry& e) {
  Bytes out;
  std::string error;
  EXPECT_TRUE(fb::decompress(e, out, error)) << error;
  return out;
}

void expect_decompress_error(const fb::Entry& e, std::string_view needle) {
  Bytes out(3);
  std::string error;
  EXPECT_FALSE(fb::decompress(e, out, error));
  EXPECT_TRUE(out.empty());
  EXPECT_NE(error.find(needle), std::string::npos) << "error: " << error;
}

bool starts_with(const Bytes& b, std::string_view prefix) { return text(b).starts_with(prefix); }

// A PTX module's header after the blank lines fatbinary leaves where comments were.
void expect_ptx(const Bytes& ptx, std::string_view target, std::string_view entry) {
  ASSERT_FALSE(ptx.empty());
  EXPECT_EQ(ptx.back(), std::byte{0});
  EXPECT_EQ(std::count(ptx.begin(), ptx.end(), std::byte{0}), 1);
  std::string_view t = text(ptx);
  t.remove_prefix(std::min(t.find_first_not_of('\n'), t.size()));
  EXPECT_TRUE(t.starts_with(".version 9.0\n.target " + std::string(target) + "\n"))
      << t.substr(0, 60);
  EXPECT_NE(t.find(".entry " + std::string(entry) + "("), std::string_view::npos);
}

void expect_cuda_elf(const Bytes& elf) {
  ASSERT_GE(elf.size(), 64u);
  EXPECT_TRUE(starts_with(elf,
                          "\x7f"
                          "ELF\x02\x01\x01"));  // 64-bit, little-endian
  EXPECT_EQ(get<std::uint16_t>(elf, 18), 190);  // e_machine EM_CUDA
}

// The offsets of the container boundaries in a parsed buffer (0 and the end included).
std::vector<std::size_t> container_boundaries(const Bytes& bytes) {
  std::vector<std::size_t> cuts{0};
  std::size_t at = 0;
  while (at < bytes.size()) {
    const auto n = fb::extent(bytes.data() + at);
    if (!n) break;
    at += *n;
    cuts.push_back(at);
  }
  return cuts;
}

// Builds containers by hand, laid out as fatbinary lays them out (identifier right after the
// fixed 64 bytes, then the options descriptor and text), for cases nvcc does not produce.
struct Spec {
  std::uint16_t kind = 2;
  std::uint32_t arch = 75;
  std::uint64_t flags = 0x11;
  Bytes payload;  // as stored
  std::uint32_t compressed_size = 0;
  std::uint64_t uncompressed_size = 0;
  std::string identifier;
  std::string options;
};

std::size_t pad8(std::size_t n) { return (n + 7) & ~std::size_t{7}; }

Bytes build(const std::vector<Spec>& specs) {
  Bytes body;
  for (const Spec& s : specs) {
    Bytes h(64);
    std::size_t ident_at = 0, desc_at = 0;
    if (!s.identifier.empty()) {
      ident_at = h.size();
      h.resize(h.size() + pad8(s.identifier.size() + 1));
      std::memcpy(h.data() + ident_at, s.identifier.data(), s.identifier.size());
    }
    if (!s.options.empty()) {
      desc_at = h.size();
      h.resize(h.size() + 8);
      const std::size_t text_at = h.size();
      h.resize(h.size() + pad8(s.options.size() + 1));
      std::memcpy(h.data() + text_at, s.options.data(), s.options.size());
      put<std::uint32_t>(h, desc_at, static_cast<std::uint32_t>(text_at));
      put<std::uint32_t>(h, desc_at + 4, static_cast<std::uint32_t>(s.options.size() + 1));
    }
    put<std::uint16_t>(h, 0x00, s.kind);
    put<std::uint16_t>(h, 0x02, 0x0101);
    put<std::uint32_t>(h, 0x04, static_cast<std::uint32_t>(h.size()));
    put<std::uint64_t>(h, 0x08, pad8(s.payload.size()));
    put<std::uint32_t>(h, 0x10, s.compressed_size);
    put<std::uint32_t>(h, 0x14, static_cast<std::uint32_t>(desc_at));
    put<std::uint16_t>(h, 0x18, 0);
    put<std::uint16_t>(h, 0x1a, 1);
    put<std::uint32_t>(h, 0x1c, s.arch);
    put<std::uint32_t>(h, 0x20, static_cast<std::uint32_t>(ident_at));
    put<std::uint32_t>(h, 0x24, static_cast<std::uint32_t>(s.identifier.size()));
    put<std::uint64_t>(h, 0x28, s.flags);
    put<std::uint64_t>(h, 0x38, s.uncompressed_size);
    body.insert(body.end(), h.begin(), h.end());
    body.insert(body.end(), s.payload.begin(), s.payload.end());
    body.resize(body.size() + pad8(s.payload.size()) - s.payload.size());
  }
  Bytes c(16);
  put<std::uint32_t>(c, 0, fb::kContainerMagic);
  put<std::uint16_t>(c, 4, 1);
  put<std::uint16_t>(c, 6, 16);
  put<std::uint64_t>(c, 8, body.size());
  c.insert(c.end(), body.begin(), body.end());
  return c;
}

Bytes bytes_of(std::string_view s) {
  Bytes b(s.size());
  std::memcpy(b.data(), s.data(), s.size());
  return b;
}

// A zstd frame without a content size: one raw block (RFC 8878: frame header descriptor 0,
// window descriptor 0, block header = last | raw | size << 3).
Bytes zstd_raw_frame(std::string_view content) {
  Bytes f = bytes_of(std::string_view("\x28\xb5\x2f\xfd\x00\x00", 6));
  const std::uint32_t bh = 1u | (static_cast<std::uint32_t>(content.size()) << 3);
  f.push_back(static_cast<std::byte>(bh & 0xff));
  f.push_back(static_cast<std::byte>((bh >> 8) & 0xff));
  f.push_back(static_cast<std::byte>((bh >> 16) & 0xff));
  const Bytes c = bytes_of(content);
  f.insert(f.end(), c.begin(), c.end());
  return f;
}

const char* const kFixtures[] = {
    "sm75.fatbin", "sm75_nocompress.fatbin", "multi.fatbin", "sm90a.fatbin",    "blackwell.fatbin",
    "lz4.fatbin",  "debug.fatbin",           "lto.fatbin",   "linked.nv_fatbin"};

// Entry header offsets in sm75.fatbin (one container, ELF at 0x10, PTX after it).
constexpr std::size_t kSm75Elf = 0x10;
constexpr std::size_t kSm75Ptx = 0x10 + 64 + 3240;

}  // namespace

// ---------------------------------------------------------------------------------------
// Real fixtures: what cuobjdump lists, field by field.

TEST(FatbinFixtures, Sm75DefaultCompression) {
  // cuobjdump: ELF sm_75 code version [1,8] (not compressed); PTX sm_75 [9,0] compressed,
  // ptxasOptions empty. Header flags 0x11 / 0x8011 (64-bit | linux [| zstd]).
  const Bytes bytes = read_fixture("sm75.fatbin");
  ASSERT_EQ(bytes.size(), 3792u);
  EXPECT_EQ(fb::extent(bytes.data()), std::optional<std::size_t>(3792));
  const auto entries = parse_ok(bytes);
  ASSERT_EQ(entries.size(), 2u);

  const fb::Entry& elf = entries[0];
  EXPECT_EQ(elf.kind, fb::Kind::elf);
  EXPECT_EQ(elf.arch, 75u);
  EXPECT_EQ(elf.variant, fb::Variant::none);
  EXPECT_EQ(elf.flags, 0x11u);
  EXPECT_EQ(elf.code_version_major, 1);
  EXPECT_EQ(elf.code_version_minor, 8);
  EXPECT_EQ(elf.compression, fb::Compression::none);
  EXPECT_EQ(elf.payload.size(), 3240u);
  EXPECT_EQ(elf.payload.data(), bytes.data() + kSm75Elf + 64);
  EXPECT_EQ(elf.uncompressed_size, 3240u);
  EXPECT_EQ(elf.header.size(), 64u);
  EXPECT_EQ(elf.offset, kSm75Elf);
  EXPECT_EQ(elf.container, 0u);
  EXPECT_TRUE(elf.is_64bit());
  EXPECT_FALSE(elf.has_debug_info());
  EXPECT_TRUE(elf.identifier.empty());
  EXPECT_TRUE(elf.options.empty());
  // The ELF is byte for byte what `nvcc -cubin -arch=sm_75` writes.
  const Bytes cubin = decompress_ok(elf);
  expect_cuda_elf(cubin);
  EXPECT_EQ(cubin, read_fixture("axpy_sm_75.cubin"));
  EXPECT_EQ(fb::cubin_arch(get<std::uint32_t>(cubin, 0x30), static_cast<unsigned>(cubin[8])), 75u);

  const fb::Entry& ptx = entries[1];
  EXPECT_EQ(ptx.kind, fb::Kind::ptx);
  EXPECT_EQ(ptx.arch, 75u);
  EXPECT_EQ(ptx.flags, 0x8011u);
  EXPECT_EQ(ptx.code_version_major, 9);
  EXPECT_EQ(ptx.code_version_minor, 0);
  EXPECT_EQ(ptx.compression, fb::Compression::zstd);
  EXPECT_EQ(ptx.payload.size(), 392u);
  EXPECT_EQ(ptx.uncompressed_size, 949u);
  EXPECT_EQ(ptx.header.size(), 80u);  // with an (empty) options descriptor
  EXPECT_EQ(ptx.offset, kSm75Ptx);
  EXPECT_TRUE(ptx.options.empty());
  const Bytes text = decompress_ok(ptx);
  EXPECT_EQ(text.size(), 949u);  // the stream holds the NUL already
  expect_ptx(text, "sm_75", "cudamux_fatbin_axpy");

  EXPECT_EQ(fb::describe(entries), "sm_75 ELF, compute_75 PTX (zstd)");
}

TEST(FatbinFixtures, NoCompressMatchesCompressed) {
  // nvcc --no-compress: cuobjdump lists the same two entries, neither "compressed"; flags
  // 0x11 on both; the PTX is stored NUL-terminated and zero-padded to 8 (952 bytes).
  const auto plain_bytes = read_fixture("sm75_nocompress.fatbin");
  const auto zstd_bytes = read_fixture("sm75.fatbin");
  const auto plain = parse_ok(plain_bytes);
  const auto zstd = parse_ok(zstd_bytes);
  ASSERT_EQ(plain.size(), 2u);
  ASSERT_EQ(zstd.size(), 2u);
  EXPECT_EQ(plain[1].kind, fb::Kind::ptx);
  EXPECT_EQ(plain[1].flags, 0x11u);
  EXPECT_EQ(plain[1].compression, fb::Compression::none);
  EXPECT_EQ(plain[1].payload.size(), 952u);
  EXPECT_EQ(decompress_ok(plain[0]), decompress_ok(zstd[0]));
  const Bytes ptx = decompress_ok(plain[1]);
  EXPECT_EQ(ptx.size(), 949u);  // cut after the first NUL
  EXPECT_EQ(ptx, decompress_ok(zstd[1]));
  EXPECT_EQ(fb::describe(plain), "sm_75 ELF, compute_75 PTX");
}

TEST(FatbinFixtures, MultipleGencodes) {
  // cuobjdump -lelf -lptx: ELF sm_75, ELF sm_80, PTX sm_90, ELF sm_90 (in this order).
  const auto bytes = read_fixture("multi.fatbin");
  const auto entries = parse_ok(bytes);
  ASSERT_EQ(entries.size(), 4u);
  const fb::Kind kinds[] = {fb::Kind::elf, fb::Kind::elf, fb::Kind::ptx, fb::Kind::elf};
  const unsigned arches[] = {75, 80, 90, 90};
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(entries[i].kind, kinds[i]) << i;
    EXPECT_EQ(entries[i].arch, arches[i]) << i;
    EXPECT_EQ(entries[i].flags, kinds[i] == fb::Kind::ptx ? 0x8011u : 0x11u) << i;
  }
  EXPECT_EQ(fb::describe(entries), "sm_75 ELF, sm_80 ELF, compute_90 PTX (zstd), sm_90 ELF");
  for (const unsigned i : {0u, 1u, 3u}) {
    const Bytes elf = decompress_ok(entries[i]);
    expect_cuda_elf(elf);
    EXPECT_EQ(fb::cubin_arch(get<std::uint32_t>(elf, 0x30), static_cast<unsigned>(elf[8])),
              entries[i].arch);
  }
  expect_ptx(decompress_ok(entries[2]), "sm_90", "cudamux_fatbin_axpy");

  // SASS: the highest of the same major, never newer than the device.
  EXPECT_EQ(fb::select_elf(entries, 75), 0u);
  EXPECT_EQ(fb::select_elf(entries, 80), 1u);
  EXPECT_EQ(fb::select_elf(entries, 86), 1u);  // sm_86 device: sm_80 ELF
  EXPECT_EQ(fb::select_elf(entries, 89), 1u);
  EXPECT_EQ(fb::select_elf(entries, 90), 3u);
  EXPECT_EQ(fb::select_elf(entries, 70), std::nullopt);
  EXPECT_EQ(fb::select_elf(entries, 100), std::nullopt);  // Blackwell: no SASS, JIT the PTX
  EXPECT_EQ(fb::select_ptx(entries, 100), 2u);
  EXPECT_EQ(fb::select_ptx(entries, 120), 2u);
  EXPECT_EQ(fb::select_ptx(entries, 89), std::nullopt);  // compute_90 is newer
}

TEST(FatbinFixtures, ArchSpecificVariant) {
  // cuobjdump: PTX sm_90a then ELF sm_90a. Flags 0x108011 / 0x100011: bit 20 is the 'a'.
  const auto bytes = read_fixture("sm90a.fatbin");
  const auto entries = parse_ok(bytes);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].kind, fb::Kind::ptx);
  EXPECT_EQ(entries[0].arch, 90u);
  EXPECT_EQ(entries[0].variant, fb::Variant::specific);
  EXPECT_EQ(entries[0].flags, 0x108011u);
  EXPECT_EQ(entries[1].kind, fb::Kind::elf);
  EXPECT_EQ(entries[1].arch, 90u);
  EXPECT_EQ(entries[1].variant, fb::Variant::specific);
  EXPECT_EQ(entries[1].flags, 0x100011u);
  EXPECT_EQ(fb::describe(entries), "compute_90a PTX (zstd), sm_90a ELF");
  expect_ptx(decompress_ok(entries[0]), "sm_90a", "cudamux_fatbin_axpy");
  expect_cuda_elf(decompress_ok(entries[1]));
  EXPECT_EQ(fb::select_elf(entries, 90), 1u);
  EXPECT_EQ(fb::select_ptx(entries, 90), 0u);
  // 'a' code runs on its own arch only, SASS and PTX alike.
  EXPECT_EQ(fb::select_elf(entries, 100), std::nullopt);
  EXPECT_EQ(fb::select_ptx(entries, 100), std::nullopt);
  EXPECT_EQ(fb::select_ptx(entries, 120), std::nullopt);
}

TEST(FatbinFixtures, BlackwellHeaders) {
  // cuobjdump: ELF sm_100f, ELF sm_120, PTX sm_120 (compressed). The sm_100+ ELF headers
  // are 112 bytes: their options descriptor (+0x14 = 0x40) points at a 36-byte binary
  // record, not text; flags 0x1200011 (family bit 21 + bit 24) and 0x1000011.
  const auto bytes = read_fixture("blackwell.fatbin");
  const auto entries = parse_ok(bytes);
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[0].kind, fb::Kind::elf);
  EXPECT_EQ(entries[0].arch, 100u);
  EXPECT_EQ(entries[0].variant, fb::Variant::family);
  EXPECT_EQ(entries[0].flags, 0x1200011u);
  EXPECT_EQ(entries[0].header.size(), 112u);
  EXPECT_TRUE(entries[0].options.empty());
  EXPECT_EQ(entries[1].arch, 120u);
  EXPECT_EQ(entries[1].variant, fb::Variant::none);
  EXPECT_EQ(entries[1].flags, 0x1000011u);
  EXPECT_EQ(entries[2].kind, fb::Kind::ptx);
  EXPECT_EQ(entries[2].arch, 120u);
  EXPECT_EQ(fb::describe(entries), "sm_100f ELF, sm_120 ELF, compute_120 PTX (zstd)");
  for (const auto& e : entries) {
    if (e.kind == fb::Kind::elf) {
      const Bytes elf = decompress_ok(e);
      expect_cuda_elf(elf);
      EXPECT_EQ(fb::cubin_arch(get<std::uint32_t>(elf, 0x30), static_cast<unsigned>(elf[8])),
                e.arch);
    }
  }
  expect_ptx(decompress_ok(entries[2]), "sm_120", "cudamux_fatbin_axpy");
  EXPECT_EQ(fb::select_elf(entries, 100), 0u);
  EXPECT_EQ(fb::select_elf(entries, 103), 0u);  // the family: CC 10.3 runs sm_100f
  EXPECT_EQ(fb::select_elf(entries, 120), 1u);
  EXPECT_EQ(fb::select_elf(entries, 121), 1u);
  EXPECT_EQ(fb::select_elf(entries, 110), std::nullopt);
  EXPECT_EQ(fb::select_ptx(entries, 110), std::nullopt);  // compute_120 is newer
  EXPECT_EQ(fb::select_ptx(entries, 130), 2u);
}

TEST(FatbinFixtures, Lz4) {
  // fatbinary -compress-all -compress-mode=speed: cuobjdump says both are "compressed";
  // flags 0x2011 (bit 13: LZ4, a raw LZ4 block). Same compile as sm75.fatbin, so the same
  // ELF and PTX come out.
  const auto bytes = read_fixture("lz4.fatbin");
  const auto entries = parse_ok(bytes);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].kind, fb::Kind::elf);
  EXPECT_EQ(entries[0].flags, 0x2011u);
  EXPECT_EQ(entries[0].compression, fb::Compression::lz4);
  EXPECT_EQ(entries[0].payload.size(), 1271u);
  EXPECT_EQ(entries[0].uncompressed_size, 3240u);
  EXPECT_EQ(entries[1].compression, fb::Compression::lz4);
  EXPECT_EQ(entries[1].uncompressed_size, 949u);
  EXPECT_EQ(fb::describe(entries), "sm_75 ELF (lz4), compute_75 PTX (lz4)");
  EXPECT_EQ(decompress_ok(entries[0]), read_fixture("axpy_sm_75.cubin"));
  const auto zstd = parse_ok(read_fixture("sm75.fatbin"));
  EXPECT_EQ(decompress_ok(entries[1]), decompress_ok(zstd[1]));
}

TEST(FatbinFixtures, DebugIdentifierAndOptions) {
  // nvcc -G: cuobjdump says "has debug info", "compressed" and "identifier = axpy.cu" for
  // both; the PTX's ptxasOptions = " -g --dont-merge-basicblocks --return-at-end ".
  // Flags 0x8013 (debug bit 1). The ELF is zstd-compressed too (debug images are).
  const auto bytes = read_fixture("debug.fatbin");
  const auto entries = parse_ok(bytes);
  ASSERT_EQ(entries.size(), 2u);
  for (const auto& e : entries) {
    EXPECT_EQ(e.flags, 0x8013u);
    EXPECT_TRUE(e.has_debug_info());
    EXPECT_EQ(e.compression, fb::Compression::zstd);
    EXPECT_EQ(e.identifier, "axpy.cu");
    EXPECT_EQ(e.arch, 75u);
  }
  EXPECT_EQ(entries[0].kind, fb::Kind::elf);
  EXPECT_TRUE(entries[0].options.empty());
  EXPECT_EQ(entries[1].kind, fb::Kind::ptx);
  EXPECT_EQ(entries[1].options, " -g --dont-merge-basicblocks --return-at-end ");
  const Bytes elf = decompress_ok(entries[0]);
  expect_cuda_elf(elf);
  EXPECT_EQ(elf.size(), entries[0].uncompressed_size);
  expect_ptx(decompress_ok(entries[1]), "sm_75, debug", "cudamux_fatbin_axpy");
  EXPECT_EQ(fb::describe(entries), "sm_75 ELF (zstd, debug), compute_75 PTX (zstd, debug)");
}

TEST(FatbinFixtures, ObfuscatedLtoIr) {
  // nvcc -dc code=lto_80: cuobjdump prints "Fatbin nvvm code", arch sm_80, code version
  // [1,65], compressed, nvvmOptions = "-ftz=0 -prec_div=1 -prec_sqrt=1 -fmad=1 ", and
  // "Can't deobfuscate entry ... without obfuscation key". Kind 8, flags 0x18011.
  const auto bytes = read_fixture("lto.fatbin");
  const auto entries = parse_ok(bytes);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].kind, fb::Kind::nvvm);
  EXPECT_EQ(entries[0].arch, 80u);
  EXPECT_EQ(entries[0].code_version_major, 1);
  EXPECT_EQ(entries[0].code_version_minor, 65);
  EXPECT_EQ(entries[0].flags, 0x18011u);
  EXPECT_TRUE(entries[0].obfuscated());
  EXPECT_EQ(entries[0].options, "-ftz=0 -prec_div=1 -prec_sqrt=1 -fmad=1 ");
  EXPECT_EQ(fb::describe(entries), "lto_80 NVVM IR (zstd, obfuscated)");
  expect_decompress_error(entries[0], "obfuscated");
  EXPECT_EQ(fb::select_elf(entries, 80), std::nullopt);
  EXPECT_EQ(fb::select_ptx(entries, 80), std::nullopt);
}

TEST(FatbinFixtures, LinkedProgramSection) {
  // The .nv_fatbin section of a program of three translation units (nvcc links a fourth
  // container, the device-link stub, first). cuobjdump -lelf -lptx: ELF sm_75; ELF sm_75,
  // PTX sm_75; ELF sm_80, PTX sm_90; ELF sm_75, PTX sm_75.
  const auto bytes = read_fixture("linked.nv_fatbin");
  const auto cuts = container_boundaries(bytes);
  ASSERT_EQ(cuts, (std::vector<std::size_t>{0, 1528, 5320, 9216, 10912}));
  const auto entries = parse_ok(bytes);
  ASSERT_EQ(entries.size(), 7u);
  const std::size_t containers[] = {0, 1, 1, 2, 2, 3, 3};
  const unsigned arches[] = {75, 75, 75, 80, 90, 75, 75};
  using K = fb::Kind;
  const fb::Kind kinds[] = {K::elf, K::elf, K::ptx, K::elf, K::ptx, K::elf, K::ptx};
  for (std::size_t i = 0; i < entries.size(); ++i) {
    EXPECT_EQ(entries[i].container, containers[i]) << i;
    EXPECT_EQ(entries[i].arch, arches[i]) << i;
    EXPECT_EQ(entries[i].kind, kinds[i]) << i;
    EXPECT_GE(entries[i].offset, cuts[containers[i]] + 16);
    EXPECT_LT(entries[i].offset, cuts[containers[i] + 1]);
    EXPECT_TRUE(decompress_ok(entries[i]).size() > 0);
  }
  // The second container is axpy.cu's, the same as sm75.fatbin.
  EXPECT_TRUE(
      std::equal(bytes.begin() + 1528, bytes.begin() + 5320, read_fixture("sm75.fatbin").begin()));
  expect_ptx(decompress_ok(entries[4]), "sm_90", "cudamux_fatbin_scale");
  // Each container parses alone too.
  std::size_t total = 0;
  for (std::size_t c = 0; c + 1 < cuts.size(); ++c) {
    const Bytes one(bytes.begin() + static_cast<std::ptrdiff_t>(cuts[c]),
                    bytes.begin() + static_cast<std::ptrdiff_t>(cuts[c + 1]));
    total += parse_ok(one).size();
  }
  EXPECT_EQ(total, entries.size());
}

TEST(FatbinFixtures, ContainersBackToBack) {
  Bytes all;
  std::vector<std::size_t> counts;
  for (const char* name : {"sm75.fatbin", "multi.fatbin", "lz4.fatbin", "blackwell.fatbin"}) {
    const Bytes b = read_fixture(name);
    counts.push_back(parse_ok(b).size());
    all.insert(all.end(), b.begin(), b.end());
  }
  const auto entries = parse_ok(all);
  ASSERT_EQ(entries.size(), 2u + 4u + 2u + 3u);
  EXPECT_EQ(entries[2].container, 1u);
  EXPECT_EQ(entries[6].container, 2u);
  EXPECT_EQ(entries[10].container, 3u);
  EXPECT_EQ(fb::describe(entries),
            "sm_75 ELF, compute_75 PTX (zstd), sm_75 ELF, sm_80 ELF, compute_90 PTX (zstd), "
            "sm_90 ELF, sm_75 ELF (lz4), compute_75 PTX (lz4), sm_100f ELF, sm_120 ELF, "
            "compute_120 PTX (zstd)");
  for (const auto& e : entries) {
    EXPECT_GE(e.payload.data(), all.data());
    EXPECT_LE(e.payload.data() + e.payload.size(), all.data() + all.size());
    EXPECT_FALSE(decompress_ok(e).empty());
  }
  EXPECT_EQ(fb::select_elf(entries, 86), 3u);
  EXPECT_EQ(fb::select_ptx(entries, 121), 10u);
}

TEST(FatbinFixtures, UnalignedBuffer) {
  // Headers are read with memcpy: a container at an odd address parses the same.
  const Bytes bytes = read_fixture("multi.fatbin");
  Bytes shifted(bytes.size() + 1);
  std::copy(bytes.begin(), bytes.end(), shifted.begin() + 1);
  std::vector<fb::Entry> entries;
  std::string error;
  ASSERT_TRUE(fb::parse(std::span(shifted).subspan(1), entries, error)) << error;
  ASSERT_EQ(entries.size(), 4u);
  EXPECT_EQ(fb::extent(shifted.data() + 1), bytes.size());
  expect_ptx(decompress_ok(entries[2]), "sm_90", "cudamux_fatbin_axpy");
}

// ---------------------------------------------------------------------------------------
// The wrapper and extent().

namespace {
struct Wrapper {  // __fatBinC_Wrapper_t
  std::int32_t magic;
  std::int32_t version;
  const void* data;
  void* filename_or_fatbins;
};
}  // namespace

TEST(FatbinWrapper, Unwrap) {
  const Bytes bytes = read_fixture("sm75.fatbin");
  Wrapper w{static_cast<std::int32_t>(fb::kWrapperMagic), 1, bytes.data(), nullptr};
  const void* container = nullptr;
  std::string error;
  ASSERT_TRUE(fb::unwrap(&w, container, error)) << error;
  EXPECT_EQ(container, bytes.data());
  EXPECT_EQ(fb::extent(container), bytes.size());

  w.version = 2;  // relocatable device code / the device-link stub
  container = nullptr;
  EXPECT_TRUE(fb::unwrap(&w, container, error)) << error;
  EXPECT_EQ(container, bytes.data());

  // A container is accepted as it is.
  container = nullptr;
  EXPECT_TRUE(fb::unwrap(bytes.data(), container, error)) << error;
  EXPECT_EQ(container, bytes.data());
}

TEST(FatbinWrapper, Rejects) {
  const Bytes bytes = read_fixture("sm75.fatbin");
  const Bytes cubin = read_fixture("axpy_sm_75.cubin");
  const auto expect_rejected = [](const void* wrapper, std::string_view needle) {
    const void* container = &needle;
    std::string error;
    EXPECT_FALSE(fb::unwrap(wrapper, container, error));
    EXPECT_EQ(container, nullptr);
    EXPECT_NE(error.find(needle), std::string::npos) << "error: " << error;
  };
  expect_rejected(nullptr, "null fat binary wrapper");
  Wrapper w{static_cast<std::int32_t>(fb::kWrapperMagic), 3, bytes.data(), nullptr};
  expect_rejected(&w, "version 3");
  w.version = 1;
  w.data = nullptr;
  expect_rejected(&w, "null data pointer");
  w.data = cubin.data();
  expect_rejected(&w, "magic 0x464c457f");
  w.magic = 0x12345678;
  w.data = bytes.data();
  expect_rejected(&w, "magic 0x12345678");
  expect_rejected(cubin.data(), "not a fat binary wrapper");
}

TEST(FatbinExtent, HeaderChecks) {
  Bytes h = read_fixture("sm75.fatbin");
  EXPECT_EQ(fb::extent(nullptr), std::nullopt);
  EXPECT_EQ(fb::extent(h.data()), 3792u);
  Bytes bad = h;
  put<std::uint32_t>(bad, 0, fb::kWrapperMagic);
  EXPECT_EQ(fb::extent(bad.data()), std::nullopt);
  bad = h;
  put<std::uint16_t>(bad, 4, 2);  // version
  EXPECT_EQ(fb::extent(bad.data()), std::nullopt);
  bad = h;
  put<std::uint16_t>(bad, 6, 8);  // header size below 16
  EXPECT_EQ(fb::extent(bad.data()), std::nullopt);
  bad = h;
  put<std::uint64_t>(bad, 8, fb::kMaxContainerSize);  // + 16 > the limit
  EXPECT_EQ(fb::extent(bad.data()), std::nullopt);
  put<std::uint64_t>(bad, 8, ~std::uint64_t{0});
  EXPECT_EQ(fb::extent(bad.data()), std::nullopt);
  put<std::uint64_t>(bad, 8, fb::kMaxContainerSize - 16);
  EXPECT_EQ(fb::extent(bad.data()), fb::kMaxContainerSize);
}

// ---------------------------------------------------------------------------------------
// Selection rules on made-up entry lists.

namespace {
fb::Entry make(fb::Kind kind, unsigned arch, fb::Variant variant = fb::Variant::none,
               std::uint64_t flags = fb::kFlag64Bit | fb::kFlagHostLinux) {
  fb::Entry e;
  e.kind = kind;
  e.arch = arch;
  e.variant = variant;
  e.flags = flags;
  return e;
}
}  // namespace

TEST(FatbinSelect, SassWithinMajorNeverForward) {
  const std::vector<fb::Entry> v = {make(fb::Kind::elf, 75), make(fb::Kind::elf, 80),
                                    make(fb::Kind::elf, 90), make(fb::Kind::ptx, 90)};
  EXPECT_EQ(fb::select_elf(v, 86), 1u);
  EXPECT_EQ(fb::select_elf(v, 87), 1u);
  EXPECT_EQ(fb::select_elf(v, 75), 0u);
  EXPECT_EQ(fb::select_elf(v, 72), std::nullopt);  // sm_75 is newer than 7.2
  EXPECT_EQ(fb::select_elf(v, 100), std::nullopt);
  EXPECT_EQ(fb::select_elf({}, 90), std::nullopt);
}

TEST(FatbinSelect, PtxWhenNoSass) {
  // An sm_90 device with only sm_75 SASS and compute_75 PTX: the PTX (JIT).
  const std::vector<fb::Entry> v = {make(fb::Kind::elf, 75), make(fb::Kind::ptx, 75)};
  EXPECT_EQ(fb::select_elf(v, 90), std::nullopt);
  EXPECT_EQ(fb::select_ptx(v, 90), 1u);
  EXPECT_EQ(fb::select_ptx(v, 70), std::nullopt);
  // The newest PTX not newer than the device.
  const std::vector<fb::Entry> w = {make(fb::Kind::ptx, 52), make(fb::Kind::ptx, 80),
                                    make(fb::Kind::ptx, 70), make(fb::Kind::ptx, 120)};
  EXPECT_EQ(fb::select_ptx(w, 90), 1u);
  EXPECT_EQ(fb::select_ptx(w, 75), 2u);
  EXPECT_EQ(fb::select_ptx(w, 60), 0u);
  EXPECT_EQ(fb::select_ptx(w, 120), 3u);
}

TEST(FatbinSelect, Variants) {
  using V = fb::Variant;
  const std::vector<fb::Entry> v = {make(fb::Kind::elf, 90), make(fb::Kind::elf, 90, V::specific),
                                    make(fb::Kind::elf, 100, V::family),
                                    make(fb::Kind::elf, 100, V::specific)};
  EXPECT_EQ(fb::select_elf(v, 90), 1u);  // on a tie the arch-specific build
  EXPECT_EQ(fb::select_elf(v, 100), 3u);
  EXPECT_EQ(fb::select_elf(v, 103), 2u);  // sm_100a is for 10.0 only, sm_100f for 10.x
  const std::vector<fb::Entry> p = {make(fb::Kind::ptx, 90, V::specific),
                                    make(fb::Kind::ptx, 100, V::family), make(fb::Kind::ptx, 80)};
  EXPECT_EQ(fb::select_ptx(p, 90), 0u);
  EXPECT_EQ(fb::select_ptx(p, 89), 2u);
  EXPECT_EQ(fb::select_ptx(p, 103), 1u);
  EXPECT_EQ(fb::select_ptx(p, 120), 2u);  // 'f' PTX stays in its family, 'a' on its arch
}

TEST(FatbinSelect, AsNvidiaDriverOnH100) {
  // Fat binaries of one kernel writing a different constant per entry (built with fatbinary
  // --image3), loaded by driver 580.159 on an H100 (CC 9.0); the constant it wrote tells which
  // entry the driver picked. select_elf, then select_ptx, must pick the same one.
  using K = fb::Kind;
  using V = fb::Variant;
  const auto pick = [](const std::vector<fb::Entry>& v) -> std::optional<std::size_t> {
    if (const auto i = fb::select_elf(v, 90)) return i;
    return fb::select_ptx(v, 90);
  };
  const fb::Entry elf90 = make(K::elf, 90), elf90a = make(K::elf, 90, V::specific);
  const fb::Entry ptx90 = make(K::ptx, 90), ptx90a = make(K::ptx, 90, V::specific);
  EXPECT_EQ(pick({elf90, elf90a}), 1u);
  EXPECT_EQ(pick({elf90a, elf90}), 0u);
  EXPECT_EQ(pick({make(K::elf, 80), make(K::ptx, 80)}), 1u);
  EXPECT_EQ(pick({elf90, ptx90}), 0u);
  EXPECT_EQ(pick({make(K::ptx, 80), ptx90, make(K::ptx, 75)}), 1u);
  EXPECT_EQ(pick({ptx90, ptx90a}), 1u);
  EXPECT_EQ(pick({ptx90a, ptx90}), 0u);
  EXPECT_EQ(pick({make(K::elf, 89), make(K::ptx, 80)}), 1u);
  EXPECT_EQ(pick({elf90, make(K::elf, 100, V::family)}), 0u);
  EXPECT_EQ(pick({make(K::elf, 75), make(K::elf, 80), make(K::elf, 86)}), std::nullopt);
  EXPECT_EQ(pick({make(K::ptx, 100)}), std::nullopt);  // CUDA_ERROR_NO_BINARY_FOR_GPU
  EXPECT_EQ(pick({elf90a, ptx90}), 0u);
  EXPECT_EQ(pick({ptx90a, make(K::elf, 89)}), 0u);
  EXPECT_EQ(pick({make(K::elf, 80), make(K::ptx, 89), make(K::ptx, 75)}), 1u);
  // The 64-bit flag cleared on the ELF, then on both: the driver still runs the ELF.
  const fb::Entry elf90_32 = make(K::elf, 90, V::none, fb::kFlagHostLinux);
  EXPECT_EQ(pick({elf90_32, ptx90}), 0u);
  EXPECT_EQ(pick({elf90_32, make(K::ptx, 90, V::none, fb::kFlagHostLinux)}), 0u);
  // An unknown kind (0x40) where the ELF was: the PTX.
  EXPECT_EQ(pick({make(static_cast<K>(0x40), 90), ptx90}), 1u);
}

TEST(FatbinSelect, PtxStandsInForSassOnlyWhereAGpuRunsTheSass) {
  using K = fb::Kind;
  using V = fb::Variant;
  // CuPy's precompiled CUB: SASS sm_75..sm_120 and PTX for compute_120 only.
  const std::vector<fb::Entry> cub = {make(K::elf, 75), make(K::elf, 80), make(K::elf, 90),
                                      make(K::elf, 120, V::family), make(K::ptx, 120)};
  EXPECT_EQ(fb::select_ptx(cub, 90), std::nullopt);
  EXPECT_EQ(fb::select_ptx_for_sass(cub, 90), 4u);
  EXPECT_EQ(fb::select_ptx_for_sass(cub, 86), 4u);  // the sm_80 SASS runs on 8.6
  // No SASS a GPU of CC 7.0 or 10.0 would run: the driver refuses, so does the stand-in.
  EXPECT_EQ(fb::select_ptx_for_sass(cub, 70), std::nullopt);
  EXPECT_EQ(fb::select_ptx_for_sass(cub, 100), std::nullopt);
  // A PTX that fits is the driver's own choice: no stand-in.
  EXPECT_EQ(fb::select_ptx_for_sass({make(K::elf, 90), make(K::ptx, 80)}, 90), std::nullopt);
  // The closest newer arch, and among equals the most portable PTX.
  EXPECT_EQ(fb::select_ptx_for_sass({make(K::elf, 90), make(K::ptx, 120), make(K::ptx, 100)}, 90),
            2u);
  EXPECT_EQ(fb::select_ptx_for_sass({make(K::elf, 90), make(K::ptx, 100, V::specific),
                                     make(K::ptx, 100, V::family), make(K::ptx, 100)},
                                    90),
            3u);
  EXPECT_EQ(fb::select_ptx_for_sass({make(K::elf, 90), make(K::ptx, 100, V::specific)}, 90), 1u);
}

TEST(FatbinSelect, SkipsOtherKindsIgnoresFlags) {
  // NVIDIA's driver (580, H100) loads an ELF or PTX entry whose 64-bit flag is clear, and
  // skips an entry of an unknown kind for the next one that fits.
  const std::vector<fb::Entry> v = {make(fb::Kind::nvvm, 80), make(static_cast<fb::Kind>(0x40), 80),
                                    make(fb::Kind::elf, 80, fb::Variant::none, fb::kFlagHostLinux)};
  EXPECT_EQ(fb::select_elf(v, 80), 2u);
  EXPECT_EQ(fb::select_ptx(v, 80), std::nullopt);
  EXPECT_EQ(fb::describe(v), "lto_80 NVVM IR, sm_80 kind 0x40, sm_80 ELF (32-bit)");
}

TEST(FatbinMisc, CubinArch) {
  EXPECT_EQ(fb::cubin_arch(0x6004b04, 8), 75u);  // CUDA 13 ptxas, ABI version 8
  EXPECT_EQ(fb::cubin_arch(0x6006402, 8), 100u);
  EXPECT_EQ(fb::cubin_arch(0x6007902, 8), 121u);
  EXPECT_EQ(fb::cubin_arch(0x00500550, 7), 80u);  // older ABI: EF_CUDA_SM in the low byte
  EXPECT_EQ(fb::cubin_arch(0x005a0d5a, 7), 90u);  // sm_90a (EF_CUDA_ACCELERATORS 0x800)
}

// ---------------------------------------------------------------------------------------
// Hand-built containers: layouts nvcc does not produce (but could).

TEST(FatbinBuilt, EmptyContainerAndInput) {
  const Bytes empty = build({});
  EXPECT_TRUE(parse_ok(empty).empty());
  EXPECT_EQ(fb::extent(empty.data()), 16u);
  expect_parse_error({}, "empty fat binary");
}

TEST(FatbinBuilt, UnknownKindAndCompression) {
  Spec odd;
  odd.kind = 0x40;
  odd.payload = bytes_of("abcdefgh");
  Spec unknown;
  unknown.kind = 2;
  unknown.flags = 0x11 | 0x1000;  // a "compressed" bit without a known codec
  unknown.payload = bytes_of("12345678");
  unknown.compressed_size = 8;
  unknown.uncompressed_size = 100;
  const Bytes bytes = build({odd, unknown});
  const auto entries = parse_ok(bytes);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(static_cast<std::uint16_t>(entries[0].kind), 0x40);
  EXPECT_EQ(decompress_ok(entries[0]), bytes_of("abcdefgh"));
  EXPECT_EQ(entries[1].compression, fb::Compression::unknown);
  expect_decompress_error(entries[1], "unknown method");
  EXPECT_EQ(fb::describe(entries), "sm_75 kind 0x40, sm_75 ELF (unknown compression)");
}

TEST(FatbinBuilt, PtxWithoutNulAndWithIdentifier) {
  Spec ptx;
  ptx.kind = 1;
  ptx.payload = bytes_of(".version 9.0\n.target sm_75\n");  // 27 bytes, no NUL: padded with 0
  ptx.identifier = "dir/kernel.cu";
  ptx.options = "-O3";
  Spec exact;
  exact.kind = 1;
  exact.payload = bytes_of(".version 9.0\n.target sm_80\n.....");  // 32 bytes: no padding
  const auto bytes = build({ptx, exact});
  const auto entries = parse_ok(bytes);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].identifier, "dir/kernel.cu");
  EXPECT_EQ(entries[0].options, "-O3");
  Bytes want = ptx.payload;
  want.push_back(std::byte{0});
  EXPECT_EQ(decompress_ok(entries[0]), want);
  want = exact.payload;
  want.push_back(std::byte{0});
  EXPECT_EQ(decompress_ok(entries[1]), want);  // a NUL appended
}

TEST(FatbinBuilt, ZstdFrameWithoutContentSize) {
  const std::string_view ptx(".version 9.0\n.target sm_75\n\0", 28);
  Spec s;
  s.kind = 1;
  s.flags = 0x8011;
  s.payload = zstd_raw_frame(ptx);
  s.compressed_size = static_cast<std::uint32_t>(s.payload.size());
  s.uncompressed_size = ptx.size();
  Bytes bytes = build({s});
  auto entries = parse_ok(bytes);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(decompress_ok(entries[0]), bytes_of(ptx));
  // Declared too large: decoding yields fewer bytes.
  put<std::uint64_t>(bytes, 16 + 0x38, ptx.size() + 1);
  entries = parse_ok(bytes);
  expect_decompress_error(entries[0], "decodes to 28 bytes, the entry header declares 29");
  // Declared beyond what 37 input bytes can produce: refused before allocating.
  put<std::uint64_t>(bytes, 16 + 0x38, std::uint64_t{1} << 29);
  entries = parse_ok(bytes);
  expect_decompress_error(entries[0], "cannot expand");
}

// ---------------------------------------------------------------------------------------
// Damaged input: every size field, every truncation, corrupt streams.

TEST(FatbinDamage, EveryTruncationFailsOrIsAPrefix) {
  // Decided behaviour: parse() succeeds on a truncated buffer only where it ends exactly
  // between two containers, and then yields exactly the entries of those containers.
  for (const char* name : kFixtures) {
    const Bytes bytes = read_fixture(name);
    const auto full = parse_ok(bytes);
    const auto cuts = container_boundaries(bytes);
    ASSERT_EQ(cuts.back(), bytes.size()) << name;
    for (std::size_t n = 0; n < bytes.size(); ++n) {
      // A copy of exactly n bytes, so that ASan catches any read past the end.
      const Bytes prefix(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
      std::vector<fb::Entry> entries;
      std::string error;
      const bool ok = fb::parse(prefix, entries, error);
      const bool at_cut = n > 0 && std::find(cuts.begin(), cuts.end(), n) != cuts.end();
      ASSERT_EQ(ok, at_cut) << name << " truncated to " << n << ": " << error;
      if (ok) {
        ASSERT_LE(entries.size(), full.size());
        for (std::size_t i = 0; i < entries.size(); ++i) {
          EXPECT_EQ(entries[i].offset, full[i].offset);
          EXPECT_EQ(entries[i].arch, full[i].arch);
        }
        if (n < bytes.size()) {
          EXPECT_LT(entries.size(), full.size());
        }
      } else {
        EXPECT_FALSE(error.empty());
        EXPECT_TRUE(entries.empty());
      }
    }
  }
}

TEST(FatbinDamage, ContainerHeaderFields) {
  const Bytes good = read_fixture("sm75.fatbin");
  Bytes b = good;
  put<std::uint32_t>(b, 0, 0xdeadbeef);
  expect_parse_error(b, "container 0 (offset 0x0): bad magic 0xdeadbeef, expected 0xba55ed50");
  put<std::uint32_t>(b, 0, fb::kWrapperMagic);
  expect_parse_error(b, "unwrap it first");
  put<std::uint32_t>(b, 0, fb::kOldStyleMagic);
  expect_parse_error(b, "old-style");
  b = good;
  put<std::uint16_t>(b, 4, 2);
  expect_parse_error(b, "container version 2");
  b = good;
  put<std::uint16_t>(b, 6, 0);
  expect_parse_error(b, "header size 0 is below the minimum of 16");
  b = good;
  put<std::uint64_t>(b, 8, 3776 + 8);
  expect_parse_error(b, "declares 16 + 3784 bytes (header + entries), only 3792 are left");
  put<std::uint64_t>(b, 8, ~std::uint64_t{0});
  expect_parse_error(b, "only 3792 are left");
  b = good;
  put<std::uint64_t>(b, 8, 3776 - 8);  // the PTX entry now overhangs the container
  expect_parse_error(b, "container 0, entry 1 (header at offset 0xcf8): payload size 392 extends");
  b = good;
  put<std::uint16_t>(b, 6, 24);  // entries start 8 bytes later: garbage entry header
  expect_parse_error(b, "declares 24 + 3776 bytes");
  // Trailing bytes after the last container.
  b = good;
  b.resize(b.size() + 8);
  expect_parse_error(b, "container 1 (offset 0xed0): 8 bytes left, too few for a 16-byte");
  b.resize(good.size() + 16);
  expect_parse_error(b, "container 1 (offset 0xed0): bad magic 0x0");
}

TEST(FatbinDamage, EntryHeaderFields) {
  const Bytes good = read_fixture("sm75.fatbin");
  const std::size_t e = kSm75Ptx;
  const std::string at = "container 0, entry 1 (header at offset 0xcf8): ";
  Bytes b = good;
  put<std::uint32_t>(b, e + 0x04, 0);
  expect_parse_error(b, at + "header size 0 is below the minimum of 64");
  put<std::uint32_t>(b, e + 0x04, 63);
  expect_parse_error(b, "header size 63 is below");
  put<std::uint32_t>(b, e + 0x04, 473);
  expect_parse_error(b, at + "header size 473 extends past the container end (472 bytes left)");
  put<std::uint32_t>(b, e + 0x04, 0xffffffff);
  expect_parse_error(b, "extends past the container end");
  b = good;
  put<std::uint64_t>(b, e + 0x08, 400);
  expect_parse_error(b, at + "payload size 400 extends past the container end (392 bytes left");
  put<std::uint64_t>(b, e + 0x08, ~std::uint64_t{0});
  expect_parse_error(b, "payload size 18446744073709551615 extends");
  put<std::uint64_t>(b, e + 0x08, 384);
  expect_parse_error(b, at + "compressed size 392 does not fit the padded payload size 384");
  b = good;
  put<std::uint32_t>(b, e + 0x10, 393);
  expect_parse_error(b, at + "compressed size 393 does not fit the padded payload size 392");
  put<std::uint32_t>(b, e + 0x10, 0);
  expect_parse_error(b, "compressed size 0 does not fit");
  b = good;
  put<std::uint64_t>(b, e + 0x38, 0);
  expect_parse_error(b, at + "uncompressed size 0 of a compressed payload");
  put<std::uint64_t>(b, e + 0x38, fb::kMaxUncompressedSize + 1);
  expect_parse_error(b, "uncompressed size 1073741825 exceeds the limit of 1073741824");
  // The identifier and options must lie in the header's extension.
  b = good;
  put<std::uint32_t>(b, e + 0x24, 1);  // identifier size 1 at offset 0
  expect_parse_error(b, at + "identifier (offset 0, size 1) lies outside the header extension");
  put<std::uint32_t>(b, e + 0x20, 72);
  put<std::uint32_t>(b, e + 0x24, 9);
  expect_parse_error(b, "identifier (offset 72, size 9)");
  put<std::uint32_t>(b, e + 0x24, 8);
  EXPECT_EQ(parse_ok(b).size(), 2u);
  b = good;
  put<std::uint32_t>(b, e + 0x14, 76);  // the descriptor's 8 bytes overhang the 80
  expect_parse_error(b, at + "options descriptor at 76 lies outside");
  put<std::uint32_t>(b, e + 0x14, 8);
  expect_parse_error(b, "options descriptor at 8");
  b = good;
  put<std::uint32_t>(b, e + 0x44, 9);  // options size 9 at offset 72 in an 80-byte header
  expect_parse_error(b, at + "options (offset 72, size 9) lie outside");
  put<std::uint32_t>(b, e + 0x44, 8);
  EXPECT_EQ(parse_ok(b).size(), 2u);
  // The ELF entry: header size 0 is the first thing noticed.
  b = good;
  put<std::uint32_t>(b, kSm75Elf + 0x04, 0);
  expect_parse_error(b, "container 0, entry 0 (header at offset 0x10): header size 0");
}

TEST(FatbinDamage, DeclaredSizesAgainstStreams) {
  for (const char* name : {"sm75.fatbin", "lz4.fatbin"}) {
    const Bytes good = read_fixture(name);
    const auto entries = parse_ok(good);
    const std::size_t ptx_at = entries[1].offset;
    const bool lz4 = entries[1].compression == fb::Compression::lz4;
    Bytes b = good;
    put<std::uint64_t>(b, ptx_at + 0x38, 950);
    auto damaged = parse_ok(b);
    expect_decompress_error(damaged[1], lz4 ? "LZ4 block decodes to 949 bytes, the entry header "
                                              "declares 950"
                                            : "zstd frame declares 949 bytes, the entry header "
                                              "declares 950");
    put<std::uint64_t>(b, ptx_at + 0x38, 948);
    damaged = parse_ok(b);
    expect_decompress_error(damaged[1], lz4 ? "corrupt LZ4 block" : "zstd frame declares 949");
    put<std::uint64_t>(b, ptx_at + 0x38, 1u << 30);
    damaged = parse_ok(b);
    expect_decompress_error(damaged[1], lz4 ? "cannot expand" : "zstd frame declares 949");
  }
}

TEST(FatbinDamage, CorruptStreams) {
  for (const char* name : {"sm75.fatbin", "lz4.fatbin", "debug.fatbin"}) {
    const Bytes good = read_fixture(name);
    for (const auto& e : parse_ok(good)) {
      if (e.compression == fb::Compression::none) continue;
      // Every truncation of the stream fails (the payload span shortened).
      for (std::size_t n = 0; n < e.payload.size(); ++n) {
        const Bytes part(e.payload.begin(), e.payload.begin() + static_cast<std::ptrdiff_t>(n));
        fb::Entry cut = e;
        cut.payload = part;
        Bytes out;
        std::string error;
        EXPECT_FALSE(fb::decompress(cut, out, error)) << name << " stream cut to " << n;
        EXPECT_TRUE(out.empty());
      }
      // Flipped bytes: an error, or (no checksum in these streams) exactly the declared size.
      Bytes stream(e.payload.begin(), e.payload.end());
      for (std::size_t i = 0; i < stream.size(); ++i) {
        for (const std::uint8_t x : {0x01, 0x80, 0xff}) {
          stream[i] ^= std::byte{x};
          fb::Entry flipped = e;
          flipped.payload = stream;
          Bytes out;
          std::string error;
          if (fb::decompress(flipped, out, error)) {
            if (e.kind == fb::Kind::ptx) {
              EXPECT_LE(out.size(), e.uncompressed_size + 1);  // cut at a NUL, or one added
            } else {
              EXPECT_EQ(out.size(), e.uncompressed_size);
            }
          } else {
            EXPECT_FALSE(error.empty());
          }
          stream[i] ^= std::byte{x};
        }
      }
    }
  }
  // A zstd payload whose magic is gone.
  Bytes b = read_fixture("sm75.fatbin");
  b[kSm75Ptx + 80] = std::byte{0};
  expect_decompress_error(parse_ok(b)[1], "payload is not a zstd frame (392 bytes)");
  // A zstd frame that does not end where the compressed size says.
  b = read_fixture("sm75.fatbin");
  put<std::uint32_t>(b, kSm75Ptx + 0x10, 391);
  expect_decompress_error(parse_ok(b)[1], "corrupt zstd stream");
}

TEST(FatbinDamage, HeaderBitFlipsNeverCrash) {
  // Every byte of every header of two fixtures, xor'ed with a few patterns: parse succeeds or
  // fails cleanly, and whatever parses decompresses or fails cleanly (ASan/UBSan builds
  // check the "cleanly").
  for (const char* name : {"sm75.fatbin", "debug.fatbin", "lz4.fatbin", "blackwell.fatbin"}) {
    const Bytes good = read_fixture(name);
    std::vector<std::size_t> header_bytes;
    for (std::size_t i = 0; i < 16; ++i) header_bytes.push_back(i);
    for (const auto& e : parse_ok(good)) {
      for (std::size_t i = 0; i < e.header.size(); ++i) header_bytes.push_back(e.offset + i);
    }
    for (const std::size_t i : header_bytes) {
      for (const std::uint8_t x : {0x01, 0x04, 0x10, 0x20, 0x80, 0xff}) {
        Bytes b = good;
        b[i] ^= std::byte{x};
        std::vector<fb::Entry> entries;
        std::string error;
        if (!fb::parse(b, entries, error)) {
          EXPECT_FALSE(error.empty());
          continue;
        }
        for (const auto& e : entries) {
          EXPECT_GE(e.payload.data(), b.data());
          EXPECT_LE(e.payload.data() + e.payload.size(), b.data() + b.size());
          EXPECT_LE(e.header.data() + e.header.size(), e.payload.data());
          Bytes out;
          if (!fb::decompress(e, out, error)) {
            EXPECT_FALSE(error.empty());
          }
        }
        (void)fb::describe(entries);
        (void)fb::select_elf(entries, 86);
        (void)fb::select_ptx(entries, 86);
      }
    }
  }
}
