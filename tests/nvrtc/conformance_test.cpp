// NVRTC conformance: what NVIDIA's NVRTC 13.0 compiles and refuses, for include resolution and
// the names it predefines. Every case is a program whose outcome was measured with NVIDIA's
// libnvrtc.so.13 (13.0.88, no GPU needed); the program checks the rule itself (static_assert,
// #error), so a case is one bit: compiles or not, plus a word its log must name when it fails.
//
// The library under test is dlopen'ed from CUDAMUX_CONFORMANCE_NVRTC (default: this build's
// libnvrtc.so.13), so the same cases run on ours (ctest nvrtc.conformance.*,
// mock backend) and on NVIDIA's (ctest nvrtc.conformance_nvidia, skipped without the toolkit).
// `nvrtc_conformance_tests --report` prints every case's outcome and log instead (the probe
// used to establish the rules; docs/conformance.md, section "NVRTC").
//
// Each case runs in a fresh temporary folder made the current directory, holding the files of
// kDisk; relative program names, -I folders and --pre-include files are relative to it.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <nvrtc.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace {

namespace fs = std::filesystem;

// ---- the files on disk ------------------------------------------------------------------

struct DiskFile {
  const char* path;
  const char* text;
};

const DiskFile kDisk[] = {
    {"x.h", "#define WHERE_X 1\n"},       {"sub/x.h", "#define WHERE_X 2\n"},
    {"sub/y.h", "#define WHERE_Y 2\n"},   {"z.h", "#define WHERE_Z 1\n"},
    {"inc1/w.h", "#define WHERE_W 1\n"},  {"inc2/w.h", "#define WHERE_W 2\n"},
    {"n2.h", "#define WHERE_N 1\n"},      {"nest/n1.h", "#include \"n2.h\"\n"},
    {"nest/n2.h", "#define WHERE_N 2\n"}, {"inc1/only_in_inc1.h", "#define WHERE_O 1\n"},
};

// ---- the cases --------------------------------------------------------------------------

struct Header {
  const char* name;
  const char* text;
};

struct Case {
  const char* id;
  const char* name;  // nvrtcCreateProgram's name (nullptr allowed)
  const char* source;
  std::vector<Header> headers;
  std::vector<const char*> options;
  bool compiles;                   // NVIDIA's NVRTC 13.0
  const char* log_mentions;        // when it fails: a word the log names (nullptr: any failure)
  const char* mock_gap = nullptr;  // why the mock cannot match (the case is skipped on ours)
};

constexpr const char* kKernel = "\nextern \"C\" __global__ void k(int* o) { o[0] = 1; }\n";

std::string with_kernel(const char* s) { return std::string(s) + kKernel; }

// A program that compiles only if `expr` (a constant expression over the program's names) holds.
#define ASSERTS(expr) "static_assert(" expr ", \"" expr "\");\n"
// A program that compiles only if `type` names a type without any include.
#define TYPE_CASE(ty, yes)                                                                     \
  {                                                                                            \
    "type_" #ty, "t.cu", "using probe_t = " #ty "; " ASSERTS("sizeof(probe_t*) == 8"), {}, {}, \
        yes, (yes) ? nullptr : #ty                                                             \
  }
// A program that compiles only if `m` is (yes) / is not (no) a predefined macro.
#define MACRO_DEFINED(m)                                                                           \
  {                                                                                                \
    "macro_" #m "_defined", "t.cu", "#ifndef " #m "\n#error " #m " not defined\n#endif\n", {}, {}, \
        true, nullptr                                                                              \
  }
#define MACRO_UNDEFINED(m)                                                                      \
  {                                                                                             \
    "macro_" #m "_undefined", "t.cu", "#ifdef " #m "\n#error " #m " defined\n#endif\n", {}, {}, \
        true, nullptr                                                                           \
  }
// A device statement that compiles (yes) or not without any include.
#define BUILTIN(id, stmt, yes, word)                                                            \
  {                                                                                             \
    "builtin_" id, "t.cu",                                                                      \
        "extern \"C\" __global__ void b(int* o, float* f, unsigned long long* u, const float* " \
        "cf) { " stmt " }\n",                                                                   \
        {}, {"-arch=compute_80"}, yes, word                                                     \
  }

const std::vector<Case>& cases() {
  static const std::vector<Case> all = [] {
    // clang-format off
    std::vector<Case> c = {
        // -- quoted includes: the program's folder is its name's folder, relative to the
        //    current directory; a name without a folder means the current directory.
        {"quoted_cwd_plain_name", "p.cu", "#include \"x.h\"\n" ASSERTS("WHERE_X == 1"), {}, {}, true, nullptr},
        {"quoted_cwd_no_name", nullptr, "#include \"x.h\"\n" ASSERTS("WHERE_X == 1"), {}, {}, true, nullptr},
        {"quoted_name_folder_wins", "sub/p.cu", "#include \"x.h\"\n" ASSERTS("WHERE_X == 2"), {}, {}, true, nullptr},
        {"quoted_name_folder_only", "sub/p.cu", "#include \"y.h\"\n" ASSERTS("WHERE_Y == 2"), {}, {}, true, nullptr},
        // With a folder in the name, the current directory is not searched. The log's wording
        // for a missing header is NVIDIA's (Jitify finds the header's name and line by it).
        {"quoted_name_folder_no_cwd", "sub/p.cu", "#include \"z.h\"\n", {}, {}, false, "sub/p.cu(1): catastrophic error: cannot open source file \"z.h\""},
        {"quoted_name_missing_folder", "nonexistent/p.cu", "#include \"z.h\"\n", {}, {}, false, "z.h"},
        {"quoted_not_in_cwd", "p.cu", "#include \"y.h\"\n", {}, {}, false, "p.cu(1): catastrophic error: cannot open source file \"y.h\""},
        {"quoted_subpath", "p.cu", "#include \"sub/y.h\"\n" ASSERTS("WHERE_Y == 2"), {}, {}, true, nullptr},
        // A header's own includes start from the header's folder.
        {"quoted_nested_from_header_folder", "p.cu", "#include \"nest/n1.h\"\n" ASSERTS("WHERE_N == 2"), {}, {}, true, nullptr},
        // The program's folder before -I.
        {"quoted_program_folder_before_I", "p.cu", "#include \"x.h\"\n" ASSERTS("WHERE_X == 1"), {}, {"-Isub"}, true, nullptr},
        // -- angle includes: only -I folders and the given headers; no system folders.
        {"angle_not_cwd", "p.cu", "#include <x.h>\n", {}, {}, false, "open source file \"x.h\""},
        {"angle_with_I_dot", "p.cu", "#include <x.h>\n" ASSERTS("WHERE_X == 1"), {}, {"-I."}, true, nullptr},
        // -- -I order and spellings; relative folders are relative to the current directory.
        {"I_order_first_wins", "p.cu", "#include \"w.h\"\n" ASSERTS("WHERE_W == 1"), {}, {"-Iinc1", "-Iinc2"}, true, nullptr},
        {"I_order_first_wins_reversed", "p.cu", "#include \"w.h\"\n" ASSERTS("WHERE_W == 2"), {}, {"-Iinc2", "-Iinc1"}, true, nullptr},
        {"include_path_long_form", "p.cu", "#include \"w.h\"\n" ASSERTS("WHERE_W == 2"), {}, {"--include-path=inc2", "-Iinc1"}, true, nullptr},
        {"I_separate_argument", "p.cu", "#include \"w.h\"\n" ASSERTS("WHERE_W == 2"), {}, {"-I", "inc2"}, true, nullptr},
        // An -I naming a file, a path through a file or a missing folder is passed over (tinygrad
        // passes -I$CUDA_PATH/include, where CUDA_PATH may name the library file).
        {"I_file_passed_over", "p.cu", "#include <w.h>\n" ASSERTS("WHERE_W == 2"), {}, {"-Ix.h", "-Iinc2"}, true, nullptr},
        {"I_through_file_passed_over", "p.cu", "#include <w.h>\n" ASSERTS("WHERE_W == 2"), {}, {"-Ix.h/include", "-Iinc2"}, true, nullptr},
        {"I_missing_folder_passed_over", "p.cu", "#include <w.h>\n" ASSERTS("WHERE_W == 2"), {}, {"-Ino-such-folder", "-Iinc2"}, true, nullptr},
        {"include_path_separate_argument", "p.cu", "#include <w.h>\n" ASSERTS("WHERE_W == 2"), {}, {"--include-path", "inc2"}, true, nullptr},
        // -- headers given to nvrtcCreateProgram: found by exact name, before any file on disk.
        {"given_header_beats_disk_quoted", "p.cu", "#include \"x.h\"\n" ASSERTS("WHERE_X == 3"), {{"x.h", "#define WHERE_X 3\n"}}, {}, true, nullptr},
        {"given_header_beats_disk_angle", "p.cu", "#include <x.h>\n" ASSERTS("WHERE_X == 3"), {{"x.h", "#define WHERE_X 3\n"}}, {}, true, nullptr},
        {"given_header_beats_program_folder", "sub/p.cu", "#include \"y.h\"\n" ASSERTS("WHERE_Y == 3"), {{"y.h", "#define WHERE_Y 3\n"}}, {}, true, nullptr},
        {"given_header_beats_I", "p.cu", "#include \"w.h\"\n" ASSERTS("WHERE_W == 3"), {{"w.h", "#define WHERE_W 3\n"}}, {"-Iinc1"}, true, nullptr},
        {"given_header_with_folder_exact", "p.cu", "#include \"sub/y.h\"\n" ASSERTS("WHERE_Y == 3"), {{"sub/y.h", "#define WHERE_Y 3\n"}}, {}, true, nullptr},
        // A given header's name is matched whole: "sub/q.h" is not found as "q.h".
        {"given_header_name_is_whole", "p.cu", "#include \"q.h\"\n", {{"sub/q.h", "#define Q 1\n"}}, {}, false, "q.h"},
        // -- --pre-include: relative to the current directory (not the program's folder), then -I.
        {"pre_include_cwd", "p.cu", ASSERTS("WHERE_X == 1"), {}, {"--pre-include=x.h"}, true, nullptr},
        {"pre_include_short_form", "p.cu", ASSERTS("WHERE_X == 1"), {}, {"-include=x.h"}, true, nullptr},
        {"pre_include_separate_argument", "p.cu", ASSERTS("WHERE_X == 1"), {}, {"-include", "x.h"}, true, nullptr},
        {"pre_include_subpath", "p.cu", ASSERTS("WHERE_X == 2"), {}, {"--pre-include=sub/x.h"}, true, nullptr},
        {"pre_include_cwd_not_program_folder", "sub/p.cu", ASSERTS("WHERE_X == 1"), {}, {"--pre-include=x.h"}, true, nullptr},
        {"pre_include_cwd_before_I", "p.cu", ASSERTS("WHERE_X == 1"), {}, {"--pre-include=x.h", "-Isub"}, true, nullptr},
        {"pre_include_from_I", "p.cu", ASSERTS("WHERE_O == 1"), {}, {"--pre-include=only_in_inc1.h", "-Iinc1"}, true, nullptr},
        {"pre_include_given_header", "p.cu", ASSERTS("WHERE_X == 3"), {{"x.h", "#define WHERE_X 3\n"}}, {"--pre-include=x.h"}, true, nullptr},
        {"pre_include_missing", "p.cu", "", {}, {"--pre-include=missing.h"}, false, "missing.h"},
        // -- standard and toolkit headers: none without -I (no folders in the search list).
        {"std_cstdint_without_I", "p.cu", "#include <cstdint>\n", {}, {}, false, "cstdint"},
        {"std_stdint_h_without_I", "p.cu", "#include <stdint.h>\n", {}, {}, false, "stdint.h"},
        {"std_cstddef_without_I", "p.cu", "#include <cstddef>\n", {}, {}, false, "cstddef"},
        {"std_climits_without_I", "p.cu", "#include <climits>\n", {}, {}, false, "climits"},
        {"std_cmath_without_I", "p.cu", "#include <cmath>\n", {}, {}, false, "cmath"},
        {"std_cassert_without_I", "p.cu", "#include <cassert>\n", {}, {}, false, "cassert"},
        {"std_type_traits_without_I", "p.cu", "#include <type_traits>\n", {}, {}, false, "type_traits"},
        {"cuda_std_cstdint_without_I", "p.cu", "#include <cuda/std/cstdint>\n", {}, {}, false, "cuda/std/cstdint"},
        {"cuda_fp16_without_I", "p.cu", "#include <cuda_fp16.h>\n", {}, {}, false, "cuda_fp16.h"},
        {"cuda_runtime_without_I", "p.cu", "#include <cuda_runtime.h>\n", {}, {}, false, "cuda_runtime.h"},
        {"cooperative_groups_without_I", "p.cu", "#include <cooperative_groups.h>\n", {}, {}, false, "cooperative_groups.h"},
        // -- types predefined without any include.
        TYPE_CASE(clock_t, true),
        TYPE_CASE(size_t, true),
        TYPE_CASE(ptrdiff_t, true),
        TYPE_CASE(va_list, true),
        TYPE_CASE(wchar_t, true),
        TYPE_CASE(char16_t, true),
        TYPE_CASE(dim3, true),
        TYPE_CASE(uint3, true),
        TYPE_CASE(int2, true),
        TYPE_CASE(char4, true),
        TYPE_CASE(float4, true),
        TYPE_CASE(double2, true),
        TYPE_CASE(longlong2, true),
        TYPE_CASE(cudaStream_t, true),
        TYPE_CASE(cudaError_t, true),
        TYPE_CASE(cudaTextureObject_t, true),
        TYPE_CASE(cudaSurfaceObject_t, true),
        TYPE_CASE(int8_t, false),
        TYPE_CASE(int32_t, false),
        TYPE_CASE(uint32_t, false),
        TYPE_CASE(int64_t, false),
        TYPE_CASE(uint64_t, false),
        TYPE_CASE(uintptr_t, false),
        TYPE_CASE(max_align_t, false),
        TYPE_CASE(nullptr_t, false),
        TYPE_CASE(__half, false),
        TYPE_CASE(half, false),
        TYPE_CASE(__nv_bfloat16, false),
        TYPE_CASE(CUstream, false),
        {"type_std_size_t", "t.cu", "using probe_t = std::size_t;\n", {}, {}, false, "size_t"},
        {"clock_t_is_long", "t.cu", "template <class A, class B> struct same { static constexpr bool v = false; };\n" "template <class A> struct same<A, A> { static constexpr bool v = true; };\n" ASSERTS("same<clock_t, long>::v"), {}, {}, true, nullptr},
        {"size_t_is_unsigned_long", "t.cu", "template <class A, class B> struct same { static constexpr bool v = false; };\n" "template <class A> struct same<A, A> { static constexpr bool v = true; };\n" ASSERTS("same<size_t, unsigned long>::v"), {}, {}, true, nullptr},
        {"std_namespace_declared", "t.cu", "namespace q = std;\n", {}, {}, true, nullptr},
        // std::initializer_list is NVRTC's one predefined std name (CuPy's carray.cuh relies on it).
        {"std_initializer_list_predefined", "t.cu", "__device__ int sum3() { std::initializer_list<int> l = {1, 2, 3}; int s = 0; for (int v : l) s += v; return s; }\n" "__device__ int n2() { return (int)std::initializer_list<long>{4, 5}.size(); }\n", {}, {}, true, nullptr},
        // The built-in atomics are CUDA's overloads only: a program may define the others (CuPy's
        // atomics.cuh defines atomicAdd of long long and atomicMax/atomicMin of float and double).
        {"atomicAdd_long_long_not_builtin", "t.cu", "__global__ void k(long long* p) { atomicAdd(p, 1LL); }\n", {}, {}, false, "atomicAdd"},
        {"atomics_overloads_cuda_lacks_are_free", "t.cu", "__device__ long long atomicAdd(long long* a, long long v) { return *a += v; }\n" "__device__ float atomicMax(float* a, float v) { return *a = v; }\n" "__device__ double atomicMin(double* a, double v) { return *a = v; }\n" "__device__ unsigned long long atomicSub(unsigned long long* a, unsigned long long v) { return *a -= v; }\n", {}, {}, true, nullptr},
        // -- macros predefined without any include (values at -arch=compute_80 where it matters).
        MACRO_DEFINED(__CUDACC__),
        MACRO_DEFINED(__CUDACC_RTC__),
        MACRO_DEFINED(__CUDA_ARCH__),
        MACRO_DEFINED(__NVCC_DIAG_PRAGMA_SUPPORT__),
        MACRO_DEFINED(__LP64__),
        MACRO_DEFINED(__STDC__),
        MACRO_DEFINED(NULL),
        MACRO_DEFINED(assert),
        MACRO_UNDEFINED(__NVCC__),
        MACRO_UNDEFINED(CUDA_VERSION),
        MACRO_UNDEFINED(INT_MAX),
        MACRO_UNDEFINED(CHAR_BIT),
        MACRO_UNDEFINED(INFINITY),
        MACRO_UNDEFINED(M_PI),
        MACRO_UNDEFINED(NDEBUG),
        MACRO_UNDEFINED(__CUDACC_RDC__),
        MACRO_UNDEFINED(__CUDACC_DEBUG__),
        MACRO_UNDEFINED(__CUDACC_EXTENDED_LAMBDA__),
        MACRO_UNDEFINED(__CUDACC_RELAXED_CONSTEXPR__),
        MACRO_UNDEFINED(__CUDACC_RTC_INT128__),
        MACRO_UNDEFINED(__CUDA_NO_HALF_OPERATORS__),
        {"macro_values", "t.cu", ASSERTS("__CUDACC__ == 1") ASSERTS("__CUDACC_RTC__ == 1") ASSERTS("__CUDA_ARCH__ == 800") ASSERTS("__CUDA_ARCH_LIST__ == 800") ASSERTS("__CUDACC_VER_MAJOR__ == 13") ASSERTS("__CUDACC_VER_MINOR__ == 0") ASSERTS("__CUDA_API_VER_MAJOR__ == 13") ASSERTS("__CUDA_API_VER_MINOR__ == 0") ASSERTS("CUDART_VERSION == 13000") ASSERTS("__cplusplus == 201703L") ASSERTS("__USE_FAST_MATH__ == 0") ASSERTS("__CUDA_PREC_DIV == 1") ASSERTS("__CUDA_PREC_SQRT == 1") ASSERTS("__CUDA_FTZ == 0"), {}, {"-arch=compute_80"}, true, nullptr},
        {"macro_default_arch", "t.cu", ASSERTS("__CUDA_ARCH__ == 750") ASSERTS("__CUDA_ARCH_LIST__ == 750"), {}, {}, true, nullptr},
        {"macro_arch_specific", "t.cu", ASSERTS("__CUDA_ARCH__ == 900") ASSERTS("__CUDA_ARCH_SPECIFIC__ == 900") ASSERTS("__CUDA_ARCH_FEAT_SM90_ALL == 1"), {}, {"-arch=sm_90a"}, true, nullptr},
        {"macro_arch_family", "t.cu", ASSERTS("__CUDA_ARCH__ == 1000") ASSERTS("__CUDA_ARCH_FAMILY_SPECIFIC__ == 1000"), {}, {"-arch=sm_100f"}, true, nullptr},
        {"macro_arch_plain_no_specific", "t.cu", "#if defined(__CUDA_ARCH_SPECIFIC__) || defined(__CUDA_ARCH_FAMILY_SPECIFIC__)\n#error specific\n#endif\n", {}, {"-arch=sm_90"}, true, nullptr},
        {"macro_arch_sm_90", "t.cu", ASSERTS("__CUDA_ARCH__ == 900") ASSERTS("__CUDA_ARCH_LIST__ == 900"), {}, {"-arch=sm_90"}, true, nullptr},
        {"macro_fast_math", "t.cu", ASSERTS("__USE_FAST_MATH__ == 1") ASSERTS("__CUDA_FTZ == 1") ASSERTS("__CUDA_PREC_DIV == 0") ASSERTS("__CUDA_PREC_SQRT == 0"), {}, {"-use_fast_math"}, true, nullptr},
        {"macro_ftz", "t.cu", ASSERTS("__CUDA_FTZ == 1") ASSERTS("__USE_FAST_MATH__ == 0"), {}, {"-ftz=true"}, true, nullptr},
        {"macro_prec_sqrt_false", "t.cu", ASSERTS("__CUDA_PREC_SQRT == 0") ASSERTS("__CUDA_PREC_DIV == 1"), {}, {"-prec-sqrt=false"}, true, nullptr},
        {"macro_rdc", "t.cu", ASSERTS("__CUDACC_RDC__ == 1"), {}, {"-rdc=true"}, true, nullptr},
        {"macro_dc", "t.cu", ASSERTS("__CUDACC_RDC__ == 1"), {}, {"-dc"}, true, nullptr},
        {"macro_debug", "t.cu", ASSERTS("__CUDACC_DEBUG__ == 1"), {}, {"-G"}, true, nullptr},
        {"macro_std_cxx20", "t.cu", ASSERTS("__cplusplus == 202002L"), {}, {"-std=c++20"}, true, nullptr},
        {"macro_std_cxx14", "t.cu", ASSERTS("__cplusplus == 201402L"), {}, {"-std=c++14"}, true, nullptr, "the mock's prelude needs C++17: -std=c++14 compiles as C++17"},
        {"std_cxx14_compiles", "t.cu", "template <class T> __device__ constexpr T twice(T v) { return v + v; }\n" ASSERTS("twice(2) == 4"), {}, {"-std=c++14"}, true, nullptr},
        {"macro_int128", "t.cu", ASSERTS("__CUDACC_RTC_INT128__ == 1"), {}, {"-device-int128"}, true, nullptr},
        // nvcc-only options: NVRTC does not know them.
        {"option_extended_lambda_refused", "t.cu", "", {}, {"--extended-lambda"}, false, "extended-lambda"},
        {"option_relaxed_constexpr_refused", "t.cu", "", {}, {"--expt-relaxed-constexpr"}, false, "expt-relaxed-constexpr"},
        // -- device functions and built-ins without any include.
        BUILTIN("clock", "clock_t c = clock(); o[0] = (int)c;", true, nullptr),
        BUILTIN("clock64", "o[0] = (int)clock64();", true, nullptr),
        BUILTIN("syncthreads", "__syncthreads();", true, nullptr),
        BUILTIN("syncwarp", "__syncwarp();", true, nullptr),
        BUILTIN("printf", "printf(\"%d\\n\", 1);", true, nullptr),
        BUILTIN("assert", "assert(o);", true, nullptr),
        BUILTIN("assertfail", "__assertfail(\"a\", \"b\", 1, \"c\", 1);", true, nullptr),
        BUILTIN("malloc_free", "void* p = malloc(8); free(p);", true, nullptr),
        BUILTIN("memcpy_memset", "memcpy(o, f, 4); memset(o, 0, 4);", true, nullptr),
        BUILTIN("ldg", "f[0] = __ldg(cf); u[0] = __ldg(u);", true, nullptr),
        BUILTIN("atomics",
                "atomicAdd(o, 1); atomicAdd(f, 1.0f); atomicCAS(o, 0, 1); atomicAdd_block(o, 1);",
                true, nullptr),
        BUILTIN("shfl_vote",
                "o[0] = __shfl_sync(0xffffffffu, o[0], 0) + __any_sync(0xffffffffu, 1) + "
                "(int)__activemask();",
                true, nullptr),
        BUILTIN("reduce_sync", "o[0] = (int)__reduce_add_sync(0xffffffffu, 1u);", true, nullptr),
        BUILTIN("math",
                "f[0] = sinf(f[0]) + sqrtf(f[0]) + __expf(f[0]) + fminf(f[0], 1.f) + fabsf(f[0]) + "
                "rsqrtf(f[0]) + __fdividef(f[0], 2.f);",
                true, nullptr),
        BUILTIN("math_double_overload", "f[0] = sin(f[0]);", true, nullptr),
        BUILTIN("min_max_abs",
                "o[0] = min(o[0], 1) + ::max(o[0], 1) + abs(o[0]); f[0] = max(f[0], 1.f);", true,
                nullptr),
        BUILTIN("isnan", "o[0] = isnan(f[0]);", true, nullptr),
        BUILTIN("intrinsics",
                "o[0] = __popc(o[0]) + __mul24(o[0], 2) + __float2int_rn(f[0]); f[0] = "
                "__int_as_float(o[0]);",
                true, nullptr),
        BUILTIN("fences", "__threadfence(); __threadfence_block(); __nanosleep(10);", true,
                nullptr),
        BUILTIN("trap", "if (o[0] == 7) __trap();", true, nullptr),
        BUILTIN("warp_size", "o[0] = warpSize;", true, nullptr),
        BUILTIN("vector_make",
                "float4 v = make_float4(1, 2, 3, 4); dim3 d(1, 2); f[0] = v.x + (float)d.y;", true,
                nullptr),
        BUILTIN("builtin_expect", "int x = o[1]; o[0] = __builtin_expect(x, 0);", true, nullptr),
        BUILTIN("globaltimer_refused", "u[0] = __globaltimer();", false, "__globaltimer"),
        BUILTIN("std_sin_refused", "f[0] = std::sin(f[0]);", false, "sin"),
        BUILTIN("std_max_refused", "o[0] = std::max(o[0], 1);", false, "max"),
        BUILTIN("std_numeric_limits_refused", "o[0] = std::numeric_limits<int>::max();", false,
                "numeric_limits"),
        BUILTIN("half_refused", "__half h; (void)h;", false, "__half"),
        BUILTIN("cuda_runtime_api_refused", "o[0] = (int)cudaGetLastError();", false,
                "cudaGetLastError"),
        BUILTIN("cuda_malloc_refused", "void* p; cudaMalloc(&p, 4);", false, "cudaMalloc"),
        BUILTIN("infinity_refused", "f[0] = INFINITY;", false, "INFINITY"),
        {"builtin_builtin_popcount_refused", "t.cu", "extern \"C\" __global__ void b(int* o) { o[0] = __builtin_popcount(3u); }\n", {}, {}, false, "__builtin_popcount", "the host compiler's built-ins are visible to the mock's programs"},
        BUILTIN("cuda_success", "cudaError_t e = cudaSuccess; o[0] = (int)e;", true, nullptr),
        // Namespace-scope variables need a memory space in JIT mode (unless -default-device).
        {"host_variable_refused", "t.cu", "int g;\n", {}, {}, false, "host variable", "the mock does not check the memory space of namespace-scope variables"},
        {"host_function_refused", "t.cu", "int f() { return 1; }\n", {}, {}, false, "host function", "the mock does not check the execution space of functions"},
        {"host_function_default_device", "t.cu", "int f() { return 1; }\n", {}, {"-default-device"}, true, nullptr},
        {"host_variable_default_device", "t.cu", "int g;\n", {}, {"-default-device"}, true, nullptr},
        {"macro___GNUC___undefined", "t.cu", "#ifdef __GNUC__\n#error __GNUC__ defined\n#endif\n", {}, {}, true, nullptr, "the mock's compiler is g++, whose headers and built-ins need __GNUC__"},
    };
    // clang-format on
    return c;
  }();
  return all;
}

// ---- running a case on a library --------------------------------------------------------

struct Api {
  void* handle = nullptr;
  decltype(&nvrtcCreateProgram) create = nullptr;
  decltype(&nvrtcCompileProgram) compile = nullptr;
  decltype(&nvrtcDestroyProgram) destroy = nullptr;
  decltype(&nvrtcGetProgramLogSize) log_size = nullptr;
  decltype(&nvrtcGetProgramLog) log = nullptr;
  decltype(&nvrtcGetErrorString) error_string = nullptr;
  decltype(&nvrtcVersion) version = nullptr;
  std::string error;
};

// Ours from this build tree unless the environment names another library.
const char* library_path() {
  const char* p = std::getenv("CUDAMUX_CONFORMANCE_NVRTC");
  return p != nullptr && *p != '\0' ? p : CUDAMUX_OUR_NVRTC;
}

Api& api() {
  static Api a = [] {
    Api r;
    r.handle = ::dlopen(library_path(), RTLD_NOW | RTLD_LOCAL);
    if (r.handle == nullptr) {
      r.error = ::dlerror();
      return r;
    }
    auto sym = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(r.handle, name));
      if (fn == nullptr) r.error += std::string(" missing ") + name;
    };
    sym(r.create, "nvrtcCreateProgram");
    sym(r.compile, "nvrtcCompileProgram");
    sym(r.destroy, "nvrtcDestroyProgram");
    sym(r.log_size, "nvrtcGetProgramLogSize");
    sym(r.log, "nvrtcGetProgramLog");
    sym(r.error_string, "nvrtcGetErrorString");
    sym(r.version, "nvrtcVersion");
    return r;
  }();
  return a;
}

struct Outcome {
  nvrtcResult create = NVRTC_ERROR_INTERNAL_ERROR;
  nvrtcResult compile = NVRTC_ERROR_INTERNAL_ERROR;
  std::string log;
};

// A fresh folder with kDisk, made the current directory for the case; restored afterwards.
class Sandbox {
 public:
  Sandbox() {
    std::string tmpl = (fs::temp_directory_path() / "cudamux-nvrtc-conf-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) return;
    dir_ = tmpl;
    for (const auto& f : kDisk) {
      const fs::path p = dir_ / f.path;
      fs::create_directories(p.parent_path());
      std::ofstream(p) << f.text;
    }
    old_ = fs::current_path();
    fs::current_path(dir_);
  }
  ~Sandbox() {
    std::error_code ec;
    if (!old_.empty()) fs::current_path(old_, ec);
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  Sandbox(const Sandbox&) = delete;
  Sandbox& operator=(const Sandbox&) = delete;
  bool ok() const { return !old_.empty(); }

 private:
  fs::path dir_;
  fs::path old_;
};

Outcome run_case(const Case& c) {
  Outcome out;
  Sandbox box;
  if (!box.ok()) {
    out.log = "cannot create a temporary folder";
    return out;
  }
  const Api& a = api();
  const std::string src = with_kernel(c.source);
  std::vector<const char*> texts;
  std::vector<const char*> names;
  for (const auto& h : c.headers) {
    texts.push_back(h.text);
    names.push_back(h.name);
  }
  nvrtcProgram prog = nullptr;
  out.create =
      a.create(&prog, src.c_str(), c.name, static_cast<int>(texts.size()),
               texts.empty() ? nullptr : texts.data(), names.empty() ? nullptr : names.data());
  if (out.create != NVRTC_SUCCESS) return out;
  out.compile = a.compile(prog, static_cast<int>(c.options.size()),
                          c.options.empty() ? nullptr : c.options.data());
  size_t n = 0;
  if (a.log_size(prog, &n) == NVRTC_SUCCESS && n > 1) {
    out.log.assign(n, '\0');
    a.log(prog, out.log.data());
    out.log.resize(n - 1);
  }
  a.destroy(&prog);
  return out;
}

// ---- as tests ---------------------------------------------------------------------------

class Conformance : public testing::TestWithParam<std::size_t> {};

TEST_P(Conformance, AsNvidiaNvrtc) {
  if (const char* need = std::getenv("CUDAMUX_CONFORMANCE_REQUIRE");
      need != nullptr && *need != '\0' && !fs::exists(need))
    GTEST_SKIP() << need << " is absent";
  const Api& a = api();
  ASSERT_TRUE(a.error.empty()) << library_path() << ":" << a.error;
  const Case& c = cases()[GetParam()];
  if (c.mock_gap != nullptr && std::string_view(library_path()) == CUDAMUX_OUR_NVRTC)
    GTEST_SKIP() << "known difference on the mock: " << c.mock_gap;
  const Outcome o = run_case(c);
  ASSERT_EQ(o.create, NVRTC_SUCCESS);
  if (c.compiles) {
    EXPECT_EQ(o.compile, NVRTC_SUCCESS) << "NVIDIA's NVRTC compiles this; log:\n" << o.log;
  } else {
    // NVIDIA's gives NVRTC_ERROR_COMPILATION, or NVRTC_ERROR_INVALID_OPTION for options.
    EXPECT_NE(o.compile, NVRTC_SUCCESS) << "NVIDIA's NVRTC refuses this";
    if (c.log_mentions != nullptr) {
      EXPECT_NE(o.log.find(c.log_mentions), std::string::npos)
          << "the log should name '" << c.log_mentions << "':\n"
          << o.log;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Nvrtc, Conformance, testing::Range<std::size_t>(0, cases().size()),
                         [](const testing::TestParamInfo<std::size_t>& param) {
                           return std::string(cases()[param.param].id);
                         });

TEST(ConformanceCases, IdsAreUnique) {
  std::vector<std::string> ids;
  for (const auto& c : cases()) ids.emplace_back(c.id);
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(std::adjacent_find(ids.begin(), ids.end()), ids.end());
}

int report() {
  const Api& a = api();
  if (!a.error.empty()) {
    std::fprintf(stderr, "%s:%s\n", library_path(), a.error.c_str());
    return 2;
  }
  int major = 0, minor = 0;
  a.version(&major, &minor);
  std::printf("library %s (NVRTC %d.%d)\n", library_path(), major, minor);
  int mismatches = 0;
  for (const auto& c : cases()) {
    const Outcome o = run_case(c);
    const bool ok = o.create == NVRTC_SUCCESS && o.compile == NVRTC_SUCCESS;
    const bool as_expected = ok == c.compiles;
    mismatches += as_expected ? 0 : 1;
    std::printf("%-40s %-28s %s%s\n", c.id, a.error_string(o.compile),
                as_expected ? "as recorded" : "DIFFERS from the recorded NVIDIA outcome",
                c.mock_gap != nullptr ? " (known mock gap)" : "");
    if (!o.log.empty() && (std::getenv("CUDAMUX_CONFORMANCE_LOGS") != nullptr || !as_expected)) {
      std::printf("    | %s\n", o.log.substr(0, 600).c_str());
    }
  }
  std::printf("%zu cases, %d differ\n", cases().size(), mismatches);
  return mismatches == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  // Ours runs on the mock from this build tree's plugin folder, without any user config.
  setenv("CUDAMUX_BACKEND", "mock", 0);
  setenv("CUDAMUX_CONFIG", "", 0);
  setenv("XDG_CONFIG_HOME", "/nonexistent-cudamux-test-config", 0);
  for (int i = 1; i < argc; ++i)
    if (std::string_view(argv[i]) == "--report") return report();
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
