// Plot 3: time over the (Br, Bc) grid of each selected workload, measured and predicted side by
// side; a cell is the fastest variant/layout of that tile; the best cell outlined.
#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "plots/plot_kinds.h"

namespace flashtune::plots {
namespace {

using Cell = std::pair<int, int>;  // (Bc, Br)

std::string tic_list(const std::set<int>& values) {
  std::string t;
  for (int v : values) t += (t.empty() ? "(" : ", ") + std::string("\"") + std::to_string(v) + "\" " + std::to_string(v);
  return t + ")";
}

}  // namespace

PlotOutcome plot_heatmaps(const Drawer& dr, const std::vector<PlotPoint>& pts, const std::vector<std::string>& workloads) {
  PlotOutcome out{"Time over the (Br, Bc) tile grid per workload, measured and predicted side by side, best marked",
                  {},
                  ""};
  std::map<std::string, std::map<Cell, std::pair<double, double>>> cells;  // (measured, predicted) ms
  std::map<std::string, Workload> wl;
  for (const PlotPoint& p : pts) {
    if (std::find(workloads.begin(), workloads.end(), p.m.workload_name) == workloads.end()) continue;
    wl[p.m.workload_name] = p.m.workload;
    const double pred = p.ours.time_s * 1e3;
    auto [it, fresh] = cells[p.m.workload_name].emplace(Cell{p.m.config.Bc, p.m.config.Br}, std::make_pair(p.m.median_ms, pred));
    if (!fresh) it->second = {std::min(it->second.first, p.m.median_ms), std::min(it->second.second, pred)};
  }
  std::vector<std::string> missing;
  for (const std::string& name : workloads) {
    if (!cells.count(name)) {
      missing.push_back(name);
      continue;
    }
    const auto& grid = cells[name];
    std::string block;
    double cbmin = std::numeric_limits<double>::max(), cbmax = 0;
    Cell best_m{}, best_p{};
    double bm = cbmin, bp = cbmin;
    std::set<int> bcs, brs;
    for (const auto& [key, t] : grid) {
      block += std::to_string(key.first) + "\t" + std::to_string(key.second) + "\t" + num(t.first) + "\t" +
               num(t.second) + "\n";
      cbmin = std::min({cbmin, t.first, t.second});
      cbmax = std::max({cbmax, t.first, t.second});
      bcs.insert(key.first);
      brs.insert(key.second);
      if (t.first < bm) bm = t.first, best_m = key;
      if (t.second < bp) bp = t.second, best_p = key;
    }
    const std::string data = block + "\n\n" + std::to_string(best_m.first) + "\t" + std::to_string(best_m.second) +
                             "\n\n\n" + std::to_string(best_p.first) + "\t" + std::to_string(best_p.second) + "\n";
    if (cbmax <= cbmin) cbmax = cbmin * 1.01;
    const std::string stem = "heatmap_" + safe_stem(name);
    dr.draw(stem, "heatmap", data,
            {{"wl", gnuplot_quote(name + " (" + workload_text(wl[name]) + ")")},
             {"cbmin", num(cbmin)},
             {"cbmax", num(cbmax)},
             {"xmin", std::to_string(*bcs.begin())},
             {"xmax", std::to_string(*bcs.rbegin())},
             {"ymin", std::to_string(*brs.begin())},
             {"ymax", std::to_string(*brs.rbegin())},
             {"xt", gnuplot_quote(tic_list(bcs))},
             {"yt", gnuplot_quote(tic_list(brs))}});
    out.stems.push_back(stem);
  }
  if (!missing.empty()) out.note = "no predicted measurement for " + words_of(missing);
  return out;
}

}  // namespace flashtune::plots
