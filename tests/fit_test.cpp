// The coefficient fit and its scores (host-only): rank correlation and regret on hand examples,
// recovery of known coefficients from times the model itself produced, the guards on bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "fit/coefficient_fit.h"
#include "fit/cross_validation.h"
#include "fit/fit_dataset.h"
#include "fit/fit_metrics.h"
#include "fit/guided_tuning.h"
#include "model/config_catalog.h"
#include "model/gpu_spec.h"
#include "model/predict.h"

namespace flashtune::fit {
namespace {

model::GpuSpec h200() { return model::find_gpu_spec("nvidia-h200", FLASHTUNE_TEST_GPU_DIR); }

// A profile whose measured times are the model's own predictions with coefficients `truth`.
Profile synthetic_profile(const model::Coefficients& truth) {
  Profile p;
  p.gpu.name = "NVIDIA H200";
  p.gpu.spec = "nvidia-h200";
  const model::GpuSpec gpu = h200();
  model::ConfigCatalog catalog;
  const std::vector<std::pair<std::string, Workload>> workloads = {
      {"a", {4, 1024, 64, false}}, {"b", {64, 2048, 64, true}}, {"c", {512, 256, 64, false}}, {"d", {1, 8192, 64, false}}};
  for (const auto& [name, w] : workloads) {
    p.workloads.push_back({name, w});
    for (const TileConfig& c : model::compiled_tile_configs()) {
      if (c.d != 64) continue;
      Measurement m;
      m.workload = name;
      m.config = c.name();
      TimingSummary t;
      t.median_ms = 1e3 * model::predict(w, catalog.analysis(c), gpu, truth).time_s;
      m.timing = t;
      p.measurements.push_back(m);
    }
  }
  return p;
}

TEST(FitMetrics, SpearmanOnHandExamples) {
  EXPECT_DOUBLE_EQ(spearman({1, 2, 3, 4}, {10, 20, 30, 40}), 1.0);
  EXPECT_DOUBLE_EQ(spearman({1, 2, 3, 4}, {4, 3, 2, 1}), -1.0);
  // Ties take their mean rank: ranks (1.5, 1.5, 3) against (1, 2, 3) -> 0.866.
  EXPECT_NEAR(spearman({5, 5, 7}, {1, 2, 3}), std::sqrt(3.0) / 2.0, 1e-12);
  EXPECT_TRUE(std::isnan(spearman({1, 1, 1}, {1, 2, 3})));
}

TEST(FitMetrics, RegretIsThePicksMeasuredTimeOverTheBest) {
  // The model likes "b" (predicted 1.0) but "a" is fastest (1.0 vs 1.25 measured): regret 25%.
  const std::vector<ScoredPoint> pts = {{"w", "a", "v", 1.00, 2.0}, {"w", "b", "v", 1.25, 1.0}, {"w", "c", "v", 3.0, 3.0}};
  const std::vector<WorkloadRegret> r = per_workload(pts);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].pick, "b");
  EXPECT_EQ(r[0].best, "a");
  EXPECT_NEAR(r[0].regret, 0.25, 1e-12);
  const AccuracyMetrics m = score(pts);
  EXPECT_NEAR(m.max_ape, 100.0, 1e-9);  // "a": predicted 2.0 for 1.0 measured
  EXPECT_NEAR(m.median_regret, 25.0, 1e-9);
  // Measuring the top 2 finds "a": no regret left.
  const std::vector<GuidedResult> g = evaluate_guided(pts, {{"K=1", 1, 0}, {"K=2", 2, 0}});
  EXPECT_NEAR(g[0].median_regret, 25.0, 1e-9);
  EXPECT_NEAR(g[1].median_regret, 0.0, 1e-12);
  EXPECT_EQ(g[1].within_2pct, 1);
  EXPECT_NEAR(g[1].share_measured, 2.0 / 3.0, 1e-12);
}

// Equal predictions (a padded and a swizzled tile of the same work) pick the smaller shared
// memory footprint, whatever the profile's order: in the top-1 pick and in the top-K measured.
TEST(FitMetrics, EqualPredictionsPickTheSmallerSharedMemoryFootprint) {
  const std::vector<ScoredPoint> pts = {{"w", "padded", "v", 1.05, 1.0, 71680},
                                        {"w", "swizzled", "v", 1.00, 1.0, 65536},
                                        {"w", "slow", "v", 2.00, 2.0, 1024}};
  const std::vector<WorkloadRegret> r = per_workload(pts);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].pick, "swizzled");
  EXPECT_NEAR(r[0].regret, 0.0, 1e-12);
  EXPECT_NEAR(evaluate_guided(pts, {{"K=1", 1, 0}})[0].max_regret, 0.0, 1e-12);
  // A faster prediction still wins over a smaller footprint.
  EXPECT_TRUE(pts[0].picked_before(pts[2]));
  EXPECT_FALSE(pts[2].picked_before(pts[1]));
  EXPECT_FALSE(pts[1].picked_before(pts[1]));  // a strict order
}

TEST(CoefficientFit, RecoversCoefficientsTheTimesWereMadeWith) {
  model::Coefficients truth;
  truth.fp32_efficiency = 0.62;
  truth.iteration_latency_cycles = 900;
  truth.launch_overhead_us = 5.0;
  const Profile p = synthetic_profile(truth);
  const FitDataset ds = make_fit_dataset(p, "synthetic", h200());
  ASSERT_GE(ds.points.size(), min_points_for_fit(3));
  const FitResult r = fit_coefficients(ds.all(), ds.gpu, model::Coefficients{},
                                       {"fp32_efficiency", "iteration_latency_cycles", "launch_overhead_us"});
  EXPECT_GT(r.rms_log_start, 0.02) << r.status;  // the defaults are visibly off
  EXPECT_LT(r.rms_log_end, 1e-3) << r.status << " after " << r.evaluations;
  EXPECT_NEAR(r.coefficients.fp32_efficiency, 0.62, 0.01);
  EXPECT_NEAR(r.coefficients.launch_overhead_us, 5.0, 0.2);
  // The fixed ones are untouched.
  EXPECT_EQ(r.coefficients.dram_efficiency, model::Coefficients{}.dram_efficiency);
}

// The synthetic profile holds the tensor-core configs at d = 64: the fit recovers the tensor
// efficiency their times were made with, beside an FP32 one.
TEST(CoefficientFit, RecoversTheTensorEfficiency) {
  model::Coefficients truth;
  truth.tensor_efficiency = 0.27;
  truth.fp32_efficiency = 0.7;
  const FitDataset ds = make_fit_dataset(synthetic_profile(truth), "synthetic", h200());
  ASSERT_TRUE(coefficient_informed("tensor_efficiency", ds.all()));
  const FitResult r = fit_coefficients(ds.all(), ds.gpu, model::Coefficients{}, {"tensor_efficiency", "fp32_efficiency"});
  EXPECT_TRUE(r.uninformed.empty());
  EXPECT_LT(r.rms_log_end, 1e-3) << r.status;
  EXPECT_NEAR(r.coefficients.tensor_efficiency, 0.27, 0.01);
  EXPECT_NEAR(r.coefficients.fp32_efficiency, 0.7, 0.01);
}

// Without a tensor-core measurement the data says nothing about tensor_efficiency: it keeps its
// start value and is reported, the others fit as before; asked for alone, it is an error.
TEST(CoefficientFit, TensorEfficiencyStaysWithoutTensorCorePoints) {
  model::Coefficients truth;
  truth.fp32_efficiency = 0.7;
  const FitDataset ds = make_fit_dataset(synthetic_profile(truth), "synthetic", h200());
  std::vector<const FitPoint*> simt;
  for (const FitPoint* p : ds.all())
    if (!uses_tensor_cores(p->c.variant)) simt.push_back(p);
  ASSERT_LT(simt.size(), ds.points.size());
  EXPECT_FALSE(coefficient_informed("tensor_efficiency", simt));
  EXPECT_TRUE(coefficient_informed("fp32_efficiency", simt));
  const std::vector<std::string> free = default_free_coefficients();
  ASSERT_NE(std::find(free.begin(), free.end(), "tensor_efficiency"), free.end());
  const FitResult r = fit_coefficients(simt, ds.gpu, model::Coefficients{}, {"fp32_efficiency", "tensor_efficiency"});
  EXPECT_EQ(r.free, std::vector<std::string>{"fp32_efficiency"});
  EXPECT_EQ(r.uninformed, std::vector<std::string>{"tensor_efficiency"});
  EXPECT_EQ(r.coefficients.tensor_efficiency, model::Coefficients{}.tensor_efficiency);
  EXPECT_NEAR(r.coefficients.fp32_efficiency, 0.7, 0.01);
  try {
    fit_coefficients(simt, ds.gpu, model::Coefficients{}, {"tensor_efficiency"});
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "no coefficient to fit (tensor_efficiency: no measurement of a kernel that uses it)");
  }
}

// A profile checked against a GPU without tensor cores leaves the tensor-core measurements out,
// each with the model's reason.
TEST(FitDataset, TensorCoreMeasurementsOnPascalAreSkipped) {
  const Profile p = synthetic_profile({});
  const model::GpuSpec gtx = model::find_gpu_spec("nvidia-gtx-1080", FLASHTUNE_TEST_GPU_DIR);
  const FitDataset ds = make_fit_dataset(p, "synthetic", gtx);
  std::size_t tensor = 0, skipped_tensor = 0;
  for (const Measurement& m : p.measurements) tensor += m.config.rfind("mma_", 0) == 0 || m.config.rfind("wgmma_", 0) == 0;
  for (const std::string& s : ds.skipped)
    if (s.find("mma_") != std::string::npos) {
      ++skipped_tensor;
      // The sm_90a fp32 family (wgmma_3xtf32, wgmma_1xtf32) is refused for wgmma, not TF32.
      EXPECT_NE(s.find(s.find("wgmma_") != std::string::npos
                           ? "needs sm_90a (wgmma, TMA: compute capability >= 9.0); NVIDIA GeForce GTX 1080 is 6.1"
                           : "needs TF32 tensor cores (compute capability >= 8.0); NVIDIA GeForce GTX 1080 is 6.1"),
                std::string::npos) << s;
    }
  ASSERT_GT(tensor, 0u);
  EXPECT_EQ(skipped_tensor, tensor);
  for (const FitPoint& pt : ds.points) EXPECT_FALSE(uses_tensor_cores(pt.c.variant)) << pt.config;
  EXPECT_FALSE(ds.points.empty());
}

TEST(CoefficientFit, HeldOutWorkloadsArePredictedByFoldsThatNeverSawThem) {
  model::Coefficients truth;
  truth.fp32_efficiency = 0.7;
  const FitDataset ds = make_fit_dataset(synthetic_profile(truth), "synthetic", h200());
  const CrossValidation cv = cross_validate(ds, Holdout::Workload, model::Coefficients{}, {"fp32_efficiency"});
  ASSERT_EQ(cv.folds.size(), 4u);
  EXPECT_EQ(cv.held_out.size(), ds.points.size());
  for (const Fold& f : cv.folds) EXPECT_EQ(f.train_points + f.test_points, int(ds.points.size()));
  // Times made by the model itself: every fold recovers them.
  EXPECT_LT(score(cv.held_out).max_ape, 1.0);
}

TEST(CoefficientFit, TooFewMeasurementsSaysHowManyAreNeeded) {
  const FitDataset ds = make_fit_dataset(synthetic_profile({}), "synthetic", h200());
  const std::vector<const FitPoint*> all = ds.all();
  const std::vector<const FitPoint*> few(all.begin(), all.begin() + 3);
  try {
    fit_coefficients(few, ds.gpu, {}, default_free_coefficients());
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("3 ok measurements, at least 60 needed"), std::string::npos) << e.what();
  }
  EXPECT_THROW(check_coefficient_names({"fp32_eff"}), std::invalid_argument);
}

TEST(FitDataset, RefusesAProfileOfAnotherSchemaVersion) {
  const std::string path = ::testing::TempDir() + "/fit_v2_profile.json";
  std::ofstream(path) << R"({"schema_version": 4, "kind": "flashtune-profile"})";
  try {
    load_fit_dataset(path, FLASHTUNE_TEST_GPU_DIR);
    FAIL() << "expected an error";
  } catch (const FitInputError& e) {
    EXPECT_NE(std::string(e.what()).find("schema_version"), std::string::npos) << e.what();
  }
  std::remove(path.c_str());
}

// Issue 24's "16-bit family held out": the dtype split fits on the fp32 pairs and predicts the
// 16-bit ones (and the other way round); a fold of 16-bit pairs alone still informs
// tensor_efficiency (mma16's m16n8k16 instructions are tensor-core work too).
TEST(CoefficientFit, DtypeFoldsHoldOutEachElementTypeFamily) {
  model::Coefficients truth;
  truth.tensor_efficiency = 0.5;
  Profile p = synthetic_profile(truth);
  const model::GpuSpec gpu = h200();
  model::ConfigCatalog catalog;
  const std::vector<std::pair<std::string, Workload>> bf16 = {{"a_bf16", {4, 1024, 64, false, 0.0f, DType::Bf16}},
                                                             {"b_bf16", {64, 2048, 64, true, 0.0f, DType::Bf16}}};
  for (const auto& [name, w] : bf16) {
    p.workloads.push_back({name, w});
    for (const int br : {64, 128})
      for (const int bc : {32, 64}) {
        const TileConfig c{Variant::Mma16, 64, br, bc, Layout::Swizzled, DType::Bf16, 2, false};
        Measurement m;
        m.workload = name;
        m.config = c.name();
        TimingSummary t;
        t.median_ms = 1e3 * model::predict(w, catalog.analysis(c), gpu, truth).time_s;
        m.timing = t;
        p.measurements.push_back(m);
      }
  }
  const FitDataset ds = make_fit_dataset(p, "synthetic", gpu);
  std::vector<const FitPoint*> sixteen;
  for (const FitPoint* pt : ds.all())
    if (pt->w.dtype != DType::Fp32) sixteen.push_back(pt);
  ASSERT_EQ(sixteen.size(), 8u);
  EXPECT_TRUE(coefficient_informed("tensor_efficiency", sixteen));
  EXPECT_STREQ(dtype_family_of(DType::Fp16), "16-bit");
  EXPECT_STREQ(holdout_name(Holdout::Dtype), "dtype");
  const CrossValidation cv = cross_validate(ds, Holdout::Dtype, model::Coefficients{}, {"tensor_efficiency"});
  ASSERT_EQ(cv.folds.size(), 2u);
  EXPECT_EQ(cv.folds[0].held_out, "fp32");
  EXPECT_EQ(cv.folds[1].held_out, "16-bit");
  EXPECT_EQ(cv.folds[1].test_points, 8);
  EXPECT_EQ(cv.folds[1].train_points, int(ds.points.size()) - 8);
  EXPECT_NEAR(cv.folds[1].coefficients.tensor_efficiency, 0.5, 0.01);
  EXPECT_EQ(cv.held_out.size(), ds.points.size());
}

// fit --with: a GPU's other sweep joins the fit's points (its configs' geometry stays alive with
// it); another GPU's sweep, or a (workload, config) pair in both, is refused naming the file.
TEST(FitDatasetJoin, JoinsSweepsOfOneGpuAndRefusesAnotherOrAPairTwice) {
  const Profile first = synthetic_profile(model::Coefficients{});
  Profile second = first;
  for (NamedWorkload& w : second.workloads) w.name += "_again";
  for (Measurement& m : second.measurements) m.workload += "_again";
  FitDataset ds = make_fit_dataset(first, "first.json", h200());
  const std::size_t n = ds.points.size();
  ASSERT_GT(n, 0u);
  join_fit_datasets(ds, make_fit_dataset(second, "second.json", h200()));
  ASSERT_EQ(ds.points.size(), 2 * n);
  // The joined points' geometry is usable after the joined dataset is gone.
  const FitPoint& joined = ds.points.back();
  EXPECT_NE(joined.workload.find("_again"), std::string::npos);
  EXPECT_GT(model::predict(joined.w, *joined.geometry, ds.gpu, model::Coefficients{}).time_s, 0.0);
  try {
    join_fit_datasets(ds, make_fit_dataset(first, "twice.json", h200()));
    ADD_FAILURE() << "a pair in both sweeps was joined";
  } catch (const FitInputError& e) {
    EXPECT_NE(std::string(e.what()).find("twice.json"), std::string::npos) << e.what();
  }
  Profile other = second;
  other.gpu.name = "NVIDIA H100 SXM5 80GB";
  try {
    join_fit_datasets(ds, make_fit_dataset(other, "h100.json", model::find_gpu_spec("nvidia-h100-sxm", FLASHTUNE_TEST_GPU_DIR)));
    ADD_FAILURE() << "another GPU's sweep was joined";
  } catch (const FitInputError& e) {
    EXPECT_NE(std::string(e.what()).find("measured on NVIDIA H100"), std::string::npos) << e.what();
  }
  EXPECT_EQ(ds.points.size(), 2 * n);
}

// fit --variants: only those variants' points stay; the others are listed as left out.
TEST(FitDatasetJoin, KeepVariantsLeavesTheOthersOut) {
  FitDataset ds = make_fit_dataset(synthetic_profile(model::Coefficients{}), "synthetic", h200());
  const std::size_t before = ds.points.size(), skipped_before = ds.skipped.size();
  keep_variants(ds, {Variant::RegTile2D});
  ASSERT_FALSE(ds.points.empty());
  ASSERT_LT(ds.points.size(), before);
  for (const FitPoint& p : ds.points) EXPECT_EQ(p.c.variant, Variant::RegTile2D) << p.config;
  EXPECT_EQ(ds.skipped.size() - skipped_before, before - ds.points.size());
  EXPECT_NE(ds.skipped.back().find("--variants"), std::string::npos);
  keep_variants(ds, {});  // none named: all stay
  EXPECT_FALSE(ds.points.empty());
}

}  // namespace
}  // namespace flashtune::fit
