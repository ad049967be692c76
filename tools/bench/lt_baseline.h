// The cuBLAS baselines jitgemm-bench measures itself, straight through
// cuBLASLt and independent of the library's own cuBLAS backend: the plain
// product, the product with Lt's BIAS epilogue, and with RELU_BIAS or GELU_BIAS (tanh GELU).
//
// Only what the suites need: D of either order (a row-major D computed as
// D^T = B^T A^T, a column-major one as itself), A and B of either order,
// strided batches, a per-column bias of a row-major D (nn.Linear's).
//
// Thread safety: Run sets the bias pointer on the descriptor; one thread.
#ifndef JITGEMM_TOOLS_BENCH_LT_BASELINE_H_
#define JITGEMM_TOOLS_BENCH_LT_BASELINE_H_

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "jitgemm/options.h"
#include "jitgemm/problem.h"

namespace jitgemm::bench {

enum class LtBaselineEpilogue { kNone, kBias, kReluBias, kGeluBias };

// What a baseline may assume of every pointer of a case planned with
// `options`: cudaMalloc's 256 bytes, unless the options promise less than 16
// (the most the library ever assumes), when a caller with such pointers must
// tell cuBLASLt the same.
int BaselinePointerAlignment(const Options& options);

class LtBaseline {
 public:
  // REQUIRES: problem canonical and valid; a bias epilogue only with a
  // per-column bias of a row-major D, or a per-row one of a column-major D.
  // `pointer_alignment` is what Lt may assume of every pointer (the bench's
  // buffers are cudaMalloc's); a case planned with a smaller
  // Options::pointer_alignment gets a baseline told the same, because a caller
  // whose pointers keep only that must tell cuBLASLt so too.
  static absl::StatusOr<std::unique_ptr<LtBaseline>> Create(cublasLtHandle_t handle,
                                                            const GemmProblem& problem,
                                                            LtBaselineEpilogue epilogue,
                                                            void* workspace, size_t workspace_bytes,
                                                            int pointer_alignment = 256);
  ~LtBaseline();

  absl::Status Run(const void* a, const void* b, const void* c, void* d, const void* bias,
                   cudaStream_t stream);

  // e.g. "cublasLt RELU_BIAS, workspace 1048576 B".
  const std::string& describe() const { return describe_; }

 private:
  LtBaseline() = default;

  cublasLtHandle_t handle_ = nullptr;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, c_ = nullptr, d_ = nullptr;
  cublasLtMatmulHeuristicResult_t algo_ = {};
  bool bias_ = false;
  bool swap_ab_ = false;  // a column-major D, computed as its transpose
  float alpha_ = 1.0f, beta_ = 0.0f;
  void* workspace_ = nullptr;
  std::string describe_;
};

// "major.minor.patch" of the loaded cuBLASLt.
std::string CublasLtVersionString();

}  // namespace jitgemm::bench

#endif  // JITGEMM_TOOLS_BENCH_LT_BASELINE_H_
