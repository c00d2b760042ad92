// One function per plot of issue 6, each in its own file (plots/plot_<name>.cpp). Each writes its
// .dat file and draws it with the template of the same name, or says in the note why it did not.
#pragma once

#include <string>
#include <vector>

#include "model/coefficients.h"
#include "model/gpu_spec.h"
#include "plots/drawer.h"
#include "plots/plot_points.h"
#include "plots/plot_set.h"

namespace flashtune::plots {

PlotOutcome plot_accuracy(const Drawer& dr, const std::vector<PlotPoint>& pts);
PlotOutcome plot_time_vs_n(const Drawer& dr, const std::vector<PlotPoint>& pts, const model::GpuSpec& gpu,
                           const model::Coefficients& k);
PlotOutcome plot_heatmaps(const Drawer& dr, const std::vector<PlotPoint>& pts, const std::vector<std::string>& workloads);
PlotOutcome plot_roofline(const Drawer& dr, const std::vector<PlotPoint>& pts, const model::GpuSpec& gpu);
PlotOutcome plot_bank_conflicts(const Drawer& dr, const std::vector<PlotPoint>& pts);
PlotOutcome plot_pipes(const Drawer& dr, const std::vector<PlotPoint>& pts);

}  // namespace flashtune::plots
