#include <gtest/gtest.h>

#include "hearth/server/server.h"
#include "server/model_settings.h"

namespace hearth::server {
namespace {

Status apply(const std::string& text, ServerConfig& c) {
  return apply_config_toml(text, c);
}

std::string error_of(const std::string& text) {
  ServerConfig c;
  Status s = apply(text, c);
  return s.ok() ? "" : s.message();
}

TEST(ServerConfig, ParsesAFullDocument) {
  ServerConfig c;
  Status s = apply(R"(
[server]
host = "0.0.0.0"
port = 9000
api_key = "k"
models_dir = "/models"
cors_origins = ["https://app.example"]
chat_template = "llama-3"

[limits]
max_body_bytes = "2MiB"
max_tokens = 512
max_queued_requests = 8

[[models]]
id = "small"
path = "/models/small.gguf"
context = 2048
n_seq_max = 4
tier = "disk"
policy = { min_tokens = 64, boundary_align_tokens = 128 }

[[models]]
path = "/models/other.gguf"

[tiers.ram]
quota = "1GiB"
[tiers.disk]
dir = "/var/cache/hearth"
quota = 1000000

[writer_pool]
threads = 3

[pressure]
enabled = true
source = "system"
high_watermark = 0.9
low_watermark = 0.8
evict_tiers = ["ram"]
)",
                   c);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(c.host, "0.0.0.0");
  EXPECT_EQ(c.port, 9000);
  EXPECT_EQ(c.api_key, "k");
  EXPECT_EQ(c.limits.max_body_bytes, 2 * 1024 * 1024);
  EXPECT_EQ(c.limits.max_queued_requests, 8);
  EXPECT_EQ(c.cors_origins, std::vector<std::string>{"https://app.example"});
  // [[models]] tables become the runtime's own ModelConfig, nothing in between.
  ASSERT_EQ(c.models.size(), 2u);
  EXPECT_EQ(c.models[0].id, "small");
  EXPECT_EQ(c.models[0].model_path, "/models/small.gguf");
  EXPECT_EQ(c.models[0].n_ctx, 2048);
  EXPECT_EQ(c.models[0].n_seq_max, 4);
  EXPECT_EQ(c.models[0].tier, runtime::Tier::kDisk);
  EXPECT_EQ(c.models[0].policy.min_tokens, 64);
  EXPECT_EQ(c.models[0].policy.boundary_align_tokens, 128);
  EXPECT_EQ(c.models[0].policy.cold_max_tokens, runtime::ModelSavePolicy{}.cold_max_tokens);
  EXPECT_EQ(c.models[1].id, "other");          // file stem
  EXPECT_FALSE(c.models[1].tier.has_value());  // the server's default tier
  EXPECT_EQ(c.ram.quota_bytes, 1024LL * 1024 * 1024);
  EXPECT_TRUE(c.disk.enabled);
  EXPECT_EQ(c.disk.dir, "/var/cache/hearth");
  EXPECT_EQ(c.writer_threads, 3);
  EXPECT_TRUE(c.pressure.enabled);
  EXPECT_EQ(c.pressure.evict_tiers, std::vector<std::string>{"ram"});
  EXPECT_TRUE(validate_config(c).ok());
}

TEST(ServerConfig, ErrorsNameTheKey) {
  EXPECT_NE(error_of("[server]\nport = \"80\"").find("server.port"), std::string::npos);
  EXPECT_NE(error_of("[server]\nprot = 80").find("server.prot"), std::string::npos);
  EXPECT_NE(error_of("bogus = 1").find("bogus"), std::string::npos);
  EXPECT_NE(error_of("[[models]]\npath = \"a.gguf\"\ncontext = -1").find("models[0].context"),
            std::string::npos);
  EXPECT_NE(error_of("[[models]]\nid = \"x\"").find("models[0].path"), std::string::npos);
  EXPECT_NE(error_of("[[models]]\npath = \"a\"\npolicy = { min_tokenz = 1 }")
                .find("models[0].policy.min_tokenz"),
            std::string::npos);
  EXPECT_NE(error_of("[tiers.disk]\nquota = \"lots\"").find("tiers.disk.quota"), std::string::npos);
  // Sizes no int64 holds are errors, not undefined casts (found by config_fuzz).
  for (const char* size : {"nan", "inf", "-inf", "1e30GiB", "9.3e18"}) {
    EXPECT_NE(
        error_of(std::string("[tiers.ram]\nquota = \"") + size + "\"").find("tiers.ram.quota"),
        std::string::npos)
        << size;
  }
  EXPECT_NE(error_of("[tiers.disk]\nquota = 5").find("tiers.disk.dir"), std::string::npos);
  EXPECT_NE(error_of("[pressure]\nsource = \"gpu\"").find("pressure.source"), std::string::npos);
  // The cache's scheduler evicts down to the low watermark: it must be positive.
  EXPECT_NE(error_of("[pressure]\nlow_watermark = 0.0").find("pressure.low_watermark"),
            std::string::npos);
  EXPECT_NE(error_of("[pressure]\nevict_tiers = []").find("pressure.evict_tiers"),
            std::string::npos);
  EXPECT_NE(error_of("[limits]\nmax_tokens = 0").find("limits.max_tokens"), std::string::npos);
  // Per-model values: the runtime's int32 fields are range-checked, never narrowed, and
  // an unknown tier is an error (not a default).
  EXPECT_NE(error_of("[[models]]\npath = \"a\"\ncontext = 4294967304").find("models[0].context"),
            std::string::npos);
  EXPECT_NE(
      error_of("[[models]]\npath = \"a\"\nn_seq_max = 4294967297").find("models[0].n_seq_max"),
      std::string::npos);
  EXPECT_NE(error_of("[[models]]\npath = \"a\"\nn_seq_max = 0").find("models[0].n_seq_max"),
            std::string::npos);
  EXPECT_NE(error_of("[[models]]\npath = \"a\"\ntier = \"bogus\"").find("models[0].tier"),
            std::string::npos);
  EXPECT_NE(error_of("[[models]]\npath = \"a\"\ncontext = 1.5").find("models[0].context"),
            std::string::npos);
  EXPECT_NE(error_of("[[models]]\npath = \"a\"\npolicy = { min_tokens = 2147483648 }")
                .find("models[0].policy.min_tokens"),
            std::string::npos);
  EXPECT_NE(error_of("[[models]]\npath = \"a\"\nid = \"../x\"").find("models[0].id"),
            std::string::npos);
  EXPECT_NE(error_of("[[models]]\npath = \"a\"\ncolour = 1").find("models[0].colour"),
            std::string::npos);
  // One queue per model now: the old server-wide gate fails with the way forward.
  EXPECT_NE(error_of("[limits]\nmax_concurrent_requests = 4").find("n_seq_max"), std::string::npos);
  EXPECT_NE(error_of("[server\nport=1").find("line 1"), std::string::npos);
}

// kv_budget: a size (bytes or "6GiB") through the one model-settings parser; a value
// that is not a size is an error naming the key.
TEST(ServerConfig, DeltaRowsDepth) {
  ServerConfig c;
  EXPECT_EQ(c.max_delta_depth, 8);  // on by default (docs/cache-design.md)
  ASSERT_TRUE(apply("[delta_rows]\nmax_depth = 0\n", c).ok());
  EXPECT_EQ(c.max_delta_depth, 0);
  ASSERT_TRUE(apply("[delta_rows]\nmax_depth = 3\n", c).ok());
  EXPECT_EQ(c.max_delta_depth, 3);
  EXPECT_NE(error_of("[delta_rows]\nmax_depth = 65\n").find("delta_rows.max_depth"),
            std::string::npos);
  EXPECT_NE(error_of("[delta_rows]\nmax_depth = -1\n").find("max_depth"), std::string::npos);
  EXPECT_NE(error_of("[delta_rows]\ndepth = 2\n").find("depth"), std::string::npos);
}

TEST(ServerConfig, ModelKvBudget) {
  ServerConfig c;
  ASSERT_TRUE(apply("[[models]]\npath = \"a.gguf\"\ncontext = 0\nkv_budget = \"6GiB\"\n"
                    "[[models]]\npath = \"b.gguf\"\nkv_budget = 1048576\n"
                    "[[models]]\npath = \"c.gguf\"\n",
                    c)
                  .ok());
  ASSERT_EQ(c.models.size(), 3u);
  EXPECT_EQ(c.models[0].kv_budget_bytes, 6ull << 30);
  EXPECT_EQ(c.models[0].n_ctx, 0);
  EXPECT_EQ(c.models[1].kv_budget_bytes, 1048576u);
  EXPECT_EQ(c.models[2].kv_budget_bytes, 0u);  // the engine's default
  for (const char* bad : {"\"lots\"", "-1", "1.5", "\"-2GiB\"", "\"inf\""}) {
    EXPECT_NE(error_of(std::string("[[models]]\npath = \"a\"\nkv_budget = ").append(bad))
                  .find("models[0].kv_budget"),
              std::string::npos)
        << bad;
  }
}

TEST(ServerConfig, FailedParseLeavesConfigUntouched) {
  ServerConfig c;
  c.port = 1234;
  EXPECT_FALSE(apply("[server]\nport = 99\nextra = 1", c).ok());
  EXPECT_EQ(c.port, 1234);
}

TEST(ServerConfig, ValidateCatchesCrossFieldErrors) {
  ServerConfig c;
  c.models = {*model_config_from_flag("/m/a.gguf"), *model_config_from_flag("a=/n/b.gguf")};
  Status s = validate_config(c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("duplicate model id 'a'"), std::string::npos);
  ServerConfig t;
  t.chat_template = "jinja2";
  EXPECT_NE(validate_config(t).message().find("chat_template"), std::string::npos);
}

// server.node_id names the node in X-Hearth-Node: a header value, so visible ASCII only.
TEST(ServerConfig, NodeId) {
  ServerConfig c;
  ASSERT_TRUE(apply("[server]\nnode_id = \"eu-1.node-2:8081\"", c).ok());
  EXPECT_EQ(c.node_id, "eu-1.node-2:8081");
  EXPECT_TRUE(validate_config(c).ok());
  EXPECT_NE(error_of("[server]\nnode_id = 7").find("server.node_id"), std::string::npos);
  for (const std::string& bad :
       {std::string("a b"), std::string("a\r\nX-Evil: 1"), std::string(129, 'n')}) {
    ServerConfig t;
    t.node_id = bad;
    const Status s = validate_config(t);
    EXPECT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.message().find("node_id"), std::string::npos) << s.message();
  }
}

TEST(ServerConfig, ModelFlagForms) {
  EXPECT_EQ(model_config_from_flag("/x/tiny-model.gguf")->id, "tiny-model");
  auto m = model_config_from_flag("chat=/x/y.gguf");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->id, "chat");
  EXPECT_EQ(m->model_path, "/x/y.gguf");
  EXPECT_EQ(m->n_seq_max, 4);
  // An '=' inside a directory name is part of the path, not an id separator.
  EXPECT_EQ(model_config_from_flag("/a=b/c.gguf")->model_path, "/a=b/c.gguf");
  // A file name that is no valid id becomes one; an explicit bad id is an error.
  EXPECT_EQ(model_config_from_flag("/x/my model (q4).gguf")->id, "my_model__q4_");
  // ID=PATH splits at the first '=' whatever the id holds, when it is a valid id.
  auto org = model_config_from_flag("Org/Model-7B:q4=/x/y.gguf");
  ASSERT_TRUE(org.ok());
  EXPECT_EQ(org->id, "Org/Model-7B:q4");
  EXPECT_EQ(org->model_path, "/x/y.gguf");
  auto odd = model_config_from_flag("a b=/x/y.gguf");  // no id: all of it is the path
  ASSERT_TRUE(odd.ok());
  EXPECT_EQ(odd->model_path, "a b=/x/y.gguf");
}

// kv_type: the KV element type per model ("f16" by default); anything else is an error
// naming the key. POST /hearth/models shares the parser (apply_model_setting).
TEST(ServerConfig, KvTypePerModel) {
  ServerConfig c;
  Status s = apply(R"([[models]]
path = "/m/a.gguf"
kv_type = "q8_0"
[[models]]
path = "/m/b.gguf"
kv_type = "q4_0"
[[models]]
path = "/m/c.gguf"
)",
                   c);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(c.models.size(), 3u);
  EXPECT_EQ(c.models[0].kv_type, KvType::kQ8_0);
  EXPECT_EQ(c.models[1].kv_type, KvType::kQ4_0);
  EXPECT_EQ(c.models[2].kv_type, KvType::kF16);
  EXPECT_NE(error_of("[[models]]\npath = \"a\"\nkv_type = \"q5_0\"").find("models[0].kv_type"),
            std::string::npos);
  EXPECT_NE(error_of("[[models]]\npath = \"a\"\nkv_type = 8").find("models[0].kv_type"),
            std::string::npos);
  runtime::ModelConfig m;
  const Status bad = apply_model_setting(m, "kv_type", std::string("F16"));
  EXPECT_NE(bad.message().find("kv_type"), std::string::npos);
  EXPECT_TRUE(apply_model_setting(m, "kv_type", std::string("f16")).ok());
}

// weights: where a model's weight matrices live ("copy" by default, "mapped" reads them
// in place); anything else is an error naming the key.
TEST(ServerConfig, WeightsPlacementPerModel) {
  ServerConfig c;
  Status s = apply(R"([[models]]
path = "/m/a.gguf"
weights = "mapped"
[[models]]
path = "/m/b.gguf"
weights = "copy"
[[models]]
path = "/m/c.gguf"
)",
                   c);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(c.models.size(), 3u);
  EXPECT_TRUE(c.models[0].weights_in_place);
  EXPECT_FALSE(c.models[1].weights_in_place);
  EXPECT_FALSE(c.models[2].weights_in_place);
  EXPECT_NE(error_of("[[models]]\npath = \"a\"\nweights = \"mmap\"").find("models[0].weights"),
            std::string::npos);
  EXPECT_NE(error_of("[[models]]\npath = \"a\"\nweights = true").find("models[0].weights"),
            std::string::npos);
}

TEST(ServerConfig, DefaultsAreSafe) {
  ServerConfig c;
  EXPECT_EQ(c.host, "127.0.0.1");
  EXPECT_TRUE(c.api_key.empty());
  EXPECT_TRUE(c.models_dir.empty());  // API model loading is off unless configured
}

}  // namespace
}  // namespace hearth::server

namespace hearth::server {
namespace {

TEST(ServerConfig, RemoteTierTableIsReadAndValidatedNamingTheField) {
  ServerConfig c;
  ASSERT_TRUE(apply("[tiers.remote]\nurl = \"redis://10.1.2.3:6380/2\"\n"
                    "ttl_s = 600\nchunk_bytes = \"256KiB\"\ntimeout_ms = 50\n",
                    c)
                  .ok());
  EXPECT_EQ(c.remote.url, "redis://10.1.2.3:6380/2");
  EXPECT_EQ(c.remote.ttl_s, 600u);
  EXPECT_EQ(c.remote.chunk_bytes, 256u * 1024u);
  EXPECT_EQ(c.remote.timeout_ms, 50u);
  EXPECT_NE(error_of("[tiers.remote]\nttl_s = 5").find("tiers.remote.url"), std::string::npos);
  EXPECT_NE(error_of("[tiers.remote]\nurl = \"http://x\"").find("remote.url"), std::string::npos);
  EXPECT_NE(
      error_of("[tiers.remote]\nurl = \"redis://x\"\nchunk_bytes = 10").find("remote.chunk_bytes"),
      std::string::npos);
  EXPECT_NE(error_of("[tiers.remote]\nurl = \"redis://x\"\npull = true").find("tiers.remote.pull"),
            std::string::npos);
}

}  // namespace
}  // namespace hearth::server
