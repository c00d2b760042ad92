// What `flashtune plot` and `flashtune report` share: load the profile and its GPU spec, predict
// every measurement, find gnuplot and draw. Errors are one-line std::runtime_error messages the
// commands print before exiting with the usage code.
#pragma once

#include <string>
#include <vector>

#include "model/coefficients.h"
#include "model/gpu_spec.h"
#include "plots/plot_points.h"
#include "plots/plot_profile.h"
#include "plots/plot_set.h"

namespace flashtune::plots {

struct PlotSession {
  PlotProfile profile;
  model::GpuSpec gpu;
  model::Coefficients coefficients;
  std::vector<PlotPoint> points;
  std::vector<std::string> skipped;  // measurements the model refused, with the reason
};

// Throws std::runtime_error: "<P>: no measurements with status ok to plot", unknown GPU spec,
// bad profile fields. `gpu_spec_name` empty: the profile's gpu.spec, else its gpu.name.
PlotSession open_plot_session(const std::string& profile_path, const std::string& gpu_spec_name);

// Every file draw_session would write, checked before any is (plot_set.h check_plot_outputs):
// called before the output folder is created, so a refused plot or report leaves nothing.
void check_session_outputs(const PlotSession& s, const std::string& out_dir, const std::string& heatmaps);

// Creates `out_dir` (and parents) if needed; throws naming the folder when it cannot.
void ensure_directory(const std::string& out_dir);

// Draws every plot into `out_dir`, heatmaps for the workloads `heatmaps` selects (the --heatmaps
// option, see select_heatmap_workloads()); throws gnuplot_missing_message() when gnuplot is not on
// PATH.
std::vector<PlotOutcome> draw_session(const PlotSession& s, const std::string& out_dir, const std::string& heatmaps);

}  // namespace flashtune::plots
