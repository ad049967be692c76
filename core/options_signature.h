// The options signature: the fields of Options that change what a plan's
// candidates compute or how the winner is chosen, as one stable text. It is
// the options part of tuning-record keys, so its text must not change without
// a reason (a change orphans every stored tuning decision).
//
// Thread safety: a pure function.
#ifndef JITGEMM_CORE_OPTIONS_SIGNATURE_H_
#define JITGEMM_CORE_OPTIONS_SIGNATURE_H_

#include <string>

#include "jitgemm/options.h"

namespace jitgemm {

// e.g. "backend=0 tuning=1 tf32=0 pdl=1 align=16 margin=0.03". jit_enabled and
// arch are left out: they decide whether a kernel may be built, not which wins.
std::string OptionsSignature(const Options& options);

}  // namespace jitgemm

#endif  // JITGEMM_CORE_OPTIONS_SIGNATURE_H_
