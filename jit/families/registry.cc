#include "jit/families/families.h"
#include "jit/family.h"

namespace jitgemm::jit {

const KernelFamily& GetFamily(Family family) {
  switch (family) {
    case Family::kSm80:
      return Sm80FamilyInstance();
    case Family::kSmallM:
      return SmallMFamilyInstance();
    case Family::kElementwise:
      return ElementwiseFamilyInstance();
    case Family::kSm90:
      return Sm90FamilyInstance();
    case Family::kGate:
      return GateFamilyInstance();
    default:
      break;
  }
  return SimtFamilyInstance();
}

}  // namespace jitgemm::jit
