// Writing a command's output file so that a failure cannot destroy anything: the text goes to a
// temporary beside the target and is renamed over it only when every byte is on disk. A full
// disk, `ulimit -f`, a path under /proc or a missing folder leave the previous file as it was (and
// no temporary behind), with one line naming the file. The file is respected: a symbolic link is
// followed (the file it names is replaced, the link stays), a replaced file keeps its mode (and its
// owner where the writer may set it), and a read-only file is refused. Host-only.
//
// Temporaries are named "<target>.flashtune-tmp.<host>.<pid>.<n>", beside the target: visible in a
// listing, and a process killed mid-write leaves one that the next write to the same target
// removes (its host is this one and its process is gone).
#pragma once

#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace flashtune {

class OutputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What marks a temporary of ours: "p.json.flashtune-tmp.node3.4242.0" holds it.
inline constexpr const char* kTempMarker = ".flashtune-tmp.";
// True for a file name (no folder) of one of our temporaries.
bool is_output_temp_name(const std::string& file_name);

// The output policy, one rule for every writer: an output is a regular file (or a symbolic link
// to one) or a path that does not exist yet, in a folder that exists (no writer creates folders:
// "a/b/m.json: folder a/b does not exist (nothing written); create it first"). A folder, a
// character or block device, a FIFO or a socket is refused in one line naming it, before anything
// is written, and is never replaced. The one exception: the process's own streams given by name,
// /dev/stdout, /dev/stderr, /dev/fd/N (/proc/self/fd/N) and /dev/null, are written straight through
// (no temporary, no rename: the node and whatever the stream points at are never replaced).
// Throws OutputError. Checked by every StagedOutput; `allow_stream` false refuses the streams too
// (a profile has a journal and a lock beside it: it must be a file).
void require_output_node(const std::string& path, bool allow_stream = true);

// The descriptor an output name writes through: 1 for /dev/stdout, 2 for /dev/stderr, N for
// /dev/fd/N or /proc/self/fd/N, -2 for /dev/null (opened when written); nullopt for any other path.
std::optional<int> output_stream_of(const std::string& path);

// The file a write to `path` replaces: symbolic links followed, a dangling one to the file it
// names (created by the write). A path that is not a link comes back as given. Throws
// OutputError for a loop of links.
std::string write_target(const std::string& path);

// Throws OutputError when a write to `path` would be refused: require_output_node, or the file it
// names is read-only ("p.json: read-only (mode 0444): not replaced; make it writable to allow it"),
// or on a read-only file system ("p.json: on a read-only file system: not replaced"). Checked from
// the mode bits as well as access(2), because root may write any file. For commands that check
// before they work (fit), and by every StagedOutput.
void require_replaceable(const std::string& path);

// The start of the names of this host's temporaries for `target`: "<target>.flashtune-tmp.<host>.".
// A file name too long to carry the suffix within NAME_MAX (a 240-character profile name) is
// shortened to its first 120 characters and a hash of the whole name.
std::string output_temp_prefix(const std::string& target);

// Removes the temporaries of writes to `target` (a resolved path) that a killed process left:
// those of this host whose process no longer exists. Never fails (a file it cannot remove stays).
void remove_stale_temps(const std::string& target);

// One output written but not yet in place. Several are staged first and committed together, so a
// command whose second output fails has not yet replaced its first.
class StagedOutput {
 public:
  // Writes `text` to a temporary beside the target (mode 0666 less the umask, or the mode of the
  // file it will replace). Throws OutputError("<path>: cannot write: File too large"),
  // OutputError("<path>: read-only (mode 0444): not replaced; make it writable to allow it").
  StagedOutput(const std::string& path, const std::string& text);
  // For a file another program writes (gnuplot): `write` is given the temporary's path and must
  // leave the complete file there or throw; the temporary is removed on any failure.
  static StagedOutput written_by(const std::string& path, const std::function<void(const std::string&)>& write);
  StagedOutput(StagedOutput&& other) noexcept;
  StagedOutput& operator=(StagedOutput&&) = delete;
  StagedOutput(const StagedOutput&) = delete;
  StagedOutput& operator=(const StagedOutput&) = delete;
  ~StagedOutput();  // removes the temporary unless committed

  // Renames the temporary over the target and makes the rename durable (the folder fsynced).
  // Throws OutputError.
  void commit();
  const std::string& path() const { return path_; }      // as given
  const std::string& target() const { return target_; }  // the file replaced (links followed)

  // For a writer that must write a file (a profile): a stream name is refused too.
  static StagedOutput file_only(const std::string& path, const std::string& text);

 private:
  StagedOutput(const std::string& path, bool allow_stream);
  void stage_text(const std::string& text);
  void drop_temp();  // removes the temporary (and forgets it)
  void finish_temp(int fd, const std::string& written_by);  // mode, owner, fsync, close
  std::string path_, target_, temp_;
  std::optional<int> stream_;  // written straight through at commit (output_stream_of)
  std::string stream_text_;
  bool committed_ = false;
};

// Writes `text` to `path` through a StagedOutput.
void write_output_atomic(const std::string& path, const std::string& text);

// fsync of a folder: makes a rename or unlink in it durable. Throws OutputError naming it.
void fsync_folder(const std::string& folder);

// Removes the temporaries staged now (not yet committed) when SIGINT, SIGTERM or SIGHUP arrives,
// then ends the process as the signal would (exit 128+N). For commands that write large outputs
// (merge, fit, export, report, plot); idempotent.
void remove_staged_temps_on_signal();

// True when `a` and `b` name the same file: the same inode where both exist (links, "./p.json"),
// else the same normalised absolute path.
bool same_file(const std::string& a, const std::string& b);

// A command's file inputs and outputs by option name ("--profile", path). Throws OutputError
// ("--residuals p.json would overwrite the input --profile p.json") when an output names an input
// or another output, before anything is read or written. A profile's journal and lock
// ("<input>.journal", "<input>.lock", beside the file a link names) count as part of it: an output
// onto them is refused too ("--out p.json.journal would overwrite the journal of the input
// --profile p.json"). The streams (output_stream_of) are never the same file as an input.
using NamedPaths = std::vector<std::pair<std::string, std::string>>;
void require_outputs_apart(const NamedPaths& inputs, const NamedPaths& outputs);

}  // namespace flashtune
