// `flashtune report`: draws the plots of a profile into DIR and writes DIR/report.md (accuracy of
// the three models, best config per workload, the plots). Without gnuplot the report is still
// written, without plots, and the command says what to install.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <filesystem>
#include <memory>
#include <string>

#include "cli_numbers.h"
#include "commands.h"
#include "exit_codes.h"
#include "plot_options.h"
#include "plots/gnuplot_runner.h"
#include "plots/plot_session.h"
#include "plots/report.h"
#include "profile/output_file.h"

namespace flashtune::app {
namespace {

int report_command(const PlotOptions& o) {
  try {
    const std::string path = o.out + "/report.md";
    try {
      require_outputs_apart({{"--profile", o.profile}}, {{"--out", path}});
    } catch (const OutputError& e) {
      std::fprintf(stderr, "flashtune report: %s\n", printable(e.what()).c_str());
      return kExitUsage;
    }
    const plots::PlotSession s = plots::open_plot_session(o.profile, o.gpu_spec);
    // Before the folder or any file is made: report.md, then every plot when gnuplot is there.
    if (std::filesystem::is_directory(o.out)) require_replaceable(path);
    if (plots::find_gnuplot()) plots::check_session_outputs(s, o.out, o.heatmaps);
    remove_staged_temps_on_signal();
    plots::ensure_directory(o.out);
    plots::ReportInput in;
    in.profile = &s.profile;
    in.points = &s.points;
    in.skipped = s.skipped;
    // Relative to where the command runs, so a report regenerated elsewhere reads the same.
    in.gpu_spec_file = std::filesystem::path(s.gpu.file).lexically_proximate(std::filesystem::current_path()).string();
    if (plots::find_gnuplot()) {
      in.plots = plots::draw_session(s, o.out, o.heatmaps);
    } else {
      std::fprintf(stderr, "flashtune report: %s; writing the report without plots\n", plots::gnuplot_missing_message());
      in.plots_note = std::string("No plots: ") + plots::gnuplot_missing_message() + ".";
    }
    write_output_atomic(path, plots::render_report(in));
    std::printf("%s\n", path.c_str());
  } catch (const OutputError& e) {
    // A file that could not be written (full disk, file-size limit, read-only): the previous one is
    // unchanged.
    std::fprintf(stderr, "flashtune report: %s\n", printable(e.what()).c_str());
    return kExitFailure;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "flashtune report: %s\n", printable(e.what()).c_str());
    return kExitUsage;
  }
  return kExitOk;
}

}  // namespace

void register_report(CLI::App& app) {
  auto opts = std::make_shared<PlotOptions>();
  CLI::App* cmd = app.add_subcommand("report", "Write a Markdown report of a profile (accuracy, best configs, plots)");
  add_plot_options(cmd, *opts, "output folder for report.md and the plots (created if missing)");
  cmd->callback([opts]() { set_action([opts]() { return report_command(*opts); }); });
}

}  // namespace flashtune::app
