// The default engine thread count: the machine's cores shared by the loaded models.
#include <algorithm>
#include <thread>

#include "hearth/runtime/runtime.h"

namespace hearth::runtime {

int32_t default_thread_count(int32_t n_models) {
  const int32_t cores = std::max(1, static_cast<int32_t>(std::thread::hardware_concurrency()));
  return std::max(1, cores / std::max(1, n_models));
}

}  // namespace hearth::runtime
