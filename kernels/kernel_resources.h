// KernelResources of a compiled kernel, as every instance class reports them (KernelInstance::
// resources: the checks and the model's registers read them).
#pragma once

#include <cuda_runtime.h>

#include "kernels/registry.h"

namespace flashtune::kernels {

// What the runtime says kernel `fn` uses (registers, static shared and local memory, its thread
// limit; zeros where it cannot say), beside the launch's dynamic shared memory and threads: every
// instance class's resources().
inline KernelResources kernel_resources(const void* fn, int dynamic_smem_bytes, int threads_per_block) {
  KernelResources r;
  cudaFuncAttributes a{};
  if (cudaFuncGetAttributes(&a, fn) == cudaSuccess) {
    r.registers = a.numRegs;
    r.static_smem_bytes = static_cast<int>(a.sharedSizeBytes);
    r.local_bytes = static_cast<int>(a.localSizeBytes);
    r.max_threads_per_block = a.maxThreadsPerBlock;
  }
  r.dynamic_smem_bytes = dynamic_smem_bytes;
  r.threads_per_block = threads_per_block;
  return r;
}

}  // namespace flashtune::kernels
