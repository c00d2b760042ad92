// Plot 2: time against N for fixed tiles and d. A sweep rarely holds B fixed while N varies, so
// the plot takes the series the profile has: workloads of one d that share B (and causal) and
// differ in N. Points are measurements; lines are the flashtune model over a dense N grid at that
// series' B. Two panels, two configs measured on every point: the best over the series, and the
// best config of the variant that does worst (the contrast shows the model following a different
// bottleneck).
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "model/config_catalog.h"
#include "plots/plot_kinds.h"

namespace flashtune::plots {
namespace {

using SeriesKey = std::tuple<int, long long, bool>;  // d, B, causal

std::string series_label(const SeriesKey& s) {
  return "B=" + std::to_string(std::get<1>(s)) + (std::get<2>(s) ? " causal" : "");
}

// Every measured N of each (d, B, causal).
std::map<SeriesKey, std::set<long long>> series_of(const std::vector<PlotPoint>& pts) {
  std::map<SeriesKey, std::set<long long>> out;
  for (const PlotPoint& p : pts) out[{p.m.config.d, p.m.workload.B, p.m.workload.causal}].insert(p.m.workload.N);
  return out;
}

}  // namespace

PlotOutcome plot_time_vs_n(const Drawer& dr, const std::vector<PlotPoint>& pts, const model::GpuSpec& gpu,
                           const model::Coefficients& k) {
  PlotOutcome out{"Time vs sequence length N for fixed tiles and d: measured points, flashtune model lines", {}, ""};
  // The d with the longest series (most N at one B), then every series of that d with >= 2 N.
  const auto all = series_of(pts);
  const auto longest = std::max_element(all.begin(), all.end(), [](const auto& a, const auto& b) {
    return a.second.size() < b.second.size();
  });
  if (longest->second.size() < 2) {
    out.note = "skipped: no (d, B, causal) was measured at 2 or more values of N";
    return out;
  }
  const int d = std::get<0>(longest->first);
  std::vector<SeriesKey> series;
  for (const auto& [key, ns] : all)
    if (std::get<0>(key) == d && ns.size() >= 2) series.push_back(key);
  std::sort(series.begin(), series.end(), [&](const auto& a, const auto& b) { return all.at(a).size() > all.at(b).size(); });
  if (series.size() > 4) series.resize(4);

  // Configs measured at every point of the series, scored by the mean log of time / the best time
  // at that point (so the largest workload does not decide alone).
  std::map<std::pair<SeriesKey, long long>, double> best_at;
  std::map<std::string, std::vector<const PlotPoint*>> by_config;
  for (const PlotPoint& p : pts) {
    const SeriesKey key{p.m.config.d, p.m.workload.B, p.m.workload.causal};
    if (std::find(series.begin(), series.end(), key) == series.end()) continue;
    auto [it, fresh] = best_at.emplace(std::make_pair(key, p.m.workload.N), p.m.median_ms);
    if (!fresh) it->second = std::min(it->second, p.m.median_ms);
    by_config[p.m.config.name()].push_back(&p);
  }
  std::map<std::string, double> score;
  for (const auto& [name, ps] : by_config) {
    if (ps.size() != best_at.size()) continue;  // not measured everywhere (or measured twice)
    double s = 0;
    for (const PlotPoint* p : ps)
      s += std::log(p->m.median_ms / best_at.at({{d, p->m.workload.B, p->m.workload.causal}, p->m.workload.N}));
    score[name] = s / double(ps.size());
  }
  if (score.empty()) {
    out.note = "skipped: no config was measured at every point of the d=" + std::to_string(d) + " series";
    return out;
  }
  const auto by_score = [&](const auto& a, const auto& b) { return a.second < b.second; };
  const std::string best = std::min_element(score.begin(), score.end(), by_score)->first;
  std::map<Variant, std::pair<std::string, double>> best_of_variant;
  for (const auto& [name, s] : score) {
    const Variant v = by_config[name].front()->m.config.variant;
    auto [it, fresh] = best_of_variant.emplace(v, std::make_pair(name, s));
    if (!fresh && s < it->second.second) it->second = {name, s};
  }
  std::vector<std::string> panels = {best};
  const auto worst_variant = std::max_element(best_of_variant.begin(), best_of_variant.end(),
                                              [](const auto& a, const auto& b) { return a.second.second < b.second.second; });
  if (worst_variant->second.first != best) panels.push_back(worst_variant->second.first);

  model::ConfigCatalog catalog;
  std::string data;
  GnuplotVars vars;
  for (std::size_t pi = 0; pi < panels.size(); ++pi) {
    std::vector<const PlotPoint*> ps = by_config[panels[pi]];
    const TileConfig& c = ps.front()->m.config;
    const auto& analysis = catalog.analysis(c);
    for (const SeriesKey& key : series) {
      std::string measured, lines;
      std::vector<const PlotPoint*> row;
      for (const PlotPoint* p : ps)
        if (SeriesKey{d, p->m.workload.B, p->m.workload.causal} == key) row.push_back(p);
      std::sort(row.begin(), row.end(), [](auto* a, auto* b) { return a->m.workload.N < b->m.workload.N; });
      for (const PlotPoint* p : row) measured += num(double(p->m.workload.N)) + "\t" + num(p->m.median_ms) + "\n";
      const double n0 = double(row.front()->m.workload.N), n1 = double(row.back()->m.workload.N);
      long long last_n = 0;
      for (int i = 0; i <= 80; ++i) {
        Workload w = row.front()->m.workload;
        w.N = std::llround(n0 * std::pow(n1 / n0, i / 80.0));
        if (w.N == last_n) continue;
        last_n = w.N;
        const auto ours = model::predict(w, analysis, gpu, k, row.front()->m.registers);
        if (ours.refusal.empty()) lines += num(double(w.N)) + "\t" + num(ours.time_s * 1e3) + "\n";
      }
      data += (data.empty() ? "" : "\n\n") + measured + "\n\n" + lines;
    }
    vars.emplace_back("p" + std::to_string(pi + 1),
                      gnuplot_quote(tile_text(c) + (pi == 0 ? " (best over these workloads)"
                                                            : " (best " + std::string(variant_name(c.variant)) + ")")));
  }
  std::vector<std::string> labels;
  for (const SeriesKey& key : series) labels.push_back(series_label(key));
  for (std::size_t i = 0; i < labels.size(); ++i) vars.emplace_back("s" + std::to_string(i + 1), gnuplot_quote(labels[i]));
  vars.emplace_back("np", std::to_string(panels.size()));
  vars.emplace_back("ns", std::to_string(series.size()));
  vars.emplace_back("d", std::to_string(d));
  dr.draw("time_vs_n", "time_vs_n", data, vars);
  out.stems.push_back("time_vs_n");
  return out;
}

}  // namespace flashtune::plots
