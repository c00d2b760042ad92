// Each subcommand registers its options with CLI11 and a callback; run_selected() runs the one
// the user picked and returns its exit code.
#pragma once

#include <functional>
#include <string>

namespace CLI {
class App;
}

namespace flashtune::app {

void register_list(CLI::App& app);
void register_run(CLI::App& app);
void register_predict(CLI::App& app);
void register_tune(CLI::App& app);
void register_export(CLI::App& app);
void register_plot(CLI::App& app);
void register_report(CLI::App& app);
void register_check_counters(CLI::App& app);
void register_fit(CLI::App& app);
void register_compare(CLI::App& app);
void register_merge(CLI::App& app);

// Set by the chosen subcommand's parse callback; returns an exit code (exit_codes.h).
void set_action(std::function<int()> action);
int run_selected();

// A command's failure with its exit code; `message` is the one line printed.
struct CommandError {
  int code;
  std::string message;
};

// set_action() for a command whose body throws CommandError: prints "flashtune <command>: <message>"
// (the "needs a CUDA GPU" line reads as a sentence of its own, without the prefix) and returns its code.
void set_reporting_action(const char* command, std::function<int()> body);

}  // namespace flashtune::app
