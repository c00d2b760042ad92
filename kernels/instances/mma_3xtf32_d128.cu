// mma_3xtf32 instantiations with d = 128 (the list is traits::MmaCompiled<Tf32x3>).
#include "kernels/instances/instances.h"
#include "kernels/kernel_instance.cuh"
#include "kernels/mma_tf32.cuh"

namespace flashtune::kernels {
namespace {
template <int D, int BR, int BC, Layout L>
struct KernelOf {
  static constexpr KernelFn fn = &mma_tf32_kernel<traits::MmaPrecision::Tf32x3, D, BR, BC, L>;
};
}  // namespace

void add_mma_3xtf32_d128(std::vector<const KernelInstance*>& out) {
  add_compiled<traits::MmaTf32x3, 128, KernelOf>(out);
}

}  // namespace flashtune::kernels
