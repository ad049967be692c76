// Benchmark cases from manifests (docs/manifest.md), such as one a model run
// wrote with JITGEMM_RECORD: every problem against cuBLAS (cublas_mm, and
// addmm_act / lt_bias_act where it has a bias or an activation) with the jit
// and auto columns planned with the manifest's options, so that a user sees
// what jitgemm does for their own shapes before deploying it.
//
// Thread safety: plain functions.
#ifndef JITGEMM_TOOLS_BENCH_MANIFEST_CASES_H_
#define JITGEMM_TOOLS_BENCH_MANIFEST_CASES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tools/bench/suites.h"

namespace jitgemm::bench {

// The values of every --manifest on the command line, in order, each split at
// commas (the flag may repeat, which Abseil's flags do not collect: the last
// would win). Reads `--manifest=V`, `--manifest V` and the one-dash forms;
// stops at "--".
std::vector<std::string> ManifestFlagValues(int argc, const char* const* argv);

// True when --`name` (or -`name`) appears before any "--": with --manifest,
// the default suites run only when --suite is given.
bool FlagGiven(int argc, const char* const* argv, absl::string_view name);

// One case per problem of the manifest text, in suite "manifest:<name>"
// (`name`: the file's base name without ".json"), labelled "<problem name> (<DebugString>)",
// or the DebugString alone for a problem without a name. InvalidArgument naming the problem for a
// problem ValidateProblem refuses, or the parser's error.
absl::StatusOr<std::vector<BenchCase>> ManifestTextCases(const std::string& json,
                                                         absl::string_view name);

// ManifestTextCases of the file at `path`, errors prefixed with the path.
absl::StatusOr<std::vector<BenchCase>> ManifestFileCases(const std::string& path);

}  // namespace jitgemm::bench

#endif  // JITGEMM_TOOLS_BENCH_MANIFEST_CASES_H_
