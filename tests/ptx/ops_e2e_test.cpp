// ptx_ops.h end to end: nvcc's PTX (data/ops/ops_e2e.cu) -> parser -> C++ emitter -> g++ with
// the prelude, like the mock builds modules -> blocks on the device runtime. Expected values
// come from the host FPU switched to each rounding mode and from the ISA's definitions.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <bit>
#include <cfenv>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cudamux/device_abi.h"
#include "cudamux/ptx/emit_cpp.hpp"
#include "cudamux/ptx/ir.hpp"

namespace {

struct Module {
  void* handle = nullptr;
  const cudamux_module_desc* desc = nullptr;
  std::string error;
  ~Module() {
    if (handle != nullptr) dlclose(handle);
  }
  const cudamux_kernel_desc* kernel(const char* name) const {
    for (unsigned k = 0; desc != nullptr && k < desc->num_kernels; ++k) {
      Dl_info info{};
      if (dladdr(desc->kernels[k]->fn, &info) != 0 && info.dli_sname != nullptr &&
          std::string(info.dli_sname) == name)
        return desc->kernels[k];
    }
    return nullptr;
  }
};

// The fixture, parsed, emitted and built once for all tests.
Module* module() {
  static std::unique_ptr<Module> m = [] {
    auto r = std::make_unique<Module>();
    std::ifstream f(std::string(CUDAMUX_PTX_OPS_DATA) + "/ops_e2e.ptx");
    std::stringstream text;
    text << f.rdbuf();
    std::vector<cudamux::ptx::Diagnostic> diags;
    const auto parsed = cudamux::ptx::parse(text.str(), diags);
    if (!parsed) {
      r->error = "parse failed";
      return r;
    }
    const auto emitted = cudamux::ptx::emit_cpp(*parsed);
    for (const auto& u : emitted.unsupported) r->error += u.message + "\n";
    if (!r->error.empty()) return r;
    // Built once per content: ctest runs each case in its own process, and they share the
    // module through a file named by the hash of the source and the command.
    const std::string flags = std::string(" -std=c++17 -O1 -march=native -fPIC -shared") +
                              " -fno-gnu-unique -ffp-contract=off -fno-math-errno -w" +
                              " -include cudamux/prelude.h -I" + CUDAMUX_DEVICE_INCLUDE + " -I" +
                              CUDAMUX_DEVICE_ABI_INCLUDE;
    const std::string libs = std::string(" -L") + CUDAMUX_DEVICE_LIB_DIR +
                             " -lcudamux-device -Wl,-rpath," + CUDAMUX_DEVICE_LIB_DIR;
    // The key covers the headers too: a changed ptx_ops.h must rebuild.
    std::string headers;
    for (const char* h : {"/cudamux/ptx_ops.h", "/cudamux/prelude.h"}) {
      std::ifstream hf(std::string(CUDAMUX_DEVICE_INCLUDE) + h);
      headers.append(std::istreambuf_iterator<char>(hf), {});
    }
    const std::string key = std::to_string(
        std::hash<std::string>{}(emitted.source + headers + flags + libs + CUDAMUX_TEST_CXX));
    const std::string so = std::string(CUDAMUX_OPS_E2E_CACHE) + "/ops_e2e_" + key + ".so";
    if (access(so.c_str(), R_OK) != 0) {
      char dir[] = "/tmp/cudamux_ops_e2e_XXXXXX";
      if (mkdtemp(dir) == nullptr) {
        r->error = "mkdtemp";
        return r;
      }
      const std::string src = std::string(dir) + "/m.cpp", tmp = std::string(dir) + "/m.so",
                        log = std::string(dir) + "/log";
      std::ofstream(src) << emitted.source;
      // As the mock compiles modules, with fused multiply-adds off so that the plain f32
      // operations of the kernels have one reference.
      const std::string cmd = std::string(CUDAMUX_TEST_CXX) + flags + " " + src + " -o " + tmp +
                              libs + " > " + log + " 2>&1";
      if (std::system(cmd.c_str()) != 0) {
        std::ifstream l(log);
        r->error.assign(std::istreambuf_iterator<char>(l), {});
      } else if (std::rename(tmp.c_str(), so.c_str()) != 0) {  // atomic: concurrent runs
        r->error = "cannot store " + so;
      }
      std::remove(src.c_str());
      std::remove(tmp.c_str());
      std::remove(log.c_str());
      rmdir(dir);
      if (!r->error.empty()) return r;
    }
    r->handle = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (r->handle == nullptr) {
      r->error = dlerror();
      return r;
    }
    auto fn = reinterpret_cast<cudamux_module_fn>(dlsym(r->handle, CUDAMUX_MODULE_SYMBOL));
    if (fn != nullptr) r->desc = fn();
    return r;
  }();
  return m.get();
}

// One block of `threads` threads; the kernels take pointers only.
void run(const char* name, unsigned threads, std::vector<const void*> ptrs) {
  Module* m = module();
  ASSERT_TRUE(m->error.empty()) << m->error;
  const cudamux_kernel_desc* k = m->kernel(name);
  ASSERT_NE(k, nullptr);
  ASSERT_EQ(k->num_params, ptrs.size());
  std::vector<unsigned char> args(k->args_size);
  for (std::size_t i = 0; i < ptrs.size(); ++i)
    std::memcpy(args.data() + k->param_offsets[i], &ptrs[i], sizeof(void*));
  volatile int abort_flag = 0;
  cudamux_launch l{};
  l.loop = k->loop;
  l.args = args.data();
  l.grid = cudamux_u3{1, 1, 1};
  l.block = cudamux_u3{threads, 1, 1};
  l.abort = &abort_flag;
  l.flags = k->flags;
  l.kernel_fn = k->fn;
  l.args_size = k->args_size;
  alignas(64) static unsigned char shared[4096];
  char msg[256] = {};
  ASSERT_EQ(cudamux_run_block(&l, cudamux_u3{0, 0, 0}, shared, msg, sizeof msg), 0) << msg;
}

template <class F>
F in_mode(int mode, F (*op)(F, F, F), F a, F b, F c) {
  std::fesetround(mode);
  volatile F x = a, y = b, z = c;
  volatile F r = op(x, y, z);
  std::fesetround(FE_TONEAREST);
  return r;
}
float div3(float a, float, float) { return a / 3.0f; }
float sqrt1(float a, float, float) { return std::sqrt(a); }
float fma1(float a, float, float) { return std::fma(a, a, -1.0f); }
uint16_t half_bits(int mode, float x) {
  std::fesetround(mode);
  volatile float v = x;
  volatile _Float16 h = static_cast<_Float16>(v);
  std::fesetround(FE_TONEAREST);
  return std::bit_cast<uint16_t>(static_cast<_Float16>(h));
}

TEST(PtxOpsE2E, RoundingConversionsAndSaturation) {
  const std::vector<float> in = {1.0f, 2.0f,  0.1f, 1e-40f, 65520.0f, 100.0f, 1.0f + 0x1p-11f,
                                 7.0f, -1.5f, 0.0f, 3e9f,   65519.0f};
  const unsigned n = static_cast<unsigned>(in.size());
  std::vector<uint32_t> out(n * 12, 0xdeadbeefu);
  run("rounding", n, {in.data(), out.data()});
  for (unsigned t = 0; t < n; ++t) {
    const float x = in[t];
    const uint32_t* o = out.data() + t * 12;
    SCOPED_TRACE("x = " + std::to_string(x));
    EXPECT_EQ(o[0], std::bit_cast<uint32_t>(in_mode<float>(FE_TOWARDZERO, div3, x, 0, 0)));
    EXPECT_EQ(o[1], std::bit_cast<uint32_t>(in_mode<float>(FE_UPWARD, div3, x, 0, 0)));
    EXPECT_EQ(o[2], std::bit_cast<uint32_t>(in_mode<float>(FE_DOWNWARD, div3, x, 0, 0)));
    const float s = in_mode<float>(FE_DOWNWARD, sqrt1, x, 0, 0);
    if (std::isnan(s)) {
      EXPECT_TRUE(std::isnan(std::bit_cast<float>(o[3])));
    } else {
      EXPECT_EQ(o[3], std::bit_cast<uint32_t>(s));
    }
    EXPECT_EQ(o[4], std::bit_cast<uint32_t>(in_mode<float>(FE_UPWARD, fma1, x, 0, 0)));
    EXPECT_EQ(o[5], half_bits(FE_TONEAREST, x));
    EXPECT_EQ(o[6], half_bits(FE_TOWARDZERO, x));
    // cvt.rni.s32.f32 saturates.
    const float big = x * 1e9f;
    const double r = std::nearbyint(static_cast<double>(big));
    const int32_t want7 = r >= 2147483648.0   ? INT32_MAX
                          : r < -2147483648.0 ? INT32_MIN
                                              : static_cast<int32_t>(r);
    EXPECT_EQ(static_cast<int32_t>(o[7]), want7);
    // cvt.rmi.u32.f32: floor, clamped at 0.
    const double fl = std::floor(static_cast<double>(x));
    EXPECT_EQ(o[8], fl < 0 ? 0u : fl >= 4294967296.0 ? UINT32_MAX : static_cast<uint32_t>(fl));
    // f16 fma: h*h + 0.25 is exact in double here; rounded once.
    const double hx = static_cast<double>(static_cast<_Float16>(x));
    EXPECT_EQ(o[9], std::bit_cast<uint16_t>(static_cast<_Float16>(hx * hx + 0.25))) << hx;
    volatile float fmax = std::bit_cast<float>(0x7f7fffffu), one = 1.0f;
    EXPECT_EQ(o[10], std::bit_cast<uint32_t>(fmax * (x + one)));
    // cvt.rzi.s64.f64 saturates; the kernel keeps the low 32 bits.
    const double p = static_cast<double>(x) * 1e20;
    const int64_t ll = p >= 0x1p63 ? INT64_MAX : p < -0x1p63 ? INT64_MIN : static_cast<int64_t>(p);
    EXPECT_EQ(o[11], static_cast<uint32_t>(ll));
  }
}

TEST(PtxOpsE2E, WarpCollectivesPermutesAndPrintf) {
  std::vector<uint32_t> in(32), out(32 * 6, 0xdeadbeefu);
  uint32_t sum = 0, ballot = 0;
  for (uint32_t t = 0; t < 32; ++t) {
    in[t] = t * 0x01020305u + 0x10000u * (t % 5);
    sum += in[t];
    if ((in[t] & 1u) != 0) ballot |= 1u << t;
  }
  testing::internal::CaptureStdout();
  run("warp", 32, {in.data(), out.data()});
  const std::string printed = testing::internal::GetCapturedStdout();
  for (uint32_t t = 0; t < 32; ++t) {
    const uint32_t* o = out.data() + t * 6;
    const uint32_t v = in[t];
    EXPECT_EQ(o[0], in[t ^ 1u]) << t;
    EXPECT_EQ(o[1], (t % 8) + 3 < 8 ? in[t + 3] : v) << t;
    EXPECT_EQ(o[2], ballot);
    EXPECT_EQ(o[3], sum);
    // __byte_perm(v, t, 0x5140): bytes v.b0, t.b0, v.b1, t.b1 (b of t is bytes 4..7).
    EXPECT_EQ(o[4], (v & 0xffu) | ((t & 0xffu) << 8) | (((v >> 8) & 0xffu) << 16) |
                        (((t >> 8) & 0xffu) << 24))
        << t;
    const uint64_t funnel = (static_cast<uint64_t>(t) << 32) | v;
    EXPECT_EQ(o[5], static_cast<uint32_t>((funnel << (t & 31u)) >> 32)) << t;
  }
  EXPECT_EQ(printed, "lane 5: -5  1.25 ok 123456789abc|\n");
}

TEST(PtxOpsE2E, AtomicsFromManyThreads) {
  std::vector<uint32_t> u(64, 0);
  float f = 0.0f;
  uint32_t h = 0;  // half2
  int32_t s[2] = {INT32_MIN, INT32_MAX};
  double d = 0.0;
  run("atomics", 32, {u.data(), &f, &h, s, &d});
  EXPECT_EQ(u[0], 32u % 10u);  // inc wraps at 9: 0..9, 0..9, 0..9, 0, 1
  EXPECT_EQ(u[1], 4u);         // dec at 5: 0 -> 5 -> 4 ... -> 0 every 6 steps; 32 = 5 * 6 + 2
  EXPECT_EQ(f, 16.0f);
  EXPECT_EQ(s[0], 11);
  EXPECT_EQ(s[1], -20);
  EXPECT_EQ(h, 0x48005000u);  // (32.0, 8.0)
  int winners = 0;
  uint32_t winner = 0;
  for (uint32_t t = 0; t < 32; ++t) {
    if (u[5 + t] == 0) {
      ++winners;
      winner = t;
    } else {
      EXPECT_EQ(u[5 + t], u[2]);  // the others saw the winner's value
    }
  }
  EXPECT_EQ(winners, 1);
  EXPECT_EQ(u[2], 100u + winner);
  EXPECT_EQ(u[3], 0xffffffffu);
  EXPECT_EQ(u[4], 77u);
  EXPECT_EQ(d, 4.0);
}

// Independent references for the integer kernel (bit loops as the ISA's pseudo-code writes them).
uint32_t ref_bfe_s32(uint32_t a, uint32_t pos, uint32_t len) {
  pos &= 0xff;
  len &= 0xff;
  const uint32_t top = pos + len - 1 < 31 ? pos + len - 1 : 31;
  const uint32_t sbit = len == 0 ? 0 : (a >> top) & 1u;
  uint32_t d = 0;
  for (uint32_t i = 0; i <= 31; ++i) {
    const uint32_t bit = (i < len && pos + i <= 31) ? (a >> (pos + i)) & 1u : sbit;
    d |= bit << i;
  }
  return d;
}
uint32_t ref_bfi(uint32_t a, uint32_t b, uint32_t pos, uint32_t len) {
  for (uint32_t i = 0; i < len && pos + i <= 31; ++i)
    b = (b & ~(1u << (pos + i))) | (((a >> i) & 1u) << (pos + i));
  return b;
}
uint32_t ref_fns(uint32_t mask, uint32_t base, int offset) {
  if (offset == 0) return ((mask >> base) & 1u) != 0 ? base : 0xffffffffu;
  int count = (offset < 0 ? -offset : offset) - 1;
  for (int pos = static_cast<int>(base); pos >= 0 && pos<32; pos += offset> 0 ? 1 : -1) {
    if (((mask >> pos) & 1u) != 0) {
      if (count == 0) return static_cast<uint32_t>(pos);
      --count;
    }
  }
  return 0xffffffffu;
}
bool nan32(uint32_t x) { return (x & 0x7fffffffu) > 0x7f800000u; }
// min.NaN.f32 / max.f32 (PTX: one NaN gives the other operand; canonical NaN; -0 < +0).
uint32_t ref_min_nan(uint32_t a, uint32_t b) {
  if (nan32(a) || nan32(b)) return 0x7fffffffu;
  const float x = std::bit_cast<float>(a), y = std::bit_cast<float>(b);
  if (x == y) return (a >> 31) != 0 ? a : b;
  return x < y ? a : b;
}
uint32_t ref_max(uint32_t a, uint32_t b) {
  if (nan32(a) && nan32(b)) return 0x7fffffffu;
  if (nan32(a)) return b;
  if (nan32(b)) return a;
  const float x = std::bit_cast<float>(a), y = std::bit_cast<float>(b);
  if (x == y) return (a >> 31) == 0 ? a : b;
  return x > y ? a : b;
}

TEST(PtxOpsE2E, IntegerAndBitOperations) {
  std::vector<uint32_t> in = {
      7, 0,           0x80000000u, 0xffffffffu, 0xfffffff9u, 0,           100, 7, 0xffffff9cu,
      7, 0x7fc00000u, 0x3f800000u, 0x7fc00000u, 0x7fc00001u, 0x80000000u, 0,   0, 0x80000000u};
  uint32_t x = 12345;
  while (in.size() < 64) {
    x = x * 1103515245u + 12345u;
    in.push_back(x ^ (x >> 7));
  }
  std::vector<uint32_t> out(32 * 20, 0xdeadbeefu);
  run("integer", 32, {in.data(), out.data()});
  for (uint32_t t = 0; t < 32; ++t) {
    const uint32_t a = in[2 * t], b = in[2 * t + 1];
    const int32_t sa = static_cast<int32_t>(a), sb = static_cast<int32_t>(b);
    const uint32_t* o = out.data() + t * 20;
    SCOPED_TRACE("t " + std::to_string(t) + " a " + std::to_string(a) + " b " + std::to_string(b));
    EXPECT_EQ(o[0], static_cast<uint32_t>((static_cast<uint64_t>(a) * b) >> 32));
    EXPECT_EQ(o[1], static_cast<uint32_t>((static_cast<int64_t>(sa) * sb) >> 32));
    const int64_t a24 = static_cast<int32_t>(a << 8) >> 8, b24 = static_cast<int32_t>(b << 8) >> 8;
    EXPECT_EQ(o[2], static_cast<uint32_t>(a24 * b24));
    EXPECT_EQ(o[3], b == 0 ? 0xffffffffu : a / b);
    EXPECT_EQ(o[4], b == 0 ? a : a % b);
    const int32_t q = sb == 0                         ? (sa < 0 ? 1 : -1)
                      : (sa == INT32_MIN && sb == -1) ? INT32_MIN
                                                      : sa / sb;
    const int32_t r = sb == 0 ? sa : sb == -1 ? 0 : sa % sb;
    EXPECT_EQ(o[5], static_cast<uint32_t>(q));
    EXPECT_EQ(o[6], static_cast<uint32_t>(r));
    uint32_t rev = 0;
    for (int i = 0; i < 32; ++i) rev |= ((a >> i) & 1u) << (31 - i);
    EXPECT_EQ(o[7], rev ^ (static_cast<uint32_t>(a == 0 ? 32 : __builtin_clz(a)) << 8) ^
                        static_cast<uint32_t>(__builtin_popcount(b)));
    int32_t dp = 7;
    for (int i = 0; i < 4; ++i)
      dp += static_cast<int8_t>(a >> (8 * i)) * static_cast<int8_t>(b >> (8 * i));
    EXPECT_EQ(o[8], static_cast<uint32_t>(dp));
    const uint32_t dp2 = 3u + (a & 0xffffu) * ((b >> 16) & 0xffu) + (a >> 16) * (b >> 24);
    EXPECT_EQ(o[9], dp2);
    EXPECT_EQ(o[10], ref_fns(a, b & 31u, static_cast<int>(t % 5) - 2));
    const uint32_t n = t * 3 > 32 ? 32 : t * 3;
    EXPECT_EQ(o[11], static_cast<uint32_t>(((static_cast<uint64_t>(b) << 32) | a) >> n));
    EXPECT_EQ(o[12], ref_bfe_s32(a, b & 0xffu, (b >> 8) & 0xffu));
    EXPECT_EQ(o[13], ref_bfi(a, b, t, 7));
    const uint32_t inv = sa < 0 ? ~a : a;
    EXPECT_EQ(o[14], inv == 0 ? 0xffffffffu : 31u - static_cast<uint32_t>(__builtin_clz(inv)));
    static const int ecl[4][4] = {{0, 1, 2, 3}, {1, 1, 2, 3}, {2, 2, 2, 3}, {3, 3, 3, 3}};
    uint32_t pe = 0;
    for (int i = 0; i < 4; ++i) pe |= ((a >> (8 * ecl[t & 3][i])) & 0xffu) << (8 * i);
    EXPECT_EQ(o[15], pe);
    const uint32_t c = t * 0x01010101u;
    EXPECT_EQ(o[16], (a & b) | (a & c) | (b & c));
    EXPECT_EQ(o[17], (a > b ? a - b : b - a) + t);
    EXPECT_EQ(o[18], ref_min_nan(a, b));
    EXPECT_EQ(o[19], ref_max(a, b));
  }
}

uint16_t ref_bf16(float f) {  // round to nearest even on the bits
  const uint32_t b = std::bit_cast<uint32_t>(f);
  if (nan32(b)) return 0x7fff;
  uint32_t upper = b >> 16;
  const uint32_t lower = b & 0xffffu;
  if (lower > 0x8000u || (lower == 0x8000u && (upper & 1u) != 0)) ++upper;
  return static_cast<uint16_t>(upper);
}
float bf16_value(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }
bool near(float got, double want, double rel, double abs) {
  if (std::isinf(static_cast<float>(want))) want = static_cast<float>(want);  // f32 overflow
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::fabs(got - want) <= rel * std::fabs(want) + abs;
}

TEST(PtxOpsE2E, FloatFunctionsAndConversions) {
  const std::vector<float> in = {
      1.0f, 2.0f,   0.5f,   -1.5f,           3.0f,     0.1f,  1e-40f, -0.0f, 10.0f,
      0.7f, 100.0f, -3.25f, 1.0f + 0x1p-11f, 65504.0f, 1e30f, NAN};
  const unsigned n = static_cast<unsigned>(in.size());
  std::vector<uint32_t> out(n * 14, 0xdeadbeefu);
  run("floats", n, {in.data(), out.data()});
  for (unsigned t = 0; t < n; ++t) {
    const float x = in[t];
    const uint32_t* o = out.data() + t * 14;
    auto f = [&](int i) { return std::bit_cast<float>(o[i]); };
    SCOPED_TRACE("x = " + std::to_string(x));
    volatile float vx = x;
    const float rcp = 1.0f / vx;
    if (std::isnan(x)) {
      EXPECT_TRUE(std::isnan(f(0)));
    } else {
      EXPECT_EQ(o[0], std::bit_cast<uint32_t>(rcp));
    }
    EXPECT_TRUE(near(f(1), std::exp(static_cast<double>(x)), 2e-6, 0)) << f(1);  // ex2.approx
    if (std::fabs(x) < 6.2f) {
      EXPECT_TRUE(near(f(2), std::sin(static_cast<double>(x)), 0, 0x1p-20)) << f(2);
    }
    EXPECT_TRUE(near(f(3), static_cast<double>(x) / 3.0, 3e-7, 0x1p-148)) << f(3);  // div.approx
    EXPECT_TRUE(near(f(4), std::tanh(static_cast<double>(x)), 0x1p-10, 1e-30))
        << f(4);  // tanh.approx
    std::fesetround(FE_TOWARDZERO);
    volatile double q = static_cast<double>(x) / 3.0;
    volatile float qz = static_cast<float>(q);
    std::fesetround(FE_TONEAREST);
    if (std::isnan(x)) {
      EXPECT_TRUE(std::isnan(f(5)));
    } else {
      EXPECT_EQ(o[5], std::bit_cast<uint32_t>(static_cast<float>(qz)));
    }
    EXPECT_EQ(o[6], 0x5f7fffffu);  // just below 2^64, rounded down
    EXPECT_EQ(o[7], std::isnormal(x) ? 1u : 0u);
    EXPECT_EQ(o[8], ref_bf16(x));
    const double h = bf16_value(ref_bf16(x));
    EXPECT_EQ(o[9], ref_bf16(static_cast<float>(h * h - 1.0)));
    EXPECT_EQ(f(10), std::isnan(x) ? 0.0f : x < 0 ? 0.0f : x > 1 ? 1.0f : x);
    EXPECT_EQ(std::bit_cast<uint32_t>(f(10)) >> 31, 0u);  // -0 saturates to +0
    if (std::isnan(x)) {
      EXPECT_TRUE(std::isnan(f(11)));
    } else {
      EXPECT_EQ(f(11), std::nearbyint(x));
    }
    auto half = [](float v) -> uint32_t {
      return std::isnan(v) ? 0x7fffu : std::bit_cast<uint16_t>(static_cast<_Float16>(v));
    };
    EXPECT_EQ(o[12], half(x) | (half(-x) << 16));
    EXPECT_TRUE(near(f(13), std::log2(static_cast<double>(x)), 2e-7, 0x1p-22))
        << f(13);  // lg2.approx
  }
}

}  // namespace
