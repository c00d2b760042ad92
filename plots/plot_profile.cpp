#include "plots/plot_profile.h"

#include "profile/profile.h"

namespace flashtune::plots {

PlotProfile load_plot_profile(const std::string& path) {
  // The tuner's reader and its one value check (profile/profile_check.h): plot, report and
  // check-counters accept exactly the profiles export, compare and fit accept.
  const Profile full = load_profile(path);
  PlotProfile p;
  p.path = path;
  p.gpu_name = full.gpu.name;
  p.gpu_spec = full.gpu.spec;
  p.fitted_coefficients = static_cast<int>(full.coefficients.size());
  std::map<std::string, Workload> by_name;
  for (const NamedWorkload& w : full.workloads) {
    by_name[w.name] = w.workload;
    p.workloads.push_back(ProfileWorkload{w.name, w.workload});
  }
  p.measurements_total = static_cast<int>(full.measurements.size());
  for (const Measurement& fm : full.measurements) {
    if (fm.status != status::kOk || !fm.timing) continue;
    ProfileMeasurement m;
    m.workload_name = fm.workload;
    m.workload = by_name.at(fm.workload);  // the reader checked that every measurement's workload is listed
    m.config = *parse_config_name(fm.config);  // the reader's value check parsed every name
    m.median_ms = fm.timing->median_ms;
    m.stdev_ms = fm.timing->stdev_ms.value_or(0);
    if (fm.resources) m.registers = fm.resources->registers;
    m.counters = fm.counters;
    p.ok.push_back(std::move(m));
  }
  return p;
}

}  // namespace flashtune::plots
