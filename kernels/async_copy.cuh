// cp.async (sm_80+): 16-byte global -> shared copies that bypass registers and L1, shared by the
// kernels that stage tiles asynchronously (regtile_2d, mma_tf32, mma16).
#pragma once

#include <cuda_runtime.h>

namespace flashtune::kernels {

// src_bytes = 0 writes zeros (the masked tail rows of K, V and Q), so compute loops never branch on N.
__device__ __forceinline__ void cp_async_16(float* smem, const float* gmem, bool valid) {
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  const int src_bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem), "r"(src_bytes) : "memory");
}
// The same copy to a shared-memory byte address (the 16-bit kernels address shared memory in bytes).
__device__ __forceinline__ void cp_async_16(unsigned smem_addr, const void* gmem, bool valid) {
  const int src_bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr), "l"(gmem), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }
// Waits until at most N of this thread's committed groups are still in flight (a K/V ring of
// N + 2 stages keeps N + 1 tiles in flight while one computes).
template <int N>
__device__ __forceinline__ void cp_async_wait_group() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

}  // namespace flashtune::kernels
