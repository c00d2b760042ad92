// The measurements a fit learns from: every "ok" measurement of a profile as (workload, config,
// measured median), with the config's geometry analysis and compiled register count ready for the
// model. Config names come from the profile, so the kernel set this binary was built with does not
// matter: the model only needs the traits.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/traits/tile_config.h"
#include "model/config_catalog.h"
#include "model/decode_model.h"
#include "model/gpu_spec.h"
#include "profile/profile.h"

namespace flashtune::fit {

struct FitPoint {
  std::string workload, config;  // names as in the profile
  Workload w;
  TileConfig c;
  const model::GeometryAnalysis* geometry = nullptr;  // owned by the dataset's catalog
  int registers = 0;                                  // compiled registers per thread (0: estimate)
  double measured_s = 0;                              // median
  // Decode family: the split count the measurement launched (0: the traits' default, as a
  // profile's config name holds no split). fit/decode_sweeps.h fills it.
  int splits = 0;
  // Decode family: how the timed launch ran (decode_bench's "evict_first", false on a sweep line
  // that predates the policy; "flush": "read" left L2 clean, a line without it was flushed with
  // writes). Unset evict_first: the traits' rule.
  model::DecodeRunState decode_run;
};

struct FitDataset {
  std::string source;  // the profile's path
  model::GpuSpec gpu;
  std::vector<FitPoint> points;
  std::vector<std::string> skipped;  // "<workload> <config>: why" (the model refuses it)
  std::shared_ptr<model::ConfigCatalog> catalog;
  // The catalogs of the datasets joined into this one (join_fit_datasets): their points' geometry.
  std::vector<std::shared_ptr<model::ConfigCatalog>> joined_catalogs;

  std::vector<std::string> workload_names() const;  // in first-seen order
  std::vector<const FitPoint*> all() const;
};

// Thrown for a profile a fit cannot use; what() is one line naming the file.
class FitInputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Reads the profile and its GPU's spec (configs/gpus, by the profile's gpu.spec). Throws
// FitInputError: schema version other than 1 ("... schema_version 2; this flashtune reads 1"),
// an unknown spec, a config name that does not parse.
FitDataset load_fit_dataset(const std::string& profile_path, const std::string& spec_dir);
// The same from a loaded profile and a spec (tests).
FitDataset make_fit_dataset(const Profile& p, const std::string& source, const model::GpuSpec& gpu);

// Appends `other`'s points to `into`: another profile of the same GPU (a companion sweep of another
// element type or family, e.g. profiles/<gpu>-bf16.json beside profiles/<gpu>.json), fitted as one
// set. Throws FitInputError naming `other` when its GPU spec differs or a (workload, config) pair
// is in both.
void join_fit_datasets(FitDataset& into, FitDataset other);

// Keeps only the points of these variants (all when empty); the rest go to `skipped`.
void keep_variants(FitDataset& ds, const std::vector<Variant>& variants);

}  // namespace flashtune::fit
