// The mock's NVRTC compiler: CUDA C++ -> one CPU shared object per program, built by the host
// C++ compiler with the prelude (plugins/mock/device) force-included, wrapped in a text image.
#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <boost/uuid/detail/sha1.hpp>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <regex>
#include <set>
#include <sstream>

#include "fission.hpp"
#include "inline_asm.hpp"
#include "kernels.hpp"

extern char** environ;

namespace cudamux::mock {
namespace {

namespace fs = std::filesystem;
constexpr be::Status status(CUresult r) { return be::Status{static_cast<std::int32_t>(r)}; }
constexpr std::string_view kRegistrationFile = "<cudamux kernel registration>";
constexpr std::string_view kFissionFile = "<cudamux fission>";
// Around code the mock adds to a program (the warnings it would raise are not the user's).
constexpr std::string_view kQuietBegin =
    "#pragma GCC diagnostic push\n#pragma GCC diagnostic ignored \"-Wunused-variable\"\n";
constexpr std::string_view kQuietEnd = "#pragma GCC diagnostic pop\n";

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

bool write_file(const fs::path& p, std::string_view data) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  return static_cast<bool>(out);
}

// ---- source scanning ----------------------------------------------------------------------

// The source with comments, string and character literals blanked (newlines kept), so that
// scans see only code; offsets match the original.
std::string code_view(std::string_view s, bool keep_preprocessor = false) {
  std::string out(s);
  std::size_t i = 0;
  const std::size_t n = s.size();
  while (i < n) {
    if (s[i] == '/' && i + 1 < n && s[i + 1] == '/') {
      while (i < n && s[i] != '\n') out[i++] = ' ';
    } else if (s[i] == '/' && i + 1 < n && s[i + 1] == '*') {
      out[i++] = ' ';
      out[i++] = ' ';
      while (i < n && !(s[i] == '*' && i + 1 < n && s[i + 1] == '/')) {
        if (s[i] != '\n') out[i] = ' ';
        ++i;
      }
      if (i < n) out[i++] = ' ';
      if (i < n) out[i++] = ' ';
    } else if (s[i] == '"' || s[i] == '\'') {
      // Raw strings are rare in kernels; plain literals with escapes are handled.
      const char q = s[i++];
      while (i < n && s[i] != q && s[i] != '\n') {
        if (s[i] == '\\' && i + 1 < n) out[i++] = ' ';
        out[i++] = ' ';
      }
      ++i;
    } else {
      ++i;
    }
  }
  if (keep_preprocessor) return out;
  // Preprocessor lines (with continuations) are not code either.
  bool line_start = true;
  for (std::size_t k = 0; k < n; ++k) {
    if (line_start) {
      std::size_t j = k;
      while (j < n && (out[j] == ' ' || out[j] == '\t')) ++j;
      if (j < n && out[j] == '#') {
        while (j < n && !(out[j] == '\n' && (j == 0 || s[j - 1] != '\\'))) {
          if (out[j] != '\n') out[j] = ' ';
          ++j;
        }
        k = j;
        line_start = true;
        continue;
      }
    }
    line_start = out[k] == '\n';
  }
  return out;
}

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

std::size_t match_paren(const std::string& c, std::size_t open) {
  int depth = 0;
  for (std::size_t i = open; i < c.size(); ++i) {
    if (c[i] == '(') ++depth;
    if (c[i] == ')' && --depth == 0) return i;
  }
  return std::string::npos;
}

struct KernelDecl {
  std::vector<std::string> ns;  // enclosing namespaces ("" for anonymous)
  std::string name;
  std::string params;  // text between the parentheses
  std::string bound_threads = "0";
  std::string bound_blocks = "0";
  std::size_t body_b = std::string::npos;  // offsets of the body's braces (npos: declaration)
  std::size_t body_e = std::string::npos;
  unsigned flags = 0;  // CUDAMUX_KERNEL_*
  std::string twin;    // the fissioned twin's name (PER_BLOCK)
};

std::size_t match_brace(const std::string& c, std::size_t open) {
  int depth = 0;
  for (std::size_t i = open; i < c.size(); ++i) {
    if (c[i] == '{') ++depth;
    if (c[i] == '}' && --depth == 0) return i;
  }
  return std::string::npos;
}

std::vector<std::string> split_top_commas(std::string_view s) {
  std::vector<std::string> parts;
  int depth = 0;
  std::string cur;
  for (char ch : s) {
    if (ch == '(' || ch == '<' || ch == '[' || ch == '{') ++depth;
    if (ch == ')' || ch == '>' || ch == ']' || ch == '}') --depth;
    if (ch == ',' && depth == 0) {
      parts.push_back(squash(cur));
      cur.clear();
    } else {
      cur += ch;
    }
  }
  if (!squash(cur).empty()) parts.push_back(squash(cur));
  return parts;
}

// Non-template __global__ functions at namespace scope, with their namespaces.
std::vector<KernelDecl> scan_kernels(const std::string& code) {
  std::vector<KernelDecl> kernels;
  struct Scope {
    bool is_namespace;
    std::string name;
    bool linkage = false;  // extern "C" { ... }: namespace scope, no name of its own
  };
  std::vector<Scope> scopes;
  std::size_t stmt_start = 0;
  const std::size_t n = code.size();
  for (std::size_t i = 0; i < n; ++i) {
    const char ch = code[i];
    if (ch == '{') {
      // A namespace opening: `namespace [a::b] {` or `inline namespace x {` before it.
      const std::string head = squash(std::string_view(code).substr(stmt_start, i - stmt_start));
      static const std::regex ns_re(
          R"(^(?:inline )?namespace(?: ([A-Za-z_][\w:]*))?(?: \[\[[^\]]*\]\])?$)");
      std::smatch m;
      // A linkage block (`extern "C" {`; code_view blanked the string): its kernels are at
      // namespace scope (CuPy's partition kernels are declared so).
      if (head.rfind("extern \"", 0) == 0 && head.back() == '"') {
        scopes.push_back({true, {}, true});
      } else if (std::regex_match(head, m, ns_re)) {
        const std::string name = m[1].str();
        if (name.find("::") != std::string::npos) {
          // a::b { ... }: one brace closes both; record as one scope with a qualified name.
          scopes.push_back({true, name});
        } else {
          scopes.push_back({true, name});
        }
      } else {
        scopes.push_back({false, {}});
      }
      stmt_start = i + 1;
      continue;
    }
    if (ch == '}') {
      if (!scopes.empty()) scopes.pop_back();
      stmt_start = i + 1;
      continue;
    }
    if (ch == ';') {
      stmt_start = i + 1;
      continue;
    }
    if (ch != '_' || code.compare(i, 10, "__global__") != 0) continue;
    if ((i > 0 && ident_char(code[i - 1])) || (i + 10 < n && ident_char(code[i + 10]))) continue;
    const bool at_namespace_scope =
        std::all_of(scopes.begin(), scopes.end(), [](const Scope& s) { return s.is_namespace; });
    const std::string before =
        " " + squash(std::string_view(code).substr(stmt_start, i - stmt_start)) + " ";
    if (!at_namespace_scope || before.find(" template") != std::string::npos ||
        before.find("template<") != std::string::npos ||
        before.find("friend ") != std::string::npos) {
      i += 9;
      continue;
    }
    // Walk to the declarator: skip __launch_bounds__(...), __attribute__((...)) and the like;
    // the kernel's name is the identifier right before the first other '('.
    KernelDecl k;
    std::size_t j = i + 10;
    std::string last_ident;
    while (j < n) {
      if (ident_char(code[j])) {
        const std::size_t b = j;
        while (j < n && ident_char(code[j])) ++j;
        last_ident = code.substr(b, j - b);
        continue;
      }
      if (code[j] == '(') {
        const std::size_t close = match_paren(code, j);
        if (close == std::string::npos) break;
        if (last_ident == "__launch_bounds__") {
          const auto args = split_top_commas(std::string_view(code).substr(j + 1, close - j - 1));
          if (!args.empty()) k.bound_threads = args[0];
          if (args.size() > 1) k.bound_blocks = args[1];
          j = close + 1;
          last_ident.clear();
          continue;
        }
        if (last_ident == "__attribute__" || last_ident == "__align__" ||
            last_ident == "__declspec" || last_ident == "alignas" || last_ident == "__maxnreg__" ||
            last_ident == "__cluster_dims__" || last_ident.empty()) {
          j = close + 1;
          last_ident.clear();
          continue;
        }
        k.name = last_ident;
        k.params = squash(std::string_view(code).substr(j + 1, close - j - 1));
        const std::size_t body = code.find_first_of("{;", close + 1);
        if (body != std::string::npos && code[body] == '{') {
          k.body_b = body;
          k.body_e = match_brace(code, body);
          if (k.body_e == std::string::npos) k.body_b = std::string::npos;
        }
        break;
      }
      if (code[j] == ';' || code[j] == '{') break;
      ++j;
    }
    if (!k.name.empty() && k.name != "operator") {
      for (const auto& s : scopes)
        if (!s.linkage) k.ns.push_back(s.name);
      kernels.push_back(std::move(k));
    }
    i = j;
  }
  return kernels;
}

// `extern __shared__ T name[];` -> a view of the block's dynamic shared buffer. Line count kept.
std::string rewrite_dynamic_shared(const std::string& src) {
  // Most headers declare no shared memory at all: no scan (Jitify hands over hundreds).
  if (src.find("__shared__") == std::string::npos) return src;
  const std::string code = code_view(src);
  static const std::regex re(
      R"(\bextern\s+((?:[\w:<>,*\s]|__align__\s*\([^)]*\)|__attribute__\s*\(\([^)]*\)\))*?)\b__shared__\b((?:[\w:<>,*\s]|__align__\s*\([^)]*\)|__attribute__\s*\(\([^)]*\)\))*?)\b([A-Za-z_]\w*)\s*\[\s*\]\s*;)");
  static const std::regex align_re(
      R"(__align__\s*\([^)]*\)|__attribute__\s*\(\([^)]*\)\)|\b(?:volatile|static)\b)");
  std::string out;
  std::size_t last = 0;
  for (auto it = std::sregex_iterator(code.begin(), code.end(), re); it != std::sregex_iterator();
       ++it) {
    const auto& m = *it;
    const auto pos = static_cast<std::size_t>(m.position(0));
    std::string type = squash(std::regex_replace(m[1].str() + " " + m[2].str(), align_re, " "));
    if (type.empty()) continue;
    const std::string matched = m.str(0);
    out.append(src, last, pos - last);
    out += "static constexpr ::cudamux::dyn_shared<" + type + "> " + m[3].str() + "{};";
    out.append(static_cast<std::size_t>(std::count(matched.begin(), matched.end(), '\n')), '\n');
    last = pos + matched.size();
  }
  out.append(src, last, std::string::npos);
  return out;
}

std::string quote(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    if (ch == '\n') {
      out += "\\n";
      continue;
    }
    out += ch;
  }
  return out + "\"";
}

// `entry`: the kernel table function's name, cudamux_module for a whole program; a relocatable
// object's own name, which link_objects calls from the module's cudamux_module.
std::string registration(const std::vector<KernelDecl>& kernels,
                         const std::vector<std::string>& expressions, const std::string& entry) {
  std::ostringstream o;
  std::map<std::string, std::set<std::string>> signatures;  // qualified name -> param lists
  for (const auto& k : kernels) {
    std::string q;
    for (const auto& s : k.ns) q += s + "::";
    signatures[q + k.name].insert(k.params);
  }
  std::vector<std::string> refs;
  std::set<std::string> seen;
  int index = 0;
  for (const auto& k : kernels) {
    std::string q;
    for (const auto& s : k.ns) q += s + "::";
    const bool overloaded = signatures[q + k.name].size() > 1;
    if (!overloaded && !seen.insert(q + k.name).second) continue;
    if (overloaded && !seen.insert(q + k.name + "(" + k.params + ")").second) continue;
    const std::string var = "cudamux_kernel_" + std::to_string(index++);
    std::string open;
    std::string close;
    std::string qualified;
    for (const auto& s : k.ns) {
      open += s.empty() ? "namespace { " : "namespace " + s + " { ";
      close += "} ";
      if (!s.empty()) qualified += s + "::";
    }
    const std::string fn =
        overloaded ? "static_cast<void (*)(" + k.params + ")>(&" + k.name + ")" : "&" + k.name;
    o << open << "static const cudamux_kernel_desc " << var << " = ::cudamux::detail::entry<" << fn
      << ", " << k.flags << "u" << (k.twin.empty() ? std::string() : ", &" + k.twin)
      << ">(static_cast<int>(" << k.bound_threads << "), static_cast<int>(" << k.bound_blocks
      << "), nullptr); " << close << "\n";
    refs.push_back("&" + qualified + var);
  }
  for (std::size_t e = 0; e < expressions.size(); ++e) {
    const std::string var = "cudamux_expression_" + std::to_string(e);
    const std::string& expr = expressions[e];
    const std::string address = !expr.empty() && expr[0] == '&' ? expr : "&" + expr;
    o << "static const cudamux_kernel_desc " << var << " = ::cudamux::detail::named<" << address
      << ">(" << quote(expr) << ");\n";
    refs.push_back("&" + var);
  }
  o << "extern \"C\" __attribute__((visibility(\"default\"))) const cudamux_module_desc* " << entry
    << "(void) {\n  static const cudamux_kernel_desc* const k[] = {";
  for (const auto& r : refs) o << r << ", ";
  o << "nullptr};\n  static const cudamux_module_desc d = {CUDAMUX_DEVICE_ABI, " << refs.size()
    << "u, k};\n  return &d;\n}\n";
  return o.str();
}

// ---- running the compiler ------------------------------------------------------------------

struct Run {
  int exit_code = -1;
  std::string output;  // stdout + stderr
};

Run run_process(const std::vector<std::string>& argv) {
  Run r;
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) {
    r.output = std::string("pipe: ") + std::strerror(errno);
    return r;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipefd[1], 1);
  posix_spawn_file_actions_adddup2(&actions, pipefd[1], 2);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipefd[1]);
  if (rc != 0) {
    ::close(pipefd[0]);
    r.output = "cannot run '" + argv[0] + "': " + std::strerror(rc);
    return r;
  }
  char buf[4096];
  for (;;) {
    const ssize_t got = ::read(pipefd[0], buf, sizeof buf);
    if (got > 0) {
      r.output.append(buf, static_cast<std::size_t>(got));
    } else if (got == 0 || errno != EINTR) {
      break;
    }
  }
  ::close(pipefd[0]);
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  r.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
  return r;
}

// Compiler messages in the user's terms: no temporary folders, prelude or command line.
// g++'s "FILE:LINE:COL: fatal error: NAME: No such file or directory" (clang's "...: fatal error:
// 'NAME' file not found", and "...: error: 'NAME' file not found with <angled> include; ...")
// in NVIDIA's NVRTC words,
// "FILE(LINE): catastrophic error: cannot open source file "NAME"": Jitify (CuPy's, and
// others') finds the missing header's name and line in the log by that wording, then supplies
// the header and compiles again. Other lines are returned as they are.
std::string nvrtc_missing_include(const std::string& line) {
  static constexpr std::string_view kFatal = ": fatal error: ";
  static constexpr std::string_view kError = ": error: ";
  static constexpr std::string_view kMissing = ": No such file or directory";
  static constexpr std::string_view kClangMissing = "' file not found";
  static constexpr std::string_view kClangAngled = " with <angled> include; use \"quotes\" instead";
  std::size_t fatal = line.find(kFatal);
  std::size_t name_at = fatal == std::string::npos ? fatal : fatal + kFatal.size();
  if (fatal == std::string::npos) {
    fatal = line.find(kError);
    if (fatal == std::string::npos) return line;
    name_at = fatal + kError.size();
  }
  std::size_t name_end = std::string::npos;
  if (line.ends_with(kMissing) && line.compare(fatal, kFatal.size(), kFatal) == 0) {
    name_end = line.size() - kMissing.size();
  } else if (name_at < line.size() && line[name_at] == '\'') {
    // Clang quotes the name; the angled form is an error it recovers from, not a fatal one.
    const std::string_view rest =
        line.ends_with(kClangAngled)
            ? std::string_view(line).substr(0, line.size() - kClangAngled.size())
            : std::string_view(line);
    if (!rest.ends_with(kClangMissing)) return line;
    ++name_at;
    name_end = rest.size() - kClangMissing.size();
  } else {
    return line;
  }
  // Before the message: FILE:LINE:COL, the two numbers counted from the right (FILE may hold
  // ':').
  const std::size_t col_colon = line.rfind(':', fatal - 1);
  if (col_colon == std::string::npos || col_colon == 0) return line;
  const std::size_t line_colon = line.rfind(':', col_colon - 1);
  if (line_colon == std::string::npos) return line;
  const std::string_view number(line.data() + line_colon + 1, col_colon - line_colon - 1);
  if (number.empty() || number.find_first_not_of("0123456789") != std::string_view::npos)
    return line;
  if (name_end <= name_at) return line;
  return line.substr(0, line_colon) + "(" + std::string(number) +
         "): catastrophic error: cannot open source file \"" +
         line.substr(name_at, name_end - name_at) + "\"";
}

std::string rewrite_log(const std::string& text, const std::string& tmp_dir,
                        const std::string& include_dir) {
  std::istringstream in(text);
  std::string line;
  std::string out;
  while (std::getline(in, line)) {
    // Notes about our -D flags are noise; an error there is the user's (--pre-include).
    if (const auto at = line.find("<command-line>"); at != std::string::npos) {
      if (line.find("error") == std::string::npos) continue;
      line.replace(at, std::string_view("<command-line>").size(), "command line");
    }
    if (line.find("cudamux/prelude.h") != std::string::npos &&
        line.find("In file included from") != std::string::npos)
      continue;
    for (const std::string& prefix : {tmp_dir + "/include/", tmp_dir + "/", include_dir + "/"}) {
      for (std::size_t p; (p = line.find(prefix)) != std::string::npos;)
        line.erase(p, prefix.size());
    }
    line = nvrtc_missing_include(line);
    out += line;
    out += '\n';
  }
  return out;
}

std::string hex(const unsigned char* d, std::size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (std::size_t i = 0; i < n; ++i) {
    s += digits[d[i] >> 4];
    s += digits[d[i] & 15];
  }
  return s;
}

class Hasher {
 public:
  void add(std::string_view s) {
    const std::uint64_t n = s.size();  // length-prefixed: no ambiguity between fields
    sha_.process_bytes(&n, sizeof n);
    sha_.process_bytes(s.data(), s.size());
  }
  std::string digest() {
    boost::uuids::detail::sha1::digest_type d;
    sha_.get_digest(d);
    unsigned char bytes[20];
    for (int i = 0; i < 5; ++i)
      for (int b = 0; b < 4; ++b)
        bytes[i * 4 + b] = static_cast<unsigned char>(d[i] >> (24 - 8 * b));
    return hex(bytes, sizeof bytes);
  }

 private:
  boost::uuids::detail::sha1 sha_;
};

// The compiler's identity without running it: resolved path, size and mtime.
std::string compiler_identity(const std::string& compiler) {
  std::string path = compiler;
  if (compiler.find('/') == std::string::npos) {
    const char* env = std::getenv("PATH");
    std::istringstream dirs(env != nullptr ? env : "/usr/bin:/bin");
    for (std::string d; std::getline(dirs, d, ':');) {
      const fs::path p = fs::path(d) / compiler;
      if (::access(p.c_str(), X_OK) == 0) {
        path = p.string();
        break;
      }
    }
  }
  std::error_code ec;
  const auto real = fs::canonical(path, ec);
  struct stat st {};
  if (ec || ::stat(real.c_str(), &st) != 0) return compiler;
  return real.string() + ":" + std::to_string(st.st_size) + ":" + std::to_string(st.st_mtime);
}

// The mock's compiler is GCC or Clang (CUDAMUX_MOCK_CXX, [mock] compiler); their flags differ
// (docs/performance.md, "Back end: g++ against LLVM (clang++ 14)").
enum class CompilerFamily { kGcc, kClang, kUnusable };

struct CompilerInfo {
  CompilerFamily family = CompilerFamily::kUnusable;
  std::string why;  // for kUnusable: what the compiler said, or why it did not run
};

// Asks the compiler once per process (per identity: path, size, mtime) which family it is:
// its predefined macros (`-dM -E`) name __clang__ (Clang, and compilers built on it) or only
// __GNUC__ (GCC). Its output is a list of #define lines, read line by line.
const CompilerInfo& compiler_info(const std::string& compiler) {
  static std::mutex mu;
  static std::map<std::string, CompilerInfo> known;
  std::lock_guard lock(mu);
  const std::string id = compiler_identity(compiler);
  if (const auto it = known.find(id); it != known.end()) return it->second;
  CompilerInfo info;
  const Run run = run_process({compiler, "-dM", "-E", "-x", "c++", "/dev/null"});
  if (run.exit_code != 0) {
    info.why = run.output.empty() ? "it exited with status " + std::to_string(run.exit_code)
                                  : run.output.substr(0, 500);
  } else {
    bool clang = false;
    bool gnu = false;
    std::istringstream lines(run.output);
    for (std::string l; std::getline(lines, l);) {
      if (l.starts_with("#define __clang__ ")) clang = true;
      if (l.starts_with("#define __GNUC__ ")) gnu = true;
    }
    if (clang)
      info.family = CompilerFamily::kClang;
    else if (gnu)
      info.family = CompilerFamily::kGcc;
    else
      info.why = "it defines neither __GNUC__ nor __clang__ (GCC or Clang is needed)";
  }
  return known.emplace(id, std::move(info)).first->second;
}

// The compile flags are written in GCC's spelling (and so enter the cache key; the compiler's
// identity is in the key too, and decides the family). Clang's spelling of the same command:
std::vector<std::string> for_family(CompilerFamily family, std::vector<std::string> argv) {
  if (family != CompilerFamily::kClang) return argv;
  std::vector<std::string> out;
  out.reserve(argv.size());
  for (auto& a : argv) {
    // Clang merges identical functions only when asked (-fmerge-functions; its linker ICF is
    // lld's --icf, off by default): kernels keep distinct addresses without a flag.
    if (a == "-fno-ipa-icf") continue;
    // Clang never emits STB_GNU_UNIQUE symbols (its inline variables and template statics are
    // weak, checked with readelf): modules stay unloadable without a flag.
    if (a == "-fno-gnu-unique") continue;
    // Clang accepts and ignores it: LLVM has no non-call exceptions on Linux. A fault thrown
    // from the signal handler (issue 9) still unwinds through frames without cleanups (x86-64
    // unwind tables are asynchronous by default): translated PTX and most CUDA C++ kernels. A
    // kernel frame with cleanups of its own around the faulting access (a local with a
    // destructor, a try block) has no landing pad for that instruction and the unwinder calls
    // std::terminate (docs/performance.md, "Back end: g++ against LLVM (clang++ 14)").
    if (a == "-fnon-call-exceptions") continue;
    // Clang ignores it (its -E leaves the precompiled prelude out of the text altogether).
    if (a == "-fpch-preprocess") continue;
    // GCC's --param=asan-X=N is clang's -mllvm -asan-X=N.
    if (a.starts_with("--param=asan-")) {
      out.emplace_back("-mllvm");
      out.push_back("-" + a.substr(std::string_view("--param=").size()));
      continue;
    }
    out.push_back(std::move(a));
  }
  return out;
}

// Contents of every built-in header (the prelude's identity); computed once.
const std::string& prelude_identity(const std::string& include_dir) {
  static const std::string id = [&] {
    Hasher h;
    std::vector<fs::path> files;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(include_dir, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_regular_file()) files.push_back(it->path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      h.add(f.lexically_relative(include_dir).string());
      h.add(read_file(f));
    }
    return h.digest();
  }();
  return id;
}

constexpr char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string base64(std::string_view in) {
  std::string out;
  out.reserve(in.size() / 3 * 4 + in.size() / 57 + 8);
  std::size_t line = 0;
  for (std::size_t i = 0; i < in.size(); i += 3) {
    const auto b0 = static_cast<unsigned char>(in[i]);
    const auto b1 = i + 1 < in.size() ? static_cast<unsigned char>(in[i + 1]) : 0u;
    const auto b2 = i + 2 < in.size() ? static_cast<unsigned char>(in[i + 2]) : 0u;
    out += kB64[b0 >> 2];
    out += kB64[((b0 & 3u) << 4) | (b1 >> 4)];
    out += i + 1 < in.size() ? kB64[((b1 & 15u) << 2) | (b2 >> 6)] : '=';
    out += i + 2 < in.size() ? kB64[b2 & 63u] : '=';
    if (++line == 19) {  // 76 columns, like MIME
      out += '\n';
      line = 0;
    }
  }
  return out;
}

// Cache entry: "cmx1\n" then length-prefixed fields: log, image, then pairs of lowered names.
std::string serialize(const be::CompileResult& r) {
  std::string s = "cmx1\n";
  auto field = [&](std::string_view f) {
    s += std::to_string(f.size());
    s += '\n';
    s.append(f);
  };
  field(r.log);
  field(std::string_view(r.image.data(), r.image.size()));
  for (const auto& [e, l] : r.lowered_names) {
    field(e);
    field(l);
  }
  return s;
}

bool deserialize(std::string_view s, be::CompileResult& r) {
  if (s.substr(0, 5) != "cmx1\n") return false;
  s.remove_prefix(5);
  std::vector<std::string_view> fields;
  while (!s.empty()) {
    const auto nl = s.find('\n');
    if (nl == std::string_view::npos) return false;
    std::size_t len = 0;
    for (char ch : s.substr(0, nl)) {
      if (ch < '0' || ch > '9') return false;
      len = len * 10 + static_cast<std::size_t>(ch - '0');
    }
    s.remove_prefix(nl + 1);
    if (len > s.size()) return false;
    fields.push_back(s.substr(0, len));
    s.remove_prefix(len);
  }
  if (fields.size() < 2 || fields.size() % 2 != 0) return false;
  r.success = true;
  r.log = std::string(fields[0]);
  r.image.assign(fields[1].begin(), fields[1].end());
  if (r.image.empty() || r.image.back() != '\0') return false;
  r.lowered_names.clear();
  for (std::size_t i = 2; i < fields.size(); i += 2)
    r.lowered_names.emplace_back(std::string(fields[i]), std::string(fields[i + 1]));
  return true;
}

void store_in_cache(const fs::path& file, const std::string& data, spdlog::logger& log) {
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  // Unique temporary in the same folder, then an atomic rename: readers in other processes
  // see either no entry or a complete one.
  std::random_device rd;
  const fs::path tmp =
      file.string() + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(rd());
  if (!write_file(tmp, data)) {
    log.debug("mock compiler: cannot write cache entry {}", tmp.string());
    fs::remove(tmp, ec);
    return;
  }
  if (::rename(tmp.c_str(), file.c_str()) != 0) {
    log.debug("mock compiler: cannot rename cache entry to {}: {}", file.string(),
              std::strerror(errno));
    fs::remove(tmp, ec);
  }
}

// ---- files a program read from disk ---------------------------------------------------------

// The files g++ read for a program (its -MD output), less our own: the program's folder, -I
// folders and the current directory can hold headers the cache key cannot see.
std::vector<std::string> disk_dependencies(const fs::path& deps_file, const fs::path& tmp_dir,
                                           const std::string& include_dir,
                                           const std::string& pch_dir) {
  const std::string text = read_file(deps_file);
  std::vector<std::string> out;
  std::string cur;
  bool target_done = false;
  auto flush = [&] {
    if (cur.empty()) return;
    if (!target_done) {
      target_done = cur.back() == ':';
    } else {
      std::error_code ec;
      const fs::path abs = fs::absolute(cur, ec).lexically_normal();
      const std::string a = abs.string();
      if (!ec && !a.starts_with(tmp_dir.string() + "/") && !a.starts_with(include_dir + "/") &&
          (pch_dir.empty() || !a.starts_with(pch_dir + "/")))
        out.push_back(a);
    }
    cur.clear();
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (ch == '\\' && i + 1 < text.size()) {
      if (text[i + 1] == '\n') {
        ++i;
        flush();
        continue;
      }
      cur += text[++i];  // an escaped space or '#'
      continue;
    }
    if (ch == ' ' || ch == '\t' || ch == '\n') {
      flush();
      continue;
    }
    cur += ch;
  }
  flush();
  return out;
}

// One line per file: size, modification time (ns) and path; empty for a missing file.
std::string stamp_files(const std::vector<std::string>& files) {
  std::string out;
  for (const auto& f : files) {
    struct stat st {};
    if (::stat(f.c_str(), &st) != 0) continue;
    out += std::to_string(st.st_size) + " " +
           std::to_string(st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec) + " " + f + "\n";
  }
  return out;
}

// Whether the files a cached program read are as they were when it was compiled.
bool disk_files_unchanged(const fs::path& stamps_file) {
  std::error_code ec;
  if (!fs::exists(stamps_file, ec)) return true;  // the program read nothing from disk
  std::istringstream in(read_file(stamps_file));
  std::string line;
  std::vector<std::string> files;
  std::string expected;
  while (std::getline(in, line)) {
    const auto a = line.find(' ');
    const auto b = a == std::string::npos ? a : line.find(' ', a + 1);
    if (b == std::string::npos) return false;
    files.push_back(line.substr(b + 1));
    expected += line + "\n";
  }
  return stamp_files(files) == expected;
}

// A precompiled header of the prelude (and ptx_ops.h for code translated from PTX), built once
// per compiler, CPU, headers and flags, in <cache>/mock-pch/: a kernel compiled alone is
// small, so parsing those headers was most of its compile time (docs/performance.md, "PTX
// kernels compiled at first launch", "NVRTC programs: compile time and barrier kernels").
// Returns the header to force-include, or "" when none could be built (the plain prelude
// then). A stale or mismatched .gch is harmless: g++ then reads the header's text. For Clang the
// header is `<header>.pch` (clang's own format, used through -include-pch); Clang refuses a
// stale one rather than reading the text, so the header's folder is keyed on the prelude's
// contents and the .pch records no timestamps (a reinstalled prelude of the same contents
// keeps it valid).
const std::string& cpu_identity();

// NVIDIA's NVRTC passes over an -I naming a file (tinygrad adds `-I$CUDA_PATH/include`, where
// CUDA_PATH may be the library file itself), as it does over a missing folder; g++ refuses the
// first, so such a path is left out rather than failing the compile.
bool searchable_include(const std::string& path) {
  std::error_code ec;
  const auto st = fs::status(path, ec);
  // A file among the path's folders is ENOTDIR, not "missing".
  if (ec) return ec != std::errc::not_a_directory;
  return !fs::exists(st) || fs::is_directory(st);
}

// A private folder under the system's temporary folder, removed with all it holds when this
// goes (a compile's or a link's working files).
struct TempFolder {
  fs::path path;
  TempFolder() = default;
  TempFolder(const TempFolder&) = delete;
  TempFolder& operator=(const TempFolder&) = delete;
  ~TempFolder() {
    std::error_code ec;
    if (!path.empty()) fs::remove_all(path, ec);
  }
  // False (errno set) when the folder cannot be made.
  bool create(std::string_view prefix) {
    std::string tmpl = (fs::temp_directory_path() / (std::string(prefix) + "XXXXXX")).string();
    if (::mkdtemp(tmpl.data()) == nullptr) return false;
    path = tmpl;
    return true;
  }
};

bool gold_available() {
  static const bool yes = [] {
    const char* env = std::getenv("PATH");
    std::istringstream dirs(env != nullptr ? env : "/usr/bin:/bin");
    for (std::string d; std::getline(dirs, d, ':');)
      if (!d.empty() && ::access((fs::path(d) / "ld.gold").c_str(), X_OK) == 0) return true;
    return false;
  }();
  return yes;
}

// `kind` names the header: "ptx" (prelude and ptx_ops.h, for translated PTX) or "nvrtc" (the
// prelude alone, for CUDA C++ programs). `flags` are the compile flags that can change the
// header's meaning (no link flags, no -MD, none of the program's own -D/-U).
std::string ensure_pch(std::string_view kind, const std::string& compiler, CompilerFamily family,
                       const std::string& pch_root, const DeviceFiles& files,
                       const std::vector<std::string>& flags, spdlog::logger& log) {
  static std::mutex mu;  // one build per process at a time; other processes: atomic rename
  std::vector<std::string> cflags;
  for (const auto& f : flags)
    if (f != "-shared" && f != "-MD" && f.rfind("-Wl,", 0) != 0 && f.rfind("-fuse-ld=", 0) != 0)
      cflags.push_back(f);
  const bool ptx = kind == "ptx";
  Hasher h;
  h.add(ptx ? "cudamux-ptx-pch-v1" : "cudamux-nvrtc-pch-v1");
  h.add(compiler_identity(compiler));
  h.add(cpu_identity());
  h.add(prelude_identity(files.include_dir));
  h.add(files.include_dir);
  for (const auto& f : cflags) h.add(f);
  const fs::path dir = fs::path(pch_root) / "mock-pch" / h.digest().substr(0, 24);
  const std::string base = ptx ? "cudamux_ptx_pch.h" : "cudamux_nvrtc_pch.h";
  const fs::path header = dir / base;
  const bool clang = family == CompilerFamily::kClang;
  const fs::path gch = dir / (base + (clang ? ".pch" : ".gch"));
  std::lock_guard lock(mu);
  std::error_code ec;
  if (fs::is_regular_file(gch, ec) && fs::is_regular_file(header, ec)) return header.string();
  fs::create_directories(dir, ec);
  const std::string text = ptx ? "#include \"cudamux/prelude.h\"\n#include \"cudamux/ptx_ops.h\"\n"
                               : "#include \"cudamux/prelude.h\"\n";
  if (!fs::is_regular_file(header, ec)) store_in_cache(header, text, log);
  std::random_device rd;
  const std::string tmp =
      gch.string() + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(rd());
  std::vector<std::string> argv = {compiler};
  argv.insert(argv.end(), cflags.begin(), cflags.end());
  argv.push_back("-I" + files.include_dir);
  argv.push_back("-x");
  argv.push_back("c++-header");
  argv.push_back(header.string());
  argv.push_back("-o");
  argv.push_back(tmp);
  if (clang)
    for (const char* a : {"-Xclang", "-fno-pch-timestamp"}) argv.emplace_back(a);
  const auto t0 = std::chrono::steady_clock::now();
  const Run run = run_process(for_family(family, std::move(argv)));
  if (run.exit_code != 0 || ::rename(tmp.c_str(), gch.c_str()) != 0) {
    log.debug("mock compiler: no precompiled header for {} code: {}", kind,
              run.output.substr(0, 500));
    fs::remove(tmp, ec);
    return {};
  }
  log.debug(
      "mock compiler: precompiled header for {} code built in {:.0f} ms", kind,
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  return header.string();
}

// ---- barrier analysis and loop fission -----------------------------------------------------

// Identifiers through which a barrier or warp collective can be reached (deliberately broad).
bool barrier_ident(std::string_view id) {
  for (std::string_view part :
       {"sync", "activemask", "cudamux_warp_op", "cooperative_groups", "thread_block",
        "tiled_partition", "coalesced", "grid_group", "this_grid", "__shfl", "__ballot", "__any",
        "__all", "__match", "__reduce_", "__uni"}) {
    if (id.find(part) != std::string_view::npos) return true;
  }
  return false;
}

// Identifier tokens of `code` (comments and strings already blanked) in [b, e).
template <class F>
void each_ident(std::string_view code, std::size_t b, std::size_t e, F f) {
  for (std::size_t i = b; i < e;) {
    if (ident_char(code[i]) && (i == 0 || !ident_char(code[i - 1])) &&
        std::isdigit(static_cast<unsigned char>(code[i])) == 0) {
      std::size_t j = i;
      while (j < e && ident_char(code[j])) ++j;
      f(code.substr(i, j - i), i);
      i = j;
    } else {
      ++i;
    }
  }
}

// Built-in and standard headers that define nothing reaching a barrier.
bool safe_header(const std::string& h, bool system_too) {
  static const std::set<std::string> builtin = {"cuda_runtime.h",
                                                "cuda_runtime_api.h",
                                                "cuda_fp16.h",
                                                "cuda_bf16.h",
                                                "cuda_fp8.h",
                                                "math_constants.h",
                                                "device_launch_parameters.h",
                                                "device_functions.h",
                                                "vector_types.h",
                                                "vector_functions.h",
                                                "builtin_types.h",
                                                "sm_20_atomic_functions.h",
                                                "sm_60_atomic_functions.h",
                                                "math.h",
                                                "assert.h",
                                                "cassert",
                                                "cmath",
                                                "cuda_device_runtime_api.h",
                                                "crt/host_defines.h",
                                                "cuda/std/cstdint",
                                                "cuda/std/cstddef",
                                                "cuda/std/type_traits",
                                                "cuda/std/limits",
                                                "cuda/std/utility",
                                                "cuda/std/climits",
                                                "cuda/std/cfloat"};
  static const std::set<std::string> system = {
      "cstdint", "stdint.h", "cstddef", "stddef.h",    "cstdio",  "stdio.h", "climits", "limits.h",
      "cfloat",  "float.h",  "limits",  "type_traits", "utility", "cstdlib", "stdlib.h"};
  return builtin.count(h) != 0 || (system_too && system.count(h) != 0);
}

struct ProgramFacts {
  bool barrier_safe = true;         // barriers/collectives appear only inside scanned kernel bodies
  bool fission_safe = true;         // no macro hides control flow (return/goto/break/continue)
  bool thread_idx_outside = false;  // threadIdx or assert used outside kernel bodies
  std::vector<std::string> uniform_macros;  // object-like macros with constant bodies
};

// ---- the preprocessed translation unit -------------------------------------------------------

// A GNU line marker (`# N "file" flags`) of g++ -E's output, or nullopt for any other line.
struct LineMarker {
  unsigned line = 0;
  std::string quoted_file;  // as written, quotes and escapes included
  bool enter = false;       // flag 1: the start of an included file
  bool leave = false;       // flag 2: back in the including file
};

std::optional<LineMarker> line_marker(std::string_view l) {
  if (l.size() < 5 || l[0] != '#' || l[1] != ' ' ||
      std::isdigit(static_cast<unsigned char>(l[2])) == 0)
    return std::nullopt;
  LineMarker m;
  std::size_t i = 2;
  while (i < l.size() && std::isdigit(static_cast<unsigned char>(l[i])) != 0)
    m.line = m.line * 10 + static_cast<unsigned>(l[i++] - '0');
  if (i + 1 >= l.size() || l[i] != ' ' || l[i + 1] != '"') return std::nullopt;
  const std::size_t open = ++i;
  for (++i; i < l.size() && l[i] != '"'; ++i)
    if (l[i] == '\\') ++i;
  if (i >= l.size()) return std::nullopt;
  m.quoted_file = std::string(l.substr(open, i - open + 1));
  for (std::size_t f = i + 1; f < l.size(); ++f) {
    if (l[f] == '1' && l[f - 1] == ' ') m.enter = true;
    if (l[f] == '2' && l[f - 1] == ' ') m.leave = true;
  }
  return m;
}

std::string unquote(std::string_view q) {
  std::string out;
  for (std::size_t i = 1; i + 1 < q.size(); ++i) {
    if (q[i] == '\\' && i + 2 < q.size()) ++i;
    out += q[i];
  }
  return out;
}

// g++ -E's output less the prelude's own text: the prelude is force-included again (from its
// precompiled header) when the result is compiled. Drops the region of the file `prelude`
// entered from the command line (and what it includes) and a `#pragma GCC pch_preprocess`.
std::string strip_prelude(const std::string& pp, const std::string& prelude) {
  std::string out;
  out.reserve(pp.size());
  int skip_depth = 0;  // > 0 inside the prelude's region
  std::size_t at = 0;
  while (at < pp.size()) {
    std::size_t nl = pp.find('\n', at);
    if (nl == std::string::npos) nl = pp.size();
    const std::string_view l(pp.data() + at, nl - at);
    bool keep = skip_depth == 0;
    if (const auto m = line_marker(l)) {
      if (skip_depth > 0) {
        if (m->enter) ++skip_depth;
        if (m->leave) --skip_depth;
        keep = false;
      } else if (m->enter && unquote(m->quoted_file) == prelude) {
        skip_depth = 1;
        keep = false;
      }
    } else if (l.starts_with("#pragma GCC pch_preprocess")) {
      keep = false;
    }
    if (keep) {
      out.append(l);
      out += '\n';
    }
    at = nl + 1;
  }
  return out;
}

// Whether `offset` of `src` lies in a preprocessing directive: its logical line (backslash
// continuations joined) starts with `#`.
bool in_directive(const std::string& src, std::size_t offset) {
  std::size_t start = offset;
  while (start > 0 && !(src[start - 1] == '\n' && (start < 2 || src[start - 2] != '\\'))) --start;
  const auto first = src.find_first_not_of(" \t", start);
  return first != std::string::npos && first < offset && src[first] == '#';
}

// Whether `src` holds a preprocessing directive: a line whose first token (comments blanked)
// is `#`, or the digraph `%:` anywhere (conservatively).
bool has_directives(const std::string& src) {
  const std::string c = code_view(src, true);
  if (c.find("%:") != std::string::npos) return true;
  bool line_start = true;
  for (const char ch : c) {
    if (ch == '\n') {
      line_start = true;
    } else if (ch != ' ' && ch != '\t' && ch != '\r' && ch != '\f' && ch != '\v') {
      if (line_start && ch == '#') return true;
      line_start = false;
    }
  }
  return false;
}

// The file and line of `offset` in a preprocessed text, from the line marker before it.
std::pair<std::string, unsigned> pp_location(const std::string& pp, std::size_t offset) {
  std::string file = "\"\"";
  unsigned line = 1;
  std::size_t at = 0;
  while (at < offset && at < pp.size()) {
    std::size_t nl = pp.find('\n', at);
    if (nl == std::string::npos) nl = pp.size();
    if (const auto m = line_marker(std::string_view(pp.data() + at, nl - at))) {
      file = m->quoted_file;
      line = m->line;
    } else if (nl < offset) {
      ++line;
    }
    at = nl + 1;
  }
  return {file, line};
}

// Inline PTX of a preprocessed translation unit (issue 18), translated in that text, where
// macros are expanded and every template is whole (CUB builds its `ld.global.nc` loads by
// stringizing a macro argument, `"ld." #ptx_modifier ".u64 %0, [%1];"`): the statements of the
// program, of the headers given to nvrtcCreateProgram, the built-in headers and those found in
// the program's folder or its -I folders (NVIDIA's CCCL: cuda::ptx, atomics, CUB's shuffles and
// loads) become calls of functions translated by the PTX front end, as one module whose C++
// goes before the text. Statements in the host compiler's own folders (x86 asm, asm labels of
// glibc) stay as written. `roots`: the folders above, absolute. The text keeps its line count
// and markers, so that messages name the user's lines. Returns the number of statements
// translated.
std::size_t translate_preprocessed_asm(std::string& pp, const std::string& program_name,
                                       const std::vector<fs::path>& roots, spdlog::logger& log) {
  struct Region {
    std::size_t begin;  // offset of the line after the marker
    std::string quoted_file;
    unsigned line;
  };
  std::vector<Region> regions;
  for (std::size_t at = 0; at < pp.size();) {
    std::size_t nl = pp.find('\n', at);
    if (nl == std::string::npos) nl = pp.size();
    if (const auto m = line_marker(std::string_view(pp.data() + at, nl - at)))
      regions.push_back(Region{nl + 1, m->quoted_file, m->line});
    at = nl + 1;
  }
  std::map<std::string, bool> file_rewritable;  // by quoted name: a few hundred files
  auto rewritable_file = [&](const std::string& quoted) {
    const auto [it, added] = file_rewritable.try_emplace(quoted, false);
    if (!added) return it->second;
    const std::string f = unquote(quoted);
    bool ok = f == program_name;
    if (!ok && !f.empty() && f[0] != '<') {
      // Relative: from a relative -I folder or the program's folder (the compiler's own
      // folders are absolute).
      ok = f[0] != '/';
      for (std::size_t r = 0; !ok && r < roots.size(); ++r) {
        const fs::path rel = fs::path(f).lexically_normal().lexically_relative(roots[r]);
        ok = !rel.empty() && *rel.begin() != "..";
      }
    }
    return it->second = ok;
  };
  auto region_of = [&](std::size_t offset) -> const Region* {
    const auto it = std::upper_bound(regions.begin(), regions.end(), offset,
                                     [](std::size_t o, const Region& r) { return o < r.begin; });
    return it == regions.begin() ? nullptr : &*std::prev(it);
  };
  auto rewritable = [&](std::size_t offset) {
    const Region* r = region_of(offset);
    return r != nullptr && rewritable_file(r->quoted_file);
  };
  const auto t0 = std::chrono::steady_clock::now();
  std::string preamble, error;
  std::vector<UnreadAsm> skipped;
  const std::string before = log.should_log(spdlog::level::debug) ? pp : std::string();
  const std::size_t n = rewrite_inline_asm_where(pp, rewritable, preamble, error, &skipped);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (log.should_log(spdlog::level::debug)) {
    // One line per file: how many statements stay as written, and the first with its reason.
    std::map<std::string, std::pair<std::size_t, std::string>> left;
    for (const auto& u : skipped) {
      const Region* r = region_of(u.offset);
      auto& [count, first] = left[unquote(r->quoted_file)];
      if (count++ != 0) continue;
      const auto lines = std::count(before.begin() + static_cast<std::ptrdiff_t>(r->begin),
                                    before.begin() + static_cast<std::ptrdiff_t>(u.offset), '\n');
      first = "line " + std::to_string(r->line + static_cast<unsigned>(lines)) + ": " + u.why;
    }
    for (const auto& [file, info] : left)
      log.debug("mock compiler: {}: {} inline PTX statement(s) left as written (first: {})", file,
                info.first, info.second);
  }
  if (n == 0) {
    log.debug("mock compiler: inline PTX of the preprocessed program not translated{}{}",
              error.empty() ? "" : ": ", error);
    return 0;
  }
  pp = std::string(kQuietBegin) + "# 1 \"<inline PTX>\"\n" + preamble + "\n" +
       std::string(kQuietEnd) + pp;
  log.debug(
      "mock compiler: {} inline PTX statement(s) of the preprocessed program translated in "
      "{:.0f} ms ({} KiB of text)",
      n, ms, pp.size() / 1024);
  return n;
}

// The facts of a preprocessed translation unit (`code`: its code_view): identifiers outside
// kernel bodies in the program's text and the headers it included, less the regions of
// built-in headers known to define nothing that reaches a barrier (safe_header). Macros are
// expanded already, so none can hide control flow or a barrier.
ProgramFacts pp_facts(const std::string& pp, const std::string& code,
                      const std::vector<std::pair<std::size_t, std::size_t>>& bodies,
                      const std::string& include_dir) {
  ProgramFacts facts;
  const std::string builtin_root = include_dir + "/";
  int skip_depth = 0;
  std::size_t at = 0;
  auto in_body = [&](std::size_t o) {
    for (const auto& [b, e] : bodies)
      if (o > b && o < e) return true;
    return false;
  };
  while (at < pp.size()) {
    std::size_t nl = pp.find('\n', at);
    if (nl == std::string::npos) nl = pp.size();
    if (const auto m = line_marker(std::string_view(pp.data() + at, nl - at))) {
      if (skip_depth > 0) {
        if (m->enter) ++skip_depth;
        if (m->leave) --skip_depth;
      } else if (m->enter) {
        const std::string f = unquote(m->quoted_file);
        if (f.starts_with(builtin_root) &&
            safe_header(f.substr(builtin_root.size()), /*system_too=*/false))
          skip_depth = 1;
      }
    } else if (skip_depth == 0) {
      each_ident(code, at, nl, [&](std::string_view id, std::size_t o) {
        if (in_body(o)) return;
        if (id == "threadIdx" || id == "assert" || id == "cudamux_threadIdx" ||
            id == "cudamux_assert_fail")
          facts.thread_idx_outside = true;
        if (barrier_ident(id)) facts.barrier_safe = false;
      });
    }
    at = nl + 1;
  }
  return facts;
}

// Decides each kernel's flags and builds the fissioned twins (appended to `twins`).
// `src` is the preprocessed translation unit (line markers name the user's files), `code` its
// code_view.
void analyse_kernels(const std::string& src, const std::string& code,
                     std::vector<KernelDecl>& kernels, const std::string& include_dir,
                     bool allow_fission, bool allow_flat, std::string& twins, spdlog::logger& log) {
  // A declaration without body takes its definition's body (the registration uses the first).
  for (auto& k : kernels) {
    if (k.body_b != std::string::npos) continue;
    for (const auto& d : kernels)
      if (d.body_b != std::string::npos && d.name == k.name && d.ns == k.ns &&
          d.params == k.params) {
        k.body_b = d.body_b;
        k.body_e = d.body_e;
      }
  }
  std::vector<std::pair<std::size_t, std::size_t>> bodies;
  for (const auto& k : kernels)
    if (k.body_b != std::string::npos) bodies.emplace_back(k.body_b, k.body_e);
  const ProgramFacts facts = pp_facts(src, code, bodies, include_dir);
  if (!facts.barrier_safe) {
    log.debug(
        "mock compiler: barriers may be reached outside kernel bodies: all kernels use fibers");
    return;
  }
  int twin_index = 0;
  for (auto& k : kernels) {
    if (k.body_b == std::string::npos) continue;
    bool barriers = false;
    bool only_syncthreads = true;
    each_ident(code, k.body_b, k.body_e, [&](std::string_view id, std::size_t) {
      if (!barrier_ident(id)) return;
      barriers = true;
      if (id != "__syncthreads" && id != "__syncthreads_count" && id != "__syncthreads_and" &&
          id != "__syncthreads_or")
        only_syncthreads = false;
    });
    if (!barriers) {
      k.flags = CUDAMUX_KERNEL_NO_BARRIERS;
      // A flat twin: the body as written in a function taking threadIdx by value. Only when no
      // code outside kernel bodies reads the global threadIdx (nor assert, whose message does).
      bool asserts = false;
      each_ident(code, k.body_b, k.body_e, [&](std::string_view id, std::size_t) {
        asserts = asserts || id == "assert" || id == "cudamux_threadIdx";
      });
      if (!facts.thread_idx_outside && !asserts && allow_flat) {
        const std::string name = "__cmx_flat_" + std::to_string(twin_index++);
        const bool no_params = k.params.empty() || k.params == "void";
        std::string open;
        std::string close;
        for (const auto& n : k.ns) {
          open += n.empty() ? "namespace { " : "namespace " + n + " { ";
          close += "} ";
        }
        const auto [file, line] = pp_location(src, k.body_b);
        twins += open + "\nstatic __attribute__((always_inline)) inline void " + name +
                 "(const uint3 threadIdx" + (no_params ? std::string() : ", " + k.params) +
                 ")\n#line " + std::to_string(line) + " " + file + "\n" +
                 src.substr(k.body_b, k.body_e - k.body_b + 1) + "\n" + close + "\n";
        k.flags |= CUDAMUX_KERNEL_FLAT;
        k.twin = name;
        log.debug("mock compiler: kernel {} runs flat (threadIdx as a parameter)", k.name);
      }
      continue;
    }
    if (!only_syncthreads || !facts.fission_safe || !allow_fission) continue;
    // Directives inside the body (#if ...) would be lost by the statement copy: refuse.
    bool directives = false;
    {
      std::istringstream body(src.substr(k.body_b, k.body_e - k.body_b));
      for (std::string line; std::getline(body, line);) {
        const auto f = line.find_first_not_of(" \t");
        if (f == std::string::npos || line[f] != '#' || line.find("pragma") != std::string::npos)
          continue;
        // The preprocessor's line markers (`# 12 "prog.cu"`) are no directive.
        const auto g = line.find_first_not_of(" \t", f + 1);
        if (g != std::string::npos && std::isdigit(static_cast<unsigned char>(line[g]))) continue;
        directives = true;
      }
    }
    if (directives) continue;
    FissionInput in;
    in.body = std::string_view(src).substr(k.body_b + 1, k.body_e - k.body_b - 1);
    in.body_code = std::string_view(code).substr(k.body_b + 1, k.body_e - k.body_b - 1);
    in.params = k.params;
    in.uniform_macros = facts.uniform_macros;
    const auto [file, line] = pp_location(src, k.body_b);
    in.file = file;
    in.first_line = line;
    in.twin_name = "__cmx_twin_" + std::to_string(twin_index++);
    // Code outside kernel bodies (helpers, operators, macros) that names threadIdx or assert
    // could read the global threadIdx from any region.
    in.thread_idx_read_outside = facts.thread_idx_outside;
    const FissionResult r = fission(in);
    if (!r.ok) {
      log.debug("mock compiler: kernel {} keeps fibers: {}", k.name, r.reason);
      continue;
    }
    std::string open;
    std::string close;
    for (const auto& n : k.ns) {
      open += n.empty() ? "namespace { " : "namespace " + n + " { ";
      close += "} ";
    }
    twins += open + "\n" + r.code + "\n" + close + "\n";
    k.flags = CUDAMUX_KERNEL_NO_BARRIERS | CUDAMUX_KERNEL_PER_BLOCK;
    k.twin = in.twin_name;
    log.debug("mock compiler: kernel {} runs fissioned at its barriers", k.name);
  }
}

// The headers given to nvrtcCreateProgram, kept once per content for the process; each
// compile's folder gets hard links to them. Jitify (CuPy's `jitify=True`) compiles a program
// again and again, one more of CCCL's headers given each round until none is missing (hundreds
// of rounds, each with every header found so far); written anew every round, the headers'
// files made most of a round's time the kernel's (ext4's inode allocation scanning the inodes
// the round before had freed: ~46% of the process's samples, perf, 2026-11-27), and the
// dynamic-shared rewrite ran on every header again. A link allocates no inode, and the rewrite
// runs once per distinct text. Linking fails only where the store cannot be made or lies on
// another file system; the header is then written as before.
class GivenHeaderStore {
 public:
  GivenHeaderStore() = default;
  GivenHeaderStore(const GivenHeaderStore&) = delete;
  GivenHeaderStore& operator=(const GivenHeaderStore&) = delete;
  ~GivenHeaderStore() {
    // A forked child (Python's multiprocessing) exits with its parent's copy of this object:
    // the folder is the creating process's to remove.
    if (dir_.empty() || ::getpid() != owner_) return;
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // Places the given header `text` at `target` (its folders exist), rewritten for the mock.
  void place(const fs::path& target, const std::string& text) {
    Hasher h;
    h.add(text);
    const std::string digest = h.digest();
    fs::path stored;
    {
      std::lock_guard lock(mu_);
      if (dir_.empty() && !tried_) {
        tried_ = true;
        std::string tmpl = (fs::temp_directory_path() / "cudamux-nvrtc-given-XXXXXX").string();
        if (::mkdtemp(tmpl.data()) != nullptr) {
          dir_ = tmpl;
          owner_ = ::getpid();
        }
      }
      if (!dir_.empty()) {
        stored = dir_ / digest;
        if (!stored_.contains(digest)) {
          if (write_file(stored, rewrite_dynamic_shared(text)))
            stored_.insert(digest);
          else
            stored.clear();
        }
      }
    }
    if (!stored.empty() && ::link(stored.c_str(), target.c_str()) == 0) return;
    write_file(target, rewrite_dynamic_shared(text));
  }

 private:
  std::mutex mu_;
  fs::path dir_;
  pid_t owner_ = 0;
  bool tried_ = false;
  std::set<std::string> stored_;  // digests of the texts in dir_
};

GivenHeaderStore& given_header_store() {
  static GivenHeaderStore store;
  return store;
}

// The text of the mock's own stand-in for a toolkit header given to nvrtcCreateProgram under
// its name (`cuda_runtime_api.h`, `vector_types.h`, ...), or "" for other names. Jitify gives
// the toolkit's headers that the mock's compile reports missing: CCCL includes
// `cuda_runtime_api.h`, which it skips under NVIDIA's NVRTC but not under the mock's g++, and
// the toolkit's host declarations (`cudaDeviceSynchronize(void)` against Jitify's own
// `#define cudaDeviceSynchronize()`) do not compile as device code. The stand-ins take their
// place, as they take the place of the toolkit's headers in `-I` folders. Standard C/C++
// headers and CCCL (`cuda/...`) are not replaced: Jitify's and the given CCCL are meant.
std::string toolkit_stand_in(const std::string& name, const std::string& include_dir) {
  const fs::path rel = fs::path(name).lexically_normal();
  const std::string n = rel.generic_string();
  if (rel.is_absolute() || n.empty() || n.starts_with("..") || n.starts_with("cuda/") ||
      n.starts_with("cudamux/"))
    return {};
  static constexpr std::array<std::string_view, 4> kStandard = {"assert.h", "cassert", "cmath",
                                                                "math.h"};
  if (std::find(kStandard.begin(), kStandard.end(), n) != kStandard.end()) return {};
  std::error_code ec;
  const fs::path builtin = fs::path(include_dir) / rel;
  if (!fs::is_regular_file(builtin, ec)) return {};
  return read_file(builtin);
}

// A given header `cuda/std/__cccl/compiler.h` (Jitify gives CuPy's CCCL headers so) would be
// found before the built-in wrapper of that name (given headers are searched first), and CCCL
// would then take the mock's g++ for no CUDA compiler at all ("CUDA compiler and CUDA toolkit
// headers are incompatible"). The given header is kept beside, as compiler.h.given, and the
// wrapper takes its place, including it where the built-in one has its #include_next.
void write_given_cccl_compiler_h(const fs::path& given_dir, const be::CompileRequest& request,
                                 const std::string& include_dir) {
  static constexpr std::string_view kName = "cuda/std/__cccl/compiler.h";
  static constexpr std::string_view kNext = "#include_next <cuda/std/__cccl/compiler.h>";
  const bool given = std::any_of(request.headers.begin(), request.headers.end(),
                                 [](const auto& p) { return p.first == kName; });
  if (!given) return;
  std::string wrapper = read_file(fs::path(include_dir) / kName);
  const std::size_t at = wrapper.find(kNext);
  if (at == std::string::npos) return;  // no wrapper installed: the given header as it is
  wrapper.replace(at, kNext.size(), "#include \"compiler.h.given\"");
  const fs::path target = given_dir / kName;
  std::error_code ec;
  fs::rename(target, target.string() + ".given", ec);
  if (!ec) write_file(target, wrapper);
}

// The host CPU, for the cache key: modules are built with -march=native.
const std::string& cpu_identity() {
  static const std::string id = [] {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    std::string out;
    while (std::getline(in, line) && !line.empty()) {
      if (line.rfind("vendor_id", 0) == 0 || line.rfind("cpu family", 0) == 0 ||
          line.rfind("model", 0) == 0 || line.rfind("flags", 0) == 0)
        out += line + "\n";
    }
    return out;
  }();
  return id;
}

// The macros NVIDIA's NVRTC 13.0 predefines from its options (measured; docs/conformance.md,
// "NVRTC"). The option-independent ones are in the prelude.
std::vector<std::string> nvrtc_macros(const be::CompileOptions& o) {
  bool fast = false;
  std::optional<bool> ftz;
  std::optional<bool> prec_div;
  std::optional<bool> prec_sqrt;
  bool int128 = false;
  bool ewp = false;
  std::string arch_variant;  // "a" or "f" of sm_90a / sm_100f
  for (const auto& e : o.extra) {
    auto boolean = [&](std::string_view opt, std::optional<bool>& v) {
      if (e.starts_with(opt)) v = e.substr(opt.size()) == "true";
    };
    if (e == "--use_fast_math") fast = true;
    boolean("--ftz=", ftz);
    boolean("--prec-div=", prec_div);
    boolean("--prec-sqrt=", prec_sqrt);
    if (e == "--device-int128") int128 = true;
    if (e == "--extensible-whole-program") ewp = true;
    if (e.starts_with("--gpu-architecture=") && !e.empty()) arch_variant = e.substr(e.size() - 1);
  }
  // --use_fast_math implies --ftz=true --prec-div=false --prec-sqrt=false.
  const auto flag = [](bool b) { return b ? "1" : "0"; };
  std::vector<std::string> d = {
      std::string("-D__USE_FAST_MATH__=") + flag(fast),
      std::string("-D__CUDA_FTZ=") + flag(ftz.value_or(fast)),
      std::string("-D__CUDA_PREC_DIV=") + flag(prec_div.value_or(!fast)),
      std::string("-D__CUDA_PREC_SQRT=") + flag(prec_sqrt.value_or(!fast)),
  };
  if (o.relocatable) d.emplace_back("-D__CUDACC_RDC__=1");
  if (o.device_debug) d.emplace_back("-D__CUDACC_DEBUG__=1");
  if (int128) d.emplace_back("-D__CUDACC_RTC_INT128__=1");
  if (ewp) d.emplace_back("-D__CUDACC_EWP__=1");
  const int arch = o.arch != 0 ? o.arch : 75;
  if (arch_variant == "a") {
    d.push_back("-D__CUDA_ARCH_SPECIFIC__=" + std::to_string(arch * 10));
    d.push_back("-D__CUDA_ARCH_FEAT_SM" + std::to_string(arch) + "_ALL=1");
  } else if (arch_variant == "f") {
    d.push_back("-D__CUDA_ARCH_FAMILY_SPECIFIC__=" + std::to_string(arch * 10));
  }
  return d;
}

}  // namespace

const std::string& host_cpu_tag() {
  static const std::string tag = [] {
    Hasher h;
    h.add(cpu_identity());
    return h.digest().substr(0, 16);
  }();
  return tag;
}

DeviceFiles device_files() {
  static const DeviceFiles files = [] {
    DeviceFiles f;
    Dl_info info{};
    if (::dladdr(reinterpret_cast<void*>(&device_files), &info) != 0 && info.dli_fname != nullptr) {
      std::error_code ec;
      fs::path plugin = fs::canonical(info.dli_fname, ec);
      if (ec) plugin = info.dli_fname;
      const fs::path root = plugin.parent_path().parent_path();  // lib/cudamux
      f.include_dir = (root / "mock-include").string();
      f.lib_dir = root.string();
      struct stat st {};
      if (::stat(plugin.c_str(), &st) == 0)
        f.plugin_identity =
            plugin.string() + ":" + std::to_string(st.st_size) + ":" + std::to_string(st.st_mtime);
    }
    return f;
  }();
  return files;
}

CompilerSettings compiler_settings(const std::string& config_compiler,
                                   const std::string& config_cache_dir, bool config_fission,
                                   bool config_memcheck) {
  CompilerSettings s;
  s.fission = config_fission;
  if (const char* f = std::getenv("CUDAMUX_MOCK_FISSION"); f != nullptr && *f != '\0')
    s.fission = std::string_view(f) != "0";
  s.memcheck = config_memcheck;
  if (const char* m = std::getenv("CUDAMUX_MEMCHECK"); m != nullptr && *m != '\0')
    s.memcheck = std::string_view(m) != "0";
  // Fissioned code runs its threads between barriers as loops, out of sight of the runtime:
  // memcheck needs every barrier to reach it (hazard hints).
  if (s.memcheck) s.fission = false;
  if (const char* l = std::getenv("CUDAMUX_MOCK_PTX_LAZY"); l != nullptr && *l != '\0')
    s.ptx_lazy = std::string_view(l) != "0";
  if (s.memcheck) s.ptx_lazy = false;
  if (const char* p = std::getenv("CUDAMUX_MOCK_PTX_PCH"); p != nullptr && *p != '\0')
    s.ptx_pch = std::string_view(p) != "0";
  if (const char* p = std::getenv("CUDAMUX_MOCK_PTX_FLAT"); p != nullptr && *p != '\0')
    s.ptx_flat = std::string_view(p) != "0";
  // Memcheck's reports name the thread from the thread-local threadIdx, which flat twins
  // store only for kernels that call out (as the NVRTC path's flat twins, off there too).
  if (s.memcheck) s.ptx_flat = false;
  s.compiler = "g++";
  if (!config_compiler.empty()) s.compiler = config_compiler;
  if (const char* e = std::getenv("CUDAMUX_MOCK_CXX"); e != nullptr && *e != '\0') s.compiler = e;
  if (const char* p = std::getenv("CUDAMUX_MOCK_NVRTC_PCH"); p != nullptr && *p != '\0')
    s.nvrtc_pch = std::string_view(p) != "0";
  if (!config_cache_dir.empty()) {
    s.pch_dir = config_cache_dir;
  } else if (const char* p = std::getenv("CUDA_CACHE_PATH"); p != nullptr && *p != '\0') {
    s.pch_dir = p;
  } else if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x != '\0') {
    s.pch_dir = std::string(x) + "/cudamux";
  } else if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0') {
    s.pch_dir = std::string(h) + "/.cache/cudamux";
  }
  // CUDA_CACHE_DISABLE turns off the cache of compiled programs; the precompiled prelude is
  // part of the toolchain (keyed on compiler, CPU, headers and flags), not a program's result.
  const char* disable = std::getenv("CUDA_CACHE_DISABLE");
  if (disable != nullptr && std::string_view(disable) == "1") return s;
  s.cache_dir = s.pch_dir;
  return s;
}

std::vector<int> MockCompiler::supported_archs() const {
  return {75, 80, 86, 87, 89, 90, 100, 103, 110, 120, 121};
}

be::Status MockCompiler::compile(const be::CompileRequest& request, be::CompileResult& result) {
  return compile_impl(request, result, false);
}

be::Status MockCompiler::compile_generated(const be::CompileRequest& request,
                                           be::CompileResult& result) {
  return compile_impl(request, result, true);
}

be::Status MockCompiler::compile_impl(const be::CompileRequest& request, be::CompileResult& result,
                                      bool generated) {
  result = be::CompileResult{};
  const DeviceFiles files = device_files();
  if (files.include_dir.empty()) {
    log_->error("mock compiler: cannot locate the plugin's folder (dladdr failed)");
    return status(CUDA_ERROR_NOT_FOUND);
  }
  const auto& o = request.options;
  // NVRTC 13.0 compiles for compute_75 when no architecture is named (measured).
  constexpr int kNvrtcDefaultArch = 75;
  const int arch = o.arch != 0 ? o.arch : generated ? kDefaultArch : kNvrtcDefaultArch;
  const std::string name = request.name.empty() ? "default_program" : std::string(request.name);

  std::vector<std::string> flags = {
      // The prelude needs C++17: -std=c++11 / c++14 programs compile as C++17 (__cplusplus
      // then reads 201703L where NVRTC's would say 2011/2014).
      "-std=" + (o.std.empty() || o.std == "c++11" || o.std == "c++14" || o.std == "c++03"
                     ? std::string("c++17")
                     : o.std),
      // -O3 -march=native: thread loops of barrier-free code vectorise across threads (masked
      // stores for `if (i < n)`); the cache key includes the CPU (cpu_identity).
      o.device_debug ? "-O0" : "-O3",
      "-march=native",
      "-fPIC",
      "-shared",
      "-fno-plt",
      "-fno-semantic-interposition",  // lets the thunk inline the (exported) kernel
      "-fno-ipa-icf",                 // identical kernels keep distinct addresses and names
      "-fno-gnu-unique",              // unique symbols would make modules impossible to unload
      "-fno-math-errno",
      "-fno-builtin-printf",  // device printf is ours, never rewritten to puts
      "-U_FORTIFY_SOURCE",
      "-fexceptions",
      // Issue 9: a faulting access in kernel code is turned into a failed launch by throwing
      // from the signal handler; every trapping instruction must be able to unwind.
      "-fnon-call-exceptions",
      o.fmad ? "-ffp-contract=fast" : "-ffp-contract=off",
      "-D__CUDA_ARCH__=" + std::to_string(arch * 10),
      "-D__CUDA_ARCH_LIST__=" + std::to_string(arch * 10),
      "-Wl,-Bsymbolic",
  };
  // Modules link with gold where installed: a kernel compiled alone is a small object, and GNU
  // ld took ~170 ms of a ~350 ms compile to link it (gold ~60 ms; docs/performance.md, "PTX
  // kernels compiled at first launch"; CUDA C++ programs likewise since issue 18).
  if (gold_available()) flags.emplace_back("-fuse-ld=gold");
  // CUDA C++ moves values through pointers of another type (CUB's warp shuffles of a struct as
  // `unsigned` words, vector loads of floats as uint4); NVIDIA's compiler keeps such stores, g++'s
  // type-based alias analysis may drop them (CuPy's CUB float64 max kept lane 0 of each warp).
  // Translated PTX accesses memory only through memcpy, which never breaks aliasing rules.
  if (!generated) flags.emplace_back("-fno-strict-aliasing");
  if (settings_.memcheck) {
    // Every load and store calls a hook first (the prelude defines them, the device runtime
    // checks). Stack and globals need no redzones: the runtime knows those ranges.
    for (const char* f :
         {"-fsanitize=kernel-address", "--param=asan-instrumentation-with-call-threshold=0",
          "--param=asan-stack=0", "--param=asan-globals=0", "-D__CUDAMUX_MEMCHECK__=1"})
      flags.emplace_back(f);
  }
  if (!generated) {
    for (auto& d : nvrtc_macros(o)) flags.push_back(std::move(d));
    // The files the program reads from disk, for the cache (disk_dependencies).
    flags.emplace_back("-MD");
  }
  if (o.device_debug) flags.push_back("-g");
  if (o.line_info && !o.device_debug) flags.push_back("-g1");
  // The program's own macros stay out of the precompiled header (one header serves every
  // program; g++ falls back to the plain text if a macro changes what the header means).
  std::vector<std::string> pch_flags(flags.begin(), flags.end());
  if (!generated) {
    // NVIDIA's NVRTC warns of a local variable declared and never used (EDG's "#177-D: variable
    // was declared but never referenced"; CuPy's tests read it in the log of a successful
    // compile); g++ does only when asked. `-w` (--disable-warnings) silences all of them.
    const bool no_warnings =
        std::find(o.extra.begin(), o.extra.end(), "--disable-warnings") != o.extra.end();
    flags.emplace_back(no_warnings ? "-w" : "-Wunused-variable");
  }
  for (const auto& [k, v] : o.defines) flags.push_back(v.empty() ? "-D" + k : "-D" + k + "=" + v);
  for (const auto& u : o.undefines) flags.push_back("-U" + u);

  // Cache key: everything that can change the image.
  Hasher h;
  h.add("cudamux-mock-cache-v2");
  h.add(generated ? "generated" : "nvrtc");
  h.add(std::to_string(CUDAMUX_DEVICE_ABI));
  h.add(compiler_identity(settings_.compiler));
  h.add(cpu_identity());
  h.add(settings_.fission ? "fission" : "fibers");
  h.add(files.plugin_identity);  // our own code (registration, lowered names) changes too
  h.add(prelude_identity(files.include_dir));
  h.add(name);
  h.add(request.source);
  for (const auto& [hn, hc] : request.headers) {
    h.add(hn);
    h.add(hc);
  }
  for (const auto& f : flags) h.add(f);
  for (const auto& i : o.include_paths) h.add("-I" + i);
  for (const auto& i : o.pre_includes) h.add("-include" + i);
  for (const auto& e : request.name_expressions) h.add("expr:" + e);
  // Relative program names, -I folders and pre-includes are relative to the current directory.
  std::error_code cwd_ec;
  const fs::path cwd = fs::current_path(cwd_ec);
  h.add("cwd:" + cwd.string());
  const std::string key = h.digest();
  // -rdc=true: an object for link_objects, whose kernel table function is named after the
  // compile (two objects of one link never share a name; the same program compiled twice
  // gives the same object, as with NVIDIA's NVRTC).
  const bool relocatable = !generated && o.relocatable;
  const std::string entry =
      relocatable ? "cudamux_object_" + key.substr(0, 24) : std::string(CUDAMUX_MODULE_SYMBOL);
  const fs::path cache_file = settings_.cache_dir.empty()
                                  ? fs::path()
                                  : fs::path(settings_.cache_dir) / "mock" / (key + ".cmx");
  // The disk files the program read when it was cached, with their sizes and times.
  const fs::path stamps_file =
      cache_file.empty() ? fs::path() : fs::path(cache_file.string() + ".files");
  if (!cache_file.empty()) {
    std::error_code ec;
    if (fs::is_regular_file(cache_file, ec) && !disk_files_unchanged(stamps_file)) {
      log_->debug("mock compiler: {}: a header on disk changed since {} was cached", name,
                  cache_file.string());
    } else if (fs::is_regular_file(cache_file, ec)) {
      if (deserialize(read_file(cache_file), result)) {
        ++hits_;
        log_->debug("mock compiler: {}: cache hit {}", name, cache_file.string());
        return be::kOk;
      }
      log_->warn("mock compiler: ignoring damaged cache entry {}", cache_file.string());
      result = be::CompileResult{};
    }
  }

  // Only a compile asks which compiler family it runs (a cache hit needs no compiler).
  const CompilerInfo& compiler = compiler_info(settings_.compiler);
  if (compiler.family == CompilerFamily::kUnusable) {
    // CUDA's answer to a missing PTX JIT; NVRTC's through the policy (core/src/nvrtc.cpp).
    log_->error(
        "mock compiler: '{}' ([mock] compiler, CUDAMUX_MOCK_CXX) is not a usable C++ compiler: "
        "{}",
        settings_.compiler, compiler.why);
    return status(CUDA_ERROR_JIT_COMPILER_NOT_FOUND);
  }
  const CompilerFamily family = compiler.family;

  // A private working folder with the program, its headers and the output.
  TempFolder work;
  if (!work.create("cudamux-nvrtc-")) {
    log_->error("mock compiler: cannot create a temporary folder: {}", std::strerror(errno));
    return status(CUDA_ERROR_OPERATING_SYSTEM);
  }
  const fs::path& dir = work.path;

  // Kernels are analysed on the source as compiled (extern __shared__ rewritten; same lines).
  // Generated sources (PTX translated by ptx/) carry their own kernel table and #lines.
  std::string src =
      generated ? std::string(request.source) : rewrite_dynamic_shared(std::string(request.source));
  const std::string src_as_written = generated ? std::string() : src;  // before the asm rewrite
  // Inline PTX (asm statements) becomes calls of functions translated by the PTX front end.
  std::string asm_preamble;
  // Set when the asm statements are translated in the preprocessed text instead
  // (translate_preprocessed_asm): for a program whose own macros build a statement, and for the
  // second compile of a program whose inline PTX reached the assembler.
  bool translate_pp_asm = false;
  if (!generated) {
    std::string asm_error;
    std::vector<UnreadAsm> unread;
    find_asm_statements(src, asm_error, &unread);
    // A statement in a macro definition that the scanner cannot read as written (its template
    // built by stringizing, `"ld." #modifier ".u32 %0, [%1];"`) is whole after preprocessing.
    if (!unread.empty() && std::all_of(unread.begin(), unread.end(), [&](const UnreadAsm& u) {
          return in_directive(src, u.offset);
        })) {
      translate_pp_asm = true;
    } else if (!rewrite_inline_asm(src, asm_preamble, asm_error)) {
      const auto colon = asm_error.find(':');
      result.log =
          name + ":" + asm_error.substr(5, colon == std::string::npos ? 0 : colon - 5) +
          ": error: " + (colon == std::string::npos ? asm_error : asm_error.substr(colon + 2)) +
          "\n";
      result.success = false;
      return be::kOk;
    }
  }
  // CUDA C++ programs are compiled in two steps: g++ -E gives the translation unit as the
  // preprocessor leaves it (conditionals taken, headers included, macros expanded; line markers
  // name the user's files), kernels are found and analysed in that text, and that same text,
  // with the kernels' twins and registration appended, is compiled. Scanning the source as
  // written missed kernels after an `#if`/`#else` whose branches each open a brace (CuPy's
  // partition kernels), in included headers and produced by macros. `__global__` and
  // `__launch_bounds__` stay as written through the first step (markers_h), the prelude's
  // macros give them their meaning in the second.
  //
  // A program without directives (none in its text, no -D/-U, pre-include or inline PTX) is
  // its own translation unit: only the prelude's macros would be expanded, and none of them
  // makes or hides a kernel, a brace or a namespace. It skips the first step (one g++ run,
  // ~20 ms of a small program's first compile; docs/backends/mock.md).
  const bool plain = !generated && !translate_pp_asm && asm_preamble.empty() &&
                     o.pre_includes.empty() && o.defines.empty() && o.undefines.empty() &&
                     !has_directives(src);
  std::vector<KernelDecl> kernels;
  std::string twins;
  std::string pp;  // the preprocessed translation unit, less the prelude
  auto stage1_text = [&] {
    // Our code (the inline PTX translated before the program, its twins and registration
    // after) warns of nothing: a message there would name no file of the user's.
    return (asm_preamble.empty() ? std::string()
                                 : std::string(kQuietBegin) + "#line 1 \"<inline PTX>\"\n" +
                                       asm_preamble + "\n" + std::string(kQuietEnd)) +
           "#line 1 " + quote(name) + "\n" + src + "\n";
  };
  auto program_text = [&] {
    if (generated) return src;
    return pp + "\n" + std::string(kQuietBegin) + "#line 1 " + quote(kFissionFile) + "\n" + twins +
           "\n#line 1 " + quote(kRegistrationFile) + "\n" +
           registration(kernels, request.name_expressions, entry);
  };
  // In a folder of its own: the compiler's search from the including file's folder finds
  // nothing of ours.
  const fs::path src_file = dir / "src" / "program.cu";
  const fs::path pp_file = dir / "src" / "program.ii";
  const fs::path markers_h = dir / "cudamux_markers.h";
  {
    std::error_code mk;
    fs::create_directories(src_file.parent_path(), mk);
  }
  write_file(src_file, generated ? src : stage1_text());
  std::error_code ec;
  fs::create_directories(dir / "include", ec);
  for (const auto& [hn, hc] : request.headers) {
    const fs::path hp = dir / "include" / hn;
    fs::create_directories(hp.parent_path(), ec);
    const std::string stand_in =
        generated ? std::string() : toolkit_stand_in(hn, files.include_dir);
    given_header_store().place(hp, stand_in.empty() ? hc : stand_in);
  }
  if (!generated) {
    write_file(markers_h,
               "#undef __global__\n#define __global__ __global__\n#undef __launch_bounds__\n"
               "#define __launch_bounds__(...) __launch_bounds__(__VA_ARGS__)\n");
    write_given_cccl_compiler_h(dir / "include", request, files.include_dir);
  }

  std::vector<std::string> argv = {settings_.compiler};
  argv.insert(argv.end(), flags.begin(), flags.end());
  // NVRTC 13.0's search (measured; docs/conformance.md, "NVRTC"): a quoted include looks at
  // the headers given to nvrtcCreateProgram, then the program's folder (its name's folder,
  // relative to the current directory), then the -I folders in order; an angle include at the
  // given headers, then -I. Nothing else: no system or toolkit folder. Ours: the built-in
  // headers (CPU versions of the toolkit's) and the host's standard headers stand in for the
  // toolkit, searched only when the program names include folders, as NVIDIA's must.
  const bool builtins = generated || !o.include_paths.empty();
  const fs::path given_dir = dir / "include";
  if (!generated) {
    argv.push_back("-iquote");
    argv.push_back(given_dir.string());
    fs::path program_dir = fs::path(name).parent_path();
    argv.push_back("-iquote");
    argv.push_back(program_dir.empty() ? std::string(".") : program_dir.string());
  }
  if (builtins) {
    // Built-in headers before the folders the program names: they win over the toolkit's.
    argv.push_back("-I" + files.include_dir);
    // Stand-ins for NVIDIA's CCCL (`cuda/std/...` over the host's standard library), searched
    // last: a program that names a folder holding CCCL (the toolkit's include/cccl, a wheel,
    // CuPy's copy) gets those headers, as with NVIDIA's NVRTC.
    argv.push_back("-idirafter");
    argv.push_back((fs::path(files.include_dir) / "cudamux" / "after").string());
    // CUB redeclares member aliases with the name of the template they alias ("changes meaning
    // of ..."), which NVIDIA's NVRTC (EDG) accepts and g++ 12 refuses unless -fpermissive;
    // only where a named folder holds CUB, so that other programs keep g++'s strict checks.
    for (const auto& i : o.include_paths) {
      std::error_code cub_ec;
      if (fs::exists(fs::path(i) / "cub" / "version.cuh", cub_ec)) {
        argv.emplace_back("-fpermissive");
        break;
      }
    }
  } else {
    // The prelude's own headers only ("cudamux/..."), through a folder holding nothing else.
    std::error_code link_ec;
    fs::create_directories(dir / "prelude", link_ec);
    fs::create_directory_symlink(fs::path(files.include_dir) / "cudamux",
                                 dir / "prelude" / "cudamux", link_ec);
    argv.push_back("-iquote");
    argv.push_back((dir / "prelude").string());
    argv.emplace_back("-nostdinc");
    argv.emplace_back("-nostdinc++");
    // No stdc-predef.h either: the header must be built the same way to be used.
    pch_flags.emplace_back("-nostdinc");
    pch_flags.emplace_back("-nostdinc++");
  }
  argv.push_back("-I" + given_dir.string());
  for (const auto& i : o.include_paths)
    if (searchable_include(i)) argv.push_back("-I" + i);
  argv.push_back("-include");
  // Translated PTX: the prelude and ptx_ops.h precompiled (cached beside the modules).
  // CUDA C++: the prelude precompiled, with the program's flags less its own macros (first
  // compile of a small program: ~60% of g++'s time was parsing the prelude; performance.md).
  std::string pch;
  if (generated && !settings_.pch_dir.empty() && settings_.ptx_pch && o.pre_includes.empty())
    pch = ensure_pch("ptx", settings_.compiler, family, settings_.pch_dir, files, flags, *log_);
  if (!generated && !settings_.pch_dir.empty() && settings_.nvrtc_pch)
    pch =
        ensure_pch("nvrtc", settings_.compiler, family, settings_.pch_dir, files, pch_flags, *log_);
  const std::string prelude_file =
      pch.empty() ? (fs::path(files.include_dir) / "cudamux" / "prelude.h").string() : pch;
  if (!pch.empty() && family == CompilerFamily::kClang) {
    argv.back() = "-include-pch";
    argv.push_back(pch + ".pch");
  } else {
    argv.push_back(prelude_file);
  }
  // A stale header is harmless either way (g++ reads the plain text instead); only code we
  // generate says so, a program's log stays its own.
  if (!pch.empty() && generated) argv.push_back("-Winvalid-pch");
  // The preprocessing step: the compile flags (macros, search folders, -MD for the cache's
  // list of files read), the prelude, the markers and the program's pre-includes.
  std::vector<std::string> pp_argv;
  if (!generated) {
    for (const auto& a : argv)
      if (a != "-shared" && !a.starts_with("-Wl,") && !a.starts_with("-fuse-ld="))
        pp_argv.push_back(a);
    pp_argv.emplace_back("-include");
    pp_argv.push_back(markers_h.string());
    for (const auto& i : o.pre_includes) {
      // A given header of that name first (the compiler would look in the current directory).
      const bool is_given = std::any_of(request.headers.begin(), request.headers.end(),
                                        [&](const auto& p) { return p.first == i; });
      pp_argv.emplace_back("-include");
      pp_argv.push_back(is_given ? (given_dir / i).string() : i);
    }
    // With a precompiled prelude, -E reads it too (and leaves a pragma naming it).
    if (!pch.empty()) pp_argv.emplace_back("-fpch-preprocess");
    for (const char* a : {"-E", "-x", "c++"}) pp_argv.emplace_back(a);
    pp_argv.push_back(src_file.string());
    for (const std::string& a :
         {std::string("-MF"), (dir / "deps.d").string(), std::string("-o"), pp_file.string()})
      pp_argv.push_back(a);
    // The compile step reads the preprocessed text: no -MD (the files were read before).
    std::erase(argv, std::string("-MD"));
  }
  argv.push_back("-x");
  argv.push_back("c++");
  argv.push_back(generated ? src_file.string() : pp_file.string());
  argv.push_back("-x");
  argv.push_back("none");
  argv.push_back("-o");
  if (relocatable) {
    // An object: no link flags; the link (link_objects) adds them and the device runtime.
    std::erase_if(argv, [](const std::string& a) {
      return a == "-shared" || a.starts_with("-Wl,") || a.starts_with("-fuse-ld=");
    });
    argv.insert(argv.end() - 1, "-c");
    argv.push_back((dir / "module.o").string());
  } else {
    argv.push_back((dir / "module.so").string());
    argv.push_back("-L" + files.lib_dir);
    argv.push_back("-lcudamux-device");
  }
  argv = for_family(family, std::move(argv));
  pp_argv = for_family(family, std::move(pp_argv));

  const auto t0 = std::chrono::steady_clock::now();
  std::string pp_log;  // the preprocessing step's messages (#warning), before the compile's
  std::size_t pp_asm_translated = 0;
  std::vector<fs::path> asm_roots;  // folders whose headers' asm is CUDA's (not the host's)
  if (!generated) {
    std::error_code abs_ec;
    for (const std::string& f : {given_dir.string(), files.include_dir})
      asm_roots.push_back(fs::absolute(f, abs_ec).lexically_normal());
    if (fs::path(name).has_parent_path())
      asm_roots.push_back(fs::absolute(fs::path(name).parent_path(), abs_ec).lexically_normal());
    for (const auto& i : o.include_paths)
      asm_roots.push_back(fs::absolute(i, abs_ec).lexically_normal());
  }
  // Preprocesses the program, finds and analyses its kernels and writes the text to compile.
  // False (with `run` holding the messages) when the preprocessor refused the program.
  auto preprocess = [&](Run& run) {
    if (plain) {
      pp = "# 1 " + quote(name) + "\n" + src + "\n";
    } else {
      write_file(src_file, stage1_text());
      run = run_process(pp_argv);
      ++runs_;
      if (run.exit_code != 0) return false;
      pp_log = run.output;
      pp = strip_prelude(read_file(pp_file), prelude_file);
    }
    if (translate_pp_asm)
      pp_asm_translated = translate_preprocessed_asm(pp, name, asm_roots, *log_);
    // Dynamic parallelism: kernel launches in device code become device-runtime calls.
    if (const auto n = rewrite_device_launches(pp, code_view(pp)); n > 0)
      log_->debug("mock compiler: {}: {} device-side launch(es)", name, n);
    const std::string code = code_view(pp);
    kernels = scan_kernels(code);
    twins.clear();
    // Memcheck reports and hazard hints read the running thread's index from the runtime: no
    // flat twins (they take threadIdx as a parameter) in that mode.
    analyse_kernels(pp, code, kernels, files.include_dir, settings_.fission, !settings_.memcheck,
                    twins, *log_);
    write_file(pp_file, program_text());
    return true;
  };
  Run run;
  if (generated || preprocess(run)) {
    run = run_process(argv);
    ++runs_;
    run.output = pp_log + run.output;
  }
  // The assembler met PTX that g++ passed through (`: Error: no such instruction`), or g++ met
  // a PTX operand constraint it has no x86 meaning for ("h": 16-bit register): inline PTX of
  // headers (NVIDIA's CCCL: cuda::ptx, atomics, CUB's shuffles and loads) or made by macros,
  // which the rewrite of the program's own text (above) cannot see. The program is
  // preprocessed again as written and every asm statement of the result translated
  // (translate_preprocessed_asm); compiled again when any was.
  if (run.exit_code > 0 && run.exit_code < 128 && !generated && !translate_pp_asm &&
      (run.output.find(": Error: ") != std::string::npos ||
       run.output.find("impossible constraint in") != std::string::npos ||
       // Clang's words: its integrated assembler's messages name "<inline asm>".
       run.output.find("<inline asm>:") != std::string::npos ||
       run.output.find("invalid output constraint") != std::string::npos ||
       run.output.find("invalid input constraint") != std::string::npos)) {
    // What the first compile read, for the fission retry below if nothing is translated.
    auto first_pp = pp;
    auto first_kernels = kernels;
    auto first_twins = twins;
    src = src_as_written;
    asm_preamble.clear();
    translate_pp_asm = true;
    Run again;
    if (!preprocess(again)) {
      run = again;  // not expected: the same program was preprocessed before
    } else if (pp_asm_translated > 0) {
      run = run_process(argv);
      ++runs_;
      run.output = pp_log + run.output;
    } else {
      pp = std::move(first_pp);
      kernels = std::move(first_kernels);
      twins = std::move(first_twins);
      write_file(pp_file, program_text());
    }
  }
  if (run.exit_code > 0 && run.exit_code < 128 && !twins.empty()) {
    // The fission transform is checked by the compiler: a twin that does not compile (our
    // parser misread something) is dropped and the program compiled as written, so the log
    // and the outcome are the program's own.
    log_->debug("mock compiler: {}: fissioned code did not compile; retrying without fission",
                name);
    twins.clear();
    for (auto& k : kernels) {
      // Fissioned kernels go back to fibers; flat ones keep running without them.
      if (!k.twin.empty())
        k.flags = (k.flags & CUDAMUX_KERNEL_FLAT) != 0 ? unsigned{CUDAMUX_KERNEL_NO_BARRIERS} : 0u;
      k.twin.clear();
    }
    write_file(generated ? src_file : pp_file, program_text());
    run = run_process(argv);
    ++runs_;
    run.output = pp_log + run.output;
  }
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  result.log = rewrite_log(run.output, dir.string(), files.include_dir);
  if (run.exit_code < 0 || run.exit_code >= 128) {
    log_->error("mock compiler: {} failed to run: {}", settings_.compiler, run.output);
    return status(CUDA_ERROR_OPERATING_SYSTEM);
  }
  if (run.exit_code != 0) {
    // A kernel launch in device code (dynamic parallelism) that rewrite_device_launches could
    // not turn into a device-runtime call (a kernel reached through a pointer, a launch it
    // cannot read): g++ says only "expected primary-expression before '<'" or names our
    // device_launch.
    if (!generated && code_view(src_as_written).find("<<<") != std::string::npos &&
        (run.output.find("device_launch") != std::string::npos ||
         run.output.find("before '<' token") != std::string::npos)) {
      result.log += name +
                    ": error: a kernel launch in device code (<<<...>>>, dynamic parallelism) "
                    "that cudamux's mock backend cannot run: it launches kernels named directly "
                    "(kernel<<<grid, block[, shared[, stream]]>>>(args), template arguments "
                    "included), not through pointers\n";
      static std::once_flag once;
      std::call_once(once, [&] {
        log_->warn("mock compiler: {}: a kernel launch in device code the mock cannot run", name);
      });
    }
    // The log's head: a program compiled by a library (Jitify, CuPy's own routines) may give
    // its user only "compilation failed".
    constexpr std::size_t kLogHead = 4000;
    log_->debug("mock compiler: {}: compilation failed ({:.0f} ms):\n{}", name, ms,
                std::string_view(result.log).substr(0, kLogHead));
    result.success = false;
    return be::kOk;
  }
  log_->debug("mock compiler: {}: {} kernel(s) compiled in {:.0f} ms", name, kernels.size(), ms);

  const std::string so = read_file(dir / (relocatable ? "module.o" : "module.so"));
  std::string image =
      std::string(relocatable ? kObjectHeader : kImageHeader) + " arch=" + std::to_string(arch) +
      " program=" + std::to_string(request.source.size()) + " cpu=" + host_cpu_tag() +
      (relocatable ? " entry=" + entry : "") + "\n" + base64(so) + "\n";
  result.image.assign(image.begin(), image.end());
  result.image.push_back('\0');

  // Lowered names of the name expressions: the symbols the instantiations got. An object
  // is linked alone to read them; one that needs another object's symbols to load keeps the
  // expressions as written.
  if (!request.name_expressions.empty()) {
    std::unique_ptr<be::Module> module;
    std::vector<char> linked;
    std::string link_log;
    be::Status st = be::kOk;
    if (relocatable) {
      st = link_objects({std::string_view(result.image.data())}, linked, link_log);
      if (st.ok()) st = load_module_image(linked.data(), *log_, module);
    } else {
      st = load_module_image(result.image.data(), *log_, module);
    }
    if (!st.ok() && relocatable) {
      for (const auto& e : request.name_expressions) result.lowered_names.emplace_back(e, e);
      module.reset();
    } else if (!st.ok()) {
      log_->error("mock compiler: {}: the compiled module does not load", name);
      return st;
    }
    for (const auto& e : request.name_expressions) {
      if (module == nullptr) break;
      std::string lowered = lowered_name(*module, e);
      if (lowered.empty()) lowered = e;
      result.lowered_names.emplace_back(e, lowered);
    }
  }
  result.success = true;
  if (!cache_file.empty()) {
    // The stamps go first: an entry is never seen without them.
    const auto deps =
        generated ? std::vector<std::string>{}
                  : disk_dependencies(dir / "deps.d", dir, files.include_dir,
                                      settings_.pch_dir.empty() ? std::string()
                                                                : settings_.pch_dir + "/mock-pch");
    std::error_code rm_ec;
    if (deps.empty())
      fs::remove(stamps_file, rm_ec);
    else
      store_in_cache(stamps_file, stamp_files(deps), *log_);
    store_in_cache(cache_file, serialize(result), *log_);
  }
  return be::kOk;
}

namespace {

// NVIDIA's linker log for ld's "partN.o:...: undefined reference to '_Z1Zv'" lines: one
// "error   : Undefined reference to '_Z1Zv' in '<input name>'" per symbol and input, in the
// order ld reported them. Empty when ld said nothing of that kind.
std::string nvidia_style_undefined(const std::string& ld_output,
                                   const std::vector<std::string>& names) {
  std::string out;
  std::set<std::string> seen;
  std::istringstream lines(ld_output);
  for (std::string line; std::getline(lines, line);) {
    constexpr std::string_view kMarker = "undefined reference to ";
    const auto at = line.find(kMarker);
    if (at == std::string::npos || at + kMarker.size() + 2 > line.size()) continue;
    const std::size_t from = at + kMarker.size() + 1;  // after the opening quote (` or ')
    const auto to = line.find('\'', from);
    if (to == std::string::npos) continue;
    const std::string symbol = line.substr(from, to - from);
    // The object: ".../partN.o:" at the start of the line.
    std::string input;
    if (const auto dot_o = line.find(".o:"); dot_o != std::string::npos) {
      const auto part = line.rfind("part", dot_o);
      if (part != std::string::npos && part < dot_o) {
        const std::string digits = line.substr(part + 4, dot_o - part - 4);
        if (!digits.empty() && digits.size() < 6 &&
            digits.find_first_not_of("0123456789") == std::string::npos) {
          const auto i = static_cast<std::size_t>(std::stoul(digits));
          input = i < names.size() && !names[i].empty() ? names[i] : "input" + digits;
        }
      }
    }
    const std::string entry = "error   : Undefined reference to '" + symbol + "'" +
                              (input.empty() ? std::string() : " in '" + input + "'");
    if (seen.insert(entry).second) out += entry + "\n";
  }
  return out;
}

}  // namespace

be::Status MockCompiler::link_objects(const std::vector<std::string_view>& objects,
                                      std::vector<char>& image, std::string& log,
                                      const std::vector<std::string>& names) {
  image.clear();
  const DeviceFiles files = device_files();
  if (files.include_dir.empty() || objects.empty()) return status(CUDA_ERROR_INVALID_VALUE);
  TempFolder work;
  if (!work.create("cudamux-link-")) {
    log_->error("mock linker: cannot create a temporary folder: {}", std::strerror(errno));
    return status(CUDA_ERROR_OPERATING_SYSTEM);
  }
  const fs::path& dir = work.path;

  int arch = 0;
  std::vector<std::string> entries;
  std::vector<std::string> argv = {settings_.compiler, "-std=c++17", "-O1", "-fPIC", "-shared",
                                   "-fno-gnu-unique", "-Wl,-Bsymbolic",
                                   // an unresolved extern __device__ symbol is the link's error,
                                   // as nvlink's, not the module load's
                                   "-Wl,--no-undefined",
                                   // symbols in the log as NVIDIA's linker names them
                                   "-Wl,--no-demangle"};
  if (gold_available()) argv.emplace_back("-fuse-ld=gold");
  argv.push_back("-I" + files.include_dir);
  for (std::size_t i = 0; i < objects.size(); ++i) {
    const std::string_view text = objects[i];
    const auto nl = text.find('\n');
    if (!text.starts_with(kObjectHeader) || nl == std::string_view::npos) {
      log = "input " + std::to_string(i + 1) + " is not relocatable device code of cudamux's NVRTC";
      return status(CUDA_ERROR_INVALID_IMAGE);
    }
    const std::string header(text.substr(0, nl));
    auto field = [&](std::string_view key) {
      const auto p = header.find(" " + std::string(key) + "=");
      if (p == std::string::npos) return std::string();
      const auto from = p + key.size() + 2;
      return header.substr(from, header.find(' ', from) - from);
    };
    const std::string entry = field("entry");
    const std::string cpu = field("cpu");
    std::string object;
    if (entry.empty() ||
        entry.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") != std::string::npos ||
        !decode_base64(std::string(text.substr(nl + 1)).c_str(), object) ||
        !object.starts_with("\x7f"
                            "ELF")) {
      log = "input " + std::to_string(i + 1) + " is damaged relocatable device code";
      return status(CUDA_ERROR_INVALID_IMAGE);
    }
    if (cpu != host_cpu_tag()) {
      log = "input " + std::to_string(i + 1) + " was compiled for another CPU (tag " + cpu +
            ", this host " + host_cpu_tag() + "); recompile it on this machine";
      return status(CUDA_ERROR_NO_BINARY_FOR_GPU);
    }
    // The same object twice defines every symbol twice: nvlink's "multiple definition" too.
    entries.push_back(entry);
    arch = std::max(arch, std::atoi(field("arch").c_str()));
    const fs::path part = dir / ("part" + std::to_string(i) + ".o");
    write_file(part, object);
  }
  // The module's kernel table: every object's, in link order.
  std::ostringstream stub;
  stub << "#include <cudamux/device_abi.h>\n#include <vector>\n";
  for (const auto& e : entries)
    stub << "extern \"C\" const cudamux_module_desc* " << e << "(void);\n";
  stub << "extern \"C\" __attribute__((visibility(\"default\"))) const cudamux_module_desc* "
       << CUDAMUX_MODULE_SYMBOL << "(void) {\n"
       << "  static const std::vector<const cudamux_kernel_desc*> k = [] {\n"
       << "    std::vector<const cudamux_kernel_desc*> all;\n"
       << "    for (auto part : {";
  for (const auto& e : entries) stub << e << "(), ";
  stub << "}) all.insert(all.end(), part->kernels, part->kernels + part->num_kernels);\n"
       << "    all.push_back(nullptr);\n    return all;\n  }();\n"
       << "  static const cudamux_module_desc d = {CUDAMUX_DEVICE_ABI, "
       << "static_cast<unsigned>(k.size() - 1), k.data()};\n  return &d;\n}\n";
  write_file(dir / "link.cpp", stub.str());
  argv.push_back((dir / "link.cpp").string());
  for (std::size_t i = 0; i < objects.size(); ++i)
    argv.push_back((dir / ("part" + std::to_string(i) + ".o")).string());
  for (const std::string& a : {std::string("-o"), (dir / "module.so").string(),
                               "-L" + files.lib_dir, std::string("-lcudamux-device")})
    argv.push_back(a);
  const CompilerInfo& compiler = compiler_info(settings_.compiler);
  if (compiler.family == CompilerFamily::kUnusable) {
    log_->error(
        "mock linker: '{}' ([mock] compiler, CUDAMUX_MOCK_CXX) is not a usable C++ "
        "compiler: {}",
        settings_.compiler, compiler.why);
    return status(CUDA_ERROR_JIT_COMPILER_NOT_FOUND);
  }
  const auto t0 = std::chrono::steady_clock::now();
  const Run run = run_process(for_family(compiler.family, std::move(argv)));
  ++runs_;
  if (run.exit_code < 0 || run.exit_code >= 128) {
    log_->error("mock linker: {} failed to run: {}", settings_.compiler, run.output);
    return status(CUDA_ERROR_OPERATING_SYSTEM);
  }
  if (run.exit_code != 0) {
    // NVIDIA's lines for unresolved symbols; anything else as the linker said it, with our
    // folder left out.
    log = nvidia_style_undefined(run.output, names);
    if (log.empty())
      log = "cudamux mock linker: linking " + std::to_string(objects.size()) +
            " relocatable object(s) failed\n" +
            rewrite_log(run.output, dir.string(), files.include_dir);
    log_->debug("mock linker: {}", log);
    // NVIDIA's cuLinkComplete: CUDA_ERROR_INVALID_SOURCE for "Undefined reference to ..."
    // (measured, H100, driver 580).
    return status(CUDA_ERROR_INVALID_SOURCE);
  }
  log_->debug(
      "mock linker: {} object(s) linked in {:.0f} ms", objects.size(),
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  const std::string so = read_file(dir / "module.so");
  const std::string text = std::string(kImageHeader) + " arch=" + std::to_string(arch) +
                           " cpu=" + host_cpu_tag() + "\n" + base64(so) + "\n";
  image.assign(text.begin(), text.end());
  image.push_back('\0');
  return be::kOk;
}

}  // namespace cudamux::mock
