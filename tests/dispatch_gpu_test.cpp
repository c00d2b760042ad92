// attention_forward on a GPU (skips without one): the dispatcher's config for a measured workload
// (the fixture profile's best) and for an unmeasured one (the model's pick, with this GPU's default
// profile when there is one), each checked element by element against the double reference on
// fresh random inputs, output poisoned with NaN first.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "dispatch/attention_forward.h"
#include "gpu_test_support.h"
#include "kernels/reference.h"
#include "kernels/traits/variants.h"
#include "model/gpu_spec.h"
#include "tuner/device_buffer.h"
#include "tuner/verify.h"

namespace flashtune {
namespace {

#define SKIP_WITHOUT_GPU()                                        \
  do {                                                            \
    const std::string why = testing_support::no_gpu_reason();     \
    if (!why.empty()) GTEST_SKIP() << "no usable GPU: " << why;   \
  } while (0)

// Runs attention_forward for w through `dispatcher` and returns the comparison with the reference.
ErrorStats forward_against_reference(const Workload& w, const Dispatcher& dispatcher, std::uint64_t seed) {
  cudaStream_t stream = nullptr;
  EXPECT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  const AttentionInputs in = random_inputs(w, -1.0f, 1.0f, seed, stream);
  DeviceBuffer<float> o(in.elements());
  EXPECT_EQ(cudaMemsetAsync(o.data(), 0xFF, in.elements() * sizeof(float), stream), cudaSuccess);  // NaN
  EXPECT_EQ(attention_forward(in.q.data(), in.k.data(), in.v.data(), o.data(), w.B, w.N, w.d, w.causal, stream,
                              dispatcher),
            cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  std::vector<float> out(in.elements());
  EXPECT_EQ(cudaMemcpy(out.data(), o.data(), out.size() * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  const std::vector<double> ref = reference_on_host(in, stream);
  cudaStreamDestroy(stream);
  return compare_to_reference(out.data(), ref.data(), out.size());
}

TEST(DispatchGpu, MeasuredWorkloadRunsTheProfileBest) {
  SKIP_WITHOUT_GPU();
  // The fixture was "measured" on an H200; the choice is checked against this device's limits, so
  // the test runs on any GPU that can run the fixture's d=64 configs.
  DispatchProfile profile = load_dispatch_profile(FLASHTUNE_DISPATCH_FIXTURE);
  Workload w;
  for (const NamedWorkload& nw : profile.workloads)
    if (nw.name == "w256") w = nw.workload;
  ASSERT_EQ(w.N, 256) << "fixture has no workload w256";
  model::GpuSpec spec = model::find_gpu_spec(profile.gpu_spec, model::default_gpu_spec_dir());
  const Dispatcher dispatcher(std::move(profile), std::move(spec), DeviceLimits::query(0));
  const Choice c = dispatcher.choose(w);
  ASSERT_EQ(c.source, ChoiceSource::ProfileBest) << c.why() << " " << c.note;
  const ErrorStats e = forward_against_reference(w, dispatcher, 11);
  EXPECT_TRUE(e.passes(kRelL2Tolerance)) << c.config.name() << ": rel_l2 " << e.rel_l2 << ", " << e.nonfinite
                                         << " non-finite";
}

TEST(DispatchGpu, UnmeasuredWorkloadRunsTheModelPick) {
  SKIP_WITHOUT_GPU();
  const Dispatcher dispatcher = Dispatcher::for_device(0);
  Workload w;
  w.B = 3;
  w.N = 333;  // a tail in every tile size, and no profile measures N=333
  w.d = 64;
  w.causal = true;
  const Choice c = dispatcher.choose(w);
  EXPECT_EQ(c.source, ChoiceSource::Model) << c.why();
  const ErrorStats e = forward_against_reference(w, dispatcher, 12);
  EXPECT_TRUE(e.passes(kRelL2Tolerance)) << c.config.name() << ": rel_l2 " << e.rel_l2 << ", " << e.nonfinite
                                         << " non-finite";
}

// Decode (issue 26): a KV-cache workload through attention_forward runs the decode family at the
// split the dispatcher chose (the model's), through DecodeKernel::launch_decode; checked against
// the double reference. fp32 operands (the pointer overload); one sequence of 32 query heads over 8
// K/V heads against 8191 cached keys (a tail tile), so the model splits the keys.
TEST(DispatchGpu, DecodeWorkloadRunsTheModelsSplit) {
  SKIP_WITHOUT_GPU();
  const Dispatcher dispatcher = Dispatcher::for_device(0);
  Workload w;
  w.B = 32;
  w.N = 1;
  w.d = 128;
  w.kv_len = 8191;
  w.kv_group = 4;
  const Choice c = dispatcher.choose(w);
  if (c.config.variant == Variant::Decode) {
    EXPECT_GT(c.splits, 1) << c.why();
  }
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  const AttentionInputs in = random_inputs(w, -1.0f, 1.0f, 13, stream);
  DeviceBuffer<float> o(in.elements());
  ASSERT_EQ(cudaMemsetAsync(o.data(), 0xFF, in.elements() * sizeof(float), stream), cudaSuccess);  // NaN
  ASSERT_EQ(attention_forward(in.q.data(), in.k.data(), in.v.data(), o.data(), w, stream, dispatcher), cudaSuccess)
      << c.why();
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  std::vector<float> out(in.elements());
  ASSERT_EQ(cudaMemcpy(out.data(), o.data(), out.size() * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  const std::vector<double> ref = reference_on_host(in, stream);
  cudaStreamDestroy(stream);
  const ErrorStats e = compare_to_reference(out.data(), ref.data(), out.size());
  EXPECT_TRUE(e.passes(kRelL2Tolerance)) << c.config.name() << " (" << c.why() << "): rel_l2 " << e.rel_l2 << ", "
                                         << e.nonfinite << " non-finite";
}

}  // namespace
}  // namespace flashtune
