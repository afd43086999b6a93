#include "server/logprobs_json.h"

#include <algorithm>

namespace hearth::server {
namespace {

using nlohmann::json;

const std::string& bytes_of(const TokenBytes& bytes, TokenId id) {
  static const std::string kNone;
  auto it = bytes.find(id);
  return it == bytes.end() ? kNone : it->second;
}

json byte_array(const std::string& s) {
  json a = json::array();
  for (char c : s) a.push_back(static_cast<int>(static_cast<unsigned char>(c)));
  return a;
}

json entry(const TokenBytes& bytes, TokenId id, float logprob) {
  const std::string& b = bytes_of(bytes, id);
  return {{"token", b}, {"logprob", logprob}, {"bytes", byte_array(b)}};
}

}  // namespace

Result<TokenBytes> token_bytes_for(ServiceApi& service, const std::string& model,
                                   const std::vector<TokenLogprobs>& logprobs) {
  std::vector<TokenId> ids;
  for (const TokenLogprobs& lp : logprobs) {
    ids.push_back(lp.token);
    for (const TokenLogprob& t : lp.top) ids.push_back(t.token);
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  HEARTH_ASSIGN_OR_RETURN(std::vector<std::string> texts, service.token_bytes(model, ids));
  TokenBytes out;
  for (size_t i = 0; i < ids.size() && i < texts.size(); ++i) out[ids[i]] = std::move(texts[i]);
  return out;
}

json chat_logprobs_json(const std::vector<TokenLogprobs>& logprobs, const TokenBytes& bytes) {
  json content = json::array();
  for (const TokenLogprobs& lp : logprobs) {
    json e = entry(bytes, lp.token, lp.logprob);
    json top = json::array();
    for (const TokenLogprob& t : lp.top) top.push_back(entry(bytes, t.token, t.logprob));
    e["top_logprobs"] = std::move(top);
    content.push_back(std::move(e));
  }
  return {{"content", std::move(content)}, {"refusal", nullptr}};
}

json completion_logprobs_json(const std::vector<TokenLogprobs>& logprobs, const TokenBytes& bytes,
                              int64_t offset) {
  json tokens = json::array(), token_logprobs = json::array(), top = json::array(),
       offsets = json::array();
  for (const TokenLogprobs& lp : logprobs) {
    const std::string& b = bytes_of(bytes, lp.token);
    tokens.push_back(b);
    token_logprobs.push_back(lp.logprob);
    json alternatives = json::object();
    for (const TokenLogprob& t : lp.top) alternatives[bytes_of(bytes, t.token)] = t.logprob;
    top.push_back(std::move(alternatives));
    offsets.push_back(offset);
    offset += static_cast<int64_t>(b.size());
  }
  return {{"tokens", std::move(tokens)},
          {"token_logprobs", std::move(token_logprobs)},
          {"top_logprobs", std::move(top)},
          {"text_offset", std::move(offsets)}};
}

}  // namespace hearth::server
