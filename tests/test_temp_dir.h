// A fresh folder under the system temp dir for one test, removed with everything in it at the end,
// and the line count of a command's output (the CLI tests hold errors to one line).
#pragma once

#include <unistd.h>

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <string>

namespace flashtune::testing_support {

class TempDir {
 public:
  // `tag` names the test in the folder's name; the pid and a counter keep parallel runs apart.
  explicit TempDir(const std::string& tag) {
    static int counter = 0;
    path_ = std::filesystem::temp_directory_path() /
            ("flashtune_" + tag + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string file(const std::string& name) const { return (path_ / name).string(); }
  // Writes `text` to the file `name` in the folder; returns its path.
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(file(name)) << text;
    return file(name);
  }

 private:
  std::filesystem::path path_;
};

inline std::size_t line_count(const std::string& s) {
  std::size_t n = 0;
  for (char ch : s) n += ch == '\n';
  return n;
}

}  // namespace flashtune::testing_support
