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
enum flag : int { FTZ = 1, SAT = 2, RELU = 4, NANF = 8, APPROX = 16, FULL = 32, XORSIGN = 64, ABSF = 128 };

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
