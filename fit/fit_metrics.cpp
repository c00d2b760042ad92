#include "fit/fit_metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

#include "model/rank.h"

namespace flashtune::fit {

bool ScoredPoint::picked_before(const ScoredPoint& o) const {
  return model::predicted_before(predicted_s, smem_bytes, o.predicted_s, o.smem_bytes);
}

namespace {

std::vector<double> ranks(const std::vector<double>& v) {
  std::vector<std::size_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
    const double mean_rank = 0.5 * double(i + j) + 1.0;
    for (std::size_t k = i; k <= j; ++k) r[order[k]] = mean_rank;
    i = j + 1;
  }
  return r;
}

}  // namespace

double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (a.size() != b.size() || a.size() < 2) return nan;
  const std::vector<double> ra = ranks(a), rb = ranks(b);
  const double n = double(a.size());
  const double ma = std::accumulate(ra.begin(), ra.end(), 0.0) / n, mb = std::accumulate(rb.begin(), rb.end(), 0.0) / n;
  double sab = 0, saa = 0, sbb = 0;
  for (std::size_t i = 0; i < ra.size(); ++i) {
    sab += (ra[i] - ma) * (rb[i] - mb);
    saa += (ra[i] - ma) * (ra[i] - ma);
    sbb += (rb[i] - mb) * (rb[i] - mb);
  }
  return saa > 0 && sbb > 0 ? sab / std::sqrt(saa * sbb) : nan;
}

std::vector<std::pair<std::string, std::vector<const ScoredPoint*>>> group_by_workload(
    const std::vector<ScoredPoint>& points) {
  std::vector<std::pair<std::string, std::vector<const ScoredPoint*>>> groups;
  std::map<std::string, std::size_t> index;
  for (const ScoredPoint& p : points) {
    auto [it, inserted] = index.emplace(p.workload, groups.size());
    if (inserted) groups.push_back({p.workload, {}});
    groups[it->second].second.push_back(&p);
  }
  return groups;
}

std::vector<WorkloadRegret> per_workload(const std::vector<ScoredPoint>& points) {
  std::vector<WorkloadRegret> out;
  for (const auto& [name, v] : group_by_workload(points)) {
    WorkloadRegret r;
    r.workload = name;
    r.configs = int(v.size());
    const ScoredPoint* best = v[0];
    const ScoredPoint* pick = v[0];
    std::vector<double> m, p;
    for (const ScoredPoint* s : v) {
      if (s->measured_s < best->measured_s) best = s;
      if (s->picked_before(*pick)) pick = s;
      m.push_back(s->measured_s);
      p.push_back(s->predicted_s);
    }
    r.best = best->config;
    r.pick = pick->config;
    r.regret = pick->measured_s / best->measured_s - 1.0;
    r.spearman = spearman(m, p);
    out.push_back(r);
  }
  return out;
}

AccuracyMetrics score(const std::vector<ScoredPoint>& points) {
  AccuracyMetrics a;
  std::vector<double> ape;
  for (const ScoredPoint& p : points) {
    if (!(p.measured_s > 0) || !std::isfinite(p.predicted_s)) continue;
    const double e = model::ape_percent(p.predicted_s, p.measured_s);
    if (e > a.max_ape) {
      a.max_ape = e;
      a.worst_ape_point = p.workload + " " + p.config;
    }
    ape.push_back(e);
  }
  const model::ApeSummary s = model::summarize_ape(ape);
  a.points = s.n;
  a.mape = s.mape;
  a.median_ape = s.median_ape;
  const std::vector<WorkloadRegret> wr = per_workload(points);
  a.workloads = int(wr.size());
  std::vector<double> rho, regret;
  for (const WorkloadRegret& r : wr) {
    if (r.configs >= 3 && std::isfinite(r.spearman)) rho.push_back(r.spearman);
    regret.push_back(100.0 * r.regret);
    if (100.0 * r.regret >= a.max_regret) {
      a.max_regret = 100.0 * r.regret;
      a.worst_regret_workload = r.workload;
    }
  }
  // No workload with a defined rank correlation (a model that gives every config one time): NaN.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  a.median_spearman = rho.empty() ? nan : median(rho);
  a.min_spearman = rho.empty() ? nan : *std::min_element(rho.begin(), rho.end());
  a.median_regret = median(regret);
  return a;
}

}  // namespace flashtune::fit
