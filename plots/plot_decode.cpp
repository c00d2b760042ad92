#include "plots/plot_decode.h"

#include <algorithm>
#include <map>
#include <utility>

namespace flashtune::plots {

PlotOutcome plot_decode_vs_keys(const Drawer& dr, const std::vector<DecodeKeysPoint>& pts, double copy_gbps) {
  PlotOutcome out{"Decode time against the K/V length: measured at the model's split, the best split, the model, "
                  "and the copy-bandwidth floor",
                  {},
                  ""};
  // Panels and their series in first-seen order; per series its points by K/V length (the first
  // of each length).
  std::vector<std::string> panels;
  std::map<std::string, std::vector<std::string>> order;
  std::map<std::pair<std::string, std::string>, std::map<long long, DecodeKeysPoint>> series;
  for (const DecodeKeysPoint& p : pts) {
    if (std::find(panels.begin(), panels.end(), p.panel) == panels.end()) panels.push_back(p.panel);
    if (!series.count({p.panel, p.series})) order[p.panel].push_back(p.series);
    series[{p.panel, p.series}].emplace(p.keys, p);
  }
  // Per panel p and its series s (two or more lengths), one block in panel order: keys, at the
  // model's split, best, model, floor (ms).
  Blocks blocks;
  GnuplotVars vars{{"copy", num(copy_gbps)}};
  int np = 0, drawn = 0;  // panels and blocks so far
  for (const std::string& panel : panels) {
    int ns = 0;
    for (const std::string& s : order.at(panel)) {
      const auto& at = series.at({panel, s});
      if (at.size() < 2) continue;
      ++ns;
      const std::string label = panel + ": " + s;
      for (const auto& [keys, p] : at)
        blocks[label] += std::to_string(keys) + "\t" + num(p.at_ms) + "\t" + num(p.best_ms) + "\t" + num(p.model_ms) +
                         "\t" + num(p.bytes / (copy_gbps * 1e9) * 1e3) + "\n";
      vars.emplace_back("s" + std::to_string(np + 1) + "_" + std::to_string(ns), gnuplot_quote(s));
    }
    if (ns == 0) continue;
    ++np;
    vars.emplace_back("p" + std::to_string(np), gnuplot_quote(panel));
    vars.emplace_back("n" + std::to_string(np), std::to_string(ns));
    vars.emplace_back("o" + std::to_string(np), std::to_string(drawn));  // its first block
    drawn += ns;
  }
  if (np == 0) {
    out.note = "skipped: no swept decode shape was measured at two or more K/V lengths";
    return out;
  }
  vars.emplace_back("np", std::to_string(np));
  dr.draw("decode_vs_keys", "decode_vs_keys", blocks.joined(), vars);
  out.stems.push_back("decode_vs_keys");
  return out;
}

}  // namespace flashtune::plots
