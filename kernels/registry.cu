// The registry of compiled instantiations (gathered at compile time from the instance files that
// the traits' compiled lists fill), the default config heuristic, and the device limits query.
#include "kernels/registry.h"

#include <algorithm>
#include <iterator>
#include <string>
#include <tuple>
#include <utility>

#include "kernels/cuda_check.h"
#include "kernels/instances/instances.h"
#include "kernels/traits/variants.h"

namespace flashtune {

namespace {
auto order_key(const TileConfig& c) {
  return std::make_tuple(int(c.variant), c.d, c.Br, c.Bc, int(c.layout), int(c.dtype), c.stages, c.q_smem, c.overlap,
                         c.ping_pong, c.persistent);
}

template <class Traits>
constexpr bool compiles_d(int d, bool ptxas_o1) {
  for (const TileConfig& c : Traits::kCompiled)
    if (c.d == d && traits::built_at_ptxas_o1<Traits>(c) == ptxas_o1) return true;
  return false;
}

// The instance files of (Traits' variant, D) where its compiled list has an entry with that d: the
// -O3 one and the ptxas -O1 one, each where it holds a tile. A file kernels/CMakeLists.txt does
// not write fails the link, naming InstanceFile<V, D, PtxasO1>::add (an -O1 file: add that d to
// the variant's PTXAS_O1 list there).
template <class Traits, int D>
void add_instance_file(std::vector<const KernelInstance*>& v) {
  // variant_built: the sm_90a family's files exist only in builds that target sm_90.
  if constexpr (variant_built(Traits::kVariant)) {
    if constexpr (compiles_d<Traits>(D, false)) kernels::InstanceFile<Traits::kVariant, D>::add(v);
    if constexpr (compiles_d<Traits>(D, true)) kernels::InstanceFile<Traits::kVariant, D, true>::add(v);
  }
}

template <class Traits, std::size_t... J>
void add_variant(std::vector<const KernelInstance*>& v, std::index_sequence<J...>) {
  (add_instance_file<Traits, traits::kHeadDims[J]>(v), ...);
}

template <std::size_t... I>
void add_all(std::vector<const KernelInstance*>& v, std::index_sequence<I...>) {
  (add_variant<std::tuple_element_t<I, traits::AllTraits>>(v, std::make_index_sequence<std::size(traits::kHeadDims)>{}),
   ...);
}
}  // namespace

const std::vector<const KernelInstance*>& kernel_registry() {
  static const std::vector<const KernelInstance*> all = [] {
    std::vector<const KernelInstance*> v;
    add_all(v, std::make_index_sequence<std::tuple_size_v<traits::AllTraits>>{});
    std::stable_sort(v.begin(), v.end(), [](const KernelInstance* a, const KernelInstance* b) {
      return order_key(a->config()) < order_key(b->config());
    });
    return v;
  }();
  return all;
}

const KernelInstance* find_kernel(const TileConfig& c) {
  for (const KernelInstance* k : kernel_registry())
    if (k->config() == c) return k;
  return nullptr;
}

// Before any tuning: regtile_2d with swizzled K/Q rows, its tile picked from the grid size.
// Measured on an H200 (scripts/kernels_gpu_check.sh, median of 5, no L2 flush), regtile_2d was
// the fastest variant on every seed case:
//   d = 128 (64 x 1024): Br 128 x Bc 64, 38.9 TFLOP/s;
//   large grids, N > 256 (t22, t29, t30): 128 x 128, 40.1 / 32.5 / 39.3 TFLOP/s;
//   N <= 256 (t11, N = 128): 128 x 64, 30.9 TFLOP/s (one K/V tile of 128 keys does not pay off);
//   small grids (t10: 160 blocks of 128 rows on 132 SMs): 32 x 64, 30.1 TFLOP/s against 26.3 for
//   64 x 128, because 4x the blocks fill the SMs.
// If that instance is not compiled (small kernel set), the first compiled instance with the
// workload's d.
TileConfig default_config(const Workload& w) {
  if (w.dtype != DType::Fp32) {
    // 16-bit data: mma16 with Br = 128, two stages, Bc = 64 (Q re-read from shared memory at
    // d = 128, where registers cannot hold it), 128 keys at d = 32 (docs/kernels.md, mma16).
    TileConfig c{Variant::Mma16, w.d, 128, w.d == 32 ? 128 : 64, Layout::Swizzled, w.dtype, 2, w.d == 128};
    if (find_kernel(c)) return c;
    for (const KernelInstance* k : kernel_registry())
      if (k->config().d == w.d && k->config().dtype == w.dtype) return k->config();
    return c;
  }
  constexpr long long kSmallGrid = 2 * 132;  // fewer Br = 128 blocks than ~2 per SM of an H200
  const long long blocks_128 = w.B * ((w.N + 127) / 128);
  TileConfig c{Variant::RegTile2D, w.d, 128, 128, Layout::Swizzled};
  if (w.d == 128 || w.N <= 256) c.Bc = 64;
  if (w.d != 128 && blocks_128 < kSmallGrid) {
    c.Br = 32;
    c.Bc = 64;
  }
  if (find_kernel(c)) return c;
  for (const KernelInstance* k : kernel_registry())
    if (k->config().d == w.d && k->config().dtype == w.dtype) return k->config();
  return c;
}

DeviceLimits DeviceLimits::query(int device) {
  cudaDeviceProp prop{};
  FLASHTUNE_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  DeviceLimits d;
  d.name = prop.name;
  d.device = device;
  d.cc_major = prop.major;
  d.cc_minor = prop.minor;
  d.sm_count = prop.multiProcessorCount;
  d.max_threads_per_block = prop.maxThreadsPerBlock;
  d.max_threads_per_sm = prop.maxThreadsPerMultiProcessor;
  d.smem_per_block_optin = static_cast<int>(prop.sharedMemPerBlockOptin);
  d.smem_per_sm = static_cast<int>(prop.sharedMemPerMultiprocessor);
  d.regs_per_sm = prop.regsPerMultiprocessor;
  d.global_mem_bytes = static_cast<long long>(prop.totalGlobalMem);
  d.l2_bytes = prop.l2CacheSize;
  return d;
}

}  // namespace flashtune
