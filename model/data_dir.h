// Where flashtune's shipped data lives: the GPU specs (configs/gpus), the workload files
// (configs/workloads), the compiled kernels' instruction table (configs/kernels), the measured
// profiles (profiles/, profiles/unseen/, profiles/counters/) and the plot templates
// (plots/templates), laid out as in the source tree. An install puts the same tree under
// <prefix>/share/flashtune. One function decides, trying in this order:
//   1. the folder given to set_data_dir() (the command line's --data-dir);
//   2. $FLASHTUNE_DATA_DIR;
//   3. <folder of the running executable>/../share/flashtune, when it holds configs/gpus (an
//      installed flashtune, or a program installed beside it);
//   4. the source tree the library was built from, when it still holds configs/gpus (compiled in:
//      the build tree's binaries and tests).
// 1 and 2 are taken as given (a folder without the data fails later, naming the path).
#pragma once

#include <string>

#include "kernels/traits/tile_config.h"

namespace flashtune::model {

// The data folder, by the rules above. Throws std::runtime_error, one line naming the folders
// looked in, when none of 3 and 4 holds the data and neither 1 nor 2 is set.
std::string data_dir();

// `relative` (e.g. "configs/gpus") under data_dir().
std::string data_path(const std::string& relative);

// Overrides $FLASHTUNE_DATA_DIR and the folders found; an empty string clears the override.
void set_data_dir(const std::string& dir);

// The shipped measured profiles: $FLASHTUNE_PROFILE_DIR if set, else profiles/ in the data folder.
std::string shipped_profile_dir();

// The shipped profile of a GPU, <shipped_profile_dir()>/<spec stem>.json ("nvidia-h200" ->
// ".../profiles/nvidia-h200.json"), when that file exists; else "".
std::string shipped_profile_path(const std::string& spec_stem);

// A shipped profile's companion for a 16-bit element type, <dir>/<spec stem>-<dtype>.json
// ("nvidia-h200", bf16 -> ".../profiles/nvidia-h200-bf16.json"), when that file exists; else "".
// Each companion is one sweep of that dtype's workloads (one build, like every profile), so a GPU's
// fp32 and 16-bit measurements need not come from one build.
std::string shipped_companion_profile_path(const std::string& spec_stem, DType dtype);

}  // namespace flashtune::model
