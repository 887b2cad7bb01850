// Built-in (cudamux mock): cooperative_groups basics: thread_block, tiled_partition<N>
// (shfl, vote, sync) and this_grid() with grid-wide sync in cooperative launches.
#pragma once
// The grid's workspace of a cooperative launch, null otherwise (the device runtime sets it).
extern "C" __thread void* cudamux_grid_workspace __attribute__((tls_model("initial-exec")));
namespace cooperative_groups {
namespace details {
inline unsigned linear_rank() {
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
}  // namespace details
class thread_group {
 public:
  unsigned long long size() const { return size_; }
  unsigned long long num_threads() const { return size_; }
  unsigned long long thread_rank() const { return details::linear_rank() % size_; }
  void sync() const {
    if (size_ <= 32) __syncwarp(); else __syncthreads();
  }
 protected:
  explicit thread_group(unsigned long long n) : size_(n) {}
  unsigned long long size_;
};
class thread_block : public thread_group {
 public:
  thread_block() : thread_group(static_cast<unsigned long long>(blockDim.x) * blockDim.y * blockDim.z) {}
  void sync() const { __syncthreads(); }
  unsigned long long thread_rank() const { return details::linear_rank(); }
  dim3 group_index() const { return dim3(blockIdx); }
  dim3 thread_index() const { return dim3(threadIdx); }
  dim3 group_dim() const { return dim3(blockDim); }
  dim3 dim_threads() const { return dim3(blockDim); }
};
inline thread_block this_thread_block() { return thread_block(); }
inline void sync(const thread_block& g) { g.sync(); }
inline void sync(const thread_group& g) { g.sync(); }

template <unsigned N, class Parent = void>
class thread_block_tile : public thread_group {
  static_assert(N != 0 && (N & (N - 1)) == 0 && N <= 1024, "tile size must be a power of two");
 public:
  thread_block_tile() : thread_group(N) {}
  static constexpr unsigned long long size() { return N; }
  static constexpr unsigned long long num_threads() { return N; }
  unsigned long long thread_rank() const { return details::linear_rank() % N; }
  unsigned long long meta_group_rank() const { return details::linear_rank() / N; }
  unsigned long long meta_group_size() const {
    const unsigned long long n = static_cast<unsigned long long>(blockDim.x) * blockDim.y * blockDim.z;
    return (n + N - 1) / N;
  }
  void sync() const {
    if constexpr (N <= 32) __syncwarp(); else __syncthreads();
  }
  template <class T> T shfl(T v, int src) const { return __shfl_sync(0xffffffffu, v, src, N); }
  template <class T> T shfl_down(T v, unsigned d) const { return __shfl_down_sync(0xffffffffu, v, d, N); }
  template <class T> T shfl_up(T v, unsigned d) const { return __shfl_up_sync(0xffffffffu, v, d, N); }
  template <class T> T shfl_xor(T v, int m) const { return __shfl_xor_sync(0xffffffffu, v, m, N); }
  unsigned ballot(int p) const {
    const unsigned b = __ballot_sync(0xffffffffu, p);
    return N >= 32 ? b : (b >> (details::linear_rank() % 32 / N * N)) & ((1u << N) - 1u);
  }
  int any(int p) const { return ballot(p) != 0; }
  int all(int p) const {
    const unsigned b = ballot(p);
    const unsigned n = static_cast<unsigned>(meta_group_size() > 0 ? N : N);
    return b == (n >= 32 ? 0xffffffffu : ((1u << n) - 1u));
  }
};
template <unsigned N, class P>
inline thread_block_tile<N, P> tiled_partition(const P&) { return thread_block_tile<N, P>(); }

class grid_group {
 public:
  unsigned long long size() const {
    return static_cast<unsigned long long>(gridDim.x) * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z;
  }
  unsigned long long num_threads() const { return size(); }
  unsigned long long thread_rank() const {
    const unsigned long long b = blockIdx.x + static_cast<unsigned long long>(gridDim.x) * (blockIdx.y + static_cast<unsigned long long>(gridDim.y) * blockIdx.z);
    return b * blockDim.x * blockDim.y * blockDim.z + details::linear_rank();
  }
  // A cooperative launch gets a zeroed workspace (the one nvcc's inlined grid.sync() reads
  // through %envreg1/2); other launches get none, and sync() traps as on a GPU.
  bool is_valid() const { return cudamux_grid_workspace != nullptr; }
  void sync() const {
    if (!is_valid()) __trap();
    // One counter for the grid: every block's first thread adds 1, block 0 adds 2^31 - (n - 1),
    // so the top bit flips when the last block arrives; each waits for that flip.
    unsigned* bar = reinterpret_cast<unsigned*>(static_cast<char*>(cudamux_grid_workspace) + 4);
    __syncthreads();
    if (details::linear_rank() == 0) {
      const unsigned n = gridDim.x * gridDim.y * gridDim.z;
      const bool first = blockIdx.x == 0 && blockIdx.y == 0 && blockIdx.z == 0;
      const unsigned old = __atomic_fetch_add(bar, first ? 0x80000000u - (n - 1) : 1u, __ATOMIC_ACQ_REL);
      while (((old ^ __atomic_load_n(bar, __ATOMIC_ACQUIRE)) & 0x80000000u) == 0) cudamux_yield();
    }
    __syncthreads();
  }
};
inline grid_group this_grid() { return grid_group(); }

template <class T> struct plus { T operator()(T a, T b) const { return a + b; } };
template <class T> struct less { T operator()(T a, T b) const { return b < a ? b : a; } };
template <class T> struct greater { T operator()(T a, T b) const { return a < b ? b : a; } };
template <class T> struct bit_and { T operator()(T a, T b) const { return a & b; } };
template <class T> struct bit_or { T operator()(T a, T b) const { return a | b; } };
template <class T> struct bit_xor { T operator()(T a, T b) const { return a ^ b; } };
template <unsigned N, class P, class T, class Op>
inline T reduce(const thread_block_tile<N, P>& g, T v, Op op) {
  for (unsigned d = N / 2; d > 0; d /= 2) v = op(v, g.shfl_xor(v, static_cast<int>(d)));
  return v;
}
}  // namespace cooperative_groups
