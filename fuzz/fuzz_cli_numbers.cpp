// Numbers on the command line (app/cli_numbers.h): whatever the strict check accepts, CLI11 then
// converts to the option's type without loss (an integer within 64 bits, a finite float), and the
// workload limits hold for any B and N the command line can give.
#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "app/cli_numbers.h"
#include "model/workload_limits.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (text.find('\0') != std::string::npos) return 0;  // argv cannot hold one
  using flashtune::app::NumberKind;
  const bool integer_ok = !flashtune::app::number_problem(text, NumberKind::Integer);
  const bool real_ok = !flashtune::app::number_problem(text, NumberKind::Real);
  CLI::App app{"fuzz"};
  long long B = 1;
  float scale = 1;
  double cap = 1;
  app.add_option("--B", B);
  app.add_option("--scale", scale);
  app.add_option("--cap", cap);
  flashtune::app::require_strict_numbers(app);
  for (const char* opt : {"--B", "--scale", "--cap"}) {
    const bool accepted_here = std::string(opt) == "--B" ? integer_ok : real_ok;
    // --opt=TEXT: a value starting with '-' stays a value.
    const std::string arg = std::string(opt) + "=" + text;
    const char* argv[] = {"fuzz", arg.c_str()};
    try {
      app.parse(2, const_cast<char**>(argv));
    } catch (const CLI::ParseError&) {
      if (accepted_here) std::abort();  // the check let through what CLI11 refuses
      continue;
    }
    if (!accepted_here) std::abort();  // CLI11 accepted what the check refuses: the validator did not run
    if (!std::isfinite(scale) || !std::isfinite(cap)) std::abort();
    flashtune::Workload w;
    w.B = B;
    w.N = B;
    w.d = 64;
    (void)flashtune::model::workload_limit_error(w);
  }
  return 0;
}
