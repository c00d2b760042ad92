// row_reg: the seed "rowwise" report's final design. One thread per query row, that row of Q
// (pre-scaled) and of O in float4 registers; K and V tiles in shared memory read as float4
// broadcasts (every lane of a warp reads the same 16 bytes: one wavefront, no conflict); the
// scores go to a transposed tile S^T[j][row] so that the lanes of a warp touch consecutive words.
#pragma once

#include "row_thread_traits.h"
#include "traits_common.h"

namespace flashtune::traits {

struct RowReg {
  static constexpr Variant kVariant = Variant::RowReg;
  // Causal query tiles run in index order, light first (block_coords), on a tile-fastest grid.
  static constexpr bool kCausalHeavyFirst = false;

  static constexpr int threads(const TileConfig& c) { return c.Br; }
  static constexpr int kv_stride(const TileConfig& c) { return c.d; }
  static constexpr int k_offset(const TileConfig&) { return 0; }
  static constexpr int v_offset(const TileConfig& c) { return c.Bc * kv_stride(c); }
  static constexpr int st_offset(const TileConfig& c) { return 2 * c.Bc * kv_stride(c); }
  static constexpr int st_stride(const TileConfig& c) { return c.Br; }  // S^T[j][row]
  static constexpr int smem_floats(const TileConfig& c) { return st_offset(c) + c.Bc * st_stride(c); }
  static constexpr int smem_bytes(const TileConfig& c) { return 4 * smem_floats(c); }

  static constexpr int at(int offset, int stride, int row, int col) { return row_major_at(offset, stride, row, col); }

  // Registers per thread, for the model's occupancy (a profile's compiled value wins): the Q and O
  // rows (2d), the K/V tile staging (kv_staging_registers) and 36 for scores, softmax state and
  // addressing; ptxas caps at 255 (__launch_bounds__(Br, 1)). Calibrated on the ptxas report of
  // the full build (tests/data/ptxas_registers_sm90.json, tests/kernels_registers_test.cpp): mean
  // error 4%, worst 15%, the H200 and H100 blocks per SM of every compiled config right.
  static constexpr int registers_estimate(const TileConfig& c) {
    const int r = 36 + 2 * c.d + kv_staging_registers(c.Bc, c.d, threads(c));
    return r < 255 ? r : 255;
  }

  static constexpr TileFault fault(const TileConfig& c) {
    if (const TileFault f = common_fault(c, kVariant); f != TileFault::None) return f;
    if (c.d == 128) return TileFault::VariantHeadDim;
    if (c.layout != Layout::Plain) return TileFault::Layout;
    return smem_fault(smem_bytes(c));
  }
  static std::optional<std::string> rejection(const TileConfig& c) {
    switch (const TileFault f = fault(c); f) {
      case TileFault::None: return std::nullopt;
      case TileFault::VariantHeadDim:
        return "row_reg supports d in {32, 64} (Q and O live in registers; d=128 would spill)";
      case TileFault::Layout:
        return "row_reg supports layout plain only (its shared reads are broadcasts or consecutive words)";
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
    const int ko = k_offset(c), vo = v_offset(c), kvs = kv_stride(c), so = st_offset(c), ss = st_stride(c);
    auto row_of = [T](int warp, int lane) { const int t = warp * 32 + lane; return t < T ? t : -1; };

    g.smem_sites.push_back(tile_store_site("K tile store", SiteScope::PerKvTile, T, Bc, d, ko, kvs));
    g.smem_sites.push_back(tile_store_site("V tile store", SiteScope::PerKvTile, T, Bc, d, vo, kvs));
    g.smem_sites.push_back(row_thread_kv_read_site("K read in QK^T", T, Bc, d, ko, kvs));
    g.smem_sites.push_back(make_site("S^T store", SmemOp::Store, 4, SiteScope::PerKvTile, W, Bc,
                                     [=](int warp, int lane, long long i) -> long long {
                                       const int r = row_of(warp, lane);
                                       return r < 0 ? -1 : 4LL * at(so, ss, int(i), r);
                                     }));
    g.smem_sites.push_back(make_site("S^T read in PV", SmemOp::Load, 4, SiteScope::PerKvTile, W, Bc,
                                     [=](int warp, int lane, long long i) -> long long {
                                       const int r = row_of(warp, lane);
                                       return r < 0 ? -1 : 4LL * at(so, ss, int(i), r);
                                     }));
    g.smem_sites.push_back(row_thread_kv_read_site("V read in PV", T, Bc, d, vo, kvs));

    set_row_thread_tile_counts(g, c);
    set_block_traffic(g, c);
    g.causal_heavy_first = kCausalHeavyFirst;
    return g;
  }

  // Full list: d in {32, 64}, Br in {32, 64, 128} (Br = 16 runs half-empty warps), every Bc.
  // Left out because ptxas spills them at the 255-register cap (scripts/ptxas_report.sh):
  // d = 32 with (Br, Bc) = (32, 128); d = 64 with (64, 128), (32, 128), (32, 64).
  static constexpr TileConfig kCompiled[] = {
#if FLASHTUNE_SMALL_KERNEL_SET
      {kVariant, 64, 128, 32, Layout::Plain},
#else
      {kVariant, 32, 32, 16, Layout::Plain},   {kVariant, 32, 32, 32, Layout::Plain},
      {kVariant, 32, 32, 64, Layout::Plain},   {kVariant, 32, 64, 16, Layout::Plain},
      {kVariant, 32, 64, 32, Layout::Plain},   {kVariant, 32, 64, 64, Layout::Plain},
      {kVariant, 32, 64, 128, Layout::Plain},  {kVariant, 32, 128, 16, Layout::Plain},
      {kVariant, 32, 128, 32, Layout::Plain},  {kVariant, 32, 128, 64, Layout::Plain},
      {kVariant, 32, 128, 128, Layout::Plain}, {kVariant, 64, 32, 16, Layout::Plain},
      {kVariant, 64, 32, 32, Layout::Plain},   {kVariant, 64, 64, 16, Layout::Plain},
      {kVariant, 64, 64, 32, Layout::Plain},   {kVariant, 64, 64, 64, Layout::Plain},
      {kVariant, 64, 128, 16, Layout::Plain},  {kVariant, 64, 128, 32, Layout::Plain},
      {kVariant, 64, 128, 64, Layout::Plain},  {kVariant, 64, 128, 128, Layout::Plain},
#endif
  };

  template <int D, int BR, int BC, Layout L>
  struct Tile {
    static constexpr TileConfig kConfig{kVariant, D, BR, BC, L};
    static constexpr int kThreads = threads(kConfig);
    static constexpr int kSmemBytes = smem_bytes(kConfig);
    static constexpr int kKvStride = kv_stride(kConfig);
    static constexpr int kKOffset = k_offset(kConfig);
    static constexpr int kVOffset = v_offset(kConfig);
    static constexpr int kStOffset = st_offset(kConfig);
    static constexpr int kStStride = st_stride(kConfig);
    static_assert(fault(kConfig) == TileFault::None, "row_reg cannot build this tile (rejection() says why)");
  };
};
static_assert(first_refused_compiled<RowReg>() == -1, "RowReg::kCompiled holds a tile rejection() refuses");

}  // namespace flashtune::traits
