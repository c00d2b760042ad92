#include "fit/cross_validation.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <stdexcept>

#include "model/baselines.h"

namespace flashtune::fit {
namespace {

std::string group_of(const FitPoint& p, Holdout by) {
  switch (by) {
    case Holdout::Workload: return p.workload;
    case Holdout::Variant: return variant_name(p.c.variant);
    case Holdout::Family: return family_of(p.c.variant);
    case Holdout::Dtype: return dtype_family_of(p.w.dtype);
  }
  return "?";
}

ScoredPoint scored(const FitPoint& p, double predicted_s) {
  return {p.workload, p.config, variant_name(p.c.variant), p.measured_s, predicted_s, p.geometry ? p.geometry->smem_bytes : 0};
}

}  // namespace

const char* holdout_name(Holdout h) {
  switch (h) {
    case Holdout::Workload: return "workload";
    case Holdout::Variant: return "variant";
    case Holdout::Family: return "family";
    case Holdout::Dtype: return "dtype";
  }
  return "?";
}

const char* family_of(Variant v) { return uses_tensor_cores(v) ? "tensor-core" : "simt"; }

const char* dtype_family_of(DType t) { return t == DType::Fp32 ? "fp32" : "16-bit"; }

const char* predictor_name(Predictor p) {
  switch (p) {
    case Predictor::Model: return "flashtune model";
    case Predictor::Roofline: return "roofline";
    case Predictor::Seed: return "seed model";
  }
  return "?";
}

std::vector<ScoredPoint> score_points(const FitDataset& ds, Predictor pred, const model::Coefficients& k) {
  std::vector<ScoredPoint> out;
  out.reserve(ds.points.size());
  for (const FitPoint& p : ds.points) {
    double t = 0;
    switch (pred) {
      case Predictor::Model: t = predicted_time(p, ds.gpu, k); break;
      case Predictor::Roofline: t = model::roofline_time(p.w, ds.gpu).time_s; break;
      case Predictor::Seed: t = model::seed_model_time(p.w, p.c, ds.gpu).time_s; break;
    }
    out.push_back(scored(p, t));
  }
  return out;
}

CrossValidation cross_validate(const FitDataset& ds, Holdout by, const model::Coefficients& start,
                               const std::vector<std::string>& free,
                               const std::function<void(const std::string&)>& progress) {
  const auto t0 = std::chrono::steady_clock::now();
  CrossValidation cv;
  cv.by = by;
  std::vector<std::string> groups;
  for (const FitPoint& p : ds.points) {
    const std::string g = group_of(p, by);
    if (std::find(groups.begin(), groups.end(), g) == groups.end()) groups.push_back(g);
  }
  for (const std::string& g : groups) {
    std::vector<const FitPoint*> train, test;
    for (const FitPoint& p : ds.points) (group_of(p, by) == g ? test : train).push_back(&p);
    Fold f;
    f.held_out = g;
    f.train_points = int(train.size());
    f.test_points = int(test.size());
    try {
      f.coefficients = fit_coefficients(train, ds.gpu, start, free).coefficients;
    } catch (const std::invalid_argument& e) {  // too few training points, or none that informs a coefficient
      cv.incomplete.push_back(std::string(holdout_name(by)) + " fold '" + g + "' (" + std::to_string(train.size()) +
                              " training, " + std::to_string(test.size()) + " held out) not fitted: " + e.what());
      if (progress) progress(cv.incomplete.back());
      continue;
    }
    for (const FitPoint* p : test) cv.held_out.push_back(scored(*p, predicted_time(*p, ds.gpu, f.coefficients)));
    cv.folds.push_back(f);
    if (progress) {
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const double left = elapsed / double(cv.folds.size()) * double(groups.size() - cv.folds.size());
      char line[200];
      std::snprintf(line, sizeof line, "%s fold %zu/%zu (%s) done, %.1f s, about %.1f s left", holdout_name(by),
                    cv.folds.size(), groups.size(), g.c_str(), elapsed, left);
      progress(line);
    }
  }
  return cv;
}

}  // namespace flashtune::fit
