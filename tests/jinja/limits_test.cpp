// Templates come from untrusted GGUF files: nesting, loops, recursion and output are
// bounded, and every breach is an error value naming where, never a crash or a hang.
#include <gtest/gtest.h>

#include <chrono>

#include "hearth/jinja/template.h"

namespace hearth::jinja {
namespace {

using nlohmann::ordered_json;

// The error of parsing + rendering `source` ("" when it rendered).
std::string failure(const std::string& source, const RenderOptions& opts = {}) {
  auto t = Template::parse(source);
  if (!t.ok()) return t.status().message();
  auto r = t->render(ordered_json::object(), {}, opts);
  return r.ok() ? "" : r.status().message();
}

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

TEST(JinjaLimits, DeepExpressionNestingIsASyntaxError) {
  EXPECT_NE(failure("{{ " + repeat("(", 100000) + "1" + repeat(")", 100000) + " }}"), "");
  EXPECT_NE(failure("{{ " + repeat("[", 5000) + repeat("]", 5000) + " }}"), "");
  EXPECT_NE(failure("{{ " + repeat("not ", 50000) + "x }}"), "");
  EXPECT_NE(failure("{{ " + repeat("-", 50000) + "1 }}"), "");
  EXPECT_NE(failure("{{ x" + repeat("|trim", 100) + " }}"), "x");  // long chains are fine
}

TEST(JinjaLimits, DeepBlockNestingIsASyntaxError) {
  const std::string msg =
      failure(repeat("{% if true %}", 5000) + "x" + repeat("{% endif %}", 5000));
  EXPECT_NE(msg, "");
  EXPECT_NE(msg.find("line 1"), std::string::npos) << msg;
}

TEST(JinjaLimits, RunawayLoopsStop) {
  const auto start = std::chrono::steady_clock::now();
  const std::string msg =
      failure("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}");
  EXPECT_NE(msg.find("ran too long"), std::string::npos) << msg;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
}

TEST(JinjaLimits, InfiniteRecursionStops) {
  EXPECT_NE(failure("{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}"), "");
  EXPECT_NE(failure("{% macro m(n) %}x{{ m(n + 1) }}{% endmacro %}{{ m(0) }}"), "");
}

TEST(JinjaLimits, OutputAndValueSizesAreBounded) {
  RenderOptions small;
  small.max_output_bytes = 1 << 16;
  EXPECT_NE(failure("{% for i in range(1000) %}{{ 'x' * 1000 }}{% endfor %}", small), "");
  EXPECT_NE(failure("{% set ns = namespace(s='ab') %}{% for i in range(100) %}"
                    "{% set ns.s = ns.s ~ ns.s %}{% endfor %}"),
            "");
  EXPECT_NE(failure("{% set ns = namespace(l=[1]) %}{% for i in range(100) %}"
                    "{% set ns.l = ns.l + ns.l %}{% endfor %}"),
            "");
  EXPECT_NE(failure("{{ 'x' * 9223372036854775807 }}"), "");
  EXPECT_NE(failure("{{ [1, 2] * 4611686018427387904 }}"), "");
  EXPECT_EQ(failure("{{ '' * 9223372036854775807 }}"), "");
  EXPECT_NE(failure("{{ range(100001) | length }}"), "");
}

TEST(JinjaLimits, IntegerOverflowIsAnError) {
  EXPECT_NE(failure("{{ 9223372036854775807 + 1 }}"), "");
  EXPECT_NE(failure("{{ 2 ** 64 }}"), "");
  EXPECT_NE(failure("{{ -(-9223372036854775807 - 1) }}"), "");
  EXPECT_NE(failure("{{ 99999999999999999999 }}"), "");
}

TEST(JinjaLimits, ErrorsNameLineAndColumn) {
  const std::string msg = failure("line one\n{{ 1 +* 2 }}");
  EXPECT_NE(msg.find("line 2, column"), std::string::npos) << msg;
  const std::string raised = failure("\n\n  {{ raise_exception('nope') }}");
  EXPECT_NE(raised.find("line 3"), std::string::npos) << raised;
  EXPECT_NE(raised.find("nope"), std::string::npos) << raised;
}

TEST(JinjaLimits, MalformedInputsAreErrors) {
  const char* bad[] = {"{{",
                       "{%",
                       "{#",
                       "{{ 'unterminated }}",
                       "{% for %}",
                       "{% endfor %}",
                       "{{ a[ }}",
                       "{{ 1 2 }}",
                       "{% set %}",
                       "{{ '\\x4' }}",
                       "{% macro %}",
                       "{% if x %}{% else %}{% else %}",
                       "{{ } }}",
                       "{{ a.1x }}",
                       "{{ f(a=1, 2) }}",
                       "{% raw %}open"};
  for (const char* src : bad) EXPECT_NE(failure(src), "") << src;
}

}  // namespace
}  // namespace hearth::jinja

namespace hearth::jinja {
namespace {

// A namespace that holds itself (found by jinja_fuzz as a leak) is freed with the render.
TEST(JinjaLimits, SelfReferencingNamespacesDoNotLeak) {
  EXPECT_EQ(failure("{% set ns = namespace(a=1) %}{% set ns.a = ns, 1 %}{% set ns.b = [ns] %}"
                    "{% for x in [ns] %}{% set ns.l = loop %}{% endfor %}{{ ns.a | length }}"),
            "");
}

}  // namespace
}  // namespace hearth::jinja

namespace hearth::jinja {
namespace {

// Few steps, each a large string operation: the wall-clock budget ends it.
TEST(JinjaLimits, ExpensiveStepsHitTheTimeBudget) {
  RenderOptions opts;
  opts.max_milliseconds = 300;
  const auto start = std::chrono::steady_clock::now();
  const std::string msg = failure(
      "{% set big = 'ab' * 4000000 %}{% for i in range(100000) %}"
      "{% set x = big.replace('a', 'c') %}{% endfor %}",
      opts);
  EXPECT_NE(msg.find("ran too long"), std::string::npos) << msg;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

}  // namespace
}  // namespace hearth::jinja
