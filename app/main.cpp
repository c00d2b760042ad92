// flashtune: predict and tune FlashAttention forward kernels. Each subcommand lives in its own
// cmd_*.cpp and registers itself here; exit codes are in app/exit_codes.h.
#include <CLI/CLI.hpp>

#include <csignal>
#include <cstdio>
#include <exception>
#include <string>

#include "cli_numbers.h"
#include "commands.h"
#include "exit_codes.h"
#include "model/data_dir.h"

namespace {

// A write cut short shows up in stdout's error flag, or in the final flush (> /dev/full, a closed
// pipe): a command whose output never arrived must not exit 0.
int checked_stdout(int code) {
  const bool flushed = std::fflush(stdout) == 0;
  if (!flushed || std::ferror(stdout)) {
    std::fprintf(stderr, "flashtune: cannot write to standard output\n");
    return code == flashtune::app::kExitOk ? flashtune::app::kExitFailure : code;
  }
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  // A file-size limit (ulimit -f) must fail the write with EFBIG and a message, not kill the
  // process half-way through a file.
  std::signal(SIGXFSZ, SIG_IGN);
  CLI::App app{"flashtune: predict and tune fp32 FlashAttention forward kernels on NVIDIA GPUs"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "flashtune 0.1.0");
  // Before the command: where the GPU specs, shipped profiles and plot templates are
  // (model/data_dir.h; default $FLASHTUNE_DATA_DIR, else <bin>/../share/flashtune, else the source tree).
  app.add_option_function<std::string>(
      "--data-dir", [](const std::string& dir) { flashtune::model::set_data_dir(dir); },
      "folder holding configs/gpus, profiles and plots/templates (overrides $FLASHTUNE_DATA_DIR)");
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
  flashtune::app::require_strict_numbers(app);
  // CLI11 answers an unknown command with "A subcommand is required"; name it instead.
  const auto is_command = [&app](const char* name) {
    for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
      if (sub->check_name(name)) return true;
    return false;
  };
  const int first = argc > 2 && std::string(argv[1]) == "--data-dir" ? 3 : 1;  // the command's position
  if (argc > first && argv[first][0] != '-' && !is_command(argv[first])) {
    std::string known;
    for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
      known += (known.empty() ? "" : ", ") + sub->get_name();
    std::fprintf(stderr, "flashtune: unknown command '%s' (known: %s)\n", argv[first], known.c_str());
    return flashtune::app::kExitUsage;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ConversionError& e) {
    // Past the strict check, an integer CLI11 cannot convert is beyond the option's 32-bit type.
    std::fprintf(stderr, "flashtune: %s\n", flashtune::app::conversion_error_text(e.what()).c_str());
    return flashtune::app::kExitUsage;
  } catch (const CLI::ParseError& e) {
    // --help prints as CLI11 writes it; a refused value is one line like every other error (CLI11
    // adds "Run with --help for more information."), control characters escaped.
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success))
      return checked_stdout(app.exit(e) == 0 ? flashtune::app::kExitOk : flashtune::app::kExitUsage);
    std::fprintf(stderr, "flashtune: %s\n", flashtune::printable(e.what()).c_str());
    return flashtune::app::kExitUsage;
  }
  return checked_stdout(flashtune::app::run_selected());
}
