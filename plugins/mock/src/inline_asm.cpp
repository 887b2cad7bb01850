// Inline PTX in the mock's NVRTC programs (issue 15); see inline_asm.hpp.
#include "inline_asm.hpp"

#include <cctype>
#include <cstdint>
#include <functional>
#include <string>

#include "cudamux/ptx/cfg.hpp"
#include "cudamux/ptx/emit_cpp.hpp"
#include "cudamux/ptx/ir.hpp"

namespace cudamux::mock {
namespace {

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

// A scanner over C++ source: skips whitespace, comments and (when asked) literals, and reads
// the tokens the asm statement grammar needs.
class Scanner {
 public:
  explicit Scanner(std::string_view s) : s_(s) {}
  std::size_t pos() const { return i_; }
  void seek(std::size_t p) { i_ = p; }
  bool done() const { return i_ >= s_.size(); }
  // Counted on from the last position asked (statements are found in order): a preprocessed
  // CCCL translation unit is megabytes long and holds hundreds of statements.
  unsigned line_at(std::size_t p) {
    if (p < line_pos_) {
      line_pos_ = 0;
      line_ = 1;
    }
    for (; line_pos_ < p && line_pos_ < s_.size(); ++line_pos_) line_ += s_[line_pos_] == '\n';
    return line_;
  }

  void skip_space() {
    while (i_ < s_.size()) {
      if (std::isspace(static_cast<unsigned char>(s_[i_])) != 0) {
        ++i_;
      } else if (s_.substr(i_, 2) == "//") {
        while (i_ < s_.size() && s_[i_] != '\n') ++i_;
      } else if (s_.substr(i_, 2) == "/*") {
        const auto e = s_.find("*/", i_ + 2);
        i_ = e == std::string_view::npos ? s_.size() : e + 2;
      } else {
        return;
      }
    }
  }
  bool peek(char c) {
    skip_space();
    return i_ < s_.size() && s_[i_] == c;
  }
  bool eat(char c) {
    if (!peek(c)) return false;
    ++i_;
    return true;
  }
  std::string_view ident() {
    skip_space();
    if (i_ >= s_.size() || !ident_start(s_[i_])) return {};
    const std::size_t b = i_;
    while (i_ < s_.size() && ident_char(s_[i_])) ++i_;
    return s_.substr(b, i_ - b);
  }
  // The end (one past the closing quote) of a raw string literal R"d(...)d" whose quote is at
  // `q`, or npos.
  std::size_t raw_literal_end(std::size_t q) const {
    const auto open = s_.find('(', q + 1);
    if (open == std::string_view::npos || open - q - 1 > 16) return std::string_view::npos;
    const std::string close = ")" + std::string(s_.substr(q + 1, open - q - 1)) + "\"";
    const auto e = s_.find(close, open + 1);
    return e == std::string_view::npos ? e : e + close.size();
  }
  // A string literal (with an optional encoding prefix u8/L/u/U, raw or not), unescaped into
  // `out` (CCCL writes multi-line PTX as raw literals).
  bool string_literal(std::string& out) {
    skip_space();
    std::size_t k = i_;
    while (k < s_.size() && (s_[k] == 'u' || s_[k] == 'U' || s_[k] == 'L' || s_[k] == '8')) ++k;
    if (k + 1 < s_.size() && s_[k] == 'R' && s_[k + 1] == '"') {
      const std::size_t end = raw_literal_end(k + 1);
      if (end == std::string_view::npos) return false;
      const std::size_t open = s_.find('(', k + 2);
      const std::size_t delim = open - (k + 2);
      out += s_.substr(open + 1, end - (open + 1) - delim - 2);
      i_ = end;
      return true;
    }
    if (k >= s_.size() || s_[k] != '"') return false;
    ++k;
    while (k < s_.size() && s_[k] != '"') {
      if (s_[k] == '\n') return false;
      if (s_[k] != '\\') {
        out += s_[k++];
        continue;
      }
      if (++k >= s_.size()) return false;
      const char e = s_[k++];
      switch (e) {
        case 'n':
          out += '\n';
          break;
        case 't':
          out += '\t';
          break;
        case 'r':
          out += '\r';
          break;
        case '0':
          out += '\0';
          break;
        case '\n':
          break;  // line continuation inside the literal
        default:
          out += e;
          break;  // \" \\ \' \?
      }
    }
    if (k >= s_.size()) return false;
    i_ = k + 1;
    return true;
  }
  // Text up to the parenthesis that closes an already opened one (literals and comments
  // respected); leaves the position after it.
  bool balanced_until_close(std::string& out) {
    int depth = 1;
    const std::size_t b = i_;
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (c == '"' || c == '\'') {
        const char q = c;
        ++i_;
        while (i_ < s_.size() && s_[i_] != q) i_ += s_[i_] == '\\' ? 2 : 1;
        ++i_;
        continue;
      }
      if (s_.substr(i_, 2) == "//" || s_.substr(i_, 2) == "/*") {
        skip_space();
        continue;
      }
      if (c == '(') ++depth;
      if (c == ')' && --depth == 0) {
        out = std::string(s_.substr(b, i_ - b));
        ++i_;
        return true;
      }
      ++i_;
    }
    return false;
  }
  // Skips a literal at the position (used by the outer scan).
  void skip_literal() {
    if (s_[i_] == '"' && i_ > 0 && s_[i_ - 1] == 'R') {
      const std::size_t end = raw_literal_end(i_);
      if (end != std::string_view::npos) {
        i_ = end;
        return;
      }
    }
    const char q = s_[i_++];
    while (i_ < s_.size() && s_[i_] != q && s_[i_] != '\n') i_ += s_[i_] == '\\' ? 2 : 1;
    ++i_;
  }
  char at() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  char before(std::size_t p) const { return p > 0 ? s_[p - 1] : '\0'; }
  // ':' that is not part of '::'.
  bool colon() {
    skip_space();
    // `::` between operand lists is two of them (`asm("membar.gl;" ::: "memory")`): operand
    // expressions are parenthesised, so a scope operator never stands here.
    if (i_ < s_.size() && s_[i_] == ':') {
      ++i_;
      return true;
    }
    return false;
  }

 private:
  std::string_view s_;
  std::size_t i_ = 0;
  std::size_t line_pos_ = 0;
  unsigned line_ = 1;
};

bool read_operands(Scanner& sc, bool outputs, std::vector<AsmOperand>& ops, std::string& error) {
  if (sc.peek(':') || sc.peek(')')) return true;  // an empty list
  do {
    AsmOperand op;
    if (sc.eat('[')) {
      op.name = std::string(sc.ident());
      if (!sc.eat(']')) {
        error = "expected ']' after an operand name";
        return false;
      }
    }
    if (!sc.string_literal(op.constraint)) {
      error = "expected an operand constraint string";
      return false;
    }
    while (sc.string_literal(op.constraint)) {
    }
    if (!sc.eat('(') || !sc.balanced_until_close(op.expression)) {
      error = "expected '(' expression ')' after the constraint \"" + op.constraint + "\"";
      return false;
    }
    op.output = outputs;
    op.read = !outputs;
    for (char c : op.constraint) {
      if (c == '+') op.read = true;
      if (c == '=' || c == '+' || c == '&') continue;
      if (op.letter == 0) op.letter = c;
    }
    switch (op.letter) {
      case 'h':
      case 'r':
      case 'l':
      case 'f':
      case 'd':
      case 'n':
      case 'c':
      case 'b':
        break;
      default:
        error = "constraint \"" + op.constraint + "\" is not one of PTX's (h r l f d n c)";
        return false;
    }
    if (outputs && op.letter == 'n') {
      error = "an output operand cannot be an immediate (\"n\")";
      return false;
    }
    ops.push_back(std::move(op));
  } while (sc.eat(','));
  return true;
}

const char* reg_type(char letter) {
  switch (letter) {
    case 'h':
      return "b16";
    case 'l':
      return "b64";
    case 'f':
      return "f32";
    case 'd':
      return "f64";
    case 'c':
    case 'b':
      return "b8";
    default:
      return "b32";  // r, n
  }
}
const char* cpp_type(char letter) {
  switch (letter) {
    case 'h':
      return "unsigned short";
    case 'l':
      return "unsigned long long";
    case 'f':
      return "float";
    case 'd':
      return "double";
    case 'c':
    case 'b':
      return "unsigned char";
    default:
      return "unsigned int";
  }
}

}  // namespace

namespace {

// The statement whose `asm` keyword starts at `begin` (the scanner is after its qualifiers and
// opening parenthesis); false with `why` when it cannot be read.
bool read_statement(Scanner& sc, AsmStatement& st, std::string& why) {
  if (!sc.string_literal(st.text)) {
    why = "asm statement without a string template";
    return false;
  }
  while (sc.string_literal(st.text)) {
  }
  std::vector<AsmOperand> outputs, inputs;
  if (sc.colon()) {
    if (!read_operands(sc, true, outputs, why)) return false;
    if (sc.colon()) {
      if (!read_operands(sc, false, inputs, why)) return false;
      if (sc.colon()) {  // clobbers ("memory", "cc"): nothing to do on the CPU
        std::string clobber;
        do {
          clobber.clear();
          if (!sc.string_literal(clobber)) break;
        } while (sc.eat(','));
        if (sc.colon()) {
          why = "asm goto labels are not supported";
          return false;
        }
      }
    }
  }
  if (!sc.eat(')')) {
    why = "expected ')' to close the asm statement";
    return false;
  }
  st.end = sc.pos();
  st.operands = std::move(outputs);
  for (auto& in : inputs) st.operands.push_back(std::move(in));
  return true;
}

}  // namespace

std::vector<AsmStatement> find_asm_statements(std::string_view source, std::string& error,
                                              std::vector<UnreadAsm>* unread) {
  std::vector<AsmStatement> out;
  Scanner sc(source);
  while (!sc.done()) {
    sc.skip_space();
    if (sc.done()) break;
    const char c = sc.at();
    if (c == '"' || c == '\'') {
      sc.skip_literal();
      continue;
    }
    const std::size_t begin = sc.pos();
    if (!ident_start(c) || ident_char(sc.before(begin))) {
      sc.seek(begin + 1);
      continue;
    }
    const std::string_view word = sc.ident();
    if (word != "asm" && word != "__asm" && word != "__asm__") continue;
    const std::size_t after_word = sc.pos();
    // Qualifiers: volatile, inline, goto (and their underscored spellings).
    for (;;) {
      const std::size_t p = sc.pos();
      const std::string_view q = sc.ident();
      if (q == "volatile" || q == "__volatile__" || q == "__volatile" || q == "inline" ||
          q == "__inline__" || q == "goto")
        continue;
      sc.seek(p);
      break;
    }
    if (!sc.eat('(')) continue;  // `asm` used as a name: not a statement
    AsmStatement st;
    st.begin = begin;
    st.line = sc.line_at(begin);
    std::string why;
    if (!read_statement(sc, st, why)) {
      if (unread == nullptr) {
        error = "line " + std::to_string(st.line) + ": " + why;
        return {};
      }
      unread->push_back(UnreadAsm{begin, std::move(why)});
      sc.seek(after_word);  // the rest is scanned as ordinary text
      continue;
    }
    out.push_back(std::move(st));
  }
  return out;
}

bool asm_functions_ptx(const std::vector<AsmStatement>& statements, std::string& ptx,
                       std::string& error, std::vector<unsigned>* first_lines) {
  ptx = ".version 8.0\n.target sm_90\n.address_size 64\n";
  for (std::size_t k = 0; k < statements.size(); ++k) {
    const AsmStatement& st = statements[k];
    if (first_lines != nullptr) {
      unsigned l = 1;
      for (char c : ptx) l += c == '\n';
      first_lines->push_back(l);
    }
    const std::string fn = "cudamux_asm_" + std::to_string(k);
    std::string body;
    // The template with operands replaced by registers: %N, %[name], %% and %= (unique id).
    for (std::size_t i = 0; i < st.text.size(); ++i) {
      const char c = st.text[i];
      if (c != '%') {
        body += c;
        continue;
      }
      if (i + 1 < st.text.size() && st.text[i + 1] == '%') {
        body += '%';
        ++i;
        continue;
      }
      if (i + 1 < st.text.size() && st.text[i + 1] == '=') {
        body += std::to_string(k);
        ++i;
        continue;
      }
      std::size_t index = st.operands.size();
      std::size_t j = i + 1;
      if (j < st.text.size() && st.text[j] == '[') {
        const auto close = st.text.find(']', j);
        const std::string name =
            st.text.substr(j + 1, close == std::string::npos ? 0 : close - j - 1);
        for (std::size_t o = 0; o < st.operands.size(); ++o)
          if (st.operands[o].name == name) index = o;
        j = close == std::string::npos ? st.text.size() : close + 1;
      } else if (j < st.text.size() && std::isdigit(static_cast<unsigned char>(st.text[j])) != 0) {
        index = 0;
        while (j < st.text.size() && std::isdigit(static_cast<unsigned char>(st.text[j])) != 0)
          index = index * 10 + static_cast<std::size_t>(st.text[j++] - '0');
      } else {
        body += c;  // a register name such as %laneid written with one %: PTX's own
        continue;
      }
      if (index >= st.operands.size()) {
        error = "line " + std::to_string(st.line) + ": the asm template refers to operand " +
                st.text.substr(i, j - i) + ", which the statement does not have";
        return false;
      }
      body += "%cudamux_op" + std::to_string(index);
      i = j - 1;
    }
    ptx += ".func " + fn + "(.param .b64 cudamux_asm_args)\n{\n.reg .b64 %cudamux_args;\n";
    for (std::size_t o = 0; o < st.operands.size(); ++o)
      ptx += std::string(".reg .") + reg_type(st.operands[o].letter) + " %cudamux_op" +
             std::to_string(o) + ";\n";
    ptx += "ld.param.b64 %cudamux_args, [cudamux_asm_args];\n";
    for (std::size_t o = 0; o < st.operands.size(); ++o)
      if (st.operands[o].read)
        ptx += std::string("ld.") + reg_type(st.operands[o].letter) + " %cudamux_op" +
               std::to_string(o) + ", [%cudamux_args+" + std::to_string(8 * o) + "];\n";
    ptx += "{\n" + body + "\n}\n";
    for (std::size_t o = 0; o < st.operands.size(); ++o)
      if (st.operands[o].output)
        ptx += std::string("st.") + reg_type(st.operands[o].letter) + " [%cudamux_args+" +
               std::to_string(8 * o) + "], %cudamux_op" + std::to_string(o) + ";\n";
    ptx += "ret;\n}\n";
  }
  return true;
}

std::string asm_call(const AsmStatement& st, std::size_t index, std::string_view original,
                     bool collective) {
  // "sync" in the name: the compiler's barrier analysis then sees that a barrier or warp
  // collective can be reached through the call (and never runs the kernel without fibers).
  std::string call = std::string(collective ? "::cudamux_asm_sync_call_" : "::cudamux_asm_call_") +
                     std::to_string(index) + "(";
  for (std::size_t o = 0; o < st.operands.size(); ++o) {
    if (o != 0) call += ", ";
    call += "(" + st.operands[o].expression + ")";
  }
  call += ")";
  // Keep the statement's line count (and macro continuations) so later lines keep numbers.
  for (std::size_t i = 0; i < original.size(); ++i)
    if (original[i] == '\n') call += i > 0 && original[i - 1] == '\\' ? "\\\n" : "\n";
  return call;
}

std::string asm_wrappers(const std::vector<AsmStatement>& statements,
                         const std::vector<std::string>& functions,
                         const std::vector<bool>& collective) {
  std::string out;
  for (std::size_t k = 0; k < statements.size(); ++k) {
    const AsmStatement& st = statements[k];
    std::string tparams, params, pack, unpack;
    for (std::size_t o = 0; o < st.operands.size(); ++o) {
      const std::string n = std::to_string(o);
      const AsmOperand& op = st.operands[o];
      tparams += (o ? ", class T" : "class T") + n;
      params +=
          (o ? ", " : "") + std::string(op.output ? "T" + n + "& a" : "const T" + n + "& a") + n;
      if (op.read)
        pack += "  ::cudamux::ptx::asm_in<" + std::string(cpp_type(op.letter)) + ">(slots + " + n +
                ", a" + n + ");\n";
      if (op.output)
        unpack += "  ::cudamux::ptx::asm_out<" + std::string(cpp_type(op.letter)) + ">(a" + n +
                  ", slots + " + n + ");\n";
    }
    const std::string fn = k < functions.size() ? functions[k] : "cudamux_asm_" + std::to_string(k);
    out +=
        (tparams.empty() ? std::string() : "template <" + tparams + ">\n") +
        "__attribute__((always_inline)) inline void " +
        (k < collective.size() && collective[k] ? "cudamux_asm_sync_call_" : "cudamux_asm_call_") +
        std::to_string(k) + "(" + params + ") {\n  unsigned long long slots[" +
        std::to_string(st.operands.empty() ? 1 : st.operands.size()) + "] = {};\n" + pack +
        "  const void* args = slots;\n  " + fn + "(reinterpret_cast<const char*>(&args));\n" +
        unpack + "}\n";
  }
  return out;
}

namespace {

std::string parse_problem(const std::vector<ptx::Diagnostic>& diagnostics) {
  return diagnostics.empty() ? std::string("does not parse") : diagnostics.front().message;
}

// The C++ of a parsed inline-PTX module followed by one wrapper per statement; `collective`
// gets which statements reach a barrier or warp collective (their calls synchronise).
std::string translated_preamble(const ptx::Module& module,
                                const std::vector<AsmStatement>& statements,
                                std::vector<bool>& collective) {
  ptx::EmitOptions options;
  options.library = true;
  options.module_name = "inline PTX";
  const ptx::EmitResult emitted = ptx::emit_cpp(module, options);
  std::vector<std::string> names;
  for (const auto& n : emitted.function_names) names.push_back("::cudamux_inline_ptx::" + n);
  collective.clear();
  for (const auto& r : ptx::analyse_reach(module))
    collective.push_back(r.cta_barrier || r.warp_collective || r.grid_sync);
  return "#include \"cudamux/ptx_asm.h\"\n" + emitted.source +
         asm_wrappers(statements, names, collective);
}

}  // namespace

bool rewrite_inline_asm(std::string& source, std::string& preamble, std::string& error) {
  preamble.clear();
  const auto statements = find_asm_statements(source, error);
  if (!error.empty()) return false;
  if (statements.empty()) return true;
  std::string ptx;
  std::vector<unsigned> first_lines;
  if (!asm_functions_ptx(statements, ptx, error, &first_lines)) return false;
  std::vector<ptx::Diagnostic> diagnostics;
  const auto module = ptx::parse(ptx, diagnostics);
  if (!module) {
    // The statement whose function holds the first problem.
    const unsigned at = diagnostics.empty() ? 0 : diagnostics.front().loc.line;
    std::size_t k = 0;
    while (k + 1 < first_lines.size() && first_lines[k + 1] <= at) ++k;
    error = "line " + std::to_string(statements[k].line) +
            ": inline PTX: " + parse_problem(diagnostics);
    return false;
  }
  std::vector<bool> collective;
  preamble = translated_preamble(*module, statements, collective);
  for (std::size_t k = statements.size(); k-- > 0;) {
    const AsmStatement& st = statements[k];
    const std::string original = source.substr(st.begin, st.end - st.begin);
    source.replace(st.begin, st.end - st.begin,
                   asm_call(st, k, original, k < collective.size() && collective[k]));
  }
  return true;
}

std::size_t rewrite_inline_asm_where(std::string& text,
                                     const std::function<bool(std::size_t)>& rewritable,
                                     std::string& preamble, std::string& error,
                                     std::vector<UnreadAsm>* skipped) {
  preamble.clear();
  std::vector<UnreadAsm> unread;
  std::vector<AsmStatement> kept;
  for (auto& st : find_asm_statements(text, error, &unread)) {
    if (!rewritable(st.begin)) continue;
    // An empty template (`asm volatile("" ::: "memory")`, a compiler barrier) is as good on
    // the CPU as on the GPU, and a translated call would lose the clobber.
    if (st.text.find_first_not_of(" \t\n\r") == std::string::npos) continue;
    // Each statement on its own first: one the front end cannot read is left in place (it
    // only matters if the compiler emits it, and then the log names it).
    std::string ptx, why;
    std::vector<ptx::Diagnostic> diagnostics;
    if (!asm_functions_ptx({st}, ptx, why) || !ptx::parse(ptx, diagnostics)) {
      unread.push_back(UnreadAsm{st.begin, !why.empty() ? why : parse_problem(diagnostics)});
      continue;
    }
    kept.push_back(std::move(st));
  }
  if (skipped != nullptr)
    for (auto& u : unread)
      if (rewritable(u.offset)) skipped->push_back(std::move(u));
  if (kept.empty()) return 0;
  std::string ptx;
  if (!asm_functions_ptx(kept, ptx, error)) return 0;
  std::vector<ptx::Diagnostic> diagnostics;
  const auto module = ptx::parse(ptx, diagnostics);
  if (!module) {
    error = "inline PTX: " + parse_problem(diagnostics);
    return 0;
  }
  std::vector<bool> collective;
  preamble = translated_preamble(*module, kept, collective);
  // One pass over the text (it can be megabytes long).
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  std::size_t at = 0;
  for (std::size_t k = 0; k < kept.size(); ++k) {
    const AsmStatement& st = kept[k];
    out.append(text, at, st.begin - at);
    out += asm_call(st, k, std::string_view(text).substr(st.begin, st.end - st.begin),
                    k < collective.size() && collective[k]);
    at = st.end;
  }
  out.append(text, at, std::string::npos);
  text = std::move(out);
  return kept.size();
}

}  // namespace cudamux::mock
