#include "model/block_schedule.h"

#include <algorithm>
#include <array>
#include <map>
#include <mutex>
#include <tuple>
#include <utility>
#include <vector>

#include "kernels/traits/tile_config.h"
#include "kernels/traits/traits_common.h"
#include "model/counts.h"

namespace flashtune::model {
namespace {

constexpr int kSoloPoints = 9;

// The launch order's block lengths in K/V tiles (integers, so every time below is exact), computed
// from the block's index instead of stored: entry-major (the query tile fastest) or, batch-fastest,
// rank-major (B equal blocks per query tile rank).
struct BlockLengths {
  long long B = 0, q_tiles = 0, kv_tiles = 0;
  long long Br = 0, Bc = 0;
  long long offset = 0;  // keys - N: query row i sees keys up to i + offset (bottom-right causal)
  bool heavy_first = false, batch_fastest = false;

  long long total() const { return B * q_tiles; }
  // Tile number `r` of an entry in launch order. As count_tile_visits: the last query row of tile
  // i is (i + 1) Br - 1, and it sees keys up to that plus the offset.
  long long tile(long long r) const {
    const long long i = heavy_first ? q_tiles - 1 - r : r;
    return causal_kv_tiles(i, Br, Bc, kv_tiles, offset);
  }
  long long at(long long n) const { return batch_fastest ? tile(n / B) : tile(n % q_tiles); }
  // How many blocks from n on (n included) have block n's length, counting only whole ranks of a
  // batch-fastest grid (enough for the skips below).
  long long run(long long n) const {
    if (!batch_fastest) return 1;
    const long long r = n / B, len = tile(r);
    long long end = r + 1;
    // Equal lengths come in groups of at most ceil(Bc / Br) + 1 consecutive ranks.
    while (end < q_tiles && tile(end) == len) ++end;
    return end * B - n;
  }
};

// One slot of an SM: the (virtual) time its running block finishes, in K/V tiles at the full-SM
// rate, and its SM. Slots are handed out by (finish, SM): the event order of the per-block
// simulation (ties to the lower SM).
struct Slot {
  long long finish;
  int sm;
};
bool before(const Slot& a, const Slot& b) { return a.finish < b.finish || (a.finish == b.finish && a.sm < b.sm); }

// Walks the block lengths in launch order from block n on with no division per block: the
// numerator (i + 1) Br - 1 of tile i's length is kept as a quotient and remainder by Bc.
class Cursor {
 public:
  Cursor(const BlockLengths& len, long long n) : len_(len), br_q_(len.Br / len.Bc), br_r_(len.Br % len.Bc) {
    if (len_.batch_fastest) {
      rank_ = n / len_.B;
      left_ = len_.B - n % len_.B;
    } else {
      rank_ = n % len_.q_tiles;
      left_ = 1;
    }
    set();
  }
  long long value() const { return std::min(len_.kv_tiles, q_ + 1); }
  void next() {
    if (--left_ > 0) return;
    left_ = len_.batch_fastest ? len_.B : 1;
    if (++rank_ == len_.q_tiles) {
      rank_ = 0;
      set();
    } else if (!len_.heavy_first) {  // tile i + 1
      q_ += br_q_;
      if ((r_ += br_r_) >= len_.Bc) r_ -= len_.Bc, ++q_;
    } else {  // tile i - 1
      q_ -= br_q_;
      if ((r_ -= br_r_) < 0) r_ += len_.Bc, --q_;
    }
  }

 private:
  void set() {
    const long long i = len_.heavy_first ? len_.q_tiles - 1 - rank_ : rank_;
    q_ = ((i + 1) * len_.Br - 1 + len_.offset) / len_.Bc;
    r_ = ((i + 1) * len_.Br - 1 + len_.offset) % len_.Bc;
  }
  const BlockLengths& len_;
  long long br_q_, br_r_;
  long long rank_ = 0, left_ = 1, q_ = 0, r_ = 0;
};

// What the tail needs once the last block is placed: the time of that placement and the finish of
// every slot's block, by SM (k per SM; fewer when the grid has fewer than SMs x k blocks, then
// from time 0).
struct LaunchEnd {
  long long last_start = 0;
  std::vector<std::vector<long long>> per_sm;
};

// Sorts slots by (finish, SM) after a round changed them; O(P + SMs) for the orders rounds leave
// (finishes ascending or descending, equal finishes in any SM order).
void resort(std::vector<Slot>& s, int sms, std::vector<Slot>& scratch, std::vector<int>& bucket) {
  if (std::is_sorted(s.begin(), s.end(), before)) return;
  auto by_finish = [](const Slot& a, const Slot& b) { return a.finish < b.finish; };
  if (!std::is_sorted(s.begin(), s.end(), by_finish)) {
    std::reverse(s.begin(), s.end());
    if (!std::is_sorted(s.begin(), s.end(), by_finish)) {
      std::sort(s.begin(), s.end(), before);
      return;
    }
  }
  auto by_sm = [](const Slot& a, const Slot& b) { return a.sm < b.sm; };
  for (std::size_t i = 0, j; i < s.size(); i = j) {
    for (j = i + 1; j < s.size() && s[j].finish == s[i].finish;) ++j;
    if (j - i <= 32) {
      std::sort(s.begin() + long(i), s.begin() + long(j), by_sm);
      continue;
    }
    bucket.assign(std::size_t(sms) + 1, 0);  // counting sort by SM
    for (std::size_t x = i; x < j; ++x) ++bucket[std::size_t(s[x].sm) + 1];
    for (int x = 0; x < sms; ++x) bucket[std::size_t(x) + 1] += bucket[std::size_t(x)];
    scratch.resize(j - i);
    for (std::size_t x = i; x < j; ++x) scratch[std::size_t(bucket[std::size_t(s[x].sm)]++)] = s[x];
    std::copy(scratch.begin(), scratch.end(), s.begin() + long(i));
  }
}

// Relative state of the slots (finish minus the earliest, and SM), for finding a period.
bool same_shape(const std::vector<Slot>& a, const std::vector<Slot>& b) {
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].sm != b[i].sm || a[i].finish - a[0].finish != b[i].finish - b[0].finish) return false;
  return true;
}

// Places c blocks of length L at once: a list schedule hands them the c smallest of
// (finish + j L, SM) over all slots and j >= 0, so find the c-th smallest start theta (binary
// search on the count of starts <= theta), give every slot its starts below theta, and the starts
// at theta to the lowest SMs. O(P log(spread + L)) however large c is.
void place_equal(std::vector<Slot>& s, long long c, long long L, long long& last_start, std::vector<Slot>& at_theta) {
  const long long P = static_cast<long long>(s.size()), per = (c + P - 1) / P;
  auto starts_upto = [&](long long theta) {
    long long count = 0;
    for (const Slot& x : s)
      if (x.finish <= theta) count += (theta - x.finish) / L + 1;
    return count;
  };
  long long lo = s[0].finish + (per - 1) * L, hi = s[std::size_t(P - 1)].finish + per * L;
  while (lo < hi) {
    const long long mid = lo + (hi - lo) / 2;
    if (starts_upto(mid) >= c)
      hi = mid;
    else
      lo = mid + 1;
  }
  const long long theta = lo;
  long long left = c - starts_upto(theta - 1);  // starts at theta still to give
  at_theta.clear();
  for (Slot& x : s) {
    if (x.finish < theta) x.finish += ((theta - 1 - x.finish) / L + 1) * L;
    if (x.finish == theta) at_theta.push_back(x);
  }
  std::sort(at_theta.begin(), at_theta.end(), before);  // by SM: all finish at theta
  for (std::size_t i = 0; i < at_theta.size() && left > 0; ++i, --left) at_theta[i].finish += L;
  // Write back over the slots at theta (the same SMs: slots of one SM are interchangeable).
  std::size_t w = 0;
  for (Slot& x : s)
    if (x.finish == theta) x = at_theta[w++];
  last_start = theta;
  std::sort(s.begin(), s.end(), before);
}

// While blocks remain to be placed, every SM holds k blocks, so each runs at 1 / k of the SM and
// the SMs x k slots are independent: a list schedule of the blocks on them, in (finish, SM) order.
// It is computed in rounds of P = SMs x k blocks over the slots kept sorted: where each slot of a
// round takes one block (no slot's new finish comes before a slot still waiting in that round)
// a round costs O(P + SMs) (one add per slot and a sort that is usually a check or a reversal);
// where it does not, a heap places that round's blocks one by one. Repetition is skipped whole:
//  - a run of at least P equal blocks (batch-fastest: B blocks per query tile rank) is placed at
//    once by place_equal;
//  - an entry-major grid repeats its block lengths every q_tiles blocks: at rounds that start at
//    the same place in an entry, the slots' relative state (finish - earliest, SM) is compared
//    with a saved one (Brent's cycle search); once it recurs, whole periods are skipped by adding
//    the period's advance to every slot.
LaunchEnd launch(const BlockLengths& len, int sms, int k) {
  const long long total = len.total();
  const long long P = static_cast<long long>(sms) * k;
  LaunchEnd end;
  end.per_sm.resize(static_cast<std::size_t>(sms));
  if (total <= P) {  // one partial first wave, slot by slot round-robin over the SMs
    Cursor c(len, 0);
    for (long long j = 0; j < total; ++j, c.next()) end.per_sm[std::size_t(j % sms)].push_back(c.value());
    return end;
  }
  std::vector<Slot> s(static_cast<std::size_t>(P));
  {
    Cursor c(len, 0);
    for (long long j = 0; j < P; ++j, c.next()) s[std::size_t(j)] = {c.value(), int(j % sms)};
  }
  std::sort(s.begin(), s.end(), before);

  long long n = P;  // next block to place
  // Period search (entry-major only): at rounds whose first block is at the same place in an entry.
  const bool periodic = !len.batch_fastest && len.B > 1;
  long long check_every = 1;  // rounds between checks: q_tiles / gcd(P, q_tiles)
  {
    long long a = P % len.q_tiles, b = len.q_tiles;
    while (a) std::swap(a, b %= a);
    check_every = len.q_tiles / b;
  }
  std::vector<Slot> saved, scratch, heap;
  std::vector<int> bucket;
  long long saved_n = 0, power = 1, since = 0, rounds = 0;
  bool skipped = false;

  std::vector<long long> add(static_cast<std::size_t>(P));
  while (n < total) {
    if (len.batch_fastest) {
      const long long run = len.run(n);
      if (run >= P) {
        place_equal(s, run, len.at(n), end.last_start, scratch);
        n += run;
        continue;
      }
    }
    if (periodic && !skipped && (rounds % check_every) == 0) {
      if (!saved.empty() && same_shape(saved, s)) {
        const long long period = n - saved_n, advance = s[0].finish - saved[0].finish;
        const long long periods = (total - n) / period;
        if (periods > 1) {
          for (Slot& x : s) x.finish += (periods - 1) * advance;
          n += (periods - 1) * period;
          skipped = true;
          continue;
        }
      }
      if (saved.empty() || ++since == power) {
        saved = s;
        saved_n = n;
        power *= 2;
        since = 0;
      }
    }
    ++rounds;
    const long long m = std::min(P, total - n);
    // Each slot of the round takes one block?
    bool one_each = true;
    const Slot last = s[std::size_t(m - 1)];
    Cursor c(len, n);
    for (long long j = 0; j < m; ++j, c.next()) {
      add[std::size_t(j)] = c.value();
      if (j + 1 < m && !before(last, Slot{s[std::size_t(j)].finish + add[std::size_t(j)], s[std::size_t(j)].sm}))
        one_each = false;
    }
    if (one_each) {
      end.last_start = last.finish;
      for (long long j = 0; j < m; ++j) s[std::size_t(j)].finish += add[std::size_t(j)];
      resort(s, sms, scratch, bucket);
    } else {
      auto after = [](const Slot& a, const Slot& b) { return before(b, a); };
      heap = s;  // sorted ascending is a valid min-heap under `after`
      for (long long j = 0; j < m; ++j) {
        std::pop_heap(heap.begin(), heap.end(), after);
        end.last_start = heap.back().finish;
        heap.back().finish += add[std::size_t(j)];
        std::push_heap(heap.begin(), heap.end(), after);
      }
      s.swap(heap);
      std::sort(s.begin(), s.end(), before);
    }
    n += m;
  }
  for (const Slot& x : s) end.per_sm[std::size_t(x.sm)].push_back(x.finish);
  return end;
}

// After the last placement each SM runs down its blocks alone: m resident blocks each at
// 1 / max(solo, m) of the SM, so with remaining works r_1 <= .. <= r_m (full-SM units) it ends
// sum_j (r_j - r_{j-1}) max(solo, m - j + 1) after the placement. Times in K/V tiles.
double makespan_tiles(const LaunchEnd& e, int k, double solo, std::vector<long long>& scratch) {
  double tail = 0;
  for (const std::vector<long long>& finishes : e.per_sm) {
    scratch.assign(finishes.begin(), finishes.end());
    std::sort(scratch.begin(), scratch.end());
    const std::size_t m = scratch.size();
    double t = 0;
    long long prev = e.last_start;
    for (std::size_t j = 0; j < m; ++j) {
      const long long r = std::max(scratch[j], e.last_start);
      t += double(r - prev) * std::max(solo, double(m - j));
      prev = r;
    }
    tail = std::max(tail, t);
  }
  return double(k) * double(e.last_start) + tail;
}

BlockLengths lengths_of(const Workload& w, const SharedSmGrid& g) {
  BlockLengths len;
  len.B = w.B;
  len.Br = g.Br;
  len.Bc = g.Bc;
  len.q_tiles = (w.N + g.Br - 1) / g.Br;
  len.kv_tiles = (w.keys() + g.Bc - 1) / g.Bc;
  len.offset = w.causal_offset();
  len.heavy_first = g.heavy_first;
  len.batch_fastest = traits::grid_order(w.B, len.q_tiles, true, g.heavy_first) == traits::GridOrder::BatchFastest;
  return len;
}

// The mean block in K/V tiles: one entry's tiles summed (exact in 64 bits), over q_tiles.
double mean_tiles(const BlockLengths& len) {
  long long sum = 0;
  for (long long i = 0; i < len.q_tiles; ++i)
    sum += std::min(len.kv_tiles, ((i + 1) * len.Br - 1 + len.offset) / len.Bc + 1);
  return double(sum) / double(len.q_tiles);
}

}  // namespace

std::vector<double> shared_sm_schedule(const Workload& w, const SharedSmGrid& g, const std::vector<double>& solos) {
  std::vector<double> out(solos.size(), 0.0);
  if (w.B <= 0 || w.N <= 0 || g.sm_count <= 0 || g.Br <= 0 || g.Bc <= 0) return out;
  const int k = std::max(1, g.blocks_per_sm);
  const BlockLengths len = lengths_of(w, g);
  const LaunchEnd end = launch(len, g.sm_count, k);
  const double mean = mean_tiles(len);
  std::vector<long long> scratch;
  for (std::size_t i = 0; i < solos.size(); ++i)
    out[i] = makespan_tiles(end, k, std::clamp(solos[i], 1.0, double(k)), scratch) / mean;
  return out;
}

double shared_sm_makespan(const Workload& w, const SharedSmGrid& g, double solo) {
  const long long q_tiles = (w.N + g.Br - 1) / std::max(1, g.Br);
  const int k = std::max(1, g.blocks_per_sm);
  if (w.B <= 0 || w.N <= 0 || g.sm_count <= 0 || g.Br <= 0 || g.Bc <= 0) return 0.0;
  if (!w.causal) {
    const long long blocks = q_tiles * w.B, per_wave = static_cast<long long>(g.sm_count) * k;
    return double((blocks + per_wave - 1) / per_wave) * k;
  }
  using Key = std::tuple<long long, long long, long long, int, int, bool, int, int>;
  static std::mutex mutex;
  static std::map<Key, std::array<double, kSoloPoints>> cache;
  const Key key{w.B, w.N, w.keys(), g.Br, g.Bc, g.heavy_first, g.sm_count, k};
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
    std::vector<double> solos(kSoloPoints);
    for (int i = 0; i < kSoloPoints; ++i) solos[std::size_t(i)] = 1.0 + (k - 1) * double(i) / (kSoloPoints - 1);
    const std::vector<double> t = shared_sm_schedule(w, g, solos);
    std::copy(t.begin(), t.end(), table.begin());
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
