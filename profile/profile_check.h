// The one check of a profile's values, made by the profile reader (load_profile /
// profile_from_json) and so shared by every command that reads a profile: export, compare, fit,
// plot, report, check-counters, merge and the dispatcher. The reader checks the schema (types,
// required fields, duplicated pairs); this checks that the numbers mean something: workloads the
// kernels accept, config names that parse and match their workload's d, finite and plausible
// times (median within [min, max], no 1e-300 ms), finite non-negative counters and resources.
#pragma once

#include <string>

#include "profile/profile.h"
#include "profile/profile_ranges.h"  // the table of value ranges this check reads

namespace flashtune {

// Throws ProfileError("<source>: field 'measurements[12].timing.median_ms' = -1.5: must be ...").
void check_profile_values(const Profile& p, const std::string& source);


}  // namespace flashtune
