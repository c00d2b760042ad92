#include "model/profile.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "model/data_dir.h"
#include "model/json_file.h"

namespace flashtune::model {
namespace {
[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::runtime_error(path + ": " + what);
}

std::string format_number(double x) {
  std::ostringstream o;
  o << x;
  return o.str();
}
}  // namespace

ModelProfile load_model_profile(const std::string& path) {
  const nlohmann::json doc = read_json_file(path);
  if (!doc.is_object()) fail(path, "top level must be a JSON object");
  ModelProfile p;
  p.path = path;
  if (auto co = doc.find("coefficients"); co != doc.end()) {
    if (!co->is_object()) fail(path, "field 'coefficients' must be an object");
    // Named: `info` points into it after the loop (the table is returned by value; pointing into
    // the loop's temporary was a stack-use-after-scope that AddressSanitizer caught).
    const auto table = coefficient_table();
    for (auto it = co->begin(); it != co->end(); ++it) {
      const CoefficientInfo* info = nullptr;
      for (const CoefficientInfo& ci : table)
        if (it.key() == ci.name) info = &ci;
      if (!info) {
        std::string known;
        for (const CoefficientInfo& ci : coefficient_table()) known += (known.empty() ? "" : ", ") + std::string(ci.name);
        fail(path, "unknown coefficient '" + it.key() + "' (known: " + known + ")");
      }
      if (!it->is_number()) fail(path, "field 'coefficients." + it.key() + "' must be a number");
      const double v = it->get<double>();
      if (!(v >= info->min && v <= info->max))
        fail(path, "coefficient '" + it.key() + "' = " + format_number(v) + " outside [" + format_number(info->min) +
                       ", " + format_number(info->max) + "]");
      p.coefficients.*(info->member) = v;
      ++p.fitted_coefficients;
    }
  }
  // Which GPU the profile was measured on: predict warns when it is not the --gpu asked for.
  if (auto g = doc.find("gpu"); g != doc.end() && g->is_object()) {
    if (auto s = g->find("spec"); s != g->end() && s->is_string()) p.gpu_spec = s->get<std::string>();
    if (auto n = g->find("name"); n != g->end() && n->is_string()) p.gpu_name = n->get<std::string>();
  }
  // Registers per config: a value must be an integer in [1, 255]; the same config twice must agree.
  auto add_registers = [&](const std::string& config, const nlohmann::json& value, const std::string& field) {
    const auto checked = json_integer_in(value, 1, 255);
    if (!checked) fail(path, "field '" + field + "' must be an integer in [1, 255]");
    const int regs = static_cast<int>(*checked);
    auto [it, inserted] = p.registers.emplace(config, regs);
    if (!inserted && it->second != regs)
      fail(path, "config '" + config + "' has " + std::to_string(it->second) + " and " + std::to_string(regs) +
                     " registers (" + field + ")");
  };
  if (auto ms = doc.find("measurements"); ms != doc.end()) {
    if (!ms->is_array()) fail(path, "field 'measurements' must be an array");
    for (std::size_t i = 0; i < ms->size(); ++i) {
      const nlohmann::json& m = (*ms)[i];
      const std::string at = "measurements[" + std::to_string(i) + "]";
      if (!m.is_object()) fail(path, "field '" + at + "' must be an object");
      auto res = m.find("resources");
      if (res == m.end()) continue;  // a config that did not compile or launch has none
      if (!res->is_object()) fail(path, "field '" + at + ".resources' must be an object");
      auto r = res->find("registers");
      if (r == res->end()) continue;
      auto config = m.find("config");
      if (config == m.end() || !config->is_string() || config->get<std::string>().empty())
        fail(path, "field '" + at + ".config' must be a config name (it has resources)");
      add_registers(config->get<std::string>(), *r, at + ".resources.registers");
    }
  }
  if (auto kr = doc.find("kernel_resources"); kr != doc.end()) {
    if (!kr->is_object()) fail(path, "field 'kernel_resources' must be an object keyed by config name");
    for (auto it = kr->begin(); it != kr->end(); ++it) {
      auto r = it->find("registers");
      if (!it->is_object() || r == it->end()) fail(path, "missing field 'kernel_resources." + it.key() + ".registers'");
      add_registers(it.key(), *r, "kernel_resources." + it.key() + ".registers");
    }
  }
  return p;
}

ModelProfile default_model_profile(const GpuSpec& gpu) {
  const std::string path = shipped_profile_path(spec_stem(gpu));
  if (path.empty()) return {};
  ModelProfile p = load_model_profile(path);
  return p.fitted_coefficients > 0 ? p : ModelProfile{};
}

}  // namespace flashtune::model
