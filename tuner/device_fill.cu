#include "tuner/device_buffer.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>

namespace flashtune {
namespace {

// splitmix64 finaliser: a cheap, well-mixed hash of the (seed, index) pair.
__host__ __device__ inline std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

__host__ __device__ inline float uniform_at(std::uint64_t seed, std::uint64_t index, float lo, float hi) {
  // 24 random bits give every float in [0, 1) step 2^-24; dividing by 2^24 - 1 reaches 1 exactly.
  const std::uint64_t h = mix(seed * 0xD1B54A32D192ED03ull + mix(index));
  const float u = float(h >> 40) * (1.0f / float((1u << 24) - 1));
  // An explicit fma so host and device round identically (nvcc would contract a*b+c on its own).
  return fmaf(hi - lo, u, lo);
}

__global__ void fill_uniform_kernel(float* out, std::size_t n, float lo, float hi, std::uint64_t seed) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = uniform_at(seed, i, lo, hi);
}

template <bool kBf16>
__global__ void round_kernel(float* x, std::uint16_t* out16, std::size_t n) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    if constexpr (kBf16) {
      const __nv_bfloat16 h = __float2bfloat16_rn(x[i]);
      out16[i] = __bfloat16_as_ushort(h);
      x[i] = __bfloat162float(h);
    } else {
      const __half h = __float2half_rn(x[i]);
      out16[i] = __half_as_ushort(h);
      x[i] = __half2float(h);
    }
  }
}

template <bool kBf16>
__global__ void widen_kernel(const std::uint16_t* in16, float* out, std::size_t n) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = kBf16 ? __bfloat162float(__ushort_as_bfloat16(in16[i])) : __half2float(__ushort_as_half(in16[i]));
}

unsigned grid_for(std::size_t n, int threads) {
  const std::size_t wanted = (n + threads - 1) / threads;
  return unsigned(wanted < 65535 ? wanted : 65535);
}

}  // namespace

void round_to_dtype(float* dev, std::uint16_t* out16, std::size_t n, DType t, cudaStream_t stream) {
  if (n == 0 || t == DType::Fp32) return;
  if (t == DType::Bf16)
    round_kernel<true><<<grid_for(n, 256), 256, 0, stream>>>(dev, out16, n);
  else
    round_kernel<false><<<grid_for(n, 256), 256, 0, stream>>>(dev, out16, n);
  FLASHTUNE_CUDA_CHECK(cudaGetLastError());
}

void widen_to_float(const std::uint16_t* in16, float* out, std::size_t n, DType t, cudaStream_t stream) {
  if (n == 0 || t == DType::Fp32) return;
  if (t == DType::Bf16)
    widen_kernel<true><<<grid_for(n, 256), 256, 0, stream>>>(in16, out, n);
  else
    widen_kernel<false><<<grid_for(n, 256), 256, 0, stream>>>(in16, out, n);
  FLASHTUNE_CUDA_CHECK(cudaGetLastError());
}

float uniform_value(std::uint64_t seed, std::uint64_t index, float lo, float hi) {
  return uniform_at(seed, index, lo, hi);
}

void fill_uniform(float* dev, std::size_t n, float lo, float hi, std::uint64_t seed, cudaStream_t stream) {
  if (n == 0) return;
  constexpr int kThreads = 256;
  const std::size_t wanted = (n + kThreads - 1) / kThreads;
  const unsigned blocks = unsigned(wanted < 65535 ? wanted : 65535);
  fill_uniform_kernel<<<blocks, kThreads, 0, stream>>>(dev, n, lo, hi, seed);
  FLASHTUNE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace flashtune
