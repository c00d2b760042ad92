#include "profile/profile_check.h"
#include "model/number_text.h"

#include <algorithm>
#include <cmath>
#include <string_view>
#include <map>
#include <sstream>

#include "kernels/traits/traits_common.h"
#include "model/workload_limits.h"

namespace flashtune {
namespace {

// The row of a field in kProfileValueRanges, found when compiling: a name the table lacks does not
// compile.
template <std::size_t Row>
constexpr std::size_t checked_row() {
  static_assert(Row < kProfileValueRangeCount, "field not in kProfileValueRanges (profile/profile_ranges.h)");
  return Row;
}
#define FT_ROW(field) checked_row<profile_range_index(field)>()

std::string quoted(const std::string& s) { return "'" + s + "'"; }

// YYYY-MM-DDTHH:MM:SS, optional fraction, Z: what utc_timestamp() writes (and ISO 8601 UTC).
bool is_iso8601_utc(const std::string& s) {
  const auto digits = [&s](std::size_t at, std::size_t n, int lo, int hi) {
    if (at + n > s.size()) return false;
    int v = 0;
    for (std::size_t i = at; i < at + n; ++i) {
      if (s[i] < '0' || s[i] > '9') return false;
      v = v * 10 + (s[i] - '0');
    }
    return v >= lo && v <= hi;
  };
  if (s.size() < 20 || !digits(0, 4, 1970, 9999) || s[4] != '-' || !digits(5, 2, 1, 12) || s[7] != '-' ||
      !digits(8, 2, 1, 31) || s[10] != 'T' || !digits(11, 2, 0, 23) || s[13] != ':' || !digits(14, 2, 0, 59) ||
      s[16] != ':' || !digits(17, 2, 0, 60))
    return false;
  std::size_t i = 19;
  if (s[i] == '.') {
    const std::size_t first = ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    if (i == first || i - first > 9) return false;
  }
  return i + 1 == s.size() && s[i] == 'Z';
}

// The rel L2 bar the tuner held a config to when it marked the pair ok (tuner/pair_measurement.cpp).
double ok_rel_l2_tolerance(const TileConfig& c) {
  return c.dtype != DType::Fp32 ? rel_l2_tolerance(c.dtype) : rel_l2_tolerance(variant_precision(c.variant));
}

struct Checker {
  const std::string& source;

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw ProfileError(source + ": field '" + field + "' " + what);
  }
  [[noreturn]] void fail_value(const std::string& field, double value, const std::string& what) const {
    fail(field, "= " + number_text(value) + ": " + what);
  }
  // ---- the rows of kProfileValueRanges (profile/profile_ranges.h) ----
  void number(std::size_t row, const std::string& field, double value) const {
    const ValueRange& r = kProfileValueRanges[row];
    if (!std::isfinite(value) || value < r.min || value > r.max) fail_value(field, value, "must be " + profile_range_text(r));
  }
  void integer(std::size_t row, const std::string& field, long long value) const {
    const ValueRange& r = kProfileValueRanges[row];
    if (double(value) < r.min || double(value) > r.max)
      fail(field, "= " + std::to_string(value) + ": must be " + profile_range_text(r));
  }
  void one_of(std::size_t row, const std::string& field, const std::string& value) const {
    const ValueRange& r = kProfileValueRanges[row];
    const std::string_view all = r.allowed;
    for (std::size_t start = 0; start <= all.size();) {
      const std::size_t comma = std::min(all.find(',', start), all.size());
      const std::string_view one = all.substr(start, comma - start);
      start = comma + 1;
      if (one.empty() ? value.empty()
                      : one.back() == '*' ? value.size() >= one.size() && value.compare(0, one.size() - 1, one.substr(0, one.size() - 1)) == 0
                                          : value == one)
        return;
    }
    fail(field, "= " + quoted(value) + ": must be " + profile_range_text(r) + (all.front() == ',' ? " (or empty)" : ""));
  }
  void timestamp(std::size_t row, const std::string& field, const std::string& value) const {
    if (!value.empty() && !is_iso8601_utc(value))
      fail(field, "= " + quoted(value) + ": must be " + profile_range_text(kProfileValueRanges[row]) + " (or empty)");
  }

  void timing(const std::string& at, const TimingSummary& t) const {
    number(FT_ROW("measurements[].timing.median_ms"), at + "median_ms", t.median_ms);
    // Optional fields are checked where the file has them; a min, max or mean must be a time.
    if (t.min_ms) number(FT_ROW("measurements[].timing.min_ms"), at + "min_ms", *t.min_ms);
    if (t.max_ms) number(FT_ROW("measurements[].timing.max_ms"), at + "max_ms", *t.max_ms);
    if (t.mean_ms) number(FT_ROW("measurements[].timing.mean_ms"), at + "mean_ms", *t.mean_ms);
    if (t.stdev_ms) number(FT_ROW("measurements[].timing.stdev_ms"), at + "stdev_ms", *t.stdev_ms);
    if (t.rel_stdev) number(FT_ROW("measurements[].timing.rel_stdev"), at + "rel_stdev", *t.rel_stdev);
    number(FT_ROW("measurements[].timing.sm_clock_mhz"), at + "sm_clock_mhz", t.sm_clock_mhz);
    if (t.samples) integer(FT_ROW("measurements[].timing.samples"), at + "samples", *t.samples);
    if (t.dropped) integer(FT_ROW("measurements[].timing.dropped"), at + "dropped", *t.dropped);
    one_of(FT_ROW("measurements[].timing.stop"), at + "stop", t.stop);
    // A median outside its own samples' range contradicts the measurement (median 1e-300 beside
    // min 3.4 made fit trust a point 17 orders off).
    if (t.min_ms && t.median_ms < *t.min_ms * (1 - 1e-9))
      fail_value(at + "median_ms", t.median_ms, "is below min_ms " + number_text(*t.min_ms));
    if (t.max_ms && t.median_ms > *t.max_ms * (1 + 1e-9))
      fail_value(at + "median_ms", t.median_ms, "is above max_ms " + number_text(*t.max_ms));
    for (std::size_t i = 0; i < t.samples_ms.size(); ++i)
      number(FT_ROW("measurements[].timing.samples_ms[]"), at + "samples_ms[" + std::to_string(i) + "]", t.samples_ms[i]);
  }

  void measurement(const std::string& at, const Measurement& m, const std::map<std::string, Workload>& workloads) const {
    const auto config = parse_config_name(m.config);
    if (!config) fail(at + "config", "= '" + m.config + "': not a config name (variant/dD/brRxbcC/layout)");
    const auto w = workloads.find(m.workload);
    if (w != workloads.end() && config->d != w->second.d)
      fail(at + "config", "= '" + m.config + "': has d=" + std::to_string(config->d) + " but workload '" + m.workload +
                              "' has d=" + std::to_string(w->second.d));
    if (w != workloads.end() && config->dtype != w->second.dtype)
      fail(at + "config", "= '" + m.config + "': takes " + dtype_name(config->dtype) + " operands but workload '" +
                              m.workload + "' is " + dtype_name(w->second.dtype));
    if (m.verify) {
      number(FT_ROW("measurements[].verify.rel_l2"), at + "verify.rel_l2", m.verify->rel_l2);
      number(FT_ROW("measurements[].verify.max_abs"), at + "verify.max_abs", m.verify->max_abs);
      // A pair marked ok passed verification: its error is within the config's tolerance.
      const double tolerance = ok_rel_l2_tolerance(*config);
      if (m.status == status::kOk && m.verify->rel_l2 > tolerance)
        fail_value(at + "verify.rel_l2", m.verify->rel_l2,
                   "is above the tolerance " + number_text(tolerance) + " of '" + m.config + "' on a pair marked ok");
    }
    if (m.timing && m.status != status::kOk)
      fail(at + "timing", "is present on a pair with status '" + m.status + "': only an ok pair is timed");
    if (m.timing) timing(at + "timing.", *m.timing);
    for (const auto& [name, value] : m.counters)
      number(FT_ROW("measurements[].counters.<name>"), at + "counters." + name, value);
    one_of(FT_ROW("measurements[].counters_status"), at + "counters_status", m.counters_status);
    if (m.resources) {
      const ResourceUsage& r = *m.resources;
      integer(FT_ROW("measurements[].resources.registers"), at + "resources.registers", r.registers);
      integer(FT_ROW("measurements[].resources.static_smem"), at + "resources.static_smem", r.static_smem);
      integer(FT_ROW("measurements[].resources.dynamic_smem"), at + "resources.dynamic_smem", r.dynamic_smem);
      integer(FT_ROW("measurements[].resources.local_bytes"), at + "resources.local_bytes", r.local_bytes);
      integer(FT_ROW("measurements[].resources.threads"), at + "resources.threads", r.threads);
    }
    timestamp(FT_ROW("measurements[].timestamp"), at + "timestamp", m.timestamp);
    integer(FT_ROW("measurements[].device_index"), at + "device_index", m.device_index);
    number(FT_ROW("measurements[].elapsed_s"), at + "elapsed_s", m.elapsed_s);
  }

  void gpu(const GpuIdentity& g) const {
    integer(FT_ROW("gpu.sm_count"), "gpu.sm_count", g.sm_count);
    integer(FT_ROW("gpu.sm_clock_max_mhz"), "gpu.sm_clock_max_mhz", g.sm_clock_max_mhz);
    integer(FT_ROW("gpu.mem_clock_mhz"), "gpu.mem_clock_mhz", g.mem_clock_mhz);
    integer(FT_ROW("gpu.l2_bytes"), "gpu.l2_bytes", g.l2_bytes);
    integer(FT_ROW("gpu.device_index"), "gpu.device_index", g.device_index);
  }
};

}  // namespace

void check_profile_values(const Profile& p, const std::string& source) {
  const Checker c{source};
  c.gpu(p.gpu);
  std::map<std::string, Workload> workloads;
  for (std::size_t i = 0; i < p.workloads.size(); ++i) {
    const NamedWorkload& w = p.workloads[i];
    const std::string at = "workloads[" + std::to_string(i) + "].";
    if (w.workload.kv_len != 0) c.integer(FT_ROW("workloads[].kv_len"), at + "kv_len", w.workload.kv_len);
    c.integer(FT_ROW("workloads[].kv_group"), at + "kv_group", w.workload.kv_group);
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
