#include "tune/regime.h"

#include <string>
#include <vector>

#include "core/problem_signature.h"

namespace jitgemm::tune {

const char* RegimeName(Regime regime) {
  return regime == Regime::kResident ? "resident" : "streaming";
}

std::vector<Regime> RegimesToTime(TimingRegime declared, int64_t reused_bytes, int64_t l2_bytes) {
  switch (declared) {
    case TimingRegime::kStreaming:
      return {Regime::kStreaming};
    case TimingRegime::kResident:
      return {Regime::kResident};
    case TimingRegime::kAuto:
      break;
  }
  if (l2_bytes > 0 && reused_bytes <= l2_bytes) return {Regime::kStreaming, Regime::kResident};
  return {Regime::kStreaming};
}

int64_t ReusedBytes(const GemmProblem& p) {
  return static_cast<int64_t>(OperandSpanBytes(p.b, p.k, BColumns(p), p.batch_count));
}

std::vector<std::string> RegimeNames(const std::vector<Regime>& regimes) {
  std::vector<std::string> out;
  for (Regime r : regimes) out.push_back(RegimeName(r));
  return out;
}

}  // namespace jitgemm::tune
