// DiskCache notes: small texts the library keeps in the writable root beside
// its entries (v1/notes/<name>), such as which NVRTC the kernel keys were
// made with, so a process served wholly from the cache need not load NVRTC
// to learn it (jit/disk_tier.h). A note is a hint its reader checks; it is
// read through the same folder rules as an entry and written like one
// (temp file, rename). A note written here is also published to the remote
// tier, where a machine with an empty root finds the fleet's.
#include "absl/strings/str_cat.h"
#include "cache/disk_cache.h"
#include "cache/folder_trust.h"
#include "cache/layout.h"

namespace jitgemm::cache {
namespace {

constexpr uint64_t kMaxNoteBytes = 4096;

std::string NoteRelative(absl::string_view name) {
  return absl::StrCat(kLayoutDir, "/notes/", name);
}

}  // namespace

std::optional<std::string> DiskCache::ReadNote(absl::string_view name) {
  if (!root_readable_ || distrusted_.load()) return std::nullopt;
  const std::string relative = NoteRelative(name);
  absl::StatusOr<std::vector<FileInfo>> infos =
      CheckTrustedFolders(env_, root_, relative, RootUse::kWritable, /*last_is_file=*/true);
  if (!infos.ok() || infos->size() != 4) return std::nullopt;
  const std::string path = JoinPath(root_, relative);
  if (!CheckTrustedFile(infos->back(), path, RootUse::kWritable, infos->front().uid).ok()) {
    return std::nullopt;
  }
  absl::StatusOr<std::string> text = env_->ReadFile(path, kMaxNoteBytes);
  if (!text.ok()) return std::nullopt;
  return std::move(text).value();
}

std::optional<std::string> DiskCache::ReadRemoteNote(absl::string_view name) {
  if (remote_ == nullptr) return std::nullopt;
  return remote_->FetchNote(std::string_view(name.data(), name.size()));
}

void DiskCache::WriteNote(absl::string_view name, std::string_view text, bool publish) {
  if (publish && remote_ != nullptr && text.size() <= kMaxNoteBytes) {
    remote_->PublishNote(std::string_view(name.data(), name.size()), text);
  }
  if (mode_ != CacheMode::kReadWrite || distrusted_.load() || text.size() > kMaxNoteBytes) return;
  const std::string dir = JoinPath(LayoutRoot(root_), "notes");
  if (!WritableRootTrusted(absl::StrCat(kLayoutDir, "/notes"), false, nullptr)) return;
  if (!env_->CreateDirs(dir).ok()) return;
  const std::string path = JoinPath(dir, name);
  const std::string temp = absl::StrCat(path, ".tmp.", env_->ProcessId(), ".", env_->RandomBits());
  absl::StatusOr<std::unique_ptr<WritableFile>> file = env_->NewWritableFile(temp);
  if (!file.ok()) return;
  absl::Status status = (*file)->Append(absl::string_view(text.data(), text.size()));
  absl::Status closed = (*file)->Close();
  if (status.ok()) status = closed;
  if (status.ok()) status = env_->RenameFile(temp, path);
  if (!status.ok()) env_->RemoveFile(temp).IgnoreError();
}

}  // namespace jitgemm::cache
