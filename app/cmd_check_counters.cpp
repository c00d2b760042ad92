// `flashtune check-counters`: the model's counts against the CUPTI counters of a profile, term by
// term (model/counter_check.h): per term and per variant (variant/layout for shared memory) the
// median and largest relative error and the share within 5%, then the K worst pairs of each term.
// With --write-compiled-instructions it instead fits the compiled code's extra warp instructions
// per config from the instruction counter and writes the table the model reads
// (model/compiled_instruction_table.h). No GPU needed.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>

#include "commands.h"
#include "exit_codes.h"
#include "fit/compiled_instruction_fit.h"
#include "model/counter_check.h"
#include "model/gpu_spec.h"
#include "model/profile.h"
#include "plots/counter_observations.h"
#include "plots/plot_profile.h"
#include "profile/model_profile.h"
#include "profile/output_file.h"

namespace flashtune::app {
namespace {

struct CheckCountersOptions {
  std::string profile, gpu_spec, term, write_compiled;
  bool json = false;
  int worst = 5;
};

// "1.38%", "+0.22%"; below 0.01% two significant digits ("0.0018%"), so that a tiny error
// does not print as zero.
std::string percent(double e, bool with_sign = false) {
  if (!std::isfinite(e)) return "inf";
  char buf[32];
  const bool tiny = e != 0 && std::fabs(e) < 1e-4;
  std::snprintf(buf, sizeof buf, tiny ? (with_sign ? "%+.2g%%" : "%.2g%%") : (with_sign ? "%+.2f%%" : "%.2f%%"),
                100.0 * e);
  return buf;
}

std::string signed_percent(double e) { return percent(e, true); }

nlohmann::json number_or_null(double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(); }

nlohmann::json summary_json(const model::ErrorSummary& s) {
  return {{"group", s.group},
          {"n", s.n},
          {"median_abs_rel_error", number_or_null(s.median_abs)},
          {"max_abs_rel_error", number_or_null(s.max_abs)},
          {"median_rel_error", number_or_null(s.median_signed)},
          {"within_5pct", s.within_5pct}};
}

void print_summary_row(const char* term, const model::ErrorSummary& s) {
  std::printf("| %s | %s | %d | %s | %s | %.1f%% | %s |\n", term, s.group.c_str(), s.n, percent(s.median_abs).c_str(),
              percent(s.max_abs).c_str(), 100.0 * s.within_5pct, signed_percent(s.median_signed).c_str());
}

// Fits the compiled-instruction table to the observations' instruction counter and writes it.
int write_compiled_instructions(const CheckCountersOptions& o, const std::vector<model::CounterObservation>& observations) {
  fit::CompiledInstructionFit f;
  try {
    f = fit::fit_compiled_instructions(observations, o.profile + ": flashtune check-counters --write-compiled-instructions");
  } catch (const std::invalid_argument& e) {
    throw CommandError{kExitUsage, o.profile + ": " + e.what()};
  }
  try {
    StagedOutput out(o.write_compiled, model::compiled_instruction_table_json(f.table).dump(1) + "\n");
    out.commit();
  } catch (const OutputError& e) {
    throw CommandError{kExitUsage, e.what()};
  }
  if (o.json) {
    std::printf("%s\n", nlohmann::json({{"profile", o.profile},
                                         {"written", o.write_compiled},
                                         {"configs_fitted", f.configs_fitted},
                                         {"observations_used", f.observations_used},
                                         {"median_rel_residual", f.median_rel_residual},
                                         {"max_rel_residual", f.max_rel_residual},
                                         {"left_out", f.left_out}})
                             .dump(2)
                             .c_str());
    return kExitOk;
  }
  std::printf("%s: %d configs fitted from %d measurements (traits + extra vs %s: median %s, max %s off); "
              "%zu variant shares\n",
              o.write_compiled.c_str(), f.configs_fitted, f.observations_used, model::kWarpInstructionsMetric,
              percent(f.median_rel_residual).c_str(), percent(f.max_rel_residual).c_str(), f.table.variant_shares.size());
  for (const std::string& s : f.left_out) std::printf("  left out %s\n", s.c_str());
  return kExitOk;
}

int check_counters_command(const CheckCountersOptions& o) {
  if (o.worst < 0) throw CommandError{kExitUsage, "--worst " + std::to_string(o.worst) + " must be >= 0"};
  std::vector<const model::CounterTermInfo*> wanted;
  try {
    if (!o.term.empty()) wanted.push_back(&model::counter_term(o.term));
  } catch (const std::invalid_argument& e) {
    throw CommandError{kExitUsage, e.what()};
  }
  // The instruction table must land on none of the inputs (the profile with its journal and lock,
  // and the spec sheet once it is known), and be a file: checked before anything is read.
  if (!o.write_compiled.empty()) {
    try {
      require_outputs_apart({{"--profile", o.profile}}, {{"--write-compiled-instructions", o.write_compiled}});
      require_replaceable(o.write_compiled);
    } catch (const OutputError& e) {
      throw CommandError{kExitUsage, e.what()};
    }
  }
  plots::PlotProfile profile;
  model::GpuSpec gpu;
  model::Coefficients coefficients;
  try {
    profile = plots::load_plot_profile(o.profile);
    const std::string spec = !o.gpu_spec.empty()          ? o.gpu_spec
                             : !profile.gpu_spec.empty() ? profile.gpu_spec
                                                          : profile.gpu_name;
    gpu = model::find_gpu_spec(spec, model::default_gpu_spec_dir());
    coefficients = load_model_profile(o.profile).coefficients;
  } catch (const std::exception& e) {
    throw CommandError{kExitUsage, e.what()};
  }
  if (!o.write_compiled.empty()) {
    try {
      require_outputs_apart({{"--profile", o.profile}, {"--gpu-spec", gpu.file}},
                            {{"--write-compiled-instructions", o.write_compiled}});
    } catch (const OutputError& e) {
      throw CommandError{kExitUsage, e.what()};
    }
  }
  const std::vector<model::CounterObservation> observations = plots::counter_observations(profile);
  if (observations.empty())
    throw CommandError{kExitUsage, o.profile + ": no ok measurement has counters (tune with counters on)"};
  if (!o.write_compiled.empty()) return write_compiled_instructions(o, observations);
  const model::CounterCheck check = model::check_counters(observations, gpu, coefficients);
  auto selected = [&](const model::TermCheck& t) { return wanted.empty() || wanted.front()->term == t.info.term; };

  if (o.json) {
    nlohmann::json out = {{"profile", o.profile},
                          {"gpu", profile.gpu_name},
                          {"gpu_spec", gpu.name},
                          {"observations", observations.size()},
                          {"rel_error", "(model - counter) / reference"},
                          {"terms", nlohmann::json::array()},
                          {"skipped", check.skipped}};
    for (const model::TermCheck& t : check.terms) {
      if (!selected(t)) continue;
      nlohmann::json jt = {{"term", t.info.name},
                           {"metric", t.info.metric},
                           {"minus", t.info.minus ? nlohmann::json(t.info.minus) : nlohmann::json()},
                           {"model", t.info.model},
                           {"reference", t.info.relative_to ? t.info.relative_to : "counter"},
                           {"all", summary_json(t.all)},
                           {"missing", t.missing},
                           {"not_applicable", t.not_applicable},
                           {"groups", nlohmann::json::array()},
                           {"worst", nlohmann::json::array()}};
      for (const model::ErrorSummary& g : t.groups) jt["groups"].push_back(summary_json(g));
      for (const model::CounterPair* p : t.worst(o.worst))
        jt["worst"].push_back({{"workload", p->observation->workload_name},
                               {"config", p->observation->config.name()},
                               {"model", p->model},
                               {"counter", p->measured},
                               {"reference", p->reference},
                               {"rel_error", number_or_null(p->rel_error())}});
      out["terms"].push_back(std::move(jt));
    }
    std::printf("%s\n", out.dump(2).c_str());
    return kExitOk;
  }

  std::printf("%s (%s): %zu measurements with counters, model on %s\n", o.profile.c_str(), profile.gpu_name.c_str(),
              observations.size(), gpu.name.c_str());
  std::printf("error = (model - counter) / counter; conflict terms: / the op's measured wavefronts; "
              "ideal terms: counter = wavefronts - conflicts\n\n");
  std::printf("| term | group | n | median abs error | max abs error | within 5%% | median error |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- |\n");
  for (const model::TermCheck& t : check.terms) {
    if (!selected(t)) continue;
    print_summary_row(t.info.name, t.all);
    for (const model::ErrorSummary& g : t.groups) print_summary_row("", g);
  }
  if (o.worst > 0) {
    std::printf("\nWorst %d pairs per term:\n\n| term | workload | config | model | counter | error |\n", o.worst);
    std::printf("| --- | --- | --- | --- | --- | --- |\n");
    for (const model::TermCheck& t : check.terms) {
      if (!selected(t)) continue;
      for (const model::CounterPair* p : t.worst(o.worst))
        std::printf("| %s | %s | %s | %.6g | %.6g | %s |\n", t.info.name, p->observation->workload_name.c_str(),
                    p->observation->config.name().c_str(), p->model, p->measured,
                    signed_percent(p->rel_error()).c_str());
    }
  }
  for (const model::TermCheck& t : check.terms)
    if (selected(t) && t.info.optional && t.missing > 0)
      std::printf("\nterm %s: %s missing in %d of %zu measurements with counters (tuned before it was collected)\n",
                  t.info.name, t.info.metric, t.missing, observations.size());
  for (const model::TermCheck& t : check.terms) {
    if (!selected(t) || t.not_applicable == 0) continue;
    if (t.info.async_pipeline_only)
      std::printf("\nterm %s: not compared on the %d measurements of other families (wgmma16 only: no other "
                  "kernel issues wgmma or TMA copies)\n",
                  t.info.name, t.not_applicable);
    else
      std::printf("\nterm %s: not compared on the %d SIMT measurements (tensor-core variants only: where a SIMT "
                  "kernel's tensor-pipe count was collected, it is ptxas's HFMA2.MMA register moves, which the "
                  "model does not count)\n",
                  t.info.name, t.not_applicable);
  }
  if (!check.skipped.empty()) {
    std::printf("\n%zu skipped:\n", check.skipped.size());
    for (const std::string& s : check.skipped) std::printf("  %s\n", s.c_str());
  }
  return kExitOk;
}

}  // namespace

void register_check_counters(CLI::App& app) {
  auto opts = std::make_shared<CheckCountersOptions>();
  CLI::App* cmd = app.add_subcommand(
      "check-counters", "Compare the model's counts with a profile's CUPTI counters, term by term (no GPU needed)");
  cmd->add_option("--profile", opts->profile, "profile JSON written by `flashtune tune` with counters")->required();
  cmd->add_option("--gpu-spec", opts->gpu_spec, "GPU spec name (configs/gpus; default: the profile's gpu.spec)");
  cmd->add_option("--term", opts->term,
                  "only this term: dram_read, dram_write, l2_bytes, shared_ld_wavefronts, shared_st_wavefronts, "
                  "shared_ld_conflicts, shared_st_conflicts, shared_ld_ideal, shared_st_ideal, ffma, xu, mma, "
                  "warp_instructions, l2_to_sm_sectors, shared_pipe_wavefronts, and for wgmma16 wgmma, "
                  "tma_load_bytes, tma_store_bytes, tma_load_instructions, tma_store_instructions");
  cmd->add_option("--worst", opts->worst, "list the K pairs with the largest error per term (default 5; 0: none)");
  cmd->add_flag("--json", opts->json, "print JSON instead of the Markdown tables");
  cmd->add_option("--write-compiled-instructions", opts->write_compiled,
                  "instead of the check: fit the compiled kernels' extra warp instructions per config to the "
                  "profile's smsp__inst_executed counter and write the table the model reads "
                  "(configs/kernels/compiled_instructions.json)");
  cmd->callback([opts]() { set_reporting_action("check-counters", [opts]() { return check_counters_command(*opts); }); });
}

}  // namespace flashtune::app
