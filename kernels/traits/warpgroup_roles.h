// The roles of a warp-specialized sm_90a block, shared by the wgmma families (wgmma16_traits.h,
// wgmma_tf32_traits.h): one producer warpgroup and C consumer warpgroups of 64 query rows (the M of
// every wgmma), and their registers by role. Only the producer's keep differs between the families
// (what the producer's warps do besides issuing TMA), so it is the one parameter.
#pragma once

#include "kernels/traits/tile_config.h"

namespace flashtune::traits {

template <int ProducerRegisters>
struct WarpgroupRoles {
  static constexpr int kWarpgroupThreads = 128;
  // Each of a warpgroup's 4 warps executes every wgmma of its group as one HGMMA warp instruction
  // (how the tensor pipe's counters count them, docs/counters.md), and arrives on barriers alone.
  static constexpr int kWarpsPerWarpgroup = kWarpgroupThreads / 32;
  static constexpr int kRowsPerConsumer = 64;
  static constexpr int consumers(const TileConfig& c) { return c.Br / kRowsPerConsumer; }
  static constexpr int threads(const TileConfig& c) { return kWarpgroupThreads * (1 + consumers(c)); }
  // setmaxnreg (sm_90a): the producer keeps kProducerRegisters and the consumers share the rest of
  // what the launch gave the block (launch_registers per thread, not the SM's 65536: a consumer's
  // setmaxnreg.inc waits until the block's pool holds its registers, so a split over the launch's
  // allocation never returns; 168 x 384 = 64512 for two consumers), in the allocation unit of 8, at
  // most 240 each. With one consumer the launch already grants 255 to every thread, so no
  // reallocation.
  static constexpr int kProducerRegisters = ProducerRegisters;
  static constexpr int consumer_registers(const TileConfig& c) {
    const int share = (launch_registers(c) * (1 + consumers(c)) - kProducerRegisters) / consumers(c) / 8 * 8;
    return share < 240 ? share : 240;
  }
  // Whether the split fits the launch's allocation (what the kernel's setmaxnreg pair needs).
  static constexpr bool split_fits(const TileConfig& c) {
    return kProducerRegisters + consumers(c) * consumer_registers(c) <= launch_registers(c) * (1 + consumers(c));
  }
  static constexpr bool reallocates_registers(const TileConfig& c) { return consumers(c) > 1; }
  // What the launch grants every thread under __launch_bounds__(threads, 1): the register file
  // over the block, in the allocation unit of 8, at most 255. ptxas reports this value.
  static constexpr int launch_registers(const TileConfig& c) {
    const int r = (65536 / threads(c)) / 8 * 8;
    return r < 255 ? r : 255;
  }
};

// The splits the families were written for (their setmaxnreg comments): 24 + 2 x 240 and
// 24 + 3 x 160 for wgmma16, 56 + 2 x 224 for the tf32 pair, 64512 registers each, all the launch
// gives a block of 384 threads (168 each) and within the 65536 of 512 threads (128 each). A producer
// of 32 beside two consumers of 240 would ask 65536 of the 64512 and hang the consumers' setmaxnreg
// (seen on the H100: docs/results/h100-wgmma-persistent-dealer-6487b7e.md).
static_assert(WarpgroupRoles<24>::consumer_registers(TileConfig{Variant::Wgmma16, 64, 128, 128}) == 240);
static_assert(WarpgroupRoles<24>::consumer_registers(TileConfig{Variant::Wgmma16, 64, 192, 128}) == 160);
static_assert(WarpgroupRoles<56>::consumer_registers(TileConfig{Variant::Wgmma16, 64, 128, 64}) == 224);
static_assert(WarpgroupRoles<32>::consumer_registers(TileConfig{Variant::Wgmma16, 64, 128, 128}) == 232);
static_assert(WarpgroupRoles<24>::split_fits(TileConfig{Variant::Wgmma16, 64, 128, 128}) &&
              WarpgroupRoles<24>::split_fits(TileConfig{Variant::Wgmma16, 64, 192, 128}) &&
              WarpgroupRoles<56>::split_fits(TileConfig{Variant::Wgmma16, 64, 128, 64}) &&
              WarpgroupRoles<32>::split_fits(TileConfig{Variant::Wgmma16, 64, 128, 128}));

}  // namespace flashtune::traits
