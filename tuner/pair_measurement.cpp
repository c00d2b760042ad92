#include "tuner/pair_measurement.h"
#include "model/number_text.h"

#include <cstdio>
#include <optional>
#include <utility>

#include "kernels/cuda_check.h"
#include "kernels/decode_api.h"

namespace flashtune {

PairMeasurement::PairMeasurement(int device, const DeviceLimits& limits, const HarnessOptions& options)
    : device_(device), limits_(limits), harness_(device, options) {}

void PairMeasurement::select_device() {
  // Each tune worker thread measures on its own device; the current device is per thread.
  FLASHTUNE_CUDA_CHECK(cudaSetDevice(device_));
}

void PairMeasurement::note_cuda_error(const std::string& after) {
  cudaGetLastError();  // clear a non-sticky error, so that it is not blamed on the next call
  const cudaError_t err = cudaDeviceSynchronize();
  if (err != cudaSuccess)
    unusable_ = "device " + std::to_string(device_) + ": CUDA context lost after " + after + " (" +
                cudaGetErrorName(err) + "); rerun the same command to resume";
}

void PairMeasurement::drop_inputs() {
  laid_out_.reset();
  inputs_.reset();
  out_ = DeviceBuffer<float>();
  reference_.reset();
}

void PairMeasurement::use_random_inputs(const Workload& w, float range, std::uint64_t seed) {
  select_device();
  drop_inputs();
  try {
    inputs_ = random_inputs(w, -range, range, seed, harness_.stream());
    out_ = DeviceBuffer<float>(inputs_->elements());
  } catch (const CudaError&) {
    drop_inputs();
    throw;
  }
}

void PairMeasurement::use_host_inputs(const Workload& w, const std::vector<float>& q, const std::vector<float>& k,
                                      const std::vector<float>& v) {
  select_device();
  drop_inputs();
  try {
    inputs_ = upload_inputs(w, q, k, v);
    out_ = DeviceBuffer<float>(inputs_->elements());
  } catch (const CudaError&) {
    drop_inputs();
    throw;
  }
}

void PairMeasurement::use_layout(TensorLayout layout, long long heads) {
  if (!inputs_) throw CudaError("use_layout before the inputs");
  laid_out_.reset();
  if (layout != TensorLayout::Bnd) laid_out_.emplace(*inputs_, layout, heads, harness_.stream());
}

const std::vector<double>& PairMeasurement::reference() {
  if (!inputs_) throw CudaError("reference before the inputs");
  if (!reference_) reference_ = reference_on_host(*inputs_, harness_.stream());
  return *reference_;
}

AttentionTensors PairMeasurement::tensors() {
  if (laid_out_) return laid_out_->tensors();
  return AttentionTensors::packed(inputs_->q_operand(), inputs_->k_operand(), inputs_->v_operand(), out_.data(),
                                  inputs_->workload);
}

cudaError_t PairMeasurement::launch(const KernelInstance& kernel) {
  return kernel.launch(tensors(), inputs_->workload, harness_.stream());
}

namespace {

// A decode instance whose registry launch takes a given split count (DecodeKernel::launch_decode)
// instead of the traits' default; everything else is the instance's.
class DecodeWithSplits final : public KernelInstance {
 public:
  DecodeWithSplits(const KernelInstance& k, const DecodeKernel& d, int splits) : k_(k), d_(d), splits_(splits) {}
  const TileConfig& config() const override { return k_.config(); }
  Support can_implement(const Workload& w, const DeviceLimits& dev) const override { return k_.can_implement(w, dev); }
  Support can_address(const AttentionTensors& t, const Workload& w) const override { return k_.can_address(t, w); }
  using KernelInstance::launch;
  cudaError_t launch(const AttentionTensors& t, const Workload& w, cudaStream_t stream) const override {
    if (!check_tensors(t, w)) return cudaErrorInvalidValue;
    return d_.launch_decode(decode_problem(t, w), splits_, stream);
  }
  KernelResources resources() const override { return k_.resources(); }

 private:
  const KernelInstance& k_;
  const DecodeKernel& d_;
  int splits_;
};

}  // namespace

PairResult PairMeasurement::measure(const TileConfig& c, const PairOptions& options) {
  select_device();
  PairResult r;
  r.config = c;
  r.tolerance = c.dtype != DType::Fp32 ? rel_l2_tolerance(c.dtype) : rel_l2_tolerance(variant_precision(c.variant));
  const KernelInstance* kernel = find_kernel(c);
  if (!kernel) {
    r.status = status::kCompile;
    r.reason = "not compiled into this build";
    return r;
  }
  std::optional<DecodeWithSplits> with_splits;
  if (const DecodeKernel* d = as_decode(kernel); d && options.decode_splits > 0) {
    with_splits.emplace(*kernel, *d, options.decode_splits);
    kernel = &*with_splits;
  }
  r.resources = kernel->resources();
  if (!inputs_) throw CudaError("measure(" + c.name() + ") before the inputs");
  const Workload& w = inputs_->workload;
  const Support support = kernel->can_implement(w, limits_);
  if (!support) {
    r.status = status::kResources;
    r.reason = support.reason;
    return r;
  }
  try {
    std::vector<float> out = laid_out_ ? laid_out_->run_once(*kernel, harness_.stream())
                                       : run_once(*kernel, *inputs_, out_, harness_.stream());
    if (options.verify) {
      r.check = compare_to_reference(out.data(), reference().data(), out.size());
      if (!r.check->passes(r.tolerance)) {
        r.status = status::kWrongResult;
        r.reason = "rel_l2 " + number_text(r.check->rel_l2) + " (tolerance " + number_text(r.tolerance) + "), " +
                   std::to_string(r.check->nonfinite) + " non-finite";
      }
    }
    if (options.keep_output) r.output = std::move(out);
    if (options.time && (r.ok() || options.time_wrong_results)) {
      const AttentionTensors t = tensors();
      r.timing = harness_.time([=](cudaStream_t stream) { return kernel->launch(t, w, stream); });
      if (r.timing->stats.median_ms > 0) r.tflops = w.nominal_flops() / (r.timing->stats.median_ms * 1e-3) / 1e12;
    }
  } catch (const CudaError& e) {
    r.status = status::kLaunch;
    r.reason = e.what();
    r.timing.reset();
    r.tflops = 0;
    note_cuda_error(c.name());
  }
  return r;
}

}  // namespace flashtune
