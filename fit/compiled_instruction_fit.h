// The compiled-instruction table (model/compiled_instruction_table.h) read off a profile's
// instruction counter: per config, the counter (smsp__inst_executed.sum) less the traits' count
// over its workloads, split by least squares into a part per computing (warp, K/V tile) pair and
// a part per warp of a block. Needs at least two workloads per config whose ratio of the two
// differs (a short and a long sequence, say); configs with fewer are left out and take their
// variant's median share.
#pragma once

#include <map>
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

// One config's measurements: per workload the computed (warp, K/V tile) pairs, the warps of all its
// blocks, the counter less the traits' count (`extra`) and the counter itself.
struct InstructionObservation {
  double warp_tiles, warp_blocks, extra, counter;
};
struct ConfigInstructionObservations {
  std::string variant;
  double traits_per_warp_tile = 0;  // the traits' warp instructions per (warp, tile): the share's base
  std::vector<InstructionObservation> rows;
};
// Per config, least squares of `extra` on (warp_tiles, warp_blocks); per variant, the medians of the
// fitted configs' shares. What both readers of an instruction counter end in: the profiles' CUPTI
// pairs below and the decode family's ncu counts (fit/decode_instruction_fit.h).
CompiledInstructionFit fit_instruction_extras(const std::map<std::string, ConfigInstructionObservations>& by_config,
                                              const std::string& source);

// `source` goes into the table as is (where it came from). Observations without the instruction
// counter are ignored; throws std::invalid_argument when none has it.
CompiledInstructionFit fit_compiled_instructions(const std::vector<model::CounterObservation>& observations,
                                                 const std::string& source);

}  // namespace flashtune::fit
