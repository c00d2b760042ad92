// `flashtune plot`: draws the model-vs-measurement plots of a profile with gnuplot (SVG and PNG,
// plus the .dat file behind each). No GPU needed. Bad input or no gnuplot: one line, exit 2.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>
#include <vector>
#include <exception>
#include <functional>
#include <memory>
#include <string>

#include "cli_numbers.h"
#include "commands.h"
#include "exit_codes.h"
#include "plot_options.h"
#include "fit/decode_sweeps.h"
#include "model/gpu_spec.h"
#include "plots/gnuplot_runner.h"
#include "plots/plot_decode.h"
#include "plots/plot_set.h"
#include "plots/plot_session.h"
#include "profile/output_file.h"

namespace flashtune::app {
namespace {

// Runs `draw` (it checks its outputs before the folder or any file is made, then draws) and prints
// each plot's files and note. One line on stderr and exit 1 for a file that could not be written
// (full disk, file-size limit, read-only: the previous one is unchanged), exit 2 for bad input.
int run_plots(const std::string& out, const std::function<std::vector<plots::PlotOutcome>()>& draw) {
  try {
    for (const plots::PlotOutcome& p : draw()) {
      for (const std::string& stem : p.stems)
        std::printf("%s/%s.svg  %s/%s.png\n", out.c_str(), stem.c_str(), out.c_str(), stem.c_str());
      if (!p.note.empty()) std::printf("  note (%s): %s\n", p.title.c_str(), p.note.c_str());
    }
  } catch (const OutputError& e) {
    std::fprintf(stderr, "flashtune plot: %s\n", printable(e.what()).c_str());
    return kExitFailure;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "flashtune plot: %s\n", printable(e.what()).c_str());
    return kExitUsage;
  }
  return kExitOk;
}

struct DecodePlotOptions {
  std::vector<std::string> sweeps;
  std::string gpu;
  double copy_gbps = 0;
};

// `flashtune plot --decode sweeps.jsonl... --gpu G --out DIR`: issue 26's decode plot, time against
// the K/V length with the copy-bandwidth floor, from split sweeps (fit/decode_sweeps.h reads them;
// the model's split and time with the default coefficients, as `flashtune fit --decode` scores them).
int plot_decode_command(const PlotOptions& o, const DecodePlotOptions& d) {
  return run_plots(o.out, [&]() {
    if (!plots::find_gnuplot()) throw std::runtime_error(plots::gnuplot_missing_message());
    const model::GpuSpec gpu = model::gpu_spec_by_name_or_file(d.gpu.empty() ? "h100" : d.gpu);
    double copy = d.copy_gbps;
    if (copy <= 0) copy = gpu.dram_bandwidth_measured_gbs.value_or(gpu.dram_bandwidth_gbs);
    const fit::DecodeSweeps sweeps = fit::load_decode_sweeps(d.sweeps, gpu);
    const fit::DecodeScore score = fit::score_decode(sweeps, gpu, model::Coefficients{});
    std::vector<plots::DecodeKeysPoint> pts;
    for (const fit::DecodeShapeScore& s : score.shapes) {
      char series[160];
      std::snprintf(series, sizeof series, "%lld x %d/%d heads, Nq %lld, d %d", s.batch, s.q_heads, s.kv_heads, s.nq, s.d);
      pts.push_back({dtype_name(s.dtype), series, s.keys, s.at_ms, s.best_ms, s.model_ms, s.bytes});
    }
    plots::PlotRequest r;
    r.out_dir = o.out;
    r.template_dir = plots::default_template_dir();
    r.gnuplot = *plots::find_gnuplot();
    r.gpu_name = gpu.name;
    r.gpu = &gpu;
    r.inputs = d.sweeps;
    // Before the folder or any file is made: the plan, checked as every plot's is.
    std::vector<std::pair<std::string, std::string>> plan;
    r.plan = &plan;
    (void)plots::plot_decode_vs_keys(plots::Drawer(r), pts, copy);
    r.plan = nullptr;
    plots::check_plot_plan(r, plan);
    remove_staged_temps_on_signal();
    plots::ensure_directory(o.out);
    return std::vector<plots::PlotOutcome>{plots::plot_decode_vs_keys(plots::Drawer(r), pts, copy)};
  });
}

int plot_command(const PlotOptions& o) {
  return run_plots(o.out, [&]() {
    const plots::PlotSession s = plots::open_plot_session(o.profile, o.gpu_spec);
    if (!plots::find_gnuplot()) throw std::runtime_error(plots::gnuplot_missing_message());
    plots::check_session_outputs(s, o.out, o.heatmaps);  // before the folder or any file is made
    remove_staged_temps_on_signal();
    plots::ensure_directory(o.out);
    for (const std::string& why : s.skipped) std::fprintf(stderr, "flashtune plot: not predicted: %s\n", why.c_str());
    return plots::draw_session(s, o.out, o.heatmaps);
  });
}

}  // namespace

void register_plot(CLI::App& app) {
  auto opts = std::make_shared<PlotOptions>();
  auto decode = std::make_shared<DecodePlotOptions>();
  CLI::App* cmd = app.add_subcommand("plot", "Plot a profile's measurements against the models (gnuplot)");
  add_plot_options(cmd, *opts, "output folder (created if missing)", false);
  cmd->add_option("--decode", decode->sweeps,
                  "instead of --profile: decode split sweeps (benchmarks/decode_bench --sweep JSON lines): draw time "
                  "against the K/V length with the copy-bandwidth floor (decode_vs_keys)");
  cmd->add_option("--gpu", decode->gpu, "with --decode: the GPU spec the sweeps ran on (default h100)");
  cmd->add_option("--copy-gbps", decode->copy_gbps,
                  "with --decode: the copy bandwidth of the floor, GB/s (default: the spec's measured copy "
                  "bandwidth, else its datasheet DRAM bandwidth)")
      ->check(CLI::Validator(
          [](const std::string& v) {
            char* end = nullptr;
            const double x = std::strtod(v.c_str(), &end);
            return end != v.c_str() && *end == '\0' && x > 0 ? std::string() : "must be above 0 GB/s, got " + v;
          },
          "GB/s > 0"));
  cmd->callback([opts, decode]() {
    set_action([opts, decode]() {
      if (opts->profile.empty() == decode->sweeps.empty()) {
        std::fprintf(stderr, "flashtune plot: give either --profile or --decode\n");
        return kExitUsage;
      }
      return decode->sweeps.empty() ? plot_command(*opts) : plot_decode_command(*opts, *decode);
    });
  });
}

}  // namespace flashtune::app
