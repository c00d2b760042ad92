#include "profile/output_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace flashtune {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const std::string& path, const std::string& what) { throw OutputError(path + ": " + what); }

std::string errno_text() { return std::strerror(errno); }

fs::path folder_of(const fs::path& p) { return p.has_parent_path() ? p.parent_path() : fs::path("."); }

// The host part of a temporary's name: dots would make the name ambiguous, so they become dashes;
// kept short so that a long file name still fits NAME_MAX.
std::string host_tag() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "host";
  std::string h(buf);
  for (char& c : h)
    if (c == '.' || c == '/') c = '-';
  if (h.size() > 32) h.resize(32);
  return h.empty() ? "host" : h;
}

// The file name a temporary starts with: the target's, or for a name too long to carry the
// suffix within NAME_MAX (255 bytes), its first 120 bytes and a hash of the whole name.
std::string temp_stem(const std::string& file_name) {
  constexpr std::size_t kKeep = 120;
  if (file_name.size() <= kKeep + 20) return file_name;
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : file_name) h = (h ^ c) * 1099511628211ull;
  char hex[20];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return file_name.substr(0, kKeep) + "~" + hex;
}

// Unique within the process (several outputs staged at once) and across processes (the pid).
std::string temp_name_for(const std::string& target) {
  static std::atomic<unsigned> counter{0};
  return output_temp_prefix(target) + std::to_string(::getpid()) + "." + std::to_string(counter++);
}

// The temporaries staged now, for the signal handler (remove_staged_temps_on_signal): lock-free
// slots of heap copies, so the handler only loads pointers and calls unlink(2).
constexpr int kTempSlots = 64;
std::atomic<char*> g_staged[kTempSlots];

void register_temp(const std::string& temp) {
  char* copy = ::strdup(temp.c_str());
  if (!copy) return;
  for (auto& slot : g_staged) {
    char* expected = nullptr;
    if (slot.compare_exchange_strong(expected, copy)) return;
  }
  std::free(copy);  // more than 64 at once: the next write to the file removes a leftover
}

void unregister_temp(const std::string& temp) {
  for (auto& slot : g_staged) {
    char* c = slot.load();
    if (c && temp == c && slot.compare_exchange_strong(c, nullptr)) {
      std::free(c);
      return;
    }
  }
}

extern "C" void remove_staged_and_die(int sig) {
  for (auto& slot : g_staged)
    if (char* c = slot.load()) ::unlink(c);
  ::signal(sig, SIG_DFL);
  ::raise(sig);  // delivered when the handler returns: the process ends as the signal would
}

const char* node_kind(mode_t m) {
  if (S_ISDIR(m)) return "a folder";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

bool write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

std::string mode_text(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

}  // namespace

bool is_output_temp_name(const std::string& file_name) { return file_name.find(kTempMarker) != std::string::npos; }

std::string output_temp_prefix(const std::string& target) {
  const fs::path t(target);
  const std::string name = temp_stem(t.filename().string()) + kTempMarker + host_tag() + ".";
  return t.has_parent_path() ? (t.parent_path() / name).string() : name;
}

std::optional<int> output_stream_of(const std::string& path) {
  if (path.empty() || path[0] != '/') return std::nullopt;
  const std::string p = fs::path(path).lexically_normal().string();
  if (p == "/dev/stdout") return 1;
  if (p == "/dev/stderr") return 2;
  if (p == "/dev/null") return -2;
  for (const char* prefix : {"/dev/fd/", "/proc/self/fd/"}) {
    const std::string pre(prefix);
    if (p.size() <= pre.size() || p.size() > pre.size() + 6 || p.compare(0, pre.size(), pre) != 0) continue;
    int fd = 0;
    for (std::size_t i = pre.size(); i < p.size(); ++i) {
      if (p[i] < '0' || p[i] > '9') return std::nullopt;
      fd = fd * 10 + (p[i] - '0');
    }
    return fd;
  }
  return std::nullopt;
}

void require_output_node(const std::string& path, bool allow_stream) {
  if (path.empty()) fail("(empty path)", "no output file named");
  if (output_stream_of(path)) {
    if (allow_stream) return;
    fail(path, "a stream, not a file: this output must be a regular file");
  }
  const std::string target = write_target(path);
  const std::string via = target == path ? "" : " (the link's target " + target + ")";
  struct stat st {};
  if (::stat(target.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode))
      fail(path, std::string("is ") + node_kind(st.st_mode) + via +
                     ", not a regular file: an output must be a regular file or a new path (nothing written)");
    return;
  }
  if (errno != ENOENT) fail(path, "cannot write: " + errno_text());
  // A new file: its folder must exist (no writer creates folders).
  const fs::path folder = folder_of(fs::path(target));
  struct stat fst {};
  if (::stat(folder.c_str(), &fst) != 0)
    fail(path, "folder " + folder.string() + " does not exist (nothing written); create it first");
  if (!S_ISDIR(fst.st_mode)) fail(path, folder.string() + " is not a folder (nothing written)");
}

void require_replaceable(const std::string& path) {
  require_output_node(path);
  if (output_stream_of(path)) return;
  const std::string target = write_target(path);
  struct stat st {};
  const bool exists = ::stat(target.c_str(), &st) == 0;
  // Tests and containers often run as root, which access(2) lets write anything: the mode bits
  // are checked first, so a file made read-only (chmod a-w) is refused for root too.
  if (exists && (st.st_mode & 0222) == 0)
    fail(path, "read-only (mode " + mode_text(st.st_mode) + "): not replaced; make it writable to allow it");
  // The file is replaced by a rename in its folder: the folder must be writable too.
  const std::string folder = folder_of(fs::path(target)).string();
  for (const std::string& f : {exists ? target : folder, folder}) {
    if (::access(f.c_str(), W_OK) == 0) continue;
    if (errno == EROFS) fail(path, "on a read-only file system: not replaced (nothing written)");
    if (f == target)
      fail(path, "read-only (mode " + mode_text(st.st_mode) + "): not replaced; make it writable to allow it");
    fail(path, "cannot write in folder " + folder + ": " + errno_text());
  }
}

std::string write_target(const std::string& path) {
  fs::path p(path);
  for (int hops = 0; hops < 40; ++hops) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return p.string();
    std::error_code ec;
    const fs::path to = fs::read_symlink(p, ec);
    if (ec) fail(path, "cannot read the symbolic link " + p.string() + ": " + ec.message());
    p = to.is_absolute() ? to : (folder_of(p) / to).lexically_normal();
  }
  fail(path, "too many levels of symbolic links");
}

void remove_stale_temps(const std::string& target) {
  const fs::path t(target);
  const std::string prefix = fs::path(output_temp_prefix(target)).filename().string();
  std::error_code ec;
  for (fs::directory_iterator it(folder_of(t), ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    // "<pid>.<n>" after the prefix.
    const std::string rest = name.substr(prefix.size());
    const std::size_t dot = rest.find('.');
    if (dot == 0 || dot == std::string::npos) continue;
    long long pid = 0;
    try {
      std::size_t used = 0;
      pid = std::stoll(rest.substr(0, dot), &used);
      if (used != dot) continue;
    } catch (const std::exception&) {
      continue;
    }
    if (pid <= 0 || pid == ::getpid()) continue;
    // kill(pid, 0) fails with ESRCH exactly when no such process exists; EPERM means it lives.
    if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
      std::error_code rm;
      fs::remove(it->path(), rm);
    }
  }
}

StagedOutput::StagedOutput(const std::string& path, bool allow_stream) : path_(path) {
  require_output_node(path, allow_stream);
  if (allow_stream) stream_ = output_stream_of(path);
  if (stream_) {
    target_ = path;
    return;
  }
  target_ = write_target(path);
  require_replaceable(path);
  remove_stale_temps(target_);
  temp_ = temp_name_for(target_);
}

void StagedOutput::finish_temp(int fd, const std::string& writer_error) {
  bool ok = writer_error.empty();
  std::string why = writer_error;
  // The umask applies to 0666 as for any new file; a file being replaced keeps its mode, and its
  // owner where this process may set it (root rewriting a user's profile).
  struct stat old {};
  if (ok && ::stat(target_.c_str(), &old) == 0 && S_ISREG(old.st_mode)) {
    if (::fchmod(fd, old.st_mode & 07777) != 0) ok = false, why = errno_text();
    // Best effort: an ordinary user may not give a file away, and the rewrite becomes theirs.
    if (ok && ::fchown(fd, old.st_uid, old.st_gid) != 0) errno = 0;
  }
  // fsync before the rename: after a crash the name must not point at unwritten blocks.
  if (ok && ::fsync(fd) != 0 && errno != EINVAL) ok = false, why = errno_text();
  if (::close(fd) != 0 && ok) ok = false, why = errno_text();
  if (!ok) {
    drop_temp();
    fail(path_, "cannot write: " + why);
  }
}

void StagedOutput::drop_temp() {
  if (temp_.empty()) return;
  ::unlink(temp_.c_str());
  unregister_temp(temp_);
  temp_.clear();
}

void StagedOutput::stage_text(const std::string& text) {
  if (stream_) {
    stream_text_ = text;
    return;
  }
  register_temp(temp_);
  const int fd = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) {
    const std::string why = errno == EROFS ? "on a read-only file system" : errno_text();
    unregister_temp(temp_);
    temp_.clear();
    fail(path_, "cannot write: " + why);
  }
  finish_temp(fd, write_all(fd, text) ? "" : errno_text());
}

StagedOutput::StagedOutput(const std::string& path, const std::string& text) : StagedOutput(path, true) {
  stage_text(text);
}

StagedOutput StagedOutput::file_only(const std::string& path, const std::string& text) {
  StagedOutput out(path, false);
  out.stage_text(text);
  return out;
}

StagedOutput StagedOutput::written_by(const std::string& path, const std::function<void(const std::string&)>& write) {
  StagedOutput out(path, false);
  register_temp(out.temp_);
  try {
    write(out.temp_);
  } catch (...) {
    out.drop_temp();
    throw;
  }
  const int fd = ::open(out.temp_.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    const std::string why = errno_text();
    out.drop_temp();
    fail(path, "cannot write: " + why);
  }
  out.finish_temp(fd, "");
  return out;
}

StagedOutput::StagedOutput(StagedOutput&& other) noexcept
    : path_(std::move(other.path_)),
      target_(std::move(other.target_)),
      temp_(std::move(other.temp_)),
      stream_(other.stream_),
      stream_text_(std::move(other.stream_text_)),
      committed_(other.committed_) {
  other.temp_.clear();
  other.committed_ = true;
}

StagedOutput::~StagedOutput() {
  if (!committed_) drop_temp();
}

void StagedOutput::commit() {
  if (committed_) return;
  if (stream_) {
    // Straight through: the stream's own descriptor (its offset and O_APPEND kept), or /dev/null.
    std::fflush(stdout);
    std::fflush(stderr);
    const int fd = *stream_ >= 0 ? *stream_ : ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    const bool ok = fd >= 0 && write_all(fd, stream_text_);
    const std::string why = ok ? "" : errno_text();
    if (*stream_ < 0 && fd >= 0) ::close(fd);
    committed_ = true;
    if (!ok) fail(path_, "cannot write: " + why);
    return;
  }
  if (::rename(temp_.c_str(), target_.c_str()) != 0) {
    const std::string why = errno_text();
    drop_temp();
    fail(path_, "cannot replace: " + why);
  }
  unregister_temp(temp_);
  committed_ = true;
  fsync_folder(folder_of(fs::path(target_)).string());
}

void write_output_atomic(const std::string& path, const std::string& text) {
  StagedOutput out(path, text);
  out.commit();
}

void fsync_folder(const std::string& folder) {
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail(folder, "cannot open folder to sync it: " + errno_text());
  // Some file systems cannot sync a folder (EINVAL): the rename is as durable as they make it.
  const bool synced = ::fsync(fd) == 0 || errno == EINVAL;
  const std::string why = synced ? "" : errno_text();
  ::close(fd);
  if (!synced) fail(folder, "cannot sync folder: " + why);
}

void remove_staged_temps_on_signal() {
  static std::atomic<bool> installed{false};
  if (installed.exchange(true)) return;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction old {};
    // A handler the command installed itself (tune's stop after the current pair) stays.
    if (::sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) continue;
    struct sigaction sa {};
    sa.sa_handler = remove_staged_and_die;
    sigemptyset(&sa.sa_mask);
    ::sigaction(sig, &sa, nullptr);
  }
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec)) return fs::equivalent(a, b, ec) && !ec;
  const fs::path pa = fs::weakly_canonical(fs::absolute(a, ec), ec);
  const fs::path pb = fs::weakly_canonical(fs::absolute(b, ec), ec);
  return pa == pb;
}

void require_outputs_apart(const NamedPaths& inputs, const NamedPaths& outputs) {
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const auto& [out_opt, out_path] = outputs[i];
    if (out_path.empty() || output_stream_of(out_path)) continue;
    for (const auto& [in_opt, in_path] : inputs) {
      if (in_path.empty()) continue;
      if (same_file(out_path, in_path))
        throw OutputError(out_opt + " " + out_path + " would overwrite the input " + in_opt + " " + in_path);
      // A profile's journal and lock sit beside the file a link names (profile_journal.h).
      std::string base = in_path;
      try {
        base = write_target(in_path);
      } catch (const OutputError&) {
      }
      for (const char* part : {".journal", ".lock"})
        for (const std::string& side : {in_path + part, base + part})
          if (same_file(out_path, side))
            throw OutputError(out_opt + " " + out_path + " would overwrite the " + (part + 1) + " of the input " +
                              in_opt + " " + in_path);
    }
    for (std::size_t j = 0; j < i; ++j)
      if (!outputs[j].second.empty() && same_file(out_path, outputs[j].second))
        throw OutputError(out_opt + " " + out_path + " is also the output " + outputs[j].first);
  }
}

}  // namespace flashtune
