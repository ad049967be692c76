#include "cache/remote_settings.h"

#include <fcntl.h>
#include <unistd.h>

#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "cache/log.h"
#include "cache/settings.h"

namespace jitgemm::cache {
namespace {

// Secrets are short; a huge file is a mistake, not a key.
constexpr size_t kMaxSecretBytes = 4096;

absl::Status BadUrl(absl::string_view why) {
  // Never the URL itself: it may hold a password.
  return absl::InvalidArgumentError(
      absl::StrCat("JITGEMM_REMOTE_CACHE is not redis://[user:password@]host:port[/db] or "
                   "unix://[user:password@]/path[?db=N] (",
                   why, ")"));
}

// Splits "user:password@rest" off `*rest`.
void TakeCredentials(absl::string_view* rest, RemoteEndpoint* e) {
  size_t at = rest->rfind('@');
  if (at == absl::string_view::npos) return;
  absl::string_view cred = rest->substr(0, at);
  rest->remove_prefix(at + 1);
  size_t colon = cred.find(':');
  if (colon == absl::string_view::npos) {
    e->password = std::string(cred);  // redis://password@host, as redis-cli -u takes it
  } else {
    e->user = std::string(cred.substr(0, colon));
    e->password = std::string(cred.substr(colon + 1));
  }
}

std::optional<std::string> ReadSecret(const std::string& path, std::string* why) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *why = "cannot be opened";
    return std::nullopt;
  }
  std::string bytes(kMaxSecretBytes + 1, '\0');
  size_t got = 0;
  while (got < bytes.size()) {
    ssize_t n = ::read(fd, bytes.data() + got, bytes.size() - got);
    if (n < 0) {
      ::close(fd);
      *why = "cannot be read";
      return std::nullopt;
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  bytes.resize(got);
  if (bytes.size() > kMaxSecretBytes) {
    *why = absl::StrCat("is larger than ", kMaxSecretBytes, " bytes");
    return std::nullopt;
  }
  while (!bytes.empty() && (bytes.back() == '\n' || bytes.back() == '\r')) bytes.pop_back();
  if (bytes.size() < kMinRemoteSecretBytes) {
    *why = absl::StrCat("holds fewer than ", kMinRemoteSecretBytes, " bytes");
    return std::nullopt;
  }
  return bytes;
}

}  // namespace

std::string RemoteEndpoint::Redacted() const {
  if (!unix_path.empty()) return absl::StrCat("unix://", unix_path, "?db=", db);
  return absl::StrCat("redis://", host, ":", port, "/", db);
}

absl::StatusOr<RemoteEndpoint> ParseRemoteUrl(absl::string_view url) {
  RemoteEndpoint e;
  absl::string_view rest = url;
  if (absl::ConsumePrefix(&rest, "unix://")) {
    TakeCredentials(&rest, &e);
    size_t q = rest.find('?');
    if (q != absl::string_view::npos) {
      absl::string_view query = rest.substr(q + 1);
      rest = rest.substr(0, q);
      if (!absl::ConsumePrefix(&query, "db=") || !absl::SimpleAtoi(query, &e.db) || e.db < 0) {
        return BadUrl("the query must be db=N");
      }
    }
    if (rest.empty() || rest.front() != '/') return BadUrl("a unix socket needs an absolute path");
    e.unix_path = std::string(rest);
    return e;
  }
  if (!absl::ConsumePrefix(&rest, "redis://")) return BadUrl("unknown scheme");
  size_t slash = rest.find('/');
  absl::string_view db;
  if (slash != absl::string_view::npos) {
    db = rest.substr(slash + 1);
    rest = rest.substr(0, slash);
  }
  TakeCredentials(&rest, &e);
  if (!db.empty() && (!absl::SimpleAtoi(db, &e.db) || e.db < 0)) {
    return BadUrl("the database is not a number");
  }
  size_t colon = rest.rfind(':');
  if (colon != absl::string_view::npos && rest.find(']') == absl::string_view::npos) {
    if (!absl::SimpleAtoi(rest.substr(colon + 1), &e.port) || e.port <= 0 || e.port > 65535) {
      return BadUrl("the port is not a number from 1 to 65535");
    }
    rest = rest.substr(0, colon);
  }
  if (rest.empty()) return BadUrl("no host");
  e.host = std::string(rest);
  return e;
}

RemoteSettings RemoteSettingsFromVariables(const GetEnvFunction& getenv) {
  RemoteSettings s;
  std::optional<std::string> url = getenv("JITGEMM_REMOTE_CACHE");
  if (!url || url->empty()) return s;
  absl::StatusOr<RemoteEndpoint> endpoint = ParseRemoteUrl(*url);
  if (!endpoint.ok()) {
    s.problems.push_back(absl::StrCat(endpoint.status().message(), "; the remote tier is off"));
    return s;
  }
  s.endpoint = std::move(endpoint).value();
  s.enabled = true;
  auto millis = [&](const char* name, absl::Duration* out) {
    std::optional<std::string> v = getenv(name);
    if (!v || v->empty()) return;
    double ms = 0;
    if (absl::SimpleAtod(*v, &ms) && ms > 0 && ms < 1e9) {
      *out = absl::Milliseconds(ms);
    } else {
      s.problems.push_back(absl::StrCat(name, "=", QuotedForHumans(*v),
                                        " is not a positive number of milliseconds; using ",
                                        absl::ToInt64Milliseconds(*out)));
    }
  };
  millis("JITGEMM_REMOTE_CACHE_CONNECT_TIMEOUT_MS", &s.connect_timeout);
  millis("JITGEMM_REMOTE_CACHE_TIMEOUT_MS", &s.command_timeout);
  millis("JITGEMM_REMOTE_CACHE_LOCK_TTL_MS", &s.lock_ttl);
  if (std::optional<std::string> v = getenv("JITGEMM_REMOTE_CACHE_RETRY_S"); v && !v->empty()) {
    double seconds = 0;
    if (absl::SimpleAtod(*v, &seconds) && seconds >= 0 && seconds < 1e9) {
      s.retry_after = absl::Seconds(seconds);
    } else {
      s.problems.push_back(absl::StrCat("JITGEMM_REMOTE_CACHE_RETRY_S=", QuotedForHumans(*v),
                                        " is not a number of seconds; using 300"));
    }
  }
  if (std::optional<std::string> v = getenv("JITGEMM_REMOTE_CACHE_MAX_VALUE_BYTES");
      v && !v->empty()) {
    uint64_t bytes = 0;
    std::string digits = *v;
    uint64_t scale = 1;
    if (!digits.empty() && (digits.back() == 'M' || digits.back() == 'm')) {
      scale = uint64_t{1} << 20;
      digits.pop_back();
    } else if (!digits.empty() && (digits.back() == 'K' || digits.back() == 'k')) {
      scale = uint64_t{1} << 10;
      digits.pop_back();
    }
    if (absl::SimpleAtoi(digits, &bytes) && bytes > 0 &&
        bytes <= (kMaxEntryBytesForRemote / scale)) {
      s.max_value_bytes = bytes * scale;
    } else {
      s.problems.push_back(
          absl::StrCat("JITGEMM_REMOTE_CACHE_MAX_VALUE_BYTES=", QuotedForHumans(*v),
                       " is not a byte count up to 256M; using ", kDefaultRemoteMaxValueBytes));
    }
  }
  if (std::optional<std::string> file = getenv("JITGEMM_REMOTE_CACHE_SECRET_FILE");
      file && !file->empty()) {
    s.secret_file = *file;
    std::string why;
    if (std::optional<std::string> secret = ReadSecret(*file, &why)) {
      s.secret = std::move(secret).value();
    } else {
      // Trusting unsigned values because a secret went missing would be a
      // silent downgrade: the tier stays off instead.
      s.enabled = false;
      s.problems.push_back(absl::StrCat("JITGEMM_REMOTE_CACHE_SECRET_FILE ", QuotedForHumans(*file),
                                        " ", why, "; the remote tier is off"));
    }
  }
  return s;
}

RemoteSettings RemoteSettings::FromEnvironment() {
  return RemoteSettingsFromVariables(GetProcessEnv);
}

}  // namespace jitgemm::cache
