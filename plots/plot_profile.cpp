#include "plots/plot_profile.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <stdexcept>

namespace flashtune::plots {
namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::runtime_error(path + ": " + what);
}

const json& field(const json& obj, const char* key, const std::string& path, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end()) fail(path, where + "missing field '" + key + "'");
  return *it;
}

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

Workload workload_from(const json& j, const std::string& path, const std::string& where) {
  Workload w;
  w.B = field(j, "B", path, where).get<long long>();
  w.N = field(j, "N", path, where).get<long long>();
  w.d = field(j, "d", path, where).get<int>();
  w.causal = j.value("causal", false);
  w.scale = j.value("scale", 0.0f);
  if (w.B < 1 || w.N < 1 || w.d < 1) fail(path, where + "B, N and d must be >= 1");
  return w;
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
  std::ifstream in(path);
  if (!in) fail(path, "cannot open file");
  json doc;
  try {
    doc = json::parse(in);
  } catch (const json::exception& e) {
    fail(path, std::string("malformed JSON: ") + e.what());
  }
  PlotProfile p;
  p.path = path;
  try {
    if (doc.value("kind", std::string()) != "flashtune-profile")
      fail(path, "field 'kind' is not \"flashtune-profile\"");
    const json& gpu = field(doc, "gpu", path, "");
    p.gpu_name = field(gpu, "name", path, "gpu: ").get<std::string>();
    p.gpu_spec = gpu.value("spec", std::string());
    if (auto k = doc.find("coefficients"); k != doc.end() && k->is_object()) p.fitted_coefficients = int(k->size());
    std::map<std::string, Workload> by_name;
    for (const json& jw : field(doc, "workloads", path, "")) {
      ProfileWorkload w;
      w.name = field(jw, "name", path, "workload: ").get<std::string>();
      w.workload = workload_from(jw, path, "workload '" + w.name + "': ");
      by_name[w.name] = w.workload;
      p.workloads.push_back(w);
    }
    int index = 0;
    for (const json& jm : field(doc, "measurements", path, "")) {
      const std::string where = "measurement " + std::to_string(index++) + ": ";
      ++p.measurements_total;
      if (jm.value("status", std::string()) != "ok") continue;
      ProfileMeasurement m;
      m.workload_name = field(jm, "workload", path, where).get<std::string>();
      auto w = by_name.find(m.workload_name);
      if (w == by_name.end()) fail(path, where + "unknown workload '" + m.workload_name + "'");
      m.workload = w->second;
      try {
        m.config = parse_config_name(field(jm, "config", path, where).get<std::string>());
      } catch (const std::invalid_argument& e) {
        fail(path, where + e.what());
      }
      if (m.config.d != m.workload.d)
        fail(path, where + "config " + m.config.name() + " has d=" + std::to_string(m.config.d) + " but workload '" +
                       m.workload_name + "' has d=" + std::to_string(m.workload.d));
      const json& timing = field(jm, "timing", path, where);
      m.median_ms = field(timing, "median_ms", path, where + "timing: ").get<double>();
      m.stdev_ms = timing.value("stdev_ms", 0.0);
      if (!(m.median_ms > 0)) fail(path, where + "timing.median_ms must be > 0 for status ok");
      if (auto r = jm.find("resources"); r != jm.end() && r->is_object()) m.registers = r->value("registers", 0);
      if (auto c = jm.find("counters"); c != jm.end() && c->is_object())
        for (auto it = c->begin(); it != c->end(); ++it)
          if (it->is_number()) m.counters[it.key()] = it->get<double>();
      p.ok.push_back(std::move(m));
    }
  } catch (const json::exception& e) {
    fail(path, std::string("bad field type: ") + e.what());
  }
  return p;
}

}  // namespace flashtune::plots
