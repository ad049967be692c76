// Layout: where each file of the disk cache lives under a root.
//
//   <root>/v1/<kind>/<first 2 hex>/<32 hex>.bin          published entries
//   <root>/v1/<kind>/<first 2 hex>/<32 hex>.tmp.<pid>.<random>   being written
//   <root>/v1/locks/<kind>-<32 hex>.lock                  per-key flock files
//
// "v1" is the layout version: a future incompatible layout lives beside this
// one instead of confusing it. Temp files sit in the entry's own directory so
// the publishing rename never crosses a filesystem, and their names never end
// in ".bin", so nothing that scans for entries can pick up a partial file.
// The 256 shard directories keep any one directory small.
//
// Thread safety: pure functions.
#ifndef JITGEMM_CACHE_LAYOUT_H_
#define JITGEMM_CACHE_LAYOUT_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "cache/entry.h"
#include "cache/key.h"

namespace jitgemm::cache {

inline constexpr char kLayoutDir[] = "v1";
inline constexpr char kEntrySuffix[] = ".bin";
inline constexpr char kLockSuffix[] = ".lock";
inline constexpr EntryKind kAllEntryKinds[] = {EntryKind::kCubin, EntryKind::kTuningRecord};

// <root>/v1
std::string LayoutRoot(absl::string_view root);
// <root>/v1/<kind>
std::string KindDir(absl::string_view root, EntryKind kind);
// <root>/v1/<kind>/<first 2 hex>
std::string ShardDir(absl::string_view root, EntryKind kind, const CacheKey& key);
// <root>/v1/<kind>/<first 2 hex>/<32 hex>.bin
std::string EntryPath(absl::string_view root, EntryKind kind, const CacheKey& key);
// <root>/v1/<kind>/<first 2 hex>/<32 hex>.tmp.<pid>.<16 hex>
std::string TempPath(absl::string_view root, EntryKind kind, const CacheKey& key, int pid,
                     uint64_t random);
// <root>/v1/locks
std::string LockDir(absl::string_view root);
// <root>/v1/locks/<kind>-<32 hex>.lock
std::string LockPath(absl::string_view root, EntryKind kind, const CacheKey& key);

// "<2 lowercase hex>", a shard directory's name.
bool IsShardName(absl::string_view name);
// "<32 hex>.bin" exactly.
bool IsEntryFileName(absl::string_view name);
// "<anything>.tmp.<digits>.<hex>".
bool IsTempFileName(absl::string_view name);
// "<anything>.lock".
bool IsLockFileName(absl::string_view name);

}  // namespace jitgemm::cache

#endif  // JITGEMM_CACHE_LAYOUT_H_
