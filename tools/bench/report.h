// Output of jitgemm-bench: one markdown table per suite (µs per column,
// throughput, speedup of the jitgemm columns over each cuBLAS baseline, what
// the auto plan picked), the notes for every failed cell, and a CSV with one
// line per (case, column).
#ifndef JITGEMM_TOOLS_BENCH_REPORT_H_
#define JITGEMM_TOOLS_BENCH_REPORT_H_

#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "tools/bench/runner.h"

namespace jitgemm::bench {

// Speedup = baseline µs / column µs: above 1 the column is faster.
void PrintTables(const std::vector<CaseResult>& results, std::FILE* out);

absl::Status WriteCsv(const std::vector<CaseResult>& results, const std::string& path);

// The CSV text itself (for tests and for WriteCsv).
std::string CsvText(const std::vector<CaseResult>& results);

}  // namespace jitgemm::bench

#endif  // JITGEMM_TOOLS_BENCH_REPORT_H_
