// Plot 6: the model's per-pipe terms for the best measured config of each workload, each as a
// fraction of that config's measured time, drawn as a table of coloured cells (one row per
// workload, one column per pipe, then the model's total). The terms overlap in time (the model
// combines them per wave, it does not add them), so a stacked bar would mislead; a row of cells
// shows which pipe the model thinks binds and how close the total comes to 1.
#include <cstdio>

#include "plots/plot_kinds.h"

namespace flashtune::plots {

PlotOutcome plot_pipes(const Drawer& dr, const std::vector<PlotPoint>& pts) {
  const std::vector<const PlotPoint*> best = best_per_workload(pts);
  std::string data, rows = "(", cols = "(";
  int col = 0;
  for (model::Pipe pipe : model::kAllPipes) {
    cols += (col ? ", \"" : "\"") + std::string(model::pipe_name(pipe)) + "\" " + std::to_string(col);
    ++col;
  }
  cols += ", \"model total\" " + std::to_string(col) + ")";
  for (std::size_t r = 0; r < best.size(); ++r) {
    const PlotPoint& p = *best[r];
    const double m = p.measured_s();
    int c = 0;
    for (model::Pipe pipe : model::kAllPipes) data += std::to_string(c++) + "\t" + std::to_string(r) + "\t" + num(p.ours.pipes[pipe] / m) + "\n";
    data += std::to_string(c) + "\t" + std::to_string(r) + "\t" + num(p.ours.time_s / m) + "\n";
    char ms[32];
    std::snprintf(ms, sizeof ms, "%.3g ms", p.m.median_ms);
    rows += (r ? ", \"" : "\"") + p.m.workload_name + ": " + tile_text(p.m.config) + ", " + ms + "\" " +
            std::to_string(r);
  }
  rows += ")";
  dr.draw("pipes", "pipes", data,
          {{"rows", gnuplot_quote(rows)},
           {"nrows", std::to_string(best.size())},
           {"cols", gnuplot_quote(cols)},
           {"ncols", std::to_string(col + 1)}});
  return {"Model time per pipe for the best measured config of each workload, as a fraction of the measured time",
          {"pipes"},
          "terms overlap in time (the model combines them per wave, it does not add them): read each row for the "
          "largest term, and the model total against 1"};
}

}  // namespace flashtune::plots
