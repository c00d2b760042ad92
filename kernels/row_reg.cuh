// row_reg kernel: one thread per query row, Q and O rows in float4 registers, K and V tiles in
// shared memory (float4 broadcast reads), scores in a transposed tile S^T[j][row].
// See kernels/traits/row_reg_traits.h and docs/kernels.md.
#pragma once

#include "kernels/attention_params.cuh"
#include "kernels/traits/row_reg_traits.h"

namespace flashtune::kernels {

template <int D, int BR, int BC, Layout L>
__global__ void __launch_bounds__(traits::RowReg::Tile<D, BR, BC, L>::kThreads, 1)
    row_reg_kernel(const AttentionParams p) {
  using T = traits::RowReg::Tile<D, BR, BC, L>;
  constexpr bool kHeavyFirst = traits::RowReg::kCausalHeavyFirst;
  extern __shared__ float4 smem4[];
  float* smem = reinterpret_cast<float*>(smem4);
  const float* sK = smem + T::kKOffset;
  const float* sV = smem + T::kVOffset;
  float* sSt = smem + T::kStOffset;

  const BlockCoords bc = block_coords<kHeavyFirst>(p);
  const Entry et = entry_of(p, bc.batch);
  const int tid = static_cast<int>(threadIdx.x);
  // This thread's query row, and its last visible key (row + causal_offset, bottom-right causal):
  // the one value the K/V loop's mask test holds; the epilogue forms the row again from the
  // block and thread index.
  const int last_key = bc.q_tile * BR + tid + p.causal_offset;

  float4 q[D / 4], o[D / 4];
  {
    const int row = last_key - p.causal_offset;
    const float4* q_row = reinterpret_cast<const float4*>(et.q(p) + static_cast<long long>(row) * p.qs.row);
#pragma unroll
    for (int x = 0; x < D / 4; ++x) {
      q[x] = row < p.N ? p.scale_log2e * __ldg(q_row + x) : make_float4(0.f, 0.f, 0.f, 0.f);
      o[x] = make_float4(0.f, 0.f, 0.f, 0.f);
    }
  }
  float m = -INFINITY, l = 0.0f;

  const int n_kv = kv_tile_count<BR, BC>(p, bc.q_tile);
  for (int t = 0; t < n_kv; ++t) {
    const int k0 = t * BC;
    __syncthreads();  // every thread is done with the previous K/V tile
    // Read again each tile (a few instructions per Bc x d tile): K and V's offset held across the
    // loop beside Q and O's 128 registers spilled 8 bytes at d = 64.
    const long long kv = late_entry<kHeavyFirst>(p).kv_offset(p);
    load_tile<BC, D, T::kKvStride, T::kThreads>(smem + T::kKOffset, p.k + kv, p.ks.row, k0, p.kv_len);
    load_tile<BC, D, T::kKvStride, T::kThreads>(smem + T::kVOffset, p.v + kv, p.vs.row, k0, p.kv_len);
    __syncthreads();

    float m_tile = -INFINITY;
#pragma unroll 2
    for (int j = 0; j < BC; ++j) {
      const float4* k_row = reinterpret_cast<const float4*>(sK + traits::RowReg::at(0, T::kKvStride, j, 0));
      float s0 = 0.0f, s1 = 0.0f;  // two chains halve the dependent-FMA latency
#pragma unroll
      for (int x = 0; x < D / 4; x += 2) {
        s0 = dot4(q[x], k_row[x], s0);
        s1 = dot4(q[x + 1], k_row[x + 1], s1);
      }
      float s = s0 + s1;
      if (masked_after(p, last_key, k0 + j)) s = -INFINITY;
      sSt[traits::RowReg::at(0, T::kStStride, j, tid)] = s;
      m_tile = fmaxf(m_tile, s);
    }

    const float m_new = fmaxf(m, m_tile);
    const float sub = softmax_base(m_new);
    const float alpha = exp2f(m - sub);
    m = m_new;
    l *= alpha;
#pragma unroll
    for (int x = 0; x < D / 4; ++x) o[x] = alpha * o[x];
#pragma unroll 4
    for (int j = 0; j < BC; ++j) {
      const float pj = exp2f(sSt[traits::RowReg::at(0, T::kStStride, j, tid)] - sub);
      l += pj;
      const float4* v_row = reinterpret_cast<const float4*>(sV + traits::RowReg::at(0, T::kKvStride, j, 0));
#pragma unroll
      for (int x = 0; x < D / 4; ++x) fma4(pj, v_row[x], o[x]);
    }
  }

  // The row again from the block and thread index: nothing held across the loop for the epilogue
  // alone (the row was: one 4-byte spill, stored before the loop and loaded after it).
  const int row = late_coords<kHeavyFirst>(p).q_tile * BR + late_thread_index();
  if (row < p.N) {
    const float inv_l = __fdividef(1.0f, l);  // l >= 1 (the max key contributes exp2(0)); no slow-path call
    float4* out = reinterpret_cast<float4*>(late_entry<kHeavyFirst>(p).o(p) + static_cast<long long>(row) * p.os.row);
#pragma unroll
    for (int x = 0; x < D / 4; ++x) out[x] = inv_l * o[x];
  }
}

}  // namespace flashtune::kernels
