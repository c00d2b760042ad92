// Throughput of mma.sync m16n8k8 TF32 (the tensor-core kernels' instruction) and of m16n8k16 bf16
// with fp32 accumulate (the mma16 kernels'; `mma_sync_peak bf16` runs it alone, `tf32` the first
// alone, lines of the bf16 part start with "bf16 m16n8k16") on the GPU it runs
// on: every warp issues `chains` independent accumulator chains for `iters` rounds, one block per
// SM times `blocks_per_sm`, CUDA events, median of 7 runs. The ceiling the mma_* kernels can
// approach, as opposed to the datasheet's dense TF32 rate, which wgmma reaches and mma.sync not.
// Build and run: nvcc -O3 -arch=sm_90 -o /tmp/mma_sync_peak benchmarks/mma_sync_peak.cu && /tmp/mma_sync_peak
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#define CHECK(x)                                                                          \
  do {                                                                                    \
    cudaError_t e = (x);                                                                  \
    if (e != cudaSuccess) {                                                               \
      std::fprintf(stderr, "mma_sync_peak: %s: %s\n", #x, cudaGetErrorString(e));         \
      return 1;                                                                           \
    }                                                                                     \
  } while (0)

template <int Chains>
__global__ void mma_loop(float* out, int iters, uint32_t seed) {
  float c[Chains][4] = {};
  // Operands depend on the seed so the compiler cannot fold the loop; values stay finite.
  const uint32_t a = 0x3f800000u ^ (seed & 0x1000u), b = 0x3c000000u ^ (threadIdx.x & 0x2000u);
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int k = 0; k < Chains; ++k)
      asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                   "{%0, %1, %2, %3};\n"
                   : "+f"(c[k][0]), "+f"(c[k][1]), "+f"(c[k][2]), "+f"(c[k][3])
                   : "r"(a), "r"(a), "r"(a), "r"(a), "r"(b), "r"(b));
  }
  float s = 0.f;
#pragma unroll
  for (int k = 0; k < Chains; ++k) s += c[k][0] + c[k][1] + c[k][2] + c[k][3];
  if (s == 1234.5f) out[threadIdx.x] = s;  // keeps the chains live
}

// m16n8k16 bf16 x bf16 + fp32: A four registers, B two, each a pair of bf16 (1.0 and 2^-7).
template <int Chains>
__global__ void mma16_loop(float* out, int iters, uint32_t seed) {
  float c[Chains][4] = {};
  const uint32_t a = 0x3f803f80u ^ (seed & 0x1000u), b = 0x3c003c00u ^ (threadIdx.x & 0x2000u);
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int k = 0; k < Chains; ++k)
      asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                   "{%8, %9}, {%0, %1, %2, %3};\n"
                   : "+f"(c[k][0]), "+f"(c[k][1]), "+f"(c[k][2]), "+f"(c[k][3])
                   : "r"(a), "r"(a), "r"(a), "r"(a), "r"(b), "r"(b));
  }
  float s = 0.f;
#pragma unroll
  for (int k = 0; k < Chains; ++k) s += c[k][0] + c[k][1] + c[k][2] + c[k][3];
  if (s == 1234.5f) out[threadIdx.x] = s;
}

template <int Chains, bool Bf16 = false>
int measure(int sms, int warps_per_block, int blocks_per_sm, double clock_ghz) {
  const int iters = 4096, blocks = sms * blocks_per_sm, threads = 32 * warps_per_block;
  float* out = nullptr;
  CHECK(cudaMalloc(&out, 1024 * sizeof(float)));
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  const auto launch = [&](uint32_t seed) {
    if (Bf16)
      mma16_loop<Chains><<<blocks, threads>>>(out, iters, seed);
    else
      mma_loop<Chains><<<blocks, threads>>>(out, iters, seed);
  };
  launch(1);  // warm-up
  CHECK(cudaDeviceSynchronize());
  std::vector<float> ms;
  for (int r = 0; r < 7; ++r) {
    CHECK(cudaEventRecord(e0));
    launch(r);
    CHECK(cudaEventRecord(e1));
    CHECK(cudaEventSynchronize(e1));
    float t = 0;
    CHECK(cudaEventElapsedTime(&t, e0, e1));
    ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  const double flops = 2.0 * 16 * 8 * (Bf16 ? 16 : 8) * double(Chains) * iters * blocks * warps_per_block;
  const double tflops = flops / (ms[3] * 1e-3) / 1e12;
  const double per_sm_clk = flops / (ms[3] * 1e-3) / (sms * clock_ghz * 1e9);
  std::printf("%schains %2d  warps/SM %2d  %.3f ms  %6.1f TFLOP/s  %6.0f FLOP/clk/SM (at %.2f GHz)\n",
              Bf16 ? "bf16 m16n8k16 " : "", Chains,
              warps_per_block * blocks_per_sm, ms[3], tflops, per_sm_clk, clock_ghz);
  cudaFree(out);
  return 0;
}

int main(int argc, char** argv) {
  const std::string which = argc > 1 ? argv[1] : "all";
  if (which != "all" && which != "tf32" && which != "bf16") {
    std::fprintf(stderr, "usage: mma_sync_peak [all|tf32|bf16]\n");
    return 2;
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
    std::fprintf(stderr, "mma_sync_peak: no CUDA device\n");
    return 1;
  }
  int clock_khz = 0;
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0);
  const double ghz = clock_khz / 1e6;
  int rc = 0;
  if (which != "bf16") {
    std::printf("%s, %d SMs, max SM clock %.2f GHz: mma.sync.m16n8k8 TF32, 2048 FLOP each\n", prop.name,
                prop.multiProcessorCount, ghz);
    for (int warps : {4, 8, 16}) {
      rc |= measure<1>(prop.multiProcessorCount, warps, 1, ghz);
      rc |= measure<2>(prop.multiProcessorCount, warps, 1, ghz);
      rc |= measure<4>(prop.multiProcessorCount, warps, 1, ghz);
      rc |= measure<8>(prop.multiProcessorCount, warps, 1, ghz);
    }
  }
  if (which != "tf32") {
    std::printf("%s, %d SMs, max SM clock %.2f GHz: mma.sync.m16n8k16 bf16, fp32 accumulate, 4096 FLOP each\n",
                prop.name, prop.multiProcessorCount, ghz);
    for (int warps : {4, 8, 16}) {
      rc |= measure<1, true>(prop.multiProcessorCount, warps, 1, ghz);
      rc |= measure<2, true>(prop.multiProcessorCount, warps, 1, ghz);
      rc |= measure<4, true>(prop.multiProcessorCount, warps, 1, ghz);
      rc |= measure<8, true>(prop.multiProcessorCount, warps, 1, ghz);
    }
  }
  return rc;
}
