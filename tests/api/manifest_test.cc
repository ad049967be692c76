#include "api/src/manifest.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "api/src/record.h"
#include "core/options_signature.h"
#include "core/problem_signature.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"

namespace jitgemm {
namespace {

using ::jitgemm::support::StatusIs;
using ::testing::_;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(ParseManifestTest, ReadsEveryField) {
  auto m = ParseManifest(R"({"version": 1,
    "options": {"tuning": "exhaustive", "pdl": false, "pointer_alignment": 4, "backend": "jit",
                "constant_b": true},
    "problems": [{"name": "grouped", "m": 2560, "n": 3072, "k": 1024, "batch_count": 12,
      "dtype": "bf16",
      "a": {"layout": "row", "ld": 12288, "batch_stride": 1024},
      "b": {"layout": "col", "ld": 1024, "batch_stride": 3145728},
      "d": {"type": "f32", "layout": "row", "ld": 36864, "batch_stride": 3072},
      "epilogue": {"alpha": 0.5, "beta": 0, "bias": "row", "activation": "gelu_erf"}}]})");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->options.tuning, TuningPolicy::kExhaustive);
  EXPECT_FALSE(m->options.pdl);
  EXPECT_TRUE(m->options.constant_b);
  EXPECT_EQ(m->options.pointer_alignment, 4);
  EXPECT_EQ(m->options.backend, BackendPolicy::kJitOnly);
  ASSERT_EQ(m->problems.size(), 1u);
  const GemmProblem& p = m->problems[0].problem;
  EXPECT_EQ(m->problems[0].name, "grouped");
  EXPECT_EQ(p.batch_count, 12);
  EXPECT_EQ(p.a.type, DataType::kBF16);
  EXPECT_EQ(p.a.ld, 12288);
  EXPECT_EQ(p.b.layout, Layout::kColMajor);
  EXPECT_EQ(p.d.type, DataType::kF32);
  EXPECT_EQ(p.epilogue.bias, BiasMode::kPerRow);
  EXPECT_EQ(p.epilogue.activation, Activation::kGeluErf);
  EXPECT_FLOAT_EQ(p.epilogue.alpha, 0.5f);
  EXPECT_TRUE(ValidateProblem(p).ok());
}

// The options a tuning decision is keyed by (core/options_signature.h) are
// all in a manifest, and a problem may carry its own: a plan made with what
// the manifest says must find the decision a plan made with the recorded
// options stored.
TEST(ParseManifestTest, ReadsRegimeMarginAndEachProblemsOwnOptions) {
  auto m = ParseManifest(R"({"options": {"regime": "resident", "win_margin": 0.05, "pdl": false},
    "problems": [{"m": 8, "n": 64, "k": 64},
                 {"m": 8, "n": 64, "k": 64,
                  "options": {"regime": "streaming", "constant_b": true, "backend": "auto"}}]})");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->options.regime, TimingRegime::kResident);
  EXPECT_DOUBLE_EQ(m->options.win_margin, 0.05);
  ASSERT_EQ(m->problems.size(), 2u);
  EXPECT_FALSE(m->problems[0].options.has_value());
  EXPECT_EQ(m->OptionsOf(m->problems[0]).regime, TimingRegime::kResident);
  const Options& own = m->OptionsOf(m->problems[1]);
  EXPECT_EQ(own.regime, TimingRegime::kStreaming);
  EXPECT_TRUE(own.constant_b);
  // What the problem leaves out comes from the manifest's options.
  EXPECT_FALSE(own.pdl);
  EXPECT_DOUBLE_EQ(own.win_margin, 0.05);
  for (auto [text, regime] : {std::pair{"auto", TimingRegime::kAuto},
                              {"streaming", TimingRegime::kStreaming},
                              {"resident", TimingRegime::kResident}}) {
    auto r =
        ParseManifest(std::string(R"({"options": {"regime": ")") + text + R"("}, "problems": []})");
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->options.regime, regime) << text;
  }

  EXPECT_THAT(ParseManifest(R"({"options": {"regime": "l2"}, "problems": []})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("options.regime: expected auto, streaming or resident")));
  for (const char* margin : {"-0.1", "1", "1.5"}) {
    EXPECT_THAT(ParseManifest(absl::StrCat(R"({"options": {"win_margin": )", margin,
                                           R"(}, "problems": []})")),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("options.win_margin")))
        << margin;
  }
  EXPECT_THAT(
      ParseManifest(R"({"problems": [{"m": 1}, {"m": 1, "options": {"win_margin": 2}}]})"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("problems[1].options.win_margin")));
  EXPECT_THAT(ParseManifest(R"({"problems": [{"m": 1, "options": {"regim": "auto"}}]})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'regim'")));
  EXPECT_THAT(ParseManifest(R"({"problems": [{"m": 1, "options": "resident"}]})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("problems[0].options: expected an object")));
}

TEST(ParseManifestTest, EveryTuningPolicyIsRead) {
  for (auto [text, policy] : {std::pair{"heuristic", TuningPolicy::kHeuristic},
                              {"fast", TuningPolicy::kFast},
                              {"exhaustive", TuningPolicy::kExhaustive}}) {
    auto m =
        ParseManifest(std::string(R"({"options": {"tuning": ")") + text + R"("}, "problems": []})");
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_EQ(m->options.tuning, policy) << text;
  }
  auto defaults = ParseManifest(R"({"problems": []})");
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->options.tuning, Options().tuning);
}

TEST(ParseManifestTest, ErrorsNameThePath) {
  EXPECT_THAT(ParseManifest("{"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("JSON")));
  EXPECT_THAT(ParseManifest("{}"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("problems")));
  EXPECT_THAT(ParseManifest(R"({"problems": [{"m": "x"}]})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("problems[0].m")));
  EXPECT_THAT(ParseManifest(R"({"problems": [{}, {"b": {"layout": "diagonal"}}]})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("problems[1].b.layout")));
  EXPECT_THAT(ParseManifest(R"({"problems": [{"epilogue": {"activation": "tanh"}}]})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("epilogue.activation")));
  EXPECT_THAT(ParseManifest(R"({"version": 2, "problems": []})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("version")));
}

// Issue 19, item 7: unknown fields and repeated keys were silently accepted,
// and any pointer_alignment (3 warmed kernels no plan would accept).
TEST(ParseManifestTest, UnknownFieldsRepeatedKeysAndOddAlignmentsAreRefused) {
  EXPECT_THAT(ParseManifest(R"({"problems": [], "problemz": []})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'problemz'")));
  EXPECT_THAT(ParseManifest(R"({"options": {"tunning": "fast"}, "problems": []})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'tunning'")));
  EXPECT_THAT(ParseManifest(R"({"problems": [{"m": 1, "a": {"layuot": "row"}}]})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'layuot'")));
  EXPECT_THAT(ParseManifest(R"({"problems": [{"epilogue": {"activaton": "relu"}}]})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'activaton'")));
  EXPECT_THAT(ParseManifest(R"({"problems": [{"mm": 1}]})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'mm'")));
  EXPECT_THAT(ParseManifest(R"({"problems": [{"m": 1, "m": 2}]})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("duplicate key \"m\"")));
  EXPECT_THAT(ParseManifest(R"({"problems": [], "problems": []})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("\"problems\"")));
  for (int align : {0, 3, 5, 32, -16}) {
    EXPECT_THAT(ParseManifest(absl::StrCat(R"({"options": {"pointer_alignment": )", align,
                                           R"(}, "problems": []})")),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("pointer_alignment")))
        << align;
  }
  for (int align : {1, 2, 4, 8, 16}) {
    EXPECT_TRUE(ParseManifest(absl::StrCat(R"({"options": {"pointer_alignment": )", align,
                                           R"(}, "problems": []})"))
                    .ok())
        << align;
  }
}

// Issue 19, item 3: no size or depth limit; /dev/zero aborted, a FIFO hung.
TEST(ParseManifestTest, SizeAndDepthAreBoundedBeforeParsing) {
  EXPECT_THAT(ParseManifest(std::string(100000, '[')),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("deeper than")));
  EXPECT_THAT(ParseManifest(std::string(kMaxManifestBytes + 1, ' ')),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("limit")));
  EXPECT_THAT(ReadManifestFile("/dev/zero"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not a regular file")));
  const std::string dir = ::testing::TempDir() + "/manifest_limits_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const std::string fifo = dir + "/fifo.json";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_THAT(ReadManifestFile(fifo),  // would block forever on a plain open
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not a regular file")));
  const std::string big = dir + "/big.json";
  std::filesystem::resize_file((std::ofstream(big), big), kMaxManifestBytes + 1);
  EXPECT_THAT(ReadManifestFile(big),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("limit")));
  EXPECT_THAT(ReadManifestFile(dir + "/absent.json"), StatusIs(absl::StatusCode::kNotFound, _));
  std::filesystem::remove_all(dir);
}

TEST(ParseManifestTest, RoundTripsThroughJson) {
  Manifest m;
  GemmProblem p = MakeGemm(7, 9, 11, DataType::kF16);
  p.batch_count = 3;
  p.a.batch_stride = 77;
  p.b.batch_stride = 0;
  p.d.batch_stride = 63;
  p.epilogue.bias = BiasMode::kPerColumn;
  p.epilogue.activation = Activation::kSilu;
  m.problems.push_back({"x", p});
  m.options.constant_b = true;
  m.options.regime = TimingRegime::kResident;
  m.options.win_margin = 0.07;
  // The same problem planned with other options, and one whose own options
  // equal the manifest's (written without them).
  Options own = m.options;
  own.regime = TimingRegime::kStreaming;
  own.pointer_alignment = 2;
  m.problems.push_back({"y", p, own});
  m.problems.push_back({"z", p, m.options});
  const std::string text = ManifestToJson(m);
  auto back = ParseManifest(text);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(back->options.constant_b);
  EXPECT_EQ(back->options.regime, TimingRegime::kResident);
  EXPECT_DOUBLE_EQ(back->options.win_margin, 0.07);
  ASSERT_EQ(back->problems.size(), 3u);
  EXPECT_EQ(ProblemSignature(Canonicalize(back->problems[0].problem)),
            ProblemSignature(Canonicalize(p)));
  EXPECT_FALSE(back->problems[0].options.has_value());
  ASSERT_TRUE(back->problems[1].options.has_value());
  EXPECT_EQ(back->problems[1].options->regime, TimingRegime::kStreaming);
  EXPECT_EQ(back->problems[1].options->pointer_alignment, 2);
  EXPECT_TRUE(back->problems[1].options->constant_b);
  EXPECT_FALSE(back->problems[2].options.has_value());
  EXPECT_EQ(ManifestToJson(*back), text);
}

TEST(ParseManifestTest, GatedProblemsRoundTripAndBadGatesAreNamed) {
  Manifest m;
  GemmProblem p = MakeGemm(16, 14336, 4096, DataType::kBF16);
  p.b.layout = Layout::kColMajor;
  p.epilogue.activation = Activation::kSilu;
  p.epilogue.gate = Gate::kHalves;
  m.problems.push_back({"mlp.w13", p});
  const std::string text = ManifestToJson(m);
  EXPECT_THAT(text, HasSubstr("\"gate\": \"halves\""));
  auto back = ParseManifest(text);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->problems[0].problem.epilogue.gate, Gate::kHalves);
  std::string bad = text;
  bad.replace(bad.find("halves"), 6, "interleaved");
  EXPECT_THAT(ParseManifest(bad),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("epilogue.gate")));
  // An ungated problem's JSON has no gate field.
  m.problems[0].problem.epilogue.gate = Gate::kNone;
  EXPECT_THAT(ManifestToJson(m), Not(HasSubstr("gate")));
}

TEST(ShippedManifestsTest, SeedManifestsParseAndValidate) {
  int problems = 0;
  for (const auto& entry : std::filesystem::directory_iterator(JITGEMM_MANIFEST_DIR)) {
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    auto m = ParseManifest(text.str());
    ASSERT_TRUE(m.ok()) << entry.path() << ": " << m.status();
    for (const auto& e : m->problems) {
      EXPECT_TRUE(ValidateProblem(e.problem).ok())
          << entry.path() << " " << e.name << ": " << ValidateProblem(e.problem);
      ++problems;
    }
  }
  EXPECT_GT(problems, 40);
}

class RecordTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = std::filesystem::temp_directory_path() /
            ("jitgemm_record_" + std::to_string(::getpid()) + ".json");
    std::filesystem::remove(path_);
  }
  void TearDown() override {
    std::filesystem::remove(path_);
    std::filesystem::remove(path_.string() + ".lock");
  }
  std::filesystem::path path_;
};

TEST_F(RecordTest, AddsEachDistinctProblemOnce) {
  Options o;
  ASSERT_TRUE(AppendToManifest(path_, MakeGemm(1, 2, 3, DataType::kF16), o).ok());
  ASSERT_TRUE(AppendToManifest(path_, MakeGemm(1, 2, 3, DataType::kF16), o).ok());
  ASSERT_TRUE(AppendToManifest(path_, MakeGemm(4, 2, 3, DataType::kF16), o).ok());
  std::ifstream in(path_);
  std::stringstream text;
  text << in.rdbuf();
  auto m = ParseManifest(text.str());
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->problems.size(), 2u);
}

// A problem planned with two sets of options is two plans: other kernels
// (constant_b) or another tuning decision (regime, win_margin). Before, the
// second was dropped and every problem took the first plan's options, so a
// manifest recorded from a process with resident-regime plans warmed and
// tuned nothing it would use.
TEST_F(RecordTest, KeepsEachProblemsOptions) {
  Options first;
  first.regime = TimingRegime::kResident;
  first.win_margin = 0.05;
  Options other = first;
  other.constant_b = true;
  other.regime = TimingRegime::kStreaming;
  const GemmProblem p = MakeGemm(8, 64, 64, DataType::kBF16);
  ASSERT_TRUE(AppendToManifest(path_, p, first).ok());
  ASSERT_TRUE(AppendToManifest(path_, p, other).ok());
  ASSERT_TRUE(AppendToManifest(path_, p, first).ok());
  ASSERT_TRUE(AppendToManifest(path_, MakeGemm(16, 64, 64, DataType::kBF16), first).ok());
  std::ifstream in(path_);
  std::stringstream text;
  text << in.rdbuf();
  auto m = ParseManifest(text.str());
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->problems.size(), 3u);
  EXPECT_EQ(m->options.regime, TimingRegime::kResident);
  EXPECT_DOUBLE_EQ(m->options.win_margin, 0.05);
  EXPECT_FALSE(m->problems[0].options.has_value());
  const Options& second = m->OptionsOf(m->problems[1]);
  EXPECT_TRUE(second.constant_b);
  EXPECT_EQ(second.regime, TimingRegime::kStreaming);
  EXPECT_FALSE(m->problems[2].options.has_value());
  EXPECT_EQ(m->problems[2].problem.m, 16);
}

// What a manifest says a problem is planned with has the options signature
// (the options part of its tuning decision's key) of the plan recorded,
// whichever option differs.
TEST_F(RecordTest, ARecordedProblemsOptionsKeepTheirSignature) {
  std::vector<Options> sets(8);
  sets[1].backend = BackendPolicy::kJitOnly;
  sets[2].tuning = TuningPolicy::kExhaustive;
  sets[3].allow_tf32 = true;
  sets[4].pdl = false;
  sets[5].pointer_alignment = 4;
  sets[6].win_margin = 0.1;
  sets[7].regime = TimingRegime::kResident;
  const GemmProblem p = MakeGemm(32, 256, 512, DataType::kF16);
  for (const Options& o : sets) ASSERT_TRUE(AppendToManifest(path_, p, o).ok());
  std::ifstream in(path_);
  std::stringstream text;
  text << in.rdbuf();
  auto m = ParseManifest(text.str());
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->problems.size(), sets.size());
  for (size_t i = 0; i < sets.size(); ++i) {
    EXPECT_EQ(OptionsSignature(m->OptionsOf(m->problems[i])), OptionsSignature(sets[i])) << i;
  }
}

TEST_F(RecordTest, RefusesToOverwriteAForeignFile) {
  std::ofstream(path_) << "not json";
  EXPECT_THAT(AppendToManifest(path_, MakeGemm(1, 2, 3, DataType::kF16), Options()),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("not a manifest")));
}

TEST_F(RecordTest, ConcurrentProcessesLoseNothing) {
  constexpr int kProcs = 8, kEach = 5;
  std::vector<pid_t> kids;
  for (int i = 0; i < kProcs; ++i) {
    pid_t pid = fork();
    if (pid == 0) {
      for (int j = 0; j < kEach; ++j) {
        if (!AppendToManifest(path_, MakeGemm(1 + i, 1 + j, 8, DataType::kBF16), Options()).ok()) {
          _exit(1);
        }
      }
      _exit(0);
    }
    kids.push_back(pid);
  }
  for (pid_t k : kids) {
    int status = 0;
    waitpid(k, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  std::ifstream in(path_);
  std::stringstream text;
  text << in.rdbuf();
  auto m = ParseManifest(text.str());
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->problems.size(), static_cast<size_t>(kProcs * kEach));
}

}  // namespace
}  // namespace jitgemm
