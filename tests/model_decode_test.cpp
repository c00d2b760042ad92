// The decode family's traits (work split, shared memory, what it refuses) and its model (bytes
// over bandwidth, waves of split blocks, the split count it picks). Host only.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/traits/decode_traits.h"
#include "kernels/traits/variants.h"
#include "model/coefficients.h"
#include "model/decode_model.h"
#include "model/gpu_spec.h"
#include "fit/coefficient_fit.h"
#include "fit/decode_instruction_fit.h"
#include "fit/decode_sweeps.h"
#include "model/compiled_instruction_table.h"
#include "profile/model_profile.h"
#include "profile/profile.h"

namespace flashtune {
namespace {

using traits::Decode;

model::GpuSpec h100() { return model::load_gpu_spec(std::string(FLASHTUNE_TEST_GPU_DIR) + "/nvidia-h100-sxm.json"); }
model::GpuSpec h200() { return model::load_gpu_spec(std::string(FLASHTUNE_TEST_GPU_DIR) + "/nvidia-h200.json"); }

TileConfig bf16_d128() { return {Variant::Decode, 128, 16, 32, Layout::Swizzled, DType::Bf16, 2, false}; }

TEST(DecodeTraits, EveryCompiledConfigBuildsAndNamesRoundTrip) {
  int n = 0;
  for (const TileConfig& c : compiled_configs()) {
    if (c.variant != Variant::Decode) continue;
    ++n;
    EXPECT_FALSE(tile_rejection(c)) << c.name();
    EXPECT_LE(Decode::smem_bytes(c), traits::kMaxSmemOptinBytes) << c.name();
    const auto back = parse_config_name(c.name());
    ASSERT_TRUE(back) << c.name();
    EXPECT_EQ(*back, c);
  }
  EXPECT_GT(n, 0);
}

TEST(DecodeTraits, RefusalsNameTheKnob) {
  TileConfig c = bf16_d128();
  c.d = 32;
  EXPECT_NE(tile_rejection(c)->find("d in {64, 128}"), std::string::npos);
  c = bf16_d128();
  c.Br = 8;
  EXPECT_NE(tile_rejection(c)->find("Br"), std::string::npos);
  c = bf16_d128();
  c.dtype = DType::Fp32;  // fp32 takes Br 1..16 and Bc 16 / 32, but 4 warps x 2 stages of 32 fp32 keys
  EXPECT_NE(tile_rejection(c)->find("shared memory"), std::string::npos);  // at d = 128 are 256 KB
  c.d = 64;
  EXPECT_FALSE(tile_rejection(c));
  c.Bc = 64;
  EXPECT_NE(tile_rejection(c)->find("Bc"), std::string::npos);
  c = bf16_d128();
  c.layout = Layout::Padded;
  EXPECT_NE(tile_rejection(c)->find("swizzled"), std::string::npos);
  c = bf16_d128();
  c.stages = 5;
  EXPECT_NE(tile_rejection(c)->find("stages"), std::string::npos);
}

TEST(DecodeTraits, ShapeCoversEveryKeyTileOnceInWholeBlockTiles) {
  const TileConfig c = bf16_d128();
  for (long long keys : {1LL, 127LL, 4097LL, 131071LL})
    for (int asked : {1, 3, 7, 64, 1 << 20}) {
      const Decode::Shape s = Decode::shape(c, 2, 32, 8, 4, keys, asked);
      EXPECT_EQ(s.kv_entries, 2 * 4);
      EXPECT_EQ(s.rows, 32);
      EXPECT_EQ(s.row_tiles, 2);
      EXPECT_EQ(s.chunk_tiles % Decode::kWarps, 0);
      EXPECT_GE(s.splits, 1);
      EXPECT_LE(s.splits, asked);
      EXPECT_LE(s.splits, Decode::kMaxSplits);
      EXPECT_GE(s.chunk_tiles * s.splits, s.key_tiles);            // every tile in some chunk
      EXPECT_LT(s.chunk_tiles * (s.splits - 1), s.key_tiles);      // no empty chunk
      EXPECT_EQ(s.blocks, s.kv_entries * s.row_tiles * s.splits);
    }
}

TEST(DecodeTraits, DefaultSplitOneBlockPerSmInOneWave) {
  const TileConfig c = bf16_d128();
  // 8 K/V heads x 32768 keys on 132 SMs: floor(132 / 8) = 16 (17 would start a second wave).
  EXPECT_EQ(Decode::default_splits(c, 1, 32, 4, 1, 32768, 132), 16);
  // 256 K/V entries already fill the SMs: one split, no combine.
  EXPECT_EQ(Decode::default_splits(c, 8, 32, 1, 1, 4096, 132), 1);
  // A short cache keeps chunks of at least 8 tiles per warp: 4096 keys = 32 block tiles -> 4.
  EXPECT_EQ(Decode::default_splits(c, 1, 32, 4, 1, 4096, 132), 4);
}

TEST(DecodeModel, MemoryBoundAtScaleAndSplitsWhereTheGridIsSmall) {
  const model::GpuSpec gpu = h100();
  const model::Coefficients k;
  Workload big;
  big.B = 8 * 32, big.N = 1, big.d = 128, big.dtype = DType::Bf16, big.kv_len = 65536, big.kv_group = 1;
  const model::DecodePrediction p = model::pick_decode_splits(big, bf16_d128(), gpu, k);
  ASSERT_TRUE(p.refusal.empty()) << p.refusal;
  EXPECT_EQ(p.bound, "dram");
  // Never faster than its bytes at the datasheet bandwidth.
  EXPECT_GT(p.time_s, p.dram_bytes / gpu.dram_bytes_per_s());
  EXPECT_LT(p.time_s, 1.3 * p.dram_bytes / (gpu.dram_bytes_per_s() * k.dram_efficiency));

  Workload small = big;
  small.B = 32, small.kv_group = 4, small.kv_len = 32768;  // 8 K/V heads
  const model::DecodePrediction one = model::predict_decode(small, bf16_d128(), gpu, k, 1);
  const model::DecodePrediction best = model::pick_decode_splits(small, bf16_d128(), gpu, k);
  EXPECT_EQ(one.bound, "stream");  // 8 blocks cannot pull the bandwidth
  EXPECT_GT(best.splits, 1);
  EXPECT_LT(best.time_s, 0.5 * one.time_s);
  EXPECT_GT(best.combine_s, 0.0);
}

TEST(DecodeModel, RefusesWhatTheFamilyDoesNotServe) {
  const model::GpuSpec gpu = h100();
  Workload w;
  w.B = 32, w.N = 128, w.d = 128, w.dtype = DType::Bf16, w.kv_len = 4096;
  EXPECT_FALSE(model::predict_decode(w, bf16_d128(), gpu, {}, 0).refusal.empty());
  w.N = 1;
  w.kv_group = 3;  // 32 is not a multiple of 3
  EXPECT_FALSE(model::predict_decode(w, bf16_d128(), gpu, {}, 0).refusal.empty());
}

// The measured split sweeps (batch-1 shapes, scripts/merged_gpu_check.sh --decode-sweep, L2 flushed
// with writes): MAPE over every timed (shape, config, split), and per swept shape the measured time
// at the model's split against the best measured; the figures docs/model.md quotes, the lines
// `flashtune fit --decode <files>` prints. Two kernels: the split kernel of today with the combine
// of one warp per row (H100 at 44aaa6b and 43f12ce: the split kernel's five decode coefficients are
// fitted on these two), and today's combine, one warp per 32 columns (the "combine32" sweeps: the
// combine's two coefficients are fitted on the H100's, model/coefficients.h).
std::string result_file(const char* name) { return std::string(FLASHTUNE_SOURCE_DIR) + "/docs/results/" + name; }
std::vector<std::string> h100_sweeps() {
  return {result_file("h100-decode-sweep-bf16-write-44aaa6b.jsonl"), result_file("h100-decode-sweep-bf16-write-43f12ce.jsonl")};
}
std::vector<std::string> h100_current_sweeps() { return {result_file("h100-decode-sweep-bf16-write-combine32.jsonl")}; }
// The sweeps of `files` scored with the default coefficients on `gpu`, the score printed (per
// shape with `per_shape`) as `flashtune fit --decode` prints it.
fit::DecodeScore default_score(const std::vector<std::string>& files, const model::GpuSpec& gpu, bool per_shape = false) {
  const fit::DecodeScore r = fit::score_decode(fit::load_decode_sweeps(files, gpu), gpu, model::Coefficients{});
  std::printf("%s", fit::render_decode_score(r, per_shape).c_str());
  return r;
}

// A GPU's bf16 and fp32 write-flushed sweeps of one tree (<gpu>-decode-sweep-<dtype>-write-<tag>.jsonl)
// scored together with the default coefficients.
fit::DecodeScore pair_score(const std::string& gpu, const std::string& tag) {
  return default_score({result_file((gpu + "-decode-sweep-bf16-write-" + tag + ".jsonl").c_str()),
                        result_file((gpu + "-decode-sweep-fp32-write-" + tag + ".jsonl").c_str())},
                       gpu == "h100" ? h100() : h200());
}

// Issue 26's bars on a scored sweep, as pinned: MAPE, the split within 5% of the measured best on at
// least `within5` shapes, within 10% on every one, and the worst.
void expect_within(const fit::DecodeScore& r, double mape, int within5, double worst, const std::string& what = "") {
  EXPECT_LE(r.mape, mape) << what;
  EXPECT_GE(r.within5, within5) << what;
  EXPECT_EQ(r.within10, static_cast<int>(r.shapes.size())) << what;
  EXPECT_LE(r.worst, worst) << what;
}

TEST(DecodeModel, AgainstTheH100SplitSweeps) {
  const fit::DecodeScore r = default_score(h100_current_sweeps(), h100(), true);
  EXPECT_EQ(r.timings, 303);
  ASSERT_EQ(r.shapes.size(), 15u);
  // Issue 26's bars: MAPE <= 8%; the split within 5% of the measured best on 90% of the shapes
  // (14 of 15; 15 today) and within 10% on the worst.
  expect_within(r, 0.08, 14, 0.10);
}

// `flashtune fit --decode --residuals`: one row per timing, in the sweeps' order, whose errors
// average to the score's MAPE (the same predictions, timing by timing).
TEST(DecodeModel, ResidualsAreTheScoresTimings) {
  const model::GpuSpec gpu = h100();
  const fit::DecodeSweeps s = fit::load_decode_sweeps(h100_current_sweeps(), gpu);
  const fit::DecodeScore r = fit::score_decode(s, gpu, model::Coefficients{});
  std::istringstream csv(fit::decode_residuals_csv(s, gpu, model::Coefficients{}));
  std::string line;
  ASSERT_TRUE(std::getline(csv, line));
  EXPECT_EQ(line.rfind("timing,batch,q_heads,kv_heads,nq,keys,d,dtype,config,splits,cluster_combine,flush,", 0), 0u) << line;
  int rows = 0;
  double ape = 0;
  while (std::getline(csv, line)) {
    const std::string error = line.substr(line.rfind(',') + 1);
    ape += std::abs(std::stod(error));
    EXPECT_EQ(line.rfind(s.data.points[rows].workload + ",", 0), 0u) << line;
    ++rows;
  }
  EXPECT_EQ(rows, r.timings);
  EXPECT_NEAR(ape / rows, r.mape, 1e-4);
}

// The decode SIMT configs' compiled extras: the rows `flashtune fit --decode-instructions` fits on
// the H200's ncu counts are the shipped table's (configs/kernels/compiled_instructions.json, to its
// rounding), the two counts per config reproduced exactly (two unknowns, two counts), and the
// 16-bit reference tile issues the kReferenceTileWarpInstructions (695) the model subtracts from
// the fixed part (model/decode_model.cpp).
TEST(DecodeModel, ReferenceTileIssueIsTheMeasuredOne) {
  const std::string counts = result_file("h200-decode-instructions.jsonl");
  const fit::CompiledInstructionFit f = fit::fit_decode_instructions({counts});
  EXPECT_EQ(f.configs_fitted, 6);
  EXPECT_LT(f.max_rel_residual, 1e-6);
  const model::CompiledInstructionTable& shipped = model::shipped_compiled_instruction_table();
  for (const auto& [name, e] : f.table.configs) {
    const auto it = shipped.configs.find(name);
    ASSERT_NE(it, shipped.configs.end()) << name << " is not in the shipped table";
    EXPECT_NEAR(it->second.per_warp_tile, e.per_warp_tile, 0.051) << name;
    EXPECT_NEAR(it->second.per_warp_block, e.per_warp_block, 0.051) << name;
  }
  // The reference tile: the difference of its two launches over the difference of their tiles.
  std::ifstream in(counts);
  std::map<long long, double> ref;  // keys -> instructions
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line);
    if (j.at("config") == "decode/d128/br16xbc32/swizzled/bf16/s3") ref[j.at("keys").get<long long>()] = j.at("inst_executed");
  }
  ASSERT_EQ(ref.size(), 2u);
  // 8 x 32 K/V heads, one split: 1024 warps; 32 keys a warp's tile.
  const double per_tile = (ref.at(4096) - ref.at(1024)) / (1024.0 * (4096 - 1024) / 32 / traits::Decode::kWarps);
  EXPECT_NEAR(per_tile, 695.0, 1.0);
}

// The same coefficients fitted on one sweep alone and scored on the other: what the model does on
// timings its decode coefficients never saw (docs/model.md, "Decode": 4.2% and 5.0% MAPE, 15 and
// 13 of 15 shapes within 5%, worst 4.5% and 7.0%).
TEST(DecodeModel, FittedOnOneSweepPredictsTheOther) {
  const model::GpuSpec gpu = h100();
  const std::vector<std::string> files = h100_sweeps();
  for (int held = 0; held < 2; ++held) {
    const fit::DecodeSweeps train = fit::load_decode_sweeps({files[1 - held]}, gpu);
    std::vector<const fit::FitPoint*> points;
    for (const fit::FitPoint& p : train.data.points) points.push_back(&p);
    const fit::FitResult f = fit::fit_coefficients(points, gpu, model::Coefficients{},
                                                   fit::default_decode_free_coefficients(), fit::FitLoss::Absolute);
    const fit::DecodeScore r = fit::score_decode(fit::load_decode_sweeps({files[held]}, gpu), gpu, f.coefficients);
    std::printf("held out %s: %s", files[held].c_str(), fit::render_decode_score(r, false).c_str());
    ASSERT_EQ(r.shapes.size(), 15u);
    EXPECT_LE(r.mape, 0.08) << files[held];
    EXPECT_GE(r.within5, 13) << files[held];
    EXPECT_LE(r.worst, 0.10) << files[held];
  }
}

// Each GPU's bf16 and fp32 sweeps of one tree, never fitted, with the default coefficients (docs/model.md,
// "Decode"), pinned a little above today's figures:
//   H200 combine32 (the combine of one warp per 32 columns): MAPE 7.4% (bf16 5.1%, fp32 9.4%; 8.0% and
//     10.4% before the SIMT tiles counted their compiled extras), 29 of 30 splits within 5%, worst +5.9%;
//   H200 80da91a (the combine in one round of loads): 7.0% (bf16 5.1%, fp32 8.6%; 7.7% and 9.8% before),
//     30 of 30, worst +4.6%;
//   H100 d8fa166 (measured after the instruction count): 6.7% (bf16 4.5%, fp32 8.6%; 7.4% and 9.9% with
//     the traits' count alone), 30 of 30, worst +3.0%.
TEST(DecodeModel, AgainstEachGpusSweepPairsNeverFitted) {
  struct Case {
    const char* gpu;
    const char* tag;
    int timings;
    double mape;
    int within5;
    double worst;
  };
  const Case cases[] = {
      {"h200", "combine32", 664, 0.08, 28, 0.10},
      {"h200", "80da91a", 668, 0.075, 29, 0.05},
      {"h100", "d8fa166", 666, 0.072, 29, 0.05},
  };
  for (const Case& c : cases) {
    const fit::DecodeScore r = pair_score(c.gpu, c.tag);
    EXPECT_EQ(r.timings, c.timings) << c.tag;
    ASSERT_EQ(r.shapes.size(), 30u) << c.tag;
    expect_within(r, c.mape, c.within5, c.worst, c.tag);
  }
}

// The sweeps of the cluster combine (each timing says whether its splits merged in a cluster):
// the H100's, on which cluster_combine_cycles was fitted, MAPE 6.4% (bf16 4.3%, fp32 8.1%), the split
// within 5% on 29 of 30, worst +6.2%; the H200's, never fitted, 7.8% (bf16 5.7%, fp32 9.4%), 29 of
// 30, worst +6.2% (docs/model.md, "Decode"). Pinned a little above today's figures.
TEST(DecodeModel, AgainstTheClusterCombineSweeps) {
  struct Case {
    model::GpuSpec gpu;
    const char* bf16;
    const char* fp32;
    double mape;
    int within5;
  };
  const Case cases[] = {
      {h100(), "h100-decode-sweep-bf16-write-cluster.jsonl", "h100-decode-sweep-fp32-write-cluster.jsonl", 0.07, 28},
      {h200(), "h200-decode-sweep-bf16-write-cluster.jsonl", "h200-decode-sweep-fp32-write-cluster.jsonl", 0.08, 28},
  };
  for (const Case& c : cases) {
    const fit::DecodeScore r = default_score({result_file(c.bf16), result_file(c.fp32)}, c.gpu);
    ASSERT_EQ(r.shapes.size(), 30u) << c.bf16;
    expect_within(r, c.mape, c.within5, 0.10, c.bf16);
  }
  // Some timings of each ran in clusters, some through the combine kernel.
  const fit::DecodeSweeps s = fit::load_decode_sweeps({result_file("h100-decode-sweep-bf16-write-cluster.jsonl")}, h100());
  int in_cluster = 0, by_kernel = 0;
  for (const fit::FitPoint& p : s.data.points)
    if (p.splits > 1) ++(p.decode_run.cluster_combine.value_or(false) ? in_cluster : by_kernel);
  EXPECT_GT(in_cluster, 0);
  EXPECT_GT(by_kernel, 0);
}

// The H100's sweep of today's combine kernel (every split's loads in one round), never fitted: MAPE
// 4.5%, the split within 5% on 15 of 15, worst +2.1% with the shipped coefficients; the model's split
// for 1 x 32 heads x 8192 keys is 4 (3 splits in clusters ran 62.8 us against 58.5).
TEST(DecodeModel, AgainstTheOneRoundCombineSweep) {
  const fit::DecodeScore r = default_score({result_file("h100-decode-sweep-bf16-write-combine1round.jsonl")}, h100());
  EXPECT_EQ(r.timings, 309);
  ASSERT_EQ(r.shapes.size(), 15u);
  expect_within(r, 0.05, 15, 0.05);
  for (const fit::DecodeShapeScore& sc : r.shapes) {
    if (sc.label.find("1x32/32 heads Nq 1 keys 8192 ") != std::string::npos) {
      EXPECT_EQ(sc.model_splits, 4) << sc.label;
    }
  }
}

// The sweeps of the combine of one warp per row (H100: the two fitted ones, a later bf16 run and the
// fp32 configs; H200: bf16 and fp32), whose combine took longer per split than today's: today's
// coefficients on them, pinned so that a change that moves them is seen.
TEST(DecodeModel, AgainstTheRowCombineSweeps) {
  const fit::DecodeScore h = default_score(
      {result_file("h100-decode-sweep-bf16-write-44aaa6b.jsonl"), result_file("h100-decode-sweep-bf16-write-43f12ce.jsonl"),
       result_file("h100-decode-sweep-bf16-write-43f12ce-run2.jsonl"), result_file("h100-decode-sweep-fp32-write-43f12ce.jsonl")},
      h100());
  EXPECT_EQ(h.timings, 1278);
  EXPECT_LE(h.mape, 0.09);
  EXPECT_GE(h.within5, 54);
  EXPECT_LE(h.worst, 0.14);
  const fit::DecodeScore g = default_score(
      {result_file("h200-decode-sweep-bf16-write-43f12ce.jsonl"), result_file("h200-decode-sweep-fp32-write-43f12ce.jsonl")}, h200());
  EXPECT_EQ(g.timings, 665);
  EXPECT_LE(g.mape, 0.11);
  EXPECT_LE(g.worst, 0.14);
}

// The sweeps of the kernels before the combine read the splits side by side and before the
// evict-first stream (h100-decode-bench-{bf16,fp32}-run*.jsonl, bf16 and fp32; their combine
// walked the splits one after another, about 1 us per split more): today's coefficients on them,
// pinned so that a change that moves them is seen. fp32's MAPE is the family's largest.
TEST(DecodeModel, AgainstTheOlderKernelsSweeps) {
  std::vector<std::string> paths;
  for (const char* f : {"h100-decode-bench-bf16-run1.jsonl", "h100-decode-bench-bf16-run2.jsonl",
                        "h100-decode-bench-fp32-run1.jsonl"})
    paths.push_back(result_file(f));
  const fit::DecodeScore r = default_score(paths, h100());
  EXPECT_EQ(r.timings, 816);
  ASSERT_EQ(r.shapes.size(), 38u);
  EXPECT_LE(r.mape, 0.095);
  for (const auto& [dtype, mape] : r.mape_by_dtype) EXPECT_LE(mape, 0.105) << dtype;
  EXPECT_GE(r.within10, 35);
  EXPECT_LE(r.worst, 0.15);
}

// The kernel that streams K/V evict-first (traits::Decode::evict_first, since d339966), swept at
// batch 1 on the H100 at fe21539 (scripts/merged_gpu_check.sh --decode-sweep): each line records
// the stream it ran, and the model predicts that stream. One block streams slower there, more
// blocks faster: the split moves up. 13 of 15 within 5% (12 before the coefficients were fitted on
// the later sweeps); the two misses are 8 K/V heads at 16384 keys (+6%). Pinned here so that a
// model change that moves them is seen.
TEST(DecodeModel, AgainstTheH100EvictFirstSweeps) {
  const model::GpuSpec gpu = h100();
  const std::string path = std::string(FLASHTUNE_SOURCE_DIR) + "/docs/results/h100-decode-bench-bf16-fe21539.jsonl";
  const fit::DecodeSweeps sweeps = fit::load_decode_sweeps({path}, gpu);
  int evict_first = 0;
  for (const fit::FitPoint& p : sweeps.data.points) evict_first += p.decode_run.evict_first.value_or(false) ? 1 : 0;
  EXPECT_EQ(evict_first, 257);  // every shape but the 1074 MB ones (K/V above 6 x the L2)
  const fit::DecodeScore r = fit::score_decode(sweeps, gpu, model::Coefficients{});
  std::printf("%s", fit::render_decode_score(r, true).c_str());
  EXPECT_EQ(r.timings, 309);
  ASSERT_EQ(r.shapes.size(), 15u);
  expect_within(r, 0.07, 13, 0.08);
  // The same timings predicted as if they had streamed without the policy: one block streams
  // faster then, so the model expects fewer splits to do and misses the recorded times by more.
  fit::DecodeSweeps unflagged = sweeps;
  for (fit::FitPoint& p : unflagged.data.points) p.decode_run.evict_first = false;
  EXPECT_GT(fit::score_decode(unflagged, gpu, model::Coefficients{}).mape, r.mape);
}

// The split sweeps timed after the read flush (clean L2, decode_bench --flush read), the 15
// batch-1 shapes on each GPU, never fitted: the H200's with the H100's default coefficients and
// the H200 spec. Searching chunks down to 4 key tiles per warp (kMinSearchChunkTiles) lets the
// model pick 8 splits for 8 K/V heads at 4096 keys, the best on both GPUs (it was held to 4:
// +15-22%). The H100's misses are 8 K/V heads at 32768-65536 keys, where its measured times are
// not monotonic in the split (docs/model.md).
TEST(DecodeModel, AgainstTheReadFlushedSweepsOfBothGpus) {
  struct Case {
    const char* file;
    model::GpuSpec gpu;
    int within5;
    double worst;
  };
  for (const Case& c : {Case{"h100-decode-bench-bf16-read-a4a86b1.jsonl", h100(), 10, 0.10},
                        Case{"h200-decode-bench-bf16-read-e78fa10.jsonl", h200(), 14, 0.10}}) {
    const fit::DecodeSweeps sweeps =
        fit::load_decode_sweeps({std::string(FLASHTUNE_SOURCE_DIR) + "/docs/results/" + c.file}, c.gpu);
    for (const fit::FitPoint& p : sweeps.data.points) EXPECT_FALSE(p.decode_run.dirty_l2) << c.file;
    const fit::DecodeScore r = fit::score_decode(sweeps, c.gpu, model::Coefficients{});
    std::printf("%s: %s", c.file, fit::render_decode_score(r, false).c_str());
    EXPECT_EQ(r.timings, 309) << c.file;
    ASSERT_EQ(r.shapes.size(), 15u) << c.file;
    EXPECT_LE(r.mape, 0.085) << c.file;
    EXPECT_GE(r.within5, c.within5) << c.file;
    EXPECT_LE(r.worst, c.worst) << c.file;
  }
}

// A sweep line's "flush" says how the harness emptied L2 before each sample: "read" leaves clean
// lines, so the model adds no write-back of dirty ones; a line without the field was flushed by
// writes. The same timing predicts faster as read-flushed, by about the write-back's time.
TEST(DecodeModel, ReadFlushedTimingsCarryNoWriteBack) {
  const model::GpuSpec gpu = h100();
  const std::string dir = ::testing::TempDir();
  const std::string path = dir + "/flush-sweep.jsonl";
  {
    std::ofstream f(path);
    const std::string common =
        R"("batch": 1, "q_heads": 32, "kv_heads": 32, "nq": 1, "keys": 8192, "d": 128, "dtype": "bf16", )"
        R"("config": "decode/d128/br16xbc32/swizzled/bf16/s3", "splits": 4, "median_ms": 0.058, "evict_first": true)";
    f << "{" << common << "}\n{" << common << R"(, "flush": "read"})" << "\n";
  }
  const fit::DecodeSweeps s = fit::load_decode_sweeps({path}, gpu);
  ASSERT_EQ(s.data.points.size(), 2u);
  EXPECT_TRUE(s.data.points[0].decode_run.dirty_l2);
  EXPECT_FALSE(s.data.points[1].decode_run.dirty_l2);
  const model::Coefficients k;
  const fit::FitPoint& p = s.data.points[0];
  const model::DecodePrediction dirty = model::predict_decode(p.w, p.c, gpu, k, 4, s.data.points[0].decode_run);
  const model::DecodePrediction clean = model::predict_decode(p.w, p.c, gpu, k, 4, s.data.points[1].decode_run);
  EXPECT_LT(clean.dram_bytes, dirty.dram_bytes);
  EXPECT_NEAR(dirty.dram_bytes - clean.dram_bytes, k.cold_l2_dirty_fraction * double(gpu.l2_bytes) * 0.5, 1.0);
  EXPECT_LT(clean.time_s, dirty.time_s);
  // A flush the harness does not know is refused with the file and line.
  {
    std::ofstream f(path);
    f << R"({"batch": 1, "q_heads": 32, "kv_heads": 32, "nq": 1, "keys": 8192, "d": 128, "config": "decode/d128/br16xbc32/swizzled/bf16/s3", "splits": 4, "median_ms": 0.058, "flush": "sideways"})" << "\n";
  }
  try {
    fit::load_decode_sweeps({path}, gpu);
    ADD_FAILURE() << "an unknown flush loaded";
  } catch (const fit::FitInputError& e) {
    EXPECT_NE(std::string(e.what()).find("flush-sweep.jsonl:1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("sideways"), std::string::npos) << e.what();
  }
}

// Hopper merges 2..16 splits inside their cluster (no workspace, the cluster's own combine term);
// an Ampere spec, or a timing of the kernels before the cluster combine, goes through the combine
// kernel; a sweep line says which ran, and a line without the field is the combine kernel's.
TEST(DecodeModel, ClusterCombineOnHopperUpToSixteenSplits) {
  const model::GpuSpec hopper = h100();  // with its measured cluster capacity (30 clusters of 4, 7 of 16)
  ASSERT_EQ(hopper.max_active_clusters(4), 30);
  const model::GpuSpec ampere = model::load_gpu_spec(std::string(FLASHTUNE_TEST_GPU_DIR) + "/nvidia-a100-sxm-80gb.json");
  model::Coefficients k;
  k.cluster_combine_cycles = 1000.0;
  Workload w;  // 8 K/V heads of 4 query heads each, one row: 8 x splits blocks of one per SM
  w.B = 32, w.N = 1, w.d = 128, w.dtype = DType::Bf16, w.kv_len = 8192, w.kv_group = 4;
  const model::DecodePrediction in_cluster = model::predict_decode(w, bf16_d128(), hopper, k, 4);
  EXPECT_TRUE(in_cluster.cluster_combine);
  EXPECT_EQ(in_cluster.workspace_bytes, 0.0);
  EXPECT_NEAR(in_cluster.combine_s, 1000.0 / hopper.clock_hz(), 1e-12);
  model::DecodeRunState before;
  before.cluster_combine = false;
  const model::DecodePrediction kernel = model::predict_decode(w, bf16_d128(), hopper, k, 4, before);
  EXPECT_FALSE(kernel.cluster_combine);
  EXPECT_GT(kernel.workspace_bytes, 0.0);
  EXPECT_NEAR(kernel.combine_s - in_cluster.combine_s,
              2.0 * kernel.workspace_bytes / (hopper.l2_bytes_per_s() * k.l2_efficiency) +
                  (k.combine_cycles + 4 * k.combine_split_cycles - 1000.0) / hopper.clock_hz(),
              1e-12);
  EXPECT_FALSE(model::predict_decode(w, bf16_d128(), ampere, k, 4).cluster_combine);
  EXPECT_FALSE(model::predict_decode(w, bf16_d128(), hopper, k, 1).cluster_combine);
  // 8 clusters of 8 fit (15 at once); 8 of 16 do not (7 at once): the combine kernel, as measured.
  Workload longer = w;
  longer.kv_len = 65536;
  EXPECT_TRUE(model::predict_decode(longer, bf16_d128(), hopper, k, 8).cluster_combine);
  EXPECT_FALSE(model::predict_decode(longer, bf16_d128(), hopper, k, 16).cluster_combine);
  EXPECT_FALSE(model::predict_decode(longer, bf16_d128(), hopper, k, 17).cluster_combine);
  // 32 K/V heads x 4 splits fill 128 SMs, and 30 clusters of 4 cover 120 of them: the combine kernel;
  // x 3 splits, 96 blocks, more than half the SMs: the combine kernel; x 2, 64 blocks: clusters.
  Workload mha = w;
  mha.kv_group = 1;
  EXPECT_FALSE(model::predict_decode(mha, bf16_d128(), hopper, k, 4).cluster_combine);
  EXPECT_FALSE(model::predict_decode(mha, bf16_d128(), hopper, k, 3).cluster_combine);
  EXPECT_TRUE(model::predict_decode(mha, bf16_d128(), hopper, k, 2).cluster_combine);
  // Two blocks per SM (bf16 d = 64 s3): never in a cluster.
  Workload d64 = w;
  d64.d = 64;
  const TileConfig two_per_sm{Variant::Decode, 64, 16, 32, Layout::Swizzled, DType::Bf16, 3, false};
  EXPECT_FALSE(model::predict_decode(d64, two_per_sm, hopper, k, 4).cluster_combine);

  const std::string path = ::testing::TempDir() + "/cluster-sweep.jsonl";
  {
    std::ofstream f(path);
    const std::string common =
        R"("batch": 1, "q_heads": 32, "kv_heads": 32, "nq": 1, "keys": 8192, "d": 128, "dtype": "bf16", )"
        R"("config": "decode/d128/br16xbc32/swizzled/bf16/s3", "median_ms": 0.058, "evict_first": true)";
    f << "{" << common << R"(, "splits": 4})" << "\n{" << common << R"(, "splits": 4, "cluster_combine": true})"
      << "\n{" << common << R"(, "splits": 4, "cluster_combine": false})" << "\n{" << common
      << R"(, "splits": 1, "cluster_combine": false})" << "\n";
  }
  const fit::DecodeSweeps s = fit::load_decode_sweeps({path}, hopper);
  ASSERT_EQ(s.data.points.size(), 4u);
  EXPECT_EQ(s.data.points[0].decode_run.cluster_combine, std::optional<bool>(false));
  EXPECT_EQ(s.data.points[1].decode_run.cluster_combine, std::optional<bool>(true));
  EXPECT_EQ(s.data.points[2].decode_run.cluster_combine, std::optional<bool>(false));
  // At one split the field says nothing about the splits the model may pick: the rule holds.
  EXPECT_FALSE(s.data.points[3].decode_run.cluster_combine.has_value());
}

// The shipped H100 profile's coefficients (fitted on the tiled families; the decode ones at their
// defaults) serve the decode family too.
TEST(DecodeModel, AgainstTheH100SplitSweepsWithTheShippedProfile) {
  const model::GpuSpec gpu = h100();
  const std::string path = std::string(FLASHTUNE_SOURCE_DIR) + "/profiles/nvidia-h100-sxm.json";
  const model::Coefficients k = model_profile_of(load_profile(path), path).coefficients;
  const fit::DecodeScore r = fit::score_decode(fit::load_decode_sweeps(h100_current_sweeps(), gpu), gpu, k);
  std::printf("%s", fit::render_decode_score(r, false).c_str());
  EXPECT_LE(r.mape, 0.08);
  EXPECT_LE(r.worst, 0.10);
}

// The decode coefficients are fitted by the same Levenberg-Marquardt fit as the others; tiled
// measurements never inform them.
TEST(DecodeModel, DecodeCoefficientsFitOnDecodePointsOnly) {
  const model::GpuSpec gpu = h100();
  const fit::DecodeSweeps sweeps = fit::load_decode_sweeps(h100_sweeps(), gpu);
  std::vector<const fit::FitPoint*> points;
  for (const fit::FitPoint& p : sweeps.data.points) points.push_back(&p);
  for (const std::string& name : fit::default_decode_free_coefficients())
    EXPECT_TRUE(fit::coefficient_informed(name, points)) << name;
  fit::FitPoint tiled = sweeps.data.points.front();
  tiled.c.variant = Variant::Mma16;
  EXPECT_FALSE(fit::coefficient_informed("combine_cycles", {&tiled}));
  // Started away from the defaults, the fit comes back to within a few percent of their MAPE.
  model::Coefficients start;
  start.combine_split_cycles = 300;
  start.stream_knee_blocks = 20;
  const fit::FitResult f =
      fit::fit_coefficients(points, gpu, start, fit::default_decode_free_coefficients(), fit::FitLoss::Absolute);
  const fit::DecodeScore back = fit::score_decode(sweeps, gpu, f.coefficients);
  EXPECT_LE(back.mape, 0.05);
  EXPECT_GE(back.within5, 27);
}

// A sweep's default-split and model-split lines count at their splits: the benchmark's grid
// (1..8, then x 5/4) steps past some splits the default or the model lands on, and a pick must be
// judged at the split it chose. A config timed at its default and the model's split alone is not
// a sweep and is not scored.
TEST(DecodeModel, DefaultAndModelSplitTimingsCountInTheSweep) {
  const model::GpuSpec gpu = h100();
  const std::string path = ::testing::TempDir() + "/decode_default_split.jsonl";
  {
    std::ofstream f(path);
    const auto line = [&](const char* stages, int splits, double ms, bool def, bool pick) {
      f << R"({"batch": 1, "q_heads": 32, "kv_heads": 8, "nq": 1, "keys": 32768, "d": 128, "dtype": "bf16", )"
        << R"("config": "decode/d128/br16xbc32/swizzled/bf16/)" << stages << R"(", "splits": )" << splits
        << R"(, "median_ms": )" << ms << R"(, "default_split": )" << (def ? "true" : "false")
        << R"(, "model_split": )" << (pick ? "true" : "false") << "}\n";
    };
    line("s3", 16, 0.0630, true, false);
    line("s3", 9, 0.0690, false, true);
    for (int sp : {1, 2, 4, 8, 10, 18}) line("s3", sp, 0.30 / sp + 0.060 + (sp > 16 ? 0.015 : 0.0), false, false);
    line("s2", 16, 0.0640, true, false);
    line("s2", 9, 0.0640, false, true);
  }
  const fit::DecodeScore r = fit::score_decode(fit::load_decode_sweeps({path}, gpu), gpu, model::Coefficients{});
  ASSERT_EQ(r.shapes.size(), 1u);  // s2 has no sweep
  EXPECT_EQ(r.shapes[0].best_splits, 16);
  EXPECT_NEAR(r.shapes[0].best_ms, 0.0630, 1e-9);
  EXPECT_EQ(r.shapes[0].measured_at, r.shapes[0].model_splits == 16 ? 16 : r.shapes[0].measured_at);
}

TEST(DecodeModel, SweepFilesRefuseWhatTheyCannotHold) {
  const std::string path = ::testing::TempDir() + "/decode_bad.jsonl";
  {
    std::ofstream out(path);
    out << R"({"batch": 1, "q_heads": 32, "kv_heads": 8, "nq": 1, "keys": 4096, "d": 128, "config": "mma16/d128/br64xbc64/swizzled/bf16", "splits": 1, "median_ms": 0.02})" << "\n";
  }
  try {
    fit::load_decode_sweeps({path}, h100());
    FAIL() << "a tiled config was accepted";
  } catch (const fit::FitInputError& e) {
    EXPECT_NE(std::string(e.what()).find(":1: "), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace flashtune
