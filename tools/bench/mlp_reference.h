// The MLP suite's check (tools/bench/mlp.cc): the block's operands on host
// and device, a few sampled (row, group) pairs of h and y computed in float64
// on the host, and the normwise relative error of a column's outputs on
// those rows. Internal to the bench.
//
// Thread safety: plain data and pure functions; CheckOutputs copies from the
// device synchronously.
#ifndef JITGEMM_TOOLS_BENCH_MLP_REFERENCE_H_
#define JITGEMM_TOOLS_BENCH_MLP_REFERENCE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/bench/cuda_util.h"
#include "tools/bench/host_data.h"
#include "tools/bench/mlp.h"

namespace jitgemm::bench::mlp {

constexpr int kMaxSamples = 32;  // (row, group) pairs checked against float64
constexpr double kHiddenTolerance = 1e-2;
constexpr double kOutputTolerance = 1.5e-2;

inline bool Grouped(const MlpShape& s) { return s.groups > 1; }

// Host values of the block's operands, and the device copies every column reads.
struct MlpData {
  HostBuffer x, w_gate, w_up, w_down;
  DeviceBuffer dx, dw_gate, dw_up, dw_gate_up, dw_down;
  // Outputs, shared by the columns (each is checked right after its own run).
  DeviceBuffer h, y, gate, up;
};

// One sampled (row, group) pair: its hidden row and output row in float64.
struct Sample {
  int64_t row = 0, group = 0;
  std::vector<double> hidden, out;
};

// [W_gate | W_up] as the gated plan reads it: per group the K x 2H row-major
// rows side by side (x @ W weights), or torch.cat([W_gate, W_up]) of the
// (H, K) nn.Linear weights.
std::vector<unsigned char> GateUpBytes(const MlpShape& s, const MlpData& d);

// Up to kMaxSamples (row, group) pairs spread over the block, each with its
// h and y rows in float64 from the host operands.
std::vector<Sample> ReferenceSamples(const MlpShape& s, const MlpData& d);

// Normwise relative errors of the sampled rows of h and y.
struct Check {
  double hidden = 0, out = 0;
  bool ok() const { return hidden <= kHiddenTolerance && out <= kOutputTolerance; }
};

// The errors of the bf16 outputs `h` and `y` (device pointers) on `samples`;
// infinite where a sampled value is not finite.
absl::StatusOr<Check> CheckOutputs(const MlpShape& s, const std::vector<Sample>& samples,
                                   const void* h, const void* y);

}  // namespace jitgemm::bench::mlp

#endif  // JITGEMM_TOOLS_BENCH_MLP_REFERENCE_H_
