// Two profiles side by side (profile/profile_compare.h) on small hand-made profiles whose answers
// follow from their numbers, and `flashtune compare` from the outside: text, JSON, the cross-GPU
// warning, and one-line errors (missing file, no pair in common). Host only: no GPU needed.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_test_support.h"
#include "profile/profile.h"
#include "profile/profile_compare.h"
#include "test_temp_dir.h"

namespace flashtune {
namespace {

using testing_support::line_count;
using testing_support::run_flashtune;
using testing_support::TempDir;

constexpr const char* kC1 = "row_reg/d64/br64xbc32/plain";
constexpr const char* kC2 = "regtile_2d/d64/br64xbc64/padded";
constexpr const char* kC3 = "regtile_2d/d64/br64xbc64/swizzled";

Measurement timed(const std::string& workload, const std::string& config, double median_ms, int device = 0) {
  Measurement m;
  m.workload = workload;
  m.config = config;
  m.timing = TimingSummary{};
  m.timing->median_ms = median_ms;
  m.counters_status = "unavailable: disabled by --no-counters";
  m.device_index = device;
  return m;
}

Profile profile_of(const std::string& gpu, const std::vector<Measurement>& ms) {
  Profile p;
  p.gpu.name = gpu == "nvidia-h200" ? "NVIDIA H200" : "NVIDIA H100 80GB HBM3";
  p.gpu.spec = gpu;
  p.workloads = {{"w1", {4, 1024, 64, false, 0}}, {"w2", {1, 128, 64, false, 0}}};
  p.measurements = ms;
  recompute_best(p);
  return p;
}

// A: w1 c1 1.0, c2 0.50, c3 0.505; w2 c1 0.010, c2 0.020.
Profile reference() {
  return profile_of("nvidia-h200", {timed("w1", kC1, 1.0), timed("w1", kC2, 0.50), timed("w1", kC3, 0.505),
                                    timed("w2", kC1, 0.010), timed("w2", kC2, 0.020)});
}

TEST(Quantile, InterpolatesBetweenOrderStatistics) {
  EXPECT_EQ(quantile_of({}, 0.5), 0.0);
  EXPECT_DOUBLE_EQ(quantile_of({3, 1, 2}, 0.5), 2.0);
  EXPECT_DOUBLE_EQ(quantile_of({4, 1, 3, 2}, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(quantile_of({0, 10}, 0.9), 9.0);
  EXPECT_DOUBLE_EQ(quantile_of({5, 7, 1}, 1.0), 7.0);
  EXPECT_DOUBLE_EQ(quantile_of({5, 7, 1}, 0.0), 1.0);
}

TEST(ProfileCompare, AWorkloadMeasuredOnOtherConfigsIsLeftOutOfTheBestComparison) {
  // B stopped part-way through w1 (c2 and c3 never measured): its w1 best (c1) was taken over one
  // config, so comparing it with A's best would report a false change. w2 is whole in both.
  const Profile b = profile_of("nvidia-h200", {timed("w1", kC1, 1.0), timed("w2", kC1, 0.010), timed("w2", kC2, 0.020)});
  const ProfileComparison c = compare_profiles(reference(), b);
  EXPECT_EQ(c.partial_workloads, 1u);
  EXPECT_EQ(c.workloads, 1u);
  EXPECT_EQ(c.same_best, 1u);
  ASSERT_EQ(c.per_workload.size(), 1u);
  EXPECT_EQ(c.per_workload[0].workload, "w2");
}

TEST(ProfileCompare, PerPairDifferencesRelativeToA) {
  // B: w1 c1 +1%, c2 -1.9%, c3 -4.95%; w2 c1 +20%, c2 +5%.
  const Profile b = profile_of("nvidia-h200", {timed("w1", kC1, 1.01), timed("w1", kC2, 0.4905),
                                               timed("w1", kC3, 0.48), timed("w2", kC1, 0.012),
                                               timed("w2", kC2, 0.021)});
  const ProfileComparison c = compare_profiles(reference(), b);
  EXPECT_TRUE(c.same_gpu);
  EXPECT_EQ(c.common, 5u);
  EXPECT_EQ(c.only_a, 0u);
  EXPECT_EQ(c.only_b, 0u);
  // |diff| sorted: 0.01, 0.019, 0.0495, 0.05, 0.2.
  EXPECT_NEAR(c.all.median_abs, (0.505 - 0.48) / 0.505, 1e-12);
  EXPECT_NEAR(c.all.max_abs, 0.2, 1e-12);
  EXPECT_EQ(c.all.max_workload, "w2");
  EXPECT_EQ(c.all.max_config, kC1);
  EXPECT_NEAR(c.all.p90_abs, 0.05 + 0.6 * (0.2 - 0.05), 1e-12);
  EXPECT_EQ(c.all.within, 2u);
  EXPECT_NEAR(c.all.share_within, 0.4, 1e-12);
  // Long kernels (both medians >= 50 us): the three of w1.
  EXPECT_EQ(c.long_kernels.pairs, 3u);
  EXPECT_NEAR(c.long_kernels.max_abs, (0.505 - 0.48) / 0.505, 1e-12);
  // Outside 2%: w2 has 2 of 2 (B - A: +2 us and +1 us -> median 1.5 us), w1 1 of 3.
  ASSERT_EQ(c.outside.size(), 2u);
  EXPECT_EQ(c.outside[0].workload, "w2");
  EXPECT_EQ(c.outside[0].outside, 2u);
  EXPECT_NEAR(c.outside[0].median_diff_us, 1.5, 1e-9);
  EXPECT_NEAR(c.outside[0].median_a_us, 15.0, 1e-9);
  EXPECT_EQ(c.outside[1].workload, "w1");
  EXPECT_EQ(c.outside[1].outside, 1u);
  EXPECT_TRUE(c.devices.empty());
}

TEST(ProfileCompare, DifferentBestIsATieOnlyWithinTheToleranceInA) {
  // w1: B picks c3, which A measured 1% slower than its best c2: a tie at 2%, not at 0.5%.
  // w2: same best (c1) in both.
  const Profile b = profile_of("nvidia-h200", {timed("w1", kC1, 1.0), timed("w1", kC2, 0.50),
                                               timed("w1", kC3, 0.499), timed("w2", kC1, 0.011),
                                               timed("w2", kC2, 0.020)});
  const ProfileComparison c = compare_profiles(reference(), b);
  EXPECT_EQ(c.workloads, 2u);
  EXPECT_EQ(c.same_best, 1u);
  EXPECT_EQ(c.ties, 1u);
  ASSERT_EQ(c.per_workload.size(), 2u);
  const WorkloadBest& w1 = c.per_workload[0];
  EXPECT_EQ(w1.workload, "w1");
  EXPECT_FALSE(w1.same);
  EXPECT_EQ(w1.best_a, kC2);
  EXPECT_EQ(w1.best_b, kC3);
  ASSERT_TRUE(w1.b_best_in_a.has_value());
  EXPECT_NEAR(*w1.b_best_in_a, 0.01, 1e-12);
  EXPECT_TRUE(w1.tie);
  EXPECT_NEAR(w1.best_rel_diff, (0.499 - 0.50) / 0.50, 1e-12);
  EXPECT_TRUE(c.per_workload[1].same);
  EXPECT_NEAR(c.per_workload[1].best_rel_diff, 0.1, 1e-12);
  EXPECT_NEAR(c.best.max_abs, 0.1, 1e-12);

  CompareOptions strict;
  strict.tolerance = 0.005;
  EXPECT_EQ(compare_profiles(reference(), b, strict).ties, 0u);
}

TEST(ProfileCompare, PairsOnlyInOneProfileAreCountedNotCompared) {
  // B lacks w1 c3 and has w2 c2 failed: 3 pairs in common.
  std::vector<Measurement> ms = {timed("w1", kC1, 1.0), timed("w1", kC2, 0.5), timed("w2", kC1, 0.01),
                                 timed("w2", kC2, 0.02)};
  ms[3].status = status::kWrongResult;
  ms[3].timing.reset();
  const ProfileComparison c = compare_profiles(reference(), profile_of("nvidia-h200", ms));
  EXPECT_EQ(c.ok_a, 5u);
  EXPECT_EQ(c.ok_b, 3u);
  EXPECT_EQ(c.common, 3u);
  EXPECT_EQ(c.only_a, 2u);
  EXPECT_EQ(c.only_b, 0u);
  EXPECT_EQ(c.all.max_abs, 0.0);
}

TEST(ProfileCompare, BreaksDownByDeviceWhenAProfileUsedSeveral) {
  const Profile b = profile_of("nvidia-h200", {timed("w1", kC1, 1.0, 0), timed("w1", kC2, 0.55, 0),
                                               timed("w1", kC3, 0.505, 0), timed("w2", kC1, 0.010, 1),
                                               timed("w2", kC2, 0.030, 1)});
  const ProfileComparison c = compare_profiles(reference(), b);
  ASSERT_EQ(c.devices.size(), 2u);
  EXPECT_EQ(c.devices[0].device_a, 0);
  EXPECT_EQ(c.devices[0].device_b, 0);
  EXPECT_EQ(c.devices[0].all.pairs, 3u);
  EXPECT_NEAR(c.devices[0].all.max_abs, 0.1, 1e-12);
  EXPECT_EQ(c.devices[1].device_b, 1);
  EXPECT_EQ(c.devices[1].all.pairs, 2u);
  EXPECT_NEAR(c.devices[1].all.max_abs, 0.5, 1e-12);
}

TEST(ProfileCompare, RefusesOtherDimensionsAndNothingInCommon) {
  Profile b = reference();
  b.workloads[1].workload.N = 256;
  try {
    compare_profiles(reference(), b);
    ADD_FAILURE() << "no CompareError";
  } catch (const CompareError& e) {
    EXPECT_STREQ(e.what(), "workload 'w2' is B=1 N=128 d=64 non-causal in A but B=1 N=256 d=64 non-causal in B");
  }
  const Profile other = profile_of("nvidia-h200", {timed("w1", "row_reg/d64/br128xbc32/plain", 1.0)});
  EXPECT_THROW(compare_profiles(reference(), other), CompareError);
}

// ---- `flashtune compare` from the outside ---------------------------------------------------

TEST(CliCompare, TextJsonAndTheCrossGpuWarning) {
  TempDir dir("compare");
  write_profile_atomic(dir.file("a.json"), reference());
  Profile h100 = reference();
  h100.gpu.name = "NVIDIA H100 80GB HBM3";
  h100.gpu.spec = "nvidia-h100-sxm";
  for (Measurement& m : h100.measurements) m.timing->median_ms *= 1.5;
  recompute_best(h100);
  write_profile_atomic(dir.file("b.json"), h100);

  const auto same = run_flashtune("compare --profile '" + dir.file("a.json") + "' --against '" + dir.file("a.json") + "'");
  EXPECT_EQ(same.exit_code, 0) << same.output;
  EXPECT_EQ(same.output.find("warning"), std::string::npos) << same.output;
  EXPECT_NE(same.output.find("best      same config on 2 of 2 workloads"), std::string::npos) << same.output;

  // The warning goes to stderr, unbuffered, before anything is printed to stdout.
  const auto cross =
      run_flashtune("compare --json --profile '" + dir.file("a.json") + "' --against '" + dir.file("b.json") + "'");
  EXPECT_EQ(cross.exit_code, 0) << cross.output;
  const std::string warning =
      "flashtune compare: warning: A is NVIDIA H200 (nvidia-h200), B is NVIDIA H100 80GB HBM3 (nvidia-h100-sxm): "
      "comparing across GPUs\n";
  ASSERT_EQ(cross.output.rfind(warning, 0), 0u) << cross.output;
  const auto j = nlohmann::json::parse(cross.output.substr(warning.size()));
  EXPECT_FALSE(j["same_gpu"].get<bool>());
  EXPECT_EQ(j["common_pairs"], 5);
  EXPECT_EQ(j["same_best"], 2);
  EXPECT_NEAR(j["pairs"]["median_signed"].get<double>(), 0.5, 1e-12);
  EXPECT_EQ(j["pairs"]["within"], 0);
}

TEST(CliCompare, ErrorsAreOneLineWithExit2) {
  TempDir dir("compare");
  write_profile_atomic(dir.file("a.json"), reference());
  write_profile_atomic(dir.file("none.json"),
                       profile_of("nvidia-h200", {timed("w1", "row_reg/d64/br128xbc32/plain", 1.0)}));

  const auto missing = run_flashtune("compare --profile /nonexistent/a.json --against '" + dir.file("a.json") + "'");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_EQ(missing.output, "flashtune compare: /nonexistent/a.json: cannot open profile\n");

  const auto disjoint =
      run_flashtune("compare --profile '" + dir.file("a.json") + "' --against '" + dir.file("none.json") + "'");
  EXPECT_EQ(disjoint.exit_code, 2);
  EXPECT_EQ(line_count(disjoint.output), 1u) << disjoint.output;
  EXPECT_NE(disjoint.output.find("no (workload, config) pair is measured ok in both profiles"), std::string::npos)
      << disjoint.output;

  const auto tol = run_flashtune("compare --profile '" + dir.file("a.json") + "' --against '" + dir.file("a.json") +
                                 "' --tolerance 0");
  EXPECT_EQ(tol.exit_code, 2);
  EXPECT_EQ(tol.output, "flashtune compare: tolerance=0: must be > 0\n");
}

}  // namespace
}  // namespace flashtune
