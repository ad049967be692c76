// The JIT implementation of the elementwise pass that follows a cuBLAS
// product when cuBLASLt has no epilogue for the problem, and of the gate pass
// that follows a gated problem's [gate | up] product (backends/cublas_backend.h):
// the elementwise family for ungated problems, the gate family for gated ones.
#ifndef JITGEMM_BACKENDS_ELEMENTWISE_EPILOGUE_H_
#define JITGEMM_BACKENDS_ELEMENTWISE_EPILOGUE_H_

#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "backends/cublas_backend.h"
#include "jit/family.h"
#include "jit/kernel_config.h"
#include "jitgemm/options.h"
#include "jitgemm/problem.h"

namespace jitgemm {

// The config of the bias + activation kernel (the gate kernel for a gated
// problem) for the problem's D on `target`: 16-byte chunks of D where its
// layout and options.pointer_alignment allow, narrower or scalar otherwise
// (jit::ElementwiseWidth, jit::GateWidth). nullopt when the family offers none.
std::optional<jit::KernelConfig> ElementwiseConfig(const GemmProblem& problem,
                                                   const jit::TargetInfo& target,
                                                   const Options& options);

// Specialises, compiles (or loads from the cache) and loads the elementwise
// kernel of `config` for the problem's D on the current device.
absl::StatusOr<std::unique_ptr<ElementwiseEpilogue>> MakeJitElementwiseEpilogueOf(
    const GemmProblem& problem, const Options& options, const jit::KernelConfig& config);

// Same, with ElementwiseConfig for the current device; Unimplemented when
// there is none.
absl::StatusOr<std::unique_ptr<ElementwiseEpilogue>> MakeJitElementwiseEpilogue(
    const GemmProblem& problem, const Options& options);

}  // namespace jitgemm

#endif  // JITGEMM_BACKENDS_ELEMENTWISE_EPILOGUE_H_
