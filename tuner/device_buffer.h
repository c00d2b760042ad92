// RAII device memory for the tuner: allocation, host copies, NaN poisoning and a random fill.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cuda_check.h"
#include "kernels/traits/tile_config.h"

namespace flashtune {

template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t count) : count_(count) {
    if (count_ > 0)
      FLASHTUNE_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&data_), bytes()));
  }
  ~DeviceBuffer() {
    if (data_) FLASHTUNE_CUDA_CHECK_NOEXCEPT(cudaFree(data_));
  }
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), count_(std::exchange(other.count_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      if (data_) FLASHTUNE_CUDA_CHECK_NOEXCEPT(cudaFree(data_));
      data_ = std::exchange(other.data_, nullptr);
      count_ = std::exchange(other.count_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return count_; }
  std::size_t bytes() const { return count_ * sizeof(T); }

  void copy_from_host(const std::vector<T>& host) {
    if (host.size() != count_)
      throw CudaError("copy_from_host: " + std::to_string(host.size()) + " values for a buffer of " +
                      std::to_string(count_));
    FLASHTUNE_CUDA_CHECK(cudaMemcpy(data_, host.data(), bytes(), cudaMemcpyHostToDevice));
  }
  std::vector<T> to_host() const {
    std::vector<T> host(count_);
    FLASHTUNE_CUDA_CHECK(cudaMemcpy(host.data(), data_, bytes(), cudaMemcpyDeviceToHost));
    return host;
  }
  // All bytes 0xFF: a NaN for float and double, so an element the kernel never wrote is caught.
  void poison_nan(cudaStream_t stream = nullptr) {
    FLASHTUNE_CUDA_CHECK(cudaMemsetAsync(data_, 0xFF, bytes(), stream));
  }

 private:
  T* data_ = nullptr;
  std::size_t count_ = 0;
};

// Fills dev[0..n) with values uniform in [lo, hi], a pure function of (seed, index) computed by a
// hash on the GPU (so the same seed gives the same inputs on every GPU and the host mirror below).
void fill_uniform(float* dev, std::size_t n, float lo, float hi, std::uint64_t seed, cudaStream_t stream);

// The value fill_uniform writes at `index` (host mirror, for tests and for writing inputs to .npy).
float uniform_value(std::uint64_t seed, std::uint64_t index, float lo, float hi);

// For a 16-bit dtype: rounds dev[0..n) to it (nearest, ties to even) in place and writes the 16-bit
// encodings to out16[0..n), so that the double reference runs on exactly the values the 16-bit
// kernel reads. Nothing for fp32.
void round_to_dtype(float* dev, std::uint16_t* out16, std::size_t n, DType t, cudaStream_t stream);
// The 16-bit encodings in16[0..n) of dtype t widened to float (exact).
void widen_to_float(const std::uint16_t* in16, float* out, std::size_t n, DType t, cudaStream_t stream);

}  // namespace flashtune
