#include "tuner/output_file.h"

#include <fcntl.h>
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

// Unique within the process (several outputs staged at once) and across processes (the pid).
std::string temp_name_for(const std::string& path) {
  static std::atomic<unsigned> counter{0};
  const fs::path target(path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  return (dir / ("." + target.filename().string() + ".tmp." + std::to_string(::getpid()) + "." +
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

}  // namespace

StagedOutput::StagedOutput(const std::string& path, const std::string& text) : path_(path) {
  if (path.empty()) fail("(empty path)", "no output file named");
  std::error_code ec;
  if (fs::is_directory(path, ec)) fail(path, "is a folder");
  temp_ = temp_name_for(path);
  // The umask applies to 0666 as for any new file; a file being replaced keeps its mode.
  struct stat old {};
  const bool replacing = ::stat(path.c_str(), &old) == 0 && S_ISREG(old.st_mode);
  const int fd = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) {
    const std::string why = errno_text();
    temp_.clear();
    fail(path, "cannot write: " + why);
  }
  bool ok = write_all(fd, text);
  std::string why = ok ? "" : errno_text();
  if (ok && replacing && ::fchmod(fd, old.st_mode & 07777) != 0) ok = false, why = errno_text();
  // fsync before the rename: after a crash the name must not point at unwritten blocks.
  if (ok && ::fsync(fd) != 0 && errno != EINVAL) ok = false, why = errno_text();
  if (::close(fd) != 0 && ok) ok = false, why = errno_text();
  if (!ok) {
    ::unlink(temp_.c_str());
    temp_.clear();
    fail(path, "cannot write: " + why);
  }
}

StagedOutput::StagedOutput(StagedOutput&& other) noexcept
    : path_(std::move(other.path_)), temp_(std::move(other.temp_)), committed_(other.committed_) {
  other.temp_.clear();
  other.committed_ = true;
}

StagedOutput::~StagedOutput() {
  if (!committed_ && !temp_.empty()) ::unlink(temp_.c_str());
}

void StagedOutput::commit() {
  if (committed_) return;
  if (::rename(temp_.c_str(), path_.c_str()) != 0) {
    const std::string why = errno_text();
    ::unlink(temp_.c_str());
    temp_.clear();
    fail(path_, "cannot replace: " + why);
  }
  committed_ = true;
}

void write_output_atomic(const std::string& path, const std::string& text) {
  StagedOutput out(path, text);
  out.commit();
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
