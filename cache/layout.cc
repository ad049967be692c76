#include "cache/layout.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "cache/env.h"

namespace jitgemm::cache {
namespace {

bool AllOf(absl::string_view s, int (*pred)(int)) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!pred(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

int IsLowerHex(int c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }
int IsDigit(int c) { return c >= '0' && c <= '9'; }

}  // namespace

std::string LayoutRoot(absl::string_view root) { return JoinPath(root, kLayoutDir); }

std::string KindDir(absl::string_view root, EntryKind kind) {
  return JoinPath(LayoutRoot(root), EntryKindName(kind));
}

std::string ShardDir(absl::string_view root, EntryKind kind, const CacheKey& key) {
  return JoinPath(KindDir(root, kind), key.Hex().substr(0, 2));
}

std::string EntryPath(absl::string_view root, EntryKind kind, const CacheKey& key) {
  return JoinPath(ShardDir(root, kind, key), absl::StrCat(key.Hex(), kEntrySuffix));
}

std::string TempPath(absl::string_view root, EntryKind kind, const CacheKey& key, int pid,
                     uint64_t random) {
  return JoinPath(ShardDir(root, kind, key),
                  absl::StrFormat("%s.tmp.%d.%016x", key.Hex(), pid, random));
}

std::string LockDir(absl::string_view root) { return JoinPath(LayoutRoot(root), "locks"); }

std::string LockPath(absl::string_view root, EntryKind kind, const CacheKey& key) {
  return JoinPath(LockDir(root), absl::StrCat(EntryKindName(kind), "-", key.Hex(), kLockSuffix));
}

bool IsShardName(absl::string_view name) { return name.size() == 2 && AllOf(name, IsLowerHex); }

bool IsEntryFileName(absl::string_view name) {
  if (!absl::ConsumeSuffix(&name, kEntrySuffix)) return false;
  return name.size() == 32 && AllOf(name, IsLowerHex);
}

bool IsTempFileName(absl::string_view name) {
  size_t tmp = name.rfind(".tmp.");
  if (tmp == absl::string_view::npos) return false;
  absl::string_view rest = name.substr(tmp + 5);
  size_t dot = rest.find('.');
  if (dot == absl::string_view::npos) return false;
  return AllOf(rest.substr(0, dot), IsDigit) && AllOf(rest.substr(dot + 1), IsLowerHex);
}

bool IsLockFileName(absl::string_view name) {
  return name.size() > sizeof(kLockSuffix) - 1 && absl::EndsWith(name, kLockSuffix);
}

}  // namespace jitgemm::cache
