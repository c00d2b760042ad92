// Double-precision references: a CPU loop for small cases and a GPU kernel (one warp per query
// row, two passes: the row max, then the exponentials, their sum and P.V) for large ones.
#include "kernels/reference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace flashtune {

void attention_reference_cpu(const float* q, const float* k, const float* v, double* o, const Workload& w) {
  const long long N = w.N, NK = w.keys();
  const int d = w.d;
  const double scale = w.effective_scale();
  std::vector<double> s(static_cast<std::size_t>(NK));
  for (long long b = 0; b < w.B; ++b) {
    const long long base = b * N * d;
    const long long kv_base = (b / w.kv_group) * NK * d;  // packed grouped K/V: entry b / kv_group
    for (long long i = 0; i < N; ++i) {
      const long long keys = w.causal ? std::min(NK, i + 1 + w.causal_offset()) : NK;
      double m = -std::numeric_limits<double>::infinity();
      for (long long j = 0; j < keys; ++j) {
        double dot = 0;
        for (int c = 0; c < d; ++c) dot += double(q[base + i * d + c]) * double(k[kv_base + j * d + c]);
        s[j] = dot * scale;
        m = std::max(m, s[j]);
      }
      double l = 0;
      for (long long j = 0; j < keys; ++j) l += (s[j] = std::exp(s[j] - m));
      double* out = o + base + i * d;
      std::fill(out, out + d, 0.0);
      for (long long j = 0; j < keys; ++j)
        for (int c = 0; c < d; ++c) out[c] += s[j] * double(v[kv_base + j * d + c]);
      for (int c = 0; c < d; ++c) out[c] /= l;
    }
  }
}

namespace {

constexpr int kRefMaxD = 128;
constexpr int kRefWarpsPerBlock = 4;

__device__ double row_dot(const float* a, const float* b, int d) {
  double acc = 0;
  for (int c = 0; c < d; ++c) acc += double(a[c]) * double(b[c]);
  return acc;
}

__global__ void __launch_bounds__(32 * kRefWarpsPerBlock)
    reference_kernel(const float* q, const float* k, const float* v, double* o, long long B, int N, int NK, int group,
                     int d, int causal, double scale) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const long long rows = B * N;
  const long long warps_total = static_cast<long long>(gridDim.x) * kRefWarpsPerBlock;
  for (long long r = static_cast<long long>(blockIdx.x) * kRefWarpsPerBlock + threadIdx.x / 32; r < rows;
       r += warps_total) {
    const long long b = r / N;
    const int i = static_cast<int>(r % N);
    const float* qr = q + r * d;
    const float* kb = k + (b / group) * NK * d;  // packed grouped K/V: entry b / kv_group
    const float* vb = v + (b / group) * NK * d;
    const int keys = causal ? min(NK, i + 1 + (NK - N)) : NK;

    double m = -INFINITY;
    for (int j = lane; j < keys; j += 32) m = fmax(m, scale * row_dot(qr, kb + static_cast<long long>(j) * d, d));
    for (int off = 16; off > 0; off /= 2) m = fmax(m, __shfl_xor_sync(0xffffffffu, m, off));

    double l = 0;
    double acc[kRefMaxD / 32] = {0, 0, 0, 0};
    for (int j0 = 0; j0 < keys; j0 += 32) {
      const int j = j0 + lane;
      const double p = j < keys ? exp(scale * row_dot(qr, kb + static_cast<long long>(j) * d, d) - m) : 0.0;
      l += p;
      const int n = min(32, keys - j0);
      for (int jj = 0; jj < n; ++jj) {
        const double pj = __shfl_sync(0xffffffffu, p, jj);
        const float* vr = vb + static_cast<long long>(j0 + jj) * d;
#pragma unroll
        for (int x = 0; x < kRefMaxD / 32; ++x)
          if (lane + 32 * x < d) acc[x] += pj * double(vr[lane + 32 * x]);
      }
    }
    for (int off = 16; off > 0; off /= 2) l += __shfl_xor_sync(0xffffffffu, l, off);
#pragma unroll
    for (int x = 0; x < kRefMaxD / 32; ++x)
      if (lane + 32 * x < d) o[r * d + lane + 32 * x] = acc[x] / l;
  }
}

}  // namespace

cudaError_t attention_reference_gpu(const float* q, const float* k, const float* v, double* o, const Workload& w,
                                    cudaStream_t stream) {
  if (w.B < 1 || w.N < 1 || w.N > std::numeric_limits<int>::max() || w.d < 1 || w.d > kRefMaxD || w.kv_len < 0 ||
      w.keys() > std::numeric_limits<int>::max() || w.kv_group < 1 || w.B % w.kv_group != 0 || (w.causal && w.N > w.keys()))
    return cudaErrorInvalidValue;
  const long long blocks = std::min<long long>((w.B * w.N + kRefWarpsPerBlock - 1) / kRefWarpsPerBlock, 1 << 20);
  reference_kernel<<<static_cast<unsigned>(blocks), 32 * kRefWarpsPerBlock, 0, stream>>>(
      q, k, v, o, w.B, static_cast<int>(w.N), static_cast<int>(w.keys()), w.kv_group, w.d, w.causal ? 1 : 0,
      double(w.effective_scale()));
  return cudaGetLastError();
}

ErrorStats compare_to_reference(const float* out, const double* ref, std::size_t n) {
  ErrorStats s;
  s.count = static_cast<long long>(n);
  double diff2 = 0, ref2 = 0;
  for (std::size_t i = 0; i < n; ++i) {
    ref2 += ref[i] * ref[i];
    if (!std::isfinite(out[i])) {
      ++s.nonfinite;
      continue;
    }
    const double e = double(out[i]) - ref[i];
    diff2 += e * e;
    s.max_abs = std::max(s.max_abs, std::fabs(e));
  }
  s.rel_l2 = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  return s;
}

}  // namespace flashtune
