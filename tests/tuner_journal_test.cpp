// The profile's write path (host, no GPU): the journal's lines and their replay (a torn last line
// dropped, a damaged earlier one refused with its line number, another GPU's journal refused, a
// replay over pairs the profile holds adding nothing), the store (pairs go to the journal, the
// profile is rewritten only at compaction; stale temp files of a killed write removed), and the
// writer's lock (a second holder refused with the holder's PID, released on destruction).
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "profile/output_file.h"
#include "profile/profile_journal.h"
#include "profile/profile_lock.h"
#include "profile/profile_store.h"
#include "test_temp_dir.h"
#include "tuner/fake_backend.h"

namespace flashtune {
namespace {

using testing_support::TempDir;

Profile fake_profile() {
  Profile p;
  p.gpu = fake_gpu_identity();
  p.build.kernel_set = "test";
  p.workloads = {{"w", {2, 256, 64, false, 0}}};
  return p;
}

// Real config names: every profile reader checks that a measurement's config parses and fits its
// workload's d (profile/profile_check.h).
const std::string kConfigA = "row_smem/d64/br64xbc32/plain";
const std::string kConfigB = "row_reg/d64/br64xbc32/plain";

Measurement pair(const std::string& config, double ms) {
  Measurement m;
  m.workload = "w";
  m.config = config;
  TimingSummary t;
  t.median_ms = ms;
  m.timing = t;
  m.timestamp = "2026-11-23T00:00:00Z";
  return m;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(ProfileJournal, RecordedPairsGoToTheJournalAndCompactionFoldsThemIn) {
  TempDir dir("journal");
  const std::string path = dir.file("p.json");
  ProfileStore store(path, fake_profile());
  const std::string initial = read_file(path);
  store.record(pair(kConfigA, 2.0));
  store.record(pair(kConfigB, 1.0));
  EXPECT_EQ(read_file(path), initial) << "the profile is not rewritten per pair";
  EXPECT_EQ(load_profile_with_journal(path).measurements.size(), 2u);
  EXPECT_EQ(store.snapshot().best.at("w").config, kConfigB);
  store.compact();
  EXPECT_FALSE(std::filesystem::exists(journal_path(path)));
  const Profile p = load_profile(path);
  ASSERT_EQ(p.measurements.size(), 2u);
  EXPECT_EQ(p.best.at("w").config, kConfigB);
}

TEST(ProfileJournal, ATornLastLineIsDroppedAndTheRestReplayed) {
  TempDir dir("journal_torn");
  const std::string path = dir.file("p.json");
  {
    ProfileStore store(path, fake_profile());
    store.record(pair(kConfigA, 2.0));
    store.record(pair(kConfigB, 1.0));
    // No compaction: the process "dies" here.
  }
  {
    std::ofstream j(journal_path(path), std::ios::app | std::ios::binary);
    j << R"({"workload":"w","config":"c","status":"ok","tim)";  // cut mid-write
  }
  Profile p = load_profile(path);
  const JournalReplay r = replay_journal(journal_path(path), p);
  EXPECT_TRUE(r.torn_tail);
  EXPECT_EQ(r.added, 2u);
  EXPECT_EQ(p.measurements.size(), 2u);

  // A resume folds them in, drops the torn line, and leaves no journal behind.
  ProfileStore resumed(path, load_profile(path));
  EXPECT_EQ(resumed.replayed().added, 2u);
  EXPECT_FALSE(std::filesystem::exists(journal_path(path)));
  EXPECT_EQ(load_profile(path).measurements.size(), 2u);
}

TEST(ProfileJournal, ADamagedLineBeforeTheLastIsRefusedWithItsLineNumber) {
  TempDir dir("journal_bad");
  const std::string path = dir.file("p.json");
  ProfileStore store(path, fake_profile());
  store.record(pair(kConfigA, 2.0));
  std::string text = read_file(journal_path(path));
  text += "not json\n" + measurement_to_json(pair(kConfigB, 1.0)).dump() + "\n";
  std::ofstream(journal_path(path), std::ios::binary) << text;
  Profile p = load_profile(path);
  try {
    replay_journal(journal_path(path), p);
    FAIL() << "a damaged line 3 was accepted";
  } catch (const ProfileError& e) {
    EXPECT_NE(std::string(e.what()).find(journal_path(path) + ":3: malformed JSON"), std::string::npos) << e.what();
  }
}

TEST(ProfileJournal, AJournalOfAnotherGpuOrAnUnknownWorkloadIsRefused) {
  TempDir dir("journal_other");
  const std::string path = dir.file("p.json");
  GpuIdentity other;
  other.name = "NVIDIA H200";
  other.spec = "nvidia-h200";
  {
    JournalWriter w(journal_path(path), other);
    w.append(pair(kConfigA, 1.0));
  }
  Profile p = fake_profile();
  try {
    replay_journal(journal_path(path), p);
    FAIL() << "another GPU's journal was replayed";
  } catch (const ProfileError& e) {
    EXPECT_NE(std::string(e.what()).find("journal of NVIDIA H200 (nvidia-h200) beside a profile of Fake GPU"),
              std::string::npos)
        << e.what();
  }
  {
    JournalWriter w(journal_path(path), fake_gpu_identity());
    Measurement m = pair(kConfigA, 1.0);
    m.workload = "nope";
    w.append(m);
  }
  EXPECT_THROW(replay_journal(journal_path(path), p), ProfileError);
}

TEST(ProfileJournal, ReplayOverACompactedProfileAddsNothing) {
  // A crash after the compaction's rename but before the journal's removal: both hold the pairs.
  TempDir dir("journal_twice");
  const std::string path = dir.file("p.json");
  ProfileStore store(path, fake_profile());
  store.record(pair(kConfigA, 2.0));
  const std::string journal = read_file(journal_path(path));
  store.compact();
  std::ofstream(journal_path(path), std::ios::binary) << journal;
  JournalReplay r;
  const Profile p = load_profile_with_journal(path, &r);
  EXPECT_EQ(r.lines, 1u);
  EXPECT_EQ(r.already, 1u);
  EXPECT_EQ(r.added, 0u);
  EXPECT_EQ(p.measurements.size(), 1u);
  EXPECT_EQ(compact_journal(path), 0u);
  EXPECT_FALSE(std::filesystem::exists(journal_path(path)));
}

TEST(ProfileJournal, OpeningAStoreRemovesTempFilesOfAKilledWrite) {
  TempDir dir("journal_tmp");
  const std::string path = dir.file("p.json");
  // A writer that has exited: its pid names no process any more.
  const pid_t gone = ::fork();
  if (gone == 0) ::_exit(0);
  ::waitpid(gone, nullptr, 0);
  const std::string name = std::filesystem::path(output_temp_prefix(path)).filename().string() + std::to_string(gone);
  const std::string stale = dir.write(name + ".0", "{ half a profile");
  const std::string other = dir.write("q.json" + std::string(kTempMarker) + "x." + std::to_string(gone) + ".0",
                                      "another profile's");
  ProfileStore store(path, fake_profile());
  EXPECT_FALSE(std::filesystem::exists(stale));
  EXPECT_TRUE(std::filesystem::exists(other));
}

TEST(ProfileLock, ASecondWriterIsRefusedNamingTheHolder) {
  TempDir dir("lock");
  const std::string path = dir.file("p.json");
  EXPECT_FALSE(ProfileLock::holder(path));
  {
    ProfileLock held = ProfileLock::acquire(path, "flashtune tune");
    const std::string pid = "PID " + std::to_string(::getpid());
    try {
      ProfileLock::acquire(path, "flashtune fit");
      FAIL() << "a second lock was granted";
    } catch (const ProfileLockError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind(path + " is locked by flashtune tune (" + pid + " on ", 0), 0u) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos);
    }
    ASSERT_TRUE(ProfileLock::holder(path));
    EXPECT_NE(ProfileLock::holder(path)->find(pid), std::string::npos);
  }
  EXPECT_FALSE(ProfileLock::holder(path));
  ProfileLock again = ProfileLock::acquire(path, "flashtune fit");  // released with the first
}

}  // namespace
}  // namespace flashtune
