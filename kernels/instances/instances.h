// One function per instance file (variant, d): appends that file's compiled instantiations.
// Separate translation units so that the build compiles them in parallel.
#pragma once

#include <vector>

#include "kernels/registry.h"

namespace flashtune::kernels {

void add_row_smem_d32(std::vector<const KernelInstance*>& out);
void add_row_smem_d64(std::vector<const KernelInstance*>& out);
void add_row_smem_d128(std::vector<const KernelInstance*>& out);
void add_row_reg_d32(std::vector<const KernelInstance*>& out);
void add_row_reg_d64(std::vector<const KernelInstance*>& out);
void add_warp_groups_d32(std::vector<const KernelInstance*>& out);
void add_warp_groups_d64(std::vector<const KernelInstance*>& out);
void add_warp_groups_d128(std::vector<const KernelInstance*>& out);
void add_regtile_2d_d32(std::vector<const KernelInstance*>& out);
void add_regtile_2d_d64(std::vector<const KernelInstance*>& out);
void add_regtile_2d_d128(std::vector<const KernelInstance*>& out);
void add_mma_3xtf32_d32(std::vector<const KernelInstance*>& out);
void add_mma_3xtf32_d64(std::vector<const KernelInstance*>& out);
void add_mma_3xtf32_d128(std::vector<const KernelInstance*>& out);
void add_mma_1xtf32_d32(std::vector<const KernelInstance*>& out);
void add_mma_1xtf32_d64(std::vector<const KernelInstance*>& out);
void add_mma_1xtf32_d128(std::vector<const KernelInstance*>& out);

}  // namespace flashtune::kernels
