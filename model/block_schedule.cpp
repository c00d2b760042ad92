#include "model/block_schedule.h"

#include <algorithm>
#include <functional>
#include <map>
#include <mutex>
#include <queue>
#include <tuple>
#include <vector>

#include "kernels/traits/tile_config.h"

namespace flashtune::model {
namespace {

double simulate(long long B, long long N, int Br, int Bc, long long slots) {
  const long long q_tiles = (N + Br - 1) / Br, kv_tiles = (N + Bc - 1) / Bc;
  std::vector<double> tiles(static_cast<std::size_t>(q_tiles));
  double total = 0;
  for (long long i = 0; i < q_tiles; ++i) {
    // As count_tile_visits: the last query row of tile i is (i + 1) Br - 1.
    tiles[std::size_t(i)] = double(std::min(kv_tiles, ((i + 1) * Br - 1) / Bc + 1));
    total += tiles[std::size_t(i)];
  }
  const long long blocks = q_tiles * B;
  const double mean = total / double(q_tiles);
  const long long waves = (blocks + slots - 1) / slots;
  const double uniform = double(waves) * mean;
  // Greedy list schedule: each block in launch order goes to the slot that frees first.
  std::priority_queue<double, std::vector<double>, std::greater<double>> free_at;
  for (long long s = 0; s < std::min(slots, blocks); ++s) free_at.push(0.0);
  double makespan = 0;
  for (long long b = 0; b < B; ++b)
    for (long long i = 0; i < q_tiles; ++i) {
      const double end = free_at.top() + tiles[std::size_t(i)];
      free_at.pop();
      free_at.push(end);
      makespan = std::max(makespan, end);
    }
  return makespan / uniform;
}

}  // namespace

double causal_imbalance(const Workload& w, int Br, int Bc, long long slots) {
  if (!w.causal || slots <= 0 || w.B <= 0 || w.N <= 0) return 1.0;
  using Key = std::tuple<long long, long long, int, int, long long>;
  static std::mutex mutex;
  static std::map<Key, double> cache;
  const Key key{w.B, w.N, Br, Bc, slots};
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  const double f = simulate(w.B, w.N, Br, Bc, slots);
  std::lock_guard<std::mutex> lock(mutex);
  cache.emplace(key, f);
  return f;
}

}  // namespace flashtune::model
