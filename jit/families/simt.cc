// Host side of kernels_src/simt/gemm_simt.cuh: exact fp32 arithmetic for any
// problem. The fallback every valid problem can use.
#include <vector>

#include "absl/strings/str_cat.h"
#include "jit/families/families.h"
#include "jit/family.h"

namespace jitgemm::jit {
namespace {

KernelConfig Simt(int bm, int bn, int bk, int threads) {
  KernelConfig c;
  c.family = Family::kSimt;
  c.block_m = bm;
  c.block_n = bn;
  c.block_k = bk;
  c.warps_m = threads / 32;  // the kernel only reads kThreads; warps_n stays 1
  c.warps_n = 1;
  c.stages = 1;
  return c;
}

class SimtFamily final : public KernelFamily {
 public:
  Family id() const override { return Family::kSimt; }
  const char* header() const override { return "jitgemm/simt/gemm_simt.cuh"; }
  const char* kernel_template() const override { return "jitgemm::simt::GemmSimt"; }

  absl::Status Supports(const GemmProblem& p, const KernelConfig& c,
                        const TargetInfo& target) const override {
    const int threads = c.warps_m * c.warps_n * 32;
    if (c.family != Family::kSimt) return absl::InvalidArgumentError("not a SIMT config");
    if (p.epilogue.gate != Gate::kNone) {
      return absl::UnimplementedError(
          "simt kernels have no gated epilogue (the tensor-core families and cuBLAS do)");
    }
    if (c.split_k != 1 || c.stages != 1) {
      return absl::UnimplementedError("SIMT kernels have no split-K or pipeline stages");
    }
    if (c.block_n % 4 != 0 || threads % (c.block_n / 4) != 0 ||
        c.block_m % (threads / (c.block_n / 4)) != 0 || threads > 1024) {
      return absl::InvalidArgumentError(
          absl::StrCat("SIMT tile ", c.ToString(), " does not divide among threads"));
    }
    if (p.batch_count > 65535) {
      return absl::UnimplementedError("SIMT kernels launch one grid z-slice per batch (<= 65535)");
    }
    if ((p.m + c.block_m - 1) / c.block_m > 65535) {
      return absl::UnimplementedError("SIMT grid y is limited to 65535 tiles of M");
    }
    return absl::OkStatus();
  }

  LaunchShape Shape(const GemmProblem& p, const KernelConfig& c,
                    const TargetInfo& target) const override {
    LaunchShape s;
    s.grid[0] = static_cast<uint32_t>((p.n + c.block_n - 1) / c.block_n);
    s.grid[1] = static_cast<uint32_t>((p.m + c.block_m - 1) / c.block_m);
    s.grid[2] = static_cast<uint32_t>(p.batch_count);
    s.block[0] = c.warps_m * c.warps_n * 32;
    s.pdl = c.pdl;
    return s;
  }

  std::vector<KernelConfig> Candidates(const GemmProblem& p, const TargetInfo& target,
                                       TuningPolicy policy) const override {
    // Enough blocks to cover the SMs twice beats large tiles for small problems.
    const int64_t work = p.m * p.n * p.batch_count;
    std::vector<KernelConfig> all = {Simt(64, 64, 16, 256), Simt(32, 32, 16, 64),
                                     Simt(128, 64, 8, 256), Simt(64, 32, 16, 128)};
    if (work < int64_t{64} * 64 * target.multiprocessors * 2) std::swap(all[0], all[1]);
    if (policy == TuningPolicy::kHeuristic) all.resize(1);
    return all;
  }
};

}  // namespace

const KernelFamily& SimtFamilyInstance() {
  static const SimtFamily kFamily;
  return kFamily;
}

}  // namespace jitgemm::jit
