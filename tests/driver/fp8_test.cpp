// cuda_fp8.h in NVRTC programs (tinygrad's fp8 kernels include it): conversions to and from
// E4M3 and E5M2 as the OCP formats and NVIDIA's header define them. On the cuda backend the
// same kernel runs NVIDIA's header and hardware, so the expectations below are checked there.
#include <cuda.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "conformance.hpp"
#include "nvrtc_compile.hpp"

namespace {

using conformance::DeviceBuffer;
using conformance::Driver;

// NVIDIA's NVRTC finds cuda_fp8.h only in a named folder (the toolkit's); ours has it built in
// and is passed over a missing folder, so the option suits both.
const char kSource[] = R"(
#include <cuda_fp8.h>
extern "C" __global__ void encode(const float* in, int n, unsigned char* out) {
  for (int i = 0; i < n; ++i) {
    out[4 * i + 0] = __nv_cvt_float_to_fp8(in[i], __NV_NOSAT, __NV_E4M3);
    out[4 * i + 1] = __nv_cvt_float_to_fp8(in[i], __NV_SATFINITE, __NV_E4M3);
    out[4 * i + 2] = __nv_cvt_float_to_fp8(in[i], __NV_NOSAT, __NV_E5M2);
    out[4 * i + 3] = __nv_fp8_e5m2(in[i]).__x;  // the constructor saturates
  }
}
extern "C" __global__ void decode(float* e4m3, float* e5m2) {
  const int code = threadIdx.x;
  __nv_fp8_e4m3 a;
  a.__x = static_cast<__nv_fp8_storage_t>(code);
  __nv_fp8_e5m2 b;
  b.__x = static_cast<__nv_fp8_storage_t>(code);
  e4m3[code] = static_cast<float>(a);
  e5m2[code] = static_cast<float>(b);
}
)";

// The value of an fp8 code from the format's definition: sign, exponent with `bias`,
// `mantissa_bits` of fraction, subnormals at exponent field 0.
double format_value(unsigned code, int mantissa_bits, int bias) {
  const unsigned magnitude = code & 0x7Fu;
  const int exp_field = static_cast<int>(magnitude >> mantissa_bits);
  const unsigned fraction = magnitude & ((1u << mantissa_bits) - 1u);
  const double v = exp_field == 0 ? std::ldexp(fraction, 1 - bias - mantissa_bits)
                                  : std::ldexp((1u << mantissa_bits) | fraction,
                                               exp_field - bias - mantissa_bits);
  return (code & 0x80u) ? -v : v;
}

class Fp8 : public Driver {
 protected:
  CUmodule mod = nullptr;
  // Called by each test after its known differences (the fake HIP loads no modules).
  void load() {
    std::string ptx, log;
    ASSERT_TRUE(conformance::compile_ptx(kSource, "fp8.cu", ptx, log,
                                         {"-I/usr/local/cuda/include", "-arch=compute_89"}))
        << log;
    ASSERT_OK(cuModuleLoadData(&mod, ptx.data()));
  }
  void TearDown() override {
    if (mod != nullptr) {
      EXPECT_OK(cuModuleUnload(mod));
    }
    Driver::TearDown();
  }
};

TEST_F(Fp8, EncodingRoundsToNearestEvenAndSaturatesOnRequest) {
  CUDAMUX_KNOWN_DIFFERENCE("hip", "the fake HIP of the tests loads no modules");
  ASSERT_NO_FATAL_FAILURE(load());
  struct Case {
    float in;
    unsigned char e4m3_nosat, e4m3_sat, e5m2_nosat, e5m2_ctor;
  };
  const float nan = std::nanf("");
  const std::vector<Case> cases = {
      {1.5f, 0x3C, 0x3C, 0x3E, 0x3E},
      {-1.5f, 0xBC, 0xBC, 0xBE, 0xBE},
      {0.0f, 0x00, 0x00, 0x00, 0x00},
      {448.0f, 0x7E, 0x7E, 0x5F, 0x5F},    // E4M3's largest finite value
      {464.0f, 0x7E, 0x7E, 0x5F, 0x5F},    // E4M3: a tie with the next (NaN) code goes to even
      {465.0f, 0x7F, 0x7E, 0x5F, 0x5F},    // past it: NaN, or the largest value when saturating
      {57344.0f, 0x7F, 0x7E, 0x7B, 0x7B},  // E5M2's largest finite value
      {61440.0f, 0x7F, 0x7E, 0x7C, 0x7B},  // E5M2: the tie goes to even, which is infinity
      {-1e9f, 0xFF, 0xFE, 0xFC, 0xFB},
      {INFINITY, 0x7F, 0x7E, 0x7C, 0x7B},
      {std::ldexp(1.0f, -9), 0x01, 0x01, 0x18, 0x18},   // E4M3's smallest subnormal
      {std::ldexp(1.0f, -10), 0x00, 0x00, 0x14, 0x14},  // half of it: ties to even (zero)
      {std::ldexp(1.5f, -10), 0x01, 0x01, 0x16, 0x16},  // above half: rounds up
      {std::ldexp(1.0f, -16), 0x00, 0x00, 0x01, 0x01},  // E5M2's smallest subnormal
      {1.0625f, 0x38, 0x38, 0x3C, 0x3C},                // E4M3 tie between 1 and 1.125
      {1.1875f, 0x3A, 0x3A, 0x3D, 0x3D},                // E4M3 tie between 1.125 and 1.25
      {nan, 0x7F, 0x7F, 0x7F, 0x7F},  // a float NaN is canonical first: 0x7F in both formats
      {-nan, 0x7F, 0x7F, 0x7F, 0x7F},
  };
  std::vector<float> in;
  for (const auto& c : cases) in.push_back(c.in);
  const int n = static_cast<int>(in.size());
  DeviceBuffer din(in.size() * sizeof(float)), dout(in.size() * 4);
  ASSERT_OK(cuMemcpyHtoD_v2(din.ptr, in.data(), in.size() * sizeof(float)));
  CUfunction f = nullptr;
  ASSERT_OK(cuModuleGetFunction(&f, mod, "encode"));
  void* args[] = {&din.ptr, const_cast<int*>(&n), &dout.ptr};
  ASSERT_OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr));
  std::vector<unsigned char> out(in.size() * 4);
  ASSERT_OK(cuMemcpyDtoH_v2(out.data(), dout.ptr, out.size()));
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    EXPECT_EQ(out[4 * i + 0], c.e4m3_nosat) << "E4M3 no saturation of " << c.in;
    EXPECT_EQ(out[4 * i + 1], c.e4m3_sat) << "E4M3 saturated " << c.in;
    EXPECT_EQ(out[4 * i + 2], c.e5m2_nosat) << "E5M2 no saturation of " << c.in;
    EXPECT_EQ(out[4 * i + 3], c.e5m2_ctor) << "__nv_fp8_e5m2(" << c.in << ")";
  }
}

TEST_F(Fp8, EveryCodeDecodesToItsValue) {
  CUDAMUX_KNOWN_DIFFERENCE("hip", "the fake HIP of the tests loads no modules");
  ASSERT_NO_FATAL_FAILURE(load());
  DeviceBuffer a(256 * sizeof(float)), b(256 * sizeof(float));
  CUfunction f = nullptr;
  ASSERT_OK(cuModuleGetFunction(&f, mod, "decode"));
  void* args[] = {&a.ptr, &b.ptr};
  ASSERT_OK(cuLaunchKernel(f, 1, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr));
  std::vector<float> e4m3(256), e5m2(256);
  ASSERT_OK(cuMemcpyDtoH_v2(e4m3.data(), a.ptr, 256 * sizeof(float)));
  ASSERT_OK(cuMemcpyDtoH_v2(e5m2.data(), b.ptr, 256 * sizeof(float)));
  for (unsigned code = 0; code < 256; ++code) {
    const unsigned magnitude = code & 0x7Fu;
    if (magnitude == 0x7F)
      EXPECT_TRUE(std::isnan(e4m3[code])) << "E4M3 code " << code;
    else
      EXPECT_EQ(e4m3[code], static_cast<float>(format_value(code, 3, 7))) << "E4M3 code " << code;
    if (magnitude > 0x7C)
      EXPECT_TRUE(std::isnan(e5m2[code])) << "E5M2 code " << code;
    else if (magnitude == 0x7C)
      EXPECT_EQ(e5m2[code], (code & 0x80u) ? -INFINITY : INFINITY) << "E5M2 code " << code;
    else
      EXPECT_EQ(e5m2[code], static_cast<float>(format_value(code, 2, 15))) << "E5M2 code " << code;
  }
}

}  // namespace
