// `flashtune fit`: fits the model's coefficients to a measured profile and reports how well the
// model predicts (in-sample, leave-one-workload-out, leave-one-variant-out, beside the roofline and
// the seed model), what model-guided tuning would have cost, and, given other GPUs' profiles, how
// the fitted coefficients carry over. Writes the coefficients into the profile. No GPU needed.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <optional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "commands.h"
#include "exit_codes.h"
#include "fit/decode_instruction_fit.h"
#include "fit/decode_sweeps.h"
#include "fit/fit_run.h"
#include "profile/model_profile.h"
#include "model/gpu_spec.h"
#include "profile/output_file.h"
#include "profile/profile_journal.h"
#include "profile/profile_lock.h"

namespace flashtune::app {
namespace {

struct FitOptions {
  std::string profile, free, residuals, gpu;
  std::vector<std::string> cross, unseen, decode, with, decode_instructions;
  std::string variants;
  std::string cv = "all";
  bool no_write = false, json = false, quiet = false;
};

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

// `flashtune fit --decode sweeps.jsonl...`: the decode model against measured split sweeps, with the
// profile's coefficients (or the defaults without --profile); with --free, those coefficients
// fitted on the sweeps (the same Levenberg-Marquardt fit) and the score again. Writes no coefficient;
// --residuals writes each timing's measured and predicted time.
int fit_decode_command(const FitOptions& o) {
  model::GpuSpec gpu;
  model::Coefficients start;
  std::string source = "default coefficients";
  try {
    if (!o.profile.empty()) {
      const Profile p = load_profile(o.profile);
      start = model_profile_of(p, o.profile).coefficients;
      gpu = model::gpu_spec_by_name_or_file(p.gpu.spec);
      source = o.profile + "'s coefficients";
    } else {
      gpu = model::gpu_spec_by_name_or_file(o.gpu.empty() ? "h100" : o.gpu);
    }
  } catch (const std::runtime_error& e) {
    throw CommandError{kExitUsage, e.what()};
  }
  NamedPaths inputs;
  for (const std::string& d : o.decode) inputs.emplace_back("--decode", d);
  if (!o.residuals.empty()) try {
      require_outputs_apart(inputs, {{"--residuals", o.residuals}});
      require_replaceable(o.residuals);
    } catch (const OutputError& e) {
      throw CommandError{kExitUsage, e.what()};
    }
  fit::DecodeSweeps sweeps;
  try {
    sweeps = fit::load_decode_sweeps(o.decode, gpu);
  } catch (const fit::FitInputError& e) {
    throw CommandError{kExitUsage, e.what()};
  }
  const fit::DecodeScore first = fit::score_decode(sweeps, gpu, start);
  std::string text = "decode sweeps: " + sweeps.data.source + " on " + gpu.name + "\n";
  text += "with " + source + ":\n" + fit::render_decode_score(first, !o.quiet);
  nlohmann::ordered_json report = {{"sweeps", o.decode}, {"gpu", gpu.name}, {"coefficients", source},
                                   {"score", fit::decode_score_json(first)}};
  model::Coefficients fitted = start;
  if (!o.free.empty()) {
    std::vector<std::string> free = o.free == "decode" ? fit::default_decode_free_coefficients() : split_commas(o.free);
    fit::FitResult r;
    try {
      fit::check_coefficient_names(free);
      std::vector<const fit::FitPoint*> points;
      for (const fit::FitPoint& p : sweeps.data.points) points.push_back(&p);
      r = fit::fit_coefficients(points, gpu, start, free, fit::FitLoss::Absolute);
    } catch (const std::invalid_argument& e) {
      throw CommandError{kExitUsage, e.what()};
    }
    text += "fitted on the sweeps (least absolute log error; " + r.status + ", rms log error " +
            std::to_string(r.rms_log_start) + " -> " + std::to_string(r.rms_log_end) + "):";
    for (const std::string& name : r.free)
      for (const model::CoefficientInfo& ci : model::coefficient_table())
        if (name == ci.name) text += " " + name + "=" + std::to_string(r.coefficients.*(ci.member));
    const fit::DecodeScore after = fit::score_decode(sweeps, gpu, r.coefficients);
    text += "\nwith the fitted coefficients:\n" + fit::render_decode_score(after, !o.quiet);
    auto& f = report["fit"] = {{"status", r.status}, {"rms_log_start", r.rms_log_start}, {"rms_log_end", r.rms_log_end}};
    for (const std::string& name : r.free)
      for (const model::CoefficientInfo& ci : model::coefficient_table())
        if (name == ci.name) f["coefficients"][name] = r.coefficients.*(ci.member);
    f["score"] = fit::decode_score_json(after);
    text += "(no coefficient written: model/coefficients.h holds the defaults, a profile's \"coefficients\" overrides them)\n";
    fitted = r.coefficients;
  }
  // The residuals are the last coefficients' (the fitted ones with --free); SIGINT or SIGTERM while
  // they are staged leaves no temporary.
  if (!o.residuals.empty()) remove_staged_temps_on_signal();
  if (!o.residuals.empty()) try {
      StagedOutput(o.residuals, fit::decode_residuals_csv(sweeps, gpu, fitted)).commit();
    } catch (const OutputError& e) {
      std::fwrite(text.data(), 1, text.size(), stdout);
      throw CommandError{kExitFailure, e.what()};
    }
  if (o.json) text = report.dump(2) + "\n";
  std::fwrite(text.data(), 1, text.size(), stdout);
  return kExitOk;
}

// `flashtune fit --decode-instructions counts.jsonl...`: the decode SIMT configs' compiled extra
// instructions, fitted on ncu counts, printed as the compiled-instruction table's rows to merge into
// configs/kernels/compiled_instructions.json. Writes nothing.
int fit_decode_instructions_command(const FitOptions& o) {
  fit::CompiledInstructionFit f;
  try {
    f = fit::fit_decode_instructions(o.decode_instructions);
  } catch (const fit::FitInputError& e) {
    throw CommandError{kExitUsage, e.what()};
  }
  std::string text = fit::render_decode_instruction_fit(f);
  if (o.json) {
    nlohmann::ordered_json j = {{"counts", o.decode_instructions},
                                {"configs_fitted", f.configs_fitted},
                                {"counts_used", f.observations_used},
                                {"median_rel_residual", f.median_rel_residual},
                                {"max_rel_residual", f.max_rel_residual},
                                {"left_out", f.left_out},
                                {"table", model::compiled_instruction_table_json(f.table)}};
    text = j.dump(2) + "\n";
  }
  std::fwrite(text.data(), 1, text.size(), stdout);
  return kExitOk;
}

int fit_command(const FitOptions& o) {
  if (!o.decode_instructions.empty()) return fit_decode_instructions_command(o);
  if (!o.decode.empty()) return fit_decode_command(o);
  if (o.profile.empty()) throw CommandError{kExitUsage, "--profile is required (or --decode with split sweeps)"};
  fit::FitRunOptions fo;
  fo.profile = o.profile;
  fo.spec_dir = model::default_gpu_spec_dir();
  if (!o.free.empty()) fo.free = split_commas(o.free);
  if (o.cv != "all" && o.cv != "both" && o.cv != "workload" && o.cv != "variant" && o.cv != "family" &&
      o.cv != "dtype" && o.cv != "none")
    throw CommandError{kExitUsage, "--cv '" + o.cv + "' (known: all, both, workload, variant, family, dtype, none)"};
  fo.cv_workload = o.cv == "all" || o.cv == "both" || o.cv == "workload";
  fo.cv_variant = o.cv == "all" || o.cv == "both" || o.cv == "variant";
  fo.cv_family = o.cv == "all" || o.cv == "family";
  fo.cv_dtype = o.cv == "all" || o.cv == "dtype";
  fo.cross_profiles = o.cross;
  fo.unseen_profiles = o.unseen;
  fo.with_profiles = o.with;
  for (const std::string& v : split_commas(o.variants)) {
    const std::optional<Variant> parsed = parse_variant(v);
    if (!parsed) throw CommandError{kExitUsage, "--variants: unknown variant '" + v + "' (flashtune list names them)"};
    fo.variants.push_back(*parsed);
  }
  // Before anything is read or written: the residuals must not land on an input.
  NamedPaths inputs = {{"--profile", o.profile}};
  for (const std::string& c : o.cross) inputs.emplace_back("--cross", c);
  for (const std::string& u : o.unseen) inputs.emplace_back("--unseen", u);
  for (const std::string& w : o.with) inputs.emplace_back("--with", w);
  try {
    require_outputs_apart(inputs, {{"--residuals", o.residuals}});
    // A residuals path the output policy refuses (a device, a FIFO, a missing folder, read-only)
    // is named before minutes of fitting.
    if (!o.residuals.empty()) require_replaceable(o.residuals);
  } catch (const OutputError& e) {
    throw CommandError{kExitUsage, e.what()};
  }
  // SIGINT or SIGTERM while the profile or the residuals are staged leaves no temporary.
  remove_staged_temps_on_signal();
  // The other profiles are read before the fit, so a bad --cross or --unseen file is named at
  // once rather than after minutes of fitting.
  for (std::size_t i = 1; i < inputs.size(); ++i) {
    try {
      (void)load_profile(inputs[i].second);
    } catch (const ProfileError& e) {
      throw CommandError{kExitUsage, e.what()};
    }
  }
  // Writing the coefficients rewrites the profile: hold its lock from the read to the write (a
  // concurrent tune's pairs would be lost otherwise), and fit what a stopped tune's journal holds.
  std::optional<ProfileLock> lock;
  if (!o.no_write && std::filesystem::is_regular_file(o.profile)) {
    // A profile the fit may not rewrite (read-only) is named before minutes of fitting.
    try {
      require_replaceable(o.profile);
    } catch (const OutputError& e) {
      throw CommandError{kExitFailure, std::string("cannot write the coefficients: ") + e.what()};
    }
    try {
      lock.emplace(ProfileLock::acquire(o.profile, "flashtune fit"));
      compact_journal(o.profile);
    } catch (const ProfileLockError& e) {
      throw CommandError{kExitUsage, e.what()};
    } catch (const ProfileError& e) {
      throw CommandError{kExitUsage, e.what()};
    }
  }
  fit::FitRun r;
  try {
    r = fit::run_fit(fo, [&](const std::string& line) {
      if (!o.quiet) std::fprintf(stderr, "flashtune fit: %s\n", line.c_str());
    });
  } catch (const fit::FitInputError& e) {
    throw CommandError{kExitUsage, e.what()};
  } catch (const std::invalid_argument& e) {
    throw CommandError{kExitUsage, e.what()};
  }
  // The residuals are staged before the profile changes and renamed after it: a residuals path
  // that cannot be written leaves the profile as it was, and a failed coefficient write leaves
  // no residuals behind.
  std::optional<StagedOutput> residuals;
  if (!o.residuals.empty()) {
    try {
      residuals.emplace(o.residuals, fit::residuals_csv(r));
    } catch (const OutputError& e) {
      throw CommandError{kExitFailure, std::string(e.what()) + " (nothing written)"};
    }
  }
  const std::string text = o.json ? fit::render_json(r).dump(2) + "\n" : fit::render_text(r);
  if (!o.no_write) {
    try {
      fit::write_coefficients(o.profile, r);
    } catch (const std::exception& e) {
      // The report is the fit's result even when the profile cannot take the coefficients.
      std::fwrite(text.data(), 1, text.size(), stdout);
      throw CommandError{kExitFailure, std::string("cannot write the coefficients: ") + e.what()};
    }
    if (!o.quiet) std::fprintf(stderr, "flashtune fit: coefficients written to %s\n", o.profile.c_str());
  }
  if (residuals) {
    try {
      residuals->commit();
    } catch (const OutputError& e) {
      std::fwrite(text.data(), 1, text.size(), stdout);
      throw CommandError{kExitFailure, e.what()};
    }
  }
  std::fwrite(text.data(), 1, text.size(), stdout);
  return kExitOk;
}

}  // namespace

void register_fit(CLI::App& app) {
  auto o = std::make_shared<FitOptions>();
  CLI::App* sub = app.add_subcommand("fit", "Fit the model's coefficients to a measured profile and report its accuracy");
  sub->add_option("--profile", o->profile, "Measured profile (profiles/<gpu>.json); the coefficients are written into it");
  sub->add_option("--decode", o->decode,
                  "Decode split sweeps (benchmarks/decode_bench JSON lines, docs/results/h100-decode-bench-*.jsonl): "
                  "score the decode model on them (MAPE, the model's split against the measured best) with the "
                  "--profile's coefficients or the defaults; with --free (\"decode\": the decode coefficients) fit "
                  "those on the sweeps first. Writes no coefficient (--residuals: one CSV row per timing)");
  sub->add_option("--decode-instructions", o->decode_instructions,
                  "Executed-instruction counts of decode launches (benchmarks/decode_instructions.sh): fit the fp32 "
                  "decode configs' compiled extra instructions per (warp, tile) and per warp of a block, printed as "
                  "the rows of configs/kernels/compiled_instructions.json. Writes nothing");
  sub->add_option("--gpu", o->gpu, "With --decode and no --profile: the GPU spec (default h100)");
  // The count from the fit itself, so the help cannot drift from it.
  sub->add_option("--free", o->free, "Comma-separated coefficients to fit (default: the " +
                                         std::to_string(fit::default_free_coefficients().size()) +
                                         " of docs/fit.md)");
  sub->add_option("--cv", o->cv,
                  "Cross-validation: all (default: workload, variant, family and dtype), both (workload and "
                  "variant), workload, variant, family (tensor-core against SIMT), dtype (fp32 against 16-bit, where "
                  "the profile holds both) or none");
  sub->add_option("--cross", o->cross, "Other GPUs' profiles to predict with the fitted coefficients");
  sub->add_option("--unseen", o->unseen,
                  "Profiles of workloads the fit never sees (profiles/unseen/*.json, any GPU): scored with the "
                  "coefficients fitted here (MAPE, Spearman, top-1 and top-3 regret, top 5% within 2%)");
  sub->add_option("--with", o->with,
                  "Other sweeps of the same GPU fitted with --profile as one set (e.g. profiles/<gpu>-bf16.json); "
                  "the coefficients are written into --profile alone");
  sub->add_option("--variants", o->variants,
                  "Comma-separated variants to fit and score (default: every variant of the profiles)");
  sub->add_option("--residuals", o->residuals, "Write every point's measured and predicted times (CSV)");
  sub->add_flag("--no-write", o->no_write, "Report only; leave the profile as it is");
  sub->add_flag("--json", o->json, "Print the report as JSON");
  sub->add_flag("--quiet", o->quiet, "No progress lines on stderr");
  sub->callback([o] { set_reporting_action("fit", [o] { return fit_command(*o); }); });
}

}  // namespace flashtune::app
