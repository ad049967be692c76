// Issue 19: verify-bundle and import check the folders' owner and mode (item
// 1), and import stops on any damaged manifest (item 4): unparsable, a
// symlink, a FIFO, too large or too deep. Each test failed before the fix.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "absl/strings/str_format.h"
#include "cache/bundle.h"
#include "cache/layout.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cache/second_user.h"
#include "tests/cache/test_util.h"
#include "tests/tools/bundle_fixture.h"

namespace jitgemm::cache {
namespace {

namespace fs = std::filesystem;
using testing::FilesUnder;
using ::testing::HasSubstr;
using testing::IsOk;
using testing::ReadBytes;
using testing::ScratchDir;
using testing::SecondUser;
using testing::StatusIs;
using testing::TestSettings;
using testing::WriteBytes;

class BundleTrustTest : public ::testing::Test {
 protected:
  void SetUp() override {
    stored_ = Fill(dir_.Sub("cache"), 3);
    ASSERT_THAT(ExportBundle(WholeCache(dir_.Sub("cache"), bundle_), Env::Default()).status(),
                IsOk());
  }
  std::string Shard() const { return ShardDir(bundle_, stored_[0].kind, stored_[0].key); }
  // Import into a fresh cache; returns the status, and checks nothing landed.
  absl::Status ImportExpectingNothing(const std::string& from) {
    std::shared_ptr<DiskCache> target = DiskCache::Open(TestSettings(dir_.Sub("target")));
    absl::Status s = ImportBundle(from, *target).status();
    EXPECT_EQ(target->counters().stores, 0u);
    EXPECT_TRUE(FilesUnder(dir_.Sub("target")).empty());
    return s;
  }

  ScratchDir dir_;
  std::string bundle_ = dir_.Sub("bundle");
  std::vector<Stored> stored_;
};

TEST_F(BundleTrustTest, WorldWritableFolderFailsVerifyAndImport) {
  for (const std::string& folder : {Shard(), LayoutRoot(bundle_), bundle_}) {
    ::chmod(folder.c_str(), 0777);
    EXPECT_THAT(
        VerifyBundle(bundle_, Env::Default()).status(),
        StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("writable by every user")))
        << folder;
    EXPECT_THAT(ImportExpectingNothing(bundle_),
                StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr(folder)));
    ::chmod(folder.c_str(), 0755);
  }
  EXPECT_TRUE(VerifyBundle(bundle_, Env::Default())->ok());
}

TEST_F(BundleTrustTest, WorldWritableEntryIsCorrupt) {
  ::chmod(EntryPath(bundle_, stored_[0].kind, stored_[0].key).c_str(), 0666);
  absl::StatusOr<BundleVerifyReport> r = VerifyBundle(bundle_, Env::Default());
  ASSERT_THAT(r.status(), IsOk());
  EXPECT_FALSE(r->ok());
  ASSERT_EQ(r->corrupt.size(), 1u);
  EXPECT_THAT(r->corrupt[0].reason, HasSubstr("writable by every user"));
}

TEST_F(BundleTrustTest, SymlinkedShardFailsVerify) {
  const std::string elsewhere = dir_.Sub("elsewhere");
  fs::rename(Shard(), elsewhere);
  fs::create_directory_symlink(elsewhere, Shard());
  EXPECT_THAT(VerifyBundle(bundle_, Env::Default()).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("symlink")));
}

TEST_F(BundleTrustTest, FolderOfAnotherUserFailsVerify) {
  SecondUser other;
  if (!other.unavailable().empty()) GTEST_SKIP() << other.unavailable();
  other.Own(Shard());
  EXPECT_THAT(VerifyBundle(bundle_, Env::Default()).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr(absl::StrCat("belongs to uid ", other.uid()))));
}

// Sets the mode of the archive's first member (a folder) and reseals its
// header checksum, as an archive made by another tool might carry it.
void SetFirstMemberMode(const std::string& tar, unsigned mode) {
  std::string bytes = ReadBytes(tar);
  const std::string field = absl::StrFormat("%07o", mode);
  std::copy(field.begin(), field.end(), bytes.begin() + 100);
  std::fill(bytes.begin() + 148, bytes.begin() + 156, ' ');
  unsigned sum = 0;
  for (size_t i = 0; i < 512; ++i) sum += static_cast<unsigned char>(bytes[i]);
  const std::string chk = absl::StrFormat("%06o", sum) + std::string("\0 ", 2);
  std::copy(chk.begin(), chk.end(), bytes.begin() + 148);
  WriteBytes(tar, bytes);
}

TEST_F(BundleTrustTest, ArchiveMemberWritableByEveryUserIsRefused) {
  const std::string tar = dir_.Sub("b.tar");
  ASSERT_THAT(ExportBundle(WholeCache(dir_.Sub("cache"), tar), Env::Default()).status(), IsOk());
  SetFirstMemberMode(tar, 0755);
  EXPECT_THAT(VerifyBundle(tar, Env::Default()).status(), IsOk());  // the resealing is sound
  SetFirstMemberMode(tar, 0777);
  EXPECT_THAT(VerifyBundle(tar, Env::Default()).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("mode 0777")));
  EXPECT_THAT(ImportExpectingNothing(tar),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("mode 0777")));
}

// ------------------------------------------------------------ damaged manifests

TEST_F(BundleTrustTest, ImportStopsOnAnUnparsableManifest) {
  WriteBytes(JoinPath(bundle_, kBundleManifestFile), "{\"format\":");
  EXPECT_THAT(ImportExpectingNothing(bundle_),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("not valid JSON")));
}

TEST_F(BundleTrustTest, ImportStopsOnADeepManifest) {
  WriteBytes(JoinPath(bundle_, kBundleManifestFile), std::string(1 << 20, '['));
  EXPECT_THAT(ImportExpectingNothing(bundle_),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("deeper than")));
}

TEST_F(BundleTrustTest, ImportStopsOnAnOversizeManifest) {
  fs::resize_file(JoinPath(bundle_, kBundleManifestFile), kMaxBundleManifestBytes + 1);
  EXPECT_THAT(ImportExpectingNothing(bundle_),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("limit")));
}

TEST_F(BundleTrustTest, ImportStopsOnASymlinkedManifest) {
  const std::string manifest = JoinPath(bundle_, kBundleManifestFile);
  fs::rename(manifest, dir_.Sub("real.json"));
  fs::create_symlink(dir_.Sub("real.json"), manifest);
  EXPECT_THAT(ImportExpectingNothing(bundle_),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("symlink")));
}

TEST_F(BundleTrustTest, ImportStopsOnAFifoManifest) {
  const std::string manifest = JoinPath(bundle_, kBundleManifestFile);
  fs::remove(manifest);
  ASSERT_EQ(::mkfifo(manifest.c_str(), 0644), 0);
  EXPECT_THAT(ImportExpectingNothing(bundle_),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("not a regular file")));
}

TEST_F(BundleTrustTest, ImportOfACopiedCacheRootWithoutManifestGoesOn) {
  fs::remove(JoinPath(bundle_, kBundleManifestFile));
  std::shared_ptr<DiskCache> target = DiskCache::Open(TestSettings(dir_.Sub("target")));
  absl::StatusOr<ImportReport> r = ImportBundle(bundle_, *target);
  ASSERT_THAT(r.status(), IsOk());
  EXPECT_EQ(r->imported, stored_.size());
}

}  // namespace
}  // namespace jitgemm::cache
