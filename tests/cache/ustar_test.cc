// The ustar reader and writer (cache/ustar.h) against archives written by
// hand: traversal, links, extensions, oversize, damaged and truncated input.
#include "cache/ustar.h"

#include <algorithm>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cache/bundle.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cache/test_util.h"

namespace jitgemm::cache {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::IsOk;
using testing::ReadBytes;
using testing::ScratchDir;
using ::testing::SizeIs;
using testing::StatusIs;
using testing::TestSettings;
using testing::WriteBytes;

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
                   const std::string& magic = std::string("ustar\0"
                                                          "00",
                                                          8)) {
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
  WriteBytes(dir.Sub("evil.tar"),
             Header("v1/", '5', 0) + Header("../../x.bin", '0', 1) + Padded("x") + End());
  std::shared_ptr<DiskCache> target = DiskCache::Open(TestSettings(dir.Sub("c")));
  EXPECT_THAT(ImportBundle(dir.Sub("evil.tar"), *target).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("..")));
  EXPECT_THAT(VerifyBundle(dir.Sub("evil.tar"), Env::Default()).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
  EXPECT_FALSE(testing::Exists(dir.Sub("x.bin")));
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
