// The logprobs objects of OpenAI replies, from the runtime's TokenLogprobs: chat's
// {"content": [{token, logprob, bytes, top_logprobs}]} and completions' {tokens,
// token_logprobs, top_logprobs, text_offset}. A token's `token` text is its raw bytes
// made valid UTF-8 (a byte of a split character becomes U+FFFD when the reply is
// serialised); `bytes` are the raw bytes.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/service_api.h"

namespace hearth::server {

// Raw bytes of every token a set of logprobs names (chosen and alternatives).
using TokenBytes = std::map<TokenId, std::string>;
Result<TokenBytes> token_bytes_for(ServiceApi& service, const std::string& model,
                                   const std::vector<TokenLogprobs>& logprobs);

nlohmann::json chat_logprobs_json(const std::vector<TokenLogprobs>& logprobs,
                                  const TokenBytes& bytes);
// text_offset starts at `offset` (the bytes of any text before the first token: an
// echoed prompt, or the earlier chunks of a stream) and grows by each token's bytes.
nlohmann::json completion_logprobs_json(const std::vector<TokenLogprobs>& logprobs,
                                        const TokenBytes& bytes, int64_t offset);

}  // namespace hearth::server
