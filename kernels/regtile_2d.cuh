// 2-D register-tiled FlashAttention forward (fp32), seed gpt2-kernel-versions v12 made fast on
// Hopper. Layout, thread mapping and sizes come from kernels/traits/regtile_2d_traits.h (read it
// first); this file only turns them into instructions. Needs nvcc --expt-relaxed-constexpr (the
// traits' constexpr index functions are called from device code).
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "kernels/async_copy.cuh"
#include "kernels/attention_params.cuh"
#include "kernels/traits/regtile_2d_traits.h"

namespace flashtune::kernels {

namespace regtile_2d_detail {

// One MUFU.EX2: scores are pre-scaled by scale * log2(e), so exp2 is the exponential we need.
__device__ __forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// Cooperative load of `Rows` x D floats starting at global row `row0` of a matrix whose rows are
// `rs` floats apart (rows >= n zero-filled); `offset(row, col)` places float4 (row, col .. col+3)
// in the shared tile.
template <int D, int Rows, int Threads, class Offset>
__device__ __forceinline__ void load_tile_async(float* tile, const float* g, int rs, int row0, int n, int tid,
                                                Offset offset) {
  constexpr int kVecs = traits::tile_float4s(Rows, D);
  constexpr int kTrips = traits::tile_load_trips(Rows, D, Threads);
#pragma unroll
  for (int trip = 0; trip < kTrips; ++trip) {
    const int idx = tid + trip * Threads;
    if (kVecs % Threads == 0 || idx < kVecs) {
      const int row = traits::tile_row_of(idx, D), col = traits::tile_col_of(idx, D);
      const bool valid = row0 + row < n;
      const float* src = g + static_cast<std::size_t>(valid ? row0 + row : 0) * rs + col;
      cp_async_16(tile + offset(row, col), src, valid);
    }
  }
}

template <int N>
__device__ __forceinline__ void load_vec(float (&dst)[N], const float* src) {
  if constexpr (N == 4) {
    const float4 t = *reinterpret_cast<const float4*>(src);
    dst[0] = t.x, dst[1] = t.y, dst[2] = t.z, dst[3] = t.w;
  } else {
    static_assert(N == 2, "vectors are float2 or float4");
    const float2 t = *reinterpret_cast<const float2*>(src);
    dst[0] = t.x, dst[1] = t.y;
  }
}

template <int N>
__device__ __forceinline__ void store_vec(float* dst, const float* src, float mul) {
  if constexpr (N == 4) {
    *reinterpret_cast<float4*>(dst) = make_float4(src[0] * mul, src[1] * mul, src[2] * mul, src[3] * mul);
  } else {
    *reinterpret_cast<float2*>(dst) = make_float2(src[0] * mul, src[1] * mul);
  }
}

}  // namespace regtile_2d_detail

// One block per (query tile, batch entry) (block_coords); under causal the query tiles run
// last-first, so the longest blocks start in the first wave and the short ones fill the tail.
template <int D, int BR, int BC, Layout L>
__global__ void __launch_bounds__(traits::RegTile2D::Tile<D, BR, BC, L>::kThreads,
                                  traits::RegTile2D::Tile<D, BR, BC, L>::kMinBlocksPerSm)
    regtile_2d_kernel(const AttentionParams p) {
  using R = traits::RegTile2D;
  using T = R::Tile<D, BR, BC, L>;
  namespace dt = regtile_2d_detail;
  constexpr int kThreads = T::kThreads, kGroups = T::kRowGroups;
  constexpr int TM = T::kRowsPerThread, TN = T::kColsPerThread;
  constexpr int VW = T::kOVecWidth, NV = T::kOVecs, TD = VW * NV;

  extern __shared__ __align__(16) float smem[];
  float* const sq = smem + T::kQBase;
  float* const sk = smem + T::kKBase;
  float* const sv = smem + T::kVBase;
  float* const ss = smem + T::kSBase;
  float* const sstat = smem + T::kStatBase;

  const int tid = static_cast<int>(threadIdx.x);
  const int grp = R::group_of(tid), lane = R::lane_in_group(tid);
  const BlockTensors blk = block_tensors<D, BR, BC>(p);
  const int q0 = blk.q0, n = p.N, kv_tiles = blk.kv_tiles;
  const int first_masked = first_masked_tile<BC>(p, q0);
  const float scale_log2e = p.scale_log2e;
  const float* const qg = blk.q;
  const float* const kg = p.k + blk.kv;
  const float* const vg = p.v + blk.kv;
  auto qk_at = [](int row, int col) { return R::qk_offset(D, L, row, col); };
  auto v_at = [](int row, int col) { return R::v_offset(D, row, col); };

  dt::load_tile_async<D, BR, kThreads>(sq, qg, p.qs.row, q0, n, tid, qk_at);
  dt::load_tile_async<D, BC, kThreads>(sk, kg, p.ks.row, 0, p.kv_len, tid, qk_at);
  cp_async_commit();

  float acc[TM][TD];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int e = 0; e < TD; ++e) acc[i][e] = 0.0f;

  for (int t = 0; t < kv_tiles; ++t) {
    const int kv0 = t * BC;
    // K_t (and Q) landed; every thread finished P V_{t-1}, so V and P buffers are free.
    cp_async_wait_all();
    __syncthreads();
    dt::load_tile_async<D, BC, kThreads>(sv, vg, p.vs.row, kv0, p.kv_len, tid, v_at);
    cp_async_commit();

    float s[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int j = 0; j < TN; ++j) s[i][j] = 0.0f;

#pragma unroll(T::kQkUnroll)
    for (int c4 = 0; c4 < D; c4 += 4) {
      float kf[TN][4];
#pragma unroll
      for (int j = 0; j < TN; ++j) dt::load_vec<4>(kf[j], sk + R::qk_offset(D, L, R::k_row(lane, j), c4));
#pragma unroll
      for (int i = 0; i < TM; ++i) {
        float qf[4];
        dt::load_vec<4>(qf, sq + R::qk_offset(D, L, R::q_row(grp, i, kGroups), c4));
#pragma unroll
        for (int j = 0; j < TN; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) s[i][j] = fmaf(qf[e], kf[j][e], s[i][j]);
      }
    }

    // Tail tile (keys >= kv_len) and tiles crossing the (bottom-right) causal diagonal: masked
    // scores become -inf.
    if (t >= first_masked) {
#pragma unroll
      for (int i = 0; i < TM; ++i) {
        const int row = q0 + R::q_row(grp, i, kGroups);
#pragma unroll
        for (int j = 0; j < TN; ++j) {
          const int col = kv0 + R::k_row(lane, j);
          if (masked(p, row, col)) s[i][j] = -INFINITY;
        }
      }
    }

    // Online softmax in the log2 domain; the 16 lanes of a row group reduce by shuffles. The row's
    // running max m and sum l live in shared memory: every lane reads them, lane 0 writes them
    // back after a __syncwarp (the next reads follow the next __syncthreads).
#pragma unroll
    for (int i = 0; i < TM; ++i) {
      const int row = R::q_row(grp, i, kGroups);
      const float m_old = t == 0 ? -INFINITY : sstat[R::m_offset(row)];
      const float l_old = t == 0 ? 0.0f : sstat[R::l_offset(BR, row)];
      float mx = s[i][0];
#pragma unroll
      for (int j = 1; j < TN; ++j) mx = fmaxf(mx, s[i][j]);
#pragma unroll
      for (int off = R::kGroupLanes / 2; off > 0; off /= 2) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
      const float m_new = fmaxf(m_old, mx * scale_log2e);
      const float m_use = softmax_base(m_new);
      const float alpha = dt::exp2_approx(m_old - m_use);
      float sum = 0.0f;
#pragma unroll
      for (int j = 0; j < TN; ++j) {
        s[i][j] = dt::exp2_approx(fmaf(s[i][j], scale_log2e, -m_use));
        sum += s[i][j];
      }
#pragma unroll
      for (int off = R::kGroupLanes / 2; off > 0; off /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, off);
#pragma unroll
      for (int e = 0; e < TD; ++e) acc[i][e] *= alpha;
      __syncwarp();
      if (lane == 0) {
        sstat[R::m_offset(row)] = m_new;
        sstat[R::l_offset(BR, row)] = fmaf(l_old, alpha, sum);
      }
    }

#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int j = 0; j < TN; ++j) ss[R::s_offset(BC, R::q_row(grp, i, kGroups), R::k_row(lane, j))] = s[i][j];

    // P and V_t visible; every thread finished reading K_t, so K_{t+1} may overwrite it.
    cp_async_wait_all();
    __syncthreads();
    if (t + 1 < kv_tiles) {
      dt::load_tile_async<D, BC, kThreads>(sk, kg, p.ks.row, kv0 + BC, p.kv_len, tid, qk_at);
      cp_async_commit();
    }

#pragma unroll(T::kPvUnroll)
    for (int c4 = 0; c4 < BC; c4 += 4) {
      float vf[4][TD];
#pragma unroll
      for (int r = 0; r < 4; ++r)
#pragma unroll
        for (int m = 0; m < NV; ++m) {
          float part[VW];
          dt::load_vec<VW>(part, sv + R::v_offset(D, c4 + r, R::o_col(lane, m, D)));
#pragma unroll
          for (int e = 0; e < VW; ++e) vf[r][m * VW + e] = part[e];
        }
#pragma unroll
      for (int i = 0; i < TM; ++i) {
        float pf[4];
        dt::load_vec<4>(pf, ss + R::s_offset(BC, R::q_row(grp, i, kGroups), c4));
#pragma unroll
        for (int r = 0; r < 4; ++r)
#pragma unroll
          for (int e = 0; e < TD; ++e) acc[i][e] = fmaf(pf[r], vf[r][e], acc[i][e]);
      }
    }
  }

  // The last tile's l was written before the last __syncthreads of the loop.
  float* const og = late_entry<R::kCausalHeavyFirst>(p).o(p);
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int row = R::q_row(grp, i, kGroups);
    if (q0 + row < n) {
      const float inv = 1.0f / sstat[R::l_offset(BR, row)];
#pragma unroll
      for (int m = 0; m < NV; ++m)
        dt::store_vec<VW>(og + static_cast<std::size_t>(q0 + row) * p.os.row + R::o_col(lane, m, D), &acc[i][m * VW], inv);
    }
  }
}

}  // namespace flashtune::kernels
