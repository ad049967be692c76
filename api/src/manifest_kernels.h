// The kernels a set of manifests needs for one target: what jitgemm-warmup
// compiles, what `jitgemm-warmup --check` looks for, and what
// `jitgemm-cache export --manifest` copies. One function computes them for
// all three, the same way Plan::Create does at run time (Canonicalize,
// PlanProblem, ProposeConfigs with the manifest's options, Specialize, KeyText), so the
// keys agree. A gated problem also needs the gate pass of its cuBLAS route
// unless its options say JIT only.
//
// It is also all that the tools ask of the kernel store (compile or find one
// kernel, the store's counters, the fields every kernel key carries), so that
// no tool includes a jit/ header.
//
// Thread safety: pure functions (LoadManifestKernels reads files), except
// GetKernelBinary, which is as thread-safe as the kernel store.
#ifndef JITGEMM_API_SRC_MANIFEST_KERNELS_H_
#define JITGEMM_API_SRC_MANIFEST_KERNELS_H_

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cache/key.h"
#include "jit/family.h"
#include "jit/kernel_store.h"
#include "jit/specializer.h"
#include "jitgemm/options.h"

namespace jitgemm::tools {

struct TargetArch {
  std::string arch;  // "sm_90a"
  jit::TargetInfo target;
  bool offline = true;  // from --arch, not from a GPU
};

// `arch` ("sm_90a"), or the current GPU's when empty (a GPU is then needed).
// `sms` > 0 replaces the SM count (offline the flagship part is assumed:
// 132 on sm_90, 108 below), for parts such as the H100 PCIe (114 SMs) whose
// heuristics pick other kernels. InvalidArgument for a bad arch,
// FailedPrecondition when no arch is given and no GPU can be asked.
absl::StatusOr<TargetArch> ResolveTarget(const std::string& arch, int sms);

// "" -> nullopt (use each manifest's own), "heuristic" | "fast" | "exhaustive";
// InvalidArgument otherwise.
absl::StatusOr<std::optional<TuningPolicy>> ParseTuningOverride(const std::string& text);

struct ManifestKernel {
  std::string manifest;  // file it came from (first one, if several need it)
  std::string problem;   // its name, or DebugString of the problem
  jit::KernelSource source;
};

struct ManifestKernels {
  int problems = 0;
  std::vector<std::string> invalid;     // one line per invalid problem
  std::vector<ManifestKernel> kernels;  // distinct, in manifest order
  std::vector<std::string> signatures;  // ProblemSignature of each valid problem
};

// Reads and parses every manifest (an error names the file) and lists the
// kernels of their valid problems for `target`. Problems whose options say
// cuBLAS only need no kernel, except the gate pass of a gated problem.
absl::StatusOr<ManifestKernels> LoadManifestKernels(const std::vector<std::string>& paths,
                                                    const TargetArch& target,
                                                    std::optional<TuningPolicy> tuning);

// The cache key of `kernel` for `arch`, with the NVRTC version the library
// would use (jit::NvrtcVersionForKey).
absl::StatusOr<cache::CacheKey> KernelCacheKey(const jit::KernelSource& kernel,
                                               const std::string& arch);

// What one GetKernelBinary call did.
struct KernelBuild {
  bool compiled = false;   // NVRTC ran (false: found in memory or a cache)
  double compile_ms = -1;  // when compiled
};

// Finds `kernel` for `arch` in memory or the caches, else compiles it (when
// `allow_compile`) and stores it: the path Plan::Create takes, with no GPU.
absl::StatusOr<KernelBuild> GetKernelBinary(const jit::KernelSource& kernel,
                                            const std::string& arch, bool allow_compile);

// The kernel store's counters in this process.
jit::KernelStoreCounters KernelStoreCounters();

// Fields every kernel key of this library carries.
int LibraryAbiVersion();
// Every sources hash a kernel key of this build can carry.
const std::set<std::string>& KernelSourcesHashes();
// Whether this process has opened NVRTC (jit::NvrtcLoaded).
bool NvrtcOpened();

// The NVRTC version keys use (jit::NvrtcVersionForKey).
absl::StatusOr<int> NvrtcVersionForKey();

}  // namespace jitgemm::tools

#endif  // JITGEMM_API_SRC_MANIFEST_KERNELS_H_
