// The registry's view of the instance files: kernels/CMakeLists.txt writes one translation unit
// per (variant, d) from instances/instance.cu.in (so that the build compiles them in parallel),
// each an explicit instantiation of InstanceFile<V, D>, and a second one, InstanceFile<V, D, true>
// compiled with ptxas -O1, where the traits build some tiles of that d at -O1
// (traits::built_at_ptxas_o1). The registry calls add() for every (variant, d, level) with an
// entry in the traits' compiled lists, chosen at compile time.
#pragma once

#include <vector>

#include "kernels/registry.h"

namespace flashtune::kernels {

template <Variant V, int D, bool PtxasO1 = false>
struct InstanceFile {
  // Appends one instance per entry of the variant's traits kCompiled whose d is D and whose
  // built_at_ptxas_o1 is PtxasO1. Defined in kernels/kernel_instance.cuh, which only the
  // instance files include.
  static void add(std::vector<const KernelInstance*>& out);
};

// The sm_90a family registers its own instance class (kernels/wgmma16_instance.cuh defines add;
// its instance files are compiled only where the build targets sm_90a).
template <int D>
struct InstanceFile<Variant::Wgmma16, D> {
  static void add(std::vector<const KernelInstance*>& out);
};
// Its fp32 twins likewise (kernels/wgmma_tf32_instance.cuh).
template <int D>
struct InstanceFile<Variant::WgmmaTf32x3, D> {
  static void add(std::vector<const KernelInstance*>& out);
};
template <int D>
struct InstanceFile<Variant::WgmmaTf32x1, D> {
  static void add(std::vector<const KernelInstance*>& out);
};

}  // namespace flashtune::kernels
