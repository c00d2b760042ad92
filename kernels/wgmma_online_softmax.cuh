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

}  // namespace flashtune::kernels::wgmma_softmax
