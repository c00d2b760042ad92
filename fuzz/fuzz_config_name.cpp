// Config names (profiles' "config" fields, which both profile readers parse): any text either
// parses to a config whose name() is the text again, or is refused; the plots' parser agrees.
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "plots/plot_profile.h"
#include "tuner/profile.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const auto c = flashtune::parse_config_name(text);
  if (c && c->name() != text) std::abort();
  try {
    const flashtune::TileConfig p = flashtune::plots::parse_config_name(text);
    if (c && !(p.name() == c->name())) std::abort();
  } catch (const std::invalid_argument&) {
    if (c) std::abort();  // the tuner's reader accepted what the plots' refuses
  }
  (void)flashtune::parse_variant(text);
  (void)flashtune::parse_layout(text);
  return 0;
}
