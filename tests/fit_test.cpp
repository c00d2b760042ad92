// The coefficient fit and its scores (host-only): rank correlation and regret on hand examples,
// recovery of known coefficients from times the model itself produced, the guards on bad input.
#include <gtest/gtest.h>

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
    EXPECT_NE(std::string(e.what()).find("3 ok measurements, at least 55 needed"), std::string::npos) << e.what();
  }
  EXPECT_THROW(check_coefficient_names({"fp32_eff"}), std::invalid_argument);
}

TEST(FitDataset, RefusesAProfileOfAnotherSchemaVersion) {
  const std::string path = ::testing::TempDir() + "/fit_v2_profile.json";
  std::ofstream(path) << R"({"schema_version": 2, "kind": "flashtune-profile"})";
  try {
    load_fit_dataset(path, FLASHTUNE_TEST_GPU_DIR);
    FAIL() << "expected an error";
  } catch (const FitInputError& e) {
    EXPECT_NE(std::string(e.what()).find("schema_version"), std::string::npos) << e.what();
  }
  std::remove(path.c_str());
}

}  // namespace
}  // namespace flashtune::fit
