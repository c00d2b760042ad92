// `flashtune fit` from the outside (no GPU): it writes coefficients the model then reads back, and
// refuses a profile it cannot fit with one line and exit 2.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_test_support.h"
#include "model/profile.h"
#include "profile/model_profile.h"
#include "test_temp_dir.h"

namespace flashtune {
namespace {

using testing_support::run_flashtune;
using testing_support::TempDir;

std::string data(const std::string& name) { return std::string(FLASHTUNE_TEST_DATA_DIR) + "/" + name; }

TEST(CliFit, WritesCoefficientsTheModelReadsBack) {
  TempDir dir("cli_fit");
  const std::string profile = dir.file("p.json");
  std::filesystem::copy_file(data("fixture_profile.json"), profile);
  const auto r = run_flashtune("fit --profile '" + profile + "' --cv workload --free fp32_efficiency,launch_overhead_us --json --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json report = nlohmann::json::parse(r.output);
  EXPECT_EQ(report["fit"]["free"].size(), 2u);
  EXPECT_LE(report["fit"]["rms_log_end"].get<double>(), report["fit"]["rms_log_start"].get<double>());
  ASSERT_GE(report["accuracy"].size(), 4u);  // spec only, in-sample, held out, roofline, seed
  // The fitted value is in the profile, and the model's loader takes it.
  const model::ModelProfile mp = load_model_profile(profile);
  EXPECT_DOUBLE_EQ(mp.coefficients.fp32_efficiency, report["fit"]["coefficients"]["fp32_efficiency"].get<double>());
  std::ifstream in(profile);
  EXPECT_TRUE(nlohmann::json::parse(in).contains("fit"));
}

// The residuals name each point's set: the fitted points, then every --unseen profile's points
// predicted by the fitted coefficients (the per-config view behind the unseen regret rows).
TEST(CliFit, ResidualsHoldTheUnseenPoints) {
  TempDir dir("cli_fit_residuals");
  const std::string csv = dir.file("r.csv");
  const std::string fixture = data("fixture_profile.json");
  const auto r = run_flashtune("fit --profile '" + fixture + "' --unseen '" + fixture + "' --no-write --cv none --quiet" +
                               " --free fp32_efficiency --residuals '" + csv + "'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream in(csv);
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  EXPECT_EQ(line, "workload,config,variant,measured_ms,predicted_ms,held_out_ms,set");
  std::map<std::string, std::string> fitted;  // workload,config -> predicted
  std::size_t fit_rows = 0, unseen_rows = 0;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string x; std::getline(ss, x, ',');) f.push_back(x);
    ASSERT_EQ(f.size(), 7u) << line;
    const std::string key = f[0] + "," + f[1];
    if (f[6] == "fit") {
      ++fit_rows;
      fitted[key] = f[4];
    } else {
      ASSERT_EQ(f[6], "unseen") << line;
      ++unseen_rows;
      EXPECT_EQ(f[4], f[5]) << line;  // never fitted: one prediction
      // The same profile scored as unseen: the same coefficients give the same times.
      ASSERT_TRUE(fitted.count(key)) << line;
      EXPECT_EQ(f[4], fitted[key]) << line;
    }
  }
  EXPECT_GT(fit_rows, 0u);
  EXPECT_EQ(unseen_rows, fit_rows);
}

TEST(CliFit, TooFewMeasurementsSaysHowManyAreNeeded) {
  // 9 ok measurements against 60 needed for the 12 default coefficients informed by SIMT-only data.
  const auto r = run_flashtune("fit --profile '" + data("dispatch_profile.json") + "' --no-write --quiet");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("9 ok measurements, at least 60 needed"), std::string::npos) << r.output;
  EXPECT_EQ(testing_support::line_count(r.output), 1u) << r.output;
}

// The decode side's two inputs: instruction counts whose line is not a decode config are refused
// with the file and line; a --residuals path that is one of the sweeps is refused before anything
// is read, and the sweep is left as it was.
TEST(CliFit, DecodeInputsAreRefusedWithTheirFileAndLine) {
  TempDir dir("cli_fit_decode");
  const std::string counts = dir.file("counts.jsonl");
  std::ofstream(counts) << R"({"config": "mma16/d64/br64xbc64/swizzled/bf16/s2", "batch": 8, "q_heads": 32, "kv_heads": 32, "nq": 1, "keys": 1024, "splits": 1, "inst_executed": 5})"
                        << "\n";
  auto r = run_flashtune("fit --decode-instructions '" + counts + "'");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(counts + ":1"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("is not a decode config"), std::string::npos) << r.output;
  EXPECT_EQ(testing_support::line_count(r.output), 1u) << r.output;

  const std::string sweep = dir.file("sweep.jsonl");
  const std::string line =
      R"({"batch": 1, "q_heads": 32, "kv_heads": 8, "nq": 1, "keys": 4096, "d": 128, "config": "decode/d128/br16xbc32/swizzled/bf16/s3", "splits": 4, "median_ms": 0.02})";
  std::ofstream(sweep) << line << "\n";
  r = run_flashtune("fit --decode '" + sweep + "' --residuals '" + sweep + "' --quiet");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--residuals"), std::string::npos) << r.output;
  std::ifstream in(sweep);
  std::string back;
  std::getline(in, back);
  EXPECT_EQ(back, line);
  // And where it may write, one row per timing after the header.
  const std::string csv = dir.file("r.csv");
  r = run_flashtune("fit --decode '" + sweep + "' --residuals '" + csv + "' --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream rows(csv);
  std::string header, row, none;
  ASSERT_TRUE(std::getline(rows, header));
  ASSERT_TRUE(std::getline(rows, row));
  EXPECT_FALSE(std::getline(rows, none));
  EXPECT_EQ(row.rfind("sweep.jsonl:1,1,32,8,1,4096,128,bf16,decode/d128/br16xbc32/swizzled/bf16/s3,4,", 0), 0u) << row;
}

// `--json` on the decode side: the score of the sweeps (and of the fitted coefficients with --free),
// and the instruction fit's rows with its residuals, each one JSON document.
TEST(CliFit, DecodeReportsAsJson) {
  const std::string results = std::string(FLASHTUNE_SOURCE_DIR) + "/docs/results/";
  auto r = run_flashtune("fit --decode '" + results + "h100-decode-sweep-bf16-write-combine1round.jsonl'" +
                         " --free combine_cycles --json --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json score = nlohmann::json::parse(r.output);
  EXPECT_EQ(score["score"]["timings"], 309);
  EXPECT_EQ(score["score"]["shapes"].size(), 15u);
  EXPECT_GT(score["score"]["mape"].get<double>(), 0.0);
  EXPECT_LE(score["fit"]["score"]["mape"].get<double>(), score["score"]["mape"].get<double>() + 1e-3);
  EXPECT_TRUE(score["fit"]["coefficients"].contains("combine_cycles"));
  r = run_flashtune("fit --decode-instructions '" + results + "h200-decode-instructions.jsonl' --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json counts = nlohmann::json::parse(r.output);
  EXPECT_EQ(counts["configs_fitted"], 6);
  EXPECT_EQ(counts["table"]["configs"].size(), 6u);
  EXPECT_EQ(counts["left_out"].size(), 2u);  // the two bf16 configs
}

TEST(CliFit, RefusesAnotherSchemaVersionAndUnknownNames) {
  TempDir dir("cli_fit_bad");
  const std::string v2 = dir.file("v2.json");
  std::ofstream(v2) << R"({"schema_version": 4, "kind": "flashtune-profile"})";
  auto r = run_flashtune("fit --profile '" + v2 + "' --no-write --quiet");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("schema_version"), std::string::npos) << r.output;
  r = run_flashtune("fit --profile '" + data("fixture_profile.json") + "' --no-write --quiet --free fp32_eff");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("unknown coefficient 'fp32_eff'"), std::string::npos) << r.output;
  r = run_flashtune("fit --profile '" + data("fixture_profile.json") + "' --no-write --quiet --cv sometimes");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  // --variants names variants; --with names a profile that must load (the fixture's GPU with itself
  // would put every pair in twice: refused naming the file).
  r = run_flashtune("fit --profile '" + data("fixture_profile.json") + "' --no-write --quiet --variants regtile,mma16");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--variants: unknown variant 'regtile'"), std::string::npos) << r.output;
  r = run_flashtune("fit --profile '" + data("fixture_profile.json") + "' --no-write --quiet --with '" +
                    dir.file("missing.json") + "'");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("missing.json"), std::string::npos) << r.output;
  r = run_flashtune("fit --profile '" + data("fixture_profile.json") + "' --no-write --quiet --cv none --with '" +
                    data("fixture_profile.json") + "'");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("is also in"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace flashtune
