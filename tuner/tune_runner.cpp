#include "tuner/tune_runner.h"

#include <chrono>
#include <exception>
#include <thread>
#include <utility>

namespace flashtune {

std::vector<WorkloadWork> remaining_work(const TunePlan& plan, const DoneIndex& done) {
  std::vector<WorkloadWork> work;
  for (const PlannedPair& p : plan.pairs) {
    if (done.contains(plan.workloads[p.workload].name, p.config.name())) continue;
    if (work.empty() || work.back().workload != p.workload) work.push_back({p.workload, {}});
    work.back().configs.push_back(p.config);
  }
  return work;
}

namespace {

// The state the workers share: the queue of workloads, the stop/failure flags, the counts.
struct Shared {
  Shared(const TunePlan& p, ProfileStore& st, const RunnerOptions& o) : plan(p), store(st), options(o) {}
  const TunePlan& plan;
  ProfileStore& store;
  const RunnerOptions& options;
  std::vector<WorkloadWork> queue;
  std::size_t next = 0;
  std::atomic<bool> failed{false};
  std::mutex mutex;  // guards next, summary
  RunSummary summary;

  bool stop_requested() const { return failed.load() || (options.stop && options.stop->load()); }

  bool take(WorkloadWork& out) {
    std::lock_guard<std::mutex> lock(mutex);
    if (next >= queue.size()) return false;
    out = queue[next++];
    return true;
  }
  void fail(const std::string& what) {
    std::lock_guard<std::mutex> lock(mutex);
    if (summary.error.empty()) summary.error = what;
    failed = true;
  }
  void counted(const std::string& status) {
    std::lock_guard<std::mutex> lock(mutex);
    ++summary.measured;
    ++summary.by_status[status];
  }
};

std::string pair_label(const NamedWorkload& w, const TileConfig& c) { return w.name + " " + c.name(); }

void record(Shared& s, Measurement m, const std::string& label) {
  const std::string st = m.status;
  s.store.record(std::move(m));
  s.counted(st);
  if (s.options.progress) s.options.progress->finished(label);
}

void worker(Shared& s, MeasurementBackend& backend) {
  try {
    WorkloadWork work;
    while (!s.stop_requested() && s.take(work)) {
      const NamedWorkload& w = s.plan.workloads[work.workload];
      const WorkloadSetup setup = backend.begin_workload(w);
      for (const TileConfig& c : work.configs) {
        if (s.stop_requested()) return;
        const std::string label = pair_label(w, c);
        if (!setup.ok) {
          Measurement m;
          m.workload = w.name;
          m.config = c.name();
          m.status = setup.status;
          m.reason = setup.reason;
          m.counters_status = "unavailable: config not run";
          m.timestamp = utc_timestamp();
          record(s, std::move(m), label);
          continue;
        }
        if (s.options.progress) s.options.progress->starting(label);
        Measurement m = backend.measure(w, c);
        m.workload = w.name;
        m.config = c.name();
        record(s, std::move(m), label);
        if (!backend.usable()) {
          s.fail(backend.unusable_reason());
          return;
        }
      }
    }
  } catch (const std::exception& e) {
    s.fail(e.what());
  }
}

}  // namespace

RunSummary run_plan(const TunePlan& plan, ProfileStore& store, const std::vector<MeasurementBackend*>& backends,
                    const RunnerOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  Shared s(plan, store, options);
  const DoneIndex done(store.snapshot());
  s.queue = remaining_work(plan, done);
  s.summary.planned = plan.pairs.size();
  std::size_t remaining = 0;
  for (const WorkloadWork& w : s.queue) remaining += w.configs.size();
  s.summary.already_done = plan.pairs.size() - remaining;

  if (backends.size() == 1) {
    worker(s, *backends.front());
  } else {
    std::vector<std::thread> threads;
    for (MeasurementBackend* b : backends) threads.emplace_back([&s, b] { worker(s, *b); });
    for (std::thread& t : threads) t.join();
  }
  if (options.progress) options.progress->close();
  try {
    store.compact();
  } catch (const ProfileError& e) {
    if (s.summary.error.empty()) s.summary.error = e.what();
  }
  s.summary.interrupted = options.stop && options.stop->load() && s.summary.already_done + s.summary.measured < s.summary.planned;
  s.summary.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return s.summary;
}

}  // namespace flashtune
