// Ustar: the small subset of the POSIX ustar archive format that cache
// bundles use (cache/bundle.h): regular files and directories, names relative
// to the archive's root, no links, no pax or GNU extensions.
//
// The writer produces archives that any tar reads (`tar -xf bundle.tar -C
// dir`). It writes to a temp file beside the destination and renames it into
// place at Finish, so a half-written archive is never seen under its name.
//
// The reader is for archives that may come from anywhere. Open reads every
// header before any data is used and refuses the whole archive if one
// member is unsafe or malformed: an absolute name, a ".." component, a link,
// a device, a pax/GNU extension header, a duplicate name, a member larger
// than the limit, a bad header checksum, data that runs past the end of the
// file, or a missing end-of-archive marker (a truncated download). Member
// data is read later, on request, with the size checked again.
//
// Thread safety: a TarWriter belongs to one thread. A TarReader's const
// methods may be called concurrently (pread).
//
// Example:
//   auto w = TarWriter::Create(Env::Default(), "b.tar", absl::Now());
//   (*w)->AddFile("v1/cubin/ab/ab...bin", bytes);
//   (*w)->Finish();
//   auto r = TarReader::Open("b.tar", kMaxEntryFileBytes);
//   for (const TarMember& m : (*r)->members()) { auto data = (*r)->Read(m); }
#ifndef JITGEMM_CACHE_USTAR_H_
#define JITGEMM_CACHE_USTAR_H_

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "cache/env.h"

namespace jitgemm::cache {

inline constexpr uint64_t kTarBlockBytes = 512;
// Archives are padded to a whole record of 20 blocks, as tar itself does.
inline constexpr uint64_t kTarRecordBytes = 20 * kTarBlockBytes;

// The relative, normalised form of a member name: leading "./" removed, a
// directory's trailing '/' removed. InvalidArgument for anything that could
// leave the extraction directory or is ambiguous: empty, absolute, a ".."
// or "." component, an empty component ("a//b"), a control character. The
// archive's own root ("." or "./") normalises to "".
absl::StatusOr<std::string> NormalizeMemberName(absl::string_view raw, bool is_directory);

class TarWriter {
 public:
  // Starts an archive that will appear at `path` on Finish. `mtime` is
  // stamped on every member (pass a fixed time for reproducible archives).
  // AlreadyExists if `path` is there.
  static absl::StatusOr<std::unique_ptr<TarWriter>> Create(Env* env, const std::string& path,
                                                           absl::Time mtime);
  // Removes the temp file unless Finish succeeded.
  ~TarWriter();

  TarWriter(const TarWriter&) = delete;
  TarWriter& operator=(const TarWriter&) = delete;

  // Adds a regular file (mode 0644) and, first, every parent directory not
  // yet in the archive (mode 0755). `name` must be normalised (see above)
  // and at most 255 bytes, splittable into ustar's prefix and name fields.
  absl::Status AddFile(absl::string_view name, std::string_view data);
  absl::Status AddDirectory(absl::string_view name);

  // Writes the end-of-archive blocks, pads to a record, fsyncs and renames
  // the archive into place.
  absl::Status Finish();

  // Bytes written so far.
  uint64_t bytes() const { return bytes_; }

 private:
  TarWriter(Env* env, std::string path, std::string temp, std::unique_ptr<WritableFile> file,
            absl::Time mtime);
  absl::Status AddParents(absl::string_view name);
  absl::Status WriteHeader(absl::string_view name, char type, uint32_t mode, uint64_t size);
  absl::Status Write(std::string_view data);

  Env* const env_;
  const std::string path_;
  const std::string temp_;
  std::unique_ptr<WritableFile> file_;
  const int64_t mtime_;
  std::set<std::string> directories_;
  uint64_t bytes_ = 0;
  bool finished_ = false;
};

struct TarMember {
  std::string name;  // normalised (NormalizeMemberName)
  bool is_directory = false;
  uint64_t size = 0;         // bytes of data (0 for a directory)
  uint64_t data_offset = 0;  // where the data starts in the archive
  uint32_t mode = 0;         // permission bits (07777 if unreadable)
};

class TarReader {
 public:
  // Reads and checks every header of the archive at `path` (see the file
  // comment). InvalidArgument naming the member for an unsafe or
  // unsupported one, OutOfRange for a member over `max_member_bytes`,
  // DataLoss for a damaged or truncated archive.
  static absl::StatusOr<std::unique_ptr<TarReader>> Open(const std::string& path,
                                                         uint64_t max_member_bytes);
  ~TarReader();

  TarReader(const TarReader&) = delete;
  TarReader& operator=(const TarReader&) = delete;

  // In archive order; the archive's root directory ("./") is left out.
  const std::vector<TarMember>& members() const { return members_; }

  // The data of `member` (a member of this reader).
  absl::StatusOr<std::string> Read(const TarMember& member) const;

  const std::string& path() const { return path_; }

 private:
  TarReader(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  absl::Status ReadIndex(uint64_t file_size, uint64_t max_member_bytes);

  const std::string path_;
  const int fd_;
  std::vector<TarMember> members_;
};

}  // namespace jitgemm::cache

#endif  // JITGEMM_CACHE_USTAR_H_
