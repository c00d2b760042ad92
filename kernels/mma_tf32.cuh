// Tensor-core FlashAttention forward on mma.sync m16n8k8 TF32, fp32 in and out: 3xTF32 (fp32-level
// accuracy) or 1xTF32. Fragment layouts, key and column orders, the shared-memory layout and sizes
// come from kernels/traits/mma_tf32_traits.h (read it first); this file only turns them into
// instructions. Needs nvcc --expt-relaxed-constexpr (the traits' index functions run on the device).
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "kernels/async_copy.cuh"
#include "kernels/attention_params.cuh"
#include "kernels/traits/mma_tf32_traits.h"

namespace flashtune::kernels {

namespace mma_tf32_detail {

using traits::MmaPrecision;

// Cooperative copy of global rows [row0, row0 + Rows) of a [N, D] matrix, float4 number
// idx = tid + trip * threads (traits::tile_row_of / tile_col_of), written so that a trip adds a
// whole number of rows and the column stays the lane's (ptxas then keeps one offset per lane).
// place(row, col, grow, valid) issues the copies of float4 (row, col) from global row grow
// (row 0 where the row is past N: its copy is zero-filled).
template <int D, int Rows, int Threads, class Place>
__device__ __forceinline__ void copy_tile_async(int tid, int row0, int n, Place place) {
  constexpr int kVecs = traits::tile_float4s(Rows, D);
  constexpr int kTrips = traits::tile_load_trips(Rows, D, Threads);
  static_assert(Threads % (D / 4) == 0, "a trip must advance whole rows");
  const int row_of_tid = tid / (D / 4), col = (tid % (D / 4)) * 4;
#pragma unroll
  for (int trip = 0; trip < kTrips; ++trip) {
    if (kVecs % Threads == 0 || tid + trip * Threads < kVecs) {
      const int row = row_of_tid + trip * (Threads / (D / 4));
      const bool valid = row0 + row < n;
      place(row, col, valid ? row0 + row : 0, valid);
    }
  }
}

// One MUFU.EX2: scores are in base-2 units (Q pre-scaled by scale * log2 e).
__device__ __forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// An fp32 value as TF32 operands: hi (and, for 3xTF32, the residual lo).
struct Tf32Pair {
  uint32_t hi, lo;
};

// The mask that clears the 13 mantissa bits TF32 lacks.
constexpr uint32_t kTf32HiMask = 0xffffe000u;

// kTf32HiMask where ptxas cannot see it. ptxas knows a TF32 mma ignores an operand's low 13 bits,
// so for `x & kTf32HiMask` feeding one it passes x itself, and where x does not already sit in the
// operand's register pair or quad (V's B pairs take one value from each of two rows; P's and Q's A
// quads reorder their values) it moves x there: one MOV per value on top of the AND that lo needs
// anyway. With a mask it cannot see through, the AND's result is the operand, written in place.
// N is at least 1 (kernels/support_checks.cpp refuses less), so the value is always kTf32HiMask.
__device__ __forceinline__ uint32_t opaque_hi_mask(int n) { return kTf32HiMask | (static_cast<uint32_t>(n) >> 31); }

template <MmaPrecision P>
__device__ __forceinline__ Tf32Pair split(float x, uint32_t hi_mask) {
  if constexpr (P == MmaPrecision::Tf32x3) {
    // hi: x with the 13 mantissa bits TF32 lacks cleared; lo = x - hi is exact. The mma reads
    // lo's top 19 bits (traits header: ~2^-20 relative per product).
    const uint32_t hi = __float_as_uint(x) & hi_mask;
    return {hi, __float_as_uint(x - __uint_as_float(hi))};
  } else {
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
    return {r, 0u};
  }
}

// A fragment (a0..a3: (g, t), (g + 8, t), (g, t + 4), (g + 8, t + 4)) and B fragment
// (b0, b1: (k = t, n = g), (k = t + 4, n = g)) of m16n8k8, PTX ISA "Matrix fragments for mma.m16n8k8".
struct AFrag {
  Tf32Pair a[4];
};
struct BFrag {
  Tf32Pair b[2];
};

// hi_mask: kTf32HiMask where the values already sit in operand order (a float4 of K gives two B
// pairs), opaque_hi_mask elsewhere.
template <MmaPrecision P>
__device__ __forceinline__ AFrag a_frag(float a0, float a1, float a2, float a3, uint32_t hi_mask) {
  return {{split<P>(a0, hi_mask), split<P>(a1, hi_mask), split<P>(a2, hi_mask), split<P>(a3, hi_mask)}};
}
template <MmaPrecision P>
__device__ __forceinline__ BFrag b_frag(float b0, float b1, uint32_t hi_mask) {
  return {{split<P>(b0, hi_mask), split<P>(b1, hi_mask)}};
}

__device__ __forceinline__ void mma_m16n8k8(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                            uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// c += a * b: 3xTF32 adds the two small cross terms first, then hi * hi.
template <MmaPrecision P>
__device__ __forceinline__ void mma_product(float (&c)[4], const AFrag& x, const BFrag& y) {
  if constexpr (P == MmaPrecision::Tf32x3) {
    mma_m16n8k8(c, x.a[0].lo, x.a[1].lo, x.a[2].lo, x.a[3].lo, y.b[0].hi, y.b[1].hi);
    mma_m16n8k8(c, x.a[0].hi, x.a[1].hi, x.a[2].hi, x.a[3].hi, y.b[0].lo, y.b[1].lo);
  }
  mma_m16n8k8(c, x.a[0].hi, x.a[1].hi, x.a[2].hi, x.a[3].hi, y.b[0].hi, y.b[1].hi);
}

__device__ __forceinline__ float4 load_float4(const float* p) { return *reinterpret_cast<const float4*>(p); }

}  // namespace mma_tf32_detail

// One block per (query tile, batch entry); under causal the query tiles run last-first, so the
// longest blocks start in the first wave and the short ones fill the tail.
template <traits::MmaPrecision P, int D, int BR, int BC, Layout L>
__global__ void __launch_bounds__(traits::MmaTf32<P>::template Tile<D, BR, BC, L>::kThreads, 1)
    mma_tf32_kernel(const AttentionParams p) {
  using R = traits::MmaTf32<P>;
  using T = typename R::template Tile<D, BR, BC, L>;
  namespace dt = mma_tf32_detail;
  constexpr int kThreads = T::kThreads, NS = T::kSTiles, NO = T::kOTiles, KK = D / 16;
  constexpr TileConfig kC = T::kConfig;

  extern __shared__ __align__(16) float smem[];

  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid % 32;
  const int tq = R::thread_in_group(lane);
  const BlockTensors blk = block_tensors<D, BR, BC>(p);
  const int q0 = blk.q0, n = p.N, nk = p.kv_len, kv_tiles = blk.kv_tiles;
  const float* const qg = blk.q;
  const float* const kg = p.k + blk.kv;
  const float* const vg = p.v + blk.kv;

  // Cooperative cp.async of K and V rows [tile * BC, tile * BC + BC) into stage `stage`.
  auto load_kv = [&](int tile, int stage) {
    float* const sk = smem + R::k_base(kC, stage);
    float* const sv = smem + R::v_base(kC, stage);
    dt::copy_tile_async<D, BC, kThreads>(tid, tile * BC, nk, [&](int row, int col, int grow, bool valid) {
      cp_async_16(sk + R::k_offset(D, L, row, col), kg + static_cast<std::size_t>(grow) * p.ks.row + col, valid);
      cp_async_16(sv + R::v_offset(D, L, row, col), vg + static_cast<std::size_t>(grow) * p.vs.row + col, valid);
    });
  };
  // This lane's query rows (fragment rows g and g + 8) are held as their last visible keys
  // lk[h] = row + causal_offset (bottom-right causal), the value the mask tests compare with; the
  // rows themselves are formed from them where Q is read and O written. The rows and the offset
  // side by side made 3xTF32 d128 64x64 plain spill 36 bytes (nvcc 13.0, sm_90).
  // This lane's Q values: rows lk[h] - causal_offset, h = 0, 1, the float4 at
  // qk_col(kk) for each pair of k-steps, in base-2 score units. Where d <= 64 they stay in
  // registers (loaded once from global memory, pre-scaled, rows past N zero); at d = 128 they
  // would take 64 registers beside 2 x 64 of O, so the tile waits in shared memory (cp.async,
  // rows past N zero) and each K/V tile reads and scales them again.
  const int lk[2] = {q0 + R::q_row(warp, lane, 0) + p.causal_offset, q0 + R::q_row(warp, lane, 1) + p.causal_offset};
  auto row_of = [&](int h) { return lk[h] - p.causal_offset; };
  const float qscale = p.scale_log2e;
  const uint32_t hi_mask = T::kOperandMasksInPlace ? dt::opaque_hi_mask(p.N) : dt::kTf32HiMask;
  float* const sq = smem + R::q_base(kC);
  constexpr int KQ = T::kQInSmem ? 1 : KK;
  float q[KQ][2][4];
  if constexpr (T::kQInSmem) {
    dt::copy_tile_async<D, BR, kThreads>(tid, q0, n, [&](int row, int col, int grow, bool valid) {
      cp_async_16(sq + R::k_offset(D, L, row, col), qg + static_cast<std::size_t>(grow) * p.qs.row + col, valid);
    });
  } else {
#pragma unroll
    for (int kk = 0; kk < KK; ++kk)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
        if (row_of(h) < n)
          v = __ldg(reinterpret_cast<const float4*>(qg + static_cast<std::size_t>(row_of(h)) * p.qs.row + R::qk_col(kk, lane)));
        q[kk][h][0] = v.x * qscale;
        q[kk][h][1] = v.y * qscale;
        q[kk][h][2] = v.z * qscale;
        q[kk][h][3] = v.w * qscale;
      }
  }
  load_kv(0, 0);
  cp_async_commit();
  // A fragment of k-step 2kk + s: columns 4t + 2s (k = t) and 4t + 2s + 1 (k = t + 4).
  auto q_frag = [&](int kk, int s) {
    if constexpr (T::kQInSmem) {
      const int qb = R::q_frag_base(D, L, warp, lane, kk % 2) + R::q_frag_step(kk / 2);
      const float4 x = dt::load_float4(sq + qb), y = dt::load_float4(sq + qb + R::q_frag_half_step(D, L));
      const float a0 = s == 0 ? x.x : x.z, a2 = s == 0 ? x.y : x.w, a1 = s == 0 ? y.x : y.z, a3 = s == 0 ? y.y : y.w;
      return dt::a_frag<P>(a0 * qscale, a1 * qscale, a2 * qscale, a3 * qscale, hi_mask);
    } else {
      return dt::a_frag<P>(q[kk][0][2 * s], q[kk][1][2 * s], q[kk][0][2 * s + 1], q[kk][1][2 * s + 1], hi_mask);
    }
  };

  float o[NO][4];
#pragma unroll
  for (int m = 0; m < NO; ++m) o[m][0] = o[m][1] = o[m][2] = o[m][3] = 0.0f;
  float m_run[2] = {-INFINITY, -INFINITY};
  float l_run[2] = {0.0f, 0.0f};  // this lane's share of the row sums (reduced at the end)
  const int warp_last_key = q0 + R::kRowsPerWarp * warp + p.causal_offset;
  const int k_base[2] = {R::k_frag_base(D, L, lane, 0), R::k_frag_base(D, L, lane, 1)};
  const int v_base[2] = {R::v_frag_base(D, L, lane, 0), R::v_frag_base(D, L, lane, 1)};

  for (int t = 0; t < kv_tiles; ++t) {
    const int stage = t & 1;
    // Tile t landed; every warp finished tile t - 1, so its stage may be overwritten by t + 1.
    cp_async_wait_all();
    __syncthreads();
    if (t + 1 < kv_tiles) {
      load_kv(t + 1, stage ^ 1);
      cp_async_commit();
    }
    const int kv0 = t * BC;
    if (p.causal && kv0 > warp_last_key + R::kRowsPerWarp - 1) continue;  // every key after every row
    const float* const sk = smem + R::k_base(kC, stage);
    const float* const sv = smem + R::v_base(kC, stage);

    // S = Q K^T.
    float s[NS][4];
#pragma unroll
    for (int j = 0; j < NS; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < KK; ++kk) {
      const dt::AFrag a0 = q_frag(kk, 0), a1 = q_frag(kk, 1);
#pragma unroll
      for (int j = 0; j < NS; ++j) {
        const float4 k4 = dt::load_float4(sk + k_base[kk % 2] + R::k_frag_step(D, L, j, kk / 2));
        dt::mma_product<P>(s[j], a0, dt::b_frag<P>(k4.x, k4.y, dt::kTf32HiMask));
        dt::mma_product<P>(s[j], a1, dt::b_frag<P>(k4.z, k4.w, dt::kTf32HiMask));
      }
    }

    // Keys past kv_len, and keys after the row's where the tile crosses this warp's (bottom-right)
    // causal diagonal.
    if (kv0 + BC > nk || (p.causal && kv0 + BC - 1 > warp_last_key)) {
#pragma unroll
      for (int j = 0; j < NS; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          if (masked_after(p, lk[e / 2], kv0 + R::key_of(j, 2 * tq + e % 2))) s[j][e] = -INFINITY;
    }

    // Online softmax: C elements 2h and 2h + 1 are row row_of(h); the 4 lanes of a group hold the row.
    float alpha_row[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float mx = -INFINITY;
#pragma unroll
      for (int j = 0; j < NS; ++j) mx = fmaxf(mx, fmaxf(s[j][2 * h], s[j][2 * h + 1]));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      const float m_new = fmaxf(m_run[h], mx);
      const float m_use = softmax_base(m_new);
      const float alpha = dt::exp2_approx(m_run[h] - m_use);
      float sum = 0.0f;
#pragma unroll
      for (int j = 0; j < NS; ++j) {
        s[j][2 * h] = dt::exp2_approx(s[j][2 * h] - m_use);
        s[j][2 * h + 1] = dt::exp2_approx(s[j][2 * h + 1] - m_use);
        sum += s[j][2 * h] + s[j][2 * h + 1];
      }
      l_run[h] = fmaf(l_run[h], alpha, sum);
      m_run[h] = m_new;
      alpha_row[h] = alpha;
    }

    // O = alpha O + P V. This tile's P V accumulates from zero in the tensor cores and joins O by
    // one FFMA: the tensor cores' fp32 accumulation truncates, and summing thousands of tiles in
    // it drifts (rel. L2 2.3e-4 at N = 32768, H200, when O accumulated there), while Bc keys at a
    // time stay at fp32 level. S tile j is the A fragment of k-step j as it stands (traits: key
    // order).
    float acc[NO][4];
#pragma unroll
    for (int m = 0; m < NO; ++m) acc[m][0] = acc[m][1] = acc[m][2] = acc[m][3] = 0.0f;
#pragma unroll
    for (int j = 0; j < NS; ++j) {
      const dt::AFrag pa = dt::a_frag<P>(s[j][0], s[j][2], s[j][1], s[j][3], hi_mask);
#pragma unroll
      for (int qd = 0; qd < NO / 4; ++qd) {
        const float4 v0 = dt::load_float4(sv + v_base[0] + R::v_frag_step(D, L, j, qd));
        const float4 v1 = dt::load_float4(sv + v_base[1] + R::v_frag_step(D, L, j, qd));
        dt::mma_product<P>(acc[4 * qd + 0], pa, dt::b_frag<P>(v0.x, v1.x, hi_mask));
        dt::mma_product<P>(acc[4 * qd + 1], pa, dt::b_frag<P>(v0.y, v1.y, hi_mask));
        dt::mma_product<P>(acc[4 * qd + 2], pa, dt::b_frag<P>(v0.z, v1.z, hi_mask));
        dt::mma_product<P>(acc[4 * qd + 3], pa, dt::b_frag<P>(v0.w, v1.w, hi_mask));
      }
    }
#pragma unroll
    for (int m = 0; m < NO; ++m)
#pragma unroll
      for (int c = 0; c < 4; ++c) o[m][c] = fmaf(o[m][c], alpha_row[c / 2], acc[m][c]);
  }
  cp_async_wait_all();  // nothing in flight when the block exits

  // Row sums across the group's 4 lanes, then O / l as two float4s per row and O tile quad.
  float* const og = late_entry<R::kCausalHeavyFirst>(p).o(p);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float l = l_run[h];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    const int rh = row_of(h);
    if (rh >= n) continue;
    const float inv = 1.0f / l;
    float* const row = og + static_cast<std::size_t>(rh) * p.os.row;
#pragma unroll
    for (int qd = 0; qd < NO / 4; ++qd)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const float4 v = make_float4(o[4 * qd][2 * h + e] * inv, o[4 * qd + 1][2 * h + e] * inv,
                                     o[4 * qd + 2][2 * h + e] * inv, o[4 * qd + 3][2 * h + e] * inv);
        *reinterpret_cast<float4*>(row + R::o_col(4 * qd, 2 * tq + e)) = v;
      }
  }
}

}  // namespace flashtune::kernels
