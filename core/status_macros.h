// Status propagation helpers. Abseil 20220623 ships no public
// ABSL_RETURN_IF_ERROR, so the project keeps this one small pair.
#ifndef JITGEMM_CORE_STATUS_MACROS_H_
#define JITGEMM_CORE_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define JITGEMM_RETURN_IF_ERROR(expr)                  \
  do {                                                 \
    ::absl::Status jitgemm_status_ = (expr);           \
    if (!jitgemm_status_.ok()) return jitgemm_status_; \
  } while (0)

#define JITGEMM_CONCAT_INNER_(a, b) a##b
#define JITGEMM_CONCAT_(a, b) JITGEMM_CONCAT_INNER_(a, b)

#define JITGEMM_ASSIGN_OR_RETURN(lhs, expr) \
  JITGEMM_ASSIGN_OR_RETURN_IMPL_(JITGEMM_CONCAT_(jitgemm_statusor_, __LINE__), lhs, expr)

#define JITGEMM_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                                   \
  if (!statusor.ok()) return std::move(statusor).status();  \
  lhs = std::move(statusor).value()

#endif  // JITGEMM_CORE_STATUS_MACROS_H_
