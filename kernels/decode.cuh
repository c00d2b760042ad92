// Split-KV decode (flash-decoding): the kernels. The shape, the shared-memory layout and the work
// split come from kernels/traits/decode_traits.h (read it first); this file turns them into
// instructions. bf16 / fp16 multiply on the tensor cores (mma.sync m16n8k16, the fragment
// addressing of kernels/traits/mma16_traits.h), fp32 on the FP32 pipe with exact products.
// Needs nvcc --expt-relaxed-constexpr (the traits' index functions run on the device).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/async_copy.cuh"
#include "kernels/attention_params.cuh"
#include "kernels/mma16.cuh"
#include "kernels/traits/decode_traits.h"

namespace flashtune::kernels {

// What both kernels receive. Strides in elements of the dtype; entry (b, query head hq) reads
// K/V head hq / kv_group.
struct DecodeParams {
  const void* q;
  const void* k;
  const void* v;
  void* o;
  DeviceStrides qs, ks, vs, os;
  long long kv_entries;  // batch x K/V heads
  int kv_heads, kv_group, nq, keys;
  int causal, causal_offset;  // query row i sees keys j <= i + causal_offset (keys - nq)
  float scale_log2e;
  int rows;         // packed rows per K/V head: kv_group x nq
  int row_tiles;    // ceil(rows / Br)
  int splits;       // key chunks; 1: the split kernel writes O itself
  int chunk_tiles;  // key tiles per chunk (a multiple of the warps)
  float* work;      // splits > 1: [kv entry][row tile x Br][split][2 + d] fp32 (max, sum, O)
  // splits > 1 with the combine in the split kernel: one ticket word per (kv entry, row tile),
  // tagged with this launch's id (traits::Decode::ticket_* says why and how).
  unsigned long long* tickets;
  unsigned long long ticket_id;
  int flags;  // DecodeFlags
};

// How a launch streams and combines, one bit each. The launch sets kDecodeEvictFirst by the
// traits' rule (traits::Decode::evict_first); the other two are kept for measurement
// (FLASHTUNE_DECODE_FLAGS) and are off: on the H100 the 256-byte L2 prefetch changed nothing, and
// the combine in the split kernel (the last block of an entry merges the splits) saved nothing
// where one row per entry is combined and cost 5-10 us where 16 are (Nq = 4, kv_group 4: one
// block's four warps walk 16 rows x the splits while the other SMs idle, where the combine kernel
// spreads them over blocks); docs/results/h100-decode-stream-flags-*.txt.
enum DecodeFlags : int {
  kDecodeEvictFirst = 1,      // K/V cp.async with an L2 evict-first policy
  kDecodePrefetch256 = 2,     // and the L2::256B prefetch size
  kDecodeFusedCombine = 4,    // the last block of each (kv entry, row tile) combines the splits
  kDecodeClusterCombine = 8,  // the splits of a row tile are one cluster and merge in it (sm_90)
  // Measurement only: no combine at all where the combine kernel would run, so O is wrong; what
  // the call costs without it (benchmarks/decode_combine_cost.sh).
  kDecodeSkipCombineToTimeIt = 16,
};

namespace decode_detail {

template <int DT>
__device__ __forceinline__ void store_elem(void* base, long long at, float x) {
  if constexpr (DT == static_cast<int>(DType::Fp32)) {
    static_cast<float*>(base)[at] = x;
  } else if constexpr (DT == static_cast<int>(DType::Bf16)) {
    static_cast<__nv_bfloat16*>(base)[at] = __float2bfloat16_rn(x);
  } else {
    static_cast<__half*>(base)[at] = __float2half_rn(x);
  }
}

// Packed row r of K/V head hkv: query head hkv * kv_group + r / nq, query row r % nq.
struct QueryRow {
  int head, row;
};
__device__ __forceinline__ QueryRow query_row(const DecodeParams& p, int hkv, int r) {
  const int g = r / p.nq;
  return {hkv * p.kv_group + g, r - g * p.nq};
}
__device__ __forceinline__ long long operand_offset(const DeviceStrides& s, long long b, const QueryRow& q) {
  return b * s.batch + static_cast<long long>(q.head) * s.head + static_cast<long long>(q.row) * s.row;
}

// Whether key `key` is hidden from packed row r: past the keys, or after the row's bottom-right
// aligned diagonal.
__device__ __forceinline__ bool key_masked(const DecodeParams& p, int r, int key) {
  if (key >= p.keys) return true;
  if (!p.causal) return false;
  return key > r % p.nq + p.causal_offset;
}
// Whether any key of [key0, key0 + n) may be hidden from some row (the tail tile, the diagonal).
__device__ __forceinline__ bool tile_needs_mask(const DecodeParams& p, int key0, int n) {
  return key0 + n > p.keys || (p.causal && key0 + n - 1 > p.causal_offset);
}

// exp2 of a difference whose first term may be -inf (an all-masked row so far): 0 then.
__device__ __forceinline__ float weight(float m, float base) {
  return m == -INFINITY ? 0.0f : mma16_detail::exp2_approx(m - base);
}

// cp.async of 16 bytes with an L2 cache policy (sm_80+), and with the 256-byte L2 prefetch size.
__device__ __forceinline__ void cp_async_16_policy(uint32_t dst, const void* src, bool valid, uint64_t policy) {
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, %3;\n" ::"r"(dst), "l"(src),
               "r"(valid ? 16 : 0), "l"(policy)
               : "memory");
}
__device__ __forceinline__ void cp_async_16_policy_256(uint32_t dst, const void* src, bool valid, uint64_t policy) {
  asm volatile("cp.async.cg.shared.global.L2::cache_hint.L2::256B [%0], [%1], 16, %2, %3;\n" ::"r"(dst), "l"(src),
               "r"(valid ? 16 : 0), "l"(policy)
               : "memory");
}
__device__ __forceinline__ uint64_t evict_first_policy() {
  uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
  return policy;
}

// A warp's cp.async of key tile `tile` (rows [tile Bc, tile Bc + Bc), zero past the keys) of K
// and V into its stage at kst (K) and kst + kv tile bytes (V), chunks swizzled. A trip moves the
// lane 32 / chunks rows down in the same chunk: one address per operand, advanced by a stride.
template <class T>
__device__ __forceinline__ void load_kv_tile(const DecodeParams& p, const char* kg, const char* vg, uint32_t kst,
                                             int tile, int lane, uint64_t policy) {
  using Tr = traits::Decode;
  constexpr TileConfig c = T::kConfig;
  constexpr int C = T::kChunks, kRowsPerTrip = 32 / C, kTrips = c.Bc * C / 32;
  constexpr int kElemsPerChunk = Tr::kChunkBytes / T::kElementBytes;
  const int row_in_trip = lane / C, chunk = lane % C;
  const int key0 = tile * c.Bc + row_in_trip;
  const long long kstep = static_cast<long long>(kRowsPerTrip) * p.ks.row * T::kElementBytes;
  const long long vstep = static_cast<long long>(kRowsPerTrip) * p.vs.row * T::kElementBytes;
  const char* kp = kg + (static_cast<long long>(key0) * p.ks.row + chunk * kElemsPerChunk) * T::kElementBytes;
  const char* vp = vg + (static_cast<long long>(key0) * p.vs.row + chunk * kElemsPerChunk) * T::kElementBytes;
  const bool whole = (tile + 1) * c.Bc <= p.keys;
#pragma unroll
  for (int trip = 0; trip < kTrips; ++trip) {
    const int row = trip * kRowsPerTrip + row_in_trip;
    const bool valid = whole || key0 + trip * kRowsPerTrip < p.keys;
    const uint32_t dst = kst + Tr::chunk_byte(c.d, c.dtype, row, chunk);
    if (p.flags & kDecodePrefetch256) {
      cp_async_16_policy_256(dst, valid ? kp : kg, valid, policy);
      cp_async_16_policy_256(dst + Tr::kv_tile_bytes(c), valid ? vp : vg, valid, policy);
    } else if (p.flags & kDecodeEvictFirst) {
      cp_async_16_policy(dst, valid ? kp : kg, valid, policy);
      cp_async_16_policy(dst + Tr::kv_tile_bytes(c), valid ? vp : vg, valid, policy);
    } else {
      cp_async_16(dst, valid ? kp : kg, valid);
      cp_async_16(dst + Tr::kv_tile_bytes(c), valid ? vp : vg, valid);
    }
    kp += kstep;
    vp += vstep;
  }
}

// ---- the math of one key tile, two ways ------------------------------------------------------

// bf16 / fp16 on the tensor cores: S = Q K^T over Br / 16 m16 tiles, online softmax on the C
// fragments (row g + 8 h of m16 tile mt is row 2 mt + h of this lane), P packed to the dtype as the
// A fragment of P V.
template <class T, int DT>
struct MmaMath {
  static constexpr TileConfig c = T::kConfig;
  static constexpr int D = c.d, BR = c.Br, BC = c.Bc;
  static constexpr int MT = BR / 16, NS = BC / 8, NO = D / 8, KQ = D / 16, KP = BC / 16;
  using M16 = traits::Mma16;
  using E = mma16_detail::Elem<DT>;

  float o[MT][NO][4];
  float m[2 * MT];  // running max in raw score units
  float l[2 * MT];  // this lane's share of the row sum

  __device__ __forceinline__ void init() {
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int n = 0; n < NO; ++n) o[mt][n][0] = o[mt][n][1] = o[mt][n][2] = o[mt][n][3] = 0.0f;
#pragma unroll
    for (int r = 0; r < 2 * MT; ++r) {
      m[r] = -INFINITY;
      l[r] = 0.0f;
    }
  }

  __device__ __forceinline__ void tile(const DecodeParams& p, uint32_t qs, uint32_t kst, int key0, int row0, int lane) {
    using Tr = traits::Decode;
    const uint32_t vst = kst + Tr::kv_tile_bytes(c);
    const int g = lane / 4, t = lane % 4;
    float s[MT][NS][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int j = 0; j < NS; ++j) s[mt][j][0] = s[mt][j][1] = s[mt][j][2] = s[mt][j][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < KQ; ++kk) {
      uint32_t qa[MT][4];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
        mma16_detail::ldsm_x4(qa[mt], qs + Tr::chunk_byte(D, c.dtype, M16::q_ld_row(0, mt, lane), M16::q_ld_chunk(kk, lane)));
#pragma unroll
      for (int np = 0; np < NS / 2; ++np) {
        uint32_t kb[4];
        mma16_detail::ldsm_x4(kb, kst + Tr::chunk_byte(D, c.dtype, M16::k_ld_row(np, lane), M16::k_ld_chunk(kk, lane)));
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          E::mma(s[mt][2 * np], qa[mt], kb[0], kb[1]);
          E::mma(s[mt][2 * np + 1], qa[mt], kb[2], kb[3]);
        }
      }
    }
    if (tile_needs_mask(p, key0, BC)) {
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int j = 0; j < NS; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e)
            if (key_masked(p, row0 + 16 * mt + g + 8 * (e / 2), key0 + 8 * j + 2 * t + e % 2)) s[mt][j][e] = -INFINITY;
    }
    mma16_detail::online_softmax_m16(s, m, l, o, p.scale_log2e);
#pragma unroll
    for (int kk = 0; kk < KP; ++kk) {
      uint32_t pa[MT][4];
      mma16_detail::pack_p_fragments<E>(pa, s, kk);
#pragma unroll
      for (int np = 0; np < NO / 2; ++np) {
        uint32_t vb[4];
        mma16_detail::ldsm_x4_trans(vb, vst + Tr::chunk_byte(D, c.dtype, M16::v_ld_row(kk, lane), M16::v_ld_chunk(np, lane)));
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          E::mma(o[mt][2 * np], pa[mt], vb[0], vb[1]);
          E::mma(o[mt][2 * np + 1], pa[mt], vb[2], vb[3]);
        }
      }
    }
  }

  // This warp's rows into the merge area: O [Br, d] fp32 and (max in log2 units, sum) per row.
  __device__ __forceinline__ void write_partial(float* mo, float* ml, float sl2e, int lane) {
    const int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = 2 * mt + h, row = 16 * mt + g + 8 * h;
        float sum = l[r];
        sum += __shfl_xor_sync(0xffffffffu, sum, 1);
        sum += __shfl_xor_sync(0xffffffffu, sum, 2);
#pragma unroll
        for (int n = 0; n < NO; ++n)
          *reinterpret_cast<float2*>(mo + row * D + 8 * n + 2 * t) = make_float2(o[mt][n][2 * h], o[mt][n][2 * h + 1]);
        if (t == 0) {
          ml[2 * row] = m[r] == -INFINITY ? -INFINITY : m[r] * sl2e;
          ml[2 * row + 1] = sum;
        }
      }
  }
};

// fp32 on the FP32 pipe. Q K^T: lane = key (Bc = 32) or two lanes per key, each half the chunks
// (Bc = 16), Q read from shared memory as broadcasts, the scores already in log2 units (Q was
// pre-scaled). P V: P through this warp's [Bc, Br] shared buffer, lane = d / 32 columns of O.
template <class T>
struct SimtMath {
  static constexpr TileConfig c = T::kConfig;
  static constexpr int D = c.d, BR = c.Br, BC = c.Bc;
  static constexpr int C = T::kChunks, LPK = traits::Decode::lanes_per_key(BC), CPL = C / LPK;
  static constexpr int OC = traits::Decode::o_cols_per_lane(D);

  float o[BR][OC];
  float m[BR];  // running max (log2 units), the same in every lane
  float l[BR];  // this lane's share of the row sum

  __device__ __forceinline__ void init() {
#pragma unroll
    for (int r = 0; r < BR; ++r) {
#pragma unroll
      for (int j = 0; j < OC; ++j) o[r][j] = 0.0f;
      m[r] = -INFINITY;
      l[r] = 0.0f;
    }
  }

  __device__ __forceinline__ void tile(const DecodeParams& p, const float* qs, const unsigned char* kst, float* ps,
                                       int key0, int row0, int lane) {
    using Tr = traits::Decode;
    const unsigned char* vst = kst + Tr::kv_tile_bytes(c);
    const int key = lane % BC, half = lane / BC;
    float s[BR];
#pragma unroll
    for (int r = 0; r < BR; ++r) s[r] = 0.0f;
#pragma unroll
    for (int i = 0; i < CPL; ++i) {
      const int cc = half * CPL + i;
      const float4 kv = *reinterpret_cast<const float4*>(kst + Tr::chunk_byte(D, c.dtype, key, cc));
#pragma unroll
      for (int r = 0; r < BR; ++r) s[r] = dot4(*reinterpret_cast<const float4*>(qs + r * D + 4 * cc), kv, s[r]);
    }
    if constexpr (LPK == 2) {
#pragma unroll
      for (int r = 0; r < BR; ++r) s[r] += __shfl_xor_sync(0xffffffffu, s[r], 16);
    }
    if (tile_needs_mask(p, key0, BC)) {
#pragma unroll
      for (int r = 0; r < BR; ++r)
        if (key_masked(p, row0 + r, key0 + key)) s[r] = -INFINITY;
    }
#pragma unroll
    for (int r = 0; r < BR; ++r) {
      float mx = s[r];
#pragma unroll
      for (int off = 16; off >= 1; off /= 2) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
      const float m_new = fmaxf(m[r], mx);
      const float base = m_new == -INFINITY ? 0.0f : m_new;
      const float alpha = weight(m[r], base);
      s[r] = weight(s[r], base);
      l[r] = fmaf(l[r], alpha, half == 0 ? s[r] : 0.0f);
      m[r] = m_new;
#pragma unroll
      for (int j = 0; j < OC; ++j) o[r][j] *= alpha;
    }
    if (half == 0) {
      if constexpr (BR % 4 == 0) {
#pragma unroll
        for (int r = 0; r < BR; r += 4)
          *reinterpret_cast<float4*>(ps + key * BR + r) = make_float4(s[r], s[r + 1], s[r + 2], s[r + 3]);
      } else {
#pragma unroll
        for (int r = 0; r < BR; ++r) ps[key * BR + r] = s[r];
      }
    }
    __syncwarp();
    // Lane's columns: D = 128, chunk `lane` whole; D = 64, half of chunk lane / 2.
    const int chunk = lane * OC / 4, sub = (lane * OC) % 4;
#pragma unroll 4
    for (int j = 0; j < BC; ++j) {
      float v[OC];
      const unsigned char* at = vst + Tr::chunk_byte(D, c.dtype, j, chunk) + 4 * sub;
      if constexpr (OC == 4) {
        const float4 x = *reinterpret_cast<const float4*>(at);
        v[0] = x.x, v[1] = x.y, v[2] = x.z, v[3] = x.w;
      } else {
        const float2 x = *reinterpret_cast<const float2*>(at);
        v[0] = x.x, v[1] = x.y;
      }
      float pr[BR];
      if constexpr (BR % 4 == 0) {
#pragma unroll
        for (int r = 0; r < BR; r += 4) {
          const float4 x = *reinterpret_cast<const float4*>(ps + j * BR + r);
          pr[r] = x.x, pr[r + 1] = x.y, pr[r + 2] = x.z, pr[r + 3] = x.w;
        }
      } else {
#pragma unroll
        for (int r = 0; r < BR; ++r) pr[r] = ps[j * BR + r];
      }
#pragma unroll
      for (int r = 0; r < BR; ++r)
#pragma unroll
        for (int k = 0; k < OC; ++k) o[r][k] = fmaf(pr[r], v[k], o[r][k]);
    }
  }

  __device__ __forceinline__ void write_partial(float* mo, float* ml, float, int lane) {
#pragma unroll
    for (int r = 0; r < BR; ++r) {
      float sum = l[r];
#pragma unroll
      for (int off = 16; off >= 1; off /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, off);
#pragma unroll
      for (int k = 0; k < OC; ++k) mo[r * D + lane * OC + k] = o[r][k];
      if (lane == 0) {
        ml[2 * r] = m[r];
        ml[2 * r + 1] = sum;
      }
    }
  }
};

// The merge of up to N splits' partials of one output (max in log2 units, sum, unnormalised O), all
// already in registers: O = sum_s w_s O_s / sum_s w_s l_s with w_s = 2^(m_s - max); 0 where no
// split saw a key.
template <int N>
__device__ __forceinline__ float merge_splits(const float (&m)[N], const float (&l)[N], const float (&o)[N],
                                              int splits) {
  float mx = -INFINITY;
#pragma unroll
  for (int s = 0; s < N; ++s)
    if (s < splits) mx = fmaxf(mx, m[s]);
  float sum = 0.0f, acc = 0.0f;
#pragma unroll
  for (int s = 0; s < N; ++s)
    if (s < splits) {
      const float f = mx == -INFINITY ? 0.0f : weight(m[s], mx);
      sum = fmaf(f, l[s], sum);
      acc = fmaf(f, o[s], acc);
    }
  return sum > 0.0f ? acc / sum : 0.0f;
}

// ---- the cluster combine (sm_90: distributed shared memory) -------------------------------------
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// Every thread of every block of the cluster: release this block's shared-memory writes, acquire the
// others'.
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
// The shared-memory address `local` of this block as block `rank` of the cluster holds it.
__device__ __forceinline__ uint32_t cluster_map(uint32_t local, int rank) {
  uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(local), "r"(rank));
  return remote;
}
__device__ __forceinline__ float cluster_load(uint32_t remote) {
  float x;
  asm volatile("ld.shared::cluster.f32 %0, [%1];\n" : "=f"(x) : "r"(remote) : "memory");
  return x;
}

// The splits of one (kv entry, row tile) are the blocks of one cluster, split = rank. Each block
// left its partial (O [Br, d] fp32 at o_local, (max, sum) per row at ml_local) in its shared
// memory; block `split` merges its slice of the tile's valid (row, column) outputs over every rank
// (all loads first: one round trip of the SM-to-SM network) and writes O. The second barrier keeps
// every block's shared memory alive until the others are done reading it.
template <int D, int BR, int DT, int THREADS>
__device__ __forceinline__ void cluster_combine(const DecodeParams& p, uint32_t o_local, uint32_t ml_local,
                                                long long b, int hkv, int row0, int split, int tid) {
  constexpr int kMax = traits::Decode::kMaxClusterSplits;
  cluster_sync();
  const int n = min(BR, p.rows - row0) * D;
  const int per = (n + p.splits - 1) / p.splits;
  const int end = min(n, (split + 1) * per);
  for (int idx = split * per + tid; idx < end; idx += THREADS) {
    const int r = idx / D, col = idx - r * D;
    float m[kMax], l[kMax], o[kMax];
#pragma unroll
    for (int s = 0; s < kMax; ++s) {
      if (s < p.splits) {
        const uint32_t ml = cluster_map(ml_local + 8u * r, s);
        m[s] = cluster_load(ml);
        l[s] = cluster_load(ml + 4u);
        o[s] = cluster_load(cluster_map(o_local + 4u * (r * D + col), s));
      }
    }
    store_elem<DT>(p.o, operand_offset(p.os, b, query_row(p, hkv, row0 + r)) + col, merge_splits(m, l, o, p.splits));
  }
  cluster_sync();
}
#endif

// Ticket of one (kv entry, row tile): the word holds this launch's id in its high 48 bits and the
// partials written so far in its low 16 (a word of another launch, or never written, counts 0).
// Returns whether the caller's partial is the last; the last resets the word to 0, so a graph
// replay with the same id starts again from zero.
__device__ __forceinline__ bool take_ticket(unsigned long long* word, unsigned long long id, int splits) {
  const unsigned long long tag = id << 16;
  unsigned long long cur = atomicAdd(word, 0ULL);
  for (;;) {
    const unsigned long long count = (cur >> 16) == id ? (cur & 0xffffULL) : 0ULL;
    const bool last = count + 1 == static_cast<unsigned long long>(splits);
    const unsigned long long next = last ? 0ULL : (tag | (count + 1));
    const unsigned long long seen = atomicCAS(word, cur, next);
    if (seen == cur) return last;
    cur = seen;
  }
}

// One warp merges the splits' (max, sum, O) of packed row r of a kv entry and writes O. The lanes
// read the splits' maxima side by side; each lane then keeps the weights of its splits in a
// register and broadcasts them while every lane sums its d / 32 columns (loads through L2: other
// blocks wrote them).
template <int D, int BR, int DT>
__device__ __forceinline__ void combine_row(const DecodeParams& p, long long kv_entry, long long b, int hkv, int r,
                                            int lane) {
  constexpr int OC = D / 32;
  const long long stride = D + 2;
  const float* const base = p.work + (kv_entry * p.row_tiles * BR + r) * p.splits * stride;
  float mx = -INFINITY;
  for (int s = lane; s < p.splits; s += 32) mx = fmaxf(mx, __ldcg(base + s * stride));
#pragma unroll
  for (int off = 16; off >= 1; off /= 2) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
  float sum = 0.0f, acc[OC] = {};
  for (int s0 = 0; s0 < p.splits; s0 += 32) {
    const int s = s0 + lane;
    float f = 0.0f;
    if (s < p.splits) {
      f = mx == -INFINITY ? 0.0f : weight(__ldcg(base + s * stride), mx);
      sum = fmaf(f, __ldcg(base + s * stride + 1), sum);
    }
    const int n = min(32, p.splits - s0);
#pragma unroll 4
    for (int j = 0; j < n; ++j) {
      const float fj = __shfl_sync(0xffffffffu, f, j);
      const float* const o = base + (s0 + j) * stride + 2 + lane;
#pragma unroll
      for (int k = 0; k < OC; ++k) acc[k] = fmaf(fj, __ldcg(o + 32 * k), acc[k]);
    }
  }
#pragma unroll
  for (int off = 16; off >= 1; off /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, off);
  const long long at = operand_offset(p.os, b, query_row(p, hkv, r));
  const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
#pragma unroll
  for (int k = 0; k < OC; ++k) store_elem<DT>(p.o, at + lane + 32 * k, acc[k] * inv);
}

}  // namespace decode_detail

// One block per (row tile, key chunk, K/V entry): grid (row tiles x splits, batch x K/V heads).
template <int D, int BR, int BC, int DT, int STAGES>
__global__ void __launch_bounds__(traits::Decode::kThreads, 1) decode_split_kernel(const DecodeParams p) {
  using Tr = traits::Decode;
  using T = Tr::Tile<D, BR, BC, DT, STAGES>;
  namespace dd = decode_detail;
  constexpr TileConfig c = T::kConfig;
  constexpr int W = Tr::kWarps, EB = T::kElementBytes;

  extern __shared__ __align__(128) unsigned char smem[];
  // The combine kernel, launched as this grid's programmatic dependent, may be scheduled once every
  // block of this grid has started (it waits for this grid's completion before reading): its
  // launch latency hides behind this grid's run instead of following it.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
  const uint32_t sbase = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid % 32;
  // Row tile fastest (the row tiles of a chunk share its K/V through L2), or split fastest where the
  // splits of a row tile are one cluster (its rank = the split).
  const bool in_cluster = (p.flags & kDecodeClusterCombine) != 0;
  const unsigned fast = static_cast<unsigned>(in_cluster ? p.splits : p.row_tiles);
  const int row_tile = static_cast<int>(in_cluster ? blockIdx.x / fast : blockIdx.x % fast);
  const int split = static_cast<int>(in_cluster ? blockIdx.x % fast : blockIdx.x / fast);
  const unsigned kv_entry = blockIdx.y;
  const unsigned b = kv_entry / static_cast<unsigned>(p.kv_heads);
  const int hkv = static_cast<int>(kv_entry - b * static_cast<unsigned>(p.kv_heads));
  const int row0 = row_tile * BR;

  // The key tiles of this warp: tiles first + warp, + W, ... below the chunk's end.
  const int key_tiles = (p.keys + BC - 1) / BC;
  const int first = split * p.chunk_tiles;
  const int end = min(first + p.chunk_tiles, key_tiles);
  const int mine = end - first - warp > 0 ? (end - first - warp + W - 1) / W : 0;
  const long long kv_off = static_cast<long long>(b) * p.ks.batch + static_cast<long long>(hkv) * p.ks.head;
  const char* const kg = static_cast<const char*>(p.k) + kv_off * EB;
  const char* const vg = static_cast<const char*>(p.v) + kv_off * EB;
  const uint32_t ring = sbase + Tr::ring_base(c, warp);
  const uint64_t policy = dd::evict_first_policy();

  // Q rows of the tile (zero past the packed rows). 16-bit: raw chunks by cp.async (swizzled for
  // ldmatrix), in the first group; fp32: pre-scaled by scale log2 e into plain rows.
  if constexpr (T::kMma) {
    constexpr int C = T::kChunks;
    for (int idx = tid; idx < BR * C; idx += Tr::kThreads) {
      const int r = idx / C, chunk = idx % C;
      const bool valid = row0 + r < p.rows;
      const dd::QueryRow q = dd::query_row(p, hkv, valid ? row0 + r : 0);
      const char* src = static_cast<const char*>(p.q) + (dd::operand_offset(p.qs, b, q) + chunk * (16 / EB)) * EB;
      cp_async_16(sbase + Tr::chunk_byte(D, c.dtype, r, chunk), src, valid);
    }
  } else {
    float* qs = reinterpret_cast<float*>(smem);
    for (int idx = tid; idx < BR * D / 4; idx += Tr::kThreads) {
      const int r = idx / (D / 4), col = 4 * (idx % (D / 4));
      float4 x = make_float4(0.f, 0.f, 0.f, 0.f);
      if (row0 + r < p.rows) {
        const dd::QueryRow q = dd::query_row(p, hkv, row0 + r);
        x = __ldg(reinterpret_cast<const float4*>(static_cast<const float*>(p.q) + dd::operand_offset(p.qs, b, q) + col));
        x = p.scale_log2e * x;
      }
      *reinterpret_cast<float4*>(qs + r * D + col) = x;
    }
  }
  // Prologue: this warp's tiles 0 .. STAGES - 2, one group each (empty past its last tile).
#pragma unroll
  for (int st = 0; st < STAGES - 1; ++st) {
    if (st < mine) dd::load_kv_tile<T>(p, kg, vg, ring + st * Tr::stage_bytes(c), first + warp + st * W, lane, policy);
    cp_async_commit();
  }
  cp_async_wait_group<STAGES - 2>();
  __syncthreads();  // Q, written by every warp, is read by every warp

  using Math = std::conditional_t<T::kMma, dd::MmaMath<T, DT>, dd::SimtMath<T>>;
  Math math;
  math.init();
  for (int i = 0; i < mine; ++i) {
    // Issue tile i + STAGES - 1 into the stage tile i - 1 left (this warp finished it), then wait
    // for tile i.
    const int next = i + STAGES - 1;
    if (next < mine) dd::load_kv_tile<T>(p, kg, vg, ring + (next % STAGES) * Tr::stage_bytes(c), first + warp + next * W, lane, policy);
    cp_async_commit();
    cp_async_wait_group<STAGES - 1>();
    __syncwarp();
    const int stage = i % STAGES;
    const int key0 = (first + warp + i * W) * BC;
    if constexpr (T::kMma) {
      math.tile(p, sbase, ring + stage * Tr::stage_bytes(c), key0, row0, lane);
    } else {
      math.tile(p, reinterpret_cast<const float*>(smem), smem + (ring - sbase) + stage * Tr::stage_bytes(c),
                reinterpret_cast<float*>(smem + Tr::p_base(c, warp)), key0, row0, lane);
    }
    __syncwarp();  // every lane done with this stage before the next iteration refills it
  }
  cp_async_wait_all();
  __syncthreads();  // the rings become the merge area

  float* const mo = reinterpret_cast<float*>(smem + Tr::merge_o_base(c, warp));
  float* const ml = reinterpret_cast<float*>(smem + Tr::merge_ml_base(c, warp));
  math.write_partial(mo, ml, p.scale_log2e, lane);
  __syncthreads();

  // Merge the warps' partials of each (row, column); write O, or this split's partial.
  for (int idx = tid; idx < BR * D; idx += Tr::kThreads) {
    const int r = idx / D, col = idx % D;
    if (row0 + r >= p.rows) continue;
    float mw[W], mx = -INFINITY;
#pragma unroll
    for (int w = 0; w < W; ++w) {
      mw[w] = reinterpret_cast<const float*>(smem + Tr::merge_ml_base(c, w))[2 * r];
      mx = fmaxf(mx, mw[w]);
    }
    float sum = 0.0f, acc = 0.0f;
#pragma unroll
    for (int w = 0; w < W; ++w) {
      const float f = mx == -INFINITY ? 0.0f : dd::weight(mw[w], mx);
      sum = fmaf(f, reinterpret_cast<const float*>(smem + Tr::merge_ml_base(c, w))[2 * r + 1], sum);
      acc = fmaf(f, reinterpret_cast<const float*>(smem + Tr::merge_o_base(c, w))[r * D + col], acc);
    }
    if (p.splits == 1) {
      const dd::QueryRow q = dd::query_row(p, hkv, row0 + r);
      dd::store_elem<DT>(p.o, dd::operand_offset(p.os, b, q) + col, sum > 0.0f ? acc / sum : 0.0f);
    } else if (in_cluster) {
      // Over warp 0's merge slot: this thread alone read (r, col) of it, above.
      reinterpret_cast<float*>(smem + Tr::cluster_o_base(c))[r * D + col] = acc;
      if (col == 0) {
        float* const ml = reinterpret_cast<float*>(smem + Tr::cluster_ml_base(c));
        ml[2 * r] = mx;
        ml[2 * r + 1] = sum;
      }
    } else {
      float* const part =
          p.work + ((static_cast<long long>(kv_entry) * p.row_tiles * BR + row0 + r) * p.splits + split) * (D + 2);
      part[2 + col] = acc;
      if (col == 0) {
        part[0] = mx;
        part[1] = sum;
      }
    }
  }
  if (p.splits > 1 && in_cluster) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    dd::cluster_combine<D, BR, DT, Tr::kThreads>(p, sbase + Tr::cluster_o_base(c), sbase + Tr::cluster_ml_base(c), b,
                                                 hkv, row0, split, tid);
#else
    __trap();  // the launch asks for the cluster only of a binary built for sm_90 or later
#endif
    return;
  }
  if (p.splits == 1 || !(p.flags & kDecodeFusedCombine)) return;

  // The combine in this kernel: the last block of the (kv entry, row tile) to finish its partial
  // takes a ticket that says so and merges every split's partial; the others are done. Saves the
  // combine kernel's launch behind this grid and its wait for the whole grid: the combines of the
  // entries that finish early run under the streaming of the others.
  int* const is_last = reinterpret_cast<int*>(smem);  // Q's rows, read by no one any more
  __syncthreads();  // every thread's partial written
  if (tid == 0) {
    __threadfence();  // this block's partial visible device-wide before its ticket
    *is_last = dd::take_ticket(p.tickets + static_cast<long long>(kv_entry) * p.row_tiles + row_tile, p.ticket_id,
                              p.splits);
    __threadfence();
  }
  __syncthreads();
  if (!*is_last) return;
  for (int r = warp; r < BR && row0 + r < p.rows; r += W)
    dd::combine_row<D, BR, DT>(p, static_cast<long long>(kv_entry), b, hkv, row0 + r, lane);
}

// One warp per 32 columns of a packed row of every K/V entry (D / 32 warps a row): merges the
// splits' (max, sum, O) and writes those columns of O. The lanes read the splits' (max, sum) side by
// side (a warp max, the weights through shared memory), then each lane sums its column over the
// splits, eight loads in flight. One warp a whole row (D / 32 columns a lane, four loads in flight)
// launched 8 blocks for 32 rows and took 6.3 us at 4 splits, 13 us at 16 (H100, ncu): a chain of L2
// round trips per warp, on a handful of SMs. Each of a row's warps derives the row's split weights
// itself (a few loads of the same lines) rather than exchanging them across warps.
inline constexpr int kCombineWarps = 4;
// Up to this many splits a lane holds every split's (max, sum, column) in registers and issues all
// their loads before any arithmetic; more, and the lanes read the (max, sum) side by side and walk
// the columns with eight loads in flight. H100, L2 flushed by reads, 134 MB: the combine costs
// 3.2-3.3 us of a 53 us call at 4 and 16 splits (the call without it: 49.7-50.3 us,
// docs/results/h100-decode-combine-cost.jsonl).
inline constexpr int kCombineRegisterSplits = 16;
template <int D>
constexpr long long combine_warps(long long kv_entries, long long rows) {
  return kv_entries * rows * (D / 32);
}
template <int D, int BR, int DT>
__global__ void __launch_bounds__(32 * kCombineWarps) decode_combine_kernel(const DecodeParams p) {
  namespace dd = decode_detail;
  constexpr int kColumnBlocks = D / 32;
  __shared__ float weights[kCombineWarps][traits::Decode::kMaxSplits];
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  const long long id = static_cast<long long>(blockIdx.x) * kCombineWarps + warp;
  if (id >= combine_warps<D>(p.kv_entries, p.rows)) return;
  const long long row_id = id / kColumnBlocks;
  const int col = static_cast<int>(id - row_id * kColumnBlocks) * 32 + lane;
  const long long kv_entry = row_id / p.rows;
  const int r = static_cast<int>(row_id - kv_entry * p.rows);
  const long long stride = D + 2;
  const float* const part = p.work + (kv_entry * p.row_tiles * BR + r) * p.splits * stride;
  const long long b = kv_entry / p.kv_heads;
  const int hkv = static_cast<int>(kv_entry - b * p.kv_heads);
  const long long at = dd::operand_offset(p.os, b, dd::query_row(p, hkv, r));
  // Launched as a programmatic dependent of the split kernel: the addresses above are computed while
  // that grid runs; wait here until it has finished and its partials are visible.
  // (Before sm_90 no launch is programmatic and the stream orders the two kernels by itself.)
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
  if (p.splits <= kCombineRegisterSplits) {
    // Every split's (max, sum) and this lane's column issued at once, then the arithmetic: one L2
    // round trip after the wait instead of two (the maxima, then the weighted columns).
    float m[kCombineRegisterSplits], l[kCombineRegisterSplits], o[kCombineRegisterSplits];
#pragma unroll
    for (int s = 0; s < kCombineRegisterSplits; ++s)
      if (s < p.splits) {
        m[s] = part[s * stride];
        l[s] = part[s * stride + 1];
        o[s] = part[s * stride + 2 + col];
      }
    dd::store_elem<DT>(p.o, at + col, dd::merge_splits(m, l, o, p.splits));
    return;
  }
  float mx = -INFINITY;
  for (int s = lane; s < p.splits; s += 32) mx = fmaxf(mx, part[s * stride]);
#pragma unroll
  for (int off = 16; off >= 1; off /= 2) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
  float sum = 0.0f;
  for (int s = lane; s < p.splits; s += 32) {
    const float f = mx == -INFINITY ? 0.0f : dd::weight(part[s * stride], mx);
    weights[warp][s] = f;
    sum = fmaf(f, part[s * stride + 1], sum);
  }
#pragma unroll
  for (int off = 16; off >= 1; off /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, off);
  __syncwarp();
  float acc = 0.0f;
#pragma unroll 8
  for (int s = 0; s < p.splits; ++s) acc = fmaf(weights[warp][s], part[s * stride + 2 + col], acc);
  const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
  dd::store_elem<DT>(p.o, at + col, acc * inv);
}

}  // namespace flashtune::kernels
