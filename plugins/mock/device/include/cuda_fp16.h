// Built-in (cudamux mock): half precision basics. Storage is IEEE binary16; arithmetic goes
// through float and rounds back, which is what a GPU's half ops give for single operations.
#pragma once
namespace cudamux::half_detail {
#if defined(__clang__) && __clang_major__ < 15
// Clang 14 has no _Float16 on x86 (the mock's compiler may be clang++: CUDAMUX_MOCK_CXX).
// Its __fp16, a storage type on every target, converts the same way (double directly, not
// through float), but may be neither a parameter nor a return type: hence locals and memcpy.
inline unsigned short bits_of(float f) {
  const __fp16 h = f;
  unsigned short b;
  __builtin_memcpy(&b, &h, sizeof b);
  return b;
}
inline unsigned short bits_of(double f) {
  const __fp16 h = f;
  unsigned short b;
  __builtin_memcpy(&b, &h, sizeof b);
  return b;
}
inline float value_of(unsigned short b) {
  __fp16 h;
  __builtin_memcpy(&h, &b, sizeof b);
  return h;
}
#else
inline unsigned short bits_of(float f) {
  return cudamux::bit_cast<unsigned short>(static_cast<_Float16>(f));
}
inline unsigned short bits_of(double f) {
  return cudamux::bit_cast<unsigned short>(static_cast<_Float16>(f));
}
inline float value_of(unsigned short b) { return static_cast<float>(cudamux::bit_cast<_Float16>(b)); }
#endif
}  // namespace cudamux::half_detail
// The bit pattern, as CUDA's cuda_fp16.h declares it (CuPy's float16.cuh works on it).
struct __half_raw {
  unsigned short x;
};
struct __half {
  unsigned short __x;
  __half() = default;
  __half(const __half_raw& r) : __x(r.x) {}
  __half& operator=(const __half_raw& r) { __x = r.x; return *this; }
  operator __half_raw() const { return __half_raw{__x}; }
  __half(float f) : __x(cudamux::half_detail::bits_of(f)) {}
  __half(double f) : __x(cudamux::half_detail::bits_of(f)) {}
  // CUDA's integer constructors (round to nearest), one per type so none is ambiguous.
  __half(short i) : __half(static_cast<float>(i)) {}
  __half(unsigned short i) : __half(static_cast<float>(i)) {}
  __half(int i) : __half(static_cast<float>(i)) {}
  __half(unsigned int i) : __half(static_cast<float>(i)) {}
  __half(long i) : __half(static_cast<float>(i)) {}
  __half(unsigned long i) : __half(static_cast<float>(i)) {}
  __half(long long i) : __half(static_cast<float>(i)) {}
  __half(unsigned long long i) : __half(static_cast<float>(i)) {}
  operator float() const { return cudamux::half_detail::value_of(__x); }
  __half& operator+=(__half o) { return *this = __half(float(*this) + float(o)); }
  __half& operator-=(__half o) { return *this = __half(float(*this) - float(o)); }
  __half& operator*=(__half o) { return *this = __half(float(*this) * float(o)); }
  __half& operator/=(__half o) { return *this = __half(float(*this) / float(o)); }
};
struct __align__(4) __half2 {
  __half x, y;
};
typedef __half half;
typedef __half2 half2;
typedef unsigned short __half_raw_bits;
static inline __half __float2half(float f) { return __half(f); }
static inline __half __float2half_rn(float f) { return __half(f); }
static inline float __half2float(__half h) { return float(h); }
static inline __half __int2half_rn(int i) { return __half(static_cast<float>(i)); }
static inline int __half2int_rz(__half h) { return static_cast<int>(float(h)); }
static inline __half2 __float2half2_rn(float f) { return __half2{__half(f), __half(f)}; }
static inline __half2 __floats2half2_rn(float a, float b) { return __half2{__half(a), __half(b)}; }
static inline __half2 __halves2half2(__half a, __half b) { return __half2{a, b}; }
static inline __half2 make_half2(__half x, __half y) { return __half2{x, y}; }
static inline float2 __half22float2(__half2 h) { return float2{float(h.x), float(h.y)}; }
static inline __half2 __float22half2_rn(float2 f) { return __half2{__half(f.x), __half(f.y)}; }
static inline float __low2float(__half2 h) { return float(h.x); }
static inline float __high2float(__half2 h) { return float(h.y); }
static inline __half __low2half(__half2 h) { return h.x; }
static inline __half __high2half(__half2 h) { return h.y; }
static inline unsigned short __half_as_ushort(__half h) { return h.__x; }
static inline __half __ushort_as_half(unsigned short u) { __half h; h.__x = u; return h; }
static inline __half __hadd(__half a, __half b) { return __half(float(a) + float(b)); }
static inline __half __hsub(__half a, __half b) { return __half(float(a) - float(b)); }
static inline __half __hmul(__half a, __half b) { return __half(float(a) * float(b)); }
static inline __half __hdiv(__half a, __half b) { return __half(float(a) / float(b)); }
static inline __half __hfma(__half a, __half b, __half c) { return __half(fmaf(float(a), float(b), float(c))); }
static inline __half __hneg(__half a) { return __ushort_as_half(static_cast<unsigned short>(a.__x ^ 0x8000u)); }
static inline __half __habs(__half a) { return __ushort_as_half(static_cast<unsigned short>(a.__x & 0x7FFFu)); }
static inline __half hsqrt(__half a) { return __half(sqrtf(float(a))); }
// The half-precision math of cuda_fp16.h / cuda_bf16.h: computed in float and rounded to the
// type, which is within the documented error of NVIDIA's (approximate) half functions.
#define CUDAMUX_HALF_MATH(T)                                                           \
  static inline T hsin(T a) { return T(__builtin_sinf(float(a))); }                    \
  static inline T hcos(T a) { return T(__builtin_cosf(float(a))); }                    \
  static inline T hexp(T a) { return T(__builtin_expf(float(a))); }                    \
  static inline T hexp2(T a) { return T(__builtin_exp2f(float(a))); }                  \
  static inline T hexp10(T a) { return T(__builtin_powf(10.0f, float(a))); }           \
  static inline T hlog(T a) { return T(__builtin_logf(float(a))); }                    \
  static inline T hlog2(T a) { return T(__builtin_log2f(float(a))); }                  \
  static inline T hlog10(T a) { return T(__builtin_log10f(float(a))); }                \
  static inline T hrcp(T a) { return T(1.0f / float(a)); }                             \
  static inline T hrsqrt(T a) { return T(1.0f / __builtin_sqrtf(float(a))); }          \
  static inline T hceil(T a) { return T(__builtin_ceilf(float(a))); }                  \
  static inline T hfloor(T a) { return T(__builtin_floorf(float(a))); }                \
  static inline T htrunc(T a) { return T(__builtin_truncf(float(a))); }                \
  static inline T hrint(T a) { return T(__builtin_rintf(float(a))); }
CUDAMUX_HALF_MATH(__half)
static inline __half __hmax(__half a, __half b) { return float(a) < float(b) ? b : a; }
static inline __half __hmin(__half a, __half b) { return float(b) < float(a) ? b : a; }
static inline bool __heq(__half a, __half b) { return float(a) == float(b); }
static inline bool __hne(__half a, __half b) { return float(a) != float(b); }
static inline bool __hlt(__half a, __half b) { return float(a) < float(b); }
static inline bool __hle(__half a, __half b) { return float(a) <= float(b); }
static inline bool __hgt(__half a, __half b) { return float(a) > float(b); }
static inline bool __hge(__half a, __half b) { return float(a) >= float(b); }
static inline bool __hisnan(__half a) { return __builtin_isnan(float(a)); }
static inline __half2 __hadd2(__half2 a, __half2 b) { return __half2{__hadd(a.x, b.x), __hadd(a.y, b.y)}; }
static inline __half2 __hsub2(__half2 a, __half2 b) { return __half2{__hsub(a.x, b.x), __hsub(a.y, b.y)}; }
static inline __half2 __hmul2(__half2 a, __half2 b) { return __half2{__hmul(a.x, b.x), __hmul(a.y, b.y)}; }
static inline __half2 __hfma2(__half2 a, __half2 b, __half2 c) { return __half2{__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)}; }
static inline __half operator+(__half a, __half b) { return __hadd(a, b); }
static inline __half operator-(__half a, __half b) { return __hsub(a, b); }
static inline __half operator*(__half a, __half b) { return __hmul(a, b); }
static inline __half operator/(__half a, __half b) { return __hdiv(a, b); }
static inline __half operator-(__half a) { return __hneg(a); }
static inline __half2 operator+(__half2 a, __half2 b) { return __hadd2(a, b); }
static inline __half2 operator*(__half2 a, __half2 b) { return __hmul2(a, b); }
static inline bool operator==(__half a, __half b) { return __heq(a, b); }
static inline bool operator!=(__half a, __half b) { return __hne(a, b); }
static inline bool operator<(__half a, __half b) { return __hlt(a, b); }
static inline bool operator>(__half a, __half b) { return __hgt(a, b); }
static inline bool operator<=(__half a, __half b) { return __hle(a, b); }
static inline bool operator>=(__half a, __half b) { return __hge(a, b); }
static inline __half atomicAdd(__half* a, __half v) {
  unsigned short old = __atomic_load_n(&a->__x, __ATOMIC_RELAXED);
  for (;;) {
    const unsigned short next = __hadd(__ushort_as_half(old), v).__x;
    if (__atomic_compare_exchange_n(&a->__x, &old, next, true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
      return __ushort_as_half(old);
  }
}
