#include "model/workload_limits.h"

#include <algorithm>
#include <climits>
#include <cstdint>


namespace flashtune::model {
namespace {

// Products of three 63-bit factors are checked in 128 bits, so the check itself cannot overflow.
__extension__ typedef __int128 Wide;
constexpr Wide kInt64Max = LLONG_MAX;
// The grid: batch in grid.y up to 65535, else folded into grid.x (kernels/support_checks.cpp).
constexpr long long kMaxGridY = 65535;
constexpr long long kMaxGridX = INT_MAX;
// Smallest and largest tiles of any variant, and the most warps a block has: the model counts
// (block, K/V tile) visits per warp, so this bounds every count it forms.
constexpr long long kMinTile = 16;
constexpr long long kMaxTile = 128;
constexpr long long kMaxWarpsPerBlock = 32;

}  // namespace

std::optional<std::string> workload_limit_error(const Workload& w) {
  using std::to_string;
  if (w.B < 1) return "B=" + to_string(w.B) + ": must be >= 1";
  if (w.N < 1) return "N=" + to_string(w.N) + ": must be >= 1";
  // Which d the kernels have is each command's own check (exit 4 where nothing implements it);
  // here d only has to be a size.
  if (w.d < 1) return "d=" + to_string(w.d) + ": must be >= 1";
  if (w.N > INT_MAX) return "N=" + to_string(w.N) + " is above the kernels' limit " + to_string(INT_MAX);
  if (w.kv_len < 0) return "kv_len=" + to_string(w.kv_len) + ": must be >= 1 (or 0 for N)";
  if (w.keys() > INT_MAX) return "kv_len=" + to_string(w.keys()) + " is above the kernels' limit " + to_string(INT_MAX);
  if (w.kv_group < 1) return "kv_group=" + to_string(w.kv_group) + ": must be >= 1";
  if (w.B % w.kv_group != 0)
    return "B=" + to_string(w.B) + " is not a multiple of kv_group=" + to_string(w.kv_group) +
           " (the query heads of a K/V head are entries of one batch)";
  if (w.causal && w.N > w.keys())
    return "causal with N=" + to_string(w.N) + " above kv_len=" + to_string(w.keys()) +
           ": bottom-right alignment would leave the first query rows no key";
  const Wide bytes = Wide(16) * w.B * std::max(w.N, w.keys()) * w.d;
  if (bytes > kInt64Max)
    return "B=" + to_string(w.B) + " N=" + to_string(w.N) + " d=" + to_string(w.d) +
           ": Q, K, V and O would take more than 2^63 bytes";
  const Wide tiles = (Wide(w.N) + kMinTile - 1) / kMinTile;
  const Wide kv_tiles = (Wide(w.keys()) + kMinTile - 1) / kMinTile;
  if (Wide(w.B) * tiles * kv_tiles * kMaxWarpsPerBlock > kInt64Max)
    return "B=" + to_string(w.B) + " N=" + to_string(w.N) + ": tile counts overflow 64-bit arithmetic";
  const long long fewest_blocks = w.B * ((w.N + kMaxTile - 1) / kMaxTile);
  if (w.B > kMaxGridY && fewest_blocks > kMaxGridX)
    return "B=" + to_string(w.B) + " N=" + to_string(w.N) + ": the grid needs at least " + to_string(fewest_blocks) +
           " blocks, above the limit of " + to_string(kMaxGridX);
  return std::nullopt;
}

long long workload_bytes(const Workload& w) {
  return 8LL * w.B * w.N * w.d + 8LL * (w.B / std::max(1, w.kv_group)) * w.keys() * w.d;
}

}  // namespace flashtune::model
