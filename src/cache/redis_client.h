// A thin synchronous Redis client over hiredis: one TCP connection with connect and
// command timeouts, commands given as argument vectors (binary-safe), replies
// copied into a plain value. No exception crosses it; every failure is a Status
// whose message names the server and the command. Used by the remote tier only.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hearth/status.h"

struct redisContext;

namespace hearth::cache {

// redis://HOST:PORT[/DB]; PORT defaults to 6379, DB to 0.
struct RedisUrl {
  std::string host;
  int port = 6379;
  int db = 0;
  std::string to_string() const;
};
// Errors name the field: "redis url: port ... ".
Result<RedisUrl> parse_redis_url(std::string_view url);

struct RedisReply {
  enum class Type { kNil, kString, kInteger, kArray, kStatus };
  Type type = Type::kNil;
  std::string str;  // kString / kStatus
  long long integer = 0;
  std::vector<RedisReply> elements;  // kArray
  bool is_nil() const { return type == Type::kNil; }
};

class RedisClient {
 public:
  // Connects (bounded by timeout_ms), sets the same timeout on every command, and
  // SELECTs the url's db when it is not 0.
  static Result<std::unique_ptr<RedisClient>> connect(const RedisUrl& url, uint32_t timeout_ms);
  ~RedisClient();
  RedisClient(const RedisClient&) = delete;
  RedisClient& operator=(const RedisClient&) = delete;

  // One command. A Redis error reply ("-ERR ...") is an error Status too. After an
  // I/O error the connection is broken(): the caller drops it.
  Result<RedisReply> command(std::span<const std::string_view> argv);
  Result<RedisReply> command(std::initializer_list<std::string_view> argv) {
    return command(std::span<const std::string_view>(argv.begin(), argv.size()));
  }
  // Pipelined: sends every command, then reads every reply in order (one round trip).
  Result<std::vector<RedisReply>> pipeline(const std::vector<std::vector<std::string>>& cmds);
  bool broken() const { return broken_; }

 private:
  RedisClient(redisContext* c, std::string where) : ctx_(c), where_(std::move(where)) {}
  redisContext* ctx_;
  std::string where_;
  bool broken_ = false;
};

}  // namespace hearth::cache
