// The loaders and writers against hostile input (issue 15), host-only so the sanitizer build runs
// them too: strict JSON files, workload size limits, .npy headers checked against the file size,
// the one value check of a profile, and outputs that cannot destroy the previous file.
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/gpu_spec.h"
#include "model/json_file.h"
#include "model/workload_limits.h"
#include "plots/plot_profile.h"
#include "profile/output_file.h"
#include "profile/profile.h"
#include "profile/profile_journal.h"
#include "profile/profile_lock.h"
#include "profile/profile_store.h"
#include "profile/workload_set.h"
#include "test_temp_dir.h"
#include "tuner/npy.h"

namespace {

using flashtune::testing_support::TempDir;
using nlohmann::json;

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The names in a folder that are temporaries of ours.
std::vector<std::string> temporaries_in(const std::string& folder) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(folder))
    if (flashtune::is_output_temp_name(e.path().filename().string())) names.push_back(e.path().filename().string());
  return names;
}

// Runs `f`, which must throw an exception of type E whose message contains every fragment.
template <class E, class F>
void expect_error(F f, std::initializer_list<const char*> fragments) {
  try {
    f();
    ADD_FAILURE() << "no exception";
  } catch (const E& e) {
    const std::string what = e.what();
    for (const char* frag : fragments) EXPECT_NE(what.find(frag), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << "one line: " << what;
  }
}

// ---- strict JSON files --------------------------------------------------------------------

TEST(JsonFile, DuplicateKeyIsAnErrorNamingTheKey) {
  expect_error<flashtune::JsonFileError>([] { flashtune::parse_json_text(R"({"a": 1, "b": {"c": 1, "c": 2}})", "s.json"); },
                                         {"s.json", "'c'", "twice"});
  EXPECT_NO_THROW(flashtune::parse_json_text(R"({"c": 1, "b": {"c": 2}})", "s.json"));  // other objects
}

TEST(JsonFile, NumberBeyondDoubleNamesTheFile) {
  expect_error<flashtune::JsonFileError>([] { flashtune::parse_json_text(R"({"a": 1e999})", "big.json"); },
                                         {"big.json", "1e999"});
}

TEST(JsonFile, FolderAndFifoAreNamedAndDoNotBlock) {
  TempDir t("json_fifo");
  expect_error<flashtune::JsonFileError>([&] { flashtune::read_json_file(t.file("")); }, {"is a folder"});
  const std::string fifo = t.file("f.json");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expect_error<flashtune::JsonFileError>([&] { flashtune::read_json_file(fifo); }, {"f.json", "not a regular file"});
  expect_error<flashtune::JsonFileError>([&] { flashtune::read_json_file(t.file("none.json")); }, {"cannot open file"});
}

TEST(JsonFile, IntegersAreCheckedNotTruncated) {
  EXPECT_FALSE(flashtune::json_integer_in(json::parse("4294967360"), 1, 1024));
  EXPECT_FALSE(flashtune::json_integer_in(json::parse("18446744073709551615"), 0, INT64_MAX));
  EXPECT_FALSE(flashtune::json_integer_in(json::parse("64.0"), 1, 1024));
  EXPECT_EQ(flashtune::json_integer_in(json::parse("64"), 1, 1024), 64);
}

// ---- GPU spec sheets ------------------------------------------------------------------------

json shipped_h200_spec() {
  return json::parse(read_all(std::string(FLASHTUNE_SOURCE_DIR) + "/configs/gpus/nvidia-h200.json"));
}

void expect_spec_refused(const json& spec, std::initializer_list<const char*> fragments) {
  TempDir t("spec");
  const std::string path = t.write("spec.json", spec.dump());
  expect_error<std::runtime_error>([&] { flashtune::model::load_gpu_spec(path); }, fragments);
}

TEST(GpuSpecHardening, DenormalBandwidthIsRefused) {
  json s = shipped_h200_spec();
  s["dram_bandwidth_gbs"]["value"] = 5e-324;
  expect_spec_refused(s, {"spec.json", "dram_bandwidth_gbs", "plausible"});
}

TEST(GpuSpecHardening, HugeIntegersAreReportedAsWritten) {
  json s = shipped_h200_spec();
  s["sm_count"]["value"] = std::uint64_t(18446744073709551615ULL);
  expect_spec_refused(s, {"sm_count", "18446744073709551615"});
  s = shipped_h200_spec();
  s["compute_capability"]["value"] = "99999999999.0";
  expect_spec_refused(s, {"compute_capability", "99999999999.0"});
  s = shipped_h200_spec();
  s["schema_version"] = 4294967297LL;
  expect_spec_refused(s, {"schema_version"});
}

TEST(GpuSpecHardening, DuplicateKeyAndOverflowNameTheFile) {
  TempDir t("spec_text");
  std::string text = shipped_h200_spec().dump();
  const std::string dup = t.write("dup.json", "{\"sm_count\": {\"value\": 1, \"source\": \"x\"}, " + text.substr(1));
  expect_error<std::runtime_error>([&] { flashtune::model::load_gpu_spec(dup); }, {"dup.json", "sm_count", "twice"});
  const std::string big = t.write("big.json", R"({"schema_version": 1e999})");
  expect_error<std::runtime_error>([&] { flashtune::model::load_gpu_spec(big); }, {"big.json", "1e999"});
}

// A file that does not parse, anywhere in the spec folder, used to break `--gpu h200` for every GPU.
TEST(GpuSpecHardening, ABadFileInTheFolderBreaksNoOtherGpu) {
  TempDir t("spec_dir");
  t.write("nvidia-h200.json", shipped_h200_spec().dump());
  t.write("broken.json", R"({"aliases": ["h200"], "sm_count": {"value": 1e400}})");
  EXPECT_EQ(flashtune::model::find_gpu_spec("h200", t.file("")).sm_count, 132);
  EXPECT_EQ(flashtune::model::find_gpu_spec("nvidia-h200", t.file("")).sm_count, 132);
  expect_error<std::runtime_error>([&] { flashtune::model::find_gpu_spec("broken", t.file("")); }, {"broken.json", "1e400"});
}

// ---- workload limits ------------------------------------------------------------------------

flashtune::Workload workload(long long B, long long N, int d) {
  flashtune::Workload w;
  w.B = B;
  w.N = N;
  w.d = d;
  return w;
}

TEST(WorkloadLimits, OverflowingAndUnlaunchableWorkloadsAreRefusedWithTheReason) {
  using flashtune::model::workload_limit_error;
  EXPECT_FALSE(workload_limit_error(workload(500, 2048, 64)));
  EXPECT_FALSE(workload_limit_error(workload(13600, 128, 32)));
  const auto huge_b = workload_limit_error(workload(9223372036854775807LL, 1024, 64));
  ASSERT_TRUE(huge_b);
  EXPECT_NE(huge_b->find("2^63 bytes"), std::string::npos) << *huge_b;
  const auto huge_n = workload_limit_error(workload(1, 1099511627776LL, 64));
  ASSERT_TRUE(huge_n);
  EXPECT_NE(huge_n->find("2147483647"), std::string::npos) << *huge_n;
  EXPECT_TRUE(workload_limit_error(workload(1, 2147483648LL, 64)));
  EXPECT_TRUE(workload_limit_error(workload(4, 1024, 0)));
  EXPECT_TRUE(workload_limit_error(workload(0, 1024, 64)));
  // Tile visits overflow before bytes do.
  EXPECT_TRUE(workload_limit_error(workload(1LL << 30, 2147483647LL, 32)));
  // A batch above grid.y's 65535 folds into grid.x, which then overflows.
  EXPECT_TRUE(workload_limit_error(workload(1LL << 24, 1LL << 20, 32)));
}

TEST(WorkloadFileHardening, TruncatingIntegersAndUnsupportedDAreRefused) {
  TempDir t("workloads");
  const auto file = [&](const std::string& w, const std::string& version = "1") {
    return t.write("w.json", R"({"schema_version": )" + version + R"(, "workloads": [)" + w + "]}");
  };
  expect_error<flashtune::WorkloadFileError>(
      [&] { flashtune::load_workload_set(file(R"({"name": "a", "B": 1, "N": 64, "d": 4294967360})")); }, {"w.json", "d"});
  expect_error<flashtune::WorkloadFileError>(
      [&] { flashtune::load_workload_set(file(R"({"name": "a", "B": 2147483647, "N": 2147483647, "d": 1024})")); },
      {"w.json", "workloads[0]", "2^63 bytes"});
  expect_error<flashtune::WorkloadFileError>(
      [&] { flashtune::load_workload_set(file(R"({"name": "a", "B": 1, "N": 64, "d": 64})", "4294967297")); },
      {"w.json", "schema_version"});
  expect_error<flashtune::WorkloadFileError>(
      [&] { flashtune::load_workload_set(file(R"({"name": "a", "B": 1, "N": 1e400, "d": 64})")); }, {"w.json", "1e400"});
}

// ---- .npy: every length checked against the file before allocating ---------------------------

std::string npy_bytes(const std::string& shape, std::size_t data_bytes, int version = 1) {
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
  const std::size_t pre = version == 1 ? 10 : 12;
  dict.append((64 - (pre + dict.size() + 1) % 64) % 64, ' ');
  dict.push_back('\n');
  std::string out = std::string("\x93NUMPY", 6) + char(version) + '\0';
  for (std::size_t i = 0; i < (version == 1 ? 2u : 4u); ++i) out.push_back(char((dict.size() >> (8 * i)) & 0xFF));
  return out + dict + std::string(data_bytes, '\0');
}

std::string npy_error(const std::string& bytes) {
  TempDir t("npy");
  const std::string path = t.write("x.npy", bytes);
  try {
    flashtune::npy::read_f32(path);
  } catch (const flashtune::npy::NpyError& e) {
    return e.what();
  }
  return "";
}

TEST(NpyHardening, HugeHeaderLengthFailsBeforeAllocating) {
  // 14 bytes: version 2 with a header length of 0xFFFFFFF0 (was 4.2 GB resident, 16 s).
  const std::string bytes = std::string("\x93NUMPY\x02\x00\xF0\xFF\xFF\xFF{}", 14);
  const std::string e = npy_error(bytes);
  EXPECT_NE(e.find("truncated header"), std::string::npos) << e;
  EXPECT_NE(e.find("4294967280"), std::string::npos) << e;
}

TEST(NpyHardening, ShapesAreCheckedAgainstTheFileSize) {
  std::string e = npy_error(npy_bytes("(100, 100000, 64)", 16));
  EXPECT_NE(e.find("data has 16 bytes"), std::string::npos) << e;
  e = npy_error(npy_bytes("(1000000, 1000000, 64)", 16));  // was a bare std::bad_alloc
  EXPECT_NE(e.find("data has 16 bytes"), std::string::npos) << e;
}

TEST(NpyHardening, ShapesDoNotWrapAround) {
  std::string e = npy_error(npy_bytes("(18446744073709551618, 64, 64)", 2 * 64 * 64 * 4));
  EXPECT_NE(e.find("above 2^64-1"), std::string::npos) << e;
  // 2^62 x 4 x 64 x 4 bytes wraps to 0: it passed with no data before.
  e = npy_error(npy_bytes("(4611686018427387904, 4, 64)", 0));
  EXPECT_NE(e.find("more than 2^64 bytes"), std::string::npos) << e;
}

TEST(NpyHardening, StreamReaderMatchesTheFileReader) {
  const std::string bytes = npy_bytes("(2, 3, 4)", 24 * 4);
  std::istringstream in(bytes);
  const auto a = flashtune::npy::read_f32(in, bytes.size(), "mem.npy");
  EXPECT_EQ(a.data.size(), 24u);
  EXPECT_EQ(flashtune::npy::shape_string(a.shape), "(2, 3, 4)");
}

// run --out's writer: a link followed and kept, the mode kept, a read-only file refused.
TEST(NpyHardening, WritesRespectTheFile) {
  TempDir t("npy_write");
  const float x[2] = {1, 2};
  const std::string target = t.file("real.npy");
  flashtune::npy::write_f32(target, {2}, x);
  ASSERT_EQ(::chmod(target.c_str(), 0600), 0);
  std::filesystem::create_symlink(target, t.file("o.npy"));
  flashtune::npy::write_f32(t.file("o.npy"), {1, 2}, x);
  EXPECT_TRUE(std::filesystem::is_symlink(t.file("o.npy")));
  EXPECT_EQ(flashtune::npy::read_f32(target).shape, (std::vector<std::size_t>{1, 2}));
  struct stat st {};
  ASSERT_EQ(::stat(target.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  ASSERT_EQ(::chmod(target.c_str(), 0444), 0);
  expect_error<flashtune::npy::NpyError>([&] { flashtune::npy::write_f32(target, {2}, x); }, {"real.npy", "read-only"});
  EXPECT_TRUE(temporaries_in(t.file("")).empty());
}

TEST(NpyHardening, FifoIsRefusedWithoutBlocking) {
  TempDir t("npy_fifo");
  const std::string fifo = t.file("q.npy");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expect_error<flashtune::npy::NpyError>([&] { flashtune::npy::read_header(fifo); }, {"q.npy", "not a regular file"});
}

// ---- one value check of a profile, the same for every reader -------------------------------

json fixture_profile() { return json::parse(read_all(FLASHTUNE_FIXTURE_PROFILE)); }

// Both readers (the tuner's and the plots') refuse `doc` with a message holding the fragments.
void expect_profile_refused(const json& doc, std::initializer_list<const char*> fragments) {
  TempDir t("profile");
  const std::string path = t.write("p.json", doc.dump());
  expect_error<flashtune::ProfileError>([&] { flashtune::load_profile(path); }, fragments);
  expect_error<std::runtime_error>([&] { flashtune::plots::load_plot_profile(path); }, fragments);
}

TEST(ProfileCheck, FixtureReadsThroughBothReaders) {
  TempDir t("profile_ok");
  const std::string path = t.write("p.json", fixture_profile().dump());
  EXPECT_NO_THROW(flashtune::load_profile(path));
  EXPECT_NO_THROW(flashtune::plots::load_plot_profile(path));
}

TEST(ProfileCheck, MedianBelowMinNamesTheMeasurementAndField) {
  json p = fixture_profile();
  p["measurements"][3]["timing"]["median_ms"] = -1.5;
  expect_profile_refused(p, {"p.json", "measurements[3].timing.median_ms", "-1.5"});
  p = fixture_profile();
  p["measurements"][2]["timing"]["median_ms"] = 1e-300;  // fit trusted this point (rms 17.7)
  expect_profile_refused(p, {"measurements[2].timing.median_ms"});
  p = fixture_profile();
  p["measurements"][2]["timing"]["median_ms"] = 0.0;
  expect_profile_refused(p, {"measurements[2].timing.median_ms"});
  p = fixture_profile();
  p["measurements"][1]["timing"]["median_ms"] = p["measurements"][1]["timing"]["min_ms"].get<double>() / 2;
  expect_profile_refused(p, {"measurements[1].timing.median_ms", "below min_ms"});
}

TEST(ProfileCheck, DuplicatePairsSchemaAndUnsupportedDAreRefusedEverywhere) {
  json p = fixture_profile();
  p["measurements"].push_back(p["measurements"][0]);
  expect_profile_refused(p, {"measured twice"});
  p = fixture_profile();
  p["schema_version"] = 4;  // a version after this build's (3)
  expect_profile_refused(p, {"schema_version"});
  p = fixture_profile();
  p["schema_version"] = 4294967297LL;
  expect_profile_refused(p, {"schema_version"});
  p = fixture_profile();
  p["workloads"][0]["d"] = 48;
  expect_profile_refused(p, {"workloads[0]", "d=48"});
  p = fixture_profile();
  p["workloads"][0]["d"] = 4294967360LL;
  expect_profile_refused(p, {"workloads[0].d"});
  p = fixture_profile();
  p["measurements"][0]["counters"]["dram__bytes_read.sum"] = -4.0;
  expect_profile_refused(p, {"measurements[0].counters.dram__bytes_read.sum"});
}

// Found by fuzz_config_name: sscanf read "br-16" and the name wrote it back the same. One parser
// now (kernels/traits/tile_config.h), which the plots read through too.
TEST(ProfileCheck, ConfigNamesWithASignAreRefused) {
  EXPECT_FALSE(flashtune::parse_config_name("row_smem/d32/br-16xbc32/plain"));
  EXPECT_FALSE(flashtune::parse_config_name("row_smem/d32/br+16xbc32/plain"));
  EXPECT_TRUE(flashtune::parse_config_name("row_smem/d32/br16xbc32/plain"));
}

// ---- outputs that cannot destroy -----------------------------------------------------------

TEST(OutputFile, SameFileSeesThroughDotsAndLinks) {
  TempDir t("same_file");
  const std::string p = t.write("p.json", "{}");
  EXPECT_TRUE(flashtune::same_file(p, t.file("./p.json")));
  std::filesystem::create_symlink(p, t.file("link.json"));
  EXPECT_TRUE(flashtune::same_file(t.file("link.json"), p));
  EXPECT_FALSE(flashtune::same_file(t.file("other.json"), p));
  expect_error<flashtune::OutputError>(
      [&] { flashtune::require_outputs_apart({{"--profile", p}}, {{"--residuals", t.file("link.json")}}); },
      {"--residuals", "would overwrite the input --profile"});
}

TEST(OutputFile, UnwritablePathLeavesNothingAndSaysWhy) {
  expect_error<flashtune::OutputError>([] { flashtune::write_output_atomic("/proc/flashtune-out.csv", "x"); },
                                       {"/proc/flashtune-out.csv", "cannot write"});
  expect_error<flashtune::OutputError>([] { flashtune::write_output_atomic("/nonexistent/dir/r.csv", "x"); },
                                       {"/nonexistent/dir/r.csv"});
}

TEST(OutputFile, FileSizeLimitLeavesThePreviousFileIntact) {
  TempDir t("fsize");
  const std::string path = t.write("out.csv", "previous\n");
  std::signal(SIGXFSZ, SIG_IGN);  // as flashtune's main does: EFBIG instead of a killed process
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  rlimit low = old;
  low.rlim_cur = 4096;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &low), 0);
  std::string error;
  try {
    flashtune::write_output_atomic(path, std::string(100000, 'x'));
  } catch (const flashtune::OutputError& e) {
    error = e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &old);
  EXPECT_NE(error.find("out.csv"), std::string::npos) << error;
  EXPECT_EQ(read_all(path), "previous\n");
  std::size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(t.file(""))) files += e.is_regular_file();
  EXPECT_EQ(files, 1u) << "no temporary left behind";
}

TEST(OutputFile, ReplacedFileKeepsItsMode) {
  TempDir t("mode");
  const std::string path = t.write("out.csv", "old\n");
  ASSERT_EQ(::chmod(path.c_str(), 0640), 0);
  flashtune::write_output_atomic(path, "new\n");
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  EXPECT_EQ(read_all(path), "new\n");
}

// ---- the profile writer respects the file (issue 15, defects 5 and 12) ------------------------

// The fixture profile as JSON, to be changed and written where a test wants it.
json fixture_json() { return json::parse(read_all(FLASHTUNE_FIXTURE_PROFILE)); }

// Runs `body` in a forked child whose files may grow to `limit` bytes. With SIGXFSZ ignored (as
// flashtune's main does) a write past the limit fails with EFBIG; left at its default the signal
// kills the child mid-write, as a crash or a `kill -9` would. The child's one-line error, if any,
// comes back through `message`. Returns the child's wait status.
int in_child_with_file_limit(rlim_t limit, bool ignore_sigxfsz, const std::function<void()>& body,
                             std::string* message = nullptr) {
  int fds[2];
  if (::pipe(fds) != 0) return -1;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    std::signal(SIGXFSZ, ignore_sigxfsz ? SIG_IGN : SIG_DFL);
    const rlimit low{limit, limit};
    if (::setrlimit(RLIMIT_FSIZE, &low) != 0) ::_exit(3);
    int code = 0;
    try {
      body();
    } catch (const std::exception& e) {
      const std::string what = e.what();
      const ssize_t ignored = ::write(fds[1], what.data(), what.size());
      (void)ignored;
      code = 1;
    }
    ::_exit(code);
  }
  ::close(fds[1]);
  char buf[1024];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;)
    if (message) message->append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

TEST(ProfileWrite, ASymlinkIsFollowedAndKept) {
  TempDir t("pw_link");
  std::filesystem::create_directories(t.file("real"));
  const std::string target = t.write("real/p.json", read_all(FLASHTUNE_FIXTURE_PROFILE));
  const std::string link = t.file("p.json");
  std::filesystem::create_symlink("real/p.json", link);  // relative, as `ln -s` makes them
  flashtune::Profile p = flashtune::load_profile(link);
  p.coefficients = {{"fp32_efficiency", 0.5}};
  flashtune::write_profile_atomic(link, p);
  EXPECT_TRUE(std::filesystem::is_symlink(link)) << "the link was replaced by a regular file";
  EXPECT_EQ(flashtune::load_profile(target).coefficients.value("fp32_efficiency", 0.0), 0.5);
  // The lock and the journal sit beside the file itself: one of each per profile, whatever its name.
  EXPECT_EQ(flashtune::lock_path(link), target + ".lock");
  EXPECT_EQ(flashtune::journal_path(link), target + ".journal");
  EXPECT_TRUE(temporaries_in(t.file("real")).empty());
}

TEST(ProfileWrite, TheModeIsKept) {
  TempDir t("pw_mode");
  const std::string path = t.write("p.json", read_all(FLASHTUNE_FIXTURE_PROFILE));
  ASSERT_EQ(::chmod(path.c_str(), 0640), 0);
  flashtune::write_profile_atomic(path, flashtune::load_profile(path));
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
}

// The tests run as root, whom access(2) lets write a 0444 file: the writer reads the mode bits.
TEST(ProfileWrite, AReadOnlyFileIsRefusedEvenForRoot) {
  TempDir t("pw_readonly");
  const std::string path = t.write("p.json", read_all(FLASHTUNE_FIXTURE_PROFILE));
  const std::string before = read_all(path);
  ASSERT_EQ(::chmod(path.c_str(), 0444), 0);
  expect_error<flashtune::ProfileError>(
      [&] { flashtune::write_profile_atomic(path, flashtune::load_profile(path)); },
      {"p.json", "read-only (mode 0444)"});
  EXPECT_EQ(read_all(path), before);
  expect_error<flashtune::OutputError>([&] { flashtune::write_output_atomic(path, "x"); }, {"read-only"});
  EXPECT_TRUE(temporaries_in(t.file("")).empty());
}

TEST(ProfileWrite, UnknownFieldsAndAbsentStatisticsSurviveARewrite) {
  TempDir t("pw_unknown");
  json doc = fixture_json();
  doc["gpu"]["pci_bus_id"] = "0000:19:00.0";
  doc["build"]["cmake_flags"] = "-O3";
  doc["workloads"][1]["label"] = "seed case";
  doc["measurements"][0]["host"] = "node3";
  doc["measurements"][0]["timing"]["p90_ms"] = 0.339;
  json& timing = doc["measurements"][1]["timing"];
  for (const char* k : {"min_ms", "max_ms", "stdev_ms", "mean_ms", "rel_stdev", "samples", "dropped"}) timing.erase(k);
  const std::string path = t.write("p.json", doc.dump(1));
  flashtune::Profile p = flashtune::load_profile(path);
  p.coefficients = {{"fp32_efficiency", 0.5}};  // as fit's rewrite changes the profile
  flashtune::write_profile_atomic(path, p);
  const json after = json::parse(read_all(path));
  EXPECT_EQ(after["gpu"]["pci_bus_id"], "0000:19:00.0");
  EXPECT_EQ(after["build"]["cmake_flags"], "-O3");
  EXPECT_EQ(after["workloads"][1]["label"], "seed case");
  EXPECT_EQ(after["measurements"][0]["host"], "node3");
  EXPECT_EQ(after["measurements"][0]["timing"]["p90_ms"], 0.339);
  for (const char* k : {"min_ms", "max_ms", "stdev_ms", "mean_ms", "rel_stdev", "samples", "dropped"})
    EXPECT_FALSE(after["measurements"][1]["timing"].contains(k)) << k << " was written although the file had none";
  // A statistic the file has is written back as it was.
  EXPECT_EQ(after["measurements"][0]["timing"]["min_ms"], doc["measurements"][0]["timing"]["min_ms"]);
  EXPECT_EQ(after["measurements"][0]["timing"].contains("max_ms"), doc["measurements"][0]["timing"].contains("max_ms"));
}

TEST(ProfileWrite, APathUnderProcFailsInOneLine) {
  const flashtune::Profile p = flashtune::load_profile(FLASHTUNE_FIXTURE_PROFILE);
  expect_error<flashtune::ProfileError>([&] { flashtune::write_profile_atomic("/proc/flashtune-p.json", p); },
                                        {"/proc/flashtune-p.json", "cannot write"});
}

TEST(ProfileWrite, AFileSizeLimitMidWriteKeepsThePreviousProfile) {
  TempDir t("pw_fsize");
  const std::string path = t.write("p.json", read_all(FLASHTUNE_FIXTURE_PROFILE));
  const std::string before = read_all(path);
  flashtune::Profile p = flashtune::load_profile(path);
  p.coefficients = {{"fp32_efficiency", 0.5}};
  std::string message;
  const int status = in_child_with_file_limit(
      4096, true, [&] { flashtune::write_profile_atomic(path, p); }, &message);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 1) << "the write did not fail: " << message;
  EXPECT_NE(message.find("p.json"), std::string::npos) << message;
  EXPECT_NE(message.find("File too large"), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_EQ(read_all(path), before);
  EXPECT_TRUE(temporaries_in(t.file("")).empty());
}

// A writer killed mid-write (here by SIGXFSZ, as `kill -9` would) leaves its temporary behind,
// under a name a listing shows; the next write to the same file removes it.
TEST(ProfileWrite, AWriterKilledMidWriteLeavesATemporaryTheNextWriteRemoves) {
  TempDir t("pw_killed");
  const std::string path = t.write("p.json", read_all(FLASHTUNE_FIXTURE_PROFILE));
  const std::string before = read_all(path);
  const flashtune::Profile p = flashtune::load_profile(path);
  const int status = in_child_with_file_limit(4096, false, [&] { flashtune::write_profile_atomic(path, p); });
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGXFSZ) << status;
  EXPECT_EQ(read_all(path), before);
  ASSERT_EQ(temporaries_in(t.file("")).size(), 1u) << "the killed write's temporary";
  // Another file's temporary and a live writer's stay.
  const std::string other = t.write("q.json" + std::string(flashtune::kTempMarker) + "x.1.0", "another file's");
  const std::string live =
      t.write(std::filesystem::path(flashtune::output_temp_prefix(path)).filename().string() +
                  std::to_string(::getppid()) + ".0",
              "a live writer's");
  flashtune::write_profile_atomic(path, p);
  const std::vector<std::string> left = temporaries_in(t.file(""));
  EXPECT_EQ(left.size(), 2u);
  EXPECT_TRUE(std::filesystem::exists(other));
  EXPECT_TRUE(std::filesystem::exists(live));
}

TEST(ProfileWrite, ATuneStoreThroughASymlinkWritesTheTarget) {
  TempDir t("pw_store_link");
  const std::string target = t.write("real.json", read_all(FLASHTUNE_FIXTURE_PROFILE));
  const std::string link = t.file("p.json");
  std::filesystem::create_symlink(target, link);
  ASSERT_EQ(::chmod(target.c_str(), 0600), 0);
  {
    flashtune::ProfileStore store(link, flashtune::load_profile(link));
    flashtune::Measurement m = store.snapshot().measurements.front();
    m.config = "row_smem/d64/br32xbc32/plain";  // a pair the fixture does not hold
    store.record(m);
    EXPECT_TRUE(std::filesystem::exists(target + ".journal"));
    store.compact();
  }
  EXPECT_TRUE(std::filesystem::is_symlink(link));
  EXPECT_FALSE(std::filesystem::exists(target + ".journal"));
  struct stat st {};
  ASSERT_EQ(::stat(target.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(flashtune::load_profile(target).measurements.size(), flashtune::load_profile(FLASHTUNE_FIXTURE_PROFILE).measurements.size() + 1);
}

}  // namespace
