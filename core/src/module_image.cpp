// Module images: NVIDIA's formats told apart, fat binaries opened for backends that need one
// entry (issue 14). See module_image.hpp.
#include "module_image.hpp"

#include <elf.h>
#include <spdlog/spdlog.h>

#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

#include "core.hpp"
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
    core.log().error(
        "{}: the fat binary holds {}; nothing in it runs on the '{}' backend for a device of "
        "compute capability {}.{}, which loads {}",
        fn, out.holds.empty() ? "no entries" : out.holds, backend.name(), device_arch / 10,
        device_arch % 10, backend.image_needs());
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
