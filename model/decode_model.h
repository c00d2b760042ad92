// The decode family's model (first mechanistic version): the memory-bound regime with splits, from
// the traits (kernels/traits/decode_traits.h) and the same coefficients as every family
// (dram_efficiency, l2_efficiency, fp32/tensor efficiencies, block_latency_cycles,
// launch_overhead_us). Host-only C++17. docs/model.md, "Decode" says what each term stands for.
//
//   blocks     = K/V entries x row tiles x splits, k = blocks per SM (occupancy from the traits),
//              waves of SMs x k blocks;
//   per block  streams its chunk of K and V (2 x chunk keys x d x element bytes) at most at
//              R_block = kWarps x (tile bytes) / t_tile, t_tile = one warp's serial work on a tile
//              (mma.sync and ldmatrix latencies along the chain for 16-bit, the instruction count at
//              one per cycle for fp32 SIMT, plus the softmax and the copies' issue);
//   wave time  = max(smax_m(DRAM: n x block bytes / (DRAM bandwidth x dram_efficiency),
//                           stream: block bytes / R_block),
//                    compute: k x block FLOPs / (the pipe's rate x its efficiency))
//              (smax_m with memory_overlap_exponent: the bandwidth falls off gradually as the
//               blocks get fewer), plus once the write-back of the L2's dirty lines (L2 bytes)
//              + block_latency_cycles / clock (a block's start, first tile and merge);
//              row tiles after the first of a chunk read its K/V from L2 (they run together:
//              row tile fastest in the grid), at L2 bandwidth;
//   combine    (splits > 1) the workspace written and read once through L2, one more launch;
//   time       = sum of waves + combine + launch_overhead_us.
// pick_decode_splits evaluates every split count whose chunks keep at least the traits'
// kMinChunkTiles key tiles per warp and keeps the fastest (ties: the fewer splits, within 1%).
#pragma once

#include <string>

#include "kernels/traits/tile_config.h"
#include "model/coefficients.h"
#include "model/gpu_spec.h"

namespace flashtune::model {

struct DecodePrediction {
  std::string refusal;  // non-empty: the config cannot serve the workload on this GPU
  int splits = 0;
  long long blocks = 0;
  int blocks_per_sm = 0;
  double waves = 0;
  double dram_bytes = 0, l2_bytes = 0, workspace_bytes = 0;
  double stream_bytes_per_s_per_block = 0;  // R_block
  double split_kernel_s = 0, combine_s = 0, launch_s = 0, time_s = 0;
  std::string bound;  // "dram", "stream" (too few blocks for the bandwidth), "compute", "l2"
};

// Workload: B = batch x query heads, N = query rows per head, kv_len keys, kv_group query heads
// per K/V head. splits <= 0: the traits' default for this GPU's SM count.
DecodePrediction predict_decode(const Workload& w, const TileConfig& c, const GpuSpec& gpu, const Coefficients& k,
                                int splits);

// The split count with the least predicted time (chunks of at least kMinChunkTiles tiles per warp).
DecodePrediction pick_decode_splits(const Workload& w, const TileConfig& c, const GpuSpec& gpu, const Coefficients& k);

}  // namespace flashtune::model
