#include "profile/profile_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>
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

// The locks this process holds (lock paths), so readers in it know a journal is its own.
std::mutex& held_mutex() {
  static std::mutex m;
  return m;
}
std::set<std::string>& held_locks() {
  static std::set<std::string> s;
  return s;
}

// The lock file is opened, never followed: a symbolic link there (to a file the holder line would
// truncate) is refused, as is anything that is not a regular file (O_NONBLOCK: a FIFO never blocks).
int open_lock_file(const std::string& profile_path, bool create) {
  const std::string path = lock_path(profile_path);
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | (create ? O_CREAT : 0), 0644);
  if (fd < 0) {
    if (!create) return fd;
    if (errno == ELOOP)
      throw ProfileLockError(profile_path + ": lock file " + path +
                             " is a symbolic link: not followed (nothing written); remove it");
    if (errno == ENOENT)
      throw ProfileLockError(profile_path + ": cannot create lock file " + path +
                             ": its folder does not exist (nothing written); create it first");
    throw ProfileLockError(profile_path + ": cannot create lock file " + path + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    if (!create) return -1;
    throw ProfileLockError(profile_path + ": lock file " + path + " is not a regular file (nothing written); remove it");
  }
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
  // The profile itself must be a file or a new path in a folder that exists (output_file.h):
  // checked before the lock file is made, so a refused writer leaves nothing behind.
  try {
    require_output_node(profile_path, false);
  } catch (const OutputError& e) {
    throw ProfileLockError(e.what());
  }
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
  ProfileLock lock(fd);
  lock.path_ = lock_path(profile_path);
  std::lock_guard<std::mutex> g(held_mutex());
  held_locks().insert(lock.path_);
  return lock;
}

bool ProfileLock::held_here(const std::string& profile_path) {
  std::string path;
  try {
    path = lock_path(profile_path);
  } catch (const ProfileLockError&) {
    return false;
  }
  std::lock_guard<std::mutex> g(held_mutex());
  return held_locks().count(path) > 0;
}

void ProfileLock::release() {
  if (fd_ < 0) return;
  {
    std::lock_guard<std::mutex> g(held_mutex());
    held_locks().erase(path_);
  }
  // Closing the only descriptor of the open file releases the flock.
  ::close(fd_);
  fd_ = -1;
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

ProfileLock::ProfileLock(ProfileLock&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)) {}

ProfileLock& ProfileLock::operator=(ProfileLock&& other) noexcept {
  if (this != &other) {
    release();
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
  }
  return *this;
}

ProfileLock::~ProfileLock() { release(); }

}  // namespace flashtune
