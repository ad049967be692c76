// The tuner tests' fakes: candidates with fixed names, a backend that does
// nothing, and a clock that gives every candidate its time from a table, so
// that the tuner's rules run without a GPU. TunerTest opens a fresh disk cache
// per test.
#ifndef JITGEMM_TESTS_TUNE_TUNER_FIXTURE_H_
#define JITGEMM_TESTS_TUNE_TUNER_FIXTURE_H_

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "gtest/gtest.h"
#include "tune/measure.h"
#include "tune/regime.h"
#include "tune/tuner.h"

namespace jitgemm::tune {

inline constexpr char kCublasName[] = "cublas";

inline jit::KernelConfig Config(jit::Family family, int block) {
  jit::KernelConfig c;
  c.family = family;
  c.block_m = c.block_n = block;
  return c;
}

// Three JIT candidates, best heuristic guess first.
inline const Candidate kA = Config(jit::Family::kSm80, 64);
inline const Candidate kB = Config(jit::Family::kSm80, 128);
inline const Candidate kC = Config(jit::Family::kSimt, 32);

inline std::string Name(const Candidate& c) { return CandidateName(c); }
inline std::vector<Candidate> Cublas(int n) {
  std::vector<Candidate> out;
  for (int k = 0; k < n; ++k) out.push_back(CublasAlgorithm{k});
  return out;
}
inline std::vector<Candidate> Set(std::vector<Candidate> jit, int cublas) {
  for (Candidate& c : Cublas(cublas)) jit.push_back(std::move(c));
  return jit;
}

inline const std::vector<std::string> kBoth = {"streaming", "resident"};

class FakeBackend : public Backend {
 public:
  explicit FakeBackend(std::string name) : name_(std::move(name)) {}
  absl::Status Run(const GemmPointers&, CUstream) const override { return absl::OkStatus(); }
  std::string Describe() const override { return name_; }

 private:
  std::string name_;
};

// A fake clock: every call of a candidate takes its time from a table, per
// regime (a "@resident" entry, else the streaming time). It counts the calls
// it is asked to run and the GPU microseconds they would take.
struct FakeClock {
  std::map<std::string, double> us;
  // Times once a candidate has had looks_before_drift measurements (a clock
  // that drifted).
  std::map<std::string, double> later_us;
  int looks_before_drift = 1;
  std::map<std::string, int> measured;   // name -> FirstCallUs calls, all regimes
  std::atomic<int> candidates_timed{0};  // FirstCallUs in the first regime
  std::atomic<int> calls{0};
  double gpu_us = 0;                                    // guarded by the tuner's lock
  std::map<std::string, int> calls_of;                  // name -> calls, all regimes
  std::map<std::string, std::vector<int>> launches_of;  // name -> graph sizes
  std::set<std::string> resident_seen;

  double Of(const std::string& name, Regime regime) const {
    if (auto it = later_us.find(name); it != later_us.end()) {
      if (auto m = measured.find(name); m != measured.end() && m->second > looks_before_drift) {
        return it->second;
      }
    }
    if (regime == Regime::kResident) {
      if (auto it = us.find(name + "@resident"); it != us.end()) return it->second;
    }
    return us.at(name);
  }
  void Run(const std::string& name, Regime regime, int n) {
    calls += n;
    calls_of[name] += n;
    gpu_us += n * Of(name, regime);
    if (regime == Regime::kResident) resident_seen.insert(name);
  }
};

class FakeReplayer : public Replayer {
 public:
  FakeReplayer(FakeClock* clock, std::string name, Regime regime, int launches)
      : clock_(clock), name_(std::move(name)), regime_(regime), launches_(launches) {}
  absl::StatusOr<double> ReplayUs() override {
    clock_->Run(name_, regime_, launches_);
    return clock_->Of(name_, regime_);
  }

 private:
  FakeClock* clock_;
  std::string name_;
  Regime regime_;
  int launches_;
};

class FakeTimer : public CandidateTimer {
 public:
  explicit FakeTimer(FakeClock* clock) : clock_(clock) {}
  absl::StatusOr<double> FirstCallUs(const Backend& b, Regime regime) override {
    if (regime == Regime::kStreaming) ++clock_->candidates_timed;
    ++clock_->measured[b.Describe()];
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    clock_->Run(b.Describe(), regime, 2);  // warm-up and the timed call
    return clock_->Of(b.Describe(), regime);
  }
  absl::StatusOr<std::unique_ptr<Replayer>> Capture(const Backend& b, Regime regime,
                                                    int launches) override {
    clock_->launches_of[b.Describe()].push_back(launches);
    clock_->Run(b.Describe(), regime, launches);  // the untimed replay
    return std::unique_ptr<Replayer>(new FakeReplayer(clock_, b.Describe(), regime, launches));
  }

 private:
  FakeClock* clock_;
};

class TunerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    clock_.us = {{Name(kA), 2.0}, {Name(kB), 3.0}, {Name(kC), 9.0}, {kCublasName, 2.6}};
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
      return std::unique_ptr<CandidateTimer>(new FakeTimer(&clock_));
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
  FakeClock clock_;  // SetUp gives the candidates their times
  std::map<std::string, double>& us_ = clock_.us;
  std::atomic<int>& timings_ = clock_.candidates_timed;
  std::set<std::string> not_cached_;
  std::atomic<int> builds_{0}, timers_{0};
};

}  // namespace jitgemm::tune

#endif  // JITGEMM_TESTS_TUNE_TUNER_FIXTURE_H_
