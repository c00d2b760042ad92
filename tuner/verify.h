// Inputs on the device, one checked run of a kernel, and the comparison with the double
// reference: every element, output poisoned with NaN first so an unwritten element fails.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "kernels/reference.h"
#include "kernels/registry.h"
#include "tuner/device_buffer.h"

namespace flashtune {

struct AttentionInputs {
  Workload workload;
  // q: B*N*d floats, [B, N, d] row-major; k, v: kv_elements(w) floats, [B / kv_group, keys, d]
  // (AttentionStrides::packed): the values the reference reads. For a 16-bit workload
  // they are rounded to its dtype, and q16, k16, v16 hold the same values encoded as the kernels
  // read them; empty for fp32.
  DeviceBuffer<float> q, k, v;
  DeviceBuffer<std::uint16_t> q16, k16, v16;
  std::size_t elements() const { return q.size(); }
  bool narrow() const { return workload.dtype != DType::Fp32; }
  // The operands a kernel of the workload's dtype reads.
  const void* q_operand() const { return narrow() ? static_cast<const void*>(q16.data()) : q.data(); }
  const void* k_operand() const { return narrow() ? static_cast<const void*>(k16.data()) : k.data(); }
  const void* v_operand() const { return narrow() ? static_cast<const void*>(v16.data()) : v.data(); }
};

// Rounds the inputs to the workload's dtype and encodes them (nothing for fp32); see AttentionInputs.
void narrow_inputs(AttentionInputs& in, cudaStream_t stream);
// O as floats after a launch that wrote `raw` in the workload's dtype (a 16-bit O is widened into
// `scratch`, which must hold as many floats): what the comparison with the reference reads.
const float* output_as_float(DeviceBuffer<float>& raw, DeviceBuffer<float>& scratch, const Workload& w,
                             cudaStream_t stream);

// Elements of Q (and O): B N d.
std::size_t attention_elements(const Workload& w);
// Elements of K (and V): (B / kv_group) keys d, one copy per K/V head.
std::size_t kv_elements(const Workload& w);

// Q, K and V uniform in [lo, hi]; each tensor gets its own stream of the hash (seed, tensor).
AttentionInputs random_inputs(const Workload& w, float lo, float hi, std::uint64_t seed, cudaStream_t stream);
// Q from a host array of attention_elements(w) floats, K and V of kv_elements(w) each.
AttentionInputs upload_inputs(const Workload& w, const std::vector<float>& q, const std::vector<float>& k,
                              const std::vector<float>& v);

// attention_reference_gpu (double accumulation) on the inputs, copied to the host.
std::vector<double> reference_on_host(const AttentionInputs& in, cudaStream_t stream);

// Poisons `o` with NaN, launches the kernel once, waits, and returns O on the host (as floats).
// `o` holds B*N*d floats: raw storage for O in any dtype (a 16-bit O fills its first half).
// Throws CudaError when the launch or the kernel fails.
std::vector<float> run_once(const KernelInstance& kernel, const AttentionInputs& in, DeviceBuffer<float>& o,
                            cudaStream_t stream);

// Fresh random inputs, one run, every element compared with the GPU double reference.
ErrorStats verify_on_random_inputs(const KernelInstance& kernel, const Workload& w, float lo, float hi,
                                   std::uint64_t seed);

}  // namespace flashtune
