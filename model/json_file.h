// Reading a user's JSON file (GPU spec, profile, workload file) the same strict way everywhere:
// the file must be a regular file (a folder or a FIFO is named as such instead of "malformed JSON"
// or a read that never returns), a key given twice in one object is an error (nlohmann would keep
// the last one silently), and a number beyond double range is reported with the file's name.
// Every message is one line that starts with the file name.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace flashtune {

class JsonFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Parses `text`; `source` names it in errors ("p.json: malformed JSON: ...",
// "p.json: key 'sm_count' given twice in one object", "p.json: number overflow parsing '1e999'").
nlohmann::json parse_json_text(const std::string& text, const std::string& source);

// Reads and parses `path`. Throws JsonFileError: "x.json: cannot open <what>" (no such file),
// "x.json: is a folder, not a JSON file", "x.json: not a regular file", "x.json: cannot read:
// <errno text>", or one of the above.
nlohmann::json read_json_file(const std::string& path, const std::string& what = "file");

// A JSON integer that fits [min, max], or nullopt (a float, a string, or out of range): a
// checked replacement for get<int>(), which truncates 4294967360 to 64 silently.
std::optional<std::int64_t> json_integer_in(const nlohmann::json& v, std::int64_t min, std::int64_t max);

}  // namespace flashtune
