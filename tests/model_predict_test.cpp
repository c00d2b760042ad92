// The time prediction and the baselines: hand-checkable pieces (the seed model's own formulas,
// the roofline, the DRAM rule) and the directions the model must get right.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/traits/variants.h"
#include "model/baselines.h"
#include "model/block_schedule.h"
#include "model/config_catalog.h"
#include "model/memory_traffic.h"
#include "model/predict.h"
#include "model/profile.h"
#include "model/rank.h"
#include "profile/model_profile.h"

namespace flashtune::model {
namespace {

GpuSpec spec(const std::string& stem) { return load_gpu_spec(std::string(FLASHTUNE_TEST_GPU_DIR) + "/" + stem + ".json"); }

// One GPU's predictions of single configs through a catalog of their analyses, each expected to
// be served (no refusal).
struct CheckedPredictor {
  const GpuSpec& gpu;
  const Coefficients& k;
  ConfigCatalog catalog{};
  Prediction operator()(const TileConfig& c, const Workload& w) {
    Prediction p = predict(w, catalog.analysis(c), gpu, k);
    EXPECT_TRUE(p.refusal.empty()) << c.name() << ": " << p.refusal;
    return p;
  }
};

TEST(Baselines, SeedModelFollowsTheSeedReportsLoops) {
  // The seed's validation case: batch 1 x 4 heads, N = 512, d = 32, Br = Bc = 32, RTX 3090.
  const GpuSpec g = spec("nvidia-rtx-3090");
  const Workload w{4, 512, 32, false, 0};
  const TileConfig c{Variant::RowSmem, 32, 32, 32, Layout::Plain};
  const SeedEstimate s = seed_model_time(w, c, g);
  const double Br = 32, Bc = 32, d = 32, Tr = 16, Tc = 16, BH = 4;
  double flops = 0;
  for (int i = 0; i < Tr; ++i)
    for (int j = 0; j < Tc; ++j)
      flops += 2 * Br * Bc * d + Br * Bc + 2 * Br * Bc + Br * Bc + Br + 6 * Br + 2 * Br * Bc * d + 10 * Br * d;
  EXPECT_DOUBLE_EQ(s.flops, flops * BH);
  const double dram = 3 * BH * 512 * d * 4 + 2 * BH * 512 * 4 + BH * 512 * d * 4 + 2 * BH * 512 * 4;
  EXPECT_DOUBLE_EQ(s.dram_bytes, dram);
  EXPECT_DOUBLE_EQ(s.l2_bytes, dram);
  // With the seed's own RTX 3090 constants.
  EXPECT_NEAR(s.compute_s, s.flops / 35.58e12, s.compute_s * 1e-3);
  EXPECT_NEAR(s.dram_s, dram / (936.2e9 * 0.01), s.dram_s * 1e-9);
  EXPECT_NEAR(s.l2_s, dram / (1500e9 * 0.01), s.l2_s * 1e-9);
  EXPECT_NEAR(s.l1_s, s.l1_bytes * 6.5 / (3000e9 * 0.10), s.l1_s * 1e-9);
  EXPECT_STREQ(s.bound, "L1");  // the seed report: "the bottleneck in all cases is L1"
}

TEST(Baselines, RooflineIsComputeOrCompulsoryDram) {
  const GpuSpec g = spec("nvidia-h200");
  const RooflineEstimate r = roofline_time({10, 2048, 64, false, 0}, g);
  EXPECT_DOUBLE_EQ(r.compute_s, 4.0 * 10 * 2048 * 2048 * 64 / g.fp32_peak_flops());
  EXPECT_DOUBLE_EQ(r.dram_s, 16.0 * 10 * 2048 * 64 / 4800e9);
  EXPECT_DOUBLE_EQ(r.time_s, r.compute_s);
}

// The DRAM rule on row_reg d64 128x32 at N = 2048 (16 query tiles per entry, 10 entries), on the
// H200 spec or on one whose L2 is shrunk to 2 partitions x 1 MB (x 0.9 usable).
struct DramCase {
  GpuSpec gpu = spec("nvidia-h200");
  TileConfig c{Variant::RowReg, 64, 128, 32, Layout::Plain};
  ConfigCatalog cat;
  Workload w;
  Counts n;
  DramCase(bool small_l2, bool causal) : w{10, 2048, 64, causal, 0} {
    if (small_l2) gpu.l2_bytes = 2 * 1024 * 1024;
    n = count_work(w, cat.analysis(c));
  }
  DramEstimate estimate(long long resident_blocks, bool heavy_first) {
    return estimate_dram(w, c, n, resident_blocks, heavy_first, gpu, Coefficients{});
  }
};

// The memory join's exponent at k blocks resident: the fitted value at three, a plain sum never
// (above 1 for any fitted p > 1), rising with the blocks as their square root, one block the floor.
TEST(MemoryOverlap, GrowsWithTheBlocksResidentAsTheirSquareRoot) {
  const double p = 2.2;
  EXPECT_DOUBLE_EQ(resident_memory_overlap(p, kMemoryOverlapReferenceBlocks), p);
  EXPECT_NEAR(resident_memory_overlap(p, 1.0), 1.0 + 1.2 * std::sqrt(1.0 / 3.0), 1e-12);
  EXPECT_NEAR(resident_memory_overlap(p, 12.0), 1.0 + 1.2 * 2.0, 1e-12);
  EXPECT_DOUBLE_EQ(resident_memory_overlap(p, 0.5), resident_memory_overlap(p, 1.0));
  EXPECT_DOUBLE_EQ(resident_memory_overlap(1.0, 8.0), 1.0);  // no overlap stays none
  for (double k = 1; k < 16; ++k) EXPECT_LT(resident_memory_overlap(p, k), resident_memory_overlap(p, k + 1));
}

// The per-tile stall a tensor-core wave leaves exposed (stall_exposure; docs/model.md, "The per-tile
// stall exposed once per wave"): on the H100, g_n8192_b16_d64 (two mma_3xtf32 blocks resident),
// Br 64 x Bc 32 ran 1.078x Bc 64's time where the stall hidden behind the pipes predicted 1.015x.
// Exposing it costs a wave e x T x the per-tile cycles, so Bc 32 (twice the tiles) pays about twice
// Bc 64's; a SIMT kernel's wave is left as it was; a warp of two row tiles (mma16) pays 3/4 of a
// one-row-tile warp's stall for the same tiles.
TEST(StallExposure, ExposedOncePerWaveInProportionToTheTiles) {
  const GpuSpec h100 = spec("nvidia-h100-sxm");
  Coefficients hidden, exposed;
  hidden.stall_exposure = 0.0;
  exposed.stall_exposure = 1.0;
  ConfigCatalog catalog;
  const Workload w{16, 8192, 64, false, 0.0f};
  const auto extra = [&](const TileConfig& c, const Workload& wl) {
    const Prediction h = predict(wl, catalog.analysis(c), h100, hidden), e = predict(wl, catalog.analysis(c), h100, exposed);
    EXPECT_TRUE(h.refusal.empty() && e.refusal.empty()) << c.name();
    return e.time_s - h.time_s;
  };
  const TileConfig bc32{Variant::MmaTf32x3, 64, 64, 32, Layout::Swizzled}, bc64{Variant::MmaTf32x3, 64, 64, 64, Layout::Swizzled};
  const double d32 = extra(bc32, w), d64 = extra(bc64, w);
  EXPECT_GT(d64, 0.0);
  EXPECT_GT(d32 / d64, 1.6);
  EXPECT_LT(d32 / d64, 2.2);
  // Exposed once per wave: no more than the waves times the tiles of a block times the cycles.
  const Prediction p64 = predict(w, catalog.analysis(bc64), h100, exposed);
  const double bound = double(p64.waves.waves) * p64.counts.tiles.mean_tiles_per_block *
                       exposed.overlapped_iteration_cycles / h100.clock_hz();
  EXPECT_LT(d64, 1.05 * bound);
  // The SIMT families keep the maximum of pipes and chain.
  EXPECT_DOUBLE_EQ(extra(TileConfig{Variant::RegTile2D, 64, 64, 64, Layout::Swizzled}, w), 0.0);
  // mma16's warps own two m16 row tiles: 0.75 of the stall per tile (model/predict.cpp).
  const Workload wb{16, 8192, 64, false, 0.0f, DType::Bf16};
  const TileConfig m16{Variant::Mma16, 64, 128, 64, Layout::Swizzled, DType::Bf16, 2, false};
  const Prediction pm = predict(wb, catalog.analysis(m16), h100, exposed);
  const double full = double(pm.waves.waves) * pm.counts.tiles.mean_tiles_per_block *
                      exposed.overlapped_iteration_cycles / h100.clock_hz();
  EXPECT_GT(extra(m16, wb), 0.0);
  EXPECT_LT(extra(m16, wb), 0.8 * full);
}

// The stall share follows the warps per scheduler: the fitted exposure where they are the
// latency_warps per scheduler, inversely with more or fewer, never above the whole stall.
TEST(StallExposure, ShareFallsWithTheWarpsPerScheduler) {
  Coefficients k;
  k.stall_exposure = 0.45;
  k.latency_warps = 8.0;  // two per scheduler on four
  EXPECT_DOUBLE_EQ(exposed_stall_share(k, 2.0, 4.0), 0.45);
  EXPECT_DOUBLE_EQ(exposed_stall_share(k, 3.0, 4.0), 0.30);
  EXPECT_DOUBLE_EQ(exposed_stall_share(k, 1.0, 4.0), 0.90);
  EXPECT_DOUBLE_EQ(exposed_stall_share(k, 0.5, 4.0), 0.90);  // below one warp: one warp's share
  k.stall_exposure = 0.8;
  EXPECT_DOUBLE_EQ(exposed_stall_share(k, 1.0, 4.0), 1.0);  // never more than the whole stall
}

// The H100's u08 (594 entries of 336 rows, d = 32, causal, bf16) on mma16 Br 64 x Bc 64: query
// tile i visits i + 1 of the 6 K/V tiles, 21 per entry; the heavy-first grid launches the 594
// heaviest tiles (6 tiles each, 16 valid rows: 336 = 5 x 64 + 16) first, and they read every
// entry's K and V from DRAM. A wave of 528 blocks is less than the 594 entries, so those 594 blocks
// are the first; a wave of 1000 takes the next rank's 406 blocks (5 tiles, 64 rows) as well.
TEST(DramRule, HeavyFirstGridReadsTheCompulsoryKvInItsFirstBlocks) {
  const GpuSpec h100 = spec("nvidia-h100-sxm");
  ConfigCatalog catalog;
  const TileConfig c{Variant::Mma16, 32, 64, 64, Layout::Swizzled, DType::Bf16, 2, false};
  const Workload w{594, 336, 32, true, 0.0f, DType::Bf16};
  const Counts n = count_work(w, catalog.analysis(c));
  DramEstimate dram;
  dram.bytes = 60e6;
  const double kv = 2.0 * 594 * 336 * 32 * 2, row_bytes = 2.0 * 32 * 2;  // Q and O of one row
  const FirstTouch a = first_touch_shares(w, c, n, dram, 528, true);
  EXPECT_DOUBLE_EQ(a.work_share, 6.0 / 21.0);
  EXPECT_DOUBLE_EQ(a.dram_share, (kv + 594 * 16 * row_bytes) / 60e6);
  const FirstTouch b = first_touch_shares(w, c, n, dram, 1000, true);
  EXPECT_DOUBLE_EQ(b.work_share, (594 * 6 + 406 * 5) / (594.0 * 21));
  EXPECT_DOUBLE_EQ(b.dram_share, (kv + (594 * 16 + 406 * 64) * row_bytes) / 60e6);
  // predict() joins the first blocks apart from the rest: never faster than the joint join.
  const Prediction p = predict(w, catalog.analysis(c), h100, Coefficients{}, 180);
  EXPECT_DOUBLE_EQ(p.first_touch.work_share, first_touch_shares(w, c, n, p.dram, p.waves.per_wave, true).work_share);
  EXPECT_LT(p.first_touch.work_share, 1.0);
  EXPECT_GT(p.first_touch_factor, 1.0);
  const Prediction plain = predict(Workload{594, 336, 32, false, 0.0f, DType::Bf16}, catalog.analysis(c), h100, Coefficients{}, 180);
  EXPECT_DOUBLE_EQ(plain.first_touch_factor, 1.0);
  // Not batch-fastest (a kernel that launches light tiles first, or no causal mask), or a first
  // wave that holds the whole grid: the bytes come as the tiles do, one share for all.
  for (const FirstTouch& one : {first_touch_shares(w, c, n, dram, 528, false),
                                first_touch_shares(Workload{594, 336, 32, false, 0.0f, DType::Bf16}, c,
                                                   count_work(Workload{594, 336, 32, false, 0.0f, DType::Bf16}, catalog.analysis(c)),
                                                   dram, 528, true),
                                first_touch_shares(w, c, n, dram, 594 * 6, true)}) {
    EXPECT_DOUBLE_EQ(one.work_share, 1.0);
    EXPECT_DOUBLE_EQ(one.dram_share, 1.0);
  }
}

TEST(DramRule, CompulsoryWhileTheWorkingSetFits) {
  DramCase k(false, false);
  const Counts& n = k.n;
  const DramEstimate e = k.estimate(132 * 4, false);
  EXPECT_DOUBLE_EQ(e.bytes, n.dram_compulsory_bytes);
  EXPECT_DOUBLE_EQ(e.reread_hit_fraction, 1.0);
}

// All 16 query tiles of every entry are resident together (R = 528 >= 160 blocks): they sweep each
// entry's K/V in step and share every tile, so DRAM stays compulsory even though the 10 entries'
// K/V (10.5 MB) outgrow a 0.9 MB L2. The H200 counted compulsory reads in such cases (t22 with
// row_smem/row_reg: 1.00-1.01x Q+K+V, where the rule that applied the miss share to every re-read
// said up to 10.6x; docs/counters.md).
TEST(DramRule, CoResidentBlocksOfAnEntryShareItsKv) {
  DramCase k(true, false);
  const Counts& n = k.n;
  const DramEstimate e = k.estimate(132 * 4, false);
  EXPECT_EQ(e.entries_in_flight, 10);
  EXPECT_EQ(e.sweeps_per_entry, 1);
  EXPECT_LT(e.reread_hit_fraction, 0.1);
  EXPECT_DOUBLE_EQ(e.bytes, n.dram_compulsory_bytes);
}

// With 4 resident blocks an entry's 16 query tiles run in S = 4 sweeps; the 3 later sweeps re-read
// K/V after 2 entries' K/V (a sweep straddles two) and 4 Q/O tiles went through L2.
TEST(DramRule, LaterSweepsOfAnEntryMissWhenTheWorkingSetOutgrowsL2) {
  DramCase k(true, false);
  const Counts& n = k.n;
  const DramEstimate e = k.estimate(4, false);
  EXPECT_EQ(e.sweeps_per_entry, 4);
  EXPECT_EQ(e.entries_in_flight, 2);
  const double W = 2 * (2.0 * 2048 * 64 * 4) + 4 * (2.0 * 128 * 64 * 4);
  EXPECT_DOUBLE_EQ(e.working_set_bytes, W);
  const double C = 2 * 1024.0 * 1024 * 0.9;  // the whole (2 MB) L2
  const double compulsory_kv = 2.0 * 10 * 2048 * 64 * 4;
  EXPECT_NEAR(e.bytes, n.dram_compulsory_bytes + (1 - C / W) * 3 * compulsory_kv, 1.0);
  EXPECT_LT(e.bytes, n.l2_bytes());
}

// A causal grid of a heavy-first kernel runs batch-fastest (traits::grid_order): the 4 resident
// blocks are rank r of 4 different entries, so each entry's 16 query tiles come in 16 sweeps, and
// between two of them the same rank of all 10 entries runs: their K/V and 10 Q/O tiles go through
// L2. (Measured on the H200, g_n128_b8192_d32_causal regtile_2d 32x64: 2.3x the compulsory reads,
// where a window of the resident entries alone fits in L2 and predicts none.)
TEST(DramRule, BatchFastestGridsSweepEachEntryOncePerTileRank) {
  DramCase k(true, true);
  const DramEstimate e = k.estimate(4, true);
  EXPECT_EQ(e.sweeps_per_entry, 16);
  EXPECT_EQ(e.entries_in_flight, 10);
  EXPECT_DOUBLE_EQ(e.working_set_bytes, 10 * (2.0 * 2048 * 64 * 4) + 10 * (2.0 * 128 * 64 * 4));
  // Tile-fastest (a light-first kernel) keeps an entry's tiles together: 4 sweeps, 2 entries.
  const DramEstimate t = k.estimate(4, false);
  EXPECT_EQ(t.sweeps_per_entry, 4);
  EXPECT_EQ(t.entries_in_flight, 2);
  EXPECT_GT(e.bytes, t.bytes);
}

class PredictShipped : public ::testing::Test {
 protected:
  GpuSpec h200 = spec("nvidia-h200");
  ConfigCatalog catalog;
  Prediction run(const TileConfig& c, const Workload& w, const Coefficients& k = {}) {
    return predict(w, catalog.analysis(c), h200, k);
  }
  // With the shipped H200 profile's fitted coefficients and compiled registers.
  Prediction run_fitted(const TileConfig& c, const Workload& w) {
    static const ModelProfile fitted =
        load_model_profile(std::string(FLASHTUNE_TEST_GPU_DIR) + "/../../profiles/nvidia-h200.json");
    return predict(w, catalog.analysis(c), h200, fitted.coefficients, fitted.registers_for(c.name()));
  }
};

TEST_F(PredictShipped, NeverBeatsTheRooflineAndReportsEverything) {
  const Workload cases[] = {{10, 2048, 64, false, 0}, {13600, 128, 32, false, 0}, {4, 32768, 32, true, 0}};
  for (const Workload& w : cases)
    for (const TileConfig& c : compiled_tile_configs()) {
      if (config_rejection(c, w)) continue;
      SCOPED_TRACE(c.name());
      const Prediction p = run(c, w);
      ASSERT_TRUE(p.refusal.empty()) << p.refusal;
      // The roofline baseline is the FP32 SIMT one; a tensor-core config may beat it (mma_1xtf32
      // does) but never its own roof: its mma FLOPs (products x useful) at the spec's dense TF32
      // rate, or the compulsory DRAM traffic.
      if (uses_tensor_cores(c.variant)) {
        const double products = c.variant == Variant::MmaTf32x3 ? 3 : 1;
        EXPECT_GT(p.time_s, std::max(products * p.counts.useful_flops / h200.tf32_tensor_peak_flops(),
                                     roofline_time(w, h200).dram_s));
        EXPECT_GT(p.pipes.tensor, 0);
      } else {
        EXPECT_GT(p.time_s, roofline_time(w, h200).time_s);
        EXPECT_EQ(p.pipes.tensor, 0);
      }
      EXPECT_GT(p.occupancy.blocks_per_sm, 0);
      EXPECT_GE(p.waves.waves, 1);
      EXPECT_GT(p.intensity_l2, 0);
      EXPECT_GT(p.pipes[p.bound], 0);
      for (Pipe q : kAllPipes) EXPECT_LE(p.pipes[q], p.time_s * (1 + 1e-12));
    }
}

TEST_F(PredictShipped, PaddingRemovesTheSharedMemoryPenalty) {
  const Workload w{10, 2048, 64, false, 0};
  const Prediction plain = run({Variant::RowSmem, 64, 64, 32, Layout::Plain}, w);
  const Prediction padded = run({Variant::RowSmem, 64, 64, 32, Layout::Padded}, w);
  // Plain: Q as conflicted LDS.128 (8 wavefronts per quarter-warp), S 32-way (16-way LDS.64
  // reads); padded: conflict free. Measured on an H200 (t10): plain 4.00 ms, padded 0.94 ms.
  EXPECT_GT(plain.counts.smem_wavefronts, 4 * padded.counts.smem_wavefronts);
  EXPECT_EQ(plain.bound, Pipe::Shared);
  EXPECT_GT(plain.time_s, 3 * padded.time_s);
  EXPECT_LT(plain.time_s, 6 * padded.time_s);
}

TEST_F(PredictShipped, CausalCostsAboutHalfOverManyWavesButItsHeaviestBlockInOne) {
  const TileConfig c{Variant::RowReg, 64, 128, 32, Layout::Plain};
  // B = 512: 16384 blocks, tens of waves; the light and heavy blocks even out: about half.
  const double full = run(c, {512, 4096, 64, false, 0}).time_s;
  const double causal = run(c, {512, 4096, 64, true, 0}).time_s;
  EXPECT_GT(causal, 0.45 * full);
  EXPECT_LT(causal, 0.65 * full);
  // B = 8: 256 blocks, all resident at once; the last query tile visits every K/V tile, so the
  // causal grid takes as long as the full one. Measured on the H200 (profiles/nvidia-h200.json,
  // g_n4096_b8_d64 vs g_n4096_b8_d64_causal, this config): 0.99.
  const Prediction few_full = run(c, {8, 4096, 64, false, 0});
  const Prediction few_causal = run(c, {8, 4096, 64, true, 0});
  EXPECT_GT(few_causal.imbalance, 1.5);
  EXPECT_GT(few_causal.time_s, 0.9 * few_full.time_s);
  EXPECT_EQ(few_full.imbalance, 1.0);
}

// The shared-SM schedule by hand: one SM, two slots, query tiles visiting 1, 2, 3 and 4 K/V
// tiles (mean 2.5, so works 0.4, 0.8, 1.2 and 1.6 mean blocks) launched light to heavy.
TEST(SharedSmSchedule, SpansSharingAndFixedDurationAndIgnoresEqualBlocks) {
  const Workload w{1, 256, 64, true, 0};
  const SharedSmGrid g{64, 64, false, 1, 2};
  // solo = 1: the SM's throughput is shared perfectly and a lone block runs at the full rate, so
  // the SM never idles: the makespan is the total work, 4 mean blocks.
  EXPECT_NEAR(shared_sm_makespan(w, g, 1.0), 4.0, 1e-12);
  // solo = k = 2: every block takes twice its work whatever else runs (the fixed-duration list
  // schedule): slot A runs 0.8 then 2.4 (ends 3.2), slot B 1.6 then 3.2 (ends 4.8).
  EXPECT_NEAR(shared_sm_makespan(w, g, 2.0), 4.8, 1e-12);
  const double mid = shared_sm_makespan(w, g, 1.5);
  EXPECT_GT(mid, 4.0);
  EXPECT_LT(mid, 4.8);
  // Heavy first fills the tail with the short blocks: 1.6 and 1.2 start, 0.8 joins at 2.4 (slot
  // of 1.2), 0.4 at 3.2: slot A ends 3.2 + 0.8 = 4.0, slot B 2.4 + 1.6 = 4.0.
  EXPECT_NEAR(shared_sm_makespan(w, SharedSmGrid{64, 64, true, 1, 2}, 2.0), 4.0, 1e-12);
  // Equal blocks are not simulated: waves x k. 4 q tiles x 3 batch entries on 1 SM x 2 slots.
  EXPECT_DOUBLE_EQ(shared_sm_makespan({3, 256, 64, false, 0}, g, 1.3), 6.0 * 2);
}

// A heavy-first kernel's causal grid runs batch-fastest: every entry's longest block before any
// second-longest, a longest-first list schedule. B = 64, N = 1024, Br = 128, Bc = 64 (query tiles
// visit 2, 4, .., 16 K/V tiles, mean 9) on 132 SMs with one slot each: the 64 blocks of 16 and 68
// of 14 start; the 14s take the next 64 of 12 ... the last SM ends after 36 K/V tiles, 4 mean
// blocks (total 4608 tiles, 34.9 per SM). Light first, entry after entry: 46 tiles, 5.1 blocks.
TEST(SharedSmSchedule, HeavyFirstKernelsScheduleLongestFirstOverTheWholeGrid) {
  const Workload w{64, 1024, 128, true, 0};
  EXPECT_NEAR(shared_sm_makespan(w, SharedSmGrid{128, 64, true, 132, 1}, 1.0), 36.0 / 9.0, 1e-12);
  EXPECT_GT(shared_sm_makespan(w, SharedSmGrid{128, 64, false, 132, 1}, 1.0), 36.0 / 9.0 + 0.5);
}

// Blocks that share an SM, pinned by a measured case (H200, profiles/nvidia-h200.json,
// g_n32768_b1_d32_causal): regtile_2d d32 Bc 64 swizzled ran in 2.57 ms at Br = 32 and 3.34 ms at
// Br = 128. One batch entry: Br = 128 makes 256 blocks, about two per SM, and the longest, alone
// on its SM at the end, sets the time; Br = 32 makes 1024 blocks with more of them resident per
// SM, so as the short ones finish the long ones take over the SM's throughput.
TEST_F(PredictShipped, SmallerBrWinsALongCausalRowBecauseMoreBlocksShareEachSm) {
  const Workload w{1, 32768, 32, true, 0};
  const Prediction ps = run_fitted({Variant::RegTile2D, 32, 32, 64, Layout::Swizzled}, w);
  const Prediction pb = run_fitted({Variant::RegTile2D, 32, 128, 64, Layout::Swizzled}, w);
  EXPECT_GT(ps.occupancy.blocks_per_sm, pb.occupancy.blocks_per_sm);
  EXPECT_LT(ps.time_s, 0.9 * pb.time_s);
  EXPECT_NEAR(ps.time_s / pb.time_s, 2.57 / 3.34, 0.1);
}

// A block's start and drain hide behind the blocks resident beside it, pinned by a measured case
// (H200, profiles/nvidia-h200.json, g_n128_b4096_d64): mma_1xtf32 d64 64x64 (128 threads, two
// blocks per SM) ran in 0.213 ms, 128x64 (256 threads, one per SM: the same warps) in 0.269 ms.
// Each block visits two K/V tiles, so its start is a large share of its time; with the whole
// block latency added per wave at any occupancy the model ranked 128x64 first (26% regret).
TEST_F(PredictShipped, TwoBlocksPerSmHideEachOthersStartBehindTheirWork) {
  const Workload w{4096, 128, 64, false, 0};
  const Prediction p2 = run_fitted({Variant::MmaTf32x1, 64, 64, 64, Layout::Swizzled}, w);
  const Prediction p1 = run_fitted({Variant::MmaTf32x1, 64, 128, 64, Layout::Swizzled}, w);
  EXPECT_EQ(p2.occupancy.blocks_per_sm, 2 * p1.occupancy.blocks_per_sm);
  EXPECT_LT(p2.time_s, p1.time_s);
  EXPECT_LT(p2.overhead_s, p1.overhead_s);  // the exposed start is the difference
}

// A warp issues on one of the SM's four sub-partitions, each with its own tensor core: a block of
// two warps alone on its SM leaves two tensor cores idle. Pinned by a measured case (H200,
// profiles/nvidia-h200.json, n1k_d128): mma_3xtf32 d128 32x64 (64 threads, one block per SM by
// shared memory) ran in 1.402 ms, 64x64 (128 threads, one per SM) in 0.580 ms: 2.42x for the same
// FLOPs. With the tensor pipe at full rate at any warp count the model put them 1.5x apart.
TEST_F(PredictShipped, TwoWarpsOnAnSmLeaveHalfItsTensorCoresIdle) {
  const Workload w{64, 1024, 128, false, 0};
  const Prediction two = run_fitted({Variant::MmaTf32x3, 128, 32, 64, Layout::Swizzled}, w);
  const Prediction four = run_fitted({Variant::MmaTf32x3, 128, 64, 64, Layout::Swizzled}, w);
  ASSERT_EQ(two.occupancy.warps_per_sm, 2);
  ASSERT_EQ(four.occupancy.warps_per_sm, 4);
  EXPECT_DOUBLE_EQ(two.counts.mma, four.counts.mma);
  // Half the tensor cores: twice the tensor-pipe time (over the same number of full waves).
  EXPECT_NEAR(two.pipes.tensor / four.pipes.tensor, 2.0, 0.1);
  EXPECT_NEAR(two.time_s / four.time_s, 1.402 / 0.580, 0.5);
  EXPECT_GT(two.time_s, 1.8 * four.time_s);
}

// A tensor-core warp keeps its sub-partition's pipes busy alone (docs/model.md, "Tensor-core
// kernels"): a second resident block adds less than the FFMA-chain latency rule says. Measured on
// the H100 (profiles/nvidia-h100-sxm-bf16.json, mma16 d64 128x64 s2, 238 registers, 2 blocks per
// SM at most): N = 16384, B = 1 (128 blocks: one per SM) 0.2515 ms; N = 32768, B = 1 (256 blocks,
// two per SM, twice the tiles each) 0.8120 ms, 3.23x. The model (spec sheet alone) says 2.81x;
// before the tensor-core saturation rule it said 2.49x even with the H100's fitted coefficients.
TEST(PredictTensorCoreOccupancy, ASecondResidentMma16BlockAddsLittleThroughput) {
  const GpuSpec h100 = spec("nvidia-h100-sxm");
  ConfigCatalog catalog;
  const TileConfig c{Variant::Mma16, 64, 128, 64, Layout::Swizzled, DType::Bf16, 2, false};
  const Prediction lone = predict({1, 16384, 64, false, 0.0f, DType::Bf16}, catalog.analysis(c), h100, {}, 238);
  const Prediction pair = predict({1, 32768, 64, false, 0.0f, DType::Bf16}, catalog.analysis(c), h100, {}, 238);
  ASSERT_EQ(lone.occupancy.blocks_per_sm, 2);
  ASSERT_EQ(lone.counts.tiles.blocks, 128);
  ASSERT_EQ(pair.counts.tiles.blocks, 256);
  EXPECT_GT(pair.time_s / lone.time_s, 2.7);
  EXPECT_LT(pair.time_s / lone.time_s, 0.8120 / 0.2515 * 1.1);
}

// A warp that saturates its sub-partition alone (mma16) is timed on the busiest one (docs/model.md,
// "Sub-partitions"): three 2-warp blocks put 2, 2, 1, 1 warps on the four schedulers, so they take
// as long as four. Measured on the H100 (profiles/unseen/nvidia-h100-bf16.json, u04: B = 2,
// N = 9674, d = 128): 64x32 (304 blocks, 4 per SM at most: 3 on 40 SMs) 0.4799 ms, 128x64 (152
// blocks, 2 on 20 SMs) 0.4308 ms; before the rule the model ranked 64x32 first by 11%.
TEST(PredictTensorCoreOccupancy, ThreeTwoWarpBlocksTakeTheBusiestSchedulersTime) {
  const GpuSpec h100 = spec("nvidia-h100-sxm");
  ConfigCatalog catalog;
  const TileConfig narrow{Variant::Mma16, 128, 64, 32, Layout::Swizzled, DType::Bf16, 2, true};
  const TileConfig wide{Variant::Mma16, 128, 128, 64, Layout::Swizzled, DType::Bf16, 2, true};
  const Workload w{2, 9674, 128, false, 0.0f, DType::Bf16};
  const Prediction n = predict(w, catalog.analysis(narrow), h100, {}, 244);
  const Prediction x = predict(w, catalog.analysis(wide), h100, {}, 255);
  ASSERT_EQ(n.occupancy.blocks_per_sm, 4);
  ASSERT_EQ(n.waves.waves, 1);
  ASSERT_EQ(x.occupancy.blocks_per_sm, 2);
  // 304 blocks on 132 SMs: 3 two-warp blocks on the busiest, whose tensor time is that of 4 (8 warps).
  EXPECT_GT(n.time_s, x.time_s);
  EXPECT_NEAR(n.time_s / x.time_s, 0.4799 / 0.4308, 0.08);
}

// wgmma16 is timed as a pipeline (model/async_pipeline.h): never faster than its products on the
// tensor pipe at wgmma_efficiency, nor than one warpgroup's chain; a second consumer warpgroup
// overlaps the first's softmax, so Br = 128 beats Br = 64 per row; and the measured H100 pair
// t22_bf16 (B = 500, N = 2048, d = 64) wgmma16 128x128 s2, 1.349 ms (profiles/nvidia-h100-sxm-bf16.json),
// is predicted within 25% at the default coefficients (issue 25's held-out bar is 12% MAPE).
TEST(PredictAsyncPipeline, Wgmma16IsBoundByItsTensorPipeAndItsWarpgroupsChain) {
  const GpuSpec h100 = spec("nvidia-h100-sxm");
  ConfigCatalog catalog;
  const TileConfig two{Variant::Wgmma16, 64, 128, 128, Layout::Swizzled, DType::Bf16, 2, false};
  const TileConfig one{Variant::Wgmma16, 128, 64, 128, Layout::Swizzled, DType::Bf16, 2, false};
  const Workload t22{500, 2048, 64, false, 0.0f, DType::Bf16};
  const Coefficients k;
  const Prediction p = predict(t22, catalog.analysis(two), h100, k);
  ASSERT_TRUE(p.refusal.empty()) << p.refusal;
  const double tensor_floor = p.counts.mma16_flops() / (h100.sm_count * h100.tensor_flops_per_clock_per_sm(DType::Bf16) *
                                                        h100.clock_hz() * k.wgmma_efficiency);
  EXPECT_GT(p.time_s, tensor_floor);
  EXPECT_NEAR(p.time_s / 1.349e-3, 1.0, 0.25);
  // The same rows per block and work per row at d = 128: two consumers beat one per query row
  // (one warpgroup's softmax and its products run one after the other).
  const Workload n1k{64, 1024, 128, false, 0.0f, DType::Bf16};
  const TileConfig two128{Variant::Wgmma16, 128, 128, 128, Layout::Swizzled, DType::Bf16, 2, false};
  EXPECT_LT(predict(n1k, catalog.analysis(two128), h100, k).time_s, predict(n1k, catalog.analysis(one), h100, k).time_s);
  // More stages never make it slower (they only hide more of the load latency).
  TileConfig three = two;
  three.stages = 3;
  EXPECT_LE(predict(t22, catalog.analysis(three), h100, k).time_s, p.time_s * (1 + 1e-12));
}

// The intra-warpgroup overlap (wgmma16 /ov, model/async_pipeline.h) where S, P and O do not fit
// the registers at once (Bc = 128): the kernel keeps one basic block and ptxas waits for the
// previous tile's P V before the softmax (traits::Wgmma16::overlap_hides_softmax is false), so the
// model times the serial chain with each stage held a tile longer: an /ov config is never predicted
// faster than the serial loop at the same stages (measured 3-7% slower, H200), it is never below
// the tensor pipe's products, and s2 with the overlap hides no load at all.
TEST(PredictAsyncPipeline, CompiledOverlapIsTheSerialChainWithAStageHeldLonger) {
  const GpuSpec h100 = spec("nvidia-h100-sxm");
  const Coefficients k;
  CheckedPredictor time_of{h100, k};
  const Workload n4k{16, 4096, 128, false, 0.0f, DType::Bf16};
  TileConfig one{Variant::Wgmma16, 128, 64, 128, Layout::Swizzled, DType::Bf16, 3, false};
  TileConfig one_ov = one;
  one_ov.overlap = true;
  ASSERT_FALSE(traits::Wgmma16::overlap_hides_softmax(one_ov));
  const Prediction s1 = time_of(one, n4k), o1 = time_of(one_ov, n4k);
  EXPECT_GE(o1.time_s, s1.time_s) << "the compiled /ov loop: the serial chain, one tile fewer hiding the load";
  for (const Prediction* p : {&s1, &o1}) {
    const double tensor_floor = p->counts.mma16_flops() / (h100.sm_count * h100.tensor_flops_per_clock_per_sm(DType::Bf16) *
                                                          h100.clock_hz() * k.wgmma_efficiency);
    EXPECT_GT(p->time_s, tensor_floor);
    EXPECT_GE(p->time_s, p->pipes.tensor);
  }
  // Two consumers at d = 64, Bc = 128, four stages: the same.
  const Workload t30{2, 32768, 64, false, 0.0f, DType::Bf16};
  TileConfig two{Variant::Wgmma16, 64, 128, 128, Layout::Swizzled, DType::Bf16, 4, false};
  TileConfig two_ov = two;
  two_ov.overlap = true;
  ASSERT_FALSE(traits::Wgmma16::overlap_hides_softmax(two_ov));
  const Prediction s2 = time_of(two, t30), o2 = time_of(two_ov, t30);
  EXPECT_GE(o2.time_s, s2.time_s);
  EXPECT_GE(o2.time_s, o2.pipes.tensor);
  // Two stages: with the overlap a stage is freed one tile later, so no load is in flight to hide
  // the next tile's latency.
  TileConfig two_s2 = two_ov;
  two_s2.stages = 2;
  EXPECT_GT(time_of(two_s2, t30).time_s, o2.time_s);
}

// Where S, P and O fit the registers at once (Bc = 64 at d = 64 and 128) the kernel runs the
// softmax of S_j under P_{j-1} V_{j-1} (traits::Wgmma16::overlap_hides_softmax), and the model
// times the hidden chain: at four stages shorter than the serial loop's, and never below the
// tensor pipe's products. (A known miss: measured, the split ran d128 bc64 s3/ov within 1-3% of
// its serial forms and d64 bc64 5-11% behind, since the other consumer warpgroup already fills the
// tensor pipe during one's softmax; docs/results/h200-wgmma-overlap-split-92025e4.md.)
TEST(PredictAsyncPipeline, SplitOverlapHidesTheSoftmaxUnderThePreviousPV) {
  const GpuSpec h100 = spec("nvidia-h100-sxm");
  const Coefficients k;
  CheckedPredictor time_of{h100, k};
  for (const int d : {64, 128}) {
    const Workload w{8, 8192, d, false, 0.0f, DType::Bf16};
    TileConfig serial{Variant::Wgmma16, d, 128, 64, Layout::Swizzled, DType::Bf16, 4, false};
    TileConfig ov = serial;
    ov.overlap = true;
    ASSERT_TRUE(traits::Wgmma16::overlap_hides_softmax(ov)) << ov.name();
    const Prediction ps = time_of(serial, w), po = time_of(ov, w);
    EXPECT_LT(po.time_s, ps.time_s) << ov.name() << ": the softmax under the previous P V, four stages";
    EXPECT_GE(po.time_s, po.pipes.tensor) << ov.name();
  }
}

// The ping-pong (wgmma16 /pp, model/async_pipeline.h): the consumers issue in a fixed ring, the
// SM's products and softmax join as two pipes side by side (overlap_exponent) with what the ring
// exposes: on the tensor side the part of a consumer's softmax the others' products issued in
// between do not cover, on the SIMT side one consumer's awaited S per round (the round's first S
// waits for the last consumer's softmax of the previous round). Read from the traits, the same
// coefficients. Measured on the H100 (docs/results/h100-wgmma-pingpong-*.md): at d = 64, where the
// softmax is as long as the products, /pp is slower, more with three consumers (t30: 1.04x the
// time with two, 1.17x with three); at d = 128 Br = 128 s2 within 0.5% on n1k_d128 and 3% on
// n8k_d128. The model: slower at d = 64, slower with three than with two, within 4% at d = 128;
// never below the tensor pipe's products, the same products counted either way.
TEST(PredictAsyncPipeline, PingPongRingExposesWhatTheOtherConsumersProductsCannotCover) {
  const GpuSpec h100 = spec("nvidia-h100-sxm");
  const Coefficients k;
  CheckedPredictor time_of{h100, k};
  const auto with_pp = [](TileConfig c) {
    c.ping_pong = true;
    return c;
  };
  const Workload t30{2, 32768, 64, false, 0.0f, DType::Bf16};
  const Workload h16k{16, 4096, 64, false, 0.0f, DType::Bf16};
  for (const Workload& w : {t30, h16k}) {
    double ratio[2] = {0, 0};
    for (int br : {128, 192}) {
      const TileConfig plain{Variant::Wgmma16, 64, br, 128, Layout::Swizzled, DType::Bf16, 2, false};
      const Prediction a = time_of(plain, w), b = time_of(with_pp(plain), w);
      ratio[br / 64 - 2] = b.time_s / a.time_s;
      EXPECT_GT(b.time_s, a.time_s) << plain.name() << "/pp: the d = 64 softmax does not fit under the products";
      EXPECT_GE(b.time_s, b.pipes.tensor);
      const double tensor_floor = b.counts.mma16_flops() / (h100.sm_count * h100.tensor_flops_per_clock_per_sm(DType::Bf16) *
                                                            h100.clock_hz() * k.wgmma_efficiency);
      EXPECT_GT(b.time_s, tensor_floor);
      EXPECT_DOUBLE_EQ(b.counts.mma16_flops(), a.counts.mma16_flops());
      EXPECT_DOUBLE_EQ(b.pipes.tensor, a.pipes.tensor);
    }
    EXPECT_GT(ratio[1], ratio[0]) << "three consumers wait longer for the ring than two";
  }
  // d = 128, two consumers: one consumer's softmax about fits under the other's S; within 4% (the
  // ring's awaited S costs where N is long and the products bind).
  for (const Workload& w : {Workload{64, 1024, 128, false, 0.0f, DType::Bf16}, Workload{8, 8192, 128, false, 0.0f, DType::Bf16}}) {
    const TileConfig plain{Variant::Wgmma16, 128, 128, 128, Layout::Swizzled, DType::Bf16, 2, false};
    EXPECT_NEAR(time_of(with_pp(plain), w).time_s / time_of(plain, w).time_s, 1.0, 0.04) << w.N;
  }
  // With the overlap too (FlashAttention-3 pairs them): never faster than the tensor pipe.
  const Workload n4k{16, 4096, 128, false, 0.0f, DType::Bf16};
  const TileConfig ov{Variant::Wgmma16, 128, 128, 128, Layout::Swizzled, DType::Bf16, 3, false, true};
  const Prediction o = time_of(with_pp(ov), n4k);
  EXPECT_GE(o.time_s, o.pipes.tensor);
}

// The persistent grid (wgmma16 /pe, model/async_pipeline.h): the same rounds of tiles as its
// one-block-per-tile twin, the fill and drain paid once instead of once per wave. Many short blocks
// (n1k_d128: 512 tiles of 8 K/V tiles, four waves on 132 SMs): faster than the twin by about three
// blocks' fill and drain; few long ones (t30: 342 tiles of 256 K/V tiles at Br = 192): within
// 0.5%; one wave: equal. With one Q buffer (d = 128 s3) each later round waits one load latency,
// so the saving is smaller. Causal workloads are refused.
TEST(PredictAsyncPipeline, PersistentGridPaysTheFillOnceAndRefusesCausal) {
  const GpuSpec h100 = spec("nvidia-h100-sxm");
  const Coefficients k;
  CheckedPredictor time_of{h100, k};
  const auto with_pe = [](TileConfig c) {
    c.persistent = true;
    return c;
  };
  const TileConfig d128{Variant::Wgmma16, 128, 128, 128, Layout::Swizzled, DType::Bf16, 2, false};
  const Workload n1k{64, 1024, 128, false, 0.0f, DType::Bf16};
  const Prediction a = time_of(d128, n1k), b = time_of(with_pe(d128), n1k);
  ASSERT_EQ(a.waves.waves, 4);
  const double fill = k.block_latency_cycles / h100.clock_hz();
  // The fill and drain once instead of per wave, less what the persistent loop executes beyond the
  // twin's per K/V tile (config_catalog.cpp: ncu's 7-13 instructions per warp and tile).
  EXPECT_LT(b.time_s, a.time_s);
  EXPECT_LT(a.time_s - b.time_s, 3 * fill);
  EXPECT_GT(a.time_s - b.time_s, 2 * fill);
  EXPECT_DOUBLE_EQ(b.pipes.tensor, a.pipes.tensor);
  EXPECT_GT(b.pipes.issue, a.pipes.issue);
  ConfigCatalog instructions;
  EXPECT_DOUBLE_EQ(instructions.analysis(with_pe(d128)).extra_warp_instructions_per_warp_tile,
                   instructions.analysis(d128).extra_warp_instructions_per_warp_tile + 10.0);
  // One Q buffer: a load latency per later round comes back.
  const TileConfig ov{Variant::Wgmma16, 128, 128, 128, Layout::Swizzled, DType::Bf16, 3, false, true};
  const Prediction c = time_of(ov, n1k), e = time_of(with_pe(ov), n1k);
  EXPECT_LT(e.time_s, c.time_s);
  EXPECT_LT(c.time_s - e.time_s, 3 * (fill - k.iteration_latency_cycles / h100.clock_hz()));
  // Long blocks: the loop's instructions, no fill to save worth them: /pe 0-2% slower (measured
  // 1.01-1.05x on one- and two-wave grids of long blocks).
  const TileConfig br192{Variant::Wgmma16, 64, 192, 128, Layout::Swizzled, DType::Bf16, 2, false};
  const Workload t30{2, 32768, 64, false, 0.0f, DType::Bf16};
  const double long_ratio = time_of(with_pe(br192), t30).time_s / time_of(br192, t30).time_s;
  EXPECT_GT(long_ratio, 1.0);
  EXPECT_LT(long_ratio, 1.02);
  // One wave (fewer tiles than SMs): no fill to hide, the loop's instructions only.
  const Workload small{4, 1024, 128, false, 0.0f, DType::Bf16};
  const double one_wave = time_of(with_pe(d128), small).time_s / time_of(d128, small).time_s;
  EXPECT_GT(one_wave, 1.0);
  EXPECT_LT(one_wave, 1.01);
  // Causal: refused by the model as by the kernel (traits::Wgmma16::persistent_refusal: its static
  // order ran 1.15x-2.0x slower than the twin, where this model put the two level), so that no
  // ranking picks it; the twin is predicted as ever.
  const Workload n1999{24, 1999, 64, true, 0.0f, DType::Bf16};
  const TileConfig d64{Variant::Wgmma16, 64, 128, 128, Layout::Swizzled, DType::Bf16, 2, false};
  ConfigCatalog catalog;
  const Prediction refused = predict(n1999, catalog.analysis(with_pe(d64)), h100, k);
  EXPECT_NE(refused.refusal.find("non-causal workloads only"), std::string::npos) << refused.refusal;
  EXPECT_EQ(refused.time_s, 0.0);
  ASSERT_TRUE(config_rejection(with_pe(d64), n1999).has_value());
  EXPECT_FALSE(config_rejection(with_pe(d64), t30).has_value());
  EXPECT_FALSE(config_rejection(d64, n1999).has_value());
  EXPECT_GT(time_of(d64, n1999).time_s, 0.0);
}

// Causal masking lets an mma16 warp skip a tile whose keys all follow its rows, but the block's
// barrier holds its sub-partition idle meanwhile: one block's own pace (its chain) takes every
// warp on every visited tile. The wave's pipes do not: the other blocks resident on the SM have a
// warp on each scheduler too and issue in those slots, so they count the tiles the warps compute.
TEST(PredictTensorCoreOccupancy, SkippedCausalTilesIdleTheBlockNotTheSm) {
  const GpuSpec h100 = spec("nvidia-h100-sxm");
  ConfigCatalog catalog;
  const TileConfig c{Variant::Mma16, 64, 128, 64, Layout::Swizzled, DType::Bf16, 2, false};
  const Workload w{4096, 128, 64, true, 0.0f, DType::Bf16};
  const Prediction p = predict(w, catalog.analysis(c), h100, {}, 238);
  // One query tile of 128 rows, two K/V tiles: warps 0 and 1 skip the second (a quarter of the pairs).
  ASSERT_DOUBLE_EQ(p.counts.warp_tile_visits, 4096.0 * 6);
  ASSERT_EQ(p.counts.tiles.visits, 4096 * 2);
  ASSERT_GE(p.occupancy.blocks_per_sm, 2);
  const Workload full{4096, 128, 64, false, 0.0f, DType::Bf16};
  const Prediction q = predict(full, catalog.analysis(c), h100, {}, 238);
  const auto per_visit = [](const Prediction& r, Pipe pipe) { return r.pipes[pipe] / double(r.counts.tiles.visits); };
  EXPECT_NEAR(per_visit(p, Pipe::Tensor), 0.75 * per_visit(q, Pipe::Tensor), 2e-2 * per_visit(q, Pipe::Tensor));
  // The chain keeps every warp on every tile (and adds the causal mask's own instructions); the
  // warps' share alone would put it near 0.75 of the non-causal chain.
  EXPECT_GE(per_visit(p, Pipe::Latency), per_visit(q, Pipe::Latency));
}

TEST_F(PredictShipped, OneBlockMoreThanAFullWaveCostsATailWave) {
  // N = Br: one query tile per batch entry, so B counts blocks.
  const TileConfig c{Variant::RowReg, 64, 128, 32, Layout::Plain};
  const long long per_wave = run(c, {1, 128, 64, false, 0}).waves.per_wave;
  const Prediction full = run(c, {per_wave, 128, 64, false, 0});
  const Prediction more = run(c, {per_wave + 1, 128, 64, false, 0});
  EXPECT_EQ(full.waves.waves, 1);
  EXPECT_EQ(more.waves.waves, 2);
  EXPECT_EQ(more.waves.tail_blocks, 1);
  EXPECT_GT(more.time_s, full.time_s * 1.3);
}

TEST_F(PredictShipped, CoefficientsAndRegistersChangeThePrediction) {
  const TileConfig c{Variant::RowReg, 64, 128, 32, Layout::Plain};
  const Workload w{10, 2048, 64, false, 0};
  Coefficients slow;
  slow.fp32_efficiency = 0.2;
  slow.issue_efficiency = 0.2;
  EXPECT_GT(run(c, w, slow).time_s, run(c, w).time_s);
  const Prediction many = predict(w, catalog.analysis(c), h200, Coefficients{}, 255);
  EXPECT_TRUE(many.registers_from_profile);
  EXPECT_EQ(many.occupancy.registers_per_thread, 255);
  EXPECT_EQ(many.occupancy.limiter, OccupancyLimiter::Registers);
}

TEST_F(PredictShipped, RefusesABlockTheGpuCannotHold) {
  const GpuSpec gtx = spec("nvidia-gtx-1080");
  // row_smem d=128 Br=64 Bc=32 needs (2*32*128 + 64*128 + 64*32) * 4 = 73728 bytes > 48 KB.
  const Prediction p = predict({1, 1024, 128, false, 0}, catalog.analysis({Variant::RowSmem, 128, 64, 32, Layout::Plain}),
                               gtx, Coefficients{});
  EXPECT_NE(p.refusal.find("49152"), std::string::npos) << p.refusal;
}

// ---- tensor cores ------------------------------------------------------------------------

// t22 (B = 500, N = 2048, d = 64) on the H200: the tensor pipe binds the 3xTF32 kernel, within
// the ceilings: at most the anchors' 3xTF32 ceiling (a third of the measured 412 TFLOP/s TF32
// matrix product), at least 30 TFLOP/s (measured 67.5).
TEST_F(PredictShipped, TensorPipeBoundsTheThreeProductKernelOnT22) {
  const Workload t22{500, 2048, 64, false, 0};
  const TileConfig c{Variant::MmaTf32x3, 64, 64, 64, Layout::Swizzled};
  const Prediction p = run(c, t22);
  const double tflops = p.achieved_flops() / 1e12;
  EXPECT_GT(tflops, 30.0);
  EXPECT_LT(tflops, 137.0);
  EXPECT_EQ(p.bound, Pipe::Tensor);
  EXPECT_STREQ(pipe_name(Pipe::Tensor), "tensor");
  // The tensor term: mma FLOPs at the spec rate times the efficiency, per SM.
  const Coefficients k;
  const double tensor_s = p.counts.mma_flops() /
                          (h200.tf32_tensor_flops_per_clock_per_sm * h200.sm_count * h200.clock_hz() * k.tensor_efficiency);
  EXPECT_NEAR(p.pipes.tensor, tensor_s, 0.05 * tensor_s);  // waves: the tail wave's SMs idle a little
  EXPECT_GE(p.time_s, p.pipes.tensor);
  // Halving the efficiency makes it about twice as slow (a little less: the DRAM and L2 terms
  // join the doubled SM time by soft_max, two blocks resident overlapping them less than three:
  // resident_memory_overlap); the SIMT pipes do not move.
  Coefficients slow;
  slow.tensor_efficiency = 0.5 * k.tensor_efficiency;
  const Prediction q = run(c, t22, slow);
  EXPECT_NEAR(q.pipes.tensor, 2 * p.pipes.tensor, 1e-9 * p.pipes.tensor);
  EXPECT_GT(q.time_s, 1.75 * p.time_s);
  EXPECT_DOUBLE_EQ(q.pipes.fp32, p.pipes.fp32);
  // One product per mma: a third of the mma, faster, above the 3xTF32 kernel.
  const Prediction one = run({Variant::MmaTf32x1, 64, 64, 64, Layout::Swizzled}, t22);
  EXPECT_DOUBLE_EQ(one.counts.mma * 3, p.counts.mma);
  EXPECT_LT(one.time_s, p.time_s);
  EXPECT_GT(one.achieved_flops(), p.achieved_flops());
}

// SIMT configs are untouched by the tensor efficiency (no mma: the tensor term is 0).
TEST_F(PredictShipped, TensorEfficiencyDoesNotMoveSimtPredictions) {
  const Workload t10{10, 2048, 64, false, 0};
  Coefficients k;
  k.tensor_efficiency = 0.05;
  for (const TileConfig& c : {TileConfig{Variant::RegTile2D, 64, 64, 64, Layout::Swizzled},
                              TileConfig{Variant::RowReg, 64, 64, 32, Layout::Plain}}) {
    EXPECT_EQ(run(c, t10).time_s, run(c, t10, k).time_s) << c.name();
    EXPECT_EQ(run(c, t10).pipes.tensor, 0.0) << c.name();
  }
}

// A GPU without TF32 tensor cores (Pascal, cc 6.1): predicting a tensor-core config throws one
// line naming the config and the GPU; rank_configs lists it as refused and ranks the rest.
TEST_F(PredictShipped, PascalRefusesTensorCoreConfigs) {
  const GpuSpec gtx = spec("nvidia-gtx-1080");
  const TileConfig c{Variant::MmaTf32x3, 64, 64, 64, Layout::Swizzled};
  ASSERT_TRUE(instruction_set_refusal(c, gtx).has_value());
  EXPECT_FALSE(instruction_set_refusal(c, h200).has_value());
  EXPECT_FALSE(instruction_set_refusal({Variant::RowReg, 64, 64, 32, Layout::Plain}, gtx).has_value());
  std::string message;
  try {
    predict({1, 1024, 64, false, 0}, catalog.analysis(c), gtx, Coefficients{});
  } catch (const std::invalid_argument& e) {
    message = e.what();
  }
  EXPECT_EQ(message,
            "mma_3xtf32/d64/br64xbc64/swizzled needs TF32 tensor cores (compute capability >= 8.0); "
            "NVIDIA GeForce GTX 1080 is 6.1");
  EXPECT_EQ(message.find('\n'), std::string::npos);
  // A cc >= 8.0 spec without a TF32 rate refuses too.
  GpuSpec none = h200;
  none.tf32_tensor_flops_per_clock_per_sm = 0;
  ASSERT_TRUE(instruction_set_refusal(c, none).has_value());
  EXPECT_NE(instruction_set_refusal(c, none)->find("tf32_tensor_flops_per_clock_per_sm"), std::string::npos);
  EXPECT_THROW(predict({1, 1024, 64, false, 0}, catalog.analysis(c), none, Coefficients{}), std::invalid_argument);
}

// wgmma16 (wgmma, TMA) needs sm_90a: a cc 8.x spec refuses it in one line, an sm_90 spec does not.
TEST_F(PredictShipped, WgmmaConfigsNeedSm90) {
  const TileConfig c{Variant::Wgmma16, 128, 128, 128, Layout::Swizzled, DType::Bf16, 2, false};
  GpuSpec older = h200;
  older.name = "an sm_80 GPU";
  older.cc_major = 8;
  older.cc_minor = 0;
  const auto why = instruction_set_refusal(c, older);
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(*why, "needs sm_90a (wgmma, TMA: compute capability >= 9.0); an sm_80 GPU is 8.0");
  EXPECT_FALSE(instruction_set_refusal(c, h200).has_value());
  EXPECT_FALSE(instruction_set_refusal({Variant::Mma16, 64, 128, 64, Layout::Swizzled, DType::Bf16, 2, false}, older));
}

// The 16-bit family on the same tensor pipe: m16n8k16 FLOPs at the spec's rate for the element
// type times the one tensor efficiency (no per-dtype factor), half the bytes of fp32 everywhere,
// and a one-line refusal where the spec has no such tensor cores.
TEST_F(PredictShipped, SixteenBitConfigsUseTheirTypesTensorRateAndHalfTheBytes) {
  TileConfig c{Variant::Mma16, 64, 128, 64, Layout::Swizzled};
  c.dtype = DType::Bf16;
  c.stages = 2;
  ASSERT_FALSE(tile_rejection(c).has_value()) << *tile_rejection(c);
  Workload w{500, 2048, 64, false, 0};
  w.dtype = DType::Bf16;
  const Prediction p = run(c, w);
  ASSERT_TRUE(p.refusal.empty()) << p.refusal;
  EXPECT_GT(p.counts.mma16, 0);
  EXPECT_EQ(p.counts.mma, 0);
  // Every FLOP of S = Q K^T and O += P V on m16n8k16: 4 Br Bc d per visited tile.
  EXPECT_NEAR(p.counts.mma16_flops(), p.counts.executed_flops, 1e-9 * p.counts.executed_flops);
  const Coefficients k;
  const double tensor_s = p.counts.mma16_flops() / (h200.bf16_tensor_flops_per_clock_per_sm * h200.sm_count *
                                                    h200.clock_hz() * k.tensor_efficiency);
  EXPECT_NEAR(p.pipes.tensor, tensor_s, 0.05 * tensor_s);
  EXPECT_DOUBLE_EQ(h200.bf16_tensor_flops_per_clock_per_sm, 2 * h200.tf32_tensor_flops_per_clock_per_sm);
  // Compulsory DRAM bytes: Q, K, V and O once, 2 bytes an element.
  EXPECT_DOUBLE_EQ(p.counts.dram_compulsory_bytes, 4.0 * 500 * 2048 * 64 * 2);
  // Far faster than the fp32-accurate tensor-core kernel on the same shape.
  const Prediction tf32 = run({Variant::MmaTf32x3, 64, 64, 64, Layout::Swizzled}, {500, 2048, 64, false, 0});
  EXPECT_LT(p.time_s, 0.5 * tf32.time_s);
  // No BF16 tensor cores: Pascal (compute capability) and a spec without the rate.
  const GpuSpec gtx = spec("nvidia-gtx-1080");
  ASSERT_TRUE(instruction_set_refusal(c, gtx).has_value());
  EXPECT_NE(instruction_set_refusal(c, gtx)->find("needs BF16 tensor cores"), std::string::npos);
  GpuSpec none = h200;
  none.bf16_tensor_flops_per_clock_per_sm = 0;
  ASSERT_TRUE(instruction_set_refusal(c, none).has_value());
  EXPECT_NE(instruction_set_refusal(c, none)->find("bf16_tensor_flops_per_clock_per_sm"), std::string::npos);
  // A config of another dtype than the workload's is refused by the catalog's check.
  Workload fp32 = w;
  fp32.dtype = DType::Fp32;
  ASSERT_TRUE(config_rejection(c, fp32).has_value());
  EXPECT_NE(config_rejection(c, fp32)->find("takes bf16 operands"), std::string::npos);
}

// Padded against swizzled, the same mma tile: the padded K rows (16 bytes longer) start every odd
// row in the middle of a 32-byte sector, so each of its cp.async copies fetches every sector of
// that row twice (32 odd rows x 8 sectors of a d = 64 row per K tile; V rows, 32 bytes longer,
// stay aligned), which the H200's crossbar counter confirms to 0.5% (docs/counters.md,
// l2_to_sm_sectors). The swizzled tile splits none but runs more index arithmetic (the measured
// compiled-instruction table); measured on the H200 it is 5% faster (median of 74 grid pairs),
// and the model now ranks it first without a tie to break.
TEST_F(PredictShipped, PaddedMmaTileFetchesSplitSectorsAndRanksAfterSwizzled) {
  const Workload w{8, 1024, 64, false, 0};
  const TileConfig padded{Variant::MmaTf32x3, 64, 64, 64, Layout::Padded};
  const TileConfig swizzled{Variant::MmaTf32x3, 64, 64, 64, Layout::Swizzled};
  EXPECT_DOUBLE_EQ(catalog.analysis(padded).split_copy_sectors_per_kv_tile, 32.0 * 8);
  EXPECT_DOUBLE_EQ(catalog.analysis(swizzled).split_copy_sectors_per_kv_tile, 0.0);
  const Prediction p = run_fitted(padded, w), s = run_fitted(swizzled, w);
  EXPECT_DOUBLE_EQ(p.counts.l2_split_copy_bytes, 32.0 * 256 * double(p.counts.tiles.visits));
  EXPECT_GT(p.counts.l2_bytes(), 1.2 * s.counts.l2_bytes());  // K + V 1.25x, Q and O alike
  EXPECT_GT(p.time_s, s.time_s);
  const ModelProfile fitted =
      load_model_profile(std::string(FLASHTUNE_TEST_GPU_DIR) + "/../../profiles/nvidia-h200.json");
  const Ranking r = rank_configs(w, {padded, swizzled}, h200, fitted, catalog);
  ASSERT_EQ(r.ranked.size(), 2u);
  EXPECT_EQ(r.ranked[0].config.layout, Layout::Swizzled);
}

TEST_F(PredictShipped, RankConfigsLeavesTensorCoreConfigsOutOnPascalOnly) {
  const Workload w{8, 1024, 64, false, 0};
  std::vector<TileConfig> configs;
  for (const TileConfig& c : compiled_tile_configs())
    if (!config_rejection(c, w)) configs.push_back(c);
  std::size_t tensor = 0;
  for (const TileConfig& c : configs) tensor += uses_tensor_cores(c.variant);
  ASSERT_GT(tensor, 0u);
  auto count_tc = [](const auto& rows) {
    std::size_t n = 0;
    for (const auto& r : rows) n += uses_tensor_cores(r.config.variant);
    return n;
  };
  const Ranking pascal = rank_configs(w, configs, spec("nvidia-gtx-1080"), ModelProfile{}, catalog);
  EXPECT_EQ(count_tc(pascal.ranked), 0u);
  EXPECT_EQ(count_tc(pascal.refused), tensor);
  for (const RefusedConfig& r : pascal.refused) {
    if (is_wgmma_variant(r.config.variant)) {
      EXPECT_EQ(r.reason, "needs sm_90a (wgmma, TMA: compute capability >= 9.0); NVIDIA GeForce GTX 1080 is 6.1");
    } else if (uses_tensor_cores(r.config.variant)) {
      EXPECT_EQ(r.reason, "needs TF32 tensor cores (compute capability >= 8.0); NVIDIA GeForce GTX 1080 is 6.1");
    }
  }
  EXPECT_FALSE(pascal.ranked.empty());  // the SIMT configs that fit still rank
  const Ranking hopper = rank_configs(w, configs, h200, ModelProfile{}, catalog);
  EXPECT_EQ(count_tc(hopper.ranked), tensor);
  EXPECT_EQ(count_tc(hopper.refused), 0u);
}

}  // namespace
}  // namespace flashtune::model
