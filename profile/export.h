// A profile in other tools' formats: CSV (one row per measurement, counters as columns) and T4,
// the autotuning community's results format (github.com/odgaard/TuningSchema, T4 results-schema
// 1.0.0, as Kernel Tuner writes it): one result per (workload, config) with its configuration
// (the workload's and the tile's parameters), times, validity and measurements. Host-only.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "profile/profile.h"

namespace flashtune {

std::string profile_to_csv(const Profile& p);
nlohmann::ordered_json profile_to_t4(const Profile& p);

// The T4 "invalidity" of a profile status: ok -> correct, compile -> compile, launch -> runtime,
// resources -> constraints, wrong-result -> correctness.
const char* t4_invalidity(const std::string& status);

}  // namespace flashtune
