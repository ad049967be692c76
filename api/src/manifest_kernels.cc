#include "api/src/manifest_kernels.h"

#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "api/src/manifest.h"
#include "backends/cublas_mapping.h"
#include "backends/elementwise_epilogue.h"
#include "core/option_names.h"
#include "core/planned_problem.h"
#include "core/problem_signature.h"
#include "core/status_macros.h"
#include "jit/candidates.h"
#include "jit/disk_tier.h"
#include "jit/driver_api.h"
#include "jit/launcher.h"
#include "jit/nvrtc_compiler.h"
#include "jit/source_closure.h"
#include "jitgemm/problem.h"

namespace jitgemm::tools {

absl::StatusOr<TargetArch> ResolveTarget(const std::string& arch, int sms) {
  TargetArch out;
  if (arch.empty()) {
    absl::StatusOr<const jit::DriverApi*> api = jit::GetDriver();
    if (!api.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("--arch not given and no GPU to ask (", api.status().message(), ")"));
    }
    JITGEMM_ASSIGN_OR_RETURN(jit::DeviceContext device, jit::CurrentDevice(**api));
    out.arch = device.arch;
    out.target = device.target;
    out.offline = false;
  } else {
    absl::StatusOr<int> sm = jit::ParseArch(arch);
    if (!sm.ok())
      return absl::InvalidArgumentError(absl::StrCat("--arch: ", sm.status().message()));
    out.arch = arch;
    out.target = jit::OfflineTarget(*sm);
  }
  if (sms < 0) return absl::InvalidArgumentError("--sms must be positive");
  if (sms > 0) out.target.multiprocessors = sms;
  return out;
}

absl::StatusOr<std::optional<TuningPolicy>> ParseTuningOverride(const std::string& text) {
  if (text.empty()) return std::optional<TuningPolicy>();
  if (auto tuning = ParseTuningPolicy(text)) return tuning;
  return absl::InvalidArgumentError(
      absl::StrCat("--tuning must be heuristic, fast or exhaustive, not '", text, "'"));
}

absl::StatusOr<ManifestKernels> LoadManifestKernels(const std::vector<std::string>& paths,
                                                    const TargetArch& target,
                                                    std::optional<TuningPolicy> tuning) {
  ManifestKernels out;
  // The source text and name expression decide the key for a given arch.
  std::set<std::pair<std::string, std::string>> seen;
  std::set<std::string> signatures;
  for (const std::string& path : paths) {
    absl::StatusOr<std::string> text = ReadManifestFile(path);
    if (!text.ok()) return text.status();
    absl::StatusOr<Manifest> manifest = ParseManifest(*text);
    if (!manifest.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": ", manifest.status().message()));
    }
    for (const ManifestEntry& e : manifest->problems) {
      Options options = manifest->OptionsOf(e);
      if (tuning) options.tuning = *tuning;
      ++out.problems;
      if (absl::Status s = ValidateProblem(e.problem); !s.ok()) {
        out.invalid.push_back(absl::StrCat(path, ": problem ", e.name, ": ", s.ToString()));
        continue;
      }
      const GemmProblem asked = Canonicalize(e.problem);
      const GemmProblem p = PlanProblem(asked, options).problem;
      if (signatures.insert(ProblemSignature(p)).second) {
        out.signatures.push_back(ProblemSignature(p));
      }
      auto add = [&](const GemmProblem& q, const jit::KernelConfig& c) {
        jit::KernelSource source =
            jit::SpecializeFor(q, c, target.target, options.pointer_alignment);
        if (!seen.emplace(source.source, source.name_expression).second) return;
        out.kernels.push_back(
            {path, e.name.empty() ? DebugString(asked) : e.name, std::move(source)});
      };
      if (options.backend != BackendPolicy::kJitOnly) {
        // The passes of the cuBLAS routes (the gate pass, docs/gated.md; the
        // elementwise pass), as CreateCublasBackend makes them: without them in
        // the cache, JITGEMM_JIT=off has no such cuBLAS plan.
        const std::optional<jit::KernelConfig> pass = ElementwiseConfig(p, target.target, options);
        if (pass.has_value()) {
          for (const GemmProblem& q : backends::CublasRoutePasses(p, options.allow_tf32)) {
            add(q, *pass);
          }
        }
      }
      if (options.backend == BackendPolicy::kCublasOnly) continue;
      for (const jit::KernelConfig& c : jit::ProposeConfigs(p, target.target, options)) add(p, c);
    }
  }
  return out;
}

absl::StatusOr<cache::CacheKey> KernelCacheKey(const jit::KernelSource& kernel,
                                               const std::string& arch) {
  JITGEMM_ASSIGN_OR_RETURN(const int nvrtc, jit::NvrtcVersionForKey());
  return cache::MakeCacheKey(jit::KeyText(kernel, arch, nvrtc));
}

absl::StatusOr<KernelBuild> GetKernelBinary(const jit::KernelSource& kernel,
                                            const std::string& arch, bool allow_compile) {
  KernelBuild out;
  jit::GetOptions get;
  get.compiled = &out.compiled;
  get.allow_compile = allow_compile;
  JITGEMM_ASSIGN_OR_RETURN(auto binary, jit::KernelStore::Global().GetBinary(kernel, arch, get));
  if (out.compiled) out.compile_ms = binary->compile_ms;
  return out;
}

jit::KernelStoreCounters KernelStoreCounters() { return jit::KernelStore::Global().counters(); }

int LibraryAbiVersion() { return jit::kLibraryAbiVersion; }
const std::set<std::string>& KernelSourcesHashes() { return jit::AllKernelSourcesHashes(); }
absl::StatusOr<int> NvrtcVersionForKey() { return jit::NvrtcVersionForKey(); }

bool NvrtcOpened() { return jit::NvrtcLoaded(); }

}  // namespace jitgemm::tools
