// The JIT implementation of the elementwise pass that follows a cuBLAS
// product when cuBLASLt has no epilogue for the problem (backends/cublas_backend.h).
#ifndef JITGEMM_BACKENDS_ELEMENTWISE_EPILOGUE_H_
#define JITGEMM_BACKENDS_ELEMENTWISE_EPILOGUE_H_

#include <memory>

#include "absl/status/statusor.h"
#include "backends/cublas_backend.h"
#include "jitgemm/options.h"
#include "jitgemm/problem.h"

namespace jitgemm {

// Specialises, compiles (or loads from the cache) and loads the bias +
// activation kernel for the problem's D on the current device.
absl::StatusOr<std::unique_ptr<ElementwiseEpilogue>> MakeJitElementwiseEpilogue(
    const GemmProblem& problem, const Options& options);

}  // namespace jitgemm

#endif  // JITGEMM_BACKENDS_ELEMENTWISE_EPILOGUE_H_
