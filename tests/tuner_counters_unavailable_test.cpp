// A tune without hardware counters (no CUPTI permission, another profiler on the device, a device
// CUPTI cannot open): the counter sources say why and never launch, and on a GPU the real backend
// still verifies and times every pair, recording counters_status "unavailable: <why>" and empty
// counters, so the profile is a timings-only profile with its best configs. The GPU part skips
// without a device.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "gpu_test_support.h"
#include "kernels/traits/variants.h"
#include "profile/profile.h"
#include "test_temp_dir.h"
#include "tuner/counter_source.h"
#include "tuner/cuda_backend.h"
#include "tuner/tune_plan.h"
#include "tuner/tune_runner.h"

namespace flashtune {
namespace {

// The reason CUPTI gives a user without profiling permission (docs/counters.md).
constexpr const char* kDenied = "cuptiRangeProfilerEnable: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES";

// Stands in for the CUPTI collector on a machine where profiling is not permitted; counts the
// calls so the test sees that the backend asked for counters on every timed pair.
class DeniedCounters : public CounterSource {
 public:
  CounterResult measure(const std::function<void()>&, const std::function<void()>&) override {
    ++calls;
    return {false, std::string("unavailable: ") + kDenied, {}};
  }
  std::string unavailable_reason() const override { return kDenied; }
  int calls = 0;
};

TEST(CountersUnavailable, NoCountersSaysWhyAndNeverLaunches) {
  const auto source = no_counters(kDenied);
  EXPECT_EQ(source->unavailable_reason(), kDenied);
  int launched = 0;
  const CounterResult r = source->measure([&] { ++launched; }, [&] { ++launched; });
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.status, std::string("unavailable: ") + kDenied);
  EXPECT_TRUE(r.values.empty());
  EXPECT_EQ(launched, 0);
}

TEST(CountersUnavailable, CuptiOnADeviceItCannotOpenIsUnavailableNotAnError) {
  // No machine here has 64 GPUs: CUPTI cannot open the device (or there is no GPU at all).
  std::unique_ptr<CounterSource> source;
  ASSERT_NO_THROW(source = cupti_counters(64));
  const std::string why = source->unavailable_reason();
  EXPECT_FALSE(why.empty());
  EXPECT_EQ(why.find('\n'), std::string::npos) << why;
  int launched = 0;
  const CounterResult r = source->measure([&] { ++launched; }, [&] { ++launched; });
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.status, "unavailable: " + why);
  EXPECT_EQ(launched, 0);
}

TEST(CountersUnavailable, TuneStillVerifiesAndTimesEveryPairOnAGpu) {
  const std::string no_gpu = testing_support::no_gpu_reason();
  if (!no_gpu.empty()) GTEST_SKIP() << no_gpu;
  const testing_support::TempDir dir("counters_unavailable");
  const std::string path = dir.file("profile.json");

  // A small workload and the first three compiled configs of its d: seconds of GPU time.
  const int d = compiled_configs().front().d;
  TunePlan plan = make_plan({{"small", {4, 256, d, false, 0}}}, compiled_configs(), {});
  plan.pairs.resize(std::min<std::size_t>(plan.pairs.size(), 3));
  Profile initial;
  initial.gpu.name = "test GPU";
  initial.gpu.spec = "test-gpu";
  add_workloads(initial, plan.workloads);

  auto counters = std::make_unique<DeniedCounters>();
  DeniedCounters* denied = counters.get();
  CudaBackendOptions options;
  options.harness.rule.time_cap_s = 0.05;
  options.harness.warmup_min_ms = 5;
  CudaBackend backend(0, options, std::move(counters));
  ProfileStore store(path, initial);
  const RunSummary s = run_plan(plan, store, {&backend}, {});
  EXPECT_TRUE(s.complete()) << s.error;
  EXPECT_EQ(s.measured, plan.pairs.size());

  const Profile p = load_profile(path);  // as written to disk
  ASSERT_EQ(p.measurements.size(), plan.pairs.size());
  int timed = 0;
  for (const Measurement& m : p.measurements) {
    EXPECT_EQ(m.status, status::kOk) << m.config << ": " << m.reason;
    if (m.status != status::kOk) continue;
    ++timed;
    ASSERT_TRUE(m.timing.has_value()) << m.config;
    EXPECT_GT(m.timing->median_ms, 0.0) << m.config;
    EXPECT_GE(m.timing->samples, 1) << m.config;
    EXPECT_TRUE(m.verify.has_value()) << m.config;
    EXPECT_EQ(m.counters_status, std::string("unavailable: ") + kDenied) << m.config;
    EXPECT_TRUE(m.counters.empty()) << m.config;
  }
  EXPECT_EQ(denied->calls, timed);
  EXPECT_EQ(p.best.count("small"), 1u);
}

}  // namespace
}  // namespace flashtune
