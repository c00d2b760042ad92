// The decode family's host pieces that are not per config: the cast from a registry instance and
// the workspace pool.
#include "kernels/decode_api.h"

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>

#include "kernels/decode.cuh"

namespace flashtune {

const DecodeKernel* as_decode(const KernelInstance* k) { return dynamic_cast<const DecodeKernel*>(k); }

namespace kernels {

cudaMemPool_t decode_workspace_pool(int device) {
  static std::mutex mu;
  static std::map<int, cudaMemPool_t> pools;
  std::lock_guard<std::mutex> lock(mu);
  auto it = pools.find(device);
  if (it != pools.end()) return it->second;
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  cudaMemPool_t pool = nullptr;
  if (cudaMemPoolCreate(&pool, &props) != cudaSuccess) {
    // The device's default pool still serves; only its release threshold is not ours to keep.
    cudaDeviceGetDefaultMemPool(&pool, device);
    return pool;
  }
  // Keep freed workspace in the pool across synchronizations (the default threshold 0 hands it
  // back to the driver at every synchronize, and the next launch maps it again).
  std::uint64_t keep = UINT64_MAX;
  cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
  pools.emplace(device, pool);
  return pool;
}

unsigned long long decode_launch_id() {
  static std::atomic<unsigned long long> next{1};
  const unsigned long long id = next.fetch_add(1, std::memory_order_relaxed) & ((1ULL << 48) - 1);
  return id != 0 ? id : decode_launch_id();
}

bool decode_streams_evict_first(const DecodeProblem& p, long long l2_bytes) {
  if (const int forced = decode_flags(); forced >= 0) return (forced & 1) != 0;
  const double kv_bytes =
      2.0 * double(dtype_bytes(p.dtype)) * double(p.batch) * double(p.q_heads / p.kv_group) * double(p.keys) * p.d;
  return traits::Decode::evict_first(kv_bytes, double(l2_bytes));
}

int decode_flags() {
  static const int flags = [] {
    if (const char* f = std::getenv("FLASHTUNE_DECODE_FLAGS")) return std::atoi(f);
    return -1;
  }();
  return flags;
}

}  // namespace kernels
}  // namespace flashtune
