// Reductions over one thread's own registers in K independent chains joined at the end:
// N / K + log2(K) dependent steps instead of N - 1, with K partial results live. The online
// softmax's row max and row sum sit on each warp's chain between its two products, and the few
// warps a scheduler holds (three consumers' and a producer's in the wgmma families) do not hide a
// 16-deep chain of dependent FMNMX or FADD. (A full halving tree holds all N partials at once and
// spilled in the tightest tiles, wgmma16 d = 128 with /pe; mma16 keeps its single chains: this form
// made ptxas spill its d = 32 Br = 64 Bc = 128 tiles, even with one chain.)
#pragma once

namespace flashtune::kernels {

// The maximum of value(j) over j < N in `Chains` chains, value called once per j in order.
template <int N, int Chains, class Value>
__device__ __forceinline__ float chained_max(Value value) {
  constexpr int K = N < Chains ? N : Chains;
  static_assert(N % K == 0, "chained_max: N a multiple of the chain count");
  float acc[K];
#pragma unroll
  for (int j = 0; j < N; ++j) acc[j % K] = j < K ? value(j) : fmaxf(acc[j % K], value(j));
#pragma unroll
  for (int w = K / 2; w > 0; w /= 2)
#pragma unroll
    for (int k = 0; k < w; ++k) acc[k] = fmaxf(acc[k], acc[k + w]);
  return acc[0];
}

// The sum of value(j) over j < N in `Chains` chains, value called once per j in order.
template <int N, int Chains, class Value>
__device__ __forceinline__ float chained_sum(Value value) {
  constexpr int K = N < Chains ? N : Chains;
  static_assert(N % K == 0, "chained_sum: N a multiple of the chain count");
  float acc[K];
#pragma unroll
  for (int j = 0; j < N; ++j) acc[j % K] = j < K ? value(j) : acc[j % K] + value(j);
#pragma unroll
  for (int w = K / 2; w > 0; w /= 2)
#pragma unroll
    for (int k = 0; k < w; ++k) acc[k] += acc[k + w];
  return acc[0];
}

}  // namespace flashtune::kernels
