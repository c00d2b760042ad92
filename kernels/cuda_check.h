// The one check of a CUDA runtime call's result. FLASHTUNE_CUDA_CHECK(call) throws CudaError with
//   "<call text> failed at <file>:<line>: <cudaGetErrorName>: <cudaGetErrorString>"
// and FLASHTUNE_CUDA_CHECK_NOEXCEPT(call) writes that line to stderr instead, for destructors and
// other noexcept code. It lives in kernels/, the lowest CUDA layer, so that the registry, the
// dispatcher, the tuner (DeviceBuffer, timing harness) and the Python module all reach it.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <stdexcept>
#include <string>

namespace flashtune {

// A CUDA call failed; what() is one line and names the call and the CUDA error.
class CudaError : public std::runtime_error {
 public:
  // code: the failed call's error. cudaErrorUnknown when no CUDA call returned one (a caller's
  // precondition on the GPU side, such as measuring before the inputs exist).
  explicit CudaError(const std::string& what, cudaError_t code = cudaErrorUnknown)
      : std::runtime_error(what), code_(code) {}
  cudaError_t code() const noexcept { return code_; }

 private:
  cudaError_t code_;
};

// "<call> failed at <file>:<line>: <error name>: <error description>", the line both macros use.
std::string cuda_error_message(cudaError_t err, const char* call, const char* file, int line);

namespace detail {
// Out of line, so that a check site expands to one comparison and one call.
[[noreturn]] void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line);
// Writes cuda_error_message to stderr when `reported` was clear (and sets it), except for
// cudaErrorCudartUnloading; never throws.
void report_cuda_error(cudaError_t err, const char* call, const char* file, int line,
                       std::atomic_flag& reported) noexcept;
}  // namespace detail

}  // namespace flashtune

// Evaluates `call` (a cudaError_t expression) once; throws flashtune::CudaError unless it is
// cudaSuccess.
#define FLASHTUNE_CUDA_CHECK(call)                                                              \
  do {                                                                                          \
    const cudaError_t flashtune_cuda_err_ = (call);                                             \
    if (flashtune_cuda_err_ != cudaSuccess)                                                     \
      ::flashtune::detail::throw_cuda_error(flashtune_cuda_err_, #call, __FILE__, __LINE__);    \
  } while (0)

// The same check for destructors: evaluates `call` once and reports a failure on stderr, only the
// first one of this call site (after a lost context every later free fails the same way, and one
// line says it). cudaErrorCudartUnloading is not reported: at process exit the runtime releases
// the memory itself.
#define FLASHTUNE_CUDA_CHECK_NOEXCEPT(call)                                                     \
  do {                                                                                          \
    static std::atomic_flag flashtune_cuda_reported_ = ATOMIC_FLAG_INIT;                        \
    const cudaError_t flashtune_cuda_err_ = (call);                                             \
    if (flashtune_cuda_err_ != cudaSuccess)                                                     \
      ::flashtune::detail::report_cuda_error(flashtune_cuda_err_, #call, __FILE__, __LINE__,    \
                                             flashtune_cuda_reported_);                         \
  } while (0)
