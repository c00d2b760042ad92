// row_smem: one thread per query row; Q, K, V and S tiles in shared memory, O in registers.
// The seed "rowwise" report's early versions. Its layout switch (plain / padded Q and S rows) is
// the project's bank-conflict experiment: lane t reads Q[t][k] and S[t][j], so with a row stride
// that is a multiple of 32 words every lane of a warp hits the same bank; padding each row by
// one float spreads them over 32 banks. K and V are read as float4 broadcasts (every lane reads
// the same address), so they are never padded.
#pragma once

#include "row_thread_traits.h"
#include "traits_common.h"

namespace flashtune::traits {

struct RowSmem {
  static constexpr Variant kVariant = Variant::RowSmem;
  // Causal query tiles run in index order, light first (block_coords), on a tile-fastest grid.
  static constexpr bool kCausalHeavyFirst = false;

  static constexpr int threads(const TileConfig& c) { return c.Br; }
  static constexpr int pad(const TileConfig& c) { return c.layout == Layout::Padded ? 1 : 0; }
  // Row strides in floats.
  static constexpr int q_stride(const TileConfig& c) { return c.d + pad(c); }
  static constexpr int s_stride(const TileConfig& c) { return c.Bc + pad(c); }
  static constexpr int kv_stride(const TileConfig& c) { return c.d; }
  // Floats per Q read in QK^T: a float4 where every Q row starts 16-byte aligned (plain: stride
  // d), else one float (padded: stride d + 1). The kernel reads exactly this width (the compiler
  // merged plain's four scalar reads into one LDS.128 anyway; ncu on the H200 counted them so), and
  // the geometry's "Q read in QK^T" site describes the same instruction.
  static constexpr int q_read_floats(const TileConfig& c) { return q_stride(c) % 4 == 0 ? 4 : 1; }
  // Loop shape. QK^T: keys unrolled 4 (1 at d = 128, where the O row alone takes 128 registers
  // and unrolling would spill). PV: two keys per step (one at d = 128), their scores read as one
  // float2 where S rows are 8-byte aligned (plain), else one float each (padded: stride Bc + 1).
  // ptxas merged plain's two scalar reads into LDS.64 on its own; now the source says so.
  static constexpr int qk_unroll(const TileConfig& c) { return c.d >= 128 ? 1 : 4; }
  static constexpr int pv_keys_per_step(const TileConfig& c) { return c.d >= 128 ? 1 : 2; }
  static constexpr int s_read_floats(const TileConfig& c) {
    return pv_keys_per_step(c) == 2 && s_stride(c) % 2 == 0 ? 2 : 1;
  }
  // Tile offsets in floats: K and V first so that they stay 16-byte aligned for float4 reads.
  static constexpr int k_offset(const TileConfig&) { return 0; }
  static constexpr int v_offset(const TileConfig& c) { return c.Bc * kv_stride(c); }
  static constexpr int q_offset(const TileConfig& c) { return 2 * c.Bc * kv_stride(c); }
  static constexpr int s_offset(const TileConfig& c) { return q_offset(c) + c.Br * q_stride(c); }
  static constexpr int smem_floats(const TileConfig& c) { return s_offset(c) + c.Br * s_stride(c); }
  static constexpr int smem_bytes(const TileConfig& c) { return 4 * smem_floats(c); }

  // Where the kernel reads: element (row, col) of a tile whose rows are `stride` floats apart.
  static constexpr int at(int offset, int stride, int row, int col) { return row_major_at(offset, stride, row, col); }

  // Registers per thread, for the model's occupancy (a profile's compiled value wins): the O row
  // (d) and the K/V tile staging (kv_staging_registers), 1/16 more of both, and 28 for Q pointers,
  // scores, softmax state and addressing; ptxas caps at 255 (__launch_bounds__(Br, 1)).
  // Calibrated on the ptxas report of the full build (tests/data/ptxas_registers_sm90.json, nvcc
  // 13.0, checked by tests/kernels_registers_test.cpp): the H200 and H100 blocks per SM of every
  // compiled config right, which pins d32 64x32 (96 registers) at <= 96 and d32 32x32 and d64 64x16
  // at >= 129 (was 38 + d + staging before the spills change moved d32 64x32 from 99 to 96).
  static constexpr int registers_estimate(const TileConfig& c) {
    const int dv = c.d + kv_staging_registers(c.Bc, c.d, threads(c));
    const int r = 28 + dv + dv / 16;
    return r < 255 ? r : 255;
  }

  static constexpr TileFault fault(const TileConfig& c) {
    if (const TileFault f = common_fault(c, kVariant); f != TileFault::None) return f;
    if (c.layout == Layout::Swizzled) return TileFault::Layout;
    return smem_fault(smem_bytes(c));
  }
  static std::optional<std::string> rejection(const TileConfig& c) {
    switch (const TileFault f = fault(c); f) {
      case TileFault::None: return std::nullopt;
      case TileFault::Layout: return "row_smem supports layouts plain and padded (one float per Q and S row)";
      case TileFault::SharedMemory: return smem_words(smem_bytes(c));
      default: return fault_words(f, c, kVariant);
    }
  }

  static KernelGeometry geometry(const TileConfig& c) {
    KernelGeometry g;
    g.config = c;
    g.threads_per_block = threads(c);
    g.smem_bytes = smem_bytes(c);
    g.registers_estimate = registers_estimate(c);
    const int T = threads(c), W = ceil_div(T, 32), d = c.d, Bc = c.Bc;
    const int qo = q_offset(c), qs = q_stride(c), so = s_offset(c), ss = s_stride(c);
    const int ko = k_offset(c), vo = v_offset(c), kvs = kv_stride(c);
    auto row_of = [T](int warp, int lane) { const int t = warp * 32 + lane; return t < T ? t : -1; };

    g.smem_sites.push_back(tile_store_site("Q tile store", SiteScope::PerBlock, T, c.Br, d, qo, qs));
    g.smem_sites.push_back(tile_store_site("K tile store", SiteScope::PerKvTile, T, Bc, d, ko, kvs));
    g.smem_sites.push_back(tile_store_site("V tile store", SiteScope::PerKvTile, T, Bc, d, vo, kvs));
    // QK^T: for key j, for k in steps of 4: one float4 broadcast of K[j][k..k+3], four scalar Q reads.
    g.smem_sites.push_back(row_thread_kv_read_site("K read in QK^T", T, Bc, d, ko, kvs));
    // Q[t][k .. k + qv - 1] for key j and float offset k (instance i = j * d/qv + k/qv): one
    // LDS.128 per float4 of K when plain, four LDS when padded. Plain's LDS.128 puts the 8 lanes
    // of a quarter-warp on the same 4 banks (8-way); padded's scalar reads hit 32 banks.
    const int qv = q_read_floats(c);
    g.smem_sites.push_back(make_site("Q read in QK^T", SmemOp::Load, 4 * qv, SiteScope::PerKvTile, W, 1LL * Bc * d / qv,
                                     [=](int warp, int lane, long long i) -> long long {
                                       const int r = row_of(warp, lane);
                                       if (r < 0) return -1;
                                       return 4LL * at(qo, qs, r, int(i % (d / qv)) * qv);
                                     }));
    g.smem_sites.push_back(make_site("S store", SmemOp::Store, 4, SiteScope::PerKvTile, W, Bc,
                                     [=](int warp, int lane, long long i) -> long long {
                                       const int r = row_of(warp, lane);
                                       return r < 0 ? -1 : 4LL * at(so, ss, r, int(i));
                                     }));
    const int sv = s_read_floats(c);
    g.smem_sites.push_back(make_site("S read in PV", SmemOp::Load, 4 * sv, SiteScope::PerKvTile, W, Bc / sv,
                                     [=](int warp, int lane, long long i) -> long long {
                                       const int r = row_of(warp, lane);
                                       return r < 0 ? -1 : 4LL * at(so, ss, r, int(i) * sv);
                                     }));
    g.smem_sites.push_back(row_thread_kv_read_site("V read in PV", T, Bc, d, vo, kvs));

    set_row_thread_tile_counts(g, c);
    set_block_traffic(g, c);
    g.causal_heavy_first = kCausalHeavyFirst;
    return g;
  }

  // Full list: both layouts (the bank-conflict experiment) for every d over Br in {32, 64, 128} and
  // Bc in {32, 64}, plus a Bc sweep (16 .. 128) at d = 64, Br = 64. Left out: Br = 16 (half of every
  // warp idle) and the rest of Bc in {16, 128} (build time on the 2-core CI machine; the sweep at
  // d = 64 shows the trend).
  // Also left out because ptxas spills them at the 255-register cap (scripts/ptxas_report.sh):
  // d = 64 with (Br, Bc) = (64, 128), (32, 64); d = 128 with (128, 64), (64, 64), (32, 64), (32, 32).
  static constexpr TileConfig kCompiled[] = {
#if FLASHTUNE_SMALL_KERNEL_SET
      {kVariant, 64, 64, 32, Layout::Plain},
      {kVariant, 64, 64, 32, Layout::Padded},
#else
      {kVariant, 32, 32, 32, Layout::Plain},   {kVariant, 32, 32, 32, Layout::Padded},
      {kVariant, 32, 32, 64, Layout::Plain},   {kVariant, 32, 32, 64, Layout::Padded},
      {kVariant, 32, 64, 32, Layout::Plain},   {kVariant, 32, 64, 32, Layout::Padded},
      {kVariant, 32, 64, 64, Layout::Plain},   {kVariant, 32, 64, 64, Layout::Padded},
      {kVariant, 32, 128, 32, Layout::Plain},  {kVariant, 32, 128, 32, Layout::Padded},
      {kVariant, 32, 128, 64, Layout::Plain},  {kVariant, 32, 128, 64, Layout::Padded},
      {kVariant, 64, 32, 32, Layout::Plain},   {kVariant, 64, 32, 32, Layout::Padded},
      {kVariant, 64, 64, 16, Layout::Plain},   {kVariant, 64, 64, 16, Layout::Padded},
      {kVariant, 64, 64, 32, Layout::Plain},   {kVariant, 64, 64, 32, Layout::Padded},
      {kVariant, 64, 64, 64, Layout::Plain},   {kVariant, 64, 64, 64, Layout::Padded},
      {kVariant, 64, 128, 32, Layout::Plain},  {kVariant, 64, 128, 32, Layout::Padded},
      {kVariant, 64, 128, 64, Layout::Plain},  {kVariant, 64, 128, 64, Layout::Padded},
      {kVariant, 128, 64, 32, Layout::Plain},  {kVariant, 128, 64, 32, Layout::Padded},
      {kVariant, 128, 128, 32, Layout::Plain}, {kVariant, 128, 128, 32, Layout::Padded},
#endif
  };

  template <int D, int BR, int BC, Layout L>
  struct Tile {
    static constexpr TileConfig kConfig{kVariant, D, BR, BC, L};
    static constexpr int kThreads = threads(kConfig);
    static constexpr int kSmemBytes = smem_bytes(kConfig);
    static constexpr int kQStride = q_stride(kConfig);
    static constexpr int kSStride = s_stride(kConfig);
    static constexpr int kKvStride = kv_stride(kConfig);
    static constexpr int kQReadFloats = q_read_floats(kConfig);
    static constexpr int kQkUnroll = qk_unroll(kConfig);
    static constexpr int kPvKeysPerStep = pv_keys_per_step(kConfig);
    static constexpr int kSReadFloats = s_read_floats(kConfig);
    static constexpr int kKOffset = k_offset(kConfig);
    static constexpr int kVOffset = v_offset(kConfig);
    static constexpr int kQOffset = q_offset(kConfig);
    static constexpr int kSOffset = s_offset(kConfig);
    static_assert(fault(kConfig) == TileFault::None, "row_smem cannot build this tile (rejection() says why)");
  };
};
static_assert(first_refused_compiled<RowSmem>() == -1, "RowSmem::kCompiled holds a tile rejection() refuses");

}  // namespace flashtune::traits
