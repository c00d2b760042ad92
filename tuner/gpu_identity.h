// Who measured: the GPU (name, spec-file stem, SMs, clocks, L2, driver, CUDA runtime) and the
// build (compiler, architecture, git commit, kernel set) that a profile records.
#pragma once

#include <string>

#include "profile/profile.h"

namespace flashtune {

// Throws CudaError when the device cannot be queried. spec_dir: configs/gpus, for the spec stem.
GpuIdentity query_gpu_identity(int device, const std::string& spec_dir);

// Filled in at configure time (nvcc version, CMAKE_CUDA_ARCHITECTURES, git commit) and from the
// kernel set this binary was compiled with.
BuildInfo this_build();

}  // namespace flashtune
