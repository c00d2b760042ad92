#include "plan_options.h"

#include <CLI/CLI.hpp>

#include <filesystem>

#include "commands.h"
#include "exit_codes.h"
#include "model/workload_limits.h"

namespace flashtune::app {
namespace {

bool given(const CLI::Option* o) { return o != nullptr && o->count() > 0; }

}  // namespace

void add_plan_options(CLI::App* sub, PlanCliOptions& o) {
  sub->add_option("--workloads", o.workload_files, "Workload files (configs/workloads/*.json)");
  o.B_opt = sub->add_option("--B", o.B, "A command-line workload: batch x heads");
  o.N_opt = sub->add_option("--N", o.N, "... sequence length");
  o.d_opt = sub->add_option("--d", o.d, "... head dimension");
  sub->add_flag("--causal", o.causal, "... causal");
  sub->add_option("--name", o.name, "... its name in the profile (default b<B>_n<N>_d<d>[_causal])");
  sub->add_option("--strategy", o.strategy, "exhaustive (default) or model (with --top-k)");
  sub->add_option("--precision", o.precision,
                  "fp32 (default: plan the fp32-accurate configs only, SIMT and mma_3xtf32) or tf32 (mma_1xtf32 too)");
  o.top_k_opt = sub->add_option("--top-k", o.top_k, "Model strategy: measure the K best-predicted configs");
}

bool plan_requested(const PlanCliOptions& o) {
  return !o.workload_files.empty() || given(o.B_opt) || given(o.N_opt) || given(o.d_opt) || !o.name.empty();
}

Precision precision_of(const PlanCliOptions& o) {
  try {
    return parse_precision_or_throw(o.precision);
  } catch (const UsageError& e) {
    throw CommandError{kExitUsage, e.what()};
  }
}

void validate_plan_options(const PlanCliOptions& o) {
  TuneStrategy s;
  try {
    s = parse_strategy(o.strategy);
  } catch (const PlanError& e) {
    throw CommandError{kExitUsage, e.what()};
  }
  if (s == TuneStrategy::Model && !given(o.top_k_opt))
    throw CommandError{kExitUsage, "--strategy model needs --top-k K"};
  if (s == TuneStrategy::Exhaustive && given(o.top_k_opt))
    throw CommandError{kExitUsage, "--top-k goes with --strategy model"};
  if (given(o.top_k_opt) && o.top_k < 1)
    throw CommandError{kExitUsage, "top-k=" + std::to_string(o.top_k) + ": must be >= 1"};
  precision_of(o);
}

std::vector<NamedWorkload> workloads_of(const PlanCliOptions& o) {
  std::vector<WorkloadSet> sets;
  for (const std::string& f : o.workload_files) {
    if (!std::filesystem::exists(f)) throw CommandError{kExitUsage, "unknown workload file " + f};
    try {
      sets.push_back(load_workload_set(f));
    } catch (const WorkloadFileError& e) {
      throw CommandError{kExitUsage, e.what()};
    }
  }
  const bool any_dim = given(o.B_opt) || given(o.N_opt) || given(o.d_opt);
  if (any_dim) {
    if (!given(o.B_opt) || !given(o.N_opt) || !given(o.d_opt))
      throw CommandError{kExitUsage, "a command-line workload needs --B, --N and --d together"};
    if (o.B < 1) throw CommandError{kExitUsage, "B=" + std::to_string(o.B) + ": must be >= 1"};
    if (o.N < 1) throw CommandError{kExitUsage, "N=" + std::to_string(o.N) + ": must be >= 1"};
    if (o.d < 1) throw CommandError{kExitUsage, "d=" + std::to_string(o.d) + ": must be >= 1"};
    WorkloadSet cli;
    NamedWorkload nw;
    nw.workload.B = o.B;
    nw.workload.N = o.N;
    nw.workload.d = o.d;
    nw.workload.causal = o.causal;
    if (const auto why = model::workload_limit_error(nw.workload)) throw CommandError{kExitUsage, *why};
    nw.name = o.name.empty() ? default_workload_name(nw.workload) : o.name;
    cli.workloads.push_back(nw);
    sets.push_back(cli);
  } else if (!o.name.empty()) {
    throw CommandError{kExitUsage, "--name names a command-line workload: give --B, --N and --d too"};
  }
  if (sets.empty()) throw CommandError{kExitUsage, "nothing to tune: give --workloads FILE... or --B, --N and --d"};
  try {
    return merge_workloads(sets);
  } catch (const WorkloadFileError& e) {
    throw CommandError{kExitUsage, e.what()};
  }
}

TunePlan plan_of(const PlanCliOptions& o, const std::vector<NamedWorkload>& workloads, const model::GpuSpec* spec,
                 const model::ModelProfile& ranking) {
  PlanOptions po;
  po.strategy = parse_strategy(o.strategy);
  po.top_k = o.top_k;
  po.precision = precision_of(o);
  po.gpu = spec;
  po.profile = ranking;
  try {
    return make_plan(workloads, compiled_configs(), po);
  } catch (const PlanError& e) {
    throw CommandError{kExitUnsupported, e.what()};
  }
}

}  // namespace flashtune::app
