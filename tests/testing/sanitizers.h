// Whether the tests run under a sanitizer (`make asan` sets HEARTH_ASAN, `make tsan`
// HEARTH_TSAN). Wall-clock and RSS bounds do not hold there (TSan runs 5-15x slower
// and keeps shadow memory): such tests still run their paths and the sanitizer checks
// them, but skip those bounds.
#pragma once

#include <cstdlib>

namespace hearth::testing {

inline bool under_sanitizer() {
  return std::getenv("HEARTH_TSAN") != nullptr || std::getenv("HEARTH_ASAN") != nullptr;
}

}  // namespace hearth::testing
