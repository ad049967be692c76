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

namespace jitgemm::cache {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;
using testing::IsOk;
using testing::PayloadFor;
using testing::ReadBytes;
using testing::ScratchDir;
using testing::StatusIs;
using testing::TestSettings;
using testing::WriteBytes;

struct Stored {
  EntryKind kind;
  CacheKey key;
  std::string payload;
};

// A cache at `root` with `n` kernels for sm_90a and two tuning records.
std::vector<Stored> Fill(const std::string& root, int n) {
  std::shared_ptr<DiskCache> c = DiskCache::Open(TestSettings(root));
  std::vector<Stored> out;
  for (int i = 0; i < n; ++i) {
    CacheKey key = MakeCacheKey(absl::StrCat("jitgemm-kernel-key\nabi=1\nnvrtc=13000\narch=sm_90a\n"
                                             "sources=feed\nname=k",
                                             i, "\n"));
    out.push_back({EntryKind::kCubin, key, PayloadFor(key.text, 3000 + 17 * i)});
  }
  for (const char* problem : {"p1", "p2"}) {
    CacheKey key = MakeCacheKey(absl::StrCat("jitgemm-tuning-key v1\nproblem=", problem, "\n"));
    out.push_back({EntryKind::kTuningRecord, key, absl::StrCat("{\"winner\":\"", problem, "\"}")});
  }
  for (const Stored& s : out) c->Store(s.key, s.kind, s.payload);
  EXPECT_EQ(c->counters().stores, out.size());
  return out;
}

ExportRequest WholeCache(const std::string& root, const std::string& out) {
  ExportRequest req;
  req.roots = {root};
  req.out = out;
  req.created_by = "bundle_test";
  req.library_version = "0.0.0";
  req.selection = "whole cache";
  req.created_at = absl::FromUnixSeconds(1700000000);
  return req;
}

std::set<std::string> BundleEntries(const std::string& dir) {
  std::set<std::string> out;
  absl::StatusOr<std::vector<EntryFileInfo>> files = ListEntryFiles(Env::Default(), dir);
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
  EXPECT_THAT(testing::FilesUnder(dir.path()), ::testing::Each(::testing::Not(HasSubstr("partial"))));
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
    ASSERT_EQ(std::system(absl::StrCat("tar -xf '", dir.Sub("a.tar"), "' -C '", dir.Sub("untarred"),
                                       "'")
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
  ASSERT_THAT(ExportBundle(WholeCache(dir.Sub("cache"), dir.Sub("bundle")), Env::Default()).status(),
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
  ASSERT_THAT(ExportBundle(WholeCache(dir.Sub("cache"), dir.Sub("bundle")), Env::Default()).status(),
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
  ASSERT_THAT(ExportBundle(WholeCache(dir.Sub("cache"), dir.Sub("bundle")), Env::Default()).status(),
              IsOk());
  CacheSettings settings = TestSettings(dir.Sub("cache"));
  settings.mode = CacheMode::kReadOnly;
  std::shared_ptr<DiskCache> ro = DiskCache::Open(settings);
  EXPECT_THAT(ImportBundle(dir.Sub("bundle"), *ro).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("readonly")));
}

TEST(BundleManifestTest, JsonRoundTripAndRejections) {
  BundleManifest m;
  m.created_by = "t";
  m.created_at = "2024-01-01T00:00:00Z";
  m.selection = "s";
  m.manifests = {"a.json"};
  m.key_fields["arch"] = {"sm_90a"};
  m.kinds["cubin"] = {1, 10};
  m.entries = 1;
  m.bytes = 10;
  m.files["v1/cubin/ab/ab000000000000000000000000000000.bin"] = {10, "0123456789abcdef"};
  absl::StatusOr<BundleManifest> back = BundleManifest::FromJson(m.ToJson());
  ASSERT_THAT(back.status(), IsOk());
  EXPECT_EQ(back->ToJson(), m.ToJson());

  for (const char* bad : {"", "[]", "{\"format\":\"other\",\"files\":[]}",
                          "{\"format\":\"jitgemm-bundle-1\"}",
                          "{\"format\":\"jitgemm-bundle-1\",\"files\":[{\"path\":\"../x\","
                          "\"bytes\":1,\"xxh3\":\"0\"}]}",
                          "{\"format\":\"jitgemm-bundle-1\",\"files\":[{\"path\":1}]}",
                          "{\"format\":\"jitgemm-bundle-1\",\"entries\":-1,\"files\":[]}"}) {
    EXPECT_THAT(BundleManifest::FromJson(bad).status(),
                StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_))
        << bad;
  }
}

// ------------------------------------------------------------ archive reader

// A ustar header written by hand, so the reader is tested against bytes
// the writer did not make.
// Copies `value` over `h` at `offset` without changing its length.
void Put(std::string& h, size_t offset, const std::string& value) {
  std::copy(value.begin(), value.end(), h.begin() + static_cast<std::ptrdiff_t>(offset));
}

void Seal(std::string& h) {
  Put(h, 148, "        ");
  unsigned sum = 0;
  for (size_t i = 0; i < 512; ++i) sum += static_cast<unsigned char>(h[i]);
  Put(h, 148, absl::StrFormat("%06o", sum) + std::string("\0 ", 2));
}

std::string Header(const std::string& name, char type, uint64_t size,
                   const std::string& magic = std::string("ustar\0" "00", 8)) {
  std::string h(512, '\0');
  Put(h, 0, name.substr(0, 100));
  Put(h, 100, "0000644");
  Put(h, 108, "0000000");
  Put(h, 116, "0000000");
  Put(h, 124, absl::StrFormat("%011o", size));
  Put(h, 136, absl::StrFormat("%011o", 0));
  h[156] = type;
  Put(h, 257, magic);
  Seal(h);
  return h;
}

std::string Padded(const std::string& data) {
  return data + std::string((512 - data.size() % 512) % 512, '\0');
}

std::string End() { return std::string(1024, '\0'); }

absl::Status OpenTar(const ScratchDir& dir, const std::string& bytes,
                     uint64_t limit = kMaxEntryFileBytes) {
  WriteBytes(dir.Sub("t.tar"), bytes);
  return TarReader::Open(dir.Sub("t.tar"), limit).status();
}

TEST(TarReaderTest, AcceptsPlainMembers) {
  ScratchDir dir;
  const std::string tar = Header("./", '5', 0) + Header("./v1/", '5', 0) +
                          Header("./v1/a.txt", '0', 5) + Padded("hello") + End();
  WriteBytes(dir.Sub("t.tar"), tar);
  absl::StatusOr<std::unique_ptr<TarReader>> r = TarReader::Open(dir.Sub("t.tar"), 100);
  ASSERT_THAT(r.status(), IsOk());
  ASSERT_THAT((*r)->members(), SizeIs(2));
  EXPECT_EQ((*r)->members()[0].name, "v1");
  EXPECT_TRUE((*r)->members()[0].is_directory);
  EXPECT_EQ((*r)->members()[1].name, "v1/a.txt");
  EXPECT_EQ((*r)->Read((*r)->members()[1]).value(), "hello");
}

TEST(TarReaderTest, RejectsTraversalLinksAndExtensions) {
  ScratchDir dir;
  struct Case {
    std::string tar;
    absl::StatusCode code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {Header("../evil", '0', 1) + Padded("x") + End(), absl::StatusCode::kInvalidArgument, ".."},
      {Header("v1/../../evil", '0', 1) + Padded("x") + End(), absl::StatusCode::kInvalidArgument,
       ".."},
      {Header("/etc/passwd", '0', 1) + Padded("x") + End(), absl::StatusCode::kInvalidArgument,
       "absolute"},
      {Header("v1//a", '0', 1) + Padded("x") + End(), absl::StatusCode::kInvalidArgument, "empty"},
      {Header("link", '2', 0) + End(), absl::StatusCode::kInvalidArgument, "type '2'"},
      {Header("hard", '1', 0) + End(), absl::StatusCode::kInvalidArgument, "type '1'"},
      {Header("dev", '3', 0) + End(), absl::StatusCode::kInvalidArgument, "type '3'"},
      {Header("././@PaxHeader", 'x', 0) + End(), absl::StatusCode::kInvalidArgument, "type 'x'"},
      {Header("././@LongLink", 'L', 0) + End(), absl::StatusCode::kInvalidArgument, "type 'L'"},
      {Header("a", '0', 1) + Padded("x") + Header("a", '0', 1) + Padded("y") + End(),
       absl::StatusCode::kInvalidArgument, "more than once"},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(OpenTar(dir, c.tar), StatusIs(c.code, HasSubstr(c.message)))
        << absl::CHexEscape(c.tar.substr(0, 100));
  }
}

TEST(TarReaderTest, RejectsOversizeDamagedAndTruncatedArchives) {
  ScratchDir dir;
  // A member claiming 2^33 bytes: refused before anything is read.
  EXPECT_THAT(OpenTar(dir, Header("big", '0', uint64_t{1} << 33) + End()),
              StatusIs(absl::StatusCode::kOutOfRange, HasSubstr("limit")));
  EXPECT_THAT(OpenTar(dir, Header("v1/a", '0', 200) + Padded(std::string(200, 'a')) + End(), 100),
              StatusIs(absl::StatusCode::kOutOfRange, HasSubstr("v1/a")));
  // Data running past the end.
  EXPECT_THAT(OpenTar(dir, Header("a", '0', 4096) + Padded("x")),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("past the end")));
  // No end-of-archive marker: cut at a member boundary.
  EXPECT_THAT(OpenTar(dir, Header("a", '0', 1) + Padded("x")),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("truncated")));
  // A flipped header byte.
  std::string tar = Header("a", '0', 1) + Padded("x") + End();
  tar[3] ^= 0x20;
  EXPECT_THAT(OpenTar(dir, tar), StatusIs(absl::StatusCode::kDataLoss, HasSubstr("checksum")));
  // Not a tar at all.
  EXPECT_THAT(OpenTar(dir, std::string(600, 'z')),
              StatusIs(absl::StatusCode::kDataLoss, ::testing::_));
  // Old v7 headers carry no magic.
  EXPECT_THAT(OpenTar(dir, Header("a", '0', 1, std::string(8, '\0')) + Padded("x") + End()),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("ustar")));
  // Base-256 sizes (GNU, for huge members) are not accepted.
  std::string base256 = Header("a", '0', 0) + End();
  base256[124] = static_cast<char>(0x80);
  Seal(base256);
  EXPECT_THAT(OpenTar(dir, base256), StatusIs(absl::StatusCode::kDataLoss, HasSubstr("base-256")));
}

TEST(TarReaderTest, BundleWithTraversalMemberIsRefusedWhole) {
  ScratchDir dir;
  WriteBytes(dir.Sub("evil.tar"), Header("v1/", '5', 0) + Header("../../x.bin", '0', 1) +
                                      Padded("x") + End());
  std::shared_ptr<DiskCache> target = DiskCache::Open(TestSettings(dir.Sub("c")));
  EXPECT_THAT(ImportBundle(dir.Sub("evil.tar"), *target).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("..")));
  EXPECT_THAT(VerifyBundle(dir.Sub("evil.tar"), Env::Default()).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
  EXPECT_FALSE(testing::Exists(dir.Sub("x.bin")));
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
    EXPECT_THAT(VerifyBundle(dir.Sub("m.tar"), Env::Default()).status(), IsOk());
  }
  EXPECT_GT(opened, 0);  // some damage lands in data or padding
}

TEST(TarWriterTest, LongNamesUsePrefixAndBadNamesAreRefused) {
  ScratchDir dir;
  const std::string long_name =
      std::string(60, 'd') + "/" + std::string(60, 'e') + "/" + std::string(90, 'f');
  {
    auto w = TarWriter::Create(Env::Default(), dir.Sub("l.tar"), absl::UnixEpoch());
    ASSERT_THAT(w.status(), IsOk());
    ASSERT_THAT((*w)->AddFile(long_name, "data"), IsOk());
    EXPECT_THAT((*w)->AddFile("../x", "data"),
                StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
    EXPECT_THAT((*w)->AddFile(std::string(200, 'n'), "data"),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("too long")));
    ASSERT_THAT((*w)->Finish(), IsOk());
  }
  auto r = TarReader::Open(dir.Sub("l.tar"), 100);
  ASSERT_THAT(r.status(), IsOk());
  ASSERT_THAT((*r)->members(), SizeIs(3));  // two parent directories, the file
  EXPECT_EQ((*r)->members()[2].name, long_name);
  EXPECT_EQ((*r)->Read((*r)->members()[2]).value(), "data");
  // An unfinished writer leaves nothing behind.
  {
    auto w = TarWriter::Create(Env::Default(), dir.Sub("u.tar"), absl::UnixEpoch());
    ASSERT_THAT(w.status(), IsOk());
    ASSERT_THAT((*w)->AddFile("a", "b"), IsOk());
  }
  EXPECT_THAT(testing::FilesUnder(dir.path()), ElementsAre("l.tar"));
}

TEST(TarNamesTest, Normalization) {
  EXPECT_EQ(NormalizeMemberName("./v1/a", false).value(), "v1/a");
  EXPECT_EQ(NormalizeMemberName("v1/", true).value(), "v1");
  EXPECT_EQ(NormalizeMemberName("./", true).value(), "");
  EXPECT_EQ(NormalizeMemberName(".", true).value(), "");
  for (const char* bad : {"", "/a", "a/../b", "..", "a/./b", "a//b", "a\nb", "./"}) {
    EXPECT_FALSE(NormalizeMemberName(bad, false).ok()) << bad;
  }
}

}  // namespace
}  // namespace jitgemm::cache
