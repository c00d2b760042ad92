// The profile's value ranges, in one table: what each number, enumeration and timestamp of a
// profile (and of a journal line, the same measurement object) may hold. check_profile_values
// (profile/profile_check.h) reads every row; docs/profile-schema.md lists them, and
// hardening_test `ProfileRanges.TheSchemaDocListsEveryRow` fails when the doc's table differs
// from `profile_ranges_markdown()` (it prints the table to paste).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <limits>
#include <string>
#include <string_view>

#include "model/number_text.h"

namespace flashtune {

enum class RangeKind {
  kInteger,    // an integer in [min, max]
  kNumber,     // a finite number in [min, max]
  kTime,       // a time in milliseconds in [min, max]
  kEnum,       // one of `allowed` (comma-separated; "" = absent or empty; "x: *" = "x: " and any text)
  kTimestamp,  // empty, or ISO 8601 UTC: YYYY-MM-DDTHH:MM:SS[.fff]Z
  kRule,       // a rule between fields, stated in `note`
};

struct ValueRange {
  const char* field;    // JSON path, [] for any index, <name> for any key
  RangeKind kind;
  double min, max;      // kInteger, kNumber, kTime
  const char* allowed;  // kEnum
  const char* note;     // one line for the doc
};

inline constexpr double kFiniteMax = std::numeric_limits<double>::max();
inline constexpr double kIntMax = 2147483647.0;

// Times a kernel launch can take: from 100 ns (below any launch) to about three hours.
inline constexpr double kMinPlausibleMs = 1e-4;
inline constexpr double kMaxPlausibleMs = 1e7;

// 0 in a gpu field means "not recorded" (a profile made without a device, or by hand).
inline constexpr ValueRange kProfileValueRanges[] = {
    {"workloads[].kv_len", RangeKind::kInteger, 1, kIntMax, "", "schema 3; absent: N; causal needs N <= kv_len"},
    {"workloads[].kv_group", RangeKind::kInteger, 1, 1024, "", "schema 3; absent: 1; divides B"},
    {"gpu.sm_count", RangeKind::kInteger, 0, 1024, "", "0: not recorded"},
    {"gpu.sm_clock_max_mhz", RangeKind::kInteger, 0, 100000, "", "0: not recorded"},
    {"gpu.mem_clock_mhz", RangeKind::kInteger, 0, 100000, "", "0: not recorded"},
    {"gpu.l2_bytes", RangeKind::kInteger, 0, 1099511627776.0, "", "0: not recorded; at most 1 TiB"},
    {"gpu.device_index", RangeKind::kInteger, 0, 1023, "", ""},
    {"measurements[].verify.rel_l2", RangeKind::kNumber, 0, kFiniteMax, "",
     "on an ok pair at most the config's tolerance (fp32 1e-4, tf32 1e-2, bf16 2e-2, fp16 3e-3)"},
    {"measurements[].verify.max_abs", RangeKind::kNumber, 0, kFiniteMax, "", ""},
    {"measurements[].timing", RangeKind::kRule, 0, 0, "", "present when status is ok, absent otherwise"},
    {"measurements[].timing.median_ms", RangeKind::kTime, kMinPlausibleMs, kMaxPlausibleMs, "",
     "within [min_ms, max_ms] where they are given"},
    {"measurements[].timing.min_ms", RangeKind::kTime, kMinPlausibleMs, kMaxPlausibleMs, "", ""},
    {"measurements[].timing.max_ms", RangeKind::kTime, kMinPlausibleMs, kMaxPlausibleMs, "", ""},
    {"measurements[].timing.mean_ms", RangeKind::kTime, kMinPlausibleMs, kMaxPlausibleMs, "", ""},
    {"measurements[].timing.samples_ms[]", RangeKind::kTime, kMinPlausibleMs, kMaxPlausibleMs, "", ""},
    {"measurements[].timing.stdev_ms", RangeKind::kNumber, 0, kFiniteMax, "", ""},
    {"measurements[].timing.rel_stdev", RangeKind::kNumber, 0, kFiniteMax, "", ""},
    {"measurements[].timing.samples", RangeKind::kInteger, 1, kIntMax, "", "a median needs a sample"},
    {"measurements[].timing.dropped", RangeKind::kInteger, 0, kIntMax, "", ""},
    {"measurements[].timing.sm_clock_mhz", RangeKind::kNumber, 0, 100000, "", "0: NVML unavailable"},
    {"measurements[].timing.stop", RangeKind::kEnum, 0, 0, ",converged,time-cap,max-samples,hard-time-cap",
     "why sampling stopped; empty: not recorded"},
    {"measurements[].counters.<name>", RangeKind::kNumber, 0, kFiniteMax, "", ""},
    {"measurements[].counters_status", RangeKind::kEnum, 0, 0, ",ok,unavailable: *", "empty: not recorded"},
    {"measurements[].resources.registers", RangeKind::kInteger, 1, 255, "", "required when resources is present"},
    {"measurements[].resources.static_smem", RangeKind::kInteger, 0, 16777216, "", ""},
    {"measurements[].resources.dynamic_smem", RangeKind::kInteger, 0, 16777216, "", ""},
    {"measurements[].resources.local_bytes", RangeKind::kInteger, 0, 16777216, "", ""},
    {"measurements[].resources.threads", RangeKind::kInteger, 1, 1024, "", "required when resources is present"},
    {"measurements[].timestamp", RangeKind::kTimestamp, 0, 0, "", "empty: not recorded"},
    {"measurements[].device_index", RangeKind::kInteger, 0, 1023, "", ""},
    {"measurements[].elapsed_s", RangeKind::kNumber, 0, 1e6, "", "0: not recorded"},
};

// The row of `field`; a name that is not in the table does not compile where it is constexpr.
constexpr std::size_t profile_range_index(std::string_view field) {
  std::size_t i = 0;
  for (const ValueRange& r : kProfileValueRanges) {
    if (field == r.field) return i;
    ++i;
  }
  return i;
}
constexpr std::size_t kProfileValueRangeCount = sizeof(kProfileValueRanges) / sizeof(kProfileValueRanges[0]);

// The allowed values of one row as the doc and the error messages write them: "[1, 255]",
// "a finite number >= 0", "one of: converged, time-cap, ...".
inline std::string profile_range_text(const ValueRange& r) {
  switch (r.kind) {
    case RangeKind::kInteger:
    case RangeKind::kNumber:
    case RangeKind::kTime: {
      const std::string unit = r.kind == RangeKind::kTime ? " ms" : "";
      const std::string what = r.kind == RangeKind::kInteger ? "an integer" : r.kind == RangeKind::kTime ? "a time" : "a number";
      // Integers in full (2147483647, not 2.14748e+09).
      const auto text = [&r](double x) {
        if (r.kind != RangeKind::kInteger) return number_text(x);
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.0f", x);
        return std::string(buf);
      };
      if (r.max >= kFiniteMax) return "a finite number >= " + text(r.min);
      return what + " in [" + text(r.min) + ", " + text(r.max) + "]" + unit;
    }
    case RangeKind::kEnum: {
      // "" stands for empty or absent; a value ending in '*' takes any text after its prefix.
      std::string out = "one of: ";
      const std::string_view all = r.allowed;
      bool first = true;
      for (std::size_t start = 0; start <= all.size();) {
        const std::size_t comma = std::min(all.find(',', start), all.size());
        std::string one(all.substr(start, comma - start));
        start = comma + 1;
        if (one.empty()) continue;
        if (one.back() == '*') one = one.substr(0, one.size() - 1) + "<reason>";
        out += (first ? "" : ", ") + one;
        first = false;
      }
      return out;
    }
    case RangeKind::kTimestamp: return "ISO 8601 UTC, YYYY-MM-DDTHH:MM:SS[.fff]Z";
    case RangeKind::kRule: return "see note";
  }
  return "";
}

// The table docs/profile-schema.md carries (between its "value-ranges" markers).
inline std::string profile_ranges_markdown() {
  std::string out = "| Field | Allowed | Note |\n|---|---|---|\n";
  const auto html = [](const std::string& text) {  // "<reason>" would read as a tag
    std::string out;
    for (const char c : text) out += c == '<' ? "&lt;" : c == '>' ? "&gt;" : std::string(1, c);
    return out;
  };
  for (const ValueRange& r : kProfileValueRanges)
    out += std::string("| `") + r.field + "` | " + html(profile_range_text(r)) + " | " + r.note + " |\n";
  return out;
}

}  // namespace flashtune
