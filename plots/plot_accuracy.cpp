// Plot 1: predicted against measured time, log-log, y = x and +-10%, one panel per model, one
// colour per variant. Each panel has its own range: the seed model is off by up to 700x and would
// squash the other two panels into a corner if they shared one.
#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>

#include "plots/accuracy.h"
#include "plots/plot_kinds.h"

namespace flashtune::plots {

PlotOutcome plot_accuracy(const Drawer& dr, const std::vector<PlotPoint>& pts) {
  std::map<Variant, std::string> rows;
  std::vector<double> measured;
  std::map<ModelKind, std::vector<double>> pred;
  for (const PlotPoint& p : pts) {
    std::string& b = rows[p.m.config.variant];
    b += num(p.m.median_ms);
    measured.push_back(p.measured_s());
    for (ModelKind m : kAllModels) {
      pred[m].push_back(predicted_s(p, m));
      b += "\t" + num(predicted_s(p, m) * 1e3);
    }
    b += "\n";
  }
  auto [data, vars] = variant_blocks(rows);
  const auto [mlo, mhi] = std::minmax_element(measured.begin(), measured.end());
  int panel = 1;
  for (ModelKind m : kAllModels) {
    const auto [plo, phi] = std::minmax_element(pred[m].begin(), pred[m].end());
    const std::string k = std::to_string(panel++);
    vars.emplace_back("lo" + k, num(std::min(*mlo, *plo) * 1e3 / 1.4));
    vars.emplace_back("hi" + k, num(std::max(*mhi, *phi) * 1e3 * 1.4));
    const AccuracySummary s = summarize_accuracy(pred[m], measured);
    char stats[160];
    std::snprintf(stats, sizeof stats, "MAPE %.1f%%, median %.1f%%, %d/%d within 10%%", s.mape, s.median_ape,
                  s.within_10, s.n);
    vars.emplace_back("t" + k, gnuplot_quote(model_label(m)));  // title line 1
    vars.emplace_back("s" + k, gnuplot_quote(stats));            // title line 2
  }
  dr.draw("accuracy", "accuracy", data, vars);
  return {"Predicted vs measured time, one panel per model (flashtune, pure roofline, seed), coloured by variant",
          {"accuracy"},
          ""};
}

}  // namespace flashtune::plots
