// The time prediction and the baselines: hand-checkable pieces (the seed model's own formulas,
// the roofline, the DRAM rule) and the directions the model must get right.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/traits/variants.h"
#include "model/baselines.h"
#include "model/config_catalog.h"
#include "model/memory_traffic.h"
#include "model/predict.h"
#include "model/profile.h"

namespace flashtune::model {
namespace {

GpuSpec spec(const std::string& stem) { return load_gpu_spec(std::string(FLASHTUNE_TEST_GPU_DIR) + "/" + stem + ".json"); }

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

TEST(DramRule, CompulsoryWhileTheWorkingSetFits) {
  const GpuSpec g = spec("nvidia-h200");
  const TileConfig c{Variant::RowReg, 64, 128, 32, Layout::Plain};
  ConfigCatalog cat;
  const Workload w{10, 2048, 64, false, 0};
  const Counts n = count_work(w, cat.analysis(c));
  const DramEstimate e = estimate_dram(w, c, n, 132 * 4, g, Coefficients{});
  EXPECT_DOUBLE_EQ(e.bytes, n.dram_compulsory_bytes);
  EXPECT_DOUBLE_EQ(e.reread_hit_fraction, 1.0);
}

// All 16 query tiles of every entry are resident together (R = 528 >= 160 blocks): they sweep each
// entry's K/V in step and share every tile, so DRAM stays compulsory even though the 10 entries'
// K/V (10.5 MB) outgrow a 0.9 MB L2. The H200 counted compulsory reads in such cases (t22 with
// row_smem/row_reg: 1.00-1.01x Q+K+V, where the rule that applied the miss share to every re-read
// said up to 10.6x; docs/counters.md).
TEST(DramRule, CoResidentBlocksOfAnEntryShareItsKv) {
  GpuSpec g = spec("nvidia-h200");
  g.l2_bytes = 2 * 1024 * 1024;  // 2 partitions x 1 MB x 0.9 usable
  const TileConfig c{Variant::RowReg, 64, 128, 32, Layout::Plain};
  ConfigCatalog cat;
  const Workload w{10, 2048, 64, false, 0};
  const Counts n = count_work(w, cat.analysis(c));
  const DramEstimate e = estimate_dram(w, c, n, 132 * 4, g, Coefficients{});
  EXPECT_EQ(e.entries_in_flight, 10);
  EXPECT_EQ(e.sweeps_per_entry, 1);
  EXPECT_LT(e.reread_hit_fraction, 0.1);
  EXPECT_DOUBLE_EQ(e.bytes, n.dram_compulsory_bytes);
}

// With 4 resident blocks an entry's 16 query tiles run in S = 4 sweeps; the 3 later sweeps re-read
// K/V after 2 entries' K/V (a sweep straddles two) and 4 Q/O tiles went through L2.
TEST(DramRule, LaterSweepsOfAnEntryMissWhenTheWorkingSetOutgrowsL2) {
  GpuSpec g = spec("nvidia-h200");
  g.l2_bytes = 2 * 1024 * 1024;
  const TileConfig c{Variant::RowReg, 64, 128, 32, Layout::Plain};
  ConfigCatalog cat;
  const Workload w{10, 2048, 64, false, 0};
  const Counts n = count_work(w, cat.analysis(c));
  const DramEstimate e = estimate_dram(w, c, n, 4, g, Coefficients{});
  EXPECT_EQ(e.sweeps_per_entry, 4);
  EXPECT_EQ(e.entries_in_flight, 2);
  const double W = 2 * (2.0 * 2048 * 64 * 4) + 4 * (2.0 * 128 * 64 * 4);
  EXPECT_DOUBLE_EQ(e.working_set_bytes, W);
  const double C = 1024.0 * 1024 * 0.9;
  const double compulsory_kv = 2.0 * 10 * 2048 * 64 * 4;
  EXPECT_NEAR(e.bytes, n.dram_compulsory_bytes + (1 - C / W) * 3 * compulsory_kv, 1.0);
  EXPECT_LT(e.bytes, n.l2_bytes());
}

class PredictShipped : public ::testing::Test {
 protected:
  GpuSpec h200 = spec("nvidia-h200");
  ConfigCatalog catalog;
  Prediction run(const TileConfig& c, const Workload& w, const Coefficients& k = {}) {
    return predict(w, catalog.analysis(c), h200, k);
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
      EXPECT_GT(p.time_s, roofline_time(w, h200).time_s);
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

}  // namespace
}  // namespace flashtune::model
