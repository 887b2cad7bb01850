// Instruction semantics end to end (tests/ptx/ops_e2e_test.cpp): nvcc's PTX for these kernels
// goes through the parser, the C++ emitter and ptx_ops.h, and runs on the device runtime.
// Regenerate ops_e2e.ptx with make_ops_fixture.sh (nvcc is not a build requirement).
#include <cstdio>
#include <cuda_fp16.h>

extern "C" __global__ void rounding(const float* in, unsigned* out) {
  const int t = threadIdx.x;
  const float x = in[t];
  unsigned* o = out + t * 12;
  o[0] = __float_as_uint(__fdiv_rz(x, 3.0f));
  o[1] = __float_as_uint(__fdiv_ru(x, 3.0f));
  o[2] = __float_as_uint(__fdiv_rd(x, 3.0f));
  o[3] = __float_as_uint(__fsqrt_rd(x));
  o[4] = __float_as_uint(__fmaf_ru(x, x, -1.0f));
  o[5] = __half_as_ushort(__float2half_rn(x));
  o[6] = __half_as_ushort(__float2half_rz(x));
  o[7] = static_cast<unsigned>(__float2int_rn(x * 1e9f));
  o[8] = static_cast<unsigned>(__float2uint_rd(x));
  o[9] = __half_as_ushort(__hfma(__float2half_rn(x), __float2half_rn(x), __float2half_rn(0.25f)));
  o[10] = __float_as_uint(__uint_as_float(0x7f7fffffu) * (x + 1.0f));
  o[11] = static_cast<unsigned>(__double2ll_rz(static_cast<double>(x) * 1e20));
}

extern "C" __global__ void warp(const unsigned* in, unsigned* out) {
  const unsigned t = threadIdx.x;
  const unsigned v = in[t];
  unsigned* o = out + t * 6;
  o[0] = __shfl_xor_sync(0xffffffffu, v, 1);
  o[1] = __shfl_down_sync(0xffffffffu, v, 3, 8);
  o[2] = __ballot_sync(0xffffffffu, (v & 1u) != 0);
  o[3] = __reduce_add_sync(0xffffffffu, v);
  o[4] = __byte_perm(v, t, 0x5140);
  o[5] = __funnelshift_l(v, t, t);
  if (t == 5) printf("lane %u: %d %5.2f %s %llx|\n", t, -static_cast<int>(t), 1.25, "ok", 0x123456789abcull);
}

extern "C" __global__ void atomics(unsigned* u, float* f, __half2* h, int* s, double* d) {
  const unsigned t = threadIdx.x;
  atomicInc(&u[0], 9u);
  atomicDec(&u[1], 5u);
  atomicAdd(&f[0], 0.5f);
  atomicMax(&s[0], static_cast<int>(t) - 20);
  atomicMin(&s[1], static_cast<int>(t) - 20);
  atomicAdd(&h[0], __floats2half2_rn(1.0f, 0.25f));
  u[5 + t] = atomicCAS(&u[2], 0u, 100u + t);
  atomicOr(&u[3], 1u << t);
  atomicExch(&u[4], 77u);
  atomicAdd(&d[0], 0.125);
}

__device__ unsigned bfe_s32(unsigned a, unsigned p, unsigned l) {
  int d;
  asm("bfe.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(p), "r"(l));
  return static_cast<unsigned>(d);
}
__device__ unsigned bfi_b32(unsigned a, unsigned b, unsigned p, unsigned l) {
  unsigned d;
  asm("bfi.b32 %0, %1, %2, %3, %4;" : "=r"(d) : "r"(a), "r"(b), "r"(p), "r"(l));
  return d;
}
__device__ unsigned bfind_s32(unsigned a) {
  unsigned d;
  asm("bfind.s32 %0, %1;" : "=r"(d) : "r"(a));
  return d;
}
__device__ unsigned prmt_ecl(unsigned a, unsigned b, unsigned c) {
  unsigned d;
  asm("prmt.b32.ecl %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}
__device__ unsigned lop3_e8(unsigned a, unsigned b, unsigned c) {
  unsigned d;
  asm("lop3.b32 %0, %1, %2, %3, 0xe8;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}
__device__ float min_nan(float a, float b) {
  float d;
  asm("min.NaN.f32 %0, %1, %2;" : "=f"(d) : "f"(a), "f"(b));
  return d;
}

extern "C" __global__ void integer(const unsigned* in, unsigned* out) {
  const unsigned t = threadIdx.x;
  const unsigned a = in[2 * t], b = in[2 * t + 1];
  const int sa = static_cast<int>(a), sb = static_cast<int>(b);
  unsigned* o = out + t * 20;
  o[0] = __umulhi(a, b);
  o[1] = static_cast<unsigned>(__mulhi(sa, sb));
  o[2] = static_cast<unsigned>(__mul24(sa, sb));
  o[3] = a / b;
  o[4] = a % b;
  o[5] = static_cast<unsigned>(sa / sb);
  o[6] = static_cast<unsigned>(sa % sb);
  o[7] = __brev(a) ^ (static_cast<unsigned>(__clz(sa)) << 8) ^ static_cast<unsigned>(__popc(b));
  o[8] = static_cast<unsigned>(__dp4a(sa, sb, 7));
  o[9] = static_cast<unsigned>(__dp2a_hi(a, b, 3u));
  o[10] = __fns(a, b & 31u, static_cast<int>(t % 5) - 2);
  o[11] = __funnelshift_rc(a, b, t * 3);
  o[12] = bfe_s32(a, b & 0xffu, (b >> 8) & 0xffu);
  o[13] = bfi_b32(a, b, t, 7);
  o[14] = bfind_s32(a);
  o[15] = prmt_ecl(a, b, t);
  o[16] = lop3_e8(a, b, t * 0x01010101u);
  o[17] = __usad(a, b, t);
  o[18] = __float_as_uint(min_nan(__uint_as_float(a), __uint_as_float(b)));
  o[19] = __float_as_uint(fmaxf(__uint_as_float(a), __uint_as_float(b)));
}

#include <cuda_bf16.h>
__device__ float tanh_approx(float a) {
  float d;
  asm("tanh.approx.f32 %0, %1;" : "=f"(d) : "f"(a));
  return d;
}
__device__ unsigned testp_normal(float a) {
  unsigned d;
  asm("{ .reg .pred p; testp.normal.f32 p, %1; selp.u32 %0, 1, 0, p; }" : "=r"(d) : "f"(a));
  return d;
}

extern "C" __global__ void floats(const float* in, unsigned* out) {
  const unsigned t = threadIdx.x;
  const float x = in[t];
  unsigned* o = out + t * 14;
  o[0] = __float_as_uint(__frcp_rn(x));
  o[1] = __float_as_uint(__expf(x));
  o[2] = __float_as_uint(__sinf(x));
  o[3] = __float_as_uint(__fdividef(x, 3.0f));
  o[4] = __float_as_uint(tanh_approx(x));
  o[5] = __float_as_uint(__double2float_rz(static_cast<double>(x) / 3.0));
  o[6] = __float_as_uint(__ull2float_rd(0xffffffffffffffffull - t));
  o[7] = testp_normal(x);
  o[8] = __bfloat16_as_ushort(__float2bfloat16_rn(x));
  o[9] = __bfloat16_as_ushort(__hfma(__float2bfloat16_rn(x), __float2bfloat16_rn(x), __float2bfloat16_rn(-1.0f)));
  o[10] = __float_as_uint(__saturatef(x));
  o[11] = __float_as_uint(rintf(x));
  o[12] = *reinterpret_cast<const unsigned*>(&static_cast<const __half2&>(__floats2half2_rn(x, -x)));
  o[13] = __float_as_uint(__log2f(x));
}
