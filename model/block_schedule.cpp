#include "model/block_schedule.h"

#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <mutex>
#include <queue>
#include <tuple>
#include <utility>
#include <vector>

#include "kernels/traits/tile_config.h"
#include "kernels/traits/traits_common.h"

namespace flashtune::model {
namespace {

constexpr int kSoloPoints = 9;

// Each block's work in launch order, in mean blocks (K/V tiles visited / mean).
std::vector<double> block_works(long long B, long long N, int Br, int Bc, bool heavy_first) {
  const long long q_tiles = (N + Br - 1) / Br, kv_tiles = (N + Bc - 1) / Bc;
  std::vector<double> tiles(static_cast<std::size_t>(q_tiles));
  double total = 0;
  for (long long i = 0; i < q_tiles; ++i) {
    // As count_tile_visits: the last query row of tile i is (i + 1) Br - 1.
    tiles[std::size_t(i)] = double(std::min(kv_tiles, ((i + 1) * Br - 1) / Bc + 1));
    total += tiles[std::size_t(i)];
  }
  const double mean = total / double(q_tiles);
  if (heavy_first) std::reverse(tiles.begin(), tiles.end());
  std::vector<double> works;
  works.reserve(static_cast<std::size_t>(q_tiles * B));
  if (traits::grid_order(B, q_tiles, true, heavy_first) == traits::GridOrder::BatchFastest) {
    for (double t : tiles)  // tile rank slowest: every entry's rank r before any rank r + 1
      for (long long b = 0; b < B; ++b) works.push_back(t / mean);
  } else {
    for (long long b = 0; b < B; ++b)  // the query tile fastest, then the batch
      for (double t : tiles) works.push_back(t / mean);
  }
  return works;
}

// Processor sharing per SM, event by event. Every block on an SM progresses at the same rate, so
// an SM keeps a virtual clock that advances at that rate and each block finishes when the clock
// reaches its arrival value plus its work: one heap of finish values per SM, one heap of SMs by
// their next completion in real time.
double simulate(const std::vector<double>& works, int sms, int k, double solo) {
  struct Sm {
    double virt = 0;  // virtual clock at the SM's last event
    int version = 0;
    std::priority_queue<double, std::vector<double>, std::greater<double>> finish;
  };
  std::vector<Sm> sm(static_cast<std::size_t>(sms));
  auto rate = [&](std::size_t m) { return 1.0 / std::max(solo, double(m)); };
  using Event = std::tuple<double, int, int>;  // real time, SM, version
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events;
  auto schedule = [&](int s, double now) {
    Sm& x = sm[std::size_t(s)];
    ++x.version;
    if (!x.finish.empty()) events.emplace(now + (x.finish.top() - x.virt) / rate(x.finish.size()), s, x.version);
  };
  std::size_t next = 0;
  for (int slot = 0; slot < k && next < works.size(); ++slot)
    for (int s = 0; s < sms && next < works.size(); ++s) sm[std::size_t(s)].finish.push(works[next++]);
  for (int s = 0; s < sms; ++s) schedule(s, 0.0);
  double makespan = 0;
  while (!events.empty()) {
    const auto [t, s, version] = events.top();
    events.pop();
    Sm& x = sm[std::size_t(s)];
    if (version != x.version) continue;  // superseded
    x.virt = x.finish.top();
    x.finish.pop();
    makespan = t;
    if (next < works.size()) x.finish.push(x.virt + works[next++]);
    schedule(s, t);
  }
  return makespan;
}

}  // namespace

double shared_sm_makespan(const Workload& w, const SharedSmGrid& g, double solo) {
  const long long q_tiles = (w.N + g.Br - 1) / std::max(1, g.Br);
  const int k = std::max(1, g.blocks_per_sm);
  if (w.B <= 0 || w.N <= 0 || g.sm_count <= 0 || g.Br <= 0 || g.Bc <= 0) return 0.0;
  if (!w.causal) {
    const long long blocks = q_tiles * w.B, per_wave = static_cast<long long>(g.sm_count) * k;
    return double((blocks + per_wave - 1) / per_wave) * k;
  }
  using Key = std::tuple<long long, long long, int, int, bool, int, int>;
  static std::mutex mutex;
  static std::map<Key, std::array<double, kSoloPoints>> cache;
  const Key key{w.B, w.N, g.Br, g.Bc, g.heavy_first, g.sm_count, k};
  std::array<double, kSoloPoints> table{};
  bool found = false;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = cache.find(key); it != cache.end()) {
      table = it->second;
      found = true;
    }
  }
  if (!found) {
    const std::vector<double> works = block_works(w.B, w.N, g.Br, g.Bc, g.heavy_first);
    for (int i = 0; i < kSoloPoints; ++i)
      table[std::size_t(i)] = simulate(works, g.sm_count, k, 1.0 + (k - 1) * double(i) / (kSoloPoints - 1));
    std::lock_guard<std::mutex> lock(mutex);
    cache.emplace(key, table);
  }
  if (k == 1) return table[0];
  const double x = std::clamp(solo, 1.0, double(k));
  const double pos = (x - 1.0) / (k - 1) * (kSoloPoints - 1);
  const int i = std::min(kSoloPoints - 2, static_cast<int>(pos));
  const double f = pos - i;
  return table[std::size_t(i)] * (1 - f) + table[std::size_t(i + 1)] * f;
}

}  // namespace flashtune::model
