#include "model/json_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <vector>

namespace flashtune {
namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& source, const std::string& what,
                       JsonFileError::Kind kind = JsonFileError::Kind::kRead) {
  throw JsonFileError(source + ": " + what, kind);
}

// nlohmann's messages start with "[json.exception.parse_error.101] parse error at line 1, ...";
// the bracketed tag says nothing to a user.
std::string without_tag(const std::string& what) {
  if (what.rfind("[json.exception.", 0) != 0) return what;
  const std::size_t close = what.find("] ");
  return close == std::string::npos ? what : what.substr(close + 2);
}

// The byte offset where nesting first exceeds `limit`, or npos.
std::size_t too_deep_at(const std::string& text, int limit) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;  // the escaped character cannot end the string
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return i;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::string::npos;
}

}  // namespace

nlohmann::json parse_json_text(const std::string& text, const std::string& source) {
  // Before anything is built: a tree a million levels deep parses (nlohmann's parser keeps its
  // own stack) but every recursive copy, comparison or dump of it overflows the call stack.
  if (const std::size_t at = too_deep_at(text, kMaxJsonDepth); at != std::string::npos)
    fail(source,
         "nested deeper than " + std::to_string(kMaxJsonDepth) + " levels (at byte " + std::to_string(at) +
             "); the limit is " + std::to_string(kMaxJsonDepth),
         JsonFileError::Kind::kLimit);
  // One set of keys per open object; the parser reports keys before their values.
  std::vector<std::set<std::string>> open_objects;
  std::string duplicate;
  const json::parser_callback_t check_keys = [&](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) {
      open_objects.emplace_back();
    } else if (event == json::parse_event_t::object_end) {
      if (!open_objects.empty()) open_objects.pop_back();
    } else if (event == json::parse_event_t::key && !open_objects.empty()) {
      const std::string key = parsed.get<std::string>();
      if (!open_objects.back().insert(key).second && duplicate.empty()) duplicate = key;
    }
    return true;
  };
  json doc;
  try {
    doc = json::parse(text, check_keys);
  } catch (const json::out_of_range& e) {
    fail(source, without_tag(e.what()), JsonFileError::Kind::kLimit);  // "number overflow parsing '1e999'"
  } catch (const json::exception& e) {
    fail(source, "malformed JSON: " + without_tag(e.what()), JsonFileError::Kind::kMalformed);
  }
  if (!duplicate.empty())
    fail(source, "key '" + duplicate + "' given twice in one object", JsonFileError::Kind::kMalformed);
  return doc;
}

nlohmann::json read_json_file(const std::string& path, const std::string& what) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (st.type() == fs::file_type::not_found) fail(path, "cannot open " + what);
  if (ec) fail(path, "cannot read: " + ec.message());
  if (st.type() == fs::file_type::directory) fail(path, "is a folder, not a JSON file");
  if (st.type() != fs::file_type::regular) fail(path, "not a regular file");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, std::string("cannot read: ") + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) fail(path, "cannot read");
  return parse_json_text(text.str(), path);
}

std::optional<std::int64_t> json_integer_in(const nlohmann::json& v, std::int64_t min, std::int64_t max) {
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (max < 0 || u > static_cast<std::uint64_t>(max)) return std::nullopt;
    const auto s = static_cast<std::int64_t>(u);
    return s < min ? std::nullopt : std::optional<std::int64_t>(s);
  }
  if (!v.is_number_integer()) return std::nullopt;
  const auto s = v.get<std::int64_t>();
  if (s < min || s > max) return std::nullopt;
  return s;
}

}  // namespace flashtune
