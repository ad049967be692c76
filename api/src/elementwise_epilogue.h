// The JIT implementation of the elementwise pass that follows a cuBLAS
// product when cuBLASLt has no epilogue for the problem (tune/cublas_backend.h).
#ifndef JITGEMM_API_SRC_ELEMENTWISE_EPILOGUE_H_
#define JITGEMM_API_SRC_ELEMENTWISE_EPILOGUE_H_

#include <memory>

#include "absl/status/statusor.h"
#include "jitgemm/options.h"
#include "jitgemm/problem.h"
#include "tune/cublas_backend.h"

namespace jitgemm {

// Specialises, compiles (or loads from the cache) and loads the bias +
// activation kernel for the problem's D on the current device.
absl::StatusOr<std::unique_ptr<ElementwiseEpilogue>> MakeJitElementwiseEpilogue(
    const GemmProblem& problem, const Options& options);

}  // namespace jitgemm

#endif  // JITGEMM_API_SRC_ELEMENTWISE_EPILOGUE_H_
