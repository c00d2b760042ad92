// The generic KernelInstance: one per compiled config (variant, d, Br, Bc, layout, dtype, stages,
// q_smem), its description and launch geometry read from the variant's traits Tile, its kernel
// named by the instance file; and InstanceFile<V, D, PtxasO1>::add, which the instance files
// instantiate.
// The fp32 variants' Tile and kernel templates take (D, BR, BC, L) and ignore the knobs (their
// configs have them at the defaults); mma16's take all seven (TraitsTile below).
#pragma once

#include <climits>
#include <cmath>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "kernels/attention_params.cuh"
#include "kernels/launch_params.cuh"
#include "kernels/instances/instances.h"
#include "kernels/kernel_resources.h"
#include "kernels/registry.h"
#include "kernels/support_checks.h"
#include "kernels/traits/variants.h"

namespace flashtune::kernels {

using KernelFn = void (*)(AttentionParams);

// Whether a variant's traits Tile is templated on the whole config (dtype, stages, q_smem too).
template <class Traits>
inline constexpr bool kTileTakesKnobs = false;
template <>
inline constexpr bool kTileTakesKnobs<traits::Mma16> = true;

template <class Traits, bool Knobs = kTileTakesKnobs<Traits>>
struct TraitsTile {
  template <int D, int BR, int BC, Layout L, int DT, int STAGES, int QSMEM>
  using Of = typename Traits::template Tile<D, BR, BC, L>;
};
template <class Traits>
struct TraitsTile<Traits, true> {
  template <int D, int BR, int BC, Layout L, int DT, int STAGES, int QSMEM>
  using Of = typename Traits::template Tile<D, BR, BC, L, DT, STAGES, QSMEM>;
};

template <class Traits, int D, int BR, int BC, Layout L, int DT, int STAGES, int QSMEM>
class TiledKernelInstance final : public KernelInstance {
 public:
  using Tile = typename TraitsTile<Traits>::template Of<D, BR, BC, L, DT, STAGES, QSMEM>;

  explicit TiledKernelInstance(KernelFn fn) : fn_(fn) {}

  const TileConfig& config() const override { return config_; }

  Support can_implement(const Workload& w, const DeviceLimits& dev) const override {
    return check_support(config_, Tile::kThreads, Tile::kSmemBytes, BR, Traits::kCausalHeavyFirst, w, dev);
  }

  using KernelInstance::launch;

  cudaError_t launch(const AttentionTensors& t, const Workload& w, cudaStream_t stream) const override {
    if (w.d != D || w.dtype != config_.dtype || w.B < 1 || w.N < 1 || w.N > INT_MAX || !check_inference_shape(w) ||
        !check_tensors(t, w))
      return cudaErrorInvalidValue;
    const LaunchShape shape = launch_shape(w, BR, Traits::kCausalHeavyFirst);
    if (!shape.ok) return cudaErrorInvalidConfiguration;
    if (Tile::kSmemBytes > 48 * 1024) {
      // Opting in above 48 KB is a per-function attribute; set it every launch (a host-side call,
      // no device work) so that a second device or a fresh context is always covered.
      const cudaError_t e =
          cudaFuncSetAttribute(reinterpret_cast<const void*>(fn_), cudaFuncAttributeMaxDynamicSharedMemorySize,
                               Tile::kSmemBytes);
      if (e != cudaSuccess) return e;
    }
    AttentionParams p = attention_params(t, w, shape);
    void* args[] = {&p};
    return cudaLaunchKernel(reinterpret_cast<const void*>(fn_), shape.grid, dim3(Tile::kThreads), args,
                            static_cast<std::size_t>(Tile::kSmemBytes), stream);
  }

  KernelResources resources() const override {
    return kernel_resources(reinterpret_cast<const void*>(fn_), Tile::kSmemBytes, Tile::kThreads);
  }

 private:
  TileConfig config_ = Tile::kConfig;
  KernelFn fn_;
};

// Appends one instance per entry of Traits::kCompiled whose d is D and whose ptxas level is the
// file's, each instantiating the kernel named by KernelOf<D, BR, BC, L, DT, STAGES, QSMEM>::fn.
// Only those entries are instantiated, so each instance file compiles its own share.
// The instance class of a compiled config: the tiled one above, unless the variant's kernel header
// specializes this for its traits (the decode family: two kernels and a workspace per launch).
template <class Traits, int D, int BR, int BC, Layout L, int DT, int STAGES, int QSMEM>
struct InstanceOf {
  using type = TiledKernelInstance<Traits, D, BR, BC, L, DT, STAGES, QSMEM>;
};

// Take is a template argument (not a test inside) so that an entry's add_if is the same function
// in both instance files of a d: empty in the one that does not build it.
template <bool Take, class Traits, template <int, int, int, Layout, int, int, int> class KernelOf, int CD, int CBR,
          int CBC, Layout CL, int CDT, int CS, int CQ>
void add_if(std::vector<const KernelInstance*>& out) {
  if constexpr (Take) {
    static const typename InstanceOf<Traits, CD, CBR, CBC, CL, CDT, CS, CQ>::type instance(
        KernelOf<CD, CBR, CBC, CL, CDT, CS, CQ>::fn);
    out.push_back(&instance);
  }
}

template <class Traits, int D, bool PtxasO1, template <int, int, int, Layout, int, int, int> class KernelOf,
          std::size_t... I>
void add_compiled_impl(std::vector<const KernelInstance*>& out, std::index_sequence<I...>) {
  (add_if<Traits::kCompiled[I].d == D && traits::built_at_ptxas_o1<Traits>(Traits::kCompiled[I]) == PtxasO1, Traits,
          KernelOf, Traits::kCompiled[I].d, Traits::kCompiled[I].Br, Traits::kCompiled[I].Bc, Traits::kCompiled[I].layout,
          static_cast<int>(Traits::kCompiled[I].dtype), Traits::kCompiled[I].stages,
          Traits::kCompiled[I].q_smem ? 1 : 0>(out),
   ...);
}

// The kernel template of variant V as Of<D, BR, BC, L, DT, STAGES, QSMEM>::fn: specialized by the
// variant's instance files (instances/instance.cu.in), the only place that names the kernel.
template <Variant V>
struct VariantKernel;

template <Variant V, int D, bool PtxasO1>
void InstanceFile<V, D, PtxasO1>::add(std::vector<const KernelInstance*>& out) {
  using Traits = traits::TraitsOf<V>;
  constexpr std::size_t n = sizeof(Traits::kCompiled) / sizeof(Traits::kCompiled[0]);
  add_compiled_impl<Traits, D, PtxasO1, VariantKernel<V>::template Of>(out, std::make_index_sequence<n>{});
}

}  // namespace flashtune::kernels
