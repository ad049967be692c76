// JITGEMM_RECORD=path: every distinct problem a process plans is added to the
// manifest at `path` (created if missing) with the options it was planned
// with, so a run can be recorded once, warmed with jitgemm-warmup, and
// deployed with zero compiles. One problem planned with two sets of options
// is two entries.
//
// Thread safety: RecordProblem may be called from any thread; several
// processes may record into one file (an advisory lock serialises them; the
// file is replaced atomically, so a reader never sees half a manifest).
#ifndef JITGEMM_API_SRC_RECORD_H_
#define JITGEMM_API_SRC_RECORD_H_

#include <string>

#include "absl/status/status.h"
#include "jitgemm/options.h"
#include "jitgemm/problem.h"

namespace jitgemm {

// Adds `problem` to the manifest named by JITGEMM_RECORD, once per process
// and set of options.
// Does nothing when the variable is unset. Failures are reported once on
// stderr and never reach the caller: recording must not break a workload.
void RecordProblem(const GemmProblem& problem, const Options& options);

// Merges `problem` into the manifest at `path` (the testable core). A new
// file takes `options` as the manifest's; an entry whose options differ from
// the file's gets its own "options" object.
absl::Status AppendToManifest(const std::string& path, const GemmProblem& problem,
                              const Options& options);

}  // namespace jitgemm

#endif  // JITGEMM_API_SRC_RECORD_H_
