// Numbers on the command line read one strict way for every subcommand: decimal only (CLI11 would
// read "010" as 8 and "0x10" as 16), never empty (CLI11 read `--B ""` as 0), finite, and within the
// range of the option's type (`--scale 1e39` became inf in a float). The check runs at parse time,
// so a bad number is a usage error naming the option, before any file or GPU is touched. Beyond
// numbers: an unsigned option refuses a sign (`--seed -1` was read as 18446744073709551615), a
// real refuses a nonzero value a float cannot hold (`--scale 1e-320` became 0), and no option
// takes an empty value (`--shard ""` tuned the whole plan, `plot --out ""` failed on a folder "").
#pragma once

#include <optional>
#include <string>

#include "model/text_check.h"  // printable(): control characters as \xNN in messages

namespace CLI {
class App;
class Validator;
}

namespace flashtune::app {

enum class NumberKind { Integer, Unsigned, Real };

// Why `text` is not a valid number of `kind` ("\"\" is empty, expected an integer"), or nullopt.
// Integers: optional sign and decimal digits within 64 bits (Unsigned: no '-'). Reals: what strtod
// reads in full, finite, within float range and, when nonzero, at least the smallest normal float
// (every real option fits a float).
std::optional<std::string> number_problem(const std::string& text, NumberKind kind);

// Attaches the check to every integer and real option of `app` and its subcommands (by CLI11's
// type name, INT / UINT / FLOAT), and the empty-value check to every other option that takes a value.
void require_strict_numbers(CLI::App& app);

// A validator for an integer option with a lower bound: `list --d 0` ("0 is below 1").
CLI::Validator integer_at_least(long long min);

// What to print for CLI11's ConversionError ("Could not convert: --d = 4294967360"): the strict check
// lets only 64-bit integers through, so an integer CLI11 cannot convert is beyond the option's
// 32-bit type: "--d 4294967360: out of range (an integer in [-2147483648, 2147483647])".
std::string conversion_error_text(const std::string& what);

}  // namespace flashtune::app
