// Issue 27 (Hardening II), the output, lock and journal part, host-only (the sanitizer build runs
// it): one output policy (a regular file or a new path in a folder that exists; devices, FIFOs,
// sockets and folders refused and never replaced; the process's streams written straight through),
// a profile's journal and lock counted as part of it, a lock that never follows a link, the journal
// read as every JSON file is and each line through the profile's value check, the pending-journal
// notice of readers, a temporary removed on SIGTERM, long names, no folder created.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "profile/output_file.h"
#include "profile/profile_journal.h"
#include "profile/profile_lock.h"
#include "profile/profile_store.h"
#include "test_temp_dir.h"
#include "tuner/fake_backend.h"

namespace flashtune {
namespace {

namespace fs = std::filesystem;
using testing_support::TempDir;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

template <class E = std::exception, class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "(no error)";
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::vector<std::string> temporaries_in(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (is_output_temp_name(e.path().filename().string())) out.push_back(e.path().string());
  return out;
}

bool is_char_device(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISCHR(st.st_mode);
}

Profile fake_profile() {
  Profile p;
  p.gpu = fake_gpu_identity();
  p.build.kernel_set = "test";
  p.workloads = {{"w", {2, 256, 64, false, 0}}};
  return p;
}

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

// A profile with no pairs and a journal of `lines` measurement lines beside it, as a killed tune
// leaves them (the profile written when the tune started, the journal not yet compacted).
std::string killed_tune(const TempDir& dir, const std::vector<Measurement>& lines) {
  const std::string path = dir.file("p.json");
  write_profile_atomic(path, fake_profile());
  JournalWriter j(journal_path(path), fake_gpu_identity());
  for (const Measurement& m : lines) j.append(m);
  return path;
}

// ---- item 2: one output policy -------------------------------------------------------------

TEST(OutputPolicy, DevicesFifosSocketsAndFoldersAreRefusedAndNeverReplaced) {
  TempDir t("policy_nodes");
  const std::string fifo = t.file("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  const std::string sock = t.file("sock");
  const int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", sock.c_str());
  ASSERT_EQ(::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  fs::create_directory(t.file("folder"));
  fs::create_symlink(fifo, t.file("link-to-fifo"));
  fs::create_symlink("/dev/zero", t.file("link-to-zero"));
  for (const auto& entry : std::vector<std::pair<std::string, std::string>>{
           {fifo, "is a FIFO"},
           {sock, "is a socket"},
           {t.file("folder"), "is a folder"},
           {"/dev/zero", "is a character device"},
           {t.file("link-to-fifo"), "is a FIFO"},
           {t.file("link-to-zero"), "is a character device"}}) {
    // Named copies, not a structured binding: clang (C++17) does not let a lambda capture one.
    const std::string& path = entry.first;
    const std::string& kind = entry.second;
    const std::string e = error_of<OutputError>([&] { write_output_atomic(path, "x"); });
    EXPECT_TRUE(has(e, path) && has(e, kind) && has(e, "not a regular file")) << path << ": " << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
  ::close(s);
  struct stat st {};
  ASSERT_EQ(::stat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_TRUE(is_char_device("/dev/zero"));
  EXPECT_TRUE(fs::is_symlink(t.file("link-to-fifo")));
  EXPECT_TRUE(temporaries_in(t.file("")).empty());
}

TEST(OutputPolicy, DevNullAndStdoutAreWrittenStraightThroughNeverReplaced) {
  write_output_atomic("/dev/null", "discarded\n");
  EXPECT_TRUE(is_char_device("/dev/null"));
  EXPECT_EQ(output_stream_of("/dev/stdout"), 1);
  EXPECT_EQ(output_stream_of("/dev/./stderr"), 2);
  EXPECT_EQ(output_stream_of("/proc/self/fd/7"), 7);
  EXPECT_EQ(output_stream_of("/dev/null"), -2);
  EXPECT_EQ(output_stream_of("dev/stdout"), std::nullopt);
  EXPECT_EQ(output_stream_of("/dev/fd/x"), std::nullopt);

  // stdout on a file (`> f`): the text lands in that file, through the stream's own descriptor:
  // the same inode, not a file renamed over it.
  TempDir t("policy_stdout");
  const std::string f = t.write("out.txt", "");
  struct stat before {};
  ASSERT_EQ(::stat(f.c_str(), &before), 0);
  std::fflush(stdout);
  const int saved = ::dup(1);
  const int fd = ::open(f.c_str(), O_WRONLY | O_APPEND);
  ASSERT_GE(fd, 0);
  ::dup2(fd, 1);
  ::close(fd);
  write_output_atomic("/dev/stdout", "to the file\n");
  // stdout on a pipe: the text goes down the pipe.
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  ::dup2(pipe_fds[1], 1);
  ::close(pipe_fds[1]);
  write_output_atomic("/dev/stdout", "down the pipe\n");
  ::dup2(saved, 1);
  ::close(saved);
  char buf[64] = {};
  const ssize_t n = ::read(pipe_fds[0], buf, sizeof buf - 1);
  ::close(pipe_fds[0]);
  EXPECT_EQ(std::string(buf, n > 0 ? static_cast<std::size_t>(n) : 0), "down the pipe\n");
  struct stat after {};
  ASSERT_EQ(::stat(f.c_str(), &after), 0);
  EXPECT_EQ(before.st_ino, after.st_ino) << "the file stdout pointed at was replaced";
  EXPECT_EQ(read_file(f), "to the file\n");
  EXPECT_TRUE(temporaries_in(t.file("")).empty());
}

TEST(OutputPolicy, AProfileMustBeAFileNotAStream) {
  const std::string e = error_of<ProfileError>([] { write_profile_atomic("/dev/null", fake_profile()); });
  EXPECT_TRUE(has(e, "/dev/null: a stream, not a file")) << e;
  EXPECT_TRUE(is_char_device("/dev/null"));
  const std::string l = error_of<ProfileLockError>([] { ProfileLock::acquire("/dev/null", "test"); });
  EXPECT_TRUE(has(l, "a stream, not a file")) << l;
  EXPECT_FALSE(fs::exists("/dev/null.lock"));
}

// ---- item 13: one rule for missing folders: no writer creates them --------------------------

TEST(OutputPolicy, NoWriterCreatesAMissingFolder) {
  TempDir t("policy_folders");
  const std::string out = t.file("a/b/out.csv");
  const std::string e = error_of<OutputError>([&] { write_output_atomic(out, "x"); });
  EXPECT_TRUE(has(e, out) && has(e, "does not exist") && has(e, "nothing written")) << e;
  const std::string p = t.file("a/p.json");
  EXPECT_TRUE(has(error_of<ProfileError>([&] { write_profile_atomic(p, fake_profile()); }), "does not exist"));
  EXPECT_TRUE(has(error_of<ProfileLockError>([&] { ProfileLock::acquire(p, "test"); }), "does not exist"));
  EXPECT_FALSE(fs::exists(t.file("a")));
}

// ---- item 12: a long name, a read-only file system -----------------------------------------

TEST(OutputPolicy, ALongNameGetsAShortTemporary) {
  TempDir t("policy_long");
  const std::string name(240, 'p');
  const std::string out = t.file(name + ".json");
  write_output_atomic(out, "one\n");
  write_output_atomic(out, "two\n");
  EXPECT_EQ(read_file(out), "two\n");
  write_profile_atomic(t.file(name), fake_profile());
  EXPECT_EQ(load_profile(t.file(name)).workloads.size(), 1u);
  EXPECT_LE(fs::path(output_temp_prefix(out)).filename().string().size(), 200u);
  EXPECT_TRUE(temporaries_in(t.file("")).empty());
}

TEST(OutputPolicy, AReadOnlyFileSystemIsNamedAsSuch) {
  // A read-only mount this machine has (containers mount /sys or /proc/sys read-only).
  std::ifstream mounts("/proc/mounts");
  std::string dev, dir, type, opts;
  std::string ro_dir;
  while (mounts >> dev >> dir >> type >> opts) {
    std::string rest;
    std::getline(mounts, rest);
    if ((opts == "ro" || opts.rfind("ro,", 0) == 0) && fs::is_directory(dir) && ::access(dir.c_str(), W_OK) != 0 &&
        errno == EROFS) {
      ro_dir = dir;
      break;
    }
  }
  if (ro_dir.empty()) GTEST_SKIP() << "no read-only mount here";
  const std::string out = ro_dir + "/flashtune-never.csv";
  const std::string e = error_of<OutputError>([&] { write_output_atomic(out, "x"); });
  EXPECT_TRUE(has(e, "read-only file system")) << e;
  EXPECT_FALSE(has(e, "(mode ")) << e;
}

// ---- item 5: a profile's journal and lock are part of it -----------------------------------

TEST(OutputPolicy, OutputsOntoAProfilesJournalOrLockAreRefused) {
  TempDir t("policy_sidecars");
  const std::string p = killed_tune(t, {pair(kConfigA, 2.0)});
  const std::string journal = read_file(journal_path(p));
  fs::create_symlink(p, t.file("link.json"));
  for (const std::string& out : {p + ".journal", p + ".lock", t.file("sub/../p.json.journal")}) {
    const std::string e = error_of<OutputError>([&] { require_outputs_apart({{"--profile", p}}, {{"--out", out}}); });
    EXPECT_TRUE(has(e, "would overwrite the ") && has(e, "of the input --profile")) << e;
  }
  // Through the link: the journal beside the file it names.
  const std::string e = error_of<OutputError>(
      [&] { require_outputs_apart({{"--profile", t.file("link.json")}}, {{"--residuals", p + ".journal"}}); });
  EXPECT_TRUE(has(e, "would overwrite the journal of the input --profile")) << e;
  EXPECT_EQ(read_file(journal_path(p)), journal);
  require_outputs_apart({{"--profile", p}}, {{"--out", "/dev/stdout"}, {"--x", t.file("p.json.csv")}});
}

// ---- item 3: the lock never follows a link ---------------------------------------------------

TEST(ProfileLockHardening, ALinkOrAFifoAtTheLockIsRefusedAndNothingTruncated) {
  TempDir t("lock_link");
  const std::string p = t.file("p.json");
  const std::string victim = t.write("victim.txt", "precious\n");
  fs::create_symlink(victim, p + ".lock");
  const std::string e = error_of<ProfileLockError>([&] { ProfileLock::acquire(p, "flashtune tune"); });
  EXPECT_TRUE(has(e, "is a symbolic link") && has(e, "not followed")) << e;
  EXPECT_EQ(read_file(victim), "precious\n");
  EXPECT_EQ(ProfileLock::holder(p), std::nullopt);
  fs::remove(p + ".lock");
  ASSERT_EQ(::mkfifo((p + ".lock").c_str(), 0644), 0);
  EXPECT_TRUE(has(error_of<ProfileLockError>([&] { ProfileLock::acquire(p, "flashtune tune"); }),
                  "not a regular file"));
  fs::remove(p + ".lock");
  {
    ProfileLock lock = ProfileLock::acquire(p, "flashtune tune");
    EXPECT_TRUE(ProfileLock::held_here(p));
  }
  EXPECT_FALSE(ProfileLock::held_here(p));
}

// ---- item 4: journal lines through the profile's value check --------------------------------

TEST(JournalHardening, LinesTheProfileCheckRefusesAreNeverFoldedIn) {
  Measurement negative = pair(kConfigA, -1.5);
  Measurement huge = pair(kConfigA, 1e308);
  Measurement wrong_d = pair("row_smem/d32/br64xbc32/plain", 1.0);
  Measurement no_kernel = pair("row_smem/d64/br33xbc32/plain", 1.0);
  Measurement garbage = pair("not-a-config", 1.0);
  for (const auto& [bad, what] : std::vector<std::pair<Measurement, std::string>>{
           {negative, "field 'timing.median_ms' = -1.5"},
           {huge, "field 'timing.median_ms' = 1e+308"},
           {wrong_d, "has d=32 but workload 'w' has d=64"},
           {no_kernel, "is no kernel"},
           {garbage, "not a config name"}}) {
    TempDir t("journal_values");
    const std::string p = killed_tune(t, {pair(kConfigB, 2.0), bad, pair(kConfigB, 3.0)});
    const std::string before = read_file(p);
    const std::string e = error_of<ProfileError>([&] { load_profile_with_journal(p); });
    EXPECT_TRUE(has(e, journal_path(p) + ":3: ") && has(e, what) && has(e, "nothing folded in")) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
    // tune (the store), fit and merge (compact) refuse it alike, and the profile stays as it was.
    EXPECT_TRUE(has(error_of<ProfileError>([&] { ProfileStore store(p, fake_profile()); }), what));
    EXPECT_TRUE(has(error_of<ProfileError>([&] { compact_journal(p); }), what));
    EXPECT_EQ(read_file(p), before);
    EXPECT_TRUE(fs::exists(journal_path(p)));
  }
}

// ---- item 7: the journal read as every JSON file is -----------------------------------------

TEST(JournalHardening, AFifoADeviceOrALinkAtTheJournalIsRefusedAtOnce) {
  TempDir t("journal_fifo");
  const std::string p = t.file("p.json");
  write_profile_atomic(p, fake_profile());
  ASSERT_EQ(::mkfifo(journal_path(p).c_str(), 0644), 0);
  const auto start = std::chrono::steady_clock::now();
  const std::string e = error_of<ProfileError>([&] { load_profile_with_journal(p); });
  EXPECT_TRUE(has(e, journal_path(p) + ": is a FIFO, not a journal")) << e;
  EXPECT_TRUE(has(error_of<ProfileError>([&] { ProfileStore store(p, fake_profile()); }), "is a FIFO"));
  EXPECT_TRUE(has(error_of<ProfileError>([&] { compact_journal(p); }), "is a FIFO"));
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
  fs::remove(journal_path(p));
  fs::create_symlink("/dev/zero", journal_path(p));
  EXPECT_TRUE(has(error_of<ProfileError>([&] { load_profile_with_journal(p); }), "symbolic link"));
  fs::remove(journal_path(p));
  // A copy of /dev/zero (root may make one): a character device, never read.
  if (::mknod(journal_path(p).c_str(), S_IFCHR | 0644, ::makedev(1, 5)) == 0) {
    EXPECT_TRUE(has(error_of<ProfileError>([&] { load_profile_with_journal(p); }), "is a character device"));
    fs::remove(journal_path(p));
  }
}

TEST(JournalHardening, ALineLongerThanAnyMeasurementIsRefused) {
  Profile p = fake_profile();
  const std::string header = R"({"kind": "flashtune-profile-journal", "schema_version": 1, "gpu": {"name": ")" +
                             p.gpu.name + R"(", "spec": ")" + p.gpu.spec + "\"}}\n";
  const std::string e = error_of<ProfileError>(
      [&] { replay_journal_text(header + std::string(kMaxJournalLineBytes + 1, ' ') + "\n", "j", p); });
  EXPECT_TRUE(has(e, "j:2: ") && has(e, "longer than any measurement line")) << e;
  // A header of the wrong types is refused, not a crash.
  EXPECT_TRUE(has(error_of<ProfileError>([&] {
                    replay_journal_text(R"({"kind": "flashtune-profile-journal", "schema_version": "1", "gpu": 3})"
                                        "\n",
                                        "j", p);
                  }),
                  "schema_version"));
}

// ---- item 10: readers name a pending journal --------------------------------------------------

TEST(JournalHardening, ReadersThatIgnoreAPendingJournalSaySo) {
  TempDir t("journal_pending");
  const std::string p = killed_tune(t, {pair(kConfigA, 2.0), pair(kConfigB, 3.0)});
  std::vector<std::string> said;
  set_journal_notice_sink([&](const std::string& line) { said.push_back(line); });
  const Profile read = load_profile(p);
  EXPECT_TRUE(read.measurements.empty());
  ASSERT_EQ(said.size(), 1u);
  EXPECT_EQ(said[0], "2 pairs pending in " + journal_path(p) +
                         " (not read here); run tune to resume or merge to fold them in");
  (void)load_profile(p);
  EXPECT_EQ(said.size(), 1u) << "said once per process";
  // Folding readers and a writer holding the lock say nothing.
  EXPECT_EQ(load_profile_with_journal(p).measurements.size(), 2u);
  {
    ProfileLock lock = ProfileLock::acquire(p, "test");
    EXPECT_EQ(pending_journal_notice(p, read), std::nullopt);
  }
  set_journal_notice_sink(nullptr);
  EXPECT_TRUE(pending_journal_notice(p, read).has_value());
  compact_journal(p);
  EXPECT_EQ(pending_journal_notice(p, load_profile(p)), std::nullopt);
}

// ---- item 13: a signal while an output is staged leaves no temporary --------------------------

TEST(OutputPolicy, SigtermWhileStagedLeavesNoTemporary) {
  TempDir t("policy_signal");
  const std::string out = t.write("big.json", "previous\n");
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    remove_staged_temps_on_signal();
    StagedOutput staged(out, std::string(1 << 20, 'x'));
    const char c = 'r';
    if (::write(ready[1], &c, 1) != 1) ::_exit(3);
    for (;;) ::pause();
  }
  ::close(ready[1]);
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ::close(ready[0]);
  EXPECT_EQ(temporaries_in(t.file("")).size(), 1u);
  ::kill(child, SIGTERM);
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
  EXPECT_TRUE(temporaries_in(t.file("")).empty());
  EXPECT_EQ(read_file(out), "previous\n");
}

}  // namespace
}  // namespace flashtune
