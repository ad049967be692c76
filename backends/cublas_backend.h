// The cuBLASLt backend: serves a plan with one cublasLtMatmul call, using
// Lt's own epilogue (BIAS, RELU, RELU_BIAS, GELU, GELU_BIAS) where the
// problem's epilogue maps onto one, and otherwise the product (with Lt's BIAS
// epilogue when the bias lies on Lt's axis) followed by one elementwise pass
// (the activation, and the bias Lt did not add) made by an
// ElementwiseEpilogueFactory.
//
// A gated problem (Gate::kHalves) takes two steps: one cublasLtMatmul of A
// with all 2N columns of B (and the bias by Lt's BIAS epilogue where it lies
// on Lt's axis) into a [gate | up] workspace the backend allocates at
// creation (M x 2N x batch elements of D's type, jit/families/gate.h), then
// the gate pass the factory makes for the gated problem, which writes
// D = act(gate) * up in D's own layout. Describe() then reads
// "cublasLt ... gated: [gate | up] ... + jit gemm_gate_...".
//
//   absl::StatusOr<std::unique_ptr<Backend>> backend =
//       CreateCublasBackend(problem, options, MakeJitElementwiseEpilogue);
//   if (!backend.ok()) return backend.status();
//   JITGEMM_RETURN_IF_ERROR((*backend)->Run(pointers, stream));
//
// All slow work happens in CreateCublasBackend: the per-device cuBLASLt handle
// (created once per device for the whole process), descriptors, the
// algorithm heuristic, a 32 MiB workspace owned by the backend (and the
// [gate | up] workspace of a gated problem). Run only
// calls cublasLtMatmul (and the elementwise pass): no allocation, no
// synchronisation, so it may run inside CUDA graph capture.
//
// Workspace and streams: every run uses the backend's workspace with the
// heuristic's best algorithm, so runs of one backend must not overlap in time
// on different streams (as for every plan, see plan.h); runs on one stream,
// and graph replays on it, are always ordered.
//
// Thread safety: Run is const and may be called from many threads at once.
#ifndef JITGEMM_BACKENDS_CUBLAS_BACKEND_H_
#define JITGEMM_BACKENDS_CUBLAS_BACKEND_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "backends/backend.h"
#include "jitgemm/options.h"
#include "jitgemm/pointers.h"
#include "jitgemm/problem.h"

namespace jitgemm {

// The elementwise pass that completes a cuBLAS product whose epilogue Lt
// cannot do: for every batch b, row i and column j of the problem's D,
//
//   D[b][i][j] = act(D[b][i][j] + bias[b][i or j])
//
// with the bias mode, bias_batch_stride and activation of the problem it was
// made for, computed in fp32 and stored in D's type. alpha, beta and C are
// already applied. For a gated problem it is the gate pass instead, which
// reads the [gate | up] product from the workspace Lt wrote:
//
//   D[b][i][j] = act(W[b][i][j] + bias[j]) * (W[b][i][N + j] + bias[N + j])
//
// Thread safety: Run is const, may be called concurrently and must obey the
// Backend::Run rules (no allocation, no sync, capture-safe).
class ElementwiseEpilogue {
 public:
  virtual ~ElementwiseEpilogue() = default;
  // `product` is where Lt wrote: `d` itself for the in-place pass, the
  // workspace W for the gate pass. `bias` is null when the problem has no bias.
  virtual absl::Status Run(const void* product, void* d, const void* bias,
                           CUstream stream) const = 0;
  // e.g. "jit gemm_elementwise_bf16_rc_r_1x8x1_w8x1_s1_bias_row_gelu_erf".
  virtual std::string Describe() const = 0;
};

// Makes the elementwise pass for a canonical, valid problem (of which only
// m, n, batch_count, d and epilogue.bias / bias_batch_stride / activation /
// gate matter; a gated problem needs the gate pass). CreateCublasBackend
// calls it, never Run, with the problem's bias removed when Lt's epilogue
// adds it (backends::ElementwiseProblem, backends::GatePassProblem).
using ElementwiseEpilogueFactory =
    std::function<absl::StatusOr<std::unique_ptr<ElementwiseEpilogue>>(const GemmProblem& problem,
                                                                       const Options& options)>;

// The factory used when none is given: returns Unimplemented (so a problem
// that needs a pass, gated problems among them, has no cuBLAS backend).
absl::StatusOr<std::unique_ptr<ElementwiseEpilogue>> UnimplementedElementwiseEpilogue(
    const GemmProblem& problem, const Options& options);

// Creates the cuBLASLt backend for a canonical, valid problem on the current
// device. Errors: FailedPrecondition when there is no usable CUDA device or
// driver; Unimplemented when cuBLASLt has no kernel for the type combination
// or the elementwise pass cannot be made; Internal for other cuBLAS / CUDA
// failures. `options.allow_tf32` selects CUBLAS_COMPUTE_32F_FAST_TF32 for f32
// inputs; `options.pointer_alignment`, lowered by each operand's leading
// dimension and batch stride (core/operand_alignment.h), bounds the alignment
// Lt may assume.
// `algorithm` picks the heuristic's n-th suggestion (0: its first choice);
// NotFound when cuBLASLt offers fewer. The tuner times a few of them.
// `activation_in_pass`: where Lt's epilogue would apply the activation, Lt
// computes the product (with its bias) and the elementwise pass activates
// (backends::WithActivationInPass); NotFound where Lt's epilogue has no
// activation to move.
absl::StatusOr<std::unique_ptr<Backend>> CreateCublasBackend(
    const GemmProblem& problem, const Options& options,
    const ElementwiseEpilogueFactory& elementwise, int algorithm = 0,
    bool activation_in_pass = false);

// Same, with UnimplementedElementwiseEpilogue.
absl::StatusOr<std::unique_ptr<Backend>> CreateCublasBackend(const GemmProblem& problem,
                                                             const Options& options);

}  // namespace jitgemm

#endif  // JITGEMM_BACKENDS_CUBLAS_BACKEND_H_
