// The CUDA device language on the CPU: force-included before every program the mock
// compiles. Header-free on purpose (compile latency): only compiler builtins and our ABI.
#pragma once
#pragma GCC system_header
#include "cudamux/device_abi.h"

#define __CUDAMUX_MOCK__ 1
// What NVIDIA's NVRTC 13.0 predefines (measured; docs/conformance.md, "NVRTC"). Not __NVCC__:
// NVRTC leaves it undefined. Option-dependent ones (__CUDA_FTZ, __CUDACC_RDC__, ...) come from
// the compiler's command line.
#define __CUDACC__ 1
#define __CUDACC_RTC__ 1
#define __CUDACC_VER_MAJOR__ 13
#define __CUDACC_VER_MINOR__ 0
#define __CUDACC_VER_BUILD__ 88
#define __CUDA_API_VER_MAJOR__ 13
#define __CUDA_API_VER_MINOR__ 0
#define __NVCC_DIAG_PRAGMA_SUPPORT__ 1
#define CUDART_VERSION 13000
#ifndef NULL
#define NULL 0
#endif

// --- qualifiers ---
#define __global__ __attribute__((used))
#define __device__
#define __host__
#define __constant__
#define __managed__
#define __shared__ static thread_local
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __maxnreg__(...)
#define __cluster_dims__(...)
#define __grid_constant__
#define __restrict__ __restrict
#define __align__(n) __attribute__((aligned(n)))
#define __builtin_align__(n) __attribute__((aligned(n)))
#define __inline_hint__ inline
#define __CUDA_ALIGN__(n) __attribute__((aligned(n)))

typedef decltype(sizeof(0)) size_t;
typedef decltype((char*)0 - (char*)0) ptrdiff_t;
typedef long clock_t;
typedef __builtin_va_list va_list;
namespace std {}  // declared, empty: std:: names need their headers, as with NVRTC
// ... but for std::initializer_list, which NVRTC predefines (CuPy's carray.cuh relies on it).
// libstdc++'s class under libstdc++'s include guard, so that a later <initializer_list> (from
// the host's headers) is a no-op; g++ builds brace lists through these two members.
#ifndef _INITIALIZER_LIST
#define _INITIALIZER_LIST
namespace std {
template <class _E>
class initializer_list {
 public:
  typedef _E value_type;
  typedef const _E& reference;
  typedef const _E& const_reference;
  typedef decltype(sizeof(0)) size_type;
  typedef const _E* iterator;
  typedef const _E* const_iterator;

 private:
  iterator _M_array;
  size_type _M_len;
  constexpr initializer_list(const_iterator __a, size_type __l) : _M_array(__a), _M_len(__l) {}

 public:
  constexpr initializer_list() noexcept : _M_array(0), _M_len(0) {}
  constexpr size_type size() const noexcept { return _M_len; }
  constexpr const_iterator begin() const noexcept { return _M_array; }
  constexpr const_iterator end() const noexcept { return begin() + size(); }
};
template <class _Tp>
constexpr const _Tp* begin(initializer_list<_Tp> __ils) noexcept {
  return __ils.begin();
}
template <class _Tp>
constexpr const _Tp* end(initializer_list<_Tp> __ils) noexcept {
  return __ils.end();
}
}  // namespace std
#endif
// Runtime types NVRTC declares without any include (a subset: the handles and the error type).
typedef struct CUstream_st* cudaStream_t;
typedef struct CUevent_st* cudaEvent_t;
typedef struct CUgraph_st* cudaGraph_t;
enum cudaError { cudaSuccess = 0 };
typedef enum cudaError cudaError_t;
enum cudaSharedMemConfig {  // CUB's BlockRadixRank names it
  cudaSharedMemBankSizeDefault = 0,
  cudaSharedMemBankSizeFourByte = 1,
  cudaSharedMemBankSizeEightByte = 2
};

// --- vector types ---
#define CUDAMUX_VEC(T, N1, A2, A3, A4)                                     \
  struct __attribute__((aligned(sizeof(T)))) N1##1 { T x; };               \
  struct __attribute__((aligned(A2))) N1##2 { T x, y; };                   \
  struct N1##3 { T x, y, z; };                                             \
  struct __attribute__((aligned(A4))) N1##4 { T x, y, z, w; };             \
  static inline N1##1 make_##N1##1(T x) { return N1##1{x}; }              \
  static inline N1##2 make_##N1##2(T x, T y) { return N1##2{x, y}; }       \
  static inline N1##3 make_##N1##3(T x, T y, T z) { return N1##3{x, y, z}; } \
  static inline N1##4 make_##N1##4(T x, T y, T z, T w) { return N1##4{x, y, z, w}; }
CUDAMUX_VEC(signed char, char, 2, 1, 4)
CUDAMUX_VEC(unsigned char, uchar, 2, 1, 4)
CUDAMUX_VEC(short, short, 4, 2, 8)
CUDAMUX_VEC(unsigned short, ushort, 4, 2, 8)
CUDAMUX_VEC(int, int, 8, 4, 16)
CUDAMUX_VEC(unsigned int, uint, 8, 4, 16)
CUDAMUX_VEC(long, long, 16, 8, 16)
CUDAMUX_VEC(unsigned long, ulong, 16, 8, 16)
CUDAMUX_VEC(long long, longlong, 16, 8, 16)
CUDAMUX_VEC(unsigned long long, ulonglong, 16, 8, 16)
CUDAMUX_VEC(float, float, 8, 4, 16)
CUDAMUX_VEC(double, double, 16, 8, 16)
#undef CUDAMUX_VEC
// CUDA 13's 4-wide 64-bit vectors with explicit alignment (long4 and friends are deprecated).
#define CUDAMUX_VEC4A(T, N, A)                                                   \
  struct __attribute__((aligned(A))) N { T x, y, z, w; };                        \
  static inline N make_##N(T x, T y, T z, T w) { return N{x, y, z, w}; }
CUDAMUX_VEC4A(long, long4_16a, 16)
CUDAMUX_VEC4A(long, long4_32a, 32)
CUDAMUX_VEC4A(unsigned long, ulong4_16a, 16)
CUDAMUX_VEC4A(unsigned long, ulong4_32a, 32)
CUDAMUX_VEC4A(long long, longlong4_16a, 16)
CUDAMUX_VEC4A(long long, longlong4_32a, 32)
CUDAMUX_VEC4A(unsigned long long, ulonglong4_16a, 16)
CUDAMUX_VEC4A(unsigned long long, ulonglong4_32a, 32)
CUDAMUX_VEC4A(double, double4_16a, 16)
CUDAMUX_VEC4A(double, double4_32a, 32)
#undef CUDAMUX_VEC4A

struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1)
      : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  constexpr operator uint3() const { return uint3{x, y, z}; }
};

// --- built-in variables: initial-exec TLS of libcudamux-device.so ---
#define CUDAMUX_TLS_IE __attribute__((tls_model("initial-exec")))
extern "C" __thread uint3 threadIdx __asm__("cudamux_threadIdx") CUDAMUX_TLS_IE;
extern "C" __thread uint3 blockIdx __asm__("cudamux_blockIdx") CUDAMUX_TLS_IE;
extern "C" __thread uint3 blockDim __asm__("cudamux_blockDim") CUDAMUX_TLS_IE;
extern "C" __thread uint3 gridDim __asm__("cudamux_gridDim") CUDAMUX_TLS_IE;
extern "C" __thread void* cudamux_dyn_shared CUDAMUX_TLS_IE;
extern "C" __thread unsigned cudamux_handed_off CUDAMUX_TLS_IE;
static constexpr int warpSize = 32;

#ifdef __CUDAMUX_MEMCHECK__
// Memcheck (issue 9): the module is compiled with -fsanitize=kernel-address and outlined
// checks, so every load and store of kernel code calls one of these hooks first. They are
// defined here, hidden, so that they bind inside the module (never to the sanitizer runtime a
// host process may carry) and forward to the device runtime.
#define CUDAMUX_MEMCHECK_HOOK(n)                                                        \
  extern "C" __attribute__((visibility("hidden"))) void __asan_load##n##_noabort(void* p) {  \
    cudamux_memcheck_access(p, n, 0);                                                     \
  }                                                                                       \
  extern "C" __attribute__((visibility("hidden"))) void __asan_store##n##_noabort(void* p) { \
    cudamux_memcheck_access(p, n, 1);                                                     \
  }
CUDAMUX_MEMCHECK_HOOK(1)
CUDAMUX_MEMCHECK_HOOK(2)
CUDAMUX_MEMCHECK_HOOK(4)
CUDAMUX_MEMCHECK_HOOK(8)
CUDAMUX_MEMCHECK_HOOK(16)
#undef CUDAMUX_MEMCHECK_HOOK
extern "C" __attribute__((visibility("hidden"))) void __asan_loadN_noabort(void* p, size_t n) {
  cudamux_memcheck_access(p, n, 0);
}
extern "C" __attribute__((visibility("hidden"))) void __asan_storeN_noabort(void* p, size_t n) {
  cudamux_memcheck_access(p, n, 1);
}
// Bookkeeping the instrumentation may emit; the runtime needs none of it.
extern "C" __attribute__((visibility("hidden"))) void __asan_handle_no_return(void) {}
extern "C" __attribute__((visibility("hidden"))) void __asan_before_dynamic_init(const char*) {}
extern "C" __attribute__((visibility("hidden"))) void __asan_after_dynamic_init(void) {}
extern "C" __attribute__((visibility("hidden"))) void __asan_register_globals(void*, size_t) {}
extern "C" __attribute__((visibility("hidden"))) void __asan_unregister_globals(void*, size_t) {}
#endif

namespace cudamux {
// `extern __shared__ T name[];` is rewritten to `static constexpr dyn_shared<T> name{};`:
// it reads the running block's dynamic shared buffer wherever it is used.
template <class T>
struct dyn_shared {
  operator T*() const { return static_cast<T*>(cudamux_dyn_shared); }
  T& operator[](size_t i) const { return static_cast<T*>(cudamux_dyn_shared)[i]; }
  T* operator+(size_t i) const { return static_cast<T*>(cudamux_dyn_shared) + i; }
  T& operator*() const { return *static_cast<T*>(cudamux_dyn_shared); }
};
template <class T, class U>
inline T bit_cast(const U& u) {
  static_assert(sizeof(T) == sizeof(U), "sizes differ");
  T t;
  __builtin_memcpy(&t, &u, sizeof(T));
  return t;
}
}  // namespace cudamux

// --- synchronisation ---
static inline void __syncthreads() { cudamux_syncthreads_op(CUDAMUX_BAR_SYNC, 0); }
static inline int __syncthreads_count(int p) { return cudamux_syncthreads_op(CUDAMUX_BAR_COUNT, p); }
static inline int __syncthreads_and(int p) { return cudamux_syncthreads_op(CUDAMUX_BAR_AND, p); }
static inline int __syncthreads_or(int p) { return cudamux_syncthreads_op(CUDAMUX_BAR_OR, p); }
static inline void __syncwarp(unsigned mask = 0xffffffffu) {
  cudamux_warp_op(CUDAMUX_WARP_SYNC, mask, 0, 0, 32);
}
static inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline void __threadfence_system() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
[[noreturn]] static inline void __trap() {
  cudamux_trap();
  __builtin_unreachable();
}
static inline void __brkpt() {}
static inline void __nanosleep(unsigned ns) { cudamux_nanosleep(ns); }

// --- warp vote / shuffle / match ---
namespace cudamux {
template <class T>
inline T warp_move(int op, unsigned mask, T var, int arg, int width) {
  static_assert(sizeof(T) % 4 == 0 || sizeof(T) < 8, "unsupported shuffle type");
  if constexpr (sizeof(T) <= 8) {
    unsigned long long v = 0;
    __builtin_memcpy(&v, &var, sizeof(T));
    v = cudamux_warp_op(op, mask, v, arg, width);
    T r;
    __builtin_memcpy(&r, &v, sizeof(T));
    return r;
  } else {  // larger types move in 4-byte pieces, one collective each
    unsigned piece[sizeof(T) / 4];
    __builtin_memcpy(piece, &var, sizeof(T));
    for (auto& p : piece) p = static_cast<unsigned>(cudamux_warp_op(op, mask, p, arg, width));
    T r;
    __builtin_memcpy(&r, piece, sizeof(T));
    return r;
  }
}
template <class T>
inline unsigned long long bits(T v) {
  unsigned long long b = 0;
  __builtin_memcpy(&b, &v, sizeof(T) < 8 ? sizeof(T) : 8);
  return b;
}
}  // namespace cudamux
template <class T>
inline T __shfl_sync(unsigned mask, T var, int src, int width = 32) {
  return cudamux::warp_move(CUDAMUX_WARP_SHFL, mask, var, src, width);
}
template <class T>
inline T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = 32) {
  return cudamux::warp_move(CUDAMUX_WARP_SHFL_UP, mask, var, static_cast<int>(delta), width);
}
template <class T>
inline T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = 32) {
  return cudamux::warp_move(CUDAMUX_WARP_SHFL_DOWN, mask, var, static_cast<int>(delta), width);
}
template <class T>
inline T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = 32) {
  return cudamux::warp_move(CUDAMUX_WARP_SHFL_XOR, mask, var, lane_mask, width);
}
static inline unsigned __ballot_sync(unsigned mask, int p) {
  return static_cast<unsigned>(cudamux_warp_op(CUDAMUX_WARP_BALLOT, mask, p != 0, 0, 32));
}
static inline int __any_sync(unsigned mask, int p) {
  return static_cast<int>(cudamux_warp_op(CUDAMUX_WARP_ANY, mask, p != 0, 0, 32));
}
static inline int __all_sync(unsigned mask, int p) {
  return static_cast<int>(cudamux_warp_op(CUDAMUX_WARP_ALL, mask, p != 0, 0, 32));
}
static inline int __uni_sync(unsigned mask, int p) {
  const unsigned b = __ballot_sync(mask, p);
  return b == 0 || b == (mask & static_cast<unsigned>(cudamux_warp_op(CUDAMUX_WARP_ACTIVEMASK, mask, 0, 0, 32)));
}
static inline unsigned __activemask() {
  return static_cast<unsigned>(cudamux_warp_op(CUDAMUX_WARP_ACTIVEMASK, ~0u, 0, 0, 32));
}
template <class T>
inline unsigned __match_any_sync(unsigned mask, T value) {
  return static_cast<unsigned>(
      cudamux_warp_op(CUDAMUX_WARP_MATCH_ANY, mask, cudamux::bits(value), 0, 32));
}
template <class T>
inline unsigned __match_all_sync(unsigned mask, T value, int* pred) {
  const auto r = static_cast<unsigned>(
      cudamux_warp_op(CUDAMUX_WARP_MATCH_ALL, mask, cudamux::bits(value), 0, 32));
  *pred = r != 0;
  return r;
}
static inline unsigned __reduce_add_sync(unsigned m, unsigned v) {
  return static_cast<unsigned>(cudamux_warp_op(CUDAMUX_WARP_REDUCE_ADD, m, v, 0, 32));
}
static inline int __reduce_add_sync(unsigned m, int v) {
  return static_cast<int>(__reduce_add_sync(m, static_cast<unsigned>(v)));
}
static inline unsigned __reduce_min_sync(unsigned m, unsigned v) {
  return static_cast<unsigned>(cudamux_warp_op(CUDAMUX_WARP_REDUCE_MIN, m, v, 0, 32));
}
static inline unsigned __reduce_max_sync(unsigned m, unsigned v) {
  return static_cast<unsigned>(cudamux_warp_op(CUDAMUX_WARP_REDUCE_MAX, m, v, 0, 32));
}
// Signed min/max: bias into unsigned order and back.
static inline int __reduce_min_sync(unsigned m, int v) {
  return static_cast<int>(__reduce_min_sync(m, static_cast<unsigned>(v) ^ 0x80000000u) ^ 0x80000000u);
}
static inline int __reduce_max_sync(unsigned m, int v) {
  return static_cast<int>(__reduce_max_sync(m, static_cast<unsigned>(v) ^ 0x80000000u) ^ 0x80000000u);
}
static inline unsigned __reduce_and_sync(unsigned m, unsigned v) {
  return static_cast<unsigned>(cudamux_warp_op(CUDAMUX_WARP_REDUCE_AND, m, v, 0, 32));
}
static inline unsigned __reduce_or_sync(unsigned m, unsigned v) {
  return static_cast<unsigned>(cudamux_warp_op(CUDAMUX_WARP_REDUCE_OR, m, v, 0, 32));
}
static inline unsigned __reduce_xor_sync(unsigned m, unsigned v) {
  return static_cast<unsigned>(cudamux_warp_op(CUDAMUX_WARP_REDUCE_XOR, m, v, 0, 32));
}

// --- atomics: real atomics, since blocks run concurrently ---
#ifdef __CUDAMUX_MEMCHECK__
// Memcheck (issue 9): accesses made inside an atomic are bounds-checked but never reported as
// shared-memory hazards (atomics are how threads may touch the same word without a barrier).
extern "C" __thread unsigned cudamux_memcheck_atomic CUDAMUX_TLS_IE;
struct cudamux_atomic_scope {
  cudamux_atomic_scope() { ++cudamux_memcheck_atomic; }
  ~cudamux_atomic_scope() { --cudamux_memcheck_atomic; }
};
#define CUDAMUX_ATOMIC_SCOPE ::cudamux_atomic_scope cudamux_atomic_scope_{};
#else
#define CUDAMUX_ATOMIC_SCOPE
#endif
// Exactly CUDA's overload set (device_atomic_functions.h, sm_*_atomic_functions.h): programs
// such as CuPy define the missing ones themselves (atomicAdd of long long, atomicMax of float),
// which a superset here would turn into redefinitions.
#define CUDAMUX_ATOMIC_RMW(name, builtin, T) \
  static inline T name(T* a, T v) { CUDAMUX_ATOMIC_SCOPE return builtin(a, v, __ATOMIC_SEQ_CST); }
#define CUDAMUX_ATOMIC_CAS(T)                                                                  \
  static inline T atomicCAS(T* a, T cmp, T v) { CUDAMUX_ATOMIC_SCOPE                           \
    __atomic_compare_exchange_n(a, &cmp, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);        \
    return cmp;                                                                                \
  }
#define CUDAMUX_ATOMIC_MINMAX(name, cmp_op, T)                                                 \
  static inline T name(T* a, T v) { CUDAMUX_ATOMIC_SCOPE                                       \
    T old = __atomic_load_n(a, __ATOMIC_RELAXED);                                              \
    while (v cmp_op old && !__atomic_compare_exchange_n(a, &old, v, true, __ATOMIC_SEQ_CST,    \
                                                        __ATOMIC_RELAXED)) {                   \
    }                                                                                          \
    return old;                                                                                \
  }
#define CUDAMUX_ATOMIC_BITS_MINMAX(T)                    \
  CUDAMUX_ATOMIC_RMW(atomicAnd, __atomic_fetch_and, T)   \
  CUDAMUX_ATOMIC_RMW(atomicOr, __atomic_fetch_or, T)     \
  CUDAMUX_ATOMIC_RMW(atomicXor, __atomic_fetch_xor, T)   \
  CUDAMUX_ATOMIC_MINMAX(atomicMin, <, T)                 \
  CUDAMUX_ATOMIC_MINMAX(atomicMax, >, T)
#define CUDAMUX_ATOMIC_ADD_EXCH_CAS(T)                    \
  CUDAMUX_ATOMIC_RMW(atomicAdd, __atomic_fetch_add, T)    \
  CUDAMUX_ATOMIC_RMW(atomicExch, __atomic_exchange_n, T)  \
  CUDAMUX_ATOMIC_CAS(T)
CUDAMUX_ATOMIC_ADD_EXCH_CAS(int)
CUDAMUX_ATOMIC_ADD_EXCH_CAS(unsigned int)
CUDAMUX_ATOMIC_ADD_EXCH_CAS(unsigned long long)
CUDAMUX_ATOMIC_RMW(atomicSub, __atomic_fetch_sub, int)
CUDAMUX_ATOMIC_RMW(atomicSub, __atomic_fetch_sub, unsigned int)
CUDAMUX_ATOMIC_BITS_MINMAX(int)
CUDAMUX_ATOMIC_BITS_MINMAX(unsigned int)
CUDAMUX_ATOMIC_BITS_MINMAX(unsigned long long)
CUDAMUX_ATOMIC_BITS_MINMAX(long long)
#undef CUDAMUX_ATOMIC_ADD_EXCH_CAS
#undef CUDAMUX_ATOMIC_BITS_MINMAX
#undef CUDAMUX_ATOMIC_MINMAX
#undef CUDAMUX_ATOMIC_CAS
#undef CUDAMUX_ATOMIC_RMW
static inline unsigned short atomicCAS(unsigned short* a, unsigned short cmp, unsigned short v) { CUDAMUX_ATOMIC_SCOPE
  __atomic_compare_exchange_n(a, &cmp, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return cmp;
}
namespace cudamux {
template <class F, class Op>
inline F atomic_float(F* a, Op op) {  CUDAMUX_ATOMIC_SCOPE // CAS loop on the bit pattern
  using U = __typeof__(bits(F{}));
  static_assert(sizeof(F) == 4 || sizeof(F) == 8, "");
  if constexpr (sizeof(F) == 4) {
    unsigned* p = reinterpret_cast<unsigned*>(a);
    unsigned old = __atomic_load_n(p, __ATOMIC_RELAXED);
    for (;;) {
      const F next = op(bit_cast<F>(old));
      if (__atomic_compare_exchange_n(p, &old, bit_cast<unsigned>(next), true, __ATOMIC_SEQ_CST,
                                      __ATOMIC_RELAXED))
        return bit_cast<F>(old);
    }
  } else {
    unsigned long long* p = reinterpret_cast<unsigned long long*>(a);
    unsigned long long old = __atomic_load_n(p, __ATOMIC_RELAXED);
    for (;;) {
      const F next = op(bit_cast<F>(old));
      if (__atomic_compare_exchange_n(p, &old, bit_cast<unsigned long long>(next), true,
                                      __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
        return bit_cast<F>(old);
    }
    (void)sizeof(U);
  }
}
}  // namespace cudamux
static inline float atomicAdd(float* a, float v) { CUDAMUX_ATOMIC_SCOPE
  return cudamux::atomic_float(a, [v](float o) { return o + v; });
}
static inline double atomicAdd(double* a, double v) { CUDAMUX_ATOMIC_SCOPE
  return cudamux::atomic_float(a, [v](double o) { return o + v; });
}
static inline float atomicExch(float* a, float v) { CUDAMUX_ATOMIC_SCOPE
  return cudamux::bit_cast<float>(atomicExch(reinterpret_cast<unsigned*>(a), cudamux::bit_cast<unsigned>(v)));
}
// CUDA's wrap rules: inc stores (old >= v) ? 0 : old + 1; dec stores
// (old == 0 || old > v) ? v : old - 1.
static inline unsigned atomicInc(unsigned* a, unsigned v) { CUDAMUX_ATOMIC_SCOPE
  unsigned old = __atomic_load_n(a, __ATOMIC_RELAXED);
  while (!__atomic_compare_exchange_n(a, &old, old >= v ? 0u : old + 1u, true, __ATOMIC_SEQ_CST,
                                      __ATOMIC_RELAXED)) {
  }
  return old;
}
static inline unsigned atomicDec(unsigned* a, unsigned v) { CUDAMUX_ATOMIC_SCOPE
  unsigned old = __atomic_load_n(a, __ATOMIC_RELAXED);
  while (!__atomic_compare_exchange_n(a, &old, (old == 0u || old > v) ? v : old - 1u, true,
                                      __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
  }
  return old;
}
// _block and _system scopes: every scope is the whole process here.
#define CUDAMUX_SCOPED(name)                                                        \
  template <class... A>                                                             \
  inline auto name##_block(A... a) -> decltype(name(a...)) { return name(a...); }   \
  template <class... A>                                                             \
  inline auto name##_system(A... a) -> decltype(name(a...)) { return name(a...); }
CUDAMUX_SCOPED(atomicAdd)
CUDAMUX_SCOPED(atomicSub)
CUDAMUX_SCOPED(atomicExch)
CUDAMUX_SCOPED(atomicMin)
CUDAMUX_SCOPED(atomicMax)
CUDAMUX_SCOPED(atomicInc)
CUDAMUX_SCOPED(atomicDec)
CUDAMUX_SCOPED(atomicCAS)
CUDAMUX_SCOPED(atomicAnd)
CUDAMUX_SCOPED(atomicOr)
CUDAMUX_SCOPED(atomicXor)
#undef CUDAMUX_SCOPED

// --- math ---
#include "cudamux/math.h"

// --- texture and surface objects ---
#include "cudamux/texture.h"

// --- integer intrinsics ---
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(static_cast<unsigned>(x)); }
static inline int __clzll(long long x) {
  return x == 0 ? 64 : __builtin_clzll(static_cast<unsigned long long>(x));
}
static inline int __ffs(int x) { return __builtin_ffs(x); }
static inline int __ffsll(long long x) { return __builtin_ffsll(x); }
static inline unsigned __brev(unsigned x) {
  x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
  x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
  x = ((x >> 4) & 0x0F0F0F0Fu) | ((x & 0x0F0F0F0Fu) << 4);
  return __builtin_bswap32(x);
}
static inline unsigned long long __brevll(unsigned long long x) {
  return (static_cast<unsigned long long>(__brev(static_cast<unsigned>(x))) << 32) |
         __brev(static_cast<unsigned>(x >> 32));
}
static inline int __mul24(int a, int b) {
  return static_cast<int>(((a << 8) >> 8) * static_cast<long long>((b << 8) >> 8));
}
static inline unsigned __umul24(unsigned a, unsigned b) { return (a & 0xFFFFFFu) * (b & 0xFFFFFFu); }
static inline int __mulhi(int a, int b) {
  return static_cast<int>((static_cast<long long>(a) * b) >> 32);
}
static inline unsigned __umulhi(unsigned a, unsigned b) {
  return static_cast<unsigned>((static_cast<unsigned long long>(a) * b) >> 32);
}
static inline long long __mul64hi(long long a, long long b) {
  return static_cast<long long>((static_cast<__int128>(a) * b) >> 64);
}
static inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
  return static_cast<unsigned long long>((static_cast<unsigned __int128>(a) * b) >> 64);
}
static inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  const unsigned long long v = (static_cast<unsigned long long>(y) << 32) | x;
  unsigned r = 0;
  for (int i = 0; i < 4; ++i) {
    const unsigned sel = (s >> (4 * i)) & 7u;
    r |= static_cast<unsigned>((v >> (8 * sel)) & 0xFFu) << (8 * i);
  }
  return r;
}
static inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned sh) {
  const unsigned long long v = (static_cast<unsigned long long>(hi) << 32) | lo;
  return static_cast<unsigned>((v << (sh & 31u)) >> 32);
}
static inline unsigned __funnelshift_lc(unsigned lo, unsigned hi, unsigned sh) {
  const unsigned long long v = (static_cast<unsigned long long>(hi) << 32) | lo;
  return static_cast<unsigned>((v << (sh > 32u ? 32u : sh)) >> 32);
}
static inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned sh) {
  const unsigned long long v = (static_cast<unsigned long long>(hi) << 32) | lo;
  return static_cast<unsigned>(v >> (sh & 31u));
}
static inline unsigned __funnelshift_rc(unsigned lo, unsigned hi, unsigned sh) {
  const unsigned long long v = (static_cast<unsigned long long>(hi) << 32) | lo;
  return static_cast<unsigned>(v >> (sh > 32u ? 32u : sh));
}
static inline int __sad(int a, int b, unsigned c) { return (a > b ? a - b : b - a) + static_cast<int>(c); }
static inline unsigned __usad(unsigned a, unsigned b, unsigned c) { return (a > b ? a - b : b - a) + c; }
static inline int __hadd(int a, int b) { return static_cast<int>((static_cast<long long>(a) + b) >> 1); }
static inline int __rhadd(int a, int b) { return static_cast<int>((static_cast<long long>(a) + b + 1) >> 1); }
static inline unsigned __uhadd(unsigned a, unsigned b) {
  return static_cast<unsigned>((static_cast<unsigned long long>(a) + b) >> 1);
}
static inline unsigned __urhadd(unsigned a, unsigned b) {
  return static_cast<unsigned>((static_cast<unsigned long long>(a) + b + 1) >> 1);
}
template <class T>
inline T __ldg(const T* p) { return *p; }
template <class T>
inline T __ldcg(const T* p) { return *p; }
template <class T>
inline T __ldca(const T* p) { return *p; }
template <class T>
inline T __ldcs(const T* p) { return *p; }
template <class T>
inline T __ldlu(const T* p) { return *p; }
template <class T>
inline T __ldcv(const T* p) { return *p; }
template <class T>
inline void __stcg(T* p, T v) { *p = v; }
template <class T>
inline void __stcs(T* p, T v) { *p = v; }
template <class T>
inline void __stwb(T* p, T v) { *p = v; }
template <class T>
inline void __stwt(T* p, T v) { *p = v; }
static inline long long clock64() { return static_cast<long long>(cudamux_clock64()); }
// extern "C" as glibc's <time.h> declares it, which host headers (<ctime>, CCCL's <chrono>)
// may bring in after the prelude.
extern "C" inline clock_t clock() noexcept { return static_cast<clock_t>(cudamux_clock64()); }

// Address-space conversions: one flat address space on the CPU, so a shared or global address
// is the generic one (round trips are exact; CCCL's cuda::ptx helpers use these).
static inline size_t __cvta_generic_to_shared(const void* p) { return reinterpret_cast<size_t>(p); }
static inline size_t __cvta_generic_to_global(const void* p) { return reinterpret_cast<size_t>(p); }
static inline size_t __cvta_generic_to_constant(const void* p) { return reinterpret_cast<size_t>(p); }
static inline size_t __cvta_generic_to_local(const void* p) { return reinterpret_cast<size_t>(p); }
static inline void* __cvta_shared_to_generic(size_t a) { return reinterpret_cast<void*>(a); }
static inline void* __cvta_global_to_generic(size_t a) { return reinterpret_cast<void*>(a); }
static inline void* __cvta_constant_to_generic(size_t a) { return reinterpret_cast<void*>(a); }
static inline void* __cvta_local_to_generic(size_t a) { return reinterpret_cast<void*>(a); }
// SIMD min/max of two 16-bit halves (CUB's operators use them for pairs of shorts).
namespace cudamux {
template <class H, class Op>
inline unsigned simd2(unsigned a, unsigned b, Op op) {
  const H lo = op(static_cast<H>(a & 0xFFFFu), static_cast<H>(b & 0xFFFFu));
  const H hi = op(static_cast<H>(a >> 16), static_cast<H>(b >> 16));
  return (static_cast<unsigned>(static_cast<unsigned short>(hi)) << 16) |
         static_cast<unsigned short>(lo);
}
}  // namespace cudamux
static inline unsigned __vmins2(unsigned a, unsigned b) {
  return cudamux::simd2<short>(a, b, [](short x, short y) { return y < x ? y : x; });
}
static inline unsigned __vminu2(unsigned a, unsigned b) {
  return cudamux::simd2<unsigned short>(a, b, [](unsigned short x, unsigned short y) { return y < x ? y : x; });
}
static inline unsigned __vmaxs2(unsigned a, unsigned b) {
  return cudamux::simd2<short>(a, b, [](short x, short y) { return x < y ? y : x; });
}
static inline unsigned __vmaxu2(unsigned a, unsigned b) {
  return cudamux::simd2<unsigned short>(a, b, [](unsigned short x, unsigned short y) { return x < y ? y : x; });
}

// --- printf and assert ---
extern "C" __attribute__((visibility("default"))) inline int printf(const char* __restrict fmt, ...) {
  __builtin_va_list ap;
  __builtin_va_start(ap, fmt);
  const int n = cudamux_vprintf(fmt, ap);
  __builtin_va_end(ap);
  return n;
}
#include "cudamux/assert.h"
// What assert expands to in NVIDIA's headers; NVRTC declares it without any include.
static inline void __assertfail(const char* message, const char* file, unsigned line,
                                const char* function, size_t) {
  cudamux_assert_fail(message, file, line, function);
}
// Device heap and memory functions NVRTC declares without any include: the host's (the
// declarations match glibc's, so <cstdlib> / <cstring> may follow).
extern "C" void* malloc(size_t) noexcept;
extern "C" void free(void*) noexcept;
extern "C" void* memcpy(void*, const void*, size_t) noexcept;
extern "C" void* memset(void*, int, size_t) noexcept;

// --- conditional graph nodes (cudaGraphSetConditional, CUDA's device runtime) ---
typedef unsigned long long cudaGraphConditionalHandle;
static inline void cudaGraphSetConditional(cudaGraphConditionalHandle handle, unsigned int value) {
  cudamux_graph_set_conditional(handle, value);
}

// --- loop fission support (the compiler's generated "twin" functions use these) ---
namespace cudamux::fission {
template <class T>
struct slot {
  using type = T;
};
template <class T>
struct slot<const T> {
  using type = T;
};
template <class T>
struct slot<volatile T> {
  using type = T;
};
template <class T>
struct slot<const volatile T> {
  using type = T;
};
// Per-thread storage of a variable declared `const T`: written once per thread by the twin.
template <class T>
using slot_t = typename slot<T>::type;
}  // namespace cudamux::fission

// --- kernels: the thunk that runs a block's threads as a loop ---
#ifdef __CUDAMUX_MEMCHECK__
// The memory checks read threadIdx from TLS: its store must not sink out of the thread loop.
#define CUDAMUX_THREAD_STORED() __asm__ __volatile__("" ::: "memory")
#else
#define CUDAMUX_THREAD_STORED()
#endif
namespace cudamux::detail {
template <class T, T... I>
struct iseq {};
template <unsigned I, class T>
struct leaf {
  T v;
};
template <class S, class... A>
struct pack;
template <unsigned... I, class... A>
struct pack<iseq<unsigned, I...>, A...> : leaf<I, A>... {};

template <unsigned N>
struct layout {
  unsigned size[N ? N : 1];
  unsigned offset[N ? N : 1];
  unsigned total;
};
template <class... A>
constexpr layout<sizeof...(A)> make_layout() {
  layout<sizeof...(A)> l{};
  const unsigned sizes[] = {static_cast<unsigned>(sizeof(A))..., 0u};
  const unsigned aligns[] = {static_cast<unsigned>(alignof(A))..., 1u};
  unsigned at = 0;
  for (unsigned i = 0; i < sizeof...(A); ++i) {  // CUDA packs each parameter at its alignment
    at = (at + aligns[i] - 1) / aligns[i] * aligns[i];
    l.size[i] = sizes[i];
    l.offset[i] = at;
    at += sizes[i];
  }
  l.total = at;
  return l;
}

// K: the kernel as written (its address names it). Flags: CUDAMUX_KERNEL_*. B: with
// CUDAMUX_KERNEL_PER_BLOCK, K's fissioned twin that runs a whole block per call.
template <auto K, unsigned Flags = 0, auto B = nullptr>
struct kernel;
template <class... A, void (*K)(A...), unsigned Flags, auto B>
struct kernel<K, Flags, B> {
  static constexpr layout<sizeof...(A)> lay = make_layout<A...>();
  template <unsigned... I>
  __attribute__((always_inline)) static inline void run(const char* p, unsigned start,
                                                        iseq<unsigned, I...>) {
    pack<iseq<unsigned, I...>, A...> args;
    (__builtin_memcpy(&static_cast<leaf<I, A>&>(args).v, p + lay.offset[I], sizeof(A)), ...);
    if constexpr ((Flags & CUDAMUX_KERNEL_PER_BLOCK) != 0) {
      // Fissioned: the twin loops over the block's threads itself.
      if (start == 0) B(static_cast<leaf<I, A>&>(args).v...);
      return;
    } else if constexpr ((Flags & CUDAMUX_KERNEL_FLAT) != 0) {
      // threadIdx is the twin's parameter: a loop variable, never stored.
      const uint3 fd = blockDim;
      const unsigned fn = fd.x * fd.y * fd.z;
      if (fd.y == 1 && fd.z == 1) {
        const unsigned base = blockIdx.x * fd.x;
        if (base <= 0xFFFFF000u && fn <= 1024u) {
          // Same code, but the compiler learns that `blockIdx.x * blockDim.x + threadIdx.x`
          // cannot wrap (launches have at most 1024 threads per block): unsigned indices
          // become affine and the loop vectorises.
          for (unsigned t = start; t < fn; ++t)
            B(uint3{t, 0u, 0u}, static_cast<leaf<I, A>&>(args).v...);
        } else {
          for (unsigned t = start; t < fn; ++t)
            B(uint3{t, 0u, 0u}, static_cast<leaf<I, A>&>(args).v...);
        }
        return;
      }
      unsigned x = 0, y = 0, z = 0;
      for (unsigned t = 0; t < fn; ++t) {
        if (t >= start) B(uint3{x, y, z}, static_cast<leaf<I, A>&>(args).v...);
        if (++x == fd.x) {
          x = 0;
          if (++y == fd.y) {
            y = 0;
            ++z;
          }
        }
      }
      return;
    }
    const uint3 bd = blockDim;
    const unsigned n = bd.x * bd.y * bd.z;
    if (bd.y == 1 && bd.z == 1) {
      // 1-D blocks: y and z stay 0, only x changes per thread. Without reachable barriers the
      // loop has no exit but its end, so the compiler can keep threadIdx.x in a register and
      // vectorise across threads.
      threadIdx.y = 0;
      threadIdx.z = 0;
      if constexpr ((Flags & CUDAMUX_KERNEL_NO_BARRIERS) != 0) {
        for (unsigned t = start; t < n; ++t) {
          threadIdx.x = t;
          CUDAMUX_THREAD_STORED();
          K(static_cast<leaf<I, A>&>(args).v...);
        }
      } else {
        for (unsigned t = start; t < n; ++t) {
          threadIdx.x = t;
          CUDAMUX_THREAD_STORED();
          K(static_cast<leaf<I, A>&>(args).v...);
          if (__builtin_expect(cudamux_handed_off != 0, 0)) return;
        }
      }
      return;
    }
    unsigned x = start % bd.x;
    unsigned y = (start / bd.x) % bd.y;
    unsigned z = start / (bd.x * bd.y);
    for (unsigned t = start; t < n; ++t) {
      threadIdx = uint3{x, y, z};
      CUDAMUX_THREAD_STORED();
      K(static_cast<leaf<I, A>&>(args).v...);
      if constexpr ((Flags & CUDAMUX_KERNEL_NO_BARRIERS) == 0) {
        if (__builtin_expect(cudamux_handed_off != 0, 0)) return;
      }
      if (++x == bd.x) {
        x = 0;
        if (++y == bd.y) {
          y = 0;
          ++z;
        }
      }
    }
  }
  static void loop(const void* p, unsigned start) {
    // The compiler's own index sequence (no <utility>: the prelude stands alone).
#ifdef __clang__
    run(static_cast<const char*>(p), start, __make_integer_seq<iseq, unsigned, sizeof...(A)>{});
#else
    run(static_cast<const char*>(p), start, iseq<unsigned, __integer_pack(sizeof...(A))...>{});
#endif
  }
  static cudamux_kernel_desc desc(int max_threads, int min_blocks, const char* expr,
                                  unsigned static_shared = 0, unsigned shared_used = 0) {
    return cudamux_kernel_desc{reinterpret_cast<const void*>(K),
                               &loop,
                               static_cast<unsigned>(sizeof...(A)),
                               lay.size,
                               lay.offset,
                               lay.total,
                               max_threads,
                               min_blocks,
                               expr,
                               Flags,
                               static_shared,
                               shared_used};
  }
};
template <auto K, unsigned Flags = 0, auto B = nullptr>
inline const cudamux_kernel_desc entry(int max_threads, int min_blocks, const char* expr,
                                       unsigned static_shared = 0, unsigned shared_used = 0) {
  static_assert(sizeof(K) != 0, "");
  return kernel<K, Flags, B>::desc(max_threads, min_blocks, expr, static_shared, shared_used);
}
template <class T>
struct is_kernel_ptr {
  static constexpr bool value = false;
};
template <class... A>
struct is_kernel_ptr<void (*)(A...)> {
  static constexpr bool value = true;
};
// A name expression: a kernel (runnable entry) or a __device__ variable (address only).
template <auto P>
inline const cudamux_kernel_desc named(const char* expr) {
  if constexpr (is_kernel_ptr<decltype(P)>::value) {
    return kernel<P>::desc(0, 0, expr);
  } else {
    return cudamux_kernel_desc{static_cast<const void*>(P), nullptr, 0, nullptr, nullptr, 0, 0, 0, expr, 0, 0, 0};
  }
}
#if defined(__clang__)
template <unsigned N>
using make_param_seq = __make_integer_seq<iseq, unsigned, N>;
#else
template <unsigned N>
using make_param_seq = iseq<unsigned, __integer_pack(N)...>;
#endif
template <auto K>
inline const cudamux_kernel_desc launch_entry = kernel<K>::desc(0, 0, nullptr);
// Each argument converted to its parameter's type, at the parameter's offset.
template <class P, class A>
inline void put_param(char* at, A&& arg) {
  const P value = static_cast<P>(static_cast<A&&>(arg));
  __builtin_memcpy(at, &value, sizeof(P));
}
template <class... P, class... A, unsigned... I>
inline void put_params(char* buffer, const unsigned* offsets, iseq<unsigned, I...>, A&&... args) {
  (put_param<P>(buffer + offsets[I], static_cast<A&&>(args)), ...);
}
template <class... P, class... A>
inline cudaError_t device_launch_of(void (*)(P...), dim3 grid, dim3 block, unsigned long long shared,
                                    cudaStream_t stream, const cudamux_kernel_desc* entry, A&&... args) {
  static_assert(sizeof...(P) == sizeof...(A), "a kernel launched with the wrong number of arguments");
  constexpr layout<sizeof...(P)> lay = make_layout<P...>();
  static_assert(lay.total <= CUDAMUX_CDP_PARAMS_MAX, "kernel parameters beyond 4 KiB");
  char* buffer = static_cast<char*>(cudamux_cdp_parameter_buffer_for(
      entry, cudamux_u3{grid.x, grid.y, grid.z}, cudamux_u3{block.x, block.y, block.z},
      static_cast<unsigned>(shared)));
  if (buffer == nullptr) return static_cast<cudaError_t>(2);  // cudaErrorMemoryAllocation
  put_params<P...>(buffer, lay.offset, make_param_seq<sizeof...(P)>{}, static_cast<A&&>(args)...);
  return static_cast<cudaError_t>(cudamux_cdp_launch(buffer, stream));
}
// A kernel launched from device code (dynamic parallelism): the mock's compiler rewrites
// `k<<<grid, block, shared, stream>>>(args...)` into `device_launch<(&k)>(grid, block, shared,
// stream, args...)`. The kernel's table entry is made here (a template instantiated only by
// such a launch is in no other table); the arguments are converted to the kernel's parameter
// types and packed as a host launch packs them; the child grid runs after the launching grid
// (device runtime, cudamux_cdp_launch).
template <auto K, class... A>
inline cudaError_t device_launch(dim3 grid, dim3 block, unsigned long long shared,
                                 cudaStream_t stream, A&&... args) {
  return device_launch_of(K, grid, block, shared, stream, &launch_entry<K>, static_cast<A&&>(args)...);
}
}  // namespace cudamux::detail

// Builtin headers a program includes add more (cooperative_groups, fp16, ...).
