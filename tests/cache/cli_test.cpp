// `hearth cache ...` end to end, through the built CLI binary.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "hearth/cache/cache.h"
#include "test_util.h"

namespace hearth::cache {
namespace {

namespace fs = std::filesystem;

struct RunResult {
  int rc = -1;
  std::string out;
};

RunResult run(const std::string& args, bool with_stderr = true) {
  RunResult r;
  std::string cmd = std::string(HEARTH_CLI_PATH) + " " + args + (with_stderr ? " 2>&1" : "");
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

// `hearth bench cache --json --quick` reports every figure issue 4 names, as a
// number: memcpy bandwidth, save/load per tier and payload size (with the load
// as a fraction of memcpy), and both 32k-token prefix lookups. Speeds are the
// machine's business; only the report's shape is checked.
TEST_F(CacheCli, BenchCacheJsonHasEveryFigure) {
  auto help = run("bench cache --help");
  EXPECT_EQ(help.rc, 0);
  EXPECT_NE(help.out.find("--quick"), std::string::npos) << help.out;

  testing::TempDir d;
  auto bench = run("bench cache --json --quick --dir " + d.path(), /*with_stderr=*/false);
  ASSERT_EQ(bench.rc, 0) << bench.out;
  auto j = nlohmann::json::parse(bench.out, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(j.is_discarded()) << bench.out;
  auto expect_number = [](const nlohmann::json& obj, const std::string& key,
                          const std::string& where) {
    ASSERT_TRUE(obj.is_object()) << where;
    ASSERT_TRUE(obj.contains(key)) << where << "." << key << " missing";
    EXPECT_TRUE(obj[key].is_number()) << where << "." << key << " = " << obj[key].dump();
    EXPECT_GE(obj[key].get<double>(), 0.0) << where << "." << key;
  };
  for (const char* k : {"memcpy_gbps", "longest_prefix_32k_ms", "radix_lcp_32k_ms"}) {
    expect_number(j, k, "");
  }
  ASSERT_TRUE(j.contains("tiers")) << bench.out;
  for (const char* tier : {"ram", "ram_file", "disk"}) {
    ASSERT_TRUE(j["tiers"].contains(tier)) << tier;
    for (const char* size : {"1MiB", "16MiB", "64MiB"}) {
      std::string where = std::string("tiers.") + tier + "." + size;
      ASSERT_TRUE(j["tiers"][tier].contains(size)) << where;
      for (const char* f : {"save_ms", "load_ms", "load_gbps", "load_vs_memcpy"}) {
        expect_number(j["tiers"][tier][size], f, where);
      }
      // A failed save or load reports zeros: each case must have really run.
      EXPECT_GT(j["tiers"][tier][size]["load_gbps"].get<double>(), 0.0) << where;
    }
  }
  // The benchmark cleans up after itself.
  EXPECT_TRUE(fs::is_empty(d.path())) << d.path();
}

}  // namespace
}  // namespace hearth::cache
