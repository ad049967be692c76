// Walks the published layout of a cache root (cache/layout.h): every shard
// directory of every entry kind, for listing, eviction, verification and
// bundles.
//
// Thread safety: as the Env it is given.
#ifndef JITGEMM_CACHE_SHARD_WALK_H_
#define JITGEMM_CACHE_SHARD_WALK_H_

#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "cache/entry.h"
#include "cache/env.h"
#include "cache/folder_trust.h"

namespace jitgemm::cache {

// Calls `visit(kind, shard_dir, names)` for every shard directory under root;
// kinds or shards that vanish meanwhile are skipped, other listing errors end
// the walk and are returned. Every kind and shard folder is checked by the
// folder-trust rule (cache/folder_trust.h) for `use` before it is listed, so
// nothing is ever visited (and deleted) through a symlink or in a folder
// another user controls: such a folder ends the walk with FailedPrecondition.
absl::Status ForEachShard(
    Env* env, const std::string& root, RootUse use,
    absl::FunctionRef<void(EntryKind, const std::string&, const std::vector<std::string>&)> visit);

}  // namespace jitgemm::cache

#endif  // JITGEMM_CACHE_SHARD_WALK_H_
