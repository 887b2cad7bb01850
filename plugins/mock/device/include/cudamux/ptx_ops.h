// PTX instruction semantics on the CPU (issue 15): what the mock's PTX emitter
// (ptx/src/emit_cpp.cpp) calls for every instruction whose meaning is more than one C++
// operator. Included by the generated C++ of PTX modules after the prelude, so header-free
// (compile latency): compiler builtins only.
//
// Conventions (the contract between the emitter and this header):
// - Registers are stored as their PTX type's storage: b8/u8 -> u8 ... f32 -> float, f64 ->
//   double, f16/bf16 -> u16 (bits), f16x2/bf16x2 -> u32 (bits, low half = element 0),
//   pred -> bool. Type codes below name PTX types in template arguments.
// - Rounding modes and flags are template arguments, so every call is specialised and inlines.
// - Semantics are PTX ISA 9.0's, including NaN rules (min/max return the non-NaN operand,
//   canonical NaN 0x7fffffff for f32 results of arithmetic where PTX says so), .ftz (subnormal
//   inputs and results flushed to sign-preserving zero), .sat (clamp to [0, 1], NaN -> 0 for
//   floats; to the destination range for integer cvt).
#pragma once
#pragma GCC system_header

namespace cudamux::ptx {

using u8 = unsigned char;
using u16 = unsigned short;
using u32 = unsigned int;
using u64 = unsigned long long;
using s8 = signed char;
using s16 = short;
using s32 = int;
using s64 = long long;

// PTX type codes (template arguments).
enum ty : int {
  B8, B16, B32, B64, U8, U16, U32, U64, S8, S16, S32, S64,
  F16, F16X2, BF16, BF16X2, TF32, F32, F64, E4M3X2, E5M2X2, PRED
};
// Rounding: NONE means the instruction's default (rn for floats, truncation for float->int
// conversions is illegal without a mode in PTX, the emitter passes the written one).
enum rnd : int { NONE, RN, RZ, RM, RP, RNA, RS, RNI, RZI, RMI, RPI };
// Flags (bit set) for template arguments.
enum flag : int { FTZ = 1, SAT = 2, RELU = 4, NANF = 8, APPROX = 16, FULL = 32, XORSIGN = 64, ABSF = 128,
  SATFINITE = 256 /* added: cvt's .satfinite */ };

template <int T> struct storage;  // storage<F32>::type == float, storage<F16>::type == u16 ...

// ---- conversion ----
// cvt.{rnd}{.ftz}{.sat}{.relu}.D.S; cvt.rni.f32.f32 etc. (float rounding to integral value).
template <int D, int S, int R, int Flags>
typename storage<D>::type cvt(typename storage<S>::type x);
// cvt.rn{.relu}{.satfinite}.f16x2.f32 d, a, b: a in the upper half, b in the lower.
template <int D, int R, int Flags>
u32 cvt_pack2(float a, float b);
// Helpers for code that needs the value of a half: exact widening and rn narrowing.
float f16_to_f32(u16 h);
u16 f32_to_f16_rn(float f);
float bf16_to_f32(u16 h);
u16 f32_to_bf16_rn(float f);

// ---- float arithmetic ----
// add/sub/mul/fma/mad with rounding (RN default), .ftz, .sat; T is F32, F64, F16, F16X2, BF16,
// BF16X2 (packed types operate per element).
template <int T, int R, int Flags> typename storage<T>::type fadd(typename storage<T>::type a, typename storage<T>::type b);
template <int T, int R, int Flags> typename storage<T>::type fsub(typename storage<T>::type a, typename storage<T>::type b);
template <int T, int R, int Flags> typename storage<T>::type fmul(typename storage<T>::type a, typename storage<T>::type b);
template <int T, int R, int Flags> typename storage<T>::type ffma(typename storage<T>::type a, typename storage<T>::type b, typename storage<T>::type c);
// div: .approx (f32), .full (f32, 2 ulp), .rn/.rz/.rm/.rp (IEEE)
template <int T, int R, int Flags> typename storage<T>::type fdiv(typename storage<T>::type a, typename storage<T>::type b);
template <int T, int Flags> typename storage<T>::type fmin(typename storage<T>::type a, typename storage<T>::type b);  // NANF: .NaN
template <int T, int Flags> typename storage<T>::type fmax(typename storage<T>::type a, typename storage<T>::type b);
template <int T, int Flags> typename storage<T>::type fabs_(typename storage<T>::type a);
template <int T, int Flags> typename storage<T>::type fneg(typename storage<T>::type a);
// rcp/sqrt: .approx or IEEE rounding; rsqrt, sin, cos, lg2, ex2, tanh: .approx (within PTX's
// documented maximum error), F32 (and F64 for rcp/sqrt/rsqrt; F16/F16X2/BF16 for ex2/tanh).
template <int T, int R, int Flags> typename storage<T>::type frcp(typename storage<T>::type a);
template <int T, int R, int Flags> typename storage<T>::type fsqrt(typename storage<T>::type a);
template <int T, int Flags> typename storage<T>::type frsqrt(typename storage<T>::type a);
template <int T, int Flags> typename storage<T>::type fsin(typename storage<T>::type a);
template <int T, int Flags> typename storage<T>::type fcos(typename storage<T>::type a);
template <int T, int Flags> typename storage<T>::type flg2(typename storage<T>::type a);
template <int T, int Flags> typename storage<T>::type fex2(typename storage<T>::type a);
template <int T, int Flags> typename storage<T>::type ftanh(typename storage<T>::type a);
template <int T> typename storage<T>::type fcopysign(typename storage<T>::type a, typename storage<T>::type b);
// testp.{finite,infinite,number,notanumber,normal,subnormal}: Op 0..5 in that order.
template <int T, int Op> bool ftestp(typename storage<T>::type a);
// setp/set comparisons: Cmp as in the IR's enum order without none (eq=1 ... nan=18), T any type.
template <int T, int Cmp, int Flags> bool compare(typename storage<T>::type a, typename storage<T>::type b);

// ---- integer ----
template <class T> T mul_hi(T a, T b);                    // mul.hi.{s,u}{16,32,64}
template <class T> T mul24_lo(T a, T b);                  // mul24.lo.{s,u}32
template <class T> T mul24_hi(T a, T b);
template <class T> T sad(T a, T b, T c);
template <class T> T idiv(T a, T b);  // x/0 and INT_MIN/-1 defined as the GPU does (no trap)
template <class T> T irem(T a, T b);
template <class T> T iabs(T a);
template <class T> T add_sat(T a, T b);  // add.sat.s32 / sub.sat.s32
template <class T> T sub_sat(T a, T b);
template <class T> u32 popc(T a);
template <class T> u32 clz(T a);
template <class T, bool ShiftAmt> u32 bfind(T a);
template <class T> T brev(T a);
template <class T> T bfe(T a, u32 pos, u32 len);
template <class T> T bfi(T a, T b, u32 pos, u32 len);
u32 prmt(u32 a, u32 b, u32 c, int mode);  // mode: 0 default, 1 f4e, 2 b4e, 3 rc8, 4 ecl, 5 ecr, 6 rc16
u32 lop3(u32 a, u32 b, u32 c, u32 lut);
template <bool Left, bool Clamp> u32 shf(u32 a, u32 b, u32 c);
template <class T> T shl(T a, u32 n);   // n >= bit width: 0
template <class T> T shr(T a, u32 n);   // arithmetic for signed T: n >= width fills with sign
template <class A, class B> s32 dp4a(u32 a, u32 b, s32 c);  // A/B: s8 or u8 element types
template <class A, class B, bool Hi> s32 dp2a(u32 a, u32 b, s32 c);
u32 fns(u32 mask, u32 base, s32 offset);
// Carry chains: add.cc/addc/sub.cc/subc/mad.cc/madc keep the carry in `carry` (the emitter
// declares one per function).
template <class T> T add_cc(T a, T b, bool carry_in, bool& carry_out);
template <class T> T sub_cc(T a, T b, bool borrow_in, bool& borrow_out);

// ---- memory ----
// Atomics on any address (global, shared, generic): Op = Mode order of the IR starting at add
// (0 add, 1 min, 2 max, 3 inc, 4 dec, 5 and, 6 or, 7 xor, 8 exch); T is the PTX type code
// (integer, F16, F16X2, BF16, BF16X2, F32, F64). Returns the old value.
template <int T, int Op> typename storage<T>::type atom(void* addr, typename storage<T>::type v);
template <int T> typename storage<T>::type atom_cas(void* addr, typename storage<T>::type cmp, typename storage<T>::type v);
// membar/fence at a scope: a sequentially consistent fence (the mock runs blocks on threads).
void fence();

// ---- special registers ----
u32 laneid();    // linear thread index % 32
u32 warpid();    // linear thread index / 32
u32 nwarpid();
u32 lanemask(int kind);  // 0 eq, 1 le, 2 lt, 3 ge, 4 gt
u64 clock64();
u64 globaltimer();  // nanoseconds
u32 smid();
u32 nsmid();

// ---- warp collectives (the device runtime's 32-lane rendezvous, cudamux_warp_op) ----
// shfl.sync.{up,down,bfly,idx}.b32 d|p, a, b, c, membermask (Mode 0 up, 1 down, 2 bfly, 3 idx;
// c packs the clamp and segment mask as PTX defines). in_range: the optional predicate output.
template <int Mode> u32 shfl(u32 a, u32 b, u32 c, u32 mask, bool& in_range);
bool vote_all(bool p, u32 mask);
bool vote_any(bool p, u32 mask);
bool vote_uni(bool p, u32 mask);
u32 vote_ballot(bool p, u32 mask);
template <class T> u32 match_any(T v, u32 mask);
template <class T> u32 match_all(T v, u32 mask, bool& pred);
template <int Op, class T> T redux(T v, u32 mask);  // Op: 0 add, 1 min, 2 max, 5 and, 6 or, 7 xor
u32 activemask();
void bar_warp_sync(u32 mask);

// ---- CTA barriers (bar / barrier; count 0 = all threads of the block) ----
void bar_sync(u32 id, u32 count);
u32 bar_red_popc(u32 id, u32 count, bool p);
bool bar_red_and(u32 id, u32 count, bool p);
bool bar_red_or(u32 id, u32 count, bool p);

// ---- device runtime calls PTX makes by name ----
// vprintf(fmt, args): args is the packed argument buffer nvcc builds (each argument at its
// natural alignment, floats promoted to double); formats and prints like CUDA's printf.
int vprintf(const char* fmt, const char* args);
// __assertfail(message, file, line, function, char size)
void assertfail(const char* message, const char* file, u32 line, const char* function);
void trap(const char* why);
}  // namespace cudamux::ptx

// ============================================================================================
// Definitions. Everything below is inline; nothing here may need a header (see the top).
// Exactness strategy (docs/ptx.md, "Instruction semantics on the CPU"):
// - f32/f64 with the default or .rn rounding run on the host's IEEE hardware (round to nearest
//   even, the same result bit for bit);
// - every other rounding, and all f16/bf16/tf32/fp8 results, go through one integer rounding
//   routine (round_bits) fed with an exact value or with a round-to-odd double (a double that
//   carries the sticky bit in its last place: rounding it again to 26 bits or fewer is exact);
// - directed f64 arithmetic computes the exact result in 128-bit integers.
// ============================================================================================
#ifndef CUDAMUX_ATOMIC_SCOPE
#define CUDAMUX_ATOMIC_SCOPE
#endif
#define CUDAMUX_PTX_INLINE inline __attribute__((always_inline))

namespace cudamux::ptx {


template <>
struct storage<B8> {
  using type = u8;
};
template <>
struct storage<B16> {
  using type = u16;
};
template <>
struct storage<B32> {
  using type = u32;
};
template <>
struct storage<B64> {
  using type = u64;
};
template <>
struct storage<U8> {
  using type = u8;
};
template <>
struct storage<U16> {
  using type = u16;
};
template <>
struct storage<U32> {
  using type = u32;
};
template <>
struct storage<U64> {
  using type = u64;
};
template <>
struct storage<S8> {
  using type = s8;
};
template <>
struct storage<S16> {
  using type = s16;
};
template <>
struct storage<S32> {
  using type = s32;
};
template <>
struct storage<S64> {
  using type = s64;
};
template <>
struct storage<F16> {
  using type = u16;
};
template <>
struct storage<F16X2> {
  using type = u32;
};
template <>
struct storage<BF16> {
  using type = u16;
};
template <>
struct storage<BF16X2> {
  using type = u32;
};
template <>
struct storage<TF32> {
  using type = u32;
};
template <>
struct storage<F32> {
  using type = float;
};
template <>
struct storage<F64> {
  using type = double;
};
template <>
struct storage<E4M3X2> {
  using type = u16;
};
template <>
struct storage<E5M2X2> {
  using type = u16;
};
template <>
struct storage<PRED> {
  using type = bool;
};

namespace detail {
__extension__ typedef unsigned __int128 u128;
__extension__ typedef __int128 s128;

template <class T>
CUDAMUX_PTX_INLINE u32 fbits(T f) {
  return __builtin_bit_cast(u32, f);
}
CUDAMUX_PTX_INLINE u32 bits32(float f) { return __builtin_bit_cast(u32, f); }
CUDAMUX_PTX_INLINE u64 bits64(double f) { return __builtin_bit_cast(u64, f); }
CUDAMUX_PTX_INLINE float as_f32(u32 b) { return __builtin_bit_cast(float, b); }
CUDAMUX_PTX_INLINE double as_f64(u64 b) { return __builtin_bit_cast(double, b); }
CUDAMUX_PTX_INLINE bool isnan32(float f) { return (bits32(f) & 0x7fffffffu) > 0x7f800000u; }
CUDAMUX_PTX_INLINE bool isnan64(double f) {
  return (bits64(f) & 0x7fffffffffffffffull) > 0x7ff0000000000000ull;
}
CUDAMUX_PTX_INLINE bool isfinite64(double f) {
  return (bits64(f) & 0x7ff0000000000000ull) != 0x7ff0000000000000ull;
}
constexpr u32 kNaN32 = 0x7fffffffu;  // the GPU's canonical NaNs
constexpr u64 kNaN64 = 0x7fffffffffffffffull;
constexpr u16 kNaN16 = 0x7fffu;  // f16 and bf16

// Keeps the compiler from fusing an explicitly rounded multiply or add with its neighbours
// (-ffp-contract=fast): PTX only lets instructions without a rounding modifier fuse.
template <class F>
CUDAMUX_PTX_INLINE F opaque(F x) {
  __asm__("" : "+x"(x));
  return x;
}

// Binary floating-point formats: m mantissa bits, e exponent bits; maxsig: the largest
// significand (with the hidden bit) at the largest exponent emax; inf: has infinities.
struct fmt_f64 {
  static constexpr int m = 52, e = 11, bias = 1023, emax = 1023;
  static constexpr u64 maxsig = (1ull << 53) - 1;
  static constexpr bool inf = true;
  static constexpr u64 nan = kNaN64;
};
struct fmt_f32 {
  static constexpr int m = 23, e = 8, bias = 127, emax = 127;
  static constexpr u64 maxsig = (1ull << 24) - 1;
  static constexpr bool inf = true;
  static constexpr u64 nan = kNaN32;
};
struct fmt_tf32 {
  static constexpr int m = 10, e = 8, bias = 127, emax = 127;
  static constexpr u64 maxsig = (1ull << 11) - 1;
  static constexpr bool inf = true;
  static constexpr u64 nan = kNaN32 >> 13;
};
struct fmt_f16 {
  static constexpr int m = 10, e = 5, bias = 15, emax = 15;
  static constexpr u64 maxsig = (1ull << 11) - 1;
  static constexpr bool inf = true;
  static constexpr u64 nan = kNaN16;
};
struct fmt_bf16 {
  static constexpr int m = 7, e = 8, bias = 127, emax = 127;
  static constexpr u64 maxsig = (1ull << 8) - 1;
  static constexpr bool inf = true;
  static constexpr u64 nan = kNaN16;
};
// OCP fp8: e4m3 has no infinity (S.1111.111 is NaN, largest 448); e5m2 is IEEE-like.
struct fmt_e4m3 {
  static constexpr int m = 3, e = 4, bias = 7, emax = 8;
  static constexpr u64 maxsig = 0xe;
  static constexpr bool inf = false;
  static constexpr u64 nan = 0x7f;
};
struct fmt_e5m2 {
  static constexpr int m = 2, e = 5, bias = 15, emax = 15;
  static constexpr u64 maxsig = 0x7;
  static constexpr bool inf = true;
  static constexpr u64 nan = 0x7f;
};

CUDAMUX_PTX_INLINE int msb128(u128 v) {
  const u64 hi = static_cast<u64>(v >> 64);
  return hi != 0 ? 127 - __builtin_clzll(hi) : 63 - __builtin_clzll(static_cast<u64>(v));
}

// Rounds (-1)^neg * mant * 2^exp to format F with rounding R (NONE = RN). mant carries its
// sticky bit jammed into bit 0 when inexact; it must then hold at least F::m + 3 bits.
// Returns the bit pattern (sign at bit e + m). Overflow follows IEEE for the mode, or gives
// the largest finite value under SATFINITE (NaN for a format without infinity otherwise).
template <class F, int R>
inline u64 round_bits(bool neg, int exp, u128 mant, bool satfinite) {
  if constexpr (R == NONE || R == RS) {  // .rs (stochastic) is not modelled: nearest even
    return round_bits<F, RN>(neg, exp, mant, satfinite);
  }
  constexpr int M = F::m;
  constexpr int EMIN = 1 - F::bias;
  const u64 sign = static_cast<u64>(neg) << (F::e + M);
  if (mant == 0) return sign;
  const int msb = msb128(mant);
  const int e_val = exp + msb;
  const int ex = e_val < EMIN ? EMIN : e_val;
  int lsbpos = ex - M;
  const int shift = lsbpos - exp;
  u64 r;
  if (shift <= 0) {
    r = static_cast<u64>(mant << -shift);
  } else {
    int cmp;  // dropped part against half an ulp: -1 below, 0 equal, 1 above
    bool inexact = true;
    if (shift > 128) {
      r = 0;
      cmp = -1;
    } else if (shift == 128) {
      r = 0;
      const u128 half = static_cast<u128>(1) << 127;
      cmp = mant > half ? 1 : (mant == half ? 0 : -1);
    } else {
      r = static_cast<u64>(mant >> shift);
      const u128 d = mant & ((static_cast<u128>(1) << shift) - 1);
      const u128 half = static_cast<u128>(1) << (shift - 1);
      cmp = d > half ? 1 : (d == half ? 0 : -1);
      inexact = d != 0;
    }
    bool up;
    if constexpr (R == RZ)
      up = false;
    else if constexpr (R == RP)
      up = inexact && !neg;
    else if constexpr (R == RM)
      up = inexact && neg;
    else if constexpr (R == RNA)
      up = cmp >= 0;
    else
      up = cmp > 0 || (cmp == 0 && (r & 1) != 0);
    r += up ? 1 : 0;
    if ((r >> (M + 1)) != 0) {
      r >>= 1;
      ++lsbpos;
    }
  }
  const int E = lsbpos + M;
  const bool normal = (r >> M) != 0;
  if (normal && (E > F::emax || (E == F::emax && r > F::maxsig))) {
    bool to_inf = R == RN || R == RNA || R == NONE || (R == RP && !neg) || (R == RM && neg);
    if (satfinite) to_inf = false;
    if (to_inf) {
      if constexpr (F::inf)
        return sign | (((1ull << F::e) - 1) << M);
      else
        return sign | F::nan;
    }
    return sign | (static_cast<u64>(F::emax + F::bias) << M) | (F::maxsig & ((1ull << M) - 1));
  }
  const u64 biased = normal ? static_cast<u64>(E + F::bias) : 0;
  return sign | (biased << M) | (r & ((1ull << M) - 1));
}

// Exact decomposition of a finite double: |x| = mant * 2^exp.
CUDAMUX_PTX_INLINE void split64(double x, bool& neg, int& exp, u64& mant) {
  const u64 b = bits64(x);
  neg = (b >> 63) != 0;
  const int be = static_cast<int>((b >> 52) & 0x7ff);
  mant = b & ((1ull << 52) - 1);
  if (be == 0) {
    exp = -1074;
  } else {
    mant |= 1ull << 52;
    exp = be - 1075;
  }
}

// A double (exact, or round-to-odd) to format F: NaN -> F's canonical NaN.
template <class F, int R>
inline u64 from_double(double x, bool satfinite) {
  if (isnan64(x)) return F::nan;
  bool neg;
  int exp;
  u64 mant;
  split64(x, neg, exp, mant);
  if (!isfinite64(x)) {
    if (satfinite) return round_bits<F, RZ>(neg, 2000, 1, true);  // +-max finite
    if constexpr (!F::inf) return F::nan;
    return (static_cast<u64>(neg) << (F::e + F::m)) | (((1ull << F::e) - 1) << F::m);
  }
  return round_bits<F, R>(neg, exp, mant, satfinite);
}

// Round to odd: hi = RN(x) and x - hi has the sign of dir (0: exact). The result is the
// double nearest x whose last bit is odd when x is not a double, so that rounding it again
// to 26 bits or fewer gives the correctly rounded x in any mode.
CUDAMUX_PTX_INLINE double round_odd(double hi, double dir) {
  if (dir == 0 || !isfinite64(hi) || hi == 0) return hi;
  u64 b = bits64(hi);
  if ((b & 1) == 0) b += ((dir > 0) == (hi > 0)) ? 1 : static_cast<u64>(-1);
  return as_f64(b);
}
// Exact sum: a + b == s + e (Knuth's two-sum; no multiplications, so no contraction).
CUDAMUX_PTX_INLINE double two_sum(double a, double b, double& e) {
  const double s = a + b;
  const double bb = s - a;
  e = (a - (s - bb)) + (b - bb);
  return s;
}

// f16/bf16 <-> f32/f64
CUDAMUX_PTX_INLINE float h2f(u16 h) {
  const u32 sign = static_cast<u32>(h & 0x8000u) << 16;
  const u32 e = (h >> 10) & 0x1f;
  const u32 f = h & 0x3ffu;
  if (e == 0) {
    const float v = static_cast<float>(f) * 5.9604644775390625e-8f;  // f * 2^-24, exact
    return as_f32(bits32(v) | sign);
  }
  if (e == 31) return as_f32(sign | 0x7f800000u | (f << 13));
  return as_f32(sign | ((e + 112) << 23) | (f << 13));
}
CUDAMUX_PTX_INLINE float b2f(u16 h) { return as_f32(static_cast<u32>(h) << 16); }
// f32 -> f16 and bf16, round to nearest even, by bit manipulation (the hot path of f16
// arithmetic). NaN gives the canonical NaN.
CUDAMUX_PTX_INLINE u16 f2h_rn(float f) {
  u32 x = bits32(f);
  const u32 sign = (x >> 16) & 0x8000u;
  x &= 0x7fffffffu;
  u32 o;
  if (x >= 0x47800000u) {  // 2^16 and above: infinity (rounding carries there), NaN
    o = x > 0x7f800000u ? 0x7fffu : 0x7c00u;
  } else if (x < 0x38800000u) {  // below 2^-14: the hardware rounds at the subnormal lsb
    const float magic = 0.5f;    // 2^-1: its ulp is f16's smallest subnormal, 2^-24
    o = bits32(opaque(as_f32(x) + magic)) - bits32(magic);
  } else {
    const u32 odd = (x >> 13) & 1u;
    x += (static_cast<u32>(15 - 127) << 23) + 0xfffu + odd;
    o = x >> 13;
  }
  return static_cast<u16>(o | sign);
}
CUDAMUX_PTX_INLINE u16 f2b_rn(float f) {
  const u32 u = bits32(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return kNaN16;
  return static_cast<u16>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);  // carries into the exponent
}

template <int T>
struct fmt_of;
template <>
struct fmt_of<F64> {
  using type = fmt_f64;
};
template <>
struct fmt_of<F32> {
  using type = fmt_f32;
};
template <>
struct fmt_of<TF32> {
  using type = fmt_tf32;
};
template <>
struct fmt_of<F16> {
  using type = fmt_f16;
};
template <>
struct fmt_of<F16X2> {
  using type = fmt_f16;
};
template <>
struct fmt_of<BF16> {
  using type = fmt_bf16;
};
template <>
struct fmt_of<BF16X2> {
  using type = fmt_bf16;
};
template <>
struct fmt_of<E4M3X2> {
  using type = fmt_e4m3;
};
template <>
struct fmt_of<E5M2X2> {
  using type = fmt_e5m2;
};

template <int T>
constexpr bool is_float = T == F16 || T == F16X2 || T == BF16 || T == BF16X2 || T == TF32 ||
                          T == F32 || T == F64 || T == E4M3X2 || T == E5M2X2;
template <int T>
constexpr bool is_half = T == F16 || T == BF16;  // 16-bit float scalars
template <int T>
constexpr bool is_packed = T == F16X2 || T == BF16X2;
template <int T>
constexpr int scalar_of = T == F16X2 ? F16 : (T == BF16X2 ? BF16 : T);
template <int T>
constexpr bool is_signed_int = T == S8 || T == S16 || T == S32 || T == S64;
template <int R>
constexpr int rn_default = R == NONE ? RN : R;

// The value of a stored scalar float, exactly, as a double.
template <int T>
CUDAMUX_PTX_INLINE double widen(typename storage<T>::type x) {
  if constexpr (T == F16)
    return h2f(x);
  else if constexpr (T == BF16)
    return b2f(x);
  else if constexpr (T == TF32)
    return as_f32(x);
  else
    return x;
}
// Stored scalar float of type T from an exact or round-to-odd double.
template <int T, int R>
CUDAMUX_PTX_INLINE typename storage<T>::type narrow(double x, bool satfinite = false) {
  using S = typename storage<T>::type;
  if constexpr (T == F64) {
    return x;
  } else if constexpr (T == F32) {
    if constexpr (R == RN || R == NONE) {
      if (!satfinite) return static_cast<float>(x);  // the host rounds to nearest even
    }
    return as_f32(static_cast<u32>(from_double<fmt_f32, rn_default<R>>(x, satfinite)));
  } else if constexpr (T == TF32) {
    return static_cast<u32>(from_double<fmt_tf32, rn_default<R>>(x, satfinite) << 13);
  } else {
    return static_cast<S>(from_double<typename fmt_of<T>::type, rn_default<R>>(x, satfinite));
  }
}

// Subnormal tests and flushing (sign-preserving zero).
template <int T>
CUDAMUX_PTX_INLINE bool is_subnormal(typename storage<T>::type x) {
  if constexpr (T == F32)
    return (bits32(x) & 0x7f800000u) == 0 && (bits32(x) & 0x7fffffu) != 0;
  else if constexpr (T == F64)
    return (bits64(x) & 0x7ff0000000000000ull) == 0 && (bits64(x) << 1) != 0;
  else if constexpr (T == F16)
    return (x & 0x7c00u) == 0 && (x & 0x3ffu) != 0;
  else if constexpr (T == BF16)
    return (x & 0x7f80u) == 0 && (x & 0x7fu) != 0;
  else
    return false;
}
template <int T>
CUDAMUX_PTX_INLINE typename storage<T>::type flush(typename storage<T>::type x) {
  if (!is_subnormal<T>(x)) return x;
  if constexpr (T == F32)
    return as_f32(bits32(x) & 0x80000000u);
  else if constexpr (T == F64)
    return as_f64(bits64(x) & 0x8000000000000000ull);
  else
    return static_cast<typename storage<T>::type>(x & 0x8000u);
}
template <int T>
CUDAMUX_PTX_INLINE bool nan_of(typename storage<T>::type x) {
  if constexpr (T == F32)
    return isnan32(x);
  else if constexpr (T == F64)
    return isnan64(x);
  else if constexpr (T == F16)
    return (x & 0x7fffu) > 0x7c00u;
  else if constexpr (T == BF16)
    return (x & 0x7fffu) > 0x7f80u;
  else
    return false;
}
template <int T>
CUDAMUX_PTX_INLINE typename storage<T>::type canonical_nan() {
  if constexpr (T == F32)
    return as_f32(kNaN32);
  else if constexpr (T == F64)
    return as_f64(kNaN64);
  else
    return kNaN16;
}
template <int T>
CUDAMUX_PTX_INLINE bool negative(typename storage<T>::type x) {  // sign bit set
  if constexpr (T == F32)
    return (bits32(x) >> 31) != 0;
  else if constexpr (T == F64)
    return (bits64(x) >> 63) != 0;
  else
    return (x >> 15) != 0;
}
template <int T>
CUDAMUX_PTX_INLINE typename storage<T>::type zero_of() {
  if constexpr (T == F32)
    return 0.0f;
  else if constexpr (T == F64)
    return 0.0;
  else
    return 0;
}
template <int T>
CUDAMUX_PTX_INLINE typename storage<T>::type one_of() {
  if constexpr (T == F32)
    return 1.0f;
  else if constexpr (T == F64)
    return 1.0;
  else if constexpr (T == F16)
    return 0x3c00;
  else
    return 0x3f80;
}
// Result modifiers shared by the arithmetic: .ftz, .sat ([0, 1], NaN -> +0), .relu
// (negative -> +0, NaN -> canonical NaN); f16/bf16 NaN results are canonical.
template <int T, int Flags>
CUDAMUX_PTX_INLINE typename storage<T>::type finish(typename storage<T>::type r) {
  if constexpr ((Flags & FTZ) != 0) r = flush<T>(r);
  if constexpr ((Flags & SAT) != 0) {
    const double v = widen<T>(r);
    if (!(v > 0)) return zero_of<T>();
    if (v >= 1) return one_of<T>();
  }
  if constexpr ((Flags & RELU) != 0) {
    if (nan_of<T>(r)) return canonical_nan<T>();
    if (negative<T>(r)) return zero_of<T>();
  }
  if constexpr (is_half<T>) {
    if (nan_of<T>(r)) return canonical_nan<T>();
  }
  return r;
}
template <int T, int Flags>
CUDAMUX_PTX_INLINE typename storage<T>::type in(typename storage<T>::type x) {
  if constexpr ((Flags & FTZ) != 0)
    return flush<T>(x);
  else
    return x;
}

// f16/bf16 results computed in f32 and rounded once more: exact for + - * / (f32 has more
// than 2p + 2 bits, so the double rounding is innocuous).
template <int T>
CUDAMUX_PTX_INLINE u16 half_of(float f) {
  if constexpr (T == F16)
    return f2h_rn(f);
  else
    return f2b_rn(f);
}
template <int T>
CUDAMUX_PTX_INLINE float hval(u16 h) {
  if constexpr (T == F16)
    return h2f(h);
  else
    return b2f(h);
}
// Packed f16x2/bf16x2: apply a scalar operation to each half.
template <class Op>
CUDAMUX_PTX_INLINE u32 per_half(u32 a, u32 b, u32 c, Op op) {
  const u16 lo = op(static_cast<u16>(a), static_cast<u16>(b), static_cast<u16>(c));
  const u16 hi =
      op(static_cast<u16>(a >> 16), static_cast<u16>(b >> 16), static_cast<u16>(c >> 16));
  return static_cast<u32>(lo) | (static_cast<u32>(hi) << 16);
}

// ---- exact 128-bit arithmetic for directed f64 (value = (-1)^neg * mant * 2^exp) ----
struct xf {
  bool neg;
  int exp;
  u128 mant;
};
CUDAMUX_PTX_INLINE xf xf_of(double x) {
  xf r;
  u64 m;
  split64(x, r.neg, r.exp, m);
  r.mant = m;
  return r;
}
CUDAMUX_PTX_INLINE xf xf_norm(xf a) {  // most significant bit at 125
  if (a.mant == 0) return a;
  const int s = 125 - msb128(a.mant);
  if (s > 0) {
    a.mant <<= s;
    a.exp -= s;
  }
  return a;
}
// Sum with the smaller operand's shifted-out bits jammed into bit 0 (>= 70 guard bits).
inline xf xf_add(xf a, xf b) {
  if (a.mant == 0) return b;
  if (b.mant == 0) return a;
  a = xf_norm(a);
  b = xf_norm(b);
  if (a.exp < b.exp || (a.exp == b.exp && a.mant < b.mant)) {
    const xf t = a;
    a = b;
    b = t;
  }
  const int d = a.exp - b.exp;
  if (d >= 127) {
    b.mant = 1;
  } else if (d > 0) {
    const bool sticky = (b.mant & ((static_cast<u128>(1) << d) - 1)) != 0;
    b.mant = (b.mant >> d) | (sticky ? 1 : 0);
  }
  xf r{a.neg, a.exp, 0};
  r.mant = a.neg == b.neg ? a.mant + b.mant : a.mant - b.mant;
  return r;
}
CUDAMUX_PTX_INLINE xf xf_mul(xf a, xf b) {
  return xf{a.neg != b.neg, a.exp + b.exp, a.mant * b.mant};
}
inline xf xf_div(xf a, xf b) {         // b nonzero: a 63-bit-or-more quotient, remainder jammed
  const int s = 116 - msb128(a.mant);  // dividend at 117 bits, divisor at most 53
  const u128 num = a.mant << s;
  const u128 den = b.mant;
  u128 q = num / den;
  if (num % den != 0) q |= 1;
  return xf{a.neg != b.neg, a.exp - b.exp - s, q};
}
// rcp.approx.ftz.f64 / rsqrt.approx.ftz.f64: computed from the upper 32 bits of a (1.11.20)
// with subnormals flushed; the result keeps its upper 32 bits (lower ones zero), subnormal
// results flush, NaN is 0x7fffffff00000000.
template <class Fn>
CUDAMUX_PTX_INLINE double gross64(double a, Fn fn) {
  u64 hi = bits64(a) & 0xffffffff00000000ull;
  if ((hi & 0x7ff0000000000000ull) == 0) hi &= 0x8000000000000000ull;
  const double r = fn(as_f64(hi));
  if (isnan64(r)) return as_f64(0x7fffffff00000000ull);
  u64 rb = bits64(r) & 0xffffffff00000000ull;
  if ((rb & 0x7ff0000000000000ull) == 0) rb &= 0x8000000000000000ull;
  return as_f64(rb);
}
template <int R>
CUDAMUX_PTX_INLINE double xf_round(xf v, bool zero_neg) {
  if (v.mant == 0) return zero_neg ? -0.0 : 0.0;
  return as_f64(round_bits<fmt_f64, R>(v.neg, v.exp, v.mant, false));
}
CUDAMUX_PTX_INLINE double next_up(double x) {  // x finite
  if (x == 0) return as_f64(1);
  const u64 b = bits64(x);
  return as_f64(x > 0 ? b + 1 : b - 1);
}
CUDAMUX_PTX_INLINE double next_down(double x) { return -next_up(-x); }

// Exact zero results of a sum: +0 unless both addends are -0, or the mode is rm.
template <int R>
CUDAMUX_PTX_INLINE bool zero_sum_negative(bool na, bool nb) {
  return (na && nb) || (na != nb && R == RM);
}

template <int R>
inline double add64(double a, double b) {
  if constexpr (R == NONE) {
    return a + b;
  } else if constexpr (R == RN) {
    return opaque(opaque(a) + opaque(b));
  } else {
    if (!isfinite64(a) || !isfinite64(b)) return a + b;
    if (a == 0 && b == 0)
      return zero_sum_negative<R>(negative<F64>(a), negative<F64>(b)) ? -0.0 : 0.0;
    return xf_round<R>(xf_add(xf_of(a), xf_of(b)), R == RM);
  }
}
template <int R>
inline double mul64(double a, double b) {
  if constexpr (R == NONE) {
    return a * b;
  } else if constexpr (R == RN) {
    return opaque(opaque(a) * opaque(b));
  } else {
    if (!isfinite64(a) || !isfinite64(b) || a == 0 || b == 0) return a * b;
    return xf_round<R>(xf_mul(xf_of(a), xf_of(b)), false);
  }
}
template <int R>
inline double fma64(double a, double b, double c) {
  if constexpr (R == NONE || R == RN) {
    return __builtin_fma(a, b, c);
  } else {
    if (!isfinite64(a) || !isfinite64(b) || !isfinite64(c)) return __builtin_fma(a, b, c);
    const bool pneg = negative<F64>(a) != negative<F64>(b);
    if (a == 0 || b == 0) {
      if (c != 0) return c;
      return zero_sum_negative<R>(pneg, negative<F64>(c)) ? -0.0 : 0.0;
    }
    return xf_round<R>(xf_add(xf_mul(xf_of(a), xf_of(b)), xf_of(c)), R == RM);
  }
}
template <int R>
inline double div64(double a, double b) {
  if constexpr (R == NONE || R == RN) {
    return opaque(opaque(a) / opaque(b));
  } else {
    if (!isfinite64(a) || !isfinite64(b) || a == 0 || b == 0) return a / b;
    return xf_round<R>(xf_div(xf_of(a), xf_of(b)), false);
  }
}
template <int R>
inline double sqrt64(double a) {
  if constexpr (R == NONE || R == RN) {
    return __builtin_sqrt(a);
  } else {
    if (!(a > 0) || !isfinite64(a)) return __builtin_sqrt(a);
    // Scale into a range where the remainder a - s*s is exact, correct s by its sign, scale
    // back (the result is always normal, so the scaling is exact).
    double scale = 1;
    if (a < 0x1p-900) {
      a *= 0x1p1000;
      scale = 0x1p-500;
    }
    double s = __builtin_sqrt(a);
    const double r = __builtin_fma(-s, s, a);
    if constexpr (R == RP) {
      if (r > 0) s = next_up(s);
    } else {
      if (r < 0) s = next_down(s);
    }
    return s * scale;
  }
}

// ---- narrow formats (f32 with directed rounding, f16, bf16): round-to-odd doubles ----
template <int T, int R>
CUDAMUX_PTX_INLINE typename storage<T>::type nadd(double a, double b) {
  double e;
  const double s = two_sum(a, b, e);
  if (s == 0 && e == 0) {  // exact zero: the sign rule of IEEE sums
    const bool neg =
        zero_sum_negative<rn_default<R>>(__builtin_signbit(a) != 0, __builtin_signbit(b) != 0);
    return narrow<T, R>(neg ? -0.0 : 0.0);
  }
  return narrow<T, R>(isfinite64(s) ? round_odd(s, e) : s);
}
template <int T, int R>
CUDAMUX_PTX_INLINE typename storage<T>::type nmul(double a, double b) {
  return narrow<T, R>(a * b);  // exact: at most 2 x 24 significant bits
}
template <int T, int R>
CUDAMUX_PTX_INLINE typename storage<T>::type nfma(double a, double b, double c) {
  const double p = a * b;  // exact
  if (p == 0 && c == 0) {
    const bool neg =
        zero_sum_negative<rn_default<R>>(__builtin_signbit(p) != 0, __builtin_signbit(c) != 0);
    return narrow<T, R>(neg ? -0.0 : 0.0);
  }
  return nadd<T, R>(p, c);
}
template <int T, int R>
CUDAMUX_PTX_INLINE typename storage<T>::type ndiv(double a, double b) {
  const double q = a / b;
  if (!isfinite64(q) || q == 0) return narrow<T, R>(q);
  const double r = __builtin_fma(-q, b, a);  // exact remainder: a/b = q + r/b
  return narrow<T, R>(round_odd(q, r == 0 ? 0.0 : ((r > 0) == (b > 0) ? 1.0 : -1.0)));
}
template <int T, int R>
CUDAMUX_PTX_INLINE typename storage<T>::type nsqrt(double a) {
  const double s = __builtin_sqrt(a);
  if (!(a > 0) || !isfinite64(a)) return narrow<T, R>(s);
  const double r = __builtin_fma(-s, s, a);
  return narrow<T, R>(round_odd(s, r));
}
}  // namespace detail

// ---- conversion ----
namespace detail {
template <int R>
CUDAMUX_PTX_INLINE double round_integral(double v) {
  if constexpr (R == RNI || R == RN || R == NONE)
#if defined(__clang__) && !__has_builtin(__builtin_roundeven)
    // Clang 14 has no roundeven; rint rounds to nearest even in the default rounding mode,
    // which kernel code never changes.
    return __builtin_rint(v);
#else
    return __builtin_roundeven(v);
#endif
  else if constexpr (R == RZI || R == RZ)
    return __builtin_trunc(v);
  else if constexpr (R == RMI || R == RM)
    return __builtin_floor(v);
  else if constexpr (R == RPI || R == RP)
    return __builtin_ceil(v);
  else
    return __builtin_round(v);  // rna: ties away
}
template <int T>
constexpr int int_bits = T == B8 || T == U8 || T == S8
                             ? 8
                             : (T == B16 || T == U16 || T == S16
                                    ? 16
                                    : (T == B32 || T == U32 || T == S32 ? 32 : 64));
template <int T>
CUDAMUX_PTX_INLINE s128 int_value(typename storage<T>::type x) {
  if constexpr (is_signed_int<T>)
    return static_cast<s128>(static_cast<s64>(x));
  else
    return static_cast<s128>(static_cast<u64>(x));
}
template <int T>
CUDAMUX_PTX_INLINE typename storage<T>::type int_saturate(s128 v) {
  constexpr int w = int_bits<T>;
  constexpr s128 lo = is_signed_int<T> ? -(static_cast<s128>(1) << (w - 1)) : 0;
  constexpr s128 hi =
      is_signed_int<T> ? (static_cast<s128>(1) << (w - 1)) - 1 : (static_cast<s128>(1) << w) - 1;
  if (v < lo) v = lo;
  if (v > hi) v = hi;
  return static_cast<typename storage<T>::type>(static_cast<u64>(v));
}
// Stores a double with a flag set into its final type, applying .ftz/.sat/.relu.
template <int D, int Flags>
CUDAMUX_PTX_INLINE typename storage<D>::type finish_any(typename storage<D>::type r) {
  if constexpr (D == F32 || D == F64 || D == F16 || D == BF16)
    return finish<D, Flags&(FTZ | SAT | RELU)>(r);
  else
    return r;
}
template <class F>
CUDAMUX_PTX_INLINE u32 to_f8(float a, bool relu) {
  double v = a;
  if (relu && !isnan64(v) && v < 0) v = 0;
  return static_cast<u32>(from_double<F, RN>(v, true));
}
}  // namespace detail

template <int D, int S, int R, int Flags>
typename storage<D>::type cvt(typename storage<S>::type x) {
  using namespace detail;
  using DT = typename storage<D>::type;
  static_assert(!is_packed<D> && !is_packed<S>, "packed conversions: cvt_pack2");
  if constexpr (is_float<S> && is_float<D>) {
    if constexpr (S == F32 && (Flags & FTZ) != 0) x = flush<F32>(x);
    double v = widen<S>(x);
    if (isnan64(v)) {
      if constexpr ((Flags & SAT) != 0 && D != TF32) return zero_of<D>();  // .sat: NaN -> +0
      if constexpr (D == TF32)
        return kNaN32;
      else
        return canonical_nan<D>();
    }
    if constexpr (R == RNI || R == RZI || R == RMI || R == RPI) v = round_integral<R>(v);
    if constexpr ((Flags & RELU) != 0) {
      if (v < 0) v = 0;
    }
    return finish_any<D, Flags>(narrow<D, R>(v, (Flags & SATFINITE) != 0));
  } else if constexpr (is_float<S>) {  // float -> integer: round, clamp, NaN -> 0
    if constexpr (S == F32 && (Flags & FTZ) != 0) x = flush<F32>(x);
    const double v = round_integral < R == NONE ? RZI : R > (widen<S>(x));
    constexpr int w = int_bits<D>;
    constexpr double half = static_cast<double>(1ull << (w - 1));
    constexpr double lo = is_signed_int<D> ? -half : 0.0;
    constexpr double hi = is_signed_int<D> ? half : 2 * half;
    if (isnan64(v)) {
      // PTX ISA 9: zero, except from f64 or to a 64-bit integer: 1 << (width - 1).
      if constexpr (S != F64 && w != 64)
        return 0;
      else
        return static_cast<DT>(static_cast<u64>(1) << (w - 1));
    }
    if (v < lo) return int_saturate<D>(static_cast<s128>(-1) << 100);
    if (v >= hi) return int_saturate<D>(static_cast<s128>(1) << 100);
    if constexpr (is_signed_int<D>)
      return static_cast<DT>(static_cast<s64>(v));
    else
      return static_cast<DT>(static_cast<u64>(v));
  } else if constexpr (is_float<D>) {  // integer -> float
    const s128 v = int_value<S>(x);
    DT r;
    if constexpr ((D == F32 || D == F64) && (R == RN || R == NONE)) {
      if constexpr (is_signed_int<S>)
        r = static_cast<DT>(static_cast<s64>(v));
      else
        r = static_cast<DT>(static_cast<u64>(v));
    } else {
      const bool neg = v < 0;
      const u128 mag = static_cast<u128>(neg ? -v : v);
      const u64 b = round_bits<typename fmt_of<D>::type, rn_default<R>>(neg, 0, mag, false);
      if constexpr (D == F32)
        r = as_f32(static_cast<u32>(b));
      else if constexpr (D == F64)
        r = as_f64(b);
      else if constexpr (D == TF32)
        r = static_cast<u32>(b << 13);
      else
        r = static_cast<DT>(b);
    }
    return finish_any<D, Flags>(r);
  } else {  // integer -> integer: extend from the source type, truncate or saturate
    const s128 v = int_value<S>(x);
    if constexpr ((Flags & SAT) != 0)
      return int_saturate<D>(v);
    else
      return static_cast<DT>(static_cast<u64>(v));
  }
}

template <int D, int R, int Flags>
u32 cvt_pack2(float a, float b) {
  using namespace detail;
  if constexpr (D == F16X2 || D == BF16X2) {
    constexpr int E = scalar_of<D>;
    return (static_cast<u32>(cvt<E, F32, R, Flags>(a)) << 16) | cvt<E, F32, R, Flags>(b);
  } else if constexpr (D == E4M3X2 || D == E5M2X2) {
    using F = typename fmt_of<D>::type;
    constexpr bool relu = (Flags & RELU) != 0;
    return (to_f8<F>(a, relu) << 8) | to_f8<F>(b, relu);
  } else {
    static_assert(D == F16X2, "cvt_pack2: f16x2, bf16x2, e4m3x2 or e5m2x2");
    return 0;
  }
}
// Added: cvt.rn{.relu}.f16x2.{e4m3x2,e5m2x2} d, a (exact: every fp8 value is an f16 value;
// the upper byte goes to the upper half).
template <int S, int Flags>
u32 cvt_f8x2_to_f16x2(u16 a) {
  using namespace detail;
  using F = typename fmt_of<S>::type;
  auto one = [](u32 byte) -> u32 {
    const bool neg = (byte & 0x80u) != 0;
    const u32 e = (byte >> F::m) & ((1u << F::e) - 1);
    const u32 m = byte & ((1u << F::m) - 1);
    u32 h;
    if ((!F::inf && (byte & 0x7fu) == 0x7fu) || (F::inf && e == (1u << F::e) - 1 && m != 0)) {
      return kNaN16;
    } else if (F::inf && e == (1u << F::e) - 1) {
      h = 0x7c00u;
    } else if (e == 0) {
      h = static_cast<u32>(round_bits<fmt_f16, RN>(false, 1 - F::bias - F::m, m, false));
    } else {
      h = static_cast<u32>(round_bits<fmt_f16, RN>(false, static_cast<int>(e) - F::bias - F::m,
                                                   m | (1u << F::m), false));
    }
    if ((Flags & RELU) != 0 && neg) return 0;
    return h | (neg ? 0x8000u : 0u);
  };
  return (one(a >> 8) << 16) | one(a & 0xffu);
}

inline float f16_to_f32(u16 h) { return detail::h2f(h); }
inline u16 f32_to_f16_rn(float f) { return detail::f2h_rn(f); }
inline float bf16_to_f32(u16 h) { return detail::b2f(h); }
inline u16 f32_to_bf16_rn(float f) { return detail::f2b_rn(f); }

// ---- float arithmetic ----
template <int T, int R, int Flags>
typename storage<T>::type fadd(typename storage<T>::type a, typename storage<T>::type b) {
  using namespace detail;
  if constexpr (is_packed<T>) {
    return per_half(a, b, 0, [](u16 x, u16 y, u16) { return fadd<scalar_of<T>, R, Flags>(x, y); });
  } else if constexpr (T == F64) {
    return add64<R>(a, b);
  } else if constexpr (T == F32) {
    a = in<T, Flags>(a);
    b = in<T, Flags>(b);
    float r;
    if constexpr (R == NONE)
      r = a + b;
    else if constexpr (R == RN)
      r = opaque(opaque(a) + opaque(b));
    else
      r = nadd<F32, R>(a, b);
    return finish<T, Flags>(r);
  } else {
    if constexpr (R == NONE || R == RN) {
      const float x = hval<T>(in<T, Flags>(a)), y = hval<T>(in<T, Flags>(b));
      return finish<T, Flags>(half_of<T>(opaque(x + y)));
    }
    return finish<T, Flags>(nadd<T, R>(widen<T>(in<T, Flags>(a)), widen<T>(in<T, Flags>(b))));
  }
}
template <int T, int R, int Flags>
typename storage<T>::type fsub(typename storage<T>::type a, typename storage<T>::type b) {
  using namespace detail;
  if constexpr (is_packed<T>) {
    return per_half(a, b, 0, [](u16 x, u16 y, u16) { return fsub<scalar_of<T>, R, Flags>(x, y); });
  } else if constexpr (T == F64) {
    if constexpr (R == NONE)
      return a - b;
    else if constexpr (R == RN)
      return opaque(opaque(a) - opaque(b));
    else
      return add64<R>(a, -b);
  } else if constexpr (T == F32) {
    a = in<T, Flags>(a);
    b = in<T, Flags>(b);
    float r;
    if constexpr (R == NONE)
      r = a - b;
    else if constexpr (R == RN)
      r = opaque(opaque(a) - opaque(b));
    else
      r = nadd<F32, R>(a, -static_cast<double>(b));
    return finish<T, Flags>(r);
  } else {
    if constexpr (R == NONE || R == RN) {
      const float x = hval<T>(in<T, Flags>(a)), y = hval<T>(in<T, Flags>(b));
      return finish<T, Flags>(half_of<T>(opaque(x - y)));
    }
    return finish<T, Flags>(nadd<T, R>(widen<T>(in<T, Flags>(a)), -widen<T>(in<T, Flags>(b))));
  }
}
template <int T, int R, int Flags>
typename storage<T>::type fmul(typename storage<T>::type a, typename storage<T>::type b) {
  using namespace detail;
  if constexpr (is_packed<T>) {
    return per_half(a, b, 0, [](u16 x, u16 y, u16) { return fmul<scalar_of<T>, R, Flags>(x, y); });
  } else if constexpr (T == F64) {
    return mul64<R>(a, b);
  } else if constexpr (T == F32) {
    a = in<T, Flags>(a);
    b = in<T, Flags>(b);
    float r;
    if constexpr (R == NONE)
      r = a * b;
    else if constexpr (R == RN)
      r = opaque(opaque(a) * opaque(b));
    else
      r = nmul<F32, R>(a, b);
    return finish<T, Flags>(r);
  } else {
    if constexpr (R == NONE || R == RN) {
      const float x = hval<T>(in<T, Flags>(a)), y = hval<T>(in<T, Flags>(b));
      return finish<T, Flags>(half_of<T>(opaque(x * y)));
    }
    return finish<T, Flags>(nmul<T, R>(widen<T>(in<T, Flags>(a)), widen<T>(in<T, Flags>(b))));
  }
}
template <int T, int R, int Flags>
typename storage<T>::type ffma(typename storage<T>::type a, typename storage<T>::type b,
                               typename storage<T>::type c) {
  using namespace detail;
  if constexpr (is_packed<T>) {
    return per_half(a, b, c,
                    [](u16 x, u16 y, u16 z) { return ffma<scalar_of<T>, R, Flags>(x, y, z); });
  } else if constexpr (T == F64) {
    return fma64<R>(a, b, c);
  } else if constexpr (T == F32) {
    a = in<T, Flags>(a);
    b = in<T, Flags>(b);
    c = in<T, Flags>(c);
    float r;
    if constexpr (R == NONE || R == RN)
      r = __builtin_fmaf(a, b, c);
    else
      r = nfma<F32, R>(a, b, c);
    return finish<T, Flags>(r);
  } else {
    return finish<T, Flags>(nfma<T, R>(widen<T>(in<T, Flags>(a)), widen<T>(in<T, Flags>(b)),
                                       widen<T>(in<T, Flags>(c))));
  }
}
template <int T, int R, int Flags>
typename storage<T>::type fdiv(typename storage<T>::type a, typename storage<T>::type b) {
  using namespace detail;
  if constexpr (is_packed<T>) {
    return per_half(a, b, 0, [](u16 x, u16 y, u16) { return fdiv<scalar_of<T>, R, Flags>(x, y); });
  } else if constexpr (T == F64) {
    return div64<R>(a, b);
  } else if constexpr (T == F32) {
    a = in<T, Flags>(a);
    b = in<T, Flags>(b);
    float r;
    if constexpr ((Flags & APPROX) != 0) {
      // div.approx.f32: a * (1/b) (2 ulp); for 2^126 < |b| < 2^128 the GPU returns 0 (NaN
      // for an infinite a).
      const float mb = __builtin_fabsf(b);
      if (mb > 0x1p126f && mb < __builtin_inff()) {
        r = (a - a) * 0.0f;  // NaN for inf/NaN a, else a zero
        if (!isnan32(r)) r = as_f32((bits32(a) ^ bits32(b)) & 0x80000000u);
      } else {
        r = a * (1.0f / b);
      }
    } else if constexpr (R == NONE || R == RN) {
      r = opaque(opaque(a) / opaque(b));  // .full too: exact is within its 2 ulp
    } else {
      r = ndiv<F32, R>(a, b);
    }
    return finish<T, Flags>(r);
  } else {
    if constexpr (R == NONE || R == RN) {
      const float x = hval<T>(in<T, Flags>(a)), y = hval<T>(in<T, Flags>(b));
      return finish<T, Flags>(half_of<T>(opaque(x / y)));
    }
    return finish<T, Flags>(ndiv<T, R>(widen<T>(in<T, Flags>(a)), widen<T>(in<T, Flags>(b))));
  }
}

namespace detail {
template <int T, int Flags, bool Max>
inline typename storage<T>::type minmax(typename storage<T>::type a, typename storage<T>::type b) {
  using S = typename storage<T>::type;
  a = in<T, Flags>(a);
  b = in<T, Flags>(b);
  const bool an = nan_of<T>(a), bn = nan_of<T>(b);
  if ((an && bn) || ((Flags & NANF) != 0 && (an || bn))) return canonical_nan<T>();
  const bool sa = negative<T>(a), sb = negative<T>(b);
  S x = a, y = b;
  if constexpr ((Flags & (ABSF | XORSIGN)) != 0) {  // magnitudes compared
    if constexpr (T == F32) {
      x = as_f32(bits32(x) & 0x7fffffffu);
      y = as_f32(bits32(y) & 0x7fffffffu);
    } else if constexpr (T == F64) {
      x = as_f64(bits64(x) & 0x7fffffffffffffffull);
      y = as_f64(bits64(y) & 0x7fffffffffffffffull);
    } else {
      x = static_cast<S>(x & 0x7fffu);
      y = static_cast<S>(y & 0x7fffu);
    }
  }
  S r;
  if (an) {
    r = y;
  } else if (bn) {
    r = x;
  } else {
    const double vx = widen<T>(x), vy = widen<T>(y);
    if (vx == vy) {  // -0 is below +0
      const bool nx = negative<T>(x);
      r = (nx == Max) ? y : x;
    } else {
      r = ((vx < vy) != Max) ? x : y;
    }
  }
  if constexpr ((Flags & XORSIGN) != 0) {
    if (!an && !bn) {
      if constexpr (T == F32)
        r = as_f32(bits32(r) | (sa != sb ? 0x80000000u : 0u));
      else if constexpr (T == F64)
        r = as_f64(bits64(r) | (sa != sb ? 0x8000000000000000ull : 0ull));
      else
        r = static_cast<S>(r | (sa != sb ? 0x8000u : 0u));
    }
  }
  return finish<T, Flags&(FTZ | RELU)>(r);
}
}  // namespace detail

template <int T, int Flags>
typename storage<T>::type fmin(typename storage<T>::type a, typename storage<T>::type b) {
  if constexpr (detail::is_packed<T>) {
    return detail::per_half(
        a, b, 0, [](u16 x, u16 y, u16) { return fmin<detail::scalar_of<T>, Flags>(x, y); });
  } else {
    return detail::minmax<T, Flags, false>(a, b);
  }
}
template <int T, int Flags>
typename storage<T>::type fmax(typename storage<T>::type a, typename storage<T>::type b) {
  if constexpr (detail::is_packed<T>) {
    return detail::per_half(
        a, b, 0, [](u16 x, u16 y, u16) { return fmax<detail::scalar_of<T>, Flags>(x, y); });
  } else {
    return detail::minmax<T, Flags, true>(a, b);
  }
}
template <int T, int Flags>
typename storage<T>::type fabs_(typename storage<T>::type a) {
  using namespace detail;
  if constexpr (is_packed<T>) {
    return per_half(a, 0, 0, [](u16 x, u16, u16) { return fabs_<scalar_of<T>, Flags>(x); });
  } else {
    a = in<T, Flags>(a);
    if constexpr (T == F32)
      return as_f32(bits32(a) & 0x7fffffffu);
    else if constexpr (T == F64)
      return as_f64(bits64(a) & 0x7fffffffffffffffull);
    else
      return static_cast<u16>(a & 0x7fffu);
  }
}
template <int T, int Flags>
typename storage<T>::type fneg(typename storage<T>::type a) {
  using namespace detail;
  if constexpr (is_packed<T>) {
    return per_half(a, 0, 0, [](u16 x, u16, u16) { return fneg<scalar_of<T>, Flags>(x); });
  } else {
    a = in<T, Flags>(a);
    if constexpr (T == F32)
      return as_f32(bits32(a) ^ 0x80000000u);
    else if constexpr (T == F64)
      return as_f64(bits64(a) ^ 0x8000000000000000ull);
    else
      return static_cast<u16>(a ^ 0x8000u);
  }
}
template <int T, int R, int Flags>
typename storage<T>::type frcp(typename storage<T>::type a) {
  using namespace detail;
  if constexpr (T == F64) {
    if constexpr ((Flags & APPROX) != 0)
      return gross64(a, [](double x) { return 1.0 / x; });  // rcp.approx.ftz.f64
    else
      return div64<R>(1.0, a);
  } else if constexpr (T == F32 && (Flags & APPROX) != 0) {
    return finish<T, Flags>(1.0f / in<T, Flags>(a));  // exact: within its 1 ulp
  } else {
    return fdiv<T, R, Flags>(one_of<T>(), a);
  }
}
template <int T, int R, int Flags>
typename storage<T>::type fsqrt(typename storage<T>::type a) {
  using namespace detail;
  if constexpr (is_packed<T>) {
    return per_half(a, 0, 0, [](u16 x, u16, u16) { return fsqrt<scalar_of<T>, R, Flags>(x); });
  } else if constexpr (T == F64) {
    return sqrt64 < (Flags & APPROX) != 0 ? RN : R > (a);
  } else if constexpr (T == F32) {
    a = in<T, Flags>(a);
    if constexpr ((Flags & APPROX) != 0 || R == NONE || R == RN)
      return finish<T, Flags>(__builtin_sqrtf(a));
    else
      return finish<T, Flags>(nsqrt<F32, R>(a));
  } else {
    return finish<T, Flags>(nsqrt<T, R>(widen<T>(in<T, Flags>(a))));
  }
}

namespace detail {
// The .approx functions: computed in double (far within PTX's stated errors), rounded once.
template <int T, int Flags, class Fn>
CUDAMUX_PTX_INLINE typename storage<T>::type approx1(typename storage<T>::type a, Fn fn) {
  if constexpr (is_packed<T>) {
    return per_half(a, 0, 0, [fn](u16 x, u16, u16) { return approx1<scalar_of<T>, Flags>(x, fn); });
  } else if constexpr (T == F64) {
    return fn(in<T, Flags>(a));
  } else {
    return finish<T, Flags>(narrow<T, RN>(fn(widen<T>(in<T, Flags>(a)))));
  }
}
}  // namespace detail
template <int T, int Flags>
typename storage<T>::type frsqrt(typename storage<T>::type a) {
  if constexpr (T == F64 && (Flags & FTZ) != 0) {  // rsqrt.approx.ftz.f64: the upper word only
    return detail::gross64(a, [](double x) { return 1.0 / __builtin_sqrt(x); });
  } else {
    return detail::approx1<T, Flags>(a, [](double x) { return 1.0 / __builtin_sqrt(x); });
  }
}
template <int T, int Flags>
typename storage<T>::type fsin(typename storage<T>::type a) {
  return detail::approx1<T, Flags>(a, [](double x) { return __builtin_sin(x); });
}
template <int T, int Flags>
typename storage<T>::type fcos(typename storage<T>::type a) {
  return detail::approx1<T, Flags>(a, [](double x) { return __builtin_cos(x); });
}
template <int T, int Flags>
typename storage<T>::type flg2(typename storage<T>::type a) {
  return detail::approx1<T, Flags>(a, [](double x) { return __builtin_log2(x); });
}
template <int T, int Flags>
typename storage<T>::type fex2(typename storage<T>::type a) {
  return detail::approx1<T, Flags>(a, [](double x) { return __builtin_exp2(x); });
}
template <int T, int Flags>
typename storage<T>::type ftanh(typename storage<T>::type a) {
  return detail::approx1<T, Flags>(a, [](double x) { return __builtin_tanh(x); });
}
template <int T>
typename storage<T>::type fcopysign(typename storage<T>::type a, typename storage<T>::type b) {
  using namespace detail;
  if constexpr (T == F32)
    return as_f32((bits32(b) & 0x7fffffffu) | (bits32(a) & 0x80000000u));
  else if constexpr (T == F64)
    return as_f64((bits64(b) & 0x7fffffffffffffffull) | (bits64(a) & 0x8000000000000000ull));
  else if constexpr (is_packed<T>)
    return (b & 0x7fff7fffu) | (a & 0x80008000u);
  else
    return static_cast<u16>((b & 0x7fffu) | (a & 0x8000u));
}
template <int T, int Op>
bool ftestp(typename storage<T>::type a) {
  using namespace detail;
  const double v = widen<T>(a);
  const bool nan = isnan64(v);
  const bool inf = !nan && !isfinite64(v);
  if constexpr (Op == 0)
    return !nan && !inf;
  else if constexpr (Op == 1)
    return inf;
  else if constexpr (Op == 2)
    return !nan;
  else if constexpr (Op == 3)
    return nan;
  else if constexpr (Op == 4)
    return !nan && !inf && v != 0 && !is_subnormal<T>(a);
  else
    return is_subnormal<T>(a);
}

namespace detail {
template <int Cmp, class V>
CUDAMUX_PTX_INLINE bool ordered_cmp(V a, V b) {
  if constexpr (Cmp == 1 || Cmp == 11)
    return a == b;
  else if constexpr (Cmp == 2 || Cmp == 12)
    return a != b;
  else if constexpr (Cmp == 3 || Cmp == 7 || Cmp == 13)
    return a < b;
  else if constexpr (Cmp == 4 || Cmp == 8 || Cmp == 14)
    return a <= b;
  else if constexpr (Cmp == 5 || Cmp == 9 || Cmp == 15)
    return a > b;
  else if constexpr (Cmp == 6 || Cmp == 10 || Cmp == 16)
    return a >= b;
  else
    return false;
}
}  // namespace detail
template <int T, int Cmp, int Flags>
bool compare(typename storage<T>::type a, typename storage<T>::type b) {
  using namespace detail;
  static_assert(!is_packed<T>, "packed comparisons: compare2");
  if constexpr (T == F32 || T == F64 || T == F16 || T == BF16) {
    const double x = widen<T>(in<T, Flags>(a)), y = widen<T>(in<T, Flags>(b));
    const bool un = isnan64(x) || isnan64(y);
    if constexpr (Cmp == 17)
      return !un;
    else if constexpr (Cmp == 18)
      return un;
    else if constexpr (Cmp >= 11)
      return un || ordered_cmp<Cmp>(x, y);
    else
      return !un && ordered_cmp<Cmp>(x, y);
  } else if constexpr (T == PRED) {
    return ordered_cmp<Cmp>(static_cast<int>(a), static_cast<int>(b));
  } else if constexpr (Cmp >= 7 && Cmp <= 10) {  // lo, ls, hi, hs: unsigned
    return ordered_cmp<Cmp>(static_cast<u64>(a) & ((~0ull) >> (64 - int_bits<T>)),
                            static_cast<u64>(b) & ((~0ull) >> (64 - int_bits<T>)));
  } else {
    return ordered_cmp<Cmp>(a, b);
  }
}
// Added: setp/set on f16x2/bf16x2 (one result per half; lo = element 0).
template <int T, int Cmp, int Flags>
void compare2(u32 a, u32 b, bool& lo, bool& hi) {
  constexpr int E = detail::scalar_of<T>;
  lo = compare<E, Cmp, Flags>(static_cast<u16>(a), static_cast<u16>(b));
  hi = compare<E, Cmp, Flags>(static_cast<u16>(a >> 16), static_cast<u16>(b >> 16));
}

// ---- integer ----
namespace detail {
template <class T>
constexpr bool is_signed_v = static_cast<T>(-1) < static_cast<T>(0);
template <int N>
struct uint_of;
template <>
struct uint_of<1> {
  using type = u8;
};
template <>
struct uint_of<2> {
  using type = u16;
};
template <>
struct uint_of<4> {
  using type = u32;
};
template <>
struct uint_of<8> {
  using type = u64;
};
template <class T>
using uns = typename uint_of<sizeof(T)>::type;
template <class T>
constexpr int width = static_cast<int>(sizeof(T) * 8);
}  // namespace detail

template <class T>
T mul_hi(T a, T b) {
  using namespace detail;
  if constexpr (sizeof(T) == 8) {
    if constexpr (is_signed_v<T>)
      return static_cast<T>((static_cast<s128>(a) * b) >> 64);
    else
      return static_cast<T>((static_cast<u128>(a) * b) >> 64);
  } else {
    if constexpr (is_signed_v<T>)
      return static_cast<T>((static_cast<s64>(a) * b) >> width<T>);
    else
      return static_cast<T>((static_cast<u64>(a) * b) >> width<T>);
  }
}
template <class T>
T mul24_lo(T a, T b) {
  if constexpr (detail::is_signed_v<T>) {
    const s64 x = static_cast<s32>(static_cast<u32>(a) << 8) >> 8,
              y = static_cast<s32>(static_cast<u32>(b) << 8) >> 8;
    return static_cast<T>(static_cast<u32>(static_cast<u64>(x * y)));
  } else {
    return static_cast<T>((static_cast<u64>(a) & 0xffffffu) * (static_cast<u64>(b) & 0xffffffu));
  }
}
template <class T>
T mul24_hi(T a, T b) {  // bits 47..16 of the 48-bit product
  if constexpr (detail::is_signed_v<T>) {
    const s64 x = static_cast<s32>(static_cast<u32>(a) << 8) >> 8,
              y = static_cast<s32>(static_cast<u32>(b) << 8) >> 8;
    return static_cast<T>(static_cast<u32>(static_cast<u64>((x * y) >> 16)));
  } else {
    return static_cast<T>(((static_cast<u64>(a) & 0xffffffu) * (static_cast<u64>(b) & 0xffffffu)) >>
                          16);
  }
}
template <class T>
T sad(T a, T b, T c) {
  using U = detail::uns<T>;
  const U d = a < b ? static_cast<U>(static_cast<U>(b) - static_cast<U>(a))
                    : static_cast<U>(static_cast<U>(a) - static_cast<U>(b));
  return static_cast<T>(static_cast<U>(static_cast<U>(c) + d));
}
// Division by zero as the GPU's division sequence gives it: the unsigned quotient is all ones
// and the remainder is the dividend; signed division divides magnitudes and applies the
// signs (x / 0 = -1 for x >= 0, 1 for x < 0; x % 0 = x). MIN / -1 wraps to MIN, MIN % -1 = 0.
template <class T>
T idiv(T a, T b) {
  using U = detail::uns<T>;
  if constexpr (detail::is_signed_v<T>) {
    if (b == 0) return a < 0 ? T(1) : T(-1);
    const U ua = a < 0 ? static_cast<U>(0 - static_cast<U>(a)) : static_cast<U>(a);
    const U ub = b < 0 ? static_cast<U>(0 - static_cast<U>(b)) : static_cast<U>(b);
    const U q = static_cast<U>(ua / ub);
    return static_cast<T>((a < 0) != (b < 0) ? static_cast<U>(0 - q) : q);
  } else {
    return b == 0 ? static_cast<T>(~U{0}) : static_cast<T>(a / b);
  }
}
template <class T>
T irem(T a, T b) {
  using U = detail::uns<T>;
  if (b == 0) return a;
  if constexpr (detail::is_signed_v<T>) {
    const U ua = a < 0 ? static_cast<U>(0 - static_cast<U>(a)) : static_cast<U>(a);
    const U ub = b < 0 ? static_cast<U>(0 - static_cast<U>(b)) : static_cast<U>(b);
    const U r = static_cast<U>(ua % ub);
    return static_cast<T>(a < 0 ? static_cast<U>(0 - r) : r);
  } else {
    return static_cast<T>(a % b);
  }
}
template <class T>
T iabs(T a) {  // abs(MIN) = MIN
  using U = detail::uns<T>;
  return a < 0 ? static_cast<T>(static_cast<U>(0 - static_cast<U>(a))) : a;
}
template <class T>
T add_sat(T a, T b) {
  T r;
  if (__builtin_add_overflow(a, b, &r))
    return b < 0 ? static_cast<T>(static_cast<detail::uns<T>>(1) << (detail::width<T> - 1))
                 : static_cast<T>(~(static_cast<detail::uns<T>>(1) << (detail::width<T> - 1)));
  return r;
}
template <class T>
T sub_sat(T a, T b) {
  T r;
  if (__builtin_sub_overflow(a, b, &r))
    return b > 0 ? static_cast<T>(static_cast<detail::uns<T>>(1) << (detail::width<T> - 1))
                 : static_cast<T>(~(static_cast<detail::uns<T>>(1) << (detail::width<T> - 1)));
  return r;
}
template <class T>
u32 popc(T a) {
  return static_cast<u32>(__builtin_popcountll(static_cast<u64>(static_cast<detail::uns<T>>(a))));
}
template <class T>
u32 clz(T a) {
  const u64 v = static_cast<detail::uns<T>>(a);
  if (v == 0) return detail::width<T>;
  return static_cast<u32>(__builtin_clzll(v) - (64 - detail::width<T>));
}
template <class T, bool ShiftAmt>
u32 bfind(T a) {
  using U = detail::uns<T>;
  constexpr u32 msb = detail::width<T> - 1;
  U v = static_cast<U>(a);
  if constexpr (detail::is_signed_v<T>) {
    if (a < 0) v = static_cast<U>(~v);
  }
  if (v == 0) return 0xffffffffu;
  const u32 d = 63 - static_cast<u32>(__builtin_clzll(static_cast<u64>(v)));
  return ShiftAmt ? msb - d : d;
}
template <class T>
T brev(T a) {
  u64 x = static_cast<detail::uns<T>>(a);
  x = ((x >> 1) & 0x5555555555555555ull) | ((x & 0x5555555555555555ull) << 1);
  x = ((x >> 2) & 0x3333333333333333ull) | ((x & 0x3333333333333333ull) << 2);
  x = ((x >> 4) & 0x0f0f0f0f0f0f0f0full) | ((x & 0x0f0f0f0f0f0f0f0full) << 4);
  x = __builtin_bswap64(x) >> (64 - detail::width<T>);
  return static_cast<T>(x);
}
template <class T>
T bfe(T a, u32 pos, u32 len) {
  using U = detail::uns<T>;
  constexpr u32 w = detail::width<T>;
  pos &= 0xff;
  len &= 0xff;
  const U ua = static_cast<U>(a);
  bool sbit = false;
  if constexpr (detail::is_signed_v<T>) {
    if (len != 0) {
      const u32 top = pos + len - 1 < w - 1 ? pos + len - 1 : w - 1;
      sbit = ((ua >> top) & 1) != 0;
    }
  }
  U field = pos < w ? static_cast<U>(ua >> pos) : U{0};
  u32 n = len;  // bits taken from a
  if (pos >= w)
    n = 0;
  else if (n > w - pos)
    n = w - pos;
  if (n < w) {
    const U mask = static_cast<U>((static_cast<U>(1) << n) - 1);
    field = static_cast<U>(field & mask);
    if (sbit) field = static_cast<U>(field | static_cast<U>(~mask));
  }
  return static_cast<T>(field);
}
template <class T>
T bfi(T a, T b, u32 pos, u32 len) {
  using U = detail::uns<T>;
  constexpr u32 w = detail::width<T>;
  pos &= 0xff;
  len &= 0xff;
  if (pos >= w || len == 0) return b;
  const u32 n = len > w - pos ? w - pos : len;
  const U mask =
      n >= w ? static_cast<U>(~U{0}) : static_cast<U>(((static_cast<U>(1) << n) - 1) << pos);
  return static_cast<T>((static_cast<U>(b) & static_cast<U>(~mask)) |
                        (static_cast<U>(static_cast<U>(a) << pos) & mask));
}
inline u32 prmt(u32 a, u32 b, u32 c, int mode) {
  const u64 v = (static_cast<u64>(b) << 32) | a;
  auto byte = [v](u32 i) { return static_cast<u32>(v >> (8 * (i & 7))) & 0xffu; };
  u32 r = 0;
  if (mode == 0) {
    for (u32 i = 0; i < 4; ++i) {
      const u32 sel = (c >> (4 * i)) & 0xfu;
      u32 x = byte(sel);
      if ((sel & 8u) != 0) x = (x & 0x80u) != 0 ? 0xffu : 0u;  // replicate the sign
      r |= x << (8 * i);
    }
    return r;
  }
  // Selector tables of the modes f4e, b4e, rc8, ecl, ecr, rc16: byte indices for d.b0..d.b3.
  static constexpr unsigned char table[6][4][4] = {
      {{0, 1, 2, 3}, {1, 2, 3, 4}, {2, 3, 4, 5}, {3, 4, 5, 6}},
      {{0, 7, 6, 5}, {1, 0, 7, 6}, {2, 1, 0, 7}, {3, 2, 1, 0}},
      {{0, 0, 0, 0}, {1, 1, 1, 1}, {2, 2, 2, 2}, {3, 3, 3, 3}},
      {{0, 1, 2, 3}, {1, 1, 2, 3}, {2, 2, 2, 3}, {3, 3, 3, 3}},
      {{0, 0, 0, 0}, {0, 1, 1, 1}, {0, 1, 2, 2}, {0, 1, 2, 3}},
      {{0, 1, 0, 1}, {2, 3, 2, 3}, {0, 1, 0, 1}, {2, 3, 2, 3}}};
  const unsigned char* t = table[(mode - 1) % 6][c & 3u];
  for (u32 i = 0; i < 4; ++i) r |= byte(t[i]) << (8 * i);
  return r;
}
inline u32 lop3(u32 a, u32 b, u32 c, u32 lut) {
  u32 r = 0;
  for (u32 i = 0; i < 8; ++i) {
    if (((lut >> i) & 1u) == 0) continue;
    r |= ((i & 4u) != 0 ? a : ~a) & ((i & 2u) != 0 ? b : ~b) & ((i & 1u) != 0 ? c : ~c);
  }
  return r;
}
template <bool Left, bool Clamp>
u32 shf(u32 a, u32 b, u32 c) {  // the funnel {b:a}
  const u32 n = Clamp ? (c > 32 ? 32 : c) : (c & 31u);
  const u64 v = (static_cast<u64>(b) << 32) | a;
  return Left ? static_cast<u32>((v << n) >> 32) : static_cast<u32>(v >> n);
}
template <class T>
T shl(T a, u32 n) {
  using U = detail::uns<T>;
  if (n >= static_cast<u32>(detail::width<T>)) return T(0);
  return static_cast<T>(static_cast<U>(static_cast<U>(a) << n));
}
template <class T>
T shr(T a, u32 n) {
  if (n >= static_cast<u32>(detail::width<T>)) {
    if constexpr (detail::is_signed_v<T>)
      return a < 0 ? T(-1) : T(0);
    else
      return T(0);
  }
  return static_cast<T>(a >> n);
}
namespace detail {
template <class E>
CUDAMUX_PTX_INLINE s32 lane_of(u32 v, u32 i, u32 bits) {  // element i, sign- or zero-extended
  const u32 x = (v >> (i * bits)) & ((1u << bits) - 1);
  if (is_signed_v<E> && ((x >> (bits - 1)) & 1u) != 0)
    return static_cast<s32>(x | ~((1u << bits) - 1));
  return static_cast<s32>(x);
}
}  // namespace detail
template <class A, class B>
s32 dp4a(u32 a, u32 b, s32 c) {
  u32 d = static_cast<u32>(c);
  for (u32 i = 0; i < 4; ++i)
    d += static_cast<u32>(detail::lane_of<A>(a, i, 8) * detail::lane_of<B>(b, i, 8));
  return static_cast<s32>(d);
}
template <class A, class B, bool Hi>
s32 dp2a(u32 a, u32 b, s32 c) {  // A: the 16-bit elements' signedness, B: the bytes'
  u32 d = static_cast<u32>(c);
  const u32 base = Hi ? 2 : 0;
  for (u32 i = 0; i < 2; ++i)
    d += static_cast<u32>(detail::lane_of<A>(a, i, 16) * detail::lane_of<B>(b, base + i, 8));
  return static_cast<s32>(d);
}
inline u32 fns(u32 mask, u32 base, s32 offset) {
  if (offset == 0) return ((mask >> (base & 31u)) & 1u) != 0 ? base : 0xffffffffu;
  u32 count = static_cast<u32>(offset < 0 ? -static_cast<s64>(offset) : offset) - 1;
  const int inc = offset > 0 ? 1 : -1;
  for (int pos = static_cast<int>(base); pos >= 0 && pos < 32; pos += inc) {
    if (((mask >> pos) & 1u) != 0) {
      if (count == 0) return static_cast<u32>(pos);
      --count;
    }
  }
  return 0xffffffffu;
}
template <class T>
T add_cc(T a, T b, bool carry_in, bool& carry_out) {
  using U = detail::uns<T>;
  U r;
  const bool c1 = __builtin_add_overflow(static_cast<U>(a), static_cast<U>(b), &r);
  const bool c2 = __builtin_add_overflow(r, static_cast<U>(carry_in ? 1 : 0), &r);
  carry_out = c1 || c2;
  return static_cast<T>(r);
}
template <class T>
T sub_cc(T a, T b, bool borrow_in, bool& borrow_out) {
  using U = detail::uns<T>;
  U r;
  const bool b1 = __builtin_sub_overflow(static_cast<U>(a), static_cast<U>(b), &r);
  const bool b2 = __builtin_sub_overflow(r, static_cast<U>(borrow_in ? 1 : 0), &r);
  borrow_out = b1 || b2;
  return static_cast<T>(r);
}

// ---- memory ----
namespace detail {
template <class U, class Fn>
CUDAMUX_PTX_INLINE U cas_loop(void* addr, Fn next) {
  U* p = static_cast<U*>(addr);
  U old = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (
      !__atomic_compare_exchange_n(p, &old, next(old), true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
  }
  return old;
}
}  // namespace detail
template <int T, int Op>
typename storage<T>::type atom(void* addr, typename storage<T>::type v) {
  using namespace detail;
  using S = typename storage<T>::type;
  CUDAMUX_ATOMIC_SCOPE
  if constexpr (T == F32 || T == F64) {
    using U = typename uint_of<sizeof(S)>::type;
    const U vb = __builtin_bit_cast(U, v);
    U old;
    if constexpr (Op == 8) {
      old = __atomic_exchange_n(static_cast<U*>(addr), vb, __ATOMIC_SEQ_CST);
    } else {
      old = cas_loop<U>(addr, [v](U o) {
        const S x = __builtin_bit_cast(S, o);
        S r;
        if constexpr (Op == 0) {
          // atom.add.f32 rounds to nearest and flushes subnormals; f64 keeps them.
          if constexpr (T == F32)
            r = fadd<F32, RN, FTZ>(x, v);
          else
            r = fadd<F64, RN, 0>(x, v);
        } else if constexpr (Op == 1) {
          r = fmin<T, 0>(x, v);
        } else {
          static_assert(Op == 2, "float atomics: add, min, max, exch");
          r = fmax<T, 0>(x, v);
        }
        return __builtin_bit_cast(U, r);
      });
    }
    return __builtin_bit_cast(S, old);
  } else if constexpr (T == F16 || T == BF16 || T == F16X2 || T == BF16X2) {
    if constexpr (Op == 8) return __atomic_exchange_n(static_cast<S*>(addr), v, __ATOMIC_SEQ_CST);
    return cas_loop<S>(addr, [v](S o) -> S {
      if constexpr (Op == 0)
        return fadd<T, RN, 0>(o, v);  // .noftz
      else if constexpr (Op == 1)
        return fmin<T, 0>(o, v);
      else
        return fmax<T, 0>(o, v);
    });
  } else {
    S* p = static_cast<S*>(addr);
    if constexpr (Op == 0)
      return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
    else if constexpr (Op == 1)
      return cas_loop<S>(addr, [v](S o) { return v < o ? v : o; });
    else if constexpr (Op == 2)
      return cas_loop<S>(addr, [v](S o) { return v > o ? v : o; });
    else if constexpr (Op == 3)
      return cas_loop<S>(addr, [v](S o) { return o >= v ? S(0) : static_cast<S>(o + 1); });
    else if constexpr (Op == 4)
      return cas_loop<S>(addr, [v](S o) { return (o == 0 || o > v) ? v : static_cast<S>(o - 1); });
    else if constexpr (Op == 5)
      return __atomic_fetch_and(p, v, __ATOMIC_SEQ_CST);
    else if constexpr (Op == 6)
      return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST);
    else if constexpr (Op == 7)
      return __atomic_fetch_xor(p, v, __ATOMIC_SEQ_CST);
    else
      return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST);
  }
}
template <int T>
typename storage<T>::type atom_cas(void* addr, typename storage<T>::type cmp,
                                   typename storage<T>::type v) {
  using S = typename storage<T>::type;
  using U = typename detail::uint_of<sizeof(S)>::type;
  CUDAMUX_ATOMIC_SCOPE
  U expected = __builtin_bit_cast(U, cmp);
  __atomic_compare_exchange_n(static_cast<U*>(addr), &expected, __builtin_bit_cast(U, v), false,
                              __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return __builtin_bit_cast(S, expected);
}
inline void fence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

// ---- special registers ----
namespace detail {
CUDAMUX_PTX_INLINE u32 linear_tid() {
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
}  // namespace detail
inline u32 laneid() { return detail::linear_tid() & 31u; }
inline u32 warpid() { return detail::linear_tid() >> 5; }
inline u32 nwarpid() { return 64; }  // warp slots per SM on sm_80+ (warpid is always below)
inline u32 lanemask(int kind) {
  const u32 l = laneid();
  const u32 eq = 1u << l;
  const u32 lt = eq - 1;
  switch (kind) {
    case 0:
      return eq;
    case 1:
      return lt | eq;
    case 2:
      return lt;
    case 3:
      return ~lt;
    default:
      return ~(lt | eq);
  }
}
inline u64 clock64() { return cudamux_clock64(); }
inline u64 globaltimer() { return cudamux_globaltimer(); }  // real nanoseconds
inline u32 smid() { return 0; }  // blocks run on host threads; one SM id keeps %smid < %nsmid
inline u32 nsmid() { return 1; }

// ---- warp collectives ----
template <int Mode>
u32 shfl(u32 a, u32 b, u32 c, u32 mask, bool& in_range) {
  const int lane = static_cast<int>(laneid());
  const int bval = static_cast<int>(b & 31u);
  const int cval = static_cast<int>(c & 31u);
  const int seg = static_cast<int>((c >> 8) & 31u);
  const int max_lane = (lane & seg) | (cval & ~seg);
  const int min_lane = lane & seg;
  int j;
  bool p;
  if constexpr (Mode == 0) {
    j = lane - bval;
    p = j >= max_lane;
  } else if constexpr (Mode == 1) {
    j = lane + bval;
    p = j <= max_lane;
  } else if constexpr (Mode == 2) {
    j = lane ^ bval;
    p = j <= max_lane;
  } else {
    j = min_lane | (bval & ~seg);
    p = j <= max_lane;
  }
  if (!p) j = lane;
  in_range = p;
  return static_cast<u32>(cudamux_warp_op(CUDAMUX_WARP_SHFL, mask, a, j, 32));
}
inline bool vote_all(bool p, u32 mask) {
  return cudamux_warp_op(CUDAMUX_WARP_ALL, mask, p ? 1 : 0, 0, 32) != 0;
}
inline bool vote_any(bool p, u32 mask) {
  return cudamux_warp_op(CUDAMUX_WARP_ANY, mask, p ? 1 : 0, 0, 32) != 0;
}
// Uniform: every taking-part lane has the same predicate (match.all on it, one collective).
inline bool vote_uni(bool p, u32 mask) {
  return cudamux_warp_op(CUDAMUX_WARP_MATCH_ALL, mask, p ? 1 : 0, 0, 32) != 0;
}
inline u32 vote_ballot(bool p, u32 mask) {
  return static_cast<u32>(cudamux_warp_op(CUDAMUX_WARP_BALLOT, mask, p ? 1 : 0, 0, 32));
}
template <class T>
u32 match_any(T v, u32 mask) {
  return static_cast<u32>(cudamux_warp_op(CUDAMUX_WARP_MATCH_ANY, mask,
                                          static_cast<u64>(static_cast<detail::uns<T>>(v)), 0, 32));
}
template <class T>
u32 match_all(T v, u32 mask, bool& pred) {
  const u32 r = static_cast<u32>(cudamux_warp_op(
      CUDAMUX_WARP_MATCH_ALL, mask, static_cast<u64>(static_cast<detail::uns<T>>(v)), 0, 32));
  pred = r != 0;
  return r;
}
template <int Op, class T>
T redux(T v, u32 mask) {
  static_assert(sizeof(T) == 4, "redux.sync: 32-bit operands");
  u32 x = static_cast<u32>(v);
  // The runtime compares unsigned values: bias signed ones into unsigned order and back.
  constexpr u32 bias = (detail::is_signed_v<T> && (Op == 1 || Op == 2)) ? 0x80000000u : 0u;
  constexpr int op = Op == 0   ? CUDAMUX_WARP_REDUCE_ADD
                     : Op == 1 ? CUDAMUX_WARP_REDUCE_MIN
                     : Op == 2 ? CUDAMUX_WARP_REDUCE_MAX
                     : Op == 5 ? CUDAMUX_WARP_REDUCE_AND
                     : Op == 6 ? CUDAMUX_WARP_REDUCE_OR
                               : CUDAMUX_WARP_REDUCE_XOR;
  x = static_cast<u32>(cudamux_warp_op(op, mask, x ^ bias, 0, 32)) ^ bias;
  return static_cast<T>(x);
}
inline u32 activemask() {
  return static_cast<u32>(cudamux_warp_op(CUDAMUX_WARP_ACTIVEMASK, ~0u, 0, 0, 32));
}
inline void bar_warp_sync(u32 mask) { cudamux_warp_op(CUDAMUX_WARP_SYNC, mask, 0, 0, 32); }

// ---- CTA barriers: the runtime has one barrier per block that every live thread reaches;
// the barrier id and the thread count are not modelled (docs/ptx.md). ----
inline void bar_sync(u32 id, u32 count) {
  (void)id;
  (void)count;
  cudamux_syncthreads_op(CUDAMUX_BAR_SYNC, 0);
}
inline u32 bar_red_popc(u32 id, u32 count, bool p) {
  (void)id;
  (void)count;
  return static_cast<u32>(cudamux_syncthreads_op(CUDAMUX_BAR_COUNT, p ? 1 : 0));
}
inline bool bar_red_and(u32 id, u32 count, bool p) {
  (void)id;
  (void)count;
  return cudamux_syncthreads_op(CUDAMUX_BAR_AND, p ? 1 : 0) != 0;
}
inline bool bar_red_or(u32 id, u32 count, bool p) {
  (void)id;
  (void)count;
  return cudamux_syncthreads_op(CUDAMUX_BAR_OR, p ? 1 : 0) != 0;
}

// ---- device runtime calls ----
namespace detail {
extern "C" int cudamux_ptx_snprintf(char*, unsigned long, const char*, ...) __asm__("snprintf");
inline int emit_text(const char* fmt, ...) {
  __builtin_va_list ap;
  __builtin_va_start(ap, fmt);
  const int n = cudamux_vprintf(fmt, ap);
  __builtin_va_end(ap);
  return n;
}
struct text {
  static constexpr u32 cap = 4096;  // CUDA's printf has a per-call limit too; longer is cut
  char buf[cap];
  u32 n = 0;
  void put(char c) {
    if (n + 1 < cap) buf[n++] = c;
  }
  void put(const char* s, u32 len) {
    for (u32 i = 0; i < len; ++i) put(s[i]);
  }
  template <class V>
  void format(const char* spec, V v) {
    const int w = cudamux_ptx_snprintf(buf + n, cap - n, spec, v);
    if (w > 0) n = (n + static_cast<u32>(w) < cap - 1) ? n + static_cast<u32>(w) : cap - 1;
  }
};
// Appends the decimal digits of v to s.
CUDAMUX_PTX_INLINE char* put_int(char* s, int v) {
  char tmp[12];
  int k = 0;
  u32 m = v < 0 ? 0u - static_cast<u32>(v) : static_cast<u32>(v);
  do {
    tmp[k++] = static_cast<char>('0' + m % 10);
    m /= 10;
  } while (m != 0);
  if (v < 0) *s++ = '-';
  while (k > 0) *s++ = tmp[--k];
  return s;
}
}  // namespace detail

// vprintf over nvcc's argument buffer: each argument at its natural alignment (int-sized for
// %d %i %u %x %X %o %c and their h/hh forms, 8 bytes for l/ll/z/j/t forms, doubles for the
// float conversions, pointers for %s %p). Returns the number of arguments, as CUDA's printf.
namespace detail {
// Formats into out; returns the number of arguments used (-1 for a null format).
inline int vformat(const char* fmt, const char* args, text& out) {
  if (fmt == nullptr) return -1;
  u64 off = 0;
  int count = 0;
  static const char zeros[8] = {};
  auto take = [&](u32 size) -> const char* {
    off = (off + size - 1) & ~static_cast<u64>(size - 1);
    const char* p = args != nullptr ? args + off : zeros;
    off += size;
    ++count;
    return p;
  };
  auto read_int = [&]() {
    s32 v;
    __builtin_memcpy(&v, take(4), 4);
    return v;
  };
  for (const char* f = fmt; *f != '\0';) {
    if (*f != '%') {
      out.put(*f++);
      continue;
    }
    const char* start = f++;
    if (*f == '%') {
      out.put('%');
      ++f;
      continue;
    }
    char spec[64];
    char* s = spec;
    *s++ = '%';
    while (*f == '-' || *f == '+' || *f == ' ' || *f == '#' || *f == '0') {
      if (s < spec + 8) *s++ = *f;
      ++f;
    }
    if (*f == '*') {
      s = put_int(s, read_int());
      ++f;
    } else {
      for (int k = 0; *f >= '0' && *f <= '9'; ++f, ++k)
        if (k < 9) *s++ = *f;
    }
    if (*f == '.') {
      *s++ = *f++;
      if (*f == '*') {
        const int p = read_int();
        s = put_int(s, p < 0 ? 0 : p);
        ++f;
      } else {
        for (int k = 0; *f >= '0' && *f <= '9'; ++f, ++k)
          if (k < 9) *s++ = *f;
      }
    }
    int longs = 0, shorts = 0;
    for (;; ++f) {
      if (*f == 'l' || *f == 'q' || *f == 'j' || *f == 'z' || *f == 't')
        ++longs;
      else if (*f == 'h')
        ++shorts;
      else if (*f == 'L')
        continue;
      else
        break;
    }
    const char conv = *f;
    if (conv == '\0') {  // a lone '%' at the end: printed as written
      out.put(start, static_cast<u32>(f - start));
      break;
    }
    ++f;
    switch (conv) {
      case 'd':
      case 'i':
      case 'u':
      case 'o':
      case 'x':
      case 'X':
        if (longs != 0) {
          *s++ = 'l';
          *s++ = 'l';
          *s++ = conv;
          *s = '\0';
          s64 v;
          __builtin_memcpy(&v, take(8), 8);
          out.format(spec, v);
        } else {
          for (int k = 0; k < shorts && k < 2; ++k) *s++ = 'h';
          *s++ = conv;
          *s = '\0';
          s32 v;
          __builtin_memcpy(&v, take(4), 4);
          out.format(spec, v);
        }
        break;
      case 'c': {
        *s++ = 'c';
        *s = '\0';
        s32 v;
        __builtin_memcpy(&v, take(4), 4);
        out.format(spec, v);
        break;
      }
      case 'f':
      case 'F':
      case 'e':
      case 'E':
      case 'g':
      case 'G':
      case 'a':
      case 'A': {
        *s++ = conv;
        *s = '\0';
        double v;
        __builtin_memcpy(&v, take(8), 8);
        out.format(spec, v);
        break;
      }
      case 's':
      case 'p': {
        *s++ = conv;
        *s = '\0';
        const void* v;
        __builtin_memcpy(&v, take(8), 8);
        out.format(spec, v);
        break;
      }
      case 'n':
        take(8);  // not supported (as in CUDA): the argument is skipped
        break;
      default:  // not a conversion: printed as written
        out.put(start, static_cast<u32>(f - start));
        break;
    }
  }
  out.buf[out.n] = '\0';
  return count;
}
}  // namespace detail
inline int vprintf(const char* fmt, const char* args) {
  detail::text out;
  const int count = detail::vformat(fmt, args, out);
  if (out.n != 0) detail::emit_text("%s", out.buf);
  return count;
}
inline void assertfail(const char* message, const char* file, u32 line, const char* function) {
  cudamux_assert_fail(message, file, line, function);
}
inline void trap(const char* why) {
  (void)why;
  cudamux_trap();  // unwinds the launch; returns only outside one
  __builtin_trap();
}
// bmsk.{clamp,wrap}.b32 d, a, b: the PTX ISA's semantics (a mask of b bits starting at bit a;
// .clamp: a or b of 32 or more give the documented saturated results, .wrap: both mod 32).
inline u32 bmsk(u32 a, u32 b, bool wrap) {
  const u32 a1 = a & 0x1f, b1 = b & 0x1f, sum = a1 + b1;
  u32 mask0 = ~0u << a1;
  bool overflow = sum >= 32;
  if (!wrap) {
    if (a >= 32) {
      overflow = true;
      mask0 = 0;
    }
    if (b >= 32) overflow = true;
  }
  u32 mask1 = overflow ? 0u : (b1 == 0 ? ~0u : ~0u << sum);
  return mask0 & ~mask1;
}

}  // namespace cudamux::ptx

// ---- ptx-tex: textures and surfaces (tex, tld4, txq, suld, sust, sured, suq) ----------------
// The emitter (ptx/src/emit_texture.cpp) maps each PTX form onto the device runtime's sampler
// (cudamux/image_abi.h), the same code NVRTC kernels reach through texture.h, so a PTX kernel
// and a CUDA C++ kernel see identical texels. A texture or surface handle is the address of a
// cudamux_texture / cudamux_surface (the mock's CUtexObject / CUsurfObject).
#include "cudamux/image_abi.h"  // included by the prelude already; standalone users need it
namespace cudamux::ptx::texops {
inline const cudamux_texture* texture(u64 h) {
  const auto* t = reinterpret_cast<const cudamux_texture*>(static_cast<__UINTPTR_TYPE__>(h));
  if (t == nullptr || t->magic != CUDAMUX_TEXTURE_MAGIC) trap("txq of an invalid texture object");
  return t;
}
inline const cudamux_surface* surface(u64 h) {
  const auto* s = reinterpret_cast<const cudamux_surface*>(static_cast<__UINTPTR_TYPE__>(h));
  if (s == nullptr || s->magic != CUDAMUX_SURFACE_MAGIC) trap("invalid surface object");
  return s;
}
// tex with integer coordinates: texel indices. tex.1d.s32 of a linear resource is tex1Dfetch;
// elsewhere the texel's centre is sampled (unnormalised, or normalised when the texture is).
inline void sample_int(u64 h, unsigned dims, int x, int y, int z, int layer, unsigned lod_mode,
                       float level, u32* out) {
  const cudamux_texture* t = texture(h);
  if (t->resource_type == 2 /* CU_RESOURCE_TYPE_LINEAR */ && dims == 1 && layer < 0) {
    cudamux_tex_fetch(h, x, out);
    return;
  }
  float c[3] = {static_cast<float>(x) + 0.5f, static_cast<float>(y) + 0.5f,
                static_cast<float>(z) + 0.5f};
  if (t->flags & 0x02 /* CU_TRSF_NORMALIZED_COORDINATES */) {
    const cudamux_image_level& l = t->image.levels[0];
    const unsigned long long n[3] = {l.width, l.height, l.depth};
    for (int d = 0; d < 3; ++d) c[d] /= static_cast<float>(n[d] ? n[d] : 1);
  }
  cudamux_tex_sample(h, dims, c[0], c[1], c[2], layer, lod_mode, level, nullptr, out);
}
// txq: `what` is the query (TXQ_*), `level` the mip level of txq.level.
enum : int {
  TXQ_WIDTH,
  TXQ_HEIGHT,
  TXQ_DEPTH,
  TXQ_CHANNEL_DATA_TYPE,
  TXQ_CHANNEL_ORDER,
  TXQ_NORMALIZED_COORDS,
  TXQ_ARRAY_SIZE,
  TXQ_NUM_MIPMAP_LEVELS,
  TXQ_NUM_SAMPLES,
  TXQ_FORCE_UNNORMALIZED_COORDS,
  TXQ_FILTER_MODE,
  TXQ_ADDR_MODE_0,
  TXQ_ADDR_MODE_1,
  TXQ_ADDR_MODE_2,
};
namespace detail_tex {
// OpenCL's cl_channel_type / cl_channel_order values, which the PTX ISA names for these queries.
inline u32 cl_channel_type(unsigned format, bool normalized) {
  switch (format) {
    case 0x01:
      return normalized ? 0x10D2u : 0x10DAu;  // U8: CL_UNORM_INT8 / CL_UNSIGNED_INT8
    case 0x02:
      return normalized ? 0x10D3u : 0x10DBu;  // U16
    case 0x03:
      return 0x10DCu;  // U32
    case 0x08:
      return normalized ? 0x10D0u : 0x10D7u;  // S8: CL_SNORM_INT8 / CL_SIGNED_INT8
    case 0x09:
      return normalized ? 0x10D1u : 0x10D8u;  // S16
    case 0x0a:
      return 0x10D9u;  // S32
    case 0x10:
      return 0x10DDu;  // CL_HALF_FLOAT
    case 0x20:
      return 0x10DEu;  // CL_FLOAT
    default:
      return 0;
  }
}
inline u32 cl_channel_order(unsigned channels) {
  return channels == 1 ? 0x10B0u : channels == 2 ? 0x10B2u : 0x10B5u;  // CL_R, CL_RG, CL_RGBA
}
// An image's own extent: layered and cubemap images keep their layers (x 6) in `depth`.
inline u64 extent(const cudamux_image& img, unsigned level, int d) {
  if (level >= img.num_levels && level != 0) return 0;
  const cudamux_image_level& l = img.levels[level];
  if (d == 0) return l.width;
  if (d == 1) return img.dims >= 2 ? l.height : 0;
  if (img.flags & 0x05 /* LAYERED | CUBEMAP */) return 0;
  return img.dims >= 3 ? l.depth : 0;
}
inline u32 layers(const cudamux_image& img) {
  if (!(img.flags & 0x01)) return 0;
  const u64 d = img.levels[0].depth;
  return static_cast<u32>(img.flags & 0x04 ? d / 6 : d);
}
// CUaddress_mode (wrap, clamp, mirror, border) as the PTX ISA lists addressing modes (wrap,
// mirror, clamp_ogl, clamp_to_edge, clamp_to_border).
inline u32 ptx_addr_mode(unsigned m) {
  switch (m) {
    case 0:
      return 0;
    case 1:
      return 3;
    case 2:
      return 1;
    default:
      return 4;
  }
}
}  // namespace detail_tex
inline u32 txq(u64 h, int what, int level = 0) {
  const cudamux_texture* t = texture(h);
  const cudamux_image& img = t->image;
  const unsigned lv = level < 0 ? 0u : static_cast<unsigned>(level);
  const bool normalized_read = !(t->flags & 0x01) && img.format != 0x20 && img.format != 0x10;
  switch (what) {
    case TXQ_WIDTH:
      return static_cast<u32>(detail_tex::extent(img, lv, 0));
    case TXQ_HEIGHT:
      return static_cast<u32>(detail_tex::extent(img, lv, 1));
    case TXQ_DEPTH:
      return static_cast<u32>(detail_tex::extent(img, lv, 2));
    case TXQ_CHANNEL_DATA_TYPE:
      return detail_tex::cl_channel_type(img.format, normalized_read);
    case TXQ_CHANNEL_ORDER:
      return detail_tex::cl_channel_order(img.channels);
    case TXQ_NORMALIZED_COORDS:
      return (t->flags & 0x02) ? 1u : 0u;
    case TXQ_FORCE_UNNORMALIZED_COORDS:
      return (t->flags & 0x02) ? 0u : 1u;
    case TXQ_ARRAY_SIZE:
      return detail_tex::layers(img);
    case TXQ_NUM_MIPMAP_LEVELS:
      return img.num_levels ? img.num_levels : 1u;
    case TXQ_NUM_SAMPLES:
      return 1;
    case TXQ_FILTER_MODE:
      return t->filter_mode;
    case TXQ_ADDR_MODE_0:
      return detail_tex::ptx_addr_mode(t->address_mode[0]);
    case TXQ_ADDR_MODE_1:
      return detail_tex::ptx_addr_mode(t->address_mode[1]);
    case TXQ_ADDR_MODE_2:
      return detail_tex::ptx_addr_mode(t->address_mode[2]);
    default:
      return 0;
  }
}
inline u32 suq(u64 h, int what) {
  const cudamux_surface* s = surface(h);
  const cudamux_image& img = s->image;
  switch (what) {
    case TXQ_WIDTH:
      return static_cast<u32>(detail_tex::extent(img, 0, 0));
    case TXQ_HEIGHT:
      return static_cast<u32>(detail_tex::extent(img, 0, 1));
    case TXQ_DEPTH:
      return static_cast<u32>(detail_tex::extent(img, 0, 2));
    case TXQ_CHANNEL_DATA_TYPE:
      return detail_tex::cl_channel_type(img.format, false);
    case TXQ_CHANNEL_ORDER:
      return detail_tex::cl_channel_order(img.channels);
    case TXQ_ARRAY_SIZE:
      return detail_tex::layers(img);
    default:
      return 0;
  }
}
// suld.b / sust.b: `bytes` at byte x of row y of slice z (layered: z is the layer; a2d's
// layer comes first in PTX, the emitter reorders). boundary: CUDAMUX_BOUNDARY_*.
inline void surf_load(u64 h, void* data, unsigned bytes, int x, int y, int z, int boundary) {
  cudamux_surf_access(h, data, bytes, x, y, z, boundary, 0);
}
inline void surf_store(u64 h, const void* data, unsigned bytes, int x, int y, int z, int boundary) {
  unsigned char tmp[32];
  __builtin_memcpy(tmp, data, bytes > 32 ? 32 : bytes);
  cudamux_surf_access(h, tmp, bytes, x, y, z, boundary, 1);
}
// sust.p (formatted store): x in elements; the four 32-bit components converted to the
// surface's format, read as .f32 for float and half formats and as integers otherwise (the
// PTX ISA: the source type follows the surface's channel data type).
inline void surf_store_p(u64 h, const u32* comps, int x, int y, int z, int boundary) {
  const cudamux_surface* s = surface(h);
  const cudamux_image& img = s->image;
  const bool is_float = img.format == 0x20 || img.format == 0x10;
  unsigned char buf[16] = {};
  const unsigned cb = img.channels ? img.element_bytes / img.channels : 4;
  for (unsigned c = 0; c < img.channels && c < 4; ++c) {
    const float f = __builtin_bit_cast(float, comps[c]);
    const int iv = static_cast<int>(comps[c]);
    unsigned char* p = buf + c * cb;
    switch (img.format) {
      case 0x20: {
        const float v = is_float ? f : static_cast<float>(iv);
        __builtin_memcpy(p, &v, 4);
        break;
      }
      case 0x10: {
        const u16 v = f32_to_f16_rn(is_float ? f : static_cast<float>(iv));
        __builtin_memcpy(p, &v, 2);
        break;
      }
      default: {
        long long v = iv;
        if (is_float) {  // normalised integer formats
          const bool sgn = img.format == 0x08 || img.format == 0x09;
          const double scale = cb == 1   ? (sgn ? 127.0 : 255.0)
                               : cb == 2 ? (sgn ? 32767.0 : 65535.0)
                                         : 1.0;
          double d = f;
          d = d < (sgn ? -1.0 : 0.0) ? (sgn ? -1.0 : 0.0) : d > 1.0 ? 1.0 : d;
          v = static_cast<long long>(__builtin_nearbyint(d * scale));
        }
        __builtin_memcpy(p, &v, cb);  // little endian: the low bytes
        break;
      }
    }
  }
  cudamux_surf_access(h, buf, img.element_bytes, x * static_cast<int>(img.element_bytes), y, z,
                      boundary, 1);
}
// sured.b: an atomic reduction on the `bytes` (4 or 8) at byte x of row y of slice z.
// op: the Mode of atom (add 1, min 2, max 3, and 6, or 7, xor 8 — see the emitter).
template <class T>
inline void surf_reduce(u64 h, T v, int op, int x, int y, int z, int boundary) {
  const cudamux_surface* s = surface(h);
  const cudamux_image_level& l = s->image.levels[0];
  long long xb = x, yy = y, zz = z;
  const long long row = static_cast<long long>(l.width) * s->image.element_bytes;
  const bool in = xb >= 0 && xb + static_cast<long long>(sizeof(T)) <= row && yy >= 0 &&
                  yy < static_cast<long long>(l.height) && zz >= 0 &&
                  zz < static_cast<long long>(l.depth);
  if (!in) {
    if (boundary == CUDAMUX_BOUNDARY_TRAP) trap("sured out of range (.trap)");
    if (boundary == CUDAMUX_BOUNDARY_ZERO) return;
    auto clampll = [](long long a, long long lo, long long hi) {
      return a < lo ? lo : a > hi ? hi : a;
    };
    xb = clampll(xb, 0, row - static_cast<long long>(sizeof(T)));
    yy = clampll(yy, 0, static_cast<long long>(l.height) - 1);
    zz = clampll(zz, 0, static_cast<long long>(l.depth) - 1);
  }
  T* p =
      reinterpret_cast<T*>(static_cast<char*>(l.data) + zz * l.slice_pitch + yy * l.row_pitch + xb);
  switch (op) {
    case 1:
      __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
      break;
    case 6:
      __atomic_fetch_and(p, v, __ATOMIC_RELAXED);
      break;
    case 7:
      __atomic_fetch_or(p, v, __ATOMIC_RELAXED);
      break;
    case 8:
      __atomic_fetch_xor(p, v, __ATOMIC_RELAXED);
      break;
    default: {  // min / max
      T cur = __atomic_load_n(p, __ATOMIC_RELAXED);
      while ((op == 2 ? v < cur : v > cur) &&
             !__atomic_compare_exchange_n(p, &cur, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
      }
    }
  }
}
}  // namespace cudamux::ptx::texops

// ---- ptx-mma: warp-level matrix instructions (mma.sync, ldmatrix, stmatrix, movmatrix, wmma) ----
// Fragments travel as arrays of 32-bit words in register order (a 64-bit register is two words,
// low first). The collective ones exchange whole fragments through warp_exchange(); the
// fragment layouts are the PTX ISA's ("Matrix fragments for mma.m16n8k*", ldmatrix, movmatrix);
// wmma's (opaque in CUDA) are the mma ones tiled, see wmma_coord().
namespace cudamux::ptx::mma_ops {

// Every present lane of the warp passes its input words; once all have, `f(t)` runs on each
// lane with t[l] = lane l's input (nullptr for a lane that has exited) and computes that lane's
// outputs. Four rendezvous of the device runtime: the present lanes, the leader's table, all
// inputs written, all inputs read (each input lives in its lane's frame until then).
template <class F>
inline void warp_exchange(const u32* in, F&& f) {
  const u32* table[32] = {};  // used in the leader's frame only
  const unsigned present =
      static_cast<unsigned>(cudamux_warp_op(CUDAMUX_WARP_ACTIVEMASK, ~0u, 0, 0, 32));
  const int leader = present != 0 ? __builtin_ctz(present) : 0;
  auto** t = reinterpret_cast<const u32**>(static_cast<__UINTPTR_TYPE__>(cudamux_warp_op(
      CUDAMUX_WARP_SHFL, present, static_cast<u64>(reinterpret_cast<__UINTPTR_TYPE__>(table)),
      leader, 32)));
  t[laneid()] = in;
  cudamux_warp_op(CUDAMUX_WARP_SYNC, present, 0, 0, 32);
  f(static_cast<const u32* const*>(t));
  cudamux_warp_op(CUDAMUX_WARP_SYNC, present, 0, 0, 32);
}

// As warp_exchange, for collectives one lane can compute for the whole warp: every lane
// deposits its input and output buffers, the leader (the lowest present lane) calls
// f(inputs, outputs) once (absent lanes: null), and the others wait for it.
template <class F>
inline void warp_exchange_all(const u32* in, u32* out, F&& f) {
  struct Tables {
    const u32* in[32];
    u32* out[32];
  } tables = {};  // used in the leader's frame only
  const unsigned present =
      static_cast<unsigned>(cudamux_warp_op(CUDAMUX_WARP_ACTIVEMASK, ~0u, 0, 0, 32));
  const int leader = present != 0 ? __builtin_ctz(present) : 0;
  auto* t = reinterpret_cast<Tables*>(static_cast<__UINTPTR_TYPE__>(
      cudamux_warp_op(CUDAMUX_WARP_SHFL, present,
                      static_cast<u64>(reinterpret_cast<__UINTPTR_TYPE__>(&tables)), leader, 32)));
  t->in[laneid()] = in;
  t->out[laneid()] = out;
  cudamux_warp_op(CUDAMUX_WARP_SYNC, present, 0, 0, 32);
  if (laneid() == static_cast<unsigned>(leader))
    f(static_cast<const u32* const*>(t->in), static_cast<u32* const*>(t->out));
  cudamux_warp_op(CUDAMUX_WARP_SYNC, present, 0, 0, 32);
}

// Bits of one element type: F16/BF16 16, TF32/F32/S32 32, S8/U8 8, F64 64.
constexpr int bits_of(int t) {
  return t == S8 || t == U8 ? 8 : (t == F16 || t == BF16) ? 16 : t == F64 ? 64 : 32;
}
inline u32 word_of(const u32* const* t, unsigned lane, unsigned w) {
  return t[lane] != nullptr ? t[lane][w] : 0u;
}
// Element `sub` of word `w` of `lane`, as a double (floats: exact) or integer (s8/u8).
template <int T>
inline double fval(const u32* const* t, unsigned lane, unsigned w, unsigned sub) {
  const u32 x = word_of(t, lane, w);
  if constexpr (T == F16) return static_cast<double>(f16_to_f32(static_cast<u16>(x >> (16 * sub))));
  if constexpr (T == BF16) return static_cast<double>(bf16_to_f32(static_cast<u16>(x >> (16 * sub))));
  if constexpr (T == TF32) return static_cast<double>(__builtin_bit_cast(float, x & 0xffffe000u));
  if constexpr (T == F32) return static_cast<double>(__builtin_bit_cast(float, x));
  return 0.0;
}
template <int T>
inline long long ival(const u32* const* t, unsigned lane, unsigned w, unsigned sub) {
  const u32 x = word_of(t, lane, w) >> (8 * sub);
  if constexpr (T == S8) return static_cast<s8>(static_cast<u8>(x));
  if constexpr (T == U8) return static_cast<u8>(x);
  return static_cast<s32>(word_of(t, lane, w));
}

// D (16 x 8*NT) = A (16 x K) * B (K x 8*NT) + C for lane `me` with the sm_80 fragment layouts:
// A word (i >= 8) + 2 * kb of lane (i % 8) * 4 + q, B word (K / W) * (n / 8) + kb of lane
// (n % 8) * 4 + q, where a word holds 32 / bits consecutive k (W = 4 words' worth, kb = k / W,
// q = (k % W) / (32 / bits)); C/D: row g or g + 8, columns 2t, 2t + 1 (g = lane / 4,
// t = lane % 4), 32-bit C in words 4 * (n / 8) + 2 * (i >= 8) + (n & 1), f16 C packed in pairs.
// A occupies AW words, B BW (wmma's f16 fragments hold a copy: only the first ones are read).
// Floats: products are exact in double and summed in k order in double, then C is added and
// the sum rounded once to D's type (round to nearest even). Integers: exact, then wrapped to
// 32 bits, or clamped with .satfinite (SATF).
template <int AT, int BT, int CT, int DT, int NT, int K, int AW, int BW, bool SATF>
inline void mma16(const u32* const* t, unsigned me, u32* out) {
  constexpr int per = 32 / bits_of(AT);  // elements per word
  constexpr int W = 4 * per;             // k covered by one word across the 4 lanes of a row
  const unsigned g = me / 4, tq = me % 4;
  for (int nt = 0; nt < NT; ++nt) {
    for (int r = 0; r < 4; ++r) {
      const unsigned i = g + (r >= 2 ? 8u : 0u), n = 2 * tq + (r & 1) + 8u * nt;
      const unsigned arow = (i % 8) * 4, bcol = (n % 8) * 4;
      const unsigned aw0 = i >= 8 ? 1u : 0u, bw0 = static_cast<unsigned>((K / W) * (n / 8));
      // C's element (i, n) is this lane's own.
      unsigned cw;
      double cf = 0;
      long long ci = 0;
      if constexpr (CT == F16) {
        cw = AW + BW + 2 * (n / 8) + (i >= 8 ? 1u : 0u);
        cf = fval<F16>(t, me, cw, n & 1);
      } else {
        cw = AW + BW + 4 * (n / 8) + 2 * (i >= 8 ? 1u : 0u) + (n & 1);
        if constexpr (CT == S32) ci = ival<S32>(t, me, cw, 0);
        else cf = fval<F32>(t, me, cw, 0);
      }
      if constexpr (CT == S32) {
        long long s = ci;
        for (int k = 0; k < K; ++k) {
          const unsigned kb = k / W, q = (k % W) / per, sub = k % per;
          s += ival<AT>(t, arow + q, aw0 + 2 * kb, sub) * ival<BT>(t, bcol + q, AW + bw0 + kb, sub);
        }
        if (SATF) s = s < -2147483648LL ? -2147483648LL : s > 2147483647LL ? 2147483647LL : s;
        out[4 * nt + r] = static_cast<u32>(static_cast<unsigned long long>(s));
      } else {
        double s = 0;
        for (int k = 0; k < K; ++k) {
          const unsigned kb = k / W, q = (k % W) / per, sub = k % per;
          s += fval<AT>(t, arow + q, aw0 + 2 * kb, sub) * fval<BT>(t, bcol + q, AW + bw0 + kb, sub);
        }
        s += cf;
        if constexpr (DT == F16) {
          const u32 h = cvt<F16, F64, RN, 0>(s);
          const unsigned o = 2 * nt + (r >= 2 ? 1u : 0u);
          if ((r & 1) == 0) out[o] = h;
          else out[o] |= h << 16;
        } else {
          out[4 * nt + r] = __builtin_bit_cast(u32, static_cast<float>(s));
        }
      }
    }
  }
}

// mma.sync.aligned.{m16n8k8,m16n8k16,m16n8k32,m16n8k4}: in = A, B, C words; out = D words.
// Each helper below has a `_lane` form, `(t, lane, out)`: lane's outputs from all lanes' inputs
// (t as warp_exchange gives it). The split back end's warp resolution calls those directly.
template <int AT, int BT, int CT, int DT, int K, bool SATF>
inline void mma_lane(const u32* const* t, unsigned lane, u32* out) {
  mma16<AT, BT, CT, DT, 1, K, 16 * K * bits_of(AT) / 1024, 8 * K * bits_of(BT) / 1024, SATF>(
      t, lane, out);
}
template <int AT, int BT, int CT, int DT, int K, bool SATF>
inline void mma(const u32* in, u32* out) {
  warp_exchange(in, [&](const u32* const* t) { mma_lane<AT, BT, CT, DT, K, SATF>(t, laneid(), out); });
}

// mma.sync.aligned.m8n8k4.f64: A (i, k) in lane i * 4 + k, B (k, n) in lane n * 4 + k, C/D
// row g columns 2t, 2t + 1. One fma per k, in k order, starting from C.
inline void mma_f64_lane(const u32* const* t, unsigned me, u32* out) {
  {
    auto f64 = [&](unsigned lane, unsigned w) {
      return __builtin_bit_cast(double, static_cast<u64>(word_of(t, lane, w)) |
                                            static_cast<u64>(word_of(t, lane, w + 1)) << 32);
    };
    const unsigned g = me / 4, tq = me % 4;
    for (unsigned j = 0; j < 2; ++j) {
      const unsigned n = 2 * tq + j;
      double d = f64(me, 4 + 2 * j);
      for (unsigned k = 0; k < 4; ++k) d = __builtin_fma(f64(g * 4 + k, 0), f64(n * 4 + k, 2), d);
      const u64 b = __builtin_bit_cast(u64, d);
      out[2 * j] = static_cast<u32>(b);
      out[2 * j + 1] = static_cast<u32>(b >> 32);
    }
  }
}
inline void mma_f64(const u32* in, u32* out) {
  warp_exchange(in, [&](const u32* const* t) { mma_f64_lane(t, laneid(), out); });
}

// ldmatrix.sync.aligned.m8n8.xNUM{.trans}.b16: lane 8m + r gives row r of matrix m (16 bytes);
// word m of lane l is row l / 4, columns 2 (l % 4), +1 (transposed: column l / 4 of rows
// 2 (l % 4), +1).
// Input words of ldmatrix/stmatrix: the row address, low word first.
inline void put_address(const void* row, u32* in) {
  const u64 p = static_cast<u64>(reinterpret_cast<__UINTPTR_TYPE__>(row));
  in[0] = static_cast<u32>(p);
  in[1] = static_cast<u32>(p >> 32);
}
template <int NUM, bool TRANS>
inline void ldmatrix_lane(const u32* const* t, unsigned me, u32* out) {
  {
    auto rowp = [&](unsigned lane) {
      return reinterpret_cast<const unsigned char*>(static_cast<__UINTPTR_TYPE__>(
          static_cast<u64>(word_of(t, lane, 0)) | static_cast<u64>(word_of(t, lane, 1)) << 32));
    };
    const unsigned g = me / 4, tq = me % 4;
    for (unsigned m = 0; m < static_cast<unsigned>(NUM); ++m) {
      if (!TRANS) {
        __builtin_memcpy(&out[m], rowp(8 * m + g) + 4 * tq, 4);
      } else {
        u16 lo, hi;
        __builtin_memcpy(&lo, rowp(8 * m + 2 * tq) + 2 * g, 2);
        __builtin_memcpy(&hi, rowp(8 * m + 2 * tq + 1) + 2 * g, 2);
        out[m] = static_cast<u32>(lo) | static_cast<u32>(hi) << 16;
      }
    }
  }
}
template <int NUM, bool TRANS>
inline void ldmatrix(const u32* in, u32* out) {  // in: put_address's words
  warp_exchange(in, [&](const u32* const* t) { ldmatrix_lane<NUM, TRANS>(t, laneid(), out); });
}

// stmatrix.sync.aligned.m8n8.xNUM{.trans}.b16: the inverse of ldmatrix (lane 8m + r stores
// row r of matrix m).
// in: put_address's words, then the NUM fragment registers.
template <int NUM, bool TRANS>
inline void stmatrix_lane(const u32* const* t, unsigned me, u32*) {
  {
    const unsigned m = me / 8, r = me % 8;
    if (m >= static_cast<unsigned>(NUM)) return;
    unsigned char* dst = reinterpret_cast<unsigned char*>(static_cast<__UINTPTR_TYPE__>(
        static_cast<u64>(word_of(t, me, 0)) | static_cast<u64>(word_of(t, me, 1)) << 32));
    for (unsigned c = 0; c < 8; ++c) {
      // element (r, c) of the matrix as stored; .trans stores the fragment's transpose
      const unsigned lane = TRANS ? c * 4 + r / 2 : r * 4 + c / 2, half = TRANS ? r & 1 : c & 1;
      const u16 v = static_cast<u16>(word_of(t, lane, 2 + m) >> (16 * half));
      __builtin_memcpy(dst + 2 * c, &v, 2);
    }
  }
}
template <int NUM, bool TRANS>
inline void stmatrix(const u32* in, u32*) {
  warp_exchange(in, [&](const u32* const* t) { stmatrix_lane<NUM, TRANS>(t, laneid(), nullptr); });
}

// movmatrix.sync.aligned.m8n8.trans.b16: element (g, 2t + h) of the result is element
// (2t + h, g) of the source, which lane (2t + h) * 4 + g / 2 holds in half g & 1.
inline void movmatrix_lane(const u32* const* t, unsigned me, u32* out) {
  const unsigned g = me / 4, tq = me % 4;
  u32 r = 0;
  for (unsigned h = 0; h < 2; ++h) {
    const u16 v = static_cast<u16>(word_of(t, (2 * tq + h) * 4 + g / 2, 0) >> (16 * (g & 1)));
    r |= static_cast<u32>(v) << (16 * h);
  }
  out[0] = r;
}
inline void movmatrix(const u32* in, u32* out) {
  warp_exchange(in, [&](const u32* const* t) { movmatrix_lane(t, laneid(), out); });
}
inline u32 movmatrix_trans(u32 a) {
  u32 r = 0;
  movmatrix(&a, &r);
  return r;
}

// wmma m16n16k16 (f16, bf16) and m16n16k8 (tf32): fragment element e of this lane as a
// (row, column) of its matrix. Layout (ours; CUDA keeps it opaque): the mma.m16n8k* fragments,
// B and C tiled along n (n-tile 0 first). f16 A/B fragments have 8 registers for 8 elements'
// worth: registers 4..7 repeat 0..3. WHICH: 0 a, 1 b, 2 c/d.
template <int WHICH, int T, int K>
inline void wmma_coord(unsigned lane, unsigned e, unsigned& row, unsigned& col) {
  const unsigned g = lane / 4, tq = lane % 4;
  if constexpr (WHICH == 2) {
    if constexpr (T == F16) {  // 4 words, 2 halves each
      const unsigned r = e / 2, h = e % 2;
      row = g + 8 * (r % 2);
      col = 2 * tq + h + 8 * (r / 2);
    } else {  // 8 words of f32/s32
      const unsigned nt = e / 4, r = e % 4;
      row = g + (r >= 2 ? 8 : 0);
      col = 2 * tq + (r & 1) + 8 * nt;
    }
  } else if constexpr (T == TF32) {  // 4 words, one element each
    if constexpr (WHICH == 0) {
      row = g + 8 * (e & 1);
      col = tq + 4 * (e >> 1);
    } else {
      row = tq + 4 * (e & 1);
      col = g + 8 * (e >> 1);
    }
  } else {  // f16/bf16: word e / 2 (mod 4), half e % 2
    const unsigned r = (e / 2) % 4, h = e % 2;
    if constexpr (WHICH == 0) {
      row = g + 8 * (r & 1);
      col = 2 * tq + h + 8 * (r >> 1);
    } else {
      row = 2 * tq + h + 8 * (r & 1);
      col = g + 8 * (r >> 1);
    }
  }
}
// Rows x columns of the stored matrix and words of the fragment.
template <int WHICH, int T, int K>
struct wmma_shape {
  static constexpr int rows = WHICH == 1 ? K : 16;
  static constexpr int cols = WHICH == 0 ? K : 16;
  static constexpr int ebits = WHICH == 2 ? (T == F16 ? 16 : 32) : bits_of(T);
  static constexpr int words = WHICH == 2 ? (T == F16 ? 4 : 8) : T == F16 ? 8 : 4;
  static constexpr int elems = words * 32 / ebits;
};

// wmma.load.{a,b,c}.sync.aligned.{row,col}.m16n16kK.T: element (i, j) at p + (COL ? j * stride +
// i : i * stride + j) elements. No exchange: every lane reads its own elements.
template <int WHICH, int T, int K, bool COL>
inline void wmma_load(const void* p, u32 stride, u32* out) {
  using S = wmma_shape<WHICH, T, K>;
  const unsigned me = laneid();
  const unsigned char* base = static_cast<const unsigned char*>(p);
  for (int w = 0; w < S::words; ++w) out[w] = 0;
  for (unsigned e = 0; e < static_cast<unsigned>(S::elems); ++e) {
    unsigned i, j;
    wmma_coord<WHICH, T, K>(me, e, i, j);
    const u64 off = (COL ? static_cast<u64>(j) * stride + i : static_cast<u64>(i) * stride + j) *
                    (S::ebits / 8);
    if constexpr (S::ebits == 16) {
      u16 v;
      __builtin_memcpy(&v, base + off, 2);
      out[e / 2] |= static_cast<u32>(v) << (16 * (e % 2));
    } else {
      __builtin_memcpy(&out[e], base + off, 4);
    }
  }
}
template <int T, int K, bool COL>
inline void wmma_store(void* p, const u32* in, u32 stride) {
  using S = wmma_shape<2, T, K>;
  const unsigned me = laneid();
  unsigned char* base = static_cast<unsigned char*>(p);
  for (unsigned e = 0; e < static_cast<unsigned>(S::elems); ++e) {
    unsigned i, j;
    wmma_coord<2, T, K>(me, e, i, j);
    const u64 off = (COL ? static_cast<u64>(j) * stride + i : static_cast<u64>(i) * stride + j) *
                    (S::ebits / 8);
    if constexpr (S::ebits == 16) {
      const u16 v = static_cast<u16>(in[e / 2] >> (16 * (e % 2)));
      __builtin_memcpy(base + off, &v, 2);
    } else {
      __builtin_memcpy(base + off, &in[e], 4);
    }
  }
}
// wmma.mma.sync.aligned.{row,col}.{row,col}.m16n16kK: in = A, B, C fragments; two mma n-tiles.
template <int AT, int CT, int DT, int K>
inline void wmma_mma_lane(const u32* const* t, unsigned lane, u32* out) {
  mma16<AT, AT, CT, DT, 2, K, wmma_shape<0, AT, K>::words, wmma_shape<1, AT, K>::words, false>(
      t, lane, out);
}
// Every lane's D fragment of one product, exactly as wmma_mma_lane computes each (the same
// products summed in the same k order, the same rounding), with A and B decoded once per warp
// instead of once per output of every lane (8,192 element decodes for 512 elements): on
// fibers that decoding was the time of cudaTensorCoreGemm's 16.7 M products (performance.md).
template <int AT, int CT, int DT, int K>
inline void wmma_mma_all(const u32* const* t, u32* const* outs) {
  constexpr int AW = wmma_shape<0, AT, K>::words;
  constexpr unsigned BW = wmma_shape<1, AT, K>::words;
  constexpr int per = 32 / bits_of(AT);  // elements per word
  constexpr int W = 4 * per;             // k covered by one word across the 4 lanes of a row
  double a[16][K], b[K][16];
  for (unsigned i = 0; i < 16; ++i)
    for (int k = 0; k < K; ++k) {
      const unsigned kb = k / W, q = (k % W) / per, sub = k % per;
      a[i][k] = fval<AT>(t, (i % 8) * 4 + q, (i >= 8 ? 1u : 0u) + 2 * kb, sub);
    }
  for (unsigned n = 0; n < 16; ++n)
    for (int k = 0; k < K; ++k) {
      const unsigned kb = k / W, q = (k % W) / per, sub = k % per;
      b[k][n] =
          fval<AT>(t, (n % 8) * 4 + q, AW + static_cast<unsigned>((K / W) * (n / 8)) + kb, sub);
    }
  // The whole 16 x 16 product, each element summed in k order from 0 as wmma_mma_lane does;
  // the innermost loop runs over n, so g++ vectorises it without reordering any sum.
  double d[16][16] = {};
  for (unsigned i = 0; i < 16; ++i)
    for (int k = 0; k < K; ++k) {
      const double x = a[i][k];
      for (unsigned n = 0; n < 16; ++n) d[i][n] += x * b[k][n];
    }
  for (unsigned me = 0; me < 32; ++me) {
    u32* const out = outs[me];
    if (out == nullptr) continue;
    const unsigned g = me / 4, tq = me % 4;
    for (unsigned nt = 0; nt < 2; ++nt)
      for (unsigned r = 0; r < 4; ++r) {
        const unsigned i = g + (r >= 2 ? 8u : 0u), n = 2 * tq + (r & 1) + 8u * nt;
        double cf;
        if constexpr (CT == F16)
          cf = fval<F16>(t, me, AW + BW + 2 * (n / 8) + (i >= 8 ? 1u : 0u), n & 1);
        else
          cf = fval<F32>(t, me, AW + BW + 4 * (n / 8) + 2 * (i >= 8 ? 1u : 0u) + (n & 1), 0);
        const double sum = d[i][n] + cf;
        if constexpr (DT == F16) {
          const u32 h = cvt<F16, F64, RN, 0>(sum);
          const unsigned o = 2 * nt + (r >= 2 ? 1u : 0u);
          if ((r & 1) == 0)
            out[o] = h;
          else
            out[o] |= h << 16;
        } else {
          out[4 * nt + r] = __builtin_bit_cast(u32, static_cast<float>(sum));
        }
      }
  }
}
template <int AT, int CT, int DT, int K>
inline void wmma_mma(const u32* in, u32* out) {
  warp_exchange_all(
      in, out, [](const u32* const* t, u32* const* outs) { wmma_mma_all<AT, CT, DT, K>(t, outs); });
}

}  // namespace cudamux::ptx::mma_ops

// ============================================================================================
// ptx-rest (issue 15 items 2 and 4): yield points, grid sync, mbarrier, named barriers with
// arrival counts, exit from device functions, video instructions.
// ============================================================================================
extern "C" __thread void* cudamux_grid_workspace __attribute__((tls_model("initial-exec")));
extern "C" __thread unsigned long long cudamux_block_serial
    __attribute__((tls_model("initial-exec")));
namespace cudamux::ptx {

// nanosleep, a spin-wait loop's poll, an mbarrier wait: the other threads of the block run
// first (fibers); outside fibers (split twins, once per pass that only polled) the OS thread
// gives its core away, or the block ends when another block failed the launch.
inline void yield() { cudamux_yield(); }
inline void nanosleep(u32 ns) { cudamux_nanosleep(ns); }

// %envreg1 / %envreg2: the high / low halves of the cooperative launch's grid-sync workspace
// (nvcc 12/13 inline grid.sync() as a counter at workspace + 4); 0 outside one, so grid.sync()
// traps as on a GPU. Other environment registers read 0.
inline u32 envreg(u32 n) {
  const u64 w = static_cast<u64>(reinterpret_cast<__UINTPTR_TYPE__>(cudamux_grid_workspace));
  return n == 1 ? static_cast<u32>(w >> 32) : n == 2 ? static_cast<u32>(w) : 0u;
}

// exit inside a .func: the function raises this flag and returns; every caller returns at once
// when it is up after a call, and the kernel clears it as the thread ends. Per OS thread: no
// thread switch happens between the exit and the kernel's return.
inline bool& exit_flag() {
  static thread_local bool f = false;
  return f;
}

// ---- mbarrier (a 64-bit object in shared or global memory) --------------------------------
// Layout (the ISA leaves it opaque): bits 0..20 pending arrivals of the current phase, 21..41
// the expected count, 42..62 the pending transaction count (expect_tx/complete_tx, modulo
// 2^21), bit 63 the phase parity. A phase completes when both pending counts reach 0: the
// parity flips and the pending count restarts at the expected count. The state token an
// arrive returns is the phase parity (bit 63) and the pending count after that arrival.
namespace mbar {
constexpr u64 kCount = (1ull << 21) - 1;
CUDAMUX_PTX_INLINE u64 pending(u64 s) { return s & kCount; }
CUDAMUX_PTX_INLINE u64 expected(u64 s) { return (s >> 21) & kCount; }
CUDAMUX_PTX_INLINE u64 tx(u64 s) { return (s >> 42) & kCount; }
CUDAMUX_PTX_INLINE u64 make(u64 phase, u64 tx, u64 exp, u64 pend) {
  return (phase << 63) | ((tx & kCount) << 42) | ((exp & kCount) << 21) | (pend & kCount);
}
// Applies an arrival of `count` (drop: the expected count shrinks too) and `tx_add` expected
// transaction bytes; returns the token.
inline u64 update(void* addr, u32 count, bool drop, s64 tx_delta) {
  u64* p = static_cast<u64*>(addr);
  u64 old = __atomic_load_n(p, __ATOMIC_RELAXED);
  for (;;) {
    const u64 phase = old >> 63;
    u64 pend = pending(old), exp = expected(old);
    u64 t = (tx(old) + static_cast<u64>(tx_delta)) & kCount;
    pend = pend >= count ? pend - count : 0;
    if (drop) exp = exp >= count ? exp - count : 0;
    u64 next = make(phase, t, exp, pend);
    if (pend == 0 && t == 0) next = make(phase ^ 1u, 0, exp, exp);  // the phase completes
    if (__atomic_compare_exchange_n(p, &old, next, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
      return (phase << 63) | pend;
  }
}
}  // namespace mbar
inline void mbarrier_init(void* addr, u32 count) {
  __atomic_store_n(static_cast<u64*>(addr), mbar::make(0, 0, count, count), __ATOMIC_RELEASE);
}
inline void mbarrier_inval(void* addr) {
  __atomic_store_n(static_cast<u64*>(addr), 0ull, __ATOMIC_RELEASE);
}
// arrive{.noComplete}, arrive_drop, arrive.expect_tx (count arrivals, tx bytes expected first).
inline u64 mbarrier_arrive(void* addr, u32 count, bool drop, u32 expect_tx) {
  return mbar::update(addr, count, drop, static_cast<s64>(expect_tx));
}
inline void mbarrier_expect_tx(void* addr, u32 bytes) {
  (void)mbar::update(addr, 0, false, static_cast<s64>(bytes));
}
inline void mbarrier_complete_tx(void* addr, u32 bytes) {
  (void)mbar::update(addr, 0, false, -static_cast<s64>(bytes));
}
// test_wait / try_wait: has the phase of `token` (or, .parity, the phase with that parity)
// completed? It does not block: the emitted code puts a yield point before every wait (fibers:
// the others run first; split twins: a stop), and a caller that loops until the phase completes
// (nvcc's wait loops) reaches that yield point again after each false answer.
inline bool mbarrier_test(void* addr, u64 token_or_parity, bool parity) {
  const u64 now = __atomic_load_n(static_cast<const u64*>(addr), __ATOMIC_ACQUIRE) >> 63;
  const u64 waited = parity ? (token_or_parity & 1u) : (token_or_parity >> 63);
  return now != waited;
}
inline u32 mbarrier_pending_count(u64 token) { return static_cast<u32>(mbar::pending(token)); }

// ---- named barriers with arrival counts (bar.arrive / bar.sync id, n) ---------------------
// Used by kernels of modules that contain bar.arrive (producer/consumer): 16 barriers per
// block, kept in TLS (a block runs on one OS thread) and reset when a new block starts. A
// barrier completes when `count` threads have arrived (bar.sync or bar.arrive); bar.sync
// waits, yielding, until its phase completes.
namespace named_bar {
struct state {
  unsigned long long block = 0;
  u32 arrived[16];
  u32 generation[16];
};
inline state& get() {
  static thread_local state s;
  if (s.block != cudamux_block_serial) {
    s.block = cudamux_block_serial;
    for (int i = 0; i < 16; ++i) s.arrived[i] = s.generation[i] = 0;
  }
  return s;
}
inline u32 arrive(u32 id, u32 count) {
  state& s = get();
  id &= 15u;
  if (count == 0) count = blockDim.x * blockDim.y * blockDim.z;
  const u32 gen = s.generation[id];
  if (++s.arrived[id] >= count) {
    s.arrived[id] = 0;
    ++s.generation[id];
  }
  return gen;
}
}  // namespace named_bar
inline void bar_arrive_named(u32 id, u32 count) { (void)named_bar::arrive(id, count); }
inline void bar_sync_named(u32 id, u32 count) {
  const u32 gen = named_bar::arrive(id, count);
  while (named_bar::get().generation[id & 15u] == gen) yield();
}

// ---- video instructions nvcc emits (__vabsdiffs2/4, __vsads2/4 ...) -----------------------
// vabsdiff{2,4}.dtype.atype.btype{.add} d, a, b, c: per-lane |a - b| of 16-bit (2) or 8-bit
// (4) lanes, signed or unsigned; .add sums the lanes' differences into c, else each lane
// replaces c's lane (all lanes selected). Signed/unsigned per source operand.
template <int Lanes, bool Sa, bool Sb, bool Add>
inline u32 vabsdiff(u32 a, u32 b, u32 c) {
  constexpr int w = 32 / Lanes;
  constexpr u32 m = (w == 32) ? 0xffffffffu : ((1u << w) - 1u);
  u32 d = c, sum = 0;
  for (int i = 0; i < Lanes; ++i) {
    const u32 ua = (a >> (i * w)) & m, ub = (b >> (i * w)) & m;
    const s32 x = Sa ? static_cast<s32>(ua << (32 - w)) >> (32 - w) : static_cast<s32>(ua);
    const s32 y = Sb ? static_cast<s32>(ub << (32 - w)) >> (32 - w) : static_cast<s32>(ub);
    const u32 diff = static_cast<u32>(x > y ? x - y : y - x);
    if (Add)
      sum += diff;
    else
      d = (d & ~(m << (i * w))) | ((diff & m) << (i * w));
  }
  return Add ? c + sum : d;
}
}  // namespace cudamux::ptx
