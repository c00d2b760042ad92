// The tune runner with the fake backend (no GPU): an interrupted tune (a crash, a stop request, a
// SIGKILL of the process, whose pairs are in the profile's journal) resumed by running the same plan again loses no measured pair and
// measures none twice; several backends share one profile; a workload that cannot be prepared
// and a backend that becomes unusable are recorded and reported.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include "kernels/traits/variants.h"
#include "profile/profile_journal.h"
#include "tuner/fake_backend.h"
#include "tuner/tune_runner.h"

namespace flashtune {
namespace {

namespace fs = std::filesystem;

struct TempProfilePath {
  TempProfilePath() {
    dir = fs::temp_directory_path() / ("flashtune_resume_test_" + std::to_string(::getpid()) + "_" +
                                       std::to_string(counter++));
    fs::create_directories(dir);
    path = (dir / "profile.json").string();
  }
  ~TempProfilePath() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  static inline int counter = 0;
  fs::path dir;
  std::string path;
};

// Head dimensions from the compiled list, so the test runs on the small kernel set as well.
TunePlan test_plan() {
  const int d_first = compiled_head_dims().front(), d_last = compiled_head_dims().back();  // fp32
  const std::vector<NamedWorkload> ws = {
      {"a", {4, 512, d_first, false, 0}}, {"b", {2, 1000, d_last, true, 0}}, {"c", {1, 256, d_first, true, 0}}};
  return make_plan(ws, compiled_configs(), {});
}

Profile empty_profile(const TunePlan& plan) {
  Profile p;
  p.gpu.name = "Fake GPU";
  p.gpu.spec = "fake-gpu";
  p.build.kernel_set = "test";
  add_workloads(p, plan.workloads);
  return p;
}

// Resume exactly as `flashtune tune` does: read the profile back from disk.
ProfileStore reopen(const std::string& path) { return ProfileStore(path, load_profile(path)); }

std::set<std::pair<std::string, std::string>> plan_pairs(const TunePlan& plan) {
  std::set<std::pair<std::string, std::string>> s;
  for (const PlannedPair& p : plan.pairs) s.insert({plan.workloads[p.workload].name, p.config.name()});
  return s;
}

// Every pair of the plan exactly once, nothing else.
void expect_exactly_once(const Profile& p, const TunePlan& plan) {
  std::map<std::pair<std::string, std::string>, int> count;
  for (const Measurement& m : p.measurements) ++count[{m.workload, m.config}];
  const auto want = plan_pairs(plan);
  EXPECT_EQ(count.size(), want.size());
  for (const auto& [pair, n] : count) {
    EXPECT_EQ(n, 1) << pair.first << " " << pair.second;
    EXPECT_TRUE(want.count(pair)) << pair.first << " " << pair.second;
  }
}

TEST(TuneResume, CrashAfterKPairsThenResumeMeasuresOnlyTheRest) {
  const TunePlan plan = test_plan();
  ASSERT_GT(plan.pairs.size(), 8u);
  TempProfilePath tmp;
  const long long k = 7;
  {
    ProfileStore store(tmp.path, empty_profile(plan));
    FakeBackend crashing({k, 0, 0, true});
    const RunSummary s = run_plan(plan, store, {&crashing}, {});
    EXPECT_FALSE(s.error.empty());
    EXPECT_NE(s.error.find("simulated crash"), std::string::npos) << s.error;
    EXPECT_EQ(s.measured, std::size_t(k));
    EXPECT_FALSE(s.complete());
  }
  const Profile after_crash = load_profile(tmp.path);
  ASSERT_EQ(after_crash.measurements.size(), std::size_t(k));

  ProfileStore store = reopen(tmp.path);
  FakeBackend fresh;
  const RunSummary s = run_plan(plan, store, {&fresh}, {});
  EXPECT_TRUE(s.error.empty()) << s.error;
  EXPECT_TRUE(s.complete());
  EXPECT_EQ(s.already_done, std::size_t(k));
  EXPECT_EQ(s.measured, plan.pairs.size() - std::size_t(k));
  EXPECT_EQ(fresh.measure_calls(), static_cast<long long>(plan.pairs.size()) - k);

  const Profile done = load_profile(tmp.path);
  expect_exactly_once(done, plan);
  // What was measured before the crash is still there, untouched.
  for (long long i = 0; i < k; ++i) {
    EXPECT_EQ(done.measurements[std::size_t(i)].config, after_crash.measurements[std::size_t(i)].config);
    EXPECT_EQ(done.measurements[std::size_t(i)].timestamp, after_crash.measurements[std::size_t(i)].timestamp);
  }
  // A third run has nothing left to do.
  ProfileStore again = reopen(tmp.path);
  FakeBackend idle;
  const RunSummary s3 = run_plan(plan, again, {&idle}, {});
  EXPECT_EQ(idle.measure_calls(), 0);
  EXPECT_EQ(s3.already_done, plan.pairs.size());
  EXPECT_TRUE(s3.complete());
}

// Sets the stop flag from inside the k-th measurement, as SIGINT would while a config runs.
class StopAfter : public FakeBackend {
 public:
  StopAfter(long long k, std::atomic<bool>& stop) : k_(k), stop_(stop) {}
  Measurement measure(const NamedWorkload& w, const TileConfig& c) override {
    if (++n_ == k_) stop_ = true;
    return FakeBackend::measure(w, c);
  }

 private:
  long long k_, n_ = 0;
  std::atomic<bool>& stop_;
};

TEST(TuneResume, StopRequestFinishesTheCurrentPairThenStops) {
  const TunePlan plan = test_plan();
  TempProfilePath tmp;
  std::atomic<bool> stop{false};
  {
    ProfileStore store(tmp.path, empty_profile(plan));
    StopAfter backend(5, stop);
    RunnerOptions o;
    o.stop = &stop;
    const RunSummary s = run_plan(plan, store, {&backend}, o);
    EXPECT_TRUE(s.interrupted);
    EXPECT_TRUE(s.error.empty());
    EXPECT_EQ(s.measured, 5u);  // the pair running when the stop came was finished and recorded
  }
  EXPECT_EQ(load_profile(tmp.path).measurements.size(), 5u);
  stop = false;
  ProfileStore store = reopen(tmp.path);
  FakeBackend rest;
  RunnerOptions o;
  o.stop = &stop;
  const RunSummary s = run_plan(plan, store, {&rest}, o);
  EXPECT_TRUE(s.complete());
  EXPECT_EQ(rest.measure_calls(), static_cast<long long>(plan.pairs.size()) - 5);
  expect_exactly_once(load_profile(tmp.path), plan);
}

TEST(TuneResume, KilledProcessLeavesAReadableProfileAndResumes) {
  const TunePlan plan = test_plan();
  TempProfilePath tmp;
  // The child measures slowly and is SIGKILLed mid-way: no handler runs, nothing is flushed.
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ProfileStore store(tmp.path, empty_profile(plan));
    FakeBackend slow({-1, 20, 0, true});
    run_plan(plan, store, {&slow}, {});
    _exit(0);
  }
  // Wait until a few pairs are on disk, then kill.
  std::size_t seen = 0;
  for (int i = 0; i < 500 && seen < 4; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    try {
      seen = load_profile_with_journal(tmp.path).measurements.size();
    } catch (const ProfileError&) {
      // not written yet
    }
  }
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the child finished before it was killed";
  // Atomic profile writes and fsynced journal lines: a whole file, every finished pair.
  const Profile killed = load_profile_with_journal(tmp.path);
  const std::size_t k = killed.measurements.size();
  EXPECT_GE(k, 4u);
  ASSERT_LT(k, plan.pairs.size());
  for (const auto& e : fs::directory_iterator(tmp.dir))
    EXPECT_EQ(e.path().filename().string().find(".profile.json.tmp"), std::string::npos) << "temp file left: "
                                                                                           << e.path();

  ProfileStore store = reopen(tmp.path);
  FakeBackend rest;
  const RunSummary s = run_plan(plan, store, {&rest}, {});
  EXPECT_TRUE(s.complete());
  EXPECT_EQ(rest.measure_calls(), static_cast<long long>(plan.pairs.size() - k));
  expect_exactly_once(load_profile(tmp.path), plan);
}

TEST(TuneRunner, SeveralBackendsShareOneProfile) {
  const TunePlan plan = test_plan();
  TempProfilePath tmp;
  ProfileStore store(tmp.path, empty_profile(plan));
  FakeBackend g0({-1, 1, 0, true}), g1({-1, 1, 1, true}), g2({-1, 1, 2, true});
  const RunSummary s = run_plan(plan, store, {&g0, &g1, &g2}, {});
  EXPECT_TRUE(s.complete());
  EXPECT_EQ(g0.measure_calls() + g1.measure_calls() + g2.measure_calls(), static_cast<long long>(plan.pairs.size()));
  // Whole workloads go to one backend: the reference is prepared once per workload.
  EXPECT_EQ(g0.workloads_begun() + g1.workloads_begun() + g2.workloads_begun(),
            static_cast<long long>(plan.workloads.size()));
  const Profile p = load_profile(tmp.path);
  expect_exactly_once(p, plan);
  // Best per workload is the fastest ok pair, as the fake defines it.
  for (const NamedWorkload& w : plan.workloads) {
    double best = 1e300;
    for (const Measurement& m : p.measurements)
      if (m.workload == w.name && m.status == status::kOk) best = std::min(best, m.timing->median_ms);
    ASSERT_EQ(p.best.count(w.name), 1u);
    EXPECT_DOUBLE_EQ(p.best.at(w.name).median_ms, best);
  }
}

TEST(TuneRunner, WrongResultsAreRecordedButNeverTimed) {
  const TunePlan plan = test_plan();
  TempProfilePath tmp;
  ProfileStore store(tmp.path, empty_profile(plan));
  FakeBackend b;
  const RunSummary s = run_plan(plan, store, {&b}, {});
  std::size_t wrong = 0;
  for (const Measurement& m : load_profile(tmp.path).measurements) {
    const auto c = parse_config_name(m.config);
    ASSERT_TRUE(c);
    if (FakeBackend::fake_wrong(*c)) {
      ++wrong;
      EXPECT_EQ(m.status, "wrong-result");
      EXPECT_FALSE(m.timing);
      EXPECT_TRUE(m.verify);
    }
  }
  EXPECT_EQ(s.by_status.count("wrong-result") ? s.by_status.at("wrong-result") : 0u, wrong);
}

class NoMemoryFor : public FakeBackend {
 public:
  explicit NoMemoryFor(std::string name) : name_(std::move(name)) {}
  WorkloadSetup begin_workload(const NamedWorkload& w) override {
    if (w.name == name_) return {false, status::kResources, "inputs need 9 GiB, 1 GiB free"};
    return FakeBackend::begin_workload(w);
  }

 private:
  std::string name_;
};

TEST(TuneRunner, AWorkloadThatCannotBePreparedIsRecordedForEveryConfig) {
  const TunePlan plan = test_plan();
  TempProfilePath tmp;
  ProfileStore store(tmp.path, empty_profile(plan));
  NoMemoryFor b("b");
  const RunSummary s = run_plan(plan, store, {&b}, {});
  EXPECT_TRUE(s.complete());
  std::size_t for_b = 0;
  for (const Measurement& m : load_profile(tmp.path).measurements)
    if (m.workload == "b") {
      ++for_b;
      EXPECT_EQ(m.status, "resources");
      EXPECT_EQ(m.reason, "inputs need 9 GiB, 1 GiB free");
    }
  // Every config the plan has for b (the plan's precision, fp32 by default, decides which).
  std::size_t planned_for_b = 0;
  for (const PlannedPair& p : plan.pairs) planned_for_b += p.workload == 1;
  EXPECT_GT(planned_for_b, 0u);
  EXPECT_EQ(for_b, planned_for_b);
}

class DiesAfter : public FakeBackend {
 public:
  explicit DiesAfter(long long k) : k_(k) {}
  Measurement measure(const NamedWorkload& w, const TileConfig& c) override {
    Measurement m = FakeBackend::measure(w, c);
    if (++n_ == k_) {
      m.status = status::kLaunch;
      m.reason = "cudaErrorIllegalAddress";
      m.timing.reset();
    }
    return m;
  }
  bool usable() const override { return n_ < k_; }
  std::string unusable_reason() const override { return "CUDA context lost"; }

 private:
  long long k_, n_ = 0;
};

TEST(TuneRunner, ABackendThatDiesStopsTheRunWithTheFaultyPairRecorded) {
  const TunePlan plan = test_plan();
  TempProfilePath tmp;
  ProfileStore store(tmp.path, empty_profile(plan));
  DiesAfter b(3);
  const RunSummary s = run_plan(plan, store, {&b}, {});
  EXPECT_EQ(s.error, "CUDA context lost");
  const Profile p = load_profile(tmp.path);
  ASSERT_EQ(p.measurements.size(), 3u);
  EXPECT_EQ(p.measurements[2].status, "launch");
}

}  // namespace
}  // namespace flashtune
