// The options `flashtune plot` and `flashtune report` share: the profile, the output folder, the
// GPU spec and which workloads get a heatmap.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace flashtune::app {

struct PlotOptions {
  std::string profile, out, gpu_spec, heatmaps;
};

// profile_required: `report` needs a profile; `plot` takes --decode sweeps instead where given.
inline void add_plot_options(CLI::App* cmd, PlotOptions& o, const char* out_help, bool profile_required = true) {
  CLI::Option* profile = cmd->add_option("--profile", o.profile, "profile JSON written by `flashtune tune`");
  if (profile_required) profile->required();
  cmd->add_option("--out", o.out, out_help)->required();
  cmd->add_option("--gpu-spec", o.gpu_spec, "GPU spec name (configs/gpus; default: the profile's gpu.spec)");
  cmd->add_option("--heatmaps", o.heatmaps,
                  "workloads that get a tile-grid heatmap: comma-separated names, or all (default: the profile's "
                  "first 6)");
}

}  // namespace flashtune::app
