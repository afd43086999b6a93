// The stored responses of POST /v1/responses (store: true, the default): a bounded
// in-memory map, least recently used first out once it holds `capacity` responses.
// Each keeps its reply object (GET /v1/responses/{id}) and its whole conversation as
// chat messages (instructions excluded, as OpenAI carries them per request), so a
// request with previous_response_id renders the same prefix the previous turn's prompt
// and reply were, and the runtime's KV cache serves it warm. Thread-safe.
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/chat_template.h"

namespace hearth::server {

struct StoredResponse {
  nlohmann::json response;                // the reply object as it was sent
  std::vector<ChatMessage> conversation;  // every turn's input and output, in order
};

class ResponseStore {
 public:
  static constexpr size_t kDefaultCapacity = 1000;
  explicit ResponseStore(size_t capacity = kDefaultCapacity) : capacity_(capacity) {}

  void put(const std::string& id, StoredResponse response);
  // nullptr when unknown or evicted; a hit becomes the most recently used.
  std::shared_ptr<const StoredResponse> get(const std::string& id);
  // An output item of a stored response, by its id (msg_..., fc_..., rs_...): what an
  // input item {"type": "item_reference", "id"} stands for. Null when not stored.
  nlohmann::json item(const std::string& item_id);
  bool erase(const std::string& id);
  size_t size() const;
  size_t capacity() const { return capacity_; }

 private:
  using Entry = std::pair<std::string, std::shared_ptr<const StoredResponse>>;
  const size_t capacity_;
  mutable std::mutex mu_;
  std::list<Entry> lru_;  // guarded by mu_; front = most recently used
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;  // guarded by mu_
  std::unordered_map<std::string, std::string> item_owner_;  // item id -> response id; mu_
  void drop(std::list<Entry>::iterator it);                  // mu_ held
};

}  // namespace hearth::server
