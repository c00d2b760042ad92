// The packed [B, N, d] inputs copied into a named memory layout (kernels/traits/tensor_strides.h),
// with O in the same layout: what `run --qkv-layout` times, so that a layout's cost is measured
// on the same values the packed launch sees.
#pragma once

#include <cuda_runtime_api.h>

#include <vector>

#include "kernels/registry.h"
#include "kernels/traits/tensor_strides.h"
#include "tuner/device_buffer.h"
#include "tuner/verify.h"

namespace flashtune {

class LaidOutOperands {
 public:
  // Copies in's Q, K and V (B = batch x heads entries) into `layout`; O is allocated in it.
  // Throws CudaError on a failed copy or allocation.
  LaidOutOperands(const AttentionInputs& in, TensorLayout layout, long long heads, cudaStream_t stream);

  AttentionTensors tensors() { return {q_.data(), k_.data(), v_.data(), o_.data(), strides_}; }
  // Poisons O with NaN, launches once, waits, and returns O gathered back to packed [B, N, d].
  std::vector<float> run_once(const KernelInstance& kernel, cudaStream_t stream);

 private:
  Workload w_;
  AttentionStrides strides_;
  DeviceBuffer<float> q_, k_, v_, o_;
};

}  // namespace flashtune
