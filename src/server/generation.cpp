#include "server/generation.h"

#include <algorithm>

#include "hearth/log.h"
#include "server/chat_template.h"
#include "server/jinja_chat.h"

namespace hearth::server {

int64_t steady_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::optional<ApiError> resolve_model(ServerContext& ctx, const std::string& id,
                                      ModelDescription& out) {
  if (id.empty()) {
    auto models = ctx.service.list_models();
    if (models.empty()) {
      ApiError e = invalid_request("no model is loaded", "model", "model_not_found");
      e.http_status = 404;
      e.type = "not_found_error";
      return e;
    }
    out = models.front();
    return std::nullopt;
  }
  auto info = ctx.service.model_info(id);
  if (!info.ok()) {
    ApiError e = from_status(info.status(), "model");
    if (info.status().code() == ErrorCode::kNotFound) {
      e.message = "model '" + id + "' not found (GET /v1/models lists the loaded models)";
      e.code = "model_not_found";
    }
    return e;
  }
  out = std::move(info).value();
  return std::nullopt;
}

namespace {

// The hard-coded family for a model without a Jinja template (or a forced family).
ChatFamily pick_family(ServerContext& ctx, const ModelDescription& model) {
  if (!ctx.config.chat_template.empty()) {
    if (auto f = chat_family_from_name(ctx.config.chat_template)) return *f;
  }
  if (auto f = detect_chat_family(model.chat_template)) return *f;
  std::lock_guard<std::mutex> lock(ctx.warned_mu);
  if (ctx.warned_template_models.insert(model.id).second) {
    log::warn("model '" + model.id + "': " +
              (model.chat_template.empty() ? std::string("no tokenizer.chat_template")
                                           : std::string("unrecognised tokenizer.chat_template")) +
              "; using chatml (override with --chat-template NAME)");
  }
  return ChatFamily::kChatml;
}

// Forwards the service's text to the client (stop strings were already applied by the
// runtime: nothing of a stop string ever arrives here).
class StreamingSink : public GenerateSink {
 public:
  StreamingSink(ServerContext& ctx, const PieceEmitter& emit, GenerationOutcome& out,
                std::chrono::steady_clock::time_point start)
      : ctx_(ctx), emit_(emit), out_(out), start_(start) {}

  bool on_piece(const GeneratedPiece& piece) override {
    const auto now = std::chrono::steady_clock::now();
    if (out_.ttft_seconds < 0)
      out_.ttft_seconds = std::chrono::duration<double>(now - start_).count();
    // Inter-token latency as the client sees it, measured on the first choice (with n > 1
    // the choices advance in the same steps).
    if (piece.index == 0 && !piece.tokens.empty()) {
      if (has_last_token_) {
        const double gap = std::chrono::duration<double>(now - last_token_at_).count();
        out_.inter_token_seconds.insert(out_.inter_token_seconds.end(), piece.tokens.size(),
                                        gap / static_cast<double>(piece.tokens.size()));
      }
      last_token_at_ = now;
      has_last_token_ = true;
    }
    const auto index = static_cast<size_t>(std::max(piece.index, 0));
    if (out_.choices.size() <= index) out_.choices.resize(index + 1);
    ChoiceOutcome& c = out_.choices[index];
    c.text += piece.text;
    c.tokens.insert(c.tokens.end(), piece.tokens.begin(), piece.tokens.end());
    c.logprobs.insert(c.logprobs.end(), piece.logprobs.begin(), piece.logprobs.end());
    if ((!piece.text.empty() || !piece.logprobs.empty()) && !emit_(piece)) {
      out_.client_gone = true;
      return false;
    }
    if (ctx_.shutting_down.load() && steady_now_ms() >= ctx_.shutdown_deadline_ms.load()) {
      return false;
    }
    return true;
  }

 private:
  ServerContext& ctx_;
  const PieceEmitter& emit_;
  GenerationOutcome& out_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_token_at_;
  bool has_last_token_ = false;
};

// Refuses, before tokenizing, text too long for the context whatever its tokens: none
// stands for more input bytes than the longest stored token text (byte-level BPE and
// SentencePiece store escaped forms, "Ġ" or "<0x0A>", never shorter than the bytes they
// cover; an unknown character is one token for at most 4 bytes). So text over
// context * that many bytes has more than `context` tokens, and an 8 MiB prompt is
// answered without tokenizing 8 MiB. Shorter text is tokenized and counted exactly.
std::optional<ApiError> check_prompt_bytes(const ModelDescription& model, size_t text_bytes,
                                           const std::string& field) {
  if (model.max_token_bytes <= 0 || model.context_size <= 0) return std::nullopt;
  const auto per_token = static_cast<uint64_t>(std::max<int64_t>(model.max_token_bytes, 4));
  const auto bound = static_cast<uint64_t>(model.context_size) * per_token;
  if (text_bytes <= bound) return std::nullopt;
  return invalid_request("'" + field + "' is " + std::to_string(text_bytes) +
                             " bytes, more than the context of model '" + model.id + "' (" +
                             std::to_string(model.context_size) +
                             " tokens) can hold; shorten the prompt",
                         field, "context_length_exceeded");
}

// The built-in families render role and content only: what they cannot express is an
// error naming the field, never dropped.
std::optional<ApiError> check_builtin_family_request(const TextRequest& req,
                                                     const ModelDescription& model) {
  const std::string why = model.chat_template.empty()
                              ? "model '" + model.id + "' has no Jinja chat template"
                              : std::string("a built-in chat format is forced (--chat-template)");
  if (!req.tools.empty()) {
    return invalid_request("'tools': " + why + " and the built-in formats cannot express tools",
                           "tools", "tools_not_supported");
  }
  for (size_t i = 0; i < req.messages.size(); ++i) {
    const ChatMessage& m = req.messages[i];
    if (m.role == "tool" || !m.tool_calls.empty()) {
      const std::string field = "messages[" + std::to_string(i) + "]";
      return invalid_request("'" + field + "': " + why +
                                 " and the built-in formats cannot express tool calls or results",
                             field, "tools_not_supported");
    }
  }
  // Thinking switched off (enable_thinking false, Anthropic thinking disabled) is what a
  // built-in format does anyway; any other variable would go unread.
  const bool only_thinking_off = req.template_kwargs.size() == 1 &&
                                 req.template_kwargs.contains("enable_thinking") &&
                                 req.template_kwargs["enable_thinking"] == false;
  if (!req.template_kwargs.empty() && !only_thinking_off) {
    return invalid_request(
        "'chat_template_kwargs': " + why + ", so there is no template to pass variables to",
        "chat_template_kwargs", "invalid_value");
  }
  return std::nullopt;
}

// The prompt ends inside an open think block (DeepSeek-R1 distills and Qwen3 open it in
// the generation prompt), so the reply starts as reasoning.
bool ends_inside_think(std::string_view text) {
  size_t end = text.size();
  while (end > 0 && (text[end - 1] == '\n' || text[end - 1] == ' ' || text[end - 1] == '\r' ||
                     text[end - 1] == '\t'))
    --end;
  return text.substr(0, end).ends_with(kThinkOpen);
}

// The runtime's budget: the family's tags as this model tokenizes them (control tokens
// where the vocabulary has them).
Result<runtime::ThinkingBudget> thinking_budget(ServerContext& ctx, const ModelDescription& model,
                                                int64_t budget, bool starts_inside) {
  runtime::ThinkingBudget b;
  b.budget = static_cast<int32_t>(budget);
  b.starts_inside = starts_inside;
  const std::string open(kThinkOpen), close(kThinkClose);
  HEARTH_ASSIGN_OR_RETURN(
      b.open, ctx.service.tokenize(model.id, open, false, special_ranges_for(open, true)));
  HEARTH_ASSIGN_OR_RETURN(
      b.close, ctx.service.tokenize(model.id, close, false, special_ranges_for(close, true)));
  return b;
}

}  // namespace

std::optional<ApiError> plan_generation(ServerContext& ctx, const TextRequest& req,
                                        GenerationPlan& plan) {
  if (auto e = resolve_model(ctx, req.model, plan.model)) return e;
  const auto& model = plan.model;
  std::vector<TokenId> tokens;
  if (req.prompt_tokens) {
    tokens = *req.prompt_tokens;
    for (TokenId t : tokens) {
      if (t < 0 || (model.n_vocab > 0 && t >= model.n_vocab)) {
        return invalid_request("'prompt' holds token id " + std::to_string(t) +
                                   " outside the vocabulary (size " +
                                   std::to_string(model.n_vocab) + ")",
                               "prompt", "invalid_token_id");
      }
    }
  } else {
    // A text prompt is user text: no control tokens. A chat prompt gets them from its
    // template's text only, never from what the messages say.
    RenderedChat rendered{req.prompt, {}};
    if (req.is_chat && ctx.config.chat_template.empty() && !model.chat_template.empty()) {
      // The model's own template, rendered as transformers would.
      if (!req.tools.empty() && !template_supports_tools(model.chat_template)) {
        return invalid_request("'tools': the chat template of model '" + model.id +
                                   "' does not support tools (it never reads `tools`)",
                               "tools", "tools_not_supported");
      }
      ChatRenderOptions options;
      if (!req.tools.empty()) options.tools = req.tools_json;
      options.kwargs = req.template_kwargs;
      auto r = render_jinja_chat(model.chat_template, req.messages,
                                 {model.bos_text, model.eos_text, model.add_bos}, options);
      if (!r.ok()) {
        return invalid_request("the chat template of model '" + model.id +
                                   "' failed on these messages: " + r.status().message(),
                               "messages", "invalid_chat_template");
      }
      plan.chat_family = "jinja";
      rendered = std::move(r).value();
      if (!req.tools.empty() && req.tool_choice.mode != ToolChoice::Mode::kNone) {
        plan.output.tools = detect_tool_syntax(model.chat_template);
        plan.tool_grammar = tool_call_grammar(plan.output.tools, req.tools, req.tool_choice,
                                              req.parallel_tool_calls);
      }
    } else if (req.is_chat) {
      if (auto e = check_builtin_family_request(req, model)) return e;
      const ChatFamily family = pick_family(ctx, model);
      plan.chat_family = chat_family_name(family);
      rendered = render_chat(family, req.messages);
    }
    if (req.is_chat) {
      plan.output.parallel_tool_calls = req.parallel_tool_calls;
      plan.output.starts_in_reasoning = ends_inside_think(rendered.text);
      if (req.thinking_budget) {
        auto b = thinking_budget(ctx, model, *req.thinking_budget, plan.output.starts_in_reasoning);
        if (!b.ok()) return from_status(b.status(), "thinking_budget_tokens");
        plan.request.thinking = std::move(b).value();
      }
    }
    if (auto e = check_prompt_bytes(model, rendered.text.size(), req.prompt_field)) return e;
    auto tok = ctx.service.tokenize(model.id, rendered.text, /*add_special=*/true,
                                    rendered.special_ranges);
    if (!tok.ok()) return from_status(tok.status(), req.prompt_field);
    tokens = std::move(tok).value();
  }
  if (tokens.empty()) {
    return invalid_request("'" + req.prompt_field + "' is empty", req.prompt_field,
                           "invalid_value");
  }
  const int64_t n_prompt = static_cast<int64_t>(tokens.size());
  const int64_t context = model.context_size > 0 ? model.context_size : INT64_MAX;
  if (n_prompt >= context) {
    ApiError e = invalid_request(
        "'" + req.prompt_field + "' is " + std::to_string(n_prompt) + " tokens, but model '" +
            model.id + "' has a context of " + std::to_string(context) +
            " tokens (room is needed for at least one generated token); shorten the prompt",
        req.prompt_field, "context_length_exceeded");
    return e;
  }
  const int64_t room = context - n_prompt;
  int64_t max_tokens = 0;
  if (req.max_tokens) {
    max_tokens = *req.max_tokens;
    if (max_tokens > ctx.config.limits.max_tokens) {
      return invalid_request("'max_tokens' is " + std::to_string(max_tokens) +
                                 ", above this server's limit of " +
                                 std::to_string(ctx.config.limits.max_tokens),
                             "max_tokens", "invalid_value");
    }
    if (max_tokens > room) {
      return invalid_request("'max_tokens' (" + std::to_string(max_tokens) + ") plus the prompt (" +
                                 std::to_string(n_prompt) +
                                 " tokens) exceeds the context of model '" + model.id + "' (" +
                                 std::to_string(context) + " tokens)",
                             "max_tokens", "context_length_exceeded");
    }
  } else {
    max_tokens = std::min(room, ctx.config.limits.max_tokens);
  }
  plan.request.model = model.id;
  plan.request.prompt = std::move(tokens);
  plan.request.max_tokens = max_tokens;
  plan.request.sampling = req.sampling;
  // Tool calls under a grammar, so they always parse: lazy (free text until the family's
  // trigger) for tool_choice auto, from the first token for required / a named tool.
  if (plan.tool_grammar && plan.request.sampling.grammar.empty()) {
    // A tool schema outside the grammar's JSON Schema subset: required / named calls
    // cannot be enforced (400 naming tools); auto calls are parsed from the text as is.
    auto g = tool_call_gbnf(*plan.tool_grammar, req.parallel_tool_calls);
    if (!g.ok() && !plan.tool_grammar->lazy) return from_status(g.status(), "tools");
    if (g.ok()) {
      plan.request.sampling.grammar = std::move(g).value();
      if (plan.tool_grammar->lazy) {
        plan.request.sampling.grammar_triggers = {plan.tool_grammar->trigger};
      }
    }
  }
  plan.request.stop = req.stop;
  plan.request.parent_key = req.parent_key;
  plan.request.cache_prompt = req.cache_prompt;
  plan.request.session_id = req.session_id;
  plan.request.speculative = req.speculative;
  plan.request.lora = req.lora;
  plan.request.n = req.n;
  plan.request.logprobs = req.logprobs;
  for (const auto& [id, bias] : req.sampling.logit_bias) {
    if (model.n_vocab > 0 && id >= model.n_vocab)
      return invalid_request("'logit_bias' holds token id " + std::to_string(id) +
                                 " outside the vocabulary of model '" + model.id + "' (size " +
                                 std::to_string(model.n_vocab) + ")",
                             "logit_bias", "invalid_token_id");
  }
  if (req.n > model.n_seq_max)
    return invalid_request("'n' is " + std::to_string(req.n) + ", but model '" + model.id +
                               "' runs at most " + std::to_string(model.n_seq_max) +
                               " sequences at once (n_seq_max)",
                           "n", "invalid_value");
  return std::nullopt;
}

GenerationOutcome run_generation(ServerContext& ctx, const GenerationPlan& plan,
                                 Generation& generation,
                                 const std::function<bool(const std::string&)>& emit) {
  return run_generation_pieces(ctx, plan, generation, [&emit](const GeneratedPiece& piece) {
    return piece.index != 0 || piece.text.empty() || emit(piece.text);
  });
}

GenerationOutcome run_generation_pieces(ServerContext& ctx, const GenerationPlan& plan,
                                        Generation& generation, const PieceEmitter& emit) {
  GenerationOutcome out;
  const auto start = std::chrono::steady_clock::now();
  StreamingSink sink(ctx, emit, out, start);
  ctx.metrics.in_flight.fetch_add(1);
  auto result = generation.run(sink);
  ctx.metrics.in_flight.fetch_sub(1);
  if (!result.ok()) {
    out.error = result.status();
    return out;
  }
  out.stats = std::move(result).value();
  RequestLog& log = current_request_log();
  log.model = plan.model.id;
  log.prompt_tokens = out.stats.prompt_tokens;
  log.cached_tokens = out.stats.cached_tokens;
  log.completion_tokens = out.stats.completion_tokens;
  log.cache_hit_kind = out.stats.cache_hit_kind;
  log.finish_reason = out.stats.finish_reason;
  log.ttft_ms = out.ttft_seconds >= 0 ? out.ttft_seconds * 1000.0 : -1;
  // What the client is told: a stop string or EOS is "stop", the token limit "length".
  out.choices.resize(std::max<size_t>(out.stats.choices.size(), 1));
  for (size_t i = 0; i < out.stats.choices.size(); ++i) {
    const ChoiceEnd& end = out.stats.choices[i];
    ChoiceOutcome& c = out.choices[i];
    c.matched_stop = end.matched_stop;
    c.finish_reason = end.matched_stop.empty() && end.finish_reason == "length" ? "length" : "stop";
  }
  if (out.stats.choices.empty()) out.choices[0].finish_reason = "stop";
  out.text = out.choices[0].text;
  out.finish_reason = out.choices[0].finish_reason;
  out.matched_stop = out.choices[0].matched_stop;
  if (out.client_gone) ctx.metrics.client_disconnects.fetch_add(1);
  if (out.stats.finish_reason == "cancelled")
    ctx.metrics.record_cancel(out.stats.steps_after_cancel);
  const double total_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double decode_s = out.ttft_seconds >= 0 ? total_s - out.ttft_seconds : total_s;
  GenerationSample sample;
  sample.model = plan.model.id;
  sample.ttft_seconds = out.ttft_seconds;
  sample.queue_seconds = out.stats.queue_seconds;
  sample.restore_seconds = out.stats.restore_seconds;
  sample.restore_tier = out.stats.restore_tier;
  sample.prompt_tokens = out.stats.prompt_tokens;
  sample.cached_tokens = out.stats.cached_tokens;
  sample.completion_tokens = out.stats.completion_tokens;
  sample.draft_tokens = out.stats.draft_tokens;
  sample.draft_accepted = out.stats.draft_accepted;
  sample.decode_seconds = decode_s;
  sample.inter_token_seconds = out.inter_token_seconds;
  ctx.metrics.record_generation(sample);
  return out;
}

RequestLog& current_request_log() {
  thread_local RequestLog log;
  return log;
}

RequestLog& begin_request_log(std::string id) {
  RequestLog& log = current_request_log();
  log = RequestLog{};
  log.id = std::move(id);
  log.start_ms = steady_now_ms();
  return log;
}

void log_request(const std::string& route, int status) {
  const RequestLog& r = current_request_log();
  log::Fields fields = {{"id", r.id}, {"route", route}, {"status", int64_t{status}}};
  if (r.prompt_tokens >= 0) {
    fields.insert(fields.end(), {{"model", r.model},
                                 {"prompt_tokens", r.prompt_tokens},
                                 {"cached_tokens", r.cached_tokens},
                                 {"completion_tokens", r.completion_tokens},
                                 {"cache_hit", r.cache_hit_kind},
                                 {"finish", r.finish_reason}});
    if (r.ttft_ms >= 0) fields.emplace_back("ttft_ms", r.ttft_ms);
  }
  fields.emplace_back("total_ms", static_cast<double>(steady_now_ms() - r.start_ms));
  log::write_fields(log::Level::kInfo, "request", fields);
}

}  // namespace hearth::server
