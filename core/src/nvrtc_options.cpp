// NVRTC option parsing (see cudamux/nvrtc_options.hpp). The table below lists every option
// NVRTC 13.0 documents; anything else is rejected, as NVRTC itself does.
#include "cudamux/nvrtc_options.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <initializer_list>
#include <string_view>

namespace cudamux::nvrtc_options {
namespace {

enum class Kind : std::uint8_t {
  flag,     // no value
  boolean,  // true | false (required)
  value,    // any value (required)
  letter,   // -Dx, -D x, -D=x, --define-macro=x, --define-macro x
};

enum class Id : std::uint8_t {
  arch,
  rdc_on,
  rdc_off,
  rdc,
  debug,
  lineinfo,
  fmad,
  fast_math,
  define,
  undefine,
  include,
  pre_include,
  std_,
  default_device,
  time,
  time_trace,
  pch_auto,
  pch_create,
  syntax_only,
  reject,  // documented, but no cudamux backend can honour it (see `why`)
  extra,   // accepted, recorded in CompileOptions::extra
};

// How a value is checked (for value options whose meaning we do not use but validate
// like NVRTC, so a typo is reported rather than ignored).
enum class Check : std::uint8_t {
  none,
  on_off,
  ofc,
  positive_int,
  nonneg_int,
  jtd,
  int_list,
  opt_info
};

struct Spec {
  std::string_view long_name;
  std::string_view short_name;
  Kind kind;
  Id id;
  Check check = Check::none;
  const char* why = nullptr;  // for Id::reject
};

constexpr const char* kNoLto =
    "cudamux backends produce no LTO IR (link-time optimisation is not supported)";

constexpr std::array kSpecs{
    Spec{"gpu-architecture", "arch", Kind::value, Id::arch},
    Spec{"device-c", "dc", Kind::flag, Id::rdc_on},
    Spec{"device-w", "dw", Kind::flag, Id::rdc_off},
    Spec{"relocatable-device-code", "rdc", Kind::boolean, Id::rdc},
    Spec{"extensible-whole-program", "ewp", Kind::flag, Id::extra},
    Spec{"device-debug", "G", Kind::flag, Id::debug},
    Spec{"generate-line-info", "lineinfo", Kind::flag, Id::lineinfo},
    Spec{"dopt", "dopt", Kind::value, Id::extra, Check::on_off},
    Spec{"Ofast-compile", "Ofc", Kind::value, Id::extra, Check::ofc},
    Spec{"ptxas-options", "Xptxas", Kind::value, Id::extra},
    Spec{"maxrregcount", "maxrregcount", Kind::value, Id::extra, Check::positive_int},
    Spec{"ftz", "ftz", Kind::boolean, Id::extra},
    Spec{"prec-sqrt", "prec-sqrt", Kind::boolean, Id::extra},
    Spec{"prec-div", "prec-div", Kind::boolean, Id::extra},
    Spec{"fmad", "fmad", Kind::boolean, Id::fmad},
    Spec{"use_fast_math", "use_fast_math", Kind::flag, Id::fast_math},
    Spec{"extra-device-vectorization", "extra-device-vectorization", Kind::flag, Id::extra},
    Spec{"modify-stack-limit", "modify-stack-limit", Kind::boolean, Id::extra},
    Spec{"dlink-time-opt", "dlto", Kind::flag, Id::reject, Check::none, kNoLto},
    Spec{"gen-opt-lto", "gen-opt-lto", Kind::flag, Id::reject, Check::none, kNoLto},
    Spec{"optix-ir", "optix-ir", Kind::flag, Id::reject, Check::none,
         "cudamux backends produce no OptiX IR"},
    Spec{"jump-table-density", "jtd", Kind::value, Id::extra, Check::jtd},
    Spec{"device-stack-protector", "device-stack-protector", Kind::boolean, Id::extra},
    Spec{"no-cache", "no-cache", Kind::flag, Id::extra},
    Spec{"frandom-seed", "frandom-seed", Kind::value, Id::extra},
    Spec{"define-macro", "D", Kind::letter, Id::define},
    Spec{"undefine-macro", "U", Kind::letter, Id::undefine},
    Spec{"include-path", "I", Kind::letter, Id::include},
    Spec{"pre-include", "include", Kind::value, Id::pre_include},
    Spec{"no-source-include", "no-source-include", Kind::flag, Id::extra},
    Spec{"std", "std", Kind::value, Id::std_},
    Spec{"builtin-move-forward", "builtin-move-forward", Kind::boolean, Id::extra},
    Spec{"builtin-initializer-list", "builtin-initializer-list", Kind::boolean, Id::extra},
    Spec{"pch", "pch", Kind::flag, Id::pch_auto},
    Spec{"create-pch", "create-pch", Kind::value, Id::pch_create},
    Spec{"use-pch", "use-pch", Kind::value, Id::extra},
    Spec{"pch-dir", "pch-dir", Kind::value, Id::extra},
    Spec{"pch-verbose", "pch-verbose", Kind::boolean, Id::extra},
    Spec{"pch-messages", "pch-messages", Kind::boolean, Id::extra},
    Spec{"instantiate-templates-in-pch", "instantiate-templates-in-pch", Kind::boolean, Id::extra},
    Spec{"disable-warnings", "w", Kind::flag, Id::extra},
    Spec{"restrict", "restrict", Kind::flag, Id::extra},
    Spec{"device-as-default-execution-space", "default-device", Kind::flag, Id::default_device},
    Spec{"device-int128", "device-int128", Kind::flag, Id::extra},
    Spec{"device-float128", "device-float128", Kind::flag, Id::extra},
    Spec{"optimization-info", "opt-info", Kind::value, Id::extra, Check::opt_info},
    Spec{"display-error-number", "err-no", Kind::flag, Id::extra},
    Spec{"no-display-error-number", "no-err-no", Kind::flag, Id::extra},
    Spec{"diag-error", "diag-error", Kind::value, Id::extra, Check::int_list},
    Spec{"diag-suppress", "diag-suppress", Kind::value, Id::extra, Check::int_list},
    Spec{"diag-warn", "diag-warn", Kind::value, Id::extra, Check::int_list},
    Spec{"brief-diagnostics", "brief-diag", Kind::boolean, Id::extra},
    Spec{"time", "time", Kind::value, Id::time},
    Spec{"split-compile", "split-compile", Kind::value, Id::extra, Check::nonneg_int},
    Spec{"fdevice-syntax-only", "fdevice-syntax-only", Kind::flag, Id::syntax_only},
    Spec{"minimal", "minimal", Kind::flag, Id::extra},
    Spec{"fdevice-time-trace", "fdevice-time-trace", Kind::value, Id::time_trace},
};

std::string display(const Spec& s) {
  return "--" + std::string(s.long_name) + " (-" + std::string(s.short_name) + ")";
}

bool parse_int(std::string_view v, long long& out) {
  if (v.empty()) return false;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  return ec == std::errc{} && p == v.data() + v.size();
}

bool one_of(std::string_view v, std::initializer_list<std::string_view> allowed) {
  return std::find(allowed.begin(), allowed.end(), v) != allowed.end();
}

// Empty string: the value is fine; otherwise why not.
std::string check_value(const Spec& s, std::string_view v) {
  long long n = 0;
  switch (s.check) {
    case Check::none:
      return v.empty() ? display(s) + " expects a value" : "";
    case Check::on_off:
      return one_of(v, {"on", "off"}) ? "" : display(s) + " expects on or off";
    case Check::ofc:
      return one_of(v, {"0", "min", "mid", "max"}) ? ""
                                                   : display(s) + " expects 0, min, mid or max";
    case Check::positive_int:
      return parse_int(v, n) && n > 0 ? "" : display(s) + " expects a positive integer value";
    case Check::nonneg_int:
      return parse_int(v, n) && n >= 0 ? "" : display(s) + " expects a non-negative integer value";
    case Check::jtd:
      return parse_int(v, n) && n >= 0 && n <= 101 ? ""
                                                   : display(s) + " expects an integer in [0, 101]";
    case Check::opt_info:
      return v == "inline" ? ""
                           : "invalid optimization tag for " + display(s) + ": " + std::string(v);
    case Check::int_list: {
      std::string_view rest = v;
      while (true) {
        const auto comma = rest.find(',');
        if (!parse_int(rest.substr(0, comma), n) || n <= 0)
          return display(s) + " expects a comma-separated list of positive integers";
        if (comma == std::string_view::npos) return "";
        rest.remove_prefix(comma + 1);
      }
    }
  }
  return "";
}

const Spec* find_spec(std::string_view name, bool long_form) {
  for (const Spec& s : kSpecs)
    if ((long_form ? s.long_name : s.short_name) == name) return &s;
  return nullptr;
}

bool is_identifier(std::string_view v) {
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (v.empty() || !alpha(v.front())) return false;
  return std::all_of(v.begin(), v.end(),
                     [&](char c) { return alpha(c) || (c >= '0' && c <= '9'); });
}

std::string_view trim_left(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  return v;
}

}  // namespace

nvrtcResult parse(std::span<const char* const> options, std::span<const int> supported_archs,
                  Parsed& out, std::string& error) {
  auto fail = [&](std::string why) {
    error = std::move(why);
    return NVRTC_ERROR_INVALID_OPTION;
  };
  backend::CompileOptions& o = out.options;
  for (std::size_t i = 0; i < options.size(); ++i) {
    const std::string_view token = options[i] ? options[i] : "";
    const Spec* spec = nullptr;
    std::string_view value;
    bool has_value = false;

    // One-letter options take their value glued (-DX), after a space in the same string
    // (-D X), after '=' or in the next string.
    if (token.size() >= 2 && token[0] == '-' && token[1] != '-' && std::strchr("DUI", token[1])) {
      spec = find_spec(token.substr(1, 1), false);
      value = trim_left(token.substr(2));
      if (!value.empty() && value.front() == '=') value.remove_prefix(1);
      has_value = !value.empty();
    } else if (token.size() >= 2 && token[0] == '-') {
      const bool long_form = token.size() > 2 && token[1] == '-';
      std::string_view name = token.substr(long_form ? 2 : 1);
      if (const auto eq = name.find('='); eq != std::string_view::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
        has_value = true;
      }
      spec = find_spec(name, long_form);
    }
    if (!spec) return fail("unrecognized option " + std::string(token));

    if (spec->kind == Kind::flag) {
      if (has_value) return fail(display(*spec) + " takes no value");
    } else if (!has_value) {
      if (i + 1 >= options.size() || options[i + 1] == nullptr)
        return fail(display(*spec) + " expects a value");
      value = options[++i];
      if (spec->kind == Kind::letter) value = trim_left(value);
    }
    bool flag_value = false;
    if (spec->kind == Kind::boolean) {
      if (value != "true" && value != "false")
        return fail(display(*spec) + " expects true or false");
      flag_value = value == "true";
    } else if (spec->kind == Kind::value || spec->kind == Kind::letter) {
      if (std::string msg = check_value(*spec, value); !msg.empty()) return fail(msg);
    }
    // The option in one canonical string, as recorded in CompileOptions::extra.
    std::string canonical = "--" + std::string(spec->long_name);
    if (spec->kind != Kind::flag) canonical += "=" + std::string(value);

    switch (spec->id) {
      case Id::arch: {
        const bool real = value.starts_with("sm_");
        std::string_view digits = value.substr(real ? 3 : value.starts_with("compute_") ? 8 : 0);
        if (!real && !value.starts_with("compute_")) digits = {};
        std::string_view suffix;
        if (!digits.empty() && (digits.back() == 'a' || digits.back() == 'f')) {
          suffix = digits.substr(digits.size() - 1);
          digits.remove_suffix(1);
        }
        long long n = 0;
        if (!parse_int(digits, n) || n <= 0 || n > 1000 ||
            (!supported_archs.empty() && std::find(supported_archs.begin(), supported_archs.end(),
                                                   static_cast<int>(n)) == supported_archs.end())) {
          std::string list;
          for (int a : supported_archs) list += (list.empty() ? "" : ", ") + std::to_string(a);
          return fail("invalid value for " + display(*spec) + ": " + std::string(value) +
                      " (expected compute_XX or sm_XX" +
                      (list.empty() ? std::string(")") : ", XX one of " + list + ")"));
        }
        if (!out.arch_spelling.empty())
          out.warnings.push_back(display(*spec) + "=" + out.arch_spelling + " followed by " +
                                 display(*spec) + "=" + std::string(value) +
                                 ": the last one is used");
        o.arch = static_cast<int>(n);
        o.real_arch = real;
        out.arch_spelling = value;
        // Architecture-specific (a) and family (f) variants: the number is what backends
        // use; the full spelling is kept for those that care.
        std::erase_if(o.extra,
                      [](const std::string& e) { return e.starts_with("--gpu-architecture="); });
        if (!suffix.empty()) o.extra.push_back(canonical);
        break;
      }
      case Id::rdc_on:
        o.relocatable = true;
        break;
      case Id::rdc_off:
        o.relocatable = false;
        break;
      case Id::rdc:
        o.relocatable = flag_value;
        break;
      case Id::debug:
        o.device_debug = true;
        break;
      case Id::lineinfo:
        o.line_info = true;
        break;
      case Id::fmad:
        o.fmad = flag_value;
        break;
      case Id::fast_math:
        o.fmad = true;  // --use_fast_math implies --fmad=true (and ftz, approximate div/sqrt)
        o.extra.push_back(canonical);
        break;
      case Id::define: {
        const auto eq = value.find('=');
        // -DX defines X as 1, as every C preprocessor does; -DX= defines it empty.
        if (eq == std::string_view::npos)
          o.defines.emplace_back(std::string(value), "1");
        else
          o.defines.emplace_back(std::string(value.substr(0, eq)),
                                 std::string(value.substr(eq + 1)));
        if (!is_identifier(o.defines.back().first))
          return fail(display(*spec) + " expects a macro name, not " + std::string(value));
        break;
      }
      case Id::undefine:
        if (!is_identifier(value))
          return fail(display(*spec) + " expects a macro name, not " + std::string(value));
        o.undefines.emplace_back(value);
        break;
      case Id::include:
        o.include_paths.emplace_back(value);
        break;
      case Id::pre_include:
        o.pre_includes.emplace_back(value);
        break;
      case Id::std_:
        if (!one_of(value, {"c++03", "c++11", "c++14", "c++17", "c++20"}))
          return fail("invalid value for " + display(*spec) + ": " + std::string(value) +
                      " (expected c++03, c++11, c++14, c++17 or c++20)");
        o.std = value;
        break;
      case Id::default_device:
        o.default_device = true;
        break;
      case Id::time:
        out.time_file = value;
        break;
      case Id::time_trace:
        out.time_trace_file = value;
        break;
      case Id::pch_auto:
        out.auto_pch = true;
        o.extra.push_back(canonical);
        break;
      case Id::pch_create:
        out.create_pch = true;
        o.extra.push_back(canonical);
        break;
      case Id::syntax_only:
        out.syntax_only = true;
        o.extra.push_back(canonical);
        break;
      case Id::reject:
        return fail(display(*spec) + " is not supported: " + spec->why);
      case Id::extra:
        o.extra.push_back(canonical);
        break;
    }
  }
  return NVRTC_SUCCESS;
}

}  // namespace cudamux::nvrtc_options
