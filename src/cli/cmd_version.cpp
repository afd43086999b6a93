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
#if defined(__AVX512F__)
    std::printf("compiled for: avx512\n");
#elif defined(__AVX2__)
    std::printf("compiled for: avx2\n");
#else
    std::printf("compiled for: generic\n");
#endif
    std::printf("kernels: %s (numerics %s)\n", engine::kernel_isa(), engine::numerics_id());
    exit_code() = 0;
  });
});

}  // namespace
}  // namespace hearth::cli
