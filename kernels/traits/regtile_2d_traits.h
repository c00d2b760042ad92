// Traits of the 2-D register-tiled kernel (seed gpt2-kernel-versions v12, rebuilt for Hopper):
// threads, shared-memory layout and index arithmetic, the one source the kernel template
// (kernels/regtile_2d.cuh) and the model's geometry both read. Plain C++17, no CUDA.
//
// Shape of the kernel (one block per Br query rows of one batch entry, FA2 loop over K/V tiles):
// the block's threads form row groups of 16 lanes (half a warp each, so row reductions are
// shuffles inside a warp). Group g owns query rows g + G*i (i < TM, G groups); lane tx of a group
// owns S columns tx + 16*j (j < TN) and O columns (tx + 16*m) * VW .. + VW-1. Per K/V tile:
//   S = Q K^T   reads Q rows and K rows as float4 chunks along d (4 FFMA per pair and chunk);
//   P -> smem   (Br x Bc, rows padded so a warp's two row groups hit disjoint banks);
//   O += P V    reads P as float4 broadcasts and V rows as float4 (float2 at d = 32).
// Q and K live row-major in shared memory; the layout switch decides how their rows are laid:
// Plain (16 lanes reading 16 K rows at one chunk hit one bank group: 16-way conflict), Padded
// (rows 4 floats longer) or Swizzled (16-byte chunk index XOR row & 7). Both conflict-free
// layouts keep every store 16 bytes wide, so K, V and Q arrive by cp.async (no register staging),
// single-buffered but overlapped: V_j loads during QK^T_j, K_{j+1} during P V_j.
#pragma once

#include <optional>
#include <string>

#include "kernels/traits/kernel_geometry.h"
#include "kernels/traits/tile_config.h"
#include "kernels/traits/traits_common.h"

namespace flashtune::traits {

struct RegTile2D {
  static constexpr Variant kVariant = Variant::RegTile2D;
  // Causal query tiles run heavy first (kernels/attention_params.cuh block_tensors), so the grid
  // is ordered batch-fastest (traits::grid_order); the launch and the model read this flag.
  static constexpr bool kCausalHeavyFirst = true;

  // ---- thread grid ------------------------------------------------------------------------
  static constexpr int kGroupLanes = 16;  // lanes that share a row group (half a warp)
  // 256 threads from Br = 64 up; 128 below, so that small tiles still give each thread >= 2 rows.
  static constexpr int threads(const TileConfig& c) { return c.Br >= 64 ? 256 : 128; }
  static constexpr int row_groups(const TileConfig& c) { return threads(c) / kGroupLanes; }
  static constexpr int rows_per_thread(const TileConfig& c) { return c.Br / row_groups(c); }  // TM
  static constexpr int cols_per_thread(const TileConfig& c) { return c.Bc / kGroupLanes; }    // TN
  // O columns per thread move as one float4 (d >= 64) or float2 (d = 32) per 16-lane row.
  static constexpr int o_vec_width(int d) { return d >= 64 ? 4 : 2; }
  static constexpr int o_vecs_per_thread(int d) { return d / (kGroupLanes * o_vec_width(d)); }
  static constexpr int o_cols_per_thread(int d) { return d / kGroupLanes; }  // TD

  // Which row group and lane a thread is: the two halves of warp w are groups 2w and 2w + 1.
  static constexpr int group_of(int tid) { return 2 * (tid / 32) + (tid % 32) / kGroupLanes; }
  static constexpr int lane_in_group(int tid) { return tid % kGroupLanes; }
  // Tile row of the thread's i-th query row (strided: a warp's two groups read adjacent rows).
  static constexpr int q_row(int group, int i, int groups) { return group + groups * i; }
  // Tile row of K (= column of S) of the thread's j-th score column.
  static constexpr int k_row(int lane, int j) { return lane + kGroupLanes * j; }
  // First O (and V) column of the thread's m-th vector.
  static constexpr int o_col(int lane, int m, int d) { return o_vec_width(d) * (lane + kGroupLanes * m); }

  // ---- shared-memory layout (offsets in floats) --------------------------------------------
  static constexpr int qk_stride(int d, Layout l) { return l == Layout::Padded ? d + 4 : d; }
  // Float offset of columns col4 .. col4+3 (col4 a multiple of 4) of row `row` of the Q or K tile.
  static constexpr int qk_offset(int d, Layout l, int row, int col4) {
    const int chunk = col4 / 4;
    const int placed = l == Layout::Swizzled ? (chunk ^ (row & 7)) : chunk;
    return row * qk_stride(d, l) + 4 * placed;
  }
  static constexpr int v_offset(int d, int row, int col) { return row * d + col; }
  // S/P rows: a warp's two row groups write adjacent rows with 16 lanes each; a row stride that
  // is 16 mod 32 floats puts them on disjoint banks (and their float4 reads on distinct chunks).
  static constexpr int s_stride(int bc) { return bc % 32 == 0 ? bc + 16 : bc; }
  static constexpr int s_offset(int bc, int row, int col) { return row * s_stride(bc) + col; }

  static constexpr int q_base(const TileConfig&) { return 0; }
  static constexpr int k_base(const TileConfig& c) { return c.Br * qk_stride(c.d, c.layout); }
  static constexpr int v_base(const TileConfig& c) { return k_base(c) + c.Bc * qk_stride(c.d, c.layout); }
  static constexpr int s_base(const TileConfig& c) { return v_base(c) + c.Bc * c.d; }
  // Online-softmax state per query row (running max m, running sum l): kept in shared memory, not
  // registers, so the S and O register tiles of Br = 128 fit in 128 registers without spills.
  static constexpr int stat_base(const TileConfig& c) { return s_base(c) + c.Br * s_stride(c.Bc); }
  static constexpr int m_offset(int row) { return row; }
  static constexpr int l_offset(int br, int row) { return br + row; }
  static constexpr int smem_floats(const TileConfig& c) { return stat_base(c) + 2 * c.Br; }
  static constexpr int smem_bytes(const TileConfig& c) { return 4 * smem_floats(c); }

  // Rough live registers per thread (S and O tiles, one K/V fragment, softmax state, addressing)
  // that chooses the launch bound below (min_blocks_per_sm). Changing it changes the compiled
  // kernels; the model's estimate of what ptxas then uses is registers_estimate().
  static constexpr int launch_bound_registers(const TileConfig& c) {
    const int tm = rows_per_thread(c), tn = cols_per_thread(c), td = o_cols_per_thread(c.d);
    return tm * tn + tm * td + 4 * tn + 4 + 32;
  }
  // Blocks per SM the compiler is asked to fit (caps registers at 65536 / (threads * blocks)).
  // Shared memory decides first: where only one block fits an SM, registers may grow to 255.
  static constexpr int kSmemPerSmBytes = 228 * 1024;  // sm_90, of which 1 KB per block is reserved
  static constexpr int blocks_per_sm_by_smem(const TileConfig& c) { return kSmemPerSmBytes / (smem_bytes(c) + 1024); }
  static constexpr int min_blocks_per_sm(const TileConfig& c) {
    const int by_regs = launch_bound_registers(c) <= 128 ? 65536 / (threads(c) * 128) : 1;
    const int by_smem = blocks_per_sm_by_smem(c);
    return by_smem < by_regs ? (by_smem > 0 ? by_smem : 1) : by_regs;
  }

  // Registers per thread the launch bound leaves the compiler.
  static constexpr int register_cap(const TileConfig& c) { return launch_register_cap(threads(c), min_blocks_per_sm(c)); }
  // Registers per thread, for the model's occupancy (a profile's compiled value wins): 1.5 per
  // element of the S and O register tiles (TM x TN + TM x TD), 8 per S column (K fragments),
  // one per O column and 54 for softmax state and addressing, capped at register_cap (ptxas fills
  // the cap where the tiles are large: 22 of the 42 compiled configs sit exactly at 128).
  // Calibrated on the ptxas report of the full build (tests/data/ptxas_registers_sm90.json,
  // tests/kernels_registers_test.cpp): mean error 5%, worst 32% (128-thread tiles at d = 128,
  // where ptxas takes 190-255), the H200 blocks per SM of every compiled config right.
  static constexpr int registers_estimate(const TileConfig& c) {
    const int tm = rows_per_thread(c), tn = cols_per_thread(c), td = o_cols_per_thread(c.d);
    const int r = 54 + 3 * (tm * tn + tm * td) / 2 + 8 * tn + td;
    return r < register_cap(c) ? r : register_cap(c);
  }
  // Unroll factors of the two inner loops (QK^T over d in float4 steps, PV over Bc in 4-key steps).
  // Measured on an H200 (1 / 2 / 4 each): 4 / 4 was fastest or within 1% on every tile tried
  // (t22 with 128 x 128: 13.40 ms against 13.90 ms at 1 / 1). Where the S tile has >= 32 scores
  // per thread under a 128-register cap, QK^T unrolled 4 spills; 1 / 4 is within 0.3% there.
  static constexpr int qk_unroll(const TileConfig& c) {
    return rows_per_thread(c) * cols_per_thread(c) >= 32 && register_cap(c) <= 128 ? 1 : 4;
  }
  static constexpr int pv_unroll(const TileConfig&) { return 4; }

  // ---- what can be built -------------------------------------------------------------------
  // Every (d, Br, Bc) of the design space maps evenly onto the thread grid (Tile's static_asserts);
  // only shared memory can rule a config out.
  static constexpr TileFault fault(const TileConfig& c) {
    if (const TileFault f = common_fault(c, kVariant); f != TileFault::None) return f;
    return smem_fault(smem_bytes(c));
  }
  static std::optional<std::string> rejection(const TileConfig& c) {
    switch (const TileFault f = fault(c); f) {
      case TileFault::None: return std::nullopt;
      case TileFault::SharedMemory: return "regtile_2d " + c.name() + " " + smem_words(smem_bytes(c));
      default: return fault_words(f, c, kVariant);
    }
  }

  // ---- what the library compiles ---------------------------------------------------------------
  // Full list (42): per d, nine swizzled tiles around the fast ones (Br >= 64 with Bc >= 32 for
  // long sequences; Br = 16 / 32 for few query rows per batch entry), the tiles most likely to win
  // also padded, and two plain ones for the bank-conflict contrast (2.5-3.5x slower on the H200).
  // Left out: Bc = 16 (one score column per lane: shared-memory bound), padded/plain copies of
  // every tile (padded and swizzled measure within 5%; build time on the 2-core CI machine),
  // tiles over 227 KB, and d = 128 with 128 x 128 or 32 x 128 (one block per SM at best; 32 x 128
  // spills at 255 registers).
#if FLASHTUNE_SMALL_KERNEL_SET
  static constexpr TileConfig kCompiled[] = {
      {Variant::RegTile2D, 64, 128, 64, Layout::Swizzled},
      {Variant::RegTile2D, 64, 64, 64, Layout::Padded},
  };
#else
  static constexpr TileConfig kCompiled[] = {
      {Variant::RegTile2D, 32, 16, 64, Layout::Swizzled},
      {Variant::RegTile2D, 32, 32, 64, Layout::Swizzled},
      {Variant::RegTile2D, 32, 32, 128, Layout::Swizzled},
      {Variant::RegTile2D, 32, 64, 32, Layout::Swizzled},
      {Variant::RegTile2D, 32, 64, 64, Layout::Swizzled},
      {Variant::RegTile2D, 32, 64, 128, Layout::Swizzled},
      {Variant::RegTile2D, 32, 128, 32, Layout::Swizzled},
      {Variant::RegTile2D, 32, 128, 64, Layout::Swizzled},
      {Variant::RegTile2D, 32, 128, 128, Layout::Swizzled},
      {Variant::RegTile2D, 32, 64, 64, Layout::Padded},
      {Variant::RegTile2D, 32, 128, 32, Layout::Padded},
      {Variant::RegTile2D, 32, 128, 64, Layout::Padded},
      {Variant::RegTile2D, 32, 128, 128, Layout::Padded},
      {Variant::RegTile2D, 32, 64, 64, Layout::Plain},
      {Variant::RegTile2D, 32, 128, 64, Layout::Plain},
      {Variant::RegTile2D, 64, 16, 64, Layout::Swizzled},
      {Variant::RegTile2D, 64, 32, 64, Layout::Swizzled},
      {Variant::RegTile2D, 64, 32, 128, Layout::Swizzled},
      {Variant::RegTile2D, 64, 64, 32, Layout::Swizzled},
      {Variant::RegTile2D, 64, 64, 64, Layout::Swizzled},
      {Variant::RegTile2D, 64, 64, 128, Layout::Swizzled},
      {Variant::RegTile2D, 64, 128, 32, Layout::Swizzled},
      {Variant::RegTile2D, 64, 128, 64, Layout::Swizzled},
      {Variant::RegTile2D, 64, 128, 128, Layout::Swizzled},
      {Variant::RegTile2D, 64, 64, 64, Layout::Padded},
      {Variant::RegTile2D, 64, 128, 32, Layout::Padded},
      {Variant::RegTile2D, 64, 128, 64, Layout::Padded},
      {Variant::RegTile2D, 64, 128, 128, Layout::Padded},
      {Variant::RegTile2D, 64, 64, 64, Layout::Plain},
      {Variant::RegTile2D, 64, 128, 64, Layout::Plain},
      {Variant::RegTile2D, 128, 16, 64, Layout::Swizzled},
      {Variant::RegTile2D, 128, 32, 64, Layout::Swizzled},
      {Variant::RegTile2D, 128, 64, 32, Layout::Swizzled},
      {Variant::RegTile2D, 128, 64, 64, Layout::Swizzled},
      {Variant::RegTile2D, 128, 64, 128, Layout::Swizzled},
      {Variant::RegTile2D, 128, 128, 32, Layout::Swizzled},
      {Variant::RegTile2D, 128, 128, 64, Layout::Swizzled},
      {Variant::RegTile2D, 128, 64, 64, Layout::Padded},
      {Variant::RegTile2D, 128, 128, 32, Layout::Padded},
      {Variant::RegTile2D, 128, 128, 64, Layout::Padded},
      {Variant::RegTile2D, 128, 64, 64, Layout::Plain},
      {Variant::RegTile2D, 128, 128, 64, Layout::Plain},
  };
#endif

  // ---- what the kernel template reads --------------------------------------------------------
  template <int D, int BR, int BC, Layout L>
  struct Tile {
    static constexpr TileConfig kConfig{Variant::RegTile2D, D, BR, BC, L};
    static constexpr int kThreads = threads(kConfig);
    static constexpr int kSmemBytes = smem_bytes(kConfig);
    static constexpr int kMinBlocksPerSm = min_blocks_per_sm(kConfig);
    static constexpr int kQkUnroll = qk_unroll(kConfig);
    static constexpr int kPvUnroll = pv_unroll(kConfig);
    static constexpr int kRowGroups = row_groups(kConfig);
    static constexpr int kRowsPerThread = rows_per_thread(kConfig);
    static constexpr int kColsPerThread = cols_per_thread(kConfig);
    static constexpr int kOVecWidth = o_vec_width(D);
    static constexpr int kOVecs = o_vecs_per_thread(D);
    static constexpr int kQBase = q_base(kConfig);
    static constexpr int kKBase = k_base(kConfig);
    static constexpr int kVBase = v_base(kConfig);
    static constexpr int kSBase = s_base(kConfig);
    static constexpr int kStatBase = stat_base(kConfig);
    static_assert(BR % row_groups(kConfig) == 0 && BC % kGroupLanes == 0, "tile must map onto the thread grid");
    static_assert(D % (kGroupLanes * o_vec_width(D)) == 0, "d must split into one vector per lane");
    static_assert(fault(kConfig) == TileFault::None, "regtile_2d cannot build this tile (rejection() says why)");
  };

  // ---- model geometry ----------------------------------------------------------------------
  static KernelGeometry geometry(const TileConfig& c);
};
static_assert(first_refused_compiled<RegTile2D>() == -1, "RegTile2D::kCompiled holds a tile rejection() refuses");

// Byte address helpers for geometry(): every lambda goes through the same functions as the kernel.
inline KernelGeometry RegTile2D::geometry(const TileConfig& c) {
  const int nthreads = threads(c), groups = row_groups(c), warps = nthreads / 32;
  const int tm = rows_per_thread(c), tn = cols_per_thread(c), td = o_cols_per_thread(c.d);
  const int vw = o_vec_width(c.d), nv = o_vecs_per_thread(c.d);
  const int d = c.d, bc = c.Bc;
  const Layout layout = c.layout;
  const int qb = q_base(c), kb = k_base(c), vb = v_base(c), sb = s_base(c);

  KernelGeometry g;
  g.config = c;
  g.threads_per_block = nthreads;
  g.smem_bytes = smem_bytes(c);
  g.registers_estimate = registers_estimate(c);

  // Cooperative cp.async tile loads (LDGSTS, SmemOp::AsyncCopy): float4 number idx = tid + trip * threads.
  auto qk_store = [=](std::string name, SiteScope scope, int rows, int base) {
    return make_tile_copy_site(std::move(name), scope, warps, rows, d, nthreads,
                               [=](int row, int col) { return 4LL * (base + qk_offset(d, layout, row, col)); });
  };
  g.smem_sites.push_back(qk_store("Q tile store (cp.async)", SiteScope::PerBlock, c.Br, qb));
  g.smem_sites.push_back(qk_store("K tile store (cp.async)", SiteScope::PerKvTile, c.Bc, kb));
  g.smem_sites.push_back(make_tile_copy_site("V tile store (cp.async)", SiteScope::PerKvTile, warps, c.Bc, d, nthreads,
                                             [=](int row, int col) { return 4LL * (vb + v_offset(d, row, col)); }));
  // S = Q K^T: per float4 chunk kk of d, TN K-row reads then TM Q-row reads (instance = kk * T + t).
  g.smem_sites.push_back(make_site("K read in QK^T", SmemOp::Load, 16, SiteScope::PerKvTile, warps,
                                   static_cast<long long>(d / 4) * tn,
                                   [=](int, int lane, long long i) -> long long {
                                     const int kk = static_cast<int>(i / tn), j = static_cast<int>(i % tn);
                                     return 4LL * (kb + qk_offset(d, layout, k_row(lane_in_group(lane), j), 4 * kk));
                                   }));
  g.smem_sites.push_back(make_site("Q read in QK^T", SmemOp::Load, 16, SiteScope::PerKvTile, warps,
                                   static_cast<long long>(d / 4) * tm,
                                   [=](int warp, int lane, long long i) -> long long {
                                     const int kk = static_cast<int>(i / tm), r = static_cast<int>(i % tm);
                                     const int grp = group_of(warp * 32 + lane);
                                     return 4LL * (qb + qk_offset(d, layout, q_row(grp, r, groups), 4 * kk));
                                   }));
  // P = exp2(...) written element by element (instance = i * TN + j).
  g.smem_sites.push_back(make_site("P store", SmemOp::Store, 4, SiteScope::PerKvTile, warps,
                                   static_cast<long long>(tm) * tn,
                                   [=](int warp, int lane, long long i) -> long long {
                                     const int r = static_cast<int>(i / tn), j = static_cast<int>(i % tn);
                                     const int grp = group_of(warp * 32 + lane);
                                     return 4LL * (sb + s_offset(bc, q_row(grp, r, groups), k_row(lane_in_group(lane), j)));
                                   }));
  // Online-softmax state: every lane reads m and l of its rows (instance = 2 * i + {0: m, 1: l}),
  // lane 0 of each row group writes them back; the epilogue reads l once per row.
  const int stb = stat_base(c), br = c.Br;
  auto stat_address = [=](int warp, int lane, long long i) -> long long {
    const int r = static_cast<int>(i / 2), grp = group_of(warp * 32 + lane);
    const int row = q_row(grp, r, groups);
    return 4LL * (stb + (i % 2 == 0 ? m_offset(row) : l_offset(br, row)));
  };
  g.smem_sites.push_back(make_site("softmax state read", SmemOp::Load, 4, SiteScope::PerKvTile, warps,
                                   2LL * tm, stat_address));
  g.smem_sites.push_back(make_site("softmax state write", SmemOp::Store, 4, SiteScope::PerKvTile, warps, 2LL * tm,
                                   [=](int warp, int lane, long long i) -> long long {
                                     return lane_in_group(lane) == 0 ? stat_address(warp, lane, i) : -1;
                                   }));
  g.smem_sites.push_back(make_site("l read in epilogue", SmemOp::Load, 4, SiteScope::PerBlock, warps, tm,
                                   [=](int warp, int lane, long long i) -> long long {
                                     return stat_address(warp, lane, 2 * i + 1);
                                   }));
  // O += P V: per 4 keys kc4, 4 x NV V-row reads, then TM float4 P reads.
  g.smem_sites.push_back(make_site("V read in PV", SmemOp::Load, 4 * vw, SiteScope::PerKvTile, warps,
                                   static_cast<long long>(bc) * nv,
                                   [=](int, int lane, long long i) -> long long {
                                     const int key = static_cast<int>(i / nv), m = static_cast<int>(i % nv);
                                     return 4LL * (vb + v_offset(d, key, o_col(lane_in_group(lane), m, d)));
                                   }));
  g.smem_sites.push_back(make_site("P read in PV", SmemOp::Load, 16, SiteScope::PerKvTile, warps,
                                   static_cast<long long>(bc / 4) * tm,
                                   [=](int warp, int lane, long long i) -> long long {
                                     const int kc4 = static_cast<int>(i / tm), r = static_cast<int>(i % tm);
                                     const int grp = group_of(warp * 32 + lane);
                                     return 4LL * (sb + s_offset(bc, q_row(grp, r, groups), 4 * kc4));
                                   }));

  // Thread-level counts of one full K/V tile (per thread, times threads).
  const double t = nthreads;
  TileInstructionCounts& n = g.per_kv_tile;
  // QK^T + PV dot products, the exp2 argument fmaf(s, c, -m) and l = l * alpha + rowsum.
  n.ffma = t * (double(tm) * tn * d + double(tm) * td * bc + double(tm) * tn + tm);
  // Row max (local + 4 shuffle steps), m scaling, alpha argument, row sum adds (local + 4 shuffle
  // steps), O rescale.
  n.fp32_other =
      t * (double(tm) * (tn - 1) + 4.0 * tm + 3.0 * tm + double(tm) * (tn - 1) + 4.0 * tm + double(tm) * td);
  n.exp = t * (double(tm) * tn + tm);  // P and alpha
  n.shuffles = t * 8.0 * tm;           // row max, then row sum: xor 8, 4, 2, 1 each
  n.barriers = 2;                      // K (and P, V) ready; then P and V ready

  set_block_traffic(g, c);
  // V_t is copied during QK^T and K_{t+1} during PV (regtile_2d.cuh): the loads overlap compute.
  g.kv_loads_overlap_compute = true;
  g.causal_heavy_first = kCausalHeavyFirst;
  return g;
}

}  // namespace flashtune::traits
