#include "profile/profile_merge.h"

#include <map>
#include <set>
#include <utility>

namespace flashtune {
namespace {

std::string gpu_text(const GpuIdentity& g) {
  return g.name + " (" + g.spec + ", " + std::to_string(g.sm_count) + " SMs, cc " + g.cc + ")";
}

std::string build_text(const BuildInfo& b) {
  return "build " + b.git_commit + " (" + b.kernel_set + " kernel set, " + b.compiler + ", arch " + b.cuda_arch + ")";
}

void check_same_origin(const MergeInput& first, const MergeInput& other) {
  const GpuIdentity &a = first.profile.gpu, &b = other.profile.gpu;
  if (a.name != b.name || a.spec != b.spec || a.sm_count != b.sm_count || a.cc != b.cc)
    throw MergeError(other.path + " was measured on " + gpu_text(b) + ", " + first.path + " on " + gpu_text(a) +
                     ": merge only profiles of one GPU model");
  const BuildInfo &x = first.profile.build, &y = other.profile.build;
  if (x.git_commit != y.git_commit || x.kernel_set != y.kernel_set || x.compiler != y.compiler ||
      x.cuda_arch != y.cuda_arch)
    throw MergeError(other.path + " was measured by " + build_text(y) + ", " + first.path + " by " + build_text(x) +
                     ": merge only profiles of one build");
}

bool is_ok(const Measurement& m) { return m.status == status::kOk; }
double median_of(const Measurement& m) { return m.timing ? m.timing->median_ms : 0; }

std::string shard_of_settings(const nlohmann::json& settings) {
  const auto it = settings.find("shard");
  if (it == settings.end() || !it->is_object()) return "";
  return std::to_string(it->value("index", -1)) + "/" + std::to_string(it->value("count", -1));
}

// Shards of one plan: every index 0..N-1 once, one N. Whole-plan profiles may join freely.
void check_shards(const MergeResult& r, std::vector<std::string>& warnings) {
  std::map<int, std::vector<std::string>> by_index;
  std::set<int> counts;
  for (const MergedInput& in : r.inputs) {
    if (in.shard.empty()) continue;
    const std::size_t slash = in.shard.find('/');
    const int index = std::stoi(in.shard.substr(0, slash)), count = std::stoi(in.shard.substr(slash + 1));
    by_index[index].push_back(in.path);
    counts.insert(count);
  }
  if (by_index.empty()) return;
  if (counts.size() > 1) {
    warnings.push_back("the inputs are shards of different splits (N = " + std::to_string(*counts.begin()) + " and " +
                       std::to_string(*counts.rbegin()) + ")");
    return;
  }
  const int n = *counts.begin();
  for (const auto& [index, paths] : by_index)
    if (paths.size() > 1)
      warnings.push_back("shard " + std::to_string(index) + "/" + std::to_string(n) + " given " +
                         std::to_string(paths.size()) + " times (" + paths[0] + ", " + paths[1] + ")");
  std::string absent;
  for (int i = 0; i < n; ++i)
    if (!by_index.count(i)) absent += (absent.empty() ? "" : ", ") + std::to_string(i) + "/" + std::to_string(n);
  if (!absent.empty()) warnings.push_back("shards not among the inputs: " + absent);
}

// Sampling settings that make measurements comparable; a difference is worth a warning, not a refusal.
void check_settings(const MergeInput& first, const MergeInput& other, std::vector<std::string>& warnings) {
  const nlohmann::json &a = first.profile.tune_settings, &b = other.profile.tune_settings;
  if (!a.is_object() || !b.is_object()) return;
  static const std::set<std::string> kNotSampling = {"shard", "devices", "merged_from"};
  for (auto it = a.begin(); it != a.end(); ++it) {
    if (kNotSampling.count(it.key())) continue;
    const auto other_value = b.find(it.key());
    if (other_value != b.end() && *other_value != *it)
      warnings.push_back(other.path + " was tuned with " + it.key() + " " + other_value->dump() + ", " + first.path +
                         " with " + it->dump());
  }
}

}  // namespace

MergeResult merge_profiles(const std::vector<MergeInput>& inputs) {
  if (inputs.empty()) throw MergeError("nothing to merge: give at least one profile");
  MergeResult r;
  const MergeInput& first = inputs.front();
  Profile& out = r.merged;
  out.gpu = first.profile.gpu;
  out.build = first.profile.build;
  out.extra = first.profile.extra;
  // Where each kept pair sits in out.measurements, and which input it came from.
  std::map<std::pair<std::string, std::string>, std::pair<std::size_t, std::size_t>> kept;
  nlohmann::json merged_from = nlohmann::json::array();
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const MergeInput& in = inputs[i];
    check_same_origin(first, in);
    check_settings(first, in, r.warnings);
    try {
      add_workloads(out, in.profile.workloads);
    } catch (const ProfileError& e) {
      throw MergeError(in.path + ": " + e.what());
    }
    if (out.coefficients.empty() && !in.profile.coefficients.empty()) out.coefficients = in.profile.coefficients;
    MergedInput row{in.path, in.profile.measurements.size(), 0, shard_of_settings(in.profile.tune_settings)};
    merged_from.push_back({{"profile", in.path}, {"shard", row.shard}, {"pairs", row.pairs}});
    r.inputs.push_back(row);
    for (const Measurement& m : in.profile.measurements) {
      const auto key = std::make_pair(m.workload, m.config);
      const auto it = kept.find(key);
      if (it == kept.end()) {
        kept[key] = {out.measurements.size(), i};
        out.measurements.push_back(m);
        ++r.inputs[i].kept;
        continue;
      }
      Measurement& have = out.measurements[it->second.first];
      const bool replace = is_ok(m) && !is_ok(have);
      const Measurement& winner = replace ? m : have;
      const Measurement& loser = replace ? have : m;
      const std::size_t winner_input = replace ? i : it->second.second;
      const std::size_t loser_input = replace ? it->second.second : i;
      r.duplicates.push_back({m.workload, m.config, inputs[winner_input].path, inputs[loser_input].path,
                              winner.status, loser.status, median_of(winner), median_of(loser)});
      if (replace) {
        --r.inputs[it->second.second].kept;
        ++r.inputs[i].kept;
        have = m;
        it->second.second = i;
      }
    }
  }
  recompute_best(out);
  out.tune_settings = first.profile.tune_settings.is_object() ? first.profile.tune_settings : nlohmann::json::object();
  out.tune_settings.erase("shard");
  out.tune_settings["merged_from"] = merged_from;
  check_shards(r, r.warnings);
  return r;
}

}  // namespace flashtune
