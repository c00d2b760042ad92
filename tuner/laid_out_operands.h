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

  AttentionTensors tensors();
  // Poisons O with NaN, launches once, waits, and returns O gathered back to packed [B, N, d].
  std::vector<float> run_once(const KernelInstance& kernel, cudaStream_t stream);

 private:
  Workload w_;
  AttentionStrides strides_;
  // The laid-out buffers are dense (as many elements as the packed ones), so a 16-bit copy keeps
  // every element at the same index: q16_ etc. are q_ etc. rounded and encoded (empty for fp32),
  // and o_ is raw storage for O in any dtype.
  DeviceBuffer<float> q_, k_, v_, o_;
  DeviceBuffer<std::uint16_t> q16_, k16_, v16_;
};

}  // namespace flashtune
