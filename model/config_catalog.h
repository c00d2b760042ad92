// The model's view of the kernels library: which configs exist (kernels/traits/variants.h) and
// their geometry analysis, computed once per config and kept for the life of the catalog.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/traits/tile_config.h"
#include "model/geometry_analysis.h"

namespace flashtune::model {

// Why `c` cannot be built, or why it cannot run `w` (d mismatch, empty problem); nullopt if fine.
std::optional<std::string> config_rejection(const TileConfig& c, const Workload& w);

// Every compiled instantiation, in the kernels library's order.
const std::vector<TileConfig>& compiled_tile_configs();

class ConfigCatalog {
 public:
  // Precondition: the variant accepts `c` (throws std::invalid_argument with the variant's reason
  // otherwise). The reference stays valid for the catalog's lifetime.
  const GeometryAnalysis& analysis(const TileConfig& c);

 private:
  using Key = std::tuple<int, int, int, int, int, int, int, bool, bool, bool, bool>;
  std::map<Key, std::unique_ptr<GeometryAnalysis>> cache_;
};

}  // namespace flashtune::model
