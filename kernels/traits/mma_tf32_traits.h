// Traits of the tensor-core kernels (FlashAttention-2 on mma.sync m16n8k8 TF32): threads, shared
// memory layout, fragment layouts and the index arithmetic that the kernel template
// (kernels/mma_tf32.cuh) and the model's geometry both read. Plain C++17, no CUDA.
//
// Shape of the kernel (one block per Br query rows of one batch entry, FA2 loop over K/V tiles):
// warp w owns query rows 16w .. 16w + 15, one m16 tile. Lane = 4 * g + t (g = lane / 4 the
// "group", t = lane % 4 the "thread in group" of the PTX fragment tables). Per K/V tile:
//   S = Q K^T   A = Q from registers (loaded once from global memory, pre-scaled by
//               scale * log2 e; from shared memory at d = 128, see q_in_smem), B = K from shared
//               memory, C = S: Bc / 8 accumulator fragments;
//   softmax     on the fragments: row max over the 4 lanes of a group (2 xor shuffles), exp2,
//               O rescaled; the row sums stay per lane until the end;
//   O += P V    A = P straight from the S fragments (no shuffles, see the key order below),
//               B = V from shared memory, C = this tile's P V (d / 8 fragments from zero),
//               added to O (d / 8 more fragments) by one FFMA each.
// K and V tiles arrive by cp.async, double-buffered: tile t + 1 loads while tile t computes.
//
// Two free permutations make every fragment load one 16-byte shared access:
// * the reduction index of QK^T (d): k-step 2kk + s uses columns 16kk + 4t + 2s (as k = t) and
//   16kk + 4t + 2s + 1 (as k = t + 4), the same for Q and K, so one float4 of a K row feeds two
//   k-steps;
// * the key order of an S fragment: column n of S tile j is key 8j + 4 (n % 2) + n / 2, so the
//   C fragment (g, 2t), (g, 2t + 1) holds keys 8j + t and 8j + 4 + t, exactly the A fragment
//   (g, k = t), (g, k = t + 4) of P V if V's k-step j reads rows 8j + t and 8j + 4 + t;
// * the output column of O tile m, column n: 4 (n + 8 (m / 4)) + m % 4, so one float4 of a V row
//   (columns 4 g + 32 q .. + 3) feeds four O tiles, and a lane's O values of row g are two
//   contiguous float4s (columns 32 q + 8 t .. + 7): coalesced 16-byte stores.
// Precision: Tf32x3 splits every operand x into hi = x with its 13 low mantissa bits cleared and
// lo = x - hi (exact), and accumulates lo*hi + hi*lo + hi*hi (lo*lo, ~2^-22 relative, dropped);
// the mma reads the top 19 bits of lo (the hardware ignores the low 13 bits of a .tf32 operand),
// so each product is within ~2^-20 relative. Tf32x1 rounds each operand to nearest TF32 once.
//
// Layouts of the K and V tiles (rows of d floats; the same three for both, see k_offset/v_offset):
//   Plain     rows packed: K reads of rows r and r + 4 in one quarter-warp collide (2-way),
//             V reads of rows r .. r + 3 collide 4-way;
//   Padded    K rows d + 4 floats apart, V rows d + 8 apart: conflict-free, more shared memory;
//   Swizzled  16-byte chunk index XOR ((row % 4) * 2 ^ (row & 4)): conflict-free, packed.
#pragma once

#include <optional>
#include <string>

#include "kernels/traits/kernel_geometry.h"
#include "kernels/traits/tile_config.h"
#include "kernels/traits/traits_common.h"

namespace flashtune::traits {

enum class MmaPrecision { Tf32x3, Tf32x1 };

// What the library compiles. Per d: swizzled Br x Bc in {32, 64, 128} x {32, 64, 128} where the
// registers allow without spills (ptxas, sm_90: Bc = 128 spills at d = 64 and d = 128, where S,
// O and O's per-tile accumulator hold 64 + 2 x d / 2 registers), two padded tiles and one plain
// for the bank-conflict contrast. 1xTF32: the tiles most likely to win.
template <MmaPrecision P>
struct MmaCompiled;

template <>
struct MmaCompiled<MmaPrecision::Tf32x3> {
  static constexpr Variant V = Variant::MmaTf32x3;
#if FLASHTUNE_SMALL_KERNEL_SET
  static constexpr TileConfig kList[] = {{V, 64, 64, 64, Layout::Swizzled}, {V, 64, 128, 64, Layout::Padded}};
#else
  static constexpr TileConfig kList[] = {
      {V, 32, 32, 64, Layout::Swizzled},   {V, 32, 64, 32, Layout::Swizzled},  {V, 32, 64, 64, Layout::Swizzled},
      {V, 32, 64, 128, Layout::Swizzled},  {V, 32, 128, 32, Layout::Swizzled}, {V, 32, 128, 64, Layout::Swizzled},
      {V, 32, 128, 128, Layout::Swizzled}, {V, 32, 64, 64, Layout::Padded},    {V, 32, 128, 64, Layout::Padded},
      {V, 32, 64, 64, Layout::Plain},
      {V, 64, 32, 64, Layout::Swizzled},   {V, 64, 64, 32, Layout::Swizzled},  {V, 64, 64, 64, Layout::Swizzled},
      {V, 64, 128, 32, Layout::Swizzled},  {V, 64, 128, 64, Layout::Swizzled}, {V, 64, 64, 64, Layout::Padded},
      {V, 64, 128, 64, Layout::Padded},
      {V, 64, 64, 64, Layout::Plain},
      {V, 128, 32, 64, Layout::Swizzled},  {V, 128, 64, 32, Layout::Swizzled}, {V, 128, 64, 64, Layout::Swizzled},
      {V, 128, 128, 32, Layout::Swizzled}, {V, 128, 128, 64, Layout::Swizzled}, {V, 128, 64, 64, Layout::Padded},
      {V, 128, 128, 64, Layout::Padded},   {V, 128, 64, 64, Layout::Plain},
  };
#endif
};

template <>
struct MmaCompiled<MmaPrecision::Tf32x1> {
  static constexpr Variant V = Variant::MmaTf32x1;
#if FLASHTUNE_SMALL_KERNEL_SET
  static constexpr TileConfig kList[] = {{V, 64, 64, 64, Layout::Swizzled}};
#else
  static constexpr TileConfig kList[] = {
      {V, 32, 64, 64, Layout::Swizzled},  {V, 32, 128, 64, Layout::Swizzled},  {V, 64, 64, 64, Layout::Swizzled},
      {V, 64, 128, 64, Layout::Swizzled}, {V, 128, 64, 64, Layout::Swizzled}, {V, 128, 128, 64, Layout::Swizzled},
  };
#endif
};

template <MmaPrecision P>
struct MmaTf32 {
  static constexpr Variant kVariant = P == MmaPrecision::Tf32x3 ? Variant::MmaTf32x3 : Variant::MmaTf32x1;
  // Causal query tiles run heavy first (kernels/attention_params.cuh block_tensors), so the grid
  // is ordered batch-fastest (traits::grid_order); the launch and the model read this flag.
  static constexpr bool kCausalHeavyFirst = true;
  static constexpr MmaPrecision kPrecision = P;
  // mma.sync instructions per product of two fp32 fragments.
  static constexpr int kProducts = P == MmaPrecision::Tf32x3 ? 3 : 1;

  // ---- thread grid ------------------------------------------------------------------------
  static constexpr int kRowsPerWarp = 16;  // one m16 tile per warp
  static constexpr int warps(const TileConfig& c) { return c.Br / kRowsPerWarp; }
  static constexpr int threads(const TileConfig& c) { return 32 * warps(c); }
  static constexpr int s_tiles(int bc) { return bc / 8; }  // n8 tiles of S per warp
  static constexpr int o_tiles(int d) { return d / 8; }    // n8 tiles of O per warp
  static constexpr int k_steps(int d) { return d / 8; }    // k8 steps of QK^T
  static constexpr int group_of(int lane) { return lane / 4; }
  static constexpr int thread_in_group(int lane) { return lane % 4; }

  // Tile row of the query row held as fragment row g + 8 half by `lane` of `warp`: the warp's 16
  // rows in the key order below (g -> 4 (g % 2) + g / 2), so that the two rows of a quarter-warp's
  // Q reads sit 4 apart like K's (conflict-free under the same padding and swizzle).
  static constexpr int q_row(int warp, int lane, int half) {
    return kRowsPerWarp * warp + 8 * half + 4 * (group_of(lane) % 2) + group_of(lane) / 2;
  }
  // Key (row of the K and V tiles) of column n of S tile j.
  static constexpr int key_of(int j, int n) { return 8 * j + 4 * (n % 2) + n / 2; }
  // First d column of the float4 a lane reads from a Q or K row for k-steps 2kk and 2kk + 1.
  static constexpr int qk_col(int kk, int lane) { return 16 * kk + 4 * thread_in_group(lane); }
  // First d column of the float4 of a V row that feeds O tiles 4q .. 4q + 3 (B column n = g).
  static constexpr int v_col(int q, int lane) { return 4 * group_of(lane) + 32 * q; }
  // d column of column n of O tile m.
  static constexpr int o_col(int m, int n) { return 4 * (n + 8 * (m / 4)) + m % 4; }

  // ---- shared-memory layout (offsets in floats) --------------------------------------------
  static constexpr int k_stride(int d, Layout l) { return l == Layout::Padded ? d + 4 : d; }
  static constexpr int v_stride(int d, Layout l) { return l == Layout::Padded ? d + 8 : d; }
  // Bit operations, not % : the compiler then sees that rows 8 apart share a swizzle.
  static constexpr int swizzle(int row) { return ((row & 3) << 1) ^ (row & 4); }
  // Float offset of columns col4 .. col4 + 3 (col4 a multiple of 4) of `row` in a tile of rows
  // `stride` floats apart.
  static constexpr int chunk_offset(Layout l, int stride, int row, int col4) {
    const int chunk = col4 / 4;
    return row * stride + 4 * (l == Layout::Swizzled ? chunk ^ swizzle(row) : chunk);
  }
  static constexpr int k_offset(int d, Layout l, int row, int col4) { return chunk_offset(l, k_stride(d, l), row, col4); }
  static constexpr int v_offset(int d, Layout l, int row, int col4) { return chunk_offset(l, v_stride(d, l), row, col4); }
  // The fragment reads' offsets split into a lane-dependent base and a compile-time step, so the
  // kernel keeps two bases per tile in registers instead of one offset per (j, kk) (the swizzle
  // only touches the low 3 bits of the chunk index, and rows 8 apart share it):
  //   k_offset(d, l, key_of(j, g), qk_col(kk, lane)) == k_frag_base(d, l, lane, kk % 2) + k_frag_step(d, l, j, kk / 2)
  //   v_offset(d, l, 8j + 4h + t, v_col(q, lane))   == v_frag_base(d, l, lane, h) + v_frag_step(d, l, j, q)
  // (tests/kernels_traits_test.cpp checks both over every lane).
  static constexpr int k_frag_base(int d, Layout l, int lane, int odd) {
    return k_offset(d, l, key_of(0, group_of(lane)), 16 * odd + 4 * thread_in_group(lane));
  }
  static constexpr int k_frag_step(int d, Layout l, int j, int kk2) { return 8 * j * k_stride(d, l) + 32 * kk2; }
  static constexpr int v_frag_base(int d, Layout l, int lane, int half) {
    return v_offset(d, l, 4 * half + thread_in_group(lane), v_col(0, lane));
  }
  static constexpr int v_frag_step(int d, Layout l, int j, int q) { return 8 * j * v_stride(d, l) + 32 * q; }
  static constexpr int k_tile_floats(const TileConfig& c) { return c.Bc * k_stride(c.d, c.layout); }
  static constexpr int stage_floats(const TileConfig& c) { return k_tile_floats(c) + c.Bc * v_stride(c.d, c.layout); }
  static constexpr int kStages = 2;  // K/V double buffering
  // Stage s starts at s * stage_floats; its K tile first, then its V tile.
  static constexpr int k_base(const TileConfig& c, int stage) { return stage * stage_floats(c); }
  static constexpr int v_base(const TileConfig& c, int stage) { return stage * stage_floats(c) + k_tile_floats(c); }
  // Q stays in registers (d / 2 floats per lane, read once from global memory) where d <= 64; at
  // d = 128 those 64 registers beside O and its per-tile accumulator (2 x 64) spill, so the Q
  // tile waits in shared memory after the K/V stages, laid out like K, read again every tile.
  static constexpr bool q_in_smem(const TileConfig& c) { return c.d > 64; }
  static constexpr int q_base(const TileConfig& c) { return kStages * stage_floats(c); }
  static constexpr int q_tile_floats(const TileConfig& c) { return q_in_smem(c) ? c.Br * k_stride(c.d, c.layout) : 0; }
  static constexpr int smem_bytes(const TileConfig& c) { return 4 * (kStages * stage_floats(c) + q_tile_floats(c)); }
  // Q fragment reads (d = 128), decomposed like K's: k_offset(d, l, q_row(w, lane, h) - 16 w' .., qk_col(kk, lane))
  // == q_frag_base(d, l, warp, lane, kk % 2) + q_frag_step(kk / 2) + h * q_frag_half_step(d, l).
  static constexpr int q_frag_base(int d, Layout l, int warp, int lane, int odd) {
    return k_offset(d, l, q_row(warp, lane, 0), 16 * odd + 4 * thread_in_group(lane));
  }
  static constexpr int q_frag_step(int kk2) { return 32 * kk2; }
  static constexpr int q_frag_half_step(int d, Layout l) { return 8 * k_stride(d, l); }

  // Whether the kernel writes the hi parts of V's B pairs and of the A quads (P, Q) in place with
  // a mask ptxas cannot see (kernels/mma_tf32.cuh, opaque_hi_mask) instead of letting ptxas pass
  // the raw values and move them into the operand registers: one instruction fewer per value,
  // 2-4% faster on the H200 (n1k_d128 0.5251 -> 0.5120 ms, t10 0.2107 -> 0.2021 ms), at the price
  // of more live registers; d = 128 with Br = 32 (64 threads, twice the copy trips) then spills
  // (255 registers, 44 bytes), so it keeps ptxas's moves.
  static constexpr bool operand_masks_in_place(const TileConfig& c) { return !(c.d == 128 && c.Br == 32); }

  // Registers per thread (the model's occupancy; a profile's compiled value wins): S (Bc / 2), O
  // and its per-tile accumulator (2 x d / 2), Q where it stays in registers (d / 2), and ~70 for
  // fragments in flight, softmax state and addressing; 3xTF32 ~18 more for the hi parts written
  // beside the raw values (operand_masks_in_place). Checked against ptxas in
  // tests/kernels_registers_test.cpp.
  static constexpr int registers_estimate(const TileConfig& c) {
    const int r = c.Bc / 2 + c.d + (q_in_smem(c) ? 0 : c.d / 2) + (P == MmaPrecision::Tf32x3 ? 88 : 70);
    return r < 255 ? r : 255;
  }

  // ---- what can be built -------------------------------------------------------------------
  static constexpr TileFault fault(const TileConfig& c) {
    if (const TileFault f = common_fault(c, kVariant); f != TileFault::None) return f;
    if (c.Br < 32) return TileFault::VariantRows;
    if (c.Bc < 32) return TileFault::VariantCols;
    return smem_fault(smem_bytes(c));
  }
  static std::optional<std::string> rejection(const TileConfig& c) {
    const std::string name = variant_name(kVariant);
    switch (const TileFault f = fault(c); f) {
      case TileFault::None: return std::nullopt;
      case TileFault::VariantRows: return name + " needs Br >= 32 (two warps of 16 rows), got Br=" + std::to_string(c.Br);
      case TileFault::VariantCols:
        return name + " needs Bc >= 32 (a full swizzle period of key rows), got Bc=" + std::to_string(c.Bc);
      case TileFault::SharedMemory: return name + " " + c.name() + " " + smem_words(smem_bytes(c));
      default: return fault_words(f, c, kVariant);
    }
  }

  // ---- what the library compiles (the list is above: MmaCompiled) -----------------------------
  static constexpr const auto& kCompiled = MmaCompiled<P>::kList;

  // ---- what the kernel template reads --------------------------------------------------------
  template <int D, int BR, int BC, Layout L>
  struct Tile {
    static constexpr TileConfig kConfig{kVariant, D, BR, BC, L};
    static constexpr int kWarps = warps(kConfig);
    static constexpr int kThreads = threads(kConfig);
    static constexpr int kSmemBytes = smem_bytes(kConfig);
    static constexpr int kSTiles = s_tiles(BC);
    static constexpr int kOTiles = o_tiles(D);
    static constexpr bool kQInSmem = q_in_smem(kConfig);
    static constexpr bool kOperandMasksInPlace = operand_masks_in_place(kConfig);
    static_assert(BR % kRowsPerWarp == 0 && BR >= 32, "Br must be whole warps of 16 rows");
    static_assert(BC % 32 == 0, "Bc must cover the swizzle's 8-row period and four-key V reads");
    static_assert(D % 32 == 0, "d must split into float4 K reads (16 columns) and V reads (32 columns)");
    static_assert(fault(kConfig) == TileFault::None, "mma_tf32 cannot build this tile (rejection() says why)");
  };

  // ---- model geometry ----------------------------------------------------------------------
  static KernelGeometry geometry(const TileConfig& c);
};

using MmaTf32x3 = MmaTf32<MmaPrecision::Tf32x3>;
using MmaTf32x1 = MmaTf32<MmaPrecision::Tf32x1>;
static_assert(first_refused_compiled<MmaTf32x3>() == -1, "MmaTf32x3::kCompiled holds a tile rejection() refuses");
static_assert(first_refused_compiled<MmaTf32x1>() == -1, "MmaTf32x1::kCompiled holds a tile rejection() refuses");

template <MmaPrecision P>
inline KernelGeometry MmaTf32<P>::geometry(const TileConfig& c) {
  const int nwarps = warps(c), nthreads = threads(c), d = c.d, bc = c.Bc;
  const Layout layout = c.layout;
  const int kb = k_base(c, 0), vb = v_base(c, 0);

  KernelGeometry g;
  g.config = c;
  g.threads_per_block = nthreads;
  g.smem_bytes = smem_bytes(c);
  g.registers_estimate = registers_estimate(c);

  // cp.async of K and V (stage 0 stands for both: the stages differ by a multiple of 32 banks'
  // worth of rows only in their base, which shifts every lane alike).
  auto tile_copy = [=](std::string name, int base, bool is_k) {
    return make_tile_copy_site(std::move(name), SiteScope::PerKvTile, nwarps, bc, d, nthreads, [=](int row, int col) {
      return 4LL * (base + (is_k ? k_offset(d, layout, row, col) : v_offset(d, layout, row, col)));
    });
  };
  g.smem_sites.push_back(tile_copy("K tile cp.async", kb, true));
  g.smem_sites.push_back(tile_copy("V tile cp.async", vb, false));
  // QK^T: per S tile j and k-step pair kk, one float4 of K row key_of(j, g).
  g.smem_sites.push_back(make_site("K fragment read in QK^T", SmemOp::Load, 16, SiteScope::PerKvTile, nwarps,
                                   static_cast<long long>(s_tiles(bc)) * (d / 16),
                                   [=](int, int lane, long long i) -> long long {
                                     const int j = static_cast<int>(i / (d / 16)), kk = static_cast<int>(i % (d / 16));
                                     return 4LL * (kb + k_offset(d, layout, key_of(j, group_of(lane)), qk_col(kk, lane)));
                                   }));
  // PV: per key step j and O tile quad q, one float4 of V rows 8j + t (b0) and 8j + 4 + t (b1).
  g.smem_sites.push_back(make_site("V fragment read in PV", SmemOp::Load, 16, SiteScope::PerKvTile, nwarps,
                                   2LL * s_tiles(bc) * (o_tiles(d) / 4),
                                   [=](int, int lane, long long i) -> long long {
                                     const int half = static_cast<int>(i % 2);
                                     const int q = static_cast<int>((i / 2) % (o_tiles(d) / 4));
                                     const int j = static_cast<int>(i / 2 / (o_tiles(d) / 4));
                                     const int row = 8 * j + 4 * half + thread_in_group(lane);
                                     return 4LL * (vb + v_offset(d, layout, row, v_col(q, lane)));
                                   }));

  if (q_in_smem(c)) {
    const int qb = q_base(c);
    g.smem_sites.push_back(make_tile_copy_site("Q tile cp.async", SiteScope::PerBlock, nwarps, c.Br, d, nthreads,
                                               [=](int row, int col) { return 4LL * (qb + k_offset(d, layout, row, col)); }));
    // Per k-step pair kk, one float4 of each of the lane's two rows.
    g.smem_sites.push_back(make_site("Q fragment read in QK^T", SmemOp::Load, 16, SiteScope::PerKvTile, nwarps, 2LL * (d / 16),
                                     [=](int warp, int lane, long long i) -> long long {
                                       const int kk = static_cast<int>(i / 2), h = static_cast<int>(i % 2);
                                       return 4LL * (qb + k_offset(d, layout, q_row(warp, lane, h), qk_col(kk, lane)));
                                     }));
  }

  // Counts of one full K/V tile per block. mma: warp-level; the others thread-level.
  const double t = nthreads;
  const double st = s_tiles(bc), ot = o_tiles(d), ks = k_steps(d);
  TileInstructionCounts& n = g.per_kv_tile;
  n.mma = nwarps * kProducts * (st * ks + ot * st);
  // Operand splits per lane and tile: K and V (bc * d / 32 values each), P (bc / 2) and Q (d / 2,
  // split again every tile). Tf32x3: one mask (integer) and one FADD each; Tf32x1: one cvt.rna
  // each (counted as FP32 work).
  const double split_values = 2.0 * bc * d / 32 + bc / 2.0 + d / 2.0;
  // Softmax per lane: bc / 2 scores (max, exp2 argument FADD, sum FADD) and Q's scaling where it
  // comes from shared memory (d / 2 FMUL).
  const double softmax_fp32 = 3.0 * bc / 2 + (q_in_smem(c) ? d / 2.0 : 0.0);
  if (P == MmaPrecision::Tf32x3) n.int_logic = t * split_values;
  n.fp32_other = t * (split_values + softmax_fp32);
  // l = l * alpha + sum per row, and O = alpha O + (this tile's P V): d / 2 per lane.
  n.ffma = t * (2.0 + d / 2.0);
  n.exp = t * (bc / 2.0 + 2.0);    // P and the two rows' alpha
  n.shuffles = t * 4.0;            // row max: xor 1, 2 for each of the two rows
  n.barriers = 1;                  // the stage of tile t landed and stage t - 1 is free

  set_block_traffic(g, c);
  g.kv_loads_overlap_compute = true;  // tile t + 1 is copied while tile t computes
  // Under causal masking a warp whose 16 rows all precede a K/V tile's first key skips that
  // tile's QK^T, softmax and PV (the block still waits at its barrier).
  g.warps_skip_masked_tiles = true;
  g.rows_per_warp = kRowsPerWarp;
  g.causal_heavy_first = kCausalHeavyFirst;
  return g;
}

}  // namespace flashtune::traits
