#include "api/src/record.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "api/src/manifest.h"
#include "core/options_signature.h"
#include "core/problem_signature.h"

namespace jitgemm {
namespace {

std::string RecordSignature(const GemmProblem& problem, const Options& options) {
  return absl::StrCat(ProblemSignature(Canonicalize(problem)), " | ", OptionsSignature(options));
}

}  // namespace

absl::Status AppendToManifest(const std::string& path, const GemmProblem& problem,
                              const Options& options) {
  const std::string lock_path = path + ".lock";
  const int lock_fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd < 0) return absl::UnavailableError(absl::StrCat("cannot open ", lock_path));
  ::flock(lock_fd, LOCK_EX);  // without a lock only concurrent recorders can lose entries
  Manifest manifest;
  manifest.options = options;
  absl::Status status = absl::OkStatus();
  {
    std::ifstream in(path);
    if (in) {
      std::stringstream text;
      text << in.rdbuf();
      auto parsed = ParseManifest(text.str());
      if (parsed.ok()) {
        manifest = *std::move(parsed);
      } else if (!text.str().empty()) {
        status = absl::DataLossError(absl::StrCat(
            path, " is not a manifest; not overwriting it: ", parsed.status().message()));
      }
    }
  }
  if (status.ok()) {
    // A problem planned with other options is another plan: other kernels
    // (constant_b, pointer_alignment, pdl) or another tuning decision (regime,
    // win_margin), so it is recorded again, with its own options.
    const std::string signature = RecordSignature(problem, options);
    bool present = false;
    for (const auto& e : manifest.problems) {
      present = present || RecordSignature(e.problem, manifest.OptionsOf(e)) == signature;
    }
    if (!present) {
      std::optional<Options> own;
      if (OptionsSignature(options) != OptionsSignature(manifest.options)) own = options;
      manifest.problems.push_back({DebugString(problem), problem, own});
      const std::string tmp = absl::StrCat(path, ".tmp.", ::getpid());
      std::ofstream out(tmp, std::ios::trunc);
      out << ManifestToJson(manifest) << "\n";
      out.close();
      if (!out || std::rename(tmp.c_str(), path.c_str()) != 0) {
        std::remove(tmp.c_str());
        status = absl::UnavailableError(absl::StrCat("cannot write ", path));
      }
    }
  }
  ::flock(lock_fd, LOCK_UN);
  ::close(lock_fd);
  return status;
}

void RecordProblem(const GemmProblem& problem, const Options& options) {
  static const char* const kPath = std::getenv("JITGEMM_RECORD");
  if (kPath == nullptr || *kPath == '\0') return;
  static absl::Mutex mu(absl::kConstInit);
  static auto* const seen = new absl::flat_hash_set<std::string>();
  static bool warned = false;
  absl::MutexLock lock(&mu);
  if (!seen->insert(RecordSignature(problem, options)).second) return;
  absl::Status s = AppendToManifest(kPath, problem, options);
  if (!s.ok() && !warned) {
    warned = true;
    std::fprintf(stderr, "jitgemm: JITGEMM_RECORD: %s (recording stops warning now)\n",
                 s.ToString().c_str());
  }
}

}  // namespace jitgemm
