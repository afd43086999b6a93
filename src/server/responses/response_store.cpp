#include "server/responses/response_store.h"

#include <iterator>

namespace hearth::server {

void ResponseStore::drop(std::list<Entry>::iterator it) {
  for (const auto& item : it->second->response.value("output", nlohmann::json::array()))
    if (item.contains("id")) item_owner_.erase(item["id"].get<std::string>());
  index_.erase(it->first);
  lru_.erase(it);
}

void ResponseStore::put(const std::string& id, StoredResponse response) {
  auto entry = std::make_shared<const StoredResponse>(std::move(response));
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = index_.find(id); it != index_.end()) drop(it->second);
  for (const auto& item : entry->response.value("output", nlohmann::json::array()))
    if (item.contains("id") && item["id"].is_string())
      item_owner_[item["id"].get<std::string>()] = id;
  lru_.emplace_front(id, std::move(entry));
  index_[id] = lru_.begin();
  while (lru_.size() > capacity_) drop(std::prev(lru_.end()));
}

nlohmann::json ResponseStore::item(const std::string& item_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto owner = item_owner_.find(item_id);
  if (owner == item_owner_.end()) return nullptr;
  auto it = index_.find(owner->second);
  if (it == index_.end()) return nullptr;
  for (const auto& item : it->second->second->response.value("output", nlohmann::json::array()))
    if (item.value("id", "") == item_id) return item;
  return nullptr;
}

std::shared_ptr<const StoredResponse> ResponseStore::get(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(id);
  if (it == index_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->second;
}

bool ResponseStore::erase(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(id);
  if (it == index_.end()) return false;
  drop(it->second);
  return true;
}

size_t ResponseStore::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lru_.size();
}

}  // namespace hearth::server
