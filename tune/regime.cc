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
  // A broadcast operand (batch stride 0) is one matrix however many batches
  // read it.
  auto bytes_of = [&](const Operand& op, int64_t elements) {
    return elements * DataTypeSize(op.type) * (op.batch_stride == 0 ? 1 : p.batch_count);
  };
  int64_t bytes = bytes_of(p.a, p.m * p.k) + ReusedBytes(p) + bytes_of(p.d, p.m * p.n);
  if (p.epilogue.beta != 0.0f) bytes += bytes_of(p.c, p.m * p.n);
  return bytes;
}

std::vector<std::string> RegimeNames(const std::vector<Regime>& regimes) {
  std::vector<std::string> out;
  for (Regime r : regimes) out.push_back(RegimeName(r));
  return out;
}

}  // namespace jitgemm::tune
