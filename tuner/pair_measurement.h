// Measuring one (workload, config) pair, the one way `run` and `tune` share (docs/measurement.md):
// the operands are prepared on the device once per workload (random values or given ones,
// optionally copied into a strided memory layout) with the double reference computed on first use;
// per config: the registry and can_implement on this device, one launch into an output poisoned
// with NaN, every element compared with the reference, and the harness's timing. A config's failure
// is a status of the profile's vocabulary (profile/profile.h's status::), never an exception: an
// exception means the session itself cannot go on.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernels/reference.h"
#include "kernels/registry.h"
#include "kernels/traits/tensor_strides.h"
#include "profile/profile.h"
#include "tuner/laid_out_operands.h"
#include "tuner/timing_harness.h"
#include "tuner/verify.h"

namespace flashtune {

struct PairOptions {
  bool verify = true;  // compare every element of O with the double reference
  bool time = true;    // time with the harness after the checked launch
  // A config that fails verification is timed all the same. `tune` never records a time of a wrong
  // result; `run` shows what was asked for (the time of a kernel under repair is still worth seeing).
  bool time_wrong_results = false;
  bool keep_output = false;  // O of the checked launch, packed [B, N, d], in PairResult::output
  // A decode config: the split count to launch with (the dispatcher's, for `run --auto`); 0: the
  // registry's launch (the traits' default). Ignored for the other families.
  int decode_splits = 0;
};

struct PairResult {
  TileConfig config;
  std::string status = status::kOk;  // status::kOk, kCompile, kResources, kWrongResult or kLaunch
  std::string reason;                // one line when status is not ok
  std::optional<KernelResources> resources;  // the compiled kernel's resources, when it is in the registry
  std::optional<ErrorStats> check;           // with PairOptions::verify
  double tolerance = 0;                      // rel L2 the config's precision allows
  std::optional<TimingResult> timing;
  double tflops = 0;            // nominal FLOPs over the median time, 0 when not timed
  std::vector<float> output;    // with PairOptions::keep_output
  bool ok() const { return status == status::kOk; }
  // The config ran on the device (it was compiled and fits it), whatever came of it.
  bool ran() const { return status != status::kCompile && status != status::kResources; }
};

class PairMeasurement {
 public:
  // A harness on `device` (stream, L2 flush buffer, events); `limits` as DeviceLimits::query gave
  // them. Throws CudaError when the device cannot be set up.
  PairMeasurement(int device, const DeviceLimits& limits, const HarnessOptions& options);
  PairMeasurement(const PairMeasurement&) = delete;
  PairMeasurement& operator=(const PairMeasurement&) = delete;

  // The operands of the next pairs, replacing any before (and their reference). Q, K and V uniform
  // in [-range, range] from `seed`, or the given host arrays of attention_elements(w) floats each.
  // Throws CudaError (the inputs are then dropped; note_cuda_error() tells whether the context survived).
  void use_random_inputs(const Workload& w, float range, std::uint64_t seed);
  void use_host_inputs(const Workload& w, const std::vector<float>& q, const std::vector<float>& k,
                       const std::vector<float>& v);
  // The kernels read and write the operands in `layout` (B = batch x heads); bnd is the packed
  // default. After the inputs; throws CudaError.
  void use_layout(TensorLayout layout, long long heads);
  void drop_inputs();
  bool has_inputs() const { return inputs_.has_value(); }
  const Workload& workload() const { return inputs_->workload; }
  // The double reference of the current inputs, computed once. Throws CudaError.
  const std::vector<double>& reference();

  // One pair on the current inputs. Throws CudaError only when there are none (a caller's mistake)
  // or the device cannot be selected.
  PairResult measure(const TileConfig& c, const PairOptions& options);
  // One launch of `kernel` on the current operands (no poisoning, no wait): the counter passes.
  cudaError_t launch(const KernelInstance& kernel);

  // False once a CUDA error has lost the context (illegal address, ...): every later call would
  // fail, so a tune stops and is resumed by a fresh process. unusable_reason() says why.
  bool usable() const { return unusable_.empty(); }
  const std::string& unusable_reason() const { return unusable_; }
  // After a CUDA error outside measure() (preparing inputs, a counter pass): clears a non-sticky error; a
  // sticky one makes the session unusable, naming `after`.
  void note_cuda_error(const std::string& after);

  const DeviceLimits& limits() const { return limits_; }
  int device() const { return device_; }
  cudaStream_t stream() const { return harness_.stream(); }
  const HarnessOptions& harness_options() const { return harness_.options(); }

 private:
  void select_device();
  AttentionTensors tensors();

  int device_;
  DeviceLimits limits_;
  TimingHarness harness_;
  std::optional<AttentionInputs> inputs_;
  DeviceBuffer<float> out_;
  std::optional<LaidOutOperands> laid_out_;
  std::optional<std::vector<double>> reference_;
  std::string unusable_;
};

}  // namespace flashtune
