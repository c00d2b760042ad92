// The model's view of a profile (profile/model_profile.h, what predict --profile, the dispatcher,
// plot and check-counters read): registers per config from measurements[i].resources,
// coefficients by name and range, the GPU; through the one profile reader, so a profile the other
// commands refuse is refused here too; one-line errors that name the file and the field.
#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "profile/model_profile.h"

namespace flashtune {
namespace {

std::string write_temp(const std::string& name, const std::string& text) {
  // The pid in the name: ctest runs each test in its own process, several at once, and two
  // writing the same file read each other's profile.
  const std::string path = testing::TempDir() + "model_profile_test_" + std::to_string(::getpid()) + "_" + name;
  std::ofstream(path) << text;
  return path;
}

std::string load_error(const std::string& text) {
  try {
    load_model_profile(write_temp("bad.json", text));
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

// A small profile as the tuner writes it (docs/profile-schema.md).
const char* kProfile = R"({
  "schema_version": 1, "kind": "flashtune-profile",
  "gpu": {"name": "NVIDIA H200", "spec": "nvidia-h200", "sm_count": 132},
  "build": {"kernel_set": "full"},
  "workloads": [{"name": "t10", "B": 10, "N": 2048, "d": 64, "causal": false},
                {"name": "t22", "B": 500, "N": 2048, "d": 64, "causal": false}],
  "measurements": [
    {"workload": "t10", "config": "row_reg/d64/br128xbc32/plain", "status": "ok", "timing": {"median_ms": 0.52},
     "resources": {"registers": 208, "static_smem": 0, "dynamic_smem": 36864, "local_bytes": 0, "threads": 128}},
    {"workload": "t22", "config": "row_reg/d64/br128xbc32/plain", "status": "ok", "timing": {"median_ms": 21.0},
     "resources": {"registers": 208, "static_smem": 0, "dynamic_smem": 36864, "local_bytes": 0, "threads": 128}},
    {"workload": "t10", "config": "regtile_2d/d64/br64xbc64/padded", "status": "ok", "timing": {"median_ms": 0.41},
     "resources": {"registers": 128, "static_smem": 0, "dynamic_smem": 70144, "local_bytes": 0, "threads": 256}},
    {"workload": "t10", "config": "row_smem/d64/br128xbc128/plain", "status": "compile",
     "reason": "not compiled into this build"}],
  "coefficients": {"fp32_efficiency": 0.74, "latency_warps": 10}
})";

nlohmann::json profile_json() { return nlohmann::json::parse(kProfile); }

TEST(ModelProfile, ReadsRegistersFromMeasurementsAndCoefficientsFromTheTop) {
  const model::ModelProfile p = load_model_profile(write_temp("agreed.json", kProfile));
  EXPECT_EQ(p.registers_for("row_reg/d64/br128xbc32/plain"), 208);
  EXPECT_EQ(p.registers_for("regtile_2d/d64/br64xbc64/padded"), 128);
  EXPECT_EQ(p.registers_for("row_smem/d64/br128xbc128/plain"), 0);  // no resources: not compiled
  EXPECT_EQ(p.registers.size(), 2u);
  EXPECT_DOUBLE_EQ(p.coefficients.fp32_efficiency, 0.74);
  EXPECT_DOUBLE_EQ(p.coefficients.latency_warps, 10);
  EXPECT_DOUBLE_EQ(p.coefficients.sfu_efficiency, model::Coefficients{}.sfu_efficiency);  // untouched default
  EXPECT_EQ(p.fitted_coefficients, 2);
  EXPECT_EQ(p.gpu_spec, "nvidia-h200");
  EXPECT_EQ(p.gpu_name, "NVIDIA H200");
}

TEST(ModelProfile, CoefficientsWrittenAreReadBack) {
  Profile p = load_profile(write_temp("write.json", kProfile));
  model::Coefficients k;
  k.fp32_efficiency = 0.61;
  set_coefficients(p, k);
  const model::ModelProfile m = model_profile_of(p, "mem.json");
  EXPECT_DOUBLE_EQ(m.coefficients.fp32_efficiency, 0.61);
  EXPECT_EQ(m.fitted_coefficients, static_cast<int>(model::coefficient_table().size()));
}

TEST(ModelProfile, RefusesConflictingRegistersAndBadCoefficients) {
  auto j = profile_json();
  j["measurements"][1]["resources"]["registers"] = 168;
  const std::string conflict = load_error(j.dump());
  EXPECT_NE(conflict.find("'row_reg/d64/br128xbc32/plain' has 208 and 168 registers"), std::string::npos) << conflict;
  EXPECT_NE(conflict.find("measurements[1].resources.registers"), std::string::npos) << conflict;

  j = profile_json();
  j["measurements"][0]["resources"]["registers"] = 300;
  const std::string range = load_error(j.dump());
  EXPECT_NE(range.find("measurements[0].resources.registers"), std::string::npos) << range;

  j = profile_json();
  j["coefficients"] = {{"fp32_eff", 0.5}};
  EXPECT_NE(load_error(j.dump()).find("unknown coefficient 'fp32_eff'"), std::string::npos);
  j["coefficients"] = {{"fp32_efficiency", 7}};
  EXPECT_NE(load_error(j.dump()).find("coefficient 'fp32_efficiency' = 7 outside"), std::string::npos);
  EXPECT_NE(load_error("{not json").find("malformed JSON"), std::string::npos);
}

// The model reads what every other command reads: a profile they refuse is refused here too (a
// hand-written fragment with coefficients alone is not a profile).
TEST(ModelProfile, ReadsThroughTheOneProfileReader) {
  auto j = profile_json();
  j["measurements"][0]["timing"]["median_ms"] = -1.5;
  EXPECT_NE(load_error(j.dump()).find("measurements[0].timing.median_ms"), std::string::npos);
  EXPECT_NE(load_error(R"({"coefficients": {"fp32_efficiency": 0.5}})").find("schema_version"), std::string::npos);
}

TEST(ModelProfile, NamesTheMissingFile) {
  try {
    load_model_profile("/nonexistent/profile.json");
    FAIL() << "no error for a missing file";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "/nonexistent/profile.json: cannot open profile");
  }
}

}  // namespace
}  // namespace flashtune
