// The parts of a profile (profiles/*.json, the tuner's schema v1: docs/profile-schema.md) that
// predict reads:
//   "coefficients": {"fp32_efficiency": 0.74, ...}       top level; fitted values by coefficient_table() name
//   "measurements": [{"config": "<config name>", "resources": {"registers": 96, ...}, ...}, ...]
//                                                          compiled registers per config
//   "kernel_resources": {"<config name>": {"registers": 96}, ...}   the same, as the tuner also
//                                                          writes it (and as a hand-written shorthand)
// All optional; anything else in the file is ignored. A config given two different register
// counts (two measurements, or a measurement and kernel_resources) is an error.
#pragma once

#include <map>
#include <string>

#include "model/coefficients.h"
#include "model/gpu_spec.h"

namespace flashtune::model {

struct ModelProfile {
  std::string path;
  Coefficients coefficients;
  std::map<std::string, int> registers;  // config name -> registers per thread
  int fitted_coefficients = 0;           // entries of "coefficients": 0 means the model's defaults
  std::string gpu_spec, gpu_name;        // "gpu": {"spec", "name"} when the profile says (may be empty)
  int registers_for(const std::string& config_name) const {
    auto it = registers.find(config_name);
    return it == registers.end() ? 0 : it->second;
  }
};

// Throws std::runtime_error with one line naming the file and the bad field
// ("p.json: unknown coefficient 'fp32_eff' (known: ...)", "p.json: coefficient 'x' = 7 outside [0.01, 1]").
ModelProfile load_model_profile(const std::string& path);

// The model's inputs for `gpu` unless told otherwise: the GPU's shipped profile
// (model/data_dir.h: profiles/<spec stem>.json in the data folder) when it exists and holds fitted
// coefficients, else an empty profile (no path: the spec sheet with the default coefficients and
// the traits' register estimates). `predict`, `run --auto` and the dispatcher start from it;
// spec-only prediction passes an empty ModelProfile instead. Throws like load_model_profile when
// the shipped file does not load.
ModelProfile default_model_profile(const GpuSpec& gpu);

}  // namespace flashtune::model
