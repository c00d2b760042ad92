// The split-KV decode family on the device: every compiled instance against a double reference
// computed on the inputs rounded to the instance's dtype (fresh random inputs, output poisoned
// with NaN first, every element checked, rel L2 under rel_l2_tolerance(dtype)): Nq in {1, 4, 16,
// 64}, odd key counts up to 128k (1, 127, 4097, 131071), causal aligned bottom-right, kv_group in
// {1, 4, 8}, one split and many, strided [batch, N, heads, d] operands. Skips without a device.
//
// Environment: FLASHTUNE_KERNEL_FILTER=<substring> limits the configs; FLASHTUNE_TEST_REPORT=<file>
// writes the worst errors as JSON.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "cuda_test_support.h"
#include "half_operands.h"
#include "kernel_check_support.h"
#include "kernels/decode_api.h"
#include "kernels/reference.h"
#include "kernels/traits/decode_traits.h"
#include "kernels/registry.h"

namespace flashtune {
namespace {

template <class T>
using DeviceBuffer = testing_support::DeviceArray<T>;

using testing_support::env;
using testing_support::from_bits;
using testing_support::to_bits;

// ---- the double reference: scores, then per row max, sum and O ------------------------------
// Operands as exact floats, Q/O [batch, Hq, nq, d], K/V [batch, Hkv, keys, d] dense.
struct RefShape {
  int batch, q_heads, kv_group, nq, keys, d;
  bool causal;
  double scale;
};

__global__ void ref_scores(const float* q, const float* k, double* s, RefShape sh) {
  const long long rows = static_cast<long long>(sh.batch) * sh.q_heads * sh.nq;
  const long long idx = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (idx >= rows * sh.keys) return;
  const long long row = idx / sh.keys;
  const int key = static_cast<int>(idx % sh.keys);
  const int i = static_cast<int>(row % sh.nq);
  const long long bh = row / sh.nq;
  const int hq = static_cast<int>(bh % sh.q_heads);
  const long long b = bh / sh.q_heads;
  const int kv_heads = sh.q_heads / sh.kv_group;
  const float* kr = k + ((b * kv_heads + hq / sh.kv_group) * sh.keys + key) * sh.d;
  const float* qr = q + row * sh.d;
  double acc = 0;
  for (int c = 0; c < sh.d; ++c) acc += double(qr[c]) * double(kr[c]);
  const bool masked = sh.causal && key > i + (sh.keys - sh.nq);
  s[idx] = masked ? -INFINITY : acc * sh.scale;
}

// One block per query row: max and sum over the keys, then thread c accumulates column c.
__global__ void ref_output(const double* s, const float* v, double* o, RefShape sh) {
  const long long row = blockIdx.x;
  const double* sr = s + row * sh.keys;
  __shared__ double red[256];
  double mx = -INFINITY;
  for (int j = threadIdx.x; j < sh.keys; j += blockDim.x) mx = fmax(mx, sr[j]);
  red[threadIdx.x] = mx;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) red[threadIdx.x] = fmax(red[threadIdx.x], red[threadIdx.x + w]);
    __syncthreads();
  }
  mx = red[0];
  __syncthreads();
  double sum = 0;
  for (int j = threadIdx.x; j < sh.keys; j += blockDim.x) sum += exp(sr[j] - mx);
  red[threadIdx.x] = sum;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) red[threadIdx.x] += red[threadIdx.x + w];
    __syncthreads();
  }
  sum = red[0];
  const long long bh = row / sh.nq;
  const int hq = static_cast<int>(bh % sh.q_heads);
  const long long b = bh / sh.q_heads;
  const int kv_heads = sh.q_heads / sh.kv_group;
  const float* vb = v + (b * kv_heads + hq / sh.kv_group) * static_cast<long long>(sh.keys) * sh.d;
  for (int c = threadIdx.x; c < sh.d; c += blockDim.x) {
    double acc = 0;
    for (int j = 0; j < sh.keys; ++j) acc += exp(sr[j] - mx) * double(vb[static_cast<long long>(j) * sh.d + c]);
    o[row * sh.d + c] = acc / sum;
  }
}

// ---- operands ----------------------------------------------------------------------------
// Uniform in [-amp, amp], rounded to the dtype: raw bytes for the kernel, exact floats for the
// reference.
struct Operand {
  std::vector<unsigned char> bytes;
  std::vector<float> exact;
};
Operand random_operand(std::size_t n, float amp, DType t, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-amp, amp);
  Operand o;
  o.exact.resize(n);
  o.bytes.resize(n * dtype_bytes(t));
  for (std::size_t i = 0; i < n; ++i) {
    const float x = dist(rng);
    if (t == DType::Fp32) {
      o.exact[i] = x;
      std::memcpy(&o.bytes[4 * i], &x, 4);
    } else {
      const uint16_t u = to_bits(x, t);
      o.exact[i] = from_bits(u, t);
      std::memcpy(&o.bytes[2 * i], &u, 2);
    }
  }
  return o;
}
std::vector<float> read_output(const std::vector<unsigned char>& bytes, DType t) {
  const std::size_t n = bytes.size() / dtype_bytes(t);
  std::vector<float> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (t == DType::Fp32) {
      std::memcpy(&out[i], &bytes[4 * i], 4);
    } else {
      uint16_t u;
      std::memcpy(&u, &bytes[2 * i], 2);
      out[i] = from_bits(u, t);
    }
  }
  return out;
}

std::vector<const KernelInstance*> decode_instances() { return testing_support::instances_of(Variant::Decode); }

struct Case {
  int batch, q_heads, kv_group, nq, keys;
  bool causal;
};
std::string describe(const Case& c) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "batch=%d Hq=%d group=%d Nq=%d keys=%d causal=%d", c.batch, c.q_heads, c.kv_group,
                c.nq, c.keys, int(c.causal));
  return buf;
}

// Nq {1, 4, 16, 64} x keys {1, 127, 4097, 131071} x group {1, 4, 8} x causal; the reference's
// scores stay under 2^24 doubles (Nq = 64 with group 8 stops short of the longest cache).
std::vector<Case> cases() {
  std::vector<Case> cs;
  for (int nq : {1, 4, 16, 64})
    for (int keys : {1, 127, 4097, 131071})
      for (int group : {1, 4, 8})
        for (bool causal : {false, true}) {
          if (causal && nq > keys) continue;
          // One K/V head per batch entry under grouping (its whole group packed), two without.
          const int q_heads = group == 1 ? 2 : group;
          const bool long_cache = keys >= 100000;
          if (long_cache && group == 4) continue;  // the longest cache with groups 1 and 8 only (host time)
          const int batch = long_cache ? 1 : 2;
          if (static_cast<long long>(batch) * q_heads * nq * keys > (1LL << 24)) continue;
          cs.push_back({batch, q_heads, group, nq, keys, causal});
        }
  return cs;
}

TEST(KernelsDecode, EveryInstanceMatchesTheDoubleReference) {
  SKIP_WITHOUT_DEVICE();
  const DeviceLimits dev = DeviceLimits::query(0);
  const auto kernels = decode_instances();
  if (kernels.empty()) GTEST_SKIP() << "no decode instance compiled (or none matches the filter)";
  testing_support::WorstByDtype worst;
  int cluster_combines = 0, kernel_combines = 0;
  std::mt19937 rng(26);
  for (DType t : {DType::Fp32, DType::Bf16, DType::Fp16})
    for (int d : {64, 128}) {
      std::vector<const KernelInstance*> ks;
      for (const KernelInstance* k : kernels)
        if (k->config().d == d && k->config().dtype == t) ks.push_back(k);
      if (ks.empty()) continue;
      for (const Case& cs : cases()) {
        const int kv_heads = cs.q_heads / cs.kv_group;
        const std::size_t nq_el = std::size_t(cs.batch) * cs.q_heads * cs.nq * d;
        const std::size_t nkv_el = std::size_t(cs.batch) * kv_heads * cs.keys * d;
        const std::size_t eb = dtype_bytes(t);
        // Scores up to about +-40 with q of amplitude 3 against k of 1 at d = 128 (fp16 stays finite).
        const Operand q = random_operand(nq_el, 3.0f, t, rng), k = random_operand(nkv_el, 1.0f, t, rng),
                      v = random_operand(nkv_el, 2.0f, t, rng);
        DeviceBuffer<float> qf(nq_el), kf(nkv_el), vf(nkv_el);
        const std::size_t nscores = std::size_t(cs.batch) * cs.q_heads * cs.nq * cs.keys;
        DeviceBuffer<double> scores(nscores), ref_d(nq_el);
        DeviceBuffer<unsigned char> qb(nq_el * eb), kb(nkv_el * eb), vb(nkv_el * eb), ob(nq_el * eb);
        ASSERT_TRUE(qf.ptr && kf.ptr && vf.ptr && scores.ptr && ref_d.ptr && qb.ptr && kb.ptr && vb.ptr && ob.ptr);
        CUDA_OK(cudaMemcpy(qf.ptr, q.exact.data(), nq_el * 4, cudaMemcpyHostToDevice));
        CUDA_OK(cudaMemcpy(kf.ptr, k.exact.data(), nkv_el * 4, cudaMemcpyHostToDevice));
        CUDA_OK(cudaMemcpy(vf.ptr, v.exact.data(), nkv_el * 4, cudaMemcpyHostToDevice));
        const RefShape rs{cs.batch, cs.q_heads, cs.kv_group, cs.nq, cs.keys, d, cs.causal, 1.0 / std::sqrt(double(d))};
        ref_scores<<<static_cast<unsigned>((nscores + 255) / 256), 256>>>(qf.ptr, kf.ptr, scores.ptr, rs);
        ref_output<<<static_cast<unsigned>(std::size_t(cs.batch) * cs.q_heads * cs.nq), 256>>>(scores.ptr, vf.ptr,
                                                                                               ref_d.ptr, rs);
        CUDA_OK(cudaGetLastError());
        std::vector<double> ref(nq_el);
        CUDA_OK(cudaMemcpy(ref.data(), ref_d.ptr, nq_el * 8, cudaMemcpyDeviceToHost));
        CUDA_OK(cudaMemcpy(qb.ptr, q.bytes.data(), nq_el * eb, cudaMemcpyHostToDevice));
        CUDA_OK(cudaMemcpy(kb.ptr, k.bytes.data(), nkv_el * eb, cudaMemcpyHostToDevice));
        CUDA_OK(cudaMemcpy(vb.ptr, v.bytes.data(), nkv_el * eb, cudaMemcpyHostToDevice));
        DecodeProblem p;
        p.q = qb.ptr;
        p.k = kb.ptr;
        p.v = vb.ptr;
        p.o = ob.ptr;
        p.strides = DecodeProblem::dense_strides(cs.q_heads, cs.kv_group, cs.nq, cs.keys, d);
        p.batch = cs.batch;
        p.q_heads = cs.q_heads;
        p.kv_group = cs.kv_group;
        p.nq = cs.nq;
        p.keys = cs.keys;
        p.d = d;
        p.causal = cs.causal;
        p.dtype = t;
        std::vector<unsigned char> out_bytes(nq_el * eb);
        for (const KernelInstance* kern : ks) {
          const DecodeKernel* dk = as_decode(kern);
          ASSERT_NE(dk, nullptr) << kern->name();
          const Support s = dk->can_run(p, dev);
          ASSERT_TRUE(s) << kern->name() << " " << describe(cs) << ": " << s.reason;
          // The default split, one split (the block writes O), 2, 3 and 16 splits (on sm_90 a
          // cluster of that many blocks merges them where traits::Decode::cluster_combine allows,
          // 16 the largest, non-portable size) and the most splits the keys allow (the combine
          // kernel past 16).
          for (int splits : {0, 1, 2, 3, 16, 1 << 20}) {
            const std::string where = kern->name() + " " + describe(cs) + " splits=" + std::to_string(splits);
            const int used = traits::Decode::shape(kern->config(), p.batch, p.q_heads, p.kv_group, p.nq, p.keys,
                                                   splits > 0 ? splits : dk->default_splits(p, dev))
                                 .splits;
            if (used > 1) ++(dk->combines_in_cluster(p, used) ? cluster_combines : kernel_combines);
            CUDA_OK(cudaMemset(ob.ptr, 0xFF, nq_el * eb));  // NaN in every dtype
            CUDA_OK(dk->launch_decode(p, splits, nullptr));
            CUDA_OK(cudaDeviceSynchronize());
            CUDA_OK(cudaMemcpy(out_bytes.data(), ob.ptr, nq_el * eb, cudaMemcpyDeviceToHost));
            const std::vector<float> out = read_output(out_bytes, t);
            const ErrorStats e = compare_to_reference(out.data(), ref.data(), nq_el);
            EXPECT_TRUE(e.passes(rel_l2_tolerance(t)))
                << where << ": rel_l2 " << e.rel_l2 << " max_abs " << e.max_abs << " non-finite " << e.nonfinite;
            worst[dtype_name(t)].record(e, where);
          }
        }
      }
    }
  // Both merges were checked: on sm_90 some launches combined inside their cluster.
  EXPECT_GT(kernel_combines, 0);
  if (dev.cc_major >= 9) EXPECT_GT(cluster_combines, 0);
  std::printf("decode combines checked: %d in a cluster, %d by the combine kernel\n", cluster_combines, kernel_combines);
  testing_support::report_worst("decode", worst, dev);
}

// [batch, N, heads, d] views of Q/O and K/V (the layout of a fused projection), O with gaps of
// 8 elements between rows: bit for bit the dense launch, and the gaps untouched.
TEST(KernelsDecode, StridedOperandsMatchTheDenseLaunch) {
  SKIP_WITHOUT_DEVICE();
  const auto kernels = decode_instances();
  if (kernels.empty()) GTEST_SKIP() << "no decode instance compiled";
  const int batch = 2, q_heads = 8, group = 4, kv_heads = q_heads / group, nq = 3, keys = 1000;
  std::mt19937 rng(7);
  for (const KernelInstance* kern : kernels) {
    const TileConfig& c = kern->config();
    const int d = c.d;
    const std::size_t eb = dtype_bytes(c.dtype);
    const std::size_t nq_el = std::size_t(batch) * q_heads * nq * d, nkv_el = std::size_t(batch) * kv_heads * keys * d;
    const Operand q = random_operand(nq_el, 2.0f, c.dtype, rng), k = random_operand(nkv_el, 1.0f, c.dtype, rng),
                  v = random_operand(nkv_el, 1.0f, c.dtype, rng);
    const long long orow = static_cast<long long>(q_heads) * (d + 8);
    const std::size_t o_el = std::size_t(batch) * nq * orow;
    DeviceBuffer<unsigned char> qb(nq_el * eb), kb(nkv_el * eb), vb(nkv_el * eb), od(nq_el * eb), os(o_el * eb);
    ASSERT_TRUE(qb.ptr && kb.ptr && vb.ptr && od.ptr && os.ptr);
    // The same bytes serve both views: dense [b, h, n, d] and [b, n, h, d] are different tensors
    // over one buffer, so the strided launch reads a permutation; the dense reference reads the
    // permuted copy.
    CUDA_OK(cudaMemcpy(qb.ptr, q.bytes.data(), nq_el * eb, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(kb.ptr, k.bytes.data(), nkv_el * eb, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(vb.ptr, v.bytes.data(), nkv_el * eb, cudaMemcpyHostToDevice));
    DecodeProblem ps;
    ps.q = qb.ptr;
    ps.k = kb.ptr;
    ps.v = vb.ptr;
    ps.o = os.ptr;
    ps.batch = batch;
    ps.q_heads = q_heads;
    ps.kv_group = group;
    ps.nq = nq;
    ps.keys = keys;
    ps.d = d;
    ps.causal = true;
    ps.dtype = c.dtype;
    ps.strides.heads = q_heads;
    ps.strides.q = {static_cast<long long>(nq) * q_heads * d, d, static_cast<long long>(q_heads) * d};
    ps.strides.k = ps.strides.v = {static_cast<long long>(keys) * kv_heads * d, d, static_cast<long long>(kv_heads) * d};
    ps.strides.o = {nq * orow, d + 8, orow};
    // Dense copies of the same logical tensors.
    auto permute = [&](const std::vector<unsigned char>& src, int heads, int rows) {
      std::vector<unsigned char> dst(src.size());
      for (int b = 0; b < batch; ++b)
        for (int h = 0; h < heads; ++h)
          for (int r = 0; r < rows; ++r)
            std::memcpy(&dst[((std::size_t(b) * heads + h) * rows + r) * d * eb],
                        &src[((std::size_t(b) * rows + r) * heads + h) * d * eb], d * eb);
      return dst;
    };
    const auto qd = permute(q.bytes, q_heads, nq), kd = permute(k.bytes, kv_heads, keys), vd = permute(v.bytes, kv_heads, keys);
    DeviceBuffer<unsigned char> qdb(nq_el * eb), kdb(nkv_el * eb), vdb(nkv_el * eb);
    ASSERT_TRUE(qdb.ptr && kdb.ptr && vdb.ptr);
    CUDA_OK(cudaMemcpy(qdb.ptr, qd.data(), nq_el * eb, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(kdb.ptr, kd.data(), nkv_el * eb, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(vdb.ptr, vd.data(), nkv_el * eb, cudaMemcpyHostToDevice));
    DecodeProblem pd = ps;
    pd.q = qdb.ptr;
    pd.k = kdb.ptr;
    pd.v = vdb.ptr;
    pd.o = od.ptr;
    pd.strides = DecodeProblem::dense_strides(q_heads, group, nq, keys, d);
    const DecodeKernel* dk = as_decode(kern);
    ASSERT_NE(dk, nullptr);
    CUDA_OK(cudaMemset(os.ptr, 0x5A, o_el * eb));
    CUDA_OK(dk->launch_decode(ps, 3, nullptr));
    CUDA_OK(dk->launch_decode(pd, 3, nullptr));
    CUDA_OK(cudaDeviceSynchronize());
    std::vector<unsigned char> got(o_el * eb), want(nq_el * eb);
    CUDA_OK(cudaMemcpy(got.data(), os.ptr, o_el * eb, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(want.data(), od.ptr, nq_el * eb, cudaMemcpyDeviceToHost));
    long long diff = 0, gaps = 0;
    for (int b = 0; b < batch; ++b)
      for (int r = 0; r < nq; ++r)
        for (int h = 0; h < q_heads; ++h) {
          const std::size_t at = (std::size_t(b) * nq * orow + std::size_t(r) * orow + std::size_t(h) * (d + 8)) * eb;
          diff += std::memcmp(&got[at], &want[((std::size_t(b) * q_heads + h) * nq + r) * d * eb], d * eb) != 0;
          for (std::size_t g = 0; g < 8 * eb; ++g) gaps += got[at + d * eb + g] != 0x5A;
        }
    EXPECT_EQ(diff, 0) << kern->name() << ": rows differing from the dense launch";
    EXPECT_EQ(gaps, 0) << kern->name() << ": bytes written between O's rows";
  }
}

// The registry path: launch(tensors, workload) with the workload's kv_len and kv_group, and the
// refusals of what the family cannot serve.
TEST(KernelsDecode, RegistryLaunchAndRefusals) {
  SKIP_WITHOUT_DEVICE();
  const DeviceLimits dev = DeviceLimits::query(0);
  for (const KernelInstance* kern : decode_instances()) {
    Workload w;
    w.B = 8;
    w.N = 2;
    w.d = kern->config().d;
    w.dtype = kern->config().dtype;
    w.kv_len = 300;
    w.kv_group = 4;
    EXPECT_TRUE(kern->can_implement(w, dev)) << kern->name() << ": " << kern->can_implement(w, dev).reason;
    Workload prefill = w;
    prefill.N = 65;
    EXPECT_FALSE(kern->can_implement(prefill, dev)) << kern->name();
    Workload causal = w;
    causal.causal = true;
    causal.kv_len = 1;
    EXPECT_FALSE(kern->can_implement(causal, dev)) << kern->name();
    Workload odd = w;
    odd.B = 6;
    EXPECT_FALSE(kern->can_implement(odd, dev)) << kern->name();
  }
}

}  // namespace
}  // namespace flashtune
