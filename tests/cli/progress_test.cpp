// The CLI's progress bar (src/cli/progress.h): drawn in place on a terminal, silent
// when stderr is piped or with --quiet; and `hearth run --help` shows its defaults.
#include "cli/progress.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>

#include "gguf_cli_util.h"

namespace hearth::cli::testing {
namespace {

std::string drawn(const std::function<void(ProgressBar&)>& use, bool enabled) {
  std::FILE* f = std::tmpfile();
  {
    ProgressBar bar("loading m", ProgressBar::Unit::kBytes, f, enabled);
    use(bar);
  }
  std::string out;
  std::rewind(f);
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) out.append(buf, n);
  std::fclose(f);
  return out;
}

size_t count(const std::string& s, char c) {
  return static_cast<size_t>(std::count(s.begin(), s.end(), c));
}

TEST(ProgressBar, DrawsInPlaceAndEndsTheLine) {
  const std::string out = drawn(
      [](ProgressBar& bar) {
        bar.update(0, 4 << 20);
        bar.update(2 << 20, 4 << 20);
        bar.update(4 << 20, 4 << 20);
      },
      true);
  EXPECT_EQ(out.front(), '\r') << out;
  EXPECT_NE(out.find("loading m ["), std::string::npos) << out;
  EXPECT_NE(out.find("100% 4.0 MiB / 4.0 MiB"), std::string::npos) << out;
  EXPECT_EQ(out.back(), '\n') << out;
  EXPECT_EQ(count(out, '\n'), 1u) << out;
}

TEST(ProgressBar, ThrottlesRedraws) {
  const std::string out = drawn(
      [](ProgressBar& bar) {
        for (uint64_t i = 0; i <= 100000; ++i) bar.update(i, 100000);
      },
      true);
  // The first state, at most ~10 a second in between, and the complete one.
  EXPECT_LE(count(out, '\r'), 20u) << count(out, '\r');
  EXPECT_NE(out.find("100%"), std::string::npos);
}

TEST(ProgressBar, DisabledDrawsNothing) {
  EXPECT_EQ(drawn(
                [](ProgressBar& bar) {
                  bar.update(1, 2);
                  bar.update(2, 2);
                },
                false),
            "");
  // Never updated: finishing prints nothing either (no stray newline).
  EXPECT_EQ(drawn([](ProgressBar&) {}, true), "");
}

TEST(ProgressBar, UpdatesAfterFinishAreIgnored) {
  const std::string out = drawn(
      [](ProgressBar& bar) {
        bar.update(1, 1);
        bar.finish();
        bar.update(0, 1);  // e.g. a worker restart reloading the model
      },
      true);
  EXPECT_EQ(out.back(), '\n') << out;
  EXPECT_EQ(out.find("  0%"), std::string::npos) << out;
}

class ProgressCliTest : public GenModelTest {};

TEST_F(ProgressCliTest, GenModelShowsABarOnATerminalOnly) {
  const std::string model = temp_path("progress.gguf");
  created_.push_back(model);
  // Piped stderr: no bar, no carriage return.
  CliResult piped = run_cli("gen-model --preset tiny --type f32 --out " + model);
  ASSERT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_EQ(piped.err.find('\r'), std::string::npos) << piped.err;
  // On a terminal (script(1) gives the command a pseudo-terminal): the bar, to 100%.
  if (std::system("command -v script >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "script(1) (bsdutils) is missing: no pseudo-terminal to draw on";
  const std::string cmd = std::string("gen-model --preset tiny --type f32 --out ") + model;
  CliResult tty = run_cli_in_terminal(cmd);
  ASSERT_EQ(tty.exit_code, 0) << tty.out;
  EXPECT_NE(tty.out.find("\rwriting " + model + " ["), std::string::npos) << tty.out;
  EXPECT_NE(tty.out.find("100%"), std::string::npos) << tty.out;
  CliResult quiet = run_cli_in_terminal(cmd + " --quiet");
  ASSERT_EQ(quiet.exit_code, 0) << quiet.out;
  EXPECT_EQ(quiet.out.find("writing"), std::string::npos) << quiet.out;
}

TEST_F(ProgressCliTest, RunHelpShowsDefaults) {
  CliResult help = run_cli("run --help");
  ASSERT_EQ(help.exit_code, 0) << help.err;
  for (const char* d : {"INT:INT in [0 - 1000000]=128", "--temp FLOAT=0.8", "--top-k INT=40",
                        "--top-p FLOAT=0.95", "--min-p FLOAT=0.05", "--repeat-penalty FLOAT=1",
                        "--seed UINT=0", "[1 - 256]=2", "--kv-type TEXT:{f16,q8_0,q4_0}=f16"}) {
    EXPECT_NE(help.out.find(d), std::string::npos) << d << "\n" << help.out;
  }
}

}  // namespace
}  // namespace hearth::cli::testing
