// Host-side 16-bit operands for the bf16 / fp16 kernel tests: rounding to the dtype exactly as the
// device stores it (nearest even), and uniform random operands kept both as the bits the kernel
// reads and as the exact floats the double reference reads.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/traits/tile_config.h"

namespace flashtune::testing_support {

inline uint16_t to_bits(float x, DType t) {
  if (t == DType::Fp16) {
    const __half_raw h = __float2half_rn(x);
    return h.x;
  }
  uint32_t b;
  std::memcpy(&b, &x, 4);
  if ((b & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((b >> 16) | 0x40u);  // NaN stays NaN
  b += 0x7fffu + ((b >> 16) & 1u);
  return static_cast<uint16_t>(b >> 16);
}

inline float from_bits(uint16_t u, DType t) {
  if (t == DType::Fp16) {
    __half_raw h;
    h.x = u;
    return __half2float(__half(h));
  }
  const uint32_t b = static_cast<uint32_t>(u) << 16;
  float x;
  std::memcpy(&x, &b, 4);
  return x;
}

// Uniform in [-amp, amp], rounded to the dtype: bits for the kernel, floats (exact) for the reference.
struct HalfOperand {
  std::vector<uint16_t> bits;
  std::vector<float> exact;
};
inline HalfOperand random_half_operand(std::size_t n, float amp, DType t, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-amp, amp);
  HalfOperand o;
  o.bits.resize(n);
  o.exact.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    o.bits[i] = to_bits(dist(rng), t);
    o.exact[i] = from_bits(o.bits[i], t);
  }
  return o;
}

}  // namespace flashtune::testing_support
