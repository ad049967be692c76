// Host side of kernels_src/epilogue/bias_activation.cuh: the bias and
// activation pass that completes a cuBLAS product whose epilogue cuBLASLt
// cannot do (GELU-erf, SiLU, a bias on the other axis).
//
// Config: block_n is the chunk width in elements (the kernel's vector: 16
// bytes where D's lines allow it, 1 for the scalar kernel), so the kernel's
// name says it ("..._1x8x1_w8x1_..."); warps_m * 32 threads a block. The grid
// is a grid-stride loop sized to fill the device once, not one thread per
// element.
#include "jit/families/elementwise.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "jit/families/families.h"
#include "jit/family.h"
#include "jit/specializer.h"

namespace jitgemm::jit {
namespace {

constexpr int kThreads = 256;
// Resident threads an SM holds on every arch the library targets (sm_80+).
constexpr int kThreadsPerSm = 2048;

int64_t Inner(const GemmProblem& p) { return p.d.layout == Layout::kRowMajor ? p.n : p.m; }
int64_t Outer(const GemmProblem& p) { return p.d.layout == Layout::kRowMajor ? p.m : p.n; }

class ElementwiseFamily final : public KernelFamily {
 public:
  Family id() const override { return Family::kElementwise; }
  const char* header() const override { return "jitgemm/epilogue/bias_activation.cuh"; }
  const char* kernel_template() const override { return "jitgemm::epilogue::BiasActivation"; }

  absl::Status Supports(const GemmProblem& p, const KernelConfig& c,
                        const TargetInfo& target) const override {
    if (c.family != Family::kElementwise) return absl::InvalidArgumentError("not elementwise");
    if (p.epilogue.gate != Gate::kNone) {
      // In place over D, it would gate nothing: the gate family does that.
      return absl::InvalidArgumentError(
          "epilogue.gate: the elementwise pass serves ungated problems (the gate family serves "
          "gated ones)");
    }
    // The pointer's part of the promise is checked where it is known
    // (ElementwiseWidth); the kernel static_asserts the whole of it.
    return CheckAccessWidth(p, c.block_n, OperandAlignment(p.d, p.m, p.n, p.batch_count, 16),
                            "D's ld and batch stride");
  }

  LaunchShape Shape(const GemmProblem& p, const KernelConfig& c,
                    const TargetInfo& target) const override {
    return GridStrideShape(p, c, target);
  }

  std::vector<KernelConfig> Candidates(const GemmProblem& p, const TargetInfo& target,
                                       TuningPolicy policy) const override {
    if (p.epilogue.gate != Gate::kNone) return {};
    KernelConfig c;
    c.family = Family::kElementwise;
    c.warps_m = kThreads / 32;
    c.warps_n = 1;
    c.block_m = c.block_k = 1;
    c.block_n = ElementwiseWidth(p, 16);
    return {c};
  }
};

}  // namespace

LaunchShape GridStrideShape(const GemmProblem& p, const KernelConfig& c, const TargetInfo& target) {
  const int threads = c.warps_m * 32;
  const int64_t chunks = (Inner(p) + c.block_n - 1) / c.block_n;
  const int64_t work = chunks * Outer(p) * p.batch_count;
  const int64_t fill = int64_t{target.multiprocessors} * (kThreadsPerSm / threads);
  LaunchShape s;
  s.grid[0] =
      static_cast<uint32_t>(std::max<int64_t>(1, std::min((work + threads - 1) / threads, fill)));
  s.block[0] = threads;
  s.pdl = c.pdl;
  return s;
}

absl::Status CheckAccessWidth(const GemmProblem& p, int width, int aligned_bytes,
                              const char* aligned_by) {
  if (width < 1 || (width & (width - 1)) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("block_n: ", width, " is no power of two"));
  }
  const int64_t bytes = int64_t{width} * DataTypeSize(p.d.type);
  if (width > 1 && (bytes < 4 || bytes > 16 || bytes > aligned_bytes)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "block_n: ", width, " elements (", bytes, " bytes) is no 4, 8 or 16-byte access that ",
        aligned_by, " align (", aligned_bytes, " bytes)"));
  }
  return absl::OkStatus();
}

int AccessWidth(const GemmProblem& p, int aligned_bytes) {
  const int esize = static_cast<int>(DataTypeSize(p.d.type));
  // Narrower than a 32-bit word, a vector saves nothing.
  if (aligned_bytes < 4 || aligned_bytes < 2 * esize) return 1;
  return aligned_bytes / esize;
}

int ElementwiseWidth(const GemmProblem& p, int pointer_alignment) {
  return AccessWidth(p, OperandAlignment(p.d, p.m, p.n, p.batch_count, pointer_alignment));
}

const KernelFamily& ElementwiseFamilyInstance() {
  static const ElementwiseFamily kFamily;
  return kFamily;
}

}  // namespace jitgemm::jit
