#include "cache/entry_listing.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "cache/layout.h"
#include "cache/shard_walk.h"

namespace jitgemm::cache {

std::optional<EntryKind> EntryPathKind(absl::string_view relative_path) {
  std::vector<absl::string_view> parts = absl::StrSplit(relative_path, '/');
  if (parts.size() != 4 || parts[0] != kLayoutDir || !IsShardName(parts[2]) ||
      !IsEntryFileName(parts[3])) {
    return std::nullopt;
  }
  for (EntryKind kind : kAllEntryKinds) {
    if (parts[1] == EntryKindName(kind)) return kind;
  }
  return std::nullopt;
}

std::string EntryRelativePath(EntryKind kind, const CacheKey& key) {
  const std::string hex = key.Hex();
  return absl::StrCat(kLayoutDir, "/", EntryKindName(kind), "/", hex.substr(0, 2), "/", hex,
                      kEntrySuffix);
}

std::optional<EntryKind> ParseEntryRelativePath(absl::string_view relative_path) {
  std::optional<EntryKind> kind = EntryPathKind(relative_path);
  if (!kind) return std::nullopt;
  std::vector<absl::string_view> parts = absl::StrSplit(relative_path, '/');
  if (!absl::StartsWith(parts[3], parts[2])) return std::nullopt;
  return kind;
}

absl::StatusOr<std::vector<EntryFileInfo>> ListEntryFiles(Env* env, const std::string& root,
                                                          RootUse use) {
  std::vector<EntryFileInfo> out;
  absl::StatusOr<FileInfo> root_info = env->Stat(root);
  if (absl::IsNotFound(root_info.status())) return out;
  if (!root_info.ok()) return root_info.status();
  absl::Status walked = ForEachShard(
      env, root, use,
      [&](EntryKind kind, const std::string& dir, const std::vector<std::string>& names) {
        const std::string shard = dir.substr(dir.rfind('/') + 1);
        for (const std::string& name : names) {
          if (!IsEntryFileName(name)) continue;
          EntryFileInfo e;
          e.kind = kind;
          e.path = JoinPath(dir, name);
          e.relative_path =
              absl::StrCat(kLayoutDir, "/", EntryKindName(kind), "/", shard, "/", name);
          absl::StatusOr<FileInfo> info = env->Stat(e.path);
          if (!info.ok()) continue;  // gone meanwhile (evicted, replaced)
          e.size = info->size;
          e.mtime = info->mtime;
          // Stat follows a link; reading never does (Env::ReadFile), so a
          // symlinked entry is refused there.
          absl::Status trusted = CheckTrustedFile(*info, e.path, use, root_info->uid);
          if (!trusted.ok()) e.untrusted = std::string(trusted.message());
          out.push_back(std::move(e));
        }
      });
  if (!walked.ok()) return walked;
  std::sort(out.begin(), out.end(), [](const EntryFileInfo& a, const EntryFileInfo& b) {
    return a.relative_path < b.relative_path;
  });
  return out;
}

absl::StatusOr<EntryView> CheckEntryFile(absl::string_view relative_path, std::string_view bytes) {
  std::optional<EntryKind> kind = EntryPathKind(relative_path);
  if (!kind) {
    return absl::DataLossError(absl::StrCat("'", relative_path, "' is not an entry path"));
  }
  absl::StatusOr<EntryView> view = ParseEntry(bytes);
  if (!view.ok()) return view.status();
  if (view->kind != *kind) {
    return absl::DataLossError(absl::StrCat("holds a ", EntryKindName(view->kind), " entry in the ",
                                            EntryKindName(*kind), " directory"));
  }
  const std::string hex = MakeCacheKey(std::string(view->key_text)).Hex();
  std::vector<absl::string_view> parts = absl::StrSplit(relative_path, '/');
  if (parts[3] != absl::StrCat(hex, kEntrySuffix)) {
    return absl::DataLossError(
        "its file name is not the hash of its key text (a renamed or swapped file)");
  }
  if (parts[2] != hex.substr(0, 2)) {
    return absl::DataLossError("it is in the wrong shard directory");
  }
  return view;
}

std::string EntryChecksumHex(std::string_view bytes) {
  uint64_t sum = 0;
  if (bytes.size() >= kEntryTrailerBytes) {
    for (size_t i = 0; i < kEntryTrailerBytes; ++i) {
      sum |= uint64_t{static_cast<unsigned char>(bytes[bytes.size() - kEntryTrailerBytes + i])}
             << (8 * i);
    }
  }
  return absl::StrFormat("%016x", sum);
}

std::string KeyTextField(std::string_view key_text, std::string_view field) {
  const std::string prefix = absl::StrCat(absl::string_view(field.data(), field.size()), "=");
  for (absl::string_view line :
       absl::StrSplit(absl::string_view(key_text.data(), key_text.size()), '\n')) {
    if (absl::ConsumePrefix(&line, prefix)) return std::string(line);
  }
  return "";
}

absl::StatusOr<RootVerifyReport> VerifyRoot(Env* env, const std::string& root, RootUse use) {
  absl::StatusOr<std::vector<EntryFileInfo>> entries = ListEntryFiles(env, root, use);
  if (!entries.ok()) return entries.status();
  RootVerifyReport report;
  for (const EntryFileInfo& e : *entries) {
    absl::StatusOr<std::string> bytes =
        e.untrusted.empty()
            ? env->ReadFile(e.path, kMaxEntryFileBytes)
            : absl::StatusOr<std::string>(absl::FailedPreconditionError(e.untrusted));
    if (absl::IsNotFound(bytes.status())) continue;  // evicted meanwhile
    ++report.entries;
    absl::Status s = bytes.status();
    if (s.ok()) s = CheckEntryFile(e.relative_path, *bytes).status();
    if (s.ok()) {
      ++report.valid;
      report.bytes += bytes->size();
    } else {
      report.corrupt.push_back({e.path, std::string(s.message())});
    }
  }
  return report;
}

}  // namespace jitgemm::cache
