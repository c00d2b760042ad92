#include "fit/decode_lines.h"

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "fit/fit_dataset.h"
#include "kernels/traits/variants.h"

namespace flashtune::fit {

void for_each_decode_line(const std::vector<std::string>& paths, const std::function<void(const DecodeLine&)>& each) {
  for (const std::string& path : paths) {
    std::ifstream in(path);
    if (!in) throw FitInputError(path + ": cannot open");
    const std::string file = std::filesystem::path(path).filename().string();
    int line_no = 0;
    for (std::string line; std::getline(in, line);) {
      ++line_no;
      if (line.empty() || line[0] != '{') continue;
      const std::string where = path + ":" + std::to_string(line_no);
      try {
        const nlohmann::json j = nlohmann::json::parse(line);
        const std::string name = j.at("config").get<std::string>();
        const auto c = parse_config_name(name);
        if (!c || c->variant != Variant::Decode) throw FitInputError(where + ": '" + name + "' is not a decode config");
        each(DecodeLine{j, *c, where, file, line_no});
      } catch (const nlohmann::json::exception& e) {
        throw FitInputError(where + ": " + e.what());
      } catch (const std::invalid_argument& e) {
        throw FitInputError(where + ": " + e.what());
      }
    }
  }
}

}  // namespace flashtune::fit
