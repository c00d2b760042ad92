// The online softmax of the wgmma families (wgmma16, wgmma_3xtf32 / wgmma_1xtf32) on a consumer
// warpgroup's S accumulator: an m64nBc fp32 fragment, of which each thread holds rows g and g + 8
// of its warp's 16 (h = 0, 1) at elements 4 j + 2 h and 4 j + 2 h + 1 of S[Bc / 2], a row spread
// over the 4 lanes of a quad. Both families keep the running max m and this lane's share of the
// row sum l in fp32 and rescale O by alpha after (their own P packing and O layout differ).
// Compiled for sm_90a with the families that include it.
#pragma once

#include <cuda_runtime.h>

#include <cmath>

namespace flashtune::kernels::wgmma_softmax {

__device__ __forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// The tile's scores s (unscaled, masked ones at -inf) to probabilities in place, with the scale
// log2(e) / sqrt(d) folded into each exponent (sl2e), and per row h the new running max m_run, the
// rescale alpha that O owes for it and l_run = l_run alpha + this lane's sum. A row with every
// score so far masked keeps m = -inf; its exponent then subtracts 0, so exp2 stays 0.
template <int BC>
__device__ __forceinline__ void update_rows(float (&s)[BC / 2], float (&m_run)[2], float (&l_run)[2], float (&alpha)[2],
                                            float sl2e) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float mx = -INFINITY;
#pragma unroll
    for (int j = 0; j < BC / 8; ++j) mx = fmaxf(mx, fmaxf(s[4 * j + 2 * h], s[4 * j + 2 * h + 1]));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const float m_new = fmaxf(m_run[h], mx);
    const float m_scaled = m_new == -INFINITY ? 0.0f : m_new * sl2e;
    alpha[h] = exp2_approx(fmaf(m_run[h], sl2e, -m_scaled));
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < BC / 8; ++j) {
      s[4 * j + 2 * h] = exp2_approx(fmaf(s[4 * j + 2 * h], sl2e, -m_scaled));
      s[4 * j + 2 * h + 1] = exp2_approx(fmaf(s[4 * j + 2 * h + 1], sl2e, -m_scaled));
      sum += s[4 * j + 2 * h] + s[4 * j + 2 * h + 1];
    }
    l_run[h] = fmaf(l_run[h], alpha[h], sum);
    m_run[h] = m_new;
  }
}

// The lazy rescale (wgmma16): a row keeps its running max as the exponent's reference while the
// tile's max exceeds it by at most kLazyRescaleLog2 in exp2 units, so that its probabilities stay
// below 2^8 (exact in fp32 and in the 16-bit P alike: only the exponent moves, and fp16 holds
// 65504), and l and O, which share that reference, owe no rescale. Only when some row of the warp
// grows past it does the warp take the exact update of update_rows and rescale O; the vote makes
// that branch warp-uniform, so skipped rescales are instructions not issued rather than
// predicated off. Once a row has seen its large scores (the first tiles, or the diagonal under
// causal) the max seldom moves by 2^8 again, and O *= alpha (d / 2 FMUL per thread and tile) is
// the part of the softmax that waits for the previous tile's P V (kernels/wgmma16.cuh).
constexpr float kLazyRescaleLog2 = 8.0f;

// update_rows with the lazy rescale: returns whether O owes alpha (the same for every lane of the
// warp); where it does not, alpha is left unset and m_run unchanged.
template <int BC>
__device__ __forceinline__ bool update_rows_lazy(float (&s)[BC / 2], float (&m_run)[2], float (&l_run)[2],
                                                 float (&alpha)[2], float sl2e) {
  float mx[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    mx[h] = -INFINITY;
#pragma unroll
    for (int j = 0; j < BC / 8; ++j) mx[h] = fmaxf(mx[h], fmaxf(s[4 * j + 2 * h], s[4 * j + 2 * h + 1]));
    mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 1));
    mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 2));
  }
  // A row's first scores (m = -inf) always grow it; a row with every score so far masked (both
  // -inf: NaN) never does, and keeps m = -inf with exponents that subtract 0.
  const bool grows = (mx[0] - m_run[0]) * sl2e > kLazyRescaleLog2 || (mx[1] - m_run[1]) * sl2e > kLazyRescaleLog2;
  const bool rescale = __any_sync(0xffffffffu, grows);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const float m_new = rescale ? fmaxf(m_run[h], mx[h]) : m_run[h];
    const float m_scaled = m_new == -INFINITY ? 0.0f : m_new * sl2e;
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < BC / 8; ++j) {
      s[4 * j + 2 * h] = exp2_approx(fmaf(s[4 * j + 2 * h], sl2e, -m_scaled));
      s[4 * j + 2 * h + 1] = exp2_approx(fmaf(s[4 * j + 2 * h + 1], sl2e, -m_scaled));
      sum += s[4 * j + 2 * h] + s[4 * j + 2 * h + 1];
    }
    if (rescale) {
      alpha[h] = exp2_approx(fmaf(m_run[h], sl2e, -m_scaled));
      l_run[h] = fmaf(l_run[h], alpha[h], sum);
    } else {
      l_run[h] += sum;
    }
    m_run[h] = m_new;
  }
  return rescale;
}

}  // namespace flashtune::kernels::wgmma_softmax
