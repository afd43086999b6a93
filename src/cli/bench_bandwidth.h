// The machine's memory bandwidth as `hearth bench engine` reports it (memcpy_gbps,
// read_gbps): the denominator of its decode roofline.
#pragma once

namespace hearth::cli {

// Bandwidths over a buffer much larger than the caches, split across threads.
struct Bandwidth {
  double memcpy_gbps = 0;  // read + write bytes per second of a memcpy
  double read_gbps = 0;    // bytes per second of a summing read
};

// Medians of 3 passes over 256 MiB with `threads` threads.
Bandwidth measure_bandwidth(int threads);

}  // namespace hearth::cli
