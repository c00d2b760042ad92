// Hopper-native (sm_90a) FlashAttention forward on fp32 operands through wgmma .tf32: wgmma16's
// warp-specialized pipeline (a producer thread's TMA copies into an mbarrier ring, consumer
// warpgroups of 64 query rows, S and O in registers, the online softmax on the accumulator
// fragments) with V transposed in shared memory by the producer warpgroup's idle warps, in
// 3xTF32 (fp32-level accuracy) or 1xTF32. Roles, layout, barriers and the transposer's mapping
// come from kernels/traits/wgmma_tf32_traits.h (read it first). Compiled for sm_90a only.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/attention_params.cuh"
#include "kernels/hopper_ptx.cuh"
#include "kernels/traits/wgmma_tf32_traits.h"
#include "kernels/wgmma16.cuh"  // WgmmaParams
#include "kernels/wgmma_online_softmax.cuh"
#include "kernels/wgmma_tf32_ops.cuh"

namespace flashtune::kernels {

namespace wgmma_tf32_detail {

using traits::MmaPrecision;
using Ops = wgmma_tf32::Ops;

template <int N>
__device__ __forceinline__ void mma_ss(float (&d)[N / 2], uint64_t a, uint64_t b, int scale_d) {
  if constexpr (N == 32) Ops::ss_n32(d, a, b, scale_d);
  else if constexpr (N == 64) Ops::ss_n64(d, a, b, scale_d);
  else Ops::ss_n128(d, a, b, scale_d);
}
template <int N>
__device__ __forceinline__ void mma_rs(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t b, int scale_d) {
  if constexpr (N == 64) Ops::rs_n64(d, a, b, scale_d);
  else Ops::rs_n128(d, a, b, scale_d);
}

constexpr uint32_t kTf32HiMask = 0xffffe000u;

__device__ __forceinline__ uint32_t round_tf32(float x) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
  return r;
}
__device__ __forceinline__ float hi_of(float x) { return __uint_as_float(__float_as_uint(x) & kTf32HiMask); }

__device__ __forceinline__ float4 ld_shared_f4(uint32_t addr) {
  float4 v;
  asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(addr));
  return v;
}
__device__ __forceinline__ void st_shared_f4(uint32_t addr, float4 v) {
  asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w)
               : "memory");
}
__device__ __forceinline__ void st_shared_f2(uint32_t addr, float a, float b) {
  asm volatile("st.shared.v2.f32 [%0], {%1, %2};\n" ::"r"(addr), "f"(a), "f"(b) : "memory");
}

// x -> (hi, lo) in place over `bytes` of shared memory from `base` (hi written back, lo at the same
// offset from `lo_base`), float4 i = first, first + step, ...
__device__ __forceinline__ void split_region(uint32_t base, uint32_t lo_base, int bytes, int first, int step) {
  for (int i = first; i < bytes / 16; i += step) {
    const float4 x = ld_shared_f4(base + 16 * i);
    const float4 h = make_float4(hi_of(x.x), hi_of(x.y), hi_of(x.z), hi_of(x.w));
    st_shared_f4(base + 16 * i, h);
    st_shared_f4(lo_base + 16 * i, make_float4(x.x - h.x, x.y - h.y, x.z - h.z, x.w - h.w));
  }
}

}  // namespace wgmma_tf32_detail

template <traits::MmaPrecision P, int D, int BR, int BC, int STAGES>
__global__ void __launch_bounds__(traits::WgmmaTf32<P>::template Tile<D, BR, BC, STAGES>::kThreads, 1)
    wgmma_tf32_kernel(const __grid_constant__ WgmmaParams prm) {
  using R = traits::WgmmaTf32<P>;
  using T = typename R::template Tile<D, BR, BC, STAGES>;
  namespace hp = hopper;
  namespace wd = wgmma_tf32_detail;
  constexpr TileConfig kC = T::kConfig;
  constexpr int kConsumers = T::kConsumers;
  constexpr int kDBlocks = R::column_blocks(D);
  constexpr int kRows = R::kRowsPerConsumer;
  constexpr bool kSplit = R::kSplit;

  extern __shared__ __align__(1024) unsigned char smem[];
  const uint32_t sbase = (static_cast<uint32_t>(__cvta_generic_to_shared(smem)) + 1023u) & ~1023u;
  const AttentionParams& p = prm.p;
  const int tid = static_cast<int>(threadIdx.x), wg = tid / R::kWarpgroupThreads;
  const BlockCoords coords = block_coords<true>(p);
  const int q_tile = p.causal ? p.q_tiles - 1 - coords.q_tile : coords.q_tile;
  const Entry entry = entry_of(p, coords.batch);
  const int head = static_cast<int>(entry.h), batch = static_cast<int>(entry.b);
  const int kv_head = p.kv_group == 1 ? head
                                      : static_cast<int>((__umulhi(entry.h, p.kv_group_magic) + entry.h) >> p.kv_group_shift);
  const int q0 = q_tile * BR;
  const int kv_tiles = kv_tile_count<BR, BC>(p, q_tile);
  const uint32_t q_smem = sbase + R::q_base(kC), qbar = sbase + R::q_barrier(kC);
  const uint32_t vland = sbase + R::vland_base(kC);
  const uint32_t vfull = sbase + R::vfull_barrier(kC), vfree = sbase + R::vfree_barrier(kC);
  auto kfull = [&](int s) { return sbase + static_cast<uint32_t>(R::kfull_barrier(kC, s)); };
  auto ready = [&](int s) { return sbase + static_cast<uint32_t>(R::ready_barrier(kC, s)); };
  auto empty = [&](int s) { return sbase + static_cast<uint32_t>(R::empty_barrier(kC, s)); };

  if (tid == 0) {
#pragma unroll
    for (int s = 0; s < STAGES; ++s) {
      hp::mbarrier_init(kfull(s), 1);
      hp::mbarrier_init(ready(s), R::kTransposerWarps);
      hp::mbarrier_init(empty(s), R::empty_arrivals(kC));
    }
    hp::mbarrier_init(vfull, 1);
    hp::mbarrier_init(vfree, R::kTransposerWarps);
    hp::mbarrier_init(qbar, 1);
    hp::fence_barrier_init();
  }
  __syncthreads();

  if (wg == 0) {
    if constexpr (R::reallocates_registers(kC)) hp::setmaxnreg_dec<R::kProducerRegisters>();
    if (tid < 32) {
      // ---- producer: one thread issues every copy --------------------------------------------------
      if (tid == 0) {
        hp::prefetch_tensor_map(&prm.q);
        hp::prefetch_tensor_map(&prm.k);
        hp::prefetch_tensor_map(&prm.v);
        hp::mbarrier_arrive_expect_tx(qbar, R::q_tx_bytes(kC));
#pragma unroll
        for (int b = 0; b < kDBlocks; ++b)
#pragma unroll
          for (int w = 0; w < kConsumers; ++w)
            hp::tma_load_4d(q_smem + b * R::block_bytes(BR) + w * R::block_bytes(kRows), &prm.q, qbar,
                            b * R::kBlockColumns, q0 + w * kRows, head, batch);
        for (int t = 0; t < kv_tiles; ++t) {
          const int stage = t % STAGES;
          const uint32_t phase = static_cast<uint32_t>(t / STAGES) & 1u;
          if (t >= STAGES) hp::mbarrier_wait(empty(stage), phase ^ 1u);
          hp::mbarrier_arrive_expect_tx(kfull(stage), R::k_tx_bytes(kC));
          const uint32_t k_smem = sbase + R::k_base(kC, stage);
#pragma unroll
          for (int b = 0; b < kDBlocks; ++b)
            hp::tma_load_4d(k_smem + b * R::block_bytes(BC), &prm.k, kfull(stage), b * R::kBlockColumns, t * BC, kv_head,
                            batch);
          // The staging tile is free once the transposer has read tile t - 1 (and the stage's V^T,
          // which it writes next, was released above).
          if (t >= 1) hp::mbarrier_wait(vfree, static_cast<uint32_t>(t - 1) & 1u);
          hp::mbarrier_arrive_expect_tx(vfull, R::v_tx_bytes(kC));
#pragma unroll
          for (int b = 0; b < kDBlocks; ++b)
            hp::tma_load_4d(vland + b * R::block_bytes(BC), &prm.v, vfull, b * R::kBlockColumns, t * BC, kv_head, batch);
        }
      }
    } else {
      // ---- transposer: warps 1-3 write V^T (and the lo parts) of every tile -------------------------
      const int tt = tid - 32, lane = tid % 32;
      constexpr int kUnits = R::transpose_units(kC);
      for (int t = 0; t < kv_tiles; ++t) {
        const int stage = t % STAGES;
        const uint32_t phase = static_cast<uint32_t>(t / STAGES) & 1u;
        const uint32_t vt = sbase + R::vt_base(kC, stage);
        hp::mbarrier_wait(vfull, static_cast<uint32_t>(t) & 1u);
#pragma unroll 1
        for (int u = tt; u < kUnits; u += R::kTransposerThreads) {
          const typename R::TransposeUnit un = R::transpose_unit(BC, u);
          float4 x[4];
#pragma unroll
          for (int r = 0; r < 4; ++r) x[r] = wd::ld_shared_f4(vland + R::transpose_load_byte(BC, un, r));
#pragma unroll
          for (int r = 0; r < 4; ++r) {
            const float c0 = r == 0 ? x[0].x : r == 1 ? x[0].y : r == 2 ? x[0].z : x[0].w;
            const float c1 = r == 0 ? x[1].x : r == 1 ? x[1].y : r == 2 ? x[1].z : x[1].w;
            const float c2 = r == 0 ? x[2].x : r == 1 ? x[2].y : r == 2 ? x[2].z : x[2].w;
            const float c3 = r == 0 ? x[3].x : r == 1 ? x[3].y : r == 2 ? x[3].z : x[3].w;
            const uint32_t at = R::transpose_store_byte(D, un, r);
            if constexpr (kSplit) {
              const float4 h = make_float4(wd::hi_of(c0), wd::hi_of(c1), wd::hi_of(c2), wd::hi_of(c3));
              wd::st_shared_f4(vt + at, h);
              wd::st_shared_f4(sbase + R::vt_lo_base(kC, stage) + at, make_float4(c0 - h.x, c1 - h.y, c2 - h.z, c3 - h.w));
            } else {
              wd::st_shared_f4(vt + at, make_float4(__uint_as_float(wd::round_tf32(c0)), __uint_as_float(wd::round_tf32(c1)),
                                                    __uint_as_float(wd::round_tf32(c2)), __uint_as_float(wd::round_tf32(c3))));
            }
          }
        }
        __syncwarp();
        if (lane == 0) hp::mbarrier_arrive(vfree);
        if constexpr (kSplit) {
          hp::mbarrier_wait(kfull(stage), phase);
          wd::split_region(sbase + R::k_base(kC, stage), sbase + R::k_lo_base(kC, stage), R::kv_tile_bytes(kC), tt,
                           R::kTransposerThreads);
        }
        // The generic-proxy writes made visible to wgmma (the async proxy) before the arrival.
        hp::fence_proxy_async_shared();
        __syncwarp();
        if (lane == 0) hp::mbarrier_arrive(ready(stage));
      }
    }
    return;
  }

  // ---- consumers: warpgroup wg - 1 owns query rows q0 + 64 (wg - 1) .. + 63 -----------------------
  if constexpr (R::reallocates_registers(kC)) hp::setmaxnreg_inc<R::consumer_registers(kC)>();
  const int cw = wg - 1, ctid = tid - R::kWarpgroupThreads * wg;
  const int wi = ctid / 32, lane = ctid % 32, g = lane / 4, tq = lane % 4;
  const int row_first = q0 + kRows * cw;
  const uint32_t q_rows = q_smem + cw * R::block_bytes(kRows);
  const uint32_t q_lo_rows = sbase + R::q_lo_base(kC) + cw * R::block_bytes(kRows);
  const float sl2e = p.scale_log2e;

  hp::mbarrier_wait(qbar, 0);
  if constexpr (kSplit) {
    // This warpgroup's 64 rows of each column block are one contiguous 8 KB run.
#pragma unroll
    for (int b = 0; b < kDBlocks; ++b)
      wd::split_region(q_rows + b * R::block_bytes(BR), q_lo_rows + b * R::block_bytes(BR), R::block_bytes(kRows), ctid,
                       R::kWarpgroupThreads);
    hp::fence_proxy_async_shared();
    hp::named_barrier_sync(1 + cw, R::kWarpgroupThreads);
  }

  float o[R::o_registers(D)], s[R::s_registers(BC)];
#pragma unroll
  for (int i = 0; i < R::o_registers(D); ++i) o[i] = 0.0f;
#pragma unroll
  for (int i = 0; i < R::s_registers(BC); ++i) s[i] = 0.0f;
  float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.0f, 0.0f};
  float alpha[2];
  constexpr int KP = BC / 8;  // k-steps of P V
  uint32_t pa[KP][4];         // P (hi for 3xTF32): the A fragments of P V
  uint32_t pl[kSplit ? KP : 1][4];  // 3xTF32: P lo

  auto issue_qk = [&](int st) {
    const uint32_t k_smem = sbase + R::k_base(kC, st);
    constexpr int KK = D / 8;
    if constexpr (kSplit) {
      const uint32_t k_lo = sbase + R::k_lo_base(kC, st);
#pragma unroll
      for (int kk = 0; kk < KK; ++kk)
        wd::mma_ss<BC>(s, R::descriptor(q_lo_rows + R::kmajor_step_bytes(BR, kk)),
                       R::descriptor(k_smem + R::kmajor_step_bytes(BC, kk)), kk > 0 ? 1 : 0);
#pragma unroll
      for (int kk = 0; kk < KK; ++kk)
        wd::mma_ss<BC>(s, R::descriptor(q_rows + R::kmajor_step_bytes(BR, kk)),
                       R::descriptor(k_lo + R::kmajor_step_bytes(BC, kk)), 1);
    }
#pragma unroll
    for (int kk = 0; kk < KK; ++kk)
      wd::mma_ss<BC>(s, R::descriptor(q_rows + R::kmajor_step_bytes(BR, kk)),
                     R::descriptor(k_smem + R::kmajor_step_bytes(BC, kk)), (kSplit || kk > 0) ? 1 : 0);
  };
  auto needs_mask = [&](int t) {
    const int kv0 = t * BC;
    return kv0 + BC > p.kv_len || (p.causal && kv0 + BC - 1 > row_first + p.causal_offset);
  };
  auto softmax = [&](int t, auto kMask) {
    if constexpr (decltype(kMask)::value) {
      const int kv0 = t * BC;
#pragma unroll
      for (int j = 0; j < BC / 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int row = row_first + 16 * wi + g + 8 * (e / 2);
          if (masked(p, row, kv0 + 8 * j + 2 * tq + e % 2)) s[4 * j + e] = -INFINITY;
        }
    }
    wgmma_softmax::update_rows<BC>(s, m_run, l_run, alpha, sl2e);
  };
  // P's A fragments: k-step j is keys 8j .. 8j + 7 in V^T's slot order (index k = t is key 2t,
  // k = t + 4 key 2t + 1): the accumulator's s[4j], s[4j + 2], s[4j + 1], s[4j + 3].
  auto pack_p = [&]() {
#pragma unroll
    for (int j = 0; j < KP; ++j) {
      const float v[4] = {s[4 * j + 0], s[4 * j + 2], s[4 * j + 1], s[4 * j + 3]};
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        if constexpr (kSplit) {
          const float h = wd::hi_of(v[i]);
          pa[j][i] = __float_as_uint(h);
          pl[j][i] = __float_as_uint(v[i] - h);
        } else {
          pa[j][i] = wd::round_tf32(v[i]);
        }
      }
    }
  };
  auto vt_desc = [&](uint32_t base, int kk) { return R::descriptor(base + R::kmajor_step_bytes(D, kk)); };
  auto release = [&](int st) {
    __syncwarp();
    if (lane == 0) hp::mbarrier_arrive(empty(st));
  };

  for (int t = 0; t < kv_tiles; ++t) {
    const int stage = t % STAGES;
    const uint32_t phase = static_cast<uint32_t>(t / STAGES) & 1u;
    hp::mbarrier_wait(kfull(stage), phase);
    if constexpr (kSplit) hp::mbarrier_wait(ready(stage), phase);  // K hi / K lo
    if (!(p.causal && t * BC > row_first + kRows - 1 + p.causal_offset)) {
      hp::fence_registers(s);
      hp::wgmma_fence();
      issue_qk(stage);
      hp::wgmma_commit();
      hp::wgmma_wait<0>();
      hp::fence_registers(s);
      if (needs_mask(t)) softmax(t, std::true_type{});
      else softmax(t, std::false_type{});
      pack_p();
      if constexpr (!kSplit) hp::mbarrier_wait(ready(stage), phase);  // V^T
      const uint32_t vt = sbase + R::vt_base(kC, stage);
      if constexpr (kSplit) {
        // This tile's P V from zero, then O = alpha O + it (traits header: accumulation drift).
        const uint32_t vt_lo = sbase + R::vt_lo_base(kC, stage);
        float acc[R::o_registers(D)];
        hp::fence_registers(pa);
        hp::fence_registers(pl);
        hp::wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < KP; ++kk) wd::mma_rs<D>(acc, pl[kk], vt_desc(vt, kk), kk > 0 ? 1 : 0);
#pragma unroll
        for (int kk = 0; kk < KP; ++kk) wd::mma_rs<D>(acc, pa[kk], vt_desc(vt_lo, kk), 1);
#pragma unroll
        for (int kk = 0; kk < KP; ++kk) wd::mma_rs<D>(acc, pa[kk], vt_desc(vt, kk), 1);
        hp::wgmma_commit();
        hp::wgmma_wait<0>();
        hp::fence_registers(acc);
        hp::fence_registers(pa);
        hp::fence_registers(pl);
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
          for (int j = 0; j < D / 8; ++j) {
            o[4 * j + 2 * h] = fmaf(o[4 * j + 2 * h], alpha[h], acc[4 * j + 2 * h]);
            o[4 * j + 2 * h + 1] = fmaf(o[4 * j + 2 * h + 1], alpha[h], acc[4 * j + 2 * h + 1]);
          }
      } else {
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
          for (int j = 0; j < D / 8; ++j) {
            o[4 * j + 2 * h] *= alpha[h];
            o[4 * j + 2 * h + 1] *= alpha[h];
          }
        hp::fence_registers(o);
        hp::fence_registers(pa);
        hp::wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < KP; ++kk) wd::mma_rs<D>(o, pa[kk], vt_desc(vt, kk), 1);
        hp::wgmma_commit();
        hp::wgmma_wait<0>();
        hp::fence_registers(o);
        hp::fence_registers(pa);
      }
    } else if constexpr (!kSplit) {
      // Skipped, but waited for: the ready phases must not fall a round behind (traits header).
      hp::mbarrier_wait(ready(stage), phase);
    }
    release(stage);
  }

  // Epilogue: O / l into this warpgroup's rows of the Q tile (its Q reads are complete), then one
  // TMA store per column block; rows past N are clipped by the map.
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float l = l_run[h];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;
    const int row = kRows * cw + 16 * wi + g + 8 * h;
#pragma unroll
    for (int j = 0; j < D / 8; ++j)
      wd::st_shared_f2(q_smem + R::element_byte(BR, row, 8 * j + 2 * tq), o[4 * j + 2 * h] * inv,
                       o[4 * j + 2 * h + 1] * inv);
  }
  hp::fence_proxy_async_shared();
  hp::named_barrier_sync(1 + cw, R::kWarpgroupThreads);
  if (ctid == 0) {
#pragma unroll
    for (int b = 0; b < kDBlocks; ++b)
      hp::tma_store_4d(&prm.o, q_rows + b * R::block_bytes(BR), b * R::kBlockColumns, row_first, head, batch);
    hp::tma_store_commit();
    hp::tma_store_wait_read();
  }
}

}  // namespace flashtune::kernels
