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
#include <functional>
#include <optional>
#include <string>

#include "profile/profile.h"

namespace flashtune {

inline constexpr const char* kJournalKind = "flashtune-profile-journal";
inline constexpr int kJournalSchemaVersion = 1;
// A measurement line is about 1 KB; a journal of a million pairs about 1 GB.
inline constexpr std::size_t kMaxJournalLineBytes = 1u << 20;
inline constexpr unsigned long long kMaxJournalBytes = 1ull << 31;

// "profiles/p.json" -> "profiles/p.json.journal", beside the file a symbolic link names.
std::string journal_path(const std::string& profile_path);

struct JournalReplay {
  std::size_t lines = 0;    // measurement lines read (complete ones)
  std::size_t added = 0;    // pairs the profile did not hold: added
  std::size_t already = 0;  // pairs the profile held already (a compaction ended before the journal was removed)
  bool torn_tail = false;   // the last line was cut by a crash: dropped
};

// Adds the journal's measurements whose (workload, config) `p` does not hold yet, in journal order;
// nothing when the file does not exist. The file is read as every JSON file is (a regular file,
// no symbolic link, at most kMaxJournalBytes: a FIFO or a device there is refused at once, never
// read), each line through the one JSON reader and the profile's value check
// (check_profile_values), plus a config this build compiles whose d is its workload's. Any bad
// line refuses the whole replay, so nothing bad is ever folded in: throws
// ProfileError("<journal>:<line>: <what> (nothing folded in; move the journal away to drop its
// pairs)") for a malformed line before the last, a header of another GPU or kind, a workload the
// profile does not list, or a value the check refuses. Only a last line that is not JSON (a write
// cut by a crash) is dropped.
JournalReplay replay_journal(const std::string& journal, Profile& p);
// The same on the journal's text (the fuzz target's entry); `journal` names it in messages.
JournalReplay replay_journal_text(const std::string& text, const std::string& journal, Profile& p);

// For readers that do not fold the journal in (export, compare, plot, report, check-counters,
// predict --profile, the dispatcher, fit --no-write): "73 pairs pending in p.json.journal (not
// read here); run tune to resume or merge to fold them in", or the reason tune would refuse that
// journal; nullopt when there is none, nothing in it the profile lacks, or this process holds the
// profile's lock (its writer folds the journal in). load_profile calls note_pending_journal, which
// says it once per journal and process through the sink (default: a line on stderr).
std::optional<std::string> pending_journal_notice(const std::string& profile_path, const Profile& p);
void note_pending_journal(const std::string& profile_path, const Profile& p);
void set_journal_notice_sink(std::function<void(const std::string&)> sink);  // empty: stderr again

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
