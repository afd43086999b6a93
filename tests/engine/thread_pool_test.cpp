// ThreadPool: the spin policy under CPU contention, and fork-join correctness over many
// back-to-back dispatches (whichever of the spinning or blocking paths this machine's
// pressure selects).
#include "engine/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <vector>

namespace hearth::engine {
namespace {

TEST(ThreadPoolSpin, ContendedCpusBlockAlmostAtOnce) {
  const int quiet = spin_iterations_for(0.0);
  const int busy = spin_iterations_for(99.4);  // PSI some avg10 on two cores shared with builds
  EXPECT_GE(quiet, 1000);                      // bridges consecutive matmuls of a forward pass
  EXPECT_LE(busy, 1000);
  EXPECT_LT(busy, quiet);
  EXPECT_EQ(spin_iterations_for(5.0), quiet);   // a little pressure: still spin
  EXPECT_EQ(spin_iterations_for(-1.0), quiet);  // pressure unknown: as before
  EXPECT_EQ(spin_iterations_for(100.0), busy);
}

TEST(ThreadPoolSpin, ManyDispatchesEachCoverEveryIndexOnce) {
  ThreadPool pool(3);
  std::vector<std::atomic<int32_t>> hits(97);
  for (int round = 0; round < 2000; ++round) {
    if (round % 2 == 0) {
      pool.parallel_for(97, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
      });
    } else {
      pool.parallel_for_dynamic(97, 5, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
      });
    }
  }
  for (const auto& h : hits) EXPECT_EQ(h.load(), 2000);
}

}  // namespace
}  // namespace hearth::engine
