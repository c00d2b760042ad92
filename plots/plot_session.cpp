#include "plots/plot_session.h"

#include <filesystem>
#include <stdexcept>
#include <system_error>

#include "model/profile.h"
#include "plots/gnuplot_runner.h"
#include "profile/model_profile.h"

namespace flashtune::plots {

PlotSession open_plot_session(const std::string& profile_path, const std::string& gpu_spec_name) {
  PlotSession s;
  s.profile = load_plot_profile(profile_path);
  if (s.profile.ok.empty()) throw std::runtime_error(profile_path + ": no measurements with status ok to plot");
  const std::string spec = !gpu_spec_name.empty()         ? gpu_spec_name
                           : !s.profile.gpu_spec.empty() ? s.profile.gpu_spec
                                                          : s.profile.gpu_name;
  s.gpu = model::find_gpu_spec(spec, model::default_gpu_spec_dir());
  s.coefficients = load_model_profile(profile_path).coefficients;
  s.points = predict_points(s.profile, s.gpu, s.coefficients, s.skipped);
  if (s.points.empty())
    throw std::runtime_error(profile_path + ": no measurement the model can predict on " + s.gpu.name + " (" +
                             s.skipped.front() + ")");
  return s;
}

void ensure_directory(const std::string& out_dir) {
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec || !std::filesystem::is_directory(out_dir))
    throw std::runtime_error(out_dir + ": cannot create output folder" + (ec ? ": " + ec.message() : ""));
}

namespace {

PlotRequest request_of(const PlotSession& s, const std::string& out_dir, const std::string& heatmaps,
                       const std::string& gnuplot) {
  PlotRequest r;
  r.out_dir = out_dir;
  r.template_dir = default_template_dir();
  r.gnuplot = gnuplot;
  r.gpu_name = s.profile.gpu_name;
  r.gpu = &s.gpu;
  r.coefficients = s.coefficients;
  r.points = &s.points;
  r.heatmap_workloads = select_heatmap_workloads(s.profile, heatmaps);
  r.inputs = {s.profile.path, s.gpu.file};
  return r;
}

}  // namespace

void check_session_outputs(const PlotSession& s, const std::string& out_dir, const std::string& heatmaps) {
  check_plot_outputs(request_of(s, out_dir, heatmaps, ""));
}

std::vector<PlotOutcome> draw_session(const PlotSession& s, const std::string& out_dir, const std::string& heatmaps) {
  const auto gnuplot = find_gnuplot();
  if (!gnuplot) throw std::runtime_error(gnuplot_missing_message());
  return draw_all_plots(request_of(s, out_dir, heatmaps, *gnuplot));
}

}  // namespace flashtune::plots
