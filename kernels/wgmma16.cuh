// Hopper-native (sm_90a) FlashAttention forward on 16-bit operands: a producer warpgroup feeds
// TMA tile copies into an mbarrier ring of `stages` K/V stages, consumer warpgroups of 64 query rows
// run wgmma.mma_async (S = Q K^T from shared memory, O += P V with P from registers), the online
// softmax runs on the accumulator fragments in fp32. Roles, layout, descriptors and barriers come
// from kernels/traits/wgmma16_traits.h (read it first); this file turns them into instructions.
// Compiled for sm_90a only (kernels/CMakeLists.txt), with --expt-relaxed-constexpr (the traits'
// functions run on the device).
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/attention_params.cuh"
#include "kernels/hopper_ptx.cuh"
#include "kernels/traits/wgmma16_traits.h"
#include "kernels/wgmma_online_softmax.cuh"
#include "kernels/wgmma_ops.cuh"

namespace flashtune::kernels {

// What the kernel receives: the four tensor maps (encoded on the host, kernels/tensor_map.h) and
// the scalar parameters every family shares (its pointers unused: TMA addresses the operands).
// A __grid_constant__ parameter, so that TMA may read the maps where they are.
struct WgmmaParams {
  CUtensorMap q, k, v, o;
  AttentionParams p;
  // The persistent grid (TileConfig::persistent): the tiles of the one-block-per-tile grid, and
  // that grid's x extent with its fast_div divisor, so that tile i is the block (i % x, i / x)
  // the other launch would run, in the hardware's launch order. Unused otherwise.
  int tiles;
  int tile_grid_x;
  unsigned tile_grid_x_magic, tile_grid_x_shift;
};

namespace wgmma16_detail {

// The shapes of each product: N = Bc (64 or 128) for S, N = d (32, 64 or 128) for O.
template <int DT, int N>
__device__ __forceinline__ void mma_ss(float (&d)[N / 2], uint64_t a, uint64_t b, int scale_d) {
  static_assert(N == 64 || N == 128, "S = Q K^T is m64n64 or m64n128 (Bc)");
  if constexpr (N == 64) wgmma::Ops<DT>::ss_n64(d, a, b, scale_d);
  else wgmma::Ops<DT>::ss_n128(d, a, b, scale_d);
}
template <int DT, int N>
__device__ __forceinline__ void mma_rs(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t b) {
  static_assert(N == 32 || N == 64 || N == 128, "O += P V is m64n32, m64n64 or m64n128 (d)");
  if constexpr (N == 32) wgmma::Ops<DT>::rs_n32(d, a, b);
  else if constexpr (N == 64) wgmma::Ops<DT>::rs_n64(d, a, b);
  else wgmma::Ops<DT>::rs_n128(d, a, b);
}

// Two fp32 values to one register of the dtype pair: lo in bits 0-15 (the lower column).
template <int DT>
__device__ __forceinline__ uint32_t pack(float lo, float hi) {
  uint32_t r;
  if constexpr (DT == static_cast<int>(DType::Bf16))
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  else
    asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

__device__ __forceinline__ void st_shared_u32(uint32_t addr, uint32_t v) {
  asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(addr), "r"(v) : "memory");
}
// A word read where it is used, every time (volatile: never held in a register across a loop).
__device__ __forceinline__ int ld_shared_volatile(uint32_t addr) {
  int v;
  asm volatile("ld.volatile.shared.u32 %0, [%1];\n" : "=r"(v) : "r"(addr) : "memory");
  return v;
}

// The ping-pong's turn barriers (traits: turn_barrier): this consumer's own (sync) and the next
// one's (arrive), by 256 threads: the waiting warpgroup's and the passing one's. The barrier's id
// is derived from %tid.x inside the instruction's block rather than held in a register across
// the loop (three consumers have 160 registers, and a held id spilled 4 B); `take` predicates
// the instruction instead of a branch between a wgmma's issue and its wait (hopper_ptx.cuh).
// Warpgroup wg = tid / 128 (1 .. C) is consumer wg - 1: it waits on turn_barrier(0) + wg - 1 and
// arrives on turn_barrier(0) + wg % C.
template <int kConsumers>
__device__ __forceinline__ void turn_wait_if(bool take) {
  asm volatile(
      "{\n .reg .pred p;\n .reg .u32 w;\n setp.ne.u32 p, %0, 0;\n mov.u32 w, %%tid.x;\n shr.u32 w, w, 7;\n"
      " add.u32 w, w, %1;\n @p bar.sync w, %2;\n}\n" ::"r"(static_cast<uint32_t>(take)),
      "n"(traits::Wgmma16::turn_barrier(0) - 1), "n"(traits::Wgmma16::kTurnBarrierThreads)
      : "memory");
}
template <int kConsumers>
__device__ __forceinline__ void turn_pass_if(bool take) {
  asm volatile(
      "{\n .reg .pred p;\n .reg .u32 w;\n setp.ne.u32 p, %0, 0;\n mov.u32 w, %%tid.x;\n shr.u32 w, w, 7;\n"
      " rem.u32 w, w, %1;\n add.u32 w, w, %2;\n @p bar.arrive w, %3;\n}\n" ::"r"(static_cast<uint32_t>(take)),
      "n"(kConsumers), "n"(traits::Wgmma16::turn_barrier(0)), "n"(traits::Wgmma16::kTurnBarrierThreads)
      : "memory");
}

// What a tile is: the block coordinates of the one-block-per-tile grid. Persistent: tile `tile`
// of that grid in launch order (x fastest); otherwise this block's own.
template <int PERSISTENT>
__device__ __forceinline__ BlockCoords tile_coords(const WgmmaParams& P, int tile) {
  if constexpr (PERSISTENT != 0) {
    const unsigned t = static_cast<unsigned>(tile);
    const unsigned y = fast_div(t, P.tile_grid_x_magic, P.tile_grid_x_shift);
    return block_coords_of<true>(P.p, t - y * static_cast<unsigned>(P.tile_grid_x), y);
  } else {
    return block_coords<true>(P.p);
  }
}

}  // namespace wgmma16_detail

// One block per (query tile, batch entry); causal query tiles run last-first (heavy first) on a
// batch-fastest grid, as mma16. OVERLAP: the consumers' intra-warpgroup overlap; PINGPONG: the
// consumers take turns issuing their products; PERSISTENT: about one block per SM walks the
// tiles of that grid (traits header).
template <int D, int BR, int BC, Layout L, int DT, int STAGES, int QSMEM, int OVERLAP, int PINGPONG, int PERSISTENT>
__global__ void __launch_bounds__(
    traits::Wgmma16::Tile<D, BR, BC, L, DT, STAGES, QSMEM, OVERLAP, PINGPONG, PERSISTENT>::kThreads, 1)
    wgmma16_kernel(const __grid_constant__ WgmmaParams P) {
  using R = traits::Wgmma16;
  using T = R::Tile<D, BR, BC, L, DT, STAGES, QSMEM, OVERLAP, PINGPONG, PERSISTENT>;
  namespace hp = hopper;
  namespace wd = wgmma16_detail;
  constexpr TileConfig kC = T::kConfig;
  constexpr int kConsumers = T::kConsumers;
  constexpr int kBlocks = R::column_blocks(D);
  constexpr int kRows = R::kRowsPerConsumer;

  extern __shared__ __align__(1024) unsigned char smem[];
  // The swizzle needs 1024-byte aligned tiles; the dynamic base is only promised 16 (the traits
  // reserve the slack).
  const uint32_t sbase = (static_cast<uint32_t>(__cvta_generic_to_shared(smem)) + 1023u) & ~1023u;
  const AttentionParams& p = P.p;
  const int tid = static_cast<int>(threadIdx.x), wg = tid / R::kWarpgroupThreads;
  constexpr int kQBuffers = T::kQBuffers;
  // What a tile is: its query tile, entry, K/V head and K/V tile count (the block's own without
  // the persistent grid, where the compiler sees one pass of every tile loop below).
  struct TileWork {
    int q0, head, batch, kv_head, kv_tiles;
  };
  auto tile_work = [&](int tile) {
    const BlockCoords coords = wd::tile_coords<PERSISTENT>(P, tile);
    const int q_tile = p.causal ? p.q_tiles - 1 - coords.q_tile : coords.q_tile;
    const Entry entry = entry_of(p, coords.batch);
    TileWork tw;
    tw.head = static_cast<int>(entry.h);
    tw.batch = static_cast<int>(entry.b);
    // The K/V head of a grouped query head (h / kv_group by multiply-high and shift, as Entry).
    tw.kv_head = p.kv_group == 1 ? tw.head
                                 : static_cast<int>((__umulhi(entry.h, p.kv_group_magic) + entry.h) >> p.kv_group_shift);
    tw.q0 = q_tile * BR;
    tw.kv_tiles = kv_tile_count<BR, BC>(p, q_tile);
    return tw;
  };
  // Persistent: this block's tiles are blockIdx.x + i gridDim.x below P.tiles; otherwise one.
  const int first_tile = static_cast<int>(blockIdx.x);
  auto more_tiles = [&](int tile) { return PERSISTENT != 0 && tile < P.tiles; };
  auto next_tile = [&](int tile) { return tile + static_cast<int>(gridDim.x); };
  auto q_buffer = [&](int i) { return kQBuffers == 1 ? 0 : i % kQBuffers; };
  // Use i of a Q buffer's barriers completes phase (i / kQBuffers) % 2.
  auto q_parity = [&](int i) { return static_cast<uint32_t>((i / kQBuffers) & 1); };
  auto q_smem_of = [&](int b) { return sbase + static_cast<uint32_t>(R::q_base(kC, b)); };
  auto qbar = [&](int b) { return sbase + static_cast<uint32_t>(R::q_barrier(kC, b)); };
  auto qfree = [&](int b) { return sbase + static_cast<uint32_t>(R::q_free_barrier(kC, b)); };
  auto full = [&](int s) { return sbase + static_cast<uint32_t>(R::full_barrier(kC, s)); };
  auto empty = [&](int s) { return sbase + static_cast<uint32_t>(R::empty_barrier(kC, s)); };

  if (tid == 0) {
#pragma unroll
    for (int s = 0; s < STAGES; ++s) {
      hp::mbarrier_init(full(s), 1);
      hp::mbarrier_init(empty(s), R::empty_arrivals(kC));
    }
#pragma unroll
    for (int b = 0; b < kQBuffers; ++b) {
      hp::mbarrier_init(qbar(b), 1);
      if constexpr (PERSISTENT != 0) hp::mbarrier_init(qfree(b), R::q_free_arrivals(kC));
    }
    hp::fence_barrier_init();
  }
  __syncthreads();

  if (wg == 0) {
    // ---- producer: one thread issues every copy; the warpgroup gives its registers away ------
    if constexpr (R::reallocates_registers(kC)) hp::setmaxnreg_dec<R::kProducerRegisters>();
    if (tid == 0) {
      hp::prefetch_tensor_map(&P.q);
      hp::prefetch_tensor_map(&P.k);
      hp::prefetch_tensor_map(&P.v);
      // The ring's position carries over the block's tiles: `filled` says whether every stage has
      // been filled once (from then on each fill waits for the consumers' release of the stage).
      int stage = 0;
      uint32_t phase = 0;
      bool filled = false;
      int tile = first_tile, i = 0;
      do {
        const TileWork tw = tile_work(tile);
        const int b = q_buffer(i);
        auto load_q = [&]() {
          // Persistent: the buffer's previous tile (i - kQBuffers) must have stored its O out of it.
          if (PERSISTENT != 0 && i >= kQBuffers) hp::mbarrier_wait(qfree(b), q_parity(i - kQBuffers));
          const uint32_t q_smem = q_smem_of(b);
          hp::mbarrier_arrive_expect_tx(qbar(b), R::q_tx_bytes(kC));
#pragma unroll
          for (int cb = 0; cb < kBlocks; ++cb)
#pragma unroll
            for (int w = 0; w < kConsumers; ++w)
              hp::tma_load_4d(q_smem + cb * R::block_bytes(D, BR) + w * R::block_bytes(D, kRows), &P.q, qbar(b),
                              cb * R::block_columns(D), tw.q0 + w * kRows, tw.head, tw.batch);
        };
        auto load_kv = [&](int t) {
          // Stage `stage` was last filled STAGES fills ago: wait until every consumer warp is done
          // with it (the phase before this round's).
          if (PERSISTENT != 0 ? filled : t >= STAGES) hp::mbarrier_wait(empty(stage), phase ^ 1u);
          hp::mbarrier_arrive_expect_tx(full(stage), R::stage_tx_bytes(kC));
          const uint32_t k_smem = sbase + R::k_base(kC, stage), v_smem = sbase + R::v_base(kC, stage);
#pragma unroll
          for (int cb = 0; cb < kBlocks; ++cb) {
            hp::tma_load_4d(k_smem + cb * R::block_bytes(D, BC), &P.k, full(stage), cb * R::block_columns(D), t * BC,
                            tw.kv_head, tw.batch);
            hp::tma_load_4d(v_smem + cb * R::block_bytes(D, BC), &P.v, full(stage), cb * R::block_columns(D), t * BC,
                            tw.kv_head, tw.batch);
          }
          if (++stage == STAGES) {
            stage = 0;
            phase ^= 1u;
            filled = true;
          }
        };
        // With one Q buffer the next Q waits for the previous tile's epilogue: the first stages of
        // K and V go first (their stages free up as the consumers finish the previous tile's last
        // K/V tiles, before that epilogue).
        const int early = PERSISTENT != 0 && kQBuffers == 1 && i > 0 ? min(tw.kv_tiles, STAGES) : 0;
        int t = 0;
        for (; t < early; ++t) load_kv(t);
        load_q();
        for (; t < tw.kv_tiles; ++t) load_kv(t);
        tile = next_tile(tile);
        ++i;
      } while (more_tiles(tile));
    }
    return;
  }

  // ---- consumers: warpgroup wg - 1 owns query rows q0 + 64 (wg - 1) .. + 63 of each tile ---------
  if constexpr (R::reallocates_registers(kC)) hp::setmaxnreg_inc<R::consumer_registers(kC)>();
  const int cw = wg - 1, ctid = tid - R::kWarpgroupThreads * wg;
  const int wi = ctid / 32, lane = ctid % 32, g = lane / 4, tq = lane % 4;
  const float sl2e = p.scale_log2e;
  // The K/V ring's position, carried over the block's tiles as the producer's is. Persistent: the
  // ring's parity in bit 0 of `phase` and the tile's ordinal i above it (one register for both:
  // three consumers have 160).
  int stage = 0;
  uint32_t phase = 0;
  auto parity = [&]() { return PERSISTENT != 0 ? phase & 1u : phase; };
  auto ordinal = [&]() { return static_cast<int>(phase >> 1); };
  auto advance = [&]() {
    if (++stage == STAGES) {
      stage = 0;
      phase ^= 1u;
    }
  };
  // Only the tile's ordinal i is carried across the K/V loop; the tile and its coordinates are
  // derived again where needed (held, they made three consumers' 160 registers spill).
  auto tile_of = [&](int n) { return first_tile + n * static_cast<int>(gridDim.x); };
  do {
    const int i = ordinal();
    const int qb = q_buffer(i);
    const uint32_t q_smem = q_smem_of(qb);
    // The tile's first row and K/V tile count, head and batch: the block's own, or (persistent)
    // read at each use from this warpgroup's description of its tile, which its first thread writes
    // here; the warpgroup's barrier orders that write before the reads, and the reads of the
    // previous tile all came before its epilogue's barrier.
    const TileWork tw = PERSISTENT != 0 ? TileWork{} : tile_work(first_tile);
    const uint32_t info = sbase + static_cast<uint32_t>(R::tile_info(kC, cw));
    if constexpr (PERSISTENT != 0) {
      if (ctid == 0) {
        const TileWork now = tile_work(tile_of(i));
        wd::st_shared_u32(info, static_cast<uint32_t>(now.q0));
        wd::st_shared_u32(info + 4, static_cast<uint32_t>(now.kv_tiles));
        wd::st_shared_u32(info + 8, static_cast<uint32_t>(now.head));
        wd::st_shared_u32(info + 12, static_cast<uint32_t>(now.batch));
      }
      hp::named_barrier_sync(R::epilogue_barrier(cw), R::kWarpgroupThreads);
    }
    auto info_word = [&](int w, int held) { return PERSISTENT != 0 ? wd::ld_shared_volatile(info + 4 * w) : held; };
    auto row_first_now = [&]() { return info_word(0, tw.q0) + kRows * cw; };
    auto kv_tiles_now = [&]() { return info_word(1, tw.kv_tiles); };
    // This warpgroup's 64 rows of each column block of the Q tile (the A operand of Q K^T).
    const uint32_t q_rows = q_smem + cw * R::block_bytes(D, kRows);
    // The ping-pong's ring runs on across a persistent block's tiles: only the block's first turn
    // is not waited for and only its last not passed on (traits header).
    const bool block_first = PERSISTENT == 0 || i == 0;
    const bool block_last = PERSISTENT == 0 || !more_tiles(tile_of(i + 1));

    float o[R::o_registers(D)], s[R::s_registers(BC)];
#pragma unroll
    for (int r = 0; r < R::o_registers(D); ++r) o[r] = 0.0f;
#pragma unroll
    for (int r = 0; r < R::s_registers(BC); ++r) s[r] = 0.0f;
    // Rows g and g + 8 of this warp's 16 (h = 0, 1): accumulator elements 4 j + 2 h, 4 j + 2 h + 1.
    float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.0f, 0.0f};  // l: this lane's share
    float alpha[2];            // the rescale O owes for the newest tile's running max
    uint32_t pa[BC / 16][4];   // P packed to the dtype: the A fragments of P V

    // S = Q K^T of the tile in stage `st` (unscaled, fp32): d / 16 wgmma, the first overwriting S.
    // The caller fences and commits.
    auto issue_qk = [&](int st) {
      const uint32_t k_smem = sbase + R::k_base(kC, st);
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk)
        wd::mma_ss<DT, BC>(s, R::kmajor_descriptor(D, q_rows + R::kmajor_step_bytes(D, BR, kk)),
                           R::kmajor_descriptor(D, k_smem + R::kmajor_step_bytes(D, BC, kk)), kk > 0 ? 1 : 0);
    };
    // O += P V of the tile in stage `st`: Bc / 16 wgmma, V MN-major. The caller fences and commits.
    auto issue_pv = [&](int st, const uint32_t(&pf)[BC / 16][4]) {
      const uint32_t v_smem = sbase + R::v_base(kC, st);
#pragma unroll
      for (int kk = 0; kk < BC / 16; ++kk) wd::mma_rs<DT, D>(o, pf[kk], R::v_descriptor(D, v_smem + R::v_step_bytes(D, kk), BC));
    };
    // Whether tile t crosses kv_len or this warpgroup's diagonal (then its scores are masked).
    auto needs_mask = [&](int t) {
      const int kv0 = t * BC;
      return kv0 + BC > p.kv_len || (p.causal && kv0 + BC - 1 > row_first_now() + p.causal_offset);
    };
    // The landed S of tile t to probabilities in place: keys past kv_len, and keys after the row's
    // last visible one where the tile crosses this warpgroup's diagonal, masked; the online softmax
    // in fp32 per row h of the lane's two (m, l and alpha; O is left to rescale_o). kMask
    // (std::true_type or std::false_type): whether to mask, decided by the caller, so that the
    // overlapped iteration holds no branch between its wgmma issue and its waits (ptxas drains the
    // wgmma pipeline at a basic-block boundary: with the branch inside, the P V's wait came before
    // the softmax's exponentials in SASS).
    auto softmax = [&](int t, auto kMask) {
      if constexpr (decltype(kMask)::value) {
        // Persistent: the first row read per score (one read held through the unrolled loop made
        // three consumers spill 4 B; these reads run on the masked tiles only).
        const int kv0 = t * BC;
#pragma unroll
        for (int j = 0; j < BC / 8; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int row = row_first_now() + 16 * wi + g + 8 * (e / 2);
            if (masked(p, row, kv0 + 8 * j + 2 * tq + e % 2)) s[4 * j + e] = -INFINITY;
          }
      }
      wgmma_softmax::update_rows<BC>(s, m_run, l_run, alpha, sl2e);
    };
    auto rescale_o = [&]() {
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int j = 0; j < D / 8; ++j) {
          o[4 * j + 2 * h] *= alpha[h];
          o[4 * j + 2 * h + 1] *= alpha[h];
        }
    };
    // P to the dtype: accumulator blocks 2 kk and 2 kk + 1 are the A fragment of k-step kk.
    auto pack_p = [&]() {
#pragma unroll
      for (int kk = 0; kk < BC / 16; ++kk) {
        pa[kk][0] = wd::pack<DT>(s[8 * kk + 0], s[8 * kk + 1]);
        pa[kk][1] = wd::pack<DT>(s[8 * kk + 2], s[8 * kk + 3]);
        pa[kk][2] = wd::pack<DT>(s[8 * kk + 4], s[8 * kk + 5]);
        pa[kk][3] = wd::pack<DT>(s[8 * kk + 6], s[8 * kk + 7]);
      }
    };
    // This warp is done with stage `st` (every wgmma reading it completed): one arrival of the
    // 4 x consumers its empty barrier counts.
    auto release = [&](int st) {
      __syncwarp();
      if (lane == 0) hp::mbarrier_arrive(empty(st));
    };

    // Ping-pong (traits: turn_barrier, turns): each batch of products this consumer issues between
    // two softmaxes is a turn, taken on its own turn barrier and passed on to the next consumer's
    // right after the issue. Every consumer takes turns(kC, kv_tiles) turns, empty ones on the tiles
    // it skips; consumer 0 does not wait for its first turn and the last consumer does not pass on
    // its last, so each barrier completes as often as it is waited on. The caller says which turn is
    // the first (`first`) or the last (`last`) from its loop indices, so that no counter takes a
    // register (three consumers have 160). Without the knob both are nothing.
    auto turn_take = [&](bool first) {
      if constexpr (PINGPONG != 0) wd::turn_wait_if<kConsumers>(!(first && block_first && cw == 0));
    };
    auto turn_pass = [&](bool last) {
      if constexpr (PINGPONG != 0) wd::turn_pass_if<kConsumers>(!(last && block_last && cw == kConsumers - 1));
    };
    auto turn_empty = [&](bool first, bool last) {
      turn_take(first);
      turn_pass(last);
    };

    hp::mbarrier_wait(qbar(qb), q_parity(i));
    if constexpr (!OVERLAP) {
      // Per tile, in order: S, softmax, O += P V, each product waited for.
      for (int t = 0; t < kv_tiles_now(); ++t) {
        hp::mbarrier_wait(full(stage), parity());
        // Under causal, a tile whose first key is after this warpgroup's last row's last visible key
        // (row + causal_offset, bottom-right aligned) is all masked.
        if (!(p.causal && t * BC > row_first_now() + kRows - 1 + p.causal_offset)) {
          hp::fence_registers(s);
          turn_take(t == 0);
          hp::wgmma_fence();
          issue_qk(stage);
          hp::wgmma_commit();
          turn_pass(false);
          hp::wgmma_wait<0>();
          hp::fence_registers(s);
          if (needs_mask(t)) softmax(t, std::true_type{});
          else softmax(t, std::false_type{});
          rescale_o();
          pack_p();
          hp::fence_registers(o);
          turn_take(false);
          hp::wgmma_fence();
          issue_pv(stage, pa);
          hp::wgmma_commit();
          turn_pass(t == kv_tiles_now() - 1);
          hp::wgmma_wait<0>();
          hp::fence_registers(o);
        } else {
          // Past this warpgroup's diagonal: its two turns, empty, so the others' keep coming.
          turn_empty(t == 0, false);
          turn_empty(false, t == kv_tiles_now() - 1);
        }
        release(stage);
        advance();
      }
    } else {
      // Intra-warpgroup overlap. The tiles this warpgroup computes are a prefix of the block's: under
      // causal the rest start after its last row's last visible key (a suffix, all masked).
      const int my_tiles =
          p.causal ? min(kv_tiles_now(), (row_first_now() + kRows - 1 + p.causal_offset) / BC + 1) : kv_tiles_now();
      if (my_tiles > 0) {
        // Tile 0: S, softmax, P (O is still zero: nothing to rescale).
        hp::mbarrier_wait(full(stage), parity());
        hp::fence_registers(s);
        turn_take(true);
        hp::wgmma_fence();
        issue_qk(stage);
        hp::wgmma_commit();
        turn_pass(false);
        hp::wgmma_wait<0>();
        hp::fence_registers(s);
        if (needs_mask(0)) softmax(0, std::true_type{});
        else softmax(0, std::false_type{});
        pack_p();
        int prev = stage;
        advance();
        // Tile t: S_t = Q K_t^T is issued before O += P_{t-1} V_{t-1} (O already at m_{t-1}), so
        // the softmax of S_t can run while that P V holds the tensor cores; O's rescale by alpha_t
        // and P_t's packing wait for the P V (it reads O and the P fragments asynchronously).
        // One overlapped tile, with or without the mask (kMask as in softmax).
        auto overlapped = [&](int t, auto kMask) {
          hp::fence_registers(s);
          hp::fence_registers(o);
          turn_take(false);
          hp::wgmma_fence();
          issue_qk(stage);
          hp::wgmma_commit();
          issue_pv(prev, pa);
          hp::wgmma_commit();
          turn_pass(false);
          hp::wgmma_wait<1>();  // S_t has landed; the P V may still run
          hp::fence_registers(s);
          softmax(t, kMask);
          // P_t, alpha_t and the row sums are due before the wait. Within one basic block ptxas's
          // scheduler issues the wait right after the previous one, before the first exponential
          // (it sees no dependency and does not model the stall), so the softmax never ran under
          // the P V. A branch that is never taken (kv_len >= 0) ends the block here, and the wait
          // stays after the softmax, where the registers allow (traits: overlap_hides_softmax).
          hp::fence_registers(s);
          hp::fence_registers(alpha);
          hp::fence_registers(l_run);
          if constexpr (R::overlap_hides_softmax(T::kConfig)) {
            if (p.kv_len < 0) __trap();
          }
          hp::wgmma_wait<0>();
          hp::fence_registers(o);
          hp::fence_registers(pa);
          release(prev);  // K_{t-1} and V_{t-1} are read
          rescale_o();
          pack_p();
        };
        for (int t = 1; t < my_tiles; ++t) {
          hp::mbarrier_wait(full(stage), parity());
          if (needs_mask(t)) overlapped(t, std::true_type{});
          else overlapped(t, std::false_type{});
          prev = stage;
          advance();
        }
        hp::fence_registers(o);
        turn_take(false);
        hp::wgmma_fence();
        issue_pv(prev, pa);
        hp::wgmma_commit();
        turn_pass(my_tiles == kv_tiles_now());  // the last turn unless skipped tiles follow
        hp::wgmma_wait<0>();
        hp::fence_registers(o);
        hp::fence_registers(pa);
        release(prev);
      } else if (kv_tiles_now() > 0) {
        turn_empty(true, false);  // the last P V's turn, which a warpgroup computing no tile has not taken
      }
      // The block's tiles past this warpgroup's diagonal: still waited for before the release, so
      // that every arrival on a stage's empty barrier counts the round the producer is waiting on;
      // one empty turn each, where the computing warpgroups take S_t with P_{t-1} V_{t-1}.
      for (int t = my_tiles; t < kv_tiles_now(); ++t) {
        hp::mbarrier_wait(full(stage), parity());
        turn_empty(false, t == kv_tiles_now() - 1);
        release(stage);
        advance();
      }
    }

    // Epilogue: O / l rounded to the dtype into this warpgroup's rows of the Q tile (its own Q reads
    // are complete), or of the O staging tile (traits: stages_o), then one TMA store per column
    // block; rows past N are clipped by the map.
    constexpr bool kStaged = R::stages_o(T::kConfig);
    const uint32_t out_smem = kStaged ? sbase + static_cast<uint32_t>(R::o_base(kC)) : q_smem;
    if constexpr (kStaged) {
      if (ctid == 0) {
        // Every product of the tile has completed (the loop's last wait): Q's buffer may take a
        // later tile's Q now, under this epilogue, as a stage is released after its products.
        hp::mbarrier_arrive(qfree(qb));
        // This warpgroup's previous O store, a tile ago, has read the staging rows.
        hp::tma_store_wait_read();
      }
      hp::named_barrier_sync(R::epilogue_barrier(cw), R::kWarpgroupThreads);
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float l = l_run[h];
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
      const float inv = l > 0.0f ? 1.0f / l : 0.0f;
      const int row = kRows * cw + 16 * wi + g + 8 * h;
#pragma unroll
      for (int j = 0; j < D / 8; ++j)
        wd::st_shared_u32(out_smem + R::element_byte(D, BR, row, 8 * j + 2 * tq),
                          wd::pack<DT>(o[4 * j + 2 * h] * inv, o[4 * j + 2 * h + 1] * inv));
    }
    hp::fence_proxy_async_shared();
    hp::named_barrier_sync(R::epilogue_barrier(cw), R::kWarpgroupThreads);
    if (ctid == 0) {
      const int head = info_word(2, tw.head), batch = info_word(3, tw.batch);
      const uint32_t out_rows = out_smem + cw * R::block_bytes(D, kRows);
#pragma unroll
      for (int b = 0; b < kBlocks; ++b)
        hp::tma_store_4d(&P.o, out_rows + b * R::block_bytes(D, BR), b * R::block_columns(D), row_first_now(), head, batch);
      hp::tma_store_commit();
      if constexpr (!kStaged) {
        hp::tma_store_wait_read();
        // The store has read this warpgroup's rows: the producer may load a later tile's Q there.
        if constexpr (PERSISTENT != 0) hp::mbarrier_arrive(qfree(qb));
      }
    }
    phase += 2u;
  } while (more_tiles(tile_of(ordinal())));
  // The staging rows must stay until the last store has read them.
  if constexpr (R::stages_o(T::kConfig)) {
    if (ctid == 0) hp::tma_store_wait_read();
  }
}

}  // namespace flashtune::kernels
