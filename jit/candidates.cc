#include "jit/candidates.h"

#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"

namespace jitgemm::jit {
namespace {

// JITGEMM_FAMILIES=simt,sm80 restricts the families considered (debugging, A/B
// comparisons); unset means all.
bool FamilyAllowed(Family f) {
  static const std::vector<std::string>* const kAllowed = [] {
    auto* v = new std::vector<std::string>();
    if (const char* env = std::getenv("JITGEMM_FAMILIES"); env && *env) {
      for (absl::string_view part : absl::StrSplit(env, ',')) v->emplace_back(part);
    }
    return v;
  }();
  if (kAllowed->empty()) return true;
  for (const auto& name : *kAllowed) {
    if (name == FamilyName(f)) return true;
  }
  return false;
}

}  // namespace

std::vector<KernelConfig> ProposeConfigs(const GemmProblem& p, const TargetInfo& target,
                                         const Options& options) {
  std::vector<Family> order;
  const bool half = p.a.type == DataType::kF16 || p.a.type == DataType::kBF16;
  if (half && p.m <= 64) order.push_back(Family::kSmallM);
  // TMA needs 16-byte-aligned pointers.
  if (half && target.sm == 90 && options.pointer_alignment >= 16) order.push_back(Family::kSm90);
  if (half) order.push_back(Family::kSm80);
  order.push_back(Family::kSimt);

  std::vector<KernelConfig> out;
  bool have_sm90 = false;
  for (Family f : order) {
    const KernelFamily& family = GetFamily(f);
    if (family.id() != f || !FamilyAllowed(f)) continue;
    // fp32 CUDA-core kernels never beat a tensor-core family on 16-bit
    // inputs; timing them on a large problem costs seconds.
    if (f == Family::kSimt && half && !out.empty()) break;
    int taken = 0;
    for (KernelConfig c : family.Candidates(p, target, options.tuning)) {
      // Where the wgmma family serves, the mma.sync family rarely wins: a
      // couple of its configs keep the tuning time bounded.
      if (f == Family::kSm80 && have_sm90 && options.tuning == TuningPolicy::kFast && taken >= 2) {
        break;
      }
      // Families may decline PDL per config (it costs some shapes time).
      c.pdl = c.pdl && options.pdl && target.sm >= 90;
      // The wgmma family reads the first ring slices' B before the previous
      // grid finishes wherever the caller promises constant B.
      if (f == Family::kSm90 && c.pdl && options.constant_b) c.early_b = true;
      // Early reads of B need both PDL and the caller's constant_b promise.
      if (c.early_b && !(c.pdl && options.constant_b)) continue;
      if (!family.Supports(p, c, target).ok()) continue;
      out.push_back(c);
      ++taken;
      if (f == Family::kSm90) have_sm90 = true;
      if (options.tuning == TuningPolicy::kHeuristic) return out;
      if (options.tuning == TuningPolicy::kFast && out.size() >= 8) return out;
    }
  }
  return out;
}

}  // namespace jitgemm::jit
