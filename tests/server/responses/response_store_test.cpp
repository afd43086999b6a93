// The bounded store of /v1/responses: least recently used out first, a read counts as a
// use, erase and replace.
#include <gtest/gtest.h>

#include "server/responses/response_store.h"

namespace hearth::server {
namespace {

StoredResponse stored(const std::string& text) {
  return {nlohmann::json{{"text", text}}, {ChatMessage{"user", text}}};
}

TEST(ResponseStore, EvictsTheLeastRecentlyUsed) {
  ResponseStore store(2);
  store.put("a", stored("A"));
  store.put("b", stored("B"));
  ASSERT_NE(store.get("a"), nullptr);  // a is now the most recent: b goes next
  store.put("c", stored("C"));
  EXPECT_EQ(store.size(), 2u);
  EXPECT_EQ(store.get("b"), nullptr);
  ASSERT_NE(store.get("a"), nullptr);
  EXPECT_EQ(store.get("a")->conversation[0].content, "A");
  EXPECT_EQ(store.get("c")->response["text"], "C");
}

TEST(ResponseStore, ItemsByIdGoWithTheirResponse) {
  ResponseStore store(1);
  StoredResponse r = stored("A");
  r.response["output"] = {{{"id", "msg_1"}, {"type", "message"}}};
  store.put("a", r);
  EXPECT_EQ(store.item("msg_1")["type"], "message");
  EXPECT_TRUE(store.item("msg_2").is_null());
  store.put("b", stored("B"));  // evicts a, and its items
  EXPECT_TRUE(store.item("msg_1").is_null());
}

TEST(ResponseStore, EraseAndReplace) {
  ResponseStore store(3);
  store.put("a", stored("A"));
  store.put("a", stored("A2"));
  EXPECT_EQ(store.size(), 1u);
  EXPECT_EQ(store.get("a")->response["text"], "A2");
  auto held = store.get("a");
  EXPECT_TRUE(store.erase("a"));
  EXPECT_FALSE(store.erase("a"));
  EXPECT_EQ(store.get("a"), nullptr);
  EXPECT_EQ(held->response["text"], "A2");  // a reader's copy outlives the erase
  EXPECT_EQ(store.capacity(), 3u);
}

}  // namespace
}  // namespace hearth::server
