// Stop strings are matched in the runtime only (the server forwards them).
#include "runtime/stop_matcher.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

namespace hearth::runtime {
namespace {

TEST(StopMatcherStream, PassesTextThroughWithoutStops) {
  StopMatcher m(std::vector<std::string>{});
  EXPECT_EQ(m.push("hello"), "hello");
  EXPECT_EQ(m.push(" world"), " world");
  EXPECT_EQ(m.flush(), "");
  EXPECT_FALSE(m.matched());
}

TEST(StopMatcherStream, StopSplitAcrossFragmentsIsNeverEmitted) {
  StopMatcher m({"\nUser:"});
  EXPECT_EQ(m.push("Sure.\nUs"), "Sure.");
  EXPECT_EQ(m.push("er"), "");
  EXPECT_EQ(m.push(": more"), "");
  EXPECT_TRUE(m.matched());
  EXPECT_EQ(m.matched(), "\nUser:");
  EXPECT_EQ(m.push("later"), "");
}

TEST(StopMatcherStream, HeldBackPrefixIsReleasedWhenItDiverges) {
  StopMatcher m({"END"});
  EXPECT_EQ(m.push("the EN"), "the ");
  EXPECT_EQ(m.push("emy"), "ENemy");
  EXPECT_EQ(m.flush(), "");
}

TEST(StopMatcherStream, EarliestOfSeveralStopsWins) {
  StopMatcher m({"b", "a"});
  EXPECT_EQ(m.push("xxab"), "xx");
  EXPECT_EQ(m.matched(), "a");
}

RC_GTEST_PROP(StopMatcherProp, OutputIsTextBeforeFirstStop,
              (const std::string& text, const std::vector<size_t>& cuts)) {
  const std::string stop = "zq";
  StopMatcher m({stop});
  std::string out;
  size_t pos = 0;
  for (size_t c : cuts) {
    const size_t len = std::min(text.size() - pos, c % 5);
    out += m.push(text.substr(pos, len));
    pos += len;
  }
  out += m.push(text.substr(pos));
  out += m.flush();
  const size_t at = text.find(stop);
  RC_ASSERT(out == text.substr(0, at == std::string::npos ? text.size() : at));
  RC_ASSERT(m.matched().has_value() == (at != std::string::npos));
}

}  // namespace
}  // namespace hearth::runtime
