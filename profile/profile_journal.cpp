#include "profile/profile_journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>

#include "model/json_file.h"
#include "profile/output_file.h"

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

void check_header(const json& h, const std::string& where, const Profile& p) {
  if (!h.is_object() || h.value("kind", "") != kJournalKind)
    fail(where, std::string("not a journal header (want \"kind\": \"") + kJournalKind + "\")");
  if (h.value("schema_version", 0) != kJournalSchemaVersion)
    fail(where, "journal schema_version must be " + std::to_string(kJournalSchemaVersion));
  const json gpu = h.value("gpu", json::object());
  const std::string name = gpu.value("name", ""), spec = gpu.value("spec", "");
  if (name != p.gpu.name || spec != p.gpu.spec)
    fail(where, "journal of " + name + " (" + spec + ") beside a profile of " + p.gpu.name + " (" + p.gpu.spec +
                    "): move one of them away");
}

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
  JournalReplay r;
  std::ifstream in(journal, std::ios::binary);
  if (!in) {
    if (std::filesystem::exists(journal)) fail(journal, "cannot open journal");
    return r;
  }
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string text = buf.str();
  // Lines as written: each ends in '\n'; what follows the last '\n' was cut short by a crash.
  std::vector<std::string> lines;
  std::size_t start = 0;
  for (std::size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1)
    lines.push_back(text.substr(start, nl - start));
  r.torn_tail = start < text.size();

  std::set<std::string> workloads;
  for (const NamedWorkload& w : p.workloads) workloads.insert(w.name);
  DoneIndex done(p);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string where = journal + ":" + std::to_string(i + 1);
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
    if (!workloads.count(m.workload))
      fail(where, "workload '" + m.workload + "' is not in the profile's workloads");
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
  Profile p = load_profile(path);
  const JournalReplay r = replay_journal(journal_path(path), p);
  if (replay) *replay = r;
  return p;
}

std::size_t compact_journal(const std::string& profile_path) {
  const std::string journal = journal_path(profile_path);
  if (!std::filesystem::exists(journal)) return 0;
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
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) fail(path_, std::string("cannot create journal: ") + std::strerror(errno));
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
