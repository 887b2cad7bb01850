// Fixture: warp shuffles, votes, match, activemask (and redux on compute_80).
extern "C" __global__ void warp_ops(int* out, const int* in) {
  int v = in[threadIdx.x];
  int s = v;
  for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
  int up = __shfl_up_sync(0xffffffffu, v, 1);
  int x = __shfl_xor_sync(0xffffffffu, v, 2);
  int idx = __shfl_sync(0xffffffffu, v, 5);
  unsigned ballot = __ballot_sync(0xffffffffu, v > 3);
  int all = __all_sync(0xffffffffu, v != 0);
  int any = __any_sync(0xffffffffu, v == 7);
  unsigned act = __activemask();
  unsigned m = __match_any_sync(0xffffffffu, v);
  __syncwarp();
  out[threadIdx.x] = s + up + x + idx + (int)ballot + all + any + (int)act + (int)m;
#if __CUDA_ARCH__ >= 800
  out[threadIdx.x + 32] = __reduce_add_sync(0xffffffffu, v) + __reduce_max_sync(0xffffffffu, v);
#endif
}
