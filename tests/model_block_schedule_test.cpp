// The shared-SM block schedule (model/block_schedule.h) against the per-block simulation it
// replaced (issue 27, item 8), kept here as the reference: the same makespans to 1e-6 relative on
// random small grids (SM counts, blocks per SM, B, N, Br, Bc, launch order, solo), including grids
// long enough for the new schedule's skips (runs of equal blocks, periods of entry-major grids).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <queue>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/traits/tile_config.h"
#include "kernels/traits/traits_common.h"
#include "model/block_schedule.h"

namespace flashtune::model {
namespace {

// ---- Reference: the per-block simulation as it was (model/block_schedule.cpp before item 8 of
// issue 27), O(blocks) memory and O(blocks log) time per value of solo. ----

std::vector<double> reference_block_works(long long B, long long N, int Br, int Bc, bool heavy_first) {
  const long long q_tiles = (N + Br - 1) / Br, kv_tiles = (N + Bc - 1) / Bc;
  std::vector<double> tiles(static_cast<std::size_t>(q_tiles));
  double total = 0;
  for (long long i = 0; i < q_tiles; ++i) {
    tiles[std::size_t(i)] = double(std::min(kv_tiles, ((i + 1) * Br - 1) / Bc + 1));
    total += tiles[std::size_t(i)];
  }
  const double mean = total / double(q_tiles);
  if (heavy_first) std::reverse(tiles.begin(), tiles.end());
  std::vector<double> works;
  works.reserve(static_cast<std::size_t>(q_tiles * B));
  if (traits::grid_order(B, q_tiles, true, heavy_first) == traits::GridOrder::BatchFastest) {
    for (double t : tiles)
      for (long long b = 0; b < B; ++b) works.push_back(t / mean);
  } else {
    for (long long b = 0; b < B; ++b)
      for (double t : tiles) works.push_back(t / mean);
  }
  return works;
}

double reference_simulate(const std::vector<double>& works, int sms, int k, double solo) {
  struct Sm {
    double virt = 0;
    int version = 0;
    std::priority_queue<double, std::vector<double>, std::greater<double>> finish;
  };
  std::vector<Sm> sm(static_cast<std::size_t>(sms));
  auto rate = [&](std::size_t m) { return 1.0 / std::max(solo, double(m)); };
  using Event = std::tuple<double, int, int>;
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
    if (version != x.version) continue;
    x.virt = x.finish.top();
    x.finish.pop();
    makespan = t;
    if (next < works.size()) x.finish.push(x.virt + works[next++]);
    schedule(s, t);
  }
  return makespan;
}

// ---- Comparison ----
//
// The per-block simulation works in mean blocks (tiles / mean), so its times carry rounding, and
// where two SMs' next events are equal in exact arithmetic (common: equal blocks, sums of equal
// lengths in another order) the rounding, not the SM index, decides which SM takes the next block;
// in about a fifth of random small grids that changes the makespan by more than 1e-6. The schedule
// is exact (integer K/V tiles) and breaks such ties by SM index, as the simulation's event order
// (time, SM) intends. So it is compared with the simulation (a) fed the same blocks in K/V tiles,
// where that simulation is exact too, its makespan divided by the mean afterwards, on every grid,
// and (b) unchanged, on the grids whose mean block is a power of two of K/V tiles (its works are
// then exact binary fractions and its ties exact).

struct Case {
  long long B, N;
  int Br, Bc;
  bool heavy_first;
  int sms, k;
  std::string str() const {
    std::ostringstream o;
    o << "B=" << B << " N=" << N << " Br=" << Br << " Bc=" << Bc << " heavy_first=" << heavy_first << " SMs=" << sms
      << " k=" << k;
    return o.str();
  }
  double mean() const {
    const long long q_tiles = (N + Br - 1) / Br, kv_tiles = (N + Bc - 1) / Bc;
    long long sum = 0;
    for (long long i = 0; i < q_tiles; ++i) sum += std::min(kv_tiles, ((i + 1) * Br - 1) / Bc + 1);
    return double(sum) / double(q_tiles);
  }
  bool dyadic_mean() const {
    int e = 0;
    return std::frexp(mean(), &e) == 0.5;
  }
};

// The solos compared: the 9 the model tabulates, and a few in between.
std::vector<double> solos_for(int k, std::mt19937_64& rng) {
  std::vector<double> solos;
  for (int i = 0; i < 9; ++i) solos.push_back(1.0 + (k - 1) * double(i) / 8);
  std::uniform_real_distribution<double> u(1.0, double(k));
  for (int i = 0; i < 3; ++i) solos.push_back(u(rng));
  return solos;
}

// Compares the schedule with the reference at each solo; false on the first difference above
// 1e-6 relative. `verbatim`: the reference's own works (mean blocks), else the same in K/V tiles.
bool compare(const Case& c, bool verbatim, std::mt19937_64& rng) {
  const Workload w{c.B, c.N, 64, true, 0};
  const SharedSmGrid g{c.Br, c.Bc, c.heavy_first, c.sms, c.k};
  const std::vector<double> solos = solos_for(c.k, rng);
  const std::vector<double> fast = shared_sm_schedule(w, g, solos);
  std::vector<double> works = reference_block_works(c.B, c.N, c.Br, c.Bc, c.heavy_first);
  const double mean = c.mean(), scale = verbatim ? 1.0 : mean;
  if (!verbatim)
    for (double& x : works) x = std::round(x * mean);  // the block's K/V tiles
  for (std::size_t i = 0; i < solos.size(); ++i) {
    const double ref = reference_simulate(works, c.sms, c.k, solos[i]) / scale;
    const double tol = 1e-6 * std::max(1.0, std::abs(ref));
    EXPECT_NEAR(fast[i], ref, tol) << c.str() << " solo=" << solos[i] << (verbatim ? " (verbatim)" : " (in tiles)");
    if (!(std::abs(fast[i] - ref) <= tol)) return false;
  }
  return true;
}

Case random_case(std::mt19937_64& rng) {
  const int tiles[] = {16, 32, 64, 128};
  auto pick = [&](long long lo, long long hi) { return std::uniform_int_distribution<long long>(lo, hi)(rng); };
  Case c;
  c.sms = int(pick(1, 16));
  c.k = int(pick(1, 6));
  c.Br = tiles[pick(0, 3)];
  c.Bc = tiles[pick(0, 3)];
  c.heavy_first = pick(0, 1) == 1;
  // From under one wave to a few hundred blocks per slot.
  c.N = pick(0, 3) == 0 ? pick(1, 64) : pick(1, 2048);
  const long long q_tiles = (c.N + c.Br - 1) / c.Br;
  const long long max_blocks = pick(1, 4) == 1 ? 40000 : 3000;
  c.B = pick(1, std::max(1LL, max_blocks / q_tiles));
  return c;
}

TEST(BlockSchedule, EqualsThePerBlockSimulationInExactArithmeticOnRandomSmallGrids) {
  std::mt19937_64 rng(20271);
  for (int trial = 0; trial < 1000; ++trial) ASSERT_TRUE(compare(random_case(rng), false, rng));
}

TEST(BlockSchedule, EqualsThePerBlockSimulationVerbatimWhereItsWorksAreExact) {
  std::mt19937_64 rng(4099);
  int compared = 0;
  for (int trial = 0; compared < 300 && trial < 200000; ++trial) {
    Case c = random_case(rng);
    // Most dyadic means: q_tiles = 2^j - 1 tiles of Br = Bc (mean 2^(j-1)), or one tile.
    if (trial % 2 == 0) {
      c.Bc = c.Br;
      c.N = c.Br * ((1LL << std::uniform_int_distribution<int>(0, 5)(rng)) - 1);
      if (c.N == 0) c.N = std::uniform_int_distribution<long long>(1, c.Br)(rng);
      c.B = std::max(1LL, std::min(c.B, 20000 / ((c.N + c.Br - 1) / c.Br)));
    }
    if (!c.dyadic_mean()) continue;
    ASSERT_TRUE(compare(c, true, rng));
    ++compared;
  }
  EXPECT_EQ(compared, 300);
}

// Grids built for each skip: many equal blocks per rank (batch-fastest runs), many short entries
// (entry-major periods), a grid above grid.y (folded), a single long entry.
TEST(BlockSchedule, EqualsThePerBlockSimulationWhereItSkips) {
  std::mt19937_64 rng(7);
  const Case cases[] = {
      {5000, 128, 64, 64, true, 7, 3},    {4099, 256, 32, 64, true, 13, 2},  {20000, 128, 64, 64, false, 11, 4},
      {30001, 64, 32, 32, false, 9, 3},   {12345, 192, 64, 32, false, 6, 5}, {70000, 128, 128, 64, false, 5, 2},
      {70001, 64, 64, 64, true, 3, 4},    {1, 300000, 64, 64, true, 12, 3},  {1, 300000, 64, 64, false, 12, 3},
      {1, 200000, 32, 64, true, 10, 4},   {1, 200000, 128, 64, false, 17, 2}, {3, 100000, 64, 128, true, 8, 3},
      {2000, 1024, 128, 64, true, 132, 1}, {64, 1024, 128, 64, true, 132, 1}, {640, 4096, 64, 64, false, 33, 2},
  };
  for (const Case& c : cases) ASSERT_TRUE(compare(c, false, rng)) << c.str();
}

// The grids the per-block simulation could not do (issue 27): 10^9 entries (8.5 GB of block works
// before, then bad_alloc) and one long entry. Their speed is benchmarks/model_bench.cpp's.
TEST(BlockSchedule, HugeGrids) {
  const std::vector<double> solos{1.0, 2.0, 3.0};
  for (bool heavy : {true, false}) {
    // 2 x 10^9 blocks of 1 and 2 K/V tiles (mean 1.5) on 132 x 3 slots: at solo = k, the total
    // work over the slots, times k, plus at most a block's tail.
    const auto a = shared_sm_schedule({1000000000, 128, 64, true, 0}, SharedSmGrid{64, 64, heavy, 132, 3}, solos);
    EXPECT_NEAR(a[2], 2e9 / 396 * 3, 3 * 2 / 1.5 + 1e-6) << heavy;
    EXPECT_LE(a[0], a[2]);
  }
  for (bool heavy : {true, false}) {  // 2^18 query tiles of one entry, 1 to 2^18 K/V tiles each
    const auto b = shared_sm_schedule({1, 1 << 24, 64, true, 0}, SharedSmGrid{64, 64, heavy, 132, 2}, solos);
    const double per_slot = double(1 << 18) / 264 * 2;  // mean blocks per slot, at 1 / k
    EXPECT_GE(b[1], per_slot);
    EXPECT_LE(b[1], per_slot + 2.0 * 2 * (1 << 18) / ((1 << 18) + 1) * 2);
  }
}

}  // namespace
}  // namespace flashtune::model
