// A kernel family on the host side: which problems and configs it serves, the
// extra compile-time constants its template needs, how it is launched, and
// which configs the heuristics propose. One implementation per file in
// jit/families/, one template per folder in kernels_src/.
//
// Thread safety: families are stateless singletons; all methods are const.
#ifndef JITGEMM_JIT_FAMILY_H_
#define JITGEMM_JIT_FAMILY_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "jit/kernel_config.h"
#include "jitgemm/options.h"
#include "jitgemm/problem.h"

namespace jitgemm::jit {

// What the target device is: `sm` is 10 * major + minor (80, 86, 89, 90).
struct TargetInfo {
  int sm = 90;
  int multiprocessors = 132;
  int shared_bytes_per_block_optin = 227 * 1024;
};

class KernelFamily {
 public:
  virtual ~KernelFamily() = default;
  virtual Family id() const = 0;
  // The embedded header that defines the template, e.g. "jitgemm/simt/gemm_simt.cuh".
  virtual const char* header() const = 0;
  // The template's qualified name, e.g. "jitgemm::simt::GemmSimt".
  virtual const char* kernel_template() const = 0;

  // OK when this config of the family computes this (canonical, valid)
  // problem correctly on the target; otherwise why not (Unimplemented or
  // InvalidArgument).
  virtual absl::Status Supports(const GemmProblem& problem, const KernelConfig& config,
                                const TargetInfo& target) const = 0;

  // Launch geometry for a supported (problem, config). `m` is the run-time M.
  virtual LaunchShape Shape(const GemmProblem& problem, const KernelConfig& config,
                            const TargetInfo& target) const = 0;

  // Configs to consider, best guess first. kHeuristic wants one, kFast at
  // most 8, kExhaustive all. Each returned config must be Supported.
  virtual std::vector<KernelConfig> Candidates(const GemmProblem& problem, const TargetInfo& target,
                                               TuningPolicy policy) const = 0;

  // True when the config's kernel exists only in the sm_90a target (wgmma,
  // clusters, bulk copies) although the family also serves earlier GPUs: its
  // name then carries "_sm90a" after the family (an sm_90a-only family says
  // so in its own name, as gemm_sm90_ does).
  virtual bool Sm90aOnly(const KernelConfig& config) const { return false; }

  // Family-specific lines added to the spec struct (each "static constexpr ...;").
  // The common fields of kernels_src/common/args.cuh are written by the specialiser.
  virtual std::string ExtraSpecFields(const GemmProblem& problem,
                                      const KernelConfig& config) const {
    return "";
  }
};

const KernelFamily& GetFamily(Family family);

}  // namespace jitgemm::jit

#endif  // JITGEMM_JIT_FAMILY_H_
