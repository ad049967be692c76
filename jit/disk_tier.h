// The seam between the kernel store and the on-disk cache (cache/): look a
// key up on disk, else create it once across processes and store it.
#ifndef JITGEMM_JIT_DISK_TIER_H_
#define JITGEMM_JIT_DISK_TIER_H_

#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"

namespace jitgemm::jit {

// The NVRTC version that enters every key: JITGEMM_NVRTC_VERSION if set;
// else the version of the NVRTC already opened; else the version noted in
// the cache root (v1/notes/nvrtc) by the last process that opened NVRTC,
// while the variables that choose the library and the library file itself
// are unchanged, so a process served wholly from the cache never opens
// NVRTC; else the same note published in the remote tier by another machine
// (kept locally when it holds here); else NVRTC's own answer (and the note is written); else, with
// no NVRTC at all, the CUDA version the library was built with.
absl::StatusOr<int> NvrtcVersionForKey();

// Writes the cache root's NVRTC note for the NVRTC this process opened.
void RecordNvrtcNote();

absl::StatusOr<std::string> DiskTierGetOrCreate(
    const std::string& key_text, absl::FunctionRef<absl::StatusOr<std::string>()> create);

}  // namespace jitgemm::jit

#endif  // JITGEMM_JIT_DISK_TIER_H_
