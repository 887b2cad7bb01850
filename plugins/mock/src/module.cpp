// Module images of the mock: decode, load from a memfd, read the module's kernel table.
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <spdlog/spdlog.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "kernels.hpp"

namespace cudamux::mock {
namespace {

constexpr be::Status status(CUresult r) { return be::Status{static_cast<std::int32_t>(r)}; }

int b64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

}  // namespace

bool decode_base64(const char* p, std::string& out) {
  unsigned acc = 0;
  int bits = 0;
  for (; *p != '\0'; ++p) {
    if (*p == '\n' || *p == '\r' || *p == '=') continue;
    const int v = b64_value(*p);
    if (v < 0) return false;
    acc = (acc << 6) | static_cast<unsigned>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFFu);
    }
  }
  return true;
}

namespace {

// Symbol names by address offset from the object's full symbol table (.symtab): kernels in
// anonymous namespaces or declared static have internal linkage and are not in .dynsym, so
// dladdr cannot name them.
std::map<std::uintptr_t, std::string> symbol_table(const std::string& so) {
  std::map<std::uintptr_t, std::string> names;
  if (so.size() < sizeof(ElfW(Ehdr))) return names;
  ElfW(Ehdr) eh;
  std::memcpy(&eh, so.data(), sizeof eh);
  if (eh.e_shentsize != sizeof(ElfW(Shdr)) || eh.e_shoff == 0 ||
      eh.e_shoff + std::uint64_t{eh.e_shnum} * sizeof(ElfW(Shdr)) > so.size())
    return names;
  std::vector<ElfW(Shdr)> sh(eh.e_shnum);
  std::memcpy(sh.data(), so.data() + eh.e_shoff, sh.size() * sizeof(ElfW(Shdr)));
  for (const auto& s : sh) {
    if (s.sh_type != SHT_SYMTAB || s.sh_link >= sh.size() || s.sh_entsize != sizeof(ElfW(Sym)))
      continue;
    const auto& str = sh[s.sh_link];
    if (s.sh_offset + s.sh_size > so.size() || str.sh_offset + str.sh_size > so.size()) continue;
    for (std::uint64_t off = 0; off + sizeof(ElfW(Sym)) <= s.sh_size; off += sizeof(ElfW(Sym))) {
      ElfW(Sym) sym;
      std::memcpy(&sym, so.data() + s.sh_offset + off, sizeof sym);
      const auto type = ELF64_ST_TYPE(sym.st_info);
      if ((type != STT_FUNC && type != STT_OBJECT) || sym.st_value == 0 ||
          sym.st_name >= str.sh_size)
        continue;
      const char* name = so.data() + str.sh_offset + sym.st_name;
      const std::size_t len = ::strnlen(name, str.sh_size - sym.st_name);
      auto& slot = names[sym.st_value];
      // Prefer the global name when an address has several (aliases).
      if (slot.empty() || ELF64_ST_BIND(sym.st_info) == STB_GLOBAL) slot.assign(name, len);
    }
  }
  return names;
}

class MockModule final : public be::Module {
 public:
  MockModule(std::shared_ptr<LoadedObject> object) : object_(std::move(object)) {
    const auto* d = object_->desc;
    std::map<const void*, MockFunction*> by_address;
    for (unsigned i = 0; i < d->num_kernels; ++i) {
      const cudamux_kernel_desc* k = d->kernels[i];
      if (k == nullptr || k->fn == nullptr) continue;
      std::string name;
      const auto at =
          object_->symbols.find(reinterpret_cast<std::uintptr_t>(k->fn) - object_->base);
      if (at != object_->symbols.end()) {
        name = at->second;
      } else {
        Dl_info info{};
        if (::dladdr(k->fn, &info) != 0 && info.dli_sname != nullptr) name = info.dli_sname;
      }
      if (k->name_expression != nullptr) expressions_[k->name_expression] = name;
      if (k->loop == nullptr || name.empty()) continue;  // a variable's name expression
      auto it = by_address.find(k->fn);
      if (it != by_address.end()) continue;  // also registered from the source scan
      functions_.push_back(std::make_unique<MockFunction>(object_, k, name));
      functions_.back()->siblings = [this](std::string_view n) { return function(n); };
      by_address[k->fn] = functions_.back().get();
    }
  }

  be::Function* function(std::string_view name) noexcept override {
    for (auto& f : functions_)
      if (f->name() == name) return f.get();
    return nullptr;
  }

  bool global(std::string_view name, void*& address, std::size_t& bytes) noexcept override {
    const std::string n(name);
    void* p = ::dlsym(object_->handle, n.c_str());
    if (p == nullptr) return false;
    Dl_info info{};
    void* entry = nullptr;
    if (::dladdr1(p, &info, &entry, RTLD_DL_SYMENT) == 0 || entry == nullptr) return false;
    const auto* sym = static_cast<const ElfW(Sym)*>(entry);
    // Only the module's own variables: dlsym also searches its dependencies (libc, ...).
    if (reinterpret_cast<std::uintptr_t>(info.dli_fbase) != object_->base) return false;
    if (ELF64_ST_TYPE(sym->st_info) != STT_OBJECT) return false;
    address = p;
    bytes = sym->st_size;
    return true;
  }

  [[nodiscard]] std::vector<std::string_view> function_names() const override {
    std::vector<std::string_view> names;
    for (const auto& f : functions_) names.push_back(f->name());
    return names;
  }

  std::string lowered(std::string_view expression) const {
    auto it = expressions_.find(std::string(expression));
    return it != expressions_.end() ? it->second : std::string();
  }

 private:
  std::shared_ptr<LoadedObject> object_;
  std::vector<std::unique_ptr<MockFunction>> functions_;
  std::map<std::string, std::string> expressions_;
};

}  // namespace

LoadedObject::~LoadedObject() {
  if (handle != nullptr) ::dlclose(handle);
  cudamux_memcheck_modules_changed();  // issue 9: its code and data ranges are gone
  if (fd >= 0) ::close(fd);
}

MockFunction::MockFunction(std::shared_ptr<LoadedObject> object, const cudamux_kernel_desc* desc,
                           std::string name)
    : object_(std::move(object)), desc_(desc), name_(std::move(name)) {
  for (unsigned i = 0; i < desc->num_params; ++i)
    params_.push_back(be::ParamInfo{desc->param_offsets[i], desc->param_sizes[i]});
}

be::Status MockFunction::attribute(CUfunction_attribute attr, int& value) const {
  return kernel_attribute(*desc_, object_->arch, attr, value);
}

be::Status kernel_attribute(const cudamux_kernel_desc& desc, int arch, CUfunction_attribute attr,
                            int& value) {
  const cudamux_kernel_desc* const desc_ = &desc;
  switch (attr) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      value = desc_->max_threads > 0 ? std::min(desc_->max_threads, 1024) : 1024;
      return be::kOk;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
      // PTX kernels: their module's .shared layout. NVRTC kernels: 0, their static __shared__
      // lives in thread-local storage.
      value = static_cast<int>(desc_->static_shared_used);
      return be::kOk;
    case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES:
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES:
    case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA:
    case CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
      value = 0;
      return be::kOk;
    case CU_FUNC_ATTRIBUTE_NUM_REGS:
      value = 32;  // plausible; nothing on a CPU corresponds
      return be::kOk;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION:
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION:
      value = arch;
      return be::kOk;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
      value = 48 * 1024;
      return be::kOk;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
      value = -1;
      return be::kOk;
    default:
      return status(CUDA_ERROR_INVALID_VALUE);
  }
}

std::string lowered_name(be::Module& module, std::string_view expression) {
  auto* m = dynamic_cast<MockModule*>(&module);
  return m != nullptr ? m->lowered(expression) : std::string();
}

namespace {

// A linked bundle: its images' modules, searched in link order.
class BundleModule final : public be::Module {
 public:
  explicit BundleModule(std::vector<std::unique_ptr<be::Module>> parts)
      : parts_(std::move(parts)) {}
  be::Function* function(std::string_view name) noexcept override {
    for (auto& m : parts_)
      if (be::Function* f = m->function(name)) return f;
    return nullptr;
  }
  bool global(std::string_view name, void*& address, std::size_t& bytes) noexcept override {
    for (auto& m : parts_)
      if (m->global(name, address, bytes)) return true;
    return false;
  }
  [[nodiscard]] std::vector<std::string_view> function_names() const override {
    std::vector<std::string_view> names;
    for (const auto& m : parts_)
      for (auto n : m->function_names()) names.push_back(n);
    return names;
  }

 private:
  std::vector<std::unique_ptr<be::Module>> parts_;
};

be::Status load_bundle(const char* text, spdlog::logger& log, std::unique_ptr<be::Module>& out) {
  const char* nl = std::strchr(text, '\n');
  if (nl == nullptr) return status(CUDA_ERROR_INVALID_IMAGE);
  std::istringstream header(std::string(text + kBundleHeader.size(), nl));
  std::size_t count = 0;
  if (!(header >> count) || count == 0 || count > 4096) {
    log.error("mock backend: damaged linked image (bad image count)");
    return status(CUDA_ERROR_INVALID_IMAGE);
  }
  const std::size_t available = std::strlen(nl + 1);
  std::vector<std::unique_ptr<be::Module>> parts;
  std::size_t at = 0;
  for (std::size_t i = 0; i < count; ++i) {
    std::size_t length = 0;
    if (!(header >> length) || length > available - at) {
      log.error("mock backend: damaged linked image (image {} of {} is cut short)", i + 1, count);
      return status(CUDA_ERROR_INVALID_IMAGE);
    }
    const std::string part(nl + 1 + at, length);
    at += length;
    if (part.starts_with(kBundleHeader)) return status(CUDA_ERROR_INVALID_IMAGE);  // no nesting
    std::unique_ptr<be::Module> m;
    if (const auto st = load_module_image(part.c_str(), log, m); !st.ok()) return st;
    parts.push_back(std::move(m));
  }
  out = std::make_unique<BundleModule>(std::move(parts));
  return be::kOk;
}

}  // namespace

be::Status link_images(const std::vector<be::ModuleImage>& inputs, std::vector<unsigned char>& out,
                       std::string& log) {
  std::vector<std::string_view> parts;
  for (const auto& in : inputs) {
    if (in.kind != be::ImageKind::native || in.data == nullptr) {
      log = "the mock links only modules compiled by cudamux's NVRTC";
      return status(CUDA_ERROR_INVALID_IMAGE);
    }
    const std::string_view text(static_cast<const char*>(in.data));
    if (text.starts_with(kImageHeader)) {
      parts.push_back(text);
      continue;
    }
    if (!text.starts_with(kBundleHeader)) {
      log = "an input is not a module compiled by cudamux's NVRTC";
      return status(CUDA_ERROR_INVALID_IMAGE);
    }
    // A linked image linked again: its parts join this bundle.
    const auto nl = text.find('\n');
    if (nl == std::string_view::npos) return status(CUDA_ERROR_INVALID_IMAGE);
    std::istringstream header(
        std::string(text.substr(kBundleHeader.size(), nl - kBundleHeader.size())));
    std::size_t count = 0, length = 0, at = nl + 1;
    header >> count;
    for (std::size_t i = 0; i < count; ++i) {
      if (!(header >> length) || length > text.size() - at) {
        log = "a linked input is damaged";
        return status(CUDA_ERROR_INVALID_IMAGE);
      }
      parts.push_back(text.substr(at, length));
      at += length;
    }
  }
  std::string image(kBundleHeader);
  image += " " + std::to_string(parts.size());
  for (auto p : parts) image += " " + std::to_string(p.size());
  image += '\n';
  for (auto p : parts) image.append(p);
  out.assign(image.begin(), image.end());
  out.push_back(0);
  log = "cudamux mock linker: " + std::to_string(parts.size()) + " module(s) linked";
  return be::kOk;
}

be::Status load_module_image(const void* image, spdlog::logger& log,
                             std::unique_ptr<be::Module>& out) {
  if (image == nullptr) return status(CUDA_ERROR_INVALID_VALUE);
  const auto* text = static_cast<const char*>(image);
  if (std::strncmp(text, kBundleHeader.data(), kBundleHeader.size()) == 0)
    return load_bundle(text, log, out);
  if (std::strncmp(text, kImageHeader.data(), kImageHeader.size()) != 0) {
    // NVIDIA's formats were told apart by the core (ModuleImage::kind); this is anything else.
    log.error("mock backend: not a module image (expected a text starting with \"{}\")",
              kImageHeader);
    return status(CUDA_ERROR_INVALID_IMAGE);
  }
  const char* nl = std::strchr(text, '\n');
  if (nl == nullptr) return status(CUDA_ERROR_INVALID_IMAGE);
  int arch = kDefaultArch;
  const std::string header(text, nl);
  if (const auto p = header.find(" arch="); p != std::string::npos)
    arch = std::atoi(header.c_str() + p + 6);
  if (const auto p = header.find(" cpu="); p != std::string::npos) {
    const std::string tag = header.substr(p + 5, header.find(' ', p + 5) - (p + 5));
    if (tag != host_cpu_tag()) {
      log.error(
          "mock backend: module image was compiled for another CPU (tag {}, this host {}); "
          "recompile it on this machine",
          tag, host_cpu_tag());
      return status(CUDA_ERROR_NO_BINARY_FOR_GPU);
    }
  }
  std::string so;
  if (!decode_base64(nl + 1, so) || so.size() < 64 ||
      so.compare(0, 4,
                 "\x7f"
                 "ELF") != 0) {
    log.error("mock backend: module image is damaged (bad encoding)");
    return status(CUDA_ERROR_INVALID_IMAGE);
  }
  const int fd = ::memfd_create("cudamux-module", MFD_CLOEXEC);
  if (fd < 0) {
    log.error("mock backend: memfd_create: {}", std::strerror(errno));
    return status(CUDA_ERROR_OPERATING_SYSTEM);
  }
  for (std::size_t at = 0; at < so.size();) {
    const ssize_t w = ::write(fd, so.data() + at, so.size() - at);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      ::close(fd);
      log.error("mock backend: writing the module to memory failed: {}", std::strerror(errno));
      return status(CUDA_ERROR_OPERATING_SYSTEM);
    }
    at += static_cast<std::size_t>(w);
  }
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    ::close(fd);
    log.error("mock backend: the module does not load: {}", ::dlerror());
    return status(CUDA_ERROR_INVALID_IMAGE);
  }
  auto object = std::make_shared<LoadedObject>();
  object->handle = handle;
  cudamux_memcheck_modules_changed();
  // The fd stays open while the module lives: glibc identifies loaded objects by path, so
  // no other module may get the same /proc/self/fd/N name meanwhile.
  object->fd = fd;
  object->arch = arch;
  link_map* map = nullptr;
  if (::dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr) object->base = map->l_addr;
  object->symbols = symbol_table(so);
  auto fn = reinterpret_cast<cudamux_module_fn>(::dlsym(handle, CUDAMUX_MODULE_SYMBOL));
  object->desc = fn != nullptr ? fn() : nullptr;
  if (object->desc == nullptr || object->desc->abi != CUDAMUX_DEVICE_ABI) {
    if (object->desc != nullptr)
      log.error(
          "mock backend: the module was compiled by another version of cudamux (device ABI {}, "
          "this one {}): compile it again (a program's own cache of compiled modules, such as "
          "CuPy's kernel cache, holds such images)",
          object->desc->abi, CUDAMUX_DEVICE_ABI);
    else
      log.error("mock backend: the module has no kernel table of device ABI {}",
                CUDAMUX_DEVICE_ABI);
    return status(CUDA_ERROR_INVALID_IMAGE);
  }
  out = std::make_unique<MockModule>(std::move(object));
  return be::kOk;
}

}  // namespace cudamux::mock
