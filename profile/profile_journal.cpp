#include "profile/profile_journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <utility>

#include "kernels/traits/variants.h"
#include "model/json_file.h"
#include "profile/output_file.h"
#include "profile/profile_check.h"
#include "profile/profile_lock.h"

namespace flashtune {
namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& where, const std::string& what) { throw ProfileError(where + ": " + what); }

std::string folder_of(const std::string& path) {
  const std::filesystem::path p(path);
  return p.has_parent_path() ? p.parent_path().string() : std::string(".");
}

void sync_folder_of(const std::string& path) {
  try {
    fsync_folder(folder_of(path));
  } catch (const OutputError& e) {
    throw ProfileError(e.what());
  }
}

const char* kMoveAway = " (nothing folded in; move the journal away to drop its pairs)";

std::string string_at(const json& obj, const char* key) {
  const auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

void check_header(const json& h, const std::string& where, const Profile& p) {
  if (!h.is_object() || string_at(h, "kind") != kJournalKind)
    fail(where, std::string("not a journal header (want \"kind\": \"") + kJournalKind + "\")");
  const auto version = h.find("schema_version");
  if (version == h.end() || json_integer_in(*version, kJournalSchemaVersion, kJournalSchemaVersion) == std::nullopt)
    fail(where, "journal schema_version must be " + std::to_string(kJournalSchemaVersion));
  const auto gpu_it = h.find("gpu");
  const json gpu = gpu_it != h.end() && gpu_it->is_object() ? *gpu_it : json::object();
  const std::string name = string_at(gpu, "name"), spec = string_at(gpu, "spec");
  if (name != p.gpu.name || spec != p.gpu.spec)
    fail(where, "journal of " + name + " (" + spec + ") beside a profile of " + p.gpu.name + " (" + p.gpu.spec +
                    "): move one of them away");
}

// One journal line as a profile would hold it: the profile's value check (check_profile_values,
// the one every reader makes), plus a config that names a kernel the code has (tile_rejection: a
// tile no variant builds, such as br33, is no measurement) whose d is its workload's. A kernel of
// the full set is accepted in a small-set build, as in a profile: the journal may be another
// build's.
void check_journal_measurement(const Measurement& m, const Profile& p, const NamedWorkload& named,
                               const std::string& where) {
  const Workload& w = named.workload;
  const auto config = parse_config_name(m.config);
  if (!config) fail(where, "config '" + m.config + "': not a config name (variant/dD/brRxbcC/layout)" + kMoveAway);
  if (const auto why = tile_rejection(*config))
    fail(where, "config '" + m.config + "' is no kernel: " + *why + kMoveAway);
  if (config->d != w.d)
    fail(where, "config '" + m.config + "' has d=" + std::to_string(config->d) + " but workload '" + m.workload +
                    "' has d=" + std::to_string(w.d) + kMoveAway);
  Profile one;  // the profile's GPU and the pair's workload: every row of the check applies
  one.gpu = p.gpu;
  one.build = p.build;
  one.workloads.push_back(named);
  one.measurements.push_back(m);
  try {
    check_profile_values(one, where);
  } catch (const ProfileError& e) {
    // "<journal>:<line>: field 'measurements[0].timing.median_ms' ..." -> "... field 'timing.median_ms' ..."
    std::string what = e.what();
    const std::string index = "measurements[0].";
    if (const std::size_t at = what.find(index); at != std::string::npos) what.erase(at, index.size());
    throw ProfileError(what + kMoveAway);
  }
}

// The journal's bytes, read as every JSON file is: a regular file (a FIFO, a device or a folder
// there is refused at once: O_NONBLOCK, never a read that blocks or never ends), no symbolic link
// (the writer truncates what it opens), at most kMaxJournalBytes. nullopt when there is none.
std::optional<std::string> read_journal_file(const std::string& journal) {
  const int fd = ::open(journal.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
  if (fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    if (errno == ELOOP) fail(journal, std::string("is a symbolic link, not a journal") + kMoveAway);
    fail(journal, std::string("cannot open journal: ") + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    fail(journal, "cannot read journal: " + why);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    const char* kind = S_ISDIR(st.st_mode)    ? "a folder"
                       : S_ISFIFO(st.st_mode) ? "a FIFO"
                       : S_ISCHR(st.st_mode)  ? "a character device"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                                              : "not a regular file";
    fail(journal, std::string("is ") + kind + ", not a journal" + kMoveAway);
  }
  if (static_cast<unsigned long long>(st.st_size) > kMaxJournalBytes) {
    ::close(fd);
    fail(journal, std::to_string(st.st_size) + " bytes: larger than any journal (" +
                      std::to_string(kMaxJournalBytes) + ")" + kMoveAway);
  }
  std::string text(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::read(fd, &text[done], text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      fail(journal, "cannot read journal: " + why);
    }
    if (n == 0) break;  // shorter than fstat said (truncated meanwhile): what there is
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  text.resize(done);
  return text;
}

void default_notice(const std::string& line) { std::fprintf(stderr, "flashtune: %s\n", line.c_str()); }

// The readers' notice (note_pending_journal) goes here; stderr unless a test replaces it.
std::function<void(const std::string&)>& notice_sink() {
  static std::function<void(const std::string&)> sink = default_notice;
  return sink;
}

// load_profile_with_journal's own read is not a reader that leaves the journal pending.
thread_local int g_folding = 0;

}  // namespace

std::string journal_path(const std::string& profile_path) {
  // Beside the file a write replaces: a profile reached through a symbolic link has one journal.
  try {
    return write_target(profile_path) + ".journal";
  } catch (const OutputError& e) {
    throw ProfileError(e.what());
  }
}

JournalReplay replay_journal(const std::string& journal, Profile& p) {
  const std::optional<std::string> text = read_journal_file(journal);
  if (!text) return {};
  return replay_journal_text(*text, journal, p);
}

JournalReplay replay_journal_text(const std::string& text, const std::string& journal, Profile& p) {
  JournalReplay r;
  // Lines as written: each ends in '\n'; what follows the last '\n' was cut short by a crash.
  std::vector<std::string> lines;
  std::size_t start = 0;
  for (std::size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1)
    lines.push_back(text.substr(start, nl - start));
  r.torn_tail = start < text.size();

  std::map<std::string, NamedWorkload> workloads;
  for (const NamedWorkload& w : p.workloads) workloads[w.name] = w;
  DoneIndex done(p);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string where = journal + ":" + std::to_string(i + 1);
    if (lines[i].size() > kMaxJournalLineBytes)
      fail(where, std::to_string(lines[i].size()) + " bytes: longer than any measurement line (" +
                      std::to_string(kMaxJournalLineBytes) + ")" + kMoveAway);
    json j;
    try {
      j = parse_json_text(lines[i], where);  // the one parse: duplicate keys, 1e999, nesting depth
    } catch (const JsonFileError& e) {
      // Only the pair in flight can be damaged (every earlier line was fsynced before the next
      // was written): a last line that is not JSON is a torn write, anything earlier is not. A
      // line nested too deep is whole JSON, never torn.
      if (e.kind() == JsonFileError::Kind::kMalformed && i + 1 == lines.size()) {
        r.torn_tail = true;
        break;
      }
      throw ProfileError(std::string(e.what()) + "; move the journal away to drop its pairs");
    }
    if (i == 0) {
      check_header(j, where, p);
      continue;
    }
    Measurement m = measurement_from_json(j, where, "measurement");
    const auto w = workloads.find(m.workload);
    if (w == workloads.end()) fail(where, "workload '" + m.workload + "' is not in the profile's workloads");
    check_journal_measurement(m, p, w->second, where);
    ++r.lines;
    if (done.contains(m.workload, m.config)) {
      ++r.already;
      continue;
    }
    done.insert(m.workload, m.config);
    p.measurements.push_back(std::move(m));
    ++r.added;
  }
  if (r.added) recompute_best(p);
  return r;
}

Profile load_profile_with_journal(const std::string& path, JournalReplay* replay) {
  ++g_folding;
  Profile p;
  try {
    p = load_profile(path);
  } catch (...) {
    --g_folding;
    throw;
  }
  --g_folding;
  const JournalReplay r = replay_journal(journal_path(path), p);
  if (replay) *replay = r;
  return p;
}

void set_journal_notice_sink(std::function<void(const std::string&)> sink) {
  notice_sink() = sink ? std::move(sink) : std::function<void(const std::string&)>(default_notice);
}

std::optional<std::string> pending_journal_notice(const std::string& profile_path, const Profile& p) {
  if (g_folding > 0) return std::nullopt;
  std::string journal;
  try {
    journal = journal_path(profile_path);
  } catch (const ProfileError&) {
    return std::nullopt;
  }
  struct stat st {};
  if (::lstat(journal.c_str(), &st) != 0) return std::nullopt;
  // A writer in this process (tune, fit, merge) holds the lock and folds the journal in itself.
  if (ProfileLock::held_here(profile_path)) return std::nullopt;
  Profile copy = p;
  try {
    const JournalReplay r = replay_journal(journal, copy);
    if (r.added == 0) return std::nullopt;
    return std::to_string(r.added) + " pair" + (r.added == 1 ? "" : "s") + " pending in " + journal +
           " (not read here); run tune to resume or merge to fold them in";
  } catch (const ProfileError& e) {
    return std::string("a journal beside ") + profile_path + " that tune and merge refuse: " + e.what();
  }
}

void note_pending_journal(const std::string& profile_path, const Profile& p) {
  const std::optional<std::string> line = pending_journal_notice(profile_path, p);
  if (!line) return;
  // Once per journal and process: a command may read one profile several times.
  static std::mutex m;
  static std::set<std::string> said;
  {
    std::lock_guard<std::mutex> g(m);
    if (!said.insert(*line).second) return;
  }
  notice_sink()(*line);
}

std::size_t compact_journal(const std::string& profile_path) {
  const std::string journal = journal_path(profile_path);
  struct stat st {};
  if (::lstat(journal.c_str(), &st) != 0) return 0;  // (a FIFO or a link there is refused below)
  JournalReplay r;
  const Profile p = load_profile_with_journal(profile_path, &r);
  if (r.added) write_profile_atomic(profile_path, p);
  remove_durably(journal);
  return r.added;
}

void remove_durably(const std::string& path) {
  if (::unlink(path.c_str()) != 0) {
    if (errno == ENOENT) return;
    fail(path, std::string("cannot remove: ") + std::strerror(errno));
  }
  sync_folder_of(path);
}

JournalWriter::JournalWriter(std::string path, const GpuIdentity& gpu) : path_(std::move(path)) {
  // Never through a symbolic link, never onto a FIFO or a device (O_NONBLOCK: no open that blocks).
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
  if (fd_ < 0 && errno == ELOOP) fail(path_, "is a symbolic link, not a journal: not followed; move it away");
  if (fd_ < 0) fail(path_, std::string("cannot create journal: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    fd_ = -1;
    fail(path_, "not a regular file, not a journal: move it away");
  }
  const nlohmann::ordered_json header = {{"kind", kJournalKind},
                                         {"schema_version", kJournalSchemaVersion},
                                         {"gpu", {{"name", gpu.name}, {"spec", gpu.spec}}},
                                         {"pid", static_cast<long long>(::getpid())},
                                         {"started", utc_timestamp()}};
  write_line(header.dump());
  // The new file's name must survive a crash too, or a later append would be to a lost file.
  sync_folder_of(path_);
}

JournalWriter::~JournalWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void JournalWriter::append(const Measurement& m) { write_line(measurement_to_json(m).dump()); }

void JournalWriter::write_line(const std::string& line) {
  const std::string text = line + "\n";
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd_, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail(path_, std::string("cannot append to journal: ") + std::strerror(errno));
    done += static_cast<std::size_t>(n);
  }
  if (::fdatasync(fd_) != 0) fail(path_, std::string("cannot sync journal: ") + std::strerror(errno));
}

}  // namespace flashtune
