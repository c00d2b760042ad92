// Reading a user's JSON file (GPU spec, profile, workload file) the same strict way everywhere:
// the file must be a regular file (a folder or a FIFO is named as such instead of "malformed JSON"
// or a read that never returns), a key given twice in one object is an error (nlohmann would keep
// the last one silently), a number beyond double range is reported with the file's name, and
// nesting deeper than kMaxJsonDepth is refused before anything is built (a profile nested
// 1,000,000 deep used to overflow the stack when its unknown field was copied).
// Every message is one line that starts with the file name.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace flashtune {

// How deep arrays and objects may nest in any JSON flashtune reads (profiles, journal lines,
// spec sheets, workload files, compiled-instruction tables). The deepest file we write nests 4
// levels; the limit leaves room for a user's unknown fields and stays far from the stack depth
// the recursive copy, comparison and dump of nlohmann::json need.
inline constexpr int kMaxJsonDepth = 256;

class JsonFileError : public std::runtime_error {
 public:
  // kRead: the file could not be opened or read; kMalformed: not JSON (or a key given twice);
  // kLimit: JSON, but beyond a limit (nesting depth, a number beyond double range).
  enum class Kind { kRead, kMalformed, kLimit };
  explicit JsonFileError(const std::string& what, Kind kind = Kind::kRead)
      : std::runtime_error(what), kind_(kind) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

// Parses `text`: the one JSON parse of the code base (every file and every journal line goes
// through it). `source` names it in errors ("p.json: malformed JSON: ...",
// "p.json: key 'sm_count' given twice in one object", "p.json: number overflow parsing '1e999'",
// "p.json: nested deeper than 256 levels (at byte 257); the limit is 256").
nlohmann::json parse_json_text(const std::string& text, const std::string& source);

// Reads and parses `path`. Throws JsonFileError: "x.json: cannot open <what>" (no such file),
// "x.json: is a folder, not a JSON file", "x.json: not a regular file", "x.json: cannot read:
// <errno text>", or one of the above.
nlohmann::json read_json_file(const std::string& path, const std::string& what = "file");

// A JSON integer that fits [min, max], or nullopt (a float, a string, or out of range): a
// checked replacement for get<int>(), which truncates 4294967360 to 64 silently.
std::optional<std::int64_t> json_integer_in(const nlohmann::json& v, std::int64_t min, std::int64_t max);

}  // namespace flashtune
