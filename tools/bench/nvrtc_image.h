// NVRTC for the bench's own baseline kernels (activation_kernel.cc,
// glu_kernel.cc): one source compiled to a cubin ("sm_90a") or to PTX
// ("compute_90a") that cudaLibraryLoadData takes.
//
// Thread safety: a pure function (NVRTC programs are per call).
#ifndef JITGEMM_TOOLS_BENCH_NVRTC_IMAGE_H_
#define JITGEMM_TOOLS_BENCH_NVRTC_IMAGE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace jitgemm::bench {

// `file` names the source in NVRTC's messages. Internal with NVRTC's log when
// the source does not compile for `arch`.
absl::StatusOr<std::vector<char>> CompileNvrtcImage(const char* source, const char* file,
                                                    const std::string& arch);

}  // namespace jitgemm::bench

#endif  // JITGEMM_TOOLS_BENCH_NVRTC_IMAGE_H_
