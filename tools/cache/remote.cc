// jitgemm-cache remote stats | push | pull: the shared remote tier
// (JITGEMM_REMOTE_CACHE, docs/cache.md) seen from one machine.
//
//   remote stats                     the server, its jitgemm keys, this
//                                    process's view (reachable, signed)
//   remote push [--from=BUNDLE_DIR]  publish every entry of the local cache
//                                    (or of a bundle directory)
//   remote pull --manifest=a.json[,..] [--arch=sm_90a]
//                                    fetch the kernels the manifests need
//                                    into the local cache
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "api/src/manifest_kernels.h"
#include "cache/disk_cache.h"
#include "cache/entry_listing.h"
#include "cache/log.h"
#include "cache/remote_tier.h"
#include "tools/cache/commands.h"

namespace jitgemm::tools {
namespace {

using cache::DiskCache;
using cache::RedisReply;

// A bar on a terminal (stderr), nothing otherwise: logs stay clean.
class Progress {
 public:
  Progress(const char* what, size_t total)
      : what_(what), total_(total), tty_(isatty(STDERR_FILENO) != 0) {}
  void Step() {
    ++done_;
    if (!tty_ || total_ == 0) return;
    constexpr int kWidth = 40;
    const int filled = static_cast<int>(kWidth * done_ / total_);
    std::fprintf(stderr, "\r%s [%s%s] %zu/%zu", what_, std::string(filled, '#').c_str(),
                 std::string(kWidth - filled, ' ').c_str(), done_, total_);
    if (done_ == total_) std::fprintf(stderr, "\n");
  }

 private:
  const char* what_;
  size_t total_, done_ = 0;
  bool tty_;
};

// The cache with its remote tier, or nullptr after saying why.
std::shared_ptr<DiskCache> OpenWithRemote() {
  std::shared_ptr<DiskCache> c = DiskCache::Default();
  if (c->remote() == nullptr) {
    Complain(
        "no remote tier: set JITGEMM_REMOTE_CACHE=redis://[user:password@]host:port[/db] "
        "(see docs/cache.md and the warnings above)");
    return nullptr;
  }
  return c;
}

// Keys matching `pattern`, counted with SCAN (never KEYS: a busy server must
// not stall for us).
absl::StatusOr<uint64_t> CountKeys(cache::RemoteTier& remote, const std::string& pattern) {
  uint64_t count = 0;
  std::string cursor = "0";
  do {
    absl::StatusOr<RedisReply> r =
        remote.Command({"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"});
    if (!r.ok()) return r.status();
    if (r->type != RedisReply::Type::kArray || r->elements.size() != 2) {
      return absl::InternalError("unexpected SCAN reply");
    }
    cursor = r->elements[0].str;
    count += r->elements[1].elements.size();
  } while (cursor != "0");
  return count;
}

int RemoteStats() {
  std::shared_ptr<DiskCache> c = OpenWithRemote();
  if (c == nullptr) return kExitProblems;
  cache::RemoteTier& remote = *c->remote();
  const cache::RemoteSettings& s = remote.settings();
  std::printf("server: %s\n", s.endpoint.Redacted().c_str());
  std::printf("values: %s\n", s.secret.empty() ? "unsigned, and unsigned values are trusted"
                                               : "signed and checked (HMAC-SHA256)");
  std::printf("timeouts: connect %s, command %s; lock ttl %s; breaker retry %s\n",
              absl::FormatDuration(s.connect_timeout).c_str(),
              absl::FormatDuration(s.command_timeout).c_str(),
              absl::FormatDuration(s.lock_ttl).c_str(),
              absl::FormatDuration(s.retry_after).c_str());
  absl::StatusOr<RedisReply> pong = remote.Command({"PING"});
  if (!pong.ok()) {
    Complain(absl::StrCat("the server does not answer: ", pong.status().message()));
    return kExitProblems;
  }
  for (const char* kind : {"cubin", "tuning", "lock:cubin", "lock:tuning"}) {
    absl::StatusOr<uint64_t> n = CountKeys(remote, absl::StrCat("jitgemm:v1:", kind, ":*"));
    if (!n.ok()) {
      Complain(absl::StrCat("counting ", kind, " keys: ", n.status().message()));
      return kExitProblems;
    }
    std::printf("%s keys: %llu\n", kind, static_cast<unsigned long long>(*n));
  }
  if (absl::StatusOr<RedisReply> info = remote.Command({"INFO", "memory"}); info.ok()) {
    const std::string& text = info->str;
    size_t at = text.find("used_memory_human:");
    if (at != std::string::npos) {
      std::printf(
          "server memory: %s\n",
          cache::QuotedForHumans(text.substr(at + 18, text.find('\r', at) - at - 18)).c_str());
    }
  }
  return kExitOk;
}

int RemotePush() {
  std::shared_ptr<DiskCache> c = OpenWithRemote();
  if (c == nullptr) return kExitProblems;
  std::vector<std::string> roots;
  cache::RootUse use = cache::RootUse::kReadOnly;
  if (const std::string from = absl::GetFlag(FLAGS_from); !from.empty()) {
    roots.push_back(from);
  } else {
    roots = c->readonly_roots();
    if (c->root_usable()) roots.push_back(c->root());
    use = cache::RootUse::kWritable;
  }
  std::vector<cache::EntryFileInfo> files;
  for (const std::string& root : roots) {
    absl::StatusOr<std::vector<cache::EntryFileInfo>> listed = cache::ListEntryFiles(
        cache::Env::Default(), root, root == c->root() ? use : cache::RootUse::kReadOnly);
    if (!listed.ok()) {
      Complain(absl::StrCat(cache::QuotedForHumans(root), ": ", listed.status().message()));
      return kExitProblems;
    }
    files.insert(files.end(), listed->begin(), listed->end());
  }
  Progress bar("push", files.size());
  uint64_t pushed = 0, bad = 0;
  const uint64_t stores_before = c->remote()->counters().stores;
  for (const cache::EntryFileInfo& f : files) {
    bar.Step();
    absl::StatusOr<std::string> bytes =
        cache::Env::Default()->ReadFile(f.path, cache::kMaxEntryFileBytes);
    absl::StatusOr<cache::EntryView> view = bytes.ok()
                                                ? cache::CheckEntryFile(f.relative_path, *bytes)
                                                : absl::StatusOr<cache::EntryView>(bytes.status());
    if (!view.ok() || !f.untrusted.empty()) {
      ++bad;
      continue;
    }
    c->remote()->Publish(cache::MakeCacheKey(std::string(view->key_text)), view->kind,
                         view->payload);
    ++pushed;
  }
  const uint64_t stored = c->remote()->counters().stores - stores_before;
  std::printf("pushed %llu of %zu entries (%llu skipped as corrupt or untrusted)\n",
              static_cast<unsigned long long>(stored), files.size(),
              static_cast<unsigned long long>(bad));
  return stored == pushed && bad == 0 ? kExitOk : kExitProblems;
}

int RemotePull() {
  const std::vector<std::string> manifests = absl::GetFlag(FLAGS_manifest);
  if (manifests.empty()) {
    Complain("remote pull needs --manifest=a.json[,b.json]");
    return kExitUsage;
  }
  std::shared_ptr<DiskCache> c = OpenWithRemote();
  if (c == nullptr) return kExitProblems;
  absl::StatusOr<std::optional<TuningPolicy>> tuning =
      ParseTuningOverride(absl::GetFlag(FLAGS_tuning));
  absl::StatusOr<TargetArch> target =
      ResolveTarget(absl::GetFlag(FLAGS_arch), absl::GetFlag(FLAGS_sms));
  if (!tuning.ok() || !target.ok()) {
    Complain(!tuning.ok() ? tuning.status().message() : target.status().message());
    return kExitUsage;
  }
  absl::StatusOr<ManifestKernels> kernels = LoadManifestKernels(manifests, *target, *tuning);
  if (!kernels.ok()) {
    Complain(kernels.status().message());
    return kExitProblems;
  }
  for (const std::string& line : kernels->invalid) Complain(line);
  Progress bar("pull", kernels->kernels.size());
  uint64_t local = 0, fetched = 0, missing = 0;
  for (const ManifestKernel& k : kernels->kernels) {
    bar.Step();
    absl::StatusOr<cache::CacheKey> key = KernelCacheKey(k.source, target->arch);
    if (!key.ok()) {
      Complain(key.status().ToString());
      return kExitProblems;
    }
    const uint64_t remote_before = c->counters().remote_hits;
    // Lookup searches the local roots, then the remote, and keeps a
    // verified remote hit on the local disk.
    if (!c->Lookup(*key, cache::EntryKind::kCubin)) {
      ++missing;
    } else if (c->counters().remote_hits > remote_before) {
      ++fetched;
    } else {
      ++local;
    }
  }
  std::printf("%zu kernels for %s: %llu already local, %llu fetched, %llu in neither\n",
              kernels->kernels.size(), target->arch.c_str(), static_cast<unsigned long long>(local),
              static_cast<unsigned long long>(fetched), static_cast<unsigned long long>(missing));
  return missing == 0 && kernels->invalid.empty() ? kExitOk : kExitProblems;
}

}  // namespace

int RemoteCommand(const std::string& sub) {
  if (sub == "stats") return RemoteStats();
  if (sub == "push") return RemotePush();
  if (sub == "pull") return RemotePull();
  Complain(absl::StrCat("unknown remote command '", Esc(sub), "' (stats, push or pull)"));
  return kExitUsage;
}

}  // namespace jitgemm::tools
