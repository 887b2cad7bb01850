// Module images: NVIDIA's formats told apart, fat binaries opened for backends that need one
// entry (issue 14). See module_image.hpp.
#include "module_image.hpp"

#include <elf.h>
#include <link.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <span>
#include <string_view>

#include "core.hpp"
#include "cudamux/elf_section.hpp"
#include "cudamux/fatbin.hpp"

namespace cudamux::core {
namespace {

namespace be = cudamux::backend;

constexpr std::uint16_t kEmCuda = 190;  // EM_CUDA: NVIDIA's SASS objects

// Skips blanks and comments (PTX uses C++'s // and /* */) from `at`; returns the next offset.
std::size_t skip_blanks(std::string_view text, std::size_t at) noexcept {
  while (at < text.size()) {
    const char c = text[at];
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      ++at;
    } else if (text.substr(at, 2) == "//") {
      const auto nl = text.find('\n', at);
      at = nl == std::string_view::npos ? text.size() : nl + 1;
    } else if (text.substr(at, 2) == "/*") {
      const auto end = text.find("*/", at + 2);
      at = end == std::string_view::npos ? text.size() : end + 2;
    } else {
      break;
    }
  }
  return at;
}

// The next whitespace-delimited token from `at` (after blanks and comments).
std::string_view next_token(std::string_view text, std::size_t& at) noexcept {
  at = skip_blanks(text, at);
  const std::size_t begin = at;
  while (at < text.size() && text[at] != ' ' && text[at] != '\t' && text[at] != '\r' &&
         text[at] != '\n')
    ++at;
  return text.substr(begin, at - begin);
}

unsigned parse_arch(std::string_view digits) noexcept {
  unsigned arch = 0;
  for (const char c : digits) {
    if (c < '0' || c > '9') break;
    arch = arch * 10 + static_cast<unsigned>(c - '0');
    if (arch > 10000) return 0;
  }
  return arch;
}

// PTX is text whose first directive is `.version`; `.target sm_XX[a|f]` follows it. Only the
// module header is read here: the PTX front end parses the rest.
bool sniff_ptx(const char* text, be::ModuleImage& out) noexcept {
  // A module header fits in the first few KiB, even after a long comment banner.
  const std::string_view head(text, ::strnlen(text, 64 * 1024));
  std::size_t at = 0;
  if (next_token(head, at) != ".version") return false;
  (void)next_token(head, at);  // the version number
  if (next_token(head, at) != ".target") return false;
  std::string_view target = next_token(head, at);
  if (!target.empty() && target.back() == ',') target.remove_suffix(1);
  if (target.starts_with("sm_")) out.arch = parse_arch(target.substr(3));
  out.kind = be::ImageKind::ptx;
  out.data = text;
  out.size = ::strlen(text) + 1;
  return true;
}

// Whether `bytes` starts with the 4-byte little-endian `magic`, read byte by byte and stopping
// at the first difference: an image has no size, and a short text image ends early.
bool starts_with_magic(const unsigned char* bytes, std::uint32_t magic) noexcept {
  for (int i = 0; i < 4; ++i) {
    if (bytes[i] != static_cast<unsigned char>(magic >> (8 * i))) return false;
  }
  return true;
}

bool image_kind_allowed(const be::Backend& b, be::ImageKind k) noexcept {
  return (b.image_kinds() & be::image_kind_bit(k)) != 0;
}

}  // namespace

CUresult classify_image(const void* image, be::ModuleImage& out, std::string& why) noexcept {
  out = be::native_image(image);
  const auto* bytes = static_cast<const unsigned char*>(image);
  if (starts_with_magic(bytes, fatbin::kWrapperMagic)) {
    const void* container = nullptr;
    if (!fatbin::unwrap(image, container, why)) return CUDA_ERROR_INVALID_IMAGE;
    image = container;
    bytes = static_cast<const unsigned char*>(image);
    if (!starts_with_magic(bytes, fatbin::kContainerMagic)) {
      why = "a fat binary wrapper whose data is not a fat binary";
      return CUDA_ERROR_INVALID_IMAGE;
    }
  }
  if (starts_with_magic(bytes, fatbin::kContainerMagic)) {
    const auto size = fatbin::extent(image);
    if (!size) {
      why = "a fat binary whose header is damaged";
      return CUDA_ERROR_INVALID_IMAGE;
    }
    out = {be::ImageKind::nvidia_fatbin, image, *size, 0};
    return CUDA_SUCCESS;
  }
  if (starts_with_magic(bytes, 0x464c457fu)) {  // "\x7fELF"
    Elf64_Ehdr eh;
    std::memcpy(&eh, bytes, sizeof eh);
    if (bytes[EI_CLASS] == ELFCLASS64 && eh.e_machine == kEmCuda) {
      out.kind = be::ImageKind::cubin;
      out.arch = fatbin::cubin_arch(eh.e_flags, bytes[EI_ABIVERSION]);
    }
    return CUDA_SUCCESS;  // an ELF of another machine is some backend's own (AMD code objects)
  }
  (void)sniff_ptx(static_cast<const char*>(image), out);
  return CUDA_SUCCESS;
}

namespace {

// The loaded ELF object (file path and load bias) whose segments hold `address`.
struct ObjectOf {
  const void* address = nullptr;
  std::string path;
  std::uintptr_t bias = 0;
  bool found = false;
};

int find_object(dl_phdr_info* info, std::size_t, void* data) {
  auto* o = static_cast<ObjectOf*>(data);
  const auto a = reinterpret_cast<std::uintptr_t>(o->address);
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    const std::uintptr_t start = info->dlpi_addr + ph.p_vaddr;
    if (a >= start && a - start < ph.p_memsz) {
      // The main program's name is empty here; its file is /proc/self/exe.
      o->path = info->dlpi_name != nullptr && *info->dlpi_name != '\0' ? info->dlpi_name
                                                                       : "/proc/self/exe";
      o->bias = info->dlpi_addr;
      o->found = true;
      return 1;
    }
  }
  return 0;
}

// The bytes of section `name` of the ELF file at `path` (read from the file: section headers
// are not loaded into memory). False when the file cannot be opened or has no such section;
// with `why` when it is damaged (elf::find_section).
bool read_section(const std::string& path, std::string_view name, std::vector<std::byte>& out,
                  std::string& why) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  in.seekg(0, std::ios::end);
  const auto file_size = static_cast<std::uint64_t>(in.tellg());
  const elf::ReadAt read_at = [&](std::uint64_t at, void* to, std::uint64_t n) {
    in.seekg(static_cast<std::streamoff>(at));
    return static_cast<bool>(in.read(static_cast<char*>(to), static_cast<std::streamsize>(n)));
  };
  if (elf::find_section(read_at, file_size, name, out, why)) return true;
  if (!why.empty()) why = path + ": " + why;
  return false;
}

}  // namespace

bool relocatable_fat_binaries(const void* image, std::vector<std::byte>& section,
                              std::vector<fatbin::Entry>& entries, std::string& why) {
  ObjectOf object;
  object.address = image;
  if (::dl_iterate_phdr(find_object, &object) == 0 || !object.found) return false;
  if (!read_section(object.path, "__nv_relfatbin", section, why)) return false;
  if (!fatbin::parse(section, entries, why)) {
    why = "the relocatable objects' fat binaries of " + object.path + " are damaged: " + why;
    return false;
  }
  return !entries.empty();
}

namespace {

// For a fat binary of linked SASS only (no PTX of any arch): the PTX of the relocatable
// objects it was linked from, picked per object as for a device of `device_arch`, as link
// inputs. None when there is no __nv_relfatbin section or an object has no PTX that fits
// (the link would be incomplete); `why` says which.
void find_relocatable_ptx(const void* image, const std::vector<fatbin::Entry>& linked_entries,
                          unsigned device_arch, ResolvedImage& out, std::string& why) {
  for (const auto& e : linked_entries)
    if (e.kind == fatbin::Kind::ptx) return;  // not a linked -rdc image
  std::vector<std::byte> section;
  std::vector<fatbin::Entry> parts;
  if (!relocatable_fat_binaries(image, section, parts, why)) return;
  std::size_t containers = 0;
  for (const auto& p : parts) containers = std::max(containers, p.container + 1);
  std::vector<std::vector<std::byte>> ptx;
  for (std::size_t c = 0; c < containers; ++c) {
    std::vector<fatbin::Entry> mine;
    for (const auto& p : parts)
      if (p.container == c) mine.push_back(p);
    auto pick = fatbin::select_ptx(mine, device_arch);
    if (!pick) pick = fatbin::select_ptx_for_sass(mine, device_arch);
    if (!pick) {
      why = "relocatable object " + std::to_string(c + 1) + " of " + std::to_string(containers) +
            " holds " + fatbin::describe(mine) + ", no PTX for this device";
      return;
    }
    ptx.emplace_back();
    if (!fatbin::decompress(mine[*pick], ptx.back(), why)) {
      why = "relocatable object " + std::to_string(c + 1) + ": " + why;
      return;
    }
  }
  out.relocatable.clear();
  for (auto& p : ptx) out.relocatable.push_back(std::move(p));
  for (const auto& p : out.relocatable)
    out.link_inputs.push_back({be::ImageKind::ptx, p.data(), p.size(), device_arch});
}

}  // namespace

CUresult resolve_image(const void* image, be::Backend& backend, int device, ResolvedImage& out,
                       const char* fn) noexcept {
  Core& core = Core::get();
  if (image == nullptr) return reject(CUDA_ERROR_INVALID_VALUE, fn, "null image");
  std::string why;
  if (const CUresult r = classify_image(image, out.image, why)) {
    core.log().error("{}: invalid module image: {}", fn, why);
    return r;
  }
  if (out.image.kind != be::ImageKind::nvidia_fatbin ||
      image_kind_allowed(backend, be::ImageKind::nvidia_fatbin))
    return CUDA_SUCCESS;

  // A backend that needs one entry: parse the container(s) and pick as NVIDIA's driver does
  // (SASS of the same major version first, else PTX it can compile).
  std::vector<fatbin::Entry> entries;
  const std::span bytes(static_cast<const std::byte*>(out.image.data), out.image.size);
  if (!fatbin::parse(bytes, entries, why)) {
    core.log().error("{}: invalid fat binary: {}", fn, why);
    return CUDA_ERROR_INVALID_IMAGE;
  }
  try {
    out.holds = fatbin::describe(entries);
  } catch (...) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  int cc_major = 0, cc_minor = 0;
  (void)backend.devices().attribute(device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, cc_major);
  (void)backend.devices().attribute(device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, cc_minor);
  const auto device_arch = static_cast<unsigned>(cc_major * 10 + cc_minor);
  std::optional<std::size_t> pick;
  be::ImageKind kind = be::ImageKind::native;
  if (image_kind_allowed(backend, be::ImageKind::cubin)) {
    pick = fatbin::select_elf(entries, device_arch);
    kind = be::ImageKind::cubin;
  }
  if (!pick && image_kind_allowed(backend, be::ImageKind::ptx)) {
    pick = fatbin::select_ptx(entries, device_arch);
    kind = be::ImageKind::ptx;
    if (!pick) {
      // A GPU of this compute capability would run the fat binary's SASS, which this backend
      // cannot: the newer PTX of the same source stands in (CuPy's precompiled CUB and Thrust
      // carry PTX for compute_120 only), rather than a refusal the program never sees on a GPU.
      pick = fatbin::select_ptx_for_sass(entries, device_arch);
      if (pick)
        core.log().info(
            "{}: the fat binary holds {}; the '{}' backend runs no SASS, so the compute_{} PTX "
            "stands in for the SASS a device of compute capability {}.{} would run",
            fn, out.holds, backend.name(), entries[*pick].arch, device_arch / 10, device_arch % 10);
    }
  }
  if (!pick) {
    const std::string refusal = fmt::format(
        "{}: the fat binary holds {}; nothing in it runs on the '{}' backend for a device of "
        "compute capability {}.{}, which loads {}",
        fn, out.holds.empty() ? "no entries" : out.holds, backend.name(), device_arch / 10,
        device_arch % 10, backend.image_needs());
    // Linked relocatable device code: the objects' PTX, to be linked by the backend.
    std::string rdc_why;
    if (image_kind_allowed(backend, be::ImageKind::ptx)) {
      try {
        find_relocatable_ptx(out.image.data, entries, device_arch, out, rdc_why);
      } catch (...) {
        return CUDA_ERROR_OUT_OF_MEMORY;
      }
    }
    if (!out.link_inputs.empty()) {
      core.log().info(
          "{}: the fat binary holds {} linked from relocatable device code; the PTX of its {} "
          "object(s) is linked for the '{}' backend instead",
          fn, out.holds, out.link_inputs.size(), backend.name());
      out.link_error = refusal;
      return CUDA_SUCCESS;
    }
    core.log().error("{}{}", refusal, rdc_why.empty() ? "" : " (" + rdc_why + ")");
    return CUDA_ERROR_NO_BINARY_FOR_GPU;
  }
  const fatbin::Entry& e = entries[*pick];
  if (!fatbin::decompress(e, out.storage, why)) {
    core.log().error("{}: invalid fat binary entry ({}): {}", fn, out.holds, why);
    return CUDA_ERROR_INVALID_IMAGE;
  }
  out.image = {kind, out.storage.data(), out.storage.size(), e.arch};
  return CUDA_SUCCESS;
}

}  // namespace cudamux::core
