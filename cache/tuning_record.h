// TuningRecord: the persisted outcome of timing the candidates for one
// problem on one device, so every process and rank makes the same choice
// without timing again.
//
// A record is stored as JSON in the disk cache (EntryKind::kTuningRecord),
// keyed by the problem and environment but not by the candidate list. It
// carries the environment it was measured in; a reader uses it only if that
// environment matches its own (Matches) and the winner still exists, and
// otherwise retunes and stores a replacement. Malformed JSON is an error
// value, never an exception.
//
// Thread safety: a value type; the free functions are as thread safe as the
// DiskCache they are given.
//
// Example:
//   absl::StatusOr<TuningRecord> r = LoadTuningRecord(*cache, key, current, exists);
//   if (!r.ok()) { TuningRecord fresh = Tune(...); StoreTuningRecord(*cache, key, fresh); }
#ifndef JITGEMM_CACHE_TUNING_RECORD_H_
#define JITGEMM_CACHE_TUNING_RECORD_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "cache/disk_cache.h"
#include "cache/key.h"

namespace jitgemm::cache {

struct TuningRecord {
  // The environment the timings were taken in.
  std::string device_name;
  int sm_count = 0;
  int driver_version = 0;
  int cublas_version = 0;
  std::string library_version;
  // What was tuned, and the outcome.
  std::string problem_signature;
  std::string winner;
  // The timing regimes that decided ("streaming", "resident"), in order. A
  // record of format 1 (before regimes existed) reads as {"streaming"}.
  std::vector<std::string> regimes;
  // Name, median microseconds in regimes[0].
  std::vector<std::pair<std::string, double>> candidate_us;
  // Name, median microseconds in the resident regime, when it is regimes[1].
  std::vector<std::pair<std::string, double>> resident_us;
  std::string reason;  // e.g. "jit 4.1% faster than cublasLt (margin 3%)"

  // Compact JSON with a "format" field (2). Never fails: invalid UTF-8 in a
  // string is replaced, a non-finite time is written as null.
  std::string ToJson() const;

  // InvalidArgument naming the field for syntax errors, missing fields,
  // wrong types, an unknown "format", or a null/negative time. Reads format
  // 1 (no regimes, no resident_us) as well.
  static absl::StatusOr<TuningRecord> FromJson(std::string_view json);

  // Whether this record was measured where `current_env_fields` describes:
  // same device_name, sm_count, driver_version, cublas_version and
  // library_version. The problem and outcome fields are not compared.
  bool Matches(const TuningRecord& current_env_fields) const;

  // Why Matches is false ("driver_version 12080 != 13000"), or "".
  std::string Mismatch(const TuningRecord& current_env_fields) const;

  friend bool operator==(const TuningRecord&, const TuningRecord&) = default;
};

// The stored record under `key` if it is usable here: NotFound if there is
// none, InvalidArgument if it does not parse, FailedPrecondition (saying why)
// if it was measured elsewhere (Matches), is for another problem_signature
// than `current`'s, or names a winner that `winner_exists` no longer knows.
// Any error means: tune again and StoreTuningRecord.
absl::StatusOr<TuningRecord> LoadTuningRecord(
    DiskCache& cache, const CacheKey& key, const TuningRecord& current,
    absl::FunctionRef<bool(std::string_view)> winner_exists);

// Stores `record` under `key`, replacing any previous record.
void StoreTuningRecord(DiskCache& cache, const CacheKey& key, const TuningRecord& record);

}  // namespace jitgemm::cache

#endif  // JITGEMM_CACHE_TUNING_RECORD_H_
