#include "cache/shard_walk.h"

#include "cache/layout.h"

namespace jitgemm::cache {

absl::Status ForEachShard(
    Env* env, const std::string& root,
    absl::FunctionRef<void(EntryKind, const std::string&, const std::vector<std::string>&)> visit) {
  for (EntryKind kind : kAllEntryKinds) {
    const std::string kind_dir = KindDir(root, kind);
    absl::StatusOr<std::vector<std::string>> shards = env->ListDir(kind_dir);
    if (absl::IsNotFound(shards.status())) continue;
    if (!shards.ok()) return shards.status();
    for (const std::string& shard : *shards) {
      if (!IsShardName(shard)) continue;
      const std::string dir = JoinPath(kind_dir, shard);
      absl::StatusOr<std::vector<std::string>> names = env->ListDir(dir);
      if (absl::IsNotFound(names.status())) continue;
      if (!names.ok()) return names.status();
      visit(kind, dir, *names);
    }
  }
  return absl::OkStatus();
}

}  // namespace jitgemm::cache
