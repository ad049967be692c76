// The embedded kernel sources one translation unit depends on: the headers it
// includes, transitively, through `#include "jitgemm/..."` lines. Their hash
// is the sources part of the kernel's key, so a change to a kernel header
// moves the keys of exactly the kernels that include it, and a new family
// (new files in kernels_src/) moves none of the existing keys.
//
// Every `#include "..."` line counts, whatever preprocessor condition it sits
// under: a header included under an #if the kernel does not take still enters
// its key, which errs on the side of recompiling.
//
// Thread safety: pure functions; KernelSourcesHash memoises under a mutex.
#ifndef JITGEMM_JIT_SOURCE_CLOSURE_H_
#define JITGEMM_JIT_SOURCE_CLOSURE_H_

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "jit/embedded_sources.h"

namespace jitgemm::jit {

// The names of the quoted includes of `text`, in order of appearance.
std::vector<std::string> QuotedIncludes(std::string_view text);

// The names of `sources` that `text` includes, directly or through them,
// sorted. Names not in `sources` are skipped (NVRTC reports them).
std::vector<std::string> IncludedSources(std::string_view text,
                                         const std::vector<EmbeddedSource>& sources);

// XXH3-64, as 16 hex digits, of the name and text of every source
// IncludedSources(text, sources) names, in name order.
std::string IncludedSourcesHash(std::string_view text, const std::vector<EmbeddedSource>& sources);

// IncludedSourcesHash over the library's embedded sources, memoised by the
// translation unit's include lines.
std::string KernelSourcesHash(std::string_view translation_unit);

// The KernelSourcesHash of a translation unit that includes just one embedded
// header, for every embedded header: every sources value this build's kernel
// keys can carry (a bundle whose keys carry none of them was built from other
// kernel sources).
const std::set<std::string>& AllKernelSourcesHashes();

}  // namespace jitgemm::jit

#endif  // JITGEMM_JIT_SOURCE_CLOSURE_H_
