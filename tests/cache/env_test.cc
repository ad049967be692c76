// The filesystem seam: RealEnv behaves as the cache relies on, and FaultEnv
// injects exactly the faults it promises.
#include "cache/env.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <thread>

#include "absl/time/clock.h"
#include "cache/fault_env.h"
#include "cache/file_lock.h"
#include "cache/real_env.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cache/test_util.h"

namespace jitgemm::cache {
namespace {

using ::jitgemm::cache::testing::Exists;
using ::jitgemm::cache::testing::IsOk;
using ::jitgemm::cache::testing::ReadBytes;
using ::jitgemm::cache::testing::ScratchDir;
using ::jitgemm::cache::testing::StatusIs;
using ::jitgemm::cache::testing::WriteBytes;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

class RealEnvTest : public ::testing::Test {
 protected:
  absl::Status Write(const std::string& path, const std::string& data) {
    absl::StatusOr<std::unique_ptr<WritableFile>> f = env_.NewWritableFile(path);
    if (!f.ok()) return f.status();
    absl::Status s = (*f)->Append(data);
    if (s.ok()) s = (*f)->Sync();
    if (s.ok()) s = (*f)->Close();
    return s;
  }

  ScratchDir dir_;
  RealEnv env_;
};

TEST(ErrnoToStatusTest, MapsTheCodesTheCacheDistinguishes) {
  EXPECT_THAT(ErrnoToStatus(ENOENT, "open 'x'"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("open 'x'")));
  EXPECT_THAT(ErrnoToStatus(EEXIST, "c"),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("")));
  EXPECT_THAT(ErrnoToStatus(EPERM, "c"),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("")));
  EXPECT_THAT(ErrnoToStatus(EROFS, "c"),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("")));
  EXPECT_THAT(ErrnoToStatus(ENOSPC, "c"),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("[errno 28]")));
  EXPECT_THAT(ErrnoToStatus(EDQUOT, "c"),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("")));
  EXPECT_THAT(ErrnoToStatus(EBUSY, "c"), StatusIs(absl::StatusCode::kUnavailable, HasSubstr("")));
  EXPECT_THAT(ErrnoToStatus(EXDEV, "c"),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("")));
  EXPECT_THAT(ErrnoToStatus(ENOLCK, "c"),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("")));
  EXPECT_THAT(ErrnoToStatus(EIO, "c"), StatusIs(absl::StatusCode::kInternal, HasSubstr("")));
}

TEST(JoinPathTest, JoinsWithOneSeparator) {
  EXPECT_EQ(JoinPath("a", "b"), "a/b");
  EXPECT_EQ(JoinPath("a/", "b"), "a/b");
  EXPECT_EQ(JoinPath("a/", "/b"), "a/b");
  EXPECT_EQ(JoinPath("", "b"), "b");
}

TEST_F(RealEnvTest, WritesAndReadsBack) {
  std::string path = dir_.Sub("f");
  ASSERT_THAT(Write(path, "hello"), IsOk());
  absl::StatusOr<std::string> read = env_.ReadFile(path, 100);
  ASSERT_THAT(read, IsOk());
  EXPECT_EQ(*read, "hello");
}

TEST_F(RealEnvTest, NewWritableFileIsExclusive) {
  std::string path = dir_.Sub("f");
  ASSERT_THAT(Write(path, "one"), IsOk());
  EXPECT_THAT(env_.NewWritableFile(path),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("f")));
  EXPECT_EQ(ReadBytes(path), "one");
}

// Issue 19: the walk under a cache root never follows a link below the root,
// never opens a FIFO, and stops (without an error) at what does not exist.
TEST_F(RealEnvTest, StatUnderFollowsNoLinkBelowTheRoot) {
  ::mkdir(dir_.Sub("root").c_str(), 0755);
  ::mkdir(dir_.Sub("root/a").c_str(), 0755);
  ::mkdir(dir_.Sub("elsewhere").c_str(), 0755);
  ::mkdir(dir_.Sub("elsewhere/c").c_str(), 0755);
  ASSERT_EQ(::symlink(dir_.Sub("elsewhere").c_str(), dir_.Sub("root/a/b").c_str()), 0);
  ASSERT_EQ(::mkfifo(dir_.Sub("root/a/fifo").c_str(), 0644), 0);
  ASSERT_EQ(::symlink(dir_.Sub("root").c_str(), dir_.Sub("link-to-root").c_str()), 0);

  absl::StatusOr<std::vector<FileInfo>> infos = env_.StatUnder(dir_.Sub("root"), "a/b/c");
  ASSERT_THAT(infos, IsOk());
  ASSERT_EQ(infos->size(), 3u);  // root, a, the link itself: never c inside it
  EXPECT_TRUE((*infos)[1].is_directory);
  EXPECT_TRUE((*infos)[2].is_symlink);
  EXPECT_FALSE((*infos)[2].is_directory);

  infos = env_.StatUnder(dir_.Sub("root"), "a/fifo");  // would block if opened for reading
  ASSERT_THAT(infos, IsOk());
  ASSERT_EQ(infos->size(), 3u);
  EXPECT_FALSE((*infos)[2].is_regular || (*infos)[2].is_directory || (*infos)[2].is_symlink);

  infos = env_.StatUnder(dir_.Sub("root"), "a/missing/deeper");
  ASSERT_THAT(infos, IsOk());
  EXPECT_EQ(infos->size(), 2u);

  infos = env_.StatUnder(dir_.Sub("link-to-root"), "a");  // the root itself may be a link
  ASSERT_THAT(infos, IsOk());
  EXPECT_EQ(infos->size(), 2u);
  EXPECT_THAT(env_.StatUnder(dir_.Sub("absent"), "a"),
              StatusIs(absl::StatusCode::kNotFound, ::testing::_));
}

// The shard listing that opening a cache root checks: the folder is reached
// without following a link, each entry is stat'ed as itself, and the
// default implementation (what FaultEnv inherits) agrees with RealEnv's.
TEST_F(RealEnvTest, StatChildrenReportsEntriesAsThemselvesAndFollowsNoLink) {
  ::mkdir(dir_.Sub("root").c_str(), 0755);
  ::mkdir(dir_.Sub("root/a").c_str(), 0755);
  ::mkdir(dir_.Sub("root/a/shard").c_str(), 0700);
  ::mkdir(dir_.Sub("elsewhere").c_str(), 0755);
  ASSERT_THAT(Write(dir_.Sub("root/a/file"), "1234"), IsOk());
  ASSERT_EQ(::symlink(dir_.Sub("elsewhere").c_str(), dir_.Sub("root/a/link").c_str()), 0);
  ASSERT_EQ(::symlink(dir_.Sub("root/a").c_str(), dir_.Sub("root/b").c_str()), 0);
  ASSERT_EQ(::mkfifo(dir_.Sub("root/a/fifo").c_str(), 0644), 0);

  FaultEnv inherited(&env_);  // no faults: Env's own StatChildren over env_
  for (Env* env : {static_cast<Env*>(&env_), static_cast<Env*>(&inherited)}) {
    absl::StatusOr<std::vector<ChildInfo>> children = env->StatChildren(dir_.Sub("root"), "a");
    ASSERT_THAT(children, IsOk());
    std::map<std::string, FileInfo> by_name;
    for (const ChildInfo& c : *children) by_name[c.name] = c.info;
    ASSERT_EQ(by_name.size(), 4u);
    EXPECT_TRUE(by_name["shard"].is_directory);
    EXPECT_EQ(by_name["shard"].mode, 0700u);
    EXPECT_TRUE(by_name["file"].is_regular);
    EXPECT_EQ(by_name["file"].size, 4u);
    EXPECT_TRUE(by_name["link"].is_symlink);
    EXPECT_FALSE(by_name["link"].is_directory);
    EXPECT_FALSE(by_name["fifo"].is_regular || by_name["fifo"].is_directory);

    EXPECT_THAT(env->StatChildren(dir_.Sub("root"), "b"),
                StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("not a directory")));
    EXPECT_THAT(env->StatChildren(dir_.Sub("root"), "a/file"),
                StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("not a directory")));
    EXPECT_THAT(env->StatChildren(dir_.Sub("root"), "a/missing"),
                StatusIs(absl::StatusCode::kNotFound, ::testing::_));
    EXPECT_THAT(env->StatChildren(dir_.Sub("absent"), "a"),
                StatusIs(absl::StatusCode::kNotFound, ::testing::_));
  }
}

TEST_F(RealEnvTest, ReadMissingIsNotFound) {
  EXPECT_THAT(env_.ReadFile(dir_.Sub("none"), 100),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("none")));
}

TEST_F(RealEnvTest, ReadRefusesFileLargerThanLimitBeforeReading) {
  // A sparse file of 1 TiB: reading it would need 1 TiB of memory.
  std::string path = dir_.Sub("huge");
  int fd = ::open(path.c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, off_t{1} << 40), 0);
  ::close(fd);
  EXPECT_THAT(env_.ReadFile(path, uint64_t{256} << 20),
              StatusIs(absl::StatusCode::kOutOfRange, HasSubstr("1099511627776 bytes")));
}

TEST_F(RealEnvTest, ReadRefusesFifoWithoutBlockingAndDirectories) {
  std::string fifo = dir_.Sub("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  EXPECT_THAT(env_.ReadFile(fifo, 100),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("not a regular file")));
  EXPECT_THAT(env_.ReadFile(dir_.path(), 100),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("not a regular file")));
  ASSERT_EQ(::symlink(fifo.c_str(), dir_.Sub("link").c_str()), 0);
  EXPECT_THAT(env_.ReadFile(dir_.Sub("link"), 100),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("symlink")));
}

TEST_F(RealEnvTest, ListStatRenameRemove) {
  ASSERT_THAT(Write(dir_.Sub("a"), "12345"), IsOk());
  ASSERT_THAT(env_.CreateDirs(dir_.Sub("d")), IsOk());
  absl::StatusOr<std::vector<std::string>> names = env_.ListDir(dir_.path());
  ASSERT_THAT(names, IsOk());
  EXPECT_THAT(*names, UnorderedElementsAre("a", "d"));
  absl::StatusOr<FileInfo> info = env_.Stat(dir_.Sub("a"));
  ASSERT_THAT(info, IsOk());
  EXPECT_EQ(info->size, 5u);
  EXPECT_TRUE(info->is_regular);
  EXPECT_FALSE(info->is_directory);
  EXPECT_EQ(info->uid, ::geteuid());
  EXPECT_TRUE(env_.Stat(dir_.Sub("d"))->is_directory);
  ASSERT_THAT(env_.RenameFile(dir_.Sub("a"), dir_.Sub("b")), IsOk());
  EXPECT_FALSE(Exists(dir_.Sub("a")));
  ASSERT_THAT(env_.RemoveFile(dir_.Sub("b")), IsOk());
  EXPECT_THAT(env_.RemoveFile(dir_.Sub("b")),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("b")));
}

TEST_F(RealEnvTest, CreateDirsIsMkdirP) {
  ASSERT_THAT(env_.CreateDirs(dir_.Sub("x/y/z")), IsOk());
  EXPECT_TRUE(env_.Stat(dir_.Sub("x/y/z"))->is_directory);
  EXPECT_THAT(env_.CreateDirs(dir_.Sub("x/y/z")), IsOk());
  WriteBytes(dir_.Sub("file"), "");
  EXPECT_THAT(env_.CreateDirs(dir_.Sub("file")),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("not a directory")));
  EXPECT_THAT(env_.CreateDirs(dir_.Sub("file/sub")),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("not a directory")));
}

TEST_F(RealEnvTest, SetModTimeIsExact) {
  ASSERT_THAT(Write(dir_.Sub("f"), "x"), IsOk());
  absl::Time t = absl::FromUnixNanos(1'600'000'000'123'456'789);
  ASSERT_THAT(env_.SetModTime(dir_.Sub("f"), t), IsOk());
  EXPECT_EQ(env_.Stat(dir_.Sub("f"))->mtime, t);
}

TEST_F(RealEnvTest, LockIsExclusiveBetweenDescriptorsAndUnlinkedOnRelease) {
  std::string path = dir_.Sub("k.lock");
  absl::StatusOr<std::unique_ptr<FileLock>> first = env_.TryLockFile(path);
  ASSERT_THAT(first, IsOk());
  EXPECT_TRUE(Exists(path));
  // A second descriptor in the same process is excluded, as flock promises.
  EXPECT_THAT(env_.TryLockFile(path),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("locked")));
  first->reset();
  EXPECT_FALSE(Exists(path));
  EXPECT_THAT(env_.TryLockFile(path), IsOk());
}

TEST_F(RealEnvTest, LockOnAnUnlinkedInodeIsRefused) {
  // A waiter that opened the file before the holder released (and unlinked)
  // it must not believe it holds the lock.
  std::string path = dir_.Sub("k.lock");
  int fd = ::open(path.c_str(), O_CREAT | O_RDWR, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::unlink(path.c_str()), 0);
  WriteBytes(path, "");                          // a new inode under the same name
  ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);  // lock on the old inode
  EXPECT_THAT(env_.TryLockFile(path), IsOk());   // the new one is free
  ::close(fd);
}

TEST_F(RealEnvTest, LockInMissingOrReadOnlyDirectoryFailsAtOnce) {
  EXPECT_THAT(env_.TryLockFile(dir_.Sub("no/such/dir/k.lock")),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("open lock")));
}

TEST_F(RealEnvTest, RandomBitsDoNotRepeat) {
  std::set<uint64_t> seen;
  for (int i = 0; i < 10000; ++i) EXPECT_TRUE(seen.insert(env_.RandomBits()).second);
  EXPECT_EQ(env_.ProcessId(), ::getpid());
}

TEST_F(RealEnvTest, AcquireFileLockTimesOutAgainstALiveHolder) {
  std::string path = dir_.Sub("k.lock");
  absl::StatusOr<std::unique_ptr<FileLock>> held = env_.TryLockFile(path);
  ASSERT_THAT(held, IsOk());
  bool waited = false;
  auto start = std::chrono::steady_clock::now();
  EXPECT_THAT(AcquireFileLock(&env_, path, absl::Milliseconds(200), &waited),
              StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr("gave up waiting")));
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(waited);
  EXPECT_GE(ms, 190);
  EXPECT_LT(ms, 5000);
  EXPECT_TRUE(Exists(path));  // the holder's lock was not broken
}

TEST_F(RealEnvTest, AcquireFileLockGetsTheLockWhenTheHolderLetsGo) {
  std::string path = dir_.Sub("k.lock");
  absl::StatusOr<std::unique_ptr<FileLock>> held = env_.TryLockFile(path);
  ASSERT_THAT(held, IsOk());
  // The waiter goes through a counting wrapper: the holder lets go only once
  // a second attempt has begun, i.e. after the first one found the lock
  // taken. A fixed sleep instead let a loaded machine (ctest -j16) start the
  // waiter after the release, so it never waited.
  FaultEnv counting(&env_);
  std::thread releaser([&] {
    while (counting.calls(FaultOp::kLock) < 2) absl::SleepFor(absl::Milliseconds(1));
    held->reset();
  });
  bool waited = false;
  EXPECT_THAT(AcquireFileLock(&counting, path, absl::Seconds(30), &waited), IsOk());
  EXPECT_TRUE(waited);
  releaser.join();
}

TEST(FaultEnvTest, LockFailureIsImmediateNotATimeout) {
  ScratchDir dir;
  FaultEnv env(Env::Default());
  env.FailOp(FaultOp::kLock, EPERM);
  auto start = std::chrono::steady_clock::now();
  EXPECT_THAT(AcquireFileLock(&env, dir.Sub("k.lock"), absl::Seconds(30)),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("injected")));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(env.calls(FaultOp::kLock), 1);
}

TEST(FaultEnvTest, FailOpCountsDownAndMatchesPaths) {
  ScratchDir dir;
  FaultEnv env(Env::Default());
  WriteBytes(dir.Sub("a"), "1");
  WriteBytes(dir.Sub("b"), "2");
  env.FailOp(FaultOp::kRead, EIO, 2, "/a");
  EXPECT_THAT(env.ReadFile(dir.Sub("a"), 10),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("injected")));
  EXPECT_THAT(env.ReadFile(dir.Sub("b"), 10), IsOk());
  EXPECT_THAT(env.ReadFile(dir.Sub("a"), 10), StatusIs(absl::StatusCode::kInternal, HasSubstr("")));
  EXPECT_THAT(env.ReadFile(dir.Sub("a"), 10), IsOk());
  EXPECT_EQ(env.calls(FaultOp::kRead), 4);
}

TEST(FaultEnvTest, FailAppendAfterWritesExactlyThatMuch) {
  ScratchDir dir;
  FaultEnv env(Env::Default());
  env.FailAppendAfter(10, ENOSPC);
  auto f = env.NewWritableFile(dir.Sub("f"));
  ASSERT_THAT(f, IsOk());
  EXPECT_THAT((*f)->Append("0123456"), IsOk());
  EXPECT_THAT((*f)->Append("789abcdef"),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("No space")));
  (*f)->Close().IgnoreError();
  EXPECT_EQ(ReadBytes(dir.Sub("f")), "0123456789");
}

TEST(FaultEnvTest, TruncateWritesAtLiesAboutSuccess) {
  ScratchDir dir;
  FaultEnv env(Env::Default());
  env.TruncateWritesAt(4);
  auto f = env.NewWritableFile(dir.Sub("f"));
  ASSERT_THAT(f, IsOk());
  EXPECT_THAT((*f)->Append("0123456789"), IsOk());
  EXPECT_THAT((*f)->Close(), IsOk());
  EXPECT_EQ(ReadBytes(dir.Sub("f")), "0123");
}

TEST(FaultEnvTest, ReadOnlyRefusesMutationsButAllowsExistingDirs) {
  ScratchDir dir;
  FaultEnv env(Env::Default());
  env.SetReadOnly(true);
  EXPECT_FALSE(env.IsWritableDir(dir.path()));
  EXPECT_THAT(env.NewWritableFile(dir.Sub("f")),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("Read-only")));
  EXPECT_THAT(env.CreateDirs(dir.path()), IsOk());
  EXPECT_THAT(env.CreateDirs(dir.Sub("new")),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("")));
}

TEST(FaultEnvTest, CrashMakesTheEnvDead) {
  ScratchDir dir;
  FaultEnv env(Env::Default());
  env.CrashAt(CrashPoint::kMidWrite);
  auto f = env.NewWritableFile(dir.Sub("f"));
  ASSERT_THAT(f, IsOk());
  EXPECT_THAT((*f)->Append("0123456789"), StatusIs(absl::StatusCode::kAborted, HasSubstr("crash")));
  EXPECT_TRUE(env.crashed());
  EXPECT_EQ(ReadBytes(dir.Sub("f")), "01234");
  EXPECT_THAT(env.RemoveFile(dir.Sub("f")),
              StatusIs(absl::StatusCode::kAborted, HasSubstr("dead")));
  EXPECT_TRUE(Exists(dir.Sub("f")));
}

TEST(FaultEnvTest, CrashHookRunsInsteadOfGoingDead) {
  ScratchDir dir;
  FaultEnv env(Env::Default());
  int hooked = 0;
  env.CrashAt(CrashPoint::kBeforeRename, [&] { ++hooked; });
  WriteBytes(dir.Sub("a"), "x");
  EXPECT_THAT(env.RenameFile(dir.Sub("a"), dir.Sub("b")),
              StatusIs(absl::StatusCode::kAborted, HasSubstr("before rename")));
  EXPECT_EQ(hooked, 1);
  EXPECT_TRUE(Exists(dir.Sub("a")));
  EXPECT_FALSE(Exists(dir.Sub("b")));
}

}  // namespace
}  // namespace jitgemm::cache
