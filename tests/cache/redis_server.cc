#include "tests/cache/redis_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace jitgemm::cache::testing {
namespace {

std::string ServerBinary() {
  if (const char* env = std::getenv("JITGEMM_REDIS_SERVER"); env != nullptr && *env) return env;
  if (const char* path = std::getenv("PATH")) {
    std::string p = path;
    size_t start = 0;
    while (start <= p.size()) {
      size_t end = p.find(':', start);
      if (end == std::string::npos) end = p.size();
      std::string candidate = p.substr(start, end - start) + "/redis-server";
      if (end > start && ::access(candidate.c_str(), X_OK) == 0) return candidate;
      start = end + 1;
    }
  }
  return "/usr/bin/redis-server";
}

// A loopback port nobody listens on now. Another process may take it before
// the server does; Start then tries again.
int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = -1;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

}  // namespace

RemoteSettings TestRemoteSettings(const std::string& url, const std::string& secret) {
  RemoteSettings s;
  absl::StatusOr<RemoteEndpoint> e = ParseRemoteUrl(url);
  if (!e.ok()) std::abort();
  s.enabled = true;
  s.endpoint = *e;
  s.secret = secret;
  s.connect_timeout = absl::Milliseconds(100);
  s.command_timeout = absl::Milliseconds(250);
  s.lock_ttl = absl::Seconds(30);
  s.retry_after = absl::Seconds(300);
  return s;
}

absl::StatusOr<std::unique_ptr<RedisServer>> RedisServer::Start(const std::string& dir,
                                                                const std::string& password) {
  const std::string binary = ServerBinary();
  if (::access(binary.c_str(), X_OK) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("redis-server not found (", binary,
                     "); install Debian's redis-server (scripts/install_deps.sh does) or set "
                     "JITGEMM_REDIS_SERVER"));
  }
  absl::Status last = absl::UnknownError("not started");
  for (int attempt = 0; attempt < 5; ++attempt) {
    std::unique_ptr<RedisServer> s(new RedisServer());
    s->dir_ = dir;
    s->password_ = password;
    s->port_ = FreePort();
    if (s->port_ <= 0) return absl::InternalError("no free loopback port");
    const std::string config = absl::StrCat(dir, "/redis.conf");
    {
      std::ofstream out(config, std::ios::trunc);
      out << "bind 127.0.0.1\n"
          << "port " << s->port_ << "\n"
          << "unixsocket " << dir << "/redis.sock\n"
          << "unixsocketperm 700\n"
          << "save \"\"\n"
          << "appendonly no\n"
          << "daemonize no\n"
          << "protected-mode yes\n"
          << "dir " << dir << "\n"
          << "logfile " << dir << "/redis.log\n";
      if (!password.empty()) out << "requirepass " << password << "\n";
      if (!out) return absl::InternalError(absl::StrCat("cannot write ", config));
    }
    const pid_t parent = ::getpid();
    pid_t pid = ::fork();
    if (pid < 0) return absl::InternalError("fork failed");
    if (pid == 0) {
      // Dies with the test, however the test ends.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);
      ::execl(binary.c_str(), binary.c_str(), config.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    s->pid_ = pid;
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (absl::Now() < deadline) {
      absl::StatusOr<std::unique_ptr<RedisConnection>> c = RedisConnection::Connect(
          s->Endpoint(), absl::Milliseconds(200), absl::Seconds(2), uint64_t{1} << 30);
      if (c.ok()) {
        // Under ctest -j another test's server may have taken the port
        // first: only our own child will do.
        absl::StatusOr<RedisReply> info = (*c)->Command({"INFO", "server"});
        if (info.ok() &&
            info->str.find(absl::StrCat("process_id:", pid, "\r")) != std::string::npos) {
          s->conn_ = std::move(c).value();
          return s;
        }
        last = info.ok() ? absl::UnavailableError("another server answers on the port")
                         : info.status();
      } else {
        last = c.status();
      }
      int status = 0;
      if (::waitpid(pid, &status, WNOHANG) == pid) {
        s->pid_ = -1;  // exited: the port was taken, most likely
        break;
      }
      absl::SleepFor(absl::Milliseconds(20));
    }
  }
  return absl::UnavailableError(
      absl::StrCat("redis-server did not start: ", last.message(), " (see ", dir, "/redis.log)"));
}

RedisServer::~RedisServer() {
  conn_.reset();
  if (pid_ <= 0) return;
  if (paused_) ::kill(pid_, SIGCONT);
  ::kill(pid_, SIGTERM);
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  int status = 0;
  while (::waitpid(pid_, &status, WNOHANG) != pid_) {
    if (absl::Now() > deadline) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      break;
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
}

std::string RedisServer::Url() const {
  return absl::StrCat("redis://", password_.empty() ? "" : absl::StrCat(":", password_, "@"),
                      "127.0.0.1:", port_, "/0");
}

std::string RedisServer::UnixUrl() const {
  return absl::StrCat("unix://", password_.empty() ? "" : absl::StrCat(":", password_, "@"), dir_,
                      "/redis.sock");
}

RemoteEndpoint RedisServer::Endpoint() const { return *ParseRemoteUrl(Url()); }

absl::StatusOr<RedisReply> RedisServer::Command(const std::vector<std::string_view>& args) {
  if (conn_ == nullptr || conn_->broken()) {
    absl::StatusOr<std::unique_ptr<RedisConnection>> c =
        RedisConnection::Connect(Endpoint(), absl::Seconds(1), absl::Seconds(5), uint64_t{1} << 30);
    if (!c.ok()) return c.status();
    conn_ = std::move(c).value();
  }
  return conn_->Command(args);
}

std::vector<std::string> RedisServer::Keys(const std::string& pattern) {
  std::vector<std::string> keys;
  absl::StatusOr<RedisReply> r = Command({"KEYS", pattern});
  if (!r.ok()) return {"<KEYS failed: " + std::string(r.status().message()) + ">"};
  for (const RedisReply& e : r->elements) keys.push_back(e.str);
  return keys;
}

void RedisServer::Kill() {
  if (pid_ <= 0) return;
  conn_.reset();
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

void RedisServer::Pause() {
  if (pid_ > 0 && ::kill(pid_, SIGSTOP) == 0) paused_ = true;
}

void RedisServer::Resume() {
  if (pid_ > 0 && ::kill(pid_, SIGCONT) == 0) paused_ = false;
}

}  // namespace jitgemm::cache::testing
