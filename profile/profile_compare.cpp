#include "profile/profile_compare.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

namespace flashtune {
namespace {

using PairKey = std::pair<std::string, std::string>;  // workload, config

bool timed_ok(const Measurement& m) { return m.status == status::kOk && m.timing.has_value(); }

// The ok, timed measurements of a profile by (workload, config).
std::map<PairKey, const Measurement*> ok_pairs(const Profile& p) {
  std::map<PairKey, const Measurement*> out;
  for (const Measurement& m : p.measurements)
    if (timed_ok(m)) out[{m.workload, m.config}] = &m;
  return out;
}

// One pair's two medians (or one workload's two best medians, named by A's best config).
struct PairDiff {
  std::string workload, config;
  double a_ms = 0, b_ms = 0;
  int device_a = 0, device_b = 0;
  double rel() const { return (b_ms - a_ms) / a_ms; }
};

RelDiffStats stats_of(const std::vector<PairDiff>& diffs, double tolerance) {
  RelDiffStats s;
  s.pairs = diffs.size();
  if (diffs.empty()) return s;
  std::vector<double> abs_values, signed_values;
  for (const PairDiff& d : diffs) {
    const double rel = d.rel();
    abs_values.push_back(std::fabs(rel));
    signed_values.push_back(rel);
    if (std::fabs(rel) <= tolerance) ++s.within;
    if (std::fabs(rel) >= s.max_abs) {
      s.max_abs = std::fabs(rel);
      s.max_workload = d.workload;
      s.max_config = d.config;
    }
  }
  s.median_abs = quantile_of(abs_values, 0.5);
  s.p90_abs = quantile_of(abs_values, 0.9);
  s.median_signed = quantile_of(signed_values, 0.5);
  s.share_within = double(s.within) / double(s.pairs);
  return s;
}

std::vector<OutsideByWorkload> outside_by_workload(const std::vector<PairDiff>& diffs, double tolerance) {
  std::map<std::string, std::vector<const PairDiff*>> by_workload;
  for (const PairDiff& d : diffs) by_workload[d.workload].push_back(&d);
  std::vector<OutsideByWorkload> out;
  for (const auto& [name, list] : by_workload) {
    OutsideByWorkload o;
    o.workload = name;
    o.pairs = list.size();
    std::vector<double> diff_us, a_us;
    for (const PairDiff* d : list) {
      if (std::fabs(d->rel()) > tolerance) ++o.outside;
      diff_us.push_back((d->b_ms - d->a_ms) * 1e3);
      a_us.push_back(d->a_ms * 1e3);
    }
    if (o.outside == 0) continue;
    o.median_diff_us = quantile_of(diff_us, 0.5);
    o.median_a_us = quantile_of(a_us, 0.5);
    out.push_back(o);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const OutsideByWorkload& x, const OutsideByWorkload& y) { return x.outside > y.outside; });
  return out;
}

void check_same_workloads(const Profile& a, const Profile& b) {
  std::map<std::string, Workload> in_a;
  for (const NamedWorkload& w : a.workloads) in_a[w.name] = w.workload;
  for (const NamedWorkload& w : b.workloads) {
    const auto it = in_a.find(w.name);
    if (it != in_a.end() && !same_dimensions(it->second, w.workload))
      throw CompareError("workload '" + w.name + "' is " + describe_workload(it->second) + " in A but " +
                         describe_workload(w.workload) + " in B");
  }
}

// The ok configs of each workload: two bests compare only over the same candidates.
std::map<std::string, std::set<std::string>> ok_configs(const Profile& p) {
  std::map<std::string, std::set<std::string>> out;
  for (const Measurement& m : p.measurements)
    if (m.status == status::kOk) out[m.workload].insert(m.config);
  return out;
}

std::vector<WorkloadBest> compare_bests(const Profile& a, const Profile& b,
                                        const std::map<PairKey, const Measurement*>& ok_a, double tolerance,
                                        std::size_t& partial) {
  std::vector<WorkloadBest> out;
  const auto configs_a = ok_configs(a), configs_b = ok_configs(b);
  partial = 0;
  for (const NamedWorkload& w : a.workloads) {
    const auto ia = a.best.find(w.name), ib = b.best.find(w.name);
    if (ia == a.best.end() || ib == b.best.end() || !(ia->second.median_ms > 0)) continue;
    const auto ca = configs_a.find(w.name), cb = configs_b.find(w.name);
    if (ca == configs_a.end() || cb == configs_b.end() || ca->second != cb->second) {
      ++partial;  // one side measured other configs (an interrupted run): its best is not comparable
      continue;
    }
    WorkloadBest r;
    r.workload = w.name;
    r.best_a = ia->second.config;
    r.best_b = ib->second.config;
    r.best_a_ms = ia->second.median_ms;
    r.best_b_ms = ib->second.median_ms;
    r.best_rel_diff = (r.best_b_ms - r.best_a_ms) / r.best_a_ms;
    r.same = r.best_a == r.best_b;
    if (!r.same) {
      const auto it = ok_a.find({w.name, r.best_b});
      if (it != ok_a.end()) {
        r.b_best_in_a = (it->second->timing->median_ms - r.best_a_ms) / r.best_a_ms;
        r.tie = *r.b_best_in_a <= tolerance;
      }
    }
    out.push_back(r);
  }
  return out;
}

std::size_t device_count(const Profile& p) {
  std::set<int> devices;
  for (const Measurement& m : p.measurements) devices.insert(m.device_index);
  return devices.size();
}

}  // namespace

double quantile_of(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double pos = std::clamp(q, 0.0, 1.0) * double(values.size() - 1);
  const std::size_t lo = std::size_t(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (pos - double(lo)) * (values[hi] - values[lo]);
}

ProfileComparison compare_profiles(const Profile& a, const Profile& b, const CompareOptions& options) {
  check_same_workloads(a, b);
  ProfileComparison c;
  c.options = options;
  c.gpu_a = a.gpu;
  c.gpu_b = b.gpu;
  c.same_gpu = a.gpu.spec == b.gpu.spec && a.gpu.name == b.gpu.name;
  const auto ok_a = ok_pairs(a), ok_b = ok_pairs(b);
  c.ok_a = ok_a.size();
  c.ok_b = ok_b.size();

  std::vector<PairDiff> diffs, long_diffs;
  for (const auto& [key, ma] : ok_a) {
    const auto it = ok_b.find(key);
    if (it == ok_b.end()) continue;
    const double ta = ma->timing->median_ms, tb = it->second->timing->median_ms;
    if (!(ta > 0)) continue;  // a zero median cannot be a reference; the schema allows none
    const PairDiff d{key.first, key.second, ta, tb, ma->device_index, it->second->device_index};
    diffs.push_back(d);
    if (std::min(ta, tb) >= options.long_kernel_ms) long_diffs.push_back(d);
  }
  c.common = diffs.size();
  if (c.common == 0) throw CompareError("no (workload, config) pair is measured ok in both profiles");
  c.only_a = c.ok_a - c.common;
  c.only_b = c.ok_b - c.common;
  c.all = stats_of(diffs, options.tolerance);
  c.long_kernels = stats_of(long_diffs, options.tolerance);
  c.outside = outside_by_workload(diffs, options.tolerance);

  c.per_workload = compare_bests(a, b, ok_a, options.tolerance, c.partial_workloads);
  c.workloads = c.per_workload.size();
  std::vector<PairDiff> best_diffs;
  for (const WorkloadBest& w : c.per_workload) {
    c.same_best += w.same;
    c.ties += w.tie;
    best_diffs.push_back({w.workload, w.best_a, w.best_a_ms, w.best_b_ms, 0, 0});
  }
  c.best = stats_of(best_diffs, options.tolerance);

  if (device_count(a) > 1 || device_count(b) > 1) {
    std::map<std::pair<int, int>, std::vector<PairDiff>> by_device;
    for (const PairDiff& d : diffs) by_device[{d.device_a, d.device_b}].push_back(d);
    for (const auto& [devs, list] : by_device)
      c.devices.push_back({devs.first, devs.second, stats_of(list, options.tolerance)});
  }
  return c;
}

}  // namespace flashtune
