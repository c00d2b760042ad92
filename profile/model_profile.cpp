#include "profile/model_profile.h"

#include <map>
#include <sstream>

#include "model/data_dir.h"
#include "model/prediction_json.h"

namespace flashtune {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what) { throw ProfileError(path + ": " + what); }

std::string format_number(double x) {
  std::ostringstream o;
  o << x;
  return o.str();
}

}  // namespace

model::ModelProfile model_profile_of(const Profile& p, const std::string& path) {
  model::ModelProfile m;
  m.path = path;
  // Named: `info` points into it after the loop (pointing into a temporary table was a
  // stack-use-after-scope that AddressSanitizer caught).
  const auto table = model::coefficient_table();
  for (auto it = p.coefficients.begin(); it != p.coefficients.end(); ++it) {
    const model::CoefficientInfo* info = nullptr;
    for (const model::CoefficientInfo& ci : table)
      if (it.key() == ci.name) info = &ci;
    if (!info) {
      std::string known;
      for (const model::CoefficientInfo& ci : table) known += (known.empty() ? "" : ", ") + std::string(ci.name);
      fail(path, "unknown coefficient '" + it.key() + "' (known: " + known + ")");
    }
    if (!it->is_number()) fail(path, "field 'coefficients." + it.key() + "' must be a number");
    const double v = it->get<double>();
    if (!(v >= info->min && v <= info->max))
      fail(path, "coefficient '" + it.key() + "' = " + format_number(v) + " outside [" + format_number(info->min) +
                     ", " + format_number(info->max) + "]");
    m.coefficients.*(info->member) = v;
    ++m.fitted_coefficients;
  }
  // Which GPU the profile was measured on: predict warns when it is not the --gpu asked for.
  m.gpu_spec = p.gpu.spec;
  m.gpu_name = p.gpu.name;
  // Registers per config (the reader checked each is in [0, 255]; 0: not recorded). One config is
  // one compiled kernel: two counts for it contradict each other.
  for (std::size_t i = 0; i < p.measurements.size(); ++i) {
    const Measurement& x = p.measurements[i];
    if (!x.resources || x.resources->registers <= 0) continue;
    const int regs = x.resources->registers;
    const auto [it, inserted] = m.registers.emplace(x.config, regs);
    if (!inserted && it->second != regs)
      fail(path, "config '" + x.config + "' has " + std::to_string(it->second) + " and " + std::to_string(regs) +
                     " registers (measurements[" + std::to_string(i) + "].resources.registers)");
  }
  return m;
}

model::ModelProfile load_model_profile(const std::string& path) { return model_profile_of(load_profile(path), path); }

model::ModelProfile default_model_profile(const model::GpuSpec& gpu) {
  const std::string path = model::shipped_profile_path(model::spec_stem(gpu));
  if (path.empty()) return {};
  model::ModelProfile p = load_model_profile(path);
  return p.fitted_coefficients > 0 ? p : model::ModelProfile{};
}

void set_coefficients(Profile& p, const model::Coefficients& k) { p.coefficients = model::coefficients_json(k); }

}  // namespace flashtune
