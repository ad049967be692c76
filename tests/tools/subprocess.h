// Runs a tool binary as a separate process for the tools tests: a clean
// environment (no JITGEMM_* or SOURCE_DATE_EPOCH from the caller's), stdin
// from /dev/null (not a terminal), stdout and stderr captured together.
#ifndef JITGEMM_TESTS_TOOLS_SUBPROCESS_H_
#define JITGEMM_TESTS_TOOLS_SUBPROCESS_H_

#include <map>
#include <string>
#include <vector>

namespace jitgemm::tools::testing {

struct RunResult {
  int exit_code = -1;  // 128 + signal when killed by one
  std::string output;  // stdout and stderr, interleaved
};

// `argv[0]` is the binary's path. `env` is added to the caller's environment
// minus every JITGEMM_* variable.
RunResult RunTool(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env);

}  // namespace jitgemm::tools::testing

#endif  // JITGEMM_TESTS_TOOLS_SUBPROCESS_H_
