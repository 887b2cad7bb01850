// The mock's PTX back end (issue 15): the typed IR -> one C++ translation unit, compiled by the
// mock's compiler with its prelude force-included (docs/ptx.md, "The mock's C++ back end").
//
// Shape of the output:
// - each .entry is an `extern "C"` function with the PTX name whose C++ parameters have the
//   sizes and alignments of the PTX ones, so the prelude's thunk packs them like CUDA does;
// - each .func is a static function taking pointers to its caller's .param buffers (returns
//   first), so st.param/ld.param are byte copies and recursion needs nothing special;
// - registers are C++ locals declared at the top (gotos never cross an initialisation),
//   labels are C++ labels, guards are `if`s;
// - global/const variables are exported byte arrays (cuModuleGetGlobal finds them by dlsym);
//   .shared variables share one module-wide layout inside the block's shared window, which is
//   [static shared][dynamic shared]: `window = cudamux_dyn_shared - static_shared_bytes`;
// - anything not executable yet becomes a trap naming the instruction and its line, never a
//   C++ compile error.
#include "cudamux/ptx/emit_cpp.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cudamux/ptx/globals.hpp"
#include "emit_mma.hpp"
#include "emit_split.hpp"
#include "emit_texture.hpp"

namespace cudamux::ptx {
namespace {

// ---- facts about types (types.cpp has the front end's; these name what the back end asks) ----

unsigned tsize(Type t) { return size_of(t); }
bool tsigned(Type t) { return is_signed(t); }
bool tint(Type t) {  // integer (bit, unsigned, signed) types of 8..64 bits
  switch (t) {
    case Type::b8:
    case Type::b16:
    case Type::b32:
    case Type::b64:
    case Type::u8:
    case Type::u16:
    case Type::u32:
    case Type::u64:
    case Type::s8:
    case Type::s16:
    case Type::s32:
    case Type::s64:
      return true;
    default:
      return false;
  }
}
bool tnative_float(Type t) { return t == Type::f32 || t == Type::f64; }
bool is_float_type(Type t) {
  switch (t) {
    case Type::f16:
    case Type::f16x2:
    case Type::bf16:
    case Type::bf16x2:
    case Type::tf32:
    case Type::f32:
    case Type::f64:
      return true;
    default:
      return false;
  }
}

// C++ storage type of a PTX type (ptx_ops.h conventions).
const char* storage(Type t) {
  switch (t) {
    case Type::pred:
      return "bool";
    case Type::s8:
      return "s8";
    case Type::s16:
      return "s16";
    case Type::s32:
      return "s32";
    case Type::s64:
      return "s64";
    case Type::f32:
      return "float";
    case Type::f64:
      return "double";
    case Type::b128:
      return "u128";
    default:
      break;
  }
  switch (tsize(t)) {
    case 1:
      return "u8";
    case 2:
      return "u16";
    case 4:
      return "u32";
    case 8:
      return "u64";
    default:
      return "u32";
  }
}
// The unsigned integer type of a type's size (wrapping arithmetic).
const char* ustorage(Type t) {
  switch (tsize(t)) {
    case 1:
      return "u8";
    case 2:
      return "u16";
    case 8:
      return "u64";
    case 16:
      return "u128";
    default:
      return "u32";
  }
}
// The type arithmetic on `t` is done in: at least 32 bits, so no promotion to (signed) int.
const char* wide_work(Type t) { return tsize(t) <= 4 ? "u32" : ustorage(t); }
Type unsigned_of(Type t) {
  switch (tsize(t)) {
    case 1:
      return Type::u8;
    case 2:
      return Type::u16;
    case 8:
      return Type::u64;
    default:
      return Type::u32;
  }
}
Type signed_of(Type t) {
  switch (tsize(t)) {
    case 1:
      return Type::s8;
    case 2:
      return Type::s16;
    case 8:
      return Type::s64;
    default:
      return Type::s32;
  }
}
Type widened(Type t) {  // mul.wide: the result type of twice the width
  switch (t) {
    case Type::s16:
      return Type::s32;
    case Type::u16:
    case Type::b16:
      return Type::u32;
    case Type::s32:
      return Type::s64;
    case Type::u32:
    case Type::b32:
      return Type::u64;
    default:
      return Type::none;
  }
}

// ptx_ops.h type code, or null when it has none.
const char* code(Type t) {
  switch (t) {
    case Type::b8:
      return "B8";
    case Type::b16:
      return "B16";
    case Type::b32:
      return "B32";
    case Type::b64:
      return "B64";
    case Type::u8:
      return "U8";
    case Type::u16:
      return "U16";
    case Type::u32:
      return "U32";
    case Type::u64:
      return "U64";
    case Type::s8:
      return "S8";
    case Type::s16:
      return "S16";
    case Type::s32:
      return "S32";
    case Type::s64:
      return "S64";
    case Type::f16:
      return "F16";
    case Type::f16x2:
      return "F16X2";
    case Type::bf16:
      return "BF16";
    case Type::bf16x2:
      return "BF16X2";
    case Type::tf32:
      return "TF32";
    case Type::f32:
      return "F32";
    case Type::f64:
      return "F64";
    case Type::e4m3x2:
      return "E4M3X2";
    case Type::e5m2x2:
      return "E5M2X2";
    case Type::pred:
      return "PRED";
    default:
      return nullptr;
  }
}

const char* rnd_name(Rounding r) {
  static const char* const names[] = {"NONE", "RN",  "RZ",  "RM",  "RP", "RNA",
                                      "RS",   "RNI", "RZI", "RMI", "RPI"};
  return names[static_cast<unsigned>(r)];
}

std::string flags_of(const Instruction& i) {
  std::string f;
  auto add = [&](bool on, const char* n) {
    if (!on) return;
    if (!f.empty()) f += "|";
    f += n;
  };
  add(i.ftz, "FTZ");
  add(i.sat, "SAT");
  add(i.relu, "RELU");
  add(i.nan, "NANF");
  add(i.approx, "APPROX");
  add(i.full, "FULL");
  add(i.xorsign, "XORSIGN");
  add(i.abs, "ABSF");
  bool satfinite = false;
  for (const auto& e : i.extra) satfinite = satfinite || e == "satfinite";
  add(satfinite, "SATFINITE");
  return f.empty() ? "0" : f;
}

std::string hex(std::uint64_t v) {
  char b[32];
  std::snprintf(b, sizeof b, "0x%llxull", static_cast<unsigned long long>(v));
  return b;
}

// A C++ string literal of arbitrary bytes.
std::string quote(std::string_view s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      char b[8];
      std::snprintf(b, sizeof b, "\\%03o", c);
      o += b;
    } else {
      o += static_cast<char>(c);
    }
  }
  return o + "\"";
}

// An identifier made of a PTX name: `%` and anything g++ would not take become `_`.
std::string ident(std::string_view s) {
  std::string o;
  for (char c : s) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    o += ok ? c : '_';
  }
  return o;
}
bool plain_ident(std::string_view s) {  // usable as an exported C symbol as is
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  return ident(s) == s;
}

// Helpers the generated code uses; emitted once at the top of the translation unit.
constexpr const char* kRuntime =
    R"CPP(#include "cudamux/ptx_ops.h"
          extern "C" void* malloc(decltype(sizeof(0))) noexcept;  // as glibc (and the prelude)
          extern "C" void free(void*) noexcept;
          namespace cudamux_ptx_rt {
          using namespace ::cudamux::ptx;
          using u128 = unsigned __int128;
          template <class T>
          struct sgn {
            static constexpr bool v = false;
          };
          template <>
          struct sgn<signed char> {
            static constexpr bool v = true;
          };
          template <>
          struct sgn<short> {
            static constexpr bool v = true;
          };
          template <>
          struct sgn<int> {
            static constexpr bool v = true;
          };
          template <>
          struct sgn<long long> {
            static constexpr bool v = true;
          };
          template <unsigned N, bool S>
          struct iof;
          template <>
          struct iof<1, false> {
            using t = u8;
          };
          template <>
          struct iof<2, false> {
            using t = u16;
          };
          template <>
          struct iof<4, false> {
            using t = u32;
          };
          template <>
          struct iof<8, false> {
            using t = u64;
          };
          template <>
          struct iof<16, false> {
            using t = u128;
          };
          template <>
          struct iof<1, true> {
            using t = s8;
          };
          template <>
          struct iof<2, true> {
            using t = s16;
          };
          template <>
          struct iof<4, true> {
            using t = s32;
          };
          template <>
          struct iof<8, true> {
            using t = s64;
          };
          template <>
          struct iof<16, true> {
            using t = __int128;
          };
          template <class A, class B>
          struct same {
            static constexpr bool v = false;
          };
          template <class A>
          struct same<A, A> {
            static constexpr bool v = true;
          };
          // A value of type S moved into storage D with PTX's relaxed register rules: same size:
          // the bits; narrower: the low bits; wider: sign-extended when S is signed, else
          // zero-extended.
          template <class D, class S>
          __attribute__((always_inline)) inline D mv(S s) {
            if constexpr (same<D, S>::v) {
              return s;
            } else if constexpr (same<D, bool>::v) {
              return s != S{};
            } else if constexpr (same<S, bool>::v) {
              return mv<D>(static_cast<u8>(s));
            } else if constexpr (sizeof(D) == sizeof(S)) {
              return __builtin_bit_cast(D, s);
            } else if constexpr (sizeof(D) < sizeof(S)) {
              D d;
              __builtin_memcpy(&d, &s, sizeof d);
              return d;
            } else {
              using SI = typename iof<sizeof(S), sgn<S>::v>::t;
              using DI = typename iof<sizeof(D), sgn<S>::v>::t;
              return __builtin_bit_cast(D, static_cast<DI>(__builtin_bit_cast(SI, s)));
            }
          }
          template <class T>
          __attribute__((always_inline)) inline T ld(const char* p) {
            T v;
            __builtin_memcpy(&v, p, sizeof v);
            return v;
          }
          template <class T>
          __attribute__((always_inline)) inline void st(char* p, T v) {
            __builtin_memcpy(p, &v, sizeof v);
          }
          // ld/st.volatile, .relaxed, .acquire, .release: one atomic access (polling loops must see
          // other threads' stores).
          template <class T>
          __attribute__((always_inline)) inline T ld_sync(const char* p) {
            using I = typename iof<sizeof(T), false>::t;
            return __builtin_bit_cast(T, __atomic_load_n(reinterpret_cast<const I*>(p), __ATOMIC_ACQUIRE));
          }
          template <class T>
          __attribute__((always_inline)) inline void st_sync(char* p, T v) {
            using I = typename iof<sizeof(T), false>::t;
            __atomic_store_n(reinterpret_cast<I*>(p), __builtin_bit_cast(I, v), __ATOMIC_RELEASE);
          }
          __attribute__((always_inline)) inline char* gp(u64 a) {
            return reinterpret_cast<char*>(static_cast<__UINTPTR_TYPE__>(a));
          }
          __attribute__((always_inline)) inline u64 ga(const void* p) {
            return static_cast<u64>(reinterpret_cast<__UINTPTR_TYPE__>(p));
          }
          // cp.async: the copy happens at once (commit/wait are then no-ops); bytes past src_size
          // are 0.
          __attribute__((always_inline)) inline void cp_async(char* d, const char* s, u32 n, u32 src_size) {
            if (src_size > n) src_size = n;
            __builtin_memcpy(d, s, src_size);
            if (src_size < n) __builtin_memset(d + src_size, 0, n - src_size);
          }
          inline char* alloca_ptr(char* raw, u64 align) {
            const u64 a = align ? align : 8;
            return gp((ga(raw) + a - 1) / a * a);
          }
          }  // namespace cudamux_ptx_rt
    )CPP";

struct Ctx;  // per-function emission state

class Emitter {
 public:
  Emitter(const Module& m, const EmitOptions& o) : m_(m), opt_(o) {}
  EmitResult run();

 private:
  // ---- module level ----
  void layout_shared();
  void analyse_reach();
  void emit_globals();
  void emit_function_decl(std::size_t fi);
  void emit_function(std::size_t fi);
  void emit_extern_wrapper(std::size_t fi);
  void emit_registration();
  std::string emit_split_twin(std::size_t fi, const std::vector<std::string>& stmts,
                              const std::vector<std::vector<std::uint32_t>>& labels_at, bool flat);
  std::string fn_name(std::size_t fi) const { return fn_names_[fi]; }
  std::string fn_signature(std::size_t fi, const std::string& name) const;

  // ---- per instruction ----
  std::string instruction(const Instruction& ins);
  std::string rd(const Operand& o, Type t);  // value of an operand as storage(t)
  std::string wr(const Operand& d, Type t, const std::string& value);  // statement
  std::string addr(const Operand& a, Space sp);                        // char* expression
  std::string sym_value(const SymbolRef& s, std::int64_t offset, Type t);
  std::string sym_pointer(const SymbolRef& s, std::int64_t offset);
  std::string special(const Operand& o);
  std::string line(const SourceLoc& l) const;
  void fail(const std::string& why) {
    if (bad_.empty()) bad_ = why;
  }

  // instruction families
  std::string arith(const Instruction& ins);
  std::string compare_select(const Instruction& ins);
  std::string logic(const Instruction& ins);
  std::string move(const Instruction& ins);
  std::string convert(const Instruction& ins);
  std::string memory(const Instruction& ins);
  std::string atomic(const Instruction& ins);
  std::string control(const Instruction& ins);
  std::string call(const Instruction& ins);
  std::string collective(const Instruction& ins);
  std::string mbarrier(const Instruction& ins);  // ptx-rest
  std::string video(const Instruction& ins);     // ptx-rest
  void find_yields();                            // ptx-rest: yield points per function

  const Module& m_;
  const EmitOptions& opt_;
  EmitResult res_;
  std::ostringstream o_;
  std::set<std::string> unsupported_seen_;
  std::vector<std::string> fn_names_, global_names_;
  std::vector<std::uint64_t> global_shared_off_;              // per Module::globals
  std::vector<std::vector<std::uint64_t>> local_shared_off_;  // per function, per local
  std::vector<bool> reaches_sync_;
  std::uint64_t static_shared_ = 0;
  std::vector<std::uint64_t> kernel_shared_used_;  // per function: .shared a kernel reaches
  std::set<std::pair<std::uint64_t, std::uint32_t>> bytes_structs_;
  std::vector<std::string> twins_;  // per function: its split twin (emit_split.cpp), or empty
  std::vector<bool> emit_;          // per function: translated (EmitOptions::only_function)
  // ptx-rest: per function, per instruction, a yield point before it (nanosleep, mbarrier
  // waits, the poll of a spin-wait loop); whether the function has any.
  std::vector<std::vector<bool>> yield_before_;
  std::vector<bool> yields_;
  bool named_bars_ = false;  // some kernel uses bar.arrive: counted barriers are named ones
  bool func_exit_ = false;   // some .func contains exit (calls check ptx::exit_flag)

  // current function
  const Function* f_ = nullptr;
  std::size_t fi_ = 0;
  std::vector<std::string> reg_names_, local_names_;
  std::string bad_;
  bool uses_carry_ = false;
  std::size_t external_slots_ = 0;
};

std::string Emitter::line(const SourceLoc& l) const {
  if (l.line == 0) return {};
  return "#line " + std::to_string(l.line) + " " + quote(opt_.module_name) + "\n";
}

// ---- shared layout ---------------------------------------------------------------------------

std::uint64_t var_size(const Variable& v) {
  std::uint64_t n = static_cast<std::uint64_t>(tsize(v.type)) * (v.vec ? v.vec : 1);
  for (auto d : v.dims) n *= d;
  return n;
}
std::uint64_t var_align(const Variable& v) {
  std::uint64_t a = v.align ? v.align : tsize(v.type) * (v.vec ? v.vec : 1);
  return a ? a : 1;
}
std::uint64_t param_size(const Param& p) {
  std::uint64_t n = tsize(p.type);
  for (auto d : p.dims) n *= d;
  return n;
}
std::uint64_t param_align(const Param& p) {
  std::uint64_t a = p.align ? p.align : tsize(p.type);
  return a ? a : 1;
}
std::uint64_t round_up(std::uint64_t v, std::uint64_t a) { return (v + a - 1) / a * a; }

void Emitter::layout_shared() {
  // Which kernels reach each function (calls, and anything an indirect call may reach) and
  // which functions touch each module-scope .shared variable: a variable one kernel alone
  // reaches may share its bytes with another kernel's, so a module of many kernels (Thrust,
  // CUB) needs the largest kernel's shared memory per block, not the sum of all of them.
  const std::size_t nf = m_.functions.size(), ng = m_.globals.size();
  std::vector<std::vector<std::uint32_t>> callees(nf);
  std::vector<bool> indirect_caller(nf, false), address_taken(nf, false);
  std::vector<std::vector<std::uint32_t>> refs(nf);   // functions whose address each one takes
  std::vector<std::vector<std::uint32_t>> users(ng);  // functions referencing each global
  std::vector<bool> global_everywhere(ng, false);     // referenced from initialisers
  auto visit_operand = [&](auto& self, const Operand& o, std::uint32_t fi,
                           bool call_target) -> void {
    if (o.sym.kind == SymbolRef::Kind::function && o.sym.index < nf) {
      if (call_target) {
        callees[fi].push_back(o.sym.index);
      } else {
        address_taken[o.sym.index] = true;
        refs[fi].push_back(o.sym.index);
      }
    }
    if (o.sym.kind == SymbolRef::Kind::global && o.sym.index < ng) users[o.sym.index].push_back(fi);
    for (const auto& e : o.elems) self(self, e, fi, false);
  };
  for (std::uint32_t fi = 0; fi < nf; ++fi)
    for (const auto& ins : m_.functions[fi].body)
      for (std::size_t k = 0; k < ins.operands.size(); ++k) {
        const bool target = ins.op == Opcode::call && k == 1;
        if (target && ins.operands[k].kind == Operand::Kind::reg) indirect_caller[fi] = true;
        visit_operand(visit_operand, ins.operands[k], fi, target);
      }
  for (const auto& g : m_.globals)
    for (const auto& in : g.init)
      if (in.is_symbol && in.sym.kind == SymbolRef::Kind::global && in.sym.index < ng)
        global_everywhere[in.sym.index] = true;
  for (const auto& g : m_.globals)
    for (const auto& in : g.init)
      if (in.is_symbol && in.sym.kind == SymbolRef::Kind::function && in.sym.index < nf)
        address_taken[in.sym.index] = true;
  // kernels_of[fi]: the kernels (function indices) that reach fi.
  std::vector<std::set<std::uint32_t>> kernels_of(nf);
  for (std::uint32_t k = 0; k < nf; ++k) {
    if (!m_.functions[k].is_entry) continue;
    std::vector<std::uint32_t> stack{k};
    std::vector<bool> seen(nf, false);
    seen[k] = true;
    while (!stack.empty()) {
      const std::uint32_t f = stack.back();
      stack.pop_back();
      kernels_of[f].insert(k);
      auto push = [&](std::uint32_t c) {
        if (c < nf && !seen[c]) {
          seen[c] = true;
          stack.push_back(c);
        }
      };
      for (auto c : callees[f]) push(c);
      if (indirect_caller[f])
        for (std::uint32_t c = 0; c < nf; ++c)
          if (address_taken[c]) push(c);
    }
  }
  // Owner kernel of each .shared variable, or none when several (or unknown) kernels reach it.
  constexpr std::uint32_t kShared = ~std::uint32_t{0};
  auto owner_of = [&](const std::set<std::uint32_t>& ks) {
    return ks.size() == 1 ? *ks.begin() : kShared;
  };
  std::vector<std::uint32_t> global_owner(ng, kShared);
  for (std::size_t g = 0; g < ng; ++g) {
    if (m_.globals[g].space != Space::shared || global_everywhere[g]) continue;
    std::set<std::uint32_t> ks;
    for (auto fi : users[g]) ks.insert(kernels_of[fi].begin(), kernels_of[fi].end());
    global_owner[g] = owner_of(ks);
  }
  std::uint64_t max_align = 16;
  auto place = [&](const Variable& v, std::uint64_t& at) -> std::uint64_t {
    if (v.is_extern) return ~std::uint64_t{0};  // dynamic: fixed up below
    const std::uint64_t a = var_align(v);
    max_align = std::max(max_align, a);
    at = round_up(at, a);
    const std::uint64_t off = at;
    at += var_size(v);
    return off;
  };
  // Variables of several kernels first, then each kernel's own from the same offset.
  std::uint64_t common = 0;
  global_shared_off_.assign(ng, 0);
  local_shared_off_.resize(nf);
  for (std::size_t fi = 0; fi < nf; ++fi)
    local_shared_off_[fi].assign(m_.functions[fi].locals.size(), 0);
  for (std::size_t g = 0; g < ng; ++g)
    if (m_.globals[g].space == Space::shared && global_owner[g] == kShared)
      global_shared_off_[g] = place(m_.globals[g], common);
  for (std::size_t fi = 0; fi < nf; ++fi) {
    const auto& f = m_.functions[fi];
    if (owner_of(kernels_of[fi]) != kShared) continue;
    for (std::size_t l = 0; l < f.locals.size(); ++l)
      if (f.locals[l].space == Space::shared) local_shared_off_[fi][l] = place(f.locals[l], common);
  }
  std::uint64_t largest = common;
  kernel_shared_used_.assign(nf, 0);
  for (std::uint32_t k = 0; k < nf; ++k) {
    if (!m_.functions[k].is_entry) continue;
    std::uint64_t at = common;
    for (std::size_t g = 0; g < ng; ++g)
      if (m_.globals[g].space == Space::shared && global_owner[g] == k)
        global_shared_off_[g] = place(m_.globals[g], at);
    for (std::size_t fi = 0; fi < nf; ++fi) {
      if (owner_of(kernels_of[fi]) != k) continue;
      const auto& f = m_.functions[fi];
      for (std::size_t l = 0; l < f.locals.size(); ++l)
        if (f.locals[l].space == Space::shared) local_shared_off_[fi][l] = place(f.locals[l], at);
    }
    kernel_shared_used_[k] = at;
    largest = std::max(largest, at);
  }
  // The functions a lazily compiled kernel's translation unit holds: what it calls, what it
  // takes the address of, and for indirect calls every address-taken function.
  emit_.assign(nf, opt_.only_function < 0);
  if (opt_.only_function >= 0 && static_cast<std::size_t>(opt_.only_function) < nf) {
    std::vector<std::uint32_t> stack{static_cast<std::uint32_t>(opt_.only_function)};
    emit_[stack.back()] = true;
    auto push = [&](std::uint32_t c) {
      if (c < nf && !emit_[c]) {
        emit_[c] = true;
        stack.push_back(c);
      }
    };
    while (!stack.empty()) {
      const std::uint32_t f = stack.back();
      stack.pop_back();
      for (auto c : callees[f]) push(c);
      for (auto c : refs[f]) push(c);
      if (indirect_caller[f])
        for (std::uint32_t c = 0; c < nf; ++c)
          if (address_taken[c]) push(c);
    }
  }
  static_shared_ = round_up(largest, max_align);
  for (auto& o : global_shared_off_)
    if (o == ~std::uint64_t{0}) o = static_shared_;
  for (auto& v : local_shared_off_)
    for (auto& o : v)
      if (o == ~std::uint64_t{0}) o = static_shared_;
  res_.static_shared_bytes = static_shared_;
}

// ---- barrier reach -----------------------------------------------------------------------------

bool is_sync_op(const Instruction& i) {
  switch (i.op) {
    case Opcode::bar:
    case Opcode::barrier:
    case Opcode::bar_red:
    case Opcode::shfl:
    case Opcode::vote:
    case Opcode::match:
    case Opcode::redux:
    case Opcode::activemask:
    case Opcode::bar_warp_sync:
    case Opcode::elect:
    case Opcode::wmma_load:
    case Opcode::wmma_store:
    case Opcode::wmma_mma:
    case Opcode::mma:
    case Opcode::mma_sp:
    case Opcode::ldmatrix:
    case Opcode::stmatrix:
    case Opcode::movmatrix:
    case Opcode::wgmma:
    case Opcode::nanosleep:  // a yield point (ptx-rest): never run on the barrier-free path
      return true;
    case Opcode::mbarrier:
      // Only test_wait/try_wait wait (yield points); init, arrive, arrive_drop, expect_tx,
      // complete_tx, pending_count and inval never block, in the kernel or in a .func it calls.
      return i.mode == Mode::wait;
    default:
      return false;
  }
}

// Which functions reach a CTA barrier or a warp collective, directly or through calls (an
// indirect call reaches anything). Kept local: the emitter only needs the union.
void Emitter::analyse_reach() {
  const std::size_t n = m_.functions.size();
  reaches_sync_.assign(n, false);
  std::vector<std::vector<std::size_t>> callees(n);
  for (std::size_t fi = 0; fi < n; ++fi) {
    if (fi < yields_.size() && yields_[fi]) reaches_sync_[fi] = true;
    for (const auto& i : m_.functions[fi].body) {
      if (is_sync_op(i)) reaches_sync_[fi] = true;
      if (i.op == Opcode::call && i.operands.size() >= 2) {
        const auto& t = i.operands[1];
        if (t.kind == Operand::Kind::symbol && t.sym.kind == SymbolRef::Kind::function)
          callees[fi].push_back(t.sym.index);
        else
          reaches_sync_[fi] = true;  // indirect: anything
      }
    }
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (std::size_t fi = 0; fi < n; ++fi)
      if (!reaches_sync_[fi])
        for (auto c : callees[fi])
          if (c < n && reaches_sync_[c]) {
            reaches_sync_[fi] = true;
            changed = true;
            break;
          }
  }
}

// ---- module variables ------------------------------------------------------------------------

void Emitter::emit_globals() {
  global_names_.resize(m_.globals.size());
  if (opt_.external_globals) {
    std::size_t slots = 0;
    for (const auto& v : m_.globals) slots += in_module_storage(v) ? 1 : 0;
    if (slots > 0)
      o_ << "extern \"C\" { __attribute__((visibility(\"default\"), used)) char* "
            "cudamux_ptx_globals["
         << slots << "] = {}; }\n";
  }
  std::ostringstream ctor;
  for (std::size_t g = 0; g < m_.globals.size(); ++g) {
    const auto& v = m_.globals[g];
    if (v.space == Space::shared) {
      global_names_[g] = ident(v.name);
      o_ << "// .shared " << v.name << ": window offset " << global_shared_off_[g] << "\n";
      continue;
    }
    if (v.space != Space::global && v.space != Space::const_ && v.space != Space::local) {
      global_names_[g] = "cudamux_v_" + ident(v.name);
      o_ << "// " << v.name << ": state space not supported (texture/surface reference)\n";
      o_ << "static __attribute__((aligned(16))) unsigned char " << global_names_[g] << "[16];\n";
      res_.unsupported.push_back(
          {v.loc, "module variable '" + v.name + "' in an unsupported state space"});
      continue;
    }
    const bool exported = plain_ident(v.name) && v.space != Space::local;
    if (opt_.external_globals && in_module_storage(v)) {
      // Module storage (globals.hpp): the loader fills the table with the variables' addresses.
      o_ << "// " << v.name << ": module storage, slot " << external_slots_ << "\n";
      global_names_[g] = "cudamux_ptx_globals[" + std::to_string(external_slots_++) + "]";
      continue;
    }
    // Exported under its PTX name by an asm label; the C++ name is prefixed, as the kernels'.
    global_names_[g] =
        exported ? "cudamux_g_" + v.name : "cudamux_v_" + ident(v.name) + "_" + std::to_string(g);
    std::uint64_t size = var_size(v);
    // `[]` with an initializer: the initializer gives the size.
    if (size == 0 && !v.init.empty()) size = v.init.size() * tsize(v.type) * (v.vec ? v.vec : 1);
    const std::uint64_t alloc = std::max<std::uint64_t>(size, 1);
    std::vector<unsigned char> bytes(alloc, 0);
    const unsigned es = tsize(v.type);
    for (std::size_t k = 0; k < v.init.size(); ++k) {
      const auto& in = v.init[k];
      const std::uint64_t at = k * es;
      if (at + es > alloc) break;
      if (in.is_symbol) {
        std::string target;
        if (in.sym.kind == SymbolRef::Kind::global && in.sym.index < m_.globals.size()) {
          const auto& t = m_.globals[in.sym.index];
          if (t.space == Space::shared) {
            res_.unsupported.push_back(
                {v.loc, "initializer of '" + v.name + "' takes the address of shared memory"});
            continue;
          }
          target = "(const char*)" + global_names_.at(in.sym.index);  // emitted before
          if (in.sym.index >= g) {
            res_.unsupported.push_back(
                {v.loc, "initializer of '" + v.name + "' names a later variable"});
            continue;
          }
        } else if (in.sym.kind == SymbolRef::Kind::function && in.sym.index < m_.functions.size()) {
          target = "(const char*)(void*)&" + fn_names_[in.sym.index];
        } else {
          res_.unsupported.push_back({v.loc, "initializer of '" + v.name + "': bad symbol"});
          continue;
        }
        // `0xFF00(generic(sym)+4)`: one byte of an address in a byte array.
        std::string masked;
        if (in.mask != 0)
          masked = " & " + hex(in.mask) + ") >> " + std::to_string(__builtin_ctzll(in.mask));
        ctor << "  { u64 a = " << (masked.empty() ? "" : "(") << "::cudamux_ptx_rt::ga(" << target
             << " + " << in.offset << ")" << masked << "; __builtin_memcpy(" << global_names_[g]
             << " + " << at << ", &a, " << std::min<unsigned>(es, 8) << "); }\n";
        continue;
      }
      for (unsigned b = 0; b < es && b < 8; ++b)
        bytes[at + b] = static_cast<unsigned char>(in.bits >> (8 * b));
    }
    o_ << line(v.loc);
    if (v.space == Space::local) {
      // Module-scope .local (deprecated in PTX): per OS thread, which is per thread unless
      // the block runs on fibers.
      o_ << "static thread_local __attribute__((aligned(" << var_align(v) << "))) ";
    } else if (exported) {
      // The mock finds globals by name and size (cuModuleGetGlobal): exported, writable.
      // (`extern "C" { }` form: a definition, without g++'s warning about initialised externs)
      o_ << "extern \"C\" { __attribute__((visibility(\"default\"), used, aligned(" << var_align(v)
         << ")" << (v.is_weak || v.is_common ? ", weak" : "") << ")) ";
    } else {
      o_ << "static __attribute__((used, aligned(" << var_align(v) << "))) ";
    }
    if (v.is_extern && v.init.empty() && size == 0)
      res_.unsupported.push_back(
          {v.loc, "external variable '" + v.name + "' (defined in another module)"});
    o_ << "unsigned char " << global_names_[g] << "[" << alloc << "]";
    if (exported && v.space != Space::local) o_ << " __asm__(" << quote(v.name) << ")";
    bool any = false;
    for (auto b : bytes) any = any || b != 0;
    if (any) {
      o_ << " = {";
      for (std::size_t b = 0; b < bytes.size(); ++b) o_ << (b ? "," : "") << unsigned(bytes[b]);
      o_ << "}";
    } else if (v.space != Space::local) {
      o_ << " = {}";
    }
    o_ << (exported && v.space != Space::local ? "; }\n" : ";\n");
  }
  const std::string c = ctor.str();
  if (!c.empty())
    o_ << "__attribute__((constructor)) static void cudamux_ptx_init_symbols() {\n" << c << "}\n";
}

// ---- functions -----------------------------------------------------------------------------

std::string Emitter::fn_signature(std::size_t fi, const std::string& name) const {
  const auto& f = m_.functions[fi];
  std::string s = "void " + name + "(";
  bool first = true;
  for (std::size_t r = 0; r < f.returns.size(); ++r) {
    s += std::string(first ? "" : ", ") + "char* pr" + std::to_string(r);
    first = false;
  }
  for (std::size_t p = 0; p < f.params.size(); ++p) {
    s += std::string(first ? "" : ", ") + "const char* pa" + std::to_string(p);
    first = false;
  }
  return s + ")";
}

std::string entry_param_type(const Param& p) {
  if (!p.dims.empty() || p.align > tsize(p.type))
    return "cudamux_pb_" + std::to_string(param_size(p)) + "_" + std::to_string(param_align(p));
  if (p.type == Type::pred) return "u8";
  return storage(p.type);
}

void Emitter::emit_function_decl(std::size_t fi) {
  const auto& f = m_.functions[fi];
  if (f.is_entry) {
    // Parameter types: scalars by storage (size = alignment), byte arrays as aligned structs.
    for (const auto& p : f.params)
      if (!p.dims.empty() || p.align > tsize(p.type)) {
        const auto key = std::make_pair(param_size(p), static_cast<std::uint32_t>(param_align(p)));
        if (bytes_structs_.insert(key).second)
          o_ << "struct alignas(" << key.second << ") cudamux_pb_" << key.first << "_" << key.second
             << " { unsigned char b[" << std::max<std::uint64_t>(key.first, 1) << "]; };\n";
      }
    // The C++ name is ours (a kernel named `st` or `ld` would meet the runtime's helpers of
    // that name); the exported symbol, which the module's lookup reads, is the PTX name.
    o_ << "extern \"C\" __attribute__((used, visibility(\"default\"))) void " << fn_names_[fi]
       << "(";
    for (std::size_t p = 0; p < f.params.size(); ++p)
      o_ << (p ? ", " : "") << entry_param_type(f.params[p]);
    o_ << ")";
    if (!opt_.library) o_ << " __asm__(" << quote(f.name) << ")";
    o_ << ";\n";
    return;
  }
  o_ << "static " << fn_signature(fi, fn_names_[fi]) << ";\n";
}

}  // namespace

bool provides_external_function(std::string_view name) {
  // The names emit_extern_wrapper gives a body: the device runtime's, and the syscalls of CUDA's
  // device runtime library (cudadevrt) that dynamic parallelism reaches.
  static constexpr std::string_view kProvided[] = {
      "vprintf",
      "__assertfail",
      "malloc",
      "free",
      "cudaGraphSetConditional",
      "__cudaCDP2GetParameterBufferV2",
      "cudaGetParameterBufferV2",
      "__cudaCDP2LaunchDeviceV2",
      "cudaLaunchDeviceV2",
      "__cuda_syscall_cnpv2GetParameterBufferV2",
      "__cuda_syscall_cnpv2LaunchDeviceV2",
      "__cuda_syscall_cnpv2SetLastError",
      "__cuda_syscall_cnpv2GetLastError",
      "__cuda_syscall_cnpv2StreamCreate",
      "__cuda_syscall_cnpv2StreamDestroy",
  };
  return std::find(std::begin(kProvided), std::end(kProvided), name) != std::end(kProvided);
}

namespace {

void Emitter::emit_extern_wrapper(std::size_t fi) {
  const auto& f = m_.functions[fi];
  o_ << line(f.loc) << "static " << fn_signature(fi, fn_names_[fi]) << " {\n";
  auto arg = [&](std::size_t p, const char* t) {
    return std::string("::cudamux_ptx_rt::ld<") + t + ">(pa" + std::to_string(p) + ")";
  };
  const std::string& n = f.name;
  if (n == "vprintf" && f.params.size() == 2) {
    o_ << "  const int r = ::cudamux::ptx::vprintf((const char*)::cudamux_ptx_rt::gp("
       << arg(0, "u64") << "), (const char*)::cudamux_ptx_rt::gp(" << arg(1, "u64") << "));\n";
    if (!f.returns.empty())
      o_ << "  ::cudamux_ptx_rt::st<s32>(pr0, r);\n";
    else
      o_ << "  (void)r;\n";
  } else if (n == "__assertfail" && f.params.size() >= 4) {
    o_ << "  ::cudamux::ptx::assertfail((const char*)::cudamux_ptx_rt::gp(" << arg(0, "u64")
       << "), (const char*)::cudamux_ptx_rt::gp(" << arg(1, "u64") << "), " << arg(2, "u32")
       << ", (const char*)::cudamux_ptx_rt::gp(" << arg(3, "u64") << "));\n";
  } else if (n == "malloc" && f.params.size() == 1 && f.returns.size() == 1) {
    o_ << "  ::cudamux_ptx_rt::st<u64>(pr0, ::cudamux_ptx_rt::ga(malloc(" << arg(0, "u64")
       << ")));\n";
  } else if (n == "free" && f.params.size() == 1) {
    o_ << "  free(::cudamux_ptx_rt::gp(" << arg(0, "u64") << "));\n";
  } else if ((n == "__cudaCDP2GetParameterBufferV2" || n == "cudaGetParameterBufferV2" ||
              // what CUDA's device runtime library (cudadevrt, linked by nvcc) calls
              n == "__cuda_syscall_cnpv2GetParameterBufferV2") &&
             f.params.size() == 4 && f.returns.size() == 1) {
    // Dynamic parallelism (nvcc -rdc with the device runtime): (kernel, dim3 grid, dim3 block,
    // shared bytes) -> the child's parameter buffer.
    auto dim3_of = [&](std::size_t p) {
      const std::string a = "pa" + std::to_string(p);
      return "cudamux_u3{::cudamux_ptx_rt::ld<u32>(" + a + "), ::cudamux_ptx_rt::ld<u32>(" + a +
             " + 4), ::cudamux_ptx_rt::ld<u32>(" + a + " + 8)}";
    };
    o_ << "  ::cudamux_ptx_rt::st<u64>(pr0, ::cudamux_ptx_rt::ga(cudamux_cdp_parameter_buffer("
       << "::cudamux_ptx_rt::gp(" << arg(0, "u64") << "), " << dim3_of(1) << ", " << dim3_of(2)
       << ", " << arg(3, "u32") << ")));\n";
  } else if ((n == "__cudaCDP2LaunchDeviceV2" || n == "cudaLaunchDeviceV2" ||
              n == "__cuda_syscall_cnpv2LaunchDeviceV2") &&
             f.params.size() == 2) {
    o_ << "  const int r = cudamux_cdp_launch(::cudamux_ptx_rt::gp(" << arg(0, "u64")
       << "), ::cudamux_ptx_rt::gp(" << arg(1, "u64") << "));\n";
    if (!f.returns.empty())
      o_ << "  ::cudamux_ptx_rt::st<s32>(pr0, r);\n";
    else
      o_ << "  (void)r;\n";
  } else if (n == "__cuda_syscall_cnpv2SetLastError" && f.params.size() == 1) {
    // cudadevrt records a failed device-side call's error; the mock keeps no device-side error
    // state (the failed launch's code is what the caller returns): the error passes through.
    if (!f.returns.empty())
      o_ << "  ::cudamux_ptx_rt::st<s32>(pr0, " << arg(0, "s32") << ");\n";
    else
      o_ << "  (void)pa0;\n";
  } else if (n == "__cuda_syscall_cnpv2GetLastError" && f.params.empty()) {
    for (std::size_t r = 0; r < f.returns.size(); ++r)
      o_ << "  ::cudamux_ptx_rt::st<s32>(pr" << r << ", 0);\n";
  } else if (n == "__cuda_syscall_cnpv2StreamCreate" && f.params.size() == 2) {
    // Device-side streams: every child grid runs after its parent grid, in launch order,
    // whichever stream it names (a schedule CUDA allows), so a stream is only a handle.
    o_ << "  ::cudamux_ptx_rt::st<u64>(::cudamux_ptx_rt::gp(" << arg(0, "u64")
       << "), 0x57ull);\n  (void)pa1;\n";
    for (std::size_t r = 0; r < f.returns.size(); ++r)
      o_ << "  ::cudamux_ptx_rt::st<s32>(pr" << r << ", 0);\n";
  } else if (n == "__cuda_syscall_cnpv2StreamDestroy" && f.params.size() == 1) {
    o_ << "  (void)pa0;\n";
    for (std::size_t r = 0; r < f.returns.size(); ++r)
      o_ << "  ::cudamux_ptx_rt::st<s32>(pr" << r << ", 0);\n";
  } else if (n == "cudaGraphSetConditional" && f.params.size() == 2 && f.returns.empty()) {
    // The device runtime's setter of a conditional node's handle (CUDA 12.3+): the handle is
    // the core's own value (not a device address), passed through unchanged.
    o_ << "  cudamux_graph_set_conditional(" << arg(0, "u64") << ", " << arg(1, "u32") << ");\n";
  } else {
    for (std::size_t r = 0; r < f.returns.size(); ++r) o_ << "  (void)pr" << r << ";\n";
    for (std::size_t p = 0; p < f.params.size(); ++p) o_ << "  (void)pa" << p << ";\n";
    o_ << "  ::cudamux::ptx::trap("
       << quote("unsupported external function '" + n + "' (not part of the mock's device runtime)")
       << ");\n";
    res_.unsupported.push_back({f.loc, "external function '" + n + "' is not supported"});
  }
  o_ << "}\n";
}

void Emitter::emit_function(std::size_t fi) {
  const auto& f = m_.functions[fi];
  f_ = &f;
  fi_ = fi;
  uses_carry_ = false;
  // Register and local names.
  reg_names_.clear();
  std::set<std::string> taken;
  for (std::size_t r = 0; r < f.registers.size(); ++r) {
    std::string n = "r_" + ident(f.registers[r].name);
    if (!taken.insert(n).second) n += "_" + std::to_string(r);
    taken.insert(n);
    reg_names_.push_back(n);
  }
  local_names_.clear();
  for (std::size_t l = 0; l < f.locals.size(); ++l)
    local_names_.push_back("l_" + ident(f.locals[l].name) + "_" + std::to_string(l));

  // The body first (it tells which labels are used), then the function around it.
  std::set<std::uint32_t> targets;
  for (const auto& i : f.body)
    for (const auto& op : i.operands) {
      if (i.op != Opcode::bra && i.op != Opcode::brx_idx) break;
      if (op.kind == Operand::Kind::symbol && op.sym.kind == SymbolRef::Kind::label)
        targets.insert(op.sym.index);
      for (const auto& e : op.elems)
        if (e.kind == Operand::Kind::symbol && e.sym.kind == SymbolRef::Kind::label)
          targets.insert(e.sym.index);
    }
  for (const auto& tl : f.target_lists)
    if (!tl.calls) targets.insert(tl.targets.begin(), tl.targets.end());
  std::vector<std::vector<std::uint32_t>> labels_at(f.body.size() + 1);
  for (std::size_t l = 0; l < f.labels.size(); ++l)
    if (targets.count(static_cast<std::uint32_t>(l)) && f.labels[l].instruction <= f.body.size())
      labels_at[f.labels[l].instruction].push_back(static_cast<std::uint32_t>(l));
  std::ostringstream body;
  std::vector<std::string> stmts(f.body.size());  // for the split twin
  for (std::size_t k = 0; k <= f.body.size(); ++k) {
    for (auto l : labels_at[k]) body << "L_" << l << ":;\n";
    if (k == f.body.size()) break;
    const auto& ins = f.body[k];
    bad_.clear();
    std::string s = instruction(ins);
    if (!bad_.empty()) {
      const std::string what = "unsupported instruction '" + ins.raw_opcode + "' at line " +
                               std::to_string(ins.loc.line) +
                               (bad_ == "-" ? std::string() : " (" + bad_ + ")");
      if (unsupported_seen_.insert(ins.raw_opcode + "|" + bad_).second)
        res_.unsupported.push_back({ins.loc, what});
      s = "{ ::cudamux::ptx::trap(" + quote(what) + "); return; }";
    }
    stmts[k] = s;
    if (k < yield_before_[fi].size() && yield_before_[fi][k] && ins.op != Opcode::nanosleep)
      s = "::cudamux::ptx::yield(); " + s;
    body << line(ins.loc);
    if (ins.guarded && ins.guard_reg < reg_names_.size())
      body << "if (" << (ins.guard_negated ? "!" : "") << reg_names_[ins.guard_reg] << ") { " << s
           << " }\n";
    else
      body << s << "\n";
  }

  bool calls = false;
  for (const auto& i : f.body) calls = calls || i.op == Opcode::call;
  // Yield points are stops of the split twin (a spinning thread parks for one pass).
  const bool split_eligible = f.is_entry && opt_.split_barriers && !(func_exit_ && calls) &&
                              detail::splittable(m_, fi, reaches_sync_, yield_before_[fi]);
  // An empty twin: too large to be worth compiling (EmitOptions::max_split_region_bytes).
  const std::string split_twin =
      split_eligible ? emit_split_twin(fi, stmts, labels_at, false) : std::string();
  const bool split = !split_twin.empty();
  o_ << line(f.loc);
  if (f.is_entry) {
    o_ << "extern \"C\" __attribute__((used, visibility(\"default\"))) void " << fn_names_[fi]
       << "(";
    for (std::size_t p = 0; p < f.params.size(); ++p)
      o_ << (p ? ", " : "") << entry_param_type(f.params[p]) << " kp" << p;
    o_ << ") {\n";
    if (split) {
      // The runtime runs a split kernel's blocks through its twin only (PER_BLOCK): this
      // definition just gives the kernel its symbol. Its body as written, never run, cost g++
      // as much as the twin for unrolled kernels (a wmma GEMM's: 32-96 s at -O3 here).
      for (std::size_t p = 0; p < f.params.size(); ++p) o_ << "  (void)kp" << p << ";\n";
      o_ << "  ::cudamux::ptx::trap(\"a split kernel's per-thread body ran\");\n}\n";
      o_ << split_twin;
      f_ = nullptr;
      return;
    }
  } else {
    o_ << "static " << fn_signature(fi, fn_names_[fi]) << " {\n";
    for (std::size_t r = 0; r < f.returns.size(); ++r) o_ << "  (void)pr" << r << ";\n";
    for (std::size_t p = 0; p < f.params.size(); ++p) o_ << "  (void)pa" << p << ";\n";
  }
  o_ << "  using namespace ::cudamux_ptx_rt;\n";
  o_ << "  [[maybe_unused]] char* const cudamux_w = static_cast<char*>(cudamux_dyn_shared) - "
     << static_shared_ << ";\n";
  if (uses_carry_) o_ << "  bool cudamux_carry = false;\n";
  for (std::size_t r = 0; r < f.registers.size(); ++r) {
    const auto& reg = f.registers[r];
    o_ << "  [[maybe_unused]] " << storage(reg.type) << " " << reg_names_[r];
    if (reg.vec > 1) o_ << "[" << unsigned(reg.vec) << "]";
    o_ << "{};\n";
  }
  for (std::size_t l = 0; l < f.locals.size(); ++l) {
    const auto& v = f.locals[l];
    if (v.space == Space::shared) continue;
    o_ << "  [[maybe_unused]] alignas(" << var_align(v) << ") unsigned char " << local_names_[l]
       << "[" << std::max<std::uint64_t>(var_size(v), 1) << "];\n";
  }
  o_ << body.str() << "}\n";
  if (!split_eligible && f.is_entry && opt_.flat_kernels && !opt_.library && !reaches_sync_[fi] &&
      detail::flattenable(f))
    o_ << emit_split_twin(fi, stmts, labels_at, true);  // barrier-free: one loop over the threads
  f_ = nullptr;
}

// Barrier splitting (emit_split.cpp): hands over this function's translation. flat: the
// kernel reaches no barrier, its twin is a plain loop over the block's threads (emit_flat).
std::string Emitter::emit_split_twin(std::size_t fi, const std::vector<std::string>& stmts,
                                     const std::vector<std::vector<std::uint32_t>>& labels_at,
                                     bool flat) {
  const auto& f = m_.functions[fi];
  detail::SplitKernel k;
  k.f = &f;
  for (std::size_t p = 0; p < f.params.size(); ++p) {
    k.params += (p ? ", " : "") + entry_param_type(f.params[p]) + " kp" + std::to_string(p);
    k.args += (p ? ", kp" : "kp") + std::to_string(p);
  }
  k.kernel = fn_names_[fi];
  k.prologue =
      "  using namespace ::cudamux_ptx_rt;\n  [[maybe_unused]] char* const cudamux_w = "
      "static_cast<char*>(cudamux_dyn_shared) - " +
      std::to_string(static_shared_) + ";\n";
  k.uses_carry = uses_carry_;
  k.reg_names = reg_names_;
  for (const auto& r : f.registers) k.reg_storage.push_back(storage(r.type));
  k.local_names = local_names_;
  for (const auto& v : f.locals) {
    k.local_size.push_back(std::max<std::uint64_t>(var_size(v), 1));
    k.local_align.push_back(var_align(v));
  }
  k.stmts = stmts;
  k.labels_at = labels_at;
  k.yield_before = yield_before_[fi];
  k.rd = [this](const Operand& o, Type t) { return rd(o, t); };
  k.wr = [this](const Operand& d, Type t, const std::string& v) { return wr(d, t, v); };
  k.addr = [this](const Operand& a, Space sp) { return addr(a, sp); };
  k.line = [this](const SourceLoc& l) { return line(l); };
  k.outline_regions_above = opt_.outline_regions_above;
  k.max_split_region_bytes = opt_.max_split_region_bytes;
  twins_.resize(m_.functions.size());
  twins_[fi] = (flat ? "cudamux_flat_" : "cudamux_split_") + std::to_string(fi);
  std::string twin = flat ? detail::emit_flat(k, twins_[fi]) : detail::emit_split(k, twins_[fi]);
  if (twin.empty()) twins_[fi].clear();  // too large: the kernel stays on fibers
  return twin;
}

// ---- operands --------------------------------------------------------------------------------

std::string Emitter::special(const Operand& o) {
  static const char* const comp[] = {"x", "y", "z"};
  const unsigned c = o.component < 3 ? o.component : 0;
  switch (o.special) {
    case SpecialReg::tid:
      return std::string("threadIdx.") + comp[c];
    case SpecialReg::ntid:
      return std::string("blockDim.") + comp[c];
    case SpecialReg::ctaid:
      return std::string("blockIdx.") + comp[c];
    case SpecialReg::nctaid:
      return std::string("gridDim.") + comp[c];
    case SpecialReg::laneid:
      return "::cudamux::ptx::laneid()";
    case SpecialReg::warpid:
      return "::cudamux::ptx::warpid()";
    case SpecialReg::nwarpid:
      return "::cudamux::ptx::nwarpid()";
    case SpecialReg::smid:
      return "::cudamux::ptx::smid()";
    case SpecialReg::nsmid:
      return "::cudamux::ptx::nsmid()";
    case SpecialReg::lanemask_eq:
      return "::cudamux::ptx::lanemask(0)";
    case SpecialReg::lanemask_le:
      return "::cudamux::ptx::lanemask(1)";
    case SpecialReg::lanemask_lt:
      return "::cudamux::ptx::lanemask(2)";
    case SpecialReg::lanemask_ge:
      return "::cudamux::ptx::lanemask(3)";
    case SpecialReg::lanemask_gt:
      return "::cudamux::ptx::lanemask(4)";
    case SpecialReg::clock:
      return "static_cast<u32>(::cudamux::ptx::clock64())";
    case SpecialReg::clock_hi:
      return "static_cast<u32>(::cudamux::ptx::clock64() >> 32)";
    case SpecialReg::clock64:
      return "::cudamux::ptx::clock64()";
    case SpecialReg::globaltimer:
      return "::cudamux::ptx::globaltimer()";
    case SpecialReg::globaltimer_lo:
      return "static_cast<u32>(::cudamux::ptx::globaltimer())";
    case SpecialReg::globaltimer_hi:
      return "static_cast<u32>(::cudamux::ptx::globaltimer() >> 32)";
    case SpecialReg::gridid:
      return "static_cast<u64>(1)";
    // Clusters: every block is its own cluster of one.
    case SpecialReg::clusterid:
      return std::string("blockIdx.") + comp[c];
    case SpecialReg::nclusterid:
      return std::string("gridDim.") + comp[c];
    case SpecialReg::cluster_ctaid:
      return "0u";
    case SpecialReg::cluster_nctaid:
      return "1u";
    case SpecialReg::cluster_ctarank:
      return "0u";
    case SpecialReg::cluster_nctarank:
      return "1u";
    case SpecialReg::is_explicit_cluster:
      return "false";
    case SpecialReg::envreg:
      return "::cudamux::ptx::envreg(" + std::to_string(o.component) + "u)";
    case SpecialReg::pm:
    case SpecialReg::pm64:
    case SpecialReg::reserved_smem_offset_begin:
    case SpecialReg::reserved_smem_offset_end:
    case SpecialReg::reserved_smem_offset_cap:
    case SpecialReg::reserved_smem_offset_2:
    case SpecialReg::current_graph_exec:
      return "0u";
    case SpecialReg::dynamic_smem_size:
    case SpecialReg::total_smem_size:
    case SpecialReg::aggr_smem_size:
      fail("special register not available on the mock");
      return "0u";
  }
  fail("unknown special register");
  return "0u";
}

// Pointer (char*) to a symbol's storage plus offset.
std::string Emitter::sym_pointer(const SymbolRef& s, std::int64_t offset) {
  const std::string off = offset ? " + " + std::to_string(offset) : std::string();
  switch (s.kind) {
    case SymbolRef::Kind::global: {
      if (s.index >= m_.globals.size()) break;
      const auto& v = m_.globals[s.index];
      if (v.space == Space::shared)
        return "(cudamux_w + " + std::to_string(global_shared_off_[s.index]) + off + ")";
      return "((char*)" + global_names_[s.index] + off + ")";
    }
    case SymbolRef::Kind::local: {
      if (!f_ || s.index >= f_->locals.size()) break;
      if (f_->locals[s.index].space == Space::shared)
        return "(cudamux_w + " + std::to_string(local_shared_off_[fi_][s.index]) + off + ")";
      return "((char*)" + local_names_[s.index] + off + ")";
    }
    case SymbolRef::Kind::param: {
      if (!f_) break;
      if (f_->is_entry) {
        if (s.index >= f_->params.size()) break;
        return "((char*)&kp" + std::to_string(s.index) + off + ")";
      }
      if (s.index < f_->params.size()) return "((char*)pa" + std::to_string(s.index) + off + ")";
      if (s.index - f_->params.size() < f_->returns.size())
        return "(pr" + std::to_string(s.index - f_->params.size()) + off + ")";
      break;
    }
    case SymbolRef::Kind::function:
      if (s.index >= m_.functions.size()) break;
      return "((char*)(void*)&" + fn_names_[s.index] + off + ")";
    default:
      break;
  }
  fail("symbol not addressable");
  return "((char*)nullptr)";
}

// A symbol used as a value: its address (shared variables: their offset in the window).
std::string Emitter::sym_value(const SymbolRef& s, std::int64_t offset, Type t) {
  std::uint64_t shared_off = ~std::uint64_t{0};
  if (s.kind == SymbolRef::Kind::global && s.index < m_.globals.size() &&
      m_.globals[s.index].space == Space::shared)
    shared_off = global_shared_off_[s.index];
  if (s.kind == SymbolRef::Kind::local && f_ && s.index < f_->locals.size() &&
      f_->locals[s.index].space == Space::shared)
    shared_off = local_shared_off_[fi_][s.index];
  std::string v;
  if (shared_off != ~std::uint64_t{0})
    v = "static_cast<u64>(" + hex(shared_off + static_cast<std::uint64_t>(offset)) + ")";
  else if (s.kind == SymbolRef::Kind::label) {
    fail("address of a label");
    v = "0ull";
  } else
    v = "ga(" + sym_pointer(s, offset) + ")";
  return std::string("mv<") + storage(t) + ", u64>(" + v + ")";
}

std::string Emitter::rd(const Operand& o, Type t) {
  const char* st = storage(t);
  switch (o.kind) {
    case Operand::Kind::reg: {
      if (!f_ || o.reg >= f_->registers.size()) {
        fail("bad register");
        return std::string(st) + "{}";
      }
      const auto& r = f_->registers[o.reg];
      std::string v = reg_names_[o.reg];
      if (o.negated) return "!" + v;
      if (std::string(storage(r.type)) == st) return v;
      return std::string("mv<") + st + ", " + storage(r.type) + ">(" + v + ")";
    }
    case Operand::Kind::imm_int: {
      if (t == Type::f32) return "static_cast<float>(static_cast<s64>(" + hex(o.bits) + "))";
      if (t == Type::f64) return "static_cast<double>(static_cast<s64>(" + hex(o.bits) + "))";
      if (t == Type::pred) return o.bits ? "true" : "false";
      return std::string("static_cast<") + st + ">(" + hex(o.bits) + ")";
    }
    case Operand::Kind::imm_float: {
      const std::string f32 =
          "__builtin_bit_cast(float, static_cast<u32>(" + hex(o.bits & 0xffffffffu) + "))";
      const std::string f64 = "__builtin_bit_cast(double, static_cast<u64>(" + hex(o.bits) + "))";
      if (t == Type::f32) return o.is_f32 ? f32 : "static_cast<float>(" + f64 + ")";
      if (t == Type::f64) return o.is_f32 ? "static_cast<double>(" + f32 + ")" : f64;
      if (t == Type::f16)
        return "::cudamux::ptx::f32_to_f16_rn(" +
               (o.is_f32 ? f32 : "static_cast<float>(" + f64 + ")") + ")";
      if (t == Type::bf16)
        return "::cudamux::ptx::f32_to_bf16_rn(" +
               (o.is_f32 ? f32 : "static_cast<float>(" + f64 + ")") + ")";
      // Integer contexts take the literal's bits.
      return std::string("static_cast<") + st + ">(" +
             hex(o.is_f32 ? (o.bits & 0xffffffffu) : o.bits) + ")";
    }
    case Operand::Kind::special: {
      const std::string v = special(o);
      return std::string("mv<") + st + ">(" + v + ")";
    }
    case Operand::Kind::symbol:
      return sym_value(o.sym, o.offset, t);
    case Operand::Kind::sink:
      return std::string(st) + "{}";
    default:
      break;
  }
  fail("operand form not supported here");
  return std::string(st) + "{}";
}

std::string Emitter::wr(const Operand& d, Type t, const std::string& value) {
  if (d.kind == Operand::Kind::sink) return "(void)(" + value + ");";
  if (d.kind != Operand::Kind::reg || !f_ || d.reg >= f_->registers.size()) {
    fail("destination is not a register");
    return ";";
  }
  const auto& r = f_->registers[d.reg];
  const char* rs = storage(r.type);
  const char* st = storage(t);
  if (std::string(rs) == st) return reg_names_[d.reg] + " = " + value + ";";
  return reg_names_[d.reg] + " = mv<" + rs + ", " + st + ">(" + value + ");";
}

std::string Emitter::addr(const Operand& a, Space sp) {
  if (a.kind == Operand::Kind::symbol) return sym_pointer(a.sym, a.offset);
  if (a.kind != Operand::Kind::address) {
    fail("expected an address");
    return "((char*)nullptr)";
  }
  const std::string off = a.offset ? " + " + std::to_string(a.offset) : std::string();
  if (a.base_is_reg) {
    const std::string v = rd(Operand{Operand::Kind::reg, a.reg}, Type::u64);
    if (sp == Space::shared) return "(cudamux_w + " + v + off + ")";
    return "(gp(" + v + ")" + off + ")";
  }
  if (a.sym.kind != SymbolRef::Kind::none) return sym_pointer(a.sym, a.offset);
  // Absolute address.
  if (sp == Space::shared) return "(cudamux_w + " + std::to_string(a.offset) + ")";
  return "gp(" + hex(static_cast<std::uint64_t>(a.offset)) + ")";
}

// ---- instructions ----------------------------------------------------------------------------

const Operand& opnd(const Instruction& i, std::size_t k) {
  static const Operand none{};
  return k < i.operands.size() ? i.operands[k] : none;
}
Type type0(const Instruction& i) { return i.types.empty() ? Type::none : i.types[0]; }

std::string Emitter::instruction(const Instruction& ins) {
  switch (ins.op) {
    case Opcode::add:
    case Opcode::sub:
    case Opcode::mul:
    case Opcode::mad:
    case Opcode::fma:
    case Opcode::mul24:
    case Opcode::mad24:
    case Opcode::sad:
    case Opcode::div:
    case Opcode::rem:
    case Opcode::abs:
    case Opcode::neg:
    case Opcode::min:
    case Opcode::max:
    case Opcode::addc:
    case Opcode::subc:
    case Opcode::madc:
    case Opcode::rcp:
    case Opcode::sqrt:
    case Opcode::rsqrt:
    case Opcode::sin:
    case Opcode::cos:
    case Opcode::lg2:
    case Opcode::ex2:
    case Opcode::tanh:
    case Opcode::copysign:
    case Opcode::testp:
    case Opcode::popc:
    case Opcode::clz:
    case Opcode::bfind:
    case Opcode::fns:
    case Opcode::brev:
    case Opcode::bmsk:
    case Opcode::bfe:
    case Opcode::bfi:
    case Opcode::dp4a:
    case Opcode::dp2a:
      return arith(ins);
    case Opcode::set:
    case Opcode::setp:
    case Opcode::selp:
    case Opcode::slct:
      return compare_select(ins);
    case Opcode::and_:
    case Opcode::or_:
    case Opcode::xor_:
    case Opcode::not_:
    case Opcode::cnot:
    case Opcode::lop3:
    case Opcode::shf:
    case Opcode::shl:
    case Opcode::shr:
    case Opcode::prmt:
      return logic(ins);
    case Opcode::mov:
      return move(ins);
    case Opcode::cvt:
    case Opcode::cvt_pack:
      return convert(ins);
    case Opcode::ld:
    case Opcode::ldu:
    case Opcode::st:
    case Opcode::cvta:
    case Opcode::isspacep:
    case Opcode::cp_async:
    case Opcode::mapa:
    case Opcode::getctarank:
    case Opcode::alloca:
    case Opcode::stacksave:
    case Opcode::stackrestore:
      return memory(ins);
    case Opcode::atom:
    case Opcode::red:
      return atomic(ins);
    case Opcode::bra:
    case Opcode::brx_idx:
    case Opcode::ret:
    case Opcode::exit:
    case Opcode::trap:
      return control(ins);
    case Opcode::call:
      return call(ins);
    case Opcode::bar:
    case Opcode::barrier:
    case Opcode::bar_red:
    case Opcode::bar_warp_sync:
    case Opcode::shfl:
    case Opcode::vote:
    case Opcode::match:
    case Opcode::redux:
    case Opcode::activemask:
    case Opcode::elect:
      return collective(ins);
    case Opcode::membar:
    case Opcode::fence:
      return "::cudamux::ptx::fence();";
    case Opcode::mma:  // warp-level matrix instructions: emit_mma.cpp
    case Opcode::ldmatrix:
    case Opcode::stmatrix:
    case Opcode::movmatrix:
    case Opcode::wmma_load:
    case Opcode::wmma_store:
    case Opcode::wmma_mma:
      return detail::emit_mma(
          ins, {[this](const Operand& o, Type t) { return rd(o, t); },
                [this](const Operand& d, Type t, const std::string& v) { return wr(d, t, v); },
                [this](const Operand& a, Space sp) { return addr(a, sp); },
                [this](const std::string& why) { fail(why); }});
    // sm_90a's warpgroup MMA and the tensor memory accelerator are refused with a reason.
    case Opcode::wgmma:
      fail("wgmma (sm_90a warpgroup matrix multiply) is not supported by the mock");
      return ";";
    case Opcode::cp_async_bulk:
    case Opcode::cp_reduce_async_bulk:
      if (std::find(ins.extra.begin(), ins.extra.end(), "tensor") != ins.extra.end()) {
        fail("TMA (cp.async.bulk.tensor) is not supported by the mock");
        return ";";
      }
      break;
    case Opcode::mbarrier:
      return mbarrier(ins);
    case Opcode::video:
      return video(ins);
    case Opcode::nanosleep:  // a yield, then the rest of the requested time (fibers)
      return ins.operands.empty()
                 ? std::string("::cudamux::ptx::yield();")
                 : "::cudamux::ptx::nanosleep(" + rd(opnd(ins, 0), Type::u32) + ");";
    case Opcode::tex:  // textures and surfaces: emit_texture.cpp
    case Opcode::tld4:
    case Opcode::txq:
    case Opcode::suld:
    case Opcode::sust:
    case Opcode::sured:
    case Opcode::suq:
      return detail::emit_texture(
          ins, {[this](const Operand& o, Type t) { return rd(o, t); },
                [this](const Operand& d, Type t, const std::string& v) { return wr(d, t, v); },
                [this](const std::string& why) { fail(why); }});
    // Hints and no-ops on a CPU: copies of cp.async complete at once, there is no
    // programmatic dependent launch, register counts mean nothing here.
    case Opcode::cp_async_commit_group:
    case Opcode::cp_async_wait_group:
    case Opcode::cp_async_wait_all:
    case Opcode::prefetch:
    case Opcode::prefetchu:
    case Opcode::brkpt:
    case Opcode::pmevent:
    case Opcode::griddepcontrol:
    case Opcode::setmaxnreg:
      return ";";
    default:
      break;
  }
  fail("-");
  return ";";
}

std::string Emitter::arith(const Instruction& ins) {
  const Type t = type0(ins);
  const auto& d = opnd(ins, 0);
  const std::string fl = flags_of(ins);
  const bool plain_float = tnative_float(t) && !ins.ftz && !ins.sat &&
                           (ins.rounding == Rounding::none || ins.rounding == Rounding::rn);
  auto A = [&](Type ty) { return rd(opnd(ins, 1), ty); };
  auto B = [&](Type ty) { return rd(opnd(ins, 2), ty); };
  auto C = [&](Type ty) { return rd(opnd(ins, 3), ty); };
  const std::string ops = "::cudamux::ptx::";
  const char* U = ustorage(t);
  const char* W = wide_work(t);
  const char* S = storage(t);
  auto wrap2 = [&](const char* op) {  // integer a op b, wrapping
    return wr(d, unsigned_of(t),
              std::string("static_cast<") + U + ">(static_cast<" + W + ">(" + A(unsigned_of(t)) +
                  ") " + op + " static_cast<" + W + ">(" + B(unsigned_of(t)) + "))");
  };
  auto fcall = [&](const char* fn, bool rounding, int n) {
    if (!code(t) || !is_float_type(t)) {
      fail("type");
      return std::string(";");
    }
    std::string c = ops + fn + "<" + code(t) +
                    (rounding ? std::string(", ") + rnd_name(ins.rounding) : std::string()) + ", " +
                    fl + ">(" + A(t);
    if (n >= 2) c += ", " + B(t);
    if (n >= 3) c += ", " + C(t);
    return wr(d, t, c + ")");
  };
  switch (ins.op) {
    case Opcode::add:
    case Opcode::sub: {
      const bool add = ins.op == Opcode::add;
      if (is_float_type(t)) {
        if (plain_float) return wr(d, t, A(t) + (add ? " + " : " - ") + B(t));
        return fcall(add ? "fadd" : "fsub", true, 2);
      }
      if (!tint(t)) break;
      if (ins.cc) {
        uses_carry_ = true;
        return wr(d, unsigned_of(t),
                  ops + (add ? "add_cc" : "sub_cc") + "<" + U + ">(" + A(unsigned_of(t)) + ", " +
                      B(unsigned_of(t)) + ", false, cudamux_carry)");
      }
      if (ins.sat)
        return wr(d, signed_of(t),
                  ops + (add ? "add_sat" : "sub_sat") + "<" + storage(signed_of(t)) + ">(" +
                      A(signed_of(t)) + ", " + B(signed_of(t)) + ")");
      return wrap2(add ? "+" : "-");
    }
    case Opcode::addc:
    case Opcode::subc: {
      if (!tint(t)) break;
      uses_carry_ = true;
      const bool add = ins.op == Opcode::addc;
      return "{ bool co_; " +
             wr(d, unsigned_of(t),
                ops + (add ? "add_cc" : "sub_cc") + "<" + U + ">(" + A(unsigned_of(t)) + ", " +
                    B(unsigned_of(t)) + ", cudamux_carry, co_)") +
             (ins.cc ? " cudamux_carry = co_;" : " (void)co_;") + " }";
    }
    case Opcode::mul:
    case Opcode::mad:
    case Opcode::madc: {
      const bool mad = ins.op != Opcode::mul;
      if (is_float_type(t)) {
        if (!mad) {
          if (plain_float) return wr(d, t, A(t) + " * " + B(t));
          return fcall("fmul", true, 2);
        }
        if (plain_float)
          return wr(d, t,
                    std::string(t == Type::f32 ? "__builtin_fmaf(" : "__builtin_fma(") + A(t) +
                        ", " + B(t) + ", " + C(t) + ")");
        return fcall("ffma", true, 3);
      }
      if (!tint(t)) break;
      std::string prod;
      Type rt = unsigned_of(t);
      if (ins.wide) {
        const Type wt = widened(t);
        if (wt == Type::none) break;
        rt = wt;
        prod = std::string("static_cast<") + ustorage(wt) + ">(static_cast<" + storage(wt) + ">(" +
               A(t) + ") * static_cast<" + storage(wt) + ">(" + B(t) + "))";
      } else if (ins.hi) {
        prod = std::string("static_cast<") + U + ">(" + ops + "mul_hi<" + S + ">(" + A(t) + ", " +
               B(t) + "))";
      } else {
        prod = std::string("static_cast<") + U + ">(static_cast<" + W + ">(" + A(unsigned_of(t)) +
               ") * static_cast<" + W + ">(" + B(unsigned_of(t)) + "))";
      }
      const char* RU = ustorage(rt);
      if (!mad) return wr(d, rt, prod);
      if (ins.op == Opcode::madc || ins.cc) {
        uses_carry_ = true;
        const bool cin = ins.op == Opcode::madc;
        return std::string("{ bool co_; ") +
               wr(d, rt,
                  ops + "add_cc<" + RU + ">(" + prod + ", " + C(rt) + ", " +
                      (cin ? "cudamux_carry" : "false") + ", co_)") +
               (ins.cc ? " cudamux_carry = co_;" : " (void)co_;") + " }";
      }
      return wr(d, rt,
                std::string("static_cast<") + RU + ">(" + prod + " + static_cast<" +
                    (tsize(rt) <= 4 ? "u32" : RU) + ">(" + C(rt) + "))");
    }
    case Opcode::fma:
      if (plain_float)
        return wr(d, t,
                  std::string(t == Type::f32 ? "__builtin_fmaf(" : "__builtin_fma(") + A(t) + ", " +
                      B(t) + ", " + C(t) + ")");
      return fcall("ffma", true, 3);
    case Opcode::mul24:
    case Opcode::mad24: {
      if (t != Type::u32 && t != Type::s32) break;
      std::string p =
          ops + (ins.hi ? "mul24_hi" : "mul24_lo") + "<" + S + ">(" + A(t) + ", " + B(t) + ")";
      if (ins.op == Opcode::mad24)
        p = "static_cast<u32>(static_cast<u32>(" + p + ") + static_cast<u32>(" + C(t) + "))";
      return wr(d, ins.op == Opcode::mad24 ? Type::u32 : t, p);
    }
    case Opcode::sad:
      if (!tint(t)) break;
      return wr(d, t, ops + "sad<" + S + ">(" + A(t) + ", " + B(t) + ", " + C(t) + ")");
    case Opcode::div:
      if (is_float_type(t)) {
        if (tnative_float(t) && !ins.ftz && !ins.sat &&
            (ins.rounding == Rounding::rn || ins.approx || ins.full))
          return wr(d, t, A(t) + " / " + B(t));  // exact rounding is within .approx/.full bounds
        return fcall("fdiv", true, 2);
      }
      if (!tint(t)) break;
      return wr(d, t, ops + "idiv<" + S + ">(" + A(t) + ", " + B(t) + ")");
    case Opcode::rem:
      if (!tint(t)) break;
      return wr(d, t, ops + "irem<" + S + ">(" + A(t) + ", " + B(t) + ")");
    case Opcode::abs:
      if (is_float_type(t)) {
        if (tnative_float(t) && !ins.ftz)
          return wr(
              d, t,
              std::string(t == Type::f32 ? "__builtin_fabsf(" : "__builtin_fabs(") + A(t) + ")");
        return fcall("fabs_", false, 1);
      }
      if (!tint(t)) break;
      return wr(d, t, ops + "iabs<" + S + ">(" + A(t) + ")");
    case Opcode::neg:
      if (is_float_type(t)) {
        if (tnative_float(t) && !ins.ftz) return wr(d, t, "-" + A(t));
        return fcall("fneg", false, 1);
      }
      if (!tint(t)) break;
      return wr(d, unsigned_of(t),
                std::string("static_cast<") + U + ">(0u - static_cast<" + W + ">(" +
                    A(unsigned_of(t)) + "))");
    case Opcode::min:
    case Opcode::max: {
      const bool mn = ins.op == Opcode::min;
      if (is_float_type(t)) return fcall(mn ? "fmin" : "fmax", false, 2);
      if (!tint(t)) break;
      const Type ct = tsigned(t) ? t : unsigned_of(t);
      const std::string a = A(ct), b = B(ct);
      std::string v = "(" + a + (mn ? " < " : " > ") + b + " ? " + a + " : " + b + ")";
      if (ins.relu) v = "(" + v + " < 0 ? " + std::string(storage(ct)) + "{} : " + v + ")";
      return wr(d, ct, v);
    }
    case Opcode::rcp:
      if (tnative_float(t) && !ins.ftz && ins.rounding == Rounding::rn)
        return wr(d, t, std::string(t == Type::f32 ? "1.0f / " : "1.0 / ") + A(t));
      return fcall("frcp", true, 1);
    case Opcode::sqrt:
      if (tnative_float(t) && !ins.ftz && (ins.rounding == Rounding::rn || ins.approx))
        return wr(
            d, t,
            std::string(t == Type::f32 ? "__builtin_sqrtf(" : "__builtin_sqrt(") + A(t) + ")");
      return fcall("fsqrt", true, 1);
    case Opcode::rsqrt:
      return fcall("frsqrt", false, 1);
    case Opcode::sin:
      return fcall("fsin", false, 1);
    case Opcode::cos:
      return fcall("fcos", false, 1);
    case Opcode::lg2:
      return fcall("flg2", false, 1);
    case Opcode::ex2:
      return fcall("fex2", false, 1);
    case Opcode::tanh:
      return fcall("ftanh", false, 1);
    case Opcode::copysign:
      if (!code(t) || !is_float_type(t)) break;
      return wr(d, t, ops + "fcopysign<" + code(t) + ">(" + A(t) + ", " + B(t) + ")");
    case Opcode::testp: {
      if (!code(t) || !is_float_type(t) || ins.mode < Mode::finite || ins.mode > Mode::subnormal)
        break;
      const int k = static_cast<int>(ins.mode) - static_cast<int>(Mode::finite);
      return wr(d, Type::pred,
                ops + "ftestp<" + code(t) + ", " + std::to_string(k) + ">(" + A(t) + ")");
    }
    case Opcode::popc:
    case Opcode::clz:
      if (!tint(t)) break;
      return wr(d, Type::u32,
                ops + (ins.op == Opcode::popc ? "popc" : "clz") + "<" + U + ">(" +
                    A(unsigned_of(t)) + ")");
    case Opcode::bfind: {
      if (!tint(t)) break;
      const Type ct = tsigned(t) ? t : unsigned_of(t);
      return wr(d, Type::u32,
                ops + "bfind<" + storage(ct) + ", " +
                    (ins.mode == Mode::shiftamt ? "true" : "false") + ">(" + A(ct) + ")");
    }
    case Opcode::brev:
      if (!tint(t)) break;
      return wr(d, unsigned_of(t), ops + "brev<" + U + ">(" + A(unsigned_of(t)) + ")");
    case Opcode::bfe: {
      if (!tint(t)) break;
      const Type ct = tsigned(t) ? t : unsigned_of(t);
      return wr(d, ct,
                ops + "bfe<" + storage(ct) + ">(" + A(ct) + ", " + B(Type::u32) + ", " +
                    C(Type::u32) + ")");
    }
    case Opcode::bfi:
      if (!tint(t)) break;
      return wr(d, unsigned_of(t),
                ops + "bfi<" + U + ">(" + A(unsigned_of(t)) + ", " + B(unsigned_of(t)) + ", " +
                    C(Type::u32) + ", " + rd(opnd(ins, 4), Type::u32) + ")");
    case Opcode::bmsk:  // bmsk.{clamp,wrap}.b32 (sm_70): a mask of b bits from bit a
      return wr(d, Type::u32,
                ops + "bmsk(" + A(Type::u32) + ", " + B(Type::u32) + ", " +
                    (ins.wrap ? "true" : "false") + ")");
    case Opcode::fns:
      return wr(d, Type::u32,
                ops + "fns(" + A(Type::u32) + ", " + B(Type::u32) + ", " + C(Type::s32) + ")");
    case Opcode::dp4a:
    case Opcode::dp2a: {
      if (ins.types.size() < 2) break;
      const char* ea = tsigned(ins.types[0]) ? "s8" : "u8";
      const char* eb = tsigned(ins.types[1]) ? "s8" : "u8";
      const Type ct = tsigned(ins.types[0]) || tsigned(ins.types[1]) ? Type::s32 : Type::u32;
      std::string c = ops + (ins.op == Opcode::dp4a ? "dp4a<" : "dp2a<") + ea + ", " + eb;
      if (ins.op == Opcode::dp2a) c += ins.hi ? ", true" : ", false";
      c += ">(" + A(Type::u32) + ", " + B(Type::u32) + ", " + C(Type::s32) + ")";
      return wr(d, Type::s32, ct == Type::s32 ? c : c);
    }
    default:
      break;
  }
  fail("type");
  return ";";
}

// Comparison of two values of type t as a C++ bool expression.
std::string compare_expr(Emitter* e, Cmp c, Type t, const std::string& a, const std::string& b,
                         const std::string& flags);

std::string Emitter::compare_select(const Instruction& ins) {
  const std::string ops = "::cudamux::ptx::";
  if (ins.op == Opcode::selp) {
    const Type t = type0(ins);
    return wr(opnd(ins, 0), t,
              "(" + rd(opnd(ins, 3), Type::pred) + " ? " + rd(opnd(ins, 1), t) + " : " +
                  rd(opnd(ins, 2), t) + ")");
  }
  if (ins.op == Opcode::slct) {
    if (ins.types.size() < 2) {
      fail("type");
      return ";";
    }
    const Type t = ins.types[0], ct = ins.types[1];
    std::string c = rd(opnd(ins, 3), ct);
    if (ct == Type::f32 && ins.ftz)
      c = ops + "fneg<F32, FTZ>(" + ops + "fneg<F32, FTZ>(" + c + "))";
    return wr(opnd(ins, 0), t,
              "(" + c + " >= 0 ? " + rd(opnd(ins, 1), t) + " : " + rd(opnd(ins, 2), t) + ")");
  }
  // set / setp
  const bool is_set = ins.op == Opcode::set;
  const Type st = is_set ? (ins.types.size() >= 2 ? ins.types[1] : Type::none) : type0(ins);
  const Type dt = is_set ? type0(ins) : Type::pred;
  if (st == Type::none || !code(st) || ins.cmp == Cmp::none) {
    fail("type");
    return ";";
  }
  // Destinations: `p|q` as a vector of two, or as two operands.
  std::vector<const Operand*> dst;
  std::size_t k = 0;
  if (opnd(ins, 0).kind == Operand::Kind::vector) {
    for (const auto& e : opnd(ins, 0).elems) dst.push_back(&e);
    k = 1;
  } else {
    const std::size_t srcs = 2 + (ins.boolop != BoolOp::none ? 1 : 0);
    const std::size_t ndst = ins.dest_pair                ? 2
                             : ins.operands.size() > srcs ? ins.operands.size() - srcs
                                                          : 1;
    for (; k < ndst; ++k) dst.push_back(&ins.operands[k]);
  }
  std::string a = rd(opnd(ins, k), st), b = rd(opnd(ins, k + 1), st);
  if (st == Type::f16x2 || st == Type::bf16x2) {
    // One result per half: the first destination gets the low half's, the second the high's.
    if (is_set) {
      fail("set on packed halves");
      return ";";
    }
    std::string s = "{ bool lo_ = false, hi_ = false; ::cudamux::ptx::compare2<" +
                    std::string(code(st)) + ", " + std::to_string(static_cast<unsigned>(ins.cmp)) +
                    ", " + flags_of(ins) + ">(" + a + ", " + b + ", lo_, hi_); ";
    std::string c;
    const char* op = ins.boolop == BoolOp::and_  ? " && "
                     : ins.boolop == BoolOp::or_ ? " || "
                                                 : " != ";
    if (ins.boolop != BoolOp::none) c = rd(opnd(ins, k + 2), Type::pred);
    const char* res[2] = {"lo_", "hi_"};
    for (std::size_t q = 0; q < dst.size() && q < 2; ++q)
      s += wr(*dst[q], Type::pred,
              c.empty() ? std::string(res[q]) : "(" + std::string(res[q]) + op + c + ")") +
           " ";
    return s + "}";
  }
  std::string cmp = "c_";
  std::string s =
      "{ const bool c_ = " + compare_expr(this, ins.cmp, st, a, b, flags_of(ins)) + "; ";
  std::string combine[2] = {"c_", "!c_"};
  if (ins.boolop != BoolOp::none) {
    const std::string c = rd(opnd(ins, k + 2), Type::pred);
    const char* op = ins.boolop == BoolOp::and_  ? " && "
                     : ins.boolop == BoolOp::or_ ? " || "
                                                 : " != ";
    s += "const bool o_ = " + c + "; ";
    combine[0] = "(c_" + std::string(op) + "o_)";
    combine[1] = "(!c_" + std::string(op) + "o_)";
  }
  for (std::size_t q = 0; q < dst.size() && q < 2; ++q) {
    if (is_set) {
      std::string one =
          dt == Type::f32 ? "1.0f" : std::string("static_cast<") + storage(dt) + ">(~0ull)";
      s += wr(*dst[q], dt, "(" + combine[q] + " ? " + one + " : " + storage(dt) + "{})") + " ";
    } else {
      s += wr(*dst[q], Type::pred, combine[q]) + " ";
    }
  }
  return s + "}";
}

std::string compare_expr(Emitter*, Cmp c, Type t, const std::string& a, const std::string& b,
                         const std::string& flags) {
  static const char* const names[] = {"", "==", "!=", "<", "<=", ">", ">=", "<", "<=", ">", ">="};
  const unsigned k = static_cast<unsigned>(c);
  if (tint(t)) {
    // eq..ge on the written type; lo/ls/hi/hs compare as unsigned.
    if (k >= 1 && k <= 10) {
      const bool unsig = k >= 7;
      const char* ct = unsig ? ustorage(t) : storage(t);
      return std::string("(static_cast<") + ct + ">(" + a + ") " + names[k] + " static_cast<" + ct +
             ">(" + b + "))";
    }
  } else if (tnative_float(t) && flags == "0" &&
             (c == Cmp::eq || c == Cmp::lt || c == Cmp::le || c == Cmp::gt || c == Cmp::ge)) {
    // Ordered comparisons are C++'s (false when either is NaN).
    return "(" + a + " " + names[k] + " " + b + ")";
  }
  return std::string("::cudamux::ptx::compare<") + code(t) + ", " + std::to_string(k) + ", " +
         flags + ">(" + a + ", " + b + ")";
}

std::string Emitter::logic(const Instruction& ins) {
  const Type t = type0(ins);
  const auto& d = opnd(ins, 0);
  const std::string ops = "::cudamux::ptx::";
  const Type ut = t == Type::pred ? Type::pred : unsigned_of(t);
  const char* U = ustorage(t);
  const char* W = wide_work(t);
  auto A = [&](Type ty) { return rd(opnd(ins, 1), ty); };
  auto B = [&](Type ty) { return rd(opnd(ins, 2), ty); };
  switch (ins.op) {
    case Opcode::and_:
    case Opcode::or_:
    case Opcode::xor_: {
      const char* op = ins.op == Opcode::and_ ? " & " : ins.op == Opcode::or_ ? " | " : " ^ ";
      if (t == Type::pred) {
        const char* lop = ins.op == Opcode::and_ ? " && " : ins.op == Opcode::or_ ? " || " : " != ";
        return wr(d, Type::pred, "(" + A(Type::pred) + lop + B(Type::pred) + ")");
      }
      if (!tint(t) && t != Type::b128) break;
      return wr(d, ut, std::string("static_cast<") + U + ">(" + A(ut) + op + B(ut) + ")");
    }
    case Opcode::not_:
      if (t == Type::pred) return wr(d, Type::pred, "!" + A(Type::pred));
      if (!tint(t)) break;
      return wr(d, ut,
                std::string("static_cast<") + U + ">(~static_cast<" + W + ">(" + A(ut) + "))");
    case Opcode::cnot:
      if (!tint(t)) break;
      return wr(d, ut, std::string("static_cast<") + U + ">(" + A(ut) + " == 0)");
    case Opcode::lop3:
      if (t != Type::b32) break;
      return wr(d, Type::u32,
                ops + "lop3(" + A(Type::u32) + ", " + B(Type::u32) + ", " +
                    rd(opnd(ins, 3), Type::u32) + ", " + rd(opnd(ins, 4), Type::u32) + ")");
    case Opcode::shf:
      return wr(d, Type::u32,
                ops + "shf<" + (ins.mode == Mode::l ? "true" : "false") + ", " +
                    (ins.clamp ? "true" : "false") + ">(" + A(Type::u32) + ", " + B(Type::u32) +
                    ", " + rd(opnd(ins, 3), Type::u32) + ")");
    case Opcode::shl:
    case Opcode::shr: {
      if (!tint(t)) break;
      const bool left = ins.op == Opcode::shl;
      const Type ct = (!left && tsigned(t)) ? t : ut;
      const auto& n = opnd(ins, 2);
      if (n.kind == Operand::Kind::imm_int && n.bits < tsize(t) * 8)
        return wr(d, ct,
                  std::string("static_cast<") + storage(ct) + ">(" +
                      (left ? std::string("static_cast<") + W + ">(" + A(ct) + ")" : A(ct)) +
                      (left ? " << " : " >> ") + std::to_string(n.bits) + ")");
      return wr(
          d, ct,
          ops + (left ? "shl<" : "shr<") + storage(ct) + ">(" + A(ct) + ", " + B(Type::u32) + ")");
    }
    case Opcode::prmt: {
      int mode = 0;
      if (ins.mode >= Mode::f4e && ins.mode <= Mode::rc16)
        mode = 1 + static_cast<int>(ins.mode) - static_cast<int>(Mode::f4e);
      return wr(d, Type::u32,
                ops + "prmt(" + A(Type::u32) + ", " + B(Type::u32) + ", " +
                    rd(opnd(ins, 3), Type::u32) + ", " + std::to_string(mode) + ")");
    }
    default:
      break;
  }
  fail("type");
  return ";";
}

std::string Emitter::move(const Instruction& ins) {
  const Type t = type0(ins);
  const auto& d = opnd(ins, 0);
  const auto& s = opnd(ins, 1);
  if (d.kind == Operand::Kind::vector) {
    // Unpack: mov.b64 {lo, hi}, %rd (element 0 in the low bits).
    if (d.elems.empty() || tsize(t) % d.elems.size() != 0) {
      fail("vector shape");
      return ";";
    }
    const unsigned es = tsize(t) / static_cast<unsigned>(d.elems.size());
    const Type et = es == 1 ? Type::u8 : es == 2 ? Type::u16 : es == 4 ? Type::u32 : Type::u64;
    std::string r = std::string("{ const ") + ustorage(t) + " v_ = " + rd(s, unsigned_of(t)) + "; ";
    for (std::size_t k = 0; k < d.elems.size(); ++k) {
      if (d.elems[k].kind == Operand::Kind::sink) continue;
      r += wr(d.elems[k], et,
              std::string("static_cast<") + storage(et) + ">(v_ >> " + std::to_string(k * es * 8) +
                  ")") +
           " ";
    }
    return r + "}";
  }
  if (s.kind == Operand::Kind::vector) {
    if (s.elems.empty() || tsize(t) % s.elems.size() != 0) {
      fail("vector shape");
      return ";";
    }
    const unsigned es = tsize(t) / static_cast<unsigned>(s.elems.size());
    const Type et = es == 1 ? Type::u8 : es == 2 ? Type::u16 : es == 4 ? Type::u32 : Type::u64;
    const char* U = tsize(t) <= 4 ? "u32" : ustorage(t);
    std::string v;
    for (std::size_t k = 0; k < s.elems.size(); ++k)
      v += std::string(k ? " | " : "") + "(static_cast<" + U + ">(" + rd(s.elems[k], et) + ") << " +
           std::to_string(k * es * 8) + ")";
    return wr(d, unsigned_of(t), std::string("static_cast<") + ustorage(t) + ">(" + v + ")");
  }
  if (t == Type::none) {
    fail("type");
    return ";";
  }
  return wr(d, t, rd(s, t));
}

std::string Emitter::convert(const Instruction& ins) {
  const std::string ops = "::cudamux::ptx::";
  if (ins.types.size() < 2) {
    // cvt.pack and single-type forms are not generated by nvcc for ordinary kernels.
    fail("type");
    return ";";
  }
  const Type dt = ins.types[0], st = ins.types[1];
  const auto& d = opnd(ins, 0);
  const std::string fl = flags_of(ins);
  if ((st == Type::e4m3x2 || st == Type::e5m2x2) && dt == Type::f16x2)
    return wr(
        d, dt,
        ops + "cvt_f8x2_to_f16x2<" + code(st) + ", " + fl + ">(" + rd(opnd(ins, 1), st) + ")");
  if ((dt == Type::f16x2 || dt == Type::bf16x2 || dt == Type::e4m3x2 || dt == Type::e5m2x2) &&
      ins.operands.size() >= 3 && code(dt)) {
    return wr(d, dt,
              ops + "cvt_pack2<" + code(dt) + ", " + rnd_name(ins.rounding) + ", " + fl + ">(" +
                  rd(opnd(ins, 1), Type::f32) + ", " + rd(opnd(ins, 2), Type::f32) + ")");
  }
  const std::string a = rd(opnd(ins, 1), st);
  const bool nomods = fl == "0";
  if (tint(dt) && tint(st) && nomods)  // truncation / extension by the source's signedness
    return wr(d, dt, std::string("static_cast<") + storage(dt) + ">(" + a + ")");
  if (tnative_float(dt) && tint(st) && nomods &&
      (ins.rounding == Rounding::rn || ins.rounding == Rounding::none))
    return wr(d, dt, std::string("static_cast<") + storage(dt) + ">(" + a + ")");
  if (dt == Type::f64 && st == Type::f32 && nomods)
    return wr(d, dt, "static_cast<double>(" + a + ")");
  if (dt == Type::f32 && st == Type::f64 && nomods && ins.rounding == Rounding::rn)
    return wr(d, dt, "static_cast<float>(" + a + ")");
  if (dt == st && nomods && ins.rounding == Rounding::none) return wr(d, dt, a);
  if (!code(dt) || !code(st)) {
    fail("type");
    return ";";
  }
  return wr(d, dt,
            ops + "cvt<" + code(dt) + ", " + code(st) + ", " + rnd_name(ins.rounding) + ", " + fl +
                ">(" + a + ")");
}

std::string Emitter::memory(const Instruction& ins) {
  const Type t = type0(ins);
  switch (ins.op) {
    case Opcode::ld:
    case Opcode::ldu:
    case Opcode::st: {
      const bool load = ins.op != Opcode::st;
      const auto& val = load ? opnd(ins, 0) : opnd(ins, 1);
      const auto& a = load ? opnd(ins, 1) : opnd(ins, 0);
      if (t == Type::none || t == Type::pred || ins.space == Space::tex) break;
      const bool sync = ins.sem == Semantics::volatile_ || ins.sem == Semantics::relaxed ||
                        ins.sem == Semantics::acquire || ins.sem == Semantics::release ||
                        ins.sem == Semantics::sc || ins.sem == Semantics::acq_rel ||
                        ins.sem == Semantics::mmio;
      const std::string p = addr(a, ins.space);
      const char* S = storage(t);
      const unsigned es = tsize(t);
      if (val.kind == Operand::Kind::vector) {
        std::string r = "{ char* const a_ = " + p + "; ";
        for (std::size_t k = 0; k < val.elems.size(); ++k) {
          const std::string at = "a_ + " + std::to_string(k * es);
          if (load) {
            if (val.elems[k].kind == Operand::Kind::sink) continue;
            r += wr(val.elems[k], t, std::string("ld<") + S + ">(" + at + ")") + " ";
          } else {
            r += std::string("st<") + S + ">(" + at + ", " + rd(val.elems[k], t) + "); ";
          }
        }
        return r + "}";
      }
      if (sync && ins.sem == Semantics::sc) {
        // .sc: a fence before, then acquire/release like the rest.
        return std::string("::cudamux::ptx::fence(); ") +
               (load ? wr(val, t, std::string("ld_sync<") + S + ">(" + p + ")")
                     : std::string("st_sync<") + S + ">(" + p + ", " + rd(val, t) + ");");
      }
      if (load) return wr(val, t, std::string(sync ? "ld_sync<" : "ld<") + S + ">(" + p + ")");
      return std::string(sync ? "st_sync<" : "st<") + S + ">(" + p + ", " + rd(val, t) + ");";
    }
    case Opcode::cvta: {
      const auto& d = opnd(ins, 0);
      const auto& s = opnd(ins, 1);
      const Type at = t == Type::none ? Type::u64 : t;
      if (ins.space == Space::shared) {
        if (ins.to)  // generic -> shared window offset
          return wr(d, Type::u64, "static_cast<u64>(gp(" + rd(s, Type::u64) + ") - cudamux_w)");
        return wr(d, Type::u64, "ga(cudamux_w + " + rd(s, Type::u64) + ")");
      }
      // global, local, const, param: generic addresses are the same host pointers.
      if (s.kind == Operand::Kind::symbol) return wr(d, at, rd(s, at));
      return wr(d, at, rd(s, at));
    }
    case Opcode::isspacep: {
      const std::string a = "gp(" + rd(opnd(ins, 1), Type::u64) + ")";
      // The dynamic part of the window has no known size here: 1 MiB past the static part
      // bounds what any device offers.
      const std::string in_shared = "(" + a + " >= cudamux_w && " + a + " < cudamux_w + " +
                                    std::to_string(static_shared_) + " + 0x100000)";
      std::string v;
      if (ins.space == Space::shared)
        v = in_shared;
      else if (ins.space == Space::global)
        v = "!" + in_shared;
      else if (ins.space == Space::const_ || ins.space == Space::param)
        v = "!" + in_shared;
      else if (ins.space == Space::local) {
        // Local variables live on the running stack: within 8 MiB of this frame.
        v = "(" + a + " + 0x800000 >= static_cast<char*>(__builtin_frame_address(0)) && " + a +
            " < static_cast<char*>(__builtin_frame_address(0)) + 0x800000)";
      } else
        break;
      return wr(opnd(ins, 0), Type::pred, v);
    }
    case Opcode::cp_async: {
      if (ins.operands.size() < 3) break;
      const std::string dst = addr(opnd(ins, 0), Space::shared);
      const std::string src = addr(opnd(ins, 1), Space::global);
      const std::string n = rd(opnd(ins, 2), Type::u32);
      std::string src_size = n;
      const auto& o3 = opnd(ins, 3);
      if (o3.kind == Operand::Kind::reg && f_ && o3.reg < f_->registers.size() &&
          f_->registers[o3.reg].type == Type::pred)
        src_size = "(" + rd(o3, Type::pred) + " ? 0u : " + n + ")";  // ignore-src
      else if (o3.kind == Operand::Kind::reg || o3.kind == Operand::Kind::imm_int)
        src_size = rd(o3, Type::u32);
      return "cp_async(" + dst + ", " + src + ", " + n + ", " + src_size + ");";
    }
    case Opcode::mapa:  // clusters of one block: the address maps to itself
      return wr(opnd(ins, 0), t == Type::none ? Type::u64 : t,
                rd(opnd(ins, 1), t == Type::none ? Type::u64 : t));
    case Opcode::getctarank:
      return wr(opnd(ins, 0), Type::u32, "0u");
    case Opcode::alloca: {
      const std::string n = rd(opnd(ins, 1), Type::u64);
      const std::string al = ins.operands.size() > 2 ? rd(opnd(ins, 2), Type::u64) : "8ull";
      return wr(opnd(ins, 0), Type::u64,
                "ga(alloca_ptr(static_cast<char*>(__builtin_alloca(" + n + " + " + al + ")), " +
                    al + "))");
    }
    case Opcode::stacksave:
      return wr(opnd(ins, 0), t == Type::none ? Type::u64 : t, "0u");
    case Opcode::stackrestore:
      return ";";  // alloca'd memory lives until the function returns
    default:
      break;
  }
  fail("-");
  return ";";
}

std::string Emitter::atomic(const Instruction& ins) {
  const Type t = type0(ins);
  const bool is_red = ins.op == Opcode::red;
  if (!code(t) || t == Type::pred || ins.vec > 1 || ins.mode < Mode::add || ins.mode > Mode::cas) {
    fail("-");
    return ";";
  }
  const std::size_t k = is_red ? 0 : 1;
  const std::string p = addr(opnd(ins, k), ins.space);
  const std::string b = rd(opnd(ins, k + 1), t);
  std::string v;
  if (ins.mode == Mode::cas) {
    v = std::string("::cudamux::ptx::atom_cas<") + code(t) + ">(" + p + ", " + b + ", " +
        rd(opnd(ins, k + 2), t) + ")";
  } else {
    const int opi = static_cast<int>(ins.mode) - static_cast<int>(Mode::add);
    v = std::string("::cudamux::ptx::atom<") + code(t) + ", " + std::to_string(opi) + ">(" + p +
        ", " + b + ")";
  }
  if (is_red) return "(void)" + v + ";";
  return wr(opnd(ins, 0), t, v);
}

std::string Emitter::control(const Instruction& ins) {
  switch (ins.op) {
    case Opcode::bra: {
      const auto& l = opnd(ins, 0);
      if (l.kind != Operand::Kind::symbol || l.sym.kind != SymbolRef::Kind::label) break;
      return "goto L_" + std::to_string(l.sym.index) + ";";
    }
    case Opcode::brx_idx: {
      // brx.idx index, list: the list is a `.branchtargets` label (Function::target_lists) or,
      // from hand-built IR, a vector of labels.
      const auto& l = opnd(ins, 1);
      std::vector<std::uint32_t> targets;
      if (l.kind == Operand::Kind::vector) {
        for (const auto& e : l.elems) {
          if (e.kind != Operand::Kind::symbol || e.sym.kind != SymbolRef::Kind::label) {
            fail("branch target list");
            return ";";
          }
          targets.push_back(e.sym.index);
        }
      } else if (l.kind == Operand::Kind::symbol && l.sym.kind == SymbolRef::Kind::label && f_) {
        for (const auto& tl : f_->target_lists)
          if (tl.label == l.sym.index && !tl.calls) targets = tl.targets;
      }
      if (targets.empty()) break;
      std::string s = "switch (" + rd(opnd(ins, 0), Type::u32) + ") { ";
      for (std::size_t k = 0; k < targets.size(); ++k)
        s += "case " + std::to_string(k) + ": goto L_" + std::to_string(targets[k]) + "; ";
      return s + "default: ::cudamux::ptx::trap(\"brx.idx: index out of range\"); return; }";
    }
    case Opcode::ret:
      return "return;";
    case Opcode::exit:
      if (f_ && f_->is_entry) return "return;";
      // The thread ends: a flag every caller checks after the call returns, up to the kernel
      // (ptx-rest; no exception: memcheck's hooks are nothrow calls, which a try region
      // would turn into std::terminate).
      return "{ ::cudamux::ptx::exit_flag() = true; return; }";
    case Opcode::trap:
      return "{ ::cudamux::ptx::trap(" +
             quote("trap instruction at line " + std::to_string(ins.loc.line)) + "); return; }";
    default:
      break;
  }
  fail("-");
  return ";";
}

std::string Emitter::call(const Instruction& ins) {
  // [returns (vector), target, arguments (vector), prototype]
  const auto& rets = opnd(ins, 0);
  const auto& target = opnd(ins, 1);
  const auto& args = opnd(ins, 2);
  auto buffers = [&](const Operand& v, std::vector<std::string>& out) {
    if (v.kind == Operand::Kind::none) return true;
    std::vector<const Operand*> list;
    if (v.kind == Operand::Kind::vector)
      for (const auto& e : v.elems) list.push_back(&e);
    else
      list.push_back(&v);
    for (const auto* e : list) {
      if (e->kind != Operand::Kind::symbol ||
          (e->sym.kind != SymbolRef::Kind::local && e->sym.kind != SymbolRef::Kind::param))
        return false;
      out.push_back(sym_pointer(e->sym, e->offset));
    }
    return true;
  };
  std::vector<std::string> r, a;
  if (!buffers(rets, r) || !buffers(args, a)) {
    fail("call arguments that are not .param variables");
    return ";";
  }
  std::string callee;
  if (target.kind == Operand::Kind::symbol && target.sym.kind == SymbolRef::Kind::function &&
      target.sym.index < m_.functions.size()) {
    const auto& g = m_.functions[target.sym.index];
    if (g.is_entry) {
      fail("call of a kernel");
      return ";";
    }
    if (g.returns.size() != r.size() || g.params.size() != a.size()) {
      fail("argument count differs from the callee's");
      return ";";
    }
    callee = fn_names_[target.sym.index];
  } else if (target.kind == Operand::Kind::reg) {
    std::string sig = "void(*)(";
    for (std::size_t k = 0; k < r.size(); ++k) sig += k ? ", char*" : "char*";
    for (std::size_t k = 0; k < a.size(); ++k)
      sig += (k || !r.empty()) ? ", const char*" : "const char*";
    sig += ")";
    callee = "reinterpret_cast<" + sig + ">(gp(" + rd(target, Type::u64) + "))";
  } else {
    fail("call target");
    return ";";
  }
  std::string s = callee + "(";
  bool first = true;
  for (const auto& x : r) {
    s += (first ? "" : ", ") + x;
    first = false;
  }
  for (const auto& x : a) {
    s += (first ? "" : ", ") + x;
    first = false;
  }
  s += ");";
  // exit inside a .func (ptx-rest): the callee raised the flag; the thread ends here too.
  if (func_exit_)
    s = "{ " + s + " if (::cudamux::ptx::exit_flag()) { " +
        (f_ && f_->is_entry ? "::cudamux::ptx::exit_flag() = false; " : "") + "return; } }";
  return s;
}

std::string Emitter::collective(const Instruction& ins) {
  const std::string ops = "::cudamux::ptx::";
  const Type t = type0(ins);
  switch (ins.op) {
    case Opcode::bar:
    case Opcode::barrier:
    case Opcode::bar_red: {
      const bool red = ins.op == Opcode::bar_red || ins.boolop != BoolOp::none;
      // A cluster is this one block: barrier.cluster.arrive does nothing and .wait is the
      // block's barrier (every thread arrived before any passes it).
      if (ins.mode == Mode::arrive && ins.scope == Scope::cluster) return ";";
      if (!red) {
        const std::string id = ins.operands.empty() ? "0u" : rd(opnd(ins, 0), Type::u32);
        const std::string n = ins.operands.size() > 1 ? rd(opnd(ins, 1), Type::u32) : "0u";
        // bar.arrive, and in modules that use it the barriers given a thread count: named
        // barriers with arrival counting (ptx_ops.h, named_bar; waits yield).
        if (ins.mode == Mode::arrive) return ops + "bar_arrive_named(" + id + ", " + n + ");";
        if (named_bars_ && ins.operands.size() > 1)
          return ops + "bar_sync_named(" + id + ", " + n + ");";
        return ops + "bar_sync(" + id + ", " + n + ");";
      }
      // bar.red.op d, a{, b}, {!}c
      const std::size_t n = ins.operands.size();
      if (n < 3) break;
      const std::string id = rd(opnd(ins, 1), Type::u32);
      const std::string cnt = n > 3 ? rd(opnd(ins, 2), Type::u32) : "0u";
      const std::string p = rd(opnd(ins, n - 1), Type::pred);
      if (ins.boolop == BoolOp::popc)
        return wr(opnd(ins, 0), Type::u32,
                  ops + "bar_red_popc(" + id + ", " + cnt + ", " + p + ")");
      if (ins.boolop == BoolOp::and_)
        return wr(opnd(ins, 0), Type::pred,
                  ops + "bar_red_and(" + id + ", " + cnt + ", " + p + ")");
      if (ins.boolop == BoolOp::or_)
        return wr(opnd(ins, 0), Type::pred, ops + "bar_red_or(" + id + ", " + cnt + ", " + p + ")");
      break;
    }
    case Opcode::bar_warp_sync:
      return ops + "bar_warp_sync(" + rd(opnd(ins, 0), Type::u32) + ");";
    case Opcode::activemask:
      return wr(opnd(ins, 0), Type::u32, ops + "activemask()");
    case Opcode::elect: {
      // elect.sync d|p, membermask: the lowest active member lane is the leader.
      if (ins.operands.size() < 2) break;
      const bool pair = ins.dest_pair || ins.operands.size() >= 3;
      const std::string mask = rd(opnd(ins, pair ? 2 : 1), Type::u32);
      std::string s =
          "{ const u32 m_ = " + mask + " & " + ops +
          "activemask(); const u32 l_ = m_ ? static_cast<u32>(__builtin_ctz(m_)) : 0u; ";
      if (pair) {
        s += wr(opnd(ins, 0), Type::u32, "l_") + " ";
        s += wr(opnd(ins, 1), Type::pred, "(" + ops + "laneid() == l_)") + " ";
      } else {
        s += wr(opnd(ins, 0), Type::pred, "(" + ops + "laneid() == l_)") + " ";
      }
      return s + "}";
    }
    case Opcode::shfl: {
      // shfl.sync.mode.b32 d[|p], a, b, c, membermask (`d|p` as a vector or two operands)
      std::vector<const Operand*> dst;
      std::size_t k = 0;
      const std::size_t srcs = ins.sync ? 4 : 3;
      if (opnd(ins, 0).kind == Operand::Kind::vector) {
        for (const auto& e : opnd(ins, 0).elems) dst.push_back(&e);
        k = 1;
      } else {
        const std::size_t nd = ins.dest_pair                ? 2
                               : ins.operands.size() > srcs ? ins.operands.size() - srcs
                                                            : 1;
        for (; k < nd; ++k) dst.push_back(&ins.operands[k]);
      }
      if (dst.empty() || ins.mode < Mode::up || ins.mode > Mode::idx) break;
      const int mode = static_cast<int>(ins.mode) - static_cast<int>(Mode::up);
      const std::string mask = ins.sync ? rd(opnd(ins, k + 3), Type::u32) : "0xffffffffu";
      std::string s = "{ bool in_ = false; const u32 v_ = " + ops + "shfl<" + std::to_string(mode) +
                      ">(" + rd(opnd(ins, k), Type::u32) + ", " + rd(opnd(ins, k + 1), Type::u32) +
                      ", " + rd(opnd(ins, k + 2), Type::u32) + ", " + mask + ", in_); ";
      s += wr(*dst[0], Type::u32, "v_") + " ";
      if (dst.size() > 1) s += wr(*dst[1], Type::pred, "in_") + " ";
      return s + "(void)in_; }";
    }
    case Opcode::vote: {
      const std::string p = rd(opnd(ins, 1), Type::pred);
      const std::string mask = ins.sync ? rd(opnd(ins, 2), Type::u32) : "0xffffffffu";
      switch (ins.mode) {
        case Mode::all:
          return wr(opnd(ins, 0), Type::pred, ops + "vote_all(" + p + ", " + mask + ")");
        case Mode::any:
          return wr(opnd(ins, 0), Type::pred, ops + "vote_any(" + p + ", " + mask + ")");
        case Mode::uni:
          return wr(opnd(ins, 0), Type::pred, ops + "vote_uni(" + p + ", " + mask + ")");
        case Mode::ballot:
          return wr(opnd(ins, 0), Type::u32, ops + "vote_ballot(" + p + ", " + mask + ")");
        default:
          break;
      }
      break;
    }
    case Opcode::match: {
      if (!tint(t)) break;
      const Type ut = unsigned_of(t);
      std::vector<const Operand*> dst;
      std::size_t k = 0;
      if (opnd(ins, 0).kind == Operand::Kind::vector) {
        for (const auto& e : opnd(ins, 0).elems) dst.push_back(&e);
        k = 1;
      } else {
        const std::size_t nd = ins.dest_pair             ? 2
                               : ins.operands.size() > 2 ? ins.operands.size() - 2
                                                         : 1;
        for (; k < nd; ++k) dst.push_back(&ins.operands[k]);
      }
      if (dst.empty()) break;
      const std::string v = rd(opnd(ins, k), ut), mask = rd(opnd(ins, k + 1), Type::u32);
      if (ins.mode == Mode::any)
        return wr(*dst[0], Type::u32,
                  ops + "match_any<" + storage(ut) + ">(" + v + ", " + mask + ")");
      if (ins.mode == Mode::all) {
        std::string s = "{ bool p_ = false; " +
                        wr(*dst[0], Type::u32,
                           ops + "match_all<" + storage(ut) + ">(" + v + ", " + mask + ", p_)") +
                        " ";
        if (dst.size() > 1) s += wr(*dst[1], Type::pred, "p_") + " ";
        return s + "(void)p_; }";
      }
      break;
    }
    case Opcode::redux: {
      if (!tint(t) || ins.mode < Mode::add || ins.mode > Mode::xor_) break;
      const int opi = static_cast<int>(ins.mode) - static_cast<int>(Mode::add);
      if (opi == 3 || opi == 4) break;
      const Type ct = tsigned(t) ? t : unsigned_of(t);
      return wr(opnd(ins, 0), ct,
                ops + "redux<" + std::to_string(opi) + ", " + storage(ct) + ">(" +
                    rd(opnd(ins, 1), ct) + ", " + rd(opnd(ins, 2), Type::u32) + ")");
    }
    default:
      break;
  }
  fail("-");
  return ";";
}

// ---- ptx-rest: yield points, mbarrier, video -------------------------------------------------

bool has_extra(const Instruction& i, std::string_view e) {
  for (const auto& x : i.extra)
    if (x == e) return true;
  return false;
}

bool sync_load(const Instruction& i) {
  if (i.op != Opcode::ld && i.op != Opcode::ldu) return false;
  switch (i.sem) {
    case Semantics::volatile_:
    case Semantics::relaxed:
    case Semantics::acquire:
    case Semantics::acq_rel:
    case Semantics::sc:
    case Semantics::mmio:
      return true;
    default:
      return has_extra(i, "cv");  // ld.cv: "don't cache, fetch again" (volatile polling)
  }
}

// Yield points: nanosleep, mbarrier waits, and the poll of every spin-wait loop (a backward
// branch whose loop, at most 64 instructions, reads memory with .volatile/.relaxed/.acquire/.cv
// and has no yield point, barrier or warp collective of its own). A thread spinning there lets the
// other threads of its block run (fibers, or one pass of the split twin), so a flag written by a
// later thread of the block is seen; an OS-level yield lets other blocks progress.
void Emitter::find_yields() {
  const std::size_t nf = m_.functions.size();
  yield_before_.assign(nf, {});
  yields_.assign(nf, false);
  for (std::size_t fi = 0; fi < nf; ++fi) {
    const auto& f = m_.functions[fi];
    auto& yb = yield_before_[fi];
    yb.assign(f.body.size(), false);
    for (std::size_t k = 0; k < f.body.size(); ++k) {
      const auto& i = f.body[k];
      if ((i.op == Opcode::bar || i.op == Opcode::barrier) && i.mode == Mode::arrive &&
          i.scope != Scope::cluster)
        named_bars_ = true;
      if (i.op == Opcode::exit && !f.is_entry) func_exit_ = true;
      if (i.op == Opcode::nanosleep || (i.op == Opcode::mbarrier && i.mode == Mode::wait))
        yb[k] = true;
    }
    for (std::size_t j = 0; j < f.body.size(); ++j) {
      const auto& b = f.body[j];
      if (b.op != Opcode::bra || b.operands.empty()) continue;
      const auto& t = b.operands[0];
      if (t.kind != Operand::Kind::symbol || t.sym.kind != SymbolRef::Kind::label ||
          t.sym.index >= f.labels.size())
        continue;
      const std::size_t head = f.labels[t.sym.index].instruction;
      if (head > j || j - head > 64) continue;
      std::size_t poll = SIZE_MAX;
      bool waits = false;
      for (std::size_t k = head; k <= j; ++k) {
        // A loop that meets a barrier or collective every iteration lets the others run
        // already (scan's `volatile` shared loads between __syncthreads are no spin-wait).
        waits = waits || yb[k] || is_sync_op(f.body[k]);
        if (poll == SIZE_MAX && sync_load(f.body[k])) poll = k;
      }
      if (!waits && poll != SIZE_MAX) yb[poll] = true;
    }
    for (bool y : yb) yields_[fi] = yields_[fi] || y;
  }
}

std::string Emitter::mbarrier(const Instruction& ins) {
  const std::string ops = "::cudamux::ptx::";
  const Space sp = ins.space == Space::shared_cluster ? Space::shared : ins.space;
  auto A = [&](std::size_t k) { return addr(opnd(ins, k), sp); };
  auto U = [&](std::size_t k) { return rd(opnd(ins, k), Type::u32); };
  const bool test = ins.raw_opcode.find("test_wait") != std::string::npos ||
                    ins.raw_opcode.find("try_wait") != std::string::npos;
  if (ins.mode == Mode::wait || test) {
    // test_wait/try_wait{.parity} waitComplete, [addr], state|parity{, suspendTimeHint}
    const bool parity = has_extra(ins, "parity");
    return wr(opnd(ins, 0), Type::pred,
              ops + "mbarrier_test(" + A(1) + ", " + rd(opnd(ins, 2), Type::u64) + ", " +
                  (parity ? "true" : "false") + ")");
  }
  if (has_extra(ins, "init")) return ops + "mbarrier_init(" + A(0) + ", " + U(1) + ");";
  if (has_extra(ins, "inval")) return ops + "mbarrier_inval(" + A(0) + ");";
  if (has_extra(ins, "pending_count"))
    return wr(opnd(ins, 0), Type::u32,
              ops + "mbarrier_pending_count(" + rd(opnd(ins, 1), Type::u64) + ")");
  const bool expect = has_extra(ins, "expect_tx");
  if (ins.mode == Mode::arrive || has_extra(ins, "arrive_drop")) {
    // arrive{.expect_tx}{.noComplete} / arrive_drop: state, [addr]{, count | txCount}
    if (has_extra(ins, "noComplete")) {
      fail("mbarrier.arrive.noComplete");
      return ";";
    }
    const bool drop = has_extra(ins, "arrive_drop");
    std::string count = "1u", tx = "0u";
    if (ins.operands.size() > 2) (expect ? tx : count) = U(2);
    return wr(opnd(ins, 0), Type::u64,
              ops + "mbarrier_arrive(" + A(1) + ", " + count + ", " + (drop ? "true" : "false") +
                  ", " + tx + ")");
  }
  if (expect) return ops + "mbarrier_expect_tx(" + A(0) + ", " + U(1) + ");";
  if (has_extra(ins, "complete_tx"))
    return ops + "mbarrier_complete_tx(" + A(0) + ", " + U(1) + ");";
  fail("-");
  return ";";
}

// Video instructions: nvcc 13 emits only vabsdiff2/vabsdiff4 (from __vabsdiff*, __vsad*); the
// rest is refused (the kernel traps if it reaches one).
std::string Emitter::video(const Instruction& ins) {
  const std::string& n = ins.raw_opcode;
  const bool two = n.rfind("vabsdiff2", 0) == 0, four = n.rfind("vabsdiff4", 0) == 0;
  if ((!two && !four) || ins.types.size() != 3 || ins.sat || ins.operands.size() != 4) {
    fail("video instruction not supported (nvcc emits only vabsdiff2/vabsdiff4)");
    return ";";
  }
  for (const auto& o : ins.operands)
    if (o.kind != Operand::Kind::reg && o.kind != Operand::Kind::imm_int) {
      fail("video operand selectors/masks");
      return ";";
    }
  for (const auto& e : ins.extra)
    if (e != "add") {
      fail("video secondary operation ." + e);
      return ";";
    }
  const bool add = has_extra(ins, "add");
  return wr(opnd(ins, 0), Type::u32,
            std::string("::cudamux::ptx::vabsdiff<") + (two ? "2" : "4") + ", " +
                (tsigned(ins.types[1]) ? "true" : "false") + ", " +
                (tsigned(ins.types[2]) ? "true" : "false") + ", " + (add ? "true" : "false") +
                ">(" + rd(opnd(ins, 1), Type::u32) + ", " + rd(opnd(ins, 2), Type::u32) + ", " +
                rd(opnd(ins, 3), Type::u32) + ")");
}

// ---- the module ------------------------------------------------------------------------------

void Emitter::emit_registration() {
  std::vector<std::string> refs;
  for (std::size_t fi = 0; fi < m_.functions.size(); ++fi) {
    const auto& f = m_.functions[fi];
    if (!f.is_entry || !f.has_body || !emit_[fi]) continue;
    const std::string var = "cudamux_kernel_" + std::to_string(refs.size());
    long long threads = 0;
    if (f.maxntid[0] || f.reqntid[0]) {
      const auto* d = f.maxntid[0] ? f.maxntid : f.reqntid;
      threads = 1;
      for (int k = 0; k < 3; ++k) threads *= d[k] ? d[k] : 1;
    }
    // CUDAMUX_KERNEL_NO_BARRIERS; a split or flat twin runs the block: | CUDAMUX_KERNEL_PER_BLOCK
    const bool split = fi < twins_.size() && !twins_[fi].empty();
    const unsigned flags = split ? 3u : reaches_sync_[fi] ? 0u : 1u;
    o_ << "static const cudamux_kernel_desc " << var << " = ::cudamux::detail::entry<&"
       << fn_names_[fi] << ", " << flags << "u" << (split ? ", &" + twins_[fi] : std::string())
       << ">(static_cast<int>(" << threads << "), static_cast<int>(" << f.minnctapersm
       << "), nullptr, " << static_shared_ << "u, " << kernel_shared_used_[fi] << "u);\n";
    refs.push_back("&" + var);
  }
  o_ << "extern \"C\" __attribute__((visibility(\"default\"))) const cudamux_module_desc* "
        "cudamux_module(void) {\n  static const cudamux_kernel_desc* const k[] = {";
  for (const auto& r : refs) o_ << r << ", ";
  o_ << "nullptr};\n  static const cudamux_module_desc d = {CUDAMUX_DEVICE_ABI, " << refs.size()
     << "u, k};\n  return &d;\n}\n";
}

EmitResult Emitter::run() {
  o_ << "// Generated from PTX by cudamux's PTX back end (module " << opt_.module_name << ").\n";
  if (opt_.library) {
    // Compiled inside someone else's program: everything in a namespace of its own, so that
    // no helper name meets the program's.
    o_ << kRuntime;
    o_ << "namespace cudamux_inline_ptx {\nusing namespace ::cudamux_ptx_rt;\n";
  } else {
    o_ << kRuntime;
    o_ << "using namespace ::cudamux_ptx_rt;\n";
  }
  layout_shared();
  find_yields();
  analyse_reach();
  res_.kernel_shared_used = kernel_shared_used_;
  res_.emitted = emit_;
  if (opt_.layout_only) return std::move(res_);
  fn_names_.resize(m_.functions.size());
  for (std::size_t fi = 0; fi < m_.functions.size(); ++fi) {
    const auto& f = m_.functions[fi];
    // Prefixed: a PTX name may equal a helper of the runtime namespace (`st`, `ld`, `add`).
    if (f.is_entry)
      fn_names_[fi] = "cudamux_e_" + ident(f.name) +
                      (plain_ident(f.name) ? std::string() : "_" + std::to_string(fi));
    else
      fn_names_[fi] = "cudamux_f_" + ident(f.name) + "_" + std::to_string(fi);
  }
  for (std::size_t fi = 0; fi < m_.functions.size(); ++fi)
    if (emit_[fi]) emit_function_decl(fi);
  emit_globals();
  for (std::size_t fi = 0; fi < m_.functions.size(); ++fi) {
    const auto& f = m_.functions[fi];
    if (!emit_[fi]) continue;
    if (f.has_body)
      emit_function(fi);
    else if (!f.is_entry)
      emit_extern_wrapper(fi);
  }
  if (!opt_.library) emit_registration();
  if (opt_.library) o_ << "}  // namespace cudamux_inline_ptx\n";
  res_.function_names = fn_names_;
  res_.source = o_.str();
  return std::move(res_);
}

}  // namespace

EmitResult emit_cpp(const Module& m, const EmitOptions& options) {
  return Emitter(m, options).run();
}

}  // namespace cudamux::ptx
