// Held-out accuracy: the coefficients are fitted without a group (one workload, one kernel
// variant, or a whole family of variants) and the group is predicted with them, for every group in turn. The baselines have no
// coefficients to fit, so they are scored on the same points as they stand.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "fit/coefficient_fit.h"
#include "fit/fit_dataset.h"
#include "fit/fit_metrics.h"

namespace flashtune::fit {

// Family: the tensor-core variants against the SIMT ones (fit on one family, predict the other).
// Dtype: the element types' families, fp32 against 16-bit (bf16 and fp16): issue 24's "16-bit
// family held out (fitted on fp32 only)" is that split's 16-bit fold.
enum class Holdout { Workload, Variant, Family, Dtype };
const char* holdout_name(Holdout h);  // "workload", "variant", "family", "dtype"
// The Family group of a variant: "tensor-core" or "simt".
const char* family_of(Variant v);
// The Dtype group of an element type: "fp32" or "16-bit".
const char* dtype_family_of(DType t);

enum class Predictor { Model, Roofline, Seed };
const char* predictor_name(Predictor p);  // "flashtune model", "roofline", "seed model"

// Every point with the predictor's time (the model with coefficients `k`).
std::vector<ScoredPoint> score_points(const FitDataset& ds, Predictor p, const model::Coefficients& k);

struct Fold {
  std::string held_out;
  int train_points = 0, test_points = 0;
  model::Coefficients coefficients;
};

struct CrossValidation {
  Holdout by = Holdout::Workload;
  std::vector<ScoredPoint> held_out;  // every point predicted by the fold that did not see it
  std::vector<Fold> folds;
  // Folds that could not be fitted, one line each ("family fold 'tensor-core' (64 training, 12 held
  // out): too few measurements to fit 13 coefficients: ..."); their points are not in held_out.
  std::vector<std::string> incomplete;
};

// A fold whose training set is too small to fit is left out and named in `incomplete` (a small
// profile used to lose the whole report to one fold). `progress`, when given, gets one line per
// fold: "fold 12/37 (t22) done, 5.1 s, about 10.8 s left".
CrossValidation cross_validate(const FitDataset& ds, Holdout by, const model::Coefficients& start,
                               const std::vector<std::string>& free,
                               const std::function<void(const std::string&)>& progress = {});

}  // namespace flashtune::fit
