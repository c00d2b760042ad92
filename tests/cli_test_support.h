// Running the built flashtune binary from a test: command line in, exit code and output out.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace flashtune::testing_support {

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Runs `FLASHTUNE_BINARY args` through the shell; args are passed as written (quote paths).
inline CommandResult run_flashtune(const std::string& args) {
  const std::string cmd = std::string("'") + FLASHTUNE_BINARY + "' " + args + " 2>&1";
  CommandResult r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return r;
  char buf[4096];
  std::size_t got = 0;
  while ((got = std::fread(buf, 1, sizeof buf, pipe)) > 0) r.output.append(buf, got);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// Whether gnuplot is on PATH: tests of plot and report that need it skip where it is not (the GPU
// machine has none; CI installs it).
inline bool gnuplot_on_path() { return std::system("command -v gnuplot > /dev/null 2>&1") == 0; }

}  // namespace flashtune::testing_support
