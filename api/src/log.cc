#include "api/src/log.h"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace jitgemm {

bool LogEnabled() {
  static const bool kEnabled = [] {
    const char* v = std::getenv("JITGEMM_LOG");
    return v != nullptr && (std::string(v) == "info" || std::string(v) == "debug");
  }();
  return kEnabled;
}

void LogDecision(const GemmProblem& problem, const PlanInfo& info, bool force) {
  static const bool kOff = [] {
    const char* v = std::getenv("JITGEMM_LOG");
    return v != nullptr && std::string(v) == "off";
  }();
  if (!LogEnabled() && !(force && !kOff)) return;
  std::string times;
  for (const auto& [name, us] : info.candidate_us) {
    times += (times.empty() ? "" : ", ") + name + " " + std::to_string(us).substr(0, 6) + " us";
  }
  std::fprintf(stderr, "jitgemm: %s -> %s %s: %s%s%s%s\n", DebugString(problem).c_str(),
               info.backend.c_str(), info.kernel_name.c_str(), info.reason.c_str(),
               times.empty() ? "" : " [", times.c_str(), times.empty() ? "" : "]");
}

}  // namespace jitgemm
