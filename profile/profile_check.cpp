#include "profile/profile_check.h"
#include "model/number_text.h"

#include <cmath>
#include <map>
#include <sstream>

#include "kernels/traits/traits_common.h"
#include "model/workload_limits.h"

namespace flashtune {
namespace {

struct Checker {
  const std::string& source;

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw ProfileError(source + ": field '" + field + "' " + what);
  }
  [[noreturn]] void fail_value(const std::string& field, double value, const std::string& what) const {
    fail(field, "= " + number_text(value) + ": " + what);
  }
  void finite_nonnegative(const std::string& field, double value) const {
    if (!std::isfinite(value) || value < 0) fail_value(field, value, "must be a finite number >= 0");
  }
  void plausible_ms(const std::string& field, double value) const {
    if (!std::isfinite(value) || value < kMinPlausibleMs || value > kMaxPlausibleMs)
      fail_value(field, value,
                 "must be a time in [" + number_text(kMinPlausibleMs) + ", " + number_text(kMaxPlausibleMs) + "] ms");
  }
  void int_range(const std::string& field, int value, int lo, int hi) const {
    if (value < lo || value > hi)
      fail(field, "= " + std::to_string(value) + ": must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }

  void timing(const std::string& at, const TimingSummary& t) const {
    plausible_ms(at + "median_ms", t.median_ms);
    // Optional fields are checked where the file has them; a min, max or mean must be a time.
    for (const auto& [name, value] : {std::pair<const char*, std::optional<double>>{"min_ms", t.min_ms},
                                      {"max_ms", t.max_ms}, {"mean_ms", t.mean_ms}}) {
      if (value) plausible_ms(at + name, *value);
    }
    if (t.stdev_ms) finite_nonnegative(at + "stdev_ms", *t.stdev_ms);
    if (t.rel_stdev) finite_nonnegative(at + "rel_stdev", *t.rel_stdev);
    finite_nonnegative(at + "sm_clock_mhz", t.sm_clock_mhz);
    if (t.samples && *t.samples < 0) fail(at + "samples", "= " + std::to_string(*t.samples) + ": must be >= 0");
    if (t.dropped && *t.dropped < 0) fail(at + "dropped", "= " + std::to_string(*t.dropped) + ": must be >= 0");
    // A median outside its own samples' range contradicts the measurement (median 1e-300 beside
    // min 3.4 made fit trust a point 17 orders off).
    if (t.min_ms && t.median_ms < *t.min_ms * (1 - 1e-9))
      fail_value(at + "median_ms", t.median_ms, "is below min_ms " + number_text(*t.min_ms));
    if (t.max_ms && t.median_ms > *t.max_ms * (1 + 1e-9))
      fail_value(at + "median_ms", t.median_ms, "is above max_ms " + number_text(*t.max_ms));
    for (std::size_t i = 0; i < t.samples_ms.size(); ++i)
      plausible_ms(at + "samples_ms[" + std::to_string(i) + "]", t.samples_ms[i]);
  }

  void measurement(const std::string& at, const Measurement& m, const std::map<std::string, Workload>& workloads) const {
    const auto config = parse_config_name(m.config);
    if (!config) fail(at + "config", "= '" + m.config + "': not a config name (variant/dD/brRxbcC/layout)");
    const auto w = workloads.find(m.workload);
    if (w != workloads.end() && config->d != w->second.d)
      fail(at + "config", "= '" + m.config + "': has d=" + std::to_string(config->d) + " but workload '" + m.workload +
                              "' has d=" + std::to_string(w->second.d));
    if (m.verify) {
      finite_nonnegative(at + "verify.rel_l2", m.verify->rel_l2);
      finite_nonnegative(at + "verify.max_abs", m.verify->max_abs);
    }
    if (m.timing) timing(at + "timing.", *m.timing);
    for (const auto& [name, value] : m.counters) finite_nonnegative(at + "counters." + name, value);
    if (m.resources) {
      const ResourceUsage& r = *m.resources;
      int_range(at + "resources.registers", r.registers, 0, 255);
      int_range(at + "resources.static_smem", r.static_smem, 0, 1 << 24);
      int_range(at + "resources.dynamic_smem", r.dynamic_smem, 0, 1 << 24);
      int_range(at + "resources.local_bytes", r.local_bytes, 0, 1 << 24);
      int_range(at + "resources.threads", r.threads, 0, 1024);
    }
    finite_nonnegative(at + "elapsed_s", m.elapsed_s);
  }
};

}  // namespace

void check_profile_values(const Profile& p, const std::string& source) {
  const Checker c{source};
  std::map<std::string, Workload> workloads;
  for (std::size_t i = 0; i < p.workloads.size(); ++i) {
    const NamedWorkload& w = p.workloads[i];
    if (const auto why = model::workload_limit_error(w.workload))
      c.fail("workloads[" + std::to_string(i) + "]", "('" + w.name + "'): " + *why);
    if (!traits::is_head_dim(w.workload.d))
      c.fail("workloads[" + std::to_string(i) + "]", "('" + w.name + "'): d=" + std::to_string(w.workload.d) +
                                                         ": no kernel has it (d in {32, 64, 128})");
    workloads[w.name] = w.workload;
  }
  for (std::size_t i = 0; i < p.measurements.size(); ++i)
    c.measurement("measurements[" + std::to_string(i) + "].", p.measurements[i], workloads);
}

}  // namespace flashtune
