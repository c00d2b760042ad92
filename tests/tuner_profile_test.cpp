// The profile (schema, validation, atomic write, resume index), workload files, config names, the
// plan, GPU naming, progress lines and the CSV/T4 export. Host only: no GPU needed.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "kernels/traits/variants.h"
#include "model/gpu_spec.h"
#include "model/profile.h"
#include "profile/export.h"
#include "profile/model_profile.h"
#include "profile/profile.h"
#include "profile/workload_set.h"
#include "tuner/progress.h"
#include "tuner/tune_plan.h"

namespace flashtune {
namespace {

namespace fs = std::filesystem;

// A fresh folder under the test temp dir, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() / ("flashtune_profile_test_" + std::to_string(::getpid()) + "_" +
                                         std::to_string(counter_++));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::vector<std::string> entries() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(path_)) out.push_back(e.path().filename().string());
    return out;
  }

 private:
  static inline int counter_ = 0;
  fs::path path_;
};

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

Profile sample_profile() {
  Profile p;
  p.gpu = {"NVIDIA H200", "nvidia-h200", 132, "9.0", 1980, 3201, 62914560, "580.159.04", "13.0", 0};
  p.build = {"nvcc 13.0", "90", "abc1234", "full"};
  p.workloads = {{"t10", {10, 2048, 64, false, 0}}, {"c1", {2, 1000, 32, true, 0}}};
  Measurement ok;
  ok.workload = "t10";
  ok.config = "regtile_2d/d64/br32xbc64/swizzled";
  ok.verify = VerifyResult{2.1e-6, 3e-6};
  TimingSummary t;
  t.median_ms = 0.35;
  t.min_ms = 0.349;
  t.max_ms = 0.36;
  t.mean_ms = 0.351;
  t.stdev_ms = 0.002;
  t.rel_stdev = 0.005;
  t.samples = 12;
  t.dropped = 0;
  t.sm_clock_mhz = 1980;
  t.stop = "converged";
  t.samples_ms = {0.35, 0.349, 0.351};
  ok.timing = t;
  ok.counters = {{"dram__bytes_read.sum", 1.2e8}, {"lts__t_bytes.sum", 3e9}};
  ok.counters_status = "ok";
  ok.resources = ResourceUsage{128, 0, 49152, 0, 256};
  ok.timestamp = "2026-11-21T10:00:00Z";
  ok.elapsed_s = 0.8;
  Measurement slow = ok;
  slow.config = "row_reg/d64/br64xbc32/plain";
  slow.timing->median_ms = 0.7;
  slow.timing->max_ms = 0.72;  // a median must lie within its own [min, max]
  slow.resources->registers = 96;
  Measurement wrong;
  wrong.workload = "t10";
  wrong.config = "row_smem/d64/br64xbc32/plain";
  wrong.status = status::kWrongResult;
  wrong.reason = "rel_l2 0.3 (tolerance 0.0001), 0 non-finite";
  wrong.verify = VerifyResult{0.3, 2.0};
  wrong.counters_status = "unavailable: config not timed";
  Measurement res;
  res.workload = "c1";
  res.config = "row_smem/d32/br128xbc128/padded";
  res.status = status::kResources;
  res.reason = "needs 300000 bytes of shared memory, the device allows 232448";
  res.counters_status = "unavailable: config not run";
  p.measurements = {ok, slow, wrong, res};
  p.coefficients = {{"fp32_efficiency", 0.7}};
  recompute_best(p);
  return p;
}

// ---- profile --------------------------------------------------------------------------------

TEST(Profile, RoundTripsEveryField) {
  TempDir dir;
  const Profile p = sample_profile();
  write_profile_atomic(dir.file("p.json"), p);
  const Profile q = load_profile(dir.file("p.json"));
  EXPECT_EQ(q.gpu.name, "NVIDIA H200");
  EXPECT_EQ(q.gpu.spec, "nvidia-h200");
  EXPECT_EQ(q.gpu.l2_bytes, 62914560);
  EXPECT_EQ(q.gpu.driver, "580.159.04");
  EXPECT_EQ(q.build.git_commit, "abc1234");
  ASSERT_EQ(q.workloads.size(), 2u);
  EXPECT_EQ(q.workloads[1].workload.N, 1000);
  EXPECT_TRUE(q.workloads[1].workload.causal);
  ASSERT_EQ(q.measurements.size(), 4u);
  const Measurement& m = q.measurements[0];
  EXPECT_EQ(m.config, "regtile_2d/d64/br32xbc64/swizzled");
  ASSERT_TRUE(m.timing);
  EXPECT_DOUBLE_EQ(m.timing->median_ms, 0.35);
  EXPECT_EQ(m.timing->samples, 12);
  EXPECT_EQ(m.timing->samples_ms.size(), 3u);
  EXPECT_DOUBLE_EQ(m.counters.at("dram__bytes_read.sum"), 1.2e8);
  ASSERT_TRUE(m.resources);
  EXPECT_EQ(m.resources->dynamic_smem, 49152);
  EXPECT_EQ(q.measurements[2].status, "wrong-result");
  EXPECT_FALSE(q.measurements[2].timing);
  EXPECT_DOUBLE_EQ(q.measurements[2].verify->rel_l2, 0.3);
  EXPECT_EQ(q.measurements[3].reason, p.measurements[3].reason);
  EXPECT_DOUBLE_EQ(q.coefficients.at("fp32_efficiency").get<double>(), 0.7);
  // Written the same way twice: the text is a pure function of the profile.
  EXPECT_EQ(profile_text(q), profile_text(p));
}

TEST(Profile, BestIsTheFastestOkMeasurement) {
  Profile p = sample_profile();
  // A wrong result is never best, however fast it claims to be.
  p.measurements[2].timing = TimingSummary{};
  p.measurements[2].timing->median_ms = 0.01;
  recompute_best(p);
  ASSERT_EQ(p.best.count("t10"), 1u);
  EXPECT_EQ(p.best.at("t10").config, "regtile_2d/d64/br32xbc64/swizzled");
  EXPECT_DOUBLE_EQ(p.best.at("t10").median_ms, 0.35);
  EXPECT_EQ(p.best.count("c1"), 0u);  // nothing valid measured for c1
  const auto j = nlohmann::json::parse(profile_text(p));
  EXPECT_EQ(j["best"]["t10"]["config"], "regtile_2d/d64/br32xbc64/swizzled");
}

TEST(Profile, FileFollowsTheAgreedSchema) {
  const auto j = nlohmann::json::parse(profile_text(sample_profile()));
  EXPECT_EQ(j["schema_version"], 3);
  EXPECT_EQ(j["kind"], "flashtune-profile");
  for (const auto& w : j["workloads"]) EXPECT_EQ(w["dtype"], "fp32") << w.dump();
  for (const char* k : {"name", "spec", "sm_count", "cc", "sm_clock_max_mhz", "mem_clock_mhz", "l2_bytes", "driver",
                        "cuda_runtime", "device_index"})
    EXPECT_TRUE(j["gpu"].contains(k)) << k;
  for (const char* k : {"compiler", "cuda_arch", "git_commit", "kernel_set"}) EXPECT_TRUE(j["build"].contains(k)) << k;
  const auto& m = j["measurements"][0];
  for (const char* k : {"workload", "config", "status", "reason", "verify", "timing", "counters", "counters_status",
                        "resources"})
    EXPECT_TRUE(m.contains(k)) << k;
  for (const char* k : {"median_ms", "min_ms", "mean_ms", "stdev_ms", "rel_stdev", "samples", "dropped", "sm_clock_mhz"})
    EXPECT_TRUE(m["timing"].contains(k)) << k;
  for (const char* k : {"registers", "static_smem", "dynamic_smem", "local_bytes", "threads"})
    EXPECT_TRUE(m["resources"].contains(k)) << k;
  EXPECT_TRUE(j["coefficients"].is_object());
}

TEST(Profile, PredictReadsTheRegistersItWrites) {
  TempDir dir;
  write_profile_atomic(dir.file("p.json"), sample_profile());
  const model::ModelProfile mp = load_model_profile(dir.file("p.json"));
  EXPECT_EQ(mp.registers_for("regtile_2d/d64/br32xbc64/swizzled"), 128);
  EXPECT_EQ(mp.registers_for("row_reg/d64/br64xbc32/plain"), 96);
  EXPECT_DOUBLE_EQ(mp.coefficients.fp32_efficiency, 0.7);
}

TEST(Profile, KeepsFieldsItDoesNotKnow) {
  TempDir dir;
  auto j = nlohmann::json::parse(profile_text(sample_profile()));
  j["fit_report"] = {{"rmse_log", 0.12}};
  write_text(dir.file("p.json"), j.dump());
  Profile p = load_profile(dir.file("p.json"));
  write_profile_atomic(dir.file("p.json"), p);
  const auto again = nlohmann::json::parse(read_text(dir.file("p.json")));
  EXPECT_DOUBLE_EQ(again["fit_report"]["rmse_log"].get<double>(), 0.12);
}

// Schema 2 added the workload's dtype: a version 1 profile (no dtype anywhere) loads unchanged, as
// fp32; a 16-bit workload and its configs round-trip; an unknown dtype, or a config of another
// dtype than its workload, is refused naming the field.
TEST(Profile, Version1LoadsAsFp32AndDtypeRoundTrips) {
  TempDir dir;
  auto v1 = nlohmann::json::parse(profile_text(sample_profile()));
  v1["schema_version"] = 1;
  for (auto& w : v1["workloads"]) w.erase("dtype");
  write_text(dir.file("v1.json"), v1.dump());
  const Profile old = load_profile(dir.file("v1.json"));
  ASSERT_EQ(old.workloads.size(), 2u);
  for (const NamedWorkload& w : old.workloads) EXPECT_EQ(w.workload.dtype, DType::Fp32) << w.name;
  EXPECT_EQ(old.measurements.size(), 4u);

  Profile p = sample_profile();
  p.workloads[0].workload.dtype = DType::Bf16;
  int stages = 2;  // one compiled bf16 config per t10 measurement
  for (Measurement& m : p.measurements)
    if (m.workload == p.workloads[0].name) m.config = "mma16/d64/br128xbc64/swizzled/bf16/s" + std::to_string(stages++);
  recompute_best(p);
  write_profile_atomic(dir.file("bf16.json"), p);
  const Profile q = load_profile(dir.file("bf16.json"));
  EXPECT_EQ(q.workloads[0].workload.dtype, DType::Bf16);
  EXPECT_EQ(q.workloads[1].workload.dtype, DType::Fp32);

  auto bad = nlohmann::json::parse(profile_text(p));
  bad["workloads"][0]["dtype"] = "fp8";
  write_text(dir.file("fp8.json"), bad.dump());
  try {
    load_profile(dir.file("fp8.json"));
    ADD_FAILURE() << "fp8 accepted";
  } catch (const ProfileError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown dtype 'fp8' (known: fp32, bf16, fp16)"), std::string::npos) << e.what();
  }
  auto mixed = nlohmann::json::parse(profile_text(p));
  mixed["workloads"][0]["dtype"] = "fp16";
  write_text(dir.file("mixed.json"), mixed.dump());
  try {
    load_profile(dir.file("mixed.json"));
    ADD_FAILURE() << "a bf16 config under an fp16 workload accepted";
  } catch (const ProfileError& e) {
    EXPECT_NE(std::string(e.what()).find("takes bf16 operands"), std::string::npos) << e.what();
  }
}

TEST(Profile, RejectsBadFieldsNamingThem) {
  TempDir dir;
  const std::string path = dir.file("bad.json");
  auto expect_error = [&](nlohmann::json j, const std::string& needle) {
    write_text(path, j.dump());
    try {
      load_profile(path);
      ADD_FAILURE() << "no error for " << needle;
    } catch (const ProfileError& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  const auto good = nlohmann::json::parse(profile_text(sample_profile()));
  auto j = good;
  j["schema_version"] = 4;
  expect_error(j, "'schema_version' must be 1 to 3");
  j["schema_version"] = 0;
  expect_error(j, "'schema_version' must be 1 to 3");
  j = good;
  j["measurements"][1]["status"] = "fast";
  expect_error(j, "measurements[1].status");
  j = good;
  j["measurements"][0].erase("timing");
  expect_error(j, "measurements[0].timing");
  j = good;
  j["measurements"][3]["workload"] = "nope";
  expect_error(j, "'nope' is not in 'workloads'");
  j = good;
  j["measurements"].push_back(good["measurements"][0]);
  expect_error(j, "measured twice");
  j = good;
  j["gpu"].erase("name");
  expect_error(j, "missing field 'gpu.name'");
  j = good;
  j["workloads"][0]["causal"] = 1;
  expect_error(j, "workloads[0].causal");
  write_text(path, "{\"schema_version\": 1,");
  EXPECT_THROW(load_profile(path), ProfileError);
  EXPECT_THROW(load_profile(dir.file("missing.json")), ProfileError);
}

TEST(Profile, AtomicWriteLeavesNoTempFileAndCreatesNoFolder) {
  TempDir dir;
  const std::string path = dir.file("sub/folder/p.json");
  Profile p = sample_profile();
  // No writer creates folders (profile/output_file.h, issue 27): refused, nothing made.
  EXPECT_THROW(write_profile_atomic(path, p), ProfileError);
  EXPECT_FALSE(fs::exists(dir.file("sub")));
  fs::create_directories(fs::path(path).parent_path());
  write_profile_atomic(path, p);
  p.measurements.pop_back();
  write_profile_atomic(path, p);
  EXPECT_EQ(load_profile(path).measurements.size(), 3u);
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(fs::path(path).parent_path())) names.push_back(e.path().filename().string());
  EXPECT_EQ(names, std::vector<std::string>{"p.json"});
}

TEST(Profile, AtomicWriteFailureNamesTheFile) {
  TempDir dir;
  write_text(dir.file("plainfile"), "x");
  // A folder that cannot exist: a path below a regular file.
  const std::string path = dir.file("plainfile/p.json");
  try {
    write_profile_atomic(path, sample_profile());
    FAIL() << "no error";
  } catch (const ProfileError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

TEST(Profile, DoneIndexAndWorkloadMerge) {
  Profile p = sample_profile();
  const DoneIndex done(p);
  EXPECT_EQ(done.size(), 4u);
  EXPECT_TRUE(done.contains("t10", "row_smem/d64/br64xbc32/plain"));
  EXPECT_FALSE(done.contains("c1", "row_smem/d64/br64xbc32/plain"));
  add_workloads(p, {{"t10", {10, 2048, 64, false, 0}}, {"new", {1, 128, 32, false, 0}}});
  EXPECT_EQ(p.workloads.size(), 3u);
  try {
    add_workloads(p, {{"t10", {12, 2048, 64, false, 0}}});
    FAIL() << "no error";
  } catch (const ProfileError& e) {
    EXPECT_NE(std::string(e.what()).find("workload 't10' is B=10 N=2048 d=64 non-causal in the profile"),
              std::string::npos)
        << e.what();
  }
}

// ---- workload files ---------------------------------------------------------------------------

TEST(WorkloadSet, ReadsTheShippedFiles) {
  for (const char* name : {"seed_cases.json", "grid.json"}) {
    const WorkloadSet s = load_workload_set(std::string(FLASHTUNE_SOURCE_DIR) + "/configs/workloads/" + name);
    EXPECT_FALSE(s.workloads.empty()) << name;
    std::set<std::string> names;
    for (const NamedWorkload& w : s.workloads) {
      EXPECT_TRUE(names.insert(w.name).second) << w.name;
      EXPECT_TRUE(w.workload.d == 32 || w.workload.d == 64 || w.workload.d == 128) << w.name;
    }
  }
  const WorkloadSet seeds = load_workload_set(std::string(FLASHTUNE_SOURCE_DIR) + "/configs/workloads/seed_cases.json");
  EXPECT_EQ(seeds.workloads[0].name, "t10");
  EXPECT_EQ(seeds.workloads[0].workload.B, 10);
}

TEST(WorkloadSet, DtypeIsOptionalAndChecked) {
  TempDir dir;
  const std::string path = dir.file("w.json");
  write_text(path, R"({"schema_version": 2, "workloads": [{"name": "a", "B": 1, "N": 8, "d": 64, "dtype": "bf16"},
                                                          {"name": "b", "B": 1, "N": 8, "d": 64}]})");
  const WorkloadSet set = load_workload_set(path);
  EXPECT_EQ(set.workloads[0].workload.dtype, DType::Bf16);
  EXPECT_EQ(set.workloads[1].workload.dtype, DType::Fp32);
  EXPECT_EQ(default_workload_name(set.workloads[0].workload), "b1_n8_d64_bf16");
  EXPECT_FALSE(same_dimensions(set.workloads[0].workload, set.workloads[1].workload));
  write_text(path, R"({"schema_version": 2, "workloads": [{"name": "a", "B": 1, "N": 8, "d": 64, "dtype": "int8"}]})");
  try {
    load_workload_set(path);
    ADD_FAILURE() << "int8 accepted";
  } catch (const WorkloadFileError& e) {
    EXPECT_NE(std::string(e.what()).find("workloads[0].dtype"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("unknown dtype 'int8'"), std::string::npos) << e.what();
  }
}

TEST(WorkloadSet, ErrorsNameTheFileAndField) {
  TempDir dir;
  const std::string path = dir.file("w.json");
  auto expect_error = [&](const std::string& text, const std::string& needle) {
    write_text(path, text);
    try {
      load_workload_set(path);
      ADD_FAILURE() << "no error for " << text;
    } catch (const WorkloadFileError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(path + ": ", 0), 0u) << e.what();
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error(R"({"workloads": []})", "schema_version");
  expect_error(R"({"schema_version": 1, "workloads": []})", "'workloads' must be a non-empty array");
  expect_error(R"({"schema_version": 1, "workloads": [{"name": "a", "B": 1, "N": 0, "d": 64}]})", "'workloads[0].N'");
  expect_error(R"({"schema_version": 1, "workloads": [{"name": "a", "B": 1, "N": 8, "d": 64, "causal": "yes"}]})",
               "'workloads[0].causal'");
  expect_error(R"({"schema_version": 1, "workloads": [{"B": 1, "N": 8, "d": 64}]})", "'workloads[0].name'");
  expect_error(R"({"schema_version": 1, "workloads": [{"name": "a", "B": 1, "N": 8, "d": 64, "h": 2}]})",
               "unknown field 'workloads[0].h'");
  expect_error(R"({"schema_version": 1, "workloads": [{"name": "a", "B": 1, "N": 8, "d": 64},
                                                      {"name": "a", "B": 2, "N": 8, "d": 64}]})",
               "appears twice");
  expect_error("not json", "malformed JSON");
  try {
    load_workload_set(dir.file("absent.json"));
    FAIL() << "no error";
  } catch (const WorkloadFileError& e) {
    EXPECT_EQ(std::string(e.what()), dir.file("absent.json") + ": cannot open workload file");
  }
}

TEST(WorkloadSet, MergeKeepsOrderAndRefusesConflicts) {
  WorkloadSet a{"a.json", "a", "", {{"x", {1, 128, 32, false, 0}}, {"y", {2, 256, 64, true, 0}}}};
  WorkloadSet b{"b.json", "b", "", {{"y", {2, 256, 64, true, 0}}, {"z", {3, 512, 128, false, 0}}}};
  const auto merged = merge_workloads({a, b});
  ASSERT_EQ(merged.size(), 3u);
  EXPECT_EQ(merged[2].name, "z");
  b.workloads[0].workload.N = 300;
  EXPECT_THROW(merge_workloads({a, b}), WorkloadFileError);
  EXPECT_EQ(default_workload_name({10, 2048, 64, true, 0}), "b10_n2048_d64_causal");
}

// ---- plan -------------------------------------------------------------------------------------

TEST(Plan, ExhaustiveTakesEveryConfigOfTheWorkloadsD) {
  const int d_first = compiled_head_dims().front(), d_last = compiled_head_dims().back();  // fp32
  const std::vector<NamedWorkload> ws = {{"a", {4, 512, d_first, false, 0}}, {"b", {4, 512, d_last, true, 0}}};
  const TunePlan plan = make_plan(ws, compiled_configs(), {});
  // The default precision (fp32) plans the fp32-accurate configs only.
  std::vector<TileConfig> fp32_accurate;
  for (const TileConfig& c : compiled_configs())
    if (variant_precision(c.variant) == Precision::Fp32) fp32_accurate.push_back(c);
  const std::size_t expect = configs_for(ws[0].workload, fp32_accurate).size() +
                             configs_for(ws[1].workload, fp32_accurate).size();
  ASSERT_EQ(plan.pairs.size(), expect);
  ASSERT_GT(expect, 0u);
  for (const PlannedPair& p : plan.pairs) EXPECT_EQ(variant_precision(p.config.variant), Precision::Fp32) << p.config.name();
  // Grouped by workload, each pair's config of the workload's d.
  for (std::size_t i = 0; i < plan.pairs.size(); ++i) {
    EXPECT_EQ(plan.pairs[i].config.d, ws[plan.pairs[i].workload].workload.d);
    if (i > 0) {
      EXPECT_LE(plan.pairs[i - 1].workload, plan.pairs[i].workload);
    }
  }
}

// --precision tf32 plans mma_1xtf32 (and wgmma_1xtf32) too; fp32 (the default) never does, in either strategy.
TEST(Plan, PrecisionTf32AddsTheTf32Configs) {
  const std::vector<NamedWorkload> ws = {{"t", {10, 2048, 64, false, 0}}};
  PlanOptions tf32;
  tf32.precision = Precision::Tf32;
  const TunePlan strict = make_plan(ws, compiled_configs(), {}), loose = make_plan(ws, compiled_configs(), tf32);
  EXPECT_EQ(loose.pairs.size(), configs_for(ws[0].workload, compiled_configs()).size());
  std::size_t tf32_pairs = 0;
  for (const PlannedPair& p : loose.pairs) tf32_pairs += variant_precision(p.config.variant) == Precision::Tf32;
  EXPECT_GT(tf32_pairs, 0u);
  EXPECT_EQ(strict.pairs.size() + tf32_pairs, loose.pairs.size());

  const model::GpuSpec gpu = model::find_gpu_spec("h200", FLASHTUNE_TEST_GPU_DIR);
  PlanOptions top;
  top.strategy = TuneStrategy::Model;
  top.top_k = 1000;  // every config the model ranks
  top.gpu = &gpu;
  for (const PlannedPair& p : make_plan(ws, compiled_configs(), top).pairs)
    EXPECT_EQ(variant_precision(p.config.variant), Precision::Fp32) << p.config.name();
}

TEST(Plan, AWorkloadNothingImplementsIsNamed) {
  try {
    make_plan({{"t99", {1, 128, 48, false, 0}}}, compiled_configs(), {});
    FAIL() << "no error";
  } catch (const PlanError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("t99: no compiled config implements d=48 (compiled d: ", 0), 0u)
        << e.what();
  }
  EXPECT_THROW(parse_strategy("random"), PlanError);
  EXPECT_EQ(parse_strategy("model"), TuneStrategy::Model);
}

TEST(Plan, ModelStrategyMeasuresTheTopKPredicted) {
  const model::GpuSpec gpu = model::find_gpu_spec("h200", FLASHTUNE_TEST_GPU_DIR);
  PlanOptions o;
  o.strategy = TuneStrategy::Model;
  o.top_k = 3;
  o.gpu = &gpu;
  const int d_first = compiled_head_dims().front(), d_last = compiled_head_dims().back();  // fp32
  const std::vector<NamedWorkload> ws = {{"t10", {10, 2048, d_first, false, 0}}, {"t11", {13600, 128, d_last, false, 0}}};
  const TunePlan plan = make_plan(ws, compiled_configs(), o);
  for (std::size_t wi = 0; wi < ws.size(); ++wi) {
    std::vector<double> times;
    for (const PlannedPair& p : plan.pairs)
      if (p.workload == wi) times.push_back(p.predicted_ms);
    // The fp32 plan's candidates: the TF32-only variants are left out.
    std::size_t avail = 0;
    for (const TileConfig& c : configs_for(ws[wi].workload, compiled_configs())) avail += precision_admits(Precision::Fp32, c.variant);
    EXPECT_EQ(times.size(), std::min<std::size_t>(3, avail));
    for (std::size_t i = 1; i < times.size(); ++i) EXPECT_LE(times[i - 1], times[i]);
    for (double t : times) EXPECT_GT(t, 0);
  }
  o.top_k = 0;
  EXPECT_THROW(make_plan(ws, compiled_configs(), o), PlanError);
}


// ---- progress ---------------------------------------------------------------------------------

TEST(Progress, LineShowsDoneTotalCurrentElapsedEta) {
  EXPECT_EQ(format_duration(45), "45s");
  EXPECT_EQ(format_duration(187), "3m07s");
  EXPECT_EQ(format_duration(3725), "1h02m");
  EXPECT_DOUBLE_EQ(estimate_remaining_s(10, 40, 20.0), 60.0);
  EXPECT_LT(estimate_remaining_s(0, 40, 5.0), 0);
  EXPECT_EQ(format_progress_line(12, 3000, "t10 row_reg/d64/br64xbc32/plain", 83, 725),
            "[  12/3000] t10 row_reg/d64/br64xbc32/plain  elapsed 1m23s  eta 12m05s");
  EXPECT_EQ(format_progress_line(0, 5, "x", 1, -1), "[0/5] x  elapsed 1s  eta ?");
}

// ---- export -----------------------------------------------------------------------------------

std::vector<std::string> csv_split(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char ch = line[i];
    if (quoted) {
      if (ch == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        out.back() += '"';
        ++i;
      } else if (ch == '"') {
        quoted = false;
      } else {
        out.back() += ch;
      }
    } else if (ch == '"') {
      quoted = true;
    } else if (ch == ',') {
      out.emplace_back();
    } else {
      out.back() += ch;
    }
  }
  return out;
}

TEST(Export, CsvHasOneRowPerMeasurementAndCounterColumns) {
  const Profile p = sample_profile();
  std::istringstream in(profile_to_csv(p));
  std::string line;
  std::getline(in, line);
  const auto header = csv_split(line);
  auto col = [&](const std::string& name) {
    for (std::size_t i = 0; i < header.size(); ++i)
      if (header[i] == name) return i;
    ADD_FAILURE() << "no column " << name;
    return std::size_t(0);
  };
  std::vector<std::vector<std::string>> rows;
  while (std::getline(in, line)) rows.push_back(csv_split(line));
  ASSERT_EQ(rows.size(), p.measurements.size());
  for (const auto& r : rows) EXPECT_EQ(r.size(), header.size());
  EXPECT_EQ(rows[0][col("config")], "regtile_2d/d64/br32xbc64/swizzled");
  EXPECT_EQ(rows[0][col("Br")], "32");
  EXPECT_EQ(rows[0][col("median_ms")], "0.35");
  EXPECT_EQ(rows[0][col("best")], "1");
  EXPECT_EQ(rows[0][col("dram__bytes_read.sum")], "120000000");
  EXPECT_EQ(rows[2][col("status")], "wrong-result");
  EXPECT_EQ(rows[2][col("reason")], "rel_l2 0.3 (tolerance 0.0001), 0 non-finite");  // quoted: has commas
  EXPECT_EQ(rows[2][col("median_ms")], "");
  EXPECT_EQ(rows[3][col("causal")], "1");
}

TEST(Export, T4HasWhatTheResultsSchemaRequires) {
  const Profile p = sample_profile();
  const auto doc = profile_to_t4(p);
  EXPECT_EQ(doc["schema_version"], "1.0.0");
  ASSERT_EQ(doc["results"].size(), p.measurements.size());
  const std::set<std::string> allowed = {"timeout", "compile", "runtime", "correctness", "constraints", "correct"};
  for (const auto& r : doc["results"]) {
    for (const char* k : {"configuration", "times", "invalidity", "correctness"}) EXPECT_TRUE(r.contains(k)) << k;
    EXPECT_TRUE(allowed.count(r["invalidity"].get<std::string>()));
    EXPECT_TRUE(r["times"]["runtimes"].is_array());
    for (const auto& m : r["measurements"]) {
      EXPECT_TRUE(m["name"].is_string());
      EXPECT_TRUE(m["unit"].is_string());
    }
  }
  const auto& first = doc["results"][0];
  EXPECT_EQ(first["invalidity"], "correct");
  EXPECT_EQ(first["correctness"], 1);
  EXPECT_EQ(first["configuration"]["variant"], "regtile_2d");
  EXPECT_EQ(first["configuration"]["Bc"], 64);
  EXPECT_EQ(first["configuration"]["N"], 2048);
  EXPECT_EQ(first["times"]["runtimes"].size(), 3u);
  EXPECT_EQ(first["measurements"][0]["name"], "time");
  EXPECT_DOUBLE_EQ(first["measurements"][0]["value"].get<double>(), 0.35);
  EXPECT_EQ(doc["results"][2]["invalidity"], "correctness");
  EXPECT_EQ(doc["results"][2]["correctness"], 0);
  EXPECT_EQ(doc["results"][3]["invalidity"], "constraints");
}

}  // namespace
}  // namespace flashtune
