#include "core/option_names.h"

#include <utility>

namespace jitgemm {
namespace {

template <class E>
using NameTable = std::pair<E, const char*>[3];

constexpr NameTable<BackendPolicy> kBackends = {{BackendPolicy::kAuto, "auto"},
                                                {BackendPolicy::kJitOnly, "jit"},
                                                {BackendPolicy::kCublasOnly, "cublas"}};
constexpr NameTable<TuningPolicy> kTunings = {{TuningPolicy::kHeuristic, "heuristic"},
                                              {TuningPolicy::kFast, "fast"},
                                              {TuningPolicy::kExhaustive, "exhaustive"}};
constexpr NameTable<TimingRegime> kRegimes = {{TimingRegime::kAuto, "auto"},
                                              {TimingRegime::kStreaming, "streaming"},
                                              {TimingRegime::kResident, "resident"}};

template <class E>
const char* NameOf(const NameTable<E>& table, E value) {
  for (const auto& [e, name] : table) {
    if (e == value) return name;
  }
  return "?";
}

template <class E>
std::optional<E> ValueOf(const NameTable<E>& table, std::string_view text) {
  for (const auto& [e, name] : table) {
    if (text == name) return e;
  }
  return std::nullopt;
}

}  // namespace

const char* BackendPolicyName(BackendPolicy backend) { return NameOf(kBackends, backend); }
std::optional<BackendPolicy> ParseBackendPolicy(std::string_view text) {
  return ValueOf(kBackends, text);
}

const char* TuningPolicyName(TuningPolicy tuning) { return NameOf(kTunings, tuning); }
std::optional<TuningPolicy> ParseTuningPolicy(std::string_view text) {
  return ValueOf(kTunings, text);
}

const char* TimingRegimeName(TimingRegime regime) { return NameOf(kRegimes, regime); }
std::optional<TimingRegime> ParseTimingRegime(std::string_view text) {
  return ValueOf(kRegimes, text);
}

}  // namespace jitgemm
