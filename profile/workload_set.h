// Named workloads for `flashtune tune`: the files in configs/workloads/*.json and workloads given on
// the command line. Host-only.
//   {"schema_version": 1, "name": "grid", "description": "...",
//    "workloads": [{"name": "t10", "B": 10, "N": 2048, "d": 64, "causal": false}, ...]}
#pragma once

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/traits/tile_config.h"

namespace flashtune {

// A workload file is missing or malformed; what() is one line naming the file and the field,
// e.g. "configs/workloads/x.json: field 'workloads[2].N' must be an integer >= 1".
class WorkloadFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct NamedWorkload {
  std::string name;  // key in profiles ("t10")
  Workload workload;
  // A profile's workload fields this build does not know, written back on rewrite (profile.h).
  nlohmann::json extra = nlohmann::json::object();
};

struct WorkloadSet {
  std::string file;  // where it was read from ("" for the command line)
  std::string name, description;
  std::vector<NamedWorkload> workloads;
};

// Reads and validates one file. Throws WorkloadFileError.
WorkloadSet load_workload_set(const std::string& path);
// The same checks on a parsed document; `source` names it in messages (the fuzz target's entry).
WorkloadSet workload_set_from_json(const nlohmann::json& doc, const std::string& source);

// The name a command-line workload gets: "b10_n2048_d64" (+ "_causal").
std::string default_workload_name(const Workload& w);

// Concatenates the sets in order. The same name twice with the same dimensions is kept once; with
// different dimensions it throws WorkloadFileError naming both places.
std::vector<NamedWorkload> merge_workloads(const std::vector<WorkloadSet>& sets);

// "B=10 N=2048 d=64 non-causal"
std::string describe_workload(const Workload& w);

bool same_dimensions(const Workload& a, const Workload& b);

}  // namespace flashtune
