// The PTX parser: tokens (lexer.hpp) -> the typed IR (ir.hpp), names resolved to indices.
// Recursive descent over the module grammar; an instruction's dotted opcode is decoded into
// the Instruction's typed fields. The first error stops the parse with a diagnostic (line,
// column, text); errors travel as an internal exception caught in parse(), so nothing escapes.
#include <algorithm>
#include <bit>
#include <cstring>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "cudamux/ptx/ir.hpp"
#include "lexer.hpp"

namespace cudamux::ptx {
namespace {

using detail::Tok;
using detail::Token;

struct Failure {};  // thrown after the diagnostic is recorded

constexpr int kMaxDepth = 200;                     // nested scopes / initializer braces
constexpr std::uint64_t kMaxRange = 1u << 20;      // %r<N>
constexpr std::uint64_t kMaxRegisters = 1u << 22;  // per function

std::optional<Type> type_from(std::string_view s) {
  static const std::unordered_map<std::string_view, Type> table = {
      {"pred", Type::pred},       {"b8", Type::b8},
      {"b16", Type::b16},         {"b32", Type::b32},
      {"b64", Type::b64},         {"b128", Type::b128},
      {"u8", Type::u8},           {"u16", Type::u16},
      {"u32", Type::u32},         {"u64", Type::u64},
      {"s8", Type::s8},           {"s16", Type::s16},
      {"s32", Type::s32},         {"s64", Type::s64},
      {"f16", Type::f16},         {"f16x2", Type::f16x2},
      {"bf16", Type::bf16},       {"bf16x2", Type::bf16x2},
      {"tf32", Type::tf32},       {"f32", Type::f32},
      {"f64", Type::f64},         {"e4m3", Type::e4m3},
      {"e5m2", Type::e5m2},       {"e4m3x2", Type::e4m3x2},
      {"e5m2x2", Type::e5m2x2},   {"e2m1x2", Type::e2m1x2},
      {"e2m3x2", Type::e2m3x2},   {"e3m2x2", Type::e3m2x2},
      {"ue8m0x2", Type::ue8m0x2}, {"s4", Type::s4},
      {"u4", Type::u4},           {"b1", Type::b1}};
  auto it = table.find(s);
  if (it == table.end()) return std::nullopt;
  return it->second;
}

std::optional<Space> space_from(std::string_view s) {
  if (s == "global") return Space::global;
  if (s == "shared" || s == "shared::cta") return Space::shared;
  if (s == "shared::cluster") return Space::shared_cluster;
  if (s == "local") return Space::local;
  if (s == "const") return Space::const_;
  if (s == "param" || s == "param::entry" || s == "param::func") return Space::param;
  if (s == "tex") return Space::tex;
  return std::nullopt;
}

struct OpName {
  const char* text;
  Opcode op;
};
// Multi-part opcodes, longest first within a family (matched as whole dotted prefixes).
constexpr OpName kMultiOps[] = {
    {"cp.async.commit_group", Opcode::cp_async_commit_group},
    {"cp.async.wait_group", Opcode::cp_async_wait_group},
    {"cp.async.wait_all", Opcode::cp_async_wait_all},
    {"cp.async.bulk", Opcode::cp_async_bulk},
    {"cp.async", Opcode::cp_async},
    {"cp.reduce.async.bulk", Opcode::cp_reduce_async_bulk},
    {"cvt.pack", Opcode::cvt_pack},
    {"bar.warp.sync", Opcode::bar_warp_sync},
    {"bar.red", Opcode::bar_red},
    {"barrier.red", Opcode::bar_red},
    {"barrier.cta.red", Opcode::bar_red},
    {"brx.idx", Opcode::brx_idx},
    {"wmma.load", Opcode::wmma_load},
    {"wmma.store", Opcode::wmma_store},
    {"wmma.mma", Opcode::wmma_mma},
    {"mma.sp", Opcode::mma_sp},
    {"mma.sp::ordered_metadata", Opcode::mma_sp},
};

std::optional<Opcode> single_op(std::string_view s) {
  static const std::unordered_map<std::string_view, Opcode> table = [] {
    std::unordered_map<std::string_view, Opcode> t;
    for (unsigned i = 0; i <= static_cast<unsigned>(Opcode::video); ++i) {
      auto op = static_cast<Opcode>(i);
      std::string_view n = name_of(op);
      if (n.find('.') == std::string_view::npos) t.emplace(n, op);
    }
    t.erase("video");
    for (const char* v :
         {"vadd",  "vsub",  "vabsdiff", "vmin",      "vmax",      "vshl",  "vshr",  "vmad",
          "vset",  "vadd2", "vsub2",    "vavrg2",    "vabsdiff2", "vmin2", "vmax2", "vset2",
          "vadd4", "vsub4", "vavrg4",   "vabsdiff4", "vmin4",     "vmax4", "vset4"})
      t.emplace(v, Opcode::video);
    return t;
  }();
  auto it = table.find(s);
  if (it == table.end()) return std::nullopt;
  return it->second;
}

std::optional<Rounding> rounding_from(std::string_view s) {
  static const std::pair<const char*, Rounding> t[] = {
      {"rn", Rounding::rn},   {"rz", Rounding::rz},  {"rm", Rounding::rm},   {"rp", Rounding::rp},
      {"rna", Rounding::rna}, {"rs", Rounding::rs},  {"rni", Rounding::rni}, {"rzi", Rounding::rzi},
      {"rmi", Rounding::rmi}, {"rpi", Rounding::rpi}};
  for (auto& [n, r] : t)
    if (s == n) return r;
  return std::nullopt;
}

std::optional<Cmp> cmp_from(std::string_view s) {
  static const std::pair<const char*, Cmp> t[] = {
      {"eq", Cmp::eq},   {"ne", Cmp::ne},   {"lt", Cmp::lt},   {"le", Cmp::le},   {"gt", Cmp::gt},
      {"ge", Cmp::ge},   {"lo", Cmp::lo},   {"ls", Cmp::ls},   {"hi", Cmp::hi},   {"hs", Cmp::hs},
      {"equ", Cmp::equ}, {"neu", Cmp::neu}, {"ltu", Cmp::ltu}, {"leu", Cmp::leu}, {"gtu", Cmp::gtu},
      {"geu", Cmp::geu}, {"num", Cmp::num}, {"nan", Cmp::nan}};
  for (auto& [n, c] : t)
    if (s == n) return c;
  return std::nullopt;
}

std::optional<Semantics> sem_from(std::string_view s) {
  if (s == "relaxed") return Semantics::relaxed;
  if (s == "acquire") return Semantics::acquire;
  if (s == "release") return Semantics::release;
  if (s == "acq_rel") return Semantics::acq_rel;
  if (s == "sc") return Semantics::sc;
  if (s == "weak") return Semantics::weak;
  if (s == "volatile") return Semantics::volatile_;
  if (s == "mmio") return Semantics::mmio;
  return std::nullopt;
}

std::optional<Scope> scope_from(std::string_view s) {
  if (s == "cta") return Scope::cta;
  if (s == "cluster") return Scope::cluster;
  if (s == "gpu") return Scope::gpu;
  if (s == "sys") return Scope::sys;
  return std::nullopt;
}

std::optional<Mode> atomic_mode(std::string_view s) {
  static const std::pair<const char*, Mode> t[] = {
      {"add", Mode::add},   {"min", Mode::min},  {"max", Mode::max}, {"inc", Mode::inc},
      {"dec", Mode::dec},   {"and", Mode::and_}, {"or", Mode::or_},  {"xor", Mode::xor_},
      {"exch", Mode::exch}, {"cas", Mode::cas}};
  for (auto& [n, m] : t)
    if (s == n) return m;
  return std::nullopt;
}

// Op-specific sub-operations (Instruction::mode).
std::optional<Mode> mode_for(Opcode op, std::string_view s) {
  switch (op) {
    case Opcode::atom:
    case Opcode::red:
    case Opcode::redux:
    case Opcode::multimem:
    case Opcode::cp_reduce_async_bulk:
    case Opcode::sured:
      return atomic_mode(s);
    case Opcode::shfl:
      if (s == "up") return Mode::up;
      if (s == "down") return Mode::down;
      if (s == "bfly") return Mode::bfly;
      if (s == "idx") return Mode::idx;
      return std::nullopt;
    case Opcode::vote:
    case Opcode::match:
      if (s == "all") return Mode::all;
      if (s == "any") return Mode::any;
      if (s == "uni") return Mode::uni;
      if (s == "ballot") return Mode::ballot;
      return std::nullopt;
    case Opcode::prmt:
      if (s == "f4e") return Mode::f4e;
      if (s == "b4e") return Mode::b4e;
      if (s == "rc8") return Mode::rc8;
      if (s == "ecl") return Mode::ecl;
      if (s == "ecr") return Mode::ecr;
      if (s == "rc16") return Mode::rc16;
      return std::nullopt;
    case Opcode::bfind:
      if (s == "shiftamt") return Mode::shiftamt;
      return std::nullopt;
    case Opcode::testp:
      if (s == "finite") return Mode::finite;
      if (s == "infinite") return Mode::infinite;
      if (s == "number") return Mode::number;
      if (s == "notanumber") return Mode::notanumber;
      if (s == "normal") return Mode::normal;
      if (s == "subnormal") return Mode::subnormal;
      return std::nullopt;
    case Opcode::shf:
      if (s == "l") return Mode::l;
      if (s == "r") return Mode::r;
      return std::nullopt;
    case Opcode::bar:
    case Opcode::barrier:
    case Opcode::mbarrier:
      if (s == "arrive") return Mode::arrive;
      if (s == "test_wait" || s == "try_wait") return Mode::wait;
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

bool set_flag(Instruction& in, std::string_view s) {
  struct F {
    const char* n;
    bool Instruction::*m;
  };
  static const F flags[] = {{"ftz", &Instruction::ftz},         {"sat", &Instruction::sat},
                            {"approx", &Instruction::approx},   {"full", &Instruction::full},
                            {"relu", &Instruction::relu},       {"NaN", &Instruction::nan},
                            {"xorsign", &Instruction::xorsign}, {"abs", &Instruction::abs},
                            {"uni", &Instruction::uni},         {"wide", &Instruction::wide},
                            {"hi", &Instruction::hi},           {"lo", &Instruction::lo},
                            {"cc", &Instruction::cc},           {"sync", &Instruction::sync},
                            {"aligned", &Instruction::aligned}, {"wrap", &Instruction::wrap},
                            {"clamp", &Instruction::clamp},     {"noftz", &Instruction::noftz},
                            {"oob", &Instruction::oob},         {"nc", &Instruction::non_coherent}};
  for (auto& f : flags)
    if (s == f.n) {
      in.*f.m = true;
      return true;
    }
  return false;
}

std::vector<std::string_view> split_dots(std::string_view s) {
  std::vector<std::string_view> parts;
  std::size_t b = 0;
  for (std::size_t i = 0; i <= s.size(); ++i)
    if (i == s.size() || s[i] == '.') {
      parts.push_back(s.substr(b, i - b));
      b = i + 1;
    }
  return parts;
}

struct SpecialName {
  const char* name;
  SpecialReg reg;
  bool xyz;  // takes .x/.y/.z
};
constexpr SpecialName kSpecials[] = {
    {"%tid", SpecialReg::tid, true},
    {"%ntid", SpecialReg::ntid, true},
    {"%ctaid", SpecialReg::ctaid, true},
    {"%nctaid", SpecialReg::nctaid, true},
    {"%clusterid", SpecialReg::clusterid, true},
    {"%nclusterid", SpecialReg::nclusterid, true},
    {"%cluster_ctaid", SpecialReg::cluster_ctaid, true},
    {"%cluster_nctaid", SpecialReg::cluster_nctaid, true},
    {"%laneid", SpecialReg::laneid, false},
    {"%warpid", SpecialReg::warpid, false},
    {"%nwarpid", SpecialReg::nwarpid, false},
    {"%smid", SpecialReg::smid, false},
    {"%nsmid", SpecialReg::nsmid, false},
    {"%gridid", SpecialReg::gridid, false},
    {"%lanemask_eq", SpecialReg::lanemask_eq, false},
    {"%lanemask_le", SpecialReg::lanemask_le, false},
    {"%lanemask_lt", SpecialReg::lanemask_lt, false},
    {"%lanemask_ge", SpecialReg::lanemask_ge, false},
    {"%lanemask_gt", SpecialReg::lanemask_gt, false},
    {"%clock", SpecialReg::clock, false},
    {"%clock_hi", SpecialReg::clock_hi, false},
    {"%clock64", SpecialReg::clock64, false},
    {"%globaltimer", SpecialReg::globaltimer, false},
    {"%globaltimer_lo", SpecialReg::globaltimer_lo, false},
    {"%globaltimer_hi", SpecialReg::globaltimer_hi, false},
    {"%dynamic_smem_size", SpecialReg::dynamic_smem_size, false},
    {"%total_smem_size", SpecialReg::total_smem_size, false},
    {"%aggr_smem_size", SpecialReg::aggr_smem_size, false},
    {"%cluster_ctarank", SpecialReg::cluster_ctarank, false},
    {"%cluster_nctarank", SpecialReg::cluster_nctarank, false},
    {"%is_explicit_cluster", SpecialReg::is_explicit_cluster, false},
    {"%reserved_smem_offset_begin", SpecialReg::reserved_smem_offset_begin, false},
    {"%reserved_smem_offset_end", SpecialReg::reserved_smem_offset_end, false},
    {"%reserved_smem_offset_cap", SpecialReg::reserved_smem_offset_cap, false},
    {"%current_graph_exec", SpecialReg::current_graph_exec, false},
};

bool parse_uint(std::string_view s, unsigned lo, unsigned hi, unsigned& out) {
  if (s.empty() || s.size() > 3) return false;
  unsigned v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<unsigned>(c - '0');
  }
  if (v < lo || v > hi) return false;
  out = v;
  return true;
}

std::optional<std::pair<SpecialReg, std::uint8_t>> special_from(std::string_view s) {
  std::string_view base = s, comp;
  if (auto d = s.find('.'); d != std::string_view::npos) {
    base = s.substr(0, d);
    comp = s.substr(d + 1);
  }
  for (auto& sp : kSpecials) {
    if (base != sp.name) continue;
    if (!sp.xyz) {
      if (!comp.empty()) return std::nullopt;
      return std::pair{sp.reg, std::uint8_t{0}};
    }
    if (comp.empty()) return std::pair{sp.reg, std::uint8_t{0}};
    if (comp == "x") return std::pair{sp.reg, std::uint8_t{0}};
    if (comp == "y") return std::pair{sp.reg, std::uint8_t{1}};
    if (comp == "z") return std::pair{sp.reg, std::uint8_t{2}};
    return std::nullopt;
  }
  if (!comp.empty()) return std::nullopt;
  unsigned n = 0;
  // %reserved_smem_offset_<2>: registers _0 and _1 (the enum's reserved_smem_offset_2 is the
  // pair; the component says which).
  if (base.starts_with("%reserved_smem_offset_") && parse_uint(base.substr(22), 0, 1, n))
    return std::pair{SpecialReg::reserved_smem_offset_2, static_cast<std::uint8_t>(n)};
  if (base.starts_with("%envreg") && parse_uint(base.substr(7), 0, 31, n))
    return std::pair{SpecialReg::envreg, static_cast<std::uint8_t>(n)};
  if (base.starts_with("%pm") && base.ends_with("_64") &&
      parse_uint(base.substr(3, base.size() - 6), 0, 7, n))
    return std::pair{SpecialReg::pm64, static_cast<std::uint8_t>(n)};
  if (base.starts_with("%pm") && parse_uint(base.substr(3), 0, 7, n))
    return std::pair{SpecialReg::pm, static_cast<std::uint8_t>(n)};
  return std::nullopt;
}

std::uint64_t mask_to(Type t, std::uint64_t v) {
  unsigned n = size_of(t);
  if (n == 0 || n >= 8) return v;
  return v & ((std::uint64_t{1} << (n * 8)) - 1);
}

// A literal (possibly negated) converted to the bits of type t (initializers, f32 context).
std::uint64_t literal_bits(const detail::Number& n, bool negative, Type t) {
  using K = detail::Number::Kind;
  if (t == Type::f32) {
    float f = 0;
    if (n.kind == K::f32) {
      f = std::bit_cast<float>(static_cast<std::uint32_t>(n.bits));
    } else if (n.kind == K::f64) {
      f = static_cast<float>(std::bit_cast<double>(n.bits));
    } else {
      f = static_cast<float>(n.bits);
    }
    if (negative) f = -f;
    return std::bit_cast<std::uint32_t>(f);
  }
  if (t == Type::f64) {
    double d = 0;
    if (n.kind == K::f32) {
      d = std::bit_cast<float>(static_cast<std::uint32_t>(n.bits));
    } else if (n.kind == K::f64) {
      d = std::bit_cast<double>(n.bits);
    } else {
      d = static_cast<double>(n.bits);
    }
    if (negative) d = -d;
    return std::bit_cast<std::uint64_t>(d);
  }
  std::uint64_t v = n.bits;
  if (n.kind == K::f32 && negative)
    v ^= 0x80000000u;
  else if (n.kind == K::f64 && negative)
    v ^= 0x8000000000000000ull;
  else if (negative)
    v = ~v + 1;
  return mask_to(t, v);
}

class Parser {
 public:
  Parser(std::string_view text, std::vector<Diagnostic>& diags)
      : toks_(detail::lex(text)), diags_(diags) {}

  Module run() {
    while (peek().kind != Tok::end) top_level();
    resolve_module_pending();
    return std::move(m_);
  }

 private:
  // ---- token helpers -------------------------------------------------------------------
  const Token& peek(std::size_t ahead = 0) const {
    std::size_t i = std::min(pos_ + ahead, toks_.size() - 1);
    return toks_[i];
  }
  const Token& next() {
    const Token& t = toks_[pos_];
    if (pos_ + 1 < toks_.size()) ++pos_;
    return t;
  }
  static SourceLoc loc_of(const Token& t) { return {t.line, t.column}; }
  [[noreturn]] void fail(SourceLoc loc, std::string msg) {
    diags_.push_back({loc, std::move(msg)});
    throw Failure{};
  }
  [[noreturn]] void fail(const Token& t, std::string msg) { fail(loc_of(t), std::move(msg)); }
  // Control and non-ASCII bytes as \xNN, so diagnostics stay readable text.
  static std::string printable(std::string_view s) {
    std::string out;
    for (char c : s) {
      auto u = static_cast<unsigned char>(c);
      if (u >= 0x20 && u < 0x7f) {
        out += c;
      } else {
        static constexpr char hex[] = "0123456789abcdef";
        out += "\\x";
        out += hex[u >> 4];
        out += hex[u & 15];
      }
    }
    return out;
  }
  static std::string describe(const Token& t) {
    switch (t.kind) {
      case Tok::end:
        return "end of input";
      case Tok::string:
        return "string \"" + std::string(t.text) + "\"";
      case Tok::error:
        if (t.text == "\"") return "unterminated string";
        if (t.text == "/*") return "unterminated comment";
        return "invalid character '" + printable(t.text) + "'";
      default:
        return "'" + std::string(t.text) + "'";
    }
  }
  [[noreturn]] void unexpected(const Token& t, const char* wanted) {
    if (t.kind == Tok::error) fail(t, describe(t));
    fail(t, std::string("expected ") + wanted + ", found " + describe(t));
  }
  bool is_punct(char c, std::size_t ahead = 0) const {
    const Token& t = peek(ahead);
    return t.kind == Tok::punct && t.ch == c;
  }
  bool accept(char c) {
    if (!is_punct(c)) return false;
    next();
    return true;
  }
  void expect(char c) {
    if (!accept(c)) {
      char w[4] = {'\'', c, '\'', 0};
      unexpected(peek(), w);
    }
  }
  bool is_dir(std::string_view d, std::size_t ahead = 0) const {
    const Token& t = peek(ahead);
    return t.kind == Tok::directive && t.text.substr(1) == d;
  }
  bool accept_dir(std::string_view d) {
    if (!is_dir(d)) return false;
    next();
    return true;
  }
  std::string_view expect_ident(const char* what) {
    if (peek().kind != Tok::ident) unexpected(peek(), what);
    return next().text;
  }
  std::uint64_t expect_uint(const char* what) {
    const Token& t = peek();
    if (t.kind != Tok::number) unexpected(t, what);
    detail::Number n;
    if (!detail::parse_number(t.text, n) || n.kind != detail::Number::Kind::integer)
      fail(t, "invalid integer '" + std::string(t.text) + "'");
    next();
    return n.bits;
  }
  std::uint32_t expect_u32(const char* what) {
    const Token& t = peek();
    std::uint64_t v = expect_uint(what);
    if (v > 0xffffffffu) fail(t, "value out of range: " + std::string(t.text));
    return static_cast<std::uint32_t>(v);
  }
  // Skips the rest of the directive's line (.loc has no terminating semicolon).
  void skip_line(std::uint32_t line) {
    while (peek().kind != Tok::end && peek().line == line) next();
  }
  // Skips a balanced { ... } (debug sections hold DWARF as data directives).
  void skip_braces() {
    const Token& open = peek();
    expect('{');
    int depth = 1;
    while (depth > 0) {
      const Token& t = next();
      if (t.kind == Tok::end) fail(open, "unterminated section body");
      if (t.kind == Tok::punct && t.ch == '{') ++depth;
      if (t.kind == Tok::punct && t.ch == '}') --depth;
    }
  }

  // ---- module level --------------------------------------------------------------------
  void top_level() {
    const Token& t = peek();
    if (t.kind != Tok::directive) unexpected(t, "a directive");
    std::string_view d = t.text.substr(1);
    if (d == "version") {
      next();
      const Token& v = peek();
      if (v.kind != Tok::number) unexpected(v, "a version number");
      next();
      auto dot = v.text.find('.');
      unsigned major = 0, minor = 0;
      if (dot == std::string_view::npos || !parse_uint(v.text.substr(0, dot), 1, 99, major) ||
          !parse_uint(v.text.substr(dot + 1), 0, 99, minor))
        fail(v, "invalid .version '" + std::string(v.text) + "'");
      m_.version_major = major;
      m_.version_minor = minor;
    } else if (d == "target") {
      next();
      bool first = true;
      do {
        const Token& tt = peek();
        std::string_view name = expect_ident("a target name");
        if (first) {
          m_.target = std::string(name);
          if (name.starts_with("sm_") || name.starts_with("compute_")) {
            std::string_view n = name.substr(name.find('_') + 1);
            unsigned a = 0;
            std::size_t k = 0;
            while (k < n.size() && n[k] >= '0' && n[k] <= '9' && a < 10000)
              a = a * 10 + static_cast<unsigned>(n[k++] - '0');
            if (k == 0) fail(tt, "invalid target '" + std::string(name) + "'");
            m_.arch = a;
            if (k < n.size()) {
              if (k + 1 != n.size() || (n[k] != 'a' && n[k] != 'f'))
                fail(tt, "invalid target '" + std::string(name) + "'");
              m_.arch_suffix = n[k];
            }
          } else {
            fail(tt, "unknown target '" + std::string(name) + "'");
          }
        } else {
          m_.target_options.emplace_back(name);
        }
        first = false;
      } while (accept(','));
    } else if (d == "address_size") {
      next();
      const Token& v = peek();
      std::uint64_t n = expect_uint("an address size");
      if (n != 32 && n != 64) fail(v, "invalid .address_size " + std::to_string(n));
      m_.address_size = static_cast<unsigned>(n);
    } else if (d == "file") {
      next();
      const Token& nt = peek();
      std::uint64_t n = expect_uint("a file number");
      if (n > 100000) fail(nt, "file number out of range");
      if (peek().kind != Tok::string) unexpected(peek(), "a file name");
      std::string name(next().text);
      while (accept(',')) {
        if (peek().kind != Tok::number) unexpected(peek(), "a number");
        next();
      }
      if (m_.files.size() <= n) m_.files.resize(n + 1);
      m_.files[n] = std::move(name);
    } else if (d == "loc") {
      skip_line(next().line);
    } else if (d == "section") {
      next();
      if (peek().kind != Tok::directive && peek().kind != Tok::ident)
        unexpected(peek(), "a section name");
      next();
      skip_braces();
    } else if (d == "pragma") {
      next();
      if (peek().kind != Tok::string) unexpected(peek(), "a string");
      next();
      expect(';');
    } else if (d == "alias") {
      next();
      alias();
    } else {
      declaration();
    }
  }

  struct Linkage {
    bool ext = false, vis = false, weak = false, common = false;
  };

  void declaration() {
    Linkage l;
    for (;;) {
      if (accept_dir("extern"))
        l.ext = true;
      else if (accept_dir("visible"))
        l.vis = true;
      else if (accept_dir("weak"))
        l.weak = true;
      else if (accept_dir("common"))
        l.common = true;
      else
        break;
    }
    if (is_dir("entry") || is_dir("func")) {
      function(l);
      return;
    }
    const Token& t = peek();
    auto sp = t.kind == Tok::directive ? decl_space(t.text.substr(1)) : std::nullopt;
    if (!sp) {
      if (t.kind == Tok::directive) fail(t, "unknown directive '" + std::string(t.text) + "'");
      unexpected(t, "a declaration");
    }
    next();
    variables(*sp, l, /*in_function=*/false);
  }

  static std::optional<Space> decl_space(std::string_view s) {
    if (s == "global") return Space::global;
    if (s == "const") return Space::const_;
    if (s == "shared" || s == "shared::cta") return Space::shared;
    if (s == "shared::cluster") return Space::shared_cluster;
    if (s == "local") return Space::local;
    if (s == "param") return Space::param;
    if (s == "tex") return Space::tex;
    return std::nullopt;
  }

  // `.alias a, b;`: a second name for function b.
  void alias() {
    const Token& at = peek();
    std::string alias_name(expect_ident("an alias name"));
    expect(',');
    const Token& tt = peek();
    std::string target(expect_ident("a function name"));
    expect(';');
    auto it = module_names_.find(target);
    if (it == module_names_.end() || it->second.kind != SymbolRef::Kind::function)
      fail(tt, "undefined function '" + target + "'");
    if (module_names_.count(alias_name)) fail(at, "redefinition of '" + alias_name + "'");
    module_names_[alias_name] = it->second;
  }

  // Attributes of a variable or parameter: .align N, .vN, a type, .ptr + space + .align.
  struct Attrs {
    Type type = Type::none;
    std::uint8_t vec = 1;
    std::uint32_t align = 0;
    bool ptr = false;
    Space ptr_space = Space::generic;
    std::uint32_t ptr_align = 0;
    bool opaque = false;   // .texref / .samplerref / .surfref
    bool managed = false;  // .attribute(.managed)
  };
  Attrs attributes(bool allow_ptr) {
    Attrs a;
    for (;;) {
      const Token& t = peek();
      if (t.kind != Tok::directive) break;
      std::string_view d = t.text.substr(1);
      if (d == "align") {
        next();
        const Token& nt = peek();
        std::uint32_t v = expect_u32("an alignment");
        if (v == 0 || (v & (v - 1)) != 0) fail(nt, "alignment must be a power of two");
        if (a.ptr)
          a.ptr_align = v;
        else
          a.align = v;
      } else if (d == "v2" || d == "v4" || d == "v8") {
        next();
        a.vec = static_cast<std::uint8_t>(d[1] - '0');
      } else if (auto ty = type_from(d)) {
        next();
        a.type = *ty;
      } else if (d == "texref" || d == "samplerref" || d == "surfref") {
        next();
        a.type = Type::b64;
        a.opaque = true;
      } else if (d == "attribute") {
        // .attribute(.managed) / .attribute(.unified(0x..., 0x...)): a parenthesised list.
        next();
        expect('(');
        do {
          const Token& at = peek();
          if (at.kind != Tok::directive) unexpected(at, "an attribute");
          next();
          if (at.text == ".managed") a.managed = true;
          if (accept('(')) {
            while (!accept(')')) {
              if (peek().kind == Tok::end || is_punct(';')) unexpected(peek(), "')'");
              next();
            }
          }
        } while (accept(','));
        expect(')');
      } else if (allow_ptr && d == "ptr") {
        next();
        a.ptr = true;
      } else if (allow_ptr && a.ptr && space_from(d)) {
        next();
        a.ptr_space = *space_from(d);
      } else {
        break;
      }
    }
    if (a.type == Type::none) unexpected(peek(), "a type");
    return a;
  }

  std::vector<std::uint64_t> dims() {
    std::vector<std::uint64_t> out;
    while (is_punct('[')) {
      next();
      if (accept(']')) {
        if (!out.empty()) fail(peek(), "only the first array dimension may be empty");
        out.push_back(0);
        continue;
      }
      out.push_back(expect_uint("an array size"));
      expect(']');
    }
    return out;
  }

  void variables(Space sp, const Linkage& l, bool in_function) {
    Attrs a = attributes(false);
    if (a.opaque) sp = Space::tex;
    do {
      const Token& nt = peek();
      Variable v;
      v.name = std::string(expect_ident("a variable name"));
      v.loc = loc_of(nt);
      v.space = sp;
      v.type = a.type;
      v.vec = a.vec;
      v.align = a.align;
      v.is_extern = l.ext;
      v.is_visible = l.vis;
      v.is_weak = l.weak;
      v.is_common = l.common;
      v.is_managed = a.managed;
      v.dims = dims();
      if (accept('=')) initializer(v);
      if (in_function) {
        SymbolRef ref{SymbolRef::Kind::local, static_cast<std::uint32_t>(fn().locals.size())};
        declare_scoped(nt, v.name, Entry{false, 0, ref});
        fn().locals.push_back(std::move(v));
      } else {
        auto it = module_names_.find(v.name);
        if (it != module_names_.end()) {
          // An .extern declaration followed by the definition (or repeated declarations).
          if (it->second.kind != SymbolRef::Kind::global)
            fail(nt, "redefinition of '" + v.name + "'");
          Variable& old = m_.globals[it->second.index];
          if (!old.is_extern && !v.is_extern) fail(nt, "redefinition of '" + v.name + "'");
          if (!v.is_extern) old = std::move(v);
        } else {
          module_names_[v.name] = {SymbolRef::Kind::global,
                                   static_cast<std::uint32_t>(m_.globals.size())};
          m_.globals.push_back(std::move(v));
        }
      }
    } while (accept(','));
    expect(';');
  }

  void initializer(Variable& v) {
    std::uint64_t per = v.vec ? v.vec : 1;
    for (std::size_t i = 1; i < v.dims.size(); ++i)
      per = per * std::max<std::uint64_t>(v.dims[i], 1);
    const Token& start = peek();
    init_item(v, 0);
    std::uint64_t total = per;
    if (!v.dims.empty()) {
      if (v.dims[0] == 0) v.dims[0] = (v.init.size() + per - 1) / per;
      total = v.size_bytes() / std::max<unsigned>(size_of(v.type), 1);
    }
    if (v.init.size() > total) fail(start, "too many initializers for '" + v.name + "'");
  }

  void init_item(Variable& v, int depth) {
    if (depth > kMaxDepth) fail(peek(), "initializer nested too deeply");
    if (accept('{')) {
      if (!is_punct('}')) {
        do init_item(v, depth + 1);
        while (accept(','));
      }
      expect('}');
      return;
    }
    Initializer in;
    const Token& t = peek();
    if (t.kind == Tok::ident && t.text == "generic" && is_punct('(', 1)) {
      next();
      next();
      in.generic = true;
      init_symbol(in);
      expect(')');
      in.offset += offset_suffix();
    } else if (t.kind == Tok::ident) {
      init_symbol(in);
    } else if (t.kind == Tok::number && is_punct('(', 1)) {
      // A byte-mask of an address: 0xFF00(generic(sym)+4).
      detail::Number n;
      if (!detail::parse_number(t.text, n) || n.kind != detail::Number::Kind::integer ||
          n.bits == 0)
        fail(t, "invalid address mask '" + std::string(t.text) + "'");
      next();
      next();  // '('
      in.mask = n.bits;
      const Token& st = peek();
      if (st.kind == Tok::ident && st.text == "generic" && is_punct('(', 1)) {
        next();
        next();
        in.generic = true;
        init_symbol(in);
        expect(')');
        in.offset += offset_suffix();
      } else {
        init_symbol(in);
      }
      expect(')');
    } else {
      bool neg = accept('-');
      const Token& nt = peek();
      if (nt.kind != Tok::number) unexpected(nt, "an initializer value");
      detail::Number n;
      if (!detail::parse_number(nt.text, n))
        fail(nt, "invalid number '" + std::string(nt.text) + "'");
      next();
      in.bits = literal_bits(n, neg, v.type);
    }
    v.init.push_back(in);
  }

  void init_symbol(Initializer& in) {
    const Token& t = peek();
    std::string name(expect_ident("a symbol"));
    in.is_symbol = true;
    if (name.starts_with("%")) fail(t, "a register cannot initialise a variable");
    if (auto it = module_names_.find(name); it != module_names_.end()) {
      in.sym = it->second;
    } else {
      in.bits = add_pending(name, loc_of(t), false);
    }
    in.offset += offset_suffix();
  }

  // `+ 8`, `+-8`, `- 8` after a symbol or address base.
  std::int64_t offset_suffix() {
    std::int64_t off = 0;
    while (is_punct('+') || is_punct('-')) {
      bool neg = next().ch == '-';
      if (accept('-')) neg = !neg;
      const Token& t = peek();
      std::uint64_t v = expect_uint("an offset");
      if (v > static_cast<std::uint64_t>(INT64_MAX)) fail(t, "offset out of range");
      off += neg ? -static_cast<std::int64_t>(v) : static_cast<std::int64_t>(v);
    }
    return off;
  }

  // ---- functions -----------------------------------------------------------------------
  Function& fn() { return m_.functions[fidx_]; }

  std::vector<Param> param_list(bool prototype) {
    std::vector<Param> out;
    expect('(');
    if (accept(')')) return out;
    do {
      const Token& t = peek();
      if (is_dir("reg"))  // the pre-PTX-2.0 register-passing ABI (nvcc never emits it)
        fail(t, ".reg parameters are not supported (use .param)");
      if (!accept_dir("param")) unexpected(t, "'.param'");
      Attrs a = attributes(true);
      Param p;
      p.loc = loc_of(peek());
      p.name = std::string(expect_ident("a parameter name"));
      if (!prototype && p.name == "_") fail(p.loc, "parameter needs a name");
      p.type = a.type;
      p.align = a.align;
      p.ptr_space = a.ptr_space;
      p.ptr_align = a.ptr_align;
      p.dims = dims();
      if (a.vec > 1) p.dims.insert(p.dims.begin(), a.vec);
      out.push_back(std::move(p));
    } while (accept(','));
    expect(')');
    return out;
  }

  void dim3(std::uint32_t (&out)[3]) {
    out[0] = expect_u32("a size");
    out[1] = out[2] = 1;
    if (accept(',')) {
      out[1] = expect_u32("a size");
      if (accept(',')) out[2] = expect_u32("a size");
    }
  }

  void function(const Linkage& l) {
    bool is_entry = next().text == ".entry";
    Function f;
    f.is_entry = is_entry;
    f.is_extern = l.ext;
    f.is_visible = l.vis;
    f.is_weak = l.weak;
    if (!is_entry && is_punct('(')) f.returns = param_list(false);
    const Token& nt = peek();
    f.name = std::string(expect_ident("a function name"));
    f.loc = loc_of(nt);
    if (is_punct('(')) f.params = param_list(false);
    // Performance directives and .noreturn between the signature and the body.
    for (;;) {
      const Token& t = peek();
      if (t.kind != Tok::directive) break;
      std::string_view d = t.text.substr(1);
      if (d == "maxntid") {
        next();
        dim3(f.maxntid);
      } else if (d == "reqntid") {
        next();
        dim3(f.reqntid);
      } else if (d == "reqnctapercluster") {
        next();
        dim3(f.reqnctapercluster);
      } else if (d == "minnctapersm") {
        next();
        f.minnctapersm = expect_u32("a count");
      } else if (d == "maxnctapersm") {
        next();
        expect_u32("a count");
      } else if (d == "maxnreg") {
        next();
        f.maxnreg = expect_u32("a count");
      } else if (d == "maxclusterrank") {
        next();
        f.maxclusterrank = expect_u32("a count");
      } else if (d == "noreturn") {
        next();
        f.noreturn = true;
      } else if (d == "explicitcluster" || d == "blocksareclusters") {
        next();
      } else if (d == "abi_preserve" || d == "abi_preserve_control") {
        next();
        expect_u32("a count");
      } else if (d == "pragma") {
        next();
        if (peek().kind != Tok::string) unexpected(peek(), "a string");
        f.pragmas.emplace_back(next().text);
        expect(';');
      } else {
        break;
      }
    }
    // Declarations and definitions of one name share one Function.
    std::uint32_t index = 0;
    if (auto it = module_names_.find(f.name); it != module_names_.end()) {
      if (it->second.kind != SymbolRef::Kind::function)
        fail(nt, "redefinition of '" + f.name + "'");
      index = it->second.index;
      if (m_.functions[index].has_body && is_punct('{'))
        fail(nt, "redefinition of '" + f.name + "'");
      if (m_.functions[index].has_body) {  // a declaration after the definition
        expect(';');
        return;
      }
      m_.functions[index] = std::move(f);
    } else {
      index = static_cast<std::uint32_t>(m_.functions.size());
      module_names_[f.name] = {SymbolRef::Kind::function, index};
      m_.functions.push_back(std::move(f));
    }
    if (accept(';')) return;
    fidx_ = index;
    body();
  }

  // ---- bodies --------------------------------------------------------------------------
  struct Entry {
    bool is_reg = false;
    std::uint32_t reg = 0;
    SymbolRef sym;
  };
  std::vector<std::unordered_map<std::string, Entry>> scopes_;
  std::unordered_set<std::string> reg_names_;
  // Labels are scoped like declarations (inline asm repeats `{ L: ... bra L; }` blocks):
  // per open block, its labels and the label-capable references not yet resolved.
  struct LabelScope {
    std::unordered_map<std::string, std::uint32_t> labels;
    std::vector<std::uint32_t> refs;  // ids into pending_
  };
  std::vector<LabelScope> label_scopes_;
  std::vector<std::string> label_names_;  // as written, by label index
  std::unordered_set<std::string> label_unique_;
  std::uint32_t fidx_ = 0;
  std::uint32_t rename_counter_ = 0;

  void declare_scoped(const Token& at, const std::string& name, Entry e) {
    auto& sc = scopes_.back();
    if (sc.count(name)) fail(at, "redeclaration of '" + name + "'");
    sc.emplace(name, e);
  }

  const Entry* lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto f = it->find(name);
      if (f != it->end()) return &f->second;
    }
    return nullptr;
  }

  void add_register(const Token& at, std::string name, Type t, std::uint8_t vec) {
    Function& f = fn();
    if (f.registers.size() >= kMaxRegisters) fail(at, "too many registers");
    Entry e{true, static_cast<std::uint32_t>(f.registers.size()), {}};
    declare_scoped(at, name, e);
    std::string unique = name;
    // A name reused in another (nested) scope gets a unique spelling in Function::registers.
    while (reg_names_.count(unique)) unique = name + "$" + std::to_string(++rename_counter_);
    reg_names_.insert(unique);
    f.registers.push_back({std::move(unique), t, vec});
  }

  void body() {
    scopes_.clear();
    reg_names_.clear();
    label_scopes_.clear();
    label_names_.clear();
    label_unique_.clear();
    rename_counter_ = 0;
    scopes_.emplace_back();
    Function& f = fn();
    f.has_body = true;
    std::uint32_t np = static_cast<std::uint32_t>(f.params.size());
    for (std::uint32_t i = 0; i < f.params.size(); ++i)
      scopes_.back()[f.params[i].name] = {false, 0, {SymbolRef::Kind::param, i}};
    for (std::uint32_t i = 0; i < f.returns.size(); ++i)
      scopes_.back()[f.returns[i].name] = {false, 0, {SymbolRef::Kind::param, np + i}};
    block(0);
    scopes_.clear();
    resolve_function_pending();
  }

  void block(int depth) {
    const Token& open = peek();
    expect('{');
    if (depth > kMaxDepth) fail(open, "blocks nested too deeply");
    scopes_.emplace_back();
    label_scopes_.emplace_back();
    while (!is_punct('}')) {
      if (peek().kind == Tok::end) fail(open, "missing '}'");
      statement(depth);
    }
    next();
    scopes_.pop_back();
    LabelScope ls = std::move(label_scopes_.back());
    label_scopes_.pop_back();
    for (auto id : ls.refs) {
      Pending& p = pending_[id];
      if (auto it = ls.labels.find(p.name); it != ls.labels.end()) {
        p.label = {SymbolRef::Kind::label, it->second};
      } else if (!label_scopes_.empty()) {
        label_scopes_.back().refs.push_back(id);
      } else {
        // Leniency: a reference to a label inside a nested block resolves when that
        // name labels exactly one place in the function.
        std::uint32_t found = 0, count = 0;
        for (std::uint32_t i = 0; i < label_names_.size(); ++i)
          if (label_names_[i] == p.name) {
            found = i;
            ++count;
          }
        if (count == 1) p.label = {SymbolRef::Kind::label, found};
      }
    }
  }

  void statement(int depth) {
    const Token& t = peek();
    if (t.kind == Tok::directive) {
      std::string_view d = t.text.substr(1);
      if (d == "reg") {
        next();
        reg_decl();
      } else if (d == "loc") {
        skip_line(next().line);
      } else if (d == "pragma") {
        next();
        if (peek().kind != Tok::string) unexpected(peek(), "a string");
        fn().pragmas.emplace_back(next().text);
        expect(';');
      } else if (auto sp = decl_space(d)) {
        next();
        variables(*sp, Linkage{}, true);
      } else {
        fail(t, "unknown directive '" + std::string(t.text) + "'");
      }
      return;
    }
    if (is_punct('{')) {
      block(depth + 1);
      return;
    }
    if (t.kind == Tok::ident && is_punct(':', 1)) {
      label();
      return;
    }
    if (t.kind == Tok::ident || is_punct('@')) {
      instruction();
      return;
    }
    unexpected(t, "an instruction");
  }

  void reg_decl() {
    Type type = Type::none;
    std::uint8_t vec = 1;
    for (;;) {
      const Token& t = peek();
      if (t.kind != Tok::directive) break;
      std::string_view d = t.text.substr(1);
      if (d == "v2" || d == "v4" || d == "v8")
        vec = static_cast<std::uint8_t>(d[1] - '0');
      else if (auto ty = type_from(d))
        type = *ty;
      else if (d == "align") {
        next();
        expect_u32("an alignment");
        continue;
      } else
        break;
      next();
    }
    if (type == Type::none) unexpected(peek(), "a register type");
    do {
      const Token& nt = peek();
      std::string name(expect_ident("a register name"));
      if (special_from(name)) fail(nt, "'" + name + "' is a special register");
      if (accept('<')) {
        const Token& ct = peek();
        std::uint64_t n = expect_uint("a register count");
        expect('>');
        if (n > kMaxRange) fail(ct, "register range too large");
        for (std::uint64_t i = 0; i < n; ++i) add_register(nt, name + std::to_string(i), type, vec);
      } else {
        add_register(nt, name, type, vec);
      }
    } while (accept(','));
    expect(';');
  }

  void label() {
    const Token& t = next();
    next();  // ':'
    std::string name(t.text);
    auto& scope_labels = label_scopes_.back().labels;
    if (scope_labels.count(name)) fail(t, "redefinition of label '" + name + "'");
    Function& f = fn();
    auto index = static_cast<std::uint32_t>(f.labels.size());
    scope_labels[name] = index;
    label_names_.push_back(name);
    // Label names stay unique in Function::labels (a name reused in another block is renamed).
    std::string unique = name;
    while (label_unique_.count(unique)) unique = name + "$" + std::to_string(++rename_counter_);
    label_unique_.insert(unique);
    f.labels.push_back({std::move(unique), static_cast<std::uint32_t>(f.body.size())});
    if (accept_dir("callprototype")) {
      Function::Prototype p;
      p.label = index;
      if (is_punct('(')) p.returns = param_list(true);
      const Token& u = peek();
      if (expect_ident("'_'") != "_") fail(u, "expected '_' in .callprototype");
      if (is_punct('(')) p.params = param_list(true);
      while (accept_dir("noreturn") || accept_dir("abi_preserve") ||
             accept_dir("abi_preserve_control"))
        if (peek().kind == Tok::number) next();
      expect(';');
      fn().prototypes.push_back(std::move(p));
    } else if (is_dir("branchtargets") || is_dir("calltargets")) {
      bool calls = next().text == ".calltargets";
      Function::TargetList list;
      list.label = index;
      list.calls = calls;
      do {
        const Token& lt = peek();
        std::string target(expect_ident(calls ? "a function" : "a label"));
        Operand o;
        o.kind = Operand::Kind::symbol;
        o.loc = loc_of(lt);
        if (calls) {
          auto it = module_names_.find(target);
          if (it == module_names_.end() || it->second.kind != SymbolRef::Kind::function)
            fail(lt, "undefined function '" + target + "'");
          list.targets.push_back(it->second.index);
        } else {
          o.bits = add_pending(target, o.loc, true);
          targets_scratch_.emplace_back(fn().target_lists.size(), std::move(o));
          list.targets.push_back(0);  // resolved at the end of the function
        }
      } while (accept(','));
      expect(';');
      fn().target_lists.push_back(std::move(list));
    }
  }

  // ---- instructions --------------------------------------------------------------------
  void decode_opcode(const Token& t, Instruction& in) {
    auto parts = split_dots(t.text);
    std::size_t used = 0;
    for (auto& mo : kMultiOps) {
      auto mp = split_dots(mo.text);
      if (mp.size() <= parts.size() && std::equal(mp.begin(), mp.end(), parts.begin())) {
        in.op = mo.op;
        used = mp.size();
        break;
      }
    }
    if (used == 0) {
      auto op = single_op(parts[0]);
      if (!op) fail(t, "unknown opcode '" + std::string(parts[0]) + "'");
      in.op = *op;
      used = 1;
    }
    bool space_set = false;
    for (std::size_t i = used; i < parts.size(); ++i) {
      std::string_view p = parts[i];
      if (p.empty()) fail(t, "empty modifier in '" + std::string(t.text) + "'");
      if (p == "v2" || p == "v4" || p == "v8") {
        in.vec = static_cast<std::uint8_t>(p[1] - '0');
      } else if (auto ty = type_from(p)) {
        in.types.push_back(*ty);
      } else if (auto m = mode_for(in.op, p); m && in.mode == Mode::none) {
        in.mode = *m;
        if (*m == Mode::wait) in.extra.emplace_back(p);
      } else if ((in.op == Opcode::setp || in.op == Opcode::set) && cmp_from(p) &&
                 in.cmp == Cmp::none) {
        in.cmp = *cmp_from(p);
      } else if ((in.op == Opcode::setp || in.op == Opcode::set || in.op == Opcode::bar_red ||
                  in.op == Opcode::vote) &&
                 (p == "and" || p == "or" || p == "xor" || p == "popc")) {
        in.boolop = p == "and"   ? BoolOp::and_
                    : p == "or"  ? BoolOp::or_
                    : p == "xor" ? BoolOp::xor_
                                 : BoolOp::popc;
      } else if (auto sp = space_from(p)) {
        if (!space_set) {
          in.space = *sp;
          space_set = true;
        } else {
          in.extra.emplace_back(p);
        }
      } else if (p == "to" && (in.op == Opcode::cvta)) {
        in.to = true;
      } else if (auto r = rounding_from(p)) {
        in.rounding = *r;
      } else if (auto s = sem_from(p)) {
        in.sem = *s;
      } else if (auto sc = scope_from(p)) {
        in.scope = *sc;
      } else if (set_flag(in, p)) {
      } else {
        in.extra.emplace_back(p);
      }
    }
  }

  void instruction() {
    Instruction in;
    in.loc = loc_of(peek());
    if (accept('@')) {
      in.guarded = true;
      in.guard_negated = accept('!');
      const Token& g = peek();
      std::string name(expect_ident("a predicate register"));
      const Entry* e = lookup(name);
      if (!e || !e->is_reg) fail(g, "undefined register " + name);
      in.guard_reg = e->reg;
      if (fn().registers[e->reg].type != Type::pred)
        fail(g, "guard " + name + " is not a predicate register");
    }
    const Token& ot = peek();
    if (ot.kind != Tok::ident) unexpected(ot, "an opcode");
    next();
    in.raw_opcode = std::string(ot.text);
    decode_opcode(ot, in);
    if (in.op == Opcode::call) {
      call_operands(in);
    } else if (!is_punct(';') && !is_punct('}') && peek().kind != Tok::end) {
      do {
        in.operands.push_back(operand(in, 0));
        if (in.operands.size() == 1 && accept('|')) {  // setp %p|%q, shfl %r|%p ...
          in.operands.push_back(operand(in, 0));
          in.dest_pair = true;
        }
      } while (accept(','));
    }
    expect(';');
    fn().body.push_back(std::move(in));
  }

  void call_operands(Instruction& in) {
    Operand rets;
    rets.kind = Operand::Kind::vector;
    rets.loc = loc_of(peek());
    if (is_punct('(')) {
      paren_list(in, rets);
      expect(',');
    }
    in.operands.push_back(std::move(rets));
    Operand target = operand(in, 0);
    if (target.kind != Operand::Kind::symbol && target.kind != Operand::Kind::reg)
      fail(target.loc, "call target must be a function or a register");
    in.operands.push_back(std::move(target));
    Operand args;
    args.kind = Operand::Kind::vector;
    args.loc = loc_of(peek());
    if (accept(',')) {
      args.loc = loc_of(peek());
      if (is_punct('(')) {
        paren_list(in, args);
        in.operands.push_back(std::move(args));
        if (accept(',')) in.operands.push_back(operand(in, 0));
      } else {
        in.operands.push_back(std::move(args));
        in.operands.push_back(operand(in, 0));
      }
    } else {
      in.operands.push_back(std::move(args));
    }
  }

  void paren_list(Instruction& in, Operand& into) {
    expect('(');
    if (!accept(')')) {
      do into.elems.push_back(operand(in, 1));
      while (accept(','));
      expect(')');
    }
  }

  Operand name_operand(const Token& t) {
    Operand o;
    o.loc = loc_of(t);
    std::string name(t.text);
    if (name == "_") {
      o.kind = Operand::Kind::sink;
      return o;
    }
    if (const Entry* e = lookup(name)) {
      if (e->is_reg) {
        o.kind = Operand::Kind::reg;
        o.reg = e->reg;
      } else {
        o.kind = Operand::Kind::symbol;
        o.sym = e->sym;
      }
      return o;
    }
    if (auto sp = special_from(name)) {
      o.kind = Operand::Kind::special;
      o.special = sp->first;
      o.component = sp->second;
      return o;
    }
    if (name.starts_with("%")) fail(t, "undefined register " + name);
    if (name == "WARP_SZ") {  // PTX's predefined constant
      o.kind = Operand::Kind::imm_int;
      o.bits = 32;
      return o;
    }
    o.kind = Operand::Kind::symbol;
    if (auto it = module_names_.find(name); it != module_names_.end()) {
      o.sym = it->second;
    } else {
      o.bits = add_pending(name, o.loc, true);
    }
    return o;
  }

  Operand number_operand(const Instruction& in, bool neg) {
    const Token& t = peek();
    detail::Number n;
    if (t.kind != Tok::number || !detail::parse_number(t.text, n))
      fail(t, t.kind == Tok::number ? "invalid number '" + std::string(t.text) + "'"
                                    : "expected a number, found " + describe(t));
    next();
    Operand o;
    o.loc = loc_of(t);
    using K = detail::Number::Kind;
    if (n.kind == K::integer) {
      o.kind = Operand::Kind::imm_int;
      o.bits = neg ? ~n.bits + 1 : n.bits;
      return o;
    }
    o.kind = Operand::Kind::imm_float;
    bool f32_context = !in.types.empty() && in.types.back() == Type::f32;
    if (n.kind == K::f32 || (n.is_decimal_float && f32_context)) {
      o.is_f32 = true;
      o.bits = literal_bits(n, neg, Type::f32);
    } else {
      o.bits = literal_bits(n, neg, Type::f64);
    }
    return o;
  }

  Operand operand(const Instruction& in, int depth) {
    if (depth > 8) fail(peek(), "operand nested too deeply");
    const Token& t = peek();
    if (t.kind == Tok::punct) {
      switch (t.ch) {
        case '{': {
          next();
          Operand o;
          o.kind = Operand::Kind::vector;
          o.loc = loc_of(t);
          do o.elems.push_back(operand(in, depth + 1));
          while (accept(','));
          expect('}');
          return o;
        }
        case '[':
          return address(in, depth);
        case '!': {
          next();
          const Token& rt = peek();
          if (rt.kind != Tok::ident) unexpected(rt, "a predicate register");
          next();
          Operand o = name_operand(rt);
          if (o.kind != Operand::Kind::reg || fn().registers[o.reg].type != Type::pred)
            fail(rt, "'!' applies to a predicate register");
          o.negated = true;
          o.loc = loc_of(t);
          return o;
        }
        case '-': {
          next();
          Operand o = number_operand(in, true);
          o.loc = loc_of(t);
          return o;
        }
        default:
          unexpected(t, "an operand");
      }
    }
    if (t.kind == Tok::number) return number_operand(in, false);
    if (t.kind == Tok::ident) {
      next();
      Operand o = name_operand(t);
      if (o.kind == Operand::Kind::symbol) o.offset = offset_suffix();
      return o;
    }
    unexpected(t, "an operand");
  }

  Operand address(const Instruction& in, int depth) {
    const Token& open = next();  // '['
    Operand o;
    o.kind = Operand::Kind::address;
    o.loc = loc_of(open);
    const Token& t = peek();
    if (t.kind == Tok::ident) {
      next();
      Operand b = name_operand(t);
      if (b.kind == Operand::Kind::reg) {
        o.base_is_reg = true;
        o.reg = b.reg;
      } else if (b.kind == Operand::Kind::symbol) {
        o.sym = b.sym;
        o.bits = b.bits;  // pending marker, if any
      } else {
        fail(t, "invalid address base " + std::string(t.text));
      }
      if (accept(',')) {
        // [tex, {coords}] / [tex, sampler, {coords}]: the base stays in elems[0].
        o.elems.push_back(b);
        o.base_is_reg = false;
        o.reg = 0;
        o.sym = {};
        o.bits = 0;
        do o.elems.push_back(operand(in, depth + 1));
        while (accept(','));
        expect(']');
        return o;
      }
      o.offset = offset_suffix();
    } else if (t.kind == Tok::number) {
      detail::Number n;
      if (!detail::parse_number(t.text, n) || n.kind != detail::Number::Kind::integer)
        fail(t, "invalid address '" + std::string(t.text) + "'");
      next();
      o.offset = static_cast<std::int64_t>(n.bits);
      o.offset += offset_suffix();
    } else {
      unexpected(t, "an address");
    }
    expect(']');
    return o;
  }

  // ---- forward references --------------------------------------------------------------
  struct Pending {
    std::string name;
    SourceLoc loc;
    bool in_function;
    SymbolRef label;  // the label it names, once its block closed
  };
  std::vector<Pending> pending_;
  std::vector<std::pair<std::size_t, Operand>> targets_scratch_;  // .branchtargets entries

  // Returns the marker stored in Operand::bits / Initializer::bits (id + 1; 0: none).
  std::uint64_t add_pending(std::string name, SourceLoc loc, bool in_function) {
    pending_.push_back({std::move(name), loc, in_function, {}});
    if (in_function && !label_scopes_.empty())
      label_scopes_.back().refs.push_back(static_cast<std::uint32_t>(pending_.size() - 1));
    return pending_.size();
  }

  bool resolve(SymbolRef& sym, std::uint64_t& bits, bool labels_too) {
    if (bits == 0 || sym.kind != SymbolRef::Kind::none) return true;
    const Pending& p = pending_[bits - 1];
    if (labels_too && p.label.kind == SymbolRef::Kind::label) {
      sym = p.label;
      bits = 0;
      return true;
    }
    if (auto it = module_names_.find(p.name); it != module_names_.end()) {
      sym = it->second;
      bits = 0;
      return true;
    }
    return false;
  }

  void resolve_operand(Operand& o, bool final_pass) {
    if (o.kind == Operand::Kind::symbol || (o.kind == Operand::Kind::address && !o.base_is_reg)) {
      if (!resolve(o.sym, o.bits, !final_pass) && final_pass)
        fail(pending_[o.bits - 1].loc, "undefined symbol '" + pending_[o.bits - 1].name + "'");
    }
    for (auto& e : o.elems) resolve_operand(e, final_pass);
  }

  void resolve_function_pending() {
    Function& f = fn();
    std::vector<std::size_t> filled(f.target_lists.size(), 0);
    for (auto& [list, o] : targets_scratch_) {
      std::string name = pending_[o.bits - 1].name;
      if (!resolve(o.sym, o.bits, true) || o.sym.kind != SymbolRef::Kind::label)
        fail(o.loc, "undefined label '" + name + "'");
      f.target_lists[list].targets[filled[list]++] = o.sym.index;
    }
    targets_scratch_.clear();
    for (auto& in : f.body)
      for (auto& o : in.operands) resolve_operand(o, false);
    // Labels are function-local: whatever is still unresolved must be a module symbol
    // declared later, checked at the end of the module.
  }

  void resolve_module_pending() {
    if (pending_.empty()) return;
    for (auto& f : m_.functions)
      for (auto& in : f.body)
        for (auto& o : in.operands) resolve_operand(o, true);
    for (auto& v : m_.globals)
      for (auto& in : v.init)
        if (in.is_symbol && !resolve(in.sym, in.bits, false))
          fail(pending_[in.bits - 1].loc, "undefined symbol '" + pending_[in.bits - 1].name + "'");
  }

  std::vector<Token> toks_;
  std::size_t pos_ = 0;
  std::vector<Diagnostic>& diags_;
  Module m_;
  std::unordered_map<std::string, SymbolRef> module_names_;
};

}  // namespace

std::optional<Module> parse(std::string_view text, std::vector<Diagnostic>& diagnostics) {
  // Images from fat binaries and cuModuleLoadData end in NUL padding: not part of the text.
  while (!text.empty() && text.back() == '\0') text.remove_suffix(1);
  try {
    Parser p(text, diagnostics);
    return p.run();
  } catch (const Failure&) {
  } catch (const std::bad_alloc&) {
    diagnostics.push_back({{0, 0}, "out of memory while parsing PTX"});
  } catch (const std::exception& e) {
    diagnostics.push_back({{0, 0}, std::string("internal error while parsing PTX: ") + e.what()});
  }
  if (diagnostics.empty()) diagnostics.push_back({{0, 0}, "PTX parse failed"});
  return std::nullopt;
}

}  // namespace cudamux::ptx
