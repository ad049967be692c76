// The kernel templates of kernels_src/, embedded at build time.
#ifndef JITGEMM_JIT_EMBEDDED_SOURCES_H_
#define JITGEMM_JIT_EMBEDDED_SOURCES_H_

#include <string_view>
#include <vector>

namespace jitgemm::jit {

struct EmbeddedSource {
  std::string_view name;  // include name, e.g. "jitgemm/common/types.cuh"
  std::string_view text;
};

// Sorted by name. Thread safety: immutable after first use.
const std::vector<EmbeddedSource>& EmbeddedSources();

}  // namespace jitgemm::jit

#endif  // JITGEMM_JIT_EMBEDDED_SOURCES_H_
