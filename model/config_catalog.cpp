#include "model/config_catalog.h"

#include <stdexcept>

#include "kernels/traits/variants.h"
#include "model/compiled_instruction_table.h"
#include "model/compiled_instructions.h"

namespace flashtune::model {

namespace {
// Warp instructions a persistent (/pe) kernel executes per warp of its block and K/V tile beyond its
// twin's over the same tiles: ncu's executed instructions, one launch each, H100
// (docs/results/h100-wgmma-persistent-instructions-43f12ce.md): 58.65 M against 56.83 M for d128
// br128 s2 on 2 x 9674 (11552 block-tiles of 12 warps: 13.1 each) and 544.3 M against 534.5 M for
// d64 br192 s2 on 2 x 32768 (87552 of 16 warps: 7.0); the mean of the two. Without it the model saw
// nothing for /pe to lose on long blocks, where it runs 1-5% slower than its twin, and picked it
// (issue 25's knob pick 37 of 54 on the H100, 39 on the H200; with it 39 and 41, the unseen worst
// top-1 regret 13.0% -> 10.7% and 13.2% -> 9.7%: docs/fit.md).
constexpr double kPersistentLoopWarpInstructions = 10.0;
}  // namespace

std::optional<std::string> config_rejection(const TileConfig& c, const Workload& w) {
  if (w.B < 1) return "B=" + std::to_string(w.B) + " must be at least 1";
  if (w.N < 1) return "N=" + std::to_string(w.N) + " must be at least 1";
  if (auto r = tile_rejection(c)) return r;
  if (c.d != w.d)
    return "config " + c.name() + " is built for d=" + std::to_string(c.d) + ", the workload has d=" + std::to_string(w.d);
  if (c.dtype != w.dtype)
    return "config " + c.name() + " takes " + dtype_name(c.dtype) + " operands, the workload is " + dtype_name(w.dtype);
  if (const char* why = workload_refusal(c, w)) return "config " + c.name() + " " + why;
  if (c.variant == Variant::Decode && w.N > kDecodeMaxQueryRows)
    return "config " + c.name() + " is a decode config: it serves N <= " + std::to_string(kDecodeMaxQueryRows) +
           " query rows, the workload has N=" + std::to_string(w.N);
  return std::nullopt;
}

const std::vector<TileConfig>& compiled_tile_configs() { return compiled_configs(); }

const GeometryAnalysis& ConfigCatalog::analysis(const TileConfig& c) {
  const Key key{int(c.variant), c.d, c.Br, c.Bc, int(c.layout), int(c.dtype), c.stages, c.q_smem, c.overlap, c.ping_pong, c.persistent};
  auto it = cache_.find(key);
  if (it != cache_.end()) return *it->second;
  if (auto why = tile_rejection(c)) throw std::invalid_argument(c.name() + ": " + *why);
  auto a = std::make_unique<GeometryAnalysis>(analyse_geometry(make_geometry(c)));
  apply_compiled_instruction_correction(*a);  // what the compiled code runs beyond the traits' counts
  // A persistent config (wgmma16 /pe) runs its twin's K/V loop and epilogue once per tile: until
  // the compiled-instruction table has a row of its own, the twin's row (the variant's share would
  // count another loop's instructions), plus what the persistent loop executes beyond it per K/V
  // tile (kPersistentLoopWarpInstructions).
  if (c.persistent && !shipped_compiled_instruction_table().configs.count(c.name())) {
    TileConfig twin = c;
    twin.persistent = false;
    const GeometryAnalysis& t = analysis(twin);
    a->extra_warp_instructions_per_warp_tile = t.extra_warp_instructions_per_warp_tile + kPersistentLoopWarpInstructions;
    a->extra_warp_instructions_per_warp_block = t.extra_warp_instructions_per_warp_block;
  }
  return *cache_.emplace(key, std::move(a)).first->second;
}

}  // namespace flashtune::model
