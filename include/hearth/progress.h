// Progress of a long operation (a model load, a file write), reported by a library to
// whoever drives it: done and total in the operation's own unit (bytes for a load).
// Libraries only call it; the CLI draws it (src/cli/progress.h).
#pragma once

#include <cstdint>
#include <functional>

namespace hearth {

using ProgressFn = std::function<void(uint64_t done, uint64_t total)>;

}  // namespace hearth
