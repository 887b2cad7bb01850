// The PTX lexer: a hand-written scanner (no regular expressions), positions 1-based.
#include "lexer.hpp"

#include <bit>
#include <cstdlib>
#include <cstring>
#include <string>

namespace cudamux::ptx::detail {
namespace {

bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ident_start(char c) { return is_alpha(c) || c == '_' || c == '$' || c == '%'; }
bool is_ident_char(char c) { return is_alpha(c) || is_digit(c) || c == '_' || c == '$'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
int hex_value(char c) {
  if (is_digit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return c - 'A' + 10;
}

}  // namespace

std::vector<Token> lex(std::string_view s) {
  std::vector<Token> out;
  out.reserve(s.size() / 4 + 1);
  std::size_t i = 0;
  std::uint32_t line = 1, col = 1;
  auto advance = [&](std::size_t n) {
    for (std::size_t k = 0; k < n && i < s.size(); ++k, ++i) {
      if (s[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
  };
  // An identifier body: word characters, dots between parts (ld.global.u32, %tid.x) and `::`
  // (shared::cta, L2::128B).
  auto scan_word = [&](std::size_t j) {
    while (j < s.size()) {
      if (is_ident_char(s[j])) {
        ++j;
      } else if (s[j] == '.' && j + 1 < s.size() && (is_ident_char(s[j + 1]))) {
        ++j;
      } else if (s[j] == ':' && j + 2 < s.size() && s[j + 1] == ':' && is_ident_char(s[j + 2])) {
        j += 2;
      } else {
        break;
      }
    }
    return j;
  };
  while (i < s.size()) {
    char c = s[i];
    if (c == '\n' || c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      advance(1);
      continue;
    }
    Token t;
    t.line = line;
    t.column = col;
    if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') {
      std::size_t j = s.find('\n', i);
      advance((j == std::string_view::npos ? s.size() : j) - i);
      continue;
    }
    if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      std::size_t j = s.find("*/", i + 2);
      if (j == std::string_view::npos) {
        t.kind = Tok::error;
        t.text = "/*";
        out.push_back(t);
        advance(s.size() - i);
        continue;
      }
      advance(j + 2 - i);
      continue;
    }
    std::size_t start = i, j = i;
    if (is_ident_start(c)) {
      j = scan_word(i + 1);
      t.kind = Tok::ident;
    } else if (c == '.' && i + 1 < s.size() && (is_alpha(s[i + 1]) || s[i + 1] == '_')) {
      j = scan_word(i + 1);
      t.kind = Tok::directive;
    } else if (is_digit(c)) {
      t.kind = Tok::number;
      j = i + 1;
      bool prefixed =
          c == '0' && j < s.size() && std::strchr("xXbBfFdD", s[j]) != nullptr && s[j] != '\0';
      if (prefixed) {
        ++j;
        while (j < s.size() && (is_hex(s[j]) || s[j] == 'U' || s[j] == 'u')) ++j;
      } else {
        while (j < s.size() && is_digit(s[j])) ++j;
        if (j < s.size() && s[j] == '.' && j + 1 < s.size() && is_digit(s[j + 1])) {
          ++j;
          while (j < s.size() && is_digit(s[j])) ++j;
        }
        if (j < s.size() && (s[j] == 'e' || s[j] == 'E')) {
          std::size_t k = j + 1;
          if (k < s.size() && (s[k] == '+' || s[k] == '-')) ++k;
          if (k < s.size() && is_digit(s[k])) {
            j = k;
            while (j < s.size() && is_digit(s[j])) ++j;
          }
        }
        if (j < s.size() && (s[j] == 'U' || s[j] == 'u')) ++j;
      }
    } else if (c == '"') {
      j = i + 1;
      while (j < s.size() && s[j] != '"' && s[j] != '\n') {
        if (s[j] == '\\' && j + 1 < s.size()) ++j;
        ++j;
      }
      if (j >= s.size() || s[j] != '"') {
        t.kind = Tok::error;
        t.text = s.substr(i, 1);
        out.push_back(t);
        advance(j - i);
        continue;
      }
      t.kind = Tok::string;
      t.text = s.substr(i + 1, j - i - 1);
      out.push_back(t);
      advance(j + 1 - i);
      continue;
    } else if (std::strchr(",;:()[]{}<>+-!@=|*", c) != nullptr && c != '\0') {
      t.kind = Tok::punct;
      t.ch = c;
      j = i + 1;
    } else {
      t.kind = Tok::error;
      j = i + 1;
    }
    t.text = s.substr(start, j - start);
    out.push_back(t);
    advance(j - start);
  }
  Token e;
  e.kind = Tok::end;
  e.line = line;
  e.column = col;
  out.push_back(e);
  return out;
}

bool parse_number(std::string_view t, Number& out) {
  out = Number{};
  if (t.empty()) return false;
  if (t.size() >= 2 && t[0] == '0' && (t[1] == 'f' || t[1] == 'F' || t[1] == 'd' || t[1] == 'D')) {
    bool f32 = t[1] == 'f' || t[1] == 'F';
    std::string_view h = t.substr(2);
    if (h.size() != (f32 ? 8u : 16u)) return false;
    std::uint64_t v = 0;
    for (char c : h) {
      if (!is_hex(c)) return false;
      v = v << 4 | static_cast<std::uint64_t>(hex_value(c));
    }
    out.kind = f32 ? Number::Kind::f32 : Number::Kind::f64;
    out.bits = v;
    return true;
  }
  if (t.back() == 'U' || t.back() == 'u') t.remove_suffix(1);
  if (t.empty()) return false;
  unsigned base = 10;
  std::size_t k = 0;
  if (t.size() >= 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) {
    base = 16;
    k = 2;
  } else if (t.size() >= 2 && t[0] == '0' && (t[1] == 'b' || t[1] == 'B')) {
    base = 2;
    k = 2;
  } else if (t.find_first_of(".eE") != std::string_view::npos) {
    std::string buf(t);
    char* endp = nullptr;
    double d = std::strtod(buf.c_str(), &endp);
    if (endp != buf.c_str() + buf.size()) return false;
    out.kind = Number::Kind::f64;
    out.bits = std::bit_cast<std::uint64_t>(d);
    out.is_decimal_float = true;
    return true;
  } else if (t.size() >= 2 && t[0] == '0') {
    base = 8;
    k = 1;
  }
  if (k >= t.size()) return false;
  std::uint64_t v = 0;
  for (; k < t.size(); ++k) {
    char c = t[k];
    if (!is_hex(c)) return false;
    unsigned d = static_cast<unsigned>(hex_value(c));
    if (d >= base) return false;
    if (v > (~std::uint64_t{0} - d) / base) return false;  // overflow
    v = v * base + d;
  }
  out.bits = v;
  return true;
}

}  // namespace cudamux::ptx::detail
