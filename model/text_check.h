// Names that reach the terminal (GPU spec names and aliases, workload names): control characters
// (an ANSI escape, a NUL that cuts the name short) are refused where a name is read, and written as
// \xNN wherever a message echoes text from a file or the command line.
#pragma once

#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

namespace flashtune {

inline bool is_control_character(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u < 0x20 || u == 0x7f;
}

// `text` with each control character written as \xNN.
inline std::string printable(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (is_control_character(c)) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(static_cast<unsigned char>(c)));
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

// Why `name` cannot be a name ("is empty", "holds the control character \x1b at 3"), or nullopt.
inline std::optional<std::string> name_problem(std::string_view name) {
  if (name.empty()) return std::string("is empty");
  for (std::size_t i = 0; i < name.size(); ++i)
    if (is_control_character(name[i]))
      return "holds the control character " + printable(name.substr(i, 1)) + " at byte " + std::to_string(i) +
             " ('" + printable(name) + "')";
  return std::nullopt;
}

}  // namespace flashtune
