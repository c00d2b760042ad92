// The shipped measured profiles (profiles/nvidia-h200.json, the exhaustive sweep with CUPTI
// counters; profiles/nvidia-h100-sxm.json and docs/results/nvidia-h200-run2-x2.json, timings only)
// checked as data: they load, cover the shipped workload files with every pair of the exhaustive
// plan exactly once, and their counters obey what the hardware must do (DRAM reads at least the
// compulsory Q, K, V bytes; a plain shared layout conflicts more than its padded or swizzled twin).
// Host only: reads files, needs no GPU.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "kernels/traits/variants.h"
#include "profile/profile.h"
#include "profile/workload_set.h"
#include "tuner/tune_plan.h"

namespace flashtune {
namespace {

using PairKey = std::pair<std::string, std::string>;  // workload, config

std::string source_file(const std::string& relative) { return std::string(FLASHTUNE_SOURCE_DIR) + "/" + relative; }

const Profile& h200() {
  static const Profile p = load_profile(source_file("profiles/nvidia-h200.json"));
  return p;
}

std::vector<NamedWorkload> shipped_workloads() {
  return merge_workloads({load_workload_set(source_file("configs/workloads/seed_cases.json")),
                          load_workload_set(source_file("configs/workloads/grid.json"))});
}

std::map<PairKey, int> pair_counts(const Profile& p) {
  std::map<PairKey, int> n;
  for (const Measurement& m : p.measurements) ++n[{m.workload, m.config}];
  return n;
}

std::set<PairKey> pairs_of(const Profile& p) {
  std::set<PairKey> s;
  for (const Measurement& m : p.measurements) s.insert({m.workload, m.config});
  return s;
}

std::map<std::string, Workload> workloads_by_name(const Profile& p) {
  std::map<std::string, Workload> out;
  for (const NamedWorkload& w : p.workloads) out[w.name] = w.workload;
  return out;
}

bool counted(const Measurement& m) { return m.status == status::kOk && m.counters_status == "ok"; }

double counter(const Measurement& m, const std::string& name) {
  const auto it = m.counters.find(name);
  if (it == m.counters.end()) ADD_FAILURE() << m.workload << " " << m.config << ": no counter " << name;
  return it == m.counters.end() ? 0.0 : it->second;
}

TEST(ShippedProfile, H200LoadsAndIsTheH200) {
  EXPECT_EQ(h200().gpu.spec, "nvidia-h200");
  EXPECT_EQ(h200().gpu.name, "NVIDIA H200");
  EXPECT_EQ(h200().build.kernel_set, "full");
}

TEST(ShippedProfile, EveryShippedWorkloadIsThereWithItsDimensions) {
  const auto in_profile = workloads_by_name(h200());
  for (const NamedWorkload& w : shipped_workloads()) {
    const auto it = in_profile.find(w.name);
    ASSERT_NE(it, in_profile.end()) << w.name << " is not in the profile";
    EXPECT_TRUE(same_dimensions(it->second, w.workload))
        << w.name << ": " << describe_workload(it->second) << " in the profile, " << describe_workload(w.workload)
        << " in the workload file";
    EXPECT_TRUE(h200().best.count(w.name)) << w.name << " has no best config";
  }
}

TEST(ShippedProfile, EveryPairOfTheExhaustivePlanMeasuredExactlyOnce) {
  const Profile& p = h200();
  for (const auto& [pair, n] : pair_counts(p)) EXPECT_EQ(n, 1) << pair.first << " " << pair.second;
  const auto dims = workloads_by_name(p);
  // The exhaustive plan gives every workload all configs of its d: each measured config is a
  // buildable config of that d, and all workloads of one d hold the same config list.
  std::map<int, std::set<std::string>> configs_of_d;
  std::map<std::string, std::set<std::string>> configs_of_workload;
  for (const Measurement& m : p.measurements) {
    const auto c = parse_config_name(m.config);
    ASSERT_TRUE(c.has_value()) << m.config;
    EXPECT_FALSE(tile_rejection(*c).has_value()) << m.config;
    ASSERT_TRUE(dims.count(m.workload)) << m.workload;
    EXPECT_EQ(c->d, dims.at(m.workload).d) << m.workload << " " << m.config;
    configs_of_d[c->d].insert(m.config);
    configs_of_workload[m.workload].insert(m.config);
  }
  for (const NamedWorkload& w : p.workloads)
    EXPECT_EQ(configs_of_workload[w.name], configs_of_d[w.workload.d]) << w.name;
  // Against this build's registry: the full build compiles exactly the configs the sweep ran (its
  // exhaustive plan is the profile, pair for pair); the small kernel set is a part of them.
  // (configs_for is the exhaustive plan's list per workload; the small set has no d=32 or d=128.)
  std::set<PairKey> planned;
  for (const NamedWorkload& w : shipped_workloads())
    for (const TileConfig& c : configs_for(w.workload, compiled_configs()))
      // The shipped sweeps predate the decode family (its H100 sweeps: docs/results/h100-decode-*)
      // and the sm_90a fp32 family (wgmma_3xtf32, wgmma_1xtf32: not swept yet).
      if (c.variant != Variant::Decode && c.variant != Variant::WgmmaTf32x3 && c.variant != Variant::WgmmaTf32x1)
        planned.insert({w.name, c.name()});
  const std::set<PairKey> measured = pairs_of(p);
  for (const PairKey& k : planned) EXPECT_TRUE(measured.count(k)) << k.first << " " << k.second << " not measured";
#if !FLASHTUNE_SMALL_KERNEL_SET
  EXPECT_EQ(measured, planned);
#endif
}

TEST(ShippedProfile, CountersOnAtLeast95PercentOfOkPairs) {
  std::size_t ok = 0, with_counters = 0;
  for (const Measurement& m : h200().measurements) {
    if (m.status != status::kOk) continue;
    ++ok;
    with_counters += counted(m);
  }
  ASSERT_GT(ok, 0u);
  EXPECT_GE(double(with_counters), 0.95 * double(ok)) << with_counters << " of " << ok;
}

// Q, K and V must each come from DRAM at least once: the L2 is flushed before every counter pass.
// dram__bytes_read counts whole 32-byte sectors, so it can only round up; no slack is needed (the
// lowest ratio in the H200 sweep is 1.00005, t11).
TEST(ShippedProfile, DramReadsAtLeastTheCompulsoryBytes) {
  const auto dims = workloads_by_name(h200());
  std::size_t checked = 0;
  for (const Measurement& m : h200().measurements) {
    if (!counted(m)) continue;
    const Workload& w = dims.at(m.workload);
    const double compulsory = 3.0 * double(w.B) * double(w.N) * double(w.d) * sizeof(float);
    EXPECT_GE(counter(m, "dram__bytes_read.sum"), compulsory) << m.workload << " " << m.config;
    ++checked;
  }
  EXPECT_GT(checked, 0u);
}

// The layout switch exists to remove the conflicts of lanes walking a column of a packed tile.
TEST(ShippedProfile, PlainLayoutConflictsMoreThanItsPaddedOrSwizzledTwin) {
  std::map<PairKey, const Measurement*> by_pair;
  for (const Measurement& m : h200().measurements)
    if (counted(m)) by_pair[{m.workload, m.config}] = &m;
  auto conflicts = [](const Measurement& m) {
    return counter(m, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum") +
           counter(m, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum");
  };
  std::size_t twins = 0;
  for (const auto& [key, plain] : by_pair) {
    TileConfig c = *parse_config_name(key.second);
    if (c.layout != Layout::Plain) continue;
    for (Layout l : {Layout::Padded, Layout::Swizzled}) {
      c.layout = l;
      const auto twin = by_pair.find({key.first, c.name()});
      if (twin == by_pair.end()) continue;
      ++twins;
      EXPECT_GT(conflicts(*plain), conflicts(*twin->second)) << key.first << " " << key.second << " vs " << c.name();
    }
  }
  EXPECT_GT(twins, 0u);
}

// The timings-only profiles (the H100 sweep, the second H200 run on two GPUs) hold the same pairs.
TEST(ShippedProfile, OtherProfilesHoldTheSamePairs) {
  const Profile h100 = load_profile(source_file("profiles/nvidia-h100-sxm.json"));
  EXPECT_EQ(h100.gpu.spec, "nvidia-h100-sxm");
  EXPECT_EQ(pairs_of(h100), pairs_of(h200()));
  const Profile run2 = load_profile(source_file("docs/results/nvidia-h200-run2-x2.json"));
  EXPECT_EQ(run2.gpu.spec, "nvidia-h200");
  // The second H200 run predates the tensor-core family (swept into the main profiles in
  // 03d4976): it holds exactly the main profile's SIMT pairs.
  std::set<PairKey> simt;
  for (const PairKey& k : pairs_of(h200()))
    if (k.second.rfind("mma_", 0) != 0) simt.insert(k);
  EXPECT_EQ(pairs_of(run2), simt);
  for (const Profile* p : {&h100, &run2})
    for (const auto& [pair, n] : pair_counts(*p)) EXPECT_EQ(n, 1) << pair.first << " " << pair.second;
}

}  // namespace
}  // namespace flashtune
