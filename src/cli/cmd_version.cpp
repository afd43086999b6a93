// `hearth version`: build information.
#include <cstdio>

#include "cli/registry.h"
#include "engine/cpu_features.h"

namespace hearth::cli {
namespace {

Registrar reg("version", [](CLI::App& root) {
  auto* cmd = root.add_subcommand("version", "Print version and build information");
  cmd->callback([] {
    std::printf("hearth 0.1.0\n");
    // What the objects outside the kernel files were compiled for: a native build
    // (HEARTH_NATIVE) runs only on CPUs like the one that built it.
#if defined(__AVX512F__)
    std::printf("compiled for: avx512 (-march=native: this CPU's kind only)\n");
#elif defined(__AVX2__)
    std::printf("compiled for: avx2 (-march=native: this CPU's kind only)\n");
#else
    std::printf("compiled for: generic (portable; kernels chosen at run time)\n");
#endif
    std::printf("kernels: %s (numerics %s)\n", engine::kernel_isa(), engine::numerics_id());
    exit_code() = 0;
  });
});

}  // namespace
}  // namespace hearth::cli
