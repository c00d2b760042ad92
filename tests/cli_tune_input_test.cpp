// `flashtune tune` bad input through the binary, the cases of docs/tuning.md's table that
// cli_tune_test.cpp does not drive: a malformed workload file, a workload file with a head
// dimension nothing implements, one name with two sets of dimensions across files (all answered
// before any CUDA call, so on any machine); and on a GPU: a profile of another GPU, a corrupt
// profile (refused and left as it was), and a tune with --no-counters recording timings only.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli_test_support.h"
#include "gpu_test_support.h"
#include "kernels/traits/variants.h"
#include "profile/profile.h"
#include "test_temp_dir.h"

namespace flashtune {
namespace {

using testing_support::line_count;
using testing_support::run_flashtune;
using testing_support::TempDir;

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string workload_file(const std::string& name, long long N, int d) {
  return R"({"schema_version": 1, "workloads": [{"name": ")" + name + R"(", "B": 2, "N": )" + std::to_string(N) +
         R"(, "d": )" + std::to_string(d) + R"(, "causal": false}]})";
}

TEST(CliTuneInput, MalformedWorkloadFileNamesTheField) {
  TempDir dir("cli_tune_input");
  const std::string f = dir.write("w.json", R"({"schema_version": 1, "workloads": [{"name": "a", "B": 2, "N": 0, "d": 64}]})");
  const auto r = run_flashtune("tune --workloads '" + f + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(line_count(r.output), 1u) << r.output;
  EXPECT_EQ(r.output.rfind("flashtune tune: " + f + ": field 'workloads[0].N' must be an integer in [1, ", 0), 0u)
      << r.output;

  const std::string junk = dir.write("junk.json", "{ not json");
  const auto j = run_flashtune("tune --workloads '" + junk + "'");
  EXPECT_EQ(j.exit_code, 2);
  EXPECT_EQ(line_count(j.output), 1u) << j.output;
  EXPECT_EQ(j.output.rfind("flashtune tune: " + junk + ": malformed JSON: ", 0), 0u) << j.output;
}

TEST(CliTuneInput, AWorkloadFileWithAHeadDimensionNothingImplements) {
  TempDir dir("cli_tune_input");
  const std::string f = dir.write("w.json", workload_file("odd_d", 128, 48));
  const auto r = run_flashtune("tune --workloads '" + f + "'");
  EXPECT_EQ(r.exit_code, 4);
  EXPECT_EQ(line_count(r.output), 1u) << r.output;
  EXPECT_EQ(r.output.rfind("flashtune tune: odd_d: no compiled config implements d=48 (compiled d: ", 0), 0u)
      << r.output;
}

TEST(CliTuneInput, OneNameWithTwoSetsOfDimensionsIsRefused) {
  TempDir dir("cli_tune_input");
  const int d = compiled_configs().front().d;
  const std::string a = dir.write("a.json", workload_file("w", 128, d));
  const std::string b = dir.write("b.json", workload_file("w", 256, d));
  const auto r = run_flashtune("tune --workloads '" + a + "' '" + b + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(line_count(r.output), 1u) << r.output;
  EXPECT_NE(r.output.find("workload 'w' is B=2 N=128"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("B=2 N=256"), std::string::npos) << r.output;
}

// ---- on a GPU ---------------------------------------------------------------------------------

std::string small_workload_args() { return "--B 1 --N 128 --d " + std::to_string(compiled_configs().front().d); }

TEST(CliTuneInput, AProfileOfAnotherGpuIsRefusedOnAGpu) {
  const std::string no_gpu = testing_support::no_gpu_reason();
  if (!no_gpu.empty()) GTEST_SKIP() << no_gpu;
  TempDir dir("cli_tune_input");
  Profile other;
  other.gpu.name = "Fake GPU";
  other.gpu.spec = "fake-gpu";
  write_profile_atomic(dir.file("p.json"), other);
  const std::string before = read_text(dir.file("p.json"));
  const auto r = run_flashtune("tune " + small_workload_args() + " --profile '" + dir.file("p.json") + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(line_count(r.output), 1u) << r.output;
  EXPECT_EQ(r.output.rfind("flashtune tune: " + dir.file("p.json") + " was measured on Fake GPU (fake-gpu), this GPU is ",
                           0),
            0u)
      << r.output;
  EXPECT_NE(r.output.find(": give another --profile"), std::string::npos) << r.output;
  EXPECT_EQ(read_text(dir.file("p.json")), before);
}

TEST(CliTuneInput, ACorruptProfileIsRefusedAndLeftAsItWasOnAGpu) {
  const std::string no_gpu = testing_support::no_gpu_reason();
  if (!no_gpu.empty()) GTEST_SKIP() << no_gpu;
  TempDir dir("cli_tune_input");
  const std::string p = dir.write("p.json", "{ half a profile");
  const auto r = run_flashtune("tune " + small_workload_args() + " --profile '" + p + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(line_count(r.output), 1u) << r.output;
  EXPECT_NE(r.output.find("(fix or move it; tune resumes from it)"), std::string::npos) << r.output;
  EXPECT_EQ(read_text(p), "{ half a profile");
}

TEST(CliTuneInput, WithoutCountersTheTuneRecordsTimingsOnlyOnAGpu) {
  const std::string no_gpu = testing_support::no_gpu_reason();
  if (!no_gpu.empty()) GTEST_SKIP() << no_gpu;
  TempDir dir("cli_tune_input");
  const auto r = run_flashtune("tune " + small_workload_args() + " --name tiny --no-counters --json --time-cap 0.05 " +
                               "--warmup-ms 5 --profile '" + dir.file("p.json") + "'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // stderr (progress, unbuffered) comes first; the JSON summary is stdout's only text.
  const std::size_t json_start = r.output.find("{\n");
  ASSERT_NE(json_start, std::string::npos) << r.output;
  const auto j = nlohmann::json::parse(r.output.substr(json_start));
  EXPECT_EQ(j["counters"], "unavailable: disabled by --no-counters");
  EXPECT_TRUE(j["complete"].get<bool>());
  const Profile p = load_profile(dir.file("p.json"));
  ASSERT_FALSE(p.measurements.empty());
  for (const Measurement& m : p.measurements) {
    EXPECT_EQ(m.counters_status, m.status == status::kOk ? "unavailable: disabled by --no-counters"
                                                         : "unavailable: config not timed")
        << m.config;
    EXPECT_TRUE(m.counters.empty()) << m.config;
    if (m.status == status::kOk) {
      EXPECT_TRUE(m.timing.has_value()) << m.config;
    }
  }
  EXPECT_EQ(p.best.count("tiny"), 1u);
}


TEST(CliTuneInput, UnknownPrecisionIsNamed) {
  const auto r = run_flashtune("tune --B 2 --N 128 --d 64 --precision fp16");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(r.output, "flashtune tune: unknown precision 'fp16' (known: fp32, tf32)\n");
}

}  // namespace
}  // namespace flashtune
