// The model's time for one (workload, config) on one GPU through the installed library, with the
// GPU's shipped profile when it holds fitted coefficients (as `flashtune predict` does).
// Usage: consumer GPU B N d CONFIG      e.g. consumer h200 10 2048 64 mma_3xtf32/d64/br64xbc64/swizzled
// Prints two lines: "profile <path or none>" and "time_s <seconds, 17 significant digits>".
#include <cstdio>
#include <exception>
#include <optional>
#include <string>

#include <flashtune/kernels/traits/tile_config.h>
#include <flashtune/model/config_catalog.h>
#include <flashtune/model/data_dir.h>
#include <flashtune/model/gpu_spec.h>
#include <flashtune/model/rank.h>
#include <flashtune/profile/model_profile.h>

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: consumer GPU B N d CONFIG\n");
    return 2;
  }
  try {
    flashtune::model::set_data_dir(FLASHTUNE_CONSUMER_DATA_DIR);  // the installed share/flashtune
    const flashtune::model::GpuSpec gpu =
        flashtune::model::find_gpu_spec(argv[1], flashtune::model::default_gpu_spec_dir());
    flashtune::Workload w;
    w.B = std::stoll(argv[2]);
    w.N = std::stoll(argv[3]);
    w.d = std::stoi(argv[4]);
    const std::optional<flashtune::TileConfig> config = flashtune::parse_config_name(argv[5]);
    if (!config) {
      std::fprintf(stderr, "consumer: not a config name: %s\n", argv[5]);
      return 2;
    }
    const flashtune::model::ModelProfile profile = flashtune::default_model_profile(gpu);
    flashtune::model::ConfigCatalog catalog;
    const flashtune::model::Ranking ranking = flashtune::model::rank_configs(w, {*config}, gpu, profile, catalog);
    if (ranking.ranked.empty()) {
      std::fprintf(stderr, "consumer: %s cannot run on %s\n", argv[5], gpu.name.c_str());
      return 4;
    }
    std::printf("profile %s\n", profile.path.empty() ? "none" : profile.path.c_str());
    std::printf("time_s %.17g\n", ranking.ranked.front().prediction.time_s);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "consumer: %s\n", e.what());
    return 1;
  }
}
