// Issue 18, item 6: a process served wholly from the cache never opens
// NVRTC, with no variable set. The first process that opens NVRTC notes its
// version in the cache root; later processes key with the note while the
// library file and the variables that choose it are unchanged. Each case
// runs nvrtc_note_probe processes on a fresh cache root.
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/nvrtc_compiler.h"
#include "tests/cache/redis_server.h"
#include "tests/cache/test_util.h"

namespace jitgemm::jit {
namespace {

using ::jitgemm::cache::testing::ReadBytes;
using ::jitgemm::cache::testing::ScratchDir;
using ::jitgemm::cache::testing::WriteBytes;

struct Probe {
  int version = -1, compiled = -1, loaded = -1;
};

Probe RunProbe(const std::string& root, const std::string& args, const std::string& env = "") {
  const std::string cmd = absl::StrCat("env -u JITGEMM_NVRTC_VERSION JITGEMM_CACHE_DIR=", root, " ",
                                       env, " ", JITGEMM_NVRTC_NOTE_PROBE, " ", args);
  Probe p;
  FILE* f = ::popen(cmd.c_str(), "r");
  if (f == nullptr) return p;
  char line[256] = {};
  if (std::fgets(line, sizeof(line), f) != nullptr) {
    std::sscanf(line, "version=%d compiled=%d loaded=%d", &p.version, &p.compiled, &p.loaded);
  }
  EXPECT_EQ(::pclose(f), 0) << cmd;
  return p;
}

class NvrtcNoteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!NvrtcVersion().ok()) GTEST_SKIP() << "NVRTC not available: " << NvrtcVersion().status();
  }
  ScratchDir dir_;
  std::string root_ = dir_.Sub("cache");
  std::string note_ = root_ + "/v1/notes/nvrtc";
};

TEST_F(NvrtcNoteTest, AProcessServedFromTheCacheNeverOpensNvrtc) {
  Probe first = RunProbe(root_, "--kernel=45");
  EXPECT_EQ(first.compiled, 1);
  EXPECT_EQ(first.loaded, 1);
  EXPECT_EQ(first.version, *NvrtcVersion());
  Probe second = RunProbe(root_, "--kernel=45");
  EXPECT_EQ(second.compiled, 0);
  EXPECT_EQ(second.loaded, 0) << "NVRTC was opened though the kernel came from the cache";
  EXPECT_EQ(second.version, first.version);
  // A miss still compiles: NVRTC is opened only then.
  Probe miss = RunProbe(root_, "--kernel=46");
  EXPECT_EQ(miss.compiled, 1);
  EXPECT_EQ(miss.loaded, 1);
}

TEST_F(NvrtcNoteTest, OtherLibrarySelectionOpensNvrtcAgain) {
  RunProbe(root_, "");
  ASSERT_EQ(RunProbe(root_, "").loaded, 0);
  std::vector<std::string> lines = absl::StrSplit(ReadBytes(note_), '\n');
  ASSERT_GE(lines.size(), 4u);
  Probe other = RunProbe(root_, "", "JITGEMM_NVRTC_LIBRARY=" + lines[3]);
  EXPECT_EQ(other.loaded, 1);
}

TEST_F(NvrtcNoteTest, DamagedNoteOpensNvrtcAndIsRewritten) {
  RunProbe(root_, "");
  WriteBytes(note_, "garbage");
  EXPECT_EQ(RunProbe(root_, "").loaded, 1);
  EXPECT_EQ(RunProbe(root_, "").loaded, 0);
}

// A note that names the right file but a wrong version (as if the file had
// been swapped keeping size and mtime): the miss opens NVRTC, the compile
// sees the difference, the note is corrected and the kernel is keyed right.
TEST_F(NvrtcNoteTest, WrongVersionInTheNoteIsCorrectedAtTheFirstCompile) {
  RunProbe(root_, "");
  std::vector<std::string> lines = absl::StrSplit(ReadBytes(note_), '\n');
  ASSERT_GE(lines.size(), 2u);
  lines[1] = "11020";
  WriteBytes(note_, absl::StrJoin(lines, "\n"));
  Probe fixed = RunProbe(root_, "--kernel=47");
  EXPECT_EQ(fixed.compiled, 1);
  EXPECT_EQ(fixed.version, *NvrtcVersion());
  Probe after = RunProbe(root_, "--kernel=47");
  EXPECT_EQ(after.compiled, 0);
  EXPECT_EQ(after.loaded, 0);
  EXPECT_EQ(after.version, *NvrtcVersion());
}

// The remote tier carries the note: a machine with an empty root and a warm
// Redis is served without opening NVRTC when its library is the same file.
TEST_F(NvrtcNoteTest, AnEmptyRootUsesTheNoteTheFleetPublished) {
  absl::StatusOr<std::unique_ptr<cache::testing::RedisServer>> server =
      cache::testing::RedisServer::Start(dir_.path());
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string remote = "JITGEMM_REMOTE_CACHE=" + (*server)->Url();
  Probe a = RunProbe(dir_.Sub("machine-a"), "--kernel=48", remote);
  EXPECT_EQ(a.compiled, 1);
  EXPECT_EQ(a.loaded, 1);
  Probe b = RunProbe(dir_.Sub("machine-b"), "--kernel=48", remote);
  EXPECT_EQ(b.compiled, 0);
  EXPECT_EQ(b.loaded, 0) << "NVRTC was opened though kernel and note came from the remote";
  EXPECT_EQ(b.version, a.version);
  // And b kept the note: without the remote it still does not open NVRTC.
  EXPECT_EQ(RunProbe(dir_.Sub("machine-b"), "--kernel=48").loaded, 0);
}

}  // namespace
}  // namespace jitgemm::jit
