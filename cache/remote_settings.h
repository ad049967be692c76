// RemoteSettings: where the shared remote cache tier (a Redis server) lives
// and how long the process may wait for it, read from the environment.
//
//   JITGEMM_REMOTE_CACHE            redis://[user:password@]host:port[/db]
//                                   unix://[user:password@]/path/to.sock[?db=N]
//                                   unset or empty: no remote tier
//   JITGEMM_REMOTE_CACHE_SECRET_FILE  a file whose bytes (at least 16, a
//                                   trailing newline dropped) key the
//                                   HMAC-SHA256 of every value published and
//                                   required on every value read
//   JITGEMM_REMOTE_CACHE_CONNECT_TIMEOUT_MS  default 100
//   JITGEMM_REMOTE_CACHE_TIMEOUT_MS  per command, default 250
//   JITGEMM_REMOTE_CACHE_LOCK_TTL_MS how long a fleet compile lock lives if
//                                   its holder dies, default 60000
//   JITGEMM_REMOTE_CACHE_RETRY_S    how long a tripped breaker keeps the
//                                   tier off before one new try, default 300
//   JITGEMM_REMOTE_CACHE_MAX_VALUE_BYTES  the largest value read, default 64M
//
// A value that does not parse keeps the default, or leaves the tier off, and
// is reported in `problems` (never with the password or the secret).
//
// Thread safety: a value type; ParseRemoteUrl is a pure function.
#ifndef JITGEMM_CACHE_REMOTE_SETTINGS_H_
#define JITGEMM_CACHE_REMOTE_SETTINGS_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace jitgemm::cache {

// Reads variables through `getenv` instead of the process environment, so
// tests need not mutate it (also the type of cache/settings.h).
using GetEnvFunction = std::function<std::optional<std::string>(absl::string_view name)>;

// A parsed JITGEMM_REMOTE_CACHE.
struct RemoteEndpoint {
  std::string host;  // empty for a unix socket
  int port = 6379;
  std::string unix_path;  // set for a unix socket
  std::string user;       // AUTH user (Redis 6 ACL); may be empty
  std::string password;   // AUTH password; never printed
  int db = 0;

  // The endpoint without credentials, for messages: "redis://host:port/db".
  std::string Redacted() const;
};

// Parses the URL forms above. InvalidArgument, with the URL's credentials
// left out of the message, when it is not one of them.
absl::StatusOr<RemoteEndpoint> ParseRemoteUrl(absl::string_view url);

inline constexpr uint64_t kDefaultRemoteMaxValueBytes = uint64_t{64} << 20;

struct RemoteSettings {
  bool enabled = false;
  RemoteEndpoint endpoint;
  // The HMAC key (file contents); empty: values are neither signed nor
  // checked.
  std::string secret;
  // Set when a secret file was named: a secret that cannot be read keeps
  // the tier off rather than trusting unsigned values.
  std::string secret_file;
  absl::Duration connect_timeout = absl::Milliseconds(100);
  absl::Duration command_timeout = absl::Milliseconds(250);
  absl::Duration lock_ttl = absl::Seconds(60);
  absl::Duration retry_after = absl::Seconds(300);
  uint64_t max_value_bytes = kDefaultRemoteMaxValueBytes;
  std::vector<std::string> problems;

  static RemoteSettings FromEnvironment();
};

RemoteSettings RemoteSettingsFromVariables(const GetEnvFunction& getenv);

// The smallest secret accepted: shorter ones are guessable.
inline constexpr size_t kMinRemoteSecretBytes = 16;
// The cap on JITGEMM_REMOTE_CACHE_MAX_VALUE_BYTES: the disk entry limit.
inline constexpr uint64_t kMaxEntryBytesForRemote = uint64_t{256} << 20;

}  // namespace jitgemm::cache

#endif  // JITGEMM_CACHE_REMOTE_SETTINGS_H_
