#include "tuner/gpu_identity.h"

#include <cuda_runtime_api.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "kernels/registry.h"
#include "model/gpu_spec.h"
#include "tuner/timing_harness.h"

#ifndef FLASHTUNE_BUILD_COMPILER
#define FLASHTUNE_BUILD_COMPILER "unknown"
#endif
#ifndef FLASHTUNE_BUILD_CUDA_ARCH
#define FLASHTUNE_BUILD_CUDA_ARCH "unknown"
#endif
#ifndef FLASHTUNE_BUILD_GIT_COMMIT
#define FLASHTUNE_BUILD_GIT_COMMIT "unknown"
#endif

namespace flashtune {
namespace {

std::string version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }

// The kernel module's version ("580.159.04"), which NVML and nvidia-smi report; the CUDA driver
// API only knows the CUDA version it supports.
std::string driver_version() {
  std::ifstream in("/proc/driver/nvidia/version");
  std::stringstream text;
  text << in.rdbuf();
  std::smatch m;
  const std::string s = text.str();
  if (std::regex_search(s, m, std::regex("Kernel Module(?: for [a-z0-9_]+)?\\s+([0-9]+\\.[0-9]+(?:\\.[0-9]+)?)")))
    return m[1];
  int v = 0;
  if (cudaDriverGetVersion(&v) == cudaSuccess) return "cuda " + version_text(v);
  return "unknown";
}

int attribute(cudaDeviceAttr a, int device) {
  int v = 0;
  return cudaDeviceGetAttribute(&v, a, device) == cudaSuccess ? v : 0;
}

}  // namespace

GpuIdentity query_gpu_identity(int device, const std::string& spec_dir) {
  const DeviceLimits limits = DeviceLimits::query(device);  // throws CudaError
  GpuIdentity id;
  id.name = limits.name;
  id.spec = model::gpu_spec_name(limits.name, spec_dir);
  id.sm_count = limits.sm_count;
  id.cc = std::to_string(limits.cc_major) + "." + std::to_string(limits.cc_minor);
  id.sm_clock_max_mhz = attribute(cudaDevAttrClockRate, device) / 1000;
  id.mem_clock_mhz = attribute(cudaDevAttrMemoryClockRate, device) / 1000;
  id.l2_bytes = limits.l2_bytes;
  id.driver = driver_version();
  int runtime = 0;
  id.cuda_runtime = cudaRuntimeGetVersion(&runtime) == cudaSuccess ? version_text(runtime) : "unknown";
  id.device_index = device;
  return id;
}

BuildInfo this_build() {
  BuildInfo b;
  b.compiler = FLASHTUNE_BUILD_COMPILER;
  b.cuda_arch = FLASHTUNE_BUILD_CUDA_ARCH;
  b.git_commit = FLASHTUNE_BUILD_GIT_COMMIT;
#if FLASHTUNE_SMALL_KERNEL_SET
  b.kernel_set = "small";
#else
  b.kernel_set = "full";
#endif
  return b;
}

}  // namespace flashtune
