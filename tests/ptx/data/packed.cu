// Fixture: pointers inside initialised structs (u64 words, and byte masks when unaligned).
__device__ int tbl[4] = {1,2,3,4};
struct __attribute__((packed)) Q { char c; int* p; };
__device__ Q q = {'x', tbl + 1};
__global__ void k(int* o) { o[0] = *q.p; }
struct S { int a; int* p; float f; };
__device__ S s = {7, &tbl[1], 2.5f};
__device__ S arr[2] = {{1, &tbl[0], 1.f}, {2, &tbl[3], 2.f}};
struct P { char c; int* p; };
__device__ P packed = {'x', tbl};
__global__ void k2(int* o) { o[0] = *s.p + *arr[1].p + *packed.p; }
