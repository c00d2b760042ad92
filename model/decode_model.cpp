#include "model/decode_model.h"

#include <algorithm>
#include <cmath>

#include "kernels/traits/decode_traits.h"
#include "model/compiled_instruction_table.h"
#include "model/occupancy.h"

namespace flashtune::model {

namespace {
using traits::Decode;

// One warp's serial work on one tile of Bc keys, in cycles. 16-bit: the dependent mma.sync /
// ldmatrix steps of Q K^T (d / 16 k-steps) and P V (Bc / 16), ~33 cycles each on Hopper, per m16
// tile; fp32: the traits' instruction counts and shared loads at one per cycle of the warp, stretched by
// latency_warps / resident warps where too few warps share a scheduler to hide the FFMA and
// shared-memory latencies (the tiled families' rule: one decode block of 4 warps per SM has one
// warp per scheduler). Beside it a fixed part for the softmax's dependent shuffles and
// exponentials, the cp.async issue with its address arithmetic and the ring's wait:
// kTileFixedCycles, set so that one block of the bf16 d = 128 Br 16 Bc 32 config streams the
// ~79 GB/s measured on the H100 with 1 block per K/V head (8 K/V heads x 16384 keys: 0.1125 ms for
// 8 x 8.4 MB; docs/results/h100-decode-bench-bf16-run1.jsonl).
constexpr double kStepCycles = 33.0;
// The share of the L2's dirty lines that a K/V stream read with the evict-first policy
// (traits::Decode::evict_first) still writes back: the H100 calls of 67-134 MB ran 3.8-5.3 us
// faster with it, about half the ~10 us that the whole write-back (cold_l2_dirty_fraction x L2)
// costs at the first wave's rate (docs/results/h100-decode-stream-flags-*.txt).
constexpr double kEvictFirstWriteback = 0.5;
constexpr double kTileFixedCycles = 1300.0;
// The same fixed part where the K/V stream carries the evict-first policy: one block streams
// slower then (8 K/V heads x 16384 keys, one split: 0.157 ms, ~53 GB/s a block, against 0.1125 ms
// without the policy; docs/results/h100-decode-bench-bf16-fe21539.jsonl), as does every launch of
// fewer blocks than about half the SMs (1.2-1.6x), while launches of more blocks run 5-20% faster
// (the write-back above). The per-block rate is what sets the split count where blocks are few.
constexpr double kEvictFirstTileFixedCycles = 2100.0;

// The fixed parts above were measured on tiles of 32 copies per lane (bf16 d = 128); a tile of
// other size pays decode_copy_cycles per copy more or less.
constexpr int kReferenceCopies = 32;
// The warp instructions that reference tile (bf16 d = 128, Br 16, Bc 32) issues, per warp and tile:
// ncu's executed-instruction count of its launches at 1024 and 4096 keys, differenced (H200,
// docs/results/h200-decode-instructions.jsonl: 17.08 M more instructions for 24 more tiles on each
// of 1024 warps; test DecodeModel.ReferenceTileIssueIsTheMeasuredOne).
constexpr double kReferenceTileWarpInstructions = 695.0;

// A warp's cycles on one tile (and, for SIMT, what they are made of: DecodePrediction's tile_*).
struct TileTime {
  double cycles = 0, traits = 0, compiled = 0, stretch = 0;
};

TileTime tile_time(const TileConfig& c, const Coefficients& k, int blocks_per_sm, bool evict_first) {
  const double fixed = (evict_first ? kEvictFirstTileFixedCycles : kTileFixedCycles) +
                       k.decode_copy_cycles * (Decode::copies_per_lane_tile(c) - kReferenceCopies);
  TileTime t;
  if (Decode::uses_mma(c.dtype)) {
    t.cycles = kStepCycles * (c.d / 16.0 + c.Bc / 16.0) * (c.Br / 16.0) + fixed;
    return t;
  }
  // SIMT: every instruction the warp issues on the tile, the traits' count and the compiled extras
  // (address arithmetic, the -inf guards, the cp.async issue and ring waits: the table's per-tile
  // row, measured), stretched where too few warps share a scheduler. The fixed part was measured on
  // the 16-bit reference tile and holds that tile's own issue (kReferenceTileWarpInstructions at one
  // block of kWarps warps per SM): only what it holds beyond that issue is added. The traits' count
  // plus the fixed part alone put the Br 16 tiles (2576 counted, 3471 issued) 19% fast on the H200.
  t.traits = decode_simt_warp_instructions_per_tile(c);
  t.compiled = shipped_compiled_instruction_table().lookup(c, t.traits).per_warp_tile;
  const double resident_warps = double(Decode::kWarps) * std::max(1, blocks_per_sm);
  t.stretch = std::max(1.0, k.latency_warps / resident_warps);
  const double reference_issue = kReferenceTileWarpInstructions * std::max(1.0, k.latency_warps / Decode::kWarps);
  t.cycles = (t.traits + t.compiled) * t.stretch + std::max(0.0, fixed - reference_issue);
  return t;
}
}  // namespace

double decode_simt_warp_instructions_per_tile(const TileConfig& c) {
  if (Decode::uses_mma(c.dtype)) return 0.0;
  const KernelGeometry g = Decode::geometry(c);
  const TileInstructionCounts& n = g.per_kv_tile;
  return (n.ffma + n.fp32_other + n.exp + n.shuffles) / 32.0 / Decode::kWarps + Decode::simt_shared_loads_per_lane_tile(c);
}

DecodePrediction predict_decode(const Workload& w, const TileConfig& c, const GpuSpec& gpu, const Coefficients& k,
                                int splits, const DecodeRunState& run) {
  DecodePrediction p;
  if (auto why = Decode::rejection(c)) {
    p.refusal = *why;
    return p;
  }
  if (w.d != c.d || w.dtype != c.dtype) {
    p.refusal = "config is for d=" + std::to_string(c.d) + " " + dtype_name(c.dtype);
    return p;
  }
  if (w.N > Decode::kMaxQueryRows || w.kv_group < 1 || w.B % w.kv_group != 0) {
    p.refusal = "decode serves N <= 64 query rows with B a multiple of kv_group";
    return p;
  }
  const Occupancy occ = compute_occupancy(gpu, Decode::kThreads, Decode::registers_estimate(c), Decode::smem_bytes(c));
  if (!occ.refusal.empty()) {
    p.refusal = occ.refusal;
    return p;
  }
  const long long keys = w.keys();
  // B = batch x query heads; per K/V entry, kv_group heads: batch x K/V heads = B / kv_group.
  const long long kv_entries = w.B / w.kv_group;
  if (splits <= 0) splits = Decode::default_splits(c, kv_entries, w.kv_group, w.kv_group, w.N, keys, gpu.sm_count);
  const Decode::Shape s = Decode::shape(c, kv_entries, w.kv_group, w.kv_group, w.N, keys, splits);
  const double e = dtype_bytes(c.dtype), clock = gpu.clock_hz();
  p.splits = s.splits;
  p.blocks = s.blocks;
  p.blocks_per_sm = occ.blocks_per_sm;

  // Bytes: K and V once per K/V head (the group's query heads are one block's packed rows), Q and
  // O once; the row tiles after the first of a chunk run beside it (row tile fastest in the grid)
  // and read its K/V from L2.
  const double kv_bytes = 2.0 * e * double(kv_entries) * double(keys) * c.d;
  const double qo_bytes = 2.0 * e * double(w.B) * double(w.N) * c.d;
  // A cold start: the L2's dirty lines of the previous work (in the measurements, the flush's
  // zeros) are written back to DRAM while the first wave reads.
  const bool evict_first = run.evict_first.value_or(Decode::evict_first(kv_bytes, double(gpu.l2_bytes)));
  const double writeback_bytes =
      run.dirty_l2 ? k.cold_l2_dirty_fraction * double(gpu.l2_bytes) * (evict_first ? kEvictFirstWriteback : 1.0) : 0.0;
  p.dram_bytes = kv_bytes + qo_bytes + writeback_bytes;
  p.l2_bytes = kv_bytes * (s.row_tiles - 1);
  // A block's K/V bytes (chunks of equal length; the last may be shorter).
  const double block_bytes = kv_bytes / double(kv_entries * s.splits);
  // R_block: what one block can stream alone (its warps' tiles over their serial work on them).
  const TileTime tile = tile_time(c, k, occ.blocks_per_sm, evict_first);
  p.tile_cycles = tile.cycles;
  p.tile_traits_instructions = tile.traits;
  p.tile_compiled_instructions = tile.compiled;
  p.tile_stretch = tile.stretch;
  p.kv_bytes = kv_bytes;
  p.qo_bytes = qo_bytes;
  p.writeback_bytes = writeback_bytes;
  p.stream_bytes_per_s_per_block = Decode::kWarps * double(Decode::kv_tile_bytes(c)) * 2.0 / (tile.cycles / clock);
  const double read_rate = gpu.dram_bytes_per_s() * k.stream_dram_efficiency;
  const double block_cost = k.decode_block_cycles / clock;

  // Waves of SMs x blocks per SM. A wave of n blocks reads n / row tiles distinct chunks (streams)
  // at read_rate x streams / (streams + knee), and no block faster than R_block: the too-few-blocks
  // regime (one split of 8 K/V heads: 8 blocks at ~79 GB/s each) and DRAM's (128 blocks: 3 TB/s).
  const long long slots = static_cast<long long>(gpu.sm_count) * occ.blocks_per_sm;
  p.waves = double(s.blocks) / double(slots);
  double dram_t = 0, stream_t = 0, total = 0;
  auto wave = [&](long long n, double extra_bytes, long long count) {
    if (n <= 0 || count <= 0) return;
    const double streams = double(n) / s.row_tiles;
    const double rate = read_rate * streams / (streams + k.stream_knee_blocks);
    const double dram = (streams * block_bytes + extra_bytes) / rate;
    // Blocks that share an SM share its stream: R_block is what the SM's schedulers issue for one
    // block's tiles, and a second block on the SM adds tiles, not issue slots. The wave lasts as
    // long as the SMs holding the most blocks (ceil(n / SMs)). H200, 12 heads x 65536 keys at
    // d = 64 (two blocks fit an SM): 11 splits, 132 blocks, 0.063 ms; 12 splits, 144 blocks (12 SMs
    // with two) 0.072; 22 splits, two on every SM, 0.064 (docs/results/h200-decode-sweep-bf16-write-43f12ce.jsonl).
    const double on_busiest_sm = std::ceil(double(n) / double(gpu.sm_count));
    const double stream = on_busiest_sm * block_bytes / p.stream_bytes_per_s_per_block;
    dram_t += double(count) * dram;
    stream_t += double(count) * stream;
    total += double(count) * (std::max(dram, stream) + block_cost);
  };
  // The first wave also carries the write-back and Q, O; full waves alike; then the last, partial one.
  const long long full = s.blocks / slots, rest = s.blocks % slots;
  const double extra = writeback_bytes + qo_bytes;
  if (full > 0) {
    wave(slots, extra, 1);
    wave(slots, 0.0, full - 1);
    wave(rest, 0.0, 1);
  } else {
    wave(rest, extra, 1);
  }
  const double l2_t = p.l2_bytes / (gpu.l2_bytes_per_s() * k.l2_efficiency);
  total = std::max(total, l2_t + block_cost);
  p.split_kernel_s = total;
  p.bound = l2_t > std::max(dram_t, stream_t) ? "l2" : dram_t >= stream_t ? "dram" : "stream";
  const bool in_cluster = s.splits >= 2 && s.splits <= Decode::kMaxClusterSplits && run.cluster_combine.value_or(Decode::cluster_combine(
      gpu.compute_capability(), s.splits, occ.blocks_per_sm, s.blocks, gpu.sm_count, gpu.max_active_clusters(s.splits)));
  if (in_cluster) {
    // The splits of a row tile merge in their cluster's shared memory after the slowest of them.
    p.cluster_combine = true;
    p.combine_s = k.cluster_combine_cycles / clock;
  } else if (s.splits > 1) {
    // The partials (max, sum and d floats of O per packed row and split), written by the split
    // kernel and read by the combine through L2; the combine's fixed part and its walk over the splits.
    p.workspace_bytes = 4.0 * double(kv_entries) * s.rows * s.splits * (c.d + 2.0);
    p.combine_s = 2.0 * p.workspace_bytes / (gpu.l2_bytes_per_s() * k.l2_efficiency) +
                  (k.combine_cycles + k.combine_split_cycles * s.splits) / clock;
  }
  p.launch_s = k.launch_overhead_us * 1e-6;
  p.time_s = p.split_kernel_s + p.combine_s + p.launch_s;
  return p;
}

DecodePrediction pick_decode_splits(const Workload& w, const TileConfig& c, const GpuSpec& gpu, const Coefficients& k,
                                    const DecodeRunState& run) {
  DecodePrediction best = predict_decode(w, c, gpu, k, 1, run);
  if (!best.refusal.empty()) return best;
  const Decode::Shape one = Decode::shape(c, w.B / w.kv_group, w.kv_group, w.kv_group, w.N, w.keys(), 1);
  // The split counts whose chunks keep at least the traits' kMinSearchChunkTiles key tiles per
  // warp (shorter chunks only add blocks' fixed costs and the combine's walk).
  const long long most =
      std::max<long long>(1, std::min<long long>(one.block_tiles / Decode::kMinSearchChunkTiles, 1024));
  int last = 1;
  for (long long asked = 2; asked <= most; ++asked) {
    const int used = Decode::shape(c, w.B / w.kv_group, w.kv_group, w.kv_group, w.N, w.keys(), int(asked)).splits;
    if (used == last) continue;
    last = used;
    const DecodePrediction p = predict_decode(w, c, gpu, k, used, run);
    if (p.time_s < best.time_s) best = p;
  }
  return best;
}

}  // namespace flashtune::model
