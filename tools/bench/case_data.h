// One benchmark case's operands on host and device: random inputs from the
// case's name, B in as many device copies as the rotation and the streaming
// regime need (memory permitting), and the [gate | up] buffer a gated
// problem's cuBLAS columns write first.
//
// Thread safety: a CaseData belongs to one case at a time.
#ifndef JITGEMM_TOOLS_BENCH_CASE_DATA_H_
#define JITGEMM_TOOLS_BENCH_CASE_DATA_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "jitgemm/options.h"
#include "jitgemm/problem.h"
#include "tools/bench/cuda_util.h"
#include "tools/bench/host_data.h"
#include "tools/bench/suites.h"

namespace jitgemm::bench {

// The inputs and output of one case, on host and device. B has `rotate`
// identical device copies that consecutive calls cycle through.
struct CaseData {
  GemmProblem p;
  Options options;  // of the jitgemm columns
  HostBuffer a, b, c, bias;
  DeviceBuffer da, dc, dd, dbias;
  std::vector<DeviceBuffer> db;
  int64_t d_elements = 0;
  // Gated problems: the [gate | up] product the cuBLAS columns write first
  // (HiddenProblem), and its element count.
  DeviceBuffer dh;
  int64_t h_elements = 0;
  // How many of the B copies the calls cycle through: read when a graph is
  // captured, so each graph keeps the rotation it was captured with.
  int rotation = 1;

  const void* A() const { return da.get(); }
  const void* B(int iter) const { return db[iter % rotation].get(); }
  const void* C() const { return p.epilogue.beta != 0.0f ? dc.get() : nullptr; }
  void* D() const { return dd.get(); }
  void* H() const { return dh.get(); }
  const void* Bias() const { return p.epilogue.bias != BiasMode::kNone ? dbias.get() : nullptr; }
  size_t DBytes() const { return d_elements * DataTypeSize(p.d.type); }
  size_t HBytes() const { return h_elements * DataTypeSize(p.d.type); }
};

inline bool Gated(const GemmProblem& p) { return p.epilogue.gate == Gate::kHalves; }

// A problem's product alone (alpha kept; no C, bias, activation or gate)
// into a packed row-major buffer of D's type with `cols` columns: the whole
// [gate | up] product of a gated problem (cols = 2N), or one half (N).
GemmProblem PlainProduct(const GemmProblem& p, int64_t cols);
GemmProblem HiddenProblem(const GemmProblem& p);

// `base` advanced by `elements` of `type`.
const void* Offset(const void* base, int64_t elements, DataType type);

// Fills `data` for `bc`: B rotated over `rotate` copies (fewer if memory is
// short, in *rotate_used) and, with `regimes`, enough copies to stream it past
// the L2 (*streaming_copies; 0 without).
absl::Status Prepare(const BenchCase& bc, int rotate, bool regimes, CaseData& data,
                     int* rotate_used, int* streaming_copies);

}  // namespace jitgemm::bench

#endif  // JITGEMM_TOOLS_BENCH_CASE_DATA_H_
