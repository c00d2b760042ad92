// Writing a command's output file so that a failure cannot destroy anything: the text goes to a
// hidden temporary beside the target and is renamed over it only when every byte is on disk.
// A full disk, `ulimit -f`, a path under /proc or a missing folder leave the previous file as it
// was (and no temporary behind), with one line naming the file. Host-only.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace flashtune {

class OutputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One output written but not yet in place. Several are staged first and committed together, so a
// command whose second output fails has not yet replaced its first.
class StagedOutput {
 public:
  // Writes `text` to a temporary in `path`'s folder (mode 0666 less the umask, or the mode of the
  // file it will replace). Throws OutputError("<path>: cannot write: File too large").
  StagedOutput(const std::string& path, const std::string& text);
  StagedOutput(StagedOutput&& other) noexcept;
  StagedOutput& operator=(StagedOutput&&) = delete;
  StagedOutput(const StagedOutput&) = delete;
  StagedOutput& operator=(const StagedOutput&) = delete;
  ~StagedOutput();  // removes the temporary unless committed

  // Renames the temporary over the target. Throws OutputError.
  void commit();
  const std::string& path() const { return path_; }

 private:
  std::string path_, temp_;
  bool committed_ = false;
};

// Writes `text` to `path` through a StagedOutput.
void write_output_atomic(const std::string& path, const std::string& text);

// True when `a` and `b` name the same file: the same inode where both exist (links, "./p.json"),
// else the same normalised absolute path.
bool same_file(const std::string& a, const std::string& b);

// A command's file inputs and outputs by option name ("--profile", path). Throws OutputError
// ("--residuals p.json would overwrite the input --profile p.json") when an output names an input
// or another output, before anything is read or written.
using NamedPaths = std::vector<std::pair<std::string, std::string>>;
void require_outputs_apart(const NamedPaths& inputs, const NamedPaths& outputs);

}  // namespace flashtune
