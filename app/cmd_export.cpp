// `flashtune export`: a profile as CSV (one row per measurement) or T4 (the autotuning community's
// results format), to stdout or a file. No GPU needed.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>
#include <string>

#include <optional>
#include <set>
#include <vector>

#include "cli_options.h"
#include "commands.h"
#include "exit_codes.h"
#include "profile/export.h"
#include "profile/output_file.h"
#include "profile/profile.h"

namespace flashtune::app {
namespace {

struct ExportOptions {
  std::string profile, format, out;
  std::string dtype;  // --dtype: only the workloads of this element type; empty: all
};

// Keeps the workloads of element type `t` and their measurements.
void keep_dtype(Profile& p, DType t) {
  std::set<std::string> kept;
  std::vector<NamedWorkload> ws;
  for (const NamedWorkload& w : p.workloads)
    if (w.workload.dtype == t) {
      kept.insert(w.name);
      ws.push_back(w);
    }
  p.workloads = std::move(ws);
  std::vector<Measurement> ms;
  for (const Measurement& m : p.measurements)
    if (kept.count(m.workload)) ms.push_back(m);
  p.measurements = std::move(ms);
}

int export_command(const ExportOptions& o) {
  if (o.format != "csv" && o.format != "t4") {
    std::fprintf(stderr, "flashtune export: unknown format '%s' (known: csv, t4)\n", o.format.c_str());
    return kExitUsage;
  }
  try {
    require_outputs_apart({{"--profile", o.profile}}, {{"--out", o.out}});
    if (!o.out.empty()) require_replaceable(o.out);  // the output policy, before the profile is read
  } catch (const OutputError& e) {
    std::fprintf(stderr, "flashtune export: %s\n", e.what());
    return kExitUsage;
  }
  std::optional<DType> dtype;
  try {
    dtype = dtype_filter_of(o.dtype);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "flashtune export: %s\n", e.what());
    return kExitUsage;
  }
  Profile p;
  try {
    p = load_profile(o.profile);
    if (dtype) keep_dtype(p, *dtype);
  } catch (const ProfileError& e) {
    std::fprintf(stderr, "flashtune export: %s\n", e.what());
    return kExitUsage;
  }
  const std::string text = o.format == "csv" ? profile_to_csv(p) : profile_to_t4(p).dump(2) + "\n";
  if (o.out.empty()) {
    std::fwrite(text.data(), 1, text.size(), stdout);  // checked when main flushes stdout
    return kExitOk;
  }
  try {
    remove_staged_temps_on_signal();
    write_output_atomic(o.out, text);
  } catch (const OutputError& e) {
    std::fprintf(stderr, "flashtune export: %s (the previous file, if any, is unchanged)\n", e.what());
    return kExitFailure;
  }
  std::fprintf(stderr, "flashtune export: %zu measurements -> %s\n", p.measurements.size(), o.out.c_str());
  return kExitOk;
}

}  // namespace

void register_export(CLI::App& app) {
  auto o = std::make_shared<ExportOptions>();
  CLI::App* sub = app.add_subcommand("export", "Write a profile as CSV or T4 (autotuning results format)");
  sub->add_option("--profile", o->profile, "Profile (profiles/<gpu>.json)")->required();
  sub->add_option("--format", o->format, "csv or t4")->required();
  sub->add_option("--out", o->out, "Output file (default stdout)");
  sub->add_option("--dtype", o->dtype, dtype_help("Only the workloads of this element type (default: all)"));
  sub->callback([o] { set_action([o] { return export_command(*o); }); });
}

}  // namespace flashtune::app
