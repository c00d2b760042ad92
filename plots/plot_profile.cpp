#include "plots/plot_profile.h"

#include "tuner/profile.h"

#include <cstdio>
#include <stdexcept>

namespace flashtune::plots {
namespace {

// Integer after `prefix` at the start of `part` ("d64" with prefix "d" -> 64); -1 when absent.
int number_after(const std::string& part, const std::string& prefix) {
  if (part.compare(0, prefix.size(), prefix) != 0 || part.size() == prefix.size()) return -1;
  int value = 0;
  for (std::size_t i = prefix.size(); i < part.size(); ++i) {
    if (part[i] < '0' || part[i] > '9' || value > 100000) return -1;
    value = value * 10 + (part[i] - '0');
  }
  return value;
}

}  // namespace

TileConfig parse_config_name(const std::string& text) {
  std::vector<std::string> parts(1);
  for (char ch : text) {
    if (ch == '/') parts.emplace_back();
    else parts.back() += ch;
  }
  const auto bad = [&]() { return std::invalid_argument("config '" + text + "': expected variant/dD/brRxbcC/layout"); };
  if (parts.size() != 4) throw bad();
  TileConfig c;
  const auto variant = parse_variant(parts[0]);
  const auto layout = parse_layout(parts[3]);
  const std::size_t x = parts[2].find('x');
  if (!variant || !layout || x == std::string::npos) throw bad();
  c.variant = *variant;
  c.layout = *layout;
  c.d = number_after(parts[1], "d");
  c.Br = number_after(parts[2].substr(0, x), "br");
  c.Bc = number_after(parts[2].substr(x + 1), "bc");
  if (c.d <= 0 || c.Br <= 0 || c.Bc <= 0) throw bad();
  return c;
}

PlotProfile load_plot_profile(const std::string& path) {
  // The tuner's reader and its one value check (tuner/profile_check.h): plot, report and
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
    m.config = parse_config_name(fm.config);
    m.median_ms = fm.timing->median_ms;
    m.stdev_ms = fm.timing->stdev_ms;
    if (fm.resources) m.registers = fm.resources->registers;
    m.counters = fm.counters;
    p.ok.push_back(std::move(m));
  }
  return p;
}

}  // namespace flashtune::plots
