// Symbol visibility for the jitgemm shared library.
//
// The library is built with hidden visibility; only declarations marked
// JITGEMM_EXPORT form its ABI. Thread safety: not applicable (macros only).
#ifndef JITGEMM_EXPORT_H_
#define JITGEMM_EXPORT_H_

#if defined(_WIN32)
#define JITGEMM_EXPORT
#else
#define JITGEMM_EXPORT __attribute__((visibility("default")))
#endif

#endif  // JITGEMM_EXPORT_H_
