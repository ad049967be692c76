// Env: the filesystem seam under the disk cache.
//
// Everything the cache does to files goes through this interface, so tests can
// wrap the real filesystem (FaultEnv in cache/fault_env.h) and inject ENOSPC
// mid-write, EXDEV on rename, EPERM on a lock or a crash between two steps,
// without root and without a full disk. The operations are the few POSIX calls
// an immutable, rename-published cache needs; errno values become
// absl::Status codes through ErrnoToStatus.
//
// Thread safety: every Env method may be called concurrently from any thread.
// A WritableFile or FileLock object belongs to one thread at a time.
//
// Example:
//   Env* env = Env::Default();
//   absl::StatusOr<std::unique_ptr<WritableFile>> f = env->NewWritableFile(tmp);
//   ... (*f)->Append(bytes); (*f)->Sync(); (*f)->Close(); env->RenameFile(tmp, path);
#ifndef JITGEMM_CACHE_ENV_H_
#define JITGEMM_CACHE_ENV_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace jitgemm::cache {

// Maps an errno value to the matching absl code; the message names `context`
// (usually the operation and the path) and strerror. ENOENT -> NotFound,
// EEXIST -> AlreadyExists, EACCES/EPERM/EROFS -> PermissionDenied,
// ENOSPC/EDQUOT -> ResourceExhausted, EAGAIN/EBUSY/EINTR -> Unavailable,
// ENOLCK/EOPNOTSUPP/ENOSYS -> Unimplemented, EXDEV -> FailedPrecondition,
// anything else -> Internal. The errno is kept in the message ("[errno 28]").
absl::Status ErrnoToStatus(int error, absl::string_view context);

struct FileInfo {
  uint64_t size = 0;
  absl::Time mtime = absl::InfinitePast();
  bool is_directory = false;
  bool is_regular = false;
  bool is_symlink = false;  // only from StatUnder, which does not follow links
  uint32_t mode = 0;        // permission bits (st_mode & 07777)
  uint32_t uid = 0;         // owner
};

// One entry of a folder, as Env::StatChildren returns it.
struct ChildInfo {
  std::string name;
  FileInfo info;
};

// A file opened for writing. Destroying it closes the descriptor if Close()
// was not called; the file itself stays (the caller decides to remove it).
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  // Writes all of `data` (retrying short writes and EINTR).
  virtual absl::Status Append(absl::string_view data) = 0;
  // fsync: the data is on stable storage before the file is renamed into view.
  virtual absl::Status Sync() = 0;
  virtual absl::Status Close() = 0;
};

// An exclusive advisory lock. Destroying it releases the lock.
class FileLock {
 public:
  virtual ~FileLock() = default;
};

class Env {
 public:
  virtual ~Env() = default;

  // The real filesystem; a process-wide object that is never destroyed.
  static Env* Default();

  // Reads the whole regular file at `path`. The size is taken from the open
  // descriptor first and a file larger than `max_bytes` is refused
  // (OutOfRange) before anything is allocated, so a corrupt or hostile file
  // cannot make the reader allocate more than the file holds. A file that
  // shrinks while being read yields the shorter contents. Anything other than
  // a regular file (a FIFO, a directory) is FailedPrecondition.
  virtual absl::StatusOr<std::string> ReadFile(const std::string& path, uint64_t max_bytes) = 0;

  // Creates `path` exclusively (O_CREAT | O_EXCL, mode 0644 minus umask):
  // AlreadyExists if it is there.
  virtual absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(
      const std::string& path) = 0;

  // rename(2): atomically replaces `to` when both are in one directory.
  virtual absl::Status RenameFile(const std::string& from, const std::string& to) = 0;
  virtual absl::Status RemoveFile(const std::string& path) = 0;

  // Names in `dir`, without "." and "..", in no particular order.
  virtual absl::StatusOr<std::vector<std::string>> ListDir(const std::string& dir) = 0;

  // stat(2), following symlinks: a cache root may well be a link to another
  // disk. (ReadFile still refuses to read an entry through a symlink.)
  virtual absl::StatusOr<FileInfo> Stat(const std::string& path) = 0;

  // Opens `root` (following a symlink there: a root may be a link to another
  // disk) and walks down the '/'-separated `relative` one component at a
  // time with openat(O_PATH | O_NOFOLLOW) from the folder above, so no
  // symlink below the root is ever followed and no FIFO or device is opened.
  // Returns the fstat of the root and of each component, in order; the walk
  // stops early (a shorter result, not an error) at a component that does
  // not exist, and after one that is not a directory (a symlink: is_symlink).
  // NotFound if the root itself does not exist.
  virtual absl::StatusOr<std::vector<FileInfo>> StatUnder(const std::string& root,
                                                          absl::string_view relative) = 0;

  // The entries of the folder `relative` below `root` (without "." and
  // ".."), each with the lstat of the entry itself: a symlink is reported
  // (is_symlink), never followed. The folder is reached as StatUnder walks,
  // so no symlink below the root is followed on the way. NotFound if the
  // folder does not exist; FailedPrecondition if it (or a component above
  // it) is not a directory. An entry removed while listing is left out. The
  // default lists with ListDir and walks to each entry with StatUnder;
  // RealEnv opens the folder once and stats each name relative to it, which
  // keeps opening a cache of many shard folders to a few syscalls each.
  virtual absl::StatusOr<std::vector<ChildInfo>> StatChildren(const std::string& root,
                                                              absl::string_view relative);

  // mkdir -p with mode 0755 minus umask. OK if the directory already exists;
  // FailedPrecondition if a component exists and is not a directory.
  virtual absl::Status CreateDirs(const std::string& path) = 0;

  // Sets the modification (and access) time; the cache's LRU clock.
  virtual absl::Status SetModTime(const std::string& path, absl::Time time) = 0;

  // fsync on a directory, so a rename in it survives a power cut.
  virtual absl::Status SyncDir(const std::string& dir) = 0;

  // Whether this process may create files in `dir` (access(2) W_OK | X_OK).
  virtual bool IsWritableDir(const std::string& dir) = 0;

  // Tries once to take an exclusive flock(2) on `path`, creating the file if
  // needed. Unavailable if another open file description holds it;
  // PermissionDenied / Unimplemented / FailedPrecondition where locking is not
  // possible at all. flock (not fcntl) because the kernel drops it when the
  // holder dies, and because two descriptors of one process exclude each
  // other, so threads and separate DiskCache objects behave like processes.
  // The returned lock verifies that `path` still names the locked inode (a
  // releasing holder unlinks it) and reports Unavailable otherwise.
  // Releasing the lock unlinks `path` while still holding it, then closes.
  virtual absl::StatusOr<std::unique_ptr<FileLock>> TryLockFile(const std::string& path) = 0;

  virtual absl::Time Now() { return absl::Now(); }
  virtual int ProcessId() = 0;
  // 64 random bits for temp file names; never the same twice in a process.
  virtual uint64_t RandomBits() = 0;
};

// Joins path components with '/', without doubling separators.
std::string JoinPath(absl::string_view a, absl::string_view b);

}  // namespace jitgemm::cache

#endif  // JITGEMM_CACHE_ENV_H_
