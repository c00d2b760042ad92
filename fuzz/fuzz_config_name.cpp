// Config names (profiles' "config" fields and journal lines): any text either parses to a config
// whose name() is the text again, or is refused; the one parser sits beside TileConfig::name().
#include <cstdint>
#include <cstdlib>
#include <string>

#include "kernels/traits/tile_config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const auto c = flashtune::parse_config_name(text);
  if (c && c->name() != text) std::abort();
  // What parses is a config the name describes in full: parsing its name again gives it back.
  if (c && !(flashtune::parse_config_name(c->name()) == c)) std::abort();
  (void)flashtune::parse_variant(text);
  (void)flashtune::parse_layout(text);
  return 0;
}
