// Options steer how a Plan is made: which backends may serve it, how much time
// may go into choosing, and what the kernels may assume about pointers.
//
// Every field has a default that works; the environment variables named below
// override the defaults (not values set explicitly in code after
// Options::FromEnvironment()).
//
// Thread safety: a plain value type.
#ifndef JITGEMM_OPTIONS_H_
#define JITGEMM_OPTIONS_H_

#include <cstdint>
#include <string>

#include "jitgemm/export.h"

namespace jitgemm {

// Which implementations may serve a plan.
enum class BackendPolicy : int {
  kAuto = 0,        // JIT kernels and cuBLAS; the measured choice wins
  kJitOnly = 1,     // only JIT kernels (an error if no family supports the problem)
  kCublasOnly = 2,  // only cuBLAS / cuBLASLt
};

// How many JIT configurations Plan::Create considers.
enum class TuningPolicy : int {
  kHeuristic = 0,   // the single heuristic choice; nothing is timed
  kFast = 1,        // at most 8 candidates, timed
  kExhaustive = 2,  // every valid configuration of every family, timed
};

// Where the operands live when a plan runs, for timing its candidates. A model
// whose layers stream their weights from DRAM and one that calls the same GEMM
// with a weight that stays in the L2 (say, a 34 MB weight in the H100's 50 MB)
// can prefer different kernels (docs/tuning.md).
enum class TimingRegime : int {
  // Both when B fits in the L2, unless B is under 5% of the bytes of a call
  // that moves more than two L2s: the winner's worse regime is best; else
  // streaming.
  kAuto = 0,
  kStreaming = 1,  // operands rotated past the L2 between calls
  kResident = 2,   // the same operands every call, as warm as the L2 keeps them
};

struct Options {
  BackendPolicy backend = BackendPolicy::kAuto;
  // kFast by default: the first plan of a problem times up to 8 JIT kernels
  // against cuBLAS and stores the decision in the cache (see docs/tuning.md);
  // every later plan, in any process sharing the cache, reads it back.
  TuningPolicy tuning = TuningPolicy::kFast;

  // false: never compile at run time; use the cache or cuBLAS (JITGEMM_JIT=off).
  bool jit_enabled = true;

  // fp32 problems may use tf32 tensor cores (about 1e-3 relative error) when true.
  bool allow_tf32 = false;

  // Programmatic dependent launch: the kernel starts loading its weights while
  // the previous kernel on the stream finishes. Families that support it use it.
  bool pdl = true;

  // A promise that no work queued earlier on the stream writes B while a run
  // may still be waiting on it (B is a model weight, loaded once). Under PDL
  // the small-M kernels may then read B before the previous kernel finishes,
  // not only prefetch it into L2: 2048 x 4096 bf16 at M = 1 / 4 / 8 ran
  // 6.14 / 6.79 / 7.10 us per call instead of 7.64 / 8.52 / 8.11 on an H100
  // (cuBLAS 10.1-11.1). The sm90 (TMA + wgmma) kernels load the B tiles of
  // their first four k slices then: fp16 1024^3 + bias + ReLU 5.35 -> 4.96 us.
  // Breaking the promise (say, a kernel
  // that dequantises B just before the run) makes results wrong, not errors.
  // Off by default; JITGEMM_CONSTANT_B=1.
  bool constant_b = false;

  // Byte alignment that every pointer passed to Plan::Run is guaranteed to have
  // (1, 2, 4, 8 or 16). Kernels use vector loads up to this width; Run returns
  // InvalidArgument for a pointer that breaks the promise.
  int pointer_alignment = 16;

  // A JIT kernel must be this much faster than cuBLAS to be chosen (0.03 = 3%);
  // so must a later cuBLASLt suggestion than an earlier one.
  double win_margin = 0.03;

  // The regime the candidates are timed in; a caller that knows where its
  // weights live says so (JITGEMM_REGIME=auto|streaming|resident).
  TimingRegime regime = TimingRegime::kAuto;

  // Target architecture for compiles, e.g. "sm_90a". Empty: the current device's.
  std::string arch;

  // Returns the defaults with environment overrides applied:
  //   JITGEMM_JIT=off|on, JITGEMM_BACKEND=auto|jit|cublas,
  //   JITGEMM_TUNING=heuristic|fast|exhaustive, JITGEMM_PDL=0|1, JITGEMM_ARCH=sm_XX,
  //   JITGEMM_CONSTANT_B=0|1, JITGEMM_REGIME=auto|streaming|resident.
  JITGEMM_EXPORT static Options FromEnvironment();
};

}  // namespace jitgemm

#endif  // JITGEMM_OPTIONS_H_
