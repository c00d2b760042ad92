// The options that say which (workload, config) pairs a tune plans, shared by `tune` (what to
// measure) and `merge` (what the merged profile should hold): --workloads FILE... or --B/--N/--d
// [--causal] [--name], --strategy, --top-k, --precision. Errors are CommandError with the exit code.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cli_options.h"
#include "kernels/traits/variants.h"
#include "model/gpu_spec.h"
#include "model/profile.h"
#include "profile/workload_set.h"
#include "tuner/config_select.h"
#include "tuner/tune_plan.h"

namespace CLI {
class App;
}  // namespace CLI

namespace flashtune::app {

struct PlanCliOptions {
  std::vector<std::string> workload_files;
  WorkloadCliOptions workload;  // --B --N --d --causal: one workload from the command line
  std::string name;
  std::string strategy = "exhaustive";
  std::string precision = "fp32";  // fp32 plans the fp32-accurate configs only, tf32 all
  std::optional<int> top_k;
};

// Registers the options on `sub`.
void add_plan_options(CLI::App* sub, PlanCliOptions& o);

// Whether any workload option was given (merge plans only then).
bool plan_requested(const PlanCliOptions& o);
// Strategy, --top-k and precision consistent (kExitUsage otherwise).
void validate_plan_options(const PlanCliOptions& o);
Precision precision_of(const PlanCliOptions& o);
// The workloads of the files and the command line, merged (kExitUsage for a bad file or value).
std::vector<NamedWorkload> workloads_of(const PlanCliOptions& o);
// make_plan over the compiled configs (kExitUnsupported for a workload nothing implements, or the
// model strategy without `spec`); the model strategy ranks with `ranking`'s coefficients.
TunePlan plan_of(const PlanCliOptions& o, const std::vector<NamedWorkload>& workloads, const model::GpuSpec* spec,
                 const model::ModelProfile& ranking = {});

}  // namespace flashtune::app
