// Host side of kernels_src/epilogue/gate_activation.cuh: the gate pass after
// the cuBLAS product of a gated problem (jit/families/gate.h).
//
// Config: as the elementwise family's. block_n is the chunk width in
// elements (16 bytes where D's lines and W's halves allow it, 1 for the
// scalar kernel), warps_m * 32 threads a block, and a grid-stride loop sized
// to fill the device once.
#include "jit/families/gate.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/operand_alignment.h"
#include "jit/families/elementwise.h"
#include "jit/families/families.h"
#include "jit/family.h"
#include "jit/specializer.h"

namespace jitgemm::jit {
namespace {

constexpr int kThreads = 256;
// Resident threads an SM holds on every arch the library targets (sm_80+).
// W is a cudaMalloc allocation of the backend's own.
constexpr int kWorkspaceAlignment = 16;

bool Gated(const GemmProblem& p) { return p.epilogue.gate == Gate::kHalves; }

// Bytes every line start of both halves of W is aligned to.
int ProductAlignment(const GemmProblem& p) {
  const Operand w = GateProductOperand(p);
  const int lines = OperandAlignment(w, p.m, 2 * p.n, p.batch_count, kWorkspaceAlignment);
  return std::min(lines, LargestPow2Divisor(GateUpOffset(p) * DataTypeSize(p.d.type), 16));
}

class GateFamily final : public KernelFamily {
 public:
  Family id() const override { return Family::kGate; }
  const char* header() const override { return "jitgemm/epilogue/gate_activation.cuh"; }
  const char* kernel_template() const override { return "jitgemm::epilogue::GateActivation"; }

  absl::Status Supports(const GemmProblem& p, const KernelConfig& c,
                        const TargetInfo& target) const override {
    if (c.family != Family::kGate) return absl::InvalidArgumentError("not the gate family");
    if (!Gated(p)) {
      return absl::InvalidArgumentError(
          "epilogue.gate: the gate pass serves gated problems only (Gate::kHalves)");
    }
    return CheckAccessWidth(
        p, c.block_n,
        std::min(OperandAlignment(p.d, p.m, p.n, p.batch_count, 16), ProductAlignment(p)),
        "D's ld and batch stride and the halves of the product");
  }

  LaunchShape Shape(const GemmProblem& p, const KernelConfig& c,
                    const TargetInfo& target) const override {
    return GridStrideShape(p, c, target);
  }

  std::vector<KernelConfig> Candidates(const GemmProblem& p, const TargetInfo& target,
                                       TuningPolicy policy) const override {
    if (!Gated(p)) return {};
    KernelConfig c;
    c.family = Family::kGate;
    c.warps_m = kThreads / 32;
    c.warps_n = 1;
    c.block_m = c.block_k = 1;
    c.block_n = GateWidth(p, 16);
    return {c};
  }

  std::string ExtraSpecFields(const GemmProblem& p, const KernelConfig& c) const override {
    const Operand w = GateProductOperand(p);
    return absl::StrFormat(
        "  static constexpr jitgemm::int64 kLdw = %d, kStrideW = %d, kUpOffset = %d;\n"
        "  static constexpr int kAlignW = %d;\n",
        w.ld, w.batch_stride == kNoStride ? 0 : w.batch_stride, GateUpOffset(p),
        ProductAlignment(p));
  }
};

}  // namespace

Operand GateProductOperand(const GemmProblem& p) {
  Operand w;
  w.type = p.d.type;
  w.layout = p.d.layout;
  w.ld = p.d.layout == Layout::kRowMajor ? 2 * p.n : p.m;
  w.batch_stride = p.batch_count > 1 ? 2 * p.n * p.m : kNoStride;
  return w;
}

int64_t GateProductElements(const GemmProblem& p) { return 2 * p.n * p.m * p.batch_count; }

int64_t GateUpOffset(const GemmProblem& p) {
  return p.d.layout == Layout::kRowMajor ? p.n : p.n * p.m;
}

int GateWidth(const GemmProblem& p, int pointer_alignment) {
  return AccessWidth(p, std::min(OperandAlignment(p.d, p.m, p.n, p.batch_count, pointer_alignment),
                                 ProductAlignment(p)));
}

const KernelFamily& GateFamilyInstance() {
  static const GateFamily kFamily;
  return kFamily;
}

}  // namespace jitgemm::jit
