// `flashtune list`: the registry of compiled kernel instantiations with their geometry (from the
// traits, no GPU needed) and, with --resources, the compiled registers and spills (needs a GPU).
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli_numbers.h"
#include "cli_options.h"
#include "commands.h"
#include "exit_codes.h"
#include "kernels/registry.h"
#include "kernels/traits/variants.h"
#include "tuner/config_select.h"
#include "tuner/device_check.h"

namespace flashtune::app {
namespace {

struct ListOptions {
  bool json = false;
  bool resources = false;
  int d = 0;  // 0: all
  std::string variant;
  std::string dtype;  // empty: all
};

nlohmann::json row_json(const KernelInstance& k, const KernelResources* res) {
  const TileConfig& c = k.config();
  const KernelGeometry g = make_geometry(c);
  nlohmann::json j = {{"name", c.name()},          {"variant", variant_name(c.variant)},
                      {"d", c.d},                  {"Br", c.Br},
                      {"Bc", c.Bc},                {"layout", layout_name(c.layout)},
                      {"precision", precision_name(variant_precision(c.variant))},
                      {"dtype", dtype_name(c.dtype)},  {"stages", c.stages}, {"q_smem", c.q_smem}, {"overlap", c.overlap},
                      {"ping_pong", c.ping_pong}, {"persistent", c.persistent},
                      {"threads", g.threads_per_block}, {"smem_bytes", g.smem_bytes}};
  if (res) {
    j["registers"] = res->registers;
    j["local_bytes"] = res->local_bytes;
    j["static_smem_bytes"] = res->static_smem_bytes;
    j["max_threads_per_block"] = res->max_threads_per_block;
  }
  return j;
}

int list_kernels(const ListOptions& o) {
  std::optional<Variant> variant;
  std::optional<DType> dtype;
  try {
    if (!o.variant.empty()) variant = parse_variant_or_throw(o.variant);
    if (o.d != 0) require_compiled_head_dim(o.d);
    dtype = dtype_filter_of(o.dtype);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "flashtune list: %s\n", e.what());
    return kExitUsage;
  }
  if (o.resources) {
    if (const auto problem = cuda_device_problem()) {
      std::fprintf(stderr, "flashtune list --resources needs a CUDA GPU: %s\n", problem->c_str());
      return kExitNoDevice;
    }
  }

  std::vector<const KernelInstance*> rows;
  for (const KernelInstance* k : kernel_registry())
    if ((o.d == 0 || k->config().d == o.d) && (!variant || k->config().variant == *variant) &&
        (!dtype || k->config().dtype == *dtype))
      rows.push_back(k);
  std::vector<KernelResources> resources;
  if (o.resources)
    for (const KernelInstance* k : rows) resources.push_back(k->resources());

  if (o.json) {
    nlohmann::json out = {{"schema_version", 1}, {"kernels", nlohmann::json::array()}};
    for (std::size_t i = 0; i < rows.size(); ++i)
      out["kernels"].push_back(row_json(*rows[i], o.resources ? &resources[i] : nullptr));
    std::printf("%s\n", out.dump(2).c_str());
    return kExitOk;
  }
  std::printf("%-44s %-12s %4s %4s %4s %-9s %-5s %7s %10s", "name", "variant", "d", "Br", "Bc", "layout", "dtype",
              "threads", "smem_bytes");
  if (o.resources) std::printf(" %5s %11s", "regs", "spill_bytes");
  std::printf("\n");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const TileConfig& c = rows[i]->config();
    const KernelGeometry g = make_geometry(c);
    std::printf("%-44s %-12s %4d %4d %4d %-9s %-5s %7d %10d", c.name().c_str(), variant_name(c.variant), c.d, c.Br,
                c.Bc, layout_name(c.layout), dtype_name(c.dtype), g.threads_per_block, g.smem_bytes);
    if (o.resources) std::printf(" %5d %11d", resources[i].registers, resources[i].local_bytes);
    std::printf("\n");
  }
  std::printf("%zu of %zu compiled instantiations\n", rows.size(), kernel_registry().size());
  return kExitOk;
}

}  // namespace

void register_list(CLI::App& app) {
  auto opts = std::make_shared<ListOptions>();
  CLI::App* sub = app.add_subcommand("list", "Print the compiled kernel instantiations (the registry)");
  sub->add_flag("--json", opts->json, "Print JSON instead of a table");
  sub->add_option("--d", opts->d, "Only this head dimension")->check(integer_at_least(1));  // 0 listed every config
  sub->add_option("--variant", opts->variant, "Only this variant (" + known_variants() + ")");
  sub->add_option("--dtype", opts->dtype, dtype_help("Only configs of this element type"));
  sub->add_flag("--resources", opts->resources, "Add compiled registers and spill bytes (needs a GPU)");
  sub->callback([opts] { set_action([opts] { return list_kernels(*opts); }); });
}

}  // namespace flashtune::app
