// Helpers shared by the `hearth bench` commands: the synthetic token stream every
// engine bench feeds (the same LCG as llama.cpp's comparison driver, so both engines
// see the same tokens), the median the benches report and the process CPU clock.
#pragma once

#include <cstdint>
#include <vector>

namespace hearth::cli {

// n token ids from the LCG x = x * 1664525 + 1013904223 seeded `seed` (12345 in every
// bench compared with llama.cpp), token = (x >> 8) % n_vocab.
std::vector<int32_t> bench_tokens(int32_t n, int32_t n_vocab, uint32_t seed = 12345);

// The median (the mean of the middle two of an even count); 0 for an empty list.
double median(std::vector<double> v);

// CPU time of the whole process so far (every thread), in ms.
double process_cpu_ms();

}  // namespace hearth::cli
