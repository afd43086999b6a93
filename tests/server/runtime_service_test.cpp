// The server's seam to the runtime (src/server/runtime_service.cpp) over the real
// runtime with the stub backend: a generation is accepted or refused before anything
// streams, streams its token ids with their text, and is cancelled when dropped unrun.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "server/model_settings.h"
#include "server/runtime_service.h"
#include "testing/stub_backend.h"

namespace hearth::server {
namespace {

class RecordingSink : public GenerateSink {
 public:
  bool on_piece(const GeneratedPiece& piece) override {
    pieces.push_back({piece.text, piece.tokens});
    return pieces.size() < cancel_after;
  }
  std::string text() const {
    std::string all;
    for (const auto& p : pieces) all += p.text;
    return all;
  }
  std::vector<TokenId> tokens() const {
    std::vector<TokenId> all;
    for (const auto& p : pieces) all.insert(all.end(), p.tokens.begin(), p.tokens.end());
    return all;
  }
  struct Piece {
    std::string text;
    std::vector<TokenId> tokens;
  };
  std::vector<Piece> pieces;
  size_t cancel_after = SIZE_MAX;
};

class RuntimeServiceTest : public ::testing::Test {
 protected:
  void start(int32_t n_seq_max = 2, int64_t max_queued = 8) {
    ServerConfig config;
    config.limits.max_queued_requests = max_queued;
    runtime::ModelConfig m = default_model_config();
    m.id = "stub";
    m.model_path = "stub.gguf";
    m.n_seq_max = n_seq_max;
    config.models.push_back(m);
    RuntimeServiceOptions options;
    options.backend_for = [control = control_](const runtime::ModelConfig& c) {
      return runtime::stub_factory_for(c, control);
    };
    auto service = make_runtime_service(config, std::move(options));
    ASSERT_TRUE(service.ok()) << service.status().to_string();
    service_ = std::move(service).value();
  }
  void TearDown() override {
    if (service_) service_->shutdown();
  }

  GenerateRequest request(const std::string& prompt, int64_t max_tokens) {
    GenerateRequest r;
    r.model = "stub";
    r.prompt = *service_->tokenize("stub", prompt, true, {});
    r.max_tokens = max_tokens;
    r.sampling.temperature = 0;  // greedy: two runs of one prompt agree
    return r;
  }

  bool wait_active(int32_t n) {
    for (int i = 0; i < 400; ++i) {
      auto info = service_->model_info("stub");
      if (info.ok() && info->active_requests == n) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }

  std::shared_ptr<runtime::StubControl> control_ = std::make_shared<runtime::StubControl>();
  std::unique_ptr<ServiceApi> service_;
};

TEST_F(RuntimeServiceTest, PiecesCarryEveryTokenIdWithItsText) {
  start();
  auto generation = service_->start_generation(request("The quick brown fox", 24));
  ASSERT_TRUE(generation.ok()) << generation.status().to_string();
  RecordingSink sink;
  auto stats = (*generation)->run(sink);
  ASSERT_TRUE(stats.ok()) << stats.status().to_string();
  const std::vector<TokenId> ids = sink.tokens();
  EXPECT_EQ(static_cast<int64_t>(ids.size()), stats->completion_tokens);
  ASSERT_FALSE(ids.empty());
  // The ids are the text: detokenized together they give exactly what was streamed.
  auto text = service_->detokenize("stub", ids);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, sink.text());
  for (const auto& piece : sink.pieces) EXPECT_FALSE(piece.tokens.empty());
}

TEST_F(RuntimeServiceTest, StopStringTokensArriveWithoutTheirText) {
  start();
  RecordingSink cold;
  ASSERT_TRUE((*service_->start_generation(request("Once upon a time", 32)))->run(cold).ok());
  const std::string full = cold.text();
  ASSERT_GE(full.size(), 12u) << full;
  GenerateRequest stopped = request("Once upon a time", 32);
  stopped.stop = {full.substr(6, 3)};
  const size_t cut = full.find(stopped.stop[0]);
  RecordingSink sink;
  auto stats = (*service_->start_generation(stopped))->run(sink);
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(sink.text(), full.substr(0, cut));
  EXPECT_EQ(stats->matched_stop, stopped.stop[0]);
  // Every generated token is reported, the stop string's included, in order.
  const std::vector<TokenId> ids = sink.tokens();
  EXPECT_EQ(static_cast<int64_t>(ids.size()), stats->completion_tokens);
  const std::vector<TokenId> cold_ids = cold.tokens();
  ASSERT_LE(ids.size(), cold_ids.size());
  EXPECT_TRUE(std::equal(ids.begin(), ids.end(), cold_ids.begin()));
  EXPECT_EQ(*service_->detokenize("stub", ids), full.substr(0, cut + stopped.stop[0].size()));
}

TEST_F(RuntimeServiceTest, AFullQueueIsRefusedBeforeAnythingStreams) {
  control_->step_delay_us = 20000;
  start(/*n_seq_max=*/1, /*max_queued=*/0);
  auto first = service_->start_generation(request("busy", 20));
  ASSERT_TRUE(first.ok());
  auto second = service_->start_generation(request("turned away", 2));
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), ErrorCode::kResourceExhausted) << second.status().to_string();
  RecordingSink sink;
  EXPECT_TRUE((*first)->run(sink).ok());
}

TEST_F(RuntimeServiceTest, ADroppedGenerationIsCancelledAndFreesItsSequence) {
  control_->step_delay_us = 20000;
  start(/*n_seq_max=*/1);
  {
    auto generation = service_->start_generation(request("never read", 200));
    ASSERT_TRUE(generation.ok());
    EXPECT_TRUE(wait_active(1));
  }  // the reply failed before streaming: nobody will read it
  EXPECT_TRUE(wait_active(0));
  auto next = service_->start_generation(request("next", 2));
  ASSERT_TRUE(next.ok());
  RecordingSink sink;
  auto stats = (*next)->run(sink);
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->finish_reason, "length");
}

TEST_F(RuntimeServiceTest, ASinkThatStopsCancelsTheGeneration) {
  control_->step_delay_us = 5000;  // 200 tokens take a second: the cancel comes first
  start();
  auto generation = service_->start_generation(request("cancel me", 200));
  ASSERT_TRUE(generation.ok());
  RecordingSink sink;
  sink.cancel_after = 2;
  auto stats = (*generation)->run(sink);
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->finish_reason, "cancelled");
  EXPECT_LT(stats->completion_tokens, 200);
  EXPECT_TRUE(wait_active(0));
}

}  // namespace
}  // namespace hearth::server
