// The profile a tune is writing, shared by its workers: every recorded pair goes to the journal
// beside the profile (one fsynced line, profile/profile_journal.h), so a pair costs the same to
// record at the 100,000th as at the first; the whole profile is rewritten atomically only when
// the journal is compacted into it, at the start (folding in what a crashed or stopped run left)
// and at the end of a run. A crash at any point loses at most the pair in flight. The caller holds
// the profile's lock (profile/profile_lock.h). Every rewrite goes through write_profile_atomic (a
// symbolic link followed, the mode kept, a read-only file refused). Host-only.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "profile/profile.h"
#include "profile/profile_journal.h"

namespace flashtune {

class ProfileStore {
 public:
  // Replays the journal beside `path` into `initial` (pairs it already holds are skipped), writes
  // the whole profile atomically (so the file exists with its workloads before the first pair),
  // then removes the replayed journal. Throws ProfileError.
  ProfileStore(std::string path, Profile initial);
  ~ProfileStore();
  ProfileStore(const ProfileStore&) = delete;
  ProfileStore& operator=(const ProfileStore&) = delete;

  // Appends one line to the journal (created at the first pair) and updates "best". Throws
  // ProfileError when the line cannot be written and synced.
  void record(Measurement m);
  // Rewrites the profile atomically with every recorded pair and removes the journal. Throws
  // ProfileError (the journal then stays, and the next run folds it in).
  void compact();
  Profile snapshot() const;
  const std::string& path() const { return path_; }
  // What the constructor found in the journal a previous run left.
  const JournalReplay& replayed() const { return replayed_; }

 private:
  void compact_locked();
  std::string path_;
  Profile profile_;
  JournalReplay replayed_;
  std::unique_ptr<JournalWriter> journal_;  // open between the first record() and compact()
  mutable std::mutex mutex_;
};

}  // namespace flashtune
