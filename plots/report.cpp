#include "plots/report.h"

#include <cstdio>
#include <map>

#include "model/rank.h"
#include "plots/accuracy.h"

namespace flashtune::plots {
namespace {

std::string fmt(const char* f, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, x);
  return buf;
}

std::string accuracy_table(const std::vector<PlotPoint>& pts) {
  std::string s = "| model | points | MAPE | median APE | max APE | within 10% |\n| --- | ---: | ---: | ---: | ---: | ---: |\n";
  std::vector<double> measured;
  for (const PlotPoint& p : pts) measured.push_back(p.measured_s());
  for (ModelKind m : kAllModels) {
    std::vector<double> pred;
    for (const PlotPoint& p : pts) pred.push_back(predicted_s(p, m));
    const AccuracySummary a = summarize_accuracy(pred, measured);
    s += std::string("| ") + model_label(m) + " | " + std::to_string(a.n) + " | " + fmt("%.1f%%", a.mape) + " | " +
         fmt("%.1f%%", a.median_ape) + " | " + fmt("%.1f%%", a.max_ape) + " | " + std::to_string(a.within_10) +
         " |\n";
  }
  return s;
}

std::string best_table(const std::vector<PlotPoint>& pts) {
  // The model's pick: the measured config it predicts fastest, judged by that config's measured time.
  std::map<std::string, const PlotPoint*> pick;
  for (const PlotPoint& p : pts) {
    auto& q = pick[p.m.workload_name];
    if (!q || model::predicted_before(p.ours.time_s, p.ours.occupancy.smem_allocated_per_block, q->ours.time_s,
                                      q->ours.occupancy.smem_allocated_per_block))
      q = &p;
  }
  std::string s =
      "| workload | shape | best measured config | measured (ms) | model's pick | its measured (ms) | pick / best |\n"
      "| --- | --- | --- | ---: | --- | ---: | ---: |\n";
  for (const PlotPoint* b : best_per_workload(pts)) {
    const Workload& w = b->m.workload;
    const PlotPoint* q = pick[b->m.workload_name];
    s += "| " + b->m.workload_name + " | B=" + std::to_string(w.B) + " N=" + std::to_string(w.N) +
         " d=" + std::to_string(w.d) + (w.causal ? " causal" : "") + " | `" + b->m.config.name() + "` | " +
         fmt("%.4g", b->m.median_ms) + " | `" + q->m.config.name() + "` | " + fmt("%.4g", q->m.median_ms) + " | " +
         fmt("%.3f", q->m.median_ms / b->m.median_ms) + " |\n";
  }
  return s;
}

}  // namespace

std::string render_report(const ReportInput& in) {
  const PlotProfile& p = *in.profile;
  const std::vector<PlotPoint>& pts = *in.points;
  std::string s = "# flashtune report: " + p.gpu_name + "\n\n";
  s += "Profile `" + p.path + "`: " + std::to_string(p.ok.size()) + " of " + std::to_string(p.measurements_total) +
       " measurements with status ok, " + std::to_string(p.workloads.size()) + " workloads; GPU spec `" +
       in.gpu_spec_file + "`.\n\n";
  s += p.fitted_coefficients > 0
           ? "Our model uses the " + std::to_string(p.fitted_coefficients) +
                 " coefficients in the profile (written by `flashtune fit`; docs/fit.md has which were fitted and the "
                 "held-out accuracy). The figures below are in-sample.\n\n"
           : std::string("Our model uses its default coefficients: the profile has none fitted.\n\n");
  s += "## Accuracy against measurement\n\n"
       "APE = |predicted - measured| / measured per (workload, config), over the measurements with status ok.\n\n";
  s += accuracy_table(pts) + "\n";
  s += "## Best config per workload\n\n"
       "The model's pick is the measured config it predicts fastest; `pick / best` is what following the model "
       "would cost (1.000: it finds the best).\n\n";
  s += best_table(pts) + "\n";
  s += "## Plots\n\n";
  if (!in.plots_note.empty()) s += in.plots_note + "\n\n";
  for (const PlotOutcome& o : in.plots) {
    s += "### " + o.title + "\n\n";
    if (!o.note.empty()) s += "*" + o.note + "*\n\n";
    for (const std::string& stem : o.stems) s += "![" + stem + "](" + stem + ".png) ([SVG](" + stem + ".svg))\n\n";
  }
  if (!in.skipped.empty()) {
    s += "## Measurements the model did not predict\n\n";
    for (const std::string& why : in.skipped) s += "- " + why + "\n";
  }
  return s;
}

}  // namespace flashtune::plots
