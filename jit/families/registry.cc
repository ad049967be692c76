#include "jit/families/families.h"
#include "jit/family.h"

namespace jitgemm::jit {

const KernelFamily& GetFamily(Family family) {
  switch (family) {
#ifdef JITGEMM_HAVE_SM80
    case Family::kSm80:
      return Sm80FamilyInstance();
#endif
#ifdef JITGEMM_HAVE_SMALL_M
    case Family::kSmallM:
      return SmallMFamilyInstance();
#endif
    default:
      break;
  }
  return SimtFamilyInstance();
}

}  // namespace jitgemm::jit
