// The flashtune binary against hostile use (issue 15), no GPU needed: no output over an input, a
// failed command writes nothing, each writer's fault (a path under /proc, `ulimit -f` mid-write)
// leaves the previous file intact with one line and a non-zero exit, stdout writes are checked,
// workload limits and option checks come before any GPU work, and predict says what it used.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli_test_support.h"
#include "test_temp_dir.h"

namespace {

using flashtune::testing_support::CommandResult;
using flashtune::testing_support::line_count;
using flashtune::testing_support::run_flashtune;
using flashtune::testing_support::TempDir;

std::string data(const std::string& name) { return std::string(FLASHTUNE_TEST_DATA_DIR) + "/" + name; }

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A copy of the fixture profile in `dir`; returns its path.
std::string fixture_copy(const TempDir& dir, const std::string& name = "p.json") {
  const std::string path = dir.file(name);
  std::filesystem::copy_file(data("fixture_profile.json"), path);
  return path;
}

// Runs a shell command line as written (its own redirections), stdout and what it sends to the pipe.
CommandResult run_shell(const std::string& cmd) {
  CommandResult r;
  FILE* pipe = popen(cmd.c_str(), "r");
  char buf[4096];
  std::size_t got = 0;
  while (pipe && (got = std::fread(buf, 1, sizeof buf, pipe)) > 0) r.output.append(buf, got);
  const int status = pipe ? pclose(pipe) : -1;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// Runs flashtune under `ulimit -f BLOCKS` (1 KiB blocks: far below what the writers write).
CommandResult run_with_file_limit(int blocks, const std::string& args) {
  return run_shell("bash -c \"ulimit -f " + std::to_string(blocks) + "; exec '" + FLASHTUNE_BINARY + "' " + args +
                   "\" 2>&1");
}

const char* kFastFit = " --cv none --free fp32_efficiency,launch_overhead_us --quiet";

// Names of the writers' temporaries ("p.json.flashtune-tmp.<host>.<pid>.<n>", profile/output_file.h)
// left in `folder`.
std::vector<std::string> temporaries_in(const std::string& folder) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(folder))
    if (e.path().filename().string().find(".flashtune-tmp.") != std::string::npos)
      names.push_back(e.path().filename().string());
  return names;
}

// ---- no output over an input; a failed command writes nothing ------------------------------

TEST(CliHardening, FitResidualsOverTheProfileIsRefusedAndTheProfileKept) {
  TempDir dir("h_fit_same");
  const std::string p = fixture_copy(dir);
  const std::string before = read_all(p);
  const auto r = run_flashtune("fit --profile '" + p + "' --residuals '" + dir.file("./p.json") + "'" + kFastFit);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("would overwrite the input --profile"), std::string::npos) << r.output;
  EXPECT_EQ(line_count(r.output), 1u) << r.output;
  EXPECT_EQ(read_all(p), before);
}

TEST(CliHardening, FitWithAnUnwritableResidualsPathLeavesTheProfileUnchanged) {
  TempDir dir("h_fit_resid");
  const std::string p = fixture_copy(dir);
  const std::string before = read_all(p);
  const auto r = run_flashtune("fit --profile '" + p + "' --residuals /nonexistent/dir/r.csv" + kFastFit);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("/nonexistent/dir/r.csv"), std::string::npos) << r.output;
  EXPECT_EQ(read_all(p), before) << "the coefficients were written although the command failed";
}

TEST(CliHardening, FitWritesCoefficientsAndResidualsTogether) {
  TempDir dir("h_fit_ok");
  const std::string p = fixture_copy(dir);
  const auto r = run_flashtune("fit --profile '" + p + "' --residuals '" + dir.file("r.csv") + "'" + kFastFit);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(read_all(dir.file("r.csv")).find('\n'), std::string::npos);
  EXPECT_NE(read_all(p).find("\"fit\""), std::string::npos);
}

TEST(CliHardening, FitNamesABadCrossProfileBeforeFittingAndPrintsNoNan) {
  auto r = run_flashtune("fit --profile '" + data("fixture_profile.json") + "' --no-write --cross /nonexistent.json" +
                         kFastFit);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(line_count(r.output), 1u) << r.output;
  r = run_flashtune("fit --profile '" + data("fixture_profile.json") + "' --no-write" + kFastFit);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("nan"), std::string::npos) << "the roofline's undefined Spearman: " << r.output;
}

// A workload name longer than the report's old 300-byte row buffers: every row keeps its line break.
TEST(CliHardening, FitReportRowsKeepTheirLineBreaksWhateverTheNames) {
  TempDir dir("h_fit_rows");
  std::string text = read_all(data("fixture_profile.json"));
  const std::string long_name = "n512_" + std::string(300, 'x');
  for (std::size_t at; (at = text.find("\"n512\"")) != std::string::npos;) text.replace(at, 6, "\"" + long_name + "\"");
  const std::string p = dir.write("p.json", text);
  const auto r = run_flashtune("fit --profile '" + p + "' --no-write --cv workload --free fp32_efficiency --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::istringstream lines(r.output);
  std::size_t rows = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.find(long_name) == std::string::npos) continue;
    ++rows;
    EXPECT_NE(line.find("pick "), std::string::npos) << "row cut short: " << line;
    EXPECT_EQ(line.find("rho", line.find("rho") + 1), std::string::npos) << "two rows on one line: " << line;
  }
  EXPECT_GE(rows, 1u) << r.output;
}

// fit --help said 9 coefficients where the fit frees 11: the count now comes from the fit's own list.
TEST(CliHardening, FitHelpCountsTheCoefficientsTheFitFrees) {
  const auto help = run_flashtune("fit --help");
  const std::size_t at = help.output.find("(default: the ");
  ASSERT_NE(at, std::string::npos) << help.output;
  const int said = std::stoi(help.output.substr(at + 14));
  const auto r = run_flashtune("fit --profile '" + data("../../profiles/nvidia-h200.json") +
                               "' --no-write --json --cv none --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.output.substr(0, 500);
  const std::size_t free_at = r.output.find("\"free\": [");
  ASSERT_NE(free_at, std::string::npos);
  const std::string list = r.output.substr(free_at, r.output.find(']', free_at) - free_at);
  EXPECT_EQ(said, static_cast<int>(std::count(list.begin(), list.end(), '"')) / 2 - 1) << list;
}

TEST(CliHardening, ExportOutOverTheProfileIsRefused) {
  TempDir dir("h_export_same");
  const std::string p = fixture_copy(dir);
  const std::string before = read_all(p);
  const auto r = run_flashtune("export --profile '" + p + "' --format csv --out '" + p + "'");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--out"), std::string::npos) << r.output;
  EXPECT_EQ(read_all(p), before);
}

TEST(CliHardening, ReportOverTheProfileIsRefused) {
  TempDir dir("h_report_same");
  const std::string p = fixture_copy(dir, "report.md");
  const std::string before = read_all(p);
  const auto r = run_flashtune("report --profile '" + p + "' --out '" + dir.file("") + "' --gpu-spec nvidia-h200");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("would overwrite the input"), std::string::npos) << r.output;
  EXPECT_EQ(read_all(p), before);
}

// ---- faults while writing: one test per writer ----------------------------------------------

TEST(CliHardening, ExportFaultsKeepThePreviousFile) {
  TempDir dir("h_export_fault");
  const std::string p = fixture_copy(dir);
  auto r = run_flashtune("export --profile '" + p + "' --format csv --out /proc/flashtune-export.csv");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(line_count(r.output), 1u) << r.output;
  const std::string out = dir.write("out.csv", "previous\n");
  r = run_with_file_limit(1, "export --profile '" + p + "' --format t4 --out '" + out + "'");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("out.csv"), std::string::npos) << r.output;
  EXPECT_EQ(line_count(r.output), 1u) << r.output;
  EXPECT_EQ(read_all(out), "previous\n");
}

TEST(CliHardening, FitFaultsKeepThePreviousProfile) {
  TempDir dir("h_fit_fault");
  const std::string p = fixture_copy(dir);
  const std::string before = read_all(p);
  const auto r = run_with_file_limit(4, "fit --profile '" + p + "'" + kFastFit);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("cannot write the coefficients"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("File too large"), std::string::npos) << r.output;
  // The fit's result is printed even though the profile could not take it.
  EXPECT_NE(r.output.find("accuracy (APE and regret"), std::string::npos) << r.output;
  EXPECT_EQ(read_all(p), before);
  EXPECT_TRUE(temporaries_in(dir.file("")).empty()) << "a temporary was left behind";
}

TEST(CliHardening, ReportFaultsKeepThePreviousReport) {
  if (!flashtune::testing_support::gnuplot_on_path()) GTEST_SKIP() << "gnuplot not installed";
  TempDir dir("h_report_fault");
  const std::string p = fixture_copy(dir);
  const auto r0 = run_flashtune("report --profile '" + p + "' --out /proc/flashtune-report --gpu-spec nvidia-h200");
  EXPECT_NE(r0.exit_code, 0) << r0.output;
  EXPECT_NE(r0.output.find("/proc/flashtune-report"), std::string::npos) << r0.output;
  EXPECT_EQ(line_count(r0.output), 1u) << r0.output;
  const std::string out = dir.file("out");
  std::filesystem::create_directories(out);
  const std::string md = out + "/report.md";
  std::ofstream(md) << "previous\n";
  const auto r = run_with_file_limit(1, "report --profile '" + p + "' --out '" + out + "' --gpu-spec nvidia-h200");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  // One line about the fault; a machine without gnuplot prints its own notice first.
  std::string fault = r.output;
  if (fault.rfind("gnuplot not found", 0) == 0) fault.erase(0, fault.find('\n') + 1);
  EXPECT_EQ(line_count(fault), 1u) << r.output;
  EXPECT_EQ(read_all(md), "previous\n");
  EXPECT_TRUE(temporaries_in(out).empty()) << "a temporary was left behind";
}

TEST(CliHardening, PlotFaultsLeaveNoHalfWrittenFile) {
  TempDir dir("h_plot_fault");
  const std::string p = fixture_copy(dir);
  const auto r0 = run_flashtune("plot --profile '" + p + "' --out /proc/flashtune-plots --gpu-spec nvidia-h200");
  EXPECT_EQ(r0.exit_code, 2) << r0.output;
  EXPECT_EQ(line_count(r0.output), 1u) << r0.output;
  const std::string out = dir.file("plots");
  std::filesystem::create_directories(out);
  // The first plot's SVG is larger than the limit: gnuplot itself cuts it short (and exits 0).
  std::ofstream(out + "/accuracy.svg") << "previous\n";
  const auto r = run_with_file_limit(1, "plot --profile '" + p + "' --out '" + out + "' --gpu-spec nvidia-h200");
  if (r.output.find("gnuplot not found") != std::string::npos) GTEST_SKIP() << "gnuplot not installed";
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(line_count(r.output), 1u) << r.output;
  EXPECT_EQ(read_all(out + "/accuracy.svg"), "previous\n");
  EXPECT_TRUE(temporaries_in(out).empty()) << "a temporary was left behind";
}

TEST(CliHardening, MergeFaultsKeepThePreviousProfile) {
  TempDir dir("h_merge_fault");
  const std::string p = fixture_copy(dir);
  const std::string before = read_all(p);
  auto r = run_flashtune("merge '" + p + "' --out /proc/flashtune-merged.json");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("/proc/flashtune-merged.json"), std::string::npos) << r.output;
  EXPECT_EQ(line_count(r.output), 1u) << r.output;
  // The merged profile (the input rewritten in place) is larger than the limit.
  r = run_with_file_limit(4, "merge '" + p + "' --out '" + p + "'");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("File too large"), std::string::npos) << r.output;
  EXPECT_EQ(line_count(r.output), 1u) << r.output;
  EXPECT_EQ(read_all(p), before);
  EXPECT_TRUE(temporaries_in(dir.file("")).empty()) << "a temporary was left behind";
}

// ---- the profile writer respects the file ----------------------------------------------------

TEST(CliHardening, FitThroughASymlinkKeepsTheLinkTheModeAndUnknownFields) {
  TempDir dir("h_fit_link");
  std::filesystem::create_directories(dir.file("real"));
  // Unknown fields where fit's rewrite used to drop them, and a timing without min/max/stdev.
  std::string text = read_all(data("fixture_profile.json"));
  auto insert_after = [&text](const std::string& anchor, const std::string& field) {
    const std::size_t at = text.find(anchor);
    ASSERT_NE(at, std::string::npos) << anchor;
    text.insert(at + anchor.size(), field);
  };
  insert_after("\"gpu\": {", "\"pci_bus_id\": \"0000:19:00.0\", ");
  insert_after("\"build\": {", "\"cmake_flags\": \"-O3\", ");
  insert_after("\"name\": \"n512\",", " \"label\": \"seed case\",");
  insert_after("\"status\": \"ok\",", " \"host\": \"node3\",");
  const std::string target = dir.write("real/p.json", text);
  ASSERT_EQ(::chmod(target.c_str(), 0640), 0);
  const std::string link = dir.file("p.json");
  std::filesystem::create_symlink("real/p.json", link);
  const auto r = run_flashtune("fit --profile '" + link + "'" + kFastFit);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(std::filesystem::is_symlink(link)) << "the link was replaced by a regular file";
  const std::string after = read_all(target);
  EXPECT_NE(after.find("\"fit\""), std::string::npos) << "the coefficients went elsewhere";
  for (const char* kept : {"pci_bus_id", "cmake_flags", "\"label\"", "\"host\""})
    EXPECT_NE(after.find(kept), std::string::npos) << kept << " was dropped";
  // The fixture's first measurement has no max_ms: it must not come back as 0 (one line per
  // measurement in the file).
  const std::size_t first = after.find("\"workload\":\"n512\",\"config\":\"row_smem/d64/br64xbc32/plain\"");
  ASSERT_NE(first, std::string::npos) << after.substr(0, 2000);
  const std::string line = after.substr(first, after.find('\n', first) - first);
  EXPECT_EQ(line.find("max_ms"), std::string::npos) << line;
  struct stat st {};
  ASSERT_EQ(::stat(target.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  EXPECT_TRUE(temporaries_in(dir.file("real")).empty());
}

// The tests run as root, which may write any file: the writer reads the mode bits.
TEST(CliHardening, FitRefusesAReadOnlyProfileBeforeFitting) {
  TempDir dir("h_fit_ro");
  const std::string p = fixture_copy(dir);
  const std::string before = read_all(p);
  ASSERT_EQ(::chmod(p.c_str(), 0444), 0);
  const auto r = run_flashtune("fit --profile '" + p + "'" + kFastFit);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("read-only (mode 0444)"), std::string::npos) << r.output;
  EXPECT_EQ(line_count(r.output), 1u) << r.output;
  EXPECT_EQ(read_all(p), before);
}

// Two fits of one profile: the second is refused rather than silently losing the first's result.
TEST(CliHardening, AFitWhileAnotherWriterHoldsTheProfileIsRefused) {
  TempDir dir("h_fit_lock");
  const std::string p = fixture_copy(dir);
  const std::string before = read_all(p);
  // flock(1) holds the profile's lock file while the fit runs, as a concurrent fit or tune would.
  const auto r = run_shell("flock '" + p + ".lock' '" + FLASHTUNE_BINARY + "' fit --profile '" + p + "'" + kFastFit +
                           " 2>&1");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("is locked by"), std::string::npos) << r.output;
  EXPECT_EQ(line_count(r.output), 1u) << r.output;
  EXPECT_EQ(read_all(p), before);
}

// ---- stdout checked ---------------------------------------------------------------------------

TEST(CliHardening, WritesToAFullStdoutFail) {
  for (const std::string& args : {"export --profile '" + data("fixture_profile.json") + "' --format csv",
                                  std::string("predict --gpu h200 --B 4 --N 1024 --d 64 --all"), std::string("list")}) {
    // stderr to the pipe first, then stdout to the full device.
    const auto r = run_shell(std::string("'") + FLASHTUNE_BINARY + "' " + args + " 2>&1 > /dev/full");
    EXPECT_NE(r.exit_code, 0) << args << ": " << r.output;
    EXPECT_NE(r.output.find("cannot write to standard output"), std::string::npos) << args << ": " << r.output;
  }
}

// ---- limits and options, before any GPU work ---------------------------------------------------

TEST(CliHardening, PredictRefusesWorkloadsNoKernelAccepts) {
  for (const char* dims : {"--B 9223372036854775807 --N 1024 --d 64", "--B 1 --N 1099511627776 --d 64",
                           "--B 1 --N 2147483648 --d 64"}) {
    const auto r = run_flashtune(std::string("predict --gpu h200 --all ") + dims);
    EXPECT_EQ(r.exit_code, 2) << dims << ": " << r.output;
    EXPECT_EQ(line_count(r.output), 1u) << r.output;
  }
}

TEST(CliHardening, TuneAndRunRefuseTheSameWorkloads) {
  auto r = run_flashtune("tune --B 9223372036854775807 --N 1024 --d 64 --profile /tmp/flashtune-never.json");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("2^63 bytes"), std::string::npos) << r.output;
  r = run_flashtune("run --B 1 --N 1099511627776 --d 64");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("2147483647"), std::string::npos) << r.output;
}

TEST(CliHardening, NumbersAreStrict) {
  for (const char* args : {"predict --gpu h200 --B \"\" --N 1024 --d 64 --all",
                           "predict --gpu h200 --B 4 --N 1024 --d 64 --all --scale 1e39",
                           "predict --gpu h200 --B 010x --N 1024 --d 64 --all",
                           // found by fuzz_cli_numbers: CLI11 reads a leading zero as octal
                           "predict --gpu h200 --B 091 --N 1024 --d 64 --all",
                           "predict --gpu h200 --B 010 --N 1024 --d 64 --all", "run --B 2 --N 64 --d 64 --warmup-ms nan",
                           "run --B 2 --N 64 --d 64 --time-cap inf"}) {
    const auto r = run_flashtune(args);
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.output;
  }
}

TEST(CliHardening, RunOptionsAreCheckedBeforeTheGpu) {
  // Exit 2 (usage) rather than 3 (no GPU) on a machine without one: checked before the device.
  for (const char* args : {"run --B 2 --N 64 --d 64 --out /nonexistent/o.npy", "run --B 2 --N 64 --d 64 --device -1",
                           "tune --B 2 --N 64 --d 64 --strategy model --top-k 0 --profile /tmp/flashtune-never.json"}) {
    const auto r = run_flashtune(args);
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.output;
    EXPECT_EQ(line_count(r.output), 1u) << args << ": " << r.output;
  }
}

TEST(CliHardening, UnknownCommandIsNamed) {
  const auto r = run_flashtune("frobnicate");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("unknown command 'frobnicate'"), std::string::npos) << r.output;
}

TEST(CliHardening, PredictSaysWhenAProfileHasNoCoefficientsOrAnotherGpu) {
  // The fixture has no coefficients and was measured on an H200.
  auto r = run_flashtune("predict --gpu h200 --B 4 --N 1024 --d 64 --all --profile '" + data("fixture_profile.json") + "'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("holds no fitted coefficients"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("warning"), std::string::npos) << r.output;
  r = run_flashtune("predict --gpu h100 --B 4 --N 1024 --d 64 --all --profile '" + data("fixture_profile.json") + "'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("warning"), std::string::npos) << r.output;
}

}  // namespace
