#include "plots/plot_set.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <stdexcept>

#include "model/data_dir.h"
#include "plots/drawer.h"
#include "plots/plot_kinds.h"
#include "profile/output_file.h"

namespace flashtune::plots {

std::string default_template_dir() {
  if (const char* env = std::getenv("FLASHTUNE_PLOT_TEMPLATE_DIR"); env && *env) return env;
  return model::data_path("plots/templates");
}

std::vector<std::string> select_heatmap_workloads(const PlotProfile& p, const std::string& option) {
  std::vector<std::string> all;
  for (const ProfileWorkload& w : p.workloads) all.push_back(w.name);
  if (option.empty()) {
    if (all.size() > std::size_t(kDefaultHeatmaps)) all.resize(kDefaultHeatmaps);
    return all;
  }
  if (option == "all") return all;
  std::vector<std::string> picked(1);
  for (char ch : option) {
    if (ch == ',') picked.emplace_back();
    else if (ch != ' ') picked.back() += ch;
  }
  std::vector<std::string> unique;  // "--heatmaps a,a" draws (and report.md embeds) one heatmap
  for (const std::string& name : picked) {
    if (std::find(all.begin(), all.end(), name) == all.end())
      throw std::runtime_error("--heatmaps: " + p.path + " has no workload '" + name + "' (give names from its " +
                               "\"workloads\", comma-separated, or all)");
    if (std::find(unique.begin(), unique.end(), name) == unique.end()) unique.push_back(name);
  }
  return unique;
}

namespace {

std::vector<PlotOutcome> draw_each(const PlotRequest& r) {
  const Drawer dr(r);
  return {plot_accuracy(dr, *r.points),
          plot_time_vs_n(dr, *r.points, *r.gpu, r.coefficients),
          plot_heatmaps(dr, *r.points, r.heatmap_workloads),
          plot_roofline(dr, *r.points, *r.gpu),
          plot_bank_conflicts(dr, *r.points),
          plot_pipes(dr, *r.points)};
}

}  // namespace

void check_plot_outputs(const PlotRequest& r) {
  if (!r.gpu || !r.points || r.points->empty()) throw std::invalid_argument("draw_all_plots: no points");
  std::vector<std::pair<std::string, std::string>> plan;
  PlotRequest dry = r;
  dry.plan = &plan;
  (void)draw_each(dry);
  check_plot_plan(r, plan);
}

void check_plot_plan(const PlotRequest& r, const std::vector<std::pair<std::string, std::string>>& plan) {
  std::error_code ec;
  const bool folder_exists = std::filesystem::is_directory(r.out_dir, ec);
  std::set<std::string> templates = {"common"};
  std::set<std::string> seen;
  for (const auto& [base, tmpl] : plan) {
    templates.insert(tmpl);
    for (const char* ext : {".dat", ".svg", ".png"}) {
      const std::string path = base + ext;
      if (!seen.insert(path).second)
        throw std::runtime_error(path + ": two plots would write this file (nothing written)");
      for (const std::string& in : r.inputs)
        if (!in.empty() && same_file(path, in))
          throw std::runtime_error(path + ": would overwrite the input " + in + " (nothing written)");
      if (folder_exists) require_replaceable(path);
    }
  }
  for (const std::string& t : templates) {
    const std::string path = r.template_dir + "/" + t + ".gp";
    if (!std::filesystem::is_regular_file(path, ec))
      throw std::runtime_error(path + ": gnuplot template missing (nothing written; set FLASHTUNE_PLOT_TEMPLATE_DIR "
                               "or install the templates)");
  }
}

std::vector<PlotOutcome> draw_all_plots(const PlotRequest& r) {
  if (r.plan) return draw_each(r);
  check_plot_outputs(r);
  return draw_each(r);
}

}  // namespace flashtune::plots
