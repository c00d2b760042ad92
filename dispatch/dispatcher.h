// The dispatcher: which compiled kernel config runs a workload, decided once per workload and
// cached. Two sources, in order (docs/dispatch.md):
//   (a) the profile's measured best (profiles/<gpu>.json, schema v1) when the workload's B, N, d
//       and causal flag equal a measured workload's, and that config is compiled here and can run
//       on the device;
//   (b) otherwise the model's rank 1 (model/rank.h, with the profile's fitted coefficients and
//       compiled register counts) among the compiled configs of that d the device can run.
// Both only ever consider configs the asked precision admits: by default Precision::Fp32, the
// fp32-accurate ones (every SIMT variant and mma_3xtf32); mma_1xtf32 (TF32-accurate, rel L2 up to
// 1e-2) only when Precision::Tf32 is asked for. (a) is then the fastest admitted ok measurement.
// choose() is host-only: it reads the device's limits from the Dispatcher, never from CUDA, so it
// can be tested (and used for planning) on a machine without GPU.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/registry.h"
#include "kernels/traits/tile_config.h"
#include "model/gpu_spec.h"
#include "model/profile.h"
#include "profile/profile.h"

namespace flashtune {

// Why no config could be chosen; what() is one line naming the file or value.
class DispatchError : public std::runtime_error {
 public:
  enum class Kind {
    BadInput,      // profile missing or malformed, no GPU spec, d not compiled, B or N < 1
    Unsupported,   // no compiled config of that d can run the workload on the device
  };
  DispatchError(Kind kind, const std::string& what) : std::runtime_error(what), kind_(kind) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

// What a dispatcher reads from a profile: the GPU it was measured on, the measured workloads and
// their best configs, and the model's inputs (fitted coefficients, compiled register counts).
struct DispatchProfile {
  std::string path;
  std::string gpu_spec;  // configs/gpus stem of the measuring GPU ("nvidia-h200")
  std::vector<NamedWorkload> workloads;
  std::map<std::string, BestConfig> best;  // by workload name, any precision
  // By workload name, every ok measurement's config and median time: where the choice's precision
  // picks its best (the fastest config it admits).
  std::map<std::string, std::vector<BestConfig>> ok_measurements;
  model::ModelProfile model;
  // The shipped 16-bit companions folded in (model::shipped_companion_profile_path): their
  // workloads and measurements join the ones above; the model's coefficients stay this profile's.
  std::vector<std::string> companions;
};

// Throws DispatchError(BadInput, "<path>: cannot open profile") and the like, one line.
DispatchProfile load_dispatch_profile(const std::string& path);

// The profile a dispatcher reads when none is given. Shipped: the GPU's shipped profile,
// profiles/<spec stem>.json in the data folder (model/data_dir.h: model::shipped_profile_path),
// when that file exists, else none. SpecOnly: none, the model alone with the spec sheet and the
// default coefficients (`--spec-only`).
enum class ProfileDefault { Shipped, SpecOnly };

// A device's limits as its spec sheet gives them (global memory unknown: 0, not checked). What
// can_implement() checks when choosing for a GPU that is not present.
DeviceLimits device_limits_from_spec(const model::GpuSpec& spec);

enum class ChoiceSource { ProfileBest, Model };
const char* choice_source_name(ChoiceSource s);  // "profile-best" | "model"

struct Choice {
  TileConfig config;
  ChoiceSource source = ChoiceSource::Model;
  std::string workload_name;  // profile-best: the measured workload that matched
  double measured_ms = 0;     // profile-best: its median time in the profile
  double predicted_ms = 0;    // model: the model's time for the config
  int rank = 0;               // model: 1
  int candidates = 0;         // model: configs ranked (compiled, of that d, admitted by the precision, the device can run)
  Precision precision = Precision::Fp32;  // the accuracy asked for (the config's is at least as good)
  std::string note;           // a matched workload whose best was not usable, and why; else empty
  // The decode family (split-KV): the split count to launch, the model's (model::pick_decode_splits
  // with the profile's coefficients) whichever source chose the config; 0 for the other families.
  int splits = 0;
  // "profile best for t10, measured 0.3511 ms" | "model rank 1 of 39, predicted 0.3500 ms", and
  // for a decode config ", 16 splits (model)"
  std::string why() const;
};

class Dispatcher {
 public:
  // profile: optional (model only without it); spec: the GPU the model predicts for; device: what
  // can_implement() checks. Nothing is compared here: the caller says they belong together.
  Dispatcher(std::optional<DispatchProfile> profile, model::GpuSpec spec, DeviceLimits device);

  // Host-only: a profile path and/or a GPU ("h200", a configs/gpus stem, or a spec file *.json).
  // Without gpu, the profile's gpu.spec names it; with both, they must name the same GPU. Without
  // profile_path, `fallback` says which profile (ProfileDefault). The device limits come from the
  // spec. Throws DispatchError(BadInput), also for a profile_path given with SpecOnly.
  static Dispatcher from_files(const std::string& profile_path, const std::string& gpu = "",
                               ProfileDefault fallback = ProfileDefault::Shipped);

  // For a real device: its spec found by its name in configs/gpus, and `profile` when given, else
  // as `fallback` says (by default the shipped profiles/<spec>.json when that file exists, else the
  // model alone). A given profile measured on another GPU is refused. Throws
  // DispatchError(BadInput), also for a profile given with SpecOnly.
  static Dispatcher for_device(const DeviceLimits& device, std::optional<DispatchProfile> profile,
                               ProfileDefault fallback = ProfileDefault::Shipped);
  // The same after DeviceLimits::query(device) (throws std::runtime_error without a usable GPU)
  // and loading profile_path when not empty.
  static Dispatcher for_device(int device = 0, const std::string& profile_path = "",
                               ProfileDefault fallback = ProfileDefault::Shipped);

  // The config for `w` (scale is ignored: it does not change the speed) among the configs
  // `precision` admits: Fp32 (the default) never returns a TF32-accurate config (mma_1xtf32), Tf32
  // may. Cached per (B, N, keys, kv_group, d, causal, dtype, precision); thread-safe. Throws DispatchError (errors are not
  // cached).
  Choice choose(const Workload& w, Precision precision = Precision::Fp32) const;

  const DispatchProfile* profile() const { return profile_ ? &*profile_ : nullptr; }
  const model::GpuSpec& spec() const { return spec_; }
  const DeviceLimits& device() const { return device_; }
  // Workloads chosen so far (each chosen once).
  std::size_t cached_choices() const;

 private:
  Choice choose_uncached(const Workload& w, Precision precision) const;
  std::optional<Choice> profile_choice(const Workload& w, Precision precision, std::string& note) const;
  Choice model_choice(const Workload& w, Precision precision) const;

  std::optional<DispatchProfile> profile_;
  model::GpuSpec spec_;
  DeviceLimits device_;
  // B, N, keys, kv_group, d, causal, dtype, precision
  using Key = std::tuple<long long, long long, long long, int, int, bool, DType, Precision>;
  mutable std::mutex mutex_;
  mutable std::map<Key, Choice> cache_;
};

}  // namespace flashtune
