// The specialiser turns (problem, kernel config) into a tiny CUDA translation
// unit: a JitgemmSpec struct of exact compile-time constants and one
// instantiation of the family's template (contract: kernels_src/common/args.cuh).
//
// It also makes the canonical key text of that kernel: library ABI version,
// NVRTC version, exact arch, compile options, hash of the embedded sources the
// unit includes (jit/source_closure.h), and the generated source itself (which spells out family,
// config and every problem field the code depends on). No paths, hostnames or times enter it.
//
// Thread safety: pure functions.
#ifndef JITGEMM_JIT_SPECIALIZER_H_
#define JITGEMM_JIT_SPECIALIZER_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "core/operand_alignment.h"
#include "jit/family.h"
#include "jit/kernel_config.h"
#include "jitgemm/problem.h"

namespace jitgemm::jit {

// Bumped whenever the generated code's meaning changes without any embedded
// source changing (e.g. the spec contract or the specialiser).
inline constexpr int kLibraryAbiVersion = 1;

struct KernelSource {
  std::string kernel_name;      // readable, e.g. gemm_sm80_f16_rr_r_64x64x32_w2x2_s3_bias_col_relu
  std::string source;           // the translation unit
  std::string name_expression;  // "<template><JitgemmSpec>"
};

// REQUIRES: `problem` is valid and canonical; family.Supports(problem, config) is OK.
KernelSource Specialize(const GemmProblem& problem, const KernelConfig& config,
                        const KernelFamily& family, const LaunchShape& shape,
                        int pointer_alignment);

// The one recipe from (problem, config, target) to the kernel: the family's
// launch shape for the target, then Specialize. Plans, their parallel
// precompile, the warm-up tool and bundle export all use it, so they agree
// on every key. REQUIRES as for Specialize.
KernelSource SpecializeFor(const GemmProblem& problem, const KernelConfig& config,
                           const TargetInfo& target, int pointer_alignment);

// XXH3-64 of every embedded kernel source (names and texts), as 16 hex digits:
// the library's whole kernel text, part of a tuning record's library version.
// Kernel keys carry only their own sources' hash (KernelSourcesHash).
const std::string& EmbeddedSourcesHash();

// The canonical key text for compiling `source` for `arch` with NVRTC `nvrtc_version`.
std::string KeyText(const KernelSource& source, const std::string& arch, int nvrtc_version);

}  // namespace jitgemm::jit

#endif  // JITGEMM_JIT_SPECIALIZER_H_
