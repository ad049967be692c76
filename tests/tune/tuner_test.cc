#include "tune/tuner.h"

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"
#include "tune/selection.h"

namespace jitgemm::tune {
namespace {

using ::testing::HasSubstr;

constexpr char kCublasName[] = "cublas";

jit::KernelConfig Config(jit::Family family, int block) {
  jit::KernelConfig c;
  c.family = family;
  c.block_m = c.block_n = block;
  return c;
}

// Three JIT candidates, best heuristic guess first.
const Candidate kA = Config(jit::Family::kSm80, 64);
const Candidate kB = Config(jit::Family::kSm80, 128);
const Candidate kC = Config(jit::Family::kSimt, 32);

std::string Name(const Candidate& c) { return CandidateName(c); }
std::vector<Candidate> Cublas(int n) {
  std::vector<Candidate> out;
  for (int k = 0; k < n; ++k) out.push_back(CublasAlgorithm{k});
  return out;
}
std::vector<Candidate> Set(std::vector<Candidate> jit, int cublas) {
  for (Candidate& c : Cublas(cublas)) jit.push_back(std::move(c));
  return jit;
}

TEST(ChooseFastestTest, JitMustBeatCublasByTheMargin) {
  std::vector<Timing> t = {{"jit-a", false, 9.6}, {"jit-b", false, 9.8}, {kCublasName, true, 10.0}};
  t[0].us = 9.60;
  Choice c = ChooseFastest(t, 0.03);
  EXPECT_EQ(c.index, 0);
  EXPECT_THAT(c.reason, HasSubstr("beats cuBLAS"));
  t[0].us = 9.75;  // 2.5% faster: cuBLAS keeps it
  c = ChooseFastest(t, 0.03);
  EXPECT_EQ(c.index, 2);
  EXPECT_THAT(c.reason, HasSubstr("ties go to cuBLAS"));
  t[0].us = t[1].us = 10.0;  // an exact tie
  EXPECT_EQ(ChooseFastest(t, 0.0).index, 2);
}

TEST(ChooseFastestTest, LaterCublasSuggestionsMustBeatTheFirstByTheMargin) {
  std::vector<Timing> t = {{kCublasName, true, 38.16}, {"cublas#1", true, 38.15}};
  Choice c = ChooseFastest(t, 0.03);
  EXPECT_EQ(c.index, 0) << "a near-tie keeps cuBLASLt's first suggestion";
  t[1].us = 36.0;  // 5.7% faster
  EXPECT_EQ(ChooseFastest(t, 0.03).index, 1);
  // The first that ran is the reference when the first suggestion failed.
  t = {{kCublasName, true, -1}, {"cublas#1", true, 10.0}, {"cublas#2", true, 9.9}};
  EXPECT_EQ(ChooseFastest(t, 0.03).index, 1);
  // The JIT side is compared with the cuBLAS candidate kept.
  t = {{"jit", false, 9.5}, {kCublasName, true, 10.0}, {"cublas#1", true, 9.9}};
  c = ChooseFastest(t, 0.03);
  EXPECT_EQ(c.index, 0);
  EXPECT_THAT(c.reason, HasSubstr("beats cuBLAS 10.00 us"));
}

TEST(ChooseFastestTest, MissingSidesAndFailures) {
  EXPECT_EQ(ChooseFastest({{"jit", false, 5}, {kCublasName, true, -1}}, 0.03).index, 0);
  EXPECT_EQ(ChooseFastest({{"jit", false, -1}, {kCublasName, true, 7}}, 0.03).index, 1);
  EXPECT_EQ(ChooseFastest({{"jit", false, -1}}, 0.03).index, -1);
  // Equal JIT times: the heuristics' first choice.
  EXPECT_EQ(ChooseFastest({{"a", false, 3}, {"b", false, 3}}, 0.03).index, 0);
}

class FakeBackend : public Backend {
 public:
  explicit FakeBackend(std::string name) : name_(std::move(name)) {}
  absl::Status Run(const GemmPointers&, CUstream) const override { return absl::OkStatus(); }
  std::string Describe() const override { return name_; }

 private:
  std::string name_;
};

class FakeTimer : public CandidateTimer {
 public:
  FakeTimer(const std::map<std::string, double>* us, std::atomic<int>* calls)
      : us_(us), calls_(calls) {}
  absl::StatusOr<double> MedianUs(const Backend& b) override {
    ++*calls_;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    return us_->at(b.Describe());
  }

 private:
  const std::map<std::string, double>* us_;
  std::atomic<int>* calls_;
};

class TunerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("jitgemm_tuner_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    std::filesystem::permissions(dir_, std::filesystem::perms::owner_all);
    cache::CacheSettings settings;
    settings.root = dir_.string();
    cache_ = cache::DiskCache::Open(settings);
    env_.device_name = "FakeGPU";
    env_.sm_count = 132;
    env_.driver_version = 13000;
    env_.cublas_version = 130100;
    env_.library_version = "test";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  TuneRequest Request(TuningPolicy policy = TuningPolicy::kFast) {
    TuneRequest r;
    r.candidates = Set({kA, kB, kC}, 1);
    r.build = [this](const Candidate& c) -> absl::StatusOr<std::unique_ptr<Backend>> {
      ++builds_;
      if (const auto* cublas = std::get_if<CublasAlgorithm>(&c); cublas && cublas->index >= 3) {
        return absl::NotFoundError("Lt offers 3 algorithms");
      }
      if (not_cached_.count(Name(c))) return absl::NotFoundError("not cached, JIT off");
      return std::unique_ptr<Backend>(new FakeBackend(Name(c)));
    };
    r.make_timer = [this]() -> absl::StatusOr<std::unique_ptr<CandidateTimer>> {
      ++timers_;
      return std::unique_ptr<CandidateTimer>(new FakeTimer(&us_, &timings_));
    };
    r.policy = policy;
    r.cache = cache_;
    r.environment = env_;
    r.record_key_text = "problem 64x256x128 f16";
    return r;
  }

  std::filesystem::path dir_;
  std::shared_ptr<cache::DiskCache> cache_;
  TuningEnvironment env_;
  std::map<std::string, double> us_ = {
      {Name(kA), 2.0}, {Name(kB), 3.0}, {Name(kC), 9.0}, {kCublasName, 2.6}};
  std::set<std::string> not_cached_;
  std::atomic<int> builds_{0}, timers_{0}, timings_{0};
};

TEST_F(TunerTest, TimesEveryCandidateAndPicksByTheRule) {
  auto r = SelectBackend(Request());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Name(r->winner), Name(kA));
  EXPECT_EQ(r->backend->Describe(), Name(kA));
  EXPECT_FALSE(r->from_record);
  EXPECT_EQ(timings_.load(), 4);
  EXPECT_EQ(r->candidate_us.size(), 4u);
  EXPECT_THAT(r->reason, HasSubstr("beats cuBLAS"));
}

TEST_F(TunerTest, SeveralCublasAlgorithmsAreTimedAndTheBestIsTheBaseline) {
  us_["cublas#1"] = 1.9;  // cuBLASLt's second suggestion beats its first (2.6)
  us_["cublas#2"] = 3.0;
  TuneRequest r = Request();
  r.candidates = Set({kA, kB, kC}, 4);  // the fourth does not exist: skipped, not an error
  auto result = SelectBackend(r);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(Name(result->winner), "cublas#1");  // JIT's 2.0 is not 3% below 1.9
  EXPECT_EQ(result->backend->Describe(), "cublas#1");
  auto again = SelectBackend(r);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->from_record);
  EXPECT_EQ(again->winner, (Candidate{CublasAlgorithm{1}}));
  EXPECT_EQ(Name(CublasAlgorithm{0}), "cublas");
  EXPECT_EQ(Name(CublasAlgorithm{12}), "cublas#12");
}

TEST_F(TunerTest, CublasKeepsNearTies) {
  us_[Name(kA)] = 2.55;  // 2% faster than cuBLAS's 2.6
  auto r = SelectBackend(Request());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Name(r->winner), kCublasName);
}

TEST_F(TunerTest, StoredDecisionIsReusedWithoutTiming) {
  ASSERT_TRUE(SelectBackend(Request()).ok());
  const int timed = timings_.load();
  us_[Name(kA)] = 100;  // a new measurement would now pick differently
  auto again = SelectBackend(Request());
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->from_record);
  EXPECT_EQ(again->winner, kA);
  EXPECT_EQ(timings_.load(), timed);
  // Another process (a fresh cache object on the same root) decides the same.
  cache::CacheSettings settings;
  settings.root = dir_.string();
  cache_ = cache::DiskCache::Open(settings);
  auto other = SelectBackend(Request());
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->winner, kA);
  EXPECT_EQ(timings_.load(), timed);
}

TEST_F(TunerTest, StaleRecordsAreRetuned) {
  ASSERT_TRUE(SelectBackend(Request()).ok());
  const int timed = timings_.load();
  env_.driver_version = 13010;  // new driver: old timings do not hold
  us_[kCublasName] = 1.0;
  auto r = SelectBackend(Request());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Name(r->winner), kCublasName);
  EXPECT_GT(timings_.load(), timed);
}

TEST_F(TunerTest, RecordNamingAMissingCandidateIsRetuned) {
  ASSERT_TRUE(SelectBackend(Request()).ok());
  TuneRequest r = Request();
  r.candidates = Set({kB, kC}, 1);  // the old winner no longer exists
  // The record key leaves the candidate list out, so the old record is found,
  // rejected for its unknown winner, and replaced by a fresh tuning.
  auto result = SelectBackend(r);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(Name(result->winner), kCublasName);  // 128x128 at 3.0 us loses to 2.6
  EXPECT_FALSE(result->from_record);
  auto again = SelectBackend(r);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->from_record);
  EXPECT_EQ(Name(again->winner), kCublasName);
}

TEST_F(TunerTest, HeuristicPolicyAndCaptureNeverTime) {
  auto h = SelectBackend(Request(TuningPolicy::kHeuristic));
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->winner, kA);
  EXPECT_THAT(h->reason, HasSubstr("heuristic"));
  TuneRequest cap = Request();
  cap.capturing = true;
  auto c = SelectBackend(cap);
  ASSERT_TRUE(c.ok());
  EXPECT_THAT(c->reason, HasSubstr("stream capture"));
  EXPECT_EQ(timers_.load(), 0);
  EXPECT_EQ(timings_.load(), 0);
}

TEST_F(TunerTest, CaptureUsesAStoredDecision) {
  us_[kCublasName] = 1.0;
  ASSERT_TRUE(SelectBackend(Request()).ok());
  const int timed = timings_.load();
  TuneRequest cap = Request();
  cap.capturing = true;
  auto c = SelectBackend(cap);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(Name(c->winner), kCublasName);
  EXPECT_TRUE(c->from_record);
  EXPECT_EQ(timings_.load(), timed);
}

TEST_F(TunerTest, JitOffSkipsUncachedKernels) {
  not_cached_ = {Name(kA), Name(kB), Name(kC)};
  auto h = SelectBackend(Request(TuningPolicy::kHeuristic));
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(Name(h->winner), kCublasName);
  not_cached_ = {Name(kA)};
  auto t = SelectBackend(Request());
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(Name(t->winner), kCublasName);  // 128x128 at 3.0 us loses to 2.6
}

TEST_F(TunerTest, JitOnlyWithoutKernelsIsAnError) {
  not_cached_ = {Name(kA), Name(kB), Name(kC)};
  TuneRequest r = Request(TuningPolicy::kHeuristic);
  r.candidates = Set({kA, kB, kC}, 0);  // JIT only
  EXPECT_THAT(SelectBackend(r),
              jitgemm::support::StatusIs(absl::StatusCode::kNotFound, HasSubstr("JIT off")));
}

TEST_F(TunerTest, ConcurrentTunersOfOneProblemTuneOnce) {
  std::vector<std::thread> threads;
  std::vector<std::string> winners(8);
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      auto r = SelectBackend(Request());
      ASSERT_TRUE(r.ok()) << r.status();
      winners[i] = Name(r->winner);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(timings_.load(), 4) << "one tuning run for the problem";
  for (const auto& w : winners) EXPECT_EQ(w, Name(kA));
}

}  // namespace
}  // namespace jitgemm::tune
