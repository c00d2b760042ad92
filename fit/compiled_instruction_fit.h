// The compiled-instruction table (model/compiled_instruction_table.h) read off a profile's
// instruction counter: per config, the counter (smsp__inst_executed.sum) less the traits' count
// over its workloads, split by least squares into a part per computing (warp, K/V tile) pair and
// a part per warp of a block. Needs at least two workloads per config whose ratio of the two
// differs (a short and a long sequence, say); configs with fewer are left out and take their
// variant's median share.
#pragma once

#include <string>
#include <vector>

#include "model/compiled_instruction_table.h"
#include "model/counter_check.h"

namespace flashtune::fit {

struct CompiledInstructionFit {
  model::CompiledInstructionTable table;
  int configs_fitted = 0;
  int observations_used = 0;
  std::vector<std::string> left_out;  // "<config>: <why>"
  // Over the fitted configs' observations: |traits + fitted extra - counter| / counter.
  double max_rel_residual = 0, median_rel_residual = 0;
};

// `source` goes into the table as is (where it came from). Observations without the instruction
// counter are ignored; throws std::invalid_argument when none has it.
CompiledInstructionFit fit_compiled_instructions(const std::vector<model::CounterObservation>& observations,
                                                 const std::string& source);

}  // namespace flashtune::fit
