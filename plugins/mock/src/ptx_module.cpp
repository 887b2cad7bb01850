// NVIDIA PTX on the mock (issue 15): PTX text -> the front end's IR (ptx/) -> C++ from the
// mock's back end (ptx/emit_cpp) -> the mock compiler (cached on disk like NVRTC programs,
// keyed on the generated source, hence on the PTX, the kernel and the translator) -> code.
//
// Lazily (the default): loading parses the PTX and lays out the module's variables in storage
// of its own; each kernel is translated alone (with the .func functions it reaches) and
// compiled at its first launch, its object bound to the module's variables through a table.
// A module of hundreds of kernels (CUB, Thrust) costs the kernels a program launches, not all
// of them. Eagerly (memcheck, CUDAMUX_MOCK_PTX_LAZY=0, variables holding code addresses): the
// whole module is one translation unit compiled at load.
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>

#include "cudamux/ptx/emit_cpp.hpp"
#include "cudamux/ptx/globals.hpp"
#include "cudamux/ptx/ir.hpp"
#include "cudamux/ptx/link.hpp"
#include "kernels.hpp"

namespace cudamux::mock {
namespace {
constexpr be::Status status(CUresult r) { return be::Status{static_cast<std::int32_t>(r)}; }

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

be::Status parse_ptx(const be::ModuleImage& image, spdlog::logger& log,
                     std::optional<ptx::Module>& module) {
  if (image.data == nullptr) return status(CUDA_ERROR_INVALID_VALUE);
  const char* text = static_cast<const char*>(image.data);
  // Images from fat binaries come with their size; cuModuleLoadData's PTX is NUL-terminated.
  std::size_t size = image.size != 0 ? image.size : std::strlen(text);
  while (size > 0 && text[size - 1] == '\0') --size;
  std::vector<ptx::Diagnostic> diagnostics;
  module = ptx::parse(std::string_view(text, size), diagnostics);
  if (!module) {
    for (std::size_t i = 0; i < diagnostics.size() && i < 5; ++i)
      log.error("mock backend: PTX line {}:{}: {}", diagnostics[i].loc.line,
                diagnostics[i].loc.column, diagnostics[i].message);
    if (diagnostics.empty()) log.error("mock backend: the PTX does not parse");
    return status(CUDA_ERROR_INVALID_PTX);
  }
  return be::kOk;
}

// Translation and compilation of a module (whole) or of one kernel (options.only_function).
be::Status compile_ptx(const ptx::Module& module, const ptx::EmitOptions& options,
                       MockCompiler& compiler, spdlog::logger& log, std::vector<char>& native) {
  const ptx::EmitResult emitted = ptx::emit_cpp(module, options);
  for (const auto& d : emitted.unsupported)
    log.warn(
        "mock backend: PTX line {}: {}; a kernel that reaches it fails with "
        "CUDA_ERROR_ILLEGAL_INSTRUCTION",
        d.loc.line, d.message);
  be::CompileRequest request;
  request.source = emitted.source;
  request.name = "ptx";
  request.options.arch = static_cast<int>(module.arch);
  // PTX says exactly where multiplies and adds fuse (fma, mad): g++ must not fuse others
  // (`mul.rn` + `add.rn` stay two roundings).
  request.options.fmad = false;
  be::CompileResult result;
  if (const auto st = compiler.compile_generated(request, result); !st.ok()) return st;
  if (!result.success) {
    // The translation is ours: a compile error here is a cudamux bug, reported as such.
    log.error(
        "mock backend: the C++ translated from this PTX does not compile (a cudamux bug; please "
        "report it with the PTX): {}",
        result.log.substr(0, 2000));
    return status(CUDA_ERROR_INVALID_PTX);
  }
  native = std::move(result.image);
  return be::kOk;
}

ptx::EmitOptions base_options(const MockCompiler& compiler) {
  ptx::EmitOptions options;
  options.module_name = "ptx";
  // Barrier splitting follows loop fission's switch ([mock] fission, CUDAMUX_MOCK_FISSION; off
  // under memcheck, which must see every barrier).
  options.split_barriers = compiler.settings().fission;
  // Barrier-free kernels: a flat twin (threadIdx a local; off under memcheck).
  options.flat_kernels = compiler.settings().ptx_flat;
  return options;
}

// ---- lazily compiled modules ---------------------------------------------------------------

// What a module's kernels share: the IR (translated per kernel on demand) and the storage of
// its .global/.const variables.
struct LazyState {
  ptx::Module ir;
  MockCompiler* compiler = nullptr;
  spdlog::logger* log = nullptr;
  std::vector<std::uint64_t> shared_used;  // per function (emit_cpp's layout)
  std::uint64_t static_shared = 0;
  ptx::ModuleGlobals globals;
  std::vector<void*> addresses;  // per globals.vars entry: its bytes in `storage`
  void* storage = nullptr;
  be::Module* module = nullptr;  // the LazyPtxModule (outlives its functions' launches)
  ~LazyState() { std::free(storage); }
};

class LazyPtxFunction final : public LazyFunction {
 public:
  LazyPtxFunction(std::shared_ptr<LazyState> state, std::size_t index)
      : state_(std::move(state)), index_(index) {
    const auto& f = state_->ir.functions[index_];
    // The thunk's packing (prelude.h make_layout): each parameter at its alignment; arrays
    // and over-aligned parameters are aligned byte structs (emit_cpp's entry_param_type).
    unsigned at = 0;
    for (const auto& p : f.params) {
      std::uint64_t size = ptx::size_of(p.type);
      if (p.type == ptx::Type::pred) size = 1;
      std::uint64_t align = size;
      if (!p.dims.empty() || p.align > ptx::size_of(p.type)) {
        size = ptx::size_of(p.type);
        for (auto d : p.dims) size *= d;
        align = p.align ? p.align : ptx::size_of(p.type);
        if (align == 0) align = 1;
        size = (std::max<std::uint64_t>(size, 1) + align - 1) / align * align;
      }
      if (align == 0) align = 1;
      at = static_cast<unsigned>((at + align - 1) / align * align);
      params_.push_back(be::ParamInfo{at, static_cast<unsigned>(size)});
      offsets_.push_back(at);
      sizes_.push_back(static_cast<unsigned>(size));
      at += static_cast<unsigned>(size);
    }
    // The table entry the kernel's code will have, as far as attributes need it.
    desc_.num_params = static_cast<unsigned>(params_.size());
    desc_.param_sizes = sizes_.data();
    desc_.param_offsets = offsets_.data();
    desc_.args_size = at;
    if (f.maxntid[0] || f.reqntid[0]) {
      const auto* d = f.maxntid[0] ? f.maxntid : f.reqntid;
      long long threads = 1;
      for (int k = 0; k < 3; ++k) threads *= d[k] ? d[k] : 1;
      desc_.max_threads = static_cast<int>(std::min<long long>(threads, 1 << 30));
    }
    desc_.min_blocks = static_cast<int>(f.minnctapersm);
    desc_.static_shared_bytes = static_cast<unsigned>(state_->static_shared);
    desc_.static_shared_used = static_cast<unsigned>(state_->shared_used[index_]);
  }

  [[nodiscard]] std::string_view name() const noexcept override {
    return state_->ir.functions[index_].name;
  }
  be::Status attribute(CUfunction_attribute attr, int& value) const override {
    return kernel_attribute(desc_, static_cast<int>(state_->ir.arch), attr, value);
  }
  [[nodiscard]] const std::vector<be::ParamInfo>& params() const noexcept override {
    return params_;
  }

  be::Status materialize(MockFunction*& out) override {
    // Every launch asks: once compiled, the answer is one acquire load, no lock.
    if (MockFunction* ready = loaded_.load(std::memory_order_acquire)) {
      out = ready;
      return be::kOk;
    }
    std::lock_guard lock(mu_);
    if (loaded_.load(std::memory_order_relaxed) == nullptr) {
      if (!failed_.ok()) return failed_;  // a kernel that does not compile fails every launch
      failed_ = compile_and_load();
      if (!failed_.ok()) return failed_;
    }
    out = loaded_.load(std::memory_order_relaxed);
    return be::kOk;
  }
  be::Function* sibling(std::string_view name) override {
    return state_->module != nullptr ? state_->module->function(name) : nullptr;
  }

 private:
  be::Status compile_and_load() {
    auto& log = *state_->log;
    const auto t0 = std::chrono::steady_clock::now();
    ptx::EmitOptions options = base_options(*state_->compiler);
    options.only_function = static_cast<std::int64_t>(index_);
    options.external_globals = true;
    std::vector<char> native;
    if (const auto st = compile_ptx(state_->ir, options, *state_->compiler, log, native); !st.ok())
      return st;
    const double compiled = ms_since(t0);
    if (const auto st = load_module_image(native.data(), log, module_); !st.ok()) return st;
    if (!state_->addresses.empty()) {
      // Bind the module's variables before the kernel's first block runs.
      void* table = nullptr;
      std::size_t bytes = 0;
      if (!module_->global("cudamux_ptx_globals", table, bytes) ||
          bytes < state_->addresses.size() * sizeof(void*)) {
        log.error("mock backend: kernel {}: its code has no table of the module's variables",
                  name());
        return status(CUDA_ERROR_INVALID_IMAGE);
      }
      std::memcpy(table, state_->addresses.data(), state_->addresses.size() * sizeof(void*));
    }
    auto* const loaded = dynamic_cast<MockFunction*>(module_->function(name()));
    if (loaded == nullptr) {
      log.error("mock backend: kernel {} is missing from its compiled code", name());
      return status(CUDA_ERROR_NOT_FOUND);
    }
    loaded_.store(loaded, std::memory_order_release);  // after the variable table is bound
    log.debug("mock backend: PTX kernel {} ready in {:.1f} ms (translation and compilation {:.1f})",
              name(), ms_since(t0), compiled);
    return be::kOk;
  }

  const std::shared_ptr<LazyState> state_;
  const std::size_t index_;
  std::vector<be::ParamInfo> params_;
  std::vector<unsigned> sizes_, offsets_;
  cudamux_kernel_desc desc_{};
  std::mutex mu_;
  std::unique_ptr<be::Module> module_;  // the kernel's own object, once compiled
  std::atomic<MockFunction*> loaded_{nullptr};
  be::Status failed_ = be::kOk;  // under mu_
};

class LazyPtxModule final : public be::Module {
 public:
  explicit LazyPtxModule(std::shared_ptr<LazyState> state) : state_(std::move(state)) {
    state_->module = this;
    for (std::size_t fi = 0; fi < state_->ir.functions.size(); ++fi) {
      const auto& f = state_->ir.functions[fi];
      if (f.is_entry && f.has_body)
        functions_.push_back(std::make_unique<LazyPtxFunction>(state_, fi));
    }
  }
  be::Function* function(std::string_view name) noexcept override {
    for (auto& f : functions_)
      if (f->name() == name) return f.get();
    return nullptr;
  }
  bool global(std::string_view name, void*& address, std::size_t& bytes) noexcept override {
    const auto& vars = state_->globals.vars;
    for (std::size_t k = 0; k < vars.size(); ++k)
      if (vars[k].exported && vars[k].name == name) {
        address = state_->addresses[k];
        bytes = vars[k].size;
        return true;
      }
    return false;
  }
  [[nodiscard]] std::vector<std::string_view> function_names() const override {
    std::vector<std::string_view> names;
    for (const auto& f : functions_) names.push_back(f->name());
    return names;
  }

 private:
  std::shared_ptr<LazyState> state_;
  std::vector<std::unique_ptr<LazyPtxFunction>> functions_;
};

// Module storage: one block for all the variables, initial bytes and addresses written in.
bool allocate_globals(LazyState& s) {
  std::uint64_t total = 0;
  std::vector<std::uint64_t> at;
  for (const auto& v : s.globals.vars) {
    total = (total + v.align - 1) / v.align * v.align;
    at.push_back(total);
    total += v.bytes.size();
  }
  if (s.globals.vars.empty()) return true;
  const std::uint64_t block = (total + 4095) / 4096 * 4096;
  s.storage = std::aligned_alloc(4096, block);
  if (s.storage == nullptr) return false;
  std::memset(s.storage, 0, block);
  auto* base = static_cast<unsigned char*>(s.storage);
  for (std::size_t k = 0; k < s.globals.vars.size(); ++k) {
    std::memcpy(base + at[k], s.globals.vars[k].bytes.data(), s.globals.vars[k].bytes.size());
    s.addresses.push_back(base + at[k]);
  }
  for (std::size_t k = 0; k < s.globals.vars.size(); ++k)
    for (const auto& r : s.globals.vars[k].relocs) {
      std::uint64_t a = reinterpret_cast<std::uintptr_t>(s.addresses[r.slot]) +
                        static_cast<std::uint64_t>(r.addend);
      if (r.mask != 0) a = (a & r.mask) >> __builtin_ctzll(r.mask);
      std::memcpy(base + at[k] + r.at, &a, r.width);
    }
  return true;
}

}  // namespace

be::Status translate_ptx(const be::ModuleImage& image, MockCompiler& compiler, spdlog::logger& log,
                         std::vector<char>& native) {
  std::optional<ptx::Module> module;
  if (const auto st = parse_ptx(image, log, module); !st.ok()) return st;
  return compile_ptx(*module, base_options(compiler), compiler, log, native);
}

be::Status link_ptx(const std::vector<be::ModuleImage>& inputs, MockCompiler& compiler,
                    spdlog::logger& log, std::vector<char>& native, std::string& link_log) {
  std::vector<ptx::Module> modules;
  // Per input, what it declares .extern: a reference left undefined is reported "in" the
  // first input that declares it, as NVIDIA's linker names the input that refers to it.
  std::vector<std::set<std::string>> declared;
  for (const auto& in : inputs) {
    std::optional<ptx::Module> module;
    if (const auto st = parse_ptx(in, log, module); !st.ok()) {
      link_log = "a PTX input does not parse (see the log)";
      return st;
    }
    auto& names = declared.emplace_back();
    for (const auto& f : module->functions)
      if (!f.has_body) names.insert(f.name);
    for (const auto& v : module->globals)
      if (v.is_extern) names.insert(v.name);
    modules.push_back(std::move(*module));
  }
  ptx::LinkOutcome linked = ptx::link(std::move(modules));
  std::string errors;
  for (const auto& d : linked.diagnostics) errors += "error   : " + d.message + "\n";
  if (linked.module) {
    // What no kernel reaches goes (a device runtime library of hundreds of functions, such as
    // CUDA's cudadevrt, keeps the few a program calls); what is left undefined is an error
    // unless the mock's device runtime provides it. NVIDIA's linker writes "error   :
    // Undefined reference to '_Z6scaledj' in 'a.ptx'" and answers CUDA_ERROR_INVALID_SOURCE
    // (measured, H100, driver 580).
    ptx::prune_unreachable(*linked.module);
    auto report = [&](const std::string& name) {
      std::string input;
      for (std::size_t i = 0; i < declared.size() && input.empty(); ++i)
        if (declared[i].count(name) != 0)
          input = inputs[i].name != nullptr && *inputs[i].name != '\0'
                      ? std::string(inputs[i].name)
                      : "input" + std::to_string(i);
      errors += "error   : Undefined reference to '" + name + "'" +
                (input.empty() ? std::string() : " in '" + input + "'") + "\n";
    };
    for (const auto& v : linked.module->globals)
      if (v.is_extern && v.space != ptx::Space::shared) report(v.name);
    for (const auto& f : linked.module->functions)
      if (!f.has_body && !ptx::provides_external_function(f.name)) report(f.name);
  }
  if (!errors.empty()) {
    link_log = errors;
    log.debug("mock backend: PTX link failed:\n{}", errors);
    return status(CUDA_ERROR_INVALID_SOURCE);
  }
  const auto st = compile_ptx(*linked.module, base_options(compiler), compiler, log, native);
  if (!st.ok()) link_log = "the linked PTX does not compile (see the log)";
  return st;
}

be::Status load_ptx_module(const be::ModuleImage& image, MockCompiler& compiler,
                           spdlog::logger& log, std::unique_ptr<be::Module>& out) {
  const auto t0 = std::chrono::steady_clock::now();
  std::optional<ptx::Module> module;
  if (const auto st = parse_ptx(image, log, module); !st.ok()) return st;
  auto state = std::make_shared<LazyState>();
  if (compiler.settings().ptx_lazy) {
    state->globals = ptx::module_globals(*module);
    if (state->globals.function_addresses)
      log.debug("mock backend: PTX module variables hold function addresses: compiled whole");
  }
  if (!compiler.settings().ptx_lazy || state->globals.function_addresses) {
    std::vector<char> native;
    if (const auto st = compile_ptx(*module, base_options(compiler), compiler, log, native);
        !st.ok())
      return st;
    return load_module_image(native.data(), log, out);
  }
  for (const auto& d : state->globals.problems)
    log.warn("mock backend: PTX line {}: {}", d.loc.line, d.message);
  ptx::EmitOptions layout = base_options(compiler);
  layout.layout_only = true;
  const ptx::EmitResult facts = ptx::emit_cpp(*module, layout);
  state->shared_used = facts.kernel_shared_used;
  state->static_shared = facts.static_shared_bytes;
  state->ir = std::move(*module);
  state->compiler = &compiler;
  state->log = &log;
  if (!allocate_globals(*state)) {
    log.error("mock backend: out of memory for the PTX module's variables");
    return status(CUDA_ERROR_OUT_OF_MEMORY);
  }
  out = std::make_unique<LazyPtxModule>(std::move(state));
  log.debug("mock backend: PTX module loaded in {:.1f} ms (kernels compile at first launch)",
            ms_since(t0));
  return be::kOk;
}

}  // namespace cudamux::mock
