// Host-side checks shared by every kernel instance: can a (config, workload) run on a device,
// and with which grid. One line per refusal, naming the bad value.
#pragma once

#include <cuda_runtime_api.h>

#include "kernels/registry.h"
#include "kernels/traits/traits_common.h"

namespace flashtune::kernels {

// Grid of one block per (Br query rows, batch entry) in the order traits::grid_order gives
// (heavy_first: the kernel's traits' kCausalHeavyFirst). Not ok where N or B is out of range or
// a folded grid exceeds grid.x.
struct LaunchShape {
  bool ok = false;
  int q_tiles = 0;
  traits::GridOrder order = traits::GridOrder::TileFastest;
  dim3 grid;
  long long blocks = 0;
};
LaunchShape launch_shape(const Workload& w, int Br, bool heavy_first);

// The inference operands' own limits, shared by every family: kv_len >= 0 and within 32-bit
// indices, kv_group >= 1, and causal only where N <= keys() (bottom-right alignment).
Support check_inference_shape(const Workload& w);

Support check_support(const TileConfig& c, int threads, int smem_bytes, int Br, bool heavy_first, const Workload& w,
                      const DeviceLimits& dev);

}  // namespace flashtune::kernels
