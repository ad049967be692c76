#include "jit/disk_tier.h"

#include <cuda.h>
#include <sys/stat.h>

#include <cstdlib>
#include <optional>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cache/disk_cache.h"
#include "cache/key.h"
#include "jit/nvrtc_compiler.h"

namespace jitgemm::jit {
namespace {

constexpr char kNoteName[] = "nvrtc";
constexpr char kNoteMagic[] = "jitgemm-nvrtc-note v1";

// What identifies a libnvrtc file without opening it.
struct FileStamp {
  int64_t size = -1;
  int64_t mtime_ns = -1;
};

std::optional<FileStamp> Stamp(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileStamp{static_cast<int64_t>(st.st_size),
                   static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
}

// version, selection, path, size, mtime_ns: one per line.
std::string NoteText(int version, const std::string& path, const FileStamp& stamp) {
  return absl::StrCat(kNoteMagic, "\n", version, "\n", NvrtcSelection(), "\n", path, "\n",
                      stamp.size, "\n", stamp.mtime_ns, "\n");
}

// The version a note records, if the note still describes the libnvrtc this
// process would open: the same selecting variables and the same file, not
// replaced since (size and mtime).
std::optional<int> VersionFromNote(const std::string& text) {
  std::vector<std::string> lines = absl::StrSplit(text, '\n');
  if (lines.size() != 7 || lines[0] != kNoteMagic || !lines[6].empty()) return std::nullopt;
  int version = 0;
  FileStamp recorded;
  if (!absl::SimpleAtoi(lines[1], &version) || !absl::SimpleAtoi(lines[4], &recorded.size) ||
      !absl::SimpleAtoi(lines[5], &recorded.mtime_ns) || version <= 0) {
    return std::nullopt;
  }
  if (lines[2] != NvrtcSelection()) return std::nullopt;
  std::optional<FileStamp> now = Stamp(lines[3]);
  if (!now || now->size != recorded.size || now->mtime_ns != recorded.mtime_ns) return std::nullopt;
  return version;
}

}  // namespace

void RecordNvrtcNote() {
  absl::StatusOr<int> version = NvrtcVersion();
  absl::StatusOr<std::string> path = NvrtcLibraryPath();
  if (!version.ok() || !path.ok()) return;
  std::optional<FileStamp> stamp = Stamp(*path);
  if (!stamp) return;
  const std::string text = NoteText(*version, *path, *stamp);
  cache::DiskCache& disk = *cache::DiskCache::Default();
  if (disk.ReadNote(kNoteName) != text) disk.WriteNote(kNoteName, text);
}

absl::StatusOr<int> NvrtcVersionForKey() {
  // A deployment that states its NVRTC version skips loading NVRTC (several
  // milliseconds) when every kernel is cached; Compile checks the claim.
  if (const char* env = std::getenv("JITGEMM_NVRTC_VERSION")) {
    int parsed = 0;
    if (absl::SimpleAtoi(env, &parsed)) return parsed;
  }
  if (NvrtcLoaded()) {
    if (absl::StatusOr<int> v = NvrtcVersion(); v.ok()) return v;
  }
  // The note a process that opened NVRTC left in the cache: the same answer
  // without opening it (most of a warm process's first plan otherwise).
  static const std::optional<int> kNoted = []() -> std::optional<int> {
    cache::DiskCache& disk = *cache::DiskCache::Default();
    std::optional<std::string> note = disk.ReadNote(kNoteName);
    if (std::optional<int> v = note ? VersionFromNote(*note) : std::nullopt) return v;
    // A machine of the fleet with an empty root: the note another machine
    // published holds if this machine's library is the same file.
    note = disk.ReadRemoteNote(kNoteName);
    std::optional<int> v = note ? VersionFromNote(*note) : std::nullopt;
    if (v) disk.WriteNote(kNoteName, *note, /*publish=*/false);
    return v;
  }();
  if (kNoted) return *kNoted;
  absl::StatusOr<int> v = NvrtcVersion();
  if (v.ok()) {
    RecordNvrtcNote();
    return v;
  }
  // Without NVRTC nothing can be compiled, so keys only serve lookups of a
  // warmed cache, made by the NVRTC of the toolkit the library was built with.
  return CUDA_VERSION;
}

absl::StatusOr<std::string> DiskTierGetOrCreate(
    const std::string& key_text, absl::FunctionRef<absl::StatusOr<std::string>()> create) {
  return cache::DiskCache::Default()->GetOrCreate(cache::MakeCacheKey(key_text),
                                                  cache::EntryKind::kCubin, create);
}

}  // namespace jitgemm::jit
