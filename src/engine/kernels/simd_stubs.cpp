// Kernel tables that this build does not compile in. Each ISA file defines its
// accessor when its architecture macros are present; otherwise these stubs do.
#include "engine/kernels/kernel_set.h"

namespace hearth::engine {

#if !(defined(__x86_64__) || defined(__i386__))
const KernelSet* avx2_kernels() {
  return nullptr;
}
const KernelSet* avxvnni_kernels() {
  return nullptr;
}
#endif
#if !defined(__x86_64__)
const KernelSet* avx512_kernels() {
  return nullptr;
}
#endif
#if !(defined(__ARM_NEON) && defined(__aarch64__))
const KernelSet* neon_kernels() {
  return nullptr;
}
#endif

}  // namespace hearth::engine
