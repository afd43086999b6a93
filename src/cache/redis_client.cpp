#include "cache/redis_client.h"

#include <hiredis/hiredis.h>

#include <charconv>

namespace hearth::cache {

namespace {

Result<int> parse_int(std::string_view field, std::string_view s, int lo, int hi) {
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < lo || v > hi) {
    return InvalidArgument(std::string("redis url: ")
                               .append(field)
                               .append(" '")
                               .append(s)
                               .append("' is not an integer in [")
                               .append(std::to_string(lo))
                               .append(", ")
                               .append(std::to_string(hi))
                               .append("]"));
  }
  return v;
}

RedisReply copy_reply(const redisReply* r) {
  RedisReply out;
  switch (r->type) {
    case REDIS_REPLY_STRING:
      out.type = RedisReply::Type::kString;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_STATUS:
      out.type = RedisReply::Type::kStatus;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_INTEGER:
      out.type = RedisReply::Type::kInteger;
      out.integer = r->integer;
      break;
    case REDIS_REPLY_ARRAY:
      out.type = RedisReply::Type::kArray;
      for (size_t i = 0; i < r->elements; ++i) out.elements.push_back(copy_reply(r->element[i]));
      break;
    default:
      out.type = RedisReply::Type::kNil;
  }
  return out;
}

}  // namespace

std::string RedisUrl::to_string() const {
  return "redis://" + host + ":" + std::to_string(port) + "/" + std::to_string(db);
}

Result<RedisUrl> parse_redis_url(std::string_view url) {
  constexpr std::string_view kScheme = "redis://";
  if (url.substr(0, kScheme.size()) != kScheme) {
    return InvalidArgument("redis url: '" + std::string(url) + "' must start with redis://");
  }
  std::string_view rest = url.substr(kScheme.size());
  RedisUrl out;
  if (auto slash = rest.find('/'); slash != std::string_view::npos) {
    auto db = parse_int("db", rest.substr(slash + 1), 0, 15);
    if (!db.ok()) return db.status();
    out.db = *db;
    rest = rest.substr(0, slash);
  }
  if (auto colon = rest.rfind(':'); colon != std::string_view::npos) {
    auto port = parse_int("port", rest.substr(colon + 1), 1, 65535);
    if (!port.ok()) return port.status();
    out.port = *port;
    rest = rest.substr(0, colon);
  }
  if (rest.empty())
    return InvalidArgument("redis url: host is empty in '" + std::string(url) + "'");
  out.host = std::string(rest);
  return out;
}

Result<std::unique_ptr<RedisClient>> RedisClient::connect(const RedisUrl& url,
                                                          uint32_t timeout_ms) {
  timeval tv{static_cast<time_t>(timeout_ms / 1000),
             static_cast<suseconds_t>((timeout_ms % 1000) * 1000)};
  redisContext* c = redisConnectWithTimeout(url.host.c_str(), url.port, tv);
  if (c == nullptr) return Unavailable("redis " + url.to_string() + ": cannot allocate a context");
  if (c->err) {
    std::string msg = "redis " + url.to_string() + ": connect: " + c->errstr;
    redisFree(c);
    return Unavailable(msg);
  }
  redisSetTimeout(c, tv);
  std::unique_ptr<RedisClient> client(new RedisClient(c, url.to_string()));
  if (url.db != 0) {
    const std::string db = std::to_string(url.db);
    auto r = client->command({"SELECT", db});
    if (!r.ok()) return r.status();
  }
  return client;
}

RedisClient::~RedisClient() {
  if (ctx_ != nullptr) redisFree(ctx_);
}

Result<RedisReply> RedisClient::command(std::span<const std::string_view> argv) {
  if (broken_) return Unavailable("redis " + where_ + ": connection broken");
  std::vector<const char*> ptrs;
  std::vector<size_t> lens;
  for (auto a : argv) {
    ptrs.push_back(a.data());
    lens.push_back(a.size());
  }
  auto* r = static_cast<redisReply*>(
      redisCommandArgv(ctx_, static_cast<int>(argv.size()), ptrs.data(), lens.data()));
  if (r == nullptr) {
    broken_ = true;
    return Unavailable("redis " + where_ + ": " + std::string(argv.empty() ? "" : argv[0]) + ": " +
                       ctx_->errstr);
  }
  if (r->type == REDIS_REPLY_ERROR) {
    std::string msg =
        "redis " + where_ + ": " + std::string(argv[0]) + ": " + std::string(r->str, r->len);
    freeReplyObject(r);
    return Unavailable(msg);
  }
  RedisReply out = copy_reply(r);
  freeReplyObject(r);
  return out;
}

Result<std::vector<RedisReply>> RedisClient::pipeline(
    const std::vector<std::vector<std::string>>& cmds) {
  if (broken_) return Unavailable("redis " + where_ + ": connection broken");
  for (const auto& cmd : cmds) {
    std::vector<const char*> ptrs;
    std::vector<size_t> lens;
    for (const auto& a : cmd) {
      ptrs.push_back(a.data());
      lens.push_back(a.size());
    }
    if (redisAppendCommandArgv(ctx_, static_cast<int>(cmd.size()), ptrs.data(), lens.data()) !=
        REDIS_OK) {
      broken_ = true;
      return Unavailable("redis " + where_ + ": pipeline append: " + ctx_->errstr);
    }
  }
  std::vector<RedisReply> out;
  Status first_error;
  for (size_t i = 0; i < cmds.size(); ++i) {
    void* raw = nullptr;
    if (redisGetReply(ctx_, &raw) != REDIS_OK || raw == nullptr) {
      broken_ = true;
      return Unavailable("redis " + where_ + ": pipeline read: " + ctx_->errstr);
    }
    auto* r = static_cast<redisReply*>(raw);
    if (r->type == REDIS_REPLY_ERROR && first_error.ok()) {
      first_error =
          Unavailable("redis " + where_ + ": " + cmds[i][0] + ": " + std::string(r->str, r->len));
    }
    out.push_back(copy_reply(r));
    freeReplyObject(r);
  }
  if (!first_error.ok()) return first_error;
  return out;
}

}  // namespace hearth::cache
