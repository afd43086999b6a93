#include "server/stop_matcher.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

namespace hearth::server {
namespace {

TEST(StopMatcher, PassesTextThroughWithoutStops) {
  StopMatcher m({});
  EXPECT_EQ(m.push("hello"), "hello");
  EXPECT_EQ(m.push(" world"), " world");
  EXPECT_EQ(m.flush(), "");
  EXPECT_FALSE(m.stopped());
}

TEST(StopMatcher, StopSplitAcrossFragmentsIsNeverEmitted) {
  StopMatcher m({"\nUser:"});
  EXPECT_EQ(m.push("Sure.\nUs"), "Sure.");
  EXPECT_EQ(m.push("er"), "");
  EXPECT_EQ(m.push(": more"), "");
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.matched(), "\nUser:");
  EXPECT_EQ(m.push("later"), "");
}

TEST(StopMatcher, HeldBackPrefixIsReleasedWhenItDiverges) {
  StopMatcher m({"END"});
  EXPECT_EQ(m.push("the EN"), "the ");
  EXPECT_EQ(m.push("emy"), "ENemy");
  EXPECT_EQ(m.flush(), "");
}

TEST(StopMatcher, EarliestOfSeveralStopsWins) {
  StopMatcher m({"b", "a"});
  EXPECT_EQ(m.push("xxab"), "xx");
  EXPECT_EQ(m.matched(), "a");
}

TEST(StopMatcher, IncompleteUtf8IsHeldBack) {
  StopMatcher m({});
  EXPECT_EQ(m.push("a\xE2\x98"), "a");
  EXPECT_EQ(m.push("\x83"), "\xE2\x98\x83");
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
  RC_ASSERT(m.stopped() == (at != std::string::npos));
}

}  // namespace
}  // namespace hearth::server
