// Bundles without a compiler: export (directory and archive), import,
// verification, corruption, and the archive reader's refusals.
#include "cache/bundle.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cache/layout.h"
#include "cache/ustar.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cache/test_util.h"
#include "tests/tools/bundle_fixture.h"

namespace jitgemm::cache {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::IsOk;
using testing::PayloadFor;
using testing::ReadBytes;
using testing::ScratchDir;
using ::testing::SizeIs;
using testing::StatusIs;
using testing::TestSettings;
using testing::WriteBytes;

std::set<std::string> BundleEntries(const std::string& dir) {
  std::set<std::string> out;
  absl::StatusOr<std::vector<EntryFileInfo>> files =
      ListEntryFiles(Env::Default(), dir, RootUse::kReadOnly);
  EXPECT_THAT(files.status(), IsOk());
  if (files.ok()) {
    for (const EntryFileInfo& f : *files) out.insert(f.relative_path);
  }
  return out;
}

void FlipByte(const std::string& path, size_t offset) {
  std::string bytes = ReadBytes(path);
  ASSERT_LT(offset, bytes.size());
  bytes[offset] ^= 0x01;
  WriteBytes(path, bytes);
}

TEST(BundleTest, DirectoryRoundTripAndUseAsReadOnlyRoot) {
  ScratchDir dir;
  const std::vector<Stored> stored = Fill(dir.Sub("cache"), 5);
  absl::StatusOr<ExportReport> exported =
      ExportBundle(WholeCache(dir.Sub("cache"), dir.Sub("bundle")), Env::Default());
  ASSERT_THAT(exported.status(), IsOk());
  EXPECT_FALSE(exported->archive);
  EXPECT_EQ(exported->manifest.entries, 7u);
  EXPECT_EQ(exported->manifest.kinds.at("cubin").entries, 5u);
  EXPECT_EQ(exported->manifest.kinds.at("tuning").entries, 2u);
  EXPECT_THAT(exported->manifest.key_fields.at("arch"), ElementsAre("sm_90a"));
  EXPECT_THAT(exported->manifest.key_fields.at("nvrtc"), ElementsAre("13000"));
  EXPECT_THAT(exported->manifest.key_fields.at("abi"), ElementsAre("1"));
  EXPECT_THAT(exported->missing, IsEmpty());
  EXPECT_THAT(exported->corrupt, IsEmpty());
  // Nothing left beside it from the staging directory.
  EXPECT_THAT(testing::FilesUnder(dir.path()),
              ::testing::Each(::testing::Not(HasSubstr("partial"))));
  EXPECT_TRUE(testing::Exists(dir.Sub("bundle/README.txt")));
  EXPECT_THAT(ReadBytes(dir.Sub("bundle/README.txt")), HasSubstr("JITGEMM_CACHE_READONLY_DIRS"));

  absl::StatusOr<BundleVerifyReport> verified = VerifyBundle(dir.Sub("bundle"), Env::Default());
  ASSERT_THAT(verified.status(), IsOk());
  EXPECT_TRUE(verified->ok());
  EXPECT_EQ(verified->valid, 7u);

  // Usable as is as a read-only root, beside an empty writable one.
  CacheSettings settings = TestSettings(dir.Sub("empty"));
  settings.readonly_roots = {dir.Sub("bundle")};
  std::shared_ptr<DiskCache> reader = DiskCache::Open(settings);
  ASSERT_THAT(reader->readonly_roots(), SizeIs(1));
  for (const Stored& s : stored) {
    std::optional<std::string> got = reader->Lookup(s.key, s.kind);
    ASSERT_TRUE(got.has_value()) << s.key.text;
    EXPECT_EQ(*got, s.payload);
  }
  EXPECT_EQ(reader->counters().hits, stored.size());

  // Import into a fresh cache: everything, then nothing new the second time.
  std::shared_ptr<DiskCache> target = DiskCache::Open(TestSettings(dir.Sub("target")));
  absl::StatusOr<ImportReport> imported = ImportBundle(dir.Sub("bundle"), *target);
  ASSERT_THAT(imported.status(), IsOk());
  EXPECT_EQ(imported->imported, 7u);
  EXPECT_EQ(imported->already_present, 0u);
  for (const Stored& s : stored) EXPECT_EQ(target->Lookup(s.key, s.kind), s.payload);
  EXPECT_THAT(testing::TempFilesUnder(dir.Sub("target")), IsEmpty());
  imported = ImportBundle(dir.Sub("bundle"), *target);
  ASSERT_THAT(imported.status(), IsOk());
  EXPECT_EQ(imported->imported, 0u);
  EXPECT_EQ(imported->already_present, 7u);
}

TEST(BundleTest, ArchiveRoundTripIsReproducible) {
  ScratchDir dir;
  const std::vector<Stored> stored = Fill(dir.Sub("cache"), 4);
  ASSERT_THAT(ExportBundle(WholeCache(dir.Sub("cache"), dir.Sub("a.tar")), Env::Default()).status(),
              IsOk());
  ASSERT_THAT(ExportBundle(WholeCache(dir.Sub("cache"), dir.Sub("b.tar")), Env::Default()).status(),
              IsOk());
  const std::string a = ReadBytes(dir.Sub("a.tar"));
  EXPECT_EQ(a, ReadBytes(dir.Sub("b.tar")));
  EXPECT_EQ(a.size() % kTarRecordBytes, 0u);

  absl::StatusOr<BundleVerifyReport> verified = VerifyBundle(dir.Sub("a.tar"), Env::Default());
  ASSERT_THAT(verified.status(), IsOk());
  EXPECT_TRUE(verified->ok());
  EXPECT_TRUE(verified->archive);
  EXPECT_EQ(verified->valid, 6u);
  EXPECT_THAT(verified->ignored, IsEmpty());

  std::shared_ptr<DiskCache> target = DiskCache::Open(TestSettings(dir.Sub("target")));
  absl::StatusOr<ImportReport> imported = ImportBundle(dir.Sub("a.tar"), *target);
  ASSERT_THAT(imported.status(), IsOk());
  EXPECT_EQ(imported->imported, 6u);
  for (const Stored& s : stored) EXPECT_EQ(target->Lookup(s.key, s.kind), s.payload);

  // Archive -> directory, through export --from.
  ExportRequest copy = WholeCache("", dir.Sub("unpacked"));
  copy.roots.clear();
  copy.from = dir.Sub("a.tar");
  ASSERT_THAT(ExportBundle(copy, Env::Default()).status(), IsOk());
  EXPECT_EQ(BundleEntries(dir.Sub("unpacked")), BundleEntries(dir.Sub("cache")));

  // Any tar reads it, and gives the same tree.
  if (std::system("tar --version >/dev/null 2>&1") == 0) {
    std::filesystem::create_directory(dir.Sub("untarred"));
    ASSERT_EQ(
        std::system(absl::StrCat("tar -xf '", dir.Sub("a.tar"), "' -C '", dir.Sub("untarred"), "'")
                        .c_str()),
        0);
    verified = VerifyBundle(dir.Sub("untarred"), Env::Default());
    ASSERT_THAT(verified.status(), IsOk());
    EXPECT_TRUE(verified->ok());
    EXPECT_EQ(verified->valid, 6u);
    // And a tar made by tar (of our layout) reads back too.
    ASSERT_EQ(std::system(absl::StrCat("cd '", dir.Sub("untarred"),
                                       "' && tar --format=ustar -cf ../c.tar .")
                              .c_str()),
              0);
    verified = VerifyBundle(dir.Sub("c.tar"), Env::Default());
    ASSERT_THAT(verified.status(), IsOk());
    EXPECT_TRUE(verified->ok()) << verified->manifest_error;
  }
}

TEST(BundleTest, OneCorruptByteIsReportedAndSkipped) {
  ScratchDir dir;
  const std::vector<Stored> stored = Fill(dir.Sub("cache"), 3);
  ASSERT_THAT(
      ExportBundle(WholeCache(dir.Sub("cache"), dir.Sub("bundle")), Env::Default()).status(),
      IsOk());
  ASSERT_THAT(ExportBundle(WholeCache(dir.Sub("cache"), dir.Sub("b.tar")), Env::Default()).status(),
              IsOk());
  const Stored& victim = stored[1];
  const std::string relative = EntryRelativePath(victim.kind, victim.key);
  FlipByte(dir.Sub("bundle/" + relative), 100);

  // The same byte inside the archive: find the member's data by its name.
  absl::StatusOr<std::unique_ptr<TarReader>> reader =
      TarReader::Open(dir.Sub("b.tar"), kMaxEntryFileBytes);
  ASSERT_THAT(reader.status(), IsOk());
  uint64_t data_offset = 0;
  for (const TarMember& m : (*reader)->members()) {
    if (m.name == relative) data_offset = m.data_offset;
  }
  ASSERT_NE(data_offset, 0u);
  reader->reset();
  FlipByte(dir.Sub("b.tar"), data_offset + 100);

  for (const std::string& bundle : {dir.Sub("bundle"), dir.Sub("b.tar")}) {
    SCOPED_TRACE(bundle);
    absl::StatusOr<BundleVerifyReport> verified = VerifyBundle(bundle, Env::Default());
    ASSERT_THAT(verified.status(), IsOk());
    EXPECT_FALSE(verified->ok());
    ASSERT_THAT(verified->corrupt, SizeIs(1));
    EXPECT_THAT(verified->corrupt[0].path, HasSubstr(relative));
    EXPECT_THAT(verified->corrupt[0].reason, HasSubstr("checksum"));
    EXPECT_EQ(verified->valid, 4u);

    ScratchDir target_dir;
    std::shared_ptr<DiskCache> target = DiskCache::Open(TestSettings(target_dir.Sub("c")));
    absl::StatusOr<ImportReport> imported = ImportBundle(bundle, *target);
    ASSERT_THAT(imported.status(), IsOk());
    EXPECT_EQ(imported->imported, 4u);
    EXPECT_THAT(imported->verify.corrupt, SizeIs(1));
    EXPECT_FALSE(target->Lookup(victim.key, victim.kind).has_value());
    EXPECT_EQ(target->Lookup(stored[0].key, stored[0].kind), stored[0].payload);
  }

  // Exporting from the damaged bundle skips the entry and reports it.
  ExportRequest copy = WholeCache("", dir.Sub("copy"));
  copy.roots.clear();
  copy.from = dir.Sub("bundle");
  absl::StatusOr<ExportReport> exported = ExportBundle(copy, Env::Default());
  ASSERT_THAT(exported.status(), IsOk());
  EXPECT_EQ(exported->manifest.entries, 4u);
  ASSERT_THAT(exported->corrupt, SizeIs(1));
}

TEST(BundleTest, SwappedMissingAndUnlistedEntriesAreCaught) {
  ScratchDir dir;
  const std::vector<Stored> stored = Fill(dir.Sub("cache"), 3);
  ASSERT_THAT(
      ExportBundle(WholeCache(dir.Sub("cache"), dir.Sub("bundle")), Env::Default()).status(),
      IsOk());
  const std::string a = dir.Sub("bundle/" + EntryRelativePath(stored[0].kind, stored[0].key));
  const std::string b = dir.Sub("bundle/" + EntryRelativePath(stored[1].kind, stored[1].key));
  WriteBytes(a, ReadBytes(b));  // b's sound bytes under a's name
  std::filesystem::remove(b);
  // A sound entry nobody listed.
  CacheKey extra = MakeCacheKey("jitgemm-kernel-key\nname=extra\n");
  const std::string extra_path = dir.Sub("bundle/" + EntryRelativePath(EntryKind::kCubin, extra));
  std::filesystem::create_directories(std::filesystem::path(extra_path).parent_path());
  WriteBytes(extra_path, EncodeEntry(extra, EntryKind::kCubin, "cubin"));

  absl::StatusOr<BundleVerifyReport> r = VerifyBundle(dir.Sub("bundle"), Env::Default());
  ASSERT_THAT(r.status(), IsOk());
  EXPECT_FALSE(r->ok());
  ASSERT_THAT(r->corrupt, SizeIs(1));
  EXPECT_THAT(r->corrupt[0].reason, HasSubstr("swapped"));
  EXPECT_THAT(r->missing, ElementsAre(EntryRelativePath(stored[1].kind, stored[1].key)));
  ASSERT_THAT(r->unlisted, SizeIs(1));
  EXPECT_THAT(r->unlisted[0], HasSubstr(extra.Hex()));

  std::shared_ptr<DiskCache> target = DiskCache::Open(TestSettings(dir.Sub("target")));
  absl::StatusOr<ImportReport> imported = ImportBundle(dir.Sub("bundle"), *target);
  ASSERT_THAT(imported.status(), IsOk());
  EXPECT_EQ(imported->imported, 3u);  // the two tuning records and stored[2]
  EXPECT_FALSE(target->Lookup(extra, EntryKind::kCubin).has_value());
  EXPECT_FALSE(target->Lookup(stored[0].key, stored[0].kind).has_value());
}

TEST(BundleTest, SelectedKeysOnlyAndMissingReported) {
  ScratchDir dir;
  const std::vector<Stored> stored = Fill(dir.Sub("cache"), 4);
  ExportRequest req = WholeCache(dir.Sub("cache"), dir.Sub("bundle"));
  req.all = false;
  req.keys = {{EntryKind::kCubin, stored[1].key}, {EntryKind::kCubin, stored[3].key}};
  const CacheKey absent = MakeCacheKey("jitgemm-kernel-key\nname=never-warmed\n");
  req.keys.push_back({EntryKind::kCubin, absent});
  req.tuning_filter = [](std::string_view text) { return KeyTextField(text, "problem") == "p2"; };
  absl::StatusOr<ExportReport> r = ExportBundle(req, Env::Default());
  ASSERT_THAT(r.status(), IsOk());
  EXPECT_THAT(r->missing, ElementsAre(absent.Hex()));
  EXPECT_EQ(BundleEntries(dir.Sub("bundle")),
            (std::set<std::string>{EntryRelativePath(EntryKind::kCubin, stored[1].key),
                                   EntryRelativePath(EntryKind::kCubin, stored[3].key),
                                   EntryRelativePath(EntryKind::kTuningRecord, stored[5].key)}));
}

TEST(BundleTest, ReadOnlyRootsComeFirstAndACorruptCopyFallsThrough) {
  ScratchDir dir;
  const std::vector<Stored> stored = Fill(dir.Sub("writable"), 2);
  Fill(dir.Sub("readonly"), 2);
  FlipByte(dir.Sub("readonly/" + EntryRelativePath(stored[0].kind, stored[0].key)), 40);
  ExportRequest req = WholeCache(dir.Sub("readonly"), dir.Sub("bundle"));
  req.roots.push_back(dir.Sub("writable"));
  absl::StatusOr<ExportReport> r = ExportBundle(req, Env::Default());
  ASSERT_THAT(r.status(), IsOk());
  EXPECT_EQ(r->manifest.entries, 4u);  // the writable root's copy of the bad one
  ASSERT_THAT(r->corrupt, SizeIs(1));
  EXPECT_THAT(r->corrupt[0].path, HasSubstr("readonly"));
  absl::StatusOr<BundleVerifyReport> v = VerifyBundle(dir.Sub("bundle"), Env::Default());
  ASSERT_THAT(v.status(), IsOk());
  EXPECT_TRUE(v->ok());
}

TEST(BundleTest, OutputRules) {
  ScratchDir dir;
  Fill(dir.Sub("cache"), 1);
  std::filesystem::create_directories(dir.Sub("full/x"));
  EXPECT_THAT(ExportBundle(WholeCache(dir.Sub("cache"), dir.Sub("full")), Env::Default()).status(),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("not empty")));
  WriteBytes(dir.Sub("x.tar"), "x");
  EXPECT_THAT(ExportBundle(WholeCache(dir.Sub("cache"), dir.Sub("x.tar")), Env::Default()).status(),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("x.tar")));
  EXPECT_EQ(ReadBytes(dir.Sub("x.tar")), "x");
  // An existing empty directory (a mount point) is written in place.
  std::filesystem::create_directories(dir.Sub("mount"));
  ASSERT_THAT(ExportBundle(WholeCache(dir.Sub("cache"), dir.Sub("mount")), Env::Default()).status(),
              IsOk());
  absl::StatusOr<BundleVerifyReport> v = VerifyBundle(dir.Sub("mount"), Env::Default());
  ASSERT_THAT(v.status(), IsOk());
  EXPECT_TRUE(v->ok());
  // A plain cache root is no bundle.
  v = VerifyBundle(dir.Sub("cache"), Env::Default());
  ASSERT_THAT(v.status(), IsOk());
  EXPECT_FALSE(v->ok());
  EXPECT_THAT(v->manifest_error, HasSubstr("not a bundle"));
  EXPECT_THAT(VerifyBundle(dir.Sub("absent"), Env::Default()).status(),
              StatusIs(absl::StatusCode::kNotFound, ::testing::_));
}

TEST(BundleTest, ImportNeedsAWritableCache) {
  ScratchDir dir;
  Fill(dir.Sub("cache"), 1);
  ASSERT_THAT(
      ExportBundle(WholeCache(dir.Sub("cache"), dir.Sub("bundle")), Env::Default()).status(),
      IsOk());
  CacheSettings settings = TestSettings(dir.Sub("cache"));
  settings.mode = CacheMode::kReadOnly;
  std::shared_ptr<DiskCache> ro = DiskCache::Open(settings);
  EXPECT_THAT(ImportBundle(dir.Sub("bundle"), *ro).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("readonly")));
}

// Random damage to a real bundle archive: never a crash, and whatever is
// accepted has safe names and sizes within the limit.
TEST(TarReaderTest, SurvivesRandomDamage) {
  ScratchDir dir;
  Fill(dir.Sub("cache"), 2);
  ASSERT_THAT(ExportBundle(WholeCache(dir.Sub("cache"), dir.Sub("b.tar")), Env::Default()).status(),
              IsOk());
  const std::string good = ReadBytes(dir.Sub("b.tar"));
  uint64_t state = 12345;
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state >> 33;
  };
  int opened = 0;
  for (int round = 0; round < 1500; ++round) {
    std::string bad = good;
    const int flips = 1 + static_cast<int>(next() % 4);
    for (int i = 0; i < flips; ++i) {
      // Mostly headers (the first 8 blocks), sometimes anywhere.
      const size_t at = next() % 4 == 0 ? next() % bad.size() : next() % (8 * 512);
      bad[at] = static_cast<char>(next() & 0xff);
    }
    if (next() % 8 == 0) bad.resize(next() % bad.size());
    WriteBytes(dir.Sub("m.tar"), bad);
    absl::StatusOr<std::unique_ptr<TarReader>> r = TarReader::Open(dir.Sub("m.tar"), 1 << 20);
    if (!r.ok()) continue;
    ++opened;
    for (const TarMember& m : (*r)->members()) {
      ASSERT_TRUE(NormalizeMemberName(m.name, m.is_directory).ok()) << m.name;
      ASSERT_EQ(NormalizeMemberName(m.name, m.is_directory).value(), m.name);
      ASSERT_LE(m.size, 1u << 20);
      ASSERT_LE(m.data_offset + m.size, bad.size());
      EXPECT_THAT((*r)->Read(m).status(), IsOk());
    }
    // A damaged mode field that reads as world-writable is refused whole.
    absl::Status verified = VerifyBundle(dir.Sub("m.tar"), Env::Default()).status();
    if (!verified.ok()) {
      EXPECT_THAT(verified, StatusIs(absl::StatusCode::kFailedPrecondition,
                                     HasSubstr("writable by every user")));
    }
  }
  EXPECT_GT(opened, 0);  // some damage lands in data or padding
}

}  // namespace
}  // namespace jitgemm::cache
