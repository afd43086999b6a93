// Adaptive draft length (issue #23): the measured pass costs (interpolated, extrapolated)
// and the per-request choice: no draft when a verify row costs as much as the decodes it
// replaces or when drafts are rejected, long drafts when they are accepted and cheap, a
// one-token probe now and then, and drafting again once a probe is accepted.
#include "runtime/draft_length.h"

#include <gtest/gtest.h>

namespace hearth::runtime {
namespace {

// A pass of n tokens costs base + extra * (n - 1) seconds, for n = 1..max_n.
StepCosts linear_costs(double base, double extra, int32_t max_n = 64) {
  StepCosts c(256);
  for (int32_t n = 1; n <= max_n; ++n) c.record(n, base + extra * (n - 1));
  return c;
}

TEST(StepCosts, InterpolatesAndExtrapolatesMeasuredPasses) {
  StepCosts c(64);
  EXPECT_EQ(c.pass(1), 0);  // nothing measured
  c.record(1, 0.010);
  EXPECT_DOUBLE_EQ(c.pass(1), 0.010);
  // One count known: extra tokens at the prior fraction of a one-token pass.
  EXPECT_NEAR(c.pass(5), 0.010 * (1 + 4 * StepCosts::kPriorExtraTokenCost), 1e-12);
  c.record(9, 0.050);
  EXPECT_NEAR(c.pass(5), 0.030, 1e-12);                 // halfway between 1 and 9
  EXPECT_NEAR(c.pass(17), 0.090, 1e-12);                // 5 ms a token past 9, as from 1 to 9
  EXPECT_NEAR(c.pass(500), 0.050 + 491 * 0.005, 1e-9);  // beyond the table too
  // A new sample moves the average, not replaces it.
  c.record(1, 0.020);
  EXPECT_GT(c.pass(1), 0.010);
  EXPECT_LT(c.pass(1), 0.020);
  c.record_draft(4, 0.008);
  EXPECT_NEAR(c.draft(3), 0.006, 1e-12);
}

TEST(DraftLength, NothingMeasuredMeansNoDraft) {
  DraftLength d;
  EXPECT_EQ(d.choose(StepCosts(64), 1, 1, 0, 16, false), 0);
}

TEST(DraftLength, NeverDraftsWhenAVerifyRowCostsWhatItsDecodesCost) {
  const StepCosts c = linear_costs(0.010, 0.010);
  DraftLength d(0);
  for (int i = 0; i < 20; ++i) d.observe(8, false);  // every draft accepted
  EXPECT_GT(d.acceptance(), 0.95);
  EXPECT_EQ(d.choose(c, 1, 1, 0, 16, false), 0);
}

TEST(DraftLength, AStaleCheapVerifyAverageDoesNotMakeRejectedDraftsPay) {
  // The one-token average rose under load after the 2..4-token ones were taken: a draft
  // that is always rejected must still not look cheaper than a plain step.
  StepCosts c(64);
  for (int32_t n = 2; n <= 4; ++n) c.record(n, 0.010);
  c.record(1, 0.020);
  DraftLength d(0);
  for (int i = 0; i < 30; ++i) d.observe(0, true);
  EXPECT_EQ(d.choose(c, 1, 1, 0, 3, false), 0);
}

TEST(DraftLength, DraftsLongerTheMoreIsAccepted) {
  const StepCosts c = linear_costs(0.010, 0.002);
  DraftLength sure(0), unsure(0);
  for (int i = 0; i < 20; ++i) {
    sure.observe(8, false);
    unsure.observe(1, true);  // half of the judged tokens accepted
  }
  const int32_t k_sure = sure.choose(c, 1, 1, 0, 16, false);
  const int32_t k_unsure = unsure.choose(c, 1, 1, 0, 16, false);
  EXPECT_EQ(k_sure, 16);
  EXPECT_GT(k_unsure, 0);
  EXPECT_LT(k_unsure, k_sure);
  EXPECT_EQ(sure.choose(c, 1, 1, 0, 5, false), 5);  // the limit holds
  EXPECT_EQ(sure.choose(c, 1, 1, 6, 5, false), 0);  // a limit below draft_min: none
  // A draft model that costs a target pass per token takes every gain away.
  StepCosts with_model = linear_costs(0.010, 0.002);
  with_model.record_draft(1, 0.010);
  EXPECT_EQ(sure.choose(with_model, 1, 1, 0, 16, true), 0);
  // In a step of 8 decoders a draft's gain is shared: it still pays here, shorter.
  EXPECT_GT(sure.choose(c, 8, 8, 0, 16, false), 0);
}

TEST(DraftLength, StopsWhenRejectedProbesAndResumesOnceAProbeIsAccepted) {
  const StepCosts c = linear_costs(0.010, 0.002);
  DraftLength d(16);
  int drafted_steps = 0;
  for (int step = 0; step < 200; ++step) {  // every draft rejected at its first token
    const int32_t k = d.choose(c, 1, 1, 0, 16, false);
    if (k == 0) {
      d.plain_step();
      continue;
    }
    ++drafted_steps;
    d.observe(0, true);
  }
  // A few drafts while the prior wears off, then a one-token probe every 16 steps.
  EXPECT_LE(drafted_steps, 6 + 200 / 16);
  EXPECT_LT(d.acceptance(), 0.05);
  int32_t k = 0;
  int waited = 0;
  while ((k = d.choose(c, 1, 1, 0, 16, false)) == 0 && waited < 20) {
    d.plain_step();
    ++waited;
  }
  ASSERT_LE(waited, 16);
  EXPECT_EQ(k, 1);  // the probe
  d.observe(1, false);
  d.plain_step();
  k = d.choose(c, 1, 1, 0, 16, false);
  EXPECT_GT(k, 0);  // drafting again one step after the probe: not a probe
  for (int i = 0; i < 3; ++i) {
    d.observe(k, false);
    k = d.choose(c, 1, 1, 0, 16, false);
  }
  EXPECT_GT(k, 4);  // and longer as the drafts keep being accepted

  DraftLength no_probe(0);
  for (int i = 0; i < 30; ++i) no_probe.observe(0, true);
  for (int i = 0; i < 100; ++i) {
    ASSERT_EQ(no_probe.choose(c, 1, 1, 0, 16, false), 0) << i;
    no_probe.plain_step();
  }
}

}  // namespace
}  // namespace hearth::runtime
