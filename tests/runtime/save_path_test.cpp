// The runtime's saves go through the cache's per-tier writers, and its cache lookups
// happen when the model's worker admits a request: a stuck disk holds up no RAM-tier
// model, drops are the cache's saves_dropped, and a queued request finds rows saved while
// it waited.
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include "slow_disk.h"
#include "stub_fixture.h"

namespace hearth::runtime {
namespace {
using namespace testing;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

bool published(const Runtime& rt, const std::string& key_hex, Tier tier) {
  for (const CacheRowSummary& r : rt.cache_rows())
    if (r.key_hex == key_hex && !r.in_flight && r.tier == tier) return true;
  return false;
}

TEST(SavePath, StuckDiskHoldsUpNoRamModelAndDropsAreTheCaches) {
  SlowDisk disk;  // every disk link(2) hangs until released
  auto rt = make_runtime(disk.options());
  auto unstick = disk.release_at_exit();
  auto disk_cfg = stub_config("disk", 1, nullptr, "stub-disk.gguf");
  disk_cfg.tier = Tier::kDisk;
  disk_cfg.slot_affinity = false;  // every request saves a cold and a finish row
  ASSERT_TRUE(rt->load_model(disk_cfg).ok());
  ASSERT_TRUE(rt->load_model(stub_config("ram", 1, nullptr, "stub-ram.gguf")).ok());

  // One disk request queues two saves (cold, finish): both disk writers hang in link(2).
  ASSERT_TRUE(rt->complete("disk", text_of(300, 'a'), greedy(4)).ok());
  for (int i = 0; i < 400 && disk.io().linking() < 2; ++i) std::this_thread::sleep_for(5ms);
  ASSERT_EQ(disk.io().linking(), 2);

  // The RAM model's finish row publishes at once on the RAM tier's own writer.
  const auto start = Clock::now();
  auto ram = rt->complete("ram", text_of(300, 'k'), greedy(4));
  ASSERT_TRUE(ram.ok());
  ASSERT_TRUE(ram->finish_key);
  bool ok = false;
  while (!ok && Clock::now() - start < 1s) {
    ok = published(*rt, *ram->finish_key, Tier::kRam);
    if (!ok) std::this_thread::sleep_for(5ms);
  }
  EXPECT_TRUE(ok) << "the RAM model's finish save waited behind the stuck disk";

  // Disk saves pile up in the disk tier's queue until the cache drops one, and counts it.
  const uint64_t dropped = rt->cache_counters()["saves_dropped"];
  // (Each request queues one save: its cold row is the same key for all, a duplicate
  // that is never packed.)
  for (int i = 0; i < 120 && rt->cache_counters()["saves_dropped"] == dropped; ++i)
    ASSERT_TRUE(rt->complete("disk", text_of(300 + i, 'a'), greedy(4)).ok());
  EXPECT_GT(rt->cache_counters()["saves_dropped"], dropped);

  disk.io().release();
  EXPECT_TRUE(rt->cache_flush(20s));
  for (const CacheRowSummary& r : rt->cache_rows()) EXPECT_FALSE(r.in_flight);
}

// The stub, except that each forward pass waits until the gate opens.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  bool entered = false;
};

class GatedStub final : public StubBackend {
 public:
  GatedStub(StubOptions o, std::shared_ptr<Gate> gate)
      : StubBackend(std::move(o)), gate_(std::move(gate)) {}
  Status step(std::span<const StepRow> rows, std::vector<std::vector<float>>* logits) override {
    {
      std::unique_lock l(gate_->mu);
      gate_->entered = true;
      gate_->cv.notify_all();
      gate_->cv.wait_for(l, 20s, [&] { return gate_->open; });
    }
    return StubBackend::step(rows, logits);
  }

 private:
  std::shared_ptr<Gate> gate_;
};

TEST(AdmissionLookup, QueuedRequestFindsARowSavedWhileItWaited) {
  auto gate = std::make_shared<Gate>();
  auto ctl = std::make_shared<StubControl>();
  ctl->step_delay_us = 20000;  // the cold save publishes long before A finishes
  auto rt = make_runtime();
  ModelConfig cfg = stub_config("m", 1);
  cfg.slot_affinity = false;  // else B would reuse A's resident cells (sticky)
  cfg.factory = [gate, ctl]() -> Result<std::unique_ptr<Backend>> {
    StubOptions o;
    o.n_ctx = 4096;
    o.n_seq_max = 1;
    o.model_path = "stub-a.gguf";
    o.control = ctl;
    return std::unique_ptr<Backend>(std::make_unique<GatedStub>(o, gate));
  };
  ASSERT_TRUE(rt->load_model(cfg).ok());
  const std::vector<TokenId> prompt_a = *rt->tokenize("m", text_of(300));
  std::vector<TokenId> prompt_b = prompt_a;
  const auto more = *rt->tokenize("m", " and then?");
  prompt_b.insert(prompt_b.end(), more.begin(), more.end());
  const RequestParams p = greedy(16);

  // A holds the only sequence, stopped in its first forward pass: nothing is saved yet.
  auto a = std::async(std::launch::async, [&] { return rt->complete_tokens("m", prompt_a, p); });
  {
    std::unique_lock l(gate->mu);
    ASSERT_TRUE(gate->cv.wait_for(l, 10s, [&] { return gate->entered; }));
  }
  auto b = std::async(std::launch::async, [&] { return rt->complete_tokens("m", prompt_b, p); });
  for (int i = 0; i < 2000 && rt->model_info("m")->queued_requests < 1; ++i)
    std::this_thread::sleep_for(1ms);
  ASSERT_EQ(rt->model_info("m")->queued_requests, 1);
  EXPECT_TRUE(rt->cache_rows().empty());
  {
    std::lock_guard l(gate->mu);
    gate->open = true;
  }
  gate->cv.notify_all();

  auto ra = a.get();
  auto rb = b.get();
  ASSERT_TRUE(ra.ok() && rb.ok());
  EXPECT_EQ(ra->cache_hit_kind, CacheHitKind::kCold);
  // A's cold save published while B waited for the sequence; B's lookup ran at admission.
  EXPECT_EQ(rb->cache_hit_kind, CacheHitKind::kPartial);
  EXPECT_GT(rb->cache_delta.read, 0);
  expect_same_output(*rb, cold_reference(prompt_b, p));
}

// A resume wait keeps the request queued, not the worker: the other sequence of the batch
// keeps generating meanwhile, and the wait ends at session_resume_wait_ms.
TEST(AdmissionLookup, ResumeWaitIsBoundedAndDoesNotStallTheBatch) {
  SlowDisk disk;  // the parent's finish save never publishes while the test runs
  auto rt = make_runtime(disk.options());
  auto unstick = disk.release_at_exit();
  auto ctl = std::make_shared<StubControl>();
  auto cfg = stub_config("m", 2, ctl);
  cfg.tier = Tier::kDisk;
  cfg.slot_affinity = false;
  cfg.policy.session_resume_wait_ms = 300;
  ASSERT_TRUE(rt->load_model(cfg).ok());
  auto t1 = rt->complete("m", text_of(300), greedy(4));
  ASSERT_TRUE(t1.ok());
  ASSERT_TRUE(t1->finish_key);

  ctl->step_delay_us = 2000;
  std::promise<RequestStats> other_done;
  StreamSink sink;
  sink.on_done = [&](const RequestStats& s) { other_done.set_value(s); };
  sink.on_error = [&](const Status&) { other_done.set_value({}); };
  ASSERT_TRUE(rt->infer("m", *rt->tokenize("m", text_of(100, 'q')), greedy(400), sink).ok());

  std::vector<TokenId> prompt2 = t1->context_tokens;
  const auto more = *rt->tokenize("m", " next");
  prompt2.insert(prompt2.end(), more.begin(), more.end());
  RequestParams p2 = greedy(4);
  p2.parent_key = t1->finish_key;
  const int64_t steps_before = ctl->steps.load();
  const auto start = Clock::now();
  auto t2 = rt->complete_tokens("m", prompt2, p2);
  const auto waited = Clock::now() - start;
  ASSERT_TRUE(t2.ok());
  EXPECT_EQ(t2->cache_hit_kind, CacheHitKind::kCold);  // the parent never published
  EXPECT_GE(waited, 290ms);
  EXPECT_LT(waited, 5s);
  EXPECT_GE(t2->stats.queue_ms, 250.0) << "the wait is spent in the queue";
  // The other request kept stepping while t2 waited (2 ms a step, so ~150 in 300 ms).
  EXPECT_GT(ctl->steps.load() - steps_before, 50);
  auto other = other_done.get_future();
  ASSERT_EQ(other.wait_for(20s), std::future_status::ready);
}

}  // namespace
}  // namespace hearth::runtime

namespace hearth::runtime {
namespace {
using namespace testing;

// An exact hit that adds nothing to its cells (one response token, never fed back) ends
// with the row it restored: its finish save is dropped as the duplicate it is before a
// payload is packed, and it still reports that row's key.
TEST(SavePath, ExactHitOfAnUnchangedRowPacksNoDuplicate) {
  auto rt = make_runtime();
  auto ctl = std::make_shared<StubControl>();
  auto cfg = stub_config("m", 1, ctl);
  cfg.slot_affinity = false;  // the second request restores from the cache
  ASSERT_TRUE(rt->load_model(cfg).ok());
  const std::string prompt = text_of(300, 'q');
  auto first = rt->complete("m", prompt, greedy(1));
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  ASSERT_TRUE(first->finish_key);
  ASSERT_TRUE(rt->cache_flush(std::chrono::seconds(20)));
  const int64_t packs = ctl->kv_packs.load();
  ASSERT_GT(packs, 0);
  const uint64_t dropped = rt->cache_counters()["duplicate_dropped"];
  const uint64_t finishes = rt->cache_counters()["saves_finish"];

  RequestParams again = greedy(1);
  again.parent_key = first->finish_key;
  auto exact = rt->complete("m", prompt, again);
  ASSERT_TRUE(exact.ok()) << exact.status().to_string();
  EXPECT_EQ(exact->cache_hit_kind, CacheHitKind::kExact);
  EXPECT_EQ(exact->generated, first->generated);
  ASSERT_TRUE(exact->finish_key);
  EXPECT_EQ(*exact->finish_key, *first->finish_key);
  ASSERT_TRUE(rt->cache_flush(std::chrono::seconds(20)));
  EXPECT_EQ(ctl->kv_packs.load(), packs) << "the unchanged row was packed again";
  EXPECT_EQ(rt->cache_counters()["duplicate_dropped"], dropped + 1);
  EXPECT_EQ(rt->cache_counters()["saves_finish"], finishes);

  // Cells that did change are saved as before.
  auto longer = rt->complete("m", prompt, greedy(4));
  ASSERT_TRUE(longer.ok());
  ASSERT_TRUE(rt->cache_flush(std::chrono::seconds(20)));
  EXPECT_GT(ctl->kv_packs.load(), packs);
}

}  // namespace
}  // namespace hearth::runtime
