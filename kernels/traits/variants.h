// Dispatch over the kernel variants' traits: which configs can be built, their geometry, and
// which ones the kernels library compiles. Plain C++17, header-only (the model reads it).
#pragma once

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "decode_traits.h"
#include "kernel_geometry.h"
#include "mma16_traits.h"
#include "mma_tf32_traits.h"
#include "regtile_2d_traits.h"
#include "row_reg_traits.h"
#include "row_smem_traits.h"
#include "tile_config.h"
#include "warp_groups_traits.h"
#include "wgmma16_traits.h"
#include "wgmma_tf32_traits.h"

namespace flashtune {

namespace traits {
// Every variant's traits struct, at the index of its Variant value (the order of kAllVariants):
// the one list of variants that visit_variant and the kernel registry iterate.
using AllTraits =
    std::tuple<RowSmem, RowReg, WarpGroups, RegTile2D, MmaTf32x3, MmaTf32x1, Mma16, Wgmma16, Decode, WgmmaTf32x3,
               WgmmaTf32x1>;

template <Variant V>
using TraitsOf = std::tuple_element_t<static_cast<std::size_t>(V), AllTraits>;

namespace detail {
template <std::size_t... I>
constexpr bool traits_in_variant_order(std::index_sequence<I...>) {
  return sizeof...(I) == std::size(kAllVariants) &&
         ((static_cast<std::size_t>(kAllVariants[I]) == I && std::tuple_element_t<I, AllTraits>::kVariant == kAllVariants[I]) &&
          ...);
}

template <class R, class F, std::size_t... I>
R visit_at(Variant v, F& f, std::index_sequence<I...>) {
  R r;
  // The fold stops at the matching index; its value is not needed (void: clang's -Wunused-value).
  static_cast<void>(((static_cast<std::size_t>(v) == I ? (r = f(std::tuple_element_t<I, AllTraits>{}), true) : false) || ...));
  return r;
}
}  // namespace detail

static_assert(detail::traits_in_variant_order(std::make_index_sequence<std::tuple_size_v<AllTraits>>{}),
              "AllTraits lists one traits struct per Variant, in the order of kAllVariants");

// Calls f(Traits{}) for the traits struct of variant v; nullopt for a value outside the enum.
template <class F>
auto visit_variant(Variant v, F&& f) -> std::optional<decltype(f(RowSmem{}))> {
  using R = std::optional<decltype(f(RowSmem{}))>;
  return detail::visit_at<R>(v, f, std::make_index_sequence<std::tuple_size_v<AllTraits>>{});
}
}  // namespace traits

// Empty optional = this variant can be built with this (d, Br, Bc, layout); else a one-line reason.
inline std::optional<std::string> tile_rejection(const TileConfig& c) {
  auto r = traits::visit_variant(c.variant, [&](auto t) { return decltype(t)::rejection(c); });
  if (!r) return std::string(variant_name(c.variant)) + " is not part of this build";
  return *r;
}

// Why the config's variant refuses the workload beyond the checks every family makes (its traits'
// word: the persistent grid under causal, traits::Wgmma16::persistent_refusal), or nullptr. Read by
// the model's config_rejection and the kernel tests; the kernel's can_implement reads its traits.
inline const char* workload_refusal(const TileConfig& c, const Workload& w) {
  return c.variant == Variant::Wgmma16 ? traits::Wgmma16::persistent_refusal(c, w) : nullptr;
}

// Geometry of an allowed config (precondition: !tile_rejection(c)).
inline KernelGeometry make_geometry(const TileConfig& c) {
  auto g = traits::visit_variant(c.variant, [&](auto t) { return decltype(t)::geometry(c); });
  return g ? *g : KernelGeometry{};
}

// Whether this build compiles variant v at all. The sm_90a families (wgmma16, wgmma_3xtf32,
// wgmma_1xtf32) exist only where the
// build targets sm_90 (kernels/CMakeLists.txt defines FLASHTUNE_WGMMA on the traits then); every
// other variant is always compiled.
#if FLASHTUNE_WGMMA
inline constexpr bool kWgmmaBuilt = true;
#else
inline constexpr bool kWgmmaBuilt = false;
#endif
constexpr bool variant_built(Variant v) { return !is_wgmma_variant(v) || kWgmmaBuilt; }

// Every instantiation the kernels library compiles, in a stable order (variant, d, Br, Bc, layout).
inline const std::vector<TileConfig>& compiled_configs() {
  static const std::vector<TileConfig> all = [] {
    std::vector<TileConfig> v;
    for (Variant var : kAllVariants) {
      if (!variant_built(var)) continue;
      traits::visit_variant(var, [&](auto t) {
        for (const TileConfig& c : decltype(t)::kCompiled) v.push_back(c);
        return 0;
      });
    }
    auto key = [](const TileConfig& c) { return std::make_tuple(int(c.variant), c.d, c.Br, c.Bc, int(c.layout), int(c.dtype), c.stages, c.q_smem, c.overlap, c.ping_pong, c.persistent); };
    std::sort(v.begin(), v.end(), [&](const TileConfig& a, const TileConfig& b) { return key(a) < key(b); });
    return v;
  }();
  return all;
}

// The head dimensions with at least one compiled config of element type t that serves any query
// length, ascending: the decode family's (N <= 64 only) do not count, so that a d listed here runs
// every workload of that d (the small kernel set compiles decode at d = 128 without a tiled fp32
// d = 128 config).
inline std::vector<int> compiled_head_dims(DType t = DType::Fp32) {
  std::vector<int> ds;
  for (const TileConfig& c : compiled_configs())
    if (c.dtype == t && c.variant != Variant::Decode && std::find(ds.begin(), ds.end(), c.d) == ds.end())
      ds.push_back(c.d);
  std::sort(ds.begin(), ds.end());
  return ds;
}

}  // namespace flashtune
