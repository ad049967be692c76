// RedisConnection: one blocking connection to a Redis server through
// hiredis, with a connect timeout, a deadline on every command and a bound
// on the size of any reply, so a slow, dead or hostile server costs at most
// the timeouts and a bounded buffer.
//
// Errors: Unavailable for transport failures (refused, reset, timed out,
// a reply over the bound, a protocol error), after which the connection is
// broken() and must be dropped; FailedPrecondition for an error reply from
// the server (NOAUTH, WRONGTYPE, ...). No message ever holds a password.
// Without hiredis at build time (JITGEMM_HAVE_HIREDIS 0) Connect fails with
// Unimplemented.
//
// Thread safety: a connection is used by one thread at a time.
#ifndef JITGEMM_CACHE_REDIS_CLIENT_H_
#define JITGEMM_CACHE_REDIS_CLIENT_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "cache/remote_settings.h"

namespace jitgemm::cache {

// Whether this build has the Redis client (hiredis).
bool RedisClientAvailable();

// A reply reduced to what the tier needs.
struct RedisReply {
  enum class Type { kNil, kString, kInteger, kStatus, kArray } type = Type::kNil;
  std::string str;  // kString, kStatus
  int64_t integer = 0;
  std::vector<RedisReply> elements;
};

class RedisConnection {
 public:
  // Connects within `connect_timeout`, then AUTH and SELECT as the endpoint
  // asks. Every later command must complete within `command_timeout`, and
  // no reply may exceed `max_reply_bytes` (plus framing).
  static absl::StatusOr<std::unique_ptr<RedisConnection>> Connect(const RemoteEndpoint& endpoint,
                                                                  absl::Duration connect_timeout,
                                                                  absl::Duration command_timeout,
                                                                  uint64_t max_reply_bytes);
  ~RedisConnection();
  RedisConnection(const RedisConnection&) = delete;
  RedisConnection& operator=(const RedisConnection&) = delete;

  // Runs one command. Arguments are binary-safe.
  absl::StatusOr<RedisReply> Command(const std::vector<std::string_view>& args);

  // Set after a transport failure: the connection is out of step with the
  // server and must not be reused.
  bool broken() const { return broken_; }

 private:
  RedisConnection() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
  absl::Duration command_timeout_;
  uint64_t max_reply_bytes_ = 0;
  bool broken_ = false;
};

}  // namespace jitgemm::cache

#endif  // JITGEMM_CACHE_REDIS_CLIENT_H_
