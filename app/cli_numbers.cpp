#include "cli_numbers.h"

#include <CLI/CLI.hpp>

#include <cerrno>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace flashtune::app {

std::optional<std::string> number_problem(const std::string& text, NumberKind kind) {
  const std::string quoted = "\"" + text + "\"";
  if (text.empty()) return quoted + " is empty, expected " + (kind != NumberKind::Real ? "an integer" : "a number");
  if (kind == NumberKind::Unsigned && text[0] == '-') return quoted + " is negative, expected an integer >= 0";
  if (kind == NumberKind::Integer || kind == NumberKind::Unsigned) {
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
  // A float reads 1e-320 as 0 (or a subnormal with a few bits): the option would not hold the value.
  if (x != 0 && std::fabs(x) < FLT_MIN) return quoted + " is too small (nonzero values start at 1.2e-38)";
  return std::nullopt;
}

CLI::Validator integer_at_least(long long min) {
  return CLI::Validator(
      [min](std::string& text) -> std::string {
        if (number_problem(text, NumberKind::Integer)) return "";  // the strict check names it
        const long long v = std::strtoll(text.c_str(), nullptr, 10);
        return v < min ? text + " is below " + std::to_string(min) + " (the smallest allowed)" : "";
      },
      "");
}

std::string conversion_error_text(const std::string& what) {
  // "Could not convert: --d = 4294967360"
  const std::string prefix = "Could not convert: ";
  const std::size_t eq = what.find(" = ");
  if (what.rfind(prefix, 0) != 0 || eq == std::string::npos) return printable(what);
  const std::string name = what.substr(prefix.size(), eq - prefix.size());
  const std::string value = what.substr(eq + 3);
  if (!number_problem(value, NumberKind::Integer))
    return name + " " + value + ": out of range (an integer in [-2147483648, 2147483647])";
  return name + " " + printable(value) + ": cannot be read as this option's type";
}

void require_strict_numbers(CLI::App& app) {
  for (CLI::Option* o : app.get_options()) {
    const std::string type = o->get_type_name();
    if (type != "INT" && type != "UINT" && type != "FLOAT") {
      // Any other option that takes a value: an empty one is a mistake (an unset shell variable),
      // never a request for the default.
      if (o->get_type_size_min() > 0)
        o->check(CLI::Validator([](std::string& text) { return text.empty() ? std::string("\"\" is empty (give a value, or leave the option out)") : std::string(); }, ""));
      continue;
    }
    const NumberKind kind = type == "FLOAT"  ? NumberKind::Real
                            : type == "UINT" ? NumberKind::Unsigned
                                             : NumberKind::Integer;
    o->check(CLI::Validator(
        [kind](std::string& text) { return number_problem(text, kind).value_or(std::string()); }, ""));
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) require_strict_numbers(*sub);
}

}  // namespace flashtune::app
