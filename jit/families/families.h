// The families the library ships, one per file in this folder.
#ifndef JITGEMM_JIT_FAMILIES_FAMILIES_H_
#define JITGEMM_JIT_FAMILIES_FAMILIES_H_

#include "jit/family.h"

namespace jitgemm::jit {

const KernelFamily& SimtFamilyInstance();
const KernelFamily& Sm80FamilyInstance();
const KernelFamily& SmallMFamilyInstance();
const KernelFamily& ElementwiseFamilyInstance();
const KernelFamily& Sm90FamilyInstance();
const KernelFamily& GateFamilyInstance();

}  // namespace jitgemm::jit

#endif  // JITGEMM_JIT_FAMILIES_FAMILIES_H_
