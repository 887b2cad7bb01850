// Fixture: local arrays (dynamic indexing forces a stack frame), struct-by-value params.
struct Big {
  double d;
  int a[5];
  char c;
};
struct Small {
  short s;
  char c;
};
extern "C" __global__ void locals(Big b, Small s, int k, float* out) {
  float arr[16];
  for (int i = 0; i < 16; ++i) arr[i] = i * b.d + s.s;
  out[threadIdx.x] = arr[(k + threadIdx.x) & 15] + b.a[k % 5] + b.c + s.c;
}
