// RedisServer: a real redis-server (Debian's package) for the remote-tier
// tests, started on a free loopback port and a unix socket with its own
// config file and no persistence (save "", appendonly no), and stopped when
// the object goes away, also after a failed assertion. The child asks the
// kernel to kill it if the test process dies (PR_SET_PDEATHSIG), so a
// crashed test leaves no server behind either.
//
// The binary is $JITGEMM_REDIS_SERVER, else redis-server on PATH, else
// /usr/bin/redis-server.
#ifndef JITGEMM_TESTS_CACHE_REDIS_SERVER_H_
#define JITGEMM_TESTS_CACHE_REDIS_SERVER_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cache/redis_client.h"
#include "cache/remote_settings.h"

namespace jitgemm::cache::testing {

class RedisServer {
 public:
  // Starts a server with its files under `dir`; with `password`, clients
  // must AUTH.
  static absl::StatusOr<std::unique_ptr<RedisServer>> Start(const std::string& dir,
                                                            const std::string& password = "");
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  // "redis://[:password@]127.0.0.1:<port>/0".
  std::string Url() const;
  // "unix://[:password@]<dir>/redis.sock".
  std::string UnixUrl() const;
  RemoteEndpoint Endpoint() const;

  // A direct connection for checks and for planting values.
  absl::StatusOr<RedisReply> Command(const std::vector<std::string_view>& args);
  // Keys matching `pattern`.
  std::vector<std::string> Keys(const std::string& pattern);

  void Kill();    // SIGKILL, reaped
  void Pause();   // SIGSTOP: accepts connections (the kernel does), answers nothing
  void Resume();  // SIGCONT

 private:
  RedisServer() = default;
  std::string dir_, password_;
  int port_ = 0;
  pid_t pid_ = -1;
  bool paused_ = false;
  std::unique_ptr<RedisConnection> conn_;
};

// The settings of a remote tier on `url` with timeouts suited to tests.
RemoteSettings TestRemoteSettings(const std::string& url, const std::string& secret = "");

}  // namespace jitgemm::cache::testing

#endif  // JITGEMM_TESTS_CACHE_REDIS_SERVER_H_
