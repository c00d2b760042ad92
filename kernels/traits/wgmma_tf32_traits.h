// Traits of the Hopper-native fp32 kernels (sm_90a): wgmma16's warp-specialized pipeline on
// wgmma.mma_async m64nNk8 .tf32, fp32 in and out, in two precisions as mma_3xtf32 / mma_1xtf32
// (traits::MmaPrecision): wgmma_3xtf32 (fp32-level accuracy) and wgmma_1xtf32 (opt-in, TF32).
// The kernel template (kernels/wgmma_tf32.cuh) and the model's geometry both read this file.
// Plain C++17, no CUDA.
//
// What differs from wgmma16 (kernels/traits/wgmma16_traits.h, read it first):
//   * .tf32 wgmma takes both shared-memory operands K-major. S = Q K^T is as in wgmma16 (Q and K
//     are K-major as TMA stores them). For O += P V the B operand must be V^T, keys contiguous:
//     TMA cannot transpose, so V lands in one staging buffer (vland) and the producer warpgroup's
//     three idle warps (the transposer) write it, transposed, into the stage's V^T tile, in the
//     same 128-byte swizzle, then arrive on the stage's `ready` barrier; the staging buffer is
//     free again at the `vfree` barrier, after which the producer loads the next tile's V.
//   * fp32 elements: a 128-byte swizzled row holds 32 of them, so a [rows, d] tile is d / 32
//     column blocks of rows x 128 bytes (wgmma16: d / 64), and a k-step (8 elements) is 32
//     bytes, the same offsets as a 16-bit k16 step.
//   * P from registers: the tf32 A fragment of m64nNk8 is, per warp of 16 rows, a0 (g, k = t),
//     a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4), while S's accumulator holds keys 2t and
//     2t + 1 of each 8. No shuffle: the transposer writes the keys of each group of 8 in the order
//     0 2 4 6 1 3 5 7 (v_slot_of_key), so A index k = t is key 2t and k = t + 4 is key 2t + 1, and
//     the accumulator's (s[4j], s[4j + 2], s[4j + 1], s[4j + 3]) is the A fragment of k-step j.
//   * 3xTF32 (as mma_tf32): x = hi + lo, hi = x with the 13 mantissa bits TF32 lacks cleared,
//     lo = x - hi (exact); S = Ql Kh + Qh Kl + Qh Kh and P V alike (lo x lo dropped). hi is written
//     in place of x (Q by its consumer warpgroup once, K by the transposer per tile), lo beside it
//     (q_lo, k_lo, vt_lo); the products' order puts the two small terms first. Each tile's P V
//     accumulates from zero in its own registers and joins O by one FFMA, as mma_3xtf32 does (the
//     tensor cores' fp32 accumulation truncates; summed over thousands of tiles it drifts).
//     1xTF32 rounds V^T and P to nearest TF32 (cvt.rna) and passes Q and K as loaded (the tensor
//     cores read their top 19 bits).
//
// Barriers per stage s (mbarriers): kfull[s] (K's TMA bytes landed), ready[s] (the transposer's
// V^T, and for 3xTF32 K hi / K lo, written and fenced for the async proxy; 3 warp arrivals),
// empty[s] (every consumer warp done with the stage); and vfull / vfree for the one V staging
// buffer, qbar for Q. Consumers wait kfull then ready on every tile, also on the tiles they skip
// past their causal diagonal, so that the phases they wait on are never a round behind.
//
// Shared memory (byte offsets from the 1024-aligned base): Q [Br, d], Q lo (3x), per stage K
// [Bc, d], K lo (3x), V^T [d, Bc], V^T lo (3x); the V staging tile [Bc, d]; the barriers; 1 KB of
// alignment slack.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "kernels/traits/kernel_geometry.h"
#include "kernels/traits/warpgroup_roles.h"
#include "kernels/traits/mma_tf32_traits.h"
#include "kernels/traits/tile_config.h"
#include "kernels/traits/traits_common.h"

namespace flashtune::traits {

// What the library compiles where the build targets sm_90. 1xTF32: d 64 and 128 at Br 128 (two
// consumers) x Bc 64, 2 stages. 3xTF32: d = 64 at the same tile (Q, Q lo, two stages of K, K lo,
// V^T and V^T lo, the V staging tile: 208 KB); at d = 128 Q and Q lo alone take 128 KB, so either
// one consumer (Br = 64) with Bc = 32 and 2 stages (208 KB), or two consumers (Br = 128) with
// Bc = 32 and a single stage (208 KB: the K load of the next tile waits for the stage's release,
// while the V staging tile still lets V arrive a tile early).
template <MmaPrecision P>
struct WgmmaTf32Compiled;

template <>
struct WgmmaTf32Compiled<MmaPrecision::Tf32x3> {
  static constexpr Variant V = Variant::WgmmaTf32x3;
  static constexpr TileConfig kList[] = {
      {V, 64, 128, 64, Layout::Swizzled, DType::Fp32, 2},
      {V, 128, 64, 32, Layout::Swizzled, DType::Fp32, 2},
      {V, 128, 128, 32, Layout::Swizzled, DType::Fp32, 1},
  };
};

template <>
struct WgmmaTf32Compiled<MmaPrecision::Tf32x1> {
  static constexpr Variant V = Variant::WgmmaTf32x1;
  static constexpr TileConfig kList[] = {
      {V, 64, 128, 64, Layout::Swizzled, DType::Fp32, 2},
      {V, 128, 128, 64, Layout::Swizzled, DType::Fp32, 2},
  };
};

template <MmaPrecision P>
struct WgmmaTf32 : WarpgroupRoles<56> {
  static constexpr Variant kVariant = P == MmaPrecision::Tf32x3 ? Variant::WgmmaTf32x3 : Variant::WgmmaTf32x1;
  static constexpr MmaPrecision kPrecision = P;
  static constexpr bool kSplit = P == MmaPrecision::Tf32x3;
  // wgmma per product of two fp32 operands.
  static constexpr int kProducts = kSplit ? 3 : 1;
  static constexpr bool kCausalHeavyFirst = true;

  // ---- roles (warpgroup_roles.h) -----------------------------------------------------------------
  static constexpr int kElementBytes = 4;
  static constexpr int kTransposerWarps = 3;  // warps 1-3 of the producer warpgroup
  static constexpr int kTransposerThreads = 32 * kTransposerWarps;
  // The producer warpgroup keeps 56 registers (the transposer's addresses and a 4 x 4 block of
  // values); two consumers take (512 - 56) / 2 rounded down to 8 = 224 each: 128 x (56 + 448) = 64512.
  // As ptxas reports: the launch value where the warpgroups reallocate; with one consumer, S, O,
  // O's per-tile accumulator (3x), P's fragments (hi and lo for 3x) and ~60 for the rest.
  static constexpr int registers_estimate(const TileConfig& c) {
    if (reallocates_registers(c)) return launch_registers(c);
    const int r = s_registers(c.Bc) + o_registers(c.d) * (kSplit ? 2 : 1) + (c.Bc / 2) * (kSplit ? 2 : 1) + 60;
    return r < 255 ? r : 255;
  }
  static constexpr int s_registers(int bc) { return bc / 2; }
  static constexpr int o_registers(int d) { return d / 2; }

  // ---- shared-memory layout ------------------------------------------------------------------------
  static constexpr int kSwizzleBytes = 128;
  static constexpr int kSwizzleAtomBytes = 8 * kSwizzleBytes;
  static constexpr int kBlockColumns = kSwizzleBytes / kElementBytes;  // 32 fp32 per swizzled row
  static constexpr int column_blocks(int cols) { return cols / kBlockColumns; }
  static constexpr int block_bytes(int rows) { return rows * kSwizzleBytes; }
  static constexpr int tile_bytes(int rows, int cols) { return rows * cols * kElementBytes; }
  // Byte of element (row, col) of a [rows, cols] tile: column block col / 32, 16-byte chunk
  // (col % 32) / 4 XOR row % 8, element col % 4 of the chunk.
  static constexpr int element_byte(int rows, int row, int col) {
    return (col / kBlockColumns) * block_bytes(rows) + row * kSwizzleBytes +
           16 * (((col % kBlockColumns) / 4) ^ (row % 8)) + kElementBytes * (col % 4);
  }
  // The column (slot) of V^T that holds key `key`: in each group of 8 keys, slots 0-3 hold the even
  // keys and 4-7 the odd ones (slot 8j + k is the A fragment's index k of k-step j), and its inverse.
  static constexpr int v_slot_of_key(int key) { return (key & ~7) + ((key & 7) >> 1) + 4 * (key & 1); }
  static constexpr int v_key_of_slot(int slot) { return (slot & ~7) + 2 * (slot & 3) + ((slot >> 2) & 1); }

  static constexpr int q_bytes(const TileConfig& c) { return tile_bytes(c.Br, c.d); }
  static constexpr int kv_tile_bytes(const TileConfig& c) { return tile_bytes(c.Bc, c.d); }
  static constexpr int q_base(const TileConfig&) { return 0; }
  static constexpr int q_lo_base(const TileConfig& c) { return q_bytes(c); }
  static constexpr int stage_base(const TileConfig& c) { return q_bytes(c) * (kSplit ? 2 : 1); }
  // Per stage: K, (K lo), V^T, (V^T lo).
  static constexpr int stage_tiles() { return kSplit ? 4 : 2; }
  static constexpr int stage_bytes(const TileConfig& c) { return stage_tiles() * kv_tile_bytes(c); }
  static constexpr int k_base(const TileConfig& c, int s) { return stage_base(c) + s * stage_bytes(c); }
  static constexpr int k_lo_base(const TileConfig& c, int s) { return k_base(c, s) + kv_tile_bytes(c); }
  static constexpr int vt_base(const TileConfig& c, int s) { return k_base(c, s) + (kSplit ? 2 : 1) * kv_tile_bytes(c); }
  static constexpr int vt_lo_base(const TileConfig& c, int s) { return vt_base(c, s) + kv_tile_bytes(c); }
  static constexpr int vland_base(const TileConfig& c) { return k_base(c, c.stages); }
  static constexpr int barrier_base(const TileConfig& c) { return vland_base(c) + kv_tile_bytes(c); }
  static constexpr int kfull_barrier(const TileConfig& c, int s) { return barrier_base(c) + 8 * s; }
  static constexpr int ready_barrier(const TileConfig& c, int s) { return barrier_base(c) + 8 * (c.stages + s); }
  static constexpr int empty_barrier(const TileConfig& c, int s) { return barrier_base(c) + 8 * (2 * c.stages + s); }
  static constexpr int vfull_barrier(const TileConfig& c) { return barrier_base(c) + 8 * (3 * c.stages); }
  static constexpr int vfree_barrier(const TileConfig& c) { return vfull_barrier(c) + 8; }
  static constexpr int q_barrier(const TileConfig& c) { return vfull_barrier(c) + 16; }
  static constexpr int kBaseAlignSlack = 1024;
  static constexpr int smem_bytes(const TileConfig& c) { return q_barrier(c) + 8 + kBaseAlignSlack; }
  static constexpr int empty_arrivals(const TileConfig& c) { return kWarpsPerWarpgroup * consumers(c); }
  static constexpr int q_tx_bytes(const TileConfig& c) { return q_bytes(c); }
  static constexpr int k_tx_bytes(const TileConfig& c) { return kv_tile_bytes(c); }
  static constexpr int v_tx_bytes(const TileConfig& c) { return kv_tile_bytes(c); }
  static constexpr int kQBoxRows = kRowsPerConsumer;

  // ---- the transposer ------------------------------------------------------------------------------
  // Its unit is a 4 x 4 block: 4 keys (one 16-byte chunk of V^T: slots 4 kq .. 4 kq + 3, keys
  // v_key_of_slot of them) x 4 columns of d (one chunk dc of a V row in column block b): 4 float4
  // loads, 4 float4 stores. The 8 lanes of a quarter-warp (one shared-memory wavefront of 16-byte
  // accesses) take lane i -> kq % 8 = i ^ m, dc = i ^ (kq & 1), m one value per quarter-warp: their
  // loads hit chunks dc ^ (key % 8) = i ^ 2 r (load r) and their stores chunks kq ^ (d row % 8) =
  // i ^ m ^ 4 (m & 1) ^ r (store r), 8 different chunks each: no bank conflict (the tests check).
  // Unit u: i = u % 8, m = u / 8 % 8, kq / 8 = u / 64 % (Bc / 32), b = u / (64 Bc / 32).
  static constexpr int transpose_units(const TileConfig& c) { return c.d * c.Bc / 16; }
  struct TransposeUnit {
    int b, kq, dc;
  };
  static constexpr TransposeUnit transpose_unit(int bc, int u) {
    const int i = u % 8, m = (u / 8) % 8, kqh = (u / 64) % (bc / 32), b = u / (64 * (bc / 32));
    const int kq8 = i ^ m;
    return {b, 8 * kqh + kq8, i ^ (kq8 & 1)};
  }
  // Key of load r (0-3) of a unit, and the byte offsets of that load in the staging tile and of
  // store r (d column 32 b + 4 dc + r) in V^T.
  static constexpr int transpose_key(int kq, int r) { return v_key_of_slot(4 * kq + r); }
  static constexpr int transpose_load_byte(int bc, const TransposeUnit& t, int r) {
    return element_byte(bc, transpose_key(t.kq, r), 32 * t.b + 4 * t.dc);
  }
  static constexpr int transpose_store_byte(int d, const TransposeUnit& t, int r) {
    return element_byte(d, 32 * t.b + 4 * t.dc + r, 4 * t.kq);
  }

  // ---- wgmma descriptors: every operand K-major in the 128-byte swizzle -----------------------------
  static constexpr uint64_t descriptor(uint32_t addr) {
    return (uint64_t((addr & 0x3FFFF) >> 4)) | (uint64_t(16 >> 4) << 16) | (uint64_t(kSwizzleAtomBytes >> 4) << 32) |
           (uint64_t(1) << 62);
  }
  // k-step kk (8 elements, 32 bytes) of a K-major tile of `rows` rows.
  static constexpr uint32_t kmajor_step_bytes(int rows, int kk) {
    return static_cast<uint32_t>((kk / 4) * block_bytes(rows) + (kk % 4) * 32);
  }

  // ---- instructions per K/V tile and consumer warpgroup ----------------------------------------------
  static constexpr int qk_wgmmas(const TileConfig& c) { return kProducts * c.d / 8; }   // m64nBck8
  static constexpr int pv_wgmmas(const TileConfig& c) { return kProducts * c.Bc / 8; }  // m64ndk8
  static constexpr int wgmmas_per_consumer_tile(const TileConfig& c) { return qk_wgmmas(c) + pv_wgmmas(c); }
  static constexpr int q_tma_loads(const TileConfig& c) { return column_blocks(c.d) * consumers(c); }
  static constexpr int kv_tma_loads_per_tile(const TileConfig& c) { return 2 * column_blocks(c.d); }
  static constexpr int o_tma_stores(const TileConfig& c) { return column_blocks(c.d) * consumers(c); }

  // ---- what can be built -----------------------------------------------------------------------------
  static constexpr TileFault fault(const TileConfig& c) {
    if (const TileFault f = common_shape_fault(c, kVariant); f != TileFault::None) return f;
    if (c.dtype != DType::Fp32) return TileFault::ElementType;
    if (c.d != 64 && c.d != 128) return TileFault::VariantHeadDim;
    if (c.Br != 64 && c.Br != 128) return TileFault::VariantRows;
    if (c.Bc != 32 && c.Bc != 64) return TileFault::VariantCols;
    if (c.stages < 1 || c.stages > 4) return TileFault::VariantStages;
    if (c.layout != Layout::Swizzled) return TileFault::Layout;
    if (c.q_smem || c.overlap || c.ping_pong) return TileFault::FixedKnobs;
    return smem_fault(smem_bytes(c));
  }
  static std::optional<std::string> rejection(const TileConfig& c) {
    const std::string name = variant_name(kVariant);
    switch (const TileFault f = fault(c); f) {
      case TileFault::None: return std::nullopt;
      case TileFault::ElementType:
        return name + " multiplies fp32 operands as TF32, not " + std::string(dtype_name(c.dtype)) + " (drop the dtype field)";
      case TileFault::VariantHeadDim:
        return name + " needs d in {64, 128} (whole 128-byte swizzle blocks of 32 fp32), got d=" + std::to_string(c.d);
      case TileFault::VariantRows:
        return name + " needs Br in {64, 128} (1 or 2 consumer warpgroups of 64 rows), got Br=" + std::to_string(c.Br);
      case TileFault::VariantCols: return name + " needs Bc in {32, 64}, got Bc=" + std::to_string(c.Bc);
      case TileFault::VariantStages: return name + " needs 1 to 4 TMA stages (/s1 .. /s4), got " + std::to_string(c.stages);
      case TileFault::Layout:
        return name + " lays every tile out in the 128-byte TMA swizzle (layout swizzled), got " + layout_name(c.layout);
      case TileFault::FixedKnobs: return name + " has no /qsmem, /ov or /pp knob (Q always in shared memory, serial loop)";
      case TileFault::SharedMemory: return name + " " + c.name() + " " + smem_words(smem_bytes(c));
      default: return fault_words(f, c, kVariant);
    }
  }

  static constexpr const auto& kCompiled = WgmmaTf32Compiled<P>::kList;

  template <int D, int BR, int BC, int STAGES>
  struct Tile {
    static constexpr TileConfig kConfig{kVariant, D, BR, BC, Layout::Swizzled, DType::Fp32, STAGES};
    static constexpr int kConsumers = consumers(kConfig);
    static constexpr int kThreads = threads(kConfig);
    static constexpr int kSmemBytes = smem_bytes(kConfig);
    static_assert(fault(kConfig) == TileFault::None, "wgmma_tf32 cannot build this tile (rejection() says why)");
  };

  static KernelGeometry geometry(const TileConfig& c);
};

using WgmmaTf32x3 = WgmmaTf32<MmaPrecision::Tf32x3>;
using WgmmaTf32x1 = WgmmaTf32<MmaPrecision::Tf32x1>;
static_assert(first_refused_compiled<WgmmaTf32x3>() == -1, "WgmmaTf32x3::kCompiled holds a tile rejection() refuses");
static_assert(first_refused_compiled<WgmmaTf32x1>() == -1, "WgmmaTf32x1::kCompiled holds a tile rejection() refuses");

template <MmaPrecision P>
inline KernelGeometry WgmmaTf32<P>::geometry(const TileConfig& c) {
  const int nconsumers = consumers(c), d = c.d, bc = c.Bc;
  KernelGeometry g;
  g.config = c;
  g.threads_per_block = threads(c);
  g.smem_bytes = smem_bytes(c);
  g.registers_estimate = registers_estimate(c);

  // LSU shared sites: the transposer's loads and stores (conflict-free by construction), and the
  // epilogue's O pair stores (8 bytes per lane).
  const int units = transpose_units(c);
  const int vl = vland_base(c), vt = vt_base(c, 0);
  const long long trips = (units + kTransposerThreads - 1) / kTransposerThreads;
  g.smem_sites.push_back(make_site("V staging read (transposer)", SmemOp::Load, 16, SiteScope::PerKvTile, kTransposerWarps,
                                   4 * trips, [=](int warp, int lane, long long i) -> long long {
                                     const int u = static_cast<int>((i / 4) * kTransposerThreads + 32 * warp + lane) % units;
                                     return vl + transpose_load_byte(bc, transpose_unit(bc, u), static_cast<int>(i % 4));
                                   }));
  g.smem_sites.push_back(make_site("V^T store (transposer)", SmemOp::Store, 16, SiteScope::PerKvTile, kTransposerWarps,
                                   4 * trips, [=](int warp, int lane, long long i) -> long long {
                                     const int u = static_cast<int>((i / 4) * kTransposerThreads + 32 * warp + lane) % units;
                                     return vt + transpose_store_byte(d, transpose_unit(bc, u), static_cast<int>(i % 4));
                                   }));
  const int o_blocks = d / 8;
  g.smem_sites.push_back(make_site(
      "O pair store (epilogue)", SmemOp::Store, 8, SiteScope::PerBlock, 4 * nconsumers, 2LL * o_blocks,
      [=](int warp, int lane, long long i) -> long long {
        const int wg = warp / 4, wi = warp % 4, j = static_cast<int>(i / 2), h = static_cast<int>(i % 2);
        const int row = 16 * wi + lane / 4 + 8 * h, col = 8 * j + 2 * (lane % 4);
        return q_base(c) + element_byte(c.Br, kRowsPerConsumer * wg + row, col);
      }));

  // Counts of one full K/V tile per block. The tensor work as m16n8k8 TF32 equivalents (`mma`, the
  // fp32 families' tensor term: kProducts per product), the wgmma instructions in `wgmma`.
  const double t = kWarpgroupThreads * nconsumers;
  TileInstructionCounts& n = g.per_kv_tile;
  n.mma = kProducts * 4.0 * c.Br * bc * d / kMmaM16n8k8Flops;
  n.wgmma = double(nconsumers) * wgmmas_per_consumer_tile(c);
  n.exp = t * (bc / 2.0 + 2.0);
  n.ffma = t * (bc / 2.0 + 2.0 + (kSplit ? d / 2.0 : 0.0));  // 3x: O = alpha O + the tile's P V
  n.fp32_other = t * (bc + (kSplit ? 0.0 : d / 2.0) + 6.0) +
                 // the splits: P per consumer thread (Bc / 2: 3x mask + FADD, 1x cvt), and the
                 // transposer's V (1x cvt; 3x mask + FADD) and K (3x) per element
                 t * (bc / 2.0) * (kSplit ? 2.0 : 1.0) + double(bc) * d * (kSplit ? 4.0 : 1.0);
  n.shuffles = t * 4.0;
  n.barriers = 2;  // kfull and ready per consumer and tile

  set_block_traffic(g, c);
  g.kv_loads_overlap_compute = true;
  g.warps_skip_masked_tiles = false;
  g.mask_instructions_per_score = 3.0;
  g.causal_heavy_first = kCausalHeavyFirst;
  return g;
}

}  // namespace flashtune::traits
