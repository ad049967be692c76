#include "cache/folder_trust.h"

#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "cache/layout.h"
#include "cache/log.h"

namespace jitgemm::cache {
namespace {

// Owner and mode, for any object at or below a root.
absl::Status CheckOwnerAndMode(const FileInfo& info, const std::string& path, RootUse use,
                               uint32_t root_owner, bool is_root) {
  if (info.mode & S_IWOTH) {
    return absl::FailedPreconditionError(absl::StrFormat("%s is writable by every user (mode %04o)",
                                                         QuotedForHumans(path), info.mode));
  }
  const uint32_t me = static_cast<uint32_t>(::geteuid());
  if (info.uid == me || info.uid == 0) return absl::OkStatus();
  if (use == RootUse::kReadOnly && (is_root || info.uid == root_owner)) return absl::OkStatus();
  if (use == RootUse::kWritable) {
    return absl::FailedPreconditionError(
        absl::StrFormat("%s belongs to uid %d, not to this user (uid %d) or root",
                        QuotedForHumans(path), info.uid, me));
  }
  return absl::FailedPreconditionError(
      absl::StrFormat("%s belongs to uid %d, not to this user (uid %d), root or the owner of "
                      "the read-only root (uid %d)",
                      QuotedForHumans(path), info.uid, me, root_owner));
}

absl::Status CheckFolder(const FileInfo& info, const std::string& path, RootUse use,
                         uint32_t root_owner, bool is_root) {
  if (info.is_symlink) {
    return absl::FailedPreconditionError(
        absl::StrCat(QuotedForHumans(path), " is a symlink (never followed inside a cache root)"));
  }
  if (!info.is_directory) {
    return absl::FailedPreconditionError(
        absl::StrCat(QuotedForHumans(path), " is not a directory"));
  }
  return CheckOwnerAndMode(info, path, use, root_owner, is_root);
}

}  // namespace

absl::StatusOr<std::vector<FileInfo>> CheckTrustedFolders(Env* env, const std::string& root,
                                                          absl::string_view relative, RootUse use,
                                                          bool last_is_file) {
  absl::StatusOr<std::vector<FileInfo>> infos = env->StatUnder(root, relative);
  if (!infos.ok()) return infos.status();
  const std::vector<absl::string_view> parts = absl::StrSplit(relative, '/', absl::SkipEmpty());
  const uint32_t root_owner = infos->front().uid;
  std::string path = root;
  for (size_t i = 0; i < infos->size(); ++i) {
    if (i > 0) path = JoinPath(path, parts[i - 1]);
    if (last_is_file && i == parts.size()) break;
    absl::Status s = CheckFolder((*infos)[i], path, use, root_owner, i == 0);
    if (!s.ok()) return s;
  }
  return infos;
}

absl::Status CheckTrustedFile(const FileInfo& info, const std::string& path, RootUse use,
                              uint32_t root_owner) {
  if (info.is_symlink)
    return absl::FailedPreconditionError(absl::StrCat(QuotedForHumans(path), " is a symlink"));
  if (!info.is_regular) {
    return absl::FailedPreconditionError(
        absl::StrCat(QuotedForHumans(path), " is not a regular file"));
  }
  return CheckOwnerAndMode(info, path, use, root_owner, /*is_root=*/false);
}

absl::Status CheckTrustedLockDir(Env* env, const std::string& root, RootUse use) {
  const std::string locks = absl::StrCat(kLayoutDir, "/locks");
  absl::StatusOr<std::vector<FileInfo>> infos =
      CheckTrustedFolders(env, root, locks, use, /*last_is_file=*/true);
  if (!infos.ok()) return infos.status();
  if (infos->size() != 3 || infos->back().is_regular) return absl::OkStatus();
  return CheckTrustedFolders(env, root, locks, use).status();
}

absl::Status CheckTrustedLayout(Env* env, const std::string& root, RootUse use) {
  absl::Status locks = CheckTrustedLockDir(env, root, use);
  if (!locks.ok()) return locks;
  for (EntryKind kind : kAllEntryKinds) {
    const std::string kind_dir = absl::StrCat(kLayoutDir, "/", EntryKindName(kind));
    absl::StatusOr<std::vector<FileInfo>> infos = CheckTrustedFolders(env, root, kind_dir, use);
    if (!infos.ok()) return infos.status();
  }
  return absl::OkStatus();
}

absl::Status CheckTrustedTree(Env* env, const std::string& root, RootUse use) {
  absl::Status layout = CheckTrustedLayout(env, root, use);
  if (!layout.ok()) return layout;
  for (EntryKind kind : kAllEntryKinds) {
    const std::string kind_dir = absl::StrCat(kLayoutDir, "/", EntryKindName(kind));
    // The kind folder passed above; its shards are read in one listing, each
    // stat'ed without following a link.
    absl::StatusOr<std::vector<ChildInfo>> children = env->StatChildren(root, kind_dir);
    if (absl::IsNotFound(children.status())) continue;  // no such folder yet
    if (!children.ok()) return children.status();
    uint32_t root_owner = 0;
    if (!children->empty()) {
      absl::StatusOr<std::vector<FileInfo>> top = env->StatUnder(root, "");
      if (!top.ok()) return top.status();
      root_owner = top->front().uid;
    }
    const std::string folder = JoinPath(root, kind_dir);
    for (const ChildInfo& child : *children) {
      if (!IsShardName(child.name)) continue;
      absl::Status s =
          CheckFolder(child.info, JoinPath(folder, child.name), use, root_owner, /*is_root=*/false);
      if (!s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace jitgemm::cache
