// Strided operands (kernels/traits/tensor_strides.h) on every registered instantiation: the same
// logical Q, K, V laid out as [batch, heads, N, d], as [batch, N, heads, d], and as slices of one
// fused QKV tensor [batch, N, 3, heads, d] with O written into a [batch, N, heads, d + 4] buffer
// (a gap after every row). Each result must equal the packed [B, N, d] launch of the same config
// bit for bit (the same arithmetic in the same order), and no element outside O's rows may change.
// Host-side refusals of strides no kernel can address are checked without a device.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "kernels/registry.h"
#include "cuda_test_support.h"
#include "gpu_test_support.h"

namespace flashtune {
namespace {

using DeviceFloats = testing_support::DeviceArray<float>;

// Element (b, h, row, col) of an operand with strides s.
std::size_t at(const OperandStrides& s, long long b, long long h, long long row, int col) {
  return static_cast<std::size_t>(b * s.batch + h * s.head + row * s.row + col);
}

// Copies a packed [batch*heads, N, d] host array into `dst` laid out by `s`.
void scatter(const std::vector<float>& packed, std::vector<float>& dst, const OperandStrides& s, long long batch,
             long long heads, long long n, int d, std::size_t offset) {
  for (long long b = 0; b < batch; ++b)
    for (long long h = 0; h < heads; ++h)
      for (long long r = 0; r < n; ++r)
        for (int c = 0; c < d; ++c)
          dst[offset + at(s, b, h, r, c)] = packed[static_cast<std::size_t>(((b * heads + h) * n + r) * d + c)];
}

struct Layout3 {
  std::string name;
  AttentionStrides strides;
  std::size_t q_off, k_off, v_off;  // floats from the input buffer's base
  std::size_t in_floats, out_floats;
};

std::vector<Layout3> layouts(long long batch, long long heads, long long n, int d) {
  Workload w;
  w.B = batch * heads;
  w.N = n;
  w.d = d;
  const std::size_t one = static_cast<std::size_t>(w.B * n * d);
  std::vector<Layout3> out;
  for (TensorLayout l : {TensorLayout::Bhnd, TensorLayout::Bnhd})
    out.push_back({tensor_layout_name(l), AttentionStrides::dense(l, w, heads), 0, one, 2 * one, 3 * one, one});
  // A fused projection's output [batch, N, 3 * heads * d], viewed as Q, K, V without a copy; O with
  // 4 floats of gap after each row.
  const long long hd = heads * d;
  const OperandStrides qkv{n * 3 * hd, d, 3 * hd};
  const OperandStrides o{n * heads * (d + 4), d + 4, heads * (d + 4)};
  out.push_back({"fused_qkv", {heads, qkv, qkv, qkv, o}, 0, static_cast<std::size_t>(hd),
                 static_cast<std::size_t>(2 * hd), 3 * one, static_cast<std::size_t>(batch * n * heads * (d + 4))});
  return out;
}

TEST(KernelsStrided, EveryInstanceGivesThePackedResultOnEveryLayout) {
  const std::string why = testing_support::no_gpu_reason();
  if (!why.empty()) GTEST_SKIP() << "no CUDA device: " << why;
  const DeviceLimits dev = DeviceLimits::query(0);
  const long long batch = 2, heads = 3;
  std::mt19937 rng(4242);
  std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
  long long compared = 0;
  for (int d : {32, 64, 128})
    for (long long n : {77LL, 300LL})
      for (bool causal : {false, true}) {
        Workload w;
        w.B = batch * heads;
        w.N = n;
        w.d = d;
        w.causal = causal;
        const std::size_t one = static_cast<std::size_t>(w.B * n * d);
        std::vector<float> q(one), k(one), v(one);
        for (auto* a : {&q, &k, &v})
          for (float& x : *a) x = dist(rng);
        DeviceFloats pq(one), pk(one), pv(one), po(one);
        ASSERT_TRUE(pq.ptr && pk.ptr && pv.ptr && po.ptr);
        CUDA_OK(cudaMemcpy(pq.ptr, q.data(), one * 4, cudaMemcpyHostToDevice));
        CUDA_OK(cudaMemcpy(pk.ptr, k.data(), one * 4, cudaMemcpyHostToDevice));
        CUDA_OK(cudaMemcpy(pv.ptr, v.data(), one * 4, cudaMemcpyHostToDevice));
        for (const Layout3& lay : layouts(batch, heads, n, d)) {
          std::vector<float> in(lay.in_floats, 0.0f);
          scatter(q, in, lay.strides.q, batch, heads, n, d, lay.q_off);
          scatter(k, in, lay.strides.k, batch, heads, n, d, lay.k_off);
          scatter(v, in, lay.strides.v, batch, heads, n, d, lay.v_off);
          DeviceFloats din(lay.in_floats), dout(lay.out_floats);
          ASSERT_TRUE(din.ptr && dout.ptr);
          CUDA_OK(cudaMemcpy(din.ptr, in.data(), in.size() * 4, cudaMemcpyHostToDevice));
          const AttentionTensors t{din.ptr + lay.q_off, din.ptr + lay.k_off, din.ptr + lay.v_off, dout.ptr,
                                   lay.strides};
          ASSERT_TRUE(check_tensors(t, w)) << lay.name << ": " << check_tensors(t, w).reason;
          std::vector<float> packed(one), strided(lay.out_floats);
          for (const KernelInstance* kern : kernel_registry()) {
            if (kern->config().d != d || !kern->can_implement(w, dev)) continue;
            const std::string where = kern->name() + " " + lay.name + " N=" + std::to_string(n) +
                                      (causal ? " causal" : "");
            CUDA_OK(kern->launch(pq.ptr, pk.ptr, pv.ptr, po.ptr, w, nullptr));
            CUDA_OK(cudaMemset(dout.ptr, 0xFF, lay.out_floats * 4));  // NaN poison, gaps included
            CUDA_OK(kern->launch(t, w, nullptr));
            CUDA_OK(cudaDeviceSynchronize());
            CUDA_OK(cudaMemcpy(packed.data(), po.ptr, one * 4, cudaMemcpyDeviceToHost));
            CUDA_OK(cudaMemcpy(strided.data(), dout.ptr, lay.out_floats * 4, cudaMemcpyDeviceToHost));
            // Gather O back; mark every element read so the gaps can be checked untouched.
            std::vector<char> is_row(lay.out_floats, 0);
            long long mismatches = 0;
            for (long long b = 0; b < batch; ++b)
              for (long long h = 0; h < heads; ++h)
                for (long long r = 0; r < n; ++r)
                  for (int c = 0; c < d; ++c) {
                    const std::size_t i = at(lay.strides.o, b, h, r, c);
                    is_row[i] = 1;
                    const float want = packed[static_cast<std::size_t>(((b * heads + h) * n + r) * d + c)];
                    if (std::memcmp(&strided[i], &want, 4) != 0) ++mismatches;
                  }
            long long gap_writes = 0;
            const std::uint32_t poison = 0xFFFFFFFFu;
            for (std::size_t i = 0; i < lay.out_floats; ++i)
              if (!is_row[i] && std::memcmp(&strided[i], &poison, 4) != 0) ++gap_writes;
            EXPECT_EQ(mismatches, 0) << where << ": elements differing from the packed launch";
            EXPECT_EQ(gap_writes, 0) << where << ": elements written outside O's rows";
            ++compared;
          }
        }
      }
  EXPECT_GT(compared, 0) << "no instance ran";
  std::printf("compared %lld (config, layout, workload) launches bit for bit\n", compared);
}

TEST(KernelsStrided, LaunchRefusesStridesNoKernelCanAddress) {
  const std::string why = testing_support::no_gpu_reason();
  if (!why.empty()) GTEST_SKIP() << "no CUDA device: " << why;
  Workload w;
  w.B = 4;
  w.N = 64;
  w.d = 64;
  DeviceFloats buf(static_cast<std::size_t>(w.B * w.N * (w.d + 8)) * 4);
  ASSERT_TRUE(buf.ptr);
  AttentionTensors t = AttentionTensors::packed(buf.ptr, buf.ptr, buf.ptr, buf.ptr + w.B * w.N * w.d, w);
  t.strides.k.row = 66;  // 264 bytes: rows off the 16-byte grid
  for (const KernelInstance* kern : kernel_registry())
    if (kern->config().d == 64) EXPECT_EQ(kern->launch(t, w, nullptr), cudaErrorInvalidValue) << kern->name();
}

}  // namespace
}  // namespace flashtune
