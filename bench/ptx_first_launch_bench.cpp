// First launch of a PTX kernel on the mock (issue 15 item 3): a generated module of 100 kernels
// (half with bar.sync, a few .func helpers, module variables), loaded as PTX; one kernel
// launched. Printed, as numbers and as ratios to the targets (never asserted):
//   * load (parse, lay out; nothing compiled)
//   * first launch, cold cache (translate the kernel alone, g++, load)     target <= 300 ms
//   * first launch of a fresh module of the same PTX, warm cache           target <= 5 ms
//   * a second kernel of the same module, cold
// With --eager, also the whole-module compilation at load (CUDAMUX_MOCK_PTX_LAZY=0).
// Run: build/bin/cudamux_bench_ptx_first_launch [--kernels N] [--eager] [--verbose]
#include <dlfcn.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <stdlib.h>
#include <toml++/toml.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cudamux/backend.hpp"
#include "mock_backend.hpp"

namespace be = cudamux::backend;

namespace {

bool g_verbose = false;  // --verbose: the mock's debug log (compile times) on stderr

[[noreturn]] void die(const std::string& what) {
  cudamux::bench::die("bench_ptx_first_launch", what);
}

std::unique_ptr<be::Backend> make_backend(const std::string& toml_text) {
  return cudamux::bench::make_mock_backend("bench_ptx_first_launch", toml_text, g_verbose);
}

// nvcc-like PTX: kernel k scales, offsets and (odd k) reduces through shared memory with
// bar.sync; every fourth calls a .func helper; all read a module variable.
std::string generate(int kernels) {
  std::ostringstream o;
  o << ".version 8.5\n.target sm_75\n.address_size 64\n\n";
  o << ".global .align 4 .b8 coeffs[16] = {0, 0, 128, 63, 0, 0, 0, 64, 0, 0, 64, 64, 0, 0, 128, "
       "64};\n\n";
  for (int h = 0; h < 4; ++h)
    o << ".func (.param .b32 r) helper" << h << "(.param .b32 x)\n{\n  .reg .f32 %f<4>;\n"
      << "  ld.param.f32 %f1, [x];\n  mul.rn.f32 %f2, %f1, %f1;\n  add.rn.f32 %f3, %f2, 0f"
      << std::hex << 0x3F800000 + h * 0x100000 << std::dec
      << ";\n  st.param.f32 [r], %f3;\n  ret;\n}\n\n";
  for (int k = 0; k < kernels; ++k) {
    const bool barrier = k % 2 == 1;
    o << ".visible .entry kernel" << k << "(.param .u64 out, .param .u32 n)\n{\n";
    o << "  .reg .pred %p<3>;\n  .reg .b32 %r<12>;\n  .reg .f32 %f<12>;\n  .reg .b64 %rd<8>;\n";
    if (barrier) o << "  .shared .align 4 .b8 sm[1024];\n";
    o << "  ld.param.u64 %rd1, [out];\n  ld.param.u32 %r1, [n];\n"
      << "  mov.u32 %r2, %ctaid.x;\n  mov.u32 %r3, %ntid.x;\n  mov.u32 %r4, %tid.x;\n"
      << "  mad.lo.s32 %r5, %r2, %r3, %r4;\n  cvt.rn.f32.s32 %f1, %r5;\n"
      << "  and.b32 %r6, %r5, 3;\n  mul.wide.u32 %rd2, %r6, 4;\n"
      << "  mov.u64 %rd3, coeffs;\n  add.s64 %rd4, %rd3, %rd2;\n  ld.global.f32 %f2, [%rd4];\n"
      << "  fma.rn.f32 %f3, %f1, %f2, 0f" << std::hex << 0x3F000000 + k * 0x1000 << std::dec
      << ";\n";
    if (k % 4 == 0)
      o << "  { .param .b32 a; .param .b32 r;\n    st.param.f32 [a], %f3;\n    call.uni (r), "
           "helper"
        << (k / 4) % 4 << ", (a);\n    ld.param.f32 %f3, [r]; }\n";
    if (barrier) {
      o << "  shl.b32 %r7, %r4, 2;\n  mov.u32 %r8, sm;\n  add.s32 %r9, %r8, %r7;\n"
        << "  st.shared.f32 [%r9], %f3;\n  bar.sync 0;\n"
        << "  xor.b32 %r10, %r4, 1;\n  shl.b32 %r10, %r10, 2;\n  add.s32 %r10, %r8, %r10;\n"
        << "  ld.shared.f32 %f4, [%r10];\n  add.rn.f32 %f3, %f3, %f4;\n  bar.sync 0;\n";
    }
    o << "  setp.ge.s32 %p1, %r5, %r1;\n  @%p1 bra DONE;\n"
      << "  cvta.to.global.u64 %rd5, %rd1;\n  mul.wide.s32 %rd6, %r5, 4;\n"
      << "  add.s64 %rd7, %rd5, %rd6;\n  st.global.f32 [%rd7], %f3;\nDONE:\n  ret;\n}\n\n";
  }
  return o.str();
}

using Clock = std::chrono::steady_clock;
double ms(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

struct Env {
  std::unique_ptr<be::Backend> backend;
  std::unique_ptr<be::DeviceContext> ctx;
  std::unique_ptr<be::Queue> queue;
  explicit Env(const std::string& cache_dir) {
    backend = make_backend("[mock]\nmemory = 268435456\ncache_dir = \"" + cache_dir + "\"\n");
    if (!backend->open_context(0, 0, ctx).ok()) die("open_context");
    if (!ctx->create_queue(CU_STREAM_NON_BLOCKING, 0, queue).ok()) die("create_queue");
  }
  std::unique_ptr<be::Module> load(const std::string& text) {
    std::unique_ptr<be::Module> m;
    be::ModuleImage im{be::ImageKind::ptx, text.c_str(), text.size() + 1, 75};
    if (!ctx->load_module(im, m).ok()) die("load_module (PTX)");
    return m;
  }
  void launch(be::Module& m, const std::string& name, float* out, unsigned n) {
    be::Function* f = m.function(name);
    if (f == nullptr) die("no kernel " + name);
    std::vector<std::byte> buf(16);
    std::memcpy(buf.data() + f->params()[0].offset, &out, sizeof out);
    std::memcpy(buf.data() + f->params()[1].offset, &n, sizeof n);
    be::LaunchDesc d;
    d.function = f;
    d.grid[0] = (n + 255) / 256;
    d.block[0] = 256;
    d.args = buf.data();
    d.args_size = buf.size();
    if (!queue->launch(d).ok()) die("launch " + name);
    if (!queue->synchronize().ok()) die("kernel " + name);
  }
};

// Median of the cold first launches of `names` (each compiled once): steadier than one
// launch on a machine shared with other work.
double median_cold(Env& env, be::Module& m, const std::vector<std::string>& names,
                   std::vector<float>& out) {
  std::vector<double> t;
  for (const auto& n : names) {
    const auto t0 = Clock::now();
    env.launch(m, n, out.data(), 4096);
    t.push_back(ms(t0, Clock::now()));
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

void row(const char* what, double v, double target) {
  if (target > 0)
    std::printf("  %-58s %9.1f ms   %6.2fx of the target (%g ms)\n", what, v, v / target, target);
  else
    std::printf("  %-58s %9.1f ms\n", what, v);
}

}  // namespace

int main(int argc, char** argv) {
  int kernels = 100;
  bool eager = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--kernels") == 0 && i + 1 < argc) kernels = std::atoi(argv[++i]);
    if (std::strcmp(argv[i], "--eager") == 0) eager = true;
    if (std::strcmp(argv[i], "--verbose") == 0) g_verbose = true;
  }
  char tmpl[] = "/tmp/cudamux-bench-ptx-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) die("mkdtemp");
  const std::string dir = tmpl;
  const std::string text = generate(kernels);
  std::vector<float> out(4096);
  // Kernels with bar.sync (odd) and with a helper call (multiples of 4), in the middle.
  const std::string k = "kernel" + std::to_string(kernels / 2 + 1);
  const std::string k2 = "kernel" + std::to_string(kernels / 2 + 3);
  const std::string k3 = "kernel" + std::to_string(kernels / 4 * 2);
  std::printf("PTX first launch, %d-kernel module (%zu bytes of PTX), kernels %s, %s, %s:\n",
              kernels, text.size(), k.c_str(), k2.c_str(), k3.c_str());
  {
    Env env(dir + "/cache");
    auto t0 = Clock::now();
    auto m = env.load(text);
    auto t1 = Clock::now();
    env.launch(*m, k, out.data(), 4096);
    auto t2 = Clock::now();
    env.launch(*m, k, out.data(), 4096);
    auto t3 = Clock::now();
    row("load (parse, lay out variables; nothing compiled)", ms(t0, t1), 0);
    row("first launch, empty cache folder (+ the precompiled header)", ms(t1, t2), 300);
    row("next launch (compiled)", ms(t2, t3), 0);
    auto t4 = Clock::now();
    env.launch(*m, k2, out.data(), 4096);
    auto t5 = Clock::now();
    env.launch(*m, k3, out.data(), 4096);
    auto t6 = Clock::now();
    row("first launch of a bar.sync kernel, cold", ms(t4, t5), 300);
    row("first launch of a kernel calling a .func, cold", ms(t5, t6), 300);
    std::vector<std::string> barrier_kernels, helper_kernels;
    for (int i = 0; i < 7 && 4 * i + 11 < kernels; ++i) {
      barrier_kernels.push_back("kernel" + std::to_string(4 * i + 9));
      helper_kernels.push_back("kernel" + std::to_string(4 * i + 8));
    }
    if (!barrier_kernels.empty()) {
      row("median of 7 more bar.sync kernels, cold", median_cold(env, *m, barrier_kernels, out),
          300);
      row("median of 7 more kernels calling a .func, cold",
          median_cold(env, *m, helper_kernels, out), 300);
    }
    m.reset();
    auto t7 = Clock::now();
    auto m2 = env.load(text);
    auto t8 = Clock::now();
    env.launch(*m2, k, out.data(), 4096);
    auto t9 = Clock::now();
    row("load of the same PTX again", ms(t7, t8), 0);
    row("first launch, warm cache (fresh module, same PTX)", ms(t8, t9), 5);
  }
  {
    // A new backend: what a second process sees (settings and cache read anew).
    Env env(dir + "/cache");
    auto m = env.load(text);
    auto t0 = Clock::now();
    env.launch(*m, k2, out.data(), 4096);
    row("first launch, warm cache (new backend instance)", ms(t0, Clock::now()), 5);
  }
  {
    // Without the precompiled header: the prelude and ptx_ops.h parsed by every compile.
    ::setenv("CUDAMUX_MOCK_PTX_PCH", "0", 1);
    Env env(dir + "/cache-nopch");
    auto m = env.load(text);
    auto t0 = Clock::now();
    env.launch(*m, k, out.data(), 4096);
    auto t1 = Clock::now();
    env.launch(*m, k2, out.data(), 4096);
    row("no precompiled header: first launch, cold", ms(t0, t1), 300);
    row("no precompiled header: another kernel, cold", ms(t1, Clock::now()), 300);
    std::vector<std::string> names;
    for (int i = 0; i < 7 && 4 * i + 11 < kernels; ++i)
      names.push_back("kernel" + std::to_string(4 * i + 9));
    if (!names.empty())
      row("no precompiled header: median of 7 bar.sync kernels, cold",
          median_cold(env, *m, names, out), 300);
    ::unsetenv("CUDAMUX_MOCK_PTX_PCH");
  }
  if (eager) {
    ::setenv("CUDAMUX_MOCK_PTX_LAZY", "0", 1);
    Env env(dir + "/cache-eager");
    auto t0 = Clock::now();
    auto m = env.load(text);
    auto t1 = Clock::now();
    env.launch(*m, k, out.data(), 4096);
    row("eager: load = whole-module compile, cold", ms(t0, t1), 0);
    row("eager: first launch after it", ms(t1, Clock::now()), 0);
    m.reset();
    auto t2 = Clock::now();
    m = env.load(text);
    row("eager: load, warm cache", ms(t2, Clock::now()), 0);
    ::unsetenv("CUDAMUX_MOCK_PTX_LAZY");
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return 0;
}
