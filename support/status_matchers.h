// StatusIs(code, message_matcher) for absl::Status and absl::StatusOr<T>.
#ifndef JITGEMM_TESTS_TESTING_STATUS_MATCHERS_H_
#define JITGEMM_TESTS_TESTING_STATUS_MATCHERS_H_

#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"

namespace jitgemm::support {

inline const absl::Status& GetStatus(const absl::Status& s) { return s; }
template <class T>
const absl::Status& GetStatus(const absl::StatusOr<T>& s) {
  return s.status();
}

MATCHER_P2(StatusIs, code, message_matcher, "") {
  const absl::Status& s = GetStatus(arg);
  if (s.code() != code) {
    *result_listener << "status is " << s;
    return false;
  }
  return ::testing::ExplainMatchResult(message_matcher, std::string(s.message()), result_listener);
}

MATCHER(IsOk, "") {
  const absl::Status& s = GetStatus(arg);
  if (!s.ok()) *result_listener << "status is " << s;
  return s.ok();
}

}  // namespace jitgemm::support

#endif  // JITGEMM_TESTS_TESTING_STATUS_MATCHERS_H_
