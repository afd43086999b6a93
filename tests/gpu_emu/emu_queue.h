// The emulated GPU's one "stream": work runs at once, except between Graph::begin_capture
// and end_capture, when it is recorded instead and replayed by Graph::launch, as CUDA
// graphs do (so a caller that changes a launch's arguments between replays, or reads a
// result before launching, fails the tests here too).
#pragma once

#include <functional>
#include <vector>

namespace hearth::engine::cuda::emu {

using Work = std::function<void()>;

// The recording in progress, or null.
std::vector<Work>*& capturing();

inline void submit(Work w) {
  if (capturing() != nullptr) {
    capturing()->push_back(std::move(w));
  } else {
    w();
  }
}

}  // namespace hearth::engine::cuda::emu
