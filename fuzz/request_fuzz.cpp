// libFuzzer target: a request body as the HTTP layer receives it, through JSON parsing,
// the OpenAI/Anthropic/Responses request validators and the chat renderer. The first byte picks
// the endpoint. Any crash, sanitizer report, uncaught exception or an error without a
// message naming what was wrong is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "common/json_text.h"
#include "server/chat_template.h"
#include "server/request_parse.h"
#include "server/responses/responses_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hearth::server;
  if (size == 0) return 0;
  const uint8_t which = data[0] % 4;
  const std::string body(reinterpret_cast<const char*>(data + 1), size - 1);
  nlohmann::json j;
  if (auto e = parse_json_object(body, j)) {
    if (e->message.empty() || e->http_status != 400) std::abort();
    (void)openai_error_body(*e);
    return 0;
  }
  TextRequest req;
  std::optional<ApiError> e;
  switch (which) {
    case 0:
      e = parse_completion_request(j, req);
      break;
    case 1:
      e = parse_chat_request(j, req);
      break;
    case 2:
      e = parse_messages_request(j, req);
      break;
    default: {
      ResponsesRequest rr;
      e = parse_responses_request(j, body, rr);
      req = std::move(rr.text);
      req.messages = std::move(rr.input);
      break;
    }
  }
  if (e) {
    if (e->message.empty() || e->http_status < 400) std::abort();
    // Error bodies carry request text back to the client: they must serialise.
    (void)openai_error_body(*e);
    (void)anthropic_error_body(*e);
    return 0;
  }
  if (req.is_chat) {
    for (const char* name : {"chatml", "llama-3", "gemma", "phi-3", "mistral"}) {
      auto family = chat_family_from_name(name);
      if (!family) std::abort();
      RenderedChat r = render_chat(*family, req.messages);
      for (const auto& range : r.special_ranges) {
        if (range.begin > range.end || range.end > r.text.size()) std::abort();
      }
    }
  }
  (void)hearth::json_text(j);
  return 0;
}
