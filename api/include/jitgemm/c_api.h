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

/* Values as jitgemm::DataType, Layout, BiasMode, Activation. */
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

/* Which implementation serves the plan, e.g. "jit gemm_sm80_f16_...". Owned by the plan. */
JITGEMM_EXPORT const char* jitgemm_plan_describe(jitgemm_plan_t plan);

JITGEMM_EXPORT void jitgemm_plan_destroy(jitgemm_plan_t plan);

/* The message of the last failed call on this thread; "" if none. */
JITGEMM_EXPORT const char* jitgemm_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* JITGEMM_C_API_H_ */
