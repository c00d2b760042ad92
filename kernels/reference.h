// Reference attention in double precision, and the comparison every check uses.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "kernels/traits/tile_config.h"

namespace flashtune {

// Operands packed: Q and O [B, N, d], K and V [B / kv_group, keys, d] (query entry e reads K/V
// entry e / kv_group: AttentionStrides::packed's addresses). Causal is bottom-right aligned.

// CPU, double throughout; O(B N keys d): for small cases.
void attention_reference_cpu(const float* q, const float* k, const float* v, double* o, const Workload& w);

// GPU, products and sums accumulated in double, for large cases. Device pointers; o holds
// B*N*d doubles. Returns the launch error (cudaErrorInvalidValue for a shape it refuses).
cudaError_t attention_reference_gpu(const float* q, const float* k, const float* v, double* o,
                                    const Workload& w, cudaStream_t stream);

struct ErrorStats {
  double max_abs = 0;        // max |out - ref|
  double rel_l2 = 0;         // ||out - ref||_2 / ||ref||_2
  long long nonfinite = 0;   // NaN or Inf in out (a poisoned, unwritten element shows here)
  long long count = 0;
  bool passes(double rel_l2_tol) const { return nonfinite == 0 && rel_l2 <= rel_l2_tol; }
};
ErrorStats compare_to_reference(const float* out, const double* ref, std::size_t n);

// The project's accuracy bar for fp32 kernels against the double reference.
inline constexpr double kRelL2Tolerance = rel_l2_tolerance(Precision::Fp32);

}  // namespace flashtune
