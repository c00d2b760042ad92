#include "kernels/cuda_check.h"

#include <cstdio>

namespace flashtune {

std::string cuda_error_message(cudaError_t err, const char* call, const char* file, int line) {
  return std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " + cudaGetErrorName(err) +
         ": " + cudaGetErrorString(err);
}

namespace detail {

void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line) {
  throw CudaError(cuda_error_message(err, call, file, line), err);
}

void report_cuda_error(cudaError_t err, const char* call, const char* file, int line,
                       std::atomic_flag& reported) noexcept {
  if (err == cudaErrorCudartUnloading || reported.test_and_set()) return;
  try {
    std::fprintf(stderr, "%s\n", cuda_error_message(err, call, file, line).c_str());
  } catch (...) {
    // No memory left for the message: a destructor has nothing better to do than go on.
  }
}

}  // namespace detail
}  // namespace flashtune
