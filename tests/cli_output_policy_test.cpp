// Issue 27 (Hardening II), the output, lock and journal part, through the flashtune binary (the
// fake tune backend, no GPU): one regression test per numbered item 1, 2, 3, 4, 5, 7, 10, 12 and
// 13. Each refused command gives one line, a non-zero exit, and leaves the disk as it was.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_test_support.h"
#include "kernels/traits/variants.h"
#include "profile/output_file.h"
#include "profile/profile_journal.h"
#include "test_temp_dir.h"

namespace flashtune {
namespace {

namespace fs = std::filesystem;
using testing_support::CommandResult;
using testing_support::line_count;
using testing_support::run_flashtune;
using testing_support::TempDir;

std::string q(const std::string& path) { return "'" + path + "'"; }
bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

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

std::string bin() { return std::string("'") + FLASHTUNE_BINARY + "'"; }

// One refusal: a non-zero exit and exactly one line.
void expect_refused(const CommandResult& r, const std::string& part, const std::string& what) {
  EXPECT_NE(r.exit_code, 0) << what << ": " << r.output;
  EXPECT_EQ(line_count(r.output), 1u) << what << ": " << r.output;
  EXPECT_TRUE(has(r.output, part)) << what << ": wanted '" << part << "' in " << r.output;
}

std::vector<std::string> listing(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// A workload file of two workloads of the first compiled head dimension.
std::string workload_file(const TempDir& dir) {
  const int d = compiled_configs().front().d;
  nlohmann::json ws = nlohmann::json::array();
  ws.push_back({{"name", "w0"}, {"B", 2}, {"N", 256}, {"d", d}, {"causal", false}});
  ws.push_back({{"name", "w1"}, {"B", 1}, {"N", 512}, {"d", d}, {"causal", true}});
  return dir.write("workloads.json", nlohmann::json{{"schema_version", 1}, {"name", "t"}, {"workloads", ws}}.dump());
}

// A whole fake tune, then the state a killed one leaves: the profile holds the first `kept` pairs,
// the journal the rest. Returns the number of pairs in the journal.
std::size_t killed_tune(const TempDir& dir, const std::string& p, std::size_t kept = 3) {
  const auto r = run_flashtune("tune --backend fake --workloads " + q(workload_file(dir)) + " --profile " + q(p));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const Profile full = load_profile(p);
  Profile head = full;
  head.measurements.resize(kept);
  write_profile_atomic(p, head);
  JournalWriter j(journal_path(p), full.gpu);
  for (std::size_t i = kept; i < full.measurements.size(); ++i) j.append(full.measurements[i]);
  return full.measurements.size() - kept;
}

// ---- item 1: check-counters --write-compiled-instructions over its own inputs -----------------

TEST(CliOutputPolicy, CompiledInstructionsOverTheProfileOrTheSpecAreRefused) {
  TempDir dir("cli_cc_apart");
  // A data folder of our own: a mistake would overwrite the copy, not the shipped spec.
  fs::create_directories(dir.file("D/configs"));
  fs::copy(std::string(FLASHTUNE_SOURCE_DIR) + "/configs", dir.file("D/configs"), fs::copy_options::recursive);
  fs::create_directories(dir.file("sub"));
  const std::string ip = dir.file("ip.json");
  fs::copy_file(std::string(FLASHTUNE_SOURCE_DIR) + "/profiles/nvidia-h200.json", ip);
  fs::create_symlink(ip, dir.file("link.json"));
  const std::string spec = dir.file("D/configs/gpus/nvidia-h200.json");
  const std::string profile_before = read_all(ip), spec_before = read_all(spec);
  const std::string cc = "--data-dir " + q(dir.file("D")) + " check-counters --profile " + q(ip) +
                         " --write-compiled-instructions ";
  for (const std::string& out : {ip, dir.file("link.json"), dir.file("sub/../ip.json"), ip + ".journal"})
    expect_refused(run_flashtune(cc + q(out)), "would overwrite the", out);
  expect_refused(run_flashtune(cc + q(spec)), "would overwrite the input --gpu-spec", "the spec");
  expect_refused(run_flashtune(cc + q(dir.file("D/configs/gpus/../gpus/nvidia-h200.json"))),
                 "would overwrite the input --gpu-spec", "the spec through ../");
  EXPECT_EQ(read_all(ip), profile_before);
  EXPECT_EQ(read_all(spec), spec_before);
}

// ---- item 2: devices, FIFOs and the streams ---------------------------------------------------

TEST(CliOutputPolicy, DevicesAndFifosAreRefusedTheStreamsWrittenThrough) {
  TempDir dir("cli_nodes");
  const std::string p = dir.file("p.json");
  fs::copy_file(std::string(FLASHTUNE_TEST_DATA_DIR) + "/fixture_profile.json", p);
  const std::string fifo = dir.file("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  expect_refused(run_flashtune("export --profile " + q(p) + " --format csv --out " + q(fifo)), "is a FIFO", "export");
  expect_refused(run_flashtune("fit --profile " + q(p) + " --cv none --quiet --residuals " + q(fifo)), "is a FIFO",
                 "fit --residuals");
  expect_refused(run_flashtune("export --profile " + q(p) + " --format csv --out /dev/zero"),
                 "is a character device", "export to /dev/zero");
  struct stat st {};
  ASSERT_EQ(::stat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  ASSERT_EQ(::stat("/dev/zero", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));

  // /dev/null: written through, the node stays.
  auto r = run_flashtune("export --profile " + q(p) + " --format csv --out /dev/null");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  // /dev/stdout on a pipe and on a file: the CSV arrives, the file is the same inode.
  const std::string csv = run_flashtune("export --profile " + q(p) + " --format csv").output;
  r = run_shell(bin() + " export --profile " + q(p) + " --format csv --out /dev/stdout 2>/dev/null | cat");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.output, csv);
  const std::string f = dir.write("out.csv", "");
  struct stat before {};
  ASSERT_EQ(::stat(f.c_str(), &before), 0);
  r = run_shell(bin() + " export --profile " + q(p) + " --format csv --out /dev/stdout > " + q(f) + " 2>/dev/null");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(read_all(f), csv);
  ASSERT_EQ(::stat(f.c_str(), &st), 0);
  EXPECT_EQ(st.st_ino, before.st_ino);
  // /dev/stderr sent to /dev/null: /dev/null stays a device.
  r = run_shell(bin() + " export --profile " + q(p) + " --format csv --out /dev/stderr 2>/dev/null");
  EXPECT_EQ(r.exit_code, 0);
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  // A profile is a file: tune --profile /dev/null is refused and makes no lock in /dev.
  expect_refused(run_flashtune("tune --backend fake --B 2 --N 256 --d 64 --profile /dev/null"), "a stream, not a file",
                 "tune --profile /dev/null");
  EXPECT_FALSE(fs::exists("/dev/null.lock"));
}

// ---- item 3: the lock never follows a link ----------------------------------------------------

TEST(CliOutputPolicy, ALockThatIsALinkIsRefusedByEveryWriter) {
  TempDir dir("cli_lock_link");
  const std::string p = dir.file("p.json");
  killed_tune(dir, p);
  fs::remove(journal_path(p));
  const std::string victim = dir.write("victim.txt", "precious\n");
  fs::remove(p + ".lock");
  fs::create_symlink(victim, p + ".lock");
  const std::string before = read_all(p);
  const std::string w = dir.file("workloads.json");
  expect_refused(run_flashtune("tune --backend fake --workloads " + q(w) + " --profile " + q(p)), "symbolic link",
                 "tune");
  expect_refused(run_flashtune("fit --profile " + q(p) + " --cv none --quiet"), "symbolic link", "fit");
  expect_refused(run_flashtune("merge " + q(p) + " --out " + q(p)), "symbolic link", "merge");
  EXPECT_EQ(read_all(victim), "precious\n");
  EXPECT_EQ(read_all(p), before);
}

// ---- item 4: journal lines through the value check --------------------------------------------

TEST(CliOutputPolicy, AJournalLineTheValueCheckRefusesStopsTheResume) {
  TempDir dir("cli_journal_values");
  const std::string p = dir.file("p.json");
  killed_tune(dir, p);
  // The journal's second measurement line gets a median of -1.5.
  std::string journal = read_all(journal_path(p));
  std::vector<std::string> lines;
  std::istringstream in(journal);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_GE(lines.size(), 3u);
  nlohmann::json m = nlohmann::json::parse(lines[2]);
  m["timing"]["median_ms"] = -1.5;
  lines[2] = m.dump();
  journal.clear();
  for (const std::string& l : lines) journal += l + "\n";
  {
    std::ofstream(journal_path(p), std::ios::binary) << journal;
  }
  const std::string before = read_all(p);
  const std::string where = journal_path(p) + ":3: ";
  const std::string w = dir.file("workloads.json");
  expect_refused(run_flashtune("tune --backend fake --workloads " + q(w) + " --profile " + q(p)), where, "tune");
  expect_refused(run_flashtune("merge " + q(p) + " --out " + q(dir.file("m.json"))), where, "merge");
  expect_refused(run_flashtune("fit --profile " + q(p) + " --cv none --quiet"), where, "fit");
  EXPECT_EQ(read_all(p), before);
  EXPECT_EQ(read_all(journal_path(p)), journal);
  EXPECT_FALSE(fs::exists(dir.file("m.json")));
  EXPECT_FALSE(fs::exists(dir.file("m.json.lock")));
  // The profile itself is not stuck: export reads it (and says why the journal is refused).
  const auto r = run_flashtune("export --profile " + q(p) + " --format csv --out " + q(dir.file("o.csv")));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "that tune and merge refuse")) << r.output;
}

// ---- item 5: outputs onto a profile's journal -------------------------------------------------

TEST(CliOutputPolicy, OutputsOntoTheJournalAreRefused) {
  TempDir dir("cli_onto_journal");
  const std::string p = dir.file("p.json");
  killed_tune(dir, p);
  const std::string journal = read_all(journal_path(p));
  expect_refused(run_flashtune("export --profile " + q(p) + " --format csv --out " + q(p + ".journal")),
                 "would overwrite the journal of the input --profile", "export");
  expect_refused(run_flashtune("fit --profile " + q(p) + " --cv none --quiet --residuals " + q(p + ".journal")),
                 "would overwrite the journal of the input --profile", "fit");
  expect_refused(run_flashtune("export --profile " + q(p) + " --format csv --out " + q(p + ".lock")),
                 "would overwrite the lock of the input --profile", "export onto the lock");
  EXPECT_EQ(read_all(journal_path(p)), journal);
}

// ---- item 7: a FIFO at the journal ------------------------------------------------------------

TEST(CliOutputPolicy, AFifoAtTheJournalIsRefusedWithoutHanging) {
  TempDir dir("cli_journal_fifo");
  const std::string p = dir.file("p.json");
  killed_tune(dir, p);
  fs::remove(journal_path(p));
  ASSERT_EQ(::mkfifo(journal_path(p).c_str(), 0644), 0);
  const std::string w = dir.file("workloads.json");
  const auto start = std::chrono::steady_clock::now();
  for (const std::string& cmd : {"tune --backend fake --workloads " + q(w) + " --profile " + q(p),
                                 "merge " + q(p) + " --out " + q(dir.file("m.json")),
                                 "fit --profile " + q(p) + " --cv none --quiet"})
    expect_refused(run_shell("timeout 30 " + bin() + " " + cmd + " 2>&1"), "is a FIFO, not a journal", cmd);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 60.0);
}

// ---- item 10: readers name the pending journal ------------------------------------------------

TEST(CliOutputPolicy, ExportNamesThePairsPendingInTheJournal) {
  TempDir dir("cli_pending");
  const std::string p = dir.file("p.json");
  const std::size_t pending = killed_tune(dir, p);
  ASSERT_GT(pending, 0u);
  const auto r = run_flashtune("export --profile " + q(p) + " --format csv --out " + q(dir.file("o.csv")));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r.output, std::to_string(pending) + " pairs pending in " + journal_path(p) +
                                " (not read here); run tune to resume or merge to fold them in"))
      << r.output;
  // merge folds them in and says nothing of it.
  const auto m = run_flashtune("merge " + q(p) + " --out " + q(dir.file("m.json")));
  EXPECT_EQ(m.exit_code, 0) << m.output;
  EXPECT_FALSE(has(m.output, "pairs pending in")) << m.output;
}

// ---- item 12: a full disk during a tune, a long profile name ----------------------------------

TEST(CliOutputPolicy, AWriteFailureDuringATuneSaysThePairsAreInTheJournal) {
  TempDir dir("cli_tune_full");
  const std::string p = dir.file("p.json");
  const std::string w = workload_file(dir);
  // 8 KiB: the profile of two workloads fits, the journal of every pair and the final profile do not.
  const auto r = run_shell("bash -c \"ulimit -f 8; exec " + bin() + " tune --backend fake --workloads " + q(w) +
                           " --profile " + q(p) + "\" 2>&1 >/dev/null");
  ASSERT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(has(r.output, "are in " + journal_path(p) + ", not yet in " + p)) << r.output;
  EXPECT_FALSE(has(r.output, "everything measured so far is in")) << r.output;
  // And they are there: a rerun folds them in.
  const auto again = run_flashtune("tune --backend fake --workloads " + q(w) + " --profile " + q(p) + " --json");
  EXPECT_EQ(again.exit_code, 0) << again.output;
}

TEST(CliOutputPolicy, ALongProfileNameIsNoProblem) {
  TempDir dir("cli_long");
  const std::string p = dir.file(std::string(235, 'p') + ".json");
  const auto r = run_flashtune("tune --backend fake --workloads " + q(workload_file(dir)) + " --profile " + q(p));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_GT(load_profile(p).measurements.size(), 0u);
}

// ---- item 13: leftovers -------------------------------------------------------------------------

TEST(CliOutputPolicy, ARefusedMergeLeavesNoLockAndNoWriterCreatesFolders) {
  TempDir dir("cli_leftovers");
  const std::string p = dir.file("p.json");
  killed_tune(dir, p);
  const std::string w = dir.file("workloads.json");
  const std::vector<std::string> before = listing(dir.file(""));
  // Another GPU's profile: refused, no m.json.lock.
  const std::string other = dir.file("other.json");
  fs::copy_file(std::string(FLASHTUNE_TEST_DATA_DIR) + "/fixture_profile.json", other);
  expect_refused(run_flashtune("merge " + q(p) + " " + q(other) + " --out " + q(dir.file("m.json"))), "was measured on",
                 "merge of two GPUs");
  fs::remove(other);
  EXPECT_EQ(listing(dir.file("")), before);
  // One rule for missing folders: no writer creates them.
  const std::string missing = dir.file("a/b/");
  expect_refused(run_flashtune("merge " + q(p) + " --out " + q(missing + "m.json")), "does not exist", "merge");
  expect_refused(run_flashtune("tune --backend fake --workloads " + q(w) + " --profile " + q(missing + "p.json")),
                 "does not exist", "tune");
  expect_refused(run_flashtune("export --profile " + q(p) + " --format csv --out " + q(missing + "o.csv")),
                 "does not exist", "export");
  expect_refused(run_flashtune("fit --profile " + q(p) + " --no-write --cv none --quiet --residuals " +
                               q(missing + "r.csv")),
                 "does not exist", "fit");
  EXPECT_FALSE(fs::exists(dir.file("a")));
}

TEST(CliOutputPolicy, PlotAndReportCheckEveryFileBeforeWritingOne) {
  if (!flashtune::testing_support::gnuplot_on_path()) GTEST_SKIP() << "gnuplot not installed";
  TempDir dir("cli_plot_first");
  const std::string p = dir.file("p.json");
  fs::copy_file(std::string(FLASHTUNE_TEST_DATA_DIR) + "/fixture_profile.json", p);
  // The last plot's file is a FIFO: refused before the first plot is drawn.
  fs::create_directories(dir.file("out"));
  ASSERT_EQ(::mkfifo(dir.file("out/pipes.png").c_str(), 0644), 0);
  auto r = run_flashtune("plot --profile " + q(p) + " --out " + q(dir.file("out")));
  expect_refused(r, "is a FIFO", "plot");
  EXPECT_EQ(listing(dir.file("out")), std::vector<std::string>{"pipes.png"});
  // No templates: plot and report refuse and leave nothing (no folder, no accuracy.dat).
  fs::create_directories(dir.file("empty"));
  for (const char* cmd : {"plot", "report"}) {
    r = run_shell("FLASHTUNE_PLOT_TEMPLATE_DIR=" + q(dir.file("empty")) + " " + bin() + " " + cmd + " --profile " +
                  q(p) + " --out " + q(dir.file("o")) + " 2>&1");
    if (std::system("command -v gnuplot >/dev/null 2>&1") == 0) {
      expect_refused(r, "template missing", cmd);
      EXPECT_FALSE(fs::exists(dir.file("o"))) << cmd;
    }
  }
}

}  // namespace
}  // namespace flashtune
