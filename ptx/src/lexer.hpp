// The PTX lexer (private to the front end): PTX text -> tokens with line and column.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace cudamux::ptx::detail {

enum class Tok : std::uint8_t {
  end,
  ident,      // foo, %r1, %tid.x, $L__BB0_2, ld.global.v4.f32, L2::128B (dots and :: inside)
  directive,  // .reg, .shared::cta
  number,     // 12, 0x1F, 017, 0b101, 0f3F800000, 0d..., 1.5e3, 12U (text: parse_number)
  string,     // "..." (text without the quotes, escapes untouched)
  punct,      // one character: , ; : ( ) [ ] { } < > + - ! @ = | *
  error,      // a character PTX does not use, or an unterminated string / comment
};

struct Token {
  Tok kind = Tok::end;
  char ch = 0;  // punct: the character
  std::string_view text;
  std::uint32_t line = 0, column = 0;
};

// Tokenises the whole text; always ends with one Tok::end token. Never fails: bad characters
// become Tok::error tokens the parser reports where it meets them (the debug sections it skips
// may contain anything).
std::vector<Token> lex(std::string_view text);

// A PTX numeric literal. kind: integer (value in bits), f32 (0f: bits are the f32 bits), f64
// (0d or a decimal with '.'/exponent: bits are the f64 bits). Returns false if malformed or
// out of range.
struct Number {
  enum class Kind : std::uint8_t { integer, f32, f64 } kind = Kind::integer;
  std::uint64_t bits = 0;
  bool is_decimal_float = false;  // 1.5 (converted by context) vs 0f/0d (exact bits)
};
bool parse_number(std::string_view text, Number& out);

}  // namespace cudamux::ptx::detail
