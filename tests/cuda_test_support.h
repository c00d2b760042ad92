// What the kernel tests share on the device side: an assertion on a CUDA call and device memory
// that frees itself (the tuner's DeviceBuffer throws; these tests assert instead).
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstddef>

#include "kernels/cuda_check.h"

// ASSERT that a CUDA call returned cudaSuccess, with FLASHTUNE_CUDA_CHECK's message (an assertion
// rather than the exception, so that the test stops with the failure in gtest's report).
#define CUDA_OK(call)                                                                                 \
  do {                                                                                                \
    const cudaError_t e_ = (call);                                                                    \
    ASSERT_EQ(e_, cudaSuccess) << ::flashtune::cuda_error_message(e_, #call, __FILE__, __LINE__);     \
  } while (0)

namespace flashtune::testing_support {

// n elements of T on the device; ptr is nullptr when cudaMalloc failed (assert on it).
template <class T>
struct DeviceArray {
  T* ptr = nullptr;
  explicit DeviceArray(std::size_t n) {
    if (cudaMalloc(&ptr, n * sizeof(T)) != cudaSuccess) ptr = nullptr;
  }
  ~DeviceArray() { cudaFree(ptr); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
};

}  // namespace flashtune::testing_support
