// std:: names of the device math functions, for programs that include <cmath> or <math.h>
// (NVRTC declares none of them without an include).
#pragma once
#pragma GCC system_header
#include "cudamux/math.h"
// std::abs, labs and llabs: the host library's (these headers are searched only beside it), so
// that its <cstdlib>, which defines the same std::abs overloads, may come before or after.
#include <cstdlib>

// fpclassify's results, with glibc's values (the host library's <math.h> is not included).
#ifndef FP_NAN
#define FP_NAN 0
#define FP_INFINITE 1
#define FP_ZERO 2
#define FP_SUBNORMAL 3
#define FP_NORMAL 4
#endif
namespace std {
using ::sin; using ::sinf;
using ::cos; using ::cosf;
using ::tan; using ::tanf;
using ::asin; using ::asinf;
using ::acos; using ::acosf;
using ::atan; using ::atanf;
using ::sinh; using ::sinhf;
using ::cosh; using ::coshf;
using ::tanh; using ::tanhf;
using ::asinh; using ::asinhf;
using ::acosh; using ::acoshf;
using ::atanh; using ::atanhf;
using ::exp; using ::expf;
using ::exp2; using ::exp2f;
using ::expm1; using ::expm1f;
using ::log; using ::logf;
using ::log2; using ::log2f;
using ::log10; using ::log10f;
using ::log1p; using ::log1pf;
using ::sqrt; using ::sqrtf;
using ::cbrt; using ::cbrtf;
using ::fabs; using ::fabsf;
using ::floor; using ::floorf;
using ::ceil; using ::ceilf;
using ::trunc; using ::truncf;
using ::round; using ::roundf;
using ::rint; using ::rintf;
using ::nearbyint; using ::nearbyintf;
using ::erf; using ::erff;
using ::erfc; using ::erfcf;
using ::lgamma; using ::lgammaf;
using ::tgamma; using ::tgammaf;
using ::logb; using ::logbf;
using ::atan2; using ::atan2f;
using ::pow; using ::powf;
using ::hypot; using ::hypotf;
using ::fmod; using ::fmodf;
using ::remainder; using ::remainderf;
using ::fmin; using ::fminf;
using ::fmax; using ::fmaxf;
using ::fdim; using ::fdimf;
using ::copysign; using ::copysignf;
using ::nextafter; using ::nextafterf;
using ::fma; using ::fmaf;
using ::ldexp; using ::ldexpf;
using ::frexp; using ::frexpf;
using ::modf; using ::modff;
using ::scalbn; using ::scalbnf;
using ::ilogb; using ::ilogbf;
using ::lround; using ::lroundf;
using ::llround; using ::llroundf;
using ::lrint; using ::lrintf;
using ::llrint; using ::llrintf;
using ::isnan;
using ::isinf;
using ::isfinite;
using ::signbit;
using ::min; using ::max;
}  // namespace std
