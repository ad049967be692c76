#include "cache/tuning_record.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "cache/json_fields.h"

namespace jitgemm::cache {
namespace {

// 2: regimes and resident_us. Format 1 records still read (as streaming).
constexpr int kTuningRecordFormat = 2;
constexpr int kStreamingOnlyFormat = 1;

absl::Status Bad(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("tuning record: ", what));
}

constexpr char kWhere[] = "tuning record";
// A record is a few hundred bytes plus one line per candidate timed.
constexpr JsonLimits kLimits = {uint64_t{1} << 20, 4};

absl::Status GetString(const Json& j, const char* field, std::string* out) {
  return GetJsonString(j, field, /*required=*/true, kWhere, out);
}

absl::Status GetInt(const Json& j, const char* field, int* out) {
  return GetJsonInt(j, field, /*required=*/true, kWhere, out);
}

absl::Status ParseCandidates(const Json& j, const char* field,
                             std::vector<std::pair<std::string, double>>* out) {
  auto it = j.find(field);
  if (it == j.end()) return Bad(absl::StrCat("missing field '", field, "'"));
  if (!it->is_array()) return Bad(absl::StrCat("field '", field, "' is not an array"));
  for (const Json& c : *it) {
    if (!c.is_object()) return Bad(absl::StrCat("a '", field, "' element is not an object"));
    std::string name;
    absl::Status s =
        CheckKnownFields(c, {"name", "us"}, absl::StrCat("tuning record: a '", field, "' element"));
    if (s.ok()) s = GetString(c, "name", &name);
    if (!s.ok()) return s;
    auto us = c.find("us");
    if (us == c.end() || !us->is_number()) {
      return Bad(absl::StrCat("candidate '", name, "' has no numeric 'us'"));
    }
    double v = us->get<double>();
    if (!std::isfinite(v) || v < 0) return Bad(absl::StrCat("candidate '", name, "' time is bad"));
    out->emplace_back(std::move(name), v);
  }
  return absl::OkStatus();
}

absl::Status ParseRegimes(const Json& j, std::vector<std::string>* out) {
  auto it = j.find("regimes");
  if (it == j.end()) return Bad("missing field 'regimes'");
  if (!it->is_array()) return Bad("field 'regimes' is not an array");
  for (const Json& r : *it) {
    if (!r.is_string()) return Bad("a 'regimes' element is not a string");
    out->push_back(r.get<std::string>());
  }
  return absl::OkStatus();
}

Json CandidatesJson(const std::vector<std::pair<std::string, double>>& times) {
  Json candidates = Json::array();
  for (const auto& [name, us] : times) {
    Json c = Json::object();
    c["name"] = name;
    // JSON has no NaN or infinity; null makes such a record fail to load,
    // which retunes instead of trusting a broken measurement.
    if (std::isfinite(us)) {
      c["us"] = us;
    } else {
      c["us"] = nullptr;
    }
    candidates.push_back(std::move(c));
  }
  return candidates;
}

}  // namespace

std::string TuningRecord::ToJson() const {
  Json j = Json::object();
  j["format"] = kTuningRecordFormat;
  j["device_name"] = device_name;
  j["sm_count"] = sm_count;
  j["driver_version"] = driver_version;
  j["cublas_version"] = cublas_version;
  j["library_version"] = library_version;
  j["problem_signature"] = problem_signature;
  j["winner"] = winner;
  j["regimes"] = regimes;
  j["candidate_us"] = CandidatesJson(candidate_us);
  j["resident_us"] = CandidatesJson(resident_us);
  j["reason"] = reason;
  // `replace`: dump would otherwise throw on invalid UTF-8 in a device name.
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

absl::StatusOr<TuningRecord> TuningRecord::FromJson(std::string_view json) {
  absl::StatusOr<Json> parsed = ParseBoundedJson(json, kLimits, kWhere);
  if (!parsed.ok()) return parsed.status();
  const Json& j = *parsed;
  if (!j.is_object()) return Bad("not a JSON object");
  int format = 0;
  absl::Status s = GetInt(j, "format", &format);
  if (!s.ok()) return s;
  if (format != kTuningRecordFormat && format != kStreamingOnlyFormat) {
    return Bad(absl::StrCat("unknown format ", format));
  }
  TuningRecord r;
  if (format == kStreamingOnlyFormat) {
    r.regimes = {"streaming"};
  } else {
    for (absl::Status field :
         {ParseRegimes(j, &r.regimes), ParseCandidates(j, "resident_us", &r.resident_us)}) {
      if (!field.ok()) return field;
    }
  }
  for (absl::Status field : {
           GetString(j, "device_name", &r.device_name),
           GetInt(j, "sm_count", &r.sm_count),
           GetInt(j, "driver_version", &r.driver_version),
           GetInt(j, "cublas_version", &r.cublas_version),
           GetString(j, "library_version", &r.library_version),
           GetString(j, "problem_signature", &r.problem_signature),
           GetString(j, "winner", &r.winner),
           ParseCandidates(j, "candidate_us", &r.candidate_us),
           GetString(j, "reason", &r.reason),
           format == kStreamingOnlyFormat
               ? CheckKnownFields(
                     j,
                     {"format", "device_name", "sm_count", "driver_version", "cublas_version",
                      "library_version", "problem_signature", "winner", "candidate_us", "reason"},
                     kWhere)
               : CheckKnownFields(j,
                                  {"format", "device_name", "sm_count", "driver_version",
                                   "cublas_version", "library_version", "problem_signature",
                                   "winner", "regimes", "candidate_us", "resident_us", "reason"},
                                  kWhere),
       }) {
    if (!field.ok()) return field;
  }
  return r;
}

std::string TuningRecord::Mismatch(const TuningRecord& current) const {
  if (device_name != current.device_name) {
    return absl::StrCat("device_name '", device_name, "' != '", current.device_name, "'");
  }
  if (sm_count != current.sm_count) {
    return absl::StrCat("sm_count ", sm_count, " != ", current.sm_count);
  }
  if (driver_version != current.driver_version) {
    return absl::StrCat("driver_version ", driver_version, " != ", current.driver_version);
  }
  if (cublas_version != current.cublas_version) {
    return absl::StrCat("cublas_version ", cublas_version, " != ", current.cublas_version);
  }
  if (library_version != current.library_version) {
    return absl::StrCat("library_version '", library_version, "' != '", current.library_version,
                        "'");
  }
  return "";
}

bool TuningRecord::Matches(const TuningRecord& current) const { return Mismatch(current).empty(); }

absl::StatusOr<TuningRecord> LoadTuningRecord(
    DiskCache& cache, const CacheKey& key, const TuningRecord& current,
    absl::FunctionRef<bool(std::string_view)> winner_exists) {
  std::optional<std::string> json = cache.Lookup(key, EntryKind::kTuningRecord);
  if (!json) return absl::NotFoundError(absl::StrCat("no tuning record ", key.Hex()));
  absl::StatusOr<TuningRecord> record = TuningRecord::FromJson(*json);
  if (!record.ok()) return record.status();
  if (std::string why = record->Mismatch(current); !why.empty()) {
    return absl::FailedPreconditionError(absl::StrCat("stale tuning record: ", why));
  }
  if (record->problem_signature != current.problem_signature) {
    return absl::FailedPreconditionError(
        absl::StrCat("tuning record is for problem '", record->problem_signature, "'"));
  }
  if (!winner_exists(record->winner)) {
    return absl::FailedPreconditionError(
        absl::StrCat("tuning record winner '", record->winner, "' no longer exists"));
  }
  return record;
}

void StoreTuningRecord(DiskCache& cache, const CacheKey& key, const TuningRecord& record) {
  cache.Store(key, EntryKind::kTuningRecord, record.ToJson());
}

}  // namespace jitgemm::cache
