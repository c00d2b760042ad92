// Plot 5: shared-memory wavefronts and bank conflicts, the bank simulator against CUPTI, like with
// like: ncu's op_ld + op_st counters against the model's load and store sites, without the
// cp.async copies (ncu counts those as op_ldgsts, which the profile does not record); the terms
// and metrics are model/counter_check's shared_{ld,st}_{wavefronts,conflicts}, summed over the two
// ops. One colour per variant, one marker per layout.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

#include "model/counter_check.h"
#include "plots/accuracy.h"
#include "plots/plot_kinds.h"

namespace flashtune::plots {
namespace {

const char* metric(const char* term) { return model::counter_term(term).metric; }

// Sum of the named counters; -1 when one is missing.
double counter_sum(const ProfileMeasurement& m, const char* a, const char* b) {
  auto x = m.counters.find(a), y = m.counters.find(b);
  return x == m.counters.end() || y == m.counters.end() ? -1 : x->second + y->second;
}

}  // namespace

PlotOutcome plot_bank_conflicts(const Drawer& dr, const std::vector<PlotPoint>& pts) {
  PlotOutcome out{"Shared-memory wavefronts and bank conflicts (loads + stores, cp.async copies excluded): bank "
                  "simulator vs CUPTI, per variant and layout",
                  {},
                  ""};
  // Columns: predicted and measured wavefronts (millions), predicted and measured conflicts as a
  // share of the wavefronts (a conflict-free layout counts zero or a few hundred: a log axis
  // cannot show it, a share can).
  std::map<std::pair<Variant, Layout>, std::string> rows;
  double lo = std::numeric_limits<double>::max(), hi = 0;
  std::vector<double> pred_waves, meas_waves, share_diffs;
  const char* ld_waves = metric("shared_ld_wavefronts");
  const char* st_waves = metric("shared_st_wavefronts");
  for (const PlotPoint& p : pts) {
    const double wave = counter_sum(p.m, ld_waves, st_waves);
    const double conf = counter_sum(p.m, metric("shared_ld_conflicts"), metric("shared_st_conflicts"));
    const model::Counts& c = p.ours.counts;
    const double model_wave = c.smem_load_wavefronts + c.smem_store_wavefronts;
    const double model_share = (model_wave - c.smem_load_ideal - c.smem_store_ideal) / model_wave;
    if (!(wave > 0) || !(model_wave > 0)) continue;
    const double pw = model_wave / 1e6, mw = wave / 1e6;
    rows[{p.m.config.variant, p.m.config.layout}] += num(pw) + "\t" + num(mw) + "\t" + num(model_share) + "\t" +
                                                     (conf >= 0 ? num(conf / wave) : "NaN") + "\n";
    pred_waves.push_back(pw);
    meas_waves.push_back(mw);
    if (conf >= 0) share_diffs.push_back(std::fabs(model_share - conf / wave));
    lo = std::min({lo, pw, mw});
    hi = std::max({hi, pw, mw});
  }
  if (rows.empty()) {
    out.note = std::string("skipped: no measurement carries the CUPTI counters ") + ld_waves + " and " + st_waves;
    return out;
  }
  Blocks blocks;
  std::vector<std::string> colours, points;
  for (const auto& [key, text] : rows) {
    blocks[std::string(variant_name(key.first)) + "/" + layout_name(key.second)] = text;
    colours.push_back(variant_colour(key.first));
    points.push_back(std::to_string(layout_point_type(key.second)));
  }
  dr.draw("bank_conflicts", "bank_conflicts", blocks.joined(),
          {{"groups", gnuplot_quote(words_of(blocks.labels))},
           {"colours", gnuplot_quote(words_of(colours))},
           {"points", gnuplot_quote(words_of(points))},
           {"lo", num(lo / 1.5)},
           {"hi", num(hi * 1.5)}});
  out.stems.push_back("bank_conflicts");
  const AccuracySummary a = summarize_accuracy(pred_waves, meas_waves);
  char note[200];
  std::snprintf(note, sizeof note, "wavefronts: median APE %.2f%%, max %.2f%%, %d of %d within 10%%", a.median_ape,
                a.max_ape, a.within_10, a.n);
  out.note = note;
  if (!share_diffs.empty()) {
    std::sort(share_diffs.begin(), share_diffs.end());
    std::snprintf(note, sizeof note, "; conflict share: median |predicted - measured| %.4f, max %.4f",
                  share_diffs[share_diffs.size() / 2], share_diffs.back());
    out.note += note;
  }
  return out;
}

}  // namespace flashtune::plots
