// RELIABILITY 15: tuning records. Malformed JSON, another device, a stale
// library version or a winner that no longer exists are all refused (and so
// retuned); nothing ever throws; writers of different problems lose nothing.
#include "cache/tuning_record.h"

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cache/test_util.h"

namespace jitgemm::cache {
namespace {

using ::jitgemm::cache::testing::IsOk;
using ::jitgemm::cache::testing::ScratchDir;
using ::jitgemm::cache::testing::StatusIs;
using ::jitgemm::cache::testing::TestSettings;
using ::testing::HasSubstr;

TuningRecord Sample(const std::string& problem = "bf16 tn M4096 N4096 K4096") {
  TuningRecord r;
  r.device_name = "NVIDIA H100 80GB HBM3";
  r.sm_count = 132;
  r.driver_version = 13000;
  r.cublas_version = 130100;
  r.library_version = "0.1.0";
  r.problem_signature = problem;
  r.winner = "gemm_sm80_bf16_128x128x32_s3";
  r.regimes = {"streaming", "resident"};
  r.candidate_us = {{"cublasLt", 812.5},
                    {"gemm_sm80_bf16_128x128x32_s3", 771.25},
                    {"gemm_sm80_bf16_128x64x32_s4", 790.0}};
  r.resident_us = {{"cublasLt", 640.5}, {"gemm_sm80_bf16_128x128x32_s3", 600.0}};
  r.reason = "jit 5.1% faster than cublasLt (margin 3%)";
  return r;
}

bool AnyWinner(std::string_view) { return true; }

TEST(TuningRecordTest, JsonRoundTripKeepsEveryFieldAndOrder) {
  TuningRecord r = Sample();
  r.reason = "quotes \" backslash \\ newline \n unicode µs";
  absl::StatusOr<TuningRecord> back = TuningRecord::FromJson(r.ToJson());
  ASSERT_THAT(back, IsOk());
  EXPECT_EQ(*back, r);
}

TEST(TuningRecordTest, InvalidUtf8AndNonFiniteTimesNeverThrow) {
  TuningRecord r = Sample();
  r.device_name = std::string("GPU \xff\xfe");
  r.candidate_us.push_back({"nan", std::nan("")});
  std::string json;
  EXPECT_NO_THROW(json = r.ToJson());
  // The NaN became null, which a reader refuses: retune, don't trust it.
  EXPECT_THAT(TuningRecord::FromJson(json),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'nan'")));
}

struct Malformed {
  const char* name;
  std::string json;
  const char* message;
};

class MalformedTuningRecordTest : public ::testing::TestWithParam<Malformed> {};

TEST_P(MalformedTuningRecordTest, IsInvalidArgumentNamingTheProblem) {
  absl::StatusOr<TuningRecord> r;
  EXPECT_NO_THROW(r = TuningRecord::FromJson(GetParam().json));
  EXPECT_THAT(r, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(GetParam().message)));
}

std::string Replace(const std::string& from, const std::string& to) {
  return absl::StrReplaceAll(Sample().ToJson(), {{from, to}});
}

INSTANTIATE_TEST_SUITE_P(
    Cases, MalformedTuningRecordTest,
    ::testing::Values(
        Malformed{"Empty", "", "not valid JSON"},
        Malformed{"Truncated", Sample().ToJson().substr(0, 40), "not valid JSON"},
        Malformed{"Array", "[1,2]", "not a JSON object"},
        Malformed{"Null", "null", "not a JSON object"},
        Malformed{"NoFormat", Replace("\"format\":2,", ""), "missing field 'format'"},
        Malformed{"FutureFormat", Replace("\"format\":2", "\"format\":3"), "unknown format 3"},
        Malformed{"NoRegimes", Replace("\"regimes\":", "\"regimez\":"), "missing field 'regimes'"},
        Malformed{"RegimeNumber", Replace("\"regimes\":[\"streaming\"", "\"regimes\":[7"),
                  "a 'regimes' element is not a string"},
        Malformed{"ResidentNegative", Replace("\"us\":640.5", "\"us\":-2"),
                  "candidate 'cublasLt' time is bad"},
        Malformed{"ResidentObject",
                  Replace("\"resident_us\":[", "\"resident_us\":{\"x\":1},\"u\":["),
                  "'resident_us' is not an array"},
        // Format 1 predates regimes: its fields are the old ones only.
        Malformed{"RegimesInFormat1", Replace("\"format\":2", "\"format\":1"),
                  "unknown field 'regimes'"},
        Malformed{"NoWinner", Replace("\"winner\":", "\"winnah\":"), "missing field 'winner'"},
        Malformed{"SmCountString", Replace("\"sm_count\":132", "\"sm_count\":\"132\""),
                  "'sm_count' is not an integer"},
        Malformed{"SmCountFloat", Replace("\"sm_count\":132", "\"sm_count\":132.5"),
                  "'sm_count' is not an integer"},
        Malformed{"DriverHuge", Replace("\"driver_version\":13000", "\"driver_version\":1e300"),
                  "'driver_version' is not an integer"},
        Malformed{"DriverOutOfRange",
                  Replace("\"driver_version\":13000", "\"driver_version\":99999999999"),
                  "'driver_version' is out of range"},
        Malformed{"NegativeOutOfRange",
                  Replace("\"driver_version\":13000", "\"driver_version\":-99999999999"),
                  "'driver_version' is out of range"},
        Malformed{"DeviceNumber",
                  Replace("\"device_name\":\"NVIDIA H100 80GB HBM3\"", "\"device_name\":7"),
                  "'device_name' is not a string"},
        Malformed{"CandidatesObject",
                  Replace("\"candidate_us\":[", "\"candidate_us\":{\"x\":1},\"unused\":["),
                  "'candidate_us' is not an array"},
        Malformed{"CandidateNotObject", Replace("\"candidate_us\":[", "\"candidate_us\":[3,"),
                  "not an object"},
        Malformed{"CandidateNegative", Replace("\"us\":812.5", "\"us\":-1.0"),
                  "candidate 'cublasLt' time is bad"},
        Malformed{"CandidateString", Replace("\"us\":812.5", "\"us\":\"fast\""),
                  "candidate 'cublasLt' has no numeric 'us'"}),
    [](const ::testing::TestParamInfo<Malformed>& info) { return info.param.name; });

TEST(TuningRecordTest, AFormat1RecordReadsAsDecidedStreaming) {
  // What the library stored before regimes existed.
  const std::string old =
      "{\"format\":1,\"device_name\":\"NVIDIA H100 80GB HBM3\",\"sm_count\":132,"
      "\"driver_version\":13000,\"cublas_version\":130100,\"library_version\":\"0.1.0\","
      "\"problem_signature\":\"p\",\"winner\":\"cublas\","
      "\"candidate_us\":[{\"name\":\"cublas\",\"us\":7.5}],\"reason\":\"r\"}";
  absl::StatusOr<TuningRecord> r = TuningRecord::FromJson(old);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->regimes, std::vector<std::string>{"streaming"});
  EXPECT_TRUE(r->resident_us.empty());
  EXPECT_EQ(r->candidate_us.size(), 1u);
  // Written back, it is a format 2 record that says so.
  EXPECT_THAT(r->ToJson(), HasSubstr("\"format\":2"));
  EXPECT_THAT(r->ToJson(), HasSubstr("\"regimes\":[\"streaming\"]"));
}

TEST(TuningRecordTest, MatchesComparesTheEnvironmentFieldsOnly) {
  const TuningRecord stored = Sample();
  TuningRecord here = Sample("another problem");
  here.winner = "cublasLt";
  here.candidate_us.clear();
  EXPECT_TRUE(stored.Matches(here));
  EXPECT_EQ(stored.Mismatch(here), "");
  struct Change {
    void (*apply)(TuningRecord*);
    const char* field;
  };
  for (Change c :
       {Change{[](TuningRecord* r) { r->device_name = "NVIDIA A100"; }, "device_name"},
        Change{[](TuningRecord* r) { r->sm_count = 114; }, "sm_count"},
        Change{[](TuningRecord* r) { r->driver_version = 12080; }, "driver_version"},
        Change{[](TuningRecord* r) { r->cublas_version = 1; }, "cublas_version"},
        Change{[](TuningRecord* r) { r->library_version = "0.2.0"; }, "library_version"}}) {
    TuningRecord other = here;
    c.apply(&other);
    EXPECT_FALSE(stored.Matches(other)) << c.field;
    EXPECT_THAT(stored.Mismatch(other), HasSubstr(c.field));
  }
}

class LoadTuningRecordTest : public ::testing::Test {
 protected:
  ScratchDir dir_;
  std::shared_ptr<DiskCache> cache_ = DiskCache::Open(TestSettings(dir_.Sub("cache")));
  CacheKey key_ = MakeCacheKey("tuning\nbf16 tn M4096 N4096 K4096\nsm_90a");
};

TEST_F(LoadTuningRecordTest, AbsentIsNotFound) {
  EXPECT_THAT(LoadTuningRecord(*cache_, key_, Sample(), AnyWinner),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr(key_.Hex())));
}

TEST_F(LoadTuningRecordTest, StoredRecordLoads) {
  StoreTuningRecord(*cache_, key_, Sample());
  absl::StatusOr<TuningRecord> r = LoadTuningRecord(*cache_, key_, Sample(), AnyWinner);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(*r, Sample());
}

TEST_F(LoadTuningRecordTest, MalformedStoredJsonIsRefusedThenRetuned) {
  cache_->Store(key_, EntryKind::kTuningRecord, "{\"format\":1, \"device_name\": ");
  EXPECT_THAT(LoadTuningRecord(*cache_, key_, Sample(), AnyWinner),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not valid JSON")));
  StoreTuningRecord(*cache_, key_, Sample());  // the retune's result replaces it
  EXPECT_THAT(LoadTuningRecord(*cache_, key_, Sample(), AnyWinner), IsOk());
}

TEST_F(LoadTuningRecordTest, WrongDeviceIsStale) {
  StoreTuningRecord(*cache_, key_, Sample());
  TuningRecord here = Sample();
  here.device_name = "NVIDIA H200";
  EXPECT_THAT(LoadTuningRecord(*cache_, key_, here, AnyWinner),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("device_name")));
}

TEST_F(LoadTuningRecordTest, StaleLibraryVersionIsRefused) {
  StoreTuningRecord(*cache_, key_, Sample());
  TuningRecord here = Sample();
  here.library_version = "0.2.0";
  EXPECT_THAT(LoadTuningRecord(*cache_, key_, here, AnyWinner),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("library_version")));
}

TEST_F(LoadTuningRecordTest, OtherProblemIsRefused) {
  StoreTuningRecord(*cache_, key_, Sample("bf16 tn M1 N4096 K4096"));
  EXPECT_THAT(LoadTuningRecord(*cache_, key_, Sample(), AnyWinner),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("M1 N4096")));
}

TEST_F(LoadTuningRecordTest, VanishedWinnerIsRefused) {
  StoreTuningRecord(*cache_, key_, Sample());
  std::vector<std::string> asked;
  auto exists = [&](std::string_view name) {
    asked.emplace_back(name);
    return name == "cublasLt";
  };
  EXPECT_THAT(LoadTuningRecord(*cache_, key_, Sample(), exists),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("no longer exists")));
  EXPECT_THAT(asked, ::testing::ElementsAre("gemm_sm80_bf16_128x128x32_s3"));
}

TEST_F(LoadTuningRecordTest, ConcurrentWritersOfDifferentProblemsLoseNothing) {
  constexpr int kWriters = 8, kEach = 40;
  std::vector<std::thread> threads;
  for (int t = 0; t < kWriters; ++t) {
    threads.emplace_back([&, t] {
      // One cache object per writer, as separate processes would have.
      auto cache = DiskCache::Open(TestSettings(dir_.Sub("cache")));
      for (int i = 0; i < kEach; ++i) {
        std::string problem = absl::StrCat("writer ", t, " problem ", i);
        StoreTuningRecord(*cache, MakeCacheKey(problem), Sample(problem));
      }
    });
  }
  for (auto& t : threads) t.join();
  int loaded = 0;
  for (int t = 0; t < kWriters; ++t) {
    for (int i = 0; i < kEach; ++i) {
      std::string problem = absl::StrCat("writer ", t, " problem ", i);
      absl::StatusOr<TuningRecord> r =
          LoadTuningRecord(*cache_, MakeCacheKey(problem), Sample(problem), AnyWinner);
      if (r.ok() && r->problem_signature == problem) ++loaded;
    }
  }
  EXPECT_EQ(loaded, kWriters * kEach);
}

}  // namespace
}  // namespace jitgemm::cache
