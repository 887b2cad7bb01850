// Fixture (compute_90): thread block clusters, distributed shared memory, cluster barrier.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void __cluster_dims__(2, 1, 1) cluster_kernel(int* out) {
  __shared__ int smem[32];
  cg::cluster_group cluster = cg::this_cluster();
  unsigned rank = cluster.block_rank();
  smem[threadIdx.x] = rank;
  cluster.sync();
  int* other = cluster.map_shared_rank(smem, rank ^ 1);
  out[rank * 32 + threadIdx.x] = other[threadIdx.x];
  cluster.sync();
}
