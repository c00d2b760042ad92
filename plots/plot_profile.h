// The parts of a tuner profile (schema v1, docs/profile-schema.md) that the plots read: the GPU,
// the workloads and every measurement with status "ok" (timing, counters, compiled registers).
// Host-only: a view over the one profile reader (profile/profile.h, flashtune_profile), so every
// command agrees on what a valid profile is.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "kernels/traits/tile_config.h"

namespace flashtune::plots {

struct ProfileWorkload {
  std::string name;
  Workload workload;
};

struct ProfileMeasurement {
  std::string workload_name;
  Workload workload;
  TileConfig config;
  double median_ms = 0;
  double stdev_ms = 0;
  int registers = 0;                       // 0: not recorded
  std::map<std::string, double> counters;  // CUPTI metric name -> value (empty when unavailable)
};

struct PlotProfile {
  std::string path;
  std::string gpu_name;  // "NVIDIA H200"
  std::string gpu_spec;  // "nvidia-h200" (configs/gpus stem), may be empty
  std::vector<ProfileWorkload> workloads;
  std::vector<ProfileMeasurement> ok;  // status "ok" with a positive median only
  int measurements_total = 0;
  int fitted_coefficients = 0;  // entries of the profile's "coefficients" (0: the model's defaults)
};

// Parses and checks `path` (profile/profile.h, profile/profile_check.h). Throws std::runtime_error
// (ProfileError) with one line naming the file and the bad field.
PlotProfile load_plot_profile(const std::string& path);

}  // namespace flashtune::plots
