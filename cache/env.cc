#include "cache/env.h"

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "cache/real_env.h"

namespace jitgemm::cache {

absl::Status ErrnoToStatus(int error, absl::string_view context) {
  std::string message = absl::StrCat(context, ": ", std::strerror(error), " [errno ", error, "]");
  switch (error) {
    case ENOENT:
    case ENOTDIR:
      return absl::NotFoundError(message);
    case EEXIST:
      return absl::AlreadyExistsError(message);
    case EACCES:
    case EPERM:
    case EROFS:
      return absl::PermissionDeniedError(message);
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
      return absl::ResourceExhaustedError(message);
    case EAGAIN:
    case EBUSY:
    case EINTR:
      return absl::UnavailableError(message);
    case ENOLCK:
    case EOPNOTSUPP:
    case ENOSYS:
      return absl::UnimplementedError(message);
    case EXDEV:
    case EISDIR:
      return absl::FailedPreconditionError(message);
    default:
      return absl::InternalError(message);
  }
}

Env* Env::Default() {
  // Leaked on purpose: DiskCache::Default() may still use it during exit.
  static Env* const env = new RealEnv();
  return env;
}

std::string JoinPath(absl::string_view a, absl::string_view b) {
  if (a.empty()) return std::string(b);
  if (b.empty()) return std::string(a);
  bool a_slash = a.back() == '/';
  bool b_slash = b.front() == '/';
  if (a_slash && b_slash) return absl::StrCat(a, b.substr(1));
  if (a_slash || b_slash) return absl::StrCat(a, b);
  return absl::StrCat(a, "/", b);
}

}  // namespace jitgemm::cache
