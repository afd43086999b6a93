// The ram_file copy-path chooser (src/cache/read_path.h): probes both paths, then
// takes the cheaper one, tries the other every kExploreEvery-th read, and follows a
// change in which one is cheaper.
#include "cache/read_path.h"

#include <gtest/gtest.h>

#include <vector>

namespace hearth::cache {
namespace {

using Mode = CacheConfig::RamFileRead;
constexpr uint64_t kBytes = 1u << 20;

// Runs `n` reads through `c`, the mapped path costing `mapped_ns` and pread
// `pread_ns` per read; returns the paths taken.
std::vector<CopyPath> run(CopyPathChooser& c, int n, uint64_t mapped_ns, uint64_t pread_ns) {
  std::vector<CopyPath> taken;
  for (int i = 0; i < n; ++i) {
    const CopyPath p = c.choose();
    c.record(p, kBytes, p == CopyPath::kMapped ? mapped_ns : pread_ns);
    taken.push_back(p);
  }
  return taken;
}

int count(const std::vector<CopyPath>& v, CopyPath p) {
  int n = 0;
  for (CopyPath q : v) n += q == p;
  return n;
}

TEST(CopyPathChooser, ProbesBothPathsFirst) {
  CopyPathChooser c(Mode::kAuto);
  const auto first = run(c, 2 * CopyPathChooser::kProbeReads, 100, 100);
  EXPECT_EQ(first.front(), CopyPath::kPread);  // the path whose worst case is bounded
  EXPECT_EQ(count(first, CopyPath::kMapped), static_cast<int>(CopyPathChooser::kProbeReads));
  EXPECT_EQ(count(first, CopyPath::kPread), static_cast<int>(CopyPathChooser::kProbeReads));
}

TEST(CopyPathChooser, TakesTheCheaperPathAndExploresTheOtherRarely) {
  for (bool pread_cheaper : {true, false}) {
    CopyPathChooser c(Mode::kAuto);
    const uint64_t mapped_ns = pread_cheaper ? 4'000'000 : 1'000'000;
    const uint64_t pread_ns = pread_cheaper ? 1'000'000 : 4'000'000;
    run(c, 2 * CopyPathChooser::kProbeReads, mapped_ns, pread_ns);
    const int n = 10 * static_cast<int>(CopyPathChooser::kExploreEvery);
    const auto after = run(c, n, mapped_ns, pread_ns);
    const CopyPath cheap = pread_cheaper ? CopyPath::kPread : CopyPath::kMapped;
    const CopyPath dear = pread_cheaper ? CopyPath::kMapped : CopyPath::kPread;
    EXPECT_EQ(count(after, dear), n / static_cast<int>(CopyPathChooser::kExploreEvery));
    EXPECT_EQ(count(after, cheap), n - count(after, dear));
    EXPECT_NEAR(c.ns_per_byte(cheap), 1e6 / kBytes, 1e-9);
  }
}

TEST(CopyPathChooser, FollowsAChangeOfTheCheaperPath) {
  CopyPathChooser c(Mode::kAuto);
  run(c, 2 * CopyPathChooser::kProbeReads, 1'000'000, 3'000'000);
  ASSERT_EQ(c.choose(), CopyPath::kMapped);
  // The host changes: mapping now costs 10x. The explored pread reads see the same
  // cost as before, but every mapped read raises the mapped mean until it is dearer.
  const auto after =
      run(c, 2 * static_cast<int>(CopyPathChooser::kExploreEvery), 10'000'000, 3'000'000);
  EXPECT_EQ(after.back(), CopyPath::kPread);
  EXPECT_GT(c.ns_per_byte(CopyPath::kMapped), c.ns_per_byte(CopyPath::kPread));
}

TEST(CopyPathChooser, AReadThatRecordsNothingIsProbedAgain) {
  CopyPathChooser c(Mode::kAuto);
  EXPECT_EQ(c.choose(), CopyPath::kPread);  // its read failed: nothing recorded
  EXPECT_EQ(c.choose(), CopyPath::kPread);
  EXPECT_EQ(c.ns_per_byte(CopyPath::kPread), 0);
}

TEST(CopyPathChooser, AForcedModeNeverChoosesTheOtherPath) {
  for (auto [mode, path] :
       {std::pair{Mode::kMapped, CopyPath::kMapped}, std::pair{Mode::kPread, CopyPath::kPread}}) {
    CopyPathChooser c(mode);
    // Even when the forced path measures far dearer.
    const auto taken = run(c, 100, path == CopyPath::kMapped ? 9'000'000 : 1,
                           path == CopyPath::kPread ? 9'000'000 : 1);
    EXPECT_EQ(count(taken, path), 100);
  }
}

}  // namespace
}  // namespace hearth::cache
