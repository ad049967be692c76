/* The stable C ABI of jitgemm, for frameworks and other languages.
 *
 * Mirrors problem.h / plan.h with plain structs and integer codes. Every call
 * returns a jitgemm_status_t; on failure jitgemm_last_error() returns a
 * readable message for the calling thread. No call aborts the process.
 *
 * Thread safety: as plan.h. jitgemm_last_error() is per thread.
 */
#ifndef JITGEMM_C_API_H_
#define JITGEMM_C_API_H_

#include <stdint.h>

#include "jitgemm/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Same values as absl::StatusCode. */
typedef enum {
  JITGEMM_OK = 0,
  JITGEMM_INVALID_ARGUMENT = 3,
  JITGEMM_NOT_FOUND = 5,
  JITGEMM_RESOURCE_EXHAUSTED = 8,
  JITGEMM_FAILED_PRECONDITION = 9,
  JITGEMM_UNIMPLEMENTED = 12,
  JITGEMM_INTERNAL = 13,
  JITGEMM_UNAVAILABLE = 14,
  JITGEMM_DATA_LOSS = 15,
} jitgemm_status_t;

/* Values as jitgemm::DataType, Layout, BiasMode, Activation, Gate. */
typedef struct {
  int32_t type;         /* 0 f32, 1 f16, 2 bf16 */
  int32_t layout;       /* 0 row-major, 1 column-major */
  int64_t ld;           /* 0: packed */
  int64_t batch_stride; /* -1: not batched */
} jitgemm_operand_t;

typedef struct {
  int64_t m, n, k, batch_count;
  jitgemm_operand_t a, b, c, d;
  float alpha, beta;
  int32_t bias_mode;  /* 0 none, 1 per column, 2 per row */
  int32_t activation; /* 0 none, 1 relu, 2 gelu tanh, 3 gelu erf, 4 silu */
  int64_t bias_batch_stride;
  int32_t gate;     /* 0 none, 1 halves: B is K x 2N [gate | up], D = act(gate) * up */
  int32_t reserved; /* 0 */
} jitgemm_problem_t;

typedef struct jitgemm_plan_s* jitgemm_plan_t;

/* Fills *problem with a packed row-major m x n x k problem of one type. */
JITGEMM_EXPORT void jitgemm_problem_init(jitgemm_problem_t* problem, int64_t m, int64_t n,
                                         int64_t k, int32_t type);

/* Creates a plan with the default options (environment overrides applied). */
JITGEMM_EXPORT jitgemm_status_t jitgemm_plan_create(const jitgemm_problem_t* problem,
                                                    jitgemm_plan_t* plan);

/* stream is a cudaStream_t / CUstream (NULL: the legacy default stream). */
JITGEMM_EXPORT jitgemm_status_t jitgemm_plan_run(jitgemm_plan_t plan, const void* a, const void* b,
                                                 const void* c, void* d, const void* bias,
                                                 void* stream);

/* Values as jitgemm::Options (options.h); fill with jitgemm_options_init. */
typedef struct {
  int32_t backend;           /* 0 auto, 1 jit only, 2 cublas only */
  int32_t tuning;            /* 0 heuristic, 1 fast, 2 exhaustive */
  int32_t jit_enabled;       /* 0: never compile; cached kernels or cuBLAS only */
  int32_t allow_tf32;        /* fp32 problems may use tf32 tensor cores */
  int32_t pdl;               /* programmatic dependent launch */
  int32_t constant_b;        /* no earlier work on the stream writes B */
  int32_t pointer_alignment; /* 1, 2, 4, 8 or 16 bytes, promised for every pointer */
  /* Timing regime: 0 auto, 1 streaming, 2 resident. It takes what was padding
   * before win_margin, so the struct's size and the other fields' offsets are
   * those of earlier versions; a struct filled by jitgemm_options_init or
   * zeroed reads auto. */
  int32_t regime;
  double win_margin; /* a JIT kernel must beat cuBLAS by this fraction */
} jitgemm_options_t;

/* Fills *options with the defaults and the environment's overrides
 * (Options::FromEnvironment()). */
JITGEMM_EXPORT void jitgemm_options_init(jitgemm_options_t* options);

/* As jitgemm_plan_create with explicit options; options NULL: the environment's. */
JITGEMM_EXPORT jitgemm_status_t jitgemm_plan_create_with_options(const jitgemm_problem_t* problem,
                                                                 const jitgemm_options_t* options,
                                                                 jitgemm_plan_t* plan);

/* Which implementation serves the plan, e.g. "jit gemm_sm80_f16_...". Owned by the plan. */
JITGEMM_EXPORT const char* jitgemm_plan_describe(jitgemm_plan_t plan);

JITGEMM_EXPORT void jitgemm_plan_destroy(jitgemm_plan_t plan);

/* The process-wide kernel cache (cache/disk_cache.h): counters since the
 * process started and what the writable root holds now. */
typedef struct {
  uint64_t hits, misses, shared, compiles, stores, corrupt, evictions, lock_waits, store_failures;
  uint64_t entries, bytes; /* in the writable root; 0 when it cannot be read */
  const char* mode;        /* "off", "readonly", "readwrite" (static storage) */
  const char* root;        /* the writable root; valid until this thread's next call */
} jitgemm_cache_stats_t;

JITGEMM_EXPORT jitgemm_status_t jitgemm_cache_stats(jitgemm_cache_stats_t* stats);

/* Adds a problem, planned with *options (NULL: the environment's), to the
 * manifest at path (created if missing), as JITGEMM_RECORD does, with those
 * options; a problem already listed with the same options is not added twice.
 * InvalidArgument names a bad field of the problem or the options, and nothing
 * is written. */
JITGEMM_EXPORT jitgemm_status_t jitgemm_manifest_add(const char* path,
                                                     const jitgemm_problem_t* problem,
                                                     const jitgemm_options_t* options);

/* Reads the problems of the manifest at path into problems[0, capacity) and
 * sets *count to how many it lists (may exceed capacity: call again with a
 * larger array). InvalidArgument names the first bad field. */
JITGEMM_EXPORT jitgemm_status_t jitgemm_manifest_read(const char* path, jitgemm_problem_t* problems,
                                                      int64_t capacity, int64_t* count);

/* The message of the last failed call on this thread; "" if none. */
JITGEMM_EXPORT const char* jitgemm_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* JITGEMM_C_API_H_ */
