#include "cache/shard_walk.h"

#include "absl/strings/str_cat.h"
#include "cache/layout.h"

namespace jitgemm::cache {

absl::Status ForEachShard(
    Env* env, const std::string& root, RootUse use,
    absl::FunctionRef<void(EntryKind, const std::string&, const std::vector<std::string>&)> visit) {
  for (EntryKind kind : kAllEntryKinds) {
    const std::string kind_dir = KindDir(root, kind);
    const std::string kind_rel = absl::StrCat(kLayoutDir, "/", EntryKindName(kind));
    absl::StatusOr<std::vector<FileInfo>> trusted = CheckTrustedFolders(env, root, kind_rel, use);
    if (absl::IsNotFound(trusted.status())) continue;
    if (!trusted.ok()) return trusted.status();
    if (trusted->size() != 3) continue;  // no such kind folder
    absl::StatusOr<std::vector<std::string>> shards = env->ListDir(kind_dir);
    if (absl::IsNotFound(shards.status())) continue;
    if (!shards.ok()) return shards.status();
    for (const std::string& shard : *shards) {
      if (!IsShardName(shard)) continue;
      const std::string dir = JoinPath(kind_dir, shard);
      trusted = CheckTrustedFolders(env, root, absl::StrCat(kind_rel, "/", shard), use);
      if (!trusted.ok()) return trusted.status();
      if (trusted->size() != 4) continue;  // vanished meanwhile
      absl::StatusOr<std::vector<std::string>> names = env->ListDir(dir);
      if (absl::IsNotFound(names.status())) continue;
      if (!names.ok()) return names.status();
      visit(kind, dir, *names);
    }
  }
  return absl::OkStatus();
}

}  // namespace jitgemm::cache
