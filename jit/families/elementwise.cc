// Host side of kernels_src/epilogue/bias_activation.cuh: the bias and
// activation pass that completes a cuBLAS product whose epilogue cuBLASLt
// cannot do (GELU-erf, SiLU, a bias on the other axis).
#include <vector>

#include "jit/families/families.h"
#include "jit/family.h"

namespace jitgemm::jit {
namespace {

class ElementwiseFamily final : public KernelFamily {
 public:
  Family id() const override { return Family::kElementwise; }
  const char* header() const override { return "jitgemm/epilogue/bias_activation.cuh"; }
  const char* kernel_template() const override { return "jitgemm::epilogue::BiasActivation"; }

  absl::Status Supports(const GemmProblem& p, const KernelConfig& c,
                        const TargetInfo& target) const override {
    if (c.family != Family::kElementwise) return absl::InvalidArgumentError("not elementwise");
    const int64_t outer = p.d.layout == Layout::kRowMajor ? p.m : p.n;
    if (outer > 65535 || p.batch_count > 65535) {
      return absl::UnimplementedError("elementwise grid limited to 65535 lines and batches");
    }
    return absl::OkStatus();
  }

  LaunchShape Shape(const GemmProblem& p, const KernelConfig& c,
                    const TargetInfo& target) const override {
    const int64_t inner = p.d.layout == Layout::kRowMajor ? p.n : p.m;
    const int64_t outer = p.d.layout == Layout::kRowMajor ? p.m : p.n;
    const int threads = c.warps_m * 32;
    LaunchShape s;
    s.grid[0] = static_cast<uint32_t>((inner + threads - 1) / threads);
    s.grid[1] = static_cast<uint32_t>(outer);
    s.grid[2] = static_cast<uint32_t>(p.batch_count);
    s.block[0] = threads;
    s.pdl = c.pdl;
    return s;
  }

  std::vector<KernelConfig> Candidates(const GemmProblem& p, const TargetInfo& target,
                                       TuningPolicy policy) const override {
    KernelConfig c;
    c.family = Family::kElementwise;
    const int64_t inner = p.d.layout == Layout::kRowMajor ? p.n : p.m;
    c.warps_m = inner >= 256 ? 8 : inner >= 64 ? 2 : 1;  // 256, 64 or 32 threads
    c.warps_n = 1;
    c.block_m = c.block_n = c.block_k = 1;
    return {c};
  }
};

}  // namespace

const KernelFamily& ElementwiseFamilyInstance() {
  static const ElementwiseFamily kFamily;
  return kFamily;
}

}  // namespace jitgemm::jit
