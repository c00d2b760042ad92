// warp_groups: the seed "warp-groups" report's design. A group of G lanes shares R = 2 adjacent
// query rows (the seed's two rows per group); lane g of the group holds the float4 chunks g, g + G,
// g + 2G, ... of those rows of Q (pre-scaled) and of O in registers, so every K or V chunk it
// reads from shared memory feeds R rows. Scores are summed across the group by a butterfly reduce-scatter
// (G - 1 shuffles per G keys leave lane g with the full score of key g of the chunk), so each
// exponential is computed once; P is broadcast back within the group by shuffles for P.V.
// K and V tiles in shared memory are read as float4: the G lanes of a group read G consecutive
// 16-byte chunks and the other groups of the warp read the same ones (broadcast), so the reads
// are conflict free without padding; the layout is plain only.
#pragma once

#include "traits_common.h"

namespace flashtune::traits {

struct WarpGroups {
  static constexpr Variant kVariant = Variant::WarpGroups;
  // Causal query tiles run in index order, light first (block_coords), on a tile-fastest grid.
  static constexpr bool kCausalHeavyFirst = false;

  // Lanes per row: each lane holds d/G floats of Q and of O (8, 8 and 16 for d = 32, 64, 128).
  static constexpr int group_lanes(const TileConfig& c) { return c.d == 32 ? 4 : 8; }
  static constexpr int float4s_per_lane(const TileConfig& c) { return c.d / (4 * group_lanes(c)); }
  // Query rows per group: 2 halves the shared-memory reads per FFMA (each chunk serves two rows).
  static constexpr int rows_per_group(const TileConfig&) { return 2; }
  static constexpr int threads(const TileConfig& c) { return c.Br / rows_per_group(c) * group_lanes(c); }
  // Tile row of the first of thread tid's R rows.
  static constexpr int first_row(int tid, int group, int rows) { return tid / group * rows; }
  static constexpr int kv_stride(const TileConfig& c) { return c.d; }
  static constexpr int k_offset(const TileConfig&) { return 0; }
  static constexpr int v_offset(const TileConfig& c) { return c.Bc * kv_stride(c); }
  static constexpr int smem_floats(const TileConfig& c) { return 2 * c.Bc * kv_stride(c); }
  static constexpr int smem_bytes(const TileConfig& c) { return 4 * smem_floats(c); }
  // Float offset of float4 chunk x of lane g in row j of a K or V tile.
  static constexpr int lane_chunk(int offset, int stride, int group, int j, int x, int g) {
    return offset + j * stride + (x * group + g) * 4;
  }

  // Registers per thread, for the model's occupancy (a profile's compiled value wins): the lane's
  // slices of Q and O for both rows (16 per float4 chunk), half the K/V tile staging
  // (kv_staging_registers, at the weight the calibration gave it), Bc^2/64 + Bc/4
  // for the score and partial-sum arrays of the fully unrolled chunk loops (ptxas keeps more of
  // them live as Bc grows: +90 from Bc = 32 to 64 at d <= 64), 66 for the rest and, for the 4-lane
  // groups of d = 32, 5 Bc / 8 - 3 more (the d = 32 kernels grew by 27-31 registers at Bc >= 32
  // with the inference operands); capped at what __launch_bounds__(threads, 1) leaves (128 at 512
  // threads). Calibrated on the ptxas report of the full build (tests/data/ptxas_registers_sm90.json,
  // nvcc 13.0, tests/kernels_registers_test.cpp): mean error 4%, worst 10%, the H200 and H100
  // blocks per SM of every compiled config right.
  static constexpr int registers_estimate(const TileConfig& c) {
    const int r = 66 + 16 * float4s_per_lane(c) + kv_staging_registers(c.Bc, c.d, threads(c)) / 2 + c.Bc * c.Bc / 64 +
                  c.Bc / 4 + (c.d == 32 ? 5 * c.Bc / 8 - 3 : 0);
    const int cap = launch_register_cap(threads(c), 1);
    return r < cap ? r : cap;
  }

  static constexpr TileFault fault(const TileConfig& c) {
    if (const TileFault f = common_fault(c, kVariant); f != TileFault::None) return f;
    if (c.layout != Layout::Plain) return TileFault::Layout;
    if (const TileFault f = thread_fault(threads(c)); f != TileFault::None) return f;
    return smem_fault(smem_bytes(c));
  }
  static std::optional<std::string> rejection(const TileConfig& c) {
    switch (const TileFault f = fault(c); f) {
      case TileFault::None: return std::nullopt;
      case TileFault::Layout:
        return "warp_groups supports layout plain only (its float4 K/V reads are already conflict free)";
      case TileFault::Threads:
        return "warp_groups needs Br/2*G = " + std::to_string(threads(c)) + " threads, more than 1024 per block";
      case TileFault::SharedMemory: return smem_words(smem_bytes(c));
      default: return fault_words(f, c, kVariant);
    }
  }

  static KernelGeometry geometry(const TileConfig& c) {
    KernelGeometry g;
    g.config = c;
    const int G = group_lanes(c), R = rows_per_group(c), F4 = float4s_per_lane(c), T = threads(c);
    const int W = ceil_div(T, 32);
    const int d = c.d, Bc = c.Bc, ko = k_offset(c), vo = v_offset(c), kvs = kv_stride(c);
    g.threads_per_block = T;
    g.smem_bytes = smem_bytes(c);
    g.registers_estimate = registers_estimate(c);
    g.smem_sites.push_back(tile_store_site("K tile store", SiteScope::PerKvTile, T, Bc, d, ko, kvs));
    g.smem_sites.push_back(tile_store_site("V tile store", SiteScope::PerKvTile, T, Bc, d, vo, kvs));
    // Instance i = key j (0..Bc-1) times F4 chunks x: lane reads chunk x*G + g of row j.
    auto chunk_read = [=](int offset) {
      return [=](int, int lane, long long i) -> long long {
        const int j = int(i / F4), x = int(i % F4);
        return 4LL * lane_chunk(offset, kvs, G, j, x, lane % G);
      };
    };
    g.smem_sites.push_back(make_site("K read in QK^T", SmemOp::Load, 16, SiteScope::PerKvTile, W,
                                     1LL * Bc * F4, chunk_read(ko)));
    g.smem_sites.push_back(make_site("V read in PV", SmemOp::Load, 16, SiteScope::PerKvTile, W,
                                     1LL * Bc * F4, chunk_read(vo)));

    const double threads_d = T, chunks = double(Bc) / G;
    int log2g = 0;
    while ((1 << log2g) < G) ++log2g;
    // Per lane and row: reduce-scatter (G-1 shuffles and adds per chunk), max across the group
    // (log2 G), one broadcast of p per key; the final row sum across the group happens once per block.
    g.per_kv_tile.shuffles = threads_d * R * (chunks * (G - 1) + log2g + Bc);
    g.per_kv_tile.ffma = 2.0 * c.Br * double(Bc) * d;
    g.per_kv_tile.fp32_other = threads_d * R * (chunks * (G - 1) + 2.0 * (G - 1) * chunks + 3.0 * chunks + log2g +
                                                4.0 * F4 + 6.0);
    g.per_kv_tile.exp = threads_d * R * (chunks + 1.0);
    g.per_kv_tile.barriers = 2;
    set_block_traffic(g, c);
    g.causal_heavy_first = kCausalHeavyFirst;
    return g;
  }

  // Full list: Br in {32, 64, 128} (also 16 at d = 128), Bc in {16, 32, 64}; Bc = 128 would keep
  // 2 x 16-32 scores per lane in registers. Left out because ptxas spills them: d = 128 with
  // (Br, Bc) = (128, 64), (128, 32) (512 threads: a 128-register cap) and (16, 64).
  static constexpr TileConfig kCompiled[] = {
#if FLASHTUNE_SMALL_KERNEL_SET
      {kVariant, 64, 64, 32, Layout::Plain},
#else
      {kVariant, 32, 32, 16, Layout::Plain},   {kVariant, 32, 32, 32, Layout::Plain},
      {kVariant, 32, 32, 64, Layout::Plain},   {kVariant, 32, 64, 16, Layout::Plain},
      {kVariant, 32, 64, 32, Layout::Plain},   {kVariant, 32, 64, 64, Layout::Plain},
      {kVariant, 32, 128, 16, Layout::Plain},  {kVariant, 32, 128, 32, Layout::Plain},
      {kVariant, 32, 128, 64, Layout::Plain},  {kVariant, 64, 32, 16, Layout::Plain},
      {kVariant, 64, 32, 32, Layout::Plain},   {kVariant, 64, 32, 64, Layout::Plain},
      {kVariant, 64, 64, 16, Layout::Plain},   {kVariant, 64, 64, 32, Layout::Plain},
      {kVariant, 64, 64, 64, Layout::Plain},   {kVariant, 64, 128, 16, Layout::Plain},
      {kVariant, 64, 128, 32, Layout::Plain},  {kVariant, 64, 128, 64, Layout::Plain},
      {kVariant, 128, 16, 16, Layout::Plain},  {kVariant, 128, 16, 32, Layout::Plain},
      {kVariant, 128, 32, 16, Layout::Plain},  {kVariant, 128, 32, 32, Layout::Plain},
      {kVariant, 128, 32, 64, Layout::Plain},  {kVariant, 128, 64, 16, Layout::Plain},
      {kVariant, 128, 64, 32, Layout::Plain},  {kVariant, 128, 64, 64, Layout::Plain},
      {kVariant, 128, 128, 16, Layout::Plain},
#endif
  };

  template <int D, int BR, int BC, Layout L>
  struct Tile {
    static constexpr TileConfig kConfig{kVariant, D, BR, BC, L};
    static constexpr int kThreads = threads(kConfig);
    static constexpr int kSmemBytes = smem_bytes(kConfig);
    static constexpr int kGroup = group_lanes(kConfig);
    static constexpr int kRowsPerGroup = rows_per_group(kConfig);
    static constexpr int kFloat4sPerLane = float4s_per_lane(kConfig);
    static constexpr int kKvStride = kv_stride(kConfig);
    static constexpr int kKOffset = k_offset(kConfig);
    static constexpr int kVOffset = v_offset(kConfig);
    static_assert(fault(kConfig) == TileFault::None, "warp_groups cannot build this tile (rejection() says why)");
  };
};
static_assert(first_refused_compiled<WarpGroups>() == -1, "WarpGroups::kCompiled holds a tile rejection() refuses");

}  // namespace flashtune::traits
