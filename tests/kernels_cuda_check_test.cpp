// FLASHTUNE_CUDA_CHECK and its noexcept form (kernels/cuda_check.h) on calls that fail without a
// GPU: a stand-in returning an error code, and a real runtime call with an invalid argument. No
// device needed; nothing here skips.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <type_traits>

#include "kernels/cuda_check.h"

namespace flashtune {
namespace {

static_assert(std::is_base_of_v<std::runtime_error, CudaError>);

int g_calls = 0;
cudaError_t invalid_value_call() {
  ++g_calls;
  return cudaErrorInvalidValue;
}
cudaError_t success_call() {
  ++g_calls;
  return cudaSuccess;
}

std::string expected_message(const std::string& call, int line, cudaError_t err) {
  return call + " failed at " + __FILE__ + ":" + std::to_string(line) + ": " + cudaGetErrorName(err) + ": " +
         cudaGetErrorString(err);
}

TEST(CudaCheck, ThrowsCudaErrorWithCallFileLineAndError) {
  g_calls = 0;
  int line = 0;
  try {
    line = __LINE__ + 1;
    FLASHTUNE_CUDA_CHECK(invalid_value_call());
    FAIL() << "FLASHTUNE_CUDA_CHECK did not throw";
  } catch (const CudaError& e) {
    EXPECT_EQ(e.code(), cudaErrorInvalidValue);
    const std::string m = e.what();
    EXPECT_EQ(m, expected_message("invalid_value_call()", line, cudaErrorInvalidValue));
    EXPECT_NE(m.find("kernels_cuda_check_test.cpp:" + std::to_string(line) + ": "), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
  EXPECT_EQ(g_calls, 1);  // the call is evaluated once
}

TEST(CudaCheck, RealRuntimeCallFailsWithItsOwnCode) {
  // An invalid ordinal fails with or without a GPU (invalid device, no device or no driver).
  const cudaError_t direct = cudaSetDevice(-1);
  ASSERT_NE(direct, cudaSuccess);
  cudaGetLastError();  // not sticky; cleared so that it is not blamed on the checked call
  int line = 0;
  try {
    line = __LINE__ + 1;
    FLASHTUNE_CUDA_CHECK(cudaSetDevice(-1));
    FAIL() << "FLASHTUNE_CUDA_CHECK did not throw";
  } catch (const CudaError& e) {
    EXPECT_EQ(e.code(), direct);
    EXPECT_EQ(std::string(e.what()), expected_message("cudaSetDevice(-1)", line, direct));
  }
  cudaGetLastError();
}

TEST(CudaCheck, MultiLineCallTextIsOneLine) {
  try {
    FLASHTUNE_CUDA_CHECK(
        invalid_value_call());
    FAIL() << "FLASHTUNE_CUDA_CHECK did not throw";
  } catch (const CudaError& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind("invalid_value_call() failed at ", 0), 0u) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
}

TEST(CudaCheck, SuccessDoesNotThrow) {
  g_calls = 0;
  EXPECT_NO_THROW(FLASHTUNE_CUDA_CHECK(success_call()));
  EXPECT_EQ(g_calls, 1);
}

TEST(CudaCheck, CaughtAsRuntimeError) {
  EXPECT_THROW(FLASHTUNE_CUDA_CHECK(invalid_value_call()), std::runtime_error);
}

// What a destructor does: a noexcept scope (a throw there would call std::terminate).
constexpr int kNoexceptCheckLine = __LINE__ + 1;
void check_in_noexcept_scope() noexcept { FLASHTUNE_CUDA_CHECK_NOEXCEPT(invalid_value_call()); }

TEST(CudaCheck, NoexceptFormReportsTheFirstFailureOnStderrAndReturns) {
  static_assert(noexcept(check_in_noexcept_scope()));
  g_calls = 0;
  ::testing::internal::CaptureStderr();
  check_in_noexcept_scope();
  check_in_noexcept_scope();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(g_calls, 2);  // evaluated every time ...
  // ... reported once, as one line.
  EXPECT_EQ(err, expected_message("invalid_value_call()", kNoexceptCheckLine, cudaErrorInvalidValue) + "\n");
}

TEST(CudaCheck, NoexceptFormIsSilentOnSuccessAndAtRuntimeUnload) {
  ::testing::internal::CaptureStderr();
  FLASHTUNE_CUDA_CHECK_NOEXCEPT(success_call());
  FLASHTUNE_CUDA_CHECK_NOEXCEPT(cudaErrorCudartUnloading);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

TEST(CudaCheck, MessageFunctionAlone) {
  EXPECT_EQ(cuda_error_message(cudaErrorMemoryAllocation, "cudaMalloc(&p, n)", "a.cu", 7),
            std::string("cudaMalloc(&p, n) failed at a.cu:7: cudaErrorMemoryAllocation: ") +
                cudaGetErrorString(cudaErrorMemoryAllocation));
}

}  // namespace
}  // namespace flashtune
