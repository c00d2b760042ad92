// The KernelInstance of the sm_90a fp32 family (wgmma_3xtf32, wgmma_1xtf32): wgmma16's host path
// (compute capability refusal, TMA tensor maps encoded per launch, passed __grid_constant__) with
// fp32 tensor maps. InstanceFile<Variant::WgmmaTf32x*, D>::add, which the instance files
// (instances/wgmma_tf32_instance.cu.in) instantiate, registers one per compiled config of that d.
#pragma once

#include <climits>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "kernels/instances/instances.h"
#include "kernels/kernel_resources.h"
#include "kernels/launch_params.cuh"
#include "kernels/registry.h"
#include "kernels/support_checks.h"
#include "kernels/tensor_map.h"
#include "kernels/traits/variants.h"
#include "kernels/wgmma_tf32.cuh"

namespace flashtune::kernels {

template <traits::MmaPrecision P, int D, int BR, int BC, int STAGES>
class WgmmaTf32Instance final : public KernelInstance {
 public:
  using Traits = traits::WgmmaTf32<P>;
  using Tile = typename Traits::template Tile<D, BR, BC, STAGES>;

  const TileConfig& config() const override { return config_; }

  Support can_implement(const Workload& w, const DeviceLimits& dev) const override {
    const int cc = dev.cc_major * 10 + dev.cc_minor;
    if (cc < kWgmmaMinComputeCapability)
      return Support::no(std::string(variant_name(Traits::kVariant)) + " needs an sm_90a GPU (wgmma, TMA): " + dev.name +
                         " is compute capability " + std::to_string(dev.cc_major) + "." + std::to_string(dev.cc_minor));
    return check_support(config_, Tile::kThreads, Tile::kSmemBytes, BR, Traits::kCausalHeavyFirst, w, dev);
  }

  Support can_address(const AttentionTensors& t, const Workload& w) const override {
    WgmmaParams params{};
    return encode_maps(params, t, w);
  }

  using KernelInstance::launch;

  cudaError_t launch(const AttentionTensors& t, const Workload& w, cudaStream_t stream) const override {
    if (w.d != D || w.dtype != config_.dtype || w.B < 1 || w.N < 1 || w.N > INT_MAX || w.keys() > INT_MAX ||
        !check_tensors(t, w))
      return cudaErrorInvalidValue;
    const LaunchShape shape = launch_shape(w, BR, Traits::kCausalHeavyFirst);
    if (!shape.ok) return cudaErrorInvalidConfiguration;
    WgmmaParams params{};
    if (!encode_maps(params, t, w)) return cudaErrorInvalidValue;
    const void* fn = reinterpret_cast<const void*>(&wgmma_tf32_kernel<P, D, BR, BC, STAGES>);
    if (const cudaError_t e = cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, Tile::kSmemBytes);
        e != cudaSuccess)
      return e;
    params.p = attention_params(t, w, shape);
    void* args[] = {&params};
    return cudaLaunchKernel(fn, shape.grid, dim3(Tile::kThreads), args, static_cast<std::size_t>(Tile::kSmemBytes),
                            stream);
  }

  KernelResources resources() const override {
    const auto fn = &wgmma_tf32_kernel<P, D, BR, BC, STAGES>;
    return kernel_resources(reinterpret_cast<const void*>(fn), Tile::kSmemBytes, Tile::kThreads);
  }

 private:
  // As wgmma16: Q and O in boxes of one consumer's 64 rows, K and V in boxes of Bc rows, 32 fp32
  // columns (one 128-byte swizzled row) per box.
  static Support encode_maps(WgmmaParams& params, const AttentionTensors& t, const Workload& w) {
    if (Support s = check_tensors(t, w); !s) return s;
    return encode_attention_maps(params.q, params.k, params.v, params.o, t, w, Traits::kQBoxRows, BC);
  }

  TileConfig config_ = Tile::kConfig;
};

template <traits::MmaPrecision P, int D, int CD, int CBR, int CBC, int CS>
void add_wgmma_tf32_if_d(std::vector<const KernelInstance*>& out) {
  if constexpr (CD == D) {
    static const WgmmaTf32Instance<P, CD, CBR, CBC, CS> instance;
    out.push_back(&instance);
  }
}

template <traits::MmaPrecision P, int D, std::size_t... I>
void add_wgmma_tf32_compiled(std::vector<const KernelInstance*>& out, std::index_sequence<I...>) {
  using Traits = traits::WgmmaTf32<P>;
  (add_wgmma_tf32_if_d<P, D, Traits::kCompiled[I].d, Traits::kCompiled[I].Br, Traits::kCompiled[I].Bc,
                       Traits::kCompiled[I].stages>(out),
   ...);
}

template <int D>
void InstanceFile<Variant::WgmmaTf32x3, D>::add(std::vector<const KernelInstance*>& out) {
  constexpr std::size_t n = sizeof(traits::WgmmaTf32x3::kCompiled) / sizeof(traits::WgmmaTf32x3::kCompiled[0]);
  add_wgmma_tf32_compiled<traits::MmaPrecision::Tf32x3, D>(out, std::make_index_sequence<n>{});
}
template <int D>
void InstanceFile<Variant::WgmmaTf32x1, D>::add(std::vector<const KernelInstance*>& out) {
  constexpr std::size_t n = sizeof(traits::WgmmaTf32x1::kCompiled) / sizeof(traits::WgmmaTf32x1::kCompiled[0]);
  add_wgmma_tf32_compiled<traits::MmaPrecision::Tf32x1, D>(out, std::make_index_sequence<n>{});
}

}  // namespace flashtune::kernels
