// flashtune: predict and tune FlashAttention forward kernels. Each subcommand lives in its own
// cmd_*.cpp and registers itself here; exit codes are in app/exit_codes.h.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>

#include "commands.h"
#include "exit_codes.h"

int main(int argc, char** argv) {
  CLI::App app{"flashtune: predict and tune fp32 FlashAttention forward kernels on NVIDIA GPUs"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "flashtune 0.1.0");
  flashtune::app::register_list(app);
  flashtune::app::register_run(app);
  flashtune::app::register_predict(app);
  flashtune::app::register_tune(app);
  flashtune::app::register_export(app);
  flashtune::app::register_plot(app);
  flashtune::app::register_report(app);
  flashtune::app::register_check_counters(app);
  flashtune::app::register_fit(app);
  flashtune::app::register_compare(app);
  flashtune::app::register_merge(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? flashtune::app::kExitOk : flashtune::app::kExitUsage;
  }
  return flashtune::app::run_selected();
}
