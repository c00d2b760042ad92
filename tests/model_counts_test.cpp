// Counts pinned to hand-derived formulas on a small hand-built geometry, causal tile visits
// against a brute-force walk, and the geometry analysis of a shipped variant's sites.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>

#include "kernels/traits/variants.h"
#include "model/config_catalog.h"
#include "model/counts.h"
#include "model/geometry_analysis.h"

namespace flashtune::model {
namespace {

// A toy kernel: 32 threads, Br = 32, Bc = 16, d = 32, with three sites whose costs are known:
//  "unit"     per K/V tile, 3 float reads at consecutive words          -> 3 requests, 3 wavefronts
//  "column"   per K/V tile, 2 float reads 32 words apart across lanes   -> 2 requests, 64 wavefronts
//  "q vector" per block, 1 float4 read, consecutive                     -> 1 request, 4 wavefronts
KernelGeometry toy_geometry() {
  KernelGeometry g;
  g.config = TileConfig{Variant::RowSmem, 32, 32, 16, Layout::Plain};
  g.threads_per_block = 32;
  g.smem_bytes = 8192;
  g.registers_estimate = 64;
  g.per_kv_tile = {2.0 * 32 * 16 * 32, 100, 50, 0, 2};
  g.q_bytes_per_block = 32 * 32 * 4;
  g.o_bytes_per_block = 32 * 32 * 4;
  g.kv_bytes_per_kv_tile = 2 * 16 * 32 * 4;
  auto site = [](std::string name, SiteScope scope, int width, long long inst, auto addr) {
    SmemSite s;
    s.name = std::move(name);
    s.scope = scope;
    s.bytes_per_lane = width;
    s.warps = 1;
    s.instances = inst;
    s.byte_address = addr;
    return s;
  };
  g.smem_sites.push_back(site("unit", SiteScope::PerKvTile, 4, 3, [](int, int l, long long i) { return 4LL * l + 128 * i; }));
  g.smem_sites.push_back(site("column", SiteScope::PerKvTile, 4, 2, [](int, int l, long long i) { return 128LL * l + 4 * i; }));
  g.smem_sites.push_back(site("q vector", SiteScope::PerBlock, 16, 1, [](int, int l, long long) { return 16LL * l; }));
  return g;
}

TEST(GeometryAnalysis, SitesOfTheToyKernel) {
  const GeometryAnalysis a = analyse_geometry(toy_geometry());
  ASSERT_EQ(a.sites.size(), 3u);
  EXPECT_DOUBLE_EQ(a.sites[0].wavefronts, 3);
  EXPECT_DOUBLE_EQ(a.sites[0].conflict_degree(), 1.0);
  EXPECT_DOUBLE_EQ(a.sites[1].wavefronts, 64);
  EXPECT_DOUBLE_EQ(a.sites[1].conflict_degree(), 32.0);
  EXPECT_DOUBLE_EQ(a.sites[2].wavefronts, 4);
  EXPECT_DOUBLE_EQ(a.requests_per_kv_tile, 5);
  EXPECT_DOUBLE_EQ(a.wavefronts_per_kv_tile, 67);
  EXPECT_DOUBLE_EQ(a.ideal_per_kv_tile, 5);
  EXPECT_DOUBLE_EQ(a.requests_per_block, 1);
  EXPECT_DOUBLE_EQ(a.wavefronts_per_block, 4);
}

TEST(GeometryAnalysis, AddressOutsideSharedMemoryIsAGeometryBug) {
  KernelGeometry g = toy_geometry();
  g.smem_bytes = 256;
  EXPECT_THROW(analyse_geometry(g), std::logic_error);
}

TEST(Counts, NonCausalToyKernel) {
  const GeometryAnalysis a = analyse_geometry(toy_geometry());
  Workload w{3, 100, 32, false, 0};
  const Counts c = count_work(w, a);
  // Tr = ceil(100/32) = 4, Tc = ceil(100/16) = 7, 12 blocks, each visits all 7 tiles.
  EXPECT_EQ(c.tiles.q_tiles, 4);
  EXPECT_EQ(c.tiles.kv_tiles, 7);
  EXPECT_EQ(c.tiles.blocks, 12);
  EXPECT_EQ(c.tiles.visits, 84);
  EXPECT_EQ(c.tiles.last_tile_visits, 12);
  EXPECT_DOUBLE_EQ(c.useful_flops, 4.0 * 3 * 100 * 100 * 32);
  EXPECT_DOUBLE_EQ(c.executed_flops, 4.0 * 32 * 16 * 32 * 84);
  EXPECT_DOUBLE_EQ(c.ffma, 32768.0 * 84);
  EXPECT_DOUBLE_EQ(c.exp, 50.0 * 84);
  EXPECT_DOUBLE_EQ(c.barriers, 2.0 * 84);
  EXPECT_DOUBLE_EQ(c.smem_wavefronts, 67.0 * 84 + 4.0 * 12);
  EXPECT_DOUBLE_EQ(c.smem_requests, 5.0 * 84 + 1.0 * 12);
  // Q and O: every row once per batch entry. K/V: every block reads all 100 rows of K and V.
  EXPECT_DOUBLE_EQ(c.l2_q_bytes, 3.0 * 100 * 32 * 4);
  EXPECT_DOUBLE_EQ(c.l2_o_bytes, 3.0 * 100 * 32 * 4);
  EXPECT_DOUBLE_EQ(c.l2_kv_bytes, 12.0 * 100 * 2 * 32 * 4);
  EXPECT_DOUBLE_EQ(c.dram_compulsory_bytes, 4.0 * 3 * 100 * 32 * 4);
}

TEST(Counts, CausalToyKernelStopsAtTheDiagonal) {
  const GeometryAnalysis a = analyse_geometry(toy_geometry());
  Workload w{3, 100, 32, true, 0};
  const Counts c = count_work(w, a);
  // Query tile i visits min(7, floor((32 (i+1) - 1) / 16) + 1) tiles: 2, 4, 6, 7.
  EXPECT_EQ(c.tiles.visits, 3 * (2 + 4 + 6 + 7));
  EXPECT_EQ(c.tiles.last_tile_visits, 3);
  EXPECT_EQ(c.tiles.max_tiles_per_block, 7);
  EXPECT_DOUBLE_EQ(c.useful_flops, 2.0 * 3 * 100 * 101 * 32);
  EXPECT_DOUBLE_EQ(c.nominal_flops, 0.5 * 4.0 * 3 * 100 * 100 * 32);
  // K/V rows: 18 full-tile visits x 16 rows + 1 visit of the 4-row last tile, per batch entry.
  EXPECT_DOUBLE_EQ(c.l2_kv_bytes, 3.0 * (18 * 16 + 4) * 2 * 32 * 4);
}

TEST(Counts, CausalVisitsMatchABruteForceWalk) {
  for (int Br : {16, 32, 64, 128})
    for (int Bc : {16, 32, 64, 128})
      for (long long N : {1LL, 7LL, 16LL, 77LL, 128LL, 1000LL, 4097LL}) {
        Workload w{2, N, 64, true, 0};
        const TileVisits t = count_tile_visits(w, Br, Bc);
        const long long Tr = (N + Br - 1) / Br, Tc = (N + Bc - 1) / Bc;
        long long visits = 0, last = 0, max_tiles = 0;
        for (long long i = 0; i < Tr; ++i) {
          long long n = 0;
          for (long long j = 0; j < Tc; ++j)
            if (j * Bc <= (i + 1) * Br - 1) {
              ++n;
              if (j == Tc - 1) ++last;
            }
          visits += n;
          max_tiles = std::max(max_tiles, n);
        }
        SCOPED_TRACE("Br=" + std::to_string(Br) + " Bc=" + std::to_string(Bc) + " N=" + std::to_string(N));
        EXPECT_EQ(t.visits, 2 * visits);
        EXPECT_EQ(t.last_tile_visits, 2 * last);
        EXPECT_EQ(t.max_tiles_per_block, max_tiles);
      }
}

TEST(Counts, ShippedRowSmemLayoutSwitchChangesOnlyTheConflicts) {
  // row_smem d=64 Br=64 Bc=32: lane t reads Q[t][k] and S[t][j]. Plain rows are 64 and 32 floats
  // long (multiples of 32 words) and 16-byte aligned, so Q is read as LDS.128 (the 8 lanes of a
  // quarter-warp on the same 4 banks: 8-way) and S as LDS.64 (16 lanes of a half-warp on the same
  // 2 banks: 16-way) or scalar stores (32-way). Padding by one float makes Q and S scalar and
  // conflict free.
  const TileConfig plain{Variant::RowSmem, 64, 64, 32, Layout::Plain};
  const TileConfig padded{Variant::RowSmem, 64, 64, 32, Layout::Padded};
  ASSERT_FALSE(tile_rejection(plain).has_value());
  ASSERT_FALSE(tile_rejection(padded).has_value());
  ConfigCatalog catalog;
  const GeometryAnalysis& p = catalog.analysis(plain);
  const GeometryAnalysis& q = catalog.analysis(padded);
  auto site = [](const GeometryAnalysis& a, const std::string& name) -> const SiteAnalysis& {
    for (const SiteAnalysis& s : a.sites)
      if (s.name == name) return s;
    throw std::runtime_error("no site " + name);
  };
  EXPECT_DOUBLE_EQ(site(p, "Q read in QK^T").conflict_degree(), 8.0);
  EXPECT_DOUBLE_EQ(site(q, "Q read in QK^T").conflict_degree(), 1.0);
  EXPECT_DOUBLE_EQ(site(p, "S store").conflict_degree(), 32.0);
  EXPECT_DOUBLE_EQ(site(q, "S store").conflict_degree(), 1.0);
  // K is read as a float4 broadcast: one wavefront per quarter-warp whatever the layout.
  EXPECT_DOUBLE_EQ(site(p, "K read in QK^T").conflict_degree(), 1.0);
  EXPECT_DOUBLE_EQ(site(p, "S read in PV").conflict_degree(), 16.0);
  EXPECT_DOUBLE_EQ(site(q, "S read in PV").conflict_degree(), 1.0);
  // Q read: plain Bc x d/4 LDS.128 per warp at 32 wavefronts each, padded Bc x d scalar reads at
  // one wavefront each; 2 warps. Plain still moves 8x the wavefronts.
  EXPECT_DOUBLE_EQ(site(p, "Q read in QK^T").requests, 2.0 * 32 * 16);
  EXPECT_DOUBLE_EQ(site(p, "Q read in QK^T").wavefronts, 32.0 * 2 * 32 * 16);
  EXPECT_DOUBLE_EQ(site(q, "Q read in QK^T").requests, 2.0 * 32 * 64);
  EXPECT_DOUBLE_EQ(site(q, "Q read in QK^T").wavefronts, 2.0 * 32 * 64);
  // S read: plain one LDS.64 per two keys (32 wavefronts), padded one LDS per key.
  EXPECT_DOUBLE_EQ(site(p, "S read in PV").requests, 2.0 * 16);
  EXPECT_DOUBLE_EQ(site(p, "S read in PV").wavefronts, 32.0 * 2 * 16);
  EXPECT_DOUBLE_EQ(site(q, "S read in PV").requests, 2.0 * 32);
  EXPECT_EQ(p.per_kv_tile.ffma, q.per_kv_tile.ffma);
}

// Shared-memory work split by op as Nsight Compute splits it: ncu's op_st on the H200 for these
// two regtile_2d configs on t10 was 2.0 M wavefronts each, the P and softmax-state stores; the
// cp.async tile copies (LDGSTS) are counted apart, under op_ldgsts.
TEST(Counts, RegTileCpAsyncCopiesAreCountedApartFromStores) {
  const Workload t10{10, 2048, 64, false, 0};
  ConfigCatalog catalog;
  for (const TileConfig& c : {TileConfig{Variant::RegTile2D, 64, 64, 64, Layout::Padded},
                              TileConfig{Variant::RegTile2D, 64, 128, 64, Layout::Swizzled}}) {
    const Counts n = count_work(t10, catalog.analysis(c));
    EXPECT_NEAR(n.smem_store_wavefronts, 2.0e6, 0.05e6) << c.name();
    EXPECT_GT(n.smem_async_copy_wavefronts, 0.5e6) << c.name();
    EXPECT_DOUBLE_EQ(n.smem_load_wavefronts + n.smem_store_wavefronts + n.smem_async_copy_wavefronts,
                     n.smem_wavefronts)
        << c.name();
    EXPECT_DOUBLE_EQ(n.smem_load_requests + n.smem_store_requests + n.smem_async_copy_requests, n.smem_requests)
        << c.name();
  }
  // K and V, 64 rows x 64 floats each per tile, 16 bytes per lane: 2 x 1024 copies per block and
  // tile = 2 x 1024 / 32 warp instructions at 4 wavefronts (512 bytes) each.
  const Counts n = count_work(t10, catalog.analysis({Variant::RegTile2D, 64, 64, 64, Layout::Padded}));
  const double visits = double(n.tiles.visits), blocks = double(n.tiles.blocks);
  EXPECT_DOUBLE_EQ(n.smem_async_copy_requests, visits * 2 * 1024 / 32 + blocks * 64 * 64 / 4 / 32);
  EXPECT_DOUBLE_EQ(n.smem_async_copy_wavefronts, 4 * n.smem_async_copy_requests);
}

// The shared-memory data pipe's wavefronts, as ncu counts them all
// (l1tex__data_pipe_lsu_wavefronts_mem_shared.sum, H200, B=4 N=4096 d=64 non-causal,
// scripts/shuffle_path_check.sh, docs/results/h200-shuffle-path-688a038.txt): loads and stores
// their wavefronts, a warp shuffle one, a cp.async copy none (its 16.8 M fill wavefronts on the
// regtile_2d case, ncu's op_ldgsts, are not in the total). warp_groups issues about one shuffle per
// shared request: without them it counts 20% short.
TEST(Counts, SharedPipeServesLoadsStoresAndShuffles) {
  const Workload w{4, 4096, 64, false, 0};
  ConfigCatalog catalog;
  const struct {
    TileConfig config;
    double measured;
  } cases[] = {{{Variant::WarpGroups, 64, 32, 16, Layout::Plain}, 177692236},
               {{Variant::WarpGroups, 64, 128, 64, Layout::Plain}, 169115009},
               {{Variant::RegTile2D, 64, 16, 64, Layout::Swizzled}, 178404911},
               {{Variant::RowReg, 64, 32, 32, Layout::Plain}, 149060324}};
  for (const auto& c : cases) {
    const Counts n = count_work(w, catalog.analysis(c.config));
    EXPECT_NEAR(n.shared_pipe_wavefronts / c.measured, 1.0, 0.02) << c.config.name();
    EXPECT_DOUBLE_EQ(n.shared_pipe_wavefronts, n.smem_load_wavefronts + n.smem_store_wavefronts + n.shuffles / 32)
        << c.config.name();
    EXPECT_DOUBLE_EQ(n.shared_pipe_requests, n.smem_load_requests + n.smem_store_requests + n.shuffles / 32)
        << c.config.name();
  }
  const Counts groups = count_work(w, catalog.analysis(cases[0].config));
  EXPECT_LT(groups.smem_wavefronts, 0.85 * cases[0].measured);
  // regtile_2d reduces each row's max and then its sum over 16 lanes: 8 shuffles per row and tile.
  const Counts regtile = count_work(w, catalog.analysis(cases[2].config));
  EXPECT_NEAR(regtile.smem_async_copy_wavefronts, 16809984, 1);  // ncu op_ldgsts, not in the total
  EXPECT_GT(regtile.shared_pipe_wavefronts + regtile.smem_async_copy_wavefronts, 1.08 * cases[2].measured);
}

// FFMA and XU (MUFU) thread instructions of the compiled kernels, which the H200's CUPTI counters
// match exactly on all 1525 measurements of profiles/nvidia-h200.json
// (tests/model_counter_check_test.cpp): per K/V tile the QK^T and PV FMAs plus what each variant's
// softmax fuses, per query row < N the epilogue's 1/l. N = 1000 leaves 24 or 40 tail rows that
// run the loop but not the epilogue.
TEST(Counts, CompiledFfmaAndMufuPerTileAndPerRow) {
  const Workload w{3, 1000, 64, false, 0};
  const double rows = 3.0 * 1000;
  ConfigCatalog catalog;
  {  // row_reg 128 x 32: one thread per row; exp per score and one rescale; __fdividef(1, l).
    const Counts n = count_work(w, catalog.analysis({Variant::RowReg, 64, 128, 32, Layout::Plain}));
    const double v = double(n.tiles.visits);
    EXPECT_DOUBLE_EQ(n.ffma, 2.0 * 128 * 32 * 64 * v);
    EXPECT_DOUBLE_EQ(n.exp, 128.0 * (32 + 1) * v + rows);
  }
  {  // warp_groups 64 x 32, G = 8 lanes per row pair: each lane's l = l * alpha + p is one FFMA
     // per row and tile (Br x G); each lane exps its Bc / G keys and alpha, and divides at the end.
    const Counts n = count_work(w, catalog.analysis({Variant::WarpGroups, 64, 64, 32, Layout::Plain}));
    const double v = double(n.tiles.visits);
    EXPECT_DOUBLE_EQ(n.ffma, (2.0 * 64 * 32 * 64 + 64.0 * 8) * v);
    EXPECT_DOUBLE_EQ(n.exp, 64.0 * (32 + 8) * v + 8 * rows);
  }
  {  // regtile_2d 64 x 64: the exp2 argument fmaf(s, c, -m) per score, l = fmaf(l, alpha, sum)
     // on one lane per row; 16 lanes per row exp their scores and alpha; 1.0f / l (IEEE: MUFU.RCP
     // and two FFMAs) on each of the 16 lanes.
    const Counts n = count_work(w, catalog.analysis({Variant::RegTile2D, 64, 64, 64, Layout::Padded}));
    const double v = double(n.tiles.visits);
    EXPECT_DOUBLE_EQ(n.ffma, (2.0 * 64 * 64 * 64 + 64.0 * 64 + 64) * v + 2 * 16 * rows);
    EXPECT_DOUBLE_EQ(n.exp, 64.0 * (64 + 16) * v + 16 * rows);
  }
}

// ncu's bank conflicts are wavefronts less the conflict-free ideal, per op (docs/counters.md).
TEST(Counts, IdealWavefrontsByOp) {
  const Workload t10{10, 2048, 64, false, 0};
  ConfigCatalog catalog;
  const Counts plain = count_work(t10, catalog.analysis({Variant::RowSmem, 64, 64, 32, Layout::Plain}));
  EXPECT_DOUBLE_EQ(plain.smem_load_ideal + plain.smem_store_ideal + plain.smem_async_copy_ideal,
                   plain.smem_ideal_wavefronts);
  // S store: Bc 4-byte stores per warp per tile, one ideal wavefront each; the K and V tile
  // stores: 64 x 32 floats each as float4 by 64 threads, 8 trips of 2 warps at 4 wavefronts.
  const double v = double(plain.tiles.visits), blocks = double(plain.tiles.blocks);
  EXPECT_DOUBLE_EQ(plain.smem_store_ideal, v * (2 * 32 + 2 * 8 * 2 * 4) + blocks * 16 * 2 * 4);
  EXPECT_GT(plain.smem_store_wavefronts, plain.smem_store_ideal);  // the S column store is 32-way
}

// ---- tensor-core family: mma.sync counts ----------------------------------------------------

// The kernel's loop (kernels/mma_tf32.cuh): block q visits t < kv_tile_count (min(Tc, floor(((q+1)Br
// - 1) / Bc) + 1) when causal), and warp w skips tile t when causal and t Bc > q Br + 16 w + 15.
// Returns the (block, warp, tile) triples that compute, over the whole grid.
long long brute_force_warp_tiles(const Workload& w, int Br, int Bc) {
  const long long Tr = (w.N + Br - 1) / Br, Tc = (w.N + Bc - 1) / Bc;
  long long n = 0;
  for (long long q = 0; q < Tr; ++q) {
    const long long tiles = w.causal ? std::min(Tc, ((q + 1) * Br - 1) / Bc + 1) : Tc;
    for (int warp = 0; warp < Br / 16; ++warp)
      for (long long t = 0; t < tiles; ++t)
        if (!(w.causal && t * Bc > q * Br + 16 * warp + 15)) ++n;
  }
  return n * w.B;
}

// Non-causal: warps x products x (Bc/8 x d/8 QK^T + d/8 x Bc/8 PV) per tile x tiles x blocks.
TEST(Counts, MmaCountNonCausalIsTheHandFormula) {
  ConfigCatalog catalog;
  // N = 1000 is not a multiple of any tile: the tails compute fully.
  for (const TileConfig& c : {TileConfig{Variant::MmaTf32x3, 64, 64, 32, Layout::Swizzled},
                              TileConfig{Variant::MmaTf32x1, 64, 128, 64, Layout::Swizzled},
                              TileConfig{Variant::MmaTf32x3, 128, 32, 64, Layout::Swizzled}}) {
    SCOPED_TRACE(c.name());
    const Workload w{7, 1000, c.d, false, 0};
    const int products = c.variant == Variant::MmaTf32x3 ? 3 : 1;
    const double warps = c.Br / 16.0, per_tile = warps * products * (c.Bc / 8.0 * c.d / 8.0 * 2);
    const double tiles = std::ceil(1000.0 / c.Bc), blocks = 7 * std::ceil(1000.0 / c.Br);
    const Counts n = count_work(w, catalog.analysis(c));
    EXPECT_DOUBLE_EQ(n.mma, per_tile * tiles * blocks);
    EXPECT_DOUBLE_EQ(n.warp_tile_visits, warps * tiles * blocks);
    EXPECT_DOUBLE_EQ(n.mma_flops(), n.mma * 2048);
    // mma FLOPs = products x the 4 Br Bc d of every executed tile.
    EXPECT_DOUBLE_EQ(n.mma_flops(), products * n.executed_flops);
    // The 3xTF32 split's integer masks: one per split value, per lane and tile; none for 1xTF32.
    const double lanes = 32 * warps, split = 2.0 * c.Bc * c.d / 32 + c.Bc / 2.0 + c.d / 2.0;
    EXPECT_DOUBLE_EQ(n.int_logic, products == 3 ? lanes * split * tiles * blocks : 0.0);
    // Each mma is one warp instruction, each integer op a thread instruction; plus the compiled
    // code's extra ones, per computing (warp, tile) and per warp of a block.
    const GeometryAnalysis& g = catalog.analysis(c);
    EXPECT_GT(g.extra_warp_instructions_per_warp_tile, 0);
    EXPECT_DOUBLE_EQ(n.extra_warp_instructions, g.extra_warp_instructions_per_warp_tile * warps * tiles * blocks +
                                                    g.extra_warp_instructions_per_warp_block * warps * blocks);
    EXPECT_DOUBLE_EQ(n.warp_instructions, (n.ffma + n.fp32_other + n.exp + n.shuffles + n.int_logic) / 32 +
                                              n.smem_requests + n.mma + n.extra_warp_instructions);
  }
}

// Causal: warps whose 16 rows all precede a tile's first key skip it; the closed form against
// the brute-force walk of the kernel's loops, over shapes where Bc < 16, = Br, > Br, and tails.
TEST(Counts, MmaCountCausalSkipsMaskedWarpTilesLikeTheKernel) {
  ConfigCatalog catalog;
  for (const TileConfig& c : {TileConfig{Variant::MmaTf32x3, 64, 64, 32, Layout::Swizzled},
                              TileConfig{Variant::MmaTf32x3, 64, 32, 128, Layout::Swizzled},
                              TileConfig{Variant::MmaTf32x1, 64, 128, 64, Layout::Swizzled},
                              TileConfig{Variant::MmaTf32x3, 32, 128, 32, Layout::Swizzled}}) {
    for (long long N : {1LL, 15LL, 16LL, 17LL, 100LL, 127LL, 128LL, 129LL, 777LL, 2048LL, 3001LL}) {
      const Workload w{3, N, c.d, true, 0};
      SCOPED_TRACE(c.name() + " N=" + std::to_string(N));
      const GeometryAnalysis& g = catalog.analysis(c);
      const long long brute = brute_force_warp_tiles(w, c.Br, c.Bc);
      EXPECT_EQ(count_warp_tile_visits(w, c.Br, c.Bc, 16), brute);
      const Counts n = count_work(w, g);
      const int products = c.variant == Variant::MmaTf32x3 ? 3 : 1;
      EXPECT_DOUBLE_EQ(n.mma, double(brute) * products * (c.Bc / 8 * c.d / 8 * 2));
      // Skipping only ever removes work: at most every warp of every visited tile.
      EXPECT_LE(n.warp_tile_visits, double(n.tiles.visits) * (c.Br / 16));
      // Barriers and the block's cp.async tile copies stay per visited tile.
      EXPECT_DOUBLE_EQ(n.barriers, double(n.tiles.visits));
    }
  }
  // Non-causal, the same walk gives every warp every tile.
  const Workload w{2, 333, 64, false, 0};
  EXPECT_EQ(count_warp_tile_visits(w, 64, 32, 16), brute_force_warp_tiles(w, 64, 32));
  // A causal grid of many tiles really skips: fewer warp-tiles than warps x visits.
  const Workload big{1, 4096, 64, true, 0};
  const Counts n = count_work(big, catalog.analysis({Variant::MmaTf32x3, 64, 128, 32, Layout::Swizzled}));
  EXPECT_LT(n.warp_tile_visits, 8.0 * double(n.tiles.visits));
}

// The mask runs on a (warp, tile) pair the warp computes when the tile holds a key past kv_len or
// (causal) a key past its first row's last key: the kernels' branch (kernels/mma16.cuh), walked
// pair by pair against the closed form, with a KV cache (bottom-right causal) too.
TEST(Counts, MaskedWarpTilesMatchTheKernelsBranch) {
  for (const Workload& w : {Workload{3, 336, 32, true, 0}, Workload{2, 228, 32, false, 0}, Workload{1, 1000, 64, true, 0},
                            Workload{2, 512, 64, false, 0}, Workload{1, 77, 64, true, 0, DType::Bf16, 300},
                            Workload{2, 129, 128, true, 0}}) {
    for (const auto& [Br, Bc, rows] : {std::tuple{64, 64, 32}, std::tuple{128, 32, 32}, std::tuple{128, 128, 32},
                                       std::tuple{64, 32, 16}, std::tuple{32, 64, 16}}) {
      SCOPED_TRACE("N=" + std::to_string(w.N) + " keys=" + std::to_string(w.keys()) + " Br=" + std::to_string(Br) +
                   " Bc=" + std::to_string(Bc));
      const long long keys = w.keys(), off = w.causal ? keys - w.N : 0;
      const long long Tr = (w.N + Br - 1) / Br, Tc = (keys + Bc - 1) / Bc;
      long long masked = 0;
      for (long long q = 0; q < Tr; ++q)
        for (int v = 0; v < Br / rows; ++v) {
          const long long first = q * Br + rows * v + off, last = first + rows - 1;
          for (long long t = 0; t < Tc; ++t) {
            const long long kv0 = t * Bc;
            if (w.causal && kv0 > last) continue;  // skipped (and the block's loop stops there)
            if (kv0 + Bc > keys || (w.causal && kv0 + Bc - 1 > first)) ++masked;
          }
        }
      EXPECT_EQ(count_masked_warp_tiles(w, Br, Bc, rows), masked * w.B);
    }
  }
  // mma16 counts the mask's instructions on those pairs: 3 per score (thread-level), Bc scores per
  // lane of a 32-row warp; a non-causal grid whose tiles divide N runs none.
  ConfigCatalog catalog;
  const TileConfig c{Variant::Mma16, 32, 128, 64, Layout::Swizzled, DType::Bf16, 2, false};
  const GeometryAnalysis& g = catalog.analysis(c);
  const Workload causal{5, 336, 32, true, 0, DType::Bf16};
  const Counts n = count_work(causal, g);
  EXPECT_DOUBLE_EQ(n.masked_warp_tiles, double(count_masked_warp_tiles(causal, 128, 64, 32)));
  EXPECT_DOUBLE_EQ(n.mask_instructions, 3.0 * n.masked_warp_tiles * 32 * 64);
  EXPECT_EQ(count_work(Workload{5, 512, 32, false, 0, DType::Bf16}, g).mask_instructions, 0.0);
}

// SIMT variants issue no mma and no integer split; their counts do not depend on warp skipping.
TEST(Counts, SimtVariantsIssueNoMma) {
  ConfigCatalog catalog;
  const Workload w{2, 1000, 64, true, 0};
  const Counts n = count_work(w, catalog.analysis({Variant::RegTile2D, 64, 64, 64, Layout::Swizzled}));
  EXPECT_EQ(n.mma, 0.0);
  EXPECT_EQ(n.int_logic, 0.0);
  EXPECT_DOUBLE_EQ(n.warp_tile_visits, double(n.tiles.visits) * catalog.analysis({Variant::RegTile2D, 64, 64, 64, Layout::Swizzled}).warps_per_block);
}

}  // namespace
}  // namespace flashtune::model
