// jitgemm-cache stats, verify, prune, clear: the cache in place.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "cache/bundle.h"
#include "cache/disk_cache.h"
#include "cache/layout.h"
#include "cache/log.h"
#include "tools/cache/commands.h"

namespace jitgemm::tools {

using cache::CacheMode;
using cache::DiskCache;
using cache::EntryKind;

void Complain(absl::string_view message) {
  std::fprintf(stderr, "jitgemm-cache: %s\n", Esc(message).c_str());
}

std::string Esc(absl::string_view text) {
  std::string out;
  for (char c : text) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f && c != '\\') {
      out.push_back(c);
    } else {
      absl::StrAppend(&out, absl::CHexEscape(absl::string_view(&c, 1)));
    }
  }
  return out;
}

std::optional<uint64_t> ParseByteCount(absl::string_view text) {
  std::string v = absl::AsciiStrToUpper(absl::StripAsciiWhitespace(text));
  absl::string_view digits = v;
  if (!absl::ConsumeSuffix(&digits, "IB")) absl::ConsumeSuffix(&digits, "B");
  int shift = 0;
  if (!digits.empty()) {
    const char unit = digits.back();
    const int shifts[] = {10, 20, 30, 40};
    const char* units = "KMGT";
    for (int i = 0; i < 4; ++i) {
      if (unit == units[i]) {
        shift = shifts[i];
        digits.remove_suffix(1);
        break;
      }
    }
  }
  uint64_t n = 0;
  if (digits.empty() || !absl::SimpleAtoi(digits, &n)) return std::nullopt;
  if (shift > 0 && n > (~uint64_t{0} >> shift)) return std::nullopt;
  return n << shift;
}

std::string Bytes(uint64_t bytes) {
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int unit = -1;
  while (v >= 1024 && unit < 3) {
    v /= 1024;
    ++unit;
  }
  if (unit < 0) return absl::StrCat(bytes, " bytes");
  return absl::StrFormat("%d bytes (%.1f %s)", bytes, v, units[unit]);
}

namespace {

constexpr EntryKind kKinds[] = {EntryKind::kCubin, EntryKind::kTuningRecord};

std::string Kind(EntryKind kind) { return cache::EntryKindName(kind); }

struct RootListing {
  uint64_t entries[2] = {0, 0};
  uint64_t bytes[2] = {0, 0};
  absl::Time oldest = absl::InfiniteFuture(), newest = absl::InfinitePast();
};

absl::StatusOr<RootListing> ListRoot(const std::string& root, cache::RootUse use) {
  absl::StatusOr<std::vector<cache::EntryFileInfo>> files =
      cache::ListEntryFiles(cache::Env::Default(), root, use);
  if (!files.ok()) return files.status();
  RootListing out;
  for (const cache::EntryFileInfo& f : *files) {
    const int k = f.kind == EntryKind::kCubin ? 0 : 1;
    ++out.entries[k];
    out.bytes[k] += f.size;
    out.oldest = std::min(out.oldest, f.mtime);
    out.newest = std::max(out.newest, f.mtime);
  }
  return out;
}

// Temp files (of live or dead writers) and lock files under a writable root.
void CountLeftovers(const std::string& root, int* temps, int* old_temps, int* locks) {
  cache::Env* env = cache::Env::Default();
  const absl::Time hour_ago = absl::Now() - absl::Hours(1);
  *temps = *old_temps = *locks = 0;
  for (EntryKind kind : kKinds) {
    absl::StatusOr<std::vector<std::string>> shards = env->ListDir(cache::KindDir(root, kind));
    if (!shards.ok()) continue;
    for (const std::string& shard : *shards) {
      const std::string dir = cache::JoinPath(cache::KindDir(root, kind), shard);
      absl::StatusOr<std::vector<std::string>> names = env->ListDir(dir);
      if (!names.ok()) continue;
      for (const std::string& name : *names) {
        if (!cache::IsTempFileName(name)) continue;
        ++*temps;
        absl::StatusOr<cache::FileInfo> info = env->Stat(cache::JoinPath(dir, name));
        if (info.ok() && info->mtime < hour_ago) ++*old_temps;
      }
    }
  }
  absl::StatusOr<std::vector<std::string>> names = env->ListDir(cache::LockDir(root));
  if (names.ok()) {
    *locks = static_cast<int>(std::count_if(names->begin(), names->end(), [](const std::string& n) {
      return cache::IsLockFileName(n);
    }));
  }
}

void PrintCounters(const DiskCache& c) {
  const cache::CacheCounters n = c.counters();
  std::printf(
      "counters (this process): hits %llu, misses %llu, shared %llu, compiles %llu, stores %llu, "
      "corrupt %llu, evictions %llu, lock waits %llu, store failures %llu\n",
      static_cast<unsigned long long>(n.hits), static_cast<unsigned long long>(n.misses),
      static_cast<unsigned long long>(n.shared), static_cast<unsigned long long>(n.compiles),
      static_cast<unsigned long long>(n.stores), static_cast<unsigned long long>(n.corrupt),
      static_cast<unsigned long long>(n.evictions), static_cast<unsigned long long>(n.lock_waits),
      static_cast<unsigned long long>(n.store_failures));
}

bool WritableRootReadable(const DiskCache& c) {
  // A read-only mode with the root among the usable ones still reads it;
  // kOff and an unusable root do not.
  if (c.mode() == CacheMode::kOff) return false;
  absl::StatusOr<cache::FileInfo> info = cache::Env::Default()->Stat(c.root());
  return info.ok() && info->is_directory;
}

}  // namespace

std::shared_ptr<DiskCache> OpenForLooking() {
  cache::CacheSettings settings = cache::CacheSettings::FromEnvironment();
  if (settings.mode == CacheMode::kReadWrite) settings.mode = CacheMode::kReadOnly;
  return DiskCache::Open(std::move(settings));
}

int StatsCommand() {
  std::shared_ptr<DiskCache> c = OpenForLooking();
  const CacheMode configured = cache::CacheSettings::FromEnvironment().mode;
  std::printf("root: %s\n", cache::QuotedForHumans(c->root()).c_str());
  // Opened read-only so as to create nothing; a process would write a
  // usable root it may write to.
  const CacheMode mode = configured == CacheMode::kReadWrite && c->root_usable() &&
                                 cache::Env::Default()->IsWritableDir(c->root())
                             ? CacheMode::kReadWrite
                             : c->mode();
  std::printf("mode: %s (configured: %s)\n", cache::CacheModeName(mode),
              cache::CacheModeName(configured));
  std::printf("size cap: %s\n", Bytes(c->settings().max_bytes).c_str());
  std::printf("read-only roots: %s\n", c->readonly_roots().empty()
                                           ? "none"
                                           : absl::StrJoin(c->readonly_roots(), ":").c_str());
  for (const std::string& ro : c->settings().readonly_roots) {
    if (std::find(c->readonly_roots().begin(), c->readonly_roots().end(), ro) ==
        c->readonly_roots().end()) {
      std::printf("ignored read-only root: %s (see the warning above)\n", Esc(ro).c_str());
    }
  }
  int status = kExitOk;
  std::printf("\n| root | tier | kind | entries | bytes |\n| --- | --- | --- | --- | --- |\n");
  std::vector<std::pair<std::string, std::string>> roots;
  for (const std::string& ro : c->readonly_roots()) roots.push_back({ro, "read-only"});
  if (WritableRootReadable(*c)) roots.push_back({c->root(), "writable"});
  std::optional<RootListing> writable;
  for (const auto& [root, tier] : roots) {
    absl::StatusOr<RootListing> l =
        ListRoot(root, tier == "writable" ? cache::RootUse::kWritable : cache::RootUse::kReadOnly);
    if (!l.ok()) {
      Complain(absl::StrCat("cannot list ", root, ": ", l.status().ToString()));
      status = kExitProblems;
      continue;
    }
    for (int k = 0; k < 2; ++k) {
      std::printf("| %s | %s | %s | %llu | %llu |\n", Esc(root).c_str(), tier.c_str(),
                  Kind(kKinds[k]).c_str(), static_cast<unsigned long long>(l->entries[k]),
                  static_cast<unsigned long long>(l->bytes[k]));
    }
    if (tier == "writable") writable = *l;
  }
  if (writable.has_value()) {
    const uint64_t total = writable->bytes[0] + writable->bytes[1];
    std::printf("\nwritable root: %llu entries, %s, %.1f%% of the cap\n",
                static_cast<unsigned long long>(writable->entries[0] + writable->entries[1]),
                Bytes(total).c_str(),
                100.0 * static_cast<double>(total) /
                    static_cast<double>(std::max<uint64_t>(1, c->settings().max_bytes)));
    if (writable->entries[0] + writable->entries[1] > 0) {
      std::printf(
          "least recently used: %s, most recently used: %s\n",
          absl::FormatTime("%Y-%m-%d %H:%M:%S", writable->oldest, absl::LocalTimeZone()).c_str(),
          absl::FormatTime("%Y-%m-%d %H:%M:%S", writable->newest, absl::LocalTimeZone()).c_str());
    }
    int temps = 0, old_temps = 0, locks = 0;
    CountLeftovers(c->root(), &temps, &old_temps, &locks);
    std::printf("temp files: %d (%d older than an hour: left by dead writers), lock files: %d\n",
                temps, old_temps, locks);
  } else {
    std::printf("\nwritable root: not in use\n");
  }
  PrintCounters(*c);
  return status;
}

int VerifyCommand() {
  const bool remove = absl::GetFlag(FLAGS_remove_corrupt);
  std::shared_ptr<DiskCache> c = remove ? DiskCache::Default() : OpenForLooking();
  std::vector<std::pair<std::string, bool>> roots;  // root, writable
  for (const std::string& ro : c->readonly_roots()) roots.push_back({ro, false});
  if (WritableRootReadable(*c)) roots.push_back({c->root(), true});
  if (roots.empty()) {
    Complain("no cache root in use (see the warnings above)");
    return kExitProblems;
  }
  uint64_t remaining = 0;
  std::printf("| root | tier | entries | valid | corrupt |\n| --- | --- | --- | --- | --- |\n");
  std::vector<std::string> lines;
  for (const auto& [root, writable] : roots) {
    absl::StatusOr<cache::RootVerifyReport> r =
        cache::VerifyRoot(cache::Env::Default(), root,
                          writable ? cache::RootUse::kWritable : cache::RootUse::kReadOnly);
    if (!r.ok()) {
      Complain(absl::StrCat("cannot verify ", root, ": ", r.status().ToString()));
      remaining += 1;
      continue;
    }
    std::printf("| %s | %s | %llu | %llu | %zu |\n", Esc(root).c_str(),
                writable ? "writable" : "read-only", static_cast<unsigned long long>(r->entries),
                static_cast<unsigned long long>(r->valid), r->corrupt.size());
    for (const cache::BadEntry& bad : r->corrupt) {
      lines.push_back(absl::StrCat("corrupt: ", bad.path, ": ", bad.reason));
    }
    uint64_t left = r->corrupt.size();
    if (writable && remove && !r->corrupt.empty()) {
      if (c->mode() != CacheMode::kReadWrite) {
        lines.push_back(absl::StrCat("cannot remove corrupt entries: the cache is ",
                                     cache::CacheModeName(c->mode())));
      } else {
        // Verify re-reads before deleting, so an entry replaced by a sound one
        // meanwhile is kept.
        absl::StatusOr<cache::VerifyReport> removed = c->Verify(/*remove_corrupt=*/true);
        if (removed.ok()) {
          left = 0;
          lines.push_back(
              absl::StrCat("removed ", removed->corrupt.size(), " corrupt entries from ", root));
        } else {
          lines.push_back(absl::StrCat("removing failed: ", removed.status().ToString()));
        }
      }
    }
    remaining += left;
  }
  if (!lines.empty()) std::printf("\n%s\n", absl::StrJoin(lines, "\n").c_str());
  if (remaining > 0 && !remove) {
    std::printf(
        "corrupt entries are misses (jitgemm rebuilds them); delete them with "
        "`jitgemm-cache verify --remove-corrupt`\n");
  }
  return remaining > 0 ? kExitProblems : kExitOk;
}

int PruneCommand() {
  std::shared_ptr<DiskCache> c = DiskCache::Default();
  uint64_t max_bytes = c->settings().max_bytes;
  const std::string flag = absl::GetFlag(FLAGS_max_bytes);
  if (!flag.empty()) {
    std::optional<uint64_t> parsed = ParseByteCount(flag);
    if (!parsed) {
      Complain(absl::StrCat("--max-bytes: cannot read '", flag, "' (try 1073741824, 512M, 4G)"));
      return kExitUsage;
    }
    max_bytes = *parsed;
  }
  absl::StatusOr<cache::CacheUsage> before = c->Usage();
  if (!before.ok()) {
    Complain(before.status().ToString());
    return kExitProblems;
  }
  absl::Status pruned = c->Prune(max_bytes);
  if (!pruned.ok()) {
    Complain(absl::StrCat("prune: ", pruned.ToString()));
    return kExitProblems;
  }
  absl::StatusOr<cache::CacheUsage> after = c->Usage();
  if (!after.ok()) {
    Complain(after.status().ToString());
    return kExitProblems;
  }
  const uint64_t evicted = c->counters().evictions;
  std::printf("pruned %s to %s: removed %llu entries, %s; left %llu entries, %s\n",
              Esc(c->root()).c_str(), Bytes(max_bytes).c_str(),
              static_cast<unsigned long long>(evicted),
              Bytes(before->bytes > after->bytes ? before->bytes - after->bytes : 0).c_str(),
              static_cast<unsigned long long>(after->entries), Bytes(after->bytes).c_str());
  return kExitOk;
}

int ClearCommand() {
  std::shared_ptr<DiskCache> c = DiskCache::Default();
  if (c->mode() != CacheMode::kReadWrite) {
    Complain(absl::StrCat("cannot clear '", c->root(), "': the cache is ",
                          cache::CacheModeName(c->mode())));
    return kExitProblems;
  }
  absl::StatusOr<cache::CacheUsage> before = c->Usage();
  if (!before.ok()) {
    Complain(before.status().ToString());
    return kExitProblems;
  }
  if (before->entries == 0) {
    std::printf("%s holds no entries; nothing to clear\n", Esc(c->root()).c_str());
    return kExitOk;
  }
  if (!absl::GetFlag(FLAGS_yes)) {
    if (!isatty(STDIN_FILENO)) {
      Complain(absl::StrCat("refusing to clear ", c->root(),
                            " without --yes (stdin is not a terminal to ask on)"));
      return kExitUsage;
    }
    std::printf("Remove all %llu entries (%s) from %s? [y/N] ",
                static_cast<unsigned long long>(before->entries), Bytes(before->bytes).c_str(),
                Esc(c->root()).c_str());
    std::fflush(stdout);
    std::string answer;
    std::getline(std::cin, answer);
    answer = absl::AsciiStrToLower(absl::StripAsciiWhitespace(answer));
    if (answer != "y" && answer != "yes") {
      std::printf("nothing removed\n");
      return kExitProblems;
    }
  }
  absl::Status cleared = c->Prune(0);
  c->CleanTempFiles();
  absl::StatusOr<cache::CacheUsage> after = c->Usage();
  if (!cleared.ok() || !after.ok()) {
    Complain(absl::StrCat("clear: ", (!cleared.ok() ? cleared : after.status()).ToString()));
    return kExitProblems;
  }
  std::printf("cleared %s: removed %llu entries, %s", Esc(c->root()).c_str(),
              static_cast<unsigned long long>(c->counters().evictions),
              Bytes(before->bytes > after->bytes ? before->bytes - after->bytes : 0).c_str());
  if (after->entries > 0) {
    std::printf("; %llu entries stored meanwhile by other processes remain",
                static_cast<unsigned long long>(after->entries));
  }
  std::printf("\n");
  return kExitOk;
}

}  // namespace jitgemm::tools
