// The KernelInstance of the sm_90a family: refuses devices below compute capability 9.0, encodes
// the four TMA tensor maps on the host for every launch and passes them by value
// (__grid_constant__). InstanceFile<Variant::Wgmma16, D>::add, which the wgmma16 instance files
// (instances/wgmma16_instance.cu.in) instantiate, registers one per compiled config of that d.
#pragma once

#include <algorithm>
#include <atomic>
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
#include "kernels/wgmma16.cuh"

namespace flashtune::kernels {

template <int D, int BR, int BC, Layout L, int DT, int STAGES, int QSMEM, int OVERLAP, int PINGPONG, int PERSISTENT>
class Wgmma16Instance final : public KernelInstance {
 public:
  using Traits = traits::Wgmma16;
  using Tile = Traits::Tile<D, BR, BC, L, DT, STAGES, QSMEM, OVERLAP, PINGPONG, PERSISTENT>;

  const TileConfig& config() const override { return config_; }

  Support can_implement(const Workload& w, const DeviceLimits& dev) const override {
    const int cc = dev.cc_major * 10 + dev.cc_minor;
    if (cc < kWgmmaMinComputeCapability)
      return Support::no(std::string(variant_name(Traits::kVariant)) + " needs an sm_90a GPU (wgmma, TMA): " + dev.name +
                         " is compute capability " + std::to_string(dev.cc_major) + "." + std::to_string(dev.cc_minor));
    if (Support s = check_support(config_, Tile::kThreads, Tile::kSmemBytes, BR, Traits::kCausalHeavyFirst, w, dev); !s)
      return s;
    if (const char* why = Traits::persistent_refusal(config_, w)) return Support::no(why);
    if (PERSISTENT != 0) {
      const LaunchShape shape = launch_shape(w, BR, Traits::kCausalHeavyFirst);
      if (shape.blocks > INT_MAX)
        return Support::no("the persistent grid numbers its " + std::to_string(shape.blocks) + " tiles in 32 bits (at most " +
                           std::to_string(INT_MAX) + ")");
    }
    return Support::yes();
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
    const void* fn = reinterpret_cast<const void*>(&wgmma16_kernel<D, BR, BC, L, DT, STAGES, QSMEM, OVERLAP, PINGPONG, PERSISTENT>);
    // Opting in above 48 KB is a per-function attribute; set every launch (host-only, cheap) so a
    // second device or a fresh context is covered.
    if (const cudaError_t e = cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, Tile::kSmemBytes);
        e != cudaSuccess)
      return e;
    params.p = attention_params(t, w, shape);
    dim3 grid = shape.grid;
    if constexpr (PERSISTENT != 0) {
      // About one block per SM (as many as fit): block b walks tiles b, b + grid, .. of the grid
      // above, numbered in its launch order (x fastest).
      if (shape.blocks > INT_MAX) return cudaErrorInvalidConfiguration;
      int resident = 0;
      if (const cudaError_t e = resident_blocks(fn, resident); e != cudaSuccess) return e;
      const traits::FastDivisor x = traits::fast_divisor(shape.grid.x);
      params.tiles = static_cast<int>(shape.blocks);
      params.tile_grid_x = static_cast<int>(shape.grid.x);
      params.tile_grid_x_magic = x.magic;
      params.tile_grid_x_shift = x.shift;
      grid = dim3(static_cast<unsigned>(std::min<long long>(shape.blocks, resident)));
    }
    void* args[] = {&params};
    return cudaLaunchKernel(fn, grid, dim3(Tile::kThreads), args, static_cast<std::size_t>(Tile::kSmemBytes), stream);
  }

  KernelResources resources() const override {
    const auto fn = &wgmma16_kernel<D, BR, BC, L, DT, STAGES, QSMEM, OVERLAP, PINGPONG, PERSISTENT>;
    return kernel_resources(reinterpret_cast<const void*>(fn), Tile::kSmemBytes, Tile::kThreads);
  }

 private:
  // Q and O in boxes of one consumer's 64 rows over [batch, Hq, N, d]; K and V in boxes of Bc rows
  // over [batch, Hkv, keys, d] (grouped heads read in place: the kernel maps query head h to h /
  // kv_group).
  static Support encode_maps(WgmmaParams& params, const AttentionTensors& t, const Workload& w) {
    if (Support s = check_tensors(t, w); !s) return s;
    return encode_attention_maps(params.q, params.k, params.v, params.o, t, w, Traits::kQBoxRows, BC);
  }

  // The persistent grid's size on the current device: SMs x the blocks of this kernel one SM holds
  // (the occupancy calculator, on the shared memory set above). Cached per device: the launch is
  // timed, and the calculator is not free.
  cudaError_t resident_blocks(const void* fn, int& out) const {
    int device = 0;
    if (const cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
    const long long cached = resident_cache_.load(std::memory_order_relaxed);
    if (cached >= 0 && (cached >> 32) == device) {
      out = static_cast<int>(cached & 0xffffffffLL);
      return cudaSuccess;
    }
    int sms = 0, per_sm = 0;
    if (const cudaError_t e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device); e != cudaSuccess)
      return e;
    if (const cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fn, Tile::kThreads,
                                                                            static_cast<std::size_t>(Tile::kSmemBytes));
        e != cudaSuccess)
      return e;
    out = std::max(1, sms * per_sm);
    resident_cache_.store((static_cast<long long>(device) << 32) | out, std::memory_order_relaxed);
    return cudaSuccess;
  }

  TileConfig config_ = Tile::kConfig;
  mutable std::atomic<long long> resident_cache_{-1};
};

template <int D, int CD, int CBR, int CBC, Layout CL, int CDT, int CS, int CQ, int CO, int CP, int CE>
void add_wgmma16_if_d(std::vector<const KernelInstance*>& out) {
  if constexpr (CD == D) {
    static const Wgmma16Instance<CD, CBR, CBC, CL, CDT, CS, CQ, CO, CP, CE> instance;
    out.push_back(&instance);
  }
}

template <int D, std::size_t... I>
void add_wgmma16_compiled(std::vector<const KernelInstance*>& out, std::index_sequence<I...>) {
  using Traits = traits::Wgmma16;
  (add_wgmma16_if_d<D, Traits::kCompiled[I].d, Traits::kCompiled[I].Br, Traits::kCompiled[I].Bc,
                    Traits::kCompiled[I].layout, static_cast<int>(Traits::kCompiled[I].dtype), Traits::kCompiled[I].stages,
                    Traits::kCompiled[I].q_smem ? 1 : 0, Traits::kCompiled[I].overlap ? 1 : 0,
                    Traits::kCompiled[I].ping_pong ? 1 : 0, Traits::kCompiled[I].persistent ? 1 : 0>(out),
   ...);
}

template <int D>
void InstanceFile<Variant::Wgmma16, D>::add(std::vector<const KernelInstance*>& out) {
  constexpr std::size_t n = sizeof(traits::Wgmma16::kCompiled) / sizeof(traits::Wgmma16::kCompiled[0]);
  add_wgmma16_compiled<D>(out, std::make_index_sequence<n>{});
}

}  // namespace flashtune::kernels
