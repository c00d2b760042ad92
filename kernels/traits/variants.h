// Dispatch over the kernel variants' traits: which configs can be built, their geometry, and
// which ones the kernels library compiles. Plain C++17, header-only (the model reads it).
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "kernel_geometry.h"
#include "mma_tf32_traits.h"
#include "regtile_2d_traits.h"
#include "row_reg_traits.h"
#include "row_smem_traits.h"
#include "tile_config.h"
#include "warp_groups_traits.h"

namespace flashtune {

namespace traits {
// Calls f(Traits{}) for the traits struct of variant v; nullopt for a value outside the enum.
template <class F>
auto visit_variant(Variant v, F&& f) -> std::optional<decltype(f(RowSmem{}))> {
  switch (v) {
    case Variant::RowSmem: return f(RowSmem{});
    case Variant::RowReg: return f(RowReg{});
    case Variant::WarpGroups: return f(WarpGroups{});
    case Variant::RegTile2D: return f(RegTile2D{});
    case Variant::MmaTf32x3: return f(MmaTf32x3{});
    case Variant::MmaTf32x1: return f(MmaTf32x1{});
  }
  return std::nullopt;
}
}  // namespace traits

// Empty optional = this variant can be built with this (d, Br, Bc, layout); else a one-line reason.
inline std::optional<std::string> tile_rejection(const TileConfig& c) {
  auto r = traits::visit_variant(c.variant, [&](auto t) { return decltype(t)::rejection(c); });
  if (!r) return std::string(variant_name(c.variant)) + " is not part of this build";
  return *r;
}

// Geometry of an allowed config (precondition: !tile_rejection(c)).
inline KernelGeometry make_geometry(const TileConfig& c) {
  auto g = traits::visit_variant(c.variant, [&](auto t) { return decltype(t)::geometry(c); });
  return g ? *g : KernelGeometry{};
}

// Every instantiation the kernels library compiles, in a stable order (variant, d, Br, Bc, layout).
inline const std::vector<TileConfig>& compiled_configs() {
  static const std::vector<TileConfig> all = [] {
    std::vector<TileConfig> v;
    for (Variant var : kAllVariants) {
      traits::visit_variant(var, [&](auto t) {
        for (const TileConfig& c : decltype(t)::kCompiled) v.push_back(c);
        return 0;
      });
    }
    auto key = [](const TileConfig& c) { return std::make_tuple(int(c.variant), c.d, c.Br, c.Bc, int(c.layout)); };
    std::sort(v.begin(), v.end(), [&](const TileConfig& a, const TileConfig& b) { return key(a) < key(b); });
    return v;
  }();
  return all;
}

// The head dimensions with at least one compiled config, ascending.
inline std::vector<int> compiled_head_dims() {
  std::vector<int> ds;
  for (const TileConfig& c : compiled_configs())
    if (std::find(ds.begin(), ds.end(), c.d) == ds.end()) ds.push_back(c.d);
  std::sort(ds.begin(), ds.end());
  return ds;
}

}  // namespace flashtune
