// Fixture: virtual functions (vtables: initializers naming functions defined later), device
// new/delete and malloc/free, fences, inline asm with a scoped predicate.
#include <cstdio>
struct Base { __device__ virtual int f(int x) { return x; } __device__ virtual ~Base() {} };
struct Der : Base { __device__ int f(int x) override { return 2 * x; } };
extern "C" __global__ void virt(int* o, int sel) {
  Base* b = sel ? (Base*)new Der() : new Base();
  o[0] = b->f(3);
  delete b;
  int* m = (int*)malloc(16); m[0] = 1; o[1] = m[0]; free(m);
  __syncwarp(); __threadfence(); __threadfence_block(); __threadfence_system();
  o[2] = __shfl_sync(0xffffffff, o[0], 0);
  unsigned long long g; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g)); o[3] = (int)g;
  asm volatile("{ .reg .pred p; setp.ne.s32 p, %0, 0; @p trap; }" :: "r"(o[4]));
}
