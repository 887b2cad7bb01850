// Fixture: texture fetch through a cudaTextureObject_t, surface write.
extern "C" __global__ void texfetch(cudaTextureObject_t t, cudaSurfaceObject_t s, float4* out,
                                    int w) {
  int x = threadIdx.x, y = blockIdx.x;
  float4 v = tex2D<float4>(t, x + 0.5f, y + 0.5f);
  out[y * w + x] = v;
  surf2Dwrite(v.x, s, x * 4, y);
}
