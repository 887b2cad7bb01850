// Math for device code: the C functions (declared as glibc does, so that a later <math.h>
// agrees), CUDA's float overloads and fast intrinsics. Part of the prelude.
#pragma once
#pragma GCC system_header
extern "C" {
double sin(double) noexcept; float sinf(float) noexcept;
double cos(double) noexcept; float cosf(float) noexcept;
double tan(double) noexcept; float tanf(float) noexcept;
double asin(double) noexcept; float asinf(float) noexcept;
double acos(double) noexcept; float acosf(float) noexcept;
double atan(double) noexcept; float atanf(float) noexcept;
double sinh(double) noexcept; float sinhf(float) noexcept;
double cosh(double) noexcept; float coshf(float) noexcept;
double tanh(double) noexcept; float tanhf(float) noexcept;
double asinh(double) noexcept; float asinhf(float) noexcept;
double acosh(double) noexcept; float acoshf(float) noexcept;
double atanh(double) noexcept; float atanhf(float) noexcept;
double exp(double) noexcept; float expf(float) noexcept;
double exp2(double) noexcept; float exp2f(float) noexcept;
double expm1(double) noexcept; float expm1f(float) noexcept;
double log(double) noexcept; float logf(float) noexcept;
double log2(double) noexcept; float log2f(float) noexcept;
double log10(double) noexcept; float log10f(float) noexcept;
double log1p(double) noexcept; float log1pf(float) noexcept;
double sqrt(double) noexcept; float sqrtf(float) noexcept;
double cbrt(double) noexcept; float cbrtf(float) noexcept;
double fabs(double) noexcept; float fabsf(float) noexcept;
double floor(double) noexcept; float floorf(float) noexcept;
double ceil(double) noexcept; float ceilf(float) noexcept;
double trunc(double) noexcept; float truncf(float) noexcept;
double round(double) noexcept; float roundf(float) noexcept;
double rint(double) noexcept; float rintf(float) noexcept;
double nearbyint(double) noexcept; float nearbyintf(float) noexcept;
double erf(double) noexcept; float erff(float) noexcept;
double erfc(double) noexcept; float erfcf(float) noexcept;
double lgamma(double) noexcept; float lgammaf(float) noexcept;
double tgamma(double) noexcept; float tgammaf(float) noexcept;
double logb(double) noexcept; float logbf(float) noexcept;
double atan2(double, double) noexcept; float atan2f(float, float) noexcept;
double pow(double, double) noexcept; float powf(float, float) noexcept;
double hypot(double, double) noexcept; float hypotf(float, float) noexcept;
double fmod(double, double) noexcept; float fmodf(float, float) noexcept;
double remainder(double, double) noexcept; float remainderf(float, float) noexcept;
double fmin(double, double) noexcept; float fminf(float, float) noexcept;
double fmax(double, double) noexcept; float fmaxf(float, float) noexcept;
double fdim(double, double) noexcept; float fdimf(float, float) noexcept;
double copysign(double, double) noexcept; float copysignf(float, float) noexcept;
double nextafter(double, double) noexcept; float nextafterf(float, float) noexcept;
double fma(double, double, double) noexcept; float fmaf(float, float, float) noexcept;
double ldexp(double, int) noexcept; float ldexpf(float, int) noexcept;
double frexp(double, int*) noexcept; float frexpf(float, int*) noexcept;
double modf(double, double*) noexcept; float modff(float, float*) noexcept;
double scalbn(double, int) noexcept; float scalbnf(float, int) noexcept;
int ilogb(double) noexcept; int ilogbf(float) noexcept;
long lround(double) noexcept; long lroundf(float) noexcept;
long long llround(double) noexcept; long long llroundf(float) noexcept;
long lrint(double) noexcept; long lrintf(float) noexcept;
long long llrint(double) noexcept; long long llrintf(float) noexcept;
double exp10(double) noexcept; float exp10f(float) noexcept;
void sincos(double, double*, double*) noexcept; void sincosf(float, float*, float*) noexcept;
int abs(int) noexcept; long labs(long) noexcept; long long llabs(long long) noexcept;
double nan(const char*) noexcept; float nanf(const char*) noexcept;
double remquo(double, double, int*) noexcept; float remquof(float, float, int*) noexcept;
// long double: not a CUDA device type, but CCCL's <cuda/std/cmath> names these (glibc's).
long double nanl(const char*) noexcept;
long double remquol(long double, long double, int*) noexcept;
long double fmodl(long double, long double) noexcept;
long double modfl(long double, long double*) noexcept;
long double erfl(long double) noexcept; long double erfcl(long double) noexcept;
long double fdiml(long double, long double) noexcept;
long double fmal(long double, long double, long double) noexcept;
long double remainderl(long double, long double) noexcept;
}
// glibc's on x86-64 and AArch64 (FLT_EVAL_METHOD 0).
typedef float float_t;
typedef double double_t;
static inline float sin(float x) { return sinf(x); }
static inline float cos(float x) { return cosf(x); }
static inline float tan(float x) { return tanf(x); }
static inline float asin(float x) { return asinf(x); }
static inline float acos(float x) { return acosf(x); }
static inline float atan(float x) { return atanf(x); }
static inline float sinh(float x) { return sinhf(x); }
static inline float cosh(float x) { return coshf(x); }
static inline float tanh(float x) { return tanhf(x); }
static inline float asinh(float x) { return asinhf(x); }
static inline float acosh(float x) { return acoshf(x); }
static inline float atanh(float x) { return atanhf(x); }
static inline float exp(float x) { return expf(x); }
static inline float exp2(float x) { return exp2f(x); }
static inline float expm1(float x) { return expm1f(x); }
static inline float log(float x) { return logf(x); }
static inline float log2(float x) { return log2f(x); }
static inline float log10(float x) { return log10f(x); }
static inline float log1p(float x) { return log1pf(x); }
static inline float sqrt(float x) { return sqrtf(x); }
static inline float cbrt(float x) { return cbrtf(x); }
static inline float fabs(float x) { return fabsf(x); }
static inline float floor(float x) { return floorf(x); }
static inline float ceil(float x) { return ceilf(x); }
static inline float trunc(float x) { return truncf(x); }
static inline float round(float x) { return roundf(x); }
static inline float rint(float x) { return rintf(x); }
static inline float nearbyint(float x) { return nearbyintf(x); }
static inline float erf(float x) { return erff(x); }
static inline float erfc(float x) { return erfcf(x); }
static inline float lgamma(float x) { return lgammaf(x); }
static inline float tgamma(float x) { return tgammaf(x); }
static inline float logb(float x) { return logbf(x); }
static inline float atan2(float x, float y) { return atan2f(x, y); }
static inline float pow(float x, float y) { return powf(x, y); }
static inline float hypot(float x, float y) { return hypotf(x, y); }
static inline float fmod(float x, float y) { return fmodf(x, y); }
static inline float remainder(float x, float y) { return remainderf(x, y); }
static inline float fmin(float x, float y) { return fminf(x, y); }
static inline float fmax(float x, float y) { return fmaxf(x, y); }
static inline float fdim(float x, float y) { return fdimf(x, y); }
static inline float copysign(float x, float y) { return copysignf(x, y); }
static inline float nextafter(float x, float y) { return nextafterf(x, y); }
static inline float fma(float x, float y, float z) { return fmaf(x, y, z); }
static inline float ldexp(float x, int e) { return ldexpf(x, e); }
static inline float frexp(float x, int* e) { return frexpf(x, e); }
static inline float scalbn(float x, int e) { return scalbnf(x, e); }
// abs of long, long long, float and double as one constrained template: the host library's
// <cstdlib> brings ::abs into std and then defines std::abs for the same types, which a
// non-template ::abs of those types would conflict with (host headers that CCCL includes).
namespace cudamux {
template <class T> struct abs_of {};
template <> struct abs_of<long> { using type = long; static long f(long x) { return labs(x); } };
template <> struct abs_of<long long> {
  using type = long long;
  static long long f(long long x) { return llabs(x); }
};
template <> struct abs_of<float> { using type = float; static float f(float x) { return fabsf(x); } };
template <> struct abs_of<double> { using type = double; static double f(double x) { return fabs(x); } };
}  // namespace cudamux
template <class T>
inline typename cudamux::abs_of<T>::type abs(T x) { return cudamux::abs_of<T>::f(x); }
template <class T> inline bool isnan(T x) { return __builtin_isnan(x); }
template <class T> inline bool isinf(T x) { return __builtin_isinf(x); }
template <class T> inline bool isfinite(T x) { return __builtin_isfinite(x); }
template <class T> inline bool signbit(T x) { return __builtin_signbit(x); }
static inline int __isnanf(float x) { return __builtin_isnan(x); }
static inline int __isinff(float x) { return __builtin_isinf(x); }
static inline int __finitef(float x) { return __builtin_isfinite(x); }

// CUDA's min/max for every arithmetic pairing it defines.
#define CUDAMUX_MINMAX(T) \
  static inline T min(T a, T b) { return b < a ? b : a; } \
  static inline T max(T a, T b) { return a < b ? b : a; }
CUDAMUX_MINMAX(int)
CUDAMUX_MINMAX(unsigned int)
CUDAMUX_MINMAX(long)
CUDAMUX_MINMAX(unsigned long)
CUDAMUX_MINMAX(long long)
CUDAMUX_MINMAX(unsigned long long)
#undef CUDAMUX_MINMAX
static inline float min(float a, float b) { return fminf(a, b); }
static inline float max(float a, float b) { return fmaxf(a, b); }
static inline double min(double a, double b) { return fmin(a, b); }
static inline double max(double a, double b) { return fmax(a, b); }
static inline unsigned min(int a, unsigned b) { return min(static_cast<unsigned>(a), b); }
static inline unsigned min(unsigned a, int b) { return min(a, static_cast<unsigned>(b)); }
static inline unsigned max(int a, unsigned b) { return max(static_cast<unsigned>(a), b); }
static inline unsigned max(unsigned a, int b) { return max(a, static_cast<unsigned>(b)); }

static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline double rsqrt(double x) { return 1.0 / sqrt(x); }
static inline float rcbrtf(float x) { return 1.0f / cbrtf(x); }
static inline double rcbrt(double x) { return 1.0 / cbrt(x); }
static inline float sinpif(float x) { return sinf(3.14159265358979323846f * x); }
static inline float cospif(float x) { return cosf(3.14159265358979323846f * x); }
static inline double sinpi(double x) { return sin(3.14159265358979323846 * x); }
static inline double cospi(double x) { return cos(3.14159265358979323846 * x); }
static inline void sincospif(float x, float* s, float* c) { sincosf(3.14159265358979323846f * x, s, c); }
static inline float normcdff(float x) { return 0.5f * erfcf(-x * 0.70710678118654752f); }
static inline double normcdf(double x) { return 0.5 * erfc(-x * 0.70710678118654752); }
static inline float fdividef(float a, float b) { return a / b; }
static inline float __fdividef(float a, float b) { return a / b; }
static inline float __expf(float x) { return expf(x); }
static inline float __exp10f(float x) { return exp10f(x); }
static inline float __logf(float x) { return logf(x); }
static inline float __log2f(float x) { return log2f(x); }
static inline float __log10f(float x) { return log10f(x); }
static inline float __sinf(float x) { return sinf(x); }
static inline float __cosf(float x) { return cosf(x); }
static inline float __tanf(float x) { return tanf(x); }
static inline void __sincosf(float x, float* s, float* c) { sincosf(x, s, c); }
static inline float __powf(float x, float y) { return powf(x, y); }
static inline float __saturatef(float x) { return x > 0.0f ? (x < 1.0f ? x : 1.0f) : 0.0f; }
// Rounding-mode suffixes: the CPU rounds to nearest; _rn is exact, the others approximate.
#define CUDAMUX_ROUNDED(sfx) \
  static inline float __fadd_##sfx(float a, float b) { return a + b; } \
  static inline float __fsub_##sfx(float a, float b) { return a - b; } \
  static inline float __fmul_##sfx(float a, float b) { return a * b; } \
  static inline float __fdiv_##sfx(float a, float b) { return a / b; } \
  static inline float __frcp_##sfx(float a) { return 1.0f / a; } \
  static inline float __fsqrt_##sfx(float a) { return sqrtf(a); } \
  static inline float __fmaf_##sfx(float a, float b, float c) { return fmaf(a, b, c); } \
  static inline double __dadd_##sfx(double a, double b) { return a + b; } \
  static inline double __dsub_##sfx(double a, double b) { return a - b; } \
  static inline double __dmul_##sfx(double a, double b) { return a * b; } \
  static inline double __ddiv_##sfx(double a, double b) { return a / b; } \
  static inline double __drcp_##sfx(double a) { return 1.0 / a; } \
  static inline double __dsqrt_##sfx(double a) { return sqrt(a); } \
  static inline double __fma_##sfx(double a, double b, double c) { return fma(a, b, c); }
CUDAMUX_ROUNDED(rn)
CUDAMUX_ROUNDED(rz)
CUDAMUX_ROUNDED(ru)
CUDAMUX_ROUNDED(rd)
#undef CUDAMUX_ROUNDED
static inline float __frsqrt_rn(float x) { return 1.0f / sqrtf(x); }
static inline int __float2int_rn(float x) { return static_cast<int>(rintf(x)); }
static inline int __float2int_rz(float x) { return static_cast<int>(x); }
static inline int __float2int_rd(float x) { return static_cast<int>(floorf(x)); }
static inline int __float2int_ru(float x) { return static_cast<int>(ceilf(x)); }
static inline unsigned __float2uint_rn(float x) { return static_cast<unsigned>(rintf(x)); }
static inline unsigned __float2uint_rz(float x) { return static_cast<unsigned>(x); }
static inline long long __float2ll_rn(float x) { return static_cast<long long>(rintf(x)); }
static inline long long __float2ll_rz(float x) { return static_cast<long long>(x); }
static inline int __double2int_rn(double x) { return static_cast<int>(rint(x)); }
static inline int __double2int_rz(double x) { return static_cast<int>(x); }
static inline long long __double2ll_rn(double x) { return static_cast<long long>(rint(x)); }
static inline float __double2float_rn(double x) { return static_cast<float>(x); }
static inline float __int2float_rn(int x) { return static_cast<float>(x); }
static inline float __uint2float_rn(unsigned x) { return static_cast<float>(x); }
static inline double __int2double_rn(int x) { return x; }
static inline float __ll2float_rn(long long x) { return static_cast<float>(x); }
static inline int __float_as_int(float x) { return cudamux::bit_cast<int>(x); }
static inline unsigned __float_as_uint(float x) { return cudamux::bit_cast<unsigned>(x); }
static inline float __int_as_float(int x) { return cudamux::bit_cast<float>(x); }
static inline float __uint_as_float(unsigned x) { return cudamux::bit_cast<float>(x); }
static inline long long __double_as_longlong(double x) { return cudamux::bit_cast<long long>(x); }
static inline double __longlong_as_double(long long x) { return cudamux::bit_cast<double>(x); }
static inline int __double2hiint(double x) { return static_cast<int>(cudamux::bit_cast<unsigned long long>(x) >> 32); }
static inline int __double2loint(double x) { return static_cast<int>(cudamux::bit_cast<unsigned long long>(x)); }
static inline double __hiloint2double(int hi, int lo) {
  return cudamux::bit_cast<double>((static_cast<unsigned long long>(static_cast<unsigned>(hi)) << 32) | static_cast<unsigned>(lo));
}

