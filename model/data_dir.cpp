#include "model/data_dir.h"

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <system_error>

#ifndef FLASHTUNE_SOURCE_DATA_DIR
#define FLASHTUNE_SOURCE_DATA_DIR ""
#endif

namespace flashtune::model {
namespace fs = std::filesystem;

namespace {

std::mutex& override_mutex() {
  static std::mutex m;
  return m;
}

std::string& override_dir() {
  static std::string dir;
  return dir;
}

// The running executable's folder (Linux: /proc/self/exe); empty when it cannot be read.
fs::path executable_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe.parent_path();
}

bool holds_data(const fs::path& dir) {
  std::error_code ec;
  return !dir.empty() && fs::is_directory(dir / "configs" / "gpus", ec);
}

}  // namespace

void set_data_dir(const std::string& dir) {
  const std::lock_guard<std::mutex> lock(override_mutex());
  override_dir() = dir;
}

std::string data_dir() {
  {
    const std::lock_guard<std::mutex> lock(override_mutex());
    if (!override_dir().empty()) return override_dir();
  }
  if (const char* env = std::getenv("FLASHTUNE_DATA_DIR"); env && *env) return env;
  const fs::path exe_dir = executable_dir();
  const fs::path installed = exe_dir.empty() ? fs::path() : (exe_dir / ".." / "share" / "flashtune").lexically_normal();
  if (holds_data(installed)) return installed.string();
  const fs::path source = FLASHTUNE_SOURCE_DATA_DIR;
  if (holds_data(source)) return source.string();
  std::string looked = installed.empty() ? std::string("<executable>/../share/flashtune") : installed.string();
  if (!source.empty()) looked += " and " + source.string();
  throw std::runtime_error("flashtune data (configs/gpus, profiles) not found in " + looked +
                           ": set FLASHTUNE_DATA_DIR or pass --data-dir");
}

std::string data_path(const std::string& relative) { return (fs::path(data_dir()) / relative).string(); }

std::string shipped_profile_dir() {
  if (const char* env = std::getenv("FLASHTUNE_PROFILE_DIR"); env && *env) return env;
  return data_path("profiles");
}

namespace {
std::string shipped_file(const std::string& name) {
  const fs::path path = fs::path(shipped_profile_dir()) / name;
  std::error_code ec;
  return fs::is_regular_file(path, ec) ? path.string() : "";
}
}  // namespace

std::string shipped_profile_path(const std::string& spec_stem) {
  return spec_stem.empty() ? "" : shipped_file(spec_stem + ".json");
}

std::string shipped_companion_profile_path(const std::string& spec_stem, DType dtype) {
  if (spec_stem.empty() || dtype == DType::Fp32) return "";
  return shipped_file(spec_stem + "-" + dtype_name(dtype) + ".json");
}

}  // namespace flashtune::model
