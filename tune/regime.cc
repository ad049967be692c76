#include "tune/regime.h"

#include <string>
#include <vector>

#include "core/problem_signature.h"

namespace jitgemm::tune {

const char* RegimeName(Regime regime) {
  return regime == Regime::kResident ? "resident" : "streaming";
}

std::vector<Regime> RegimesToTime(TimingRegime declared, int64_t reused_bytes, int64_t l2_bytes,
                                  int64_t call_bytes) {
  switch (declared) {
    case TimingRegime::kStreaming:
      return {Regime::kStreaming};
    case TimingRegime::kResident:
      return {Regime::kResident};
    case TimingRegime::kAuto:
      break;
  }
  const bool minor_weight =
      call_bytes > kResidentMinCallL2s * l2_bytes &&
      static_cast<double>(reused_bytes) < kResidentMinShare * static_cast<double>(call_bytes);
  if (l2_bytes > 0 && reused_bytes <= l2_bytes && !minor_weight) {
    return {Regime::kStreaming, Regime::kResident};
  }
  return {Regime::kStreaming};
}

int64_t ReusedBytes(const GemmProblem& p) {
  return static_cast<int64_t>(OperandSpanBytes(p.b, p.k, BColumns(p), p.batch_count));
}

int64_t CallBytes(const GemmProblem& p) {
  const int64_t mn = p.m * p.n * p.batch_count;
  int64_t bytes = p.m * p.k * p.batch_count * DataTypeSize(p.a.type) + ReusedBytes(p) +
                  mn * DataTypeSize(p.d.type);
  if (p.epilogue.beta != 0.0f) bytes += mn * DataTypeSize(p.c.type);
  return bytes;
}

std::vector<std::string> RegimeNames(const std::vector<Regime>& regimes) {
  std::vector<std::string> out;
  for (Regime r : regimes) out.push_back(RegimeName(r));
  return out;
}

}  // namespace jitgemm::tune
