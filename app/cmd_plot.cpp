// `flashtune plot`: draws the model-vs-measurement plots of a profile with gnuplot (SVG and PNG,
// plus the .dat file behind each). No GPU needed. Bad input or no gnuplot: one line, exit 2.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <memory>
#include <string>

#include "cli_numbers.h"
#include "commands.h"
#include "exit_codes.h"
#include "plot_options.h"
#include "plots/gnuplot_runner.h"
#include "plots/plot_session.h"
#include "profile/output_file.h"

namespace flashtune::app {
namespace {

int plot_command(const PlotOptions& o) {
  try {
    const plots::PlotSession s = plots::open_plot_session(o.profile, o.gpu_spec);
    if (!plots::find_gnuplot()) throw std::runtime_error(plots::gnuplot_missing_message());
    plots::check_session_outputs(s, o.out, o.heatmaps);  // before the folder or any file is made
    remove_staged_temps_on_signal();
    plots::ensure_directory(o.out);
    for (const std::string& why : s.skipped) std::fprintf(stderr, "flashtune plot: not predicted: %s\n", why.c_str());
    for (const plots::PlotOutcome& p : plots::draw_session(s, o.out, o.heatmaps)) {
      for (const std::string& stem : p.stems) std::printf("%s/%s.svg  %s/%s.png\n", o.out.c_str(), stem.c_str(),
                                                          o.out.c_str(), stem.c_str());
      if (!p.note.empty()) std::printf("  note (%s): %s\n", p.title.c_str(), p.note.c_str());
    }
  } catch (const OutputError& e) {
    // A file that could not be written (full disk, file-size limit, read-only): the previous one is
    // unchanged.
    std::fprintf(stderr, "flashtune plot: %s\n", printable(e.what()).c_str());
    return kExitFailure;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "flashtune plot: %s\n", printable(e.what()).c_str());
    return kExitUsage;
  }
  return kExitOk;
}

}  // namespace

void register_plot(CLI::App& app) {
  auto opts = std::make_shared<PlotOptions>();
  CLI::App* cmd = app.add_subcommand("plot", "Plot a profile's measurements against the models (gnuplot)");
  add_plot_options(cmd, *opts, "output folder (created if missing)");
  cmd->callback([opts]() { set_action([opts]() { return plot_command(*opts); }); });
}

}  // namespace flashtune::app
