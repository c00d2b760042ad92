// `flashtune compare --profile A --against B`: two profiles of the same workloads side by side
// (profile/profile_compare.h): the per-pair relative difference of the median times, the same over
// long kernels only, the best config per workload and whether a different best is a tie, and a
// breakdown per GPU when a profile was measured on several. Two runs on one GPU model give the
// sweep's stability; profiles of two GPUs give how far a tuning result carries over. No GPU needed.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <iomanip>
#include <memory>
#include <set>
#include <sstream>
#include <string>

#include "commands.h"
#include "exit_codes.h"
#include "profile/profile.h"
#include "profile/profile_compare.h"

namespace flashtune::app {
namespace {

using nlohmann::ordered_json;

struct CompareCliOptions {
  std::string profile, against;
  double tolerance = 0.02, long_us = 50;
  int list = 5;
  bool json = false;
};

Profile load_or_fail(const std::string& path) {
  try {
    return load_profile(path);
  } catch (const ProfileError& e) {
    throw CommandError{kExitUsage, e.what()};
  }
}

std::string devices_text(const Profile& p) {
  std::set<int> devices;
  for (const Measurement& m : p.measurements) devices.insert(m.device_index);
  std::string s;
  for (int d : devices) s += (s.empty() ? "" : ", ") + std::to_string(d);
  return s.empty() ? "none" : s;
}

double pct(double x) { return 100.0 * x; }

ordered_json stats_json(const RelDiffStats& s) {
  return {{"pairs", s.pairs},           {"median_abs", s.median_abs}, {"p90_abs", s.p90_abs},
          {"max_abs", s.max_abs},       {"max_workload", s.max_workload}, {"max_config", s.max_config},
          {"median_signed", s.median_signed}, {"within", s.within}, {"share_within", s.share_within}};
}

// A stream, not a fixed buffer: long workload and config names are written whole.
std::string stats_text(const RelDiffStats& s, double tolerance) {
  if (s.pairs == 0) return "no pairs";
  std::ostringstream out;
  const auto percent = [&out](double fraction, int digits) -> std::ostringstream& {
    out << std::fixed << std::setprecision(digits) << pct(fraction) << "%";
    return out;
  };
  out << s.pairs << " pairs: |diff| median ";
  percent(s.median_abs, 2) << ", p90 ";
  percent(s.p90_abs, 2) << ", max ";
  percent(s.max_abs, 1) << " (" << s.max_workload << " " << s.max_config << "); ";
  percent(s.share_within, 1) << " within " << std::defaultfloat << std::setprecision(6) << pct(tolerance)
                             << "%; signed median " << std::showpos;
  percent(s.median_signed, 2);
  return out.str();
}

ordered_json comparison_json(const CompareCliOptions& o, const Profile& a, const Profile& b,
                             const ProfileComparison& c) {
  auto side = [](const std::string& path, const Profile& p, std::size_t ok) {
    return ordered_json{{"path", path}, {"gpu", p.gpu.name}, {"spec", p.gpu.spec}, {"ok_pairs", ok}};
  };
  ordered_json j;
  j["schema_version"] = 1;
  j["a"] = side(o.profile, a, c.ok_a);
  j["b"] = side(o.against, b, c.ok_b);
  j["same_gpu"] = c.same_gpu;
  j["tolerance"] = c.options.tolerance;
  j["long_kernel_ms"] = c.options.long_kernel_ms;
  j["common_pairs"] = c.common;
  j["only_a"] = c.only_a;
  j["only_b"] = c.only_b;
  j["pairs"] = stats_json(c.all);
  j["long_pairs"] = stats_json(c.long_kernels);
  ordered_json outside = ordered_json::array();
  for (const OutsideByWorkload& w : c.outside)
    outside.push_back({{"workload", w.workload}, {"outside", w.outside}, {"pairs", w.pairs},
                       {"median_diff_us", w.median_diff_us}, {"median_a_us", w.median_a_us}});
  j["outside_by_workload"] = outside;
  j["workloads"] = c.workloads;
  j["same_best"] = c.same_best;
  j["partial_workloads"] = c.partial_workloads;
  j["ties"] = c.ties;
  j["best_medians"] = stats_json(c.best);
  ordered_json per = ordered_json::array();
  for (const WorkloadBest& w : c.per_workload) {
    ordered_json x = {{"workload", w.workload}, {"best_a", w.best_a},     {"best_a_ms", w.best_a_ms},
                      {"best_b", w.best_b},     {"best_b_ms", w.best_b_ms}, {"best_rel_diff", w.best_rel_diff},
                      {"same", w.same},         {"tie", w.tie}};
    x["b_best_in_a"] = w.b_best_in_a ? ordered_json(*w.b_best_in_a) : ordered_json(nullptr);
    per.push_back(x);
  }
  j["per_workload"] = per;
  ordered_json devices = ordered_json::array();
  for (const DeviceBreakdown& d : c.devices) {
    ordered_json x = stats_json(d.all);
    x["device_a"] = d.device_a;
    x["device_b"] = d.device_b;
    devices.push_back(x);
  }
  j["devices"] = devices;
  return j;
}

void print_text(const CompareCliOptions& o, const Profile& a, const Profile& b, const ProfileComparison& c) {
  const double tol = c.options.tolerance;
  std::printf("A         %s: %s (%s), %zu ok pairs, device %s\n", o.profile.c_str(), a.gpu.name.c_str(),
              a.gpu.spec.c_str(), c.ok_a, devices_text(a).c_str());
  std::printf("B         %s: %s (%s), %zu ok pairs, device %s\n", o.against.c_str(), b.gpu.name.c_str(),
              b.gpu.spec.c_str(), c.ok_b, devices_text(b).c_str());
  std::printf("pairs     %zu ok in both, %zu ok only in A, %zu ok only in B; diff = (B - A) / A of the medians\n",
              c.common, c.only_a, c.only_b);
  std::printf("all       %s\n", stats_text(c.all, tol).c_str());
  std::printf(">= %gus   %s\n", o.long_us, stats_text(c.long_kernels, tol).c_str());
  std::size_t shown = 0;
  for (const OutsideByWorkload& w : c.outside) {
    if (shown++ == std::size_t(o.list)) {
      std::printf("outside   ... %zu more workloads\n", c.outside.size() - std::size_t(o.list));
      break;
    }
    std::printf("outside   %-26s %3zu of %3zu pairs beyond %g%%; median B - A %+.2f us over A's median %.1f us\n",
                w.workload.c_str(), w.outside, w.pairs, pct(tol), w.median_diff_us, w.median_a_us);
  }
  std::printf("best      same config on %zu of %zu workloads; %zu of the %zu that differ are ties (B's best within "
              "%g%% of A's best in A)\n",
              c.same_best, c.workloads, c.ties, c.workloads - c.same_best, pct(tol));
  if (c.partial_workloads > 0)
    std::printf("best      %zu workloads left out: measured on different configs in A and B (a partial run?)\n",
                c.partial_workloads);
  std::printf("best ms   %s\n", stats_text(c.best, tol).c_str());
  for (const WorkloadBest& w : c.per_workload) {
    if (w.same) continue;
    char in_a[32] = "not measured";
    if (w.b_best_in_a) std::snprintf(in_a, sizeof in_a, "%+.2f%%", pct(*w.b_best_in_a));
    std::printf("differs   %-26s A %-34s %9.4f ms | B %-34s %9.4f ms | B's best in A %s%s\n", w.workload.c_str(),
                w.best_a.c_str(), w.best_a_ms, w.best_b.c_str(), w.best_b_ms, in_a, w.tie ? " (tie)" : "");
  }
  for (const DeviceBreakdown& d : c.devices)
    std::printf("device    A %d / B %d: %s\n", d.device_a, d.device_b, stats_text(d.all, tol).c_str());
}

int compare_command(const CompareCliOptions& o) {
  char bad[96] = "";
  if (!(o.tolerance > 0)) std::snprintf(bad, sizeof bad, "tolerance=%g: must be > 0", o.tolerance);
  if (!(o.long_us >= 0)) std::snprintf(bad, sizeof bad, "long-us=%g: must be >= 0", o.long_us);
  if (o.list < 0) std::snprintf(bad, sizeof bad, "list=%d: must be >= 0", o.list);
  if (bad[0] != '\0') throw CommandError{kExitUsage, bad};
  const Profile a = load_or_fail(o.profile);
  const Profile b = load_or_fail(o.against);
  if (a.gpu.spec != b.gpu.spec || a.gpu.name != b.gpu.name)
    std::fprintf(stderr, "flashtune compare: warning: A is %s (%s), B is %s (%s): comparing across GPUs\n",
                 a.gpu.name.c_str(), a.gpu.spec.c_str(), b.gpu.name.c_str(), b.gpu.spec.c_str());
  CompareOptions options;
  options.tolerance = o.tolerance;
  options.long_kernel_ms = o.long_us * 1e-3;
  ProfileComparison c;
  try {
    c = compare_profiles(a, b, options);
  } catch (const CompareError& e) {
    throw CommandError{kExitUsage, o.profile + " vs " + o.against + ": " + e.what()};
  }
  if (o.json)
    std::printf("%s\n", comparison_json(o, a, b, c).dump(2).c_str());
  else
    print_text(o, a, b, c);
  return kExitOk;
}

}  // namespace

void register_compare(CLI::App& app) {
  auto o = std::make_shared<CompareCliOptions>();
  CLI::App* sub =
      app.add_subcommand("compare", "Compare two profiles of the same workloads: times per pair and best configs");
  sub->add_option("--profile", o->profile, "Profile A, the reference (profiles/<gpu>.json)")->required();
  sub->add_option("--against", o->against, "Profile B, compared with A")->required();
  sub->add_option("--tolerance", o->tolerance, "Relative difference counted as within / a tie (default 0.02)");
  sub->add_option("--long-us", o->long_us, "Long-kernel subset: both medians at least this, us (default 50)");
  sub->add_option("--list", o->list, "Workloads with pairs beyond the tolerance to list (default 5)");
  sub->add_flag("--json", o->json, "Print the comparison as JSON");
  sub->callback([o] { set_reporting_action("compare", [o] { return compare_command(*o); }); });
}

}  // namespace flashtune::app
