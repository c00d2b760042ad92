// warp_groups kernel: a group of G lanes per R query rows, float4 slices of Q and O in registers,
// butterfly reduce-scatter of the partial scores, P broadcast by shuffles for P.V. Each K/V chunk
// a lane reads from shared memory serves R rows.
// See kernels/traits/warp_groups_traits.h and docs/kernels.md.
#pragma once

#include "kernels/attention_params.cuh"
#include "kernels/traits/warp_groups_traits.h"

namespace flashtune::kernels {

// Butterfly reduce-scatter over the G lanes of a group: at step W, lanes with bit W set keep the
// upper half of the remaining keys and receive the partner's partials for them; after log2(G)
// steps part[0] holds the full score of key g (the lane's index in the group). G - 1 shuffles.
// A template step keeps every index static (a runtime-bounded loop put part[] in local memory).
template <int G, int W>
__device__ __forceinline__ void reduce_scatter(float (&part)[G], int g) {
  if constexpr (W >= 1) {
    const bool upper = (g & W) != 0;
#pragma unroll
    for (int i = 0; i < W; ++i) {
      const float send = upper ? part[i] : part[i + W];
      const float keep = upper ? part[i + W] : part[i];
      part[i] = keep + __shfl_xor_sync(0xffffffffu, send, W);
    }
    reduce_scatter<G, W / 2>(part, g);
  }
}

template <int D, int BR, int BC, Layout L>
__global__ void __launch_bounds__(traits::WarpGroups::Tile<D, BR, BC, L>::kThreads, 1)
    warp_groups_kernel(const AttentionParams p) {
  using T = traits::WarpGroups::Tile<D, BR, BC, L>;
  constexpr bool kHeavyFirst = traits::WarpGroups::kCausalHeavyFirst;
  constexpr int G = T::kGroup;
  constexpr int R = T::kRowsPerGroup;
  constexpr int F4 = T::kFloat4sPerLane;
  constexpr int kChunks = BC / G;  // keys per lane per tile after the reduce-scatter
  constexpr int kLog2G = G == 8 ? 3 : 2;
  constexpr unsigned kFull = 0xffffffffu;
  static_assert((G == 4 || G == 8) && BC % G == 0 && T::kThreads % 32 == 0,
                "groups must tile the K/V tile and the warps");

  extern __shared__ float4 smem4[];
  float* smem = reinterpret_cast<float*>(smem4);
  const float* sK = smem + T::kKOffset;
  const float* sV = smem + T::kVOffset;

  const BlockCoords bc = block_coords<kHeavyFirst>(p);
  const Entry et = entry_of(p, bc.batch);
  const long long kv = et.kv_offset(p);
  const int tid = static_cast<int>(threadIdx.x);
  const int g = tid % G;
  const int row0 = bc.q_tile * BR + traits::WarpGroups::first_row(tid, G, R);

  float4 q[R][F4], o[R][F4];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int x = 0; x < F4; ++x) {
      const float* src = et.q(p) + static_cast<long long>(row0 + r) * p.qs.row + (x * G + g) * 4;
      q[r][x] = row0 + r < p.N ? p.scale_log2e * __ldg(reinterpret_cast<const float4*>(src))
                               : make_float4(0.f, 0.f, 0.f, 0.f);
      o[r][x] = make_float4(0.f, 0.f, 0.f, 0.f);
    }
  float m[R], l[R];  // l: this lane's share of the row sum (its keys); summed over the group at the end
#pragma unroll
  for (int r = 0; r < R; ++r) {
    m[r] = -INFINITY;
    l[r] = 0.0f;
  }

  const int n_kv = kv_tile_count<BR, BC>(p, bc.q_tile);
  for (int t = 0; t < n_kv; ++t) {
    const int k0 = t * BC;
    __syncthreads();  // every thread is done with the previous K/V tile
    load_tile<BC, D, T::kKvStride, T::kThreads>(smem + T::kKOffset, p.k + kv, p.ks.row, k0, p.kv_len);
    load_tile<BC, D, T::kKvStride, T::kThreads>(smem + T::kVOffset, p.v + kv, p.vs.row, k0, p.kv_len);
    __syncthreads();

    float s[R][kChunks];  // s[r][c]: score (then p) of key c*G + g of this tile for row r
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      float part[R][G];
#pragma unroll
      for (int i = 0; i < G; ++i) {
#pragma unroll
        for (int r = 0; r < R; ++r) part[r][i] = 0.0f;
#pragma unroll
        for (int x = 0; x < F4; ++x) {
          const float4 kv = *reinterpret_cast<const float4*>(
              sK + traits::WarpGroups::lane_chunk(0, T::kKvStride, G, c * G + i, x, g));
#pragma unroll
          for (int r = 0; r < R; ++r) part[r][i] = dot4(q[r][x], kv, part[r][i]);
        }
      }
#pragma unroll
      for (int r = 0; r < R; ++r) {
        reduce_scatter<G, G / 2>(part[r], g);
        s[r][c] = masked(p, row0 + r, k0 + c * G + g) ? -INFINITY : part[r][0];
      }
    }

#pragma unroll
    for (int r = 0; r < R; ++r) {
      float m_tile = -INFINITY;
#pragma unroll
      for (int c = 0; c < kChunks; ++c) m_tile = fmaxf(m_tile, s[r][c]);
#pragma unroll
      for (int step = 1; step <= kLog2G; ++step) m_tile = fmaxf(m_tile, __shfl_xor_sync(kFull, m_tile, G >> step));
      const float m_new = fmaxf(m[r], m_tile);
      const float sub = softmax_base(m_new);
      const float alpha = exp2f(m[r] - sub);
      m[r] = m_new;
      l[r] *= alpha;
#pragma unroll
      for (int x = 0; x < F4; ++x) o[r][x] = alpha * o[r][x];
#pragma unroll
      for (int c = 0; c < kChunks; ++c) {
        s[r][c] = exp2f(s[r][c] - sub);
        l[r] += s[r][c];
      }
    }
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
#pragma unroll
      for (int i = 0; i < G; ++i) {
        float pj[R];
#pragma unroll
        for (int r = 0; r < R; ++r) pj[r] = __shfl_sync(kFull, s[r][c], i, G);
#pragma unroll
        for (int x = 0; x < F4; ++x) {
          const float4 vv = *reinterpret_cast<const float4*>(
              sV + traits::WarpGroups::lane_chunk(0, T::kKvStride, G, c * G + i, x, g));
#pragma unroll
          for (int r = 0; r < R; ++r) fma4(pj[r], vv, o[r][x]);
        }
      }
    }
  }

#pragma unroll
  for (int r = 0; r < R; ++r) {
#pragma unroll
    for (int step = 1; step <= kLog2G; ++step) l[r] += __shfl_xor_sync(kFull, l[r], G >> step);
    if (row0 + r < p.N) {
      const float inv_l = __fdividef(1.0f, l[r]);  // l >= 1 (the max key contributes exp2(0))
#pragma unroll
      for (int x = 0; x < F4; ++x)
        *reinterpret_cast<float4*>(late_entry<kHeavyFirst>(p).o(p) + static_cast<long long>(row0 + r) * p.os.row + (x * G + g) * 4) =
            inv_l * o[r][x];
    }
  }
}

}  // namespace flashtune::kernels
