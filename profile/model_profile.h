// The model's view of a profile: model::ModelProfile (fitted coefficients, compiled registers per
// config, the GPU it was measured on) from the one profile reader (profile/profile.h), and the
// coefficients written back into a profile (fit). model/ stays below profile/: a profile becomes
// model types here. Host-only.
#pragma once

#include <string>

#include "model/coefficients.h"
#include "model/gpu_spec.h"
#include "model/profile.h"
#include "profile/profile.h"

namespace flashtune {

// load_profile(path) seen by the model. Throws ProfileError (a std::runtime_error) with one line
// naming the file and the bad field: the reader's own checks, an unknown coefficient
// ("p.json: unknown coefficient 'fp32_eff' (known: ...)"), one outside its range
// ("p.json: coefficient 'x' = 7 outside [0.01, 1]"), a config measured with two register counts.
model::ModelProfile load_model_profile(const std::string& path);
// The same view of a profile already read from `path`.
model::ModelProfile model_profile_of(const Profile& p, const std::string& path);

// The model's inputs for `gpu` unless told otherwise: the GPU's shipped profile
// (model/data_dir.h: profiles/<spec stem>.json in the data folder) when it exists and holds fitted
// coefficients, else an empty profile (no path: the spec sheet with the default coefficients and
// the traits' register estimates). `predict`, `run --auto` and the dispatcher start from it;
// spec-only prediction passes an empty ModelProfile instead. Throws like load_model_profile when
// the shipped file does not load.
model::ModelProfile default_model_profile(const model::GpuSpec& gpu);

// Every coefficient of `k` (fitted and fixed) into the profile's "coefficients", by
// coefficient_table() name: what model_profile_of() reads back.
void set_coefficients(Profile& p, const model::Coefficients& k);

}  // namespace flashtune
