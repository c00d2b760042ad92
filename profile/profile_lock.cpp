#include "profile/profile_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>
#include <utility>

#include "profile/output_file.h"
#include "profile/profile.h"

namespace flashtune {
namespace {

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown host";
  return buf;
}

int open_lock_file(const std::string& profile_path, bool create) {
  const std::string path = lock_path(profile_path);
  if (create) {
    const std::filesystem::path folder = std::filesystem::path(path).parent_path();
    std::error_code ec;
    if (!folder.empty()) std::filesystem::create_directories(folder, ec);
    if (ec) throw ProfileLockError(profile_path + ": cannot create folder " + folder.string() + ": " + ec.message());
  }
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0644);
  if (fd < 0 && create)
    throw ProfileLockError(profile_path + ": cannot create lock file " + path + ": " + std::strerror(errno));
  return fd;
}

// The holder's line. A holder that has just taken the lock may not have written it yet: a few
// short retries, then "another process".
std::string read_holder(int fd) {
  for (int attempt = 0; attempt < 10; ++attempt) {
    char buf[512] = {};
    const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    if (n > 0) {
      std::string s(buf, static_cast<std::size_t>(n));
      while (!s.empty() && (s.back() == '\n' || s.back() == '\0')) s.pop_back();
      if (!s.empty()) return s;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return "another process (PID not recorded)";
}

void write_holder(int fd, const std::string& command) {
  const std::string line = command + " (PID " + std::to_string(::getpid()) + " on " + host_name() + " since " +
                           utc_timestamp() + ")\n";
  // Best effort: the lock holds without the line; it only names the holder in refusals.
  if (::ftruncate(fd, 0) == 0) {
    const ssize_t ignored = ::pwrite(fd, line.data(), line.size(), 0);
    (void)ignored;
  }
}

}  // namespace

std::string lock_path(const std::string& profile_path) {
  // Beside the file a write replaces, so that two names of one profile (a symbolic link and its
  // target) share one lock.
  try {
    return write_target(profile_path) + ".lock";
  } catch (const OutputError& e) {
    throw ProfileLockError(e.what());
  }
}

ProfileLock ProfileLock::acquire(const std::string& profile_path, const std::string& command, double wait_s) {
  const int fd = open_lock_file(profile_path, true);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_s > 0 ? wait_s : 0);
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    if (errno != EWOULDBLOCK) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      throw ProfileLockError(profile_path + ": cannot lock " + lock_path(profile_path) + ": " + why);
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      const std::string who = read_holder(fd);
      ::close(fd);
      throw ProfileLockError(profile_path + " is locked by " + who + "; wait for it or give another profile");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  write_holder(fd, command);
  return ProfileLock(fd);
}

std::optional<std::string> ProfileLock::holder(const std::string& profile_path) {
  const int fd = open_lock_file(profile_path, false);
  if (fd < 0) return std::nullopt;
  // A shared lock succeeds exactly when no writer holds the exclusive one.
  if (::flock(fd, LOCK_SH | LOCK_NB) == 0) {
    ::flock(fd, LOCK_UN);
    ::close(fd);
    return std::nullopt;
  }
  const std::string who = read_holder(fd);
  ::close(fd);
  return who;
}

ProfileLock::ProfileLock(ProfileLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

ProfileLock& ProfileLock::operator=(ProfileLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

ProfileLock::~ProfileLock() {
  // Closing the only descriptor of the open file releases the flock.
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace flashtune
