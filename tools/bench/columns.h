// The columns of a benchmark case: each a call ready to capture in a graph
// (cuBLAS baselines as frameworks run them, and jitgemm plans) and a line
// saying what it runs.
//
// Thread safety: a Column launches on the case's stream, one case at a time.
#ifndef JITGEMM_TOOLS_BENCH_COLUMNS_H_
#define JITGEMM_TOOLS_BENCH_COLUMNS_H_

#include <string>

#include "absl/status/statusor.h"
#include "tools/bench/case_data.h"
#include "tools/bench/context.h"
#include "tools/bench/graph_timer.h"
#include "tools/bench/suites.h"

namespace jitgemm::bench {

// One column ready to run: the call and what it is.
struct Column {
  LaunchFn launch;
  std::string plan;
  double create_ms = -1;
};

// The column `impl` of the case in `data`, which must outlive it;
// Unimplemented where the column cannot serve the problem.
absl::StatusOr<Column> MakeColumn(Impl impl, const CaseData& data, BenchContext& ctx);

}  // namespace jitgemm::bench

#endif  // JITGEMM_TOOLS_BENCH_COLUMNS_H_
