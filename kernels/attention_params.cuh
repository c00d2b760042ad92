// What every attention kernel receives, and the device helpers all variants share: block
// coordinates for both grid shapes, the causal K/V tile count, masking and the cooperative tile
// load whose index arithmetic the traits' tile_store_site() mirrors.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "kernels/traits/traits_common.h"

namespace flashtune::kernels {

// One operand's addressing on the device (kernels/traits/tensor_strides.h): entry (b, h) starts
// at b * batch + h * head floats from the base, rows are `row` floats apart (< 2^31, checked on
// the host by check_tensors).
struct DeviceStrides {
  long long batch, head;
  int row;
};

struct AttentionParams {
  const float* q;
  const float* k;
  const float* v;
  float* o;
  DeviceStrides qs, ks, vs, os;
  int heads;          // B = batch x query heads
  unsigned heads_magic, heads_shift;  // e / heads by fast_div (traits::fast_divisor)
  long long B;
  int N;              // query rows per entry
  int kv_len;         // keys per entry (Workload::keys())
  int causal_offset;  // kv_len - N: row i sees keys j <= i + causal_offset when causal (>= 0)
  int kv_group;       // query heads per K/V head: entry (b, h) reads K/V head h / kv_group
  unsigned kv_group_magic, kv_group_shift;  // h / kv_group = (umulhi(h, magic) + h) >> shift
  int q_tiles;        // ceil(N / Br)
  unsigned q_tiles_magic, q_tiles_shift;  // x / q_tiles by fast_div (the Folded grid order)
  int grid_order;     // traits::GridOrder: which of blockIdx.x, .y is the query tile
  int causal;
  float scale_log2e;  // effective softmax scale times log2(e): scores are in base-2 units
};

// n / d for the divisor's (magic, shift) of traits::fast_divisor(d): a multiply-high, an add and
// a shift, exact for n < 2^31 (the sum stays below 2^32; every n here is a block index or a head
// index). No run-time division: that is an I2F / MUFU.RCP / F2I sequence on the vector pipes,
// whose result lands in per-thread registers, where the multiply-high of a uniform value stays
// in uniform registers (S2UR, UIMAD.WIDE.U32) off the 255 that the fragments and O share.
__device__ __forceinline__ unsigned fast_div(unsigned n, unsigned magic, unsigned shift) {
  return (__umulhi(n, magic) + n) >> shift;
}

struct BlockCoords {
  int q_tile;
  long long batch;
};

// HeavyFirst: the kernel's traits' kCausalHeavyFirst. Only those kernels get batch-fastest grids
// (traits::grid_order), so only they compile its branch: in the others one more live value made
// row_smem d128 64x32 padded spill. (x, y): the block index.
template <bool HeavyFirst>
__device__ __forceinline__ BlockCoords block_coords_of(const AttentionParams& p, unsigned x, unsigned y) {
  using traits::GridOrder;
  if (p.grid_order == static_cast<int>(GridOrder::Folded)) {
    // 32-bit on purpose: a 64-bit division is a called subroutine in SASS, and the call makes
    // ptxas spill the registers live across it. grid.x < 2^31, so fast_div is exact.
    const unsigned entry = fast_div(x, p.q_tiles_magic, p.q_tiles_shift);
    return {static_cast<int>(x - entry * static_cast<unsigned>(p.q_tiles)), static_cast<long long>(entry)};
  }
  if (HeavyFirst && p.grid_order == static_cast<int>(GridOrder::BatchFastest))
    return {static_cast<int>(y), static_cast<long long>(x)};
  return {static_cast<int>(x), static_cast<long long>(y)};
}
template <bool HeavyFirst>
__device__ __forceinline__ BlockCoords block_coords(const AttentionParams& p) {
  return block_coords_of<HeavyFirst>(p, blockIdx.x, blockIdx.y);
}
// The same read again from the block index where it is needed after (or late in) the K/V loop: a
// few instructions there instead of a value held in registers across the loop. The volatile
// reads keep the compiler from merging them with the ones at the kernel's start.
template <bool HeavyFirst>
__device__ __forceinline__ BlockCoords late_coords(const AttentionParams& p) {
  unsigned x, y;
  asm volatile("mov.u32 %0, %%ctaid.x;" : "=r"(x));
  asm volatile("mov.u32 %0, %%ctaid.y;" : "=r"(y));
  return block_coords_of<HeavyFirst>(p, x, y);
}

// One batch entry (b, h). Its operands' addresses are computed where they are used and the row
// strides read from the kernel parameters there (constant-bank operands, no registers). K and V
// share their batch and head strides (check_tensors), so one offset addresses both across the
// K/V loop, as the single packed offset did: four live pointers made the 255-register SIMT
// kernels spill. With grouped heads the K/V head is h / kv_group (no copy of K or V); ungrouped
// calls skip that division (see entry_of on run-time divisions).
struct Entry {
  unsigned b, h;
  __device__ __forceinline__ long long offset(const DeviceStrides& s) const {
    return static_cast<long long>(b) * s.batch + static_cast<long long>(h) * s.head;
  }
  __device__ __forceinline__ const float* q(const AttentionParams& p) const { return p.q + offset(p.qs); }
  __device__ __forceinline__ long long kv_offset(const AttentionParams& p) const {
    // h / kv_group by a multiply-high and a shift (kv_group_magic / kv_group_shift, exact for
    // every 32-bit h: Granlund-Montgomery): a run-time division is a called sequence whose
    // temporaries made mma16 d128 128x64 spill 28 more bytes.
    const unsigned kv_head = p.kv_group == 1 ? h : fast_div(h, p.kv_group_magic, p.kv_group_shift);
    return static_cast<long long>(b) * p.ks.batch + static_cast<long long>(kv_head) * p.ks.head;
  }
  __device__ __forceinline__ float* o(const AttentionParams& p) const { return p.o + offset(p.os); }
};

__device__ __forceinline__ Entry entry_of(const AttentionParams& p, long long entry) {
  // entry < 2^31 (the grid's limit), so fast_div is exact (see block_coords): a multiply-high on
  // the block-uniform datapath in place of the division by a run-time value (six XU instructions
  // per thread, I2F, MUFU.RCP, F2I, whose result held (b, h) and K/V's offset in per-thread
  // registers). Packed [B, N, d] operands (one head per entry) skip it.
  const unsigned e = static_cast<unsigned>(entry), heads = static_cast<unsigned>(p.heads);
  if (heads == 1) return {e, 0};
  const unsigned b = fast_div(e, p.heads_magic, p.heads_shift);
  return {b, e - b * heads};
}

// threadIdx.x read again (volatile, as late_coords) where it is needed after the K/V loop only.
__device__ __forceinline__ int late_thread_index() {
  unsigned t;
  asm volatile("mov.u32 %0, %%tid.x;" : "=r"(t));
  return static_cast<int>(t);
}

// The block's entry read again from the block index (late_coords), for writing O after the K/V
// loop: a few instructions there instead of (b, h) or O's offset held in registers across the loop.
template <bool HeavyFirst>
__device__ __forceinline__ Entry late_entry(const AttentionParams& p) {
  return entry_of(p, late_coords<HeavyFirst>(p).batch);
}

// What a block works on, for the kernels that run causal query tiles last-first (the longest
// blocks start in the first wave and the short ones fill the tail): its query tile, that tile's
// first row, the K/V tiles it visits, its Q and the offset of its K and V (O: late_entry).
struct BlockTensors {
  int q_tile, q0, kv_tiles;
  const float* q;
  long long kv;
};

template <int D, int BR, int BC>
__device__ __forceinline__ BlockTensors block_tensors(const AttentionParams& p);

// K/V tiles a query tile visits: all of them, or when causal only those with a key the last query
// row of the tile sees (key <= row + causal_offset; tiles strictly above the bottom-right aligned
// diagonal are skipped entirely). The last query tile still visits the most, so heavy-first
// orders stay right with Nq != Nkv.
template <int BR, int BC>
__device__ __forceinline__ int kv_tile_count(const AttentionParams& p, int q_tile) {
  const int all = (p.kv_len + BC - 1) / BC;
  if (!p.causal) return all;
  const long long last_row = (static_cast<long long>(q_tile) + 1) * BR - 1 + p.causal_offset;
  const long long upto = last_row / BC + 1;
  return upto < all ? static_cast<int>(upto) : all;
}

template <int D, int BR, int BC>
__device__ __forceinline__ BlockTensors block_tensors(const AttentionParams& p) {
  const BlockCoords coords = block_coords<true>(p);
  const int q_tile = p.causal ? p.q_tiles - 1 - coords.q_tile : coords.q_tile;
  BlockTensors t;
  const Entry e = entry_of(p, coords.batch);
  t.q = e.q(p);
  t.kv = e.kv_offset(p);
  t.q_tile = q_tile;
  t.q0 = q_tile * BR;
  t.kv_tiles = kv_tile_count<BR, BC>(p, q_tile);
  return t;
}

// The first K/V tile of a query tile starting at row q0 that needs masking: the tail tile (keys
// past kv_len) or the first one crossing the causal diagonal of row q0 (its keys past q0 +
// causal_offset); every later tile needs it too. Tile t needs it when (t + 1) BC exceeds the keys
// seen, i.e. t >= keys / BC. One int instead of the key count and the diagonal held across the
// K/V loop (regtile_2d d64 128x64 spilled with both).
template <int BC>
__device__ __forceinline__ int first_masked_tile(const AttentionParams& p, int q0) {
  const int tail = p.kv_len / BC;
  if (!p.causal) return tail;
  const int diagonal = (q0 + p.causal_offset + 1) / BC;
  return diagonal < tail ? diagonal : tail;
}

// Score of (row, key) is masked when the key is past kv_len or, when causal, after the row's
// diagonal key row + causal_offset (bottom-right aligned).
__device__ __forceinline__ bool masked(const AttentionParams& p, int row, int key) {
  return key >= p.kv_len || (p.causal && key > row + p.causal_offset);
}
// The same from the row's last visible key (row + causal_offset), for kernels that hold that
// instead of the row: one register across the K/V loop where the row and the offset were two.
__device__ __forceinline__ bool masked_after(const AttentionParams& p, int last_key, int key) {
  return key >= p.kv_len || (p.causal && key > last_key);
}

// Cooperative coalesced load of rows [row0, row0 + ROWS) of a [N, D] matrix whose rows are
// src_rs floats apart into a shared tile with rows STRIDE floats apart; rows past N are
// zero-filled (a zero V row keeps 0 * garbage out of P.V). `mul` scales the values (Q is
// pre-scaled by scale*log2(e)).
template <int ROWS, int D, int STRIDE, int THREADS>
__device__ __forceinline__ void load_tile(float* __restrict__ dst, const float* __restrict__ src, int src_rs, int row0,
                                          int n, float mul = 1.0f) {
  constexpr int kTotal = traits::tile_float4s(ROWS, D);
  constexpr int kTrips = traits::tile_load_trips(ROWS, D, THREADS);
  // Where THREADS is a whole number of rows, a trip moves the thread kRowsPerTrip rows down in the
  // same column: one base address, each trip's an immediate multiple of the row stride from it
  // (a 64-bit address per trip cost the 255-register kernels a spill).
  constexpr bool kWholeRows = THREADS % (D / 4) == 0;
  constexpr int kRowsPerTrip = THREADS / (D / 4);
  const int tid = static_cast<int>(threadIdx.x);
  const float* const base =
      src + static_cast<long long>(row0 + traits::tile_row_of(tid, D)) * src_rs + traits::tile_col_of(tid, D);
#pragma unroll
  for (int trip = 0; trip < kTrips; ++trip) {
    const int idx = tid + trip * THREADS;
    if (kTotal % THREADS == 0 || idx < kTotal) {
      const int r = traits::tile_row_of(idx, D);
      float4 val = make_float4(0.f, 0.f, 0.f, 0.f);
      if (row0 + r < n) {
        const float* at = kWholeRows ? base + static_cast<long long>(trip * kRowsPerTrip) * src_rs
                                     : src + static_cast<long long>(row0 + r) * src_rs + traits::tile_col_of(idx, D);
        val = __ldg(reinterpret_cast<const float4*>(at));
      }
      val.x *= mul;
      val.y *= mul;
      val.z *= mul;
      val.w *= mul;
      float* at = dst + traits::tile_offset_of(idx, D, STRIDE);
      if constexpr (STRIDE % 4 == 0) {
        *reinterpret_cast<float4*>(at) = val;
      } else {
        at[0] = val.x;
        at[1] = val.y;
        at[2] = val.z;
        at[3] = val.w;
      }
    }
  }
}

// load_tile of K and V rows [row0, row0 + ROWS) together (one shape, one shared-memory stride,
// their own row strides), for the kernels that load both per K/V tile: the same loads and stores,
// each still under its own row test, but one row index, one predicate and one shared-memory
// offset per trip serve both tiles. As two load_tile calls the second tile's copies of those were
// live beside the first tile's loads in flight, and row_smem d128 64x32 padded (O in 128
// registers) spilled 8 bytes in its K/V loop (nvcc 13.0, sm_90).
template <int ROWS, int D, int STRIDE, int THREADS>
__device__ __forceinline__ void load_kv_tiles(float* __restrict__ dk, float* __restrict__ dv, const float* __restrict__ k,
                                              const float* __restrict__ v, int k_rs, int v_rs, int row0, int n) {
  constexpr int kTotal = traits::tile_float4s(ROWS, D);
  constexpr int kTrips = traits::tile_load_trips(ROWS, D, THREADS);
  constexpr bool kWholeRows = THREADS % (D / 4) == 0;
  constexpr int kRowsPerTrip = THREADS / (D / 4);
  const int tid = static_cast<int>(threadIdx.x);
  const long long r0 = row0 + traits::tile_row_of(tid, D);
  const float* const kb = k + r0 * k_rs + traits::tile_col_of(tid, D);
  const float* const vb = v + r0 * v_rs + traits::tile_col_of(tid, D);
#pragma unroll
  for (int trip = 0; trip < kTrips; ++trip) {
    const int idx = tid + trip * THREADS;
    if (kTotal % THREADS == 0 || idx < kTotal) {
      const int r = traits::tile_row_of(idx, D);
      float4 kv4 = make_float4(0.f, 0.f, 0.f, 0.f), vv4 = kv4;
      const float* ka = kWholeRows ? kb + static_cast<long long>(trip * kRowsPerTrip) * k_rs
                                   : k + static_cast<long long>(row0 + r) * k_rs + traits::tile_col_of(idx, D);
      const float* va = kWholeRows ? vb + static_cast<long long>(trip * kRowsPerTrip) * v_rs
                                   : v + static_cast<long long>(row0 + r) * v_rs + traits::tile_col_of(idx, D);
      if (row0 + r < n) kv4 = __ldg(reinterpret_cast<const float4*>(ka));
      if (row0 + r < n) vv4 = __ldg(reinterpret_cast<const float4*>(va));
      const int o = traits::tile_offset_of(idx, D, STRIDE);
      if constexpr (STRIDE % 4 == 0) {
        *reinterpret_cast<float4*>(dk + o) = kv4;
        *reinterpret_cast<float4*>(dv + o) = vv4;
      } else {
        dk[o] = kv4.x;
        dk[o + 1] = kv4.y;
        dk[o + 2] = kv4.z;
        dk[o + 3] = kv4.w;
        dv[o] = vv4.x;
        dv[o + 1] = vv4.y;
        dv[o + 2] = vv4.z;
        dv[o + 3] = vv4.w;
      }
    }
  }
}

__device__ __forceinline__ float4 operator*(float s, float4 a) { return make_float4(s * a.x, s * a.y, s * a.z, s * a.w); }

__device__ __forceinline__ float dot4(float4 a, float4 b, float acc) {
  acc = fmaf(a.x, b.x, acc);
  acc = fmaf(a.y, b.y, acc);
  acc = fmaf(a.z, b.z, acc);
  return fmaf(a.w, b.w, acc);
}

__device__ __forceinline__ void fma4(float s, float4 v, float4& acc) {
  acc.x = fmaf(s, v.x, acc.x);
  acc.y = fmaf(s, v.y, acc.y);
  acc.z = fmaf(s, v.z, acc.z);
  acc.w = fmaf(s, v.w, acc.w);
}

// The running max to subtract: a row whose scores so far are all masked keeps -inf as its max,
// and exp2(-inf - 0) = 0 keeps it harmless.
__device__ __forceinline__ float softmax_base(float m) { return m == -INFINITY ? 0.0f : m; }

}  // namespace flashtune::kernels
