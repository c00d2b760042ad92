// `flashtune tune --shard`, `flashtune merge`, the writer's lock and crash safety, from the outside
// with the fake backend (no GPU): shards merged equal a whole-plan tune pair for pair and status
// for status; merge refuses another GPU's profile and an --out it would overwrite; a second writer
// (tune or fit) is refused naming the first's PID while the profile stays whole; SIGKILLs at random
// points followed by resumes lose no recorded pair and record none twice.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <random>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli_test_support.h"
#include "kernels/traits/variants.h"
#include "profile/profile_journal.h"
#include "test_temp_dir.h"

namespace flashtune {
namespace {

using testing_support::run_flashtune;
using testing_support::TempDir;

// A workload file of `n` workloads of the first compiled head dimension; about `pairs` pairs.
std::string workload_file(const TempDir& dir, std::size_t pairs) {
  const int d = compiled_configs().front().d;
  std::size_t per = 0;
  for (const TileConfig& c : compiled_configs()) per += c.d == d && c.variant != Variant::MmaTf32x1;
  const std::size_t n = (pairs + per - 1) / per;
  nlohmann::json ws = nlohmann::json::array();
  for (std::size_t i = 0; i < n; ++i)
    ws.push_back({{"name", "w" + std::to_string(i)}, {"B", 1 + static_cast<long long>(i % 7)},
                  {"N", 128 + 64 * static_cast<long long>(i)}, {"d", d}, {"causal", i % 2 == 1}});
  return dir.write("workloads.json", nlohmann::json{{"schema_version", 1}, {"name", "t"}, {"workloads", ws}}.dump());
}

std::string q(const std::string& path) { return "'" + path + "'"; }

// (workload, config) -> status; fails the test on a pair recorded twice.
std::map<std::pair<std::string, std::string>, std::string> pairs_of(const Profile& p) {
  std::map<std::pair<std::string, std::string>, std::string> out;
  for (const Measurement& m : p.measurements)
    EXPECT_TRUE(out.insert({{m.workload, m.config}, m.status}).second) << m.workload << " " << m.config << " twice";
  return out;
}

// flashtune with `args`, output to /dev/null, not waited for.
pid_t spawn(const std::vector<std::string>& args) {
  const pid_t pid = fork();
  if (pid == 0) {
    std::vector<char*> argv{const_cast<char*>(FLASHTUNE_BINARY)};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    ::dup2(null, 2);
    ::execv(FLASHTUNE_BINARY, argv.data());
    _exit(127);
  }
  return pid;
}

std::size_t recorded(const std::string& profile) {
  try {
    return load_profile_with_journal(profile).measurements.size();
  } catch (const ProfileError&) {
    return 0;  // not created yet
  }
}

TEST(CliTuneShard, ShardsMergedEqualAWholePlanTune) {
  TempDir dir("cli_shard");
  const std::string w = workload_file(dir, 60);
  const std::string plan = " --backend fake --workloads " + q(w);
  ASSERT_EQ(run_flashtune("tune" + plan + " --profile " + q(dir.file("whole.json"))).exit_code, 0);
  std::string inputs;
  for (int i = 0; i < 3; ++i) {
    const std::string shard = dir.file("s" + std::to_string(i) + ".json");
    const auto r = run_flashtune("tune" + plan + " --shard " + std::to_string(i) + "/3 --profile " + q(shard));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("flashtune tune: shard " + std::to_string(i) + "/3: "), std::string::npos) << r.output;
    inputs += " " + q(shard);
  }
  const auto m = run_flashtune("merge" + inputs + " --out " + q(dir.file("m.json")) + " --workloads " + q(w) +
                               " --require-complete --json");
  ASSERT_EQ(m.exit_code, 0) << m.output;
  const auto report = nlohmann::json::parse(m.output.substr(m.output.find('{')));
  EXPECT_TRUE(report["duplicates"].empty());
  EXPECT_TRUE(report["plan"]["missing"].empty());
  EXPECT_TRUE(report["warnings"].empty()) << report["warnings"];
  EXPECT_EQ(pairs_of(load_profile(dir.file("m.json"))), pairs_of(load_profile(dir.file("whole.json"))));

  // A shard resumed as another shard, or merged over an existing profile, is refused.
  auto r = run_flashtune("tune" + plan + " --shard 2/3 --profile " + q(dir.file("s0.json")));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("holds shard 0/3, this tune is shard 2/3: give another --profile"), std::string::npos)
      << r.output;
  r = run_flashtune("merge" + inputs + " --out " + q(dir.file("whole.json")));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("exists and is not one of the inputs"), std::string::npos) << r.output;
  r = run_flashtune("tune" + plan + " --shard 3/3");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.output, "flashtune tune: shard '3/3': want I/N with 0 <= I < N, e.g. 0/4\n");
}

TEST(CliTuneShard, MergeRefusesAnotherGpusProfileAndReportsMissingPairs) {
  TempDir dir("cli_merge_refuse");
  const std::string w = workload_file(dir, 20);
  ASSERT_EQ(run_flashtune("tune --backend fake --shard 0/2 --workloads " + q(w) + " --profile " + q(dir.file("a.json")))
                .exit_code,
            0);
  Profile other = load_profile(dir.file("a.json"));
  other.gpu.name = "NVIDIA H200";
  other.gpu.spec = "nvidia-h200";
  write_profile_atomic(dir.file("b.json"), other);
  auto r = run_flashtune("merge " + q(dir.file("a.json")) + " " + q(dir.file("b.json")) + " --out " + q(dir.file("m.json")));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("b.json was measured on NVIDIA H200 (nvidia-h200"), std::string::npos) << r.output;
  EXPECT_EQ(testing_support::line_count(r.output), 1u);
  EXPECT_FALSE(std::filesystem::exists(dir.file("m.json")));

  // Shard 1 of 2 never ran: the plan says which pairs are missing, and --require-complete refuses.
  r = run_flashtune("merge " + q(dir.file("a.json")) + " --out " + q(dir.file("m.json")) + " --workloads " + q(w));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("warning   shards not among the inputs: 1/2"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(" missing, 0 not in the plan"), std::string::npos) << r.output;
  r = run_flashtune("merge " + q(dir.file("a.json")) + " --out " + q(dir.file("m2.json")) + " --workloads " + q(w) +
                    " --require-complete");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_FALSE(std::filesystem::exists(dir.file("m2.json")));
}

TEST(CliTuneShard, MergeReadsTheJournalOfAShardThatWasKilled) {
  TempDir dir("cli_merge_killed");
  const std::string w = workload_file(dir, 40);
  const std::string p = dir.file("s0.json");
  const pid_t child = spawn({"tune", "--backend", "fake", "--fake-delay-ms", "30", "--shard", "0/2", "--workloads", w,
                             "--profile", p});
  ASSERT_GT(child, 0);
  for (int i = 0; i < 300 && recorded(p) < 3; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ::kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  const std::size_t kept = recorded(p);
  ASSERT_GE(kept, 3u);
  EXPECT_LT(load_profile(p).measurements.size(), kept) << "the pairs should still be in the journal only";
  const auto r = run_flashtune("merge " + q(p) + " --out " + q(dir.file("m.json")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(load_profile(dir.file("m.json")).measurements.size(), kept);
  EXPECT_TRUE(std::filesystem::exists(journal_path(p))) << "an input's journal is its own";
}

TEST(CliTuneLock, ASecondWriterIsRefusedAndTheProfileStaysWhole) {
  TempDir dir("cli_lock");
  const std::string w = workload_file(dir, 40);
  const std::string p = dir.file("p.json");
  const pid_t first = spawn({"tune", "--backend", "fake", "--fake-delay-ms", "40", "--workloads", w, "--profile", p});
  ASSERT_GT(first, 0);
  for (int i = 0; i < 300 && recorded(p) < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const std::string holder = "is locked by flashtune tune (PID " + std::to_string(first) + " on ";
  auto r = run_flashtune("tune --backend fake --workloads " + q(w) + " --profile " + q(p));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.output.rfind("flashtune tune: " + p + " " + holder, 0), 0u) << r.output;
  EXPECT_EQ(testing_support::line_count(r.output), 1u) << r.output;
  r = run_flashtune("fit --profile " + q(p));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find(holder), std::string::npos) << r.output;
  r = run_flashtune("merge " + q(p) + " --out " + q(dir.file("m.json")));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("is being written by flashtune tune (PID " + std::to_string(first)), std::string::npos)
      << r.output;

  int status = 0;
  ASSERT_EQ(waitpid(first, &status, 0), first);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  // The first tune's work is all there, once each, and a rerun finds nothing left to do.
  r = run_flashtune("merge " + q(p) + " --out " + q(p) + " --workloads " + q(w) + " --require-complete --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(pairs_of(load_profile(p)).empty());
}

TEST(CliTuneKill, SigkillAtRandomPointsThenResumeLosesAndDuplicatesNothing) {
  TempDir dir("cli_kill");
  const std::string w = workload_file(dir, 150);
  const std::string p = dir.file("p.json");
  const std::vector<std::string> tune = {"tune", "--backend", "fake", "--fake-delay-ms", "2",
                                         "--workloads", w, "--profile", p};
  // Five points in CI; scripts/kill_resume_check.sh takes 20 on a 100,000-pair tune.
  std::mt19937 rng(20261123);
  std::uniform_int_distribution<int> after_ms(0, 400);
  for (int kill_no = 0; kill_no < 5; ++kill_no) {
    const pid_t child = spawn(tune);
    ASSERT_GT(child, 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(after_ms(rng)));
    const std::size_t before = recorded(p);
    ::kill(child, SIGKILL);
    int status = 0;
    waitpid(child, &status, 0);
    const std::size_t after = recorded(p);
    EXPECT_GE(after, before) << "kill " << kill_no << " lost recorded pairs";
  }
  const std::size_t kept = recorded(p);
  const auto r = run_flashtune("tune --backend fake --json --workloads " + q(w) + " --profile " + q(p));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto s = nlohmann::json::parse(r.output.substr(r.output.find('{')));
  EXPECT_EQ(s["already_done"].get<std::size_t>(), kept);
  EXPECT_EQ(s["already_done"].get<std::size_t>() + s["measured"].get<std::size_t>(), s["planned"].get<std::size_t>());
  const Profile done = load_profile(p);  // refuses a pair recorded twice
  EXPECT_EQ(pairs_of(done).size(), s["planned"].get<std::size_t>());
  EXPECT_FALSE(std::filesystem::exists(journal_path(p)));
}

}  // namespace
}  // namespace flashtune
