// The decode family's model: the memory-bound regime with splits, from the traits
// (kernels/traits/decode_traits.h: shape, kv_tile_bytes, smem_bytes, registers_estimate, geometry)
// and the coefficients (model/coefficients.h): the shared l2_efficiency, latency_warps and
// launch_overhead_us, and the decode family's own six (stream_dram_efficiency, stream_knee_blocks,
// cold_l2_dirty_fraction, decode_block_cycles, combine_cycles, combine_split_cycles), fitted on the
// H100 split sweeps by `flashtune fit --decode`. Host-only C++17. docs/model.md, "Decode".
//
//   blocks     = K/V entries x row tiles x splits, k = blocks per SM (occupancy from the traits),
//                in waves of SMs x k blocks;
//   R_block    one block's streaming rate, kWarps x (K + V tile bytes) / t_tile, t_tile a warp's
//              serial work on a tile (mma.sync / ldmatrix steps for 16-bit, the fp32 instruction
//              count stretched by latency_warps / resident warps for SIMT, plus a fixed part);
//   per wave   n blocks read n / row tiles chunks (streams) at
//              DRAM x stream_dram_efficiency x streams / (streams + stream_knee_blocks);
//              wave time = max(its bytes over that rate, one block's chunk / R_block)
//                          + decode_block_cycles; the first wave also carries the L2's dirty lines
//              (cold_l2_dirty_fraction x L2 bytes) and Q, O;
//   L2         row tiles after the first of a chunk read it from L2: the split kernel takes at
//              least those bytes over L2 bandwidth x l2_efficiency;
//   combine    (splits > 1) the fp32 partials written and read once through L2, plus
//              combine_cycles + combine_split_cycles x splits;
//   time       = split kernel + combine + launch_overhead_us.
// pick_decode_splits evaluates every split count whose chunks keep at least the traits'
// kMinSearchChunkTiles key tiles per warp and keeps the fastest (equal times: the fewer splits). No
// margin in favour of fewer splits: what more splits cost (the combine, the blocks' fixed cost,
// the waves) is in the times.
#pragma once

#include <optional>
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
  // R_block's tile: a warp's cycles on one tile of Bc keys, and on the SIMT path the warp
  // instructions it issues there (the traits' count and the compiled extras) and their stretch
  // (latency_warps / resident warps, at least 1); 0 on the 16-bit path.
  double tile_cycles = 0, tile_traits_instructions = 0, tile_compiled_instructions = 0, tile_stretch = 0;
  // DRAM bytes by kind: K/V once per K/V head, Q and O, the L2's dirty lines written back.
  double kv_bytes = 0, qo_bytes = 0, writeback_bytes = 0;
  double split_kernel_s = 0, combine_s = 0, launch_s = 0, time_s = 0;
  bool cluster_combine = false;  // the splits merge inside their cluster (no workspace, no combine kernel)
  std::string bound;  // "dram", "stream" (too few blocks for the bandwidth, or the SIMT math per tile), "l2"
};

// How a launch runs beyond its workload and config: what a recorded timing ran with
// (fit/decode_sweeps.h fills it from the sweep's lines); the defaults are what a launch does today.
struct DecodeRunState {
  // Whether the launch streams K/V with the L2 evict-first policy; unset, the traits' rule (what the
  // kernel launches, traits::Decode::evict_first).
  std::optional<bool> evict_first;
  // Whether the call starts with the L2 full of dirty lines (the harness' write flush,
  // tuner/timing_harness.h L2Flush::Write, every profile's method) that are written back beside its
  // first reads; false after the read flush, clean lines only.
  bool dirty_l2 = true;
  // Whether a launch of 2..16 splits merges them inside a thread-block cluster; unset, the traits'
  // rule for the GPU (traits::Decode::cluster_combine: what the launch does where the device
  // co-schedules the clusters). False for timings of the kernels before the cluster combine.
  std::optional<bool> cluster_combine;
};

// The warp instructions one warp issues on one tile of Bc keys on the SIMT (fp32) path, as the traits
// count them (kernels/traits/decode_traits.h: geometry's per-tile FFMA, other FP32, exponentials and
// shuffles per warp, and simt_shared_loads_per_lane_tile); 0 for the 16-bit path, whose tile time
// is its chain of mma.sync steps. What the compiled code issues beyond it (address arithmetic, the
// -inf guards, the ring's waits) is the compiled-instruction table's per_warp_tile for the config
// (model/compiled_instruction_table.h, measured with ncu: fit/decode_instruction_fit.h).
double decode_simt_warp_instructions_per_tile(const TileConfig& c);

// Workload: B = batch x query heads, N = query rows per head, kv_len keys, kv_group query heads
// per K/V head. splits <= 0: the traits' default for this GPU's SM count.
DecodePrediction predict_decode(const Workload& w, const TileConfig& c, const GpuSpec& gpu, const Coefficients& k,
                                int splits, const DecodeRunState& run = {});

// The split count with the least predicted time (chunks of at least kMinSearchChunkTiles tiles per warp).
DecodePrediction pick_decode_splits(const Workload& w, const TileConfig& c, const GpuSpec& gpu, const Coefficients& k,
                                    const DecodeRunState& run = {});

}  // namespace flashtune::model
