// RELIABILITY 17 without clang: every file of the checked-in seed corpus
// (tests/fuzz/corpus/<target>/) goes through the same checks the fuzzers run
// (fuzz_checks.h), so a gcc CI build exercises the crashers and edge cases
// that fuzzing found. A file named reject_* must be refused by its parser,
// accept_* must be accepted; knownbug_* seeds have their own failing tests
// at the end; the name of any other file says what it covers.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <ostream>
#include <string>
#include <vector>

#include "api/src/manifest.h"
#include "gtest/gtest.h"
#include "tests/fuzz/fuzz_checks.h"

namespace jitgemm::fuzz {

// So that a failing parameterised test names its target (found by ADL).
void PrintTo(const FuzzTarget& target, std::ostream* os) { *os << target.name; }

namespace {

namespace fs = std::filesystem;

// Enough seeds that a moved or emptied corpus directory cannot pass unseen.
constexpr size_t kMinSeedsPerTarget = 5;

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::vector<fs::path> CorpusFiles(const std::string& target) {
  std::vector<fs::path> files;
  const fs::path dir = fs::path(JITGEMM_FUZZ_CORPUS_DIR) / target;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    if (e.is_regular_file()) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

bool StartsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

class CorpusReplayTest : public ::testing::TestWithParam<FuzzTarget> {};

TEST_P(CorpusReplayTest, EverySeedKeepsEveryProperty) {
  const FuzzTarget& target = GetParam();
  const std::vector<fs::path> files = CorpusFiles(target.name);
  ASSERT_GE(files.size(), kMinSeedsPerTarget)
      << "seed corpus missing under " << JITGEMM_FUZZ_CORPUS_DIR << "/" << target.name;
  for (const fs::path& path : files) {
    SCOPED_TRACE(path.string());
    const std::string bytes = ReadFile(path);
    EXPECT_EQ(target.check(bytes), "");
    const std::string name = path.filename().string();
    if (StartsWith(name, "reject_")) {
      EXPECT_FALSE(target.accepts(bytes)) << "the parser accepted " << name;
    } else if (StartsWith(name, "accept_")) {
      EXPECT_TRUE(target.accepts(bytes)) << "the parser refused " << name;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Targets, CorpusReplayTest, ::testing::ValuesIn(FuzzTargets()),
                         [](const ::testing::TestParamInfo<FuzzTarget>& info) {
                           return std::string(info.param.name);
                         });

// Inputs too large to check in: generated here, run through the same checks.

TEST(GeneratedInputs, DeeplyNestedJsonIsRefusedWithoutRecursion) {
  // A parser or destructor that recursed per level would overflow the stack
  // here: 300,000 levels would need far more than an 8 MiB stack.
  constexpr int kDepth = 300'000;
  const std::string arrays = std::string(kDepth, '[') + std::string(kDepth, ']');
  const std::string objects = [] {
    std::string s;
    for (int i = 0; i < kDepth; ++i) s += "{\"a\":";
    return s + "1" + std::string(kDepth, '}');
  }();
  for (const std::string& problems : {arrays, objects}) {
    const std::string manifest = "{\"problems\":[" + problems + "]}";
    EXPECT_EQ(CheckManifest(manifest), "");
    EXPECT_EQ(CheckTuningRecord("{\"format\":1,\"x\":" + problems + "}"), "");
  }
  EXPECT_EQ(CheckManifest(arrays), "");
  EXPECT_EQ(CheckTuningRecord(objects), "");
}

TEST(GeneratedInputs, ManyProblemsRoundTrip) {
  std::string manifest = "{\"problems\":[";
  for (int i = 0; i < 2'000; ++i) {
    manifest += (i ? "," : "") + std::string("{\"m\":") + std::to_string(i + 1) +
                ",\"n\":8,\"k\":8,\"dtype\":\"bf16\"}";
  }
  manifest += "]}";
  EXPECT_EQ(CheckManifest(manifest), "");
}

TEST(GeneratedInputs, TruncationsOfAValidSeedAreRefused) {
  // Every prefix of an accepted seed: the classic short-read crasher.
  for (const FuzzTarget& target : FuzzTargets()) {
    for (const fs::path& path : CorpusFiles(target.name)) {
      if (!StartsWith(path.filename().string(), "accept_")) continue;
      const std::string bytes = ReadFile(path);
      for (size_t n = 0; n < bytes.size(); ++n) {
        ASSERT_EQ(target.check(bytes.substr(0, n)), "") << path << " cut to " << n << " bytes";
      }
    }
  }
}

// Known bugs in ParseManifest / ManifestToJson (api/src/manifest.cc), found
// while fuzzing them (docs/fuzzing.md); each test fails until its bug is
// fixed. The knownbug_* seeds still pass the fuzz checks above, which skip
// these properties so that fuzzing can go on past them.

std::string Seed(const char* relative_path) {
  return ReadFile(fs::path(JITGEMM_FUZZ_CORPUS_DIR) / relative_path);
}

// Reader::Get converts with nlohmann's get<int>(), a plain cast, so an integer
// outside int's range wraps modulo 2^32: version 4294967297 reads as 1 and
// pointer_alignment 4294967312 as 16, both then accepted.
TEST(ManifestKnownBugs, IntFieldOutOfRangeIsRefusedNotWrapped) {
  for (const char* seed : {"manifest/knownbug_version_4294967297_wraps_to_1.json",
                           "manifest/knownbug_pointer_alignment_4294967312_wraps_to_16.json"}) {
    absl::StatusOr<Manifest> m = ParseManifest(Seed(seed));
    EXPECT_FALSE(m.ok()) << seed << " parsed (pointer_alignment " << m->options.pointer_alignment
                         << ")";
  }
}

// alpha and beta are floats read with get<float>(): 1e39 becomes +inf, which
// ManifestToJson writes as null, which ParseManifest then refuses.
TEST(ManifestKnownBugs, AlphaBeyondFloatRangeIsRefused) {
  const std::string bytes = Seed("manifest/knownbug_alpha_1e39_becomes_inf.json");
  absl::StatusOr<Manifest> m = ParseManifest(bytes);
  ASSERT_FALSE(m.ok()) << "alpha parsed as " << m->problems.at(0).problem.epilogue.alpha
                       << "; written back as " << ManifestToJson(*m) << "; which parses as "
                       << ParseManifest(ManifestToJson(*m)).status();
}

// ManifestToJson writes tuning, pdl and pointer_alignment but not backend or
// allow_tf32, so a manifest written back (JITGEMM_RECORD's output) silently
// plans with backend "auto" and tf32 off.
TEST(ManifestKnownBugs, ManifestToJsonKeepsEveryParsedOption) {
  absl::StatusOr<Manifest> m = ParseManifest(Seed("manifest/accept_backend_cublas_tf32.json"));
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->options.backend, BackendPolicy::kCublasOnly);
  ASSERT_TRUE(m->options.allow_tf32);
  const std::string written = ManifestToJson(*m);
  absl::StatusOr<Manifest> again = ParseManifest(written);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->options.backend, BackendPolicy::kCublasOnly) << written;
  EXPECT_TRUE(again->options.allow_tf32) << written;
}

// Fixed in af03cf9; found again by the coverage of the fuzzed corpus (no
// input could make ManifestToJson write "heuristic"). ParseManifest accepted
// "heuristic" without setting it, so the default kFast (which times
// candidates) stayed, and a kHeuristic manifest written back read as kFast.
TEST(ManifestRegressions, TuningHeuristicIsRead) {
  absl::StatusOr<Manifest> m = ParseManifest(Seed("manifest/accept_tuning_heuristic.json"));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->options.tuning, TuningPolicy::kHeuristic);

  Manifest heuristic;
  heuristic.options.tuning = TuningPolicy::kHeuristic;
  absl::StatusOr<Manifest> again = ParseManifest(ManifestToJson(heuristic));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->options.tuning, TuningPolicy::kHeuristic) << ManifestToJson(heuristic);
}

}  // namespace
}  // namespace jitgemm::fuzz
