// Run-time CPU feature detection (cpuid + xgetbv on x86) and the numerics id.
#pragma once

#include <vector>

namespace hearth::engine {

struct KernelSet;

struct CpuFeatures {
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512vnni = false;
  bool avxvnni = false;
  bool neon = false;
};

// Detected once; the OS must also have enabled the register state (XCR0) for a
// feature to count.
const CpuFeatures& cpu_features();

// Every kernel table this CPU can run, best first (the scalar reference last).
std::vector<const KernelSet*> runnable_kernel_sets();

// Names the kernel set matmul uses on this CPU ("avx512-vnni", "avx2-vnni", "avx2",
// "scalar", "neon").
const char* kernel_isa();

// Identifies the numerics of the active kernel set: two runs whose ids are equal
// produce bit-identical matmul / attention-dot results. Every kernel set in this
// build reproduces the scalar reference bit for bit (the canonical order), so the
// id does not depend on the ISA; a kernel set that ever deviates must get its own
// id here.
const char* numerics_id();

}  // namespace hearth::engine
