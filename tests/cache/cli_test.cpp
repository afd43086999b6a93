// `hearth cache ...` end to end, through the built CLI binary.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "hearth/cache.h"
#include "test_util.h"

namespace hearth::cache {
namespace {

namespace fs = std::filesystem;

struct RunResult {
  int rc = -1;
  std::string out;
};

RunResult run(const std::string& args) {
  RunResult r;
  std::string cmd = std::string(HEARTH_CLI_PATH) + " " + args + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
  int st = ::pclose(p);
  r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

class CacheCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(HEARTH_CLI_PATH)) GTEST_SKIP() << "SKIPPED: hearth CLI not built";
  }
};

TEST_F(CacheCli, LsStatVerifyGcEvict) {
  testing::TempDir d;
  std::string dir = d.sub("disk");
  std::vector<CacheKey> keys;
  {
    CacheConfig c;
    c.disk_dir = dir;
    c.sweep_interval_ms = 0;
    auto cache = std::move(Cache::open(c)).value();
    for (int i = 0; i < 3; ++i) {
      keys.push_back(*cache->save(Tier::kDisk, testing::make_meta(testing::seq_tokens(10, 100 * i)),
                                  testing::random_bytes(5000, i)));
    }
  }
  auto ls = run("cache ls --dir " + dir);
  EXPECT_EQ(ls.rc, 0) << ls.out;
  for (const auto& k : keys) EXPECT_NE(ls.out.find(to_hex(k)), std::string::npos);
  auto st = run("cache stat --json --dir " + dir);
  EXPECT_EQ(st.rc, 0);
  EXPECT_NE(st.out.find("\"rows\": 3"), std::string::npos) << st.out;
  auto ok = run("cache verify --dir " + dir);
  EXPECT_EQ(ok.rc, 0) << ok.out;

  // Flip one payload byte: verify must fail and name the row.
  std::string victim = dir + "/" + to_hex(keys[1]) + ".kvc";
  {
    std::fstream f(victim, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-1, std::ios::end);
    f.put('\x01');
    f.seekp(-2, std::ios::end);
    f.put('\x02');
  }
  auto bad = run("cache verify --dir " + dir);
  EXPECT_NE(bad.rc, 0);
  EXPECT_NE(bad.out.find(to_hex(keys[1])), std::string::npos) << bad.out;

  std::ofstream(dir + "/x.kvc.1.1.tmp") << "partial";
  auto gc = run("cache gc --dir " + dir);
  EXPECT_EQ(gc.rc, 0) << gc.out;
  EXPECT_FALSE(fs::exists(dir + "/x.kvc.1.1.tmp"));
  auto ev = run("cache evict --bytes 1 --dir " + dir);
  EXPECT_EQ(ev.rc, 0) << ev.out;
  EXPECT_NE(ev.out.find("evicted 1 rows"), std::string::npos) << ev.out;
  auto gc_all = run("cache gc --all --dir " + dir);
  EXPECT_EQ(gc_all.rc, 0);
  auto empty = run("cache stat --json --dir " + dir);
  EXPECT_NE(empty.out.find("\"rows\": 0"), std::string::npos) << empty.out;
}

}  // namespace
}  // namespace hearth::cache
