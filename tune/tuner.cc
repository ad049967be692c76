#include "tune/tuner.h"

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cache/key.h"
#include "tune/selection.h"

namespace jitgemm::tune {

namespace {

using BackendPtr = std::unique_ptr<Backend>;

// The candidate a record's winner names, or null when the set has none.
const Candidate* Named(const TuneRequest& r, std::string_view name) {
  for (const Candidate& c : r.candidates) {
    if (CandidateName(c) == name) return &c;
  }
  return nullptr;
}

absl::StatusOr<TuneResult> Heuristic(const TuneRequest& r, const std::string& why) {
  absl::Status last = absl::UnimplementedError("no JIT candidate");
  for (const Candidate& c : r.candidates) {
    if (IsCublas(c)) continue;
    auto b = r.build(c);
    if (b.ok()) {
      TuneResult out;
      out.backend = std::move(*b);
      out.winner = c;
      out.reason = absl::StrCat("heuristic choice, not timed (", why, ")");
      return out;
    }
    last = b.status();
    if (!absl::IsNotFound(last)) break;  // NotFound: not cached with compiling off
  }
  for (const Candidate& c : r.candidates) {
    if (!IsCublas(c)) continue;
    auto b = r.build(c);  // cuBLASLt's first suggestion
    if (b.ok()) {
      TuneResult out;
      out.backend = std::move(*b);
      out.winner = c;
      out.reason = absl::StrCat("cuBLAS, not timed (", why, "); no JIT kernel: ", last.message());
      return out;
    }
    return absl::Status(b.status().code(),
                        absl::StrCat("no JIT kernel (", last.message(), ") and no cuBLAS (",
                                     b.status().message(), ")"));
  }
  return last;
}

}  // namespace

absl::StatusOr<TuneResult> SelectBackend(const TuneRequest& r) {
  const cache::CacheKey key = cache::MakeCacheKey(r.record_key_text);
  auto winner_exists = [&](std::string_view w) { return Named(r, w) != nullptr; };
  // A record that exists but cannot be used (other device, driver or library,
  // a winner that no longer exists, malformed) is replaced by a fresh tuning.
  bool replace_record = false;
  if (r.cache != nullptr) {
    cache::TuningRecord current = RecordIn(r.environment);
    current.problem_signature = r.record_key_text;
    auto record = cache::LoadTuningRecord(*r.cache, key, current, winner_exists);
    replace_record = !record.ok() && !absl::IsNotFound(record.status());
    if (record.ok()) {
      const Candidate& winner = *Named(r, record->winner);  // winner_exists held
      auto b = r.build(winner);
      if (b.ok()) {
        TuneResult out;
        out.backend = std::move(*b);
        out.winner = winner;
        out.reason = absl::StrCat("stored decision: ", record->reason);
        out.candidate_us = record->candidate_us;
        out.from_record = true;
        return out;
      }
    }
  }
  if (r.policy == TuningPolicy::kHeuristic) return Heuristic(r, "tuning policy is heuristic");
  if (r.capturing) return Heuristic(r, "stream capture in progress");
  if (!r.make_timer) return Heuristic(r, "no timer");

  // Everything built here survives the cache callback; the winner is moved out.
  std::map<std::string, BackendPtr> built;
  absl::Status timer_error = absl::OkStatus();
  auto tune = [&]() -> absl::StatusOr<std::string> {
    auto timer = r.make_timer();
    if (!timer.ok()) {
      timer_error = timer.status();
      return timer.status();
    }
    std::vector<Timing> timings;
    for (const Candidate& c : r.candidates) {
      Timing t{CandidateName(c), IsCublas(c), -1};
      auto b = r.build(c);
      if (b.ok()) {
        auto us = (*timer)->MedianUs(**b);
        if (us.ok()) t.us = *us;
        built[t.name] = std::move(*b);
      }
      timings.push_back(t);
    }
    const Choice choice = ChooseFastest(timings, r.margin);
    if (choice.index < 0) return absl::UnavailableError("tuning: no candidate could run");
    cache::TuningRecord record = RecordIn(r.environment);
    record.problem_signature = r.record_key_text;
    record.winner = timings[choice.index].name;
    record.reason = choice.reason;
    for (const Timing& t : timings) {
      if (t.us >= 0) record.candidate_us.emplace_back(t.name, t.us);
    }
    return record.ToJson();
  };
  absl::StatusOr<std::string> json =
      r.cache != nullptr && !replace_record
          ? r.cache->GetOrCreate(key, cache::EntryKind::kTuningRecord, tune)
          : tune();
  if (json.ok() && replace_record) r.cache->Store(key, cache::EntryKind::kTuningRecord, *json);
  if (!json.ok()) {
    if (!timer_error.ok())
      return Heuristic(r, absl::StrCat("cannot time: ", timer_error.message()));
    return json.status();
  }
  auto record = cache::TuningRecord::FromJson(*json);
  if (!record.ok()) return record.status();
  const Candidate* winner = Named(r, record->winner);
  if (winner == nullptr) {
    // Another process stored a winner outside this candidate set.
    return absl::NotFoundError(absl::StrCat("tuning record names no candidate: ", record->winner));
  }
  TuneResult out;
  out.winner = *winner;
  out.reason = record->reason;
  out.candidate_us = record->candidate_us;
  if (auto it = built.find(record->winner); it != built.end()) {
    out.backend = std::move(it->second);
  } else {
    // Another process tuned while this one waited on the key lock.
    auto b = r.build(*winner);
    if (!b.ok()) return b.status();
    out.backend = std::move(*b);
    out.from_record = true;
  }
  return out;
}

}  // namespace jitgemm::tune
