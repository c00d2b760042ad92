// The exclusive writer's lock of a profile: an advisory flock(2) on "<profile>.lock" beside it,
// opened with O_NOFOLLOW (a symbolic link or anything but a regular file there is refused, never
// truncated), made only after the profile's path passed the output policy (output_file.h: no folder
// is created),
// taken by every command that rewrites the profile (tune, fit, merge --out), so a second writer is
// refused with one line naming the holder instead of its measurements silently losing the last
// rename. The lock file is never deleted (deleting it would let two processes lock two different
// files of one name); a crash releases the lock with the process. The holder writes its command,
// PID, host and start time into the file for the refusal message. Host-only.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>

namespace flashtune {

// Another process holds the lock, or the lock file cannot be made: what() is one line, e.g.
// "p.json is locked by flashtune tune (PID 4242 on node3 since 2026-11-23T01:00:00Z); wait for it or
// give another profile".
class ProfileLockError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "profiles/p.json" -> "profiles/p.json.lock", beside the file a symbolic link names (one lock per file).
std::string lock_path(const std::string& profile_path);

class ProfileLock {
 public:
  // Takes the lock (creating the lock file as needed; the folder must exist), retrying for up to wait_s
  // seconds while another process holds it. `command` names the holder in other processes'
  // refusals ("flashtune tune"). Throws ProfileLockError.
  static ProfileLock acquire(const std::string& profile_path, const std::string& command, double wait_s = 0);

  // Who holds the lock of `profile_path` now ("flashtune tune (PID 4242 on node3 since ...)"), or
  // nullopt when nobody does. Takes nothing.
  static std::optional<std::string> holder(const std::string& profile_path);

  // True when this process holds the lock of `profile_path` (a reader in it then knows the
  // journal beside it is being folded in, not left pending).
  static bool held_here(const std::string& profile_path);

  ProfileLock(ProfileLock&& other) noexcept;
  ProfileLock& operator=(ProfileLock&& other) noexcept;
  ProfileLock(const ProfileLock&) = delete;
  ProfileLock& operator=(const ProfileLock&) = delete;
  ~ProfileLock();  // releases

 private:
  explicit ProfileLock(int fd) : fd_(fd) {}
  void release();
  int fd_ = -1;
  std::string path_;
};

}  // namespace flashtune
