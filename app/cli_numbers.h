// Numbers on the command line read one strict way for every subcommand: decimal only (CLI11 would
// read "010" as 8 and "0x10" as 16), never empty (CLI11 read `--B ""` as 0), finite, and within the
// range of the option's type (`--scale 1e39` became inf in a float). The check runs at parse time,
// so a bad number is a usage error naming the option, before any file or GPU is touched.
#pragma once

#include <optional>
#include <string>

namespace CLI {
class App;
}

namespace flashtune::app {

enum class NumberKind { Integer, Real };

// Why `text` is not a valid number of `kind` ("\"\" is empty, expected an integer"), or nullopt.
// Integers: optional sign and decimal digits within 64 bits. Reals: what strtod reads in full,
// finite and within float range (every real option fits a float).
std::optional<std::string> number_problem(const std::string& text, NumberKind kind);

// Attaches the check to every integer and real option of `app` and its subcommands (by CLI11's
// type name, INT / UINT / FLOAT).
void require_strict_numbers(CLI::App& app);

}  // namespace flashtune::app
