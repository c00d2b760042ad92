// Tensor-core FlashAttention-2 forward on mma.sync m16n8k16 with bf16 or fp16 operands, fp32
// accumulate and fp32 softmax statistics; Q, K, V and O of the dtype. Fragment layouts, the
// shared-memory layout, the ldmatrix row addresses and the pipeline come from
// kernels/traits/mma16_traits.h (read it first); this file turns them into instructions. Needs
// nvcc --expt-relaxed-constexpr (the traits' index functions run on the device).
//
// The operand pointers of AttentionParams are typed float* for the fp32 kernels; here they point
// at 16-bit elements, and every offset (the strides, Entry::offset) counts elements, so they are
// reinterpreted as uint16_t* before any arithmetic.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "kernels/async_copy.cuh"
#include "kernels/attention_params.cuh"
#include "kernels/traits/mma16_traits.h"

namespace flashtune::kernels {

namespace mma16_detail {

// The two 16-bit element types: the pair conversion and the mma.
template <int DT>
struct Elem;

template <>
struct Elem<static_cast<int>(DType::Bf16)> {
  // lo in bits 0-15 (the lower column / k index), hi in bits 16-31; round to nearest even.
  static __device__ __forceinline__ uint32_t pack(float lo, float hi) {
    uint32_t r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
  }
  static __device__ __forceinline__ void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
};

template <>
struct Elem<static_cast<int>(DType::Fp16)> {
  static __device__ __forceinline__ uint32_t pack(float lo, float hi) {
    uint32_t r;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
  }
  static __device__ __forceinline__ void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
};

// ldmatrix.x4 (and .trans) from a shared-memory byte address this lane supplies. volatile: the
// same address holds another tile's data after the next barrier, so no two may be merged.
__device__ __forceinline__ void ldsm_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldsm_x4_trans(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

__device__ __forceinline__ void st_shared_u32(uint32_t addr, uint32_t v) {
  asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(addr), "r"(v) : "memory");
}
__device__ __forceinline__ uint4 ld_shared_v4(uint32_t addr) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(addr) : "memory");
  return v;
}

// One MUFU.EX2 (scores in base-2 units after the FFMA with scale * log2 e).
__device__ __forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// The online softmax of one tile of scores on the m16n8 accumulator fragments: MT m16 tiles x NS
// n8 tiles of S (fp32), C elements 2h and 2h + 1 of m16 tile mt being row 2 mt + h, whose 4 lanes of
// a group hold the row. Per row the running max m_run (raw score units) and this lane's share of
// the running sum l_run take the tile, S becomes P = exp2(S sl2e - max sl2e), and O (NO n8 tiles)
// is rescaled to the new max. mma16's tiles and the decode family's 16-bit path share it.
template <int MT, int NS, int NO>
__device__ __forceinline__ void online_softmax_m16(float (&s)[MT][NS][4], float (&m_run)[2 * MT], float (&l_run)[2 * MT],
                                                   float (&o)[MT][NO][4], float sl2e) {
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = 2 * mt + h;
      float mx = -INFINITY;
#pragma unroll
      for (int j = 0; j < NS; ++j) mx = fmaxf(mx, fmaxf(s[mt][j][2 * h], s[mt][j][2 * h + 1]));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      const float m_new = fmaxf(m_run[r], mx);
      // A row with every score so far masked keeps -inf; subtracting 0 keeps exp2 at 0.
      const float m_scaled = m_new == -INFINITY ? 0.0f : m_new * sl2e;
      const float alpha = exp2_approx(fmaf(m_run[r], sl2e, -m_scaled));
      float sum = 0.0f;
#pragma unroll
      for (int j = 0; j < NS; ++j) {
        s[mt][j][2 * h] = exp2_approx(fmaf(s[mt][j][2 * h], sl2e, -m_scaled));
        s[mt][j][2 * h + 1] = exp2_approx(fmaf(s[mt][j][2 * h + 1], sl2e, -m_scaled));
        sum += s[mt][j][2 * h] + s[mt][j][2 * h + 1];
      }
      l_run[r] = fmaf(l_run[r], alpha, sum);
      m_run[r] = m_new;
#pragma unroll
      for (int n = 0; n < NO; ++n) {
        o[mt][n][2 * h] *= alpha;
        o[mt][n][2 * h + 1] *= alpha;
      }
    }
}

// P's A fragments for k-step kk of O += P V: S tiles 2 kk and 2 kk + 1 of each m16 tile, packed to
// the dtype (E: Elem<DT>).
template <class E, int MT, int NS>
__device__ __forceinline__ void pack_p_fragments(uint32_t (&pa)[MT][4], const float (&s)[MT][NS][4], int kk) {
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
    pa[mt][0] = E::pack(s[mt][2 * kk][0], s[mt][2 * kk][1]);
    pa[mt][1] = E::pack(s[mt][2 * kk][2], s[mt][2 * kk][3]);
    pa[mt][2] = E::pack(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
    pa[mt][3] = E::pack(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
  }
}

// Cooperative cp.async of rows [row0, row0 + Rows) of a [N, D] 16-bit matrix: chunk
// idx = tid + trip * Threads (row idx / (D / 8), chunk idx % (D / 8)); a trip advances whole rows,
// so the chunk stays the thread's. place(row, chunk, grow, valid): grow is row 0 where the row is
// past N (its copy zero-fills).
template <int D, int Rows, int Threads, class Place>
__device__ __forceinline__ void copy_rows(int tid, int row0, int n, Place place) {
  constexpr int C = traits::Mma16::chunks(D);
  constexpr int kChunks = Rows * C;
  constexpr int kTrips = traits::Mma16::copy_trips(Rows, D, Threads);
  static_assert(Threads % C == 0, "a trip must advance whole rows");
  const int row_of_tid = tid / C, chunk = tid % C;
#pragma unroll
  for (int trip = 0; trip < kTrips; ++trip) {
    if (kChunks % Threads == 0 || tid + trip * Threads < kChunks) {
      const int row = row_of_tid + trip * (Threads / C);
      const bool valid = row0 + row < n;
      place(row, chunk, valid ? row0 + row : 0, valid);
    }
  }
}

}  // namespace mma16_detail

// One block per (query tile, batch entry); under causal the query tiles run last-first
// (heavy first) on a batch-fastest grid.
template <int D, int BR, int BC, Layout L, int DT, int STAGES, int QSMEM>
__global__ void __launch_bounds__(traits::Mma16::Tile<D, BR, BC, L, DT, STAGES, QSMEM>::kThreads, 1)
    mma16_kernel(const AttentionParams p) {
  using R = traits::Mma16;
  using T = R::Tile<D, BR, BC, L, DT, STAGES, QSMEM>;
  using E = mma16_detail::Elem<DT>;
  namespace md = mma16_detail;
  constexpr int kThreads = T::kThreads;
  constexpr int MT = R::kMTiles, NS = R::s_tiles(BC), NO = R::o_tiles(D), KQ = R::qk_steps(D), KP = R::pv_steps(BC);
  constexpr int C = R::chunks(D);
  constexpr TileConfig kC = T::kConfig;
  constexpr bool kQSmem = QSMEM != 0;

  extern __shared__ __align__(128) unsigned char smem[];
  const uint32_t sbase = static_cast<uint32_t>(__cvta_generic_to_shared(smem));

  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid % 32;
  const int g = R::group_of(lane), tq = R::thread_in_group(lane);
  const BlockCoords coords = block_coords<true>(p);
  const int q_tile = p.causal ? p.q_tiles - 1 - coords.q_tile : coords.q_tile;
  const Entry entry = entry_of(p, coords.batch);
  const int q0 = q_tile * BR;
  const int kv_tiles = kv_tile_count<BR, BC>(p, q_tile);
  const uint16_t* const qg = reinterpret_cast<const uint16_t*>(p.q) + entry.offset(p.qs);
  // K and V share their entry offset (check_tensors); their bases are formed where used from the
  // parameters (constant bank), so the loop holds one 64-bit offset, not two pointers.
  const long long kv_off = entry.kv_offset(p);

  // K and V rows [tile * BC, tile * BC + BC) into stage `stage`. A trip moves the thread
  // kRowsPerTrip rows down in the same chunk: one K and one V address per tile, advanced by a
  // stride per trip (an address per trip costs the d = 128 tiles their last free registers).
  constexpr int kCopyRowsPerTrip = kThreads / C;
  constexpr int kKvTrips = R::copy_trips(BC, D, kThreads);
  static_assert(BC * C % kThreads == 0, "whole copy trips");
  const int copy_row = tid / C, copy_chunk = tid % C;
  // Rows kCopyRowsPerTrip apart share the swizzle when that is a multiple of 8 (its period); at
  // d = 128, Br = 64 (4 rows a trip) even and odd trips alternate between two.
  constexpr int kSwizzlePhases = kCopyRowsPerTrip % 8 == 0 ? 1 : 8 / kCopyRowsPerTrip;
  static_assert(8 % kCopyRowsPerTrip == 0 || kCopyRowsPerTrip % 8 == 0, "copy trips within the swizzle period");
  auto load_kv = [&](int tile, int stage) {
    const uint32_t kbase = sbase + R::k_base(kC, stage);
    const int row0 = tile * BC + copy_row;
    const uint16_t* const kg = reinterpret_cast<const uint16_t*>(p.k) + kv_off;
    const uint16_t* const vg = reinterpret_cast<const uint16_t*>(p.v) + kv_off;
    const uint16_t* kp = kg + static_cast<long long>(row0) * p.ks.row + 8 * copy_chunk;
    const uint16_t* vp = vg + static_cast<long long>(row0) * p.vs.row + 8 * copy_chunk;
#pragma unroll
    for (int trip = 0; trip < kKvTrips; ++trip) {
      const int phase = trip % kSwizzlePhases, period = trip / kSwizzlePhases;
      const uint32_t kd = kbase + R::chunk_byte(L, D, copy_row + phase * kCopyRowsPerTrip, copy_chunk) +
                          period * kSwizzlePhases * kCopyRowsPerTrip * R::row_bytes(D, L);
      const bool valid = row0 + trip * kCopyRowsPerTrip < p.kv_len;
      cp_async_16(kd, valid ? kp : kg, valid);
      cp_async_16(kd + R::kv_tile_bytes(kC), valid ? vp : vg, valid);
      kp += static_cast<long long>(kCopyRowsPerTrip) * p.ks.row;
      vp += static_cast<long long>(kCopyRowsPerTrip) * p.vs.row;
    }
  };

  // Prologue: group 0 = the Q tile and K/V tile 0; groups 1 .. STAGES - 2 = tiles 1 .. STAGES - 2
  // (empty past the last tile, so that the group count stays uniform).
  md::copy_rows<D, BR, kThreads>(tid, q0, p.N, [&](int row, int chunk, int grow, bool valid) {
    cp_async_16(sbase + R::q_base(kC) + R::chunk_byte(L, D, row, chunk),
                qg + static_cast<std::size_t>(grow) * p.qs.row + 8 * chunk, valid);
  });
  load_kv(0, 0);
  cp_async_commit();
#pragma unroll
  for (int s = 1; s < STAGES - 1; ++s) {
    if (s < kv_tiles) load_kv(s, s);
    cp_async_commit();
  }

  // This lane's ldmatrix bases (traits: frag bases), one per operand: base j of a tile is
  // frag_next(L, tile + base 0, j) (tiles start on 128-byte boundaries).
  const uint32_t kfb0 = R::k_frag_base(D, L, lane, 0), vfb0 = R::v_frag_base(D, L, lane, 0);
  const uint32_t qfb0 = sbase + R::q_base(kC) + R::q_frag_base(D, L, warp, lane, 0);
  auto at = [](uint32_t base0, int j) { return static_cast<uint32_t>(R::frag_next(L, static_cast<int>(base0), j)); };

  // Q in registers: read once, after group 0 landed.
  constexpr int KQR = kQSmem ? 1 : KQ;
  uint32_t qr[KQR][MT][4];
  if constexpr (!kQSmem) {
    cp_async_wait_group<STAGES - 2>();
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < KQ; ++kk)
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) md::ldsm_x4(qr[kk][mt], at(qfb0, kk % 4) + R::q_frag_step(D, L, mt, kk));
  }

  float o[MT][NO][4];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int m = 0; m < NO; ++m) o[mt][m][0] = o[mt][m][1] = o[mt][m][2] = o[mt][m][3] = 0.0f;
  // Rows r = 2 mt + h: fragment row g + 8 h of m16 tile mt.
  float m_run[2 * MT], l_run[2 * MT];
#pragma unroll
  for (int r = 0; r < 2 * MT; ++r) {
    m_run[r] = -INFINITY;
    l_run[r] = 0.0f;  // this lane's share of the row sum (reduced at the end)
  }
  const float sl2e = p.scale_log2e;
  // The last key the warp's first row sees (bottom-right causal: row + causal_offset), the one
  // value the K/V loop holds for its skip and mask tests, as it held the first row before
  // inference operands: the row and the offset side by side made d128 128x64 spill 20 more bytes.
  const int warp_last_key = q0 + R::kRowsPerWarp * warp + p.causal_offset;

  // The ring's stage of tile t is t % STAGES. At d = 64 it is formed from t (a mask or a
  // multiply-high per tile) instead of a second counter held across the loop: with the counter
  // ptxas (nvcc 13.0, sm_90) spilled 4-8 bytes in the Bc = 128 tiles. At d = 32 and 128 the
  // counter stays: there ptxas allocates worse without it (d32 64x128 spilled 8 bytes, d128
  // 128x64 up to 60).
  constexpr bool kStageFromTile = D == 64;
  int stage = 0;
  for (int t = 0; t < kv_tiles; ++t) {
    // Tile t landed; every warp finished tile t - 1, whose stage tile t + STAGES - 1 now takes.
    cp_async_wait_group<STAGES - 2>();
    __syncthreads();
    {
      const int next = t + STAGES - 1;
      if (next < kv_tiles) load_kv(next, kStageFromTile ? next % STAGES : (stage == 0 ? STAGES - 1 : stage - 1));
      cp_async_commit();
    }
    const int kv0 = t * BC;
    const int cur = kStageFromTile ? t % STAGES : stage;
    if constexpr (!kStageFromTile) stage = stage + 1 == STAGES ? 0 : stage + 1;
    if (p.causal && kv0 > warp_last_key + R::kRowsPerWarp - 1) continue;  // every key after every row
    const uint32_t kst = sbase + R::k_base(kC, cur), vst = sbase + R::v_base(kC, cur);

    // S = Q K^T (unscaled, fp32).
    float s[MT][NS][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int j = 0; j < NS; ++j) s[mt][j][0] = s[mt][j][1] = s[mt][j][2] = s[mt][j][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < KQ; ++kk) {
      uint32_t qa[MT][4];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        if constexpr (kQSmem) {
          md::ldsm_x4(qa[mt], at(qfb0, kk % 4) + R::q_frag_step(D, L, mt, kk));
        } else {
#pragma unroll
          for (int i = 0; i < 4; ++i) qa[mt][i] = qr[kQSmem ? 0 : kk][mt][i];
        }
      }
#pragma unroll
      for (int np = 0; np < NS / 2; ++np) {
        uint32_t kb[4];
        md::ldsm_x4(kb, at(kst + kfb0, kk % 4) + R::k_frag_step(D, L, np, kk));
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          E::mma(s[mt][2 * np], qa[mt], kb[0], kb[1]);
          E::mma(s[mt][2 * np + 1], qa[mt], kb[2], kb[3]);
        }
      }
    }

    // Keys past kv_len, and keys after the row's where the tile crosses this warp's (bottom-right)
    // causal diagonal.
    if (kv0 + BC > p.kv_len || (p.causal && kv0 + BC - 1 > warp_last_key)) {
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int j = 0; j < NS; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int last_key = warp_last_key + 16 * mt + g + 8 * (e / 2);
            if (masked_after(p, last_key, kv0 + 8 * j + 2 * tq + e % 2)) s[mt][j][e] = -INFINITY;
          }
    }

    // Online softmax in fp32 (rows 2 mt + h of the m16 tiles).
    md::online_softmax_m16(s, m_run, l_run, o, sl2e);

    // O += P V: S tiles 2kk and 2kk + 1, packed to the dtype, are the A fragment of k-step kk.
#pragma unroll
    for (int kk = 0; kk < KP; ++kk) {
      uint32_t pa[MT][4];
      md::pack_p_fragments<E>(pa, s, kk);
#pragma unroll
      for (int np = 0; np < NO / 2; ++np) {
        uint32_t vb[4];
        md::ldsm_x4_trans(vb, at(vst + vfb0, np % 4) + R::v_frag_step(D, L, kk, np));
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          E::mma(o[mt][2 * np], pa[mt], vb[0], vb[1]);
          E::mma(o[mt][2 * np + 1], pa[mt], vb[2], vb[3]);
        }
      }
    }
  }
  cp_async_wait_all();  // nothing in flight when the block exits

  // O / l, rounded to the dtype, into this warp's own rows of the Q tile (only this warp reads
  // them: no block barrier), then 16-byte rows to global memory.
  const uint32_t qst = sbase + R::q_base(kC);
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float l = l_run[2 * mt + h];
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
      const float inv = l > 0.0f ? 1.0f / l : 0.0f;
#pragma unroll
      for (int m = 0; m < NO; ++m)
        md::st_shared_u32(qst + R::o_stage_byte(D, L, warp, mt, h, m, lane),
                          E::pack(o[mt][m][2 * h] * inv, o[mt][m][2 * h + 1] * inv));
    }
  __syncwarp();
  const Entry oe = late_entry<R::kCausalHeavyFirst>(p);
  uint16_t* const out = reinterpret_cast<uint16_t*>(p.o) + oe.offset(p.os);
#pragma unroll
  for (int i = 0; i < R::o_store_trips(D); ++i) {
    const int idx = lane + 32 * i, row = R::kRowsPerWarp * warp + idx / C, chunk = idx % C;
    const int grow = q0 + row;
    if (grow < p.N) {
      const uint4 v = md::ld_shared_v4(qst + R::chunk_byte(L, D, row, chunk));
      *reinterpret_cast<uint4*>(out + static_cast<std::size_t>(grow) * p.os.row + 8 * chunk) = v;
    }
  }
}

}  // namespace flashtune::kernels
