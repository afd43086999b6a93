// The restore figures of `hearth bench cold-warm` (src/cli/bench_restore.*): every tier
// case is measured on a real cache and read back the bytes saved (the function fails
// otherwise), the cold disk cases carry their dd floor, and the median is a median.
#include "cli/bench_restore.h"
#include "cli/bench_util.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <unistd.h>

namespace hearth::cli {
namespace {

TEST(BenchUtil, MedianOfOddAndEvenCounts) {
  EXPECT_EQ(median({5, 1, 3}), 3);
  EXPECT_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_EQ(median({}), 0);
}

TEST(BenchRestore, RowFiguresCoverEveryTier) {
  const auto base = std::filesystem::temp_directory_path() /
                    ("hearth-bench-restore-test-" + std::to_string(::getpid()));
  const uint64_t bytes = (9u << 20) + 4321;  // three O_DIRECT requests, a short last block
  auto fig = restore_row_figures(bytes, (base / "shm").string(), (base / "disk").string(), 1);
  std::error_code ec;
  std::filesystem::remove_all(base, ec);
  ASSERT_TRUE(fig.ok()) << fig.status().to_string();
  EXPECT_EQ((*fig)["payload_bytes"].get<uint64_t>(), bytes);
  for (const char* c :
       {"ram", "ram_file", "ram_file_mapped", "ram_file_pread", "ram_file_restarted",
        "disk_warm_cache", "disk_cold_cache", "disk_cold_cache_buffered"}) {
    ASSERT_TRUE(fig->contains(c)) << c;
    EXPECT_GT((*fig)[c]["restore_ms"].get<double>(), 0) << c;
    EXPECT_GT((*fig)[c]["gb_s"].get<double>(), 0) << c;
  }
  for (const char* c : {"disk_cold_cache", "disk_cold_cache_buffered"}) {
    if ((*fig)[c].contains("dd_error")) continue;  // the file system refuses O_DIRECT
    ASSERT_TRUE((*fig)[c].contains("dd_ms")) << c;
    EXPECT_GT((*fig)[c]["dd_ms"].get<double>(), 0) << c;
  }
  EXPECT_FALSE((*fig)["ram"].contains("dd_ms"));
  EXPECT_GT((*fig)["ram_file_restarted"]["first_restore_ms"].get<double>(), 0);
}

}  // namespace
}  // namespace hearth::cli
