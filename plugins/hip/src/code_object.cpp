#include "code_object.hpp"

#include <elf.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace cudamux::hip {
namespace {

constexpr char kBundleMagic[] = "__CLANG_OFFLOAD_BUNDLE__";
constexpr std::size_t kBundleMagicLen = sizeof kBundleMagic - 1;
constexpr unsigned kNtAmdgpuMetadata = 32;
// cuModuleLoadData gets no size: a header claiming more than this is corrupt, not read.
constexpr std::size_t kMaxImageBytes = std::size_t{1} << 30;

template <class T>
T load(const unsigned char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

bool is_amdgpu_elf(const unsigned char* p, std::string& why) {
  if (std::memcmp(p, ELFMAG, SELFMAG) != 0) {
    why = "not an ELF file";
    return false;
  }
  if (p[EI_CLASS] != ELFCLASS64 || p[EI_DATA] != ELFDATA2LSB) {
    why = "not a 64-bit little-endian ELF";
    return false;
  }
  const auto* h = reinterpret_cast<const unsigned char*>(p);
  const auto machine = load<std::uint16_t>(h + offsetof(Elf64_Ehdr, e_machine));
  if (machine != kEmAmdgpu) {
    why = "ELF for machine " + std::to_string(machine) + ", not AMDGPU (224)";
    return false;
  }
  return true;
}

std::size_t elf_size(const unsigned char* p) {
  Elf64_Ehdr h;
  std::memcpy(&h, p, sizeof h);
  // Saturating: a corrupt header gives a huge size, which image_size rejects.
  auto span_end = [](std::uint64_t off, std::uint64_t n, std::uint64_t entry) -> std::size_t {
    if (off > kMaxImageBytes || n * entry > kMaxImageBytes) return SIZE_MAX;
    return off + n * entry;
  };
  std::size_t end = sizeof h;
  end = std::max(end, span_end(h.e_phoff, h.e_phnum, h.e_phentsize));
  end = std::max(end, span_end(h.e_shoff, h.e_shnum, h.e_shentsize));
  return end;  // sections' contents lie before the section header table (lld, clang)
}

struct BundleEntry {
  std::uint64_t offset, size;
  std::string id;
};

// Reads the bundle's entry table. The header is trusted only as far as it is consistent.
// `limit`: bytes known to be readable (SIZE_MAX when the caller does not know).
std::optional<std::vector<BundleEntry>> bundle_entries(const unsigned char* p, std::size_t limit,
                                                       std::string& why) {
  if (limit < kBundleMagicLen + 8) {
    why = "truncated offload bundle";
    return std::nullopt;
  }
  const auto n = load<std::uint64_t>(p + kBundleMagicLen);
  if (n == 0 || n > 1024) {
    why = "offload bundle with " + std::to_string(n) + " entries";
    return std::nullopt;
  }
  std::vector<BundleEntry> out;
  const unsigned char* q = p + kBundleMagicLen + 8;
  for (std::uint64_t i = 0; i < n; ++i) {
    if (static_cast<std::size_t>(q - p) + 24 > limit) {
      why = "truncated offload bundle";
      return std::nullopt;
    }
    BundleEntry e{load<std::uint64_t>(q), load<std::uint64_t>(q + 8), {}};
    const auto len = load<std::uint64_t>(q + 16);
    if (len > 4096 || static_cast<std::size_t>(q - p) + 24 + len > limit) {
      why = "offload bundle entry id too long";
      return std::nullopt;
    }
    e.id.assign(reinterpret_cast<const char*>(q + 24), len);
    q += 24 + len;
    out.push_back(std::move(e));
  }
  return out;
}

// --- a MessagePack reader for the metadata note (maps, arrays, strings, ints, bools) ---
struct Msgpack {
  const unsigned char* p;
  const unsigned char* end;
  bool ok = true;

  bool need(std::size_t n) {
    if (static_cast<std::size_t>(end - p) < n) ok = false;
    return ok;
  }
  template <class T>
  T be(std::size_t n) {
    T v = 0;
    if (!need(n)) return 0;
    for (std::size_t i = 0; i < n; ++i) v = static_cast<T>((v << 8) | p[i]);
    p += n;
    return v;
  }
  std::uint8_t byte() { return need(1) ? *p++ : 0; }

  // Type tests without consuming.
  [[nodiscard]] bool at_map() const {
    return ok && p < end && ((*p & 0xf0) == 0x80 || *p == 0xde || *p == 0xdf);
  }
  [[nodiscard]] bool at_array() const {
    return ok && p < end && ((*p & 0xf0) == 0x90 || *p == 0xdc || *p == 0xdd);
  }
  [[nodiscard]] bool at_string() const {
    return ok && p < end && ((*p & 0xe0) == 0xa0 || *p == 0xd9 || *p == 0xda || *p == 0xdb);
  }
  std::size_t map_size() {
    const std::uint8_t b = byte();
    if ((b & 0xf0) == 0x80) return b & 0x0f;
    if (b == 0xde) return be<std::size_t>(2);
    if (b == 0xdf) return be<std::size_t>(4);
    ok = false;
    return 0;
  }
  std::size_t array_size() {
    const std::uint8_t b = byte();
    if ((b & 0xf0) == 0x90) return b & 0x0f;
    if (b == 0xdc) return be<std::size_t>(2);
    if (b == 0xdd) return be<std::size_t>(4);
    ok = false;
    return 0;
  }
  std::string_view string() {
    const std::uint8_t b = byte();
    std::size_t n = 0;
    if ((b & 0xe0) == 0xa0)
      n = b & 0x1f;
    else if (b == 0xd9)
      n = be<std::size_t>(1);
    else if (b == 0xda)
      n = be<std::size_t>(2);
    else if (b == 0xdb)
      n = be<std::size_t>(4);
    else
      ok = false;
    if (!ok || !need(n)) return {};
    std::string_view s(reinterpret_cast<const char*>(p), n);
    p += n;
    return s;
  }
  std::int64_t integer() {
    const std::uint8_t b = byte();
    if (b <= 0x7f) return b;
    if (b >= 0xe0) return static_cast<std::int8_t>(b);
    switch (b) {
      case 0xcc:
        return be<std::uint64_t>(1);
      case 0xcd:
        return be<std::uint64_t>(2);
      case 0xce:
        return be<std::uint64_t>(4);
      case 0xcf:
        return static_cast<std::int64_t>(be<std::uint64_t>(8));
      case 0xd0:
        return static_cast<std::int8_t>(be<std::uint64_t>(1));
      case 0xd1:
        return static_cast<std::int16_t>(be<std::uint64_t>(2));
      case 0xd2:
        return static_cast<std::int32_t>(be<std::uint64_t>(4));
      case 0xd3:
        return static_cast<std::int64_t>(be<std::uint64_t>(8));
      default:
        ok = false;
        return 0;
    }
  }
  void skip(int depth = 0) {
    if (!ok || depth > 32 || !need(1)) {
      ok = false;
      return;
    }
    const std::uint8_t b = *p;
    if (at_map()) {
      for (std::size_t n = map_size(), i = 0; ok && i < 2 * n; ++i) skip(depth + 1);
    } else if (at_array()) {
      for (std::size_t n = array_size(), i = 0; ok && i < n; ++i) skip(depth + 1);
    } else if (at_string()) {
      (void)string();
    } else if (b == 0xc0 || b == 0xc2 || b == 0xc3) {
      ++p;
    } else if (b == 0xca) {
      p += need(5) ? 5 : 0;
    } else if (b == 0xcb) {
      p += need(9) ? 9 : 0;
    } else if (b == 0xc4 || b == 0xc5 || b == 0xc6) {
      ++p;
      const std::size_t n = be<std::size_t>(b == 0xc4 ? 1 : b == 0xc5 ? 2 : 4);
      if (need(n)) p += n;
    } else {
      (void)integer();
    }
  }
};

KernelArg read_arg(Msgpack& m) {
  KernelArg a;
  for (std::size_t n = m.map_size(), i = 0; m.ok && i < n; ++i) {
    const std::string_view k = m.string();
    if (k == ".offset")
      a.offset = static_cast<std::size_t>(m.integer());
    else if (k == ".size")
      a.size = static_cast<std::size_t>(m.integer());
    else if (k == ".value_kind")
      a.value_kind = std::string(m.string());
    else
      m.skip();
  }
  return a;
}

KernelInfo read_kernel(Msgpack& m) {
  KernelInfo k;
  for (std::size_t n = m.map_size(), i = 0; m.ok && i < n; ++i) {
    const std::string_view key = m.string();
    if (key == ".name") {
      k.name = std::string(m.string());
    } else if (key == ".args") {
      for (std::size_t c = m.array_size(), j = 0; m.ok && j < c; ++j) {
        KernelArg a = read_arg(m);
        // Hidden arguments (dispatch pointers, offsets) are appended by the runtime.
        if (!a.value_kind.starts_with("hidden_")) k.args.push_back(std::move(a));
      }
    } else if (key == ".kernarg_segment_size") {
      k.kernarg_size = static_cast<std::size_t>(m.integer());
    } else if (key == ".group_segment_fixed_size") {
      k.group_segment_size = static_cast<int>(m.integer());
    } else if (key == ".private_segment_fixed_size") {
      k.private_segment_size = static_cast<int>(m.integer());
    } else if (key == ".sgpr_count") {
      k.sgpr_count = static_cast<int>(m.integer());
    } else if (key == ".vgpr_count") {
      k.vgpr_count = static_cast<int>(m.integer());
    } else if (key == ".max_flat_workgroup_size") {
      k.max_flat_workgroup_size = static_cast<int>(m.integer());
    } else if (key == ".wavefront_size") {
      k.wavefront_size = static_cast<int>(m.integer());
    } else {
      m.skip();
    }
  }
  return k;
}

bool read_metadata(const unsigned char* desc, std::size_t size, CodeObject& out, std::string& why) {
  Msgpack m{desc, desc + size};
  if (!m.at_map()) {
    why = "AMDGPU metadata is not a MessagePack map (code object v2 or older?)";
    return false;
  }
  for (std::size_t n = m.map_size(), i = 0; m.ok && i < n; ++i) {
    const std::string_view key = m.string();
    if (key == "amdhsa.kernels" && m.at_array()) {
      for (std::size_t c = m.array_size(), j = 0; m.ok && j < c; ++j)
        out.kernels.push_back(read_kernel(m));
    } else if (key == "amdhsa.target" && m.at_string()) {
      out.target = std::string(m.string());
    } else {
      m.skip();
    }
  }
  if (!m.ok) why = "malformed AMDGPU metadata";
  return m.ok;
}

std::optional<CodeObject> parse_elf(const unsigned char* p, std::size_t size, std::string& why) {
  if (size < sizeof(Elf64_Ehdr) || !is_amdgpu_elf(p, why)) {
    if (why.empty()) why = "truncated ELF header";
    return std::nullopt;
  }
  Elf64_Ehdr h;
  std::memcpy(&h, p, sizeof h);
  CodeObject co;
  co.size = size;
  if (h.e_shentsize != sizeof(Elf64_Shdr) || h.e_shoff > size ||
      std::size_t{h.e_shnum} * sizeof(Elf64_Shdr) > size - h.e_shoff) {
    why = "ELF section table out of bounds";
    return std::nullopt;
  }
  bool found = false;
  for (unsigned i = 0; i < h.e_shnum; ++i) {
    Elf64_Shdr s;
    std::memcpy(&s, p + h.e_shoff + i * sizeof s, sizeof s);
    if (s.sh_type != SHT_NOTE) continue;
    if (s.sh_offset > size || s.sh_size > size - s.sh_offset) {
      why = "ELF note section out of bounds";
      return std::nullopt;
    }
    const unsigned char* q = p + s.sh_offset;
    const unsigned char* end = q + s.sh_size;
    while (static_cast<std::size_t>(end - q) >= sizeof(Elf64_Nhdr)) {
      Elf64_Nhdr n;
      std::memcpy(&n, q, sizeof n);
      const std::size_t name_len = (std::size_t{n.n_namesz} + 3u) & ~std::size_t{3};
      const std::size_t desc_len = (std::size_t{n.n_descsz} + 3u) & ~std::size_t{3};
      const auto left = static_cast<std::size_t>(end - q) - sizeof n;
      if (name_len > left || n.n_descsz > left - name_len) break;
      const unsigned char* desc = q + sizeof n + name_len;
      if (n.n_type == kNtAmdgpuMetadata && n.n_namesz >= 6 &&
          std::memcmp(q + sizeof n, "AMDGPU", 6) == 0) {
        if (!read_metadata(desc, n.n_descsz, co, why)) return std::nullopt;
        found = true;
      }
      q = desc + std::min<std::size_t>(desc_len, static_cast<std::size_t>(end - desc));
    }
  }
  if (!found) {
    why = "no AMDGPU metadata note (not a code object v3+)";
    return std::nullopt;
  }
  return co;
}

struct Symbol {
  std::string name;
  std::uint64_t value;
  unsigned char type;
};

// The symbols of the first SHT_SYMTAB (else SHT_DYNSYM) section, bounds-checked.
std::vector<Symbol> symbols(const unsigned char* p, std::size_t size) {
  std::vector<Symbol> out;
  Elf64_Ehdr h;
  std::memcpy(&h, p, sizeof h);
  if (h.e_shentsize != sizeof(Elf64_Shdr) || h.e_shoff > size ||
      std::size_t{h.e_shnum} * sizeof(Elf64_Shdr) > size - h.e_shoff)
    return out;
  auto section = [&](unsigned i) {
    Elf64_Shdr s;
    std::memcpy(&s, p + h.e_shoff + i * sizeof s, sizeof s);
    return s;
  };
  for (const unsigned type : {SHT_SYMTAB, SHT_DYNSYM}) {
    for (unsigned i = 0; i < h.e_shnum; ++i) {
      const Elf64_Shdr s = section(i);
      if (s.sh_type != type || s.sh_link >= h.e_shnum || s.sh_offset > size ||
          s.sh_size > size - s.sh_offset)
        continue;
      const Elf64_Shdr str = section(s.sh_link);
      if (str.sh_offset > size || str.sh_size > size - str.sh_offset) continue;
      for (std::size_t off = 0; off + sizeof(Elf64_Sym) <= s.sh_size; off += sizeof(Elf64_Sym)) {
        Elf64_Sym sym;
        std::memcpy(&sym, p + s.sh_offset + off, sizeof sym);
        if (sym.st_name >= str.sh_size) continue;
        const char* name = reinterpret_cast<const char*>(p + str.sh_offset + sym.st_name);
        out.push_back({std::string(name, strnlen(name, str.sh_size - sym.st_name)), sym.st_value,
                       static_cast<unsigned char>(ELF64_ST_TYPE(sym.st_info))});
      }
      return out;
    }
  }
  return out;
}

}  // namespace

std::optional<std::string> hiprtc_lowered_name(const unsigned char* p, std::size_t size,
                                               std::size_t n) {
  std::string why;
  if (size < sizeof(Elf64_Ehdr) || !is_amdgpu_elf(p, why)) return std::nullopt;
  const auto syms = symbols(p, size);
  const std::string holder = "__hiprtc_" + std::to_string(n);
  const auto it =
      std::find_if(syms.begin(), syms.end(), [&](const Symbol& s) { return s.name == holder; });
  if (it == syms.end()) return std::nullopt;
  Elf64_Ehdr h;
  std::memcpy(&h, p, sizeof h);
  for (unsigned i = 0; i < h.e_shnum; ++i) {
    Elf64_Shdr s;
    std::memcpy(&s, p + h.e_shoff + i * sizeof s, sizeof s);
    if (s.sh_type != SHT_RELA || s.sh_offset > size || s.sh_size > size - s.sh_offset) continue;
    for (std::size_t off = 0; off + sizeof(Elf64_Rela) <= s.sh_size; off += sizeof(Elf64_Rela)) {
      Elf64_Rela r;
      std::memcpy(&r, p + s.sh_offset + off, sizeof r);
      if (r.r_offset != it->value) continue;
      // RELATIVE: the addend is the target's address (hipRTC's code objects are shared
      // objects loaded at 0).
      const auto target = static_cast<std::uint64_t>(r.r_addend);
      for (const auto& sym : syms) {
        if (sym.value == target && (sym.type == STT_FUNC || sym.type == STT_OBJECT) &&
            !sym.name.ends_with(".kd") && !sym.name.starts_with("__hiprtc_"))
          return sym.name;
      }
    }
  }
  return std::nullopt;
}

std::optional<std::size_t> image_size(const void* image, std::string& why) {
  if (image == nullptr) {
    why = "null image";
    return std::nullopt;
  }
  const auto* p = static_cast<const unsigned char*>(image);
  if (std::memcmp(p, kBundleMagic, 4) == 0 && std::memcmp(p, kBundleMagic, kBundleMagicLen) == 0) {
    auto entries = bundle_entries(p, SIZE_MAX, why);
    if (!entries) return std::nullopt;
    std::size_t end = 0;
    for (const auto& e : *entries) {
      if (e.offset > kMaxImageBytes || e.size > kMaxImageBytes - e.offset) {
        why = "offload bundle entry out of range";
        return std::nullopt;
      }
      end = std::max<std::size_t>(end, e.offset + e.size);
    }
    return end;
  }
  if (!is_amdgpu_elf(p, why)) return std::nullopt;
  const std::size_t size = elf_size(p);
  if (size > kMaxImageBytes) {
    why = "ELF header describes an implausible size (" + std::to_string(size) + " bytes)";
    return std::nullopt;
  }
  return size;
}

std::optional<CodeObject> parse_code_object(const unsigned char* bytes, std::size_t size,
                                            std::string& why) {
  if (size >= kBundleMagicLen && std::memcmp(bytes, kBundleMagic, kBundleMagicLen) == 0) {
    auto entries = bundle_entries(bytes, size, why);
    if (!entries) return std::nullopt;
    for (const auto& e : *entries) {
      if (e.id.find("amdgcn") == std::string::npos || e.offset > size || e.size > size - e.offset)
        continue;
      auto co = parse_elf(bytes + e.offset, e.size, why);
      if (co) co->size = size;
      return co;
    }
    why = "offload bundle without an amdgcn code object";
    return std::nullopt;
  }
  return parse_elf(bytes, size, why);
}

}  // namespace cudamux::hip
