#include "model/decode_model.h"

#include <algorithm>
#include <cmath>

#include "kernels/traits/decode_traits.h"
#include "model/occupancy.h"

namespace flashtune::model {

namespace {
using traits::Decode;

// One warp's serial work on one tile of Bc keys, in cycles. 16-bit: the dependent mma.sync /
// ldmatrix steps of Q K^T (d / 16 k-steps) and P V (Bc / 16), ~33 cycles each on Hopper, per m16
// tile; fp32: one instruction per cycle of the warp's FP32 work (the traits' counts). Beside it a
// fixed part for the softmax's dependent shuffles and exponentials, the cp.async issue with its
// address arithmetic and the ring's wait: kTileFixedCycles, set so that one block of the bf16
// d = 128 Br 16 Bc 32 config streams the ~80 GB/s measured on the H100 with 1 to 4 blocks per
// K/V head (docs/results/h100-decode-bench-bf16-run1.jsonl, 8 K/V heads x 32768 keys).
constexpr double kStepCycles = 33.0;
constexpr double kTileFixedCycles = 1300.0;

double tile_cycles(const TileConfig& c) {
  if (Decode::uses_mma(c.dtype)) return kStepCycles * (c.d / 16.0 + c.Bc / 16.0) * (c.Br / 16.0) + kTileFixedCycles;
  const KernelGeometry g = Decode::geometry(c);
  const TileInstructionCounts& n = g.per_kv_tile;
  const double warp_instructions = (n.ffma + n.fp32_other + n.exp + n.shuffles) / 32.0 / Decode::kWarps;
  return warp_instructions + kTileFixedCycles;
}
}  // namespace

DecodePrediction predict_decode(const Workload& w, const TileConfig& c, const GpuSpec& gpu, const Coefficients& k,
                                int splits) {
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

  const double kv_bytes = 2.0 * e * double(kv_entries) * double(keys) * c.d;
  const double qo_bytes = 2.0 * e * double(w.B) * double(w.N) * c.d;
  // A cold start: the L2 holds the previous work's dirty lines (in the measurements, the flush's
  // 2 x L2 bytes of zeros), written back to DRAM while this kernel reads. About 17 us of a 134 MB
  // call on the H100, the same for SDPA's kernels timed the same way.
  const double writeback_bytes = double(gpu.l2_bytes);
  p.dram_bytes = kv_bytes + qo_bytes + writeback_bytes;
  p.l2_bytes = kv_bytes * (s.row_tiles - 1);
  // A block's K/V bytes (chunks of equal length; the last may be shorter) and its math.
  const double block_bytes = kv_bytes / double(kv_entries * s.splits);
  const double block_keys = double(keys) / s.splits;
  p.stream_bytes_per_s_per_block =
      Decode::kWarps * double(Decode::kv_tile_bytes(c)) * 2.0 / (tile_cycles(c) / clock);
  const double block_flops = Decode::uses_mma(c.dtype) ? 4.0 * c.Br * block_keys * c.d : 0.0;
  const double block_fp32 = Decode::uses_mma(c.dtype) ? 0.0 : 2.0 * c.Br * block_keys * c.d;  // FFMA
  const double tensor_rate = Decode::uses_mma(c.dtype)
                                 ? gpu.tensor_flops_per_clock_per_sm(c.dtype) * clock * k.tensor_efficiency
                                 : 1.0;
  const double fp32_rate = gpu.fp32_lanes_per_sm * clock * k.fp32_efficiency;
  const double dram_rate = gpu.dram_bytes_per_s() * k.dram_efficiency;
  const double block_latency = k.block_latency_cycles / clock;

  const long long slots = static_cast<long long>(gpu.sm_count) * occ.blocks_per_sm;
  p.waves = double(s.blocks) / double(slots);
  // DRAM and the blocks' streaming limit overlap in part: with too few blocks the bandwidth
  // falls off gradually, not at a corner (H100: 64 blocks of one K/V stream each pulled 2.5 TB/s,
  // 128 blocks 2.85 TB/s, where 64 x ~80 GB/s would allow both). smax with the fitted
  // memory_overlap_exponent, as the tiled families combine their SM work and memory terms.
  const double q = k.memory_overlap_exponent;
  auto smax = [q](double a, double b) { return std::pow(std::pow(a, q) + std::pow(b, q), 1.0 / q); };
  double dram_t = writeback_bytes / dram_rate, stream_t = 0, compute_t = 0, total = dram_t;
  for (long long left = s.blocks; left > 0; left -= slots) {
    const long long n = std::min(left, slots);
    const double per_sm = std::ceil(double(n) / gpu.sm_count);
    // Row tiles after the first of a chunk read it from L2 (counted below, not here).
    const double dram = double(n) / s.row_tiles * block_bytes / dram_rate;
    const double stream = block_bytes / p.stream_bytes_per_s_per_block;
    const double compute = per_sm * (block_flops / tensor_rate + block_fp32 / fp32_rate);
    dram_t += dram;
    stream_t += stream;
    compute_t += compute;
    total += std::max(smax(dram, stream), compute) + block_latency;
  }
  const double l2_t = p.l2_bytes / (gpu.l2_bytes_per_s() * k.l2_efficiency);
  total = std::max(total, l2_t + block_latency);
  p.split_kernel_s = total;
  p.bound = l2_t > std::max({dram_t, stream_t, compute_t}) ? "l2"
            : dram_t >= std::max(stream_t, compute_t)      ? "dram"
            : stream_t >= compute_t                        ? "stream"
                                                           : "compute";
  if (s.splits > 1) {
    p.workspace_bytes = 4.0 * double(kv_entries) * s.rows * s.splits * (c.d + 2.0);
    // Written by the split kernel, read by the combine, both through L2; one more launch.
    p.combine_s = 2.0 * p.workspace_bytes / (gpu.l2_bytes_per_s() * k.l2_efficiency) + block_latency +
                  k.launch_overhead_us * 1e-6;
  }
  p.launch_s = k.launch_overhead_us * 1e-6;
  p.time_s = p.split_kernel_s + p.combine_s + p.launch_s;
  return p;
}

DecodePrediction pick_decode_splits(const Workload& w, const TileConfig& c, const GpuSpec& gpu, const Coefficients& k) {
  DecodePrediction best = predict_decode(w, c, gpu, k, 1);
  if (!best.refusal.empty()) return best;
  const Decode::Shape one = Decode::shape(c, w.B / w.kv_group, w.kv_group, w.kv_group, w.N, w.keys(), 1);
  // The split counts whose chunks keep at least the traits' kMinChunkTiles key tiles per warp
  // (below, the H100 sweeps ran 5-10% slower than the model says: per-block start-up the model
  // does not yet count).
  const long long most = std::max<long long>(1, std::min<long long>(one.block_tiles / Decode::kMinChunkTiles, 1024));
  int last = 1;
  for (long long asked = 2; asked <= most; ++asked) {
    const int used = Decode::shape(c, w.B / w.kv_group, w.kv_group, w.kv_group, w.N, w.keys(), int(asked)).splits;
    if (used == last) continue;
    last = used;
    const DecodePrediction p = predict_decode(w, c, gpu, k, used);
    if (p.time_s < 0.99 * best.time_s) best = p;
  }
  return best;
}

}  // namespace flashtune::model
