// A manifest lists GEMM problems (and the options to plan them with) as JSON:
// the input of jitgemm-warmup and the output of JITGEMM_RECORD. Schema in
// docs/manifest.md.
//
// Thread safety: pure functions.
#ifndef JITGEMM_API_SRC_MANIFEST_H_
#define JITGEMM_API_SRC_MANIFEST_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "jitgemm/options.h"
#include "jitgemm/problem.h"

namespace jitgemm {

struct ManifestEntry {
  std::string name;  // optional label
  GemmProblem problem;
  // The problem's own options (its "options" object applied over the
  // manifest's), where it has them; else it is planned with the manifest's.
  std::optional<Options> options = std::nullopt;
};

struct Manifest {
  Options options;  // defaults where the manifest is silent
  std::vector<ManifestEntry> problems;

  // What `entry` is planned with.
  const Options& OptionsOf(const ManifestEntry& entry) const {
    return entry.options.has_value() ? *entry.options : options;
  }
};

// Reading is bounded: a larger or deeper text is refused before parsing.
inline constexpr uint64_t kMaxManifestBytes = uint64_t{16} << 20;
inline constexpr int kMaxManifestDepth = 8;

// InvalidArgument naming the JSON path of the first bad field (an unknown
// field, a repeated key, a wrong type or value); never throws. Problems are
// syntax-checked here; ValidateProblem is the caller's.
absl::StatusOr<Manifest> ParseManifest(const std::string& json);

// The text of the manifest file at `path`: NotFound if it cannot be opened,
// InvalidArgument for anything but a regular file (a FIFO, a device) or one
// over kMaxManifestBytes, checked before reading.
absl::StatusOr<std::string> ReadManifestFile(const std::string& path);

std::string ProblemToJson(const GemmProblem& problem, const std::string& name = "");
std::string ManifestToJson(const Manifest& manifest);

}  // namespace jitgemm

#endif  // JITGEMM_API_SRC_MANIFEST_H_
