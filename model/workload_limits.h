// The one check of a workload's size that predict, run and tune all make before anything uses it:
// B, N, d >= 1, N within the kernels' 32-bit index range, a grid
// some config can launch, and every count and byte total of the model and the harness inside
// 64-bit arithmetic (a wrapped count printed 19931 TFLOP/s for B = 2^63-1). Plain C++, no CUDA.
#pragma once

#include <optional>
#include <string>

#include "kernels/traits/tile_config.h"

namespace flashtune::model {

// Why no kernel accepts `w` ("N=1099511627776 is above the kernels' limit 2147483647"), or nullopt.
std::optional<std::string> workload_limit_error(const Workload& w);

// Bytes of Q, K, V and O in fp32 (8 B N d + 8 (B / kv_group) keys d); only meaningful once
// workload_limit_error is nullopt.
long long workload_bytes(const Workload& w);

}  // namespace flashtune::model
