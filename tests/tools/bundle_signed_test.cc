// Signed bundles (issue 19): a bundle exported with a signing key is used as
// a read-only root and imported by a process that trusts the key; an
// unsigned, tampered or wrongly-signed bundle is refused by it, and so is an
// entry its signed manifest does not list.
#include <filesystem>
#include <string>

#include "absl/strings/str_cat.h"
#include "cache/bundle.h"
#include "cache/bundle_signature.h"
#include "cache/layout.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cache/test_util.h"
#include "tests/tools/bundle_fixture.h"

namespace jitgemm::cache {
namespace {

namespace fs = std::filesystem;
using testing::FilesUnder;
using ::testing::HasSubstr;
using testing::IsOk;
using ::testing::Optional;
using testing::ReadBytes;
using testing::ScratchDir;
using testing::StatusIs;
using testing::TestSettings;
using testing::WriteBytes;

class SignedBundleTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    mine_ = *GenerateSigningKey();
    theirs_ = *GenerateSigningKey();
    WriteBytes(dir_.Sub("mine.pub"), mine_.public_pem);
    WriteBytes(dir_.Sub("theirs.pub"), theirs_.public_pem);
    stored_ = Fill(dir_.Sub("cache"), 3);
  }
  bool archive() const { return GetParam(); }
  std::string Export(const std::string& name, const std::string& key_pem) {
    const std::string out = dir_.Sub(archive() ? name + ".tar" : name);
    ExportRequest req = WholeCache(dir_.Sub("cache"), out);
    req.sign_key_pem = key_pem;
    EXPECT_THAT(ExportBundle(req, Env::Default()).status(), IsOk());
    return out;
  }
  CacheSettings Trusting(const std::string& pub, const std::string& target) {
    CacheSettings s = TestSettings(dir_.Sub(target));
    s.trusted_keys = {dir_.Sub(pub)};
    return s;
  }
  absl::Status Import(const std::string& bundle, const std::string& pub, uint64_t* imported) {
    std::shared_ptr<DiskCache> c = DiskCache::Open(Trusting(pub, "target"));
    absl::StatusOr<ImportReport> r = ImportBundle(bundle, *c);
    *imported = r.ok() ? r->imported : 0;
    return r.status();
  }
  // A process trusting `pub` with `ro` as its read-only root.
  std::shared_ptr<DiskCache> Reader(const std::string& ro, const std::string& pub,
                                    std::string* err) {
    CacheSettings s = Trusting(pub, "reader");
    s.readonly_roots = {ro};
    ::testing::internal::CaptureStderr();
    std::shared_ptr<DiskCache> c = DiskCache::Open(s);
    *err = ::testing::internal::GetCapturedStderr();
    return c;
  }

  ScratchDir dir_;
  SigningKeyPair mine_, theirs_;
  std::vector<Stored> stored_;
};

TEST_P(SignedBundleTest, RoundTripImportAndVerify) {
  const std::string bundle = Export("signed", mine_.private_pem);
  absl::StatusOr<TrustedKeys> keys = TrustedKeys::Load({dir_.Sub("mine.pub")});
  absl::StatusOr<BundleVerifyReport> v = VerifyBundle(bundle, Env::Default(), &*keys);
  ASSERT_THAT(v.status(), IsOk());
  EXPECT_TRUE(v->ok()) << v->signature_error;
  EXPECT_THAT(v->signature, HasSubstr("(trusted here)"));
  uint64_t imported = 0;
  EXPECT_THAT(Import(bundle, "mine.pub", &imported), IsOk());
  EXPECT_EQ(imported, stored_.size());
}

TEST_P(SignedBundleTest, UnsignedOrWronglySignedIsRefused) {
  uint64_t imported = 0;
  const std::string unsigned_bundle = Export("unsigned", "");
  EXPECT_THAT(Import(unsigned_bundle, "mine.pub", &imported),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("not signed")));
  const std::string theirs = Export("theirs", theirs_.private_pem);
  EXPECT_THAT(Import(theirs, "mine.pub", &imported),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("not among")));
  EXPECT_EQ(imported, 0u);
  EXPECT_TRUE(FilesUnder(dir_.Sub("target")).empty());
  absl::StatusOr<TrustedKeys> keys = TrustedKeys::Load({dir_.Sub("mine.pub")});
  absl::StatusOr<BundleVerifyReport> v = VerifyBundle(theirs, Env::Default(), &*keys);
  ASSERT_THAT(v.status(), IsOk());
  EXPECT_FALSE(v->ok());
  // Without trusted keys both still import, as before.
  std::shared_ptr<DiskCache> open = DiskCache::Open(TestSettings(dir_.Sub("open")));
  EXPECT_THAT(ImportBundle(unsigned_bundle, *open).status(), IsOk());
}

INSTANTIATE_TEST_SUITE_P(Forms, SignedBundleTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Archive" : "Directory"; });

class SignedRootTest : public SignedBundleTest {};

TEST_P(SignedRootTest, SignedRootIsServedOthersAreNot) {
  const std::string bundle = Export("signed", mine_.private_pem);
  std::string err;
  std::shared_ptr<DiskCache> c = Reader(bundle, "mine.pub", &err);
  ASSERT_EQ(c->readonly_roots().size(), 1u) << err;
  EXPECT_THAT(c->Lookup(stored_[0].key, stored_[0].kind), Optional(stored_[0].payload));

  c = Reader(bundle, "theirs.pub", &err);
  EXPECT_TRUE(c->readonly_roots().empty());
  EXPECT_THAT(err, HasSubstr("not among"));
  EXPECT_EQ(c->Lookup(stored_[0].key, stored_[0].kind), std::nullopt);

  const std::string unsigned_root = Export("unsigned", "");
  c = Reader(unsigned_root, "mine.pub", &err);
  EXPECT_TRUE(c->readonly_roots().empty());
  EXPECT_THAT(err, HasSubstr("not signed"));
}

TEST_P(SignedRootTest, TamperedManifestOrEntryIsRefused) {
  const std::string bundle = Export("signed", mine_.private_pem);
  // An entry replaced by another sound entry for the same key: its own
  // checksum is right, only the signed listing catches it.
  const std::string entry = EntryPath(bundle, stored_[0].kind, stored_[0].key);
  WriteBytes(entry, EncodeEntry(stored_[0].key, stored_[0].kind, "forged"));
  std::string err;
  std::shared_ptr<DiskCache> c = Reader(bundle, "mine.pub", &err);
  ASSERT_EQ(c->readonly_roots().size(), 1u) << err;
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(c->Lookup(stored_[0].key, stored_[0].kind), std::nullopt);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(), HasSubstr("differs from its listing"));
  // An entry added beside the listed ones.
  const CacheKey extra = MakeCacheKey("jitgemm-kernel-key\nname=extra\n");
  fs::create_directories(ShardDir(bundle, EntryKind::kCubin, extra));
  WriteBytes(EntryPath(bundle, EntryKind::kCubin, extra),
             EncodeEntry(extra, EntryKind::kCubin, "x"));
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(c->Lookup(extra, EntryKind::kCubin), std::nullopt);
  ::testing::internal::GetCapturedStderr();
  // The manifest changed by one byte after signing.
  const std::string manifest = JoinPath(bundle, kBundleManifestFile);
  std::string text = ReadBytes(manifest);
  text[text.find("whole cache")] = 'W';
  WriteBytes(manifest, text);
  c = Reader(bundle, "mine.pub", &err);
  EXPECT_TRUE(c->readonly_roots().empty());
  EXPECT_THAT(err, HasSubstr("does not match the manifest"));
  uint64_t imported = 0;
  EXPECT_THAT(Import(bundle, "mine.pub", &imported),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("does not match")));
}

TEST_P(SignedRootTest, UnloadableKeyTrustsNothing) {
  const std::string bundle = Export("signed", mine_.private_pem);
  WriteBytes(dir_.Sub("typo.pub"), "not a key");
  std::string err;
  std::shared_ptr<DiskCache> c = Reader(bundle, "typo.pub", &err);
  EXPECT_TRUE(c->readonly_roots().empty());
  EXPECT_THAT(err, HasSubstr("no read-only root or bundle will be trusted"));
}

// Read-only roots are directories: only the directory form applies.
INSTANTIATE_TEST_SUITE_P(Forms, SignedRootTest, ::testing::Values(false));

}  // namespace
}  // namespace jitgemm::cache
