// The journal beside a profile ("<profile>.journal"): one JSON line per measured pair, appended
// and fdatasync'ed as each pair finishes, so what a tune writes per pair stays the same size
// however large the profile grows. The profile itself is rewritten only when the journal is
// compacted into it (profile/profile_store.h: when a tune starts, which is how a resume picks up a
// crashed run's pairs, and when it ends). The one reader and writer of the format.
//
// Format: the first line is a header, {"kind": "flashtune-profile-journal", "schema_version": 1,
// "gpu": {"name", "spec"}, "pid", "started"}; every further line is one measurement exactly as the
// profile stores it (profile/profile.h measurement_to_json). A crash can cut the last line short (no
// newline, or bytes that are not JSON): that pair was in flight and replay drops it.
#pragma once

#include <cstddef>
#include <string>

#include "profile/profile.h"

namespace flashtune {

inline constexpr const char* kJournalKind = "flashtune-profile-journal";
inline constexpr int kJournalSchemaVersion = 1;

// "profiles/p.json" -> "profiles/p.json.journal", beside the file a symbolic link names.
std::string journal_path(const std::string& profile_path);

struct JournalReplay {
  std::size_t lines = 0;    // measurement lines read (complete ones)
  std::size_t added = 0;    // pairs the profile did not hold: added
  std::size_t already = 0;  // pairs the profile held already (a compaction ended before the journal was removed)
  bool torn_tail = false;   // the last line was cut by a crash: dropped
};

// Adds the journal's measurements whose (workload, config) `p` does not hold yet, in journal order;
// nothing when the file does not exist. Throws ProfileError("<journal>:<line>: <what>") for a
// malformed line before the last, a header of another GPU or kind, or a workload the profile does
// not list.
JournalReplay replay_journal(const std::string& journal, Profile& p);

// load_profile(path) with its journal replayed: every pair a stopped or running tune recorded.
Profile load_profile_with_journal(const std::string& path, JournalReplay* replay = nullptr);

// Folds the journal beside `profile_path` into the profile (atomic rewrite) and removes the
// journal; returns the pairs added (0 and no write when there is no journal). For commands that
// rewrite a profile under its lock (fit, merge), so a crashed tune's pairs are never dropped.
std::size_t compact_journal(const std::string& profile_path);

// Appends measurements to a fresh journal. Not thread-safe (ProfileStore serialises the calls).
class JournalWriter {
 public:
  // Creates the journal (truncating an old one) with its header line, fsynced. Throws ProfileError.
  JournalWriter(std::string path, const GpuIdentity& gpu);
  ~JournalWriter();
  JournalWriter(const JournalWriter&) = delete;
  JournalWriter& operator=(const JournalWriter&) = delete;

  // One line, written with one write() and made durable (fdatasync) before returning: a crash
  // after append() returns loses nothing of it. Throws ProfileError.
  void append(const Measurement& m);
  const std::string& path() const { return path_; }

 private:
  void write_line(const std::string& line);
  std::string path_;
  int fd_ = -1;
};

// Removes a file and makes the removal durable (fsync of its folder); no error when it is absent.
void remove_durably(const std::string& path);

}  // namespace flashtune
