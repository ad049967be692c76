// DiskCache's roots: which of them a cache uses, checked when it opens, and
// how the writable root loses trust while it runs. A read-only root is used
// only if every folder on its path is trusted (cache/folder_trust.h); the
// writable root likewise, or the cache runs read-only or off with a warning
// that says why. A folder found untrusted later (another user took it over)
// makes the cache stop writing, with one warning; a removed root does not.
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cache/disk_cache.h"
#include "cache/folder_trust.h"
#include "cache/layout.h"
#include "cache/log.h"

namespace jitgemm::cache {

void DiskCache::CheckRoots() {
  for (const std::string& problem : settings_.problems) LogCacheWarning(problem);
  if (settings_.mode == CacheMode::kOff) return;
  LoadTrustedKeys();
  CheckReadOnlyRoots();
  mode_ = readonly_roots_.empty() ? CacheMode::kOff : CacheMode::kReadOnly;
  CheckWritableRoot();
}

void DiskCache::CheckReadOnlyRoots() {
  std::set<std::string> seen;
  std::vector<std::string> absent;
  for (const std::string& ro : settings_.readonly_roots) {
    if (!seen.insert(ro).second) continue;  // listed twice: checked once
    absl::Status trusted = CheckTrustedTree(env_, ro, RootUse::kReadOnly);
    if (absl::IsNotFound(trusted)) {
      absent.push_back(ro);
      continue;
    }
    if (trusted.ok() && trusted_keys_.has_value()) trusted = CheckSignedRoot(ro);
    if (trusted.ok()) {
      readonly_roots_.push_back(ro);
      continue;
    }
    LogCacheWarning(absl::StrCat("ignoring read-only cache root ", QuotedForHumans(ro), ": ",
                                 trusted.message()));
  }
  if (!absent.empty()) {
    // One line however many: a fleet's list of bundle mounts may be long.
    constexpr size_t kNamed = 3;
    std::vector<std::string> named;
    for (size_t i = 0; i < absent.size() && i < kNamed; ++i) {
      named.push_back(QuotedForHumans(absent[i]));
    }
    LogCacheWarning(absl::StrCat(
        "ignoring ", absent.size(), " read-only cache root", absent.size() == 1 ? "" : "s",
        " that do not exist: ", absl::StrJoin(named, ", "),
        absent.size() > kNamed ? absl::StrCat(" and ", absent.size() - kNamed, " more") : ""));
  }
}

void DiskCache::CheckWritableRoot() {
  auto unusable = [&](absl::string_view why) {
    LogCacheWarning(absl::StrCat(
        "cannot use cache directory ", QuotedForHumans(root_), ": ", why,
        ". Kernels will be compiled in memory and not kept for other processes. Point "
        "JITGEMM_CACHE_DIR at a directory only you can write, or set JITGEMM_CACHE=off."));
  };
  if (root_.empty()) {
    unusable("no directory (JITGEMM_CACHE_DIR, XDG_CACHE_HOME and HOME are all unset)");
    return;
  }
  absl::StatusOr<FileInfo> info = env_->Stat(root_);
  if (absl::IsNotFound(info.status())) {
    if (settings_.mode == CacheMode::kReadOnly) return;  // nothing to read, nothing to report
    absl::Status made = env_->CreateDirs(root_);
    if (!made.ok()) return unusable(absl::StrCat("it cannot be created (", made.message(), ")"));
  } else if (!info.ok()) {
    return unusable(info.status().message());
  } else if (!info->is_directory) {
    return unusable("it exists and is not a directory");
  }
  // Checked before anything is created in it: mkdir -p would follow a
  // symlinked v1/ out of the root.
  absl::Status trusted = CheckTrustedTree(env_, root_, RootUse::kWritable);
  if (!trusted.ok()) return unusable(trusted.message());
  root_readable_ = true;
  mode_ = CacheMode::kReadOnly;
  if (settings_.mode == CacheMode::kReadOnly) return;

  absl::Status made = absl::OkStatus();
  for (EntryKind kind : kAllEntryKinds) {
    if (made.ok()) made = env_->CreateDirs(KindDir(root_, kind));
    if (made.ok() && !env_->IsWritableDir(KindDir(root_, kind))) {
      made = absl::PermissionDeniedError(
          absl::StrCat(QuotedForHumans(KindDir(root_, kind)), " is read-only"));
    }
  }
  if (!made.ok()) {
    LogCacheWarning(absl::StrCat("cache directory ", QuotedForHumans(root_), " cannot be written (",
                                 made.message(),
                                 "); using its entries read-only and compiling misses in memory"));
    return;
  }
  // A lock directory that cannot be made only costs duplicate compiles; the
  // first GetOrCreate reports it.
  env_->CreateDirs(LockDir(root_)).IgnoreError();
  // What was just made is checked like what was found (a racing creator).
  // Shard folders made since the walk above are checked where they are used,
  // as every entry's path is.
  trusted = CheckTrustedLayout(env_, root_, RootUse::kWritable);
  if (!trusted.ok()) {
    root_readable_ = false;
    mode_ = readonly_roots_.empty() ? CacheMode::kOff : CacheMode::kReadOnly;
    return unusable(trusted.message());
  }
  mode_ = CacheMode::kReadWrite;
}

bool DiskCache::WritableRootTrusted(absl::string_view relative, bool last_is_file,
                                    std::vector<FileInfo>* infos) {
  if (distrusted_.load()) return false;
  absl::StatusOr<std::vector<FileInfo>> checked =
      CheckTrustedFolders(env_, root_, relative, RootUse::kWritable, last_is_file);
  if (checked.ok()) {
    if (infos != nullptr) *infos = std::move(checked).value();
    return true;
  }
  return Distrust(checked.status());
}

bool DiskCache::LockDirTrusted() {
  if (distrusted_.load()) return false;
  absl::Status checked = CheckTrustedLockDir(env_, root_, RootUse::kWritable);
  return checked.ok() || Distrust(checked);
}

bool DiskCache::Distrust(const absl::Status& why) {
  if (absl::IsNotFound(why)) return false;  // the root was removed
  if (!distrusted_.exchange(true)) {
    LogCacheWarning(absl::StrCat("no longer using cache directory ", QuotedForHumans(root_), ": ",
                                 why.message(),
                                 ". Kernels will be compiled in memory from now on."));
  }
  return false;
}

}  // namespace jitgemm::cache
