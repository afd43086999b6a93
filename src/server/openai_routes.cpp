// OpenAI-compatible endpoints: /v1/completions, /v1/chat/completions,
// /v1/embeddings, /v1/models. Shapes follow the OpenAI API reference so the
// official SDKs work unchanged.
#include <chrono>
#include <cstring>
#include <utility>
#include <vector>

#include "server/chat_reply.h"
#include "server/http_util.h"
#include "server/logprobs_json.h"
#include "server/request_fields.h"
#include "server/tool_request.h"

namespace hearth::server {
namespace {

using nlohmann::json;

json usage_json(const GenerateStats& s) {
  json u = {{"prompt_tokens", s.prompt_tokens},
            {"completion_tokens", s.completion_tokens},
            {"total_tokens", s.prompt_tokens + s.completion_tokens},
            {"prompt_tokens_details", {{"cached_tokens", s.cached_tokens}}},
            // hearth's extension: how the prompt met the KV cache ("cold", "exact",
            // "resume", "partial", "sticky", "continuation"); clients that do not know it
            // ignore it.
            {"hearth", {{"cache_hit", s.cache_hit_kind}}}};
  // Speculative decoding's counts (llama-server's timings.draft_n / draft_n_accepted),
  // when the request drafted anything.
  if (s.draft_tokens > 0) {
    u["hearth"]["draft_n"] = s.draft_tokens;
    u["hearth"]["draft_n_accepted"] = s.draft_accepted;
  }
  return u;
}

json model_json(const ModelDescription& m) {
  return {
      {"id", m.id},
      {"object", "model"},
      {"created",
       std::chrono::duration_cast<std::chrono::seconds>(m.loaded_at.time_since_epoch()).count()},
      {"owned_by", "hearth"},
      {"context_length", m.context_size},
      // Where its layers run: "cpu" or the GPU ("cuda:0 NVIDIA H200, sm_90"), and how
      // many of them run there (docs/gpu.md).
      {"device", m.device},
      {"n_gpu_layers", m.n_gpu_layers}};
}

ApiError generation_error(const Status& status) {
  return from_status(status);
}

// The prompt text `echo` puts before a completion's output: the prompt as sent, or the
// text of its token ids.
Result<std::string> echo_text(ServerContext& ctx, const TextRequest& tr,
                              const GenerationPlan& plan) {
  if (!tr.prompt_tokens) return tr.prompt;
  return ctx.service.detokenize(plan.model.id, *tr.prompt_tokens);
}

// Handles both text endpoints; `chat` picks the request and response shapes.
void handle_text(ServerContext& ctx, bool chat, const httplib::Request& req,
                 httplib::Response& res) {
  json body;
  if (auto e = parse_json_object(req.body, body)) return reply_error(res, *e);
  TextRequest tr;
  if (auto e = chat ? parse_chat_request(body, tr) : parse_completion_request(body, tr)) {
    return reply_error(res, *e);
  }
  if (chat) keep_tool_key_order(req.body, /*anthropic=*/false, tr);
  if (auto e = session_header(req.get_header_value("X-Session-Id"), tr))
    return reply_error(res, *e);
  auto plan = std::make_shared<GenerationPlan>();
  if (auto e = plan_generation(ctx, tr, *plan)) return reply_error(res, *e);
  std::string echo;
  if (tr.echo) {
    auto text = echo_text(ctx, tr, *plan);
    if (!text.ok()) return reply_error(res, from_status(text.status(), "prompt"));
    echo = std::move(text).value();
  }
  std::shared_ptr<Generation> generation = submit_generation(ctx, *plan, res, ErrorShape::kOpenAi);
  if (!generation) return;

  const std::string id = make_id(chat ? "chatcmpl-" : "cmpl-");
  const int64_t created = unix_now();
  const std::string object = chat ? "chat.completion" : "text_completion";
  const bool logprobs = plan->request.logprobs >= 0;
  // A choice's logprobs object; offset: the completion text before these tokens.
  auto logprobs_json = [&ctx, plan, chat](const std::vector<TokenLogprobs>& lps,
                                          int64_t offset) -> Result<json> {
    HEARTH_ASSIGN_OR_RETURN(TokenBytes bytes, token_bytes_for(ctx.service, plan->model.id, lps));
    return chat ? chat_logprobs_json(lps, bytes) : completion_logprobs_json(lps, bytes, offset);
  };

  if (!tr.stream) {
    const auto alive = watch_connection(req);
    GenerationOutcome out = run_generation_pieces(
        ctx, *plan, *generation, [&alive](const GeneratedPiece& p) { return alive(p.text); });
    if (out.client_gone) {
      res.status = kClientClosedRequest;  // nobody reads the reply; the metrics do
      return;
    }
    if (!out.error.ok()) return reply_error(res, generation_error(out.error));
    json choices = json::array();
    for (size_t i = 0; i < out.choices.size(); ++i) {
      const ChoiceOutcome& c = out.choices[i];
      json choice = {{"index", i}, {"logprobs", nullptr}, {"finish_reason", c.finish_reason}};
      if (logprobs) {
        auto lp = logprobs_json(c.logprobs, static_cast<int64_t>(echo.size()));
        if (!lp.ok()) return reply_error(res, generation_error(lp.status()));
        choice["logprobs"] = std::move(lp).value();
      }
      if (chat) {
        const ParsedOutput parsed =
            parse_output(plan->output, c.text, [] { return make_id("call_"); });
        choice["message"] = openai_message(parsed);
        choice["finish_reason"] =
            openai_finish_reason(c.finish_reason, static_cast<int32_t>(parsed.calls.size()));
      } else {
        choice["text"] = echo + c.text;
      }
      choices.push_back(std::move(choice));
    }
    json reply = {{"id", id},
                  {"object", object},
                  {"created", created},
                  {"model", plan->model.id},
                  {"system_fingerprint", nullptr},
                  {"choices", std::move(choices)},
                  {"usage", usage_json(out.stats)},
                  {"finish_key", finish_key_json(out.stats)}};
    add_session_id(reply, plan->request);
    return reply_json(res, reply);
  }

  const bool include_usage = tr.include_usage;
  const std::string endpoint = chat ? "/v1/chat/completions" : "/v1/completions";
  start_sse(res, ctx, endpoint,
            [&ctx, plan, generation, chat, include_usage, id, created, echo, logprobs,
             logprobs_json](const std::function<bool(const std::string&)>& write) {
              const std::string chunk_object = chat ? "chat.completion.chunk" : "text_completion";
              const auto n = static_cast<size_t>(plan->request.n);
              auto chunk = [&](size_t index, json choice_fields, const json& finish) {
                json choice = {{"index", index}, {"logprobs", nullptr}, {"finish_reason", finish}};
                for (auto& [k, v] : choice_fields.items()) choice[k] = v;
                return json{{"id", id},
                            {"object", chunk_object},
                            {"created", created},
                            {"model", plan->model.id},
                            {"system_fingerprint", nullptr},
                            {"choices", json::array({choice})}};
              };
              for (size_t i = 0; i < n; ++i) {
                json first = chat ? json{{"delta", {{"role", "assistant"}, {"content", ""}}}}
                                  : json{{"text", echo}};
                if ((chat || !echo.empty()) && !write(sse_event(chunk(i, first, nullptr)))) return;
              }
              // One output parser per choice: content, reasoning and tool calls of each.
              std::vector<OutputParser> parsers;
              for (size_t i = 0; i < n; ++i)
                parsers.emplace_back(plan->output, [] { return make_id("call_"); });
              // Sends a choice's parsed deltas; `lp` (may be null) rides on the first chunk, or
              // on an empty delta when the parser held the text back.
              auto send_deltas = [&](size_t i, const std::vector<OutputDelta>& deltas, json lp) {
                for (const OutputDelta& d : deltas) {
                  for (json& delta : openai_deltas(d)) {
                    json c = chunk(i, {{"delta", std::move(delta)}}, nullptr);
                    if (!lp.is_null()) c["choices"][0]["logprobs"] = std::exchange(lp, nullptr);
                    if (!write(sse_event(c))) return false;
                  }
                }
                if (lp.is_null()) return true;
                json c = chunk(i, {{"delta", json::object()}}, nullptr);
                c["choices"][0]["logprobs"] = std::move(lp);
                return write(sse_event(c));
              };
              std::vector<int64_t> offsets(n, static_cast<int64_t>(echo.size()));
              GenerationOutcome out =
                  run_generation_pieces(ctx, *plan, *generation, [&](const GeneratedPiece& piece) {
                    const auto i = static_cast<size_t>(piece.index);
                    if (i >= n) return false;
                    json lp = nullptr;
                    if (logprobs) {
                      auto r = logprobs_json(piece.logprobs, offsets[i]);
                      if (!r.ok()) return false;
                      lp = std::move(r).value();
                      for (const auto& b : lp.value("tokens", json::array()))
                        offsets[i] += static_cast<int64_t>(b.get<std::string>().size());
                    }
                    if (chat) return send_deltas(i, parsers[i].push(piece.text), std::move(lp));
                    json c = chunk(i, {{"text", piece.text}}, nullptr);
                    if (!lp.is_null()) c["choices"][0]["logprobs"] = std::move(lp);
                    return write(sse_event(c));
                  });
              if (out.client_gone) return;
              if (!out.error.ok()) {
                write(sse_event(json::parse(openai_error_body(generation_error(out.error)))));
                write("data: [DONE]\n\n");
                return;
              }
              for (size_t i = 0; i < out.choices.size(); ++i) {
                if (chat && i < n && !send_deltas(i, parsers[i].finish(), nullptr)) return;
                json last = chat ? json{{"delta", json::object()}} : json{{"text", ""}};
                const std::string finish = chat && i < n
                                               ? openai_finish_reason(out.choices[i].finish_reason,
                                                                      parsers[i].tool_call_count())
                                               : out.choices[i].finish_reason;
                json last_chunk = chunk(i, last, finish);
                last_chunk["finish_key"] = finish_key_json(out.stats);
                add_session_id(last_chunk, plan->request);
                if (!write(sse_event(last_chunk))) return;
              }
              if (include_usage) {
                json u = {{"id", id},
                          {"object", chunk_object},
                          {"created", created},
                          {"model", plan->model.id},
                          {"system_fingerprint", nullptr},
                          {"choices", json::array()},
                          {"usage", usage_json(out.stats)}};
                if (!write(sse_event(u))) return;
              }
              write("data: [DONE]\n\n");
            });
}

std::string base64_floats(const std::vector<float>& v) {
  static const char* table = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes(v.size() * sizeof(float), '\0');
  std::memcpy(bytes.data(), v.data(), bytes.size());  // little-endian float32, as OpenAI sends
  std::string out;
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t n =
        (uint8_t(bytes[i]) << 16) | (uint8_t(bytes[i + 1]) << 8) | uint8_t(bytes[i + 2]);
    out += table[(n >> 18) & 63];
    out += table[(n >> 12) & 63];
    out += table[(n >> 6) & 63];
    out += table[n & 63];
  }
  if (i < bytes.size()) {
    uint32_t n = uint8_t(bytes[i]) << 16;
    if (i + 1 < bytes.size()) n |= uint8_t(bytes[i + 1]) << 8;
    out += table[(n >> 18) & 63];
    out += table[(n >> 12) & 63];
    out += i + 1 < bytes.size() ? table[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

// Inputs one /v1/embeddings request may carry (OpenAI's limit is 2048; the inputs of a
// request are evaluated together on the model's worker, so the bound keeps one request
// from holding the worker for long).
constexpr size_t kMaxEmbeddingInputs = 256;

void handle_embeddings(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  json body;
  if (auto e = parse_json_object(req.body, body)) return reply_error(res, *e);
  if (auto e = check_request_fields(body, kEmbeddingsApi)) return reply_error(res, *e);
  std::string model_id;
  if (body.contains("model") && !body["model"].is_null()) {
    if (!body["model"].is_string())
      return reply_error(res, invalid_request("'model' must be a string", "model", "invalid_type"));
    model_id = body["model"].get<std::string>();
  }
  bool base64 = false;
  if (body.contains("encoding_format") && !body["encoding_format"].is_null()) {
    const json& f = body["encoding_format"];
    if (f != "float" && f != "base64") {
      return reply_error(res, invalid_request("'encoding_format' must be \"float\" or \"base64\"",
                                              "encoding_format", "invalid_value"));
    }
    base64 = f == "base64";
  }
  if (!body.contains("input"))
    return reply_error(res, invalid_request("'input' is required", "input", "missing_field"));
  ModelDescription model;
  if (auto e = resolve_model(ctx, model_id, model)) return reply_error(res, *e);
  runtime::EmbeddingOptions opts;
  // dimensions: the first N values of each vector, then normalised (Matryoshka
  // shortening, as OpenAI's text-embedding-3; meaningful for models trained for it).
  if (body.contains("dimensions") && !body["dimensions"].is_null()) {
    const json& d = body["dimensions"];
    if (!d.is_number_integer())
      return reply_error(
          res, invalid_request("'dimensions' must be an integer", "dimensions", "invalid_type"));
    if (d.get<int64_t>() < 1 || d.get<int64_t>() > model.embedding_dim)
      return reply_error(
          res,
          invalid_request("'dimensions' must be in [1, " + std::to_string(model.embedding_dim) +
                              "], the embedding width of model '" + model.id + "'",
                          "dimensions", "invalid_value"));
    opts.dimensions = static_cast<int32_t>(d.get<int64_t>());
  }
  if (body.contains("pooling") && !body["pooling"].is_null()) {
    const json& p = body["pooling"];
    const auto pooling = p.is_string() ? pooling_from_name(p.get<std::string>()) : std::nullopt;
    if (!pooling)
      return reply_error(res, invalid_request("'pooling' must be \"mean\", \"cls\", \"last\" or "
                                              "\"none\"",
                                              "pooling", "invalid_value"));
    opts.pooling = *pooling;
  }
  if (body.contains("embd_normalize") && !body["embd_normalize"].is_null()) {
    const json& n = body["embd_normalize"];
    if (!n.is_number_integer() || n.get<int64_t>() < -1 || n.get<int64_t>() > 1000)
      return reply_error(res, invalid_request("'embd_normalize' must be an integer in [-1, 1000] "
                                              "(-1 none, 0 max-abs, 1 taxicab, 2 euclidean, p)",
                                              "embd_normalize", "invalid_value"));
    opts.normalize = static_cast<int32_t>(n.get<int64_t>());
  }

  // Inputs: texts (tokenized with the model's specials) or token arrays (used as given).
  const json& input = body["input"];
  std::vector<runtime::EmbeddingInput> inputs;
  auto add_tokens = [&](const json& arr) -> std::optional<ApiError> {
    std::vector<TokenId> t;
    for (const auto& x : arr) {
      if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() >= model.n_vocab) {
        return invalid_request("'input' token arrays must hold token ids in [0, " +
                                   std::to_string(model.n_vocab) + ")",
                               "input", "invalid_value");
      }
      t.push_back(static_cast<TokenId>(x.get<int64_t>()));
    }
    inputs.push_back({std::string(), std::move(t)});
    return std::nullopt;
  };
  std::optional<ApiError> err;
  if (input.is_string()) {
    inputs.push_back({input.get<std::string>(), std::nullopt});
  } else if (input.is_array() && !input.empty() && input[0].is_number_integer()) {
    err = add_tokens(input);
  } else if (input.is_array() && !input.empty()) {
    for (const auto& x : input) {
      if (x.is_string())
        inputs.push_back({x.get<std::string>(), std::nullopt});
      else if (x.is_array())
        err = add_tokens(x);
      else
        err = invalid_request("'input' must be a string, an array of strings, or token arrays",
                              "input", "invalid_type");
      if (err) break;
    }
  } else {
    err = invalid_request("'input' must be a non-empty string or array", "input", "invalid_type");
  }
  if (err) return reply_error(res, *err);
  if (inputs.size() > kMaxEmbeddingInputs)
    return reply_error(res, invalid_request("'input' may hold at most " +
                                                std::to_string(kMaxEmbeddingInputs) + " items",
                                            "input", "invalid_value"));
  for (size_t i = 0; i < inputs.size(); ++i) {
    int64_t n = 0;
    if (inputs[i].tokens) {
      n = static_cast<int64_t>(inputs[i].tokens->size());
    } else {
      auto tok = ctx.service.tokenize(model.id, inputs[i].text, /*add_special=*/true, {});
      if (!tok.ok()) return reply_error(res, from_status(tok.status(), "input"));
      n = static_cast<int64_t>(tok.value().size());
    }
    if (n == 0)
      return reply_error(res, invalid_request("'input' item " + std::to_string(i) + " is empty",
                                              "input", "invalid_value"));
    if (model.context_size > 0 && n > model.context_size) {
      return reply_error(
          res,
          invalid_request("'input' item " + std::to_string(i) + " is " + std::to_string(n) +
                              " tokens, above the context of " + std::to_string(model.context_size),
                          "input", "context_length_exceeded"));
    }
  }
  auto result = ctx.service.embed(model.id, inputs, opts);
  if (!result.ok()) return reply_error(res, from_status(result.status(), "input"));
  const runtime::EmbeddingResult& r = result.value();
  // Pooling "none": `embedding` is an array of per-token vectors (base64: one string each).
  auto vector_json = [&](const float* v, size_t n) -> json {
    if (base64) return base64_floats(std::vector<float>(v, v + n));
    return std::vector<float>(v, v + n);
  };
  const size_t w = static_cast<size_t>(r.width);
  json data = json::array();
  int64_t prompt_tokens = 0;
  for (size_t i = 0; i < r.vectors.size(); ++i) {
    prompt_tokens += r.n_tokens[i];
    json e = {{"object", "embedding"}, {"index", i}};
    const std::vector<float>& v = r.vectors[i];
    if (r.pooling == Pooling::kNone) {
      json rows = json::array();
      for (size_t at = 0; at + w <= v.size(); at += w)
        rows.push_back(vector_json(v.data() + at, w));
      e["embedding"] = std::move(rows);
    } else {
      e["embedding"] = vector_json(v.data(), v.size());
    }
    data.push_back(std::move(e));
  }
  reply_json(res, {{"object", "list"},
                   {"data", data},
                   {"model", model.id},
                   {"usage", {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}}}});
}

}  // namespace

void register_openai_routes(httplib::Server& http, ServerContext& ctx) {
  post_json(http, ctx, "/v1/completions",
            with_metrics(ctx, "/v1/completions", [&ctx](const auto& req, auto& res) {
              handle_text(ctx, false, req, res);
            }));
  post_json(http, ctx, "/v1/chat/completions",
            with_metrics(ctx, "/v1/chat/completions",
                         [&ctx](const auto& req, auto& res) { handle_text(ctx, true, req, res); }));
  post_json(http, ctx, "/v1/embeddings",
            with_metrics(ctx, "/v1/embeddings",
                         [&ctx](const auto& req, auto& res) { handle_embeddings(ctx, req, res); }));
  http.Get("/v1/models", with_metrics(ctx, "/v1/models", [&ctx](const auto&, auto& res) {
             json data = json::array();
             for (const auto& m : ctx.service.list_models()) data.push_back(model_json(m));
             reply_json(res, {{"object", "list"}, {"data", data}});
           }));
  http.Get(R"(/v1/models/(.+))",
           with_metrics(ctx, "/v1/models/{id}", [&ctx](const auto& req, auto& res) {
             ModelDescription m;
             if (auto e = resolve_model(ctx, req.matches[1].str(), m)) return reply_error(res, *e);
             reply_json(res, model_json(m));
           }));
}

}  // namespace hearth::server
