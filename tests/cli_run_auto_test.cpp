// `flashtune run --auto` from the outside: the dispatcher's options are checked before any CUDA
// call (exit 2 with one line, GPU or not), a machine without GPU gets the usual "needs a CUDA GPU"
// (exit 3), and on a GPU the chosen config runs, passes --check and is reported with its reason.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

#include "cli_test_support.h"
#include "gpu_test_support.h"
#include "tuner/config_select.h"

namespace flashtune {
namespace {

using testing_support::run_flashtune;

std::string workload_args() { return "--B 2 --N 200 --d " + std::to_string(compiled_head_dims().front()); }

void expect_one_line_error(const testing_support::CommandResult& r, int code, const std::string& line) {
  EXPECT_EQ(r.exit_code, code) << r.output;
  EXPECT_EQ(r.output, line + "\n");
}

TEST(CliRunAuto, PinnedConfigIsAUsageError) {
  expect_one_line_error(run_flashtune("run --auto --variant row_reg " + workload_args()), 2,
                        "flashtune run: --auto picks the config itself; drop --variant");
  expect_one_line_error(run_flashtune("run --auto --Bc 32 " + workload_args()), 2,
                        "flashtune run: --auto picks the config itself; drop --Bc");
  expect_one_line_error(run_flashtune("run --auto --all-configs " + workload_args()), 2,
                        "flashtune run: --auto picks the config itself; drop --all-configs");
}

TEST(CliRunAuto, ProfileNeedsAuto) {
  expect_one_line_error(run_flashtune("run --profile p.json " + workload_args()), 2,
                        "flashtune run: --profile goes with --auto");
}

TEST(CliRunAuto, MissingProfileIsAUsageErrorEvenWithoutGpu) {
  expect_one_line_error(run_flashtune("run --auto --profile /nonexistent/p.json " + workload_args()), 2,
                        "flashtune run: /nonexistent/p.json: cannot open profile");
}

TEST(CliRunAuto, UnsupportedHeadDim) {
  expect_one_line_error(run_flashtune("run --auto --B 1 --N 64 --d 48"), 2,
                        "flashtune run: unsupported d=48 (compiled: " + join_ints(compiled_head_dims()) + ")");
}

TEST(CliRunAuto, NeedsGpu) {
  if (testing_support::no_gpu_reason().empty()) GTEST_SKIP() << "a CUDA device is present";
  const auto r = run_flashtune("run --auto " + workload_args());
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_EQ(r.output.rfind("flashtune run needs a CUDA GPU: ", 0), 0u) << r.output;
  EXPECT_EQ(r.output.find('\n'), r.output.size() - 1) << r.output;
}

TEST(CliRunAutoGpu, ChosenConfigRunsAndPassesCheck) {
  const std::string why = testing_support::no_gpu_reason();
  if (!why.empty()) GTEST_SKIP() << "no usable GPU: " << why;
  const auto r = run_flashtune("run --auto --check --no-time --json " + workload_args());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json doc = nlohmann::json::parse(r.output);
  const nlohmann::json& choice = doc.at("choice");
  ASSERT_EQ(doc.at("results").size(), 1u);
  EXPECT_EQ(doc["results"][0]["config"], choice.at("config"));
  EXPECT_EQ(doc["results"][0]["check"]["pass"], true);
  const std::string source = choice.at("source");
  EXPECT_TRUE(source == "profile-best" || source == "model") << source;
  if (source == "model") {
    EXPECT_EQ(choice.at("rank"), 1);
    EXPECT_GT(choice.at("predicted_ms").get<double>(), 0.0);
    EXPECT_EQ(choice.at("why").get<std::string>().rfind("model rank 1 of ", 0), 0u);
  }
  // The text form names the config and why.
  const auto text = run_flashtune("run --auto --no-time " + workload_args());
  ASSERT_EQ(text.exit_code, 0) << text.output;
  EXPECT_NE(text.output.find("config    " + choice.at("config").get<std::string>()), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("chosen    " + choice.at("why").get<std::string>()), std::string::npos) << text.output;
}

}  // namespace
}  // namespace flashtune
