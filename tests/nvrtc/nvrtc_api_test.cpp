// NVRTC API surface against the deterministic "nvrtctest" backend (test_backend.cpp):
// handles, argument checks, options, logs, outputs, name expressions, PCH, callbacks.
#include <gtest/gtest.h>
#include <nvrtc.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "nvrtc_test_support.hpp"

using nvrtc_test::Program;

namespace {

constexpr std::pair<int, const char*> kResults[] = {
#include "cudamux/nvrtc_results.inc"
};

bool contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// --- errors and versions ---

TEST(NvrtcErrors, EveryResultHasItsOwnName) {
  std::set<std::string> seen;
  for (const auto& [value, name] : kResults) {
    const char* s = nvrtcGetErrorString(static_cast<nvrtcResult>(value));
    ASSERT_NE(s, nullptr);
    EXPECT_STREQ(s, name);
    EXPECT_TRUE(seen.insert(s).second) << s;
  }
  EXPECT_EQ(seen.size(), 18u);  // NVRTC 13.0 defines 0..17
  EXPECT_STREQ(nvrtcGetErrorString(NVRTC_ERROR_TIME_TRACE_FILE_WRITE_FAILED),
               "NVRTC_ERROR_TIME_TRACE_FILE_WRITE_FAILED");
}

TEST(NvrtcErrors, UnknownValuesGetAGenericString) {
  for (int v : {-1, 18, 1000}) {
    const char* s = nvrtcGetErrorString(static_cast<nvrtcResult>(v));
    ASSERT_NE(s, nullptr);
    EXPECT_STREQ(s, "NVRTC_ERROR unknown");
  }
}

TEST(NvrtcVersion, Is13_0) {
  int major = -1, minor = -1;
  ASSERT_EQ(nvrtcVersion(&major, &minor), NVRTC_SUCCESS);
  EXPECT_EQ(major, 13);
  EXPECT_EQ(minor, 0);
  EXPECT_EQ(nvrtcVersion(nullptr, &minor), NVRTC_ERROR_INVALID_INPUT);
  EXPECT_EQ(nvrtcVersion(&major, nullptr), NVRTC_ERROR_INVALID_INPUT);
}

TEST(NvrtcArchs, ComeFromTheBackendCompiler) {
  int n = 0;
  ASSERT_EQ(nvrtcGetNumSupportedArchs(&n), NVRTC_SUCCESS);
  ASSERT_EQ(n, 7);
  std::vector<int> archs(static_cast<std::size_t>(n) + 1, -7);
  ASSERT_EQ(nvrtcGetSupportedArchs(archs.data()), NVRTC_SUCCESS);
  EXPECT_EQ(archs, (std::vector<int>{75, 80, 86, 89, 90, 100, 120, -7}));  // nothing written past n
  EXPECT_EQ(nvrtcGetNumSupportedArchs(nullptr), NVRTC_ERROR_INVALID_INPUT);
  EXPECT_EQ(nvrtcGetSupportedArchs(nullptr), NVRTC_ERROR_INVALID_INPUT);
}

// --- program creation and handles ---

TEST(NvrtcCreate, RejectsBadArguments) {
  nvrtcProgram p = nullptr;
  const char* hdr[] = {"int x;"};
  const char* names[] = {"x.h"};
  const char* null_name[] = {nullptr};
  EXPECT_EQ(nvrtcCreateProgram(nullptr, "", "a.cu", 0, nullptr, nullptr),
            NVRTC_ERROR_INVALID_PROGRAM);
  EXPECT_EQ(nvrtcCreateProgram(&p, nullptr, "a.cu", 0, nullptr, nullptr),
            NVRTC_ERROR_INVALID_INPUT);
  EXPECT_EQ(nvrtcCreateProgram(&p, "", "a.cu", -1, nullptr, nullptr), NVRTC_ERROR_INVALID_INPUT);
  EXPECT_EQ(nvrtcCreateProgram(&p, "", "a.cu", 1, nullptr, names), NVRTC_ERROR_INVALID_INPUT);
  EXPECT_EQ(nvrtcCreateProgram(&p, "", "a.cu", 1, hdr, nullptr), NVRTC_ERROR_INVALID_INPUT);
  EXPECT_EQ(nvrtcCreateProgram(&p, "", "a.cu", 1, hdr, null_name), NVRTC_ERROR_INVALID_INPUT);
  EXPECT_EQ(p, nullptr);
}

TEST(NvrtcCreate, NullNameIsDefaultProgramAndHeadersReachTheCompiler) {
  Program unnamed("int x;", nullptr);
  ASSERT_EQ(unnamed.created(), NVRTC_SUCCESS);
  ASSERT_EQ(unnamed.compile({}), NVRTC_SUCCESS);
  EXPECT_TRUE(contains(unnamed.ptx(), "name=default_program\n")) << unnamed.ptx();

  Program with_headers("#include \"a.h\"\n", "main.cu", {"int a;", "int bb;"}, {"a.h", "dir/b.h"});
  ASSERT_EQ(with_headers.created(), NVRTC_SUCCESS);
  ASSERT_EQ(with_headers.compile({}), NVRTC_SUCCESS);
  const std::string ptx = with_headers.ptx();
  EXPECT_TRUE(contains(ptx, "header a.h (6 bytes)\nheader dir/b.h (7 bytes)\n")) << ptx;
  EXPECT_TRUE(contains(ptx, "name=main.cu\n")) << ptx;
}

TEST(NvrtcHandles, DestroyedAndGarbageProgramsAreInvalid) {
  nvrtcProgram p = nullptr;
  ASSERT_EQ(nvrtcCreateProgram(&p, "int x;", "a.cu", 0, nullptr, nullptr), NVRTC_SUCCESS);
  ASSERT_NE(p, nullptr);
  nvrtcProgram stale = p;
  ASSERT_EQ(nvrtcDestroyProgram(&p), NVRTC_SUCCESS);
  EXPECT_EQ(p, nullptr);
  EXPECT_EQ(nvrtcDestroyProgram(&p), NVRTC_ERROR_INVALID_PROGRAM);
  EXPECT_EQ(nvrtcDestroyProgram(nullptr), NVRTC_ERROR_INVALID_PROGRAM);

  int on_stack = 0;
  for (nvrtcProgram bad :
       {stale, static_cast<nvrtcProgram>(nullptr), reinterpret_cast<nvrtcProgram>(0x1234),
        reinterpret_cast<nvrtcProgram>(&on_stack),
        reinterpret_cast<nvrtcProgram>(~std::uintptr_t{0})}) {
    size_t n = 0;
    char buf[8];
    const char* lowered = nullptr;
    const char* opt = "-G";
    EXPECT_EQ(nvrtcCompileProgram(bad, 1, &opt), NVRTC_ERROR_INVALID_PROGRAM);
    EXPECT_EQ(nvrtcGetPTXSize(bad, &n), NVRTC_ERROR_INVALID_PROGRAM);
    EXPECT_EQ(nvrtcGetPTX(bad, buf), NVRTC_ERROR_INVALID_PROGRAM);
    EXPECT_EQ(nvrtcGetCUBINSize(bad, &n), NVRTC_ERROR_INVALID_PROGRAM);
    EXPECT_EQ(nvrtcGetCUBIN(bad, buf), NVRTC_ERROR_INVALID_PROGRAM);
    EXPECT_EQ(nvrtcGetLTOIRSize(bad, &n), NVRTC_ERROR_INVALID_PROGRAM);
    EXPECT_EQ(nvrtcGetLTOIR(bad, buf), NVRTC_ERROR_INVALID_PROGRAM);
    EXPECT_EQ(nvrtcGetOptiXIRSize(bad, &n), NVRTC_ERROR_INVALID_PROGRAM);
    EXPECT_EQ(nvrtcGetOptiXIR(bad, buf), NVRTC_ERROR_INVALID_PROGRAM);
    EXPECT_EQ(nvrtcGetProgramLogSize(bad, &n), NVRTC_ERROR_INVALID_PROGRAM);
    EXPECT_EQ(nvrtcGetProgramLog(bad, buf), NVRTC_ERROR_INVALID_PROGRAM);
    EXPECT_EQ(nvrtcAddNameExpression(bad, "k"), NVRTC_ERROR_INVALID_PROGRAM);
    EXPECT_EQ(nvrtcGetLoweredName(bad, "k", &lowered), NVRTC_ERROR_INVALID_PROGRAM);
    EXPECT_EQ(nvrtcGetPCHCreateStatus(bad), NVRTC_ERROR_INVALID_PROGRAM);
    EXPECT_EQ(nvrtcGetPCHHeapSizeRequired(bad, &n), NVRTC_ERROR_INVALID_PROGRAM);
    EXPECT_EQ(nvrtcSetFlowCallback(
                  bad, [](void*, void*) { return 0; }, nullptr),
              NVRTC_ERROR_INVALID_PROGRAM);
    nvrtcProgram copy = bad;
    EXPECT_EQ(nvrtcDestroyProgram(&copy), NVRTC_ERROR_INVALID_PROGRAM);
    EXPECT_EQ(copy, bad);  // untouched on failure
  }
}

TEST(NvrtcHandles, NewProgramsNeverReuseADestroyedHandle) {
  std::set<nvrtcProgram> seen;
  for (int i = 0; i < 100; ++i) {
    nvrtcProgram p = nullptr;
    ASSERT_EQ(nvrtcCreateProgram(&p, "", "a.cu", 0, nullptr, nullptr), NVRTC_SUCCESS);
    EXPECT_TRUE(seen.insert(p).second);
    ASSERT_EQ(nvrtcDestroyProgram(&p), NVRTC_SUCCESS);
  }
}

// --- outputs before and after compilation ---

TEST(NvrtcOutputs, BeforeCompilationEverythingIsEmpty) {
  Program p;
  size_t n = 99;
  ASSERT_EQ(nvrtcGetPTXSize(p.get(), &n), NVRTC_SUCCESS);
  EXPECT_EQ(n, 1u);  // an empty string
  ASSERT_EQ(nvrtcGetProgramLogSize(p.get(), &n), NVRTC_SUCCESS);
  EXPECT_EQ(n, 1u);
  ASSERT_EQ(nvrtcGetCUBINSize(p.get(), &n), NVRTC_SUCCESS);
  EXPECT_EQ(n, 0u);
  char c = 'x';
  ASSERT_EQ(nvrtcGetPTX(p.get(), &c), NVRTC_SUCCESS);
  EXPECT_EQ(c, '\0');
  EXPECT_EQ(nvrtcGetPTXSize(p.get(), nullptr), NVRTC_ERROR_INVALID_INPUT);
  EXPECT_EQ(nvrtcGetPTX(p.get(), nullptr), NVRTC_ERROR_INVALID_INPUT);
  EXPECT_EQ(nvrtcGetCUBINSize(p.get(), nullptr), NVRTC_ERROR_INVALID_INPUT);
  EXPECT_EQ(nvrtcGetCUBIN(p.get(), nullptr), NVRTC_ERROR_INVALID_INPUT);
  EXPECT_EQ(nvrtcGetProgramLogSize(p.get(), nullptr), NVRTC_ERROR_INVALID_INPUT);
  EXPECT_EQ(nvrtcGetProgramLog(p.get(), nullptr), NVRTC_ERROR_INVALID_INPUT);
  EXPECT_EQ(nvrtcGetLTOIRSize(p.get(), nullptr), NVRTC_ERROR_INVALID_INPUT);
  EXPECT_EQ(nvrtcGetLTOIR(p.get(), nullptr), NVRTC_ERROR_INVALID_INPUT);
  EXPECT_EQ(nvrtcGetOptiXIRSize(p.get(), nullptr), NVRTC_ERROR_INVALID_INPUT);
  EXPECT_EQ(nvrtcGetOptiXIR(p.get(), nullptr), NVRTC_ERROR_INVALID_INPUT);
}

TEST(NvrtcOutputs, PtxIsTheBackendImageNulTerminated) {
  Program p;
  ASSERT_EQ(p.compile({"--gpu-architecture=compute_90"}), NVRTC_SUCCESS) << p.log();
  size_t n = 0;
  ASSERT_EQ(nvrtcGetPTXSize(p.get(), &n), NVRTC_SUCCESS);
  std::vector<char> buf(n + 4, '#');
  ASSERT_EQ(nvrtcGetPTX(p.get(), buf.data()), NVRTC_SUCCESS);
  EXPECT_EQ(buf[n - 1], '\0');
  EXPECT_EQ(buf[n], '#');  // nothing written past the reported size
  EXPECT_TRUE(std::string(buf.data()).starts_with("cudamux-test-image\n"));
}

TEST(NvrtcOutputs, CubinOnlyForARealArchitecture) {
  Program virt;
  ASSERT_EQ(virt.compile({"-arch=compute_80"}), NVRTC_SUCCESS);
  size_t n = 99;
  ASSERT_EQ(nvrtcGetCUBINSize(virt.get(), &n), NVRTC_SUCCESS);
  EXPECT_EQ(n, 0u);
  char untouched[4] = {'a', 'b', 'c', 'd'};
  // NVIDIA's NVRTC 13.0 succeeds here and writes nothing; so do we.
  ASSERT_EQ(nvrtcGetCUBIN(virt.get(), untouched), NVRTC_SUCCESS);
  EXPECT_EQ(std::string(untouched, 4), "abcd");

  Program real;
  ASSERT_EQ(real.compile({"-arch", "sm_86"}), NVRTC_SUCCESS);
  ASSERT_EQ(nvrtcGetCUBINSize(real.get(), &n), NVRTC_SUCCESS);
  std::string cubin(n, '\0');
  ASSERT_EQ(nvrtcGetCUBIN(real.get(), cubin.data()), NVRTC_SUCCESS);
  EXPECT_EQ(cubin, "test-cubin sm_86");
}

TEST(NvrtcOutputs, NoLtoOrOptixIrEver) {
  Program p;
  ASSERT_EQ(p.compile({"-arch=sm_90"}), NVRTC_SUCCESS);
  size_t n = 99;
  ASSERT_EQ(nvrtcGetLTOIRSize(p.get(), &n), NVRTC_SUCCESS);
  EXPECT_EQ(n, 0u);
  n = 99;
  ASSERT_EQ(nvrtcGetOptiXIRSize(p.get(), &n), NVRTC_SUCCESS);
  EXPECT_EQ(n, 0u);
  for (const char* opt : {"-dlto", "--dlink-time-opt", "-optix-ir", "-gen-opt-lto"}) {
    Program q;
    EXPECT_EQ(q.compile({opt}), NVRTC_ERROR_INVALID_OPTION) << opt;
    EXPECT_TRUE(contains(q.log(), "not supported")) << q.log();
  }
}

TEST(NvrtcCompile, CompileErrorsGiveCompilationAndTheCompilersLog) {
  Program p("int a;\nint b;\nCOMPILE_ERROR\n", "user.cu");
  EXPECT_EQ(p.compile({}), NVRTC_ERROR_COMPILATION);
  EXPECT_EQ(p.log(), "user.cu(3): error: COMPILE_ERROR found\n");
  size_t n = 0;
  ASSERT_EQ(nvrtcGetPTXSize(p.get(), &n), NVRTC_SUCCESS);
  EXPECT_EQ(n, 1u);
  const char* lowered = nullptr;
  EXPECT_EQ(nvrtcGetLoweredName(p.get(), "k", &lowered),
            NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION);
}

TEST(NvrtcCompile, WarningsOfASuccessfulCompileAreInTheLog) {
  Program p("WARN_ME\n", "w.cu");
  ASSERT_EQ(p.compile({}), NVRTC_SUCCESS);
  EXPECT_EQ(p.log(), "w.cu: warning: WARN_ME\n");
}

TEST(NvrtcCompile, ACompilerFailureIsAnInternalErrorNamingTheBackend) {
  Program p("COMPILER_CRASH\n");
  EXPECT_EQ(p.compile({}), NVRTC_ERROR_INTERNAL_ERROR);
  EXPECT_TRUE(contains(p.log(), "nvrtctest")) << p.log();
  EXPECT_TRUE(contains(p.log(), "testCompilerCrashed")) << p.log();
}

TEST(NvrtcCompile, BadOptionArraysAreInvalidInput) {
  Program p;
  const char* with_null[] = {"-G", nullptr};
  EXPECT_EQ(nvrtcCompileProgram(p.get(), -1, nullptr), NVRTC_ERROR_INVALID_INPUT);
  EXPECT_EQ(nvrtcCompileProgram(p.get(), 1, nullptr), NVRTC_ERROR_INVALID_INPUT);
  EXPECT_EQ(nvrtcCompileProgram(p.get(), 2, with_null), NVRTC_ERROR_INVALID_INPUT);
  EXPECT_EQ(nvrtcCompileProgram(p.get(), 0, nullptr), NVRTC_SUCCESS);
}

TEST(NvrtcCompile, RecompilingReplacesTheResults) {
  Program p;
  ASSERT_EQ(p.compile({"-DFIRST"}), NVRTC_SUCCESS);
  EXPECT_TRUE(contains(p.ptx(), "define FIRST=1"));
  ASSERT_EQ(p.compile({"-DSECOND"}), NVRTC_SUCCESS);
  EXPECT_FALSE(contains(p.ptx(), "FIRST"));
  EXPECT_TRUE(contains(p.ptx(), "define SECOND=1"));
  EXPECT_EQ(p.compile({"--bogus"}), NVRTC_ERROR_INVALID_OPTION);
  EXPECT_EQ(p.ptx(), "");  // a failed compilation leaves no stale output behind
}

// --- options ---

TEST(NvrtcOptions, MappedOptionsReachTheBackend) {
  Program p;
  ASSERT_EQ(p.compile({"--gpu-architecture",
                       "compute_89",
                       "--fmad=false",
                       "-G",
                       "-lineinfo",
                       "-default-device",
                       "-std=c++20",
                       "-rdc=true",
                       "-DA",
                       "-D B=2",
                       "-D",
                       "C=x y",
                       "--define-macro=E=",
                       "-UF",
                       "-U",
                       "G",
                       "-Iinc1",
                       "-I",
                       "inc2",
                       "--include-path=inc3",
                       "-include",
                       "pre.h",
                       "--pre-include=pre2.h"}),
            NVRTC_SUCCESS)
      << p.log();
  const std::string ptx = p.ptx();
  EXPECT_TRUE(
      contains(ptx, "arch=89 real=0 fmad=0 G=1 lineinfo=1 default_device=1 rdc=1 std=c++20\n"))
      << ptx;
  EXPECT_TRUE(contains(ptx, "define A=1\ndefine B=2\ndefine C=x y\ndefine E=\n")) << ptx;
  EXPECT_TRUE(contains(ptx, "undefine F\nundefine G\n")) << ptx;
  EXPECT_TRUE(contains(ptx, "include_path inc1\ninclude_path inc2\ninclude_path inc3\n")) << ptx;
  EXPECT_TRUE(contains(ptx, "pre_include pre.h\npre_include pre2.h\n")) << ptx;
}

TEST(NvrtcOptions, DefaultsWhenNoOptionsAreGiven) {
  Program p;
  ASSERT_EQ(p.compile({}), NVRTC_SUCCESS);
  EXPECT_TRUE(
      contains(p.ptx(), "arch=0 real=0 fmad=1 G=0 lineinfo=0 default_device=0 rdc=0 std=\n"))
      << p.ptx();
}

TEST(NvrtcOptions, AcceptedOptionsAreRecordedInCanonicalForm) {
  Program p;
  ASSERT_EQ(p.compile({"-use_fast_math",
                       "-maxrregcount=32",
                       "-ftz",
                       "true",
                       "--prec-div=false",
                       "-prec-sqrt=true",
                       "-extra-device-vectorization",
                       "-dopt",
                       "on",
                       "-Ofc=max",
                       "-Xptxas=-v",
                       "-w",
                       "-restrict",
                       "-jtd=50",
                       "-split-compile=0",
                       "-fdevice-syntax-only",
                       "-minimal",
                       "-opt-info=inline",
                       "-diag-suppress=1,2",
                       "-builtin-move-forward=false",
                       "-err-no",
                       "-brief-diag=true",
                       "-device-int128",
                       "-pch",
                       "-use-pch=x.pch",
                       "-no-source-include",
                       "-ewp",
                       "-modify-stack-limit=false",
                       "-device-stack-protector=true",
                       "-frandom-seed=5",
                       "-no-cache",
                       "-device-float128",
                       "-no-err-no",
                       "-pch-dir=/tmp",
                       "-pch-verbose=false",
                       "-pch-messages=true",
                       "-instantiate-templates-in-pch=false",
                       "-builtin-initializer-list=true",
                       "-diag-error=7",
                       "-diag-warn=9"}),
            NVRTC_SUCCESS)
      << p.log();
  const std::string ptx = p.ptx();
  for (const char* e : {"--use_fast_math",
                        "--maxrregcount=32",
                        "--ftz=true",
                        "--prec-div=false",
                        "--prec-sqrt=true",
                        "--extra-device-vectorization",
                        "--dopt=on",
                        "--Ofast-compile=max",
                        "--ptxas-options=-v",
                        "--disable-warnings",
                        "--restrict",
                        "--jump-table-density=50",
                        "--split-compile=0",
                        "--fdevice-syntax-only",
                        "--minimal",
                        "--optimization-info=inline",
                        "--diag-suppress=1,2",
                        "--builtin-move-forward=false",
                        "--display-error-number",
                        "--brief-diagnostics=true",
                        "--device-int128",
                        "--pch",
                        "--use-pch=x.pch",
                        "--no-source-include",
                        "--extensible-whole-program",
                        "--modify-stack-limit=false",
                        "--device-stack-protector=true",
                        "--frandom-seed=5",
                        "--no-cache",
                        "--device-float128",
                        "--no-display-error-number",
                        "--pch-dir=/tmp",
                        "--pch-verbose=false",
                        "--pch-messages=true",
                        "--instantiate-templates-in-pch=false",
                        "--builtin-initializer-list=true",
                        "--diag-error=7",
                        "--diag-warn=9"})
    EXPECT_TRUE(contains(ptx, std::string("extra ") + e + "\n")) << e << "\n" << ptx;
  EXPECT_TRUE(contains(ptx, "fmad=1")) << "--use_fast_math implies --fmad=true";
}

TEST(NvrtcOptions, ArchitectureForms) {
  struct Case {
    std::vector<const char*> opts;
    const char* expect;
  };
  const Case cases[] = {
      {{"-arch=sm_90"}, "arch=90 real=1"},
      {{"-arch", "compute_75"}, "arch=75 real=0"},
      {{"--gpu-architecture=sm_120"}, "arch=120 real=1"},
      {{"--gpu-architecture", "sm_100f"}, "arch=100 real=1"},
      {{"-arch=sm_90a"}, "arch=90 real=1"},
      {{"-arch=sm_80", "-arch=compute_90"}, "arch=90 real=0"},
  };
  for (const auto& c : cases) {
    Program p;
    ASSERT_EQ(nvrtcCompileProgram(p.get(), static_cast<int>(c.opts.size()), c.opts.data()),
              NVRTC_SUCCESS)
        << p.log();
    EXPECT_TRUE(contains(p.ptx(), c.expect)) << c.opts[0] << "\n" << p.ptx();
  }
  Program suffixed;
  ASSERT_EQ(suffixed.compile({"-arch=sm_90a"}), NVRTC_SUCCESS);
  EXPECT_TRUE(contains(suffixed.ptx(), "extra --gpu-architecture=sm_90a\n")) << suffixed.ptx();
  Program twice;
  ASSERT_EQ(twice.compile({"-arch=sm_80", "-arch=compute_90"}), NVRTC_SUCCESS);
  EXPECT_TRUE(contains(twice.log(), "warning")) << twice.log();
}

TEST(NvrtcOptions, RejectedOptionsExplainThemselvesInTheLog) {
  struct Case {
    std::vector<const char*> opts;
    const char* in_log;
  };
  const Case cases[] = {
      {{"--bogus"}, "unrecognized option --bogus"},
      {{"-Werror"}, "unrecognized option -Werror"},
      {{""}, "unrecognized option"},
      {{"notanoption"}, "unrecognized option notanoption"},
      {{"-arch=compute_30"}, "compute_30"},
      {{"-arch=sm_91"}, "sm_91"},
      {{"-arch=gfx90a"}, "gfx90a"},
      {{"-arch"}, "expects a value"},
      {{"-std=c++23"}, "c++23"},
      {{"--fmad=yes"}, "expects true or false"},
      {{"-fmad"}, "expects a value"},
      {{"-rdc"}, "expects a value"},
      {{"-G=1"}, "takes no value"},
      {{"-maxrregcount=abc"}, "integer"},
      {{"-jtd=200"}, "[0, 101]"},
      {{"-diag-suppress=x"}, "positive integers"},
      {{"-opt-info=foo"}, "foo"},
      {{"-Ofc=fast"}, "0, min, mid or max"},
      {{"-dopt=maybe"}, "on or off"},
      {{"-D"}, "expects a value"},
      {{"-D=1"}, "macro name"},
      {{"--gpu-architecture=sm_90", "--device-debug=true"}, "takes no value"},
  };
  for (const auto& c : cases) {
    Program p;
    EXPECT_EQ(nvrtcCompileProgram(p.get(), static_cast<int>(c.opts.size()), c.opts.data()),
              NVRTC_ERROR_INVALID_OPTION)
        << c.opts[0];
    EXPECT_TRUE(contains(p.log(), "nvrtc: error: ")) << p.log();
    EXPECT_TRUE(contains(p.log(), c.in_log)) << c.opts[0] << ": " << p.log();
  }
}

// --- name expressions ---

TEST(NvrtcNames, LoweredNamesFollowNvrtcsRules) {
  Program p;
  const char* lowered = nullptr;
  EXPECT_EQ(nvrtcAddNameExpression(p.get(), nullptr), NVRTC_ERROR_INVALID_INPUT);
  ASSERT_EQ(nvrtcAddNameExpression(p.get(), "t<int>"), NVRTC_SUCCESS);
  ASSERT_EQ(nvrtcAddNameExpression(p.get(), "&g"), NVRTC_SUCCESS);
  EXPECT_EQ(nvrtcGetLoweredName(p.get(), "t<int>", &lowered),
            NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION);
  ASSERT_EQ(p.compile({}), NVRTC_SUCCESS);
  EXPECT_EQ(nvrtcAddNameExpression(p.get(), "t<float>"),
            NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION);
  ASSERT_EQ(nvrtcGetLoweredName(p.get(), "t<int>", &lowered), NVRTC_SUCCESS);
  EXPECT_STREQ(lowered, "_lowered_6_t<int>");
  const char* first = lowered;
  ASSERT_EQ(nvrtcGetLoweredName(p.get(), "&g", &lowered), NVRTC_SUCCESS);
  EXPECT_STREQ(lowered, "_lowered_2_&g");
  EXPECT_EQ(nvrtcGetLoweredName(p.get(), "t<float>", &lowered),
            NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID);
  EXPECT_EQ(nvrtcGetLoweredName(p.get(), nullptr, &lowered), NVRTC_ERROR_INVALID_INPUT);
  EXPECT_EQ(nvrtcGetLoweredName(p.get(), "t<int>", nullptr), NVRTC_ERROR_INVALID_INPUT);
  EXPECT_STREQ(first, "_lowered_6_t<int>");  // still valid until the program is destroyed
}

TEST(NvrtcNames, AnExpressionTheCompilerRejectsFailsTheCompilation) {
  Program p;
  ASSERT_EQ(nvrtcAddNameExpression(p.get(), "nope<int>"), NVRTC_SUCCESS);
  EXPECT_EQ(p.compile({}), NVRTC_ERROR_COMPILATION);
  EXPECT_TRUE(contains(p.log(), "nope<int>")) << p.log();
}

// --- PCH, flow callback, timing files ---

TEST(NvrtcPch, HeapSizeAndStatus) {
  size_t heap = 0;
  ASSERT_EQ(nvrtcGetPCHHeapSize(&heap), NVRTC_SUCCESS);
  EXPECT_EQ(heap, size_t{256} << 20);
  ASSERT_EQ(nvrtcSetPCHHeapSize(1 << 20), NVRTC_SUCCESS);
  ASSERT_EQ(nvrtcGetPCHHeapSize(&heap), NVRTC_SUCCESS);
  EXPECT_EQ(heap, size_t{1} << 20);
  EXPECT_EQ(nvrtcGetPCHHeapSize(nullptr), NVRTC_ERROR_INVALID_INPUT);

  Program p;
  EXPECT_EQ(nvrtcGetPCHCreateStatus(p.get()), NVRTC_ERROR_NO_PCH_CREATE_ATTEMPTED);
  ASSERT_EQ(p.compile({"-pch"}), NVRTC_SUCCESS);
  EXPECT_EQ(nvrtcGetPCHCreateStatus(p.get()), NVRTC_ERROR_NO_PCH_CREATE_ATTEMPTED);
  size_t required = 99;
  ASSERT_EQ(nvrtcGetPCHHeapSizeRequired(p.get(), &required), NVRTC_SUCCESS);
  EXPECT_EQ(required, 0u);
  EXPECT_EQ(nvrtcGetPCHHeapSizeRequired(p.get(), nullptr), NVRTC_ERROR_INVALID_INPUT);

  Program explicit_pch;
  ASSERT_EQ(explicit_pch.compile({"-create-pch=/nonexistent/x.pch"}), NVRTC_SUCCESS);
  EXPECT_EQ(nvrtcGetPCHCreateStatus(explicit_pch.get()), NVRTC_ERROR_PCH_CREATE);
  EXPECT_TRUE(contains(explicit_pch.log(), "precompiled headers are not supported"))
      << explicit_pch.log();
}

TEST(NvrtcFlow, CallbackCanCancelAndIsAskedWithItsPayload) {
  struct State {
    std::atomic<int> calls{0};
    int answer = 0;
  };
  auto cb = [](void* payload, void* reserved) -> int {
    auto* s = static_cast<State*>(payload);
    ++s->calls;
    return reserved == nullptr ? s->answer : 1;
  };
  Program p;
  EXPECT_EQ(nvrtcSetFlowCallback(p.get(), nullptr, nullptr), NVRTC_ERROR_INVALID_INPUT);
  State go;
  ASSERT_EQ(nvrtcSetFlowCallback(p.get(), cb, &go), NVRTC_SUCCESS);
  ASSERT_EQ(p.compile({}), NVRTC_SUCCESS);
  EXPECT_EQ(go.calls.load(), 2);  // before and after the backend's compiler
  State stop;
  stop.answer = 1;
  Program q;
  ASSERT_EQ(nvrtcSetFlowCallback(q.get(), cb, &stop), NVRTC_SUCCESS);
  EXPECT_EQ(q.compile({}), NVRTC_ERROR_CANCELLED);
  EXPECT_GE(stop.calls.load(), 1);
  EXPECT_EQ(q.ptx(), "");
}

TEST(NvrtcTime, TimeFileAndTimeTrace) {
  Program to_log("int x;", "timed.cu");
  ASSERT_EQ(to_log.compile({"--time=-"}), NVRTC_SUCCESS);
  EXPECT_TRUE(contains(to_log.log(), "File name, phase name, metric, unit\ntimed.cu, "))
      << to_log.log();

  const std::string file = testing::TempDir() + "cudamux_nvrtc_time.csv";
  std::remove(file.c_str());
  Program to_file("int x;", "timed.cu");
  ASSERT_EQ(to_file.compile({"-time", file.c_str()}), NVRTC_SUCCESS);
  EXPECT_TRUE(read_file(file).starts_with("File name, phase name, metric, unit\ntimed.cu, "))
      << read_file(file);
  std::remove(file.c_str());

  Program bad;
  EXPECT_EQ(bad.compile({"--time=/nonexistent-dir/t.csv"}), NVRTC_ERROR_TIME_FILE_WRITE_FAILED);
  Program bad_trace;
  EXPECT_EQ(bad_trace.compile({"-fdevice-time-trace=/nonexistent-dir/t.json"}),
            NVRTC_ERROR_TIME_TRACE_FILE_WRITE_FAILED);
  const std::string trace = testing::TempDir() + "cudamux_nvrtc_trace.json";
  Program traced("int x;", "tr\"ace.cu");
  ASSERT_EQ(traced.compile({"-fdevice-time-trace", trace.c_str()}), NVRTC_SUCCESS);
  const std::string json = read_file(trace);
  EXPECT_TRUE(contains(json, "\"traceEvents\"")) << json;
  EXPECT_TRUE(contains(json, "tr\\\"ace.cu")) << json;
  std::remove(trace.c_str());
}

// --- threads ---

TEST(NvrtcThreads, ConcurrentProgramsAndRacingDestroys) {
  constexpr int kThreads = 4, kIters = 100;
  std::atomic<int> failures{0};
  std::atomic<nvrtcProgram> shared{nullptr};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kIters; ++i) {
        nvrtcProgram p = nullptr;
        const std::string def = "-DT" + std::to_string(t) + "_" + std::to_string(i);
        const char* opt = def.c_str();
        if (nvrtcCreateProgram(&p, "int x;", "c.cu", 0, nullptr, nullptr) != NVRTC_SUCCESS ||
            nvrtcCompileProgram(p, 1, &opt) != NVRTC_SUCCESS ||
            nvrtc_test::ptx_of(p).find("define " + def.substr(2) + "=1") == std::string::npos)
          ++failures;
        // Publish it, and destroy whatever another thread published: calls on a program that
        // is destroyed concurrently must return INVALID_PROGRAM or succeed, never crash.
        size_t n = 0;
        const nvrtcResult r = nvrtcGetPTXSize(shared.load(), &n);
        nvrtcProgram other = shared.exchange(p);
        if (r != NVRTC_SUCCESS && r != NVRTC_ERROR_INVALID_PROGRAM) ++failures;
        if (other) nvrtcDestroyProgram(&other);
      }
    });
  }
  for (auto& th : threads) th.join();
  nvrtcProgram last = shared.exchange(nullptr);
  if (last) {
    EXPECT_EQ(nvrtcDestroyProgram(&last), NVRTC_SUCCESS);
  }
  EXPECT_EQ(failures.load(), 0);
}

}  // namespace

int main(int argc, char** argv) {
  nvrtc_test::use_backend("nvrtctest", CUDAMUX_NVRTC_TEST_PLUGIN_DIR);
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
