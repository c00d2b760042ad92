// `flashtune tune` and `flashtune export` from the outside: bad input answered in one line with
// its exit code before any CUDA call, "needs a CUDA GPU" without one, export of a profile to CSV
// and T4. GPU cases skip without a device.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli_test_support.h"
#include "gpu_test_support.h"
#include "kernels/traits/variants.h"
#include "profile/profile.h"

namespace flashtune {
namespace {

using testing_support::run_flashtune;

struct TempDir {
  TempDir() {
    path = std::filesystem::temp_directory_path() / ("flashtune_cli_tune_" + std::to_string(::getpid()));
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
  std::filesystem::path path;
};

std::size_t lines(const std::string& s) {
  std::size_t n = 0;
  for (char ch : s) n += ch == '\n';
  return n;
}

TEST(CliTune, UnknownWorkloadFileIsOneLine) {
  const auto r = run_flashtune("tune --workloads /nonexistent/w.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.output, "flashtune tune: unknown workload file /nonexistent/w.json\n");
}

TEST(CliTune, AWorkloadNoConfigImplementsIsNamed) {
  const auto r = run_flashtune("tune --B 1 --N 128 --d 48 --name t99");
  EXPECT_EQ(r.exit_code, 4);
  EXPECT_EQ(r.output.rfind("flashtune tune: t99: no compiled config implements d=48 (compiled d: ", 0), 0u) << r.output;
  EXPECT_EQ(lines(r.output), 1u) << r.output;
}

TEST(CliTune, BadOptionsAreUsageErrors) {
  EXPECT_EQ(run_flashtune("tune").exit_code, 2);
  EXPECT_EQ(run_flashtune("tune --B 1 --N 128").exit_code, 2);
  EXPECT_EQ(run_flashtune("tune --B 1 --N 128 --d 64 --strategy model").exit_code, 2);
  EXPECT_EQ(run_flashtune("tune --B 1 --N 128 --d 64 --strategy fastest").exit_code, 2);
  EXPECT_EQ(run_flashtune("tune --B 1 --N 128 --d 64 --devices 3").exit_code, 2);
  EXPECT_EQ(run_flashtune("tune --B 1 --N 128 --d 64 --time-cap 0").exit_code, 2);
}

TEST(CliTune, NoGpuSaysSoWithExit3) {
  const std::string why = testing_support::no_gpu_reason();
  if (why.empty()) GTEST_SKIP() << "a CUDA device is present";
  const int d = compiled_configs().front().d;
  const auto r = run_flashtune("tune --B 1 --N 128 --d " + std::to_string(d));
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.output.rfind("flashtune tune needs a CUDA GPU: ", 0), 0u) << r.output;
  EXPECT_EQ(lines(r.output), 1u) << r.output;
}

TEST(CliExport, CsvAndT4OfAProfile) {
  TempDir dir;
  Profile p;
  p.gpu.name = "NVIDIA H200";
  p.gpu.spec = "nvidia-h200";
  p.workloads = {{"t10", {10, 2048, 64, false, 0}}};
  Measurement m;
  m.workload = "t10";
  m.config = "row_reg/d64/br64xbc32/plain";
  m.timing = TimingSummary{};
  m.timing->median_ms = 0.7;
  m.timing->samples_ms = {0.7, 0.71};
  m.counters_status = "unavailable: disabled by --no-counters";
  p.measurements = {m};
  write_profile_atomic(dir.file("p.json"), p);

  const auto csv = run_flashtune("export --profile '" + dir.file("p.json") + "' --format csv");
  EXPECT_EQ(csv.exit_code, 0) << csv.output;
  EXPECT_EQ(csv.output.rfind("gpu,workload,B,N,d,causal,dtype,kv_len,kv_group,config,", 0), 0u) << csv.output;
  EXPECT_NE(csv.output.find("\nnvidia-h200,t10,10,2048,64,0,fp32,2048,1,row_reg/d64/br64xbc32/plain,row_reg,64,32,plain,0,0,ok,"),
            std::string::npos)
      << csv.output;

  const auto t4 = run_flashtune("export --profile '" + dir.file("p.json") + "' --format t4 --out '" +
                                dir.file("t4.json") + "'");
  EXPECT_EQ(t4.exit_code, 0) << t4.output;
  std::ifstream in(dir.file("t4.json"));
  const auto doc = nlohmann::json::parse(in);
  EXPECT_EQ(doc["schema_version"], "1.0.0");
  ASSERT_EQ(doc["results"].size(), 1u);
  EXPECT_EQ(doc["results"][0]["invalidity"], "correct");
  EXPECT_EQ(doc["results"][0]["times"]["runtimes"].size(), 2u);

  const auto bad = run_flashtune("export --profile '" + dir.file("p.json") + "' --format xml");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.output, "flashtune export: unknown format 'xml' (known: csv, t4)\n");
  const auto missing = run_flashtune("export --profile /nonexistent/p.json --format csv");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_EQ(missing.output, "flashtune export: /nonexistent/p.json: cannot open profile\n");
}

}  // namespace
}  // namespace flashtune
