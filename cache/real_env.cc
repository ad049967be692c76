#include "cache/real_env.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace jitgemm::cache {
namespace {

absl::Status PathError(absl::string_view op, const std::string& path) {
  return ErrnoToStatus(errno, absl::StrCat(op, " '", path, "'"));
}

// Closes a descriptor on scope exit; close errors on read-only or lock
// descriptors carry no information we could act on.
class ScopedFd {
 public:
  explicit ScopedFd(int fd) : fd_(fd) {}
  ~ScopedFd() {
    if (fd_ >= 0) ::close(fd_);
  }
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }
  void reset(int fd) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

FileInfo InfoFromStat(const struct stat& st) {
  FileInfo info;
  info.size = static_cast<uint64_t>(st.st_size);
  info.mtime = absl::TimeFromTimespec(st.st_mtim);
  info.is_directory = S_ISDIR(st.st_mode);
  info.is_regular = S_ISREG(st.st_mode);
  info.is_symlink = S_ISLNK(st.st_mode);
  info.mode = st.st_mode & 07777;
  info.uid = st.st_uid;
  return info;
}

class PosixWritableFile : public WritableFile {
 public:
  PosixWritableFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixWritableFile() override {
    if (fd_ >= 0) ::close(fd_);
  }

  absl::Status Append(absl::string_view data) override {
    while (!data.empty()) {
      ssize_t n = ::write(fd_, data.data(), data.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        return PathError("write", path_);
      }
      data.remove_prefix(static_cast<size_t>(n));
    }
    return absl::OkStatus();
  }

  absl::Status Sync() override {
    if (::fsync(fd_) != 0) return PathError("fsync", path_);
    return absl::OkStatus();
  }

  absl::Status Close() override {
    int fd = std::exchange(fd_, -1);
    // Some filesystems (NFS) report a failed write-back only at close.
    if (fd >= 0 && ::close(fd) != 0) return PathError("close", path_);
    return absl::OkStatus();
  }

 private:
  std::string path_;
  int fd_;
};

class PosixFileLock : public FileLock {
 public:
  PosixFileLock(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixFileLock() override {
    // Unlink while still holding the lock: a waiter that already opened this
    // inode sees, once it gets the lock, that the path no longer names it and
    // retries on a fresh file, so two holders can never coexist. Keeps the
    // lock directory from growing with one file per key ever compiled.
    ::unlink(path_.c_str());
    ::close(fd_);  // releases the flock
  }

 private:
  std::string path_;
  int fd_;
};

}  // namespace

RealEnv::RealEnv()
    : seed_(std::random_device{}() ^ (static_cast<uint64_t>(::getpid()) << 32) ^
            static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count())) {}

absl::StatusOr<std::string> RealEnv::ReadFile(const std::string& path, uint64_t max_bytes) {
  // O_NONBLOCK: opening a FIFO planted at an entry path must not hang.
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW));
  if (fd.get() < 0) {
    if (errno == ELOOP)
      return absl::FailedPreconditionError(absl::StrCat("'", path, "' is a symlink"));
    return PathError("open", path);
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return PathError("fstat", path);
  if (!S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat("'", path, "' is not a regular file"));
  }
  uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size > max_bytes) {
    return absl::OutOfRangeError(
        absl::StrCat("'", path, "' holds ", size, " bytes, more than the limit of ", max_bytes));
  }
  std::string out(size, '\0');
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::read(fd.get(), out.data() + done, size - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return PathError("read", path);
    }
    if (n == 0) break;  // truncated under us: the checksum will say so
    done += static_cast<size_t>(n);
  }
  out.resize(done);
  return out;
}

absl::StatusOr<std::unique_ptr<WritableFile>> RealEnv::NewWritableFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return PathError("create", path);
  return std::make_unique<PosixWritableFile>(path, fd);
}

absl::Status RealEnv::RenameFile(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) return PathError("rename", from);
  return absl::OkStatus();
}

absl::Status RealEnv::RemoveFile(const std::string& path) {
  if (::unlink(path.c_str()) != 0) return PathError("unlink", path);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> RealEnv::ListDir(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return PathError("opendir", dir);
  std::vector<std::string> names;
  errno = 0;
  while (struct dirent* e = ::readdir(d)) {
    absl::string_view name(e->d_name);
    if (name != "." && name != "..") names.emplace_back(name);
  }
  int err = errno;
  ::closedir(d);
  if (err != 0) return ErrnoToStatus(err, absl::StrCat("readdir '", dir, "'"));
  return names;
}

absl::StatusOr<FileInfo> RealEnv::Stat(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return PathError("stat", path);
  return InfoFromStat(st);
}

absl::StatusOr<std::vector<FileInfo>> RealEnv::StatUnder(const std::string& root,
                                                         absl::string_view relative) {
  std::vector<FileInfo> out;
  ScopedFd dir(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() < 0) return PathError("open", root);
  struct stat st;
  if (::fstat(dir.get(), &st) != 0) return PathError("fstat", root);
  out.push_back(InfoFromStat(st));
  std::string so_far = root;
  for (absl::string_view part : absl::StrSplit(relative, '/', absl::SkipEmpty())) {
    if (!out.back().is_directory) break;
    so_far = JoinPath(so_far, part);
    ScopedFd next(::openat(dir.get(), std::string(part).c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (next.get() < 0) {
      if (errno == ENOENT) break;
      return PathError("open", so_far);
    }
    if (::fstat(next.get(), &st) != 0) return PathError("fstat", so_far);
    out.push_back(InfoFromStat(st));
    dir.reset(next.release());
  }
  return out;
}

absl::StatusOr<std::vector<ChildInfo>> RealEnv::StatChildren(const std::string& root,
                                                             absl::string_view relative) {
  ScopedFd dir(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() < 0) return PathError("open", root);
  std::string path = root;
  for (absl::string_view part : absl::StrSplit(relative, '/', absl::SkipEmpty())) {
    path = JoinPath(path, part);
    // O_DIRECTORY with O_NOFOLLOW fails (ENOTDIR / ELOOP) on anything but a
    // real folder, a symlink to one included.
    ScopedFd next(::openat(dir.get(), std::string(part).c_str(),
                           O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (next.get() < 0) {
      if (errno == ENOTDIR || errno == ELOOP) {
        return absl::FailedPreconditionError(absl::StrCat("'", path, "' is not a directory"));
      }
      return PathError("open", path);
    }
    dir.reset(next.release());
  }
  // An O_PATH descriptor cannot be read: open the folder itself through it.
  const int listing = ::openat(dir.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (listing < 0) return PathError("open", path);
  DIR* d = ::fdopendir(listing);
  if (d == nullptr) {
    const absl::Status error = PathError("fdopendir", path);
    ::close(listing);
    return error;
  }
  std::vector<ChildInfo> out;
  errno = 0;
  while (struct dirent* e = ::readdir(d)) {
    absl::string_view name(e->d_name);
    if (name == "." || name == "..") continue;
    struct stat st;
    if (::fstatat(listing, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) {
        errno = 0;
        continue;  // removed meanwhile
      }
      const absl::Status error = PathError("fstatat", JoinPath(path, name));
      ::closedir(d);
      return error;
    }
    out.push_back({std::string(name), InfoFromStat(st)});
    errno = 0;
  }
  const int err = errno;
  ::closedir(d);
  if (err != 0) return ErrnoToStatus(err, absl::StrCat("readdir '", path, "'"));
  return out;
}

absl::Status RealEnv::CreateDirs(const std::string& path) {
  if (path.empty()) return absl::InvalidArgumentError("empty directory path");
  // Walk forward: create each missing component. EEXIST from a racing
  // creator is fine as long as the result is a directory.
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    std::string prefix = path.substr(0, pos);
    if (prefix.empty()) continue;
    if (::mkdir(prefix.c_str(), 0755) == 0) continue;
    int err = errno;
    struct stat st;
    if (::stat(prefix.c_str(), &st) == 0) {
      if (S_ISDIR(st.st_mode)) continue;
      return absl::FailedPreconditionError(
          absl::StrCat("'", prefix, "' exists and is not a directory"));
    }
    if (err == ENOTDIR) {
      return absl::FailedPreconditionError(
          absl::StrCat("a component of '", prefix, "' is not a directory"));
    }
    return ErrnoToStatus(err, absl::StrCat("mkdir '", prefix, "'"));
  }
  return absl::OkStatus();
}

absl::Status RealEnv::SetModTime(const std::string& path, absl::Time time) {
  struct timespec times[2];
  times[0] = times[1] = absl::ToTimespec(time);
  if (::utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW) != 0) {
    return PathError("utimensat", path);
  }
  return absl::OkStatus();
}

absl::Status RealEnv::SyncDir(const std::string& dir) {
  ScopedFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) return PathError("open", dir);
  if (::fsync(fd.get()) != 0) return PathError("fsync", dir);
  return absl::OkStatus();
}

bool RealEnv::IsWritableDir(const std::string& dir) {
  return ::access(dir.c_str(), W_OK | X_OK) == 0;
}

absl::StatusOr<std::unique_ptr<FileLock>> RealEnv::TryLockFile(const std::string& path) {
  ScopedFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644));
  if (fd.get() < 0) return PathError("open lock", path);
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) {
      return absl::UnavailableError(absl::StrCat("'", path, "' is locked by another holder"));
    }
    return PathError("flock", path);
  }
  // The previous holder may have unlinked the path between our open and our
  // flock; then we hold a lock on an orphan inode and must retry.
  struct stat held, named;
  if (::fstat(fd.get(), &held) != 0) return PathError("fstat lock", path);
  if (::stat(path.c_str(), &named) != 0 || held.st_ino != named.st_ino ||
      held.st_dev != named.st_dev) {
    return absl::UnavailableError(absl::StrCat("'", path, "' was released and replaced"));
  }
  return std::make_unique<PosixFileLock>(path, fd.release());
}

int RealEnv::ProcessId() { return static_cast<int>(::getpid()); }

uint64_t RealEnv::RandomBits() {
  // splitmix64 of a per-process seed plus a counter: distinct within the
  // process by construction, and unpredictable across processes.
  uint64_t z = seed_ + 0x9e3779b97f4a7c15ULL * (counter_.fetch_add(1) + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace jitgemm::cache
