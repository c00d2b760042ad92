#include "plan_options.h"

#include <CLI/CLI.hpp>

#include <filesystem>

#include "commands.h"
#include "exit_codes.h"
#include "model/text_check.h"
#include "model/workload_limits.h"

namespace flashtune::app {
void add_plan_options(CLI::App* sub, PlanCliOptions& o) {
  sub->add_option("--workloads", o.workload_files, "Workload files (configs/workloads/*.json)");
  add_workload_options(sub, o.workload, {});
  sub->add_option("--name", o.name,
                  "Name of the --B, --N, --d workload in the profile (default b<B>_n<N>_d<d>[_causal])");
  sub->add_option("--strategy", o.strategy, "exhaustive (default) or model (with --top-k)");
  add_precision_option(sub, o.precision, "the planned configs");
  sub->add_option("--top-k", o.top_k, "Model strategy: measure the K best-predicted configs");
}

bool plan_requested(const PlanCliOptions& o) {
  const WorkloadCliOptions& w = o.workload;
  return !o.workload_files.empty() || w.B || w.N || w.d || !o.name.empty();
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
  if (s == TuneStrategy::Model && !o.top_k) throw CommandError{kExitUsage, "--strategy model needs --top-k K"};
  if (s == TuneStrategy::Exhaustive && o.top_k) throw CommandError{kExitUsage, "--top-k goes with --strategy model"};
  if (o.top_k && *o.top_k < 1)
    throw CommandError{kExitUsage, "top-k=" + std::to_string(*o.top_k) + ": must be >= 1"};
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
  const WorkloadCliOptions& w = o.workload;
  if (w.B || w.N || w.d) {
    if (!w.B || !w.N || !w.d) throw CommandError{kExitUsage, "a command-line workload needs --B, --N and --d together"};
    if (*w.B < 1) throw CommandError{kExitUsage, "B=" + std::to_string(*w.B) + ": must be >= 1"};
    if (*w.N < 1) throw CommandError{kExitUsage, "N=" + std::to_string(*w.N) + ": must be >= 1"};
    if (*w.d < 1) throw CommandError{kExitUsage, "d=" + std::to_string(*w.d) + ": must be >= 1"};
    WorkloadSet cli;
    NamedWorkload nw;
    nw.workload.B = *w.B;
    nw.workload.N = *w.N;
    nw.workload.d = *w.d;
    nw.workload.causal = w.causal;
    try {
      nw.workload.dtype = dtype_of(w);
      apply_heads_and_keys(w, nw.workload);
    } catch (const UsageError& e) {
      throw CommandError{kExitUsage, e.what()};
    }
    if (const auto why = model::workload_limit_error(nw.workload)) throw CommandError{kExitUsage, *why};
    nw.name = o.name.empty() ? default_workload_name(nw.workload) : o.name;
    if (const auto why = name_problem(nw.name)) throw CommandError{kExitUsage, "--name " + *why};
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
  po.top_k = o.top_k.value_or(0);
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
