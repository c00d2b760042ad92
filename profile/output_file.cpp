#include "profile/output_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
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

// Unique within the process (several outputs staged at once) and across processes (the pid).
std::string temp_name_for(const std::string& target) {
  static std::atomic<unsigned> counter{0};
  const fs::path t(target);
  return (folder_of(t) / (t.filename().string() + kTempMarker + host_tag() + "." + std::to_string(::getpid()) + "." +
                          std::to_string(counter++)))
      .string();
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

std::string output_temp_prefix(const std::string& target) { return target + kTempMarker + host_tag() + "."; }

void require_replaceable(const std::string& path) {
  const std::string target = write_target(path);
  struct stat st {};
  if (::stat(target.c_str(), &st) != 0) return;  // a new file: its folder decides
  if (S_ISDIR(st.st_mode)) fail(path, "is a folder");
  // Tests and containers often run as root, which access(2) lets write anything: the mode bits
  // are checked first, so a file made read-only (chmod a-w) is refused for root too.
  if (S_ISREG(st.st_mode) && ((st.st_mode & 0222) == 0 || ::access(target.c_str(), W_OK) != 0))
    fail(path, "read-only (mode " + mode_text(st.st_mode) + "): not replaced; make it writable to allow it");
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

StagedOutput::StagedOutput(const std::string& path) : path_(path) {
  if (path.empty()) fail("(empty path)", "no output file named");
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
    ::unlink(temp_.c_str());
    temp_.clear();
    fail(path_, "cannot write: " + why);
  }
}

StagedOutput::StagedOutput(const std::string& path, const std::string& text) : StagedOutput(path) {
  const int fd = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) {
    const std::string why = errno_text();
    temp_.clear();
    fail(path, "cannot write: " + why);
  }
  finish_temp(fd, write_all(fd, text) ? "" : errno_text());
}

StagedOutput StagedOutput::written_by(const std::string& path, const std::function<void(const std::string&)>& write) {
  StagedOutput out(path);
  try {
    write(out.temp_);
  } catch (...) {
    ::unlink(out.temp_.c_str());
    out.temp_.clear();
    throw;
  }
  const int fd = ::open(out.temp_.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    const std::string why = errno_text();
    ::unlink(out.temp_.c_str());
    out.temp_.clear();
    fail(path, "cannot write: " + why);
  }
  out.finish_temp(fd, "");
  return out;
}

StagedOutput::StagedOutput(StagedOutput&& other) noexcept
    : path_(std::move(other.path_)),
      target_(std::move(other.target_)),
      temp_(std::move(other.temp_)),
      committed_(other.committed_) {
  other.temp_.clear();
  other.committed_ = true;
}

StagedOutput::~StagedOutput() {
  if (!committed_ && !temp_.empty()) ::unlink(temp_.c_str());
}

void StagedOutput::commit() {
  if (committed_) return;
  if (::rename(temp_.c_str(), target_.c_str()) != 0) {
    const std::string why = errno_text();
    ::unlink(temp_.c_str());
    temp_.clear();
    fail(path_, "cannot replace: " + why);
  }
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
    if (out_path.empty()) continue;
    for (const auto& [in_opt, in_path] : inputs)
      if (!in_path.empty() && same_file(out_path, in_path))
        throw OutputError(out_opt + " " + out_path + " would overwrite the input " + in_opt + " " + in_path);
    for (std::size_t j = 0; j < i; ++j)
      if (!outputs[j].second.empty() && same_file(out_path, outputs[j].second))
        throw OutputError(out_opt + " " + out_path + " is also the output " + outputs[j].first);
  }
}

}  // namespace flashtune
