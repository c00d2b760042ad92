#include "plots/plot_points.h"

#include <cmath>
#include <map>

#include "model/config_catalog.h"
#include "model/predict.h"

namespace flashtune::plots {

std::vector<PlotPoint> predict_points(const PlotProfile& p, const model::GpuSpec& gpu, const model::Coefficients& k,
                                      std::vector<std::string>& skipped) {
  model::ConfigCatalog catalog;
  std::vector<PlotPoint> out;
  for (const ProfileMeasurement& m : p.ok) {
    if (auto why = model::config_rejection(m.config, m.workload)) {
      skipped.push_back(m.config.name() + " on " + m.workload_name + ": " + *why);
      continue;
    }
    // A profile drawn against another GPU's spec: a config that GPU cannot run (tensor cores
    // below cc 8.0) is left out with the reason, not an error.
    if (auto why = model::instruction_set_refusal(m.config, gpu)) {
      skipped.push_back(m.config.name() + " on " + m.workload_name + ": " + *why);
      continue;
    }
    PlotPoint pt;
    pt.m = m;
    pt.ours = model::predict(m.workload, catalog.analysis(m.config), gpu, k, m.registers);
    if (!pt.ours.refusal.empty() || !std::isfinite(pt.ours.time_s) || !(pt.ours.time_s > 0)) {
      skipped.push_back(m.config.name() + " on " + m.workload_name + ": " +
                        (pt.ours.refusal.empty() ? "the model gave no finite positive time" : pt.ours.refusal));
      continue;
    }
    pt.roofline = model::roofline_time(m.workload, gpu);
    pt.seed = model::seed_model_time(m.workload, m.config, gpu);
    out.push_back(std::move(pt));
  }
  return out;
}

const char* model_label(ModelKind m) {
  switch (m) {
    case ModelKind::Ours: return "flashtune model";
    case ModelKind::Roofline: return "pure roofline";
    case ModelKind::Seed: return "seed model";
  }
  return "?";
}

double predicted_s(const PlotPoint& pt, ModelKind m) {
  switch (m) {
    case ModelKind::Ours: return pt.ours.time_s;
    case ModelKind::Roofline: return pt.roofline.time_s;
    case ModelKind::Seed: return pt.seed.time_s;
  }
  return 0;
}

std::vector<const PlotPoint*> best_per_workload(const std::vector<PlotPoint>& points) {
  std::vector<const PlotPoint*> best;
  std::map<std::string, std::size_t> slot;
  for (const PlotPoint& pt : points) {
    auto [it, fresh] = slot.emplace(pt.m.workload_name, best.size());
    if (fresh) best.push_back(&pt);
    else if (pt.m.median_ms < best[it->second]->m.median_ms) best[it->second] = &pt;
  }
  return best;
}

}  // namespace flashtune::plots
