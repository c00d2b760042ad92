// Draws the six plots of a profile: writes one .dat file per plot into the output folder and runs
// the matching gnuplot template (plots/templates/*.gp) once per format (SVG, PNG).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "model/coefficients.h"
#include "model/gpu_spec.h"
#include "plots/plot_points.h"
#include "plots/plot_profile.h"

namespace flashtune::plots {

struct PlotRequest {
  std::string out_dir;
  std::string template_dir;  // holds common.gp and one template per plot
  std::string gnuplot;       // full path (find_gnuplot())
  std::string gpu_name;      // for titles
  const model::GpuSpec* gpu = nullptr;
  model::Coefficients coefficients;  // the ones the points were predicted with (model lines)
  const std::vector<PlotPoint>* points = nullptr;
  std::vector<std::string> heatmap_workloads;  // one heatmap each (select_heatmap_workloads())
  std::vector<std::string> inputs;  // files read (profile, spec): no output may be written over one
  // When set, draw() writes nothing and lists each plot's (out_dir/stem, template) here: the plan
  // check_plot_outputs validates before the first file is written.
  std::vector<std::pair<std::string, std::string>>* plan = nullptr;
};

struct PlotOutcome {
  std::string title;               // what the plot shows
  std::vector<std::string> stems;  // files drawn: stem.svg and stem.png in out_dir (empty: skipped)
  std::string note;                // why it was skipped, or a caveat
};

// $FLASHTUNE_PLOT_TEMPLATE_DIR if set, else plots/templates in the data folder (model/data_dir.h).
std::string default_template_dir();

// How many workloads get a heatmap when --heatmaps is not given: one heatmap per workload of a
// 37-workload sweep is more than anyone reads, and the shipped profiles list the seed cases first.
inline constexpr int kDefaultHeatmaps = 6;

// The workloads of `p` to draw a heatmap for: `option` is "" (the first kDefaultHeatmaps of the
// profile's workloads), "all", or a comma-separated list of workload names. Throws
// std::runtime_error naming an unknown workload.
std::vector<std::string> select_heatmap_workloads(const PlotProfile& p, const std::string& option);

// Throws std::runtime_error when a file cannot be written or gnuplot fails.
std::vector<PlotOutcome> draw_all_plots(const PlotRequest& r);

// Every file draw_all_plots would write (out_dir/stem.dat, .svg, .png), checked before the first is
// written: none is an input, none is written twice, each passes the output policy
// (profile/output_file.h; skipped while out_dir does not exist yet), and every template exists.
// Throws std::runtime_error (OutputError for the policy) with one line. draw_all_plots calls it.
void check_plot_outputs(const PlotRequest& r);
// The same checks on a plan a caller listed itself (PlotRequest::plan: (out_dir/stem, template) per
// plot), for plots drawn outside draw_all_plots (the decode plot, plots/plot_decode.h).
void check_plot_plan(const PlotRequest& r, const std::vector<std::pair<std::string, std::string>>& plan);

}  // namespace flashtune::plots
