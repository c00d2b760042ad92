#include "cli_numbers.h"

#include <CLI/CLI.hpp>

#include <cerrno>
#include <cfloat>
#include <cmath>
#include <cstdlib>

namespace flashtune::app {

std::optional<std::string> number_problem(const std::string& text, NumberKind kind) {
  const std::string quoted = "\"" + text + "\"";
  if (text.empty()) return quoted + " is empty, expected " + (kind == NumberKind::Integer ? "an integer" : "a number");
  if (kind == NumberKind::Integer) {
    std::size_t i = text[0] == '-' || text[0] == '+' ? 1 : 0;
    if (i == text.size()) return quoted + " is not an integer";
    for (; i < text.size(); ++i)
      if (text[i] < '0' || text[i] > '9') return quoted + " is not a decimal integer";
    errno = 0;
    (void)std::strtoll(text.c_str(), nullptr, 10);
    if (errno == ERANGE) return quoted + " is out of range (at most 9223372036854775807)";
    // CLI11 reads a leading zero as octal ("010" is 8, "091" an error): refused as ambiguous.
    const std::size_t first = text[0] == '-' || text[0] == '+' ? 1 : 0;
    if (text.size() > first + 1 && text[first] == '0') return quoted + " has a leading zero";
    return std::nullopt;
  }
  // strtod accepts leading blanks, hex floats, "nan" and "inf": only plain decimals pass here.
  for (const char c : text)
    if (!((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-'))
      return quoted + " is not a number";
  char* end = nullptr;
  errno = 0;
  const double x = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) return quoted + " is not a number";
  if (errno == ERANGE && std::fabs(x) > 1) return quoted + " is out of range";
  if (!std::isfinite(x) || std::fabs(x) > FLT_MAX) return quoted + " is out of range (at most 3.4e38)";
  return std::nullopt;
}

void require_strict_numbers(CLI::App& app) {
  for (CLI::Option* o : app.get_options()) {
    const std::string type = o->get_type_name();
    if (type != "INT" && type != "UINT" && type != "FLOAT") continue;
    const NumberKind kind = type == "FLOAT" ? NumberKind::Real : NumberKind::Integer;
    o->check(CLI::Validator(
        [kind](std::string& text) { return number_problem(text, kind).value_or(std::string()); }, ""));
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) require_strict_numbers(*sub);
}

}  // namespace flashtune::app
