// Folder trust: which folders and entry files under a cache root the cache
// may read a cubin from or write one to.
//
// A cubin from the cache runs in every process that loads it, so whoever can
// replace an entry, or a folder on the way to one, can run code in all of
// them. The rule is the same for every object from a root down to an entry,
// in writable and read-only roots alike:
//   - nothing below the root is a symlink (each component is opened with
//     O_NOFOLLOW from the folder above it, Env::StatUnder); the root itself
//     may be a link, since its owner chose it;
//   - nothing is writable by every user (group write is allowed: per-user
//     groups default to umask 002, and a team may share a cache on purpose);
//   - a writable root belongs to this user or root, and so does everything
//     in it; in a read-only root everything belongs to this user, root or the
//     root's owner (who could rename anything inside anyway).
// Folders must be folders and entry files regular files. A failing folder
// disables the whole root (the caller warns once); a failing entry file is
// only that entry refused.
//
// Thread safety: pure functions over the Env they are given.
#ifndef JITGEMM_CACHE_FOLDER_TRUST_H_
#define JITGEMM_CACHE_FOLDER_TRUST_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cache/env.h"

namespace jitgemm::cache {

enum class RootUse { kWritable, kReadOnly };

// Walks `relative` below `root` (Env::StatUnder) and checks the root and
// every folder on the way; with `last_is_file`, the last component of
// `relative` is left to CheckTrustedFile. Returns the infos, root first,
// shorter when a component does not exist yet. FailedPrecondition naming the
// first folder that fails the rule; NotFound if `root` does not exist.
absl::StatusOr<std::vector<FileInfo>> CheckTrustedFolders(Env* env, const std::string& root,
                                                          absl::string_view relative, RootUse use,
                                                          bool last_is_file = false);

// The rule for an entry (or manifest) file `info` at `path` in a root owned
// by `root_owner`: a regular file, not a symlink, owner and mode as above.
absl::Status CheckTrustedFile(const FileInfo& info, const std::string& path, RootUse use,
                              uint32_t root_owner);

// locks/: a folder by the rule above, or a plain file, which only makes
// locking unavailable (duplicate compiles, RELIABILITY 7), never a stall. A
// symlink there is refused like any other.
absl::Status CheckTrustedLockDir(Env* env, const std::string& root, RootUse use);

// The root, v1/, every kind folder and locks/ that exist. FailedPrecondition
// naming the first that fails; NotFound if `root` does not exist.
absl::Status CheckTrustedLayout(Env* env, const std::string& root, RootUse use);

// CheckTrustedLayout, and every shard folder (Env::StatChildren: one listing
// per kind folder, not a walk from the root per shard).
absl::Status CheckTrustedTree(Env* env, const std::string& root, RootUse use);

}  // namespace jitgemm::cache

#endif  // JITGEMM_CACHE_FOLDER_TRUST_H_
