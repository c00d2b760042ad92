// A number as the messages name it: printf's %g (six significant digits, inf and nan spelled out).
#pragma once

#include <cstdio>
#include <string>

namespace flashtune {

inline std::string number_text(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

}  // namespace flashtune
