// `flashtune fit` as a library call: load a profile, fit the coefficients on all of it, score the
// model in-sample and held out (by workload, by variant) beside the two baselines, evaluate
// model-guided tuning on the held-out ranking, and predict other GPUs' profiles with the fitted
// coefficients (and with the spec sheet alone). Rendering as text or JSON, and writing the
// coefficients back into the profile, are separate steps.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fit/coefficient_fit.h"
#include "fit/cross_validation.h"
#include "fit/fit_dataset.h"
#include "fit/fit_metrics.h"
#include "fit/guided_tuning.h"

namespace flashtune::fit {

struct FitRunOptions {
  std::string profile;
  std::string spec_dir;                 // configs/gpus
  std::vector<std::string> free = default_free_coefficients();
  // cv_dtype: fit on one element-type family (fp32, 16-bit), predict the other; only where the
  // profile holds both.
  bool cv_workload = true, cv_variant = true, cv_family = true, cv_dtype = true;
  std::vector<std::string> cross_profiles;  // other GPUs' profiles to predict
  // Profiles of workloads the fit never sees (profiles/unseen/<gpu>.json), of this GPU or another:
  // scored with the coefficients fitted here, one row each.
  std::vector<std::string> unseen_profiles;
  // Other sweeps of the profile's GPU fitted with it as one set (the bf16 companion beside the
  // fp32 profile); the coefficients are still written into `profile` alone.
  std::vector<std::string> with_profiles;
  // Only these variants' points, in the fit and in every scored set (all when empty).
  std::vector<Variant> variants;
};

struct ScoreRow {
  std::string label;  // "flashtune model, leave-one-workload-out"
  AccuracyMetrics m;
};

struct CrossGpuRow {
  std::string profile, spec;
  AccuracyMetrics fitted;     // with the coefficients fitted here
  AccuracyMetrics spec_only;  // with the default coefficients
};

// The fitted model on a set of workloads it never saw: accuracy, top-1 regret (in m), and what
// measuring the model's top 3 or top 5% would have found.
struct UnseenRow {
  std::string profile, spec, configs;  // configs: "all configs" or "fp32-accurate configs"
  AccuracyMetrics m;
  GuidedResult top3, top5pct;
  std::vector<WorkloadRegret> workloads;
  std::vector<ScoredPoint> points;  // every scored point, for the residuals
};

struct FitRun {
  FitDataset data;
  FitResult fit;
  std::vector<ScoreRow> scores;
  std::vector<WorkloadRegret> held_out_workloads;  // leave-one-workload-out, per workload
  std::vector<GuidedResult> guided;                // on the leave-one-workload-out ranking
  std::vector<CrossGpuRow> cross;
  std::vector<UnseenRow> unseen;
  std::vector<ScoredPoint> in_sample, held_out;  // every point, fitted model / its held-out fold
  // Cross-validation folds that could not be fitted (CrossValidation::incomplete), reported beside the
  // accuracy table; the rows above score the folds that ran.
  std::vector<std::string> incomplete_folds;
};

// progress(line): one line per step (the cross-validation folds take seconds).
// Throws FitInputError (bad profile) or std::invalid_argument (too few measurements, bad names).
FitRun run_fit(const FitRunOptions& o, const std::function<void(const std::string&)>& progress);

std::string render_text(const FitRun& r);
nlohmann::ordered_json render_json(const FitRun& r);
// One row per point: workload, config, variant, measured, in-sample and held-out predictions (ms),
// and the set it belongs to: "fit" (the profile and --with) or "unseen" (each --unseen profile's
// points once, predicted by the fitted coefficients: both prediction columns hold that time).
std::string residuals_csv(const FitRun& r);

// Puts every coefficient (fitted and fixed) into the profile's "coefficients" and a summary of
// the fit under "fit", rewriting the file atomically; everything else in it is kept.
void write_coefficients(const std::string& profile_path, const FitRun& r);

}  // namespace flashtune::fit
