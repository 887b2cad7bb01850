// Compiled by the ptx_ops.CompilesAfterThePrelude test exactly as generated PTX modules are:
// the prelude force-included, then ptx_ops.h (C++17, -Wall -Wextra -Werror). Instantiates
// every operation of the header for the types the emitter uses.
#include "cudamux/ptx_ops.h"

using namespace cudamux::ptx;

template <int T>
__attribute__((used)) void float_ops(typename storage<T>::type* p) {
  p[0] = fadd<T, NONE, 0>(p[1], p[2]);
  p[0] = fadd<T, RN, FTZ | SAT>(p[1], p[2]);
  p[0] = fsub<T, RZ, 0>(p[1], p[2]);
  p[0] = fmul<T, RM, 0>(p[1], p[2]);
  p[0] = ffma<T, RP, 0>(p[1], p[2], p[3]);
  p[0] = ffma<T, RN, RELU>(p[1], p[2], p[3]);
  p[0] = fdiv<T, RN, 0>(p[1], p[2]);
  p[0] = fdiv<T, RZ, 0>(p[1], p[2]);
  p[0] = fmin<T, NANF>(p[1], p[2]);
  p[0] = fmax<T, XORSIGN | ABSF>(p[1], p[2]);
  p[0] = fabs_<T, 0>(p[1]);
  p[0] = fneg<T, FTZ>(p[1]);
  p[0] = fsqrt<T, RP, 0>(p[1]);
  p[0] = fex2<T, 0>(p[1]);
  p[0] = ftanh<T, 0>(p[1]);
  p[0] = atom<T, 0>(p + 4, p[1]);
}
template void float_ops<F32>(float*);
template void float_ops<F64>(double*);
template void float_ops<F16>(u16*);
template void float_ops<BF16>(u16*);
template void float_ops<F16X2>(u32*);
template void float_ops<BF16X2>(u32*);

__attribute__((used)) void scalar_ops(float* f, double* d, u32* u, s32* s, u64* l, s64* q,
                                      bool* b) {
  f[0] = frcp<F32, NONE, APPROX | FTZ>(f[1]) + frsqrt<F32, 0>(f[2]) + fsin<F32, FTZ>(f[3]) +
         fcos<F32, 0>(f[4]) + flg2<F32, 0>(f[5]) + fcopysign<F32>(f[6], f[7]) +
         fdiv<F32, NONE, APPROX>(f[1], f[2]) + fdiv<F32, NONE, FULL>(f[1], f[2]);
  d[0] = frcp<F64, RZ, 0>(d[1]) + frsqrt<F64, 0>(d[2]) + fsqrt<F64, NONE, 0>(d[3]);
  b[0] = ftestp<F32, 4>(f[0]) && compare<F32, 13, FTZ>(f[1], f[2]) &&
         compare<S32, 7, 0>(s[0], s[1]) && compare<U64, 5, 0>(l[0], l[1]) &&
         compare<F16, 1, 0>(static_cast<u16>(u[0]), static_cast<u16>(u[1]));
  compare2<F16X2, 3, 0>(u[0], u[1], b[1], b[2]);
  s[0] = cvt<S32, F32, RNI, FTZ>(f[0]) + cvt<S32, F64, RZI, 0>(d[0]) +
         cvt<S8, F16, RMI, 0>(static_cast<u16>(u[0]));
  u[0] = cvt<U32, F32, RPI, 0>(f[1]) + cvt<F16, F32, RN, SATFINITE | RELU>(f[2]) +
         cvt<BF16, F64, RZ, 0>(d[1]) + cvt<TF32, F32, RNA, 0>(f[3]) +
         cvt<U8, S32, NONE, SAT>(s[1]) + cvt_pack2<F16X2, RN, 0>(f[0], f[1]) +
         cvt_pack2<BF16X2, RZ, RELU>(f[0], f[1]) + cvt_pack2<E4M3X2, RN, 0>(f[0], f[1]) +
         cvt_f8x2_to_f16x2<E5M2X2, 0>(static_cast<u16>(u[2]));
  f[1] = cvt<F32, S64, RZ, 0>(q[0]) + cvt<F32, F16, NONE, FTZ>(static_cast<u16>(u[1])) +
         f16_to_f32(f32_to_f16_rn(f[2])) + bf16_to_f32(f32_to_bf16_rn(f[3]));
  d[1] = cvt<F64, U64, RP, 0>(l[0]) + cvt<F64, F32, NONE, 0>(f[0]) + cvt<F64, F64, RMI, 0>(d[2]);
  s[1] = mul_hi<s32>(s[0], s[1]) + mul24_lo<s32>(s[0], s[1]) + mul24_hi<s32>(s[2], s[3]) +
         sad<s32>(s[0], s[1], s[2]) + idiv<s32>(s[0], s[1]) + irem<s32>(s[2], s[3]) +
         iabs<s32>(s[0]) + add_sat<s32>(s[0], s[1]) + sub_sat<s32>(s[0], s[1]) +
         bfe<s32>(s[0], u[0], u[1]) + shr<s32>(s[0], u[1]) + dp4a<s8, u8>(u[0], u[1], s[0]) +
         dp2a<u16, s8, true>(u[0], u[1], s[1]);
  u[1] = popc<u64>(l[0]) + clz<u32>(u[0]) + bfind<s64, true>(q[0]) + brev<u32>(u[0]) +
         bfi<u32>(u[0], u[1], u[2], u[3]) + prmt(u[0], u[1], u[2], 0) + prmt(u[0], u[1], u[2], 6) +
         lop3(u[0], u[1], u[2], 0x96) + shf<true, true>(u[0], u[1], u[2]) + shl<u32>(u[0], u[3]) +
         fns(u[0], u[1], s[0]);
  bool c = false;
  l[1] =
      add_cc<u64>(l[0], l[1], false, c) + sub_cc<u64>(l[2], l[3], c, c) + mul_hi<u64>(l[0], l[1]);
  q[1] = idiv<s64>(q[0], q[1]);
  u[2] = atom<U32, 3>(u + 4, 7u) + atom<U32, 4>(u + 5, 7u) +
         static_cast<u32>(atom<S32, 1>(s + 4, 1)) + atom_cas<B32>(u + 6, 1u, 2u) +
         static_cast<u32>(atom<U64, 8>(l + 4, 5ull)) + atom<B32, 7>(u + 7, 1u);
  fence();
}

__attribute__((used)) void collective_ops(u32* u, bool* b) {
  bool p = false;
  u[0] = shfl<0>(u[1], 1, 0, ~0u, p) + shfl<1>(u[1], 1, 0x1f, ~0u, p) +
         shfl<2>(u[1], 1, 0x1f, ~0u, p) + shfl<3>(u[1], 1, 0x1f, ~0u, p);
  b[0] = p && vote_all(b[1], ~0u) && vote_any(b[1], ~0u) && vote_uni(b[1], ~0u);
  u[1] = vote_ballot(b[2], ~0u) + match_any<u32>(u[2], ~0u) + match_all<u64>(u[3], ~0u, b[3]) +
         redux<0, u32>(u[4], ~0u) + static_cast<u32>(redux<1, s32>(static_cast<s32>(u[5]), ~0u)) +
         redux<7, u32>(u[6], ~0u) + activemask();
  bar_warp_sync(~0u);
  bar_sync(0, 0);
  u[2] = bar_red_popc(1, 0, b[0]) + bar_red_and(0, 0, b[1]) + bar_red_or(0, 0, b[2]);
  u[3] = laneid() + warpid() + nwarpid() + lanemask(2) +
         static_cast<u32>(cudamux::ptx::clock64() + globaltimer()) + smid() + nsmid();
  if (u[3] == 12345) {
    vprintf("%d\n", reinterpret_cast<const char*>(u));
    assertfail("x", "f.cu", 1, "k");
    trap("why");
  }
}

// ptx-mma: every warp-matrix helper the emitter calls.
__attribute__((used)) void matrix_ops(u32* u, void* p) {
  using namespace cudamux::ptx::mma_ops;
  mma<F16, F16, F32, F32, 16, false>(u, u + 24);
  mma<F16, F16, F16, F16, 16, false>(u, u + 24);
  mma<F16, F16, F32, F16, 8, false>(u, u + 24);
  mma<BF16, BF16, F32, F32, 16, false>(u, u + 24);
  mma<TF32, TF32, F32, F32, 4, false>(u, u + 24);
  mma<TF32, TF32, F32, F32, 8, false>(u, u + 24);
  mma<S8, U8, S32, S32, 32, true>(u, u + 24);
  mma<U8, S8, S32, S32, 16, false>(u, u + 24);
  mma_f64(u, u + 24);
  put_address(p, u);
  ldmatrix<4, true>(u, u + 8);
  ldmatrix<1, false>(u, u + 8);
  stmatrix<2, true>(u, nullptr);
  u32 out[8];
  const u32* t[32] = {};
  mma_lane<F16, F16, F32, F32, 16, false>(t, 3, out);
  mma_f64_lane(t, 3, out);
  ldmatrix_lane<2, false>(t, 3, out);
  stmatrix_lane<4, false>(t, 3, out);
  movmatrix_lane(t, 3, out);
  wmma_mma_lane<F16, F16, F16, 16>(t, 3, out);
  u[1] = out[0];
  u[0] = movmatrix_trans(u[1]);
  wmma_load<0, F16, 16, true>(p, 16, u);
  wmma_load<1, BF16, 16, false>(p, 16, u);
  wmma_load<0, TF32, 8, false>(p, 8, u);
  wmma_load<2, F16, 16, false>(p, 16, u);
  wmma_load<2, F32, 8, true>(p, 16, u);
  wmma_store<F16, 16, true>(p, u, 16);
  wmma_store<F32, 8, false>(p, u, 16);
  wmma_mma<F16, F16, F32, 16>(u, u + 24);
  wmma_mma<BF16, F32, F32, 16>(u, u + 24);
  wmma_mma<TF32, F32, F32, 8>(u, u + 24);
}
