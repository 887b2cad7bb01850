// Fixture: cooperative groups: grid sync, tiled partitions.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;
extern "C" __global__ void cg_kernel(int* data, int* out) {
  cg::grid_group grid = cg::this_grid();
  cg::thread_block block = cg::this_thread_block();
  auto tile = cg::tiled_partition<32>(block);
  int v = data[grid.thread_rank()];
  int s = cg::reduce(tile, v, cg::plus<int>());
  if (tile.thread_rank() == 0) atomicAdd(out, s);
  grid.sync();
  block.sync();
  if (grid.thread_rank() == 0) out[1] = *out;
}
