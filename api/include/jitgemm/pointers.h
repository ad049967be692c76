// GemmPointers: the device pointers of one run of a GemmProblem, and the
// stream type runs are queued on. Plans (plan.h) and every implementation
// behind them take these; the header needs no CUDA header.
//
// Thread safety: a plain value type.
#ifndef JITGEMM_POINTERS_H_
#define JITGEMM_POINTERS_H_

// Same type as cudaStream_t; declared here so the header needs no CUDA header.
typedef struct CUstream_st* CUstream;

namespace jitgemm {

// Device pointers for one Run. c is read only when epilogue.beta != 0 and bias
// only when the epilogue has a bias. Unused pointers may be null.
struct GemmPointers {
  const void* a = nullptr;
  const void* b = nullptr;
  const void* c = nullptr;
  void* d = nullptr;
  const void* bias = nullptr;
};

}  // namespace jitgemm

#endif  // JITGEMM_POINTERS_H_
