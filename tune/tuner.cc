#include "tune/tuner.h"

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cache/key.h"
#include "tune/measure.h"
#include "tune/rematch.h"
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

bool IsSimt(const Candidate& c) {
  const auto* config = std::get_if<jit::KernelConfig>(&c);
  return config != nullptr && config->family == jit::Family::kSimt;
}

// Untimed, the first JIT config that builds serves, but never the simt
// family's while cuBLAS can serve: its exact FMA loop ran 1.5-13x behind
// cuBLASLt on every fp32 problem measured (H100,
// bench/results/2026-11-27-h100-s23-f32-inputs.log), and cuBLASLt's fp32
// product without TF32 is exact too.
absl::StatusOr<TuneResult> Heuristic(const TuneRequest& r, const std::string& why) {
  auto chosen = [](BackendPtr backend, const Candidate& c, std::string reason) {
    TuneResult out;
    out.backend = std::move(backend);
    out.winner = c;
    out.reason = std::move(reason);
    return out;
  };
  const bool has_cublas = std::any_of(r.candidates.begin(), r.candidates.end(), IsCublas);
  const bool has_simt = std::any_of(r.candidates.begin(), r.candidates.end(), IsSimt);
  absl::Status last = absl::UnimplementedError(
      has_cublas && has_simt ? "only the simt family's, which comes after cuBLAS untimed"
                             : "no JIT candidate");
  for (const Candidate& c : r.candidates) {
    if (IsCublas(c) || (has_cublas && IsSimt(c))) continue;
    auto b = r.build(c);
    if (b.ok()) {
      return chosen(*std::move(b), c, absl::StrCat("heuristic choice, not timed (", why, ")"));
    }
    last = b.status();
    if (!absl::IsNotFound(last)) break;  // NotFound: not cached with compiling off
  }
  for (const Candidate& c : r.candidates) {
    if (!IsCublas(c)) continue;
    auto b = r.build(c);  // cuBLASLt's first suggestion
    if (b.ok()) {
      return chosen(*std::move(b), c,
                    absl::StrCat("cuBLAS, not timed (", why, "); no JIT kernel: ", last.message()));
    }
    last = absl::Status(b.status().code(),
                        absl::StrCat("no JIT kernel (", last.message(), ") and no cuBLAS (",
                                     b.status().message(), ")"));
    break;
  }
  for (const Candidate& c : r.candidates) {
    if (!IsSimt(c) || !has_cublas) continue;
    auto b = r.build(c);  // cuBLAS could not be built after all
    if (b.ok()) {
      return chosen(*std::move(b), c,
                    absl::StrCat("heuristic choice, not timed (", why, "): ", last.message()));
    }
  }
  return last;
}

// The timing order: cuBLASLt's first choice first, the reference every
// other candidate is compared with (never stopped early), then the rest in
// the set's order.
std::vector<int> TimingOrder(const std::vector<Candidate>& candidates) {
  std::vector<int> order;
  for (int i = 0; i < static_cast<int>(candidates.size()); ++i) {
    if (IsCublasReference(candidates[i])) {
      order.insert(order.begin(), i);
    } else {
      order.push_back(i);
    }
  }
  return order;
}

void FillResultTimes(const cache::TuningRecord& record, TuneResult* out) {
  out->candidate_us = record.candidate_us;
  out->resident_us = record.resident_us;
  out->regimes = record.regimes;
}

}  // namespace

absl::StatusOr<TuneResult> SelectBackend(const TuneRequest& r) {
  const cache::CacheKey key = cache::MakeCacheKey(r.record_key_text);
  auto winner_exists = [&](std::string_view w) { return Named(r, w) != nullptr; };
  // A record that exists but cannot be used (other device, driver or library,
  // a winner that no longer exists, malformed) is replaced by a fresh tuning.
  bool replace_record = false;
  const std::vector<Regime> regimes =
      RegimesToTime(r.regime, r.reused_bytes, r.l2_bytes, r.call_bytes);
  const std::vector<std::string> regime_names = RegimeNames(regimes);
  const bool can_time =
      r.policy != TuningPolicy::kHeuristic && !r.capturing && static_cast<bool>(r.make_timer);
  if (r.cache != nullptr) {
    cache::TuningRecord current = RecordIn(r.environment);
    current.problem_signature = r.record_key_text;
    auto record = cache::LoadTuningRecord(*r.cache, key, current, winner_exists);
    replace_record = !record.ok() && !absl::IsNotFound(record.status());
    const bool covered =
        record.ok() && std::all_of(regime_names.begin(), regime_names.end(), [&](const auto& n) {
          return std::find(record->regimes.begin(), record->regimes.end(), n) !=
                 record->regimes.end();
        });
    if (record.ok() && !covered && can_time) {
      // Decided without a regime needed now (a record made before both were
      // timed): time again; without timing, the old decision is still the
      // best known. A record decided in more regimes than needed holds.
      replace_record = true;
    } else if (record.ok()) {
      const Candidate& winner = *Named(r, record->winner);  // winner_exists held
      auto b = r.build(winner);
      if (b.ok()) {
        TuneResult out;
        out.backend = std::move(*b);
        out.winner = winner;
        out.reason = absl::StrCat("stored decision: ", record->reason);
        FillResultTimes(*record, &out);
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
  double timing_us = 0;
  auto tune = [&]() -> absl::StatusOr<std::string> {
    if (r.before_timing) r.before_timing();
    auto timer = r.make_timer();
    if (!timer.ok()) {
      timer_error = timer.status();
      return timer.status();
    }
    std::vector<Timing> timings(r.candidates.size());
    MeasureBudget budget;
    std::vector<double> best(regimes.size(), -1);  // fastest median per regime so far
    for (int i : TimingOrder(r.candidates)) {
      const Candidate& c = r.candidates[i];
      Timing& t = timings[i];
      t.name = CandidateName(c);
      t.is_cublas = IsCublas(c);
      auto b = r.build(c);
      if (!b.ok()) continue;
      const bool reference = IsCublasReference(c);
      for (size_t k = 0; k < regimes.size(); ++k) {
        auto m = Measure(**timer, **b, regimes[k], best[k], reference, budget);
        if (!m.ok()) break;  // cannot run in this regime: cannot win
        t.us.push_back(m->us);
        if (m->pruned) {
          t.pruned = true;
          break;  // clearly behind in one regime: its worse regime is no better
        }
        if (best[k] < 0 || m->us < best[k]) best[k] = m->us;
      }
      built[t.name] = std::move(*b);
    }
    Choice choice = ChooseFastest(timings, r.margin, regime_names);
    const char* rematched = "";
    const bool close_call = IsCloseCall(choice, r.margin);
    const std::vector<int> runners_up = RunnersUp(timings, choice);
    if (close_call || IsJitCloseCall(choice, runners_up)) {
      // The cuBLAS pick joins even where it lost clearly: second looks run on
      // a warmer card, and a JIT kernel's must not be weighed against the
      // pick's first look.
      std::vector<int> again = {choice.best_jit};
      if (choice.cublas >= 0) again.push_back(choice.cublas);
      again.insert(again.end(), runners_up.begin(), runners_up.end());
      std::vector<RematchSide> sides;
      for (int i : again) sides.push_back({built.at(timings[i].name).get(), &timings[i]});
      if (Rematch(**timer, regimes, sides, budget).ok()) {
        rematched =
            close_call ? ", close call timed again" : ", JIT kernels close behind timed again";
        choice = ChooseFastest(timings, r.margin, regime_names);
      }
    }
    timing_us = budget.spent_us;
    if (choice.index < 0) return absl::UnavailableError("tuning: no candidate could run");
    cache::TuningRecord record = RecordIn(r.environment);
    record.problem_signature = r.record_key_text;
    record.winner = timings[choice.index].name;
    record.regimes = regime_names;
    int pruned = 0;
    for (const Timing& t : timings) pruned += t.pruned ? 1 : 0;
    record.reason = absl::StrFormat("%s [%s; timing %.0f ms of GPU time, %d stopped early%s]",
                                    choice.reason, absl::StrJoin(regime_names, "+"),
                                    budget.spent_us / 1000.0, pruned, rematched);
    for (const Timing& t : timings) {
      if (!t.us.empty() && t.us[0] >= 0) record.candidate_us.emplace_back(t.name, t.us[0]);
      if (regimes.size() > 1 && t.us.size() > 1 && t.us[1] >= 0) {
        record.resident_us.emplace_back(t.name, t.us[1]);
      }
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
  FillResultTimes(*record, &out);
  out.timing_us = timing_us;
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
