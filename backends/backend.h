// The interface every plan implementation sits behind: a JIT kernel or cuBLAS.
#ifndef JITGEMM_BACKENDS_BACKEND_H_
#define JITGEMM_BACKENDS_BACKEND_H_

#include <string>

#include "absl/status/status.h"
#include "jitgemm/pointers.h"

namespace jitgemm {

// Thread safety: Run is const and may be called concurrently. Run must not
// allocate, synchronise, compile or touch files (it may run in graph capture).
class Backend {
 public:
  virtual ~Backend() = default;
  // Pointers are already validated against the problem by the caller.
  virtual absl::Status Run(const GemmPointers& pointers, CUstream stream) const = 0;
  // e.g. "cublasLt RELU_BIAS" or "jit gemm_sm80_f16_64x64x32_w2x2_s3".
  virtual std::string Describe() const = 0;
};

}  // namespace jitgemm

#endif  // JITGEMM_BACKENDS_BACKEND_H_
