// Inline PTX in CUDA C++ given to the mock's NVRTC (issue 15): GNU extended asm statements
// (`asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));`) are found by a small scanner of
// the statement's grammar, each one becomes a PTX .func that loads its operands from an
// argument block, runs the statement's PTX and stores its outputs back; the PTX front end
// translates those functions to C++ and the statement becomes a call of a wrapper.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace cudamux::mock {

struct AsmOperand {
  std::string name;        // `[name]` symbolic name, or empty
  std::string constraint;  // as written: "=r", "+l", "f", "n" ...
  std::string expression;  // the C++ expression in parentheses
  bool output = false;
  bool read = true;  // inputs and "+" outputs are read before the statement runs
  char letter = 0;   // h r l f d n (c, b: bytes)
};

struct AsmStatement {
  std::size_t begin = 0, end = 0;    // source offsets: `asm` .. the closing parenthesis
  std::string text;                  // the template: string literals concatenated and unescaped
  std::vector<AsmOperand> operands;  // outputs first, then inputs (GCC's numbering)
  unsigned line = 1;                 // of `asm`, for messages
};

// A statement left as written, at `offset` of its text, and why.
struct UnreadAsm {
  std::size_t offset = 0;
  std::string why;
};

// Finds every asm statement of a CUDA C++ source (outside comments and literals). Statements
// it cannot read (an unterminated literal, a constraint it does not know) are reported in
// `error` with their line and the scan stops there; with `unread`, they are listed there
// instead and the scan goes on.
std::vector<AsmStatement> find_asm_statements(std::string_view source, std::string& error,
                                              std::vector<UnreadAsm>* unread = nullptr);

// The PTX module of the statements (one .func per statement, named cudamux_asm_<i>), or an
// error naming the statement's line when a template refers to an operand that does not exist.
// first_lines (optional) receives the PTX line on which each statement's function starts.
bool asm_functions_ptx(const std::vector<AsmStatement>& statements, std::string& ptx,
                       std::string& error, std::vector<unsigned>* first_lines = nullptr);

// The C++ a statement becomes: a call of its wrapper (the line count of the original text is
// kept so that later lines keep their numbers), and the wrappers themselves.
std::string asm_call(const AsmStatement& statement, std::size_t index, std::string_view original,
                     bool collective = false);
// `functions`: the C++ names the PTX back end gave cudamux_asm_<i> (namespace included).
std::string asm_wrappers(const std::vector<AsmStatement>& statements,
                         const std::vector<std::string>& functions,
                         const std::vector<bool>& collective = {});

// The whole rewrite of one source: the C++ to put before it (the translated statements and
// their wrappers; empty when there are none) and the source with each statement replaced by
// a call. False with a message naming the line when a statement cannot be translated.
bool rewrite_inline_asm(std::string& source, std::string& preamble, std::string& error);

// The same rewrite over one preprocessed translation unit (g++ -E's output), where macros
// have made every template concrete (CUB's `"ld." #ptx_modifier ".u64 %0, [%1];"`): only the
// statements whose offset `rewritable` accepts are translated, as one module. Statements the
// scanner or the front end cannot read are left as written and listed in `skipped` (they
// matter only if the compiler emits them), as are empty templates (compiler barriers, without
// a report). Returns the number of statements rewritten (0 with `error` set when the module as
// a whole does not parse).
std::size_t rewrite_inline_asm_where(std::string& text,
                                     const std::function<bool(std::size_t)>& rewritable,
                                     std::string& preamble, std::string& error,
                                     std::vector<UnreadAsm>* skipped = nullptr);

}  // namespace cudamux::mock
