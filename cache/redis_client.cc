#include "cache/redis_client.h"

#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

#if JITGEMM_HAVE_HIREDIS
#include <hiredis/hiredis.h>
#endif

namespace jitgemm::cache {

#if JITGEMM_HAVE_HIREDIS

namespace {

// Framing a reply adds beyond its payload: "$<len>\r\n" ... "\r\n" and one
// read's worth of buffered bytes.
constexpr uint64_t kReplySlack = 64 << 10;

RedisReply Convert(const redisReply* r) {
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
      for (size_t i = 0; i < r->elements; ++i) out.elements.push_back(Convert(r->element[i]));
      break;
    default:
      out.type = RedisReply::Type::kNil;
      break;
  }
  return out;
}

// Writing to a socket whose server died raises SIGPIPE, whose default action
// kills the process; hiredis writes with write(2). The signal is blocked in
// this thread around the write and a pending one is taken back, as libcurl
// does, so the failure is only an EPIPE.
class SigpipeGuard {
 public:
  SigpipeGuard() {
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    already_pending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe, &old_);
  }
  ~SigpipeGuard() {
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    if (!already_pending_) {
      const timespec zero = {0, 0};
      while (sigtimedwait(&pipe, nullptr, &zero) > 0) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }

 private:
  sigset_t old_;
  bool already_pending_ = false;
};

}  // namespace

struct RedisConnection::Impl {
  redisContext* context = nullptr;
  ~Impl() {
    if (context != nullptr) redisFree(context);
  }
};

bool RedisClientAvailable() { return true; }

absl::StatusOr<std::unique_ptr<RedisConnection>> RedisConnection::Connect(
    const RemoteEndpoint& endpoint, absl::Duration connect_timeout, absl::Duration command_timeout,
    uint64_t max_reply_bytes) {
  std::unique_ptr<RedisConnection> c(new RedisConnection());
  c->impl_ = std::make_unique<Impl>();
  c->command_timeout_ = command_timeout;
  c->max_reply_bytes_ = max_reply_bytes;
  const timeval tv = absl::ToTimeval(connect_timeout);
  c->impl_->context = endpoint.unix_path.empty()
                          ? redisConnectWithTimeout(endpoint.host.c_str(), endpoint.port, tv)
                          : redisConnectUnixWithTimeout(endpoint.unix_path.c_str(), tv);
  if (c->impl_->context == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("cannot connect to ", endpoint.Redacted(), ": out of memory"));
  }
  if (c->impl_->context->err != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot connect to ", endpoint.Redacted(), ": ", c->impl_->context->errstr));
  }
  if (redisSetTimeout(c->impl_->context, absl::ToTimeval(command_timeout)) != REDIS_OK) {
    return absl::UnavailableError(
        absl::StrCat("cannot set the command timeout on ", endpoint.Redacted()));
  }
  if (!endpoint.password.empty()) {
    std::vector<std::string_view> auth = {"AUTH"};
    if (!endpoint.user.empty()) auth.push_back(endpoint.user);
    auth.push_back(endpoint.password);
    absl::StatusOr<RedisReply> r = c->Command(auth);
    if (!r.ok()) {
      // The server's text ("WRONGPASS invalid username-password pair") names
      // no secret; ours must not either.
      return absl::Status(r.status().code(), absl::StrCat("authentication to ", endpoint.Redacted(),
                                                          " failed: ", r.status().message()));
    }
  }
  if (endpoint.db != 0) {
    const std::string db = std::to_string(endpoint.db);
    absl::StatusOr<RedisReply> r = c->Command({"SELECT", db});
    if (!r.ok()) {
      return absl::Status(r.status().code(),
                          absl::StrCat("SELECT ", db, " on ", endpoint.Redacted(),
                                       " failed: ", r.status().message()));
    }
  }
  return c;
}

RedisConnection::~RedisConnection() = default;

absl::StatusOr<RedisReply> RedisConnection::Command(const std::vector<std::string_view>& args) {
  if (broken_) return absl::UnavailableError("connection is broken");
  redisContext* ctx = impl_->context;
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  for (std::string_view a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  auto fail = [&](absl::string_view what) {
    broken_ = true;
    const bool timed_out = ctx->err == REDIS_ERR_IO && (errno == EAGAIN || errno == EWOULDBLOCK);
    return absl::UnavailableError(
        absl::StrCat(what, timed_out ? ": timed out" : "",
                     ctx->err != 0 ? absl::StrCat(" (", ctx->errstr, ")") : ""));
  };
  const absl::Time deadline = absl::Now() + command_timeout_;
  if (redisAppendCommandArgv(ctx, static_cast<int>(argv.size()), argv.data(), lens.data()) !=
      REDIS_OK) {
    return fail("cannot format a command");
  }
  {
    SigpipeGuard no_sigpipe;
    for (int done = 0; !done;) {
      if (redisBufferWrite(ctx, &done) != REDIS_OK) return fail("cannot send a command");
      if (absl::Now() > deadline) return fail("command timed out");
    }
  }
  void* raw = nullptr;
  for (;;) {
    if (redisGetReplyFromReader(ctx, &raw) != REDIS_OK) return fail("bad reply");
    if (raw != nullptr) break;
    // The socket's own timeout bounds each read; the deadline bounds a
    // server that drips bytes, and the size bound one that floods them.
    if (absl::Now() > deadline) return fail("command timed out");
    if (redisBufferRead(ctx) != REDIS_OK) return fail("cannot read a reply");
    if (ctx->reader->len > max_reply_bytes_ + kReplySlack) {
      return fail(absl::StrCat("reply larger than ", max_reply_bytes_, " bytes"));
    }
  }
  redisReply* reply = static_cast<redisReply*>(raw);
  absl::StatusOr<RedisReply> out;
  if (reply->type == REDIS_REPLY_ERROR) {
    out = absl::FailedPreconditionError(
        absl::StrCat("server error: ", std::string(reply->str, reply->len)));
  } else {
    out = Convert(reply);
  }
  freeReplyObject(reply);
  return out;
}

#else  // !JITGEMM_HAVE_HIREDIS

struct RedisConnection::Impl {};

bool RedisClientAvailable() { return false; }

absl::StatusOr<std::unique_ptr<RedisConnection>> RedisConnection::Connect(
    const RemoteEndpoint& endpoint, absl::Duration, absl::Duration, uint64_t) {
  return absl::UnimplementedError(
      absl::StrCat("this jitgemm was built without hiredis; the remote cache ", endpoint.Redacted(),
                   " cannot be used (install libhiredis-dev and rebuild)"));
}

RedisConnection::~RedisConnection() = default;

absl::StatusOr<RedisReply> RedisConnection::Command(const std::vector<std::string_view>&) {
  return absl::UnimplementedError("built without hiredis");
}

#endif  // JITGEMM_HAVE_HIREDIS

}  // namespace jitgemm::cache
