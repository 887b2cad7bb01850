// Built-in (cudamux mock): the 8-bit float types of CUDA's cuda_fp8.h (E4M3 and E5M2, OCP
// formats). Conversions to fp8 round to nearest even, as NVIDIA's header specifies: values
// below half the smallest subnormal become zero, NaN becomes E4M3's 0x7F or E5M2's quiet NaN,
// and values past the largest finite one become NaN (E4M3) or infinity (E5M2) unless
// __NV_SATFINITE clamps them. The class constructors saturate, as NVIDIA's do. No arithmetic:
// as with NVIDIA's header, programs compute in float and convert.
#pragma once
#include "cuda_bf16.h"
#include "cuda_fp16.h"

typedef unsigned char __nv_fp8_storage_t;
typedef unsigned short __nv_fp8x2_storage_t;
typedef unsigned int __nv_fp8x4_storage_t;
typedef enum __nv_saturation_t { __NV_NOSAT, __NV_SATFINITE } __nv_saturation_t;
typedef enum __nv_fp8_interpretation_t { __NV_E4M3, __NV_E5M2 } __nv_fp8_interpretation_t;

namespace cudamux::fp8 {
struct Format {
  int mantissa_bits;
  int bias;
  unsigned char max_finite;  // the largest finite code, sign clear
  bool has_inf;
};
inline constexpr Format kE4M3{3, 7, 0x7E, false};
inline constexpr Format kE5M2{2, 15, 0x7B, true};
inline const Format& format(__nv_fp8_interpretation_t i) { return i == __NV_E4M3 ? kE4M3 : kE5M2; }

inline double decode_magnitude(unsigned code, const Format& f) {
  const int exp_field = static_cast<int>(code >> f.mantissa_bits);
  const unsigned mantissa = code & ((1u << f.mantissa_bits) - 1u);
  if (exp_field == 0) return __builtin_ldexp(mantissa, 1 - f.bias - f.mantissa_bits);
  return __builtin_ldexp((1u << f.mantissa_bits) | mantissa, exp_field - f.bias - f.mantissa_bits);
}

// The nearest code to |x| (ties to even) among the finite codes 0..max_finite; `overflow`
// when |x| rounds past the largest finite value (beyond half an ulp, or at exactly half when
// the largest code is odd, as ties go to even: E5M2's 61440 overflows, E4M3's 464 does not).
inline unsigned char encode_magnitude(double ax, const Format& f, bool& overflow) {
  const double max_value = decode_magnitude(f.max_finite, f);
  const double ulp_at_max =
      max_value - decode_magnitude(static_cast<unsigned>(f.max_finite) - 1u, f);
  const double midpoint = max_value + ulp_at_max / 2;
  overflow = ax > midpoint || (ax == midpoint && (f.max_finite & 1u) != 0);
  if (overflow) return f.max_finite;
  // Binary search over the monotone codes, then pick the nearer neighbour.
  unsigned lo = 0, hi = f.max_finite;
  while (lo < hi) {
    const unsigned mid = (lo + hi + 1) / 2;
    if (decode_magnitude(mid, f) <= ax)
      lo = mid;
    else
      hi = mid - 1;
  }
  if (lo == f.max_finite) return f.max_finite;
  const double below = decode_magnitude(lo, f), above = decode_magnitude(lo + 1, f);
  const double to_below = ax - below, to_above = above - ax;
  if (to_above < to_below || (to_above == to_below && (lo & 1u) != 0)) return lo + 1;
  return lo;
}

// fp8 to float is exact; NaN becomes the canonical (positive) NaN, as NVIDIA's header gives.
inline float to_float(unsigned char x, __nv_fp8_interpretation_t interp) {
  const unsigned magnitude = x & 0x7Fu;
  if (interp == __NV_E4M3 ? magnitude == 0x7F : magnitude > 0x7C) return __builtin_nanf("");
  if (interp == __NV_E5M2 && magnitude == 0x7C)
    return (x & 0x80) ? -__builtin_inff() : __builtin_inff();
  const float v = static_cast<float>(decode_magnitude(magnitude, format(interp)));
  return (x & 0x80) ? -v : v;
}

// NaN converts to zero and infinities clamp, as NVIDIA's integer conversions of fp8 do.
inline int to_int(unsigned char x, __nv_fp8_interpretation_t interp) {
  const float v = to_float(x, interp);
  if (__builtin_isnan(v)) return 0;
  if (v >= 2147483648.0f) return 2147483647;
  if (v < -2147483648.0f) return -2147483647 - 1;
  return static_cast<int>(v);
}
}  // namespace cudamux::fp8

static inline __nv_fp8_storage_t __nv_cvt_double_to_fp8(double x, __nv_saturation_t saturate,
                                                        __nv_fp8_interpretation_t interp) {
  const auto& f = cudamux::fp8::format(interp);
  const unsigned char sign = __builtin_signbit(x) ? 0x80 : 0x00;
  if (__builtin_isnan(x)) {
    if (interp == __NV_E4M3) return static_cast<__nv_fp8_storage_t>(sign | 0x7F);
    // E5M2: a quiet NaN (0x7E) with the double's second payload bit, as NVIDIA's header.
    unsigned long long bits = cudamux::bit_cast<unsigned long long>(x);
    return static_cast<__nv_fp8_storage_t>(sign | 0x7E | ((bits >> 50) & 1u));
  }
  bool overflow = false;
  const unsigned char code = cudamux::fp8::encode_magnitude(__builtin_fabs(x), f, overflow);
  if (overflow && saturate != __NV_SATFINITE)
    return static_cast<__nv_fp8_storage_t>(sign | (f.has_inf ? 0x7C : 0x7F));
  return static_cast<__nv_fp8_storage_t>(sign | code);
}
// A float NaN is made the canonical positive NaN first (NVIDIA's header does), so both formats
// give 0x7F for it.
static inline __nv_fp8_storage_t __nv_cvt_float_to_fp8(float x, __nv_saturation_t saturate,
                                                       __nv_fp8_interpretation_t interp) {
  if (__builtin_isnan(x)) return 0x7F;
  return __nv_cvt_double_to_fp8(static_cast<double>(x), saturate, interp);
}
static inline __nv_fp8x2_storage_t __nv_cvt_float2_to_fp8x2(float2 x, __nv_saturation_t saturate,
                                                            __nv_fp8_interpretation_t interp) {
  return static_cast<__nv_fp8x2_storage_t>(__nv_cvt_float_to_fp8(x.x, saturate, interp) |
                                           (__nv_cvt_float_to_fp8(x.y, saturate, interp) << 8));
}
#define CUDAMUX_FP8_CLASS(name, interp)                                                      \
  struct name {                                                                              \
    __nv_fp8_storage_t __x;                                                                  \
    name() = default;                                                                        \
    explicit name(float f) : __x(__nv_cvt_float_to_fp8(f, __NV_SATFINITE, interp)) {}        \
    explicit name(double d) : __x(__nv_cvt_double_to_fp8(d, __NV_SATFINITE, interp)) {}      \
    explicit name(__half h) : name(static_cast<float>(h)) {}                                 \
    explicit name(__nv_bfloat16 b) : name(static_cast<float>(b)) {}                          \
    explicit name(int v) : name(static_cast<float>(v)) {}                                    \
    explicit name(unsigned v) : name(static_cast<float>(v)) {}                               \
    explicit name(long v) : name(static_cast<float>(v)) {}                                   \
    explicit name(unsigned long v) : name(static_cast<float>(v)) {}                          \
    explicit name(long long v) : name(static_cast<float>(v)) {}                              \
    explicit name(unsigned long long v) : name(static_cast<float>(v)) {}                     \
    explicit name(short v) : name(static_cast<float>(v)) {}                                  \
    explicit name(unsigned short v) : name(static_cast<float>(v)) {}                         \
    explicit operator float() const { return cudamux::fp8::to_float(__x, interp); }          \
    explicit operator double() const { return cudamux::fp8::to_float(__x, interp); }         \
    explicit operator __half() const { return __half(cudamux::fp8::to_float(__x, interp)); } \
    explicit operator __nv_bfloat16() const {                                                \
      return __nv_bfloat16(cudamux::fp8::to_float(__x, interp));                             \
    }                                                                                        \
    explicit operator int() const { return cudamux::fp8::to_int(__x, interp); }              \
    explicit operator bool() const { return (__x & 0x7Fu) != 0u; }                           \
  }

CUDAMUX_FP8_CLASS(__nv_fp8_e4m3, __NV_E4M3);
CUDAMUX_FP8_CLASS(__nv_fp8_e5m2, __NV_E5M2);
#undef CUDAMUX_FP8_CLASS
