// A manifest lists GEMM problems (and the options to plan them with) as JSON:
// the input of jitgemm-warmup and the output of JITGEMM_RECORD. Schema in
// docs/manifest.md.
//
// Thread safety: pure functions.
#ifndef JITGEMM_API_SRC_MANIFEST_H_
#define JITGEMM_API_SRC_MANIFEST_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "jitgemm/options.h"
#include "jitgemm/problem.h"

namespace jitgemm {

struct ManifestEntry {
  std::string name;  // optional label
  GemmProblem problem;
};

struct Manifest {
  Options options;  // defaults where the manifest is silent
  std::vector<ManifestEntry> problems;
};

// InvalidArgument naming the JSON path of the first bad field; never throws.
// Problems are syntax-checked here; ValidateProblem is the caller's.
absl::StatusOr<Manifest> ParseManifest(const std::string& json);

std::string ProblemToJson(const GemmProblem& problem, const std::string& name = "");
std::string ManifestToJson(const Manifest& manifest);

}  // namespace jitgemm

#endif  // JITGEMM_API_SRC_MANIFEST_H_
