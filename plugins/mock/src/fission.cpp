// Loop fission at barriers, at source level (see fission.hpp and docs/backends/mock.md).
//
// The kernel body is parsed into statements (braces, `for`, `while`, `if`/`else`, simple
// statements up to `;`). A statement containing `__syncthreads` is "block level": it runs once
// per block, so its condition must be block-uniform (built from literals, unmodified
// parameters, blockIdx/blockDim/gridDim, constant macros and uniform loop variables). Runs of
// barrier-free statements become "regions": a loop over the block's live threads with
// threadIdx set per thread. Block-level declarations used after their region are privatised
// into per-thread arrays, bound by reference inside each region. `return` marks the thread done
// (it then counts as arrived at every later barrier).
//
// Anything not understood makes the transform refuse; the kernel then keeps the fiber path.
// The generated code is also compiled: if it does not compile, the compiler retries without
// fission (see compiler.cpp), so a mis-parse can cost time but not correctness, as long as it
// cannot compile to something different. The rules below are chosen for that.
#include "fission.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <sstream>

namespace cudamux::mock {
namespace {

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

struct Tok {
  std::string text;
  std::size_t pos;
  bool ident;
  bool number;
};

std::vector<Tok> tokenize(std::string_view s, std::size_t base = 0) {
  static const char* ops3[] = {"<<=", ">>=", "->*", "..."};
  static const char* ops2[] = {"::", "->", "++", "--", "+=", "-=", "*=", "/=", "%=", "&=",
                               "|=", "^=", "==", "!=", "<=", ">=", "&&", "||", "<<", ">>"};
  std::vector<Tok> out;
  std::size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c)) != 0) {
      ++i;
      continue;
    }
    if (ident_start(c)) {
      std::size_t j = i;
      while (j < s.size() && ident_char(s[j])) ++j;
      out.push_back({std::string(s.substr(i, j - i)), base + i, true, false});
      i = j;
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) != 0 ||
        (c == '.' && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1])) != 0)) {
      std::size_t j = i;
      while (j < s.size() &&
             (ident_char(s[j]) || s[j] == '.' ||
              ((s[j] == '+' || s[j] == '-') && (s[j - 1] == 'e' || s[j - 1] == 'E'))))
        ++j;
      out.push_back({std::string(s.substr(i, j - i)), base + i, false, true});
      i = j;
      continue;
    }
    std::size_t len = 1;
    for (const char* op : ops3)
      if (s.substr(i, 3) == op) len = 3;
    if (len == 1)
      for (const char* op : ops2)
        if (s.substr(i, 2) == op) len = 2;
    out.push_back({std::string(s.substr(i, len)), base + i, false, false});
    i += len;
  }
  return out;
}

bool is_assign_op(const std::string& t) {
  return t == "=" || t == "+=" || t == "-=" || t == "*=" || t == "/=" || t == "%=" || t == "&=" ||
         t == "|=" || t == "^=" || t == "<<=" || t == ">>=";
}

enum class Kind { simple, compound, for_loop, while_loop, if_else, barrier, sync_op, other };

struct Stmt {
  Kind kind = Kind::simple;
  std::size_t b = 0, e = 0;  // [b, e) in the body
  bool barrier = false;      // contains __syncthreads*
  // for: init/cond/inc ranges; while/if: cond range (c2)
  std::size_t c1b = 0, c1e = 0, c2b = 0, c2e = 0, c3b = 0, c3e = 0;
  std::vector<Stmt> kids;  // compound: children; for/while: [body]; if: [then, (else)]
  std::string sync_op;     // sync_op: count/and/or
  std::size_t lhs_e = 0;   // sync_op: end of "PREFIX" (text before '=')
};

struct Fail {
  std::string why;
};

class Parser {
 public:
  Parser(std::string_view code) : c_(code) {}

  std::vector<Stmt> parse_all() {
    std::vector<Stmt> out;
    std::size_t i = 0;
    for (;;) {
      i = ws(i);
      if (i >= c_.size()) break;
      out.push_back(stmt(i));
    }
    return out;
  }

 private:
  std::string_view c_;

  std::size_t ws(std::size_t i) const {
    while (i < c_.size() && std::isspace(static_cast<unsigned char>(c_[i])) != 0) ++i;
    return i;
  }
  std::string word(std::size_t i) const {
    if (i >= c_.size() || !ident_start(c_[i])) return {};
    std::size_t j = i;
    while (j < c_.size() && ident_char(c_[j])) ++j;
    return std::string(c_.substr(i, j - i));
  }
  std::size_t match(std::size_t open) const {  // matching ) ] } for the bracket at `open`
    int depth = 0;
    for (std::size_t i = open; i < c_.size(); ++i) {
      const char ch = c_[i];
      if (ch == '(' || ch == '[' || ch == '{') ++depth;
      if (ch == ')' || ch == ']' || ch == '}') {
        if (--depth == 0) return i;
      }
    }
    throw Fail{"unbalanced brackets"};
  }
  bool has_barrier(std::size_t b, std::size_t e) const {
    for (std::size_t p = c_.find("__syncthreads", b); p != std::string_view::npos && p < e;
         p = c_.find("__syncthreads", p + 1)) {
      if (p == 0 || !ident_char(c_[p - 1])) return true;
    }
    return false;
  }
  std::size_t paren_after(std::size_t i, Stmt& s, bool split_for) {
    i = ws(i);
    if (i >= c_.size() || c_[i] != '(') throw Fail{"expected ("};
    const std::size_t close = match(i);
    if (split_for) {
      std::size_t semi[2];
      int found = 0;
      int depth = 0;
      for (std::size_t k = i + 1; k < close; ++k) {
        const char ch = c_[k];
        if (ch == '(' || ch == '[' || ch == '{') ++depth;
        if (ch == ')' || ch == ']' || ch == '}') --depth;
        if (ch == ';' && depth == 0) {
          if (found == 2) throw Fail{"odd for header"};
          semi[found++] = k;
        }
      }
      if (found != 2) throw Fail{"range-for or odd for header"};
      s.c1b = i + 1;
      s.c1e = semi[0];
      s.c2b = semi[0] + 1;
      s.c2e = semi[1];
      s.c3b = semi[1] + 1;
      s.c3e = close;
    } else {
      s.c2b = i + 1;
      s.c2e = close;
    }
    return close + 1;
  }

  Stmt stmt(std::size_t& i) {
    i = ws(i);
    Stmt s;
    s.b = i;
    if (i >= c_.size()) throw Fail{"unexpected end"};
    if (c_[i] == '{') {
      s.kind = Kind::compound;
      const std::size_t close = match(i);
      std::size_t k = i + 1;
      for (;;) {
        k = ws(k);
        if (k >= close) break;
        s.kids.push_back(stmt(k));
      }
      i = close + 1;
    } else {
      const std::string w = word(i);
      if (w == "for" || w == "while") {
        s.kind = w == "for" ? Kind::for_loop : Kind::while_loop;
        std::size_t k = paren_after(i + w.size(), s, w == "for");
        s.kids.push_back(stmt(k));
        i = k;
      } else if (w == "if") {
        s.kind = Kind::if_else;
        std::size_t k = ws(i + 2);
        if (word(k) == "constexpr") {
          s.kind = Kind::other;
          k += 9;
        }
        k = paren_after(k, s, false);
        s.kids.push_back(stmt(k));
        const std::size_t after = ws(k);
        if (word(after) == "else") {
          k = after + 4;
          s.kids.push_back(stmt(k));
        }
        i = k;
      } else if (w == "do") {
        s.kind = Kind::other;
        std::size_t k = i + 2;
        Stmt body = stmt(k);
        k = ws(k);
        if (word(k) != "while") throw Fail{"odd do-while"};
        Stmt dummy;
        k = paren_after(k + 5, dummy, false);
        k = ws(k);
        if (k >= c_.size() || c_[k] != ';') throw Fail{"odd do-while"};
        i = k + 1;
      } else if (w == "switch") {
        s.kind = Kind::other;
        Stmt dummy;
        std::size_t k = paren_after(i + 6, dummy, false);
        stmt(k);
        i = k;
      } else if (w == "try") {
        s.kind = Kind::other;
        std::size_t k = i + 3;
        stmt(k);
        for (;;) {
          const std::size_t c = ws(k);
          if (word(c) != "catch") break;
          Stmt dummy;
          k = paren_after(c + 5, dummy, false);
          stmt(k);
        }
        i = k;
      } else if (w == "else") {
        throw Fail{"else without if"};
      } else {
        // A simple statement: up to the `;` outside brackets.
        std::size_t k = i;
        for (;;) {
          if (k >= c_.size()) throw Fail{"statement without ;"};
          const char ch = c_[k];
          if (ch == '(' || ch == '[' || ch == '{') {
            k = match(k) + 1;
            continue;
          }
          if (ch == ';') break;
          ++k;
        }
        // A label (`name:` not `::`) or a case label: control flow we do not follow.
        if (!w.empty() && w != "default" && w != "case") {
          std::size_t after = ws(i + w.size());
          if (after < c_.size() && c_[after] == ':' &&
              (after + 1 >= c_.size() || c_[after + 1] != ':'))
            s.kind = Kind::other;
        }
        i = k + 1;
        if (s.kind == Kind::simple) classify_simple(s, i);
      }
    }
    s.e = i;
    s.barrier = has_barrier(s.b, s.e);
    return s;
  }

  void classify_simple(Stmt& s, std::size_t end) {
    const auto toks = tokenize(c_.substr(s.b, end - s.b), s.b);
    if (toks.size() == 4 && toks[0].text == "__syncthreads" && toks[1].text == "(" &&
        toks[2].text == ")" && toks[3].text == ";") {
      s.kind = Kind::barrier;
      return;
    }
    // PREFIX = __syncthreads_OP( PRED );
    for (std::size_t k = 0; k + 2 < toks.size(); ++k) {
      if (toks[k].text == "=" && toks[k + 1].text.rfind("__syncthreads_", 0) == 0 &&
          toks[k + 2].text == "(") {
        const std::string& op = toks[k + 1].text;
        if (op != "__syncthreads_count" && op != "__syncthreads_and" && op != "__syncthreads_or")
          return;
        const std::size_t open = toks[k + 2].pos;
        const std::size_t close = match(open);
        std::size_t after = ws(close + 1);
        if (after != end - 1) return;  // more after the call: not this form
        if (has_barrier(s.b, toks[k].pos) || has_barrier(open, close)) return;
        s.kind = Kind::sync_op;
        s.sync_op = op.substr(14);
        s.lhs_e = toks[k].pos;
        s.c2b = open + 1;
        s.c2e = close;
        return;
      }
    }
  }
};

struct Decl {
  std::string type;  // base type as written (const kept), plus the declarator's '*'s
  std::string name;
  std::string dims;  // "[N]..." or ""
  std::string init;  // initialiser as an expression ("" when none)
  bool has_init = false;
  char form = 0;               // '=', '(' or '{'
  std::size_t ib = 0, ie = 0;  // the '=' form's expression range
  std::string declarator;      // "*p[4] = x" as written
};

const std::set<std::string>& keywords_not_decl() {
  static const std::set<std::string> k = {
      "return",    "delete",   "throw",    "goto", "break",  "continue",
      "case",      "default",  "else",     "do",   "new",    "static_assert",
      "co_return", "co_yield", "co_await", "asm",  "__asm__"};
  return k;
}

class Fissioner {
 public:
  explicit Fissioner(const FissionInput& in) : in_(in), c_(in.body_code), s_(in.body) {}

  FissionResult run() {
    FissionResult r;
    try {
      Parser p(c_);
      const std::vector<Stmt> top = p.parse_all();
      bool any = false;
      for (const auto& s : top) any = any || s.barrier;
      if (!any) throw Fail{"no __syncthreads statement"};
      toks_ = tokenize(c_);
      for (const auto& t : toks_) {
        if (t.text == "goto" || t.text == "__label__" || t.text == "setjmp" || t.text == "longjmp")
          throw Fail{"goto/labels"};
        if (t.text == "threadIdx" || t.text == "return") continue;
        if (t.text == "__cmx_" || t.text.rfind("__cmx_", 0) == 0) throw Fail{"reserved names"};
      }
      has_return_ =
          std::any_of(toks_.begin(), toks_.end(), [](const Tok& t) { return t.text == "return"; });
      collect_assignments();
      collect_params();
      // Parameters are one copy per thread on a GPU but one per block in the twin.
      for (const auto& name : param_names_)
        if (assigned_.count(name) != 0) throw Fail{"a parameter is modified"};
      std::ostringstream o;
      o << "static __attribute__((always_inline)) inline void " << in_.twin_name << "("
        << in_.params << ") {\n"
        << "const uint3 __cmx_bd = blockDim;\n"
        << "const unsigned __cmx_n = __cmx_bd.x * __cmx_bd.y * __cmx_bd.z;\n"
        // The runtime refuses blocks of more than 1024 threads: thread-indexed offsets
        // cannot wrap, so g++ sees them as affine in the thread loops.
        << "if (__cmx_n > 1024u || __cmx_bd.x > 1024u || __cmx_bd.y > 1024u) "
           "__builtin_unreachable();\n";
      if (has_return_) {
        o << "unsigned char __cmx_done[__cmx_n];\n"
          << "for (unsigned __cmx_t = 0; __cmx_t < __cmx_n; ++__cmx_t) __cmx_done[__cmx_t] = 0;\n"
          << "unsigned __cmx_live = __cmx_n;\n";
      }
      // Parameters are one copy per block here: inside the body they are const copies, so a
      // write the token scan missed (a reference, a call taking `T&`) cannot compile.
      std::string shadows;
      for (const auto& name : param_names_) {
        if (name.rfind("__", 0) == 0 || type_word(name)) continue;  // unnamed parameter
        o << "const auto& __cmx_pp_" << name << " = " << name << ";\n";
        shadows += "const auto " + name + " = __cmx_pp_" + name + ";\n";
      }
      o << "{\n" << shadows;
      scopes_.emplace_back();
      block_level(top, o);
      scopes_.pop_back();
      o << "}\n";
      if (has_return_) o << "__cmx_exit:;\n";
      o << "}\n";
      r.ok = true;
      r.code = o.str();
    } catch (const Fail& f) {
      r.ok = false;
      r.reason = f.why;
    }
    return r;
  }

 private:
  struct Var {
    std::string name;
    std::string array;  // per-thread array; empty: a uniform block-level variable
    // Recomputed per thread: a never-modified variable whose initialiser reads only
    // threadIdx and uniform values. `fn` (a block-level lambda of threadIdx) gives its value.
    std::string fn;
    std::string type;
    // A block-level `__shared__`/`static` name: uniform when read once (a condition, a
    // uniform declaration), but memory that later phases may change, so never recomputed.
    bool memory = false;
  };
  const FissionInput& in_;
  std::string_view c_;
  std::string_view s_;
  std::vector<Tok> toks_;
  bool has_return_ = false;
  std::vector<std::vector<Var>> scopes_;
  std::multimap<std::string, std::size_t> assigned_;  // name -> positions of modifications
  std::set<std::string> params_;                      // parameters never modified
  std::vector<std::string> param_names_;
  std::set<std::string> extra_uniform_;                          // __cmx_r* results of sync ops
  std::vector<std::pair<std::size_t, std::size_t>> inc_ranges_;  // for-inc of uniform loops
  int counter_ = 0;

  std::string text(std::size_t b, std::size_t e) const { return std::string(s_.substr(b, e - b)); }
  std::string code(std::size_t b, std::size_t e) const { return std::string(c_.substr(b, e - b)); }

  unsigned line_of(std::size_t pos) const {
    return in_.first_line + static_cast<unsigned>(std::count(
                                s_.begin(), s_.begin() + static_cast<std::ptrdiff_t>(pos), '\n'));
  }
  std::string user_text(std::size_t b, std::size_t e) const {
    return "\n#line " + std::to_string(line_of(b)) + " " + in_.file + "\n" + text(b, e) + "\n";
  }

  void collect_assignments() {
    for (std::size_t k = 0; k < toks_.size(); ++k) {
      if (!toks_[k].ident) continue;
      const std::string& n = toks_[k].text;
      const bool before = k > 0 && (toks_[k - 1].text == "++" || toks_[k - 1].text == "--" ||
                                    toks_[k - 1].text == "&");
      const bool after =
          k + 1 < toks_.size() && (is_assign_op(toks_[k + 1].text) || toks_[k + 1].text == "++" ||
                                   toks_[k + 1].text == "--");
      // A declaration's own `=` counts too: its initialiser is checked separately, and
      // declarations at block level are told apart by position below.
      if (before || after) assigned_.emplace(n, toks_[k].pos);
    }
  }
  void collect_params() {
    // The last identifier of each top-level comma-separated part is the parameter's name.
    int depth = 0;
    std::string last;
    auto flush = [&] {
      if (!last.empty()) param_names_.push_back(last);
      if (!last.empty() && assigned_.count(last) == 0) params_.insert(last);
      last.clear();
    };
    for (const auto& t : tokenize(in_.params)) {
      if (t.text == "(" || t.text == "[" || t.text == "<") ++depth;
      if (t.text == ")" || t.text == "]" || t.text == ">") --depth;
      if (t.text == "," && depth == 0) flush();
      if (t.ident && depth == 0) last = t.text;
    }
    flush();
  }

  const Var* lookup(const std::string& name) const {
    for (auto s = scopes_.rbegin(); s != scopes_.rend(); ++s)
      for (auto v = s->rbegin(); v != s->rend(); ++v)
        if (v->name == name) return &*v;
    return nullptr;
  }

  // Block-uniform: every thread computes the same value. `self` is a loop variable allowed
  // in its own for header.
  bool uniform(std::size_t b, std::size_t e, const std::string& self = {}) const {
    return uniform_or_affine(b, e, self, false);
  }
  // Thread-affine: a pure function of threadIdx and uniform values (no memory read, no call),
  // so every region can recompute it instead of keeping it per thread.
  bool thread_affine(std::size_t b, std::size_t e) const {
    return uniform_or_affine(b, e, {}, true);
  }
  bool uniform_or_affine(std::size_t b, std::size_t e, const std::string& self,
                         bool allow_thread) const {
    static const std::set<std::string> ok_idents = {
        "blockIdx", "blockDim", "gridDim", "warpSize",    "true",  "false", "nullptr", "sizeof",
        "int",      "unsigned", "signed",  "long",        "short", "char",  "bool",    "float",
        "double",   "size_t",   "const",   "static_cast", "x",     "y",     "z"};
    const auto t = tokenize(c_.substr(b, e - b), b);
    for (std::size_t k = 0; k < t.size(); ++k) {
      const std::string& x = t[k].text;
      if (t[k].number) continue;
      if (t[k].ident) {
        if ((x == "x" || x == "y" || x == "z") && (k == 0 || t[k - 1].text != ".")) return false;
        if (ok_idents.count(x) != 0 || x == self || extra_uniform_.count(x) != 0) continue;
        if (allow_thread && x == "threadIdx" && lookup(x) == nullptr) continue;
        if (std::find(in_.uniform_macros.begin(), in_.uniform_macros.end(), x) !=
                in_.uniform_macros.end() &&
            lookup(x) == nullptr)
          continue;
        const Var* v = lookup(x);
        if (v != nullptr) {
          if (!v->array.empty() || (!v->fn.empty() && !allow_thread) || (v->memory && allow_thread))
            return false;
          continue;
        }
        if (params_.count(x) != 0) continue;
        return false;
      }
      if (x == "[" || x == "->" || x == "->*" || x == "=" || is_assign_op(x) || x == "++" ||
          x == "--" || x == "{" || x == "}")
        return false;
      if (x == ".") {
        if (k == 0 ||
            (t[k - 1].text != "blockIdx" && t[k - 1].text != "blockDim" &&
             t[k - 1].text != "gridDim" && (!allow_thread || t[k - 1].text != "threadIdx")))
          return false;
        continue;
      }
      if (x == "(" && k > 0 && t[k - 1].ident && t[k - 1].text != "sizeof" &&
          ok_idents.count(t[k - 1].text) == 0)
        return false;  // a call
      if ((x == "*" || x == "&") &&
          (k == 0 || !(t[k - 1].ident || t[k - 1].number || t[k - 1].text == ")")))
        return false;  // dereference / address-of
    }
    return true;
  }

  // Parses a simple statement as a declaration; false when it is not one (by our rules).
  bool parse_decl(std::size_t b, std::size_t e, std::vector<Decl>& out, bool& verbatim) const {
    const auto t = tokenize(c_.substr(b, e - b), b);
    if (t.empty() || !t[0].ident || keywords_not_decl().count(t[0].text) != 0) return false;
    // Storage that is per block, not per thread (shared memory, statics, constants, types):
    // kept once, at block level.
    for (std::size_t q = 0; q < t.size(); ++q) {
      const std::string& x = t[q].text;
      if (x == "=" || x == ";" || x == "{" || x == "(") break;
      if (x == "static" || x == "__shared__" || x == "constexpr" || x == "extern" ||
          x == "thread_local" || x == "typedef" || x == "using" || x == "__constant__") {
        verbatim = true;
        return true;
      }
    }
    // The prefix: tokens before the first top-level = ( { [ , ;
    std::size_t k = 0;
    while (k < t.size() && t[k].text != "=" && t[k].text != "(" && t[k].text != "{" &&
           t[k].text != "[" && t[k].text != "," && t[k].text != ";")
      ++k;
    if (k < 2 || !t[k - 1].ident) return false;
    for (std::size_t q = 0; q < k; ++q) {
      const std::string& x = t[q].text;
      if (!(t[q].ident || x == "::" || x == "*" || x == "&")) return false;
    }
    for (std::size_t q = 0; q < k; ++q) {
      const std::string& x = t[q].text;
      if (x == "&" || x == "auto" || x == "decltype" || x == "register")
        throw Fail{"references/auto at block level"};
    }
    // Base type: prefix up to the first declarator's '*'s and name.
    std::size_t type_end = k - 1;  // index of the name
    while (type_end > 0 && t[type_end - 1].text == "*") --type_end;
    if (type_end == 0) return false;
    const std::string base = squash_text(t[0].pos, t[type_end].pos);
    // Declarators, split at top-level commas.
    std::size_t q = type_end;
    while (q < t.size()) {
      Decl d;
      d.type = base;
      const std::size_t decl_b = t[q].pos;
      while (q < t.size() && t[q].text == "*") {
        d.type += "*";
        ++q;
      }
      if (q >= t.size() || !t[q].ident) throw Fail{"odd declarator"};
      d.name = t[q].text;
      ++q;
      while (q < t.size() && t[q].text == "[") {
        const std::size_t close = find_close(t, q);
        d.dims += squash_text(t[q].pos, t[close].pos + 1);
        q = close + 1;
      }
      std::size_t init_b = 0;
      if (q < t.size() && (t[q].text == "=" || t[q].text == "(" || t[q].text == "{")) {
        const std::string form = t[q].text;
        init_b = form == "=" ? t[q].pos + 1 : t[q].pos;
        // To the next top-level comma or ;
        int depth = 0;
        std::size_t r = q + (form == "=" ? 1 : 0);
        for (; r < t.size(); ++r) {
          const std::string& x = t[r].text;
          if (x == "(" || x == "[" || x == "{") ++depth;
          if (x == ")" || x == "]" || x == "}") --depth;
          if (depth == 0 && (x == "," || x == ";")) break;
        }
        if (depth != 0) throw Fail{"odd initialiser"};
        const std::size_t init_e = r < t.size() ? t[r].pos : e;  // a for header has no ';'
        d.has_init = true;
        d.form = form[0];
        d.ib = init_b;
        d.ie = init_e;
        // Constructor forms become a functional cast of the (non-const) type: several
        // arguments stay arguments, never a comma expression.
        d.init = form == "=" ? text(init_b, init_e)
                             : "::cudamux::fission::slot_t<" + d.type + ">" + text(init_b, init_e);
        if (!d.dims.empty()) throw Fail{"initialised array at block level"};
        q = r;
      }
      d.declarator = text(decl_b, q < t.size() ? t[q].pos : e);
      out.push_back(d);
      if (q < t.size() && t[q].text == ",") {
        ++q;
        continue;
      }
      break;
    }
    return true;
  }
  static std::size_t find_close(const std::vector<Tok>& t, std::size_t open) {
    int depth = 0;
    for (std::size_t r = open; r < t.size(); ++r) {
      if (t[r].text == "(" || t[r].text == "[" || t[r].text == "{") ++depth;
      if (t[r].text == ")" || t[r].text == "]" || t[r].text == "}")
        if (--depth == 0) return r;
    }
    throw Fail{"unbalanced"};
  }
  std::string squash_text(std::size_t b, std::size_t e) const {
    return squash(s_.substr(b, e - b));
  }

  bool used_after(const std::string& name, std::size_t pos) const {
    for (const auto& t : toks_)
      if (t.pos >= pos && t.text == name) return true;
    return false;
  }
  // Modified anywhere outside [skip_b, skip_e) (positions of assignments we allow)?
  bool modified_outside(const std::string& name, std::size_t skip_b, std::size_t skip_e) const {
    auto [lo, hi] = assigned_.equal_range(name);
    for (auto it = lo; it != hi; ++it)
      if (it->second < skip_b || it->second >= skip_e) return true;
    return false;
  }

  bool modified_outside2(const std::string& name, std::size_t b1, std::size_t e1, std::size_t b2,
                         std::size_t e2) const {
    auto [lo, hi] = assigned_.equal_range(name);
    for (auto it = lo; it != hi; ++it) {
      const std::size_t p = it->second;
      if (!((p >= b1 && p < e1) || (p >= b2 && p < e2))) return true;
    }
    return false;
  }

  // ---- code generation ----

  struct Region {
    std::vector<std::string> parts;  // statement texts, in order
    std::string pre;                 // block-level code before the region's loop (lambdas)
    std::vector<Var> deferred;       // recomputed variables visible from the next region on
    bool has_return = false;
    bool empty() const { return parts.empty(); }
  };

  void flush(Region& r, std::ostringstream& o) {
    if (r.empty()) return;
    const int id = counter_++;
    o << r.pre;
    // The block's threads nested z/y/x: threadIdx is a local of the loop (never a load), and
    // the innermost loop runs over threadIdx.x, so g++ sees indices affine in it.
    o << "for (unsigned __cmx_z = 0; __cmx_z < __cmx_bd.z; ++__cmx_z)\n"
      << "for (unsigned __cmx_y = 0; __cmx_y < __cmx_bd.y; ++__cmx_y) {\n"
      << "const unsigned __cmx_row = (__cmx_z * __cmx_bd.y + __cmx_y) * __cmx_bd.x;\n"
      << "for (unsigned __cmx_x = 0; __cmx_x < __cmx_bd.x; ++__cmx_x) {\n"
      << "const unsigned __cmx_t = __cmx_row + __cmx_x;\n";
    if (has_return_) o << "if (__cmx_done[__cmx_t]) continue;\n";
    o << "const uint3 __cmx_ti{__cmx_x, __cmx_y, __cmx_z};\n";
    // The global threadIdx is stored only if code outside the region can read it: the region
    // calls something, or code outside kernels names threadIdx.
    if (region_calls_out(r)) o << "::threadIdx = __cmx_ti;\n";
    o << "[[maybe_unused]] const uint3 threadIdx = __cmx_ti;\n";
    o << "{\n";
    // Bind every visible per-thread variable (innermost wins), so that macros see them too.
    std::set<std::string> bound;
    for (auto s = scopes_.rbegin(); s != scopes_.rend(); ++s)
      for (auto v = s->rbegin(); v != s->rend(); ++v) {
        if (!bound.insert(v->name).second) continue;
        if (!v->fn.empty()) {
          o << "[[maybe_unused]] const ::cudamux::fission::slot_t<" << v->type << "> " << v->name
            << " = " << v->fn << "(threadIdx);\n";
          continue;
        }
        if (v->array.empty()) continue;
        o << "auto& " << v->name << " = " << v->array << "[__cmx_t];\n";
      }
    o << "{\n";
    for (auto& p : r.parts) {
      std::string text = p;
      replace_marker(
          text, "__cmx_RET__",
          "{ __cmx_done[__cmx_t] = 1; --__cmx_live; goto __cmx_ret" + std::to_string(id) + "; }");
      o << text;
    }
    o << "}\n}\n";
    if (r.has_return) o << "__cmx_ret" << id << ":;\n";
    o << "}\n}\n";
    if (r.has_return) o << "if (__cmx_live == 0) goto __cmx_exit;\n";
    for (auto& v : r.deferred) scopes_.back().push_back(v);
    r = Region{};
  }
  bool region_calls_out(const Region& r) const {
    if (in_.thread_idx_read_outside) return true;
    static const std::set<std::string> not_calls = {"if",     "for",    "while",   "switch",
                                                    "sizeof", "return", "alignof", "static_cast"};
    for (const auto& p : r.parts) {
      const auto t = tokenize(p);
      for (std::size_t k = 0; k < t.size(); ++k) {
        // (__cmx_ names are ours: the recomputing lambdas read no global.)
        if (k + 1 < t.size() && t[k + 1].text == "(" &&
            ((t[k].ident && not_calls.count(t[k].text) == 0 && t[k].text.rfind("__cmx_", 0) != 0) ||
             t[k].text == ")" || t[k].text == ">" || t[k].text == "]"))
          return true;
      }
    }
    return false;
  }
  static void replace_marker(std::string& s, const std::string& marker, const std::string& with) {
    for (std::size_t p; (p = s.find(marker)) != std::string::npos;)
      s.replace(p, marker.size(), with);
  }

  // The statement's text for a region, `return;` replaced by a marker (filled in by flush).
  std::string region_text(std::size_t b, std::size_t e, bool& has_return) {
    std::string out = "\n#line " + std::to_string(line_of(b)) + " " + in_.file + "\n";
    std::size_t at = b;
    const auto t = tokenize(c_.substr(b, e - b), b);
    for (std::size_t k = 0; k < t.size(); ++k) {
      if (t[k].text == "return" && k + 1 < t.size() && t[k + 1].text == ";") {
        out += text(at, t[k].pos);
        out += "__cmx_RET__";
        at = t[k + 1].pos + 1;
        has_return = true;
      }
    }
    out += text(at, e);
    out += "\n";
    return out;
  }

  void check_region_stmt(const Stmt& s) const {
    // break/continue must stay inside the statement: only loops/switches may contain them.
    const std::string w = code(s.b, std::min(s.e, s.b + 6));
    const bool loop = w.rfind("for", 0) == 0 || w.rfind("while", 0) == 0 || w.rfind("do", 0) == 0 ||
                      w.rfind("switch", 0) == 0;
    if (loop) return;
    for (const auto& t : tokenize(c_.substr(s.b, s.e - s.b), s.b))
      if (t.text == "break" || t.text == "continue") throw Fail{"break/continue across a region"};
  }

  void add_to_region(const Stmt& s, Region& r, std::ostringstream& o) {
    if (s.kind == Kind::other && s.barrier) throw Fail{"barrier in unsupported construct"};
    check_region_stmt(s);
    if (s.kind == Kind::simple) {
      std::vector<Decl> decls;
      bool verbatim = false;
      if (parse_decl(s.b, s.e, decls, verbatim)) {
        if (verbatim) {  // static / __shared__ / constexpr: once per block, at block level
          flush(r, o);
          o << user_text(s.b, s.e);
          mark_shadow(s.b, s.e);
          return;
        }
        std::string part;
        for (const auto& d : decls) {
          const bool mod = modified_outside(d.name, s.b, s.e);
          if (!mod && d.has_init && d.dims.empty() && uniform_init(d)) {
            // Same value in every thread and never modified: one block-level variable.
            flush(r, o);
            o << "\n#line " << line_of(s.b) << " " << in_.file << "\n"
              << "const ::cudamux::fission::slot_t<" << d.type << "> " << d.name << " = " << d.init
              << ";\n";
            scopes_.back().push_back({d.name, ""});
            continue;
          }
          if (!used_after(d.name, s.e)) {
            // Lives inside this region only: stays an ordinary local of the thread loop.
            part += "\n#line " + std::to_string(line_of(s.b)) + " " + in_.file + "\n" +
                    base_type(d) + " " + d.declarator + ";\n";
            continue;
          }
          if (!mod && d.has_init && d.form == '=' && d.dims.empty() && thread_affine(d.ib, d.ie)) {
            // A pure function of threadIdx and uniform values, never modified: recomputed in
            // each region that sees it (affine in threadIdx.x there) instead of kept per thread.
            const std::string fn = "__cmx_f" + std::to_string(counter_++);
            const std::string line =
                "\n#line " + std::to_string(line_of(s.b)) + " " + in_.file + "\n";
            std::string inner;  // recomputed variables the initialiser names
            std::set<std::string> seen;
            for (const auto& t : tokenize(c_.substr(d.ib, d.ie - d.ib))) {
              const Var* v = t.ident ? lookup(t.text) : nullptr;
              if (v != nullptr && !v->fn.empty() && seen.insert(t.text).second)
                inner += "const ::cudamux::fission::slot_t<" + v->type + "> " + v->name + " = " +
                         v->fn + "(threadIdx);\n";
            }
            r.pre += line + "const auto " + fn +
                     " = [&](const uint3 threadIdx) __attribute__((always_inline)) {\n" + inner +
                     line + "const ::cudamux::fission::slot_t<" + d.type + "> __cmx_v = " + d.init +
                     ";\nreturn __cmx_v;\n};\n";
            part += line + "const ::cudamux::fission::slot_t<" + d.type + "> " + d.name + " = " +
                    fn + "(threadIdx);\n";
            r.deferred.push_back({d.name, "", fn, d.type});
            continue;
          }
          const std::string arr = "__cmx_p" + std::to_string(counter_++);
          flush_keep(r, o, part);
          // Per-thread arrays live on the worker's stack (up to 1024 copies): large per-thread
          // state fails this check, and the retry compiles the program without fission.
          o << "static_assert(sizeof(::cudamux::fission::slot_t<" << d.type << d.dims
            << ">) <= 1024, \"cudamux: per-thread state too large for fission\");\n";
          o << "::cudamux::fission::slot_t<" << d.type << d.dims << "> " << arr << "[__cmx_n];\n";
          scopes_.back().push_back({d.name, arr});
          if (d.has_init) {
            r.parts.push_back("\n#line " + std::to_string(line_of(s.b)) + " " + in_.file + "\n" +
                              d.name + " = " + d.init + ";\n");
          }
        }
        if (!part.empty()) r.parts.push_back(part);
        return;
      }
    }
    r.parts.push_back(region_text(s.b, s.e, r.has_return));
  }
  // Emits a per-thread array declaration before the current region starts: the region so far
  // must end first (its statements may not see the new binding), then continues.
  void flush_keep(Region& r, std::ostringstream& o, std::string& pending) {
    if (!pending.empty()) {
      r.parts.push_back(pending);
      pending.clear();
    }
    flush(r, o);
  }
  void mark_shadow(std::size_t b, std::size_t e) {
    // A verbatim block-level declaration (e.g. __shared__) may shadow an outer per-thread
    // variable of the same name: record its names as uniform (no binding) in this scope.
    std::vector<Decl> d;
    const auto t = tokenize(c_.substr(b, e - b), b);
    for (std::size_t k = 0; k + 1 < t.size(); ++k)
      if (t[k].ident && (t[k + 1].text == "[" || t[k + 1].text == "=" || t[k + 1].text == ";" ||
                         t[k + 1].text == "{" || t[k + 1].text == "," || t[k + 1].text == "("))
        scopes_.back().push_back({t[k].text, "", "", "", true});
  }
  bool uniform_init(const Decl& d) const {
    return d.has_init && d.form == '=' && uniform(d.ib, d.ie);
  }
  // The declaration's type without the declarator's own '*'s (they are in d.declarator).
  static std::string base_type(const Decl& d) {
    std::string b = d.type;
    while (!b.empty() && b.back() == '*') b.pop_back();
    return b;
  }

  void block_level(const std::vector<Stmt>& list, std::ostringstream& o) {
    Region r;
    for (const auto& s : list) {
      if (!s.barrier) {
        add_to_region(s, r, o);
        continue;
      }
      switch (s.kind) {
        case Kind::barrier:
          flush(r, o);  // the phase boundary: every live thread has run the region
          break;
        case Kind::sync_op:
          flush(r, o);
          sync_op(s, r, o);
          break;
        case Kind::compound:
          flush(r, o);
          o << "{\n";
          scopes_.emplace_back();
          block_level(s.kids, o);
          scopes_.pop_back();
          o << "}\n";
          break;
        case Kind::if_else:
          flush(r, o);
          if (!uniform(s.c2b, s.c2e)) throw Fail{"barrier under a condition not proved uniform"};
          o << "\n#line " << line_of(s.c2b) << " " << in_.file << "\nif (" << text(s.c2b, s.c2e)
            << ") {\n";
          nested(s.kids[0], o);
          o << "}";
          if (s.kids.size() > 1) {
            o << " else {\n";
            nested(s.kids[1], o);
            o << "}";
          }
          o << "\n";
          break;
        case Kind::while_loop:
          flush(r, o);
          if (!uniform(s.c2b, s.c2e)) throw Fail{"barrier in a loop not proved uniform"};
          o << "\n#line " << line_of(s.c2b) << " " << in_.file << "\nwhile (" << text(s.c2b, s.c2e)
            << ") {\n";
          nested(s.kids[0], o);
          o << "}\n";
          break;
        case Kind::for_loop:
          flush(r, o);
          for_loop(s, o);
          break;
        default:
          throw Fail{"barrier in unsupported construct"};
      }
    }
    flush(r, o);
  }
  void nested(const Stmt& s, std::ostringstream& o) {
    scopes_.emplace_back();
    if (s.kind == Kind::compound) {
      block_level(s.kids, o);
    } else {
      block_level({s}, o);
    }
    scopes_.pop_back();
  }

  void for_loop(const Stmt& s, std::ostringstream& o) {
    // init: empty or one declaration of a uniform loop variable modified only in the header's
    // increment; cond and inc uniform.
    std::string var;
    std::string hidden;
    std::string type;
    o << "{\n";
    scopes_.emplace_back();
    const std::string init = code(s.c1b, s.c1e);
    if (init.find_first_not_of(" \t\n") != std::string::npos) {
      std::vector<Decl> d;
      bool verbatim = false;
      if (!parse_decl(s.c1b, s.c1e, d, verbatim) || verbatim || d.size() != 1 || !d[0].has_init ||
          !d[0].dims.empty())
        throw Fail{"for header not a simple declaration"};
      var = d[0].name;
      if (modified_outside2(var, s.c1b, s.c1e, s.c3b, s.c3e) || !uniform_init(d[0]))
        throw Fail{"loop variable not proved uniform"};
      // The loop itself runs on a hidden variable; the body sees a const copy under the
      // user's name, so a write the token scan missed cannot compile.
      hidden = "__cmx_u" + std::to_string(counter_++);
      type = d[0].type;
      o << "\n#line " << line_of(s.c1b) << " " << in_.file << "\n"
        << type << " " << hidden << " = " << d[0].init << ";\n";
      scopes_.back().push_back({var, ""});
    }
    if (!uniform(s.c2b, s.c2e, var) || !uniform_inc(s.c3b, s.c3e, var))
      throw Fail{"barrier in a loop not proved uniform"};
    o << "\n#line " << line_of(s.c2b) << " " << in_.file << "\nfor (; "
      << renamed(s.c2b, s.c2e, var, hidden) << "; " << renamed(s.c3b, s.c3e, var, hidden)
      << ") {\n";
    if (!var.empty())
      o << "const ::cudamux::fission::slot_t<" << type << "> " << var << " = " << hidden << ";\n";
    nested(s.kids[0], o);
    o << "}\n";
    scopes_.pop_back();
    o << "}\n";
  }
  // The text of [b, e) with the identifier `from` (not as a member name) replaced by `to`.
  std::string renamed(std::size_t b, std::size_t e, const std::string& from,
                      const std::string& to) const {
    if (from.empty()) return text(b, e);
    std::string out;
    std::size_t at = b;
    const auto t = tokenize(c_.substr(b, e - b), b);
    for (std::size_t k = 0; k < t.size(); ++k) {
      if (t[k].text != from || (k > 0 && (t[k - 1].text == "." || t[k - 1].text == "->"))) continue;
      out += text(at, t[k].pos);
      out += to;
      at = t[k].pos + from.size();
    }
    return out + text(at, e);
  }
  static bool type_word(const std::string& w) {
    static const std::set<std::string> k = {"int",      "unsigned", "signed", "long",   "short",
                                            "char",     "bool",     "float",  "double", "const",
                                            "volatile", "void",     "size_t", "auto"};
    return k.count(w) != 0;
  }
  // The increment may assign the loop variable (only it) from uniform values.
  bool uniform_inc(std::size_t b, std::size_t e, const std::string& var) const {
    const auto t = tokenize(c_.substr(b, e - b), b);
    // Accept: var OP= uniform | var++ | ++var | var-- | --var | var = uniform
    if (t.empty()) return true;
    if (var.empty()) return false;
    if (t.size() == 2 && ((t[0].text == var && (t[1].text == "++" || t[1].text == "--")) ||
                          (t[1].text == var && (t[0].text == "++" || t[0].text == "--"))))
      return true;
    if (t.size() >= 3 && t[0].text == var && is_assign_op(t[1].text))
      return uniform(t[2].pos, e, var);
    return false;
  }

  void sync_op(const Stmt& s, Region& r, std::ostringstream& o) {
    const int id = counter_++;
    const std::string c = "__cmx_c" + std::to_string(id);
    const std::string res = "__cmx_r" + std::to_string(id);
    o << "unsigned " << c << " = 0;\n";
    Region pred;
    bool ret = false;
    std::string p = region_text(s.c2b, s.c2e, ret);
    if (ret) throw Fail{"return in a barrier predicate"};
    pred.parts.push_back(c + " += ((" + p + ") != 0) ? 1u : 0u;\n");
    flush(pred, o);
    const std::string live = has_return_ ? "__cmx_live" : "__cmx_n";
    if (s.sync_op == "count") {
      o << "const int " << res << " = static_cast<int>(" << c << ");\n";
    } else if (s.sync_op == "and") {
      o << "const int " << res << " = " << c << " == " << live << " ? 1 : 0;\n";
    } else {
      o << "const int " << res << " = " << c << " != 0 ? 1 : 0;\n";
    }
    extra_uniform_.insert(res);
    // The statement itself, with the call replaced by the (uniform) result.
    const std::string lhs = text(s.b, s.lhs_e);
    std::vector<Decl> d;
    bool verbatim = false;
    if (parse_decl(s.b, s.lhs_e, d, verbatim)) {
      if (verbatim || d.size() != 1 || d[0].has_init || !d[0].dims.empty())
        throw Fail{"odd barrier result declaration"};
      // Uniform result: a block-level variable unless modified later.
      if (!modified_outside(d[0].name, s.b, s.e)) {
        o << "\n#line " << line_of(s.b) << " " << in_.file << "\n"
          << "const ::cudamux::fission::slot_t<" << d[0].type << "> " << d[0].name << " = " << res
          << ";\n";
        scopes_.back().push_back({d[0].name, ""});
        return;
      }
      const std::string arr = "__cmx_p" + std::to_string(counter_++);
      o << "::cudamux::fission::slot_t<" << d[0].type << "> " << arr << "[__cmx_n];\n";
      scopes_.back().push_back({d[0].name, arr});
      r.parts.push_back(d[0].name + " = " + res + ";\n");
      return;
    }
    // An assignment to an existing variable: done by every live thread.
    r.parts.push_back("\n#line " + std::to_string(line_of(s.b)) + " " + in_.file + "\n" + lhs +
                      " = " + res + ";\n");
  }
};

}  // namespace

FissionResult fission(const FissionInput& in) {
  Fissioner f(in);
  return f.run();
}

std::size_t rewrite_device_launches(std::string& text, const std::string& code) {
  if (code.find("<<<") == std::string::npos) return 0;
  const std::vector<Tok> t = tokenize(code);
  auto adjacent = [&](std::size_t i, const char* a, const char* b) {
    return i + 1 < t.size() && t[i].text == a && t[i + 1].text == b &&
           t[i + 1].pos == t[i].pos + t[i].text.size();
  };
  struct Launch {
    std::size_t begin, end;  // replaced text [begin, end)
    std::string replacement;
  };
  std::vector<Launch> launches;
  for (std::size_t i = 1; i + 1 < t.size(); ++i) {
    if (!adjacent(i, "<<", "<")) continue;
    // The kernel: a qualified name, with template argument lists, right before `<<<`.
    std::size_t first = i;
    bool name_next = true;  // walking back: expecting a name (or a template argument list)
    for (std::size_t j = i; j-- > 0;) {
      const std::string& x = t[j].text;
      if (name_next && (x == ">" || x == ">>")) {
        int depth = 0;
        std::size_t k = j + 1;
        while (k-- > 0) {
          if (t[k].text == ">") depth += 1;
          if (t[k].text == ">>") depth += 2;
          if (t[k].text == "<") depth -= 1;
          if (t[k].text == "(" || t[k].text == ";" || t[k].text == "{") break;
          if (depth == 0) break;
        }
        if (k == static_cast<std::size_t>(-1) || depth != 0 || k == 0 || !t[k - 1].ident) break;
        j = k;  // at the template's `<`; its name next
        continue;
      }
      if (name_next && t[j].ident) {
        first = j;
        name_next = false;
        continue;
      }
      if (!name_next && x == "::") {
        first = j;
        name_next = true;
        continue;
      }
      break;
    }
    if (first == i || !t[first].ident) continue;
    // The configuration: up to `>>>`, split at top-level commas.
    std::vector<std::string> config;
    std::size_t j = i + 2, arg_begin = j;
    int depth = 0;
    bool closed = false;
    for (; j + 1 < t.size(); ++j) {
      const std::string& x = t[j].text;
      if (x == "(" || x == "[" || x == "{") ++depth;
      if (x == ")" || x == "]" || x == "}") --depth;
      if (depth == 0 && (x == "," || adjacent(j, ">>", ">"))) {
        if (j == arg_begin) break;
        config.push_back(text.substr(t[arg_begin].pos, t[j].pos - t[arg_begin].pos));
        if (x != ",") {
          closed = true;
          break;
        }
        arg_begin = j + 1;
      }
      if (depth < 0) break;
    }
    if (!closed || config.size() < 2 || config.size() > 4) continue;
    // The arguments: the parenthesised list after `>>>`.
    std::size_t open = j + 2;
    if (open >= t.size() || t[open].text != "(") continue;
    std::size_t close = open;
    depth = 0;
    for (; close < t.size(); ++close) {
      if (t[close].text == "(") ++depth;
      if (t[close].text == ")" && --depth == 0) break;
    }
    if (close >= t.size()) continue;
    const std::size_t begin = t[first].pos, end = t[close].pos + 1;
    std::string args = text.substr(t[open].pos + 1, t[close].pos - t[open].pos - 1);
    std::string r = "::cudamux::detail::device_launch<(&" + text.substr(begin, t[i].pos - begin) +
                    ")>(" + config[0] + ", " + config[1] + ", " +
                    (config.size() > 2 ? config[2] : std::string("0")) + ", " +
                    (config.size() > 3 ? config[3] : std::string("nullptr")) +
                    (squash(args).empty() ? std::string() : ", " + args) + ")";
    // Line breaks of the launch as written go after it: later lines keep their numbers.
    std::string flat;
    for (char ch : r) flat += ch == '\n' ? ' ' : ch;
    flat.append(
        static_cast<std::size_t>(std::count(text.begin() + static_cast<std::ptrdiff_t>(begin),
                                            text.begin() + static_cast<std::ptrdiff_t>(end), '\n')),
        '\n');
    launches.push_back({begin, end, std::move(flat)});
    i = close;
  }
  for (auto it = launches.rbegin(); it != launches.rend(); ++it)
    text.replace(it->begin, it->end - it->begin, it->replacement);
  return launches.size();
}

std::string squash(std::string_view s) {
  std::string out;
  bool space = false;
  for (char ch : s) {
    if (std::isspace(static_cast<unsigned char>(ch)) != 0) {
      space = !out.empty();
    } else {
      if (space) out += ' ';
      space = false;
      out += ch;
    }
  }
  return out;
}

}  // namespace cudamux::mock
