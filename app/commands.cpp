#include "commands.h"

#include <cstdio>
#include <exception>
#include <utility>

#include "cli_numbers.h"
#include "exit_codes.h"

namespace flashtune::app {
namespace {
std::function<int()>& selected() {
  static std::function<int()> action;
  return action;
}
}  // namespace

void set_action(std::function<int()> action) { selected() = std::move(action); }

void set_reporting_action(const char* command, std::function<int()> body) {
  set_action([command, body = std::move(body)] {
    try {
      return body();
    } catch (const CommandError& e) {
      // Control characters from a file or the command line are written as \xNN, never raw.
      if (e.code == kExitNoDevice)
        std::fprintf(stderr, "%s\n", printable(e.message).c_str());
      else
        std::fprintf(stderr, "flashtune %s: %s\n", command, printable(e.message).c_str());
      return e.code;
    }
  });
}

int run_selected() {
  if (!selected()) return kExitUsage;
  try {
    return selected()();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "flashtune: error: %s\n", printable(e.what()).c_str());
    return kExitFailure;
  }
}

}  // namespace flashtune::app
