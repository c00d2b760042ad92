// `flashtune merge A.json B.json ... --out P.json`: joins profiles tuned apart (the shards of
// `tune --shard I/N`, e.g. a Slurm array) into one. Refuses profiles of another GPU model or build
// with the reason, keeps one measurement of a pair measured twice (profile/profile_merge.h states
// the rule) and lists them, and, given the plan's options as tune takes them, the planned pairs
// the result lacks. Each input's journal is read too (a shard that was stopped keeps its pairs);
// an input another process is still writing is refused. The output is written atomically under
// its lock. No GPU needed.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "exit_codes.h"
#include "plan_options.h"
#include "profile/output_file.h"
#include "profile/profile_journal.h"
#include "profile/profile_lock.h"
#include "profile/profile_merge.h"

namespace flashtune::app {
namespace {

using nlohmann::ordered_json;

struct MergeOptions {
  std::vector<std::string> inputs;
  std::string out;
  PlanCliOptions plan;
  bool require_complete = false, json = false;
  int list = 20;
};

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec1, ec2;
  return std::filesystem::weakly_canonical(a, ec1) == std::filesystem::weakly_canonical(b, ec2) && !ec1 && !ec2;
}

// Inputs exist and nobody writes them; the output is an input or new (a file, in a folder that
// exists: profile/output_file.h). Returns whether the output is one of the inputs.
bool check_paths(const MergeOptions& o) {
  try {
    require_output_node(o.out, false);
  } catch (const OutputError& e) {
    throw CommandError{kExitUsage, e.what()};
  }
  bool out_is_input = false;
  for (const std::string& in : o.inputs) {
    if (!std::filesystem::is_regular_file(in)) {
      // Say what it is: a folder or a FIFO was reported as "unknown profile".
      std::error_code ec;
      const auto type = std::filesystem::status(in, ec).type();
      using std::filesystem::file_type;
      const std::string what = type == file_type::not_found   ? "no such file"
                               : type == file_type::directory ? "is a folder, not a profile (give the .json files in it)"
                               : type == file_type::fifo      ? "is a FIFO, not a profile"
                               : type == file_type::character || type == file_type::block ? "is a device, not a profile"
                               : type == file_type::socket    ? "is a socket, not a profile"
                                                              : "is not a regular file";
      throw CommandError{kExitUsage, in + ": " + what};
    }
    if (same_file(in, o.out)) {
      out_is_input = true;
      continue;  // its lock is taken below, which refuses a writer just the same
    }
    if (const auto who = ProfileLock::holder(in))
      throw CommandError{kExitUsage, in + " is being written by " + *who + "; merge it when that has finished"};
  }
  if (!out_is_input && std::filesystem::exists(o.out))
    throw CommandError{kExitUsage, o.out + " exists and is not one of the inputs: give it as an input to merge into "
                                           "it, or another --out"};
  if (!out_is_input && std::filesystem::exists(journal_path(o.out)))
    throw CommandError{kExitUsage, journal_path(o.out) + " exists beside --out: move it away first"};
  return out_is_input;
}

ProfileLock lock_out(const MergeOptions& o) {
  try {
    return ProfileLock::acquire(o.out, "flashtune merge");
  } catch (const ProfileLockError& e) {
    throw CommandError{kExitUsage, e.what()};
  }
}

std::vector<MergeInput> load_inputs(const MergeOptions& o) {
  std::vector<MergeInput> inputs;
  for (const std::string& in : o.inputs) {
    try {
      inputs.push_back({in, load_profile_with_journal(in)});
    } catch (const ProfileError& e) {
      throw CommandError{kExitUsage, e.what()};
    }
  }
  return inputs;
}

std::optional<PlanCoverage> coverage_of(const MergeOptions& o, const Profile& merged) {
  if (!plan_requested(o.plan)) return std::nullopt;
  const std::vector<NamedWorkload> workloads = workloads_of(o.plan);
  const std::optional<model::GpuSpec> spec = tune_spec(merged.gpu.spec);
  if (parse_strategy(o.plan.strategy) == TuneStrategy::Model && !spec)
    throw CommandError{kExitUsage, "the model strategy's plan needs a spec of " + merged.gpu.name + " in " +
                                       model::default_gpu_spec_dir()};
  // As the shards planned it: the spec alone, no profile's coefficients (tune_shard.h).
  return plan_coverage(merged, plan_of(o.plan, workloads, spec ? &*spec : nullptr));
}

ordered_json report_json(const MergeOptions& o, const MergeResult& r, const std::optional<PlanCoverage>& cov) {
  ordered_json j;
  j["schema_version"] = 1;
  j["out"] = o.out;
  j["gpu"] = {{"name", r.merged.gpu.name}, {"spec", r.merged.gpu.spec}};
  j["build"] = {{"git_commit", r.merged.build.git_commit}, {"kernel_set", r.merged.build.kernel_set}};
  j["inputs"] = ordered_json::array();
  for (const MergedInput& in : r.inputs)
    j["inputs"].push_back({{"profile", in.path}, {"shard", in.shard}, {"pairs", in.pairs}, {"kept", in.kept}});
  j["workloads"] = r.merged.workloads.size();
  j["pairs"] = r.merged.measurements.size();
  j["keep_rule"] = kMergeKeepRule;
  j["duplicates"] = ordered_json::array();
  for (const MergeDuplicate& d : r.duplicates)
    j["duplicates"].push_back({{"workload", d.workload},       {"config", d.config},
                               {"kept_from", d.kept_from},     {"kept_status", d.kept_status},
                               {"kept_ms", d.kept_ms},         {"dropped_from", d.dropped_from},
                               {"dropped_status", d.dropped_status}, {"dropped_ms", d.dropped_ms}});
  j["warnings"] = r.warnings;
  if (cov)
    j["plan"] = {{"planned", cov->planned}, {"present", cov->present}, {"missing", cov->missing}, {"extra", cov->extra}};
  else
    j["plan"] = nullptr;
  return j;
}

void print_list(const char* label, const std::vector<std::string>& items, int list) {
  for (std::size_t i = 0; i < items.size() && i < static_cast<std::size_t>(list); ++i)
    std::printf("  %s %s\n", label, items[i].c_str());
  if (items.size() > static_cast<std::size_t>(list))
    std::printf("  ... and %zu more (--list N, or --json for all)\n", items.size() - static_cast<std::size_t>(list));
}

void print_text(const MergeOptions& o, const MergeResult& r, const std::optional<PlanCoverage>& cov) {
  std::printf("merged    %zu profile%s -> %s: %zu pairs, %zu workloads (%s, build %s, %s kernel set)\n",
              r.inputs.size(), r.inputs.size() == 1 ? "" : "s", o.out.c_str(), r.merged.measurements.size(),
              r.merged.workloads.size(), r.merged.gpu.name.c_str(), r.merged.build.git_commit.c_str(),
              r.merged.build.kernel_set.c_str());
  for (const MergedInput& in : r.inputs)
    std::printf("  %-40s %6zu pairs, %6zu kept%s\n", in.path.c_str(), in.pairs, in.kept,
                in.shard.empty() ? "" : ("  (shard " + in.shard + ")").c_str());
  std::printf("duplicates %zu (kept: %s)\n", r.duplicates.size(), kMergeKeepRule);
  std::vector<std::string> lines;
  for (const MergeDuplicate& d : r.duplicates) {
    char buf[128];
    std::snprintf(buf, sizeof buf, " (%s %.4g ms), dropped ", d.kept_status.c_str(), d.kept_ms);
    char buf2[128];
    std::snprintf(buf2, sizeof buf2, " (%s %.4g ms)", d.dropped_status.c_str(), d.dropped_ms);
    lines.push_back(d.workload + " " + d.config + ": kept " + d.kept_from + buf + d.dropped_from + buf2);
  }
  print_list("duplicate", lines, o.list);
  for (const std::string& w : r.warnings) std::printf("warning   %s\n", w.c_str());
  if (cov) {
    std::printf("plan      %zu planned, %zu present, %zu missing, %zu not in the plan\n", cov->planned, cov->present,
                cov->missing.size(), cov->extra.size());
    print_list("missing", cov->missing, o.list);
  }
}

int merge_command(const MergeOptions& o) {
  if (o.inputs.empty()) throw CommandError{kExitUsage, "nothing to merge: give the profiles, then --out P.json"};
  if (o.list < 0) throw CommandError{kExitUsage, "list=" + std::to_string(o.list) + ": must be >= 0"};
  if (plan_requested(o.plan)) validate_plan_options(o.plan);
  else if (o.plan.top_k || o.plan.strategy != "exhaustive") {  // were silently ignored without a plan
    validate_plan_options(o.plan);  // --top-k without --strategy model: "--top-k goes with --strategy model"
    throw CommandError{kExitUsage, "--strategy and --top-k describe the plan merge checks coverage against: give "
                                   "--workloads (or --B, --N and --d) too"};
  }
  else if (o.require_complete)
    throw CommandError{kExitUsage, "--require-complete needs the plan: give --workloads (and --strategy, ...) as to tune"};
  // An output that is an input is locked from its read to the write (a tune's pairs written in
  // between would be lost); a new output only once the merge has succeeded, so a refused merge
  // leaves no "<out>.lock" behind.
  const bool out_is_input = check_paths(o);
  std::optional<ProfileLock> lock;
  if (out_is_input) lock.emplace(lock_out(o));
  remove_staged_temps_on_signal();  // SIGINT or SIGTERM while the output is staged leaves no temporary
  MergeResult r;
  try {
    r = merge_profiles(load_inputs(o));
  } catch (const MergeError& e) {
    throw CommandError{kExitUsage, e.what()};
  }
  const std::optional<PlanCoverage> cov = coverage_of(o, r.merged);
  if (o.require_complete && cov && !cov->missing.empty())
    throw CommandError{kExitFailure, std::to_string(cov->missing.size()) + " of " + std::to_string(cov->planned) +
                                         " planned pairs missing (first: " + cov->missing.front() + "); " + o.out +
                                         " not written"};
  if (!lock) {
    lock.emplace(lock_out(o));
    check_paths(o);  // under the lock: still new, no journal beside it
  }
  try {
    write_profile_atomic(o.out, r.merged);
    // An input's journal was read into the result; leaving it would replay pairs that are there.
    remove_durably(journal_path(o.out));
  } catch (const ProfileError& e) {
    throw CommandError{kExitFailure, e.what()};
  }
  if (o.json)
    std::printf("%s\n", report_json(o, r, cov).dump(2).c_str());
  else
    print_text(o, r, cov);
  return kExitOk;
}

}  // namespace

void register_merge(CLI::App& app) {
  auto o = std::make_shared<MergeOptions>();
  CLI::App* sub = app.add_subcommand(
      "merge", "Join profiles tuned apart (tune --shard I/N) into one; report pairs measured twice or missing");
  sub->add_option("profiles", o->inputs, "Profiles to merge (same GPU model and build), with their journals");
  sub->add_option("--out", o->out, "Merged profile to write (new, or one of the inputs)")->required();
  add_plan_options(sub, o->plan);
  sub->add_flag("--require-complete", o->require_complete,
                "With a plan: exit 1 and write nothing when planned pairs are missing");
  sub->add_option("--list", o->list, "Duplicates and missing pairs listed in the text report (default 20)");
  sub->add_flag("--json", o->json, "Print the report as JSON (every duplicate and missing pair)");
  sub->callback([o] { set_reporting_action("merge", [o] { return merge_command(*o); }); });
}

}  // namespace flashtune::app
