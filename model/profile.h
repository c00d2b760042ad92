// What the model takes from a measured profile: the fitted coefficients, the compiled registers
// per config, and the GPU it was measured on. Plain data: the profile layer fills it from a
// profile file (profile/model_profile.h: load_model_profile, default_model_profile), so the model
// depends on no file format. An empty ModelProfile is the spec sheet with the default
// coefficients and the traits' register estimates.
#pragma once

#include <map>
#include <string>

#include "model/coefficients.h"

namespace flashtune::model {

struct ModelProfile {
  std::string path;                      // the file it came from; empty: no profile
  Coefficients coefficients;
  std::map<std::string, int> registers;  // config name -> registers per thread
  int fitted_coefficients = 0;           // entries of "coefficients": 0 means the model's defaults
  std::string gpu_spec, gpu_name;        // the GPU the profile was measured on (may be empty)
  int registers_for(const std::string& config_name) const {
    auto it = registers.find(config_name);
    return it == registers.end() ? 0 : it->second;
  }
};

}  // namespace flashtune::model
