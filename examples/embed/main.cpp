// Embeds hearth's runtime: loads a GGUF model, completes a prompt twice with the KV
// cache on the RAM tier, prints the reply and whether the second, identical request
// was served from the cache. Exits 0 only when it was (tests/install_embed.cmake runs
// this against an installed hearth).
//
//   embed <model.gguf> [prompt]
#include <hearth/runtime/runtime.h>

#include <cstdio>
#include <string>

namespace rt = hearth::runtime;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <model.gguf> [prompt]\n", argv[0]);
    return 2;
  }
  // Long enough for a cache row: a save keeps the prompt minus boundary_trim_tokens,
  // rounded down to boundary_align_tokens.
  const std::string prompt =
      argc > 2 ? argv[2]
               : "Once upon a time, there was a little girl named Lily. She loved to play "
                 "outside in the sun. One day, she saw a big red ball in the park. She ran "
                 "to get it, but a dog took it. Lily was sad, so her mom said";

  rt::RuntimeOptions options;
  options.cache.ram_bytes = 64ull << 20;
  auto runtime = rt::Runtime::create(options);
  if (!runtime.ok()) {
    std::fprintf(stderr, "runtime: %s\n", runtime.status().to_string().c_str());
    return 1;
  }

  rt::ModelConfig config;
  config.model_path = argv[1];
  config.n_ctx = 512;
  config.tier = rt::Tier::kRam;
  // A fresh sequence for each request, so that a hit comes from the cache rather than
  // from KV cells the first request left resident in its sequence.
  config.slot_affinity = false;
  // The defaults only save prompts of 512 tokens or more; this demo's is short.
  config.policy.min_tokens = 16;
  config.policy.cold_min_tokens = 16;
  config.policy.boundary_trim_tokens = 8;
  config.policy.boundary_align_tokens = 16;
  auto id = (*runtime)->load_model(config);
  if (!id.ok()) {
    std::fprintf(stderr, "load: %s\n", id.status().to_string().c_str());
    return 1;
  }

  rt::RequestParams params;
  params.response_tokens = 24;
  params.sampling.temperature = 0;  // greedy: both replies are the same
  auto first = (*runtime)->complete(*id, prompt, params);
  if (!first.ok()) {
    std::fprintf(stderr, "complete: %s\n", first.status().to_string().c_str());
    return 1;
  }
  (*runtime)->cache_flush();  // the first request's saves are published
  auto second = (*runtime)->complete(*id, prompt, params);
  if (!second.ok()) {
    std::fprintf(stderr, "complete: %s\n", second.status().to_string().c_str());
    return 1;
  }

  std::printf("reply: %s\n", first->reply.c_str());
  const bool hit = second->cache_hit_kind != rt::CacheHitKind::kCold;
  std::printf("second request: %s (%s, %lld tokens restored)\n", hit ? "cache hit" : "cache miss",
              rt::cache_hit_kind_name(second->cache_hit_kind),
              static_cast<long long>(second->cache_delta.read));
  std::printf("replies identical: %s\n", first->reply == second->reply ? "yes" : "no");
  return hit && first->reply == second->reply ? 0 : 1;
}
