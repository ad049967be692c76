#include "tune/tuner.h"

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "cache/key.h"
#include "tune/selection.h"

namespace jitgemm::tune {

std::string CublasName(int algorithm) {
  return algorithm == 0 ? std::string(kCublasName) : absl::StrCat(kCublasName, "#", algorithm);
}

int CublasAlgorithm(const std::string& name) {
  if (name == kCublasName) return 0;
  const std::string prefix = absl::StrCat(kCublasName, "#");
  int k = -1;
  if (name.rfind(prefix, 0) == 0 && absl::SimpleAtoi(name.substr(prefix.size()), &k) && k > 0) {
    return k;
  }
  return -1;
}

namespace {

using BackendPtr = std::unique_ptr<Backend>;

int JitIndex(const TuneRequest& r, const std::string& name) {
  auto it = std::find(r.jit_names.begin(), r.jit_names.end(), name);
  return it == r.jit_names.end() ? -1 : static_cast<int>(it - r.jit_names.begin());
}

absl::StatusOr<BackendPtr> Build(const TuneRequest& r, const std::string& name) {
  if (const int k = CublasAlgorithm(name); k >= 0) {
    if (!r.make_cublas) return absl::FailedPreconditionError("cuBLAS is not allowed");
    return r.make_cublas(k);
  }
  const int i = JitIndex(r, name);
  if (i < 0) return absl::NotFoundError(absl::StrCat("no candidate ", name));
  return r.make_jit(i);
}

absl::StatusOr<TuneResult> Heuristic(const TuneRequest& r, const std::string& why) {
  absl::Status last = absl::UnimplementedError("no JIT candidate");
  for (int i = 0; i < static_cast<int>(r.jit_names.size()); ++i) {
    auto b = r.make_jit(i);
    if (b.ok()) {
      TuneResult out;
      out.backend = std::move(*b);
      out.winner = r.jit_names[i];
      out.reason = absl::StrCat("heuristic choice, not timed (", why, ")");
      return out;
    }
    last = b.status();
    if (!absl::IsNotFound(last)) break;  // NotFound: not cached with compiling off
  }
  if (r.make_cublas) {
    auto b = r.make_cublas(0);
    if (b.ok()) {
      TuneResult out;
      out.backend = std::move(*b);
      out.winner = kCublasName;
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
  auto winner_exists = [&](std::string_view w) {
    const int k = CublasAlgorithm(std::string(w));
    if (k >= 0) return r.make_cublas != nullptr && k < std::max(1, r.cublas_algorithms);
    return JitIndex(r, std::string(w)) >= 0;
  };
  // A record that exists but cannot be used (other device, driver or library,
  // a winner that no longer exists, malformed) is replaced by a fresh tuning.
  bool replace_record = false;
  if (r.cache != nullptr) {
    cache::TuningRecord current = r.environment;
    current.problem_signature = r.record_key_text;
    auto record = cache::LoadTuningRecord(*r.cache, key, current, winner_exists);
    replace_record = !record.ok() && !absl::IsNotFound(record.status());
    if (record.ok()) {
      auto b = Build(r, record->winner);
      if (b.ok()) {
        TuneResult out;
        out.backend = std::move(*b);
        out.winner = record->winner;
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
    std::vector<std::string> names = r.jit_names;
    if (r.make_cublas) {
      for (int k = 0; k < std::max(1, r.cublas_algorithms); ++k) names.push_back(CublasName(k));
    }
    for (const std::string& name : names) {
      Timing t{name, CublasAlgorithm(name) >= 0, -1};
      auto b = Build(r, name);
      if (b.ok()) {
        auto us = (*timer)->MedianUs(**b);
        if (us.ok()) t.us = *us;
        built[name] = std::move(*b);
      }
      timings.push_back(t);
    }
    const Choice choice = ChooseFastest(timings, r.margin);
    if (choice.index < 0) return absl::UnavailableError("tuning: no candidate could run");
    cache::TuningRecord record = r.environment;
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
  TuneResult out;
  out.winner = record->winner;
  out.reason = record->reason;
  out.candidate_us = record->candidate_us;
  if (auto it = built.find(out.winner); it != built.end()) {
    out.backend = std::move(it->second);
  } else {
    // Another process tuned while this one waited on the key lock.
    auto b = Build(r, out.winner);
    if (!b.ok()) return b.status();
    out.backend = std::move(*b);
    out.from_record = true;
  }
  return out;
}

}  // namespace jitgemm::tune
