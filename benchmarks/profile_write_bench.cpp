// What recording a measured pair costs the tune, at 1k, 10k and 100k pairs (a benchmark, not a
// test): the fake backend's measurements recorded through ProfileStore (one fsynced journal line
// per pair), the record() time per pair (mean, and the median of the first and the last tenth of
// the run), the final
// compaction, and the bytes on disk; beside it the former scheme (the whole profile rewritten
// atomically after every pair) on a smaller run, whose cost per pair grows with the profile.
//   build-*/benchmarks/profile_write_bench [--pairs 1000,10000,100000] [--legacy 500,1000] [--dir D]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/traits/variants.h"
#include "tuner/fake_backend.h"
#include "profile/profile_store.h"
#include "tuner/tune_plan.h"

namespace {

using namespace flashtune;
using Clock = std::chrono::steady_clock;

std::vector<long> parse_list(const std::string& s) {
  std::vector<long> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(std::stol(item));
  return out;
}

// A plan of exactly `pairs` pairs: as many workloads of the first compiled d as needed.
TunePlan plan_of(long pairs) {
  const int d = compiled_configs().front().d;
  std::size_t per = 0;
  for (const TileConfig& c : compiled_configs()) per += c.d == d && c.variant != Variant::MmaTf32x1;
  std::vector<NamedWorkload> ws;
  for (long i = 0; static_cast<long>(ws.size() * per) < pairs; ++i)
    ws.push_back({"w" + std::to_string(i), {1 + i % 64, 128 + 16 * (i % 512), d, i % 2 == 1, 0}});
  TunePlan plan = make_plan(ws, compiled_configs(), {});
  plan.pairs.resize(static_cast<std::size_t>(pairs));
  return plan;
}

std::vector<Measurement> measurements_of(const TunePlan& plan) {
  FakeBackend fake;
  std::vector<Measurement> ms;
  for (const PlannedPair& p : plan.pairs) ms.push_back(fake.measure(plan.workloads[p.workload], p.config));
  return ms;
}

Profile empty_profile(const TunePlan& plan) {
  Profile p;
  p.gpu = fake_gpu_identity();
  p.build.kernel_set = "bench";
  p.workloads = plan.workloads;
  return p;
}

double us_since(Clock::time_point t) { return std::chrono::duration<double, std::micro>(Clock::now() - t).count(); }

// Mean over the run, and the medians of its first and last tenth (medians: a disk's occasional
// slow fsync says nothing about how the cost grows).
struct Tenths {
  double mean_us = 0, first_us = 0, last_us = 0;
};

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

Tenths tenths(const std::vector<double>& per_pair_us) {
  Tenths t;
  const std::size_t n = per_pair_us.size(), tenth = std::max<std::size_t>(1, n / 10);
  for (double us : per_pair_us) t.mean_us += us / double(n);
  t.first_us = median({per_pair_us.begin(), per_pair_us.begin() + static_cast<std::ptrdiff_t>(tenth)});
  t.last_us = median({per_pair_us.end() - static_cast<std::ptrdiff_t>(tenth), per_pair_us.end()});
  return t;
}

void journal_run(long pairs, const std::string& dir) {
  const TunePlan plan = plan_of(pairs);
  const std::vector<Measurement> ms = measurements_of(plan);
  const std::string path = dir + "/journal-" + std::to_string(pairs) + ".json";
  std::vector<double> us;
  us.reserve(ms.size());
  std::uintmax_t journal_bytes = 0;
  double compact_s = 0;
  {
    ProfileStore store(path, empty_profile(plan));
    for (const Measurement& m : ms) {
      const auto t = Clock::now();
      store.record(m);
      us.push_back(us_since(t));
    }
    journal_bytes = std::filesystem::file_size(journal_path(path));
    const auto t = Clock::now();
    store.compact();
    compact_s = us_since(t) * 1e-6;
  }
  const Tenths t = tenths(us);
  const double profile_mb = double(std::filesystem::file_size(path)) / 1e6;
  std::printf("| %7ld | %8.1f | %8.1f | %8.1f | %6.0f | %7.2f | %8.2f | %8.1f |\n", pairs, t.mean_us, t.first_us,
              t.last_us, double(journal_bytes) / double(pairs), compact_s, compact_s * 1e6 / double(pairs), profile_mb);
  std::filesystem::remove(path);
}

void legacy_run(long pairs, const std::string& dir) {
  const TunePlan plan = plan_of(pairs);
  const std::vector<Measurement> ms = measurements_of(plan);
  const std::string path = dir + "/legacy-" + std::to_string(pairs) + ".json";
  Profile p = empty_profile(plan);
  std::vector<double> us;
  for (const Measurement& m : ms) {
    const auto t = Clock::now();
    p.measurements.push_back(m);
    recompute_best(p);
    write_profile_atomic(path, p);
    us.push_back(us_since(t));
  }
  const Tenths t = tenths(us);
  std::printf("| %7ld | %8.1f | %8.1f | %8.1f | %7.2f |\n", pairs, t.mean_us, t.first_us, t.last_us,
              t.mean_us * double(pairs) * 1e-6);
  std::filesystem::remove(path);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<long> pairs = {1000, 10000, 100000}, legacy = {500, 1000};
  std::string dir;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--pairs") pairs = parse_list(argv[i + 1]);
    else if (a == "--legacy") legacy = parse_list(argv[i + 1]);
    else if (a == "--dir") dir = argv[i + 1];
    else {
      std::fprintf(stderr, "profile_write_bench: unknown option %s (--pairs N,... --legacy N,... --dir D)\n", a.c_str());
      return 2;
    }
  }
  if (dir.empty()) dir = (std::filesystem::temp_directory_path() / "flashtune_profile_write_bench").string();
  std::filesystem::create_directories(dir);
  std::printf("profile write cost per pair, fake backend, files in %s\n\n", dir.c_str());
  std::printf("journal (one fsynced line per pair; the profile compacted once at the end):\n\n");
  std::printf("| pairs | record us/pair (mean) | median, first 10%% | median, last 10%% | bytes/pair | compact s | compact us/pair | profile MB |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- | --- |\n");
  for (long n : pairs) journal_run(n, dir);
  if (!legacy.empty()) {
    std::printf("\nformer scheme (the whole profile rewritten atomically after every pair):\n\n");
    std::printf("| pairs | us/pair (mean) | median, first 10%% | median, last 10%% | total s |\n| --- | --- | --- | --- | --- |\n");
    for (long n : legacy) legacy_run(n, dir);
  }
  return 0;
}
