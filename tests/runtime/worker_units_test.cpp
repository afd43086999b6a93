// The model worker's decisions as units: save policy, slot choice, where a sequence's
// KV starts from, and slot reset. Pure functions and a plain struct: no model needed.
#include <gtest/gtest.h>

#include "runtime/save_policy.h"
#include "runtime/slot.h"
#include "runtime/slot_choice.h"

namespace hearth::runtime {
namespace {

ModelSavePolicy policy() {
  ModelSavePolicy p;
  p.min_tokens = 64;
  p.cold_min_tokens = 100;
  p.cold_max_tokens = 1000;
  p.boundary_trim_tokens = 32;
  p.boundary_align_tokens = 64;
  p.continued_interval = 50;
  return p;
}

TEST(SavePolicy, ColdSaveIsTheTrimmedAlignedPrefix) {
  const ModelSavePolicy p = policy();
  EXPECT_EQ(cold_save_length(p, 99, 0), 0);      // under cold_min_tokens
  EXPECT_EQ(cold_save_length(p, 100, 0), 64);    // 100 - 32 = 68 -> 64
  EXPECT_EQ(cold_save_length(p, 300, 0), 256);   // 268 -> 256
  EXPECT_EQ(cold_save_length(p, 5000, 0), 960);  // capped at 1000: 968 -> 960
  EXPECT_EQ(cold_save_length(p, 300, 256), 0);   // already resident: nothing new to save
  EXPECT_EQ(cold_save_length(p, 300, 255), 256);
  ModelSavePolicy high = p;
  high.min_tokens = 300;
  EXPECT_EQ(cold_save_length(high, 300, 0), 0);  // below min_tokens after trimming
  ModelSavePolicy unaligned = p;
  unaligned.boundary_align_tokens = 0;
  EXPECT_EQ(cold_save_length(unaligned, 300, 0), 268);
  ModelSavePolicy all_trimmed = p;
  all_trimmed.min_tokens = 0;
  all_trimmed.boundary_trim_tokens = 500;
  EXPECT_EQ(cold_save_length(all_trimmed, 300, 0), 0);  // never a non-positive length
}

TEST(SavePolicy, SaveAllowedNeedsMinTokensAndResidentCells) {
  const ModelSavePolicy p = policy();
  EXPECT_FALSE(save_allowed(p, 0, 100));
  EXPECT_FALSE(save_allowed(p, 63, 100));
  EXPECT_TRUE(save_allowed(p, 64, 100));
  EXPECT_TRUE(save_allowed(p, 100, 100));
  EXPECT_FALSE(save_allowed(p, 101, 100));  // cannot save cells the sequence lacks
}

TEST(SavePolicy, ContinuedSaveEveryInterval) {
  ModelSavePolicy p = policy();
  EXPECT_FALSE(continued_save_due(p, 49, 0));
  EXPECT_TRUE(continued_save_due(p, 50, 0));
  EXPECT_FALSE(continued_save_due(p, 99, 50));
  EXPECT_TRUE(continued_save_due(p, 100, 50));
  EXPECT_FALSE(continued_save_due(p, 10, 50));  // never a wrapped difference
  p.continued_interval = 0;
  EXPECT_FALSE(continued_save_due(p, 1000000, 0));
}

TEST(SlotChoice, LongestResidentPrefixThenEmptyThenFirst) {
  const std::vector<TokenId> prompt = {1, 2, 3, 4, 5};
  const std::vector<TokenId> a = {1, 2, 9}, b = {1, 2, 3, 4, 8}, empty = {}, c = {7};
  std::vector<const std::vector<TokenId>*> slots = {&a, &b, &empty};
  EXPECT_EQ(choose_slot(slots, prompt, true).slot, 1u);
  EXPECT_EQ(choose_slot(slots, prompt, true).resident_lcp, 4u);
  // Without affinity every slot has lcp 0: the empty one (no cells to drop) wins.
  EXPECT_EQ(choose_slot(slots, prompt, false).slot, 2u);
  EXPECT_EQ(choose_slot(slots, prompt, false).resident_lcp, 0u);
  std::vector<const std::vector<TokenId>*> no_match = {&c, &a};
  EXPECT_EQ(choose_slot(no_match, std::vector<TokenId>{6}, true).slot, 0u);
}

TEST(PlanStart, StickyRestoreOrCold) {
  // Nothing to reuse.
  EXPECT_EQ(plan_start(10, 0, 0, false).from, StartFrom::kCold);
  // Resident prefix, no row: keep it, but always recompute the last prompt token.
  auto p = plan_start(10, 10, 0, false);
  EXPECT_EQ(p.from, StartFrom::kSticky);
  EXPECT_EQ(p.keep, 9u);
  // A row covering more than the resident prefix wins; it keeps at most n - 1 tokens...
  p = plan_start(10, 3, 8, false);
  EXPECT_EQ(p.from, StartFrom::kRestore);
  EXPECT_EQ(p.keep, 8u);
  p = plan_start(10, 3, 10, false);
  EXPECT_EQ(p.keep, 9u);
  // ...unless it is the whole prompt with its last logits: no forward pass at all.
  p = plan_start(10, 10, 10, true);
  EXPECT_EQ(p.from, StartFrom::kRestore);
  EXPECT_EQ(p.keep, 10u);
  // A resident prefix at least as long as the row's coverage wins (no copy).
  p = plan_start(10, 6, 6, false);
  EXPECT_EQ(p.from, StartFrom::kSticky);
  EXPECT_EQ(p.keep, 6u);
  EXPECT_EQ(plan_start(0, 0, 0, false).from, StartFrom::kCold);
}

TEST(SlotReset, BeginForgetsTheLastRequestButKeepsTheCells) {
  Slot s;
  s.seq = 3;
  s.resident = {1, 2, 3};
  s.last_logits = {0.5f};
  s.request = std::make_shared<Request>();
  s.cursor = 7;
  s.has_pending = true;
  s.pending = 9;
  s.generated = {4, 5};
  s.reply = "old";
  s.token_logits = {{1.0f}};
  s.cold_boundary = 64;
  s.last_continued_at = 12;
  s.hit = CacheHitKind::kExact;
  s.delta.read = 5;
  s.finishing = true;
  s.reason = FinishReason::kLength;
  s.finish_key = "abc";
  s.has_first_token = true;
  auto next = std::make_shared<Request>();
  const auto now = std::chrono::steady_clock::now();
  s.begin(next, 42, now);
  EXPECT_EQ(s.seq, 3);
  EXPECT_EQ(s.resident, (std::vector<TokenId>{1, 2, 3}));
  EXPECT_EQ(s.last_logits, std::vector<float>{0.5f});
  EXPECT_EQ(s.request, next);
  EXPECT_EQ(s.admit_order, 42u);
  EXPECT_EQ(s.admitted_at, now);
  EXPECT_EQ(s.cursor, 0);
  EXPECT_FALSE(s.has_pending);
  EXPECT_TRUE(s.generated.empty());
  EXPECT_TRUE(s.reply.empty());
  EXPECT_TRUE(s.token_logits.empty());
  EXPECT_EQ(s.cold_boundary, 0);
  EXPECT_EQ(s.last_continued_at, 0u);
  EXPECT_EQ(s.hit, CacheHitKind::kCold);
  EXPECT_EQ(s.delta.read, 0);
  EXPECT_FALSE(s.finishing);
  EXPECT_EQ(s.reason, FinishReason::kStop);
  EXPECT_FALSE(s.finish_key);
  EXPECT_FALSE(s.has_first_token);
  s.release();
  EXPECT_FALSE(s.busy());
  EXPECT_EQ(s.resident.size(), 3u);
}

}  // namespace
}  // namespace hearth::runtime
