// The dispatcher's choice, host-only (no GPU): a measured workload gets the profile's best, an
// unmeasured one the model's rank 1 (recomputed here from model::predict, not from the ranking the
// dispatcher uses), the causal flag is part of the workload, and every refusal is one clear line.
// Fixture: tests/data/dispatch_profile.json (H200, d=64 configs of the small kernel set, which the
// full set also compiles). Precision: tests/data/dispatch_tf32_profile.json, where mma_1xtf32
// (TF32-accurate only) is measured fastest: fp32 (the default) must never choose it.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <string>

#include "dispatch/dispatcher.h"
#include "kernels/registry.h"
#include "kernels/traits/variants.h"
#include "model/config_catalog.h"
#include "model/data_dir.h"
#include "model/decode_model.h"
#include "model/gpu_spec.h"
#include "model/predict.h"
#include "model/profile.h"
#include "model/rank.h"
#include "profile/model_profile.h"
#include "profile/profile.h"

namespace flashtune {
namespace {

const std::string kFixture = FLASHTUNE_DISPATCH_FIXTURE;
const std::string kTf32Fixture = FLASHTUNE_DISPATCH_TF32_FIXTURE;

Workload workload(long long B, long long N, int d, bool causal = false) {
  Workload w;
  w.B = B;
  w.N = N;
  w.d = d;
  w.causal = causal;
  return w;
}

const NamedWorkload& fixture_workload(const Profile& p, const std::string& name) {
  for (const NamedWorkload& w : p.workloads)
    if (w.name == name) return w;
  throw std::runtime_error("fixture has no workload " + name);
}

// The model's fastest config for w, computed config by config: every compiled config of w.d that
// the precision admits and the device can run, predicted with the profile's coefficients and registers
// (equal predictions: the smaller shared-memory footprint, model::predicted_before).
struct ModelPick {
  TileConfig config;
  double ms = std::numeric_limits<double>::infinity();
  double time_s = std::numeric_limits<double>::infinity();
  int smem_bytes = 0;
  int candidates = 0;
};
ModelPick model_pick(const Workload& w, const model::GpuSpec& gpu, const DeviceLimits& dev,
                     const model::ModelProfile& profile, Precision precision = Precision::Fp32) {
  ModelPick best;
  model::ConfigCatalog catalog;
  for (const TileConfig& c : model::compiled_tile_configs()) {
    if (c.d != w.d || !find_kernel(c)->can_implement(w, dev)) continue;
    if (precision == Precision::Fp32 && variant_precision(c.variant) != Precision::Fp32) continue;
    const model::Prediction p =
        model::predict(w, catalog.analysis(c), gpu, profile.coefficients, profile.registers_for(c.name()));
    if (!p.refusal.empty()) continue;
    ++best.candidates;
    const int smem = catalog.analysis(c).smem_bytes;
    if (model::predicted_before(p.time_s, smem, best.time_s, best.smem_bytes)) {
      best.time_s = p.time_s;
      best.ms = p.time_s * 1e3;
      best.smem_bytes = smem;
      best.config = c;
    }
  }
  return best;
}

std::string error_of(const std::function<void()>& f, DispatchError::Kind* kind = nullptr) {
  try {
    f();
  } catch (const DispatchError& e) {
    if (kind) *kind = e.kind();
    return e.what();
  }
  return "(no error)";
}

class DispatchChoose : public ::testing::Test {
 protected:
  Profile fixture = load_profile(kFixture);
  model::ModelProfile fixture_model = load_model_profile(kFixture);
  model::GpuSpec h200 = model::find_gpu_spec("nvidia-h200", model::default_gpu_spec_dir());
};

TEST_F(DispatchChoose, MeasuredWorkloadGetsProfileBestOverTheModel) {
  const Dispatcher d = Dispatcher::from_files(kFixture);
  const Workload w = fixture_workload(fixture, "w256").workload;
  const Choice c = d.choose(w);
  ASSERT_EQ(c.source, ChoiceSource::ProfileBest) << c.why() << " " << c.note;
  EXPECT_EQ(c.config.name(), fixture.best.at("w256").config);
  EXPECT_DOUBLE_EQ(c.measured_ms, fixture.best.at("w256").median_ms);
  EXPECT_EQ(c.workload_name, "w256");
  char why[96];
  std::snprintf(why, sizeof why, "profile best for w256, measured %.4f ms", fixture.best.at("w256").median_ms);
  EXPECT_EQ(c.why(), why);
  // The fixture is built so that the measurement overrules the model here.
  const ModelPick m = model_pick(w, h200, device_limits_from_spec(h200), fixture_model);
  EXPECT_NE(m.config, c.config) << "fixture: w256's best should not be the model's rank 1";
}

TEST_F(DispatchChoose, UnmeasuredWorkloadGetsModelRankOne) {
  const Dispatcher d = Dispatcher::from_files(kFixture);
  Workload w = workload(3, 777, 64);
  const Choice c = d.choose(w);
  const ModelPick m = model_pick(w, h200, device_limits_from_spec(h200), fixture_model);
  ASSERT_GT(m.candidates, 0);
  EXPECT_EQ(c.source, ChoiceSource::Model);
  EXPECT_EQ(c.config, m.config) << c.config.name() << " vs " << m.config.name();
  EXPECT_DOUBLE_EQ(c.predicted_ms, m.ms);
  EXPECT_EQ(c.rank, 1);
  EXPECT_EQ(c.candidates, m.candidates);
  EXPECT_TRUE(c.note.empty()) << c.note;
  char why[96];
  std::snprintf(why, sizeof why, "model rank 1 of %d, predicted %.4f ms", m.candidates, m.ms);
  EXPECT_EQ(c.why(), why);
  // Scale does not change the speed, so it does not change the choice.
  w.scale = 0.5f;
  EXPECT_EQ(d.choose(w).config, c.config);
}

TEST_F(DispatchChoose, SpecOnlyUsesDefaultCoefficients) {
  const Dispatcher d = Dispatcher::from_files("", "h200", ProfileDefault::SpecOnly);
  EXPECT_EQ(d.profile(), nullptr);
  const Workload w = fixture_workload(fixture, "w256").workload;  // measured in the fixture, not here
  const Choice c = d.choose(w);
  const ModelPick m = model_pick(w, h200, device_limits_from_spec(h200), model::ModelProfile{});
  EXPECT_EQ(c.source, ChoiceSource::Model);
  EXPECT_EQ(c.config, m.config);
  EXPECT_DOUBLE_EQ(c.predicted_ms, m.ms);
}

TEST_F(DispatchChoose, CausalFlagIsPartOfTheWorkload) {
  const Dispatcher d = Dispatcher::from_files(kFixture);
  Workload causal = fixture_workload(fixture, "w256").workload;
  causal.causal = true;
  const Choice c = d.choose(causal);
  ASSERT_EQ(c.source, ChoiceSource::ProfileBest);
  EXPECT_EQ(c.workload_name, "w256_causal");
  EXPECT_EQ(c.config.name(), fixture.best.at("w256_causal").config);
  EXPECT_NE(c.config, d.choose(fixture_workload(fixture, "w256").workload).config);
  // w1024 is measured without the mask only: with it, the model decides.
  Workload w1024 = fixture_workload(fixture, "w1024").workload;
  ASSERT_FALSE(w1024.causal);
  EXPECT_EQ(d.choose(w1024).source, ChoiceSource::ProfileBest);
  w1024.causal = true;
  EXPECT_EQ(d.choose(w1024).source, ChoiceSource::Model);
}

TEST_F(DispatchChoose, UnusableBestFallsBackToTheModelWithANote) {
  const Dispatcher d = Dispatcher::from_files(kFixture);
  const Choice not_compiled = d.choose(fixture_workload(fixture, "w512_uncompiled").workload);
  EXPECT_EQ(not_compiled.source, ChoiceSource::Model);
  EXPECT_EQ(not_compiled.note, "profile best for w512_uncompiled (" + fixture.best.at("w512_uncompiled").config +
                                   ") is not compiled in this build");
  const Choice failed = d.choose(fixture_workload(fixture, "w128_failed").workload);
  EXPECT_EQ(failed.source, ChoiceSource::Model);
  EXPECT_EQ(failed.note, "profile has no ok measurement for w128_failed");
}

TEST_F(DispatchChoose, ChoicesAreCachedPerWorkload) {
  const Dispatcher d = Dispatcher::from_files(kFixture);
  Workload w = workload(5, 300, 64);
  EXPECT_EQ(d.cached_choices(), 0u);
  const Choice first = d.choose(w);
  const Choice again = d.choose(w);
  EXPECT_EQ(first.config, again.config);
  EXPECT_EQ(first.why(), again.why());
  EXPECT_EQ(d.cached_choices(), 1u);
  w.scale = 0.25f;  // same key: scale does not change the choice
  d.choose(w);
  EXPECT_EQ(d.cached_choices(), 1u);
  w.causal = true;  // a new key
  d.choose(w);
  EXPECT_EQ(d.cached_choices(), 2u);
  w.d = 48;  // errors are not cached
  EXPECT_THROW(d.choose(w), DispatchError);
  EXPECT_EQ(d.cached_choices(), 2u);
}

TEST_F(DispatchChoose, MissingOrBadProfileIsOneLine) {
  DispatchError::Kind kind = DispatchError::Kind::Unsupported;
  EXPECT_EQ(error_of([] { Dispatcher::from_files("/nonexistent/p.json"); }, &kind),
            "/nonexistent/p.json: cannot open profile");
  EXPECT_EQ(kind, DispatchError::Kind::BadInput);
  const std::string bad = testing::TempDir() + "dispatch_bad_profile.json";
  std::ofstream(bad) << "{\"schema_version\": 1, \"kind\": \"flashtune-profile\"";
  const std::string e = error_of([&] { Dispatcher::from_files(bad); });
  EXPECT_EQ(e.rfind(bad + ": ", 0), 0u) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  EXPECT_EQ(error_of([] { Dispatcher::from_files(""); }), "the dispatcher needs a profile or a GPU spec");
}

TEST_F(DispatchChoose, ProfileOfAnotherGpuIsRefused) {
  EXPECT_EQ(error_of([] { Dispatcher::from_files(kFixture, "h100"); }),
            kFixture + ": measured on nvidia-h200, not on nvidia-h100-sxm");
}

TEST_F(DispatchChoose, UncompiledHeadDimIsOneLine) {
  const Dispatcher d = Dispatcher::from_files(kFixture);
  Workload w = workload(1, 64, 48);
  DispatchError::Kind kind = DispatchError::Kind::Unsupported;
  std::string compiled;
  for (int dim : compiled_head_dims()) compiled += (compiled.empty() ? "" : ", ") + std::to_string(dim);
  EXPECT_EQ(error_of([&] { d.choose(w); }, &kind), "unsupported d=48 (compiled: " + compiled + ")");
  EXPECT_EQ(kind, DispatchError::Kind::BadInput);
}

TEST_F(DispatchChoose, NoConfigTheDeviceCanRun) {
  DeviceLimits tiny = device_limits_from_spec(h200);
  tiny.name = "tiny";
  tiny.smem_per_block_optin = 1024;  // below every config's shared tiles
  const Dispatcher d(std::nullopt, h200, tiny);
  Workload w = workload(2, 256, 64);
  DispatchError::Kind kind = DispatchError::Kind::BadInput;
  const std::string e = error_of([&] { d.choose(w); }, &kind);
  EXPECT_EQ(kind, DispatchError::Kind::Unsupported);
  EXPECT_EQ(e.rfind("none of the ", 0), 0u) << e;
  EXPECT_NE(e.find("can run B=2 N=256 d=64 non-causal on tiny (first: "), std::string::npos) << e;
  EXPECT_NE(e.find("device allows 1024 B"), std::string::npos) << e;
}

// A GPU without a profile: its shipped profile (profiles/<spec>.json in the data folder), measured
// bests and fitted coefficients both; a profile given with spec-only is refused.
TEST_F(DispatchChoose, GpuAloneReadsItsShippedProfile) {
  const std::string shipped = model::shipped_profile_path("nvidia-h200");
  ASSERT_FALSE(shipped.empty());
  const Dispatcher d = Dispatcher::from_files("", "h200");
  ASSERT_NE(d.profile(), nullptr);
  EXPECT_EQ(d.profile()->path, shipped);
  EXPECT_GT(d.profile()->model.fitted_coefficients, 0);
  EXPECT_EQ(error_of([] { Dispatcher::from_files(kFixture, "", ProfileDefault::SpecOnly); }),
            kFixture + ": a profile and spec-only exclude each other");
}

// The shipped bf16 companion (profiles/nvidia-h200-bf16.json, another build's sweep) joins the
// shipped profile: a measured bf16 workload gets that sweep's best, an fp32 one still the fp32 best.
TEST_F(DispatchChoose, ShippedBf16CompanionServesBf16Workloads) {
  const std::string companion = model::shipped_companion_profile_path("nvidia-h200", DType::Bf16);
  ASSERT_FALSE(companion.empty());
  EXPECT_EQ(model::shipped_companion_profile_path("nvidia-h200", DType::Fp32), "");
  const Dispatcher d = Dispatcher::from_files("", "h200");
  ASSERT_NE(d.profile(), nullptr);
  ASSERT_EQ(d.profile()->companions.size(), 1u);
  EXPECT_EQ(d.profile()->companions[0], companion);

  const Profile bf16 = load_profile(companion);
  const NamedWorkload& t22 = fixture_workload(bf16, "t22_bf16");
  ASSERT_EQ(t22.workload.dtype, DType::Bf16);
  const Choice c = d.choose(t22.workload);
  EXPECT_EQ(c.config.dtype, DType::Bf16) << c.why();
  // The small kernel set may not compile that sweep's best; the full set (CI, the device) does.
  if (find_kernel(*parse_config_name(bf16.best.at("t22_bf16").config))) {
    EXPECT_EQ(c.source, ChoiceSource::ProfileBest) << c.why();
    EXPECT_EQ(c.config.name(), bf16.best.at("t22_bf16").config);
  }

  Workload fp32 = t22.workload;
  fp32.dtype = DType::Fp32;
  const Choice f = d.choose(fp32);
  EXPECT_EQ(f.config.dtype, DType::Fp32) << f.why();
}

// A companion holding a workload of another dtype is refused in one line, naming it.
TEST_F(DispatchChoose, CompanionOfTheWrongDtypeIsRefused) {
  const std::filesystem::path dir = std::filesystem::path(testing::TempDir()) / "dispatch_companions";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(kFixture, dir / "nvidia-h200.json");
  std::filesystem::copy_file(kFixture, dir / "nvidia-h200-bf16.json");  // fp32 workloads
  ASSERT_EQ(setenv("FLASHTUNE_PROFILE_DIR", dir.c_str(), 1), 0);
  const std::string e = error_of([] { Dispatcher::from_files("", "h200"); });
  unsetenv("FLASHTUNE_PROFILE_DIR");
  EXPECT_NE(e.find((dir / "nvidia-h200-bf16.json").string() + ": workload "), std::string::npos) << e;
  EXPECT_NE(e.find(" is fp32, not bf16 (a companion profile holds only its element type)"), std::string::npos) << e;
}

// for_device's default: profiles/<spec>.json in the profile folder when it exists, else no profile.
TEST_F(DispatchChoose, DeviceDefaultProfileComesFromItsSpec) {
  const std::filesystem::path dir = std::filesystem::path(testing::TempDir()) / "dispatch_profiles";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  ASSERT_EQ(setenv("FLASHTUNE_PROFILE_DIR", dir.c_str(), 1), 0);
  DeviceLimits h200_device = device_limits_from_spec(h200);
  h200_device.name = "NVIDIA H200";
  {
    const Dispatcher none = Dispatcher::for_device(h200_device, std::nullopt);
    EXPECT_EQ(none.profile(), nullptr);
  }
  std::filesystem::copy_file(kFixture, dir / "nvidia-h200.json");
  const Dispatcher with = Dispatcher::for_device(h200_device, std::nullopt);
  ASSERT_NE(with.profile(), nullptr);
  EXPECT_EQ(with.profile()->path, (dir / "nvidia-h200.json").string());
  EXPECT_EQ(with.spec().name, h200.name);
  EXPECT_EQ(with.choose(fixture_workload(fixture, "w256").workload).source, ChoiceSource::ProfileBest);
  unsetenv("FLASHTUNE_PROFILE_DIR");
  // A profile given for another GPU is refused.
  DeviceLimits h100_device = h200_device;
  h100_device.name = "NVIDIA H100 80GB HBM3";
  EXPECT_EQ(error_of([&] { Dispatcher::for_device(h100_device, load_dispatch_profile(kFixture)); }),
            kFixture + ": measured on nvidia-h200, not on nvidia-h100-sxm");
}

// ---- precision ------------------------------------------------------------------------------

class DispatchPrecision : public DispatchChoose {
 protected:
  Profile tf32_fixture = load_profile(kTf32Fixture);
  model::ModelProfile tf32_model = load_model_profile(kTf32Fixture);
};

// The fixture's fastest measurement is mma_1xtf32: only a tf32 choice takes it; the default takes
// the fastest fp32-accurate measurement (mma_3xtf32) and says why it passed the other over.
TEST_F(DispatchPrecision, DefaultTakesTheFastestFp32AccurateMeasurement) {
  ASSERT_EQ(tf32_fixture.best.at("t2048").config, "mma_1xtf32/d64/br64xbc64/swizzled") << "fixture";
  const Dispatcher d = Dispatcher::from_files(kTf32Fixture);
  const Workload w = fixture_workload(tf32_fixture, "t2048").workload;

  const Choice strict = d.choose(w);
  ASSERT_EQ(strict.source, ChoiceSource::ProfileBest) << strict.why() << " " << strict.note;
  EXPECT_EQ(strict.config.name(), "mma_3xtf32/d64/br64xbc64/swizzled");
  EXPECT_EQ(variant_precision(strict.config.variant), Precision::Fp32);
  EXPECT_DOUBLE_EQ(strict.measured_ms, 0.3517);
  EXPECT_EQ(strict.precision, Precision::Fp32);
  EXPECT_EQ(strict.note, "profile's fastest for t2048 (mma_1xtf32/d64/br64xbc64/swizzled) is not fp32-accurate; the "
                         "fastest fp32-accurate one is taken");
  EXPECT_EQ(d.choose(w, Precision::Fp32).config, strict.config);

  const Choice loose = d.choose(w, Precision::Tf32);
  ASSERT_EQ(loose.source, ChoiceSource::ProfileBest) << loose.why() << " " << loose.note;
  EXPECT_EQ(loose.config.name(), "mma_1xtf32/d64/br64xbc64/swizzled");
  EXPECT_DOUBLE_EQ(loose.measured_ms, 0.1984);
  EXPECT_EQ(loose.precision, Precision::Tf32);
  EXPECT_TRUE(loose.note.empty()) << loose.note;
  // One cache entry per precision.
  EXPECT_EQ(d.cached_choices(), 2u);
}

// A workload measured with mma_1xtf32 alone: fp32 goes to the model (which never ranks
// mma_1xtf32 then), tf32 takes the measurement.
TEST_F(DispatchPrecision, Tf32OnlyMeasurementGoesToTheModelUnderFp32) {
  const Dispatcher d = Dispatcher::from_files(kTf32Fixture);
  const Workload w = fixture_workload(tf32_fixture, "t1024_tf32_only").workload;
  const Choice strict = d.choose(w);
  EXPECT_EQ(strict.source, ChoiceSource::Model);
  EXPECT_EQ(variant_precision(strict.config.variant), Precision::Fp32) << strict.config.name();
  const ModelPick m = model_pick(w, h200, device_limits_from_spec(h200), tf32_model);
  EXPECT_EQ(strict.config, m.config) << strict.config.name() << " vs " << m.config.name();
  EXPECT_EQ(strict.candidates, m.candidates);
  EXPECT_EQ(strict.note, "profile has no ok fp32-accurate measurement for t1024_tf32_only (its best, "
                         "mma_1xtf32/d64/br64xbc64/swizzled, is not fp32-accurate)");
  const Choice loose = d.choose(w, Precision::Tf32);
  EXPECT_EQ(loose.source, ChoiceSource::ProfileBest);
  EXPECT_EQ(loose.config.name(), "mma_1xtf32/d64/br64xbc64/swizzled");
}

// Unmeasured workloads: the model ranks only fp32-accurate configs by default, and all of them
// (mma_1xtf32 too) under tf32; its pick is the config-by-config rank 1 in both cases.
TEST_F(DispatchPrecision, ModelRanksTf32ConfigsOnlyUnderTf32) {
  const Dispatcher d = Dispatcher::from_files("", "h200", ProfileDefault::SpecOnly);
  const DeviceLimits dev = device_limits_from_spec(h200);
  for (int dim : compiled_head_dims()) {
    int tf32_configs = 0;
    for (const TileConfig& c : model::compiled_tile_configs())
      tf32_configs += c.d == dim && variant_precision(c.variant) == Precision::Tf32;
    for (const Workload& w : {workload(10, 2048, dim), workload(64, 4096, dim, true), workload(1, 128, dim)}) {
      SCOPED_TRACE("B=" + std::to_string(w.B) + " N=" + std::to_string(w.N) + " d=" + std::to_string(dim));
      const Choice strict = d.choose(w), loose = d.choose(w, Precision::Tf32);
      EXPECT_EQ(strict.source, ChoiceSource::Model);
      EXPECT_EQ(variant_precision(strict.config.variant), Precision::Fp32) << strict.config.name();
      const ModelPick ms = model_pick(w, h200, dev, model::ModelProfile{});
      const ModelPick ml = model_pick(w, h200, dev, model::ModelProfile{}, Precision::Tf32);
      EXPECT_EQ(strict.config, ms.config);
      EXPECT_EQ(strict.candidates, ms.candidates);
      EXPECT_EQ(loose.config, ml.config);
      EXPECT_EQ(loose.candidates, ml.candidates);
      EXPECT_LE(loose.predicted_ms, strict.predicted_ms);
      // Every tf32 config the model can rank here is a candidate under tf32 and not under fp32.
      EXPECT_LE(loose.candidates, strict.candidates + tf32_configs);
    }
  }
}

// Decode (issue 26): the dispatcher chooses the family and the split, the model being the one
// place that chooses the split (model::pick_decode_splits with the dispatcher's coefficients).
Workload decode_workload(long long batch, int q_heads, int kv_heads, long long nq, long long keys) {
  Workload w;
  w.B = batch * q_heads;
  w.N = nq;
  w.d = 128;
  w.dtype = DType::Bf16;
  w.kv_len = keys;
  w.kv_group = q_heads / kv_heads;
  return w;
}

TEST(DispatchDecode, ChoosesTheDecodeFamilyAndTheModelsSplit) {
  const Dispatcher d = Dispatcher::from_files("", "h100", ProfileDefault::SpecOnly);
  // One sequence, 32 query heads over 8 K/V heads, 32768 cached keys: 8 K/V entries cannot fill
  // 132 SMs, so the keys are split.
  const Workload w = decode_workload(1, 32, 8, 1, 32768);
  const Choice c = d.choose(w, Precision::Fp32);
  ASSERT_EQ(c.config.variant, Variant::Decode) << c.config.name() << " " << c.why();
  const model::DecodePrediction m = model::pick_decode_splits(w, c.config, d.spec(), model::Coefficients{});
  ASSERT_TRUE(m.refusal.empty()) << m.refusal;
  EXPECT_EQ(c.splits, m.splits);
  EXPECT_GT(c.splits, 1);
  EXPECT_NE(c.why().find(std::to_string(c.splits) + " splits (model)"), std::string::npos) << c.why();
  // The ranking's time is the one at that split.
  EXPECT_NEAR(c.predicted_ms, m.time_s * 1e3, 1e-9);
  // Enough K/V entries to fill the GPU: one split, no combine.
  const Choice big = d.choose(decode_workload(16, 32, 8, 1, 8192), Precision::Fp32);
  ASSERT_EQ(big.config.variant, Variant::Decode) << big.config.name();
  EXPECT_EQ(big.splits, 1);
}

TEST(DispatchDecode, TiledWorkloadsHaveNoSplit) {
  const Dispatcher d = Dispatcher::from_files("", "h100", ProfileDefault::SpecOnly);
  Workload w;
  w.B = 64, w.N = 1024, w.d = 64;
  const Choice c = d.choose(w);
  EXPECT_NE(c.config.variant, Variant::Decode);
  EXPECT_EQ(c.splits, 0);
  EXPECT_EQ(c.why().find("split"), std::string::npos);
}

TEST(DispatchDecode, ShippedProfileCoefficientsPickTheSplit) {
  // With the shipped H100 profile (its fitted coefficients; the decode ones at their defaults when
  // it holds none), the split is still the model's under those coefficients.
  const Dispatcher d = Dispatcher::from_files("", "h100");
  const Workload w = decode_workload(1, 32, 32, 1, 16384);
  const Choice c = d.choose(w, Precision::Fp32);
  if (c.config.variant != Variant::Decode) GTEST_SKIP() << "the profile's choice is " << c.config.name();
  const model::Coefficients k = d.profile() ? d.profile()->model.coefficients : model::Coefficients{};
  EXPECT_EQ(c.splits, model::pick_decode_splits(w, c.config, d.spec(), k).splits);
  EXPECT_GE(c.splits, 1);
}

}  // namespace
}  // namespace flashtune
