// Run-time counts to compile-time tile sizes, shared by the GEMM kernels of every
// ISA (plain templates: no intrinsics, safe to include outside a target region).
#pragma once

#include <utility>

namespace hearth::engine {

// Calls run.template operator()<N>() for the run-time count n in 1..kMax (nothing
// for other n): a tile size known at run time picks its compile-time kernel.
template <int kMax, class Run>
inline void with_count(int n, Run&& run) {
  [&]<int... I>(std::integer_sequence<int, I...>) {
    (void)((n == I + 1 ? (run.template operator()<I + 1>(), true) : false) || ...);
  }
  (std::make_integer_sequence<int, kMax>{});
}

// Runs run.template operator()<NT>(t) over a batch of nt tokens: groups of G from
// t = 0, then one group of the 1..G-1 left (the GEMMs' token tiling).
template <int G, class Run>
inline void over_token_groups(int nt, Run&& run) {
  int t = 0;
  for (; t + G <= nt; t += G) run.template operator()<G>(t);
  if constexpr (G > 1) {
    if (t < nt) with_count<G - 1>(nt - t, [&]<int NT>() { run.template operator()<NT>(t); });
  }
}

}  // namespace hearth::engine
