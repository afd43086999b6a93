#include "engine/cpu_features.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "engine/kernels/kernel_set.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace hearth::engine {
namespace {

#if defined(__x86_64__) || defined(__i386__)
uint64_t read_xcr0() {
  uint32_t eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}
#endif

CpuFeatures detect() {
  CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
  unsigned eax, ebx, ecx, edx;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return f;
  const bool osxsave = (ecx >> 27) & 1;
  const bool fma = (ecx >> 12) & 1;
  const bool f16c = (ecx >> 29) & 1;
  const bool avx = (ecx >> 28) & 1;
  if (!osxsave || !avx) return f;
  const uint64_t xcr0 = read_xcr0();
  const bool ymm_state = (xcr0 & 0x6) == 0x6;
  const bool zmm_state = (xcr0 & 0xe6) == 0xe6;
  if (!ymm_state) return f;
  f.fma = fma;
  f.f16c = f16c;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) {
    f.avx2 = (ebx >> 5) & 1;
    f.avx512f = zmm_state && ((ebx >> 16) & 1);
    f.avx512bw = zmm_state && ((ebx >> 30) & 1);
    f.avx512vl = zmm_state && ((ebx >> 31) & 1);
    f.avx512vnni = zmm_state && ((ecx >> 11) & 1);
  }
  if (__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx)) f.avxvnni = (eax >> 4) & 1;
#elif defined(__ARM_NEON)
  f.neon = true;
#endif
  return f;
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = detect();
  return f;
}

std::vector<const KernelSet*> runnable_kernel_sets() {
  const CpuFeatures& f = cpu_features();
  // Features first: a table must not even be built on a CPU without them.
  const bool avx2_ok = f.avx2 && f.fma && f.f16c;
  const bool avx512_ok = f.avx512f && f.avx512bw && f.avx512vl && f.avx512vnni;
  std::vector<const KernelSet*> out;
  if (avx2_ok && avx512_ok && avx512_kernels() != nullptr) out.push_back(avx512_kernels());
  if (avx2_ok && f.avxvnni && avxvnni_kernels() != nullptr) out.push_back(avxvnni_kernels());
  if (avx2_ok && avx2_kernels() != nullptr) out.push_back(avx2_kernels());
  if (f.neon && neon_kernels() != nullptr) out.push_back(neon_kernels());
  out.push_back(&scalar_kernels());
  return out;
}

const KernelSet& active_kernels() {
  static const KernelSet* chosen = [] {
    const std::vector<const KernelSet*> sets = runnable_kernel_sets();
    // HEARTH_KERNELS=<isa> picks a slower table (A/B benchmarks; the bits are the same
    // either way). An unknown or unrunnable name is ignored with a warning.
    if (const char* want = std::getenv("HEARTH_KERNELS"); want != nullptr && *want != 0) {
      for (const KernelSet* k : sets) {
        if (std::strcmp(k->isa, want) == 0) return k;
      }
      std::fprintf(stderr, "hearth: HEARTH_KERNELS=%s is not runnable here; using %s\n", want,
                   sets.front()->isa);
    }
    return sets.front();
  }();
  return *chosen;
}

const char* kernel_isa() {
  return active_kernels().isa;
}

const char* numerics_id() {
  return "hearth-canon-v3";
}

}  // namespace hearth::engine
