// row_smem kernel: one thread per query row; Q, K, V and the score row S live in shared memory,
// O in registers. See kernels/traits/row_smem_traits.h for the layout and docs/kernels.md.
#pragma once

#include "kernels/attention_params.cuh"
#include "kernels/traits/row_smem_traits.h"

namespace flashtune::kernels {

template <int D, int BR, int BC, Layout L>
__global__ void __launch_bounds__(traits::RowSmem::Tile<D, BR, BC, L>::kThreads, 1)
    row_smem_kernel(const AttentionParams p) {
  using T = traits::RowSmem::Tile<D, BR, BC, L>;
  constexpr bool kHeavyFirst = traits::RowSmem::kCausalHeavyFirst;
  constexpr int kUnrollQk = T::kQkUnroll;
  constexpr int kPvKeys = T::kPvKeysPerStep;
  extern __shared__ float4 smem4[];
  float* smem = reinterpret_cast<float*>(smem4);
  float* sK = smem + T::kKOffset;
  float* sV = smem + T::kVOffset;
  float* sQ = smem + T::kQOffset;
  float* sS = smem + T::kSOffset;

  const BlockCoords bc = block_coords<kHeavyFirst>(p);
  const Entry et = entry_of(p, bc.batch);
  const long long kv = et.kv_offset(p);
  const int tid = static_cast<int>(threadIdx.x);
  const int q0 = bc.q_tile * BR;
  // This thread's query row's last visible key (row + causal_offset, bottom-right causal): the one
  // value the K/V loop's mask test holds; the epilogue forms the row again from the block index.
  const int last_key = q0 + tid + p.causal_offset;

  load_tile<BR, D, T::kQStride, T::kThreads>(sQ, et.q(p), p.qs.row, q0, p.N, p.scale_log2e);

  float o[D];
#pragma unroll
  for (int c = 0; c < D; ++c) o[c] = 0.0f;
  float m = -INFINITY, l = 0.0f;
  const float* q_row = sQ + traits::RowSmem::at(0, T::kQStride, tid, 0);
  float* s_row = sS + traits::RowSmem::at(0, T::kSStride, tid, 0);

  const int n_kv = kv_tile_count<BR, BC>(p, bc.q_tile);
  for (int t = 0; t < n_kv; ++t) {
    const int k0 = t * BC;
    __syncthreads();  // every thread is done with the previous K/V tile
    if constexpr (D == 128) {
      // K and V trip by trip (attention_params.cuh): two load_tile calls spilled 8 bytes at d = 128
      // (64x32 padded) beside O's 128 registers; below d = 128 the two calls stay as they were.
      load_kv_tiles<BC, D, T::kKvStride, T::kThreads>(sK, sV, p.k + kv, p.v + kv, p.ks.row, p.vs.row, k0, p.kv_len);
    } else {
      load_tile<BC, D, T::kKvStride, T::kThreads>(sK, p.k + kv, p.ks.row, k0, p.kv_len);
      load_tile<BC, D, T::kKvStride, T::kThreads>(sV, p.v + kv, p.vs.row, k0, p.kv_len);
    }
    __syncthreads();

    float m_tile = -INFINITY;
#pragma unroll kUnrollQk
    for (int j = 0; j < BC; ++j) {
      const float4* k_row = reinterpret_cast<const float4*>(sK + traits::RowSmem::at(0, T::kKvStride, j, 0));
      float s = 0.0f;
#pragma unroll
      for (int k4 = 0; k4 < D / 4; ++k4) {
        const float4 kv = k_row[k4];
        // The Q read width is the traits' (kQReadFloats): one float4 when rows are 16-byte
        // aligned, else four scalar reads; the geometry's "Q read in QK^T" site is this line.
        float4 qv;
        if constexpr (T::kQReadFloats == 4) {
          qv = reinterpret_cast<const float4*>(q_row)[k4];
        } else {
          qv = make_float4(q_row[4 * k4 + 0], q_row[4 * k4 + 1], q_row[4 * k4 + 2], q_row[4 * k4 + 3]);
        }
        s = dot4(qv, kv, s);
      }
      if (masked_after(p, last_key, k0 + j)) s = -INFINITY;
      s_row[j] = s;
      m_tile = fmaxf(m_tile, s);
    }

    const float m_new = fmaxf(m, m_tile);
    const float sub = softmax_base(m_new);
    const float alpha = exp2f(m - sub);
    m = m_new;
    l *= alpha;
#pragma unroll
    for (int c = 0; c < D; ++c) o[c] *= alpha;
    // kPvKeys keys per step; their scores are one float2 read where the S row is 8-byte aligned
    // (plain), else scalar reads (the traits' "S read in PV" site, kSReadFloats wide).
#pragma unroll 1
    for (int j0 = 0; j0 < BC; j0 += kPvKeys) {
      float sj[kPvKeys];
      if constexpr (T::kSReadFloats == 2) {
        static_assert(kPvKeys == 2, "a float2 S read serves two keys");
        const float2 pair = *reinterpret_cast<const float2*>(s_row + j0);
        sj[0] = pair.x;
        sj[1] = pair.y;
      } else {
#pragma unroll
        for (int u = 0; u < kPvKeys; ++u) sj[u] = s_row[j0 + u];
      }
#pragma unroll
      for (int u = 0; u < kPvKeys; ++u) {
        const int j = j0 + u;
        const float pj = exp2f(sj[u] - sub);
        l += pj;
        const float4* v_row = reinterpret_cast<const float4*>(sV + traits::RowSmem::at(0, T::kKvStride, j, 0));
#pragma unroll
        for (int c4 = 0; c4 < D / 4; ++c4) {
          const float4 vv = v_row[c4];
          o[4 * c4 + 0] = fmaf(pj, vv.x, o[4 * c4 + 0]);
          o[4 * c4 + 1] = fmaf(pj, vv.y, o[4 * c4 + 1]);
          o[4 * c4 + 2] = fmaf(pj, vv.z, o[4 * c4 + 2]);
          o[4 * c4 + 3] = fmaf(pj, vv.w, o[4 * c4 + 3]);
        }
      }
    }
  }

  // The row again from the block and thread index: nothing held across the loop for the epilogue
  // alone.
  const int row = late_coords<kHeavyFirst>(p).q_tile * BR + late_thread_index();
  if (row < p.N) {
    const float inv_l = __fdividef(1.0f, l);  // l >= 1 (the max key contributes exp2(0)); no slow-path call
    float4* out = reinterpret_cast<float4*>(late_entry<kHeavyFirst>(p).o(p) + static_cast<long long>(row) * p.os.row);
#pragma unroll
    for (int c4 = 0; c4 < D / 4; ++c4)
      out[c4] = make_float4(o[4 * c4] * inv_l, o[4 * c4 + 1] * inv_l, o[4 * c4 + 2] * inv_l, o[4 * c4 + 3] * inv_l);
  }
}

}  // namespace flashtune::kernels
