// mma_1xtf32 instantiations with d = 64 (the list is traits::MmaCompiled<Tf32x1>).
#include "kernels/instances/instances.h"
#include "kernels/kernel_instance.cuh"
#include "kernels/mma_tf32.cuh"

namespace flashtune::kernels {
namespace {
template <int D, int BR, int BC, Layout L>
struct KernelOf {
  static constexpr KernelFn fn = &mma_tf32_kernel<traits::MmaPrecision::Tf32x1, D, BR, BC, L>;
};
}  // namespace

void add_mma_1xtf32_d64(std::vector<const KernelInstance*>& out) {
  add_compiled<traits::MmaTf32x1, 64, KernelOf>(out);
}

}  // namespace flashtune::kernels
