#include <gtest/gtest.h>

#include "hearth/jinja/template.h"

TEST(JinjaSmoke, Renders) {
  auto t = hearth::jinja::Template::parse("Hello {{ name }}!");
  ASSERT_TRUE(t.ok()) << t.status().message();
  auto r = t->render(nlohmann::ordered_json{{"name", "x"}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->text, "Hello x!");
}
