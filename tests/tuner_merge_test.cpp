// Shards and their merge (host, no GPU): --shard I/N parsing; the split is a partition of the
// plan, the same on every call, balanced within one pair's cost by the model's predictions on a
// real spec; merge refuses another GPU or build with the reason, keeps one measurement of a pair
// measured twice by its stated rule, warns of missing or repeated shards, and checks a plan.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "kernels/traits/variants.h"
#include "profile/profile_merge.h"
#include "tuner/fake_backend.h"
#include "tuner/tune_shard.h"

namespace flashtune {
namespace {

std::vector<NamedWorkload> test_workloads() {
  const int d = compiled_configs().front().d;
  return {{"a", {4, 512, d, false, 0}},  {"b", {64, 4096, d, true, 0}}, {"c", {1, 128, d, false, 0}},
          {"e", {16, 2048, d, false, 0}}, {"f", {8, 1000, d, true, 0}}};
}

TEST(TuneShard, ParseAcceptsIOfNOnly) {
  EXPECT_EQ(parse_shard("2/8").index, 2);
  EXPECT_EQ(parse_shard("2/8").count, 8);
  EXPECT_TRUE(parse_shard("0/1").whole());
  for (const char* bad : {"8/8", "-1/4", "1/0", "1", "1/4/2", "a/4", "1/4x", " 1/4", ""}) {
    try {
      parse_shard(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const PlanError& e) {
      EXPECT_EQ(std::string(e.what()), "shard '" + std::string(bad) + "': want I/N with 0 <= I < N, e.g. 0/4");
    }
  }
}

TEST(TuneShard, ShardsPartitionThePlanAndBalanceThePredictedCost) {
  const TunePlan plan = make_plan(test_workloads(), compiled_configs(), {});
  const model::GpuSpec spec = model::find_gpu_spec("nvidia-h200", FLASHTUNE_TEST_GPU_DIR);
  const std::vector<double> cost = tune_cost_s(plan, &spec);
  ASSERT_EQ(cost.size(), plan.pairs.size());
  EXPECT_EQ(cost, tune_cost_s(plan, &spec)) << "every shard must compute the same costs";
  const double max_pair = *std::max_element(cost.begin(), cost.end());
  double total = 0;
  for (double c : cost) total += c;
  for (int n : {1, 2, 3, 7}) {
    const std::vector<int> owners = shard_owners(cost, n);
    std::vector<double> load(static_cast<std::size_t>(n), 0);
    std::size_t pairs = 0;
    for (int i = 0; i < n; ++i) pairs += shard_of(plan, owners, i).pairs.size();
    EXPECT_EQ(pairs, plan.pairs.size()) << "N=" << n;
    for (std::size_t k = 0; k < cost.size(); ++k) load[static_cast<std::size_t>(owners[k])] += cost[k];
    for (double l : load) EXPECT_LE(std::abs(l - total / n), max_pair) << "N=" << n;
    // Plan order is kept, so a shard is one run of the plan: owners never decrease.
    EXPECT_TRUE(std::is_sorted(owners.begin(), owners.end()));
  }
  // Without a spec the costs still differ by workload (nominal FLOPs), deterministically.
  const std::vector<double> fallback = tune_cost_s(plan, nullptr);
  EXPECT_EQ(fallback, tune_cost_s(plan, nullptr));
  EXPECT_GT(fallback.back(), 0);
}

Profile shard_profile(const std::string& spec, const std::string& commit) {
  Profile p;
  p.gpu = fake_gpu_identity();
  p.gpu.spec = spec;
  p.build.git_commit = commit;
  p.build.kernel_set = "small";
  p.workloads = {{"w", {2, 256, 64, false, 0}}};
  return p;
}

Measurement pair(const std::string& config, const std::string& st, double ms) {
  Measurement m;
  m.workload = "w";
  m.config = config;
  m.status = st;
  if (ms > 0) {
    TimingSummary t;
    t.median_ms = ms;
    m.timing = t;
  }
  return m;
}

TEST(ProfileMerge, AnotherGpuOrBuildIsRefusedWithTheReason) {
  const MergeInput a{"a.json", shard_profile("fake-gpu", "abc1234")};
  try {
    merge_profiles({a, {"b.json", shard_profile("other-gpu", "abc1234")}});
    FAIL() << "merged two GPU models";
  } catch (const MergeError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("b.json was measured on Fake GPU (other-gpu, 132 SMs, cc 9.0), a.json on "
                                          "Fake GPU (fake-gpu, 132 SMs, cc 9.0): merge only profiles of one GPU model",
                                          0),
              0u)
        << e.what();
  }
  try {
    merge_profiles({a, {"b.json", shard_profile("fake-gpu", "def5678")}});
    FAIL() << "merged two builds";
  } catch (const MergeError& e) {
    EXPECT_NE(std::string(e.what()).find("b.json was measured by build def5678 (small kernel set"), std::string::npos)
        << e.what();
  }
  Profile other_dims = shard_profile("fake-gpu", "abc1234");
  other_dims.workloads[0].workload.B = 3;
  EXPECT_THROW(merge_profiles({a, {"b.json", other_dims}}), MergeError);
}

TEST(ProfileMerge, DuplicatesKeepOkOverFailedElseTheEarlierInput) {
  Profile a = shard_profile("fake-gpu", "abc1234"), b = a;
  a.measurements = {pair("x", "ok", 1.0), pair("y", "launch", 0), pair("z", "ok", 3.0)};
  b.measurements = {pair("x", "ok", 1.1), pair("y", "ok", 2.0), pair("v", "ok", 0.5)};
  const MergeResult r = merge_profiles({{"a.json", a}, {"b.json", b}});
  std::map<std::string, Measurement> by_config;
  for (const Measurement& m : r.merged.measurements) by_config[m.config] = m;
  ASSERT_EQ(by_config.size(), 4u);
  ASSERT_EQ(r.merged.measurements.size(), 4u);
  EXPECT_DOUBLE_EQ(by_config["x"].timing->median_ms, 1.0);  // both ok: the earlier input
  EXPECT_EQ(by_config["y"].status, "ok");                    // ok beats launch, though later
  ASSERT_EQ(r.duplicates.size(), 2u);
  EXPECT_EQ(r.duplicates[0].kept_from, "a.json");
  EXPECT_EQ(r.duplicates[1].kept_from, "b.json");
  EXPECT_EQ(r.duplicates[1].dropped_status, "launch");
  EXPECT_EQ(r.inputs[0].kept, 2u);
  EXPECT_EQ(r.inputs[1].kept, 2u);
  EXPECT_EQ(r.merged.best.at("w").config, "v");
}

TEST(ProfileMerge, MissingAndRepeatedShardsAreWarnedAndThePlanChecked) {
  Profile a = shard_profile("fake-gpu", "abc1234"), b = a;
  a.tune_settings = {{"shard", {{"index", 0}, {"count", 3}}}, {"time_cap_s", 0.5}};
  b.tune_settings = {{"shard", {{"index", 0}, {"count", 3}}}, {"time_cap_s", 0.2}};
  const MergeResult r = merge_profiles({{"a.json", a}, {"b.json", b}});
  std::set<std::string> warnings(r.warnings.begin(), r.warnings.end());
  EXPECT_TRUE(warnings.count("shard 0/3 given 2 times (a.json, b.json)"));
  EXPECT_TRUE(warnings.count("shards not among the inputs: 1/3, 2/3"));
  EXPECT_TRUE(warnings.count("b.json was tuned with time_cap_s 0.2, a.json with 0.5"));
  EXPECT_FALSE(r.merged.tune_settings.contains("shard"));
  EXPECT_EQ(r.merged.tune_settings["merged_from"].size(), 2u);

  const TunePlan plan = make_plan(test_workloads(), compiled_configs(), {});
  Profile half;
  half.workloads = plan.workloads;
  for (std::size_t k = 0; k < plan.pairs.size(); k += 2) {
    Measurement m = pair(plan.pairs[k].config.name(), "ok", 1.0);
    m.workload = plan.workloads[plan.pairs[k].workload].name;
    half.measurements.push_back(m);
  }
  half.measurements.push_back(pair("not/planned", "ok", 1.0));
  const PlanCoverage c = plan_coverage(half, plan);
  EXPECT_EQ(c.planned, plan.pairs.size());
  EXPECT_EQ(c.present, (plan.pairs.size() + 1) / 2);
  EXPECT_EQ(c.missing.size(), plan.pairs.size() / 2);
  EXPECT_EQ(c.extra, std::vector<std::string>{"w not/planned"});
}

}  // namespace
}  // namespace flashtune
