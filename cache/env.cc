#include "cache/env.h"

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
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

absl::StatusOr<std::vector<ChildInfo>> Env::StatChildren(const std::string& root,
                                                         absl::string_view relative) {
  absl::StatusOr<std::vector<FileInfo>> path = StatUnder(root, relative);
  if (!path.ok()) return path.status();
  const size_t depth =
      std::vector<absl::string_view>(absl::StrSplit(relative, '/', absl::SkipEmpty())).size();
  // StatUnder's walk stops early at what is missing or is no folder.
  if (path->size() != depth + 1) {
    if (path->back().is_directory) {
      return absl::NotFoundError(absl::StrCat("'", JoinPath(root, relative), "' does not exist"));
    }
    return absl::FailedPreconditionError(
        absl::StrCat("a component of '", JoinPath(root, relative), "' is not a directory"));
  }
  if (!path->back().is_directory) {
    return absl::FailedPreconditionError(
        absl::StrCat("'", JoinPath(root, relative), "' is not a directory"));
  }
  absl::StatusOr<std::vector<std::string>> names = ListDir(JoinPath(root, relative));
  if (!names.ok()) return names.status();
  std::vector<ChildInfo> out;
  for (std::string& name : *names) {
    absl::StatusOr<std::vector<FileInfo>> child =
        StatUnder(root, absl::StrCat(relative, "/", name));
    if (!child.ok()) return child.status();
    if (child->size() != depth + 2) continue;  // removed meanwhile
    out.push_back({std::move(name), child->back()});
  }
  return out;
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
