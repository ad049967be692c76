// Compiling one kernel config for a problem in a test and checking ptxas's
// report: no register spills.
#ifndef JITGEMM_TESTS_JIT_COMPILE_CHECK_H_
#define JITGEMM_TESTS_JIT_COMPILE_CHECK_H_

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "jit/family.h"
#include "jit/nvrtc_compiler.h"
#include "jit/specializer.h"

namespace jitgemm::jit {

// Compiles `c` of `family` for `p` on `arch` (e.g. "sm_90a"), `target` being
// that arch's target; records a failure if it does not compile or spills.
// Returns whether it compiled.
inline bool CompilesWithoutSpills(const GemmProblem& p, const KernelConfig& c,
                                  const KernelFamily& family, const TargetInfo& target,
                                  const char* arch) {
  const KernelSource s = Specialize(p, c, family, family.Shape(p, c, target), 16);
  auto k = Compile({s.source, s.kernel_name, s.name_expression, arch});
  if (!k.ok()) {
    ADD_FAILURE() << s.kernel_name << " " << arch << ": " << k.status();
    return false;
  }
  EXPECT_EQ(k->spill_store_bytes + k->spill_load_bytes, 0)
      << s.kernel_name << " " << arch << " spills:\n"
      << k->log;
  return true;
}

// Compiles every request on up to 8 threads (NVRTC is thread-safe): the
// compile tests of whole config lists ran past CI's per-test limit one at a
// time on a busy 2-core machine. Results in the requests' order.
inline std::vector<absl::StatusOr<CompiledKernel>> CompileInParallel(
    const std::vector<CompileRequest>& requests) {
  std::vector<absl::StatusOr<CompiledKernel>> out(requests.size(),
                                                  absl::UnknownError("not compiled"));
  std::atomic<size_t> next{0};
  std::vector<std::thread> workers;
  const unsigned threads = std::max(1u, std::min(8u, std::thread::hardware_concurrency()));
  for (unsigned t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      for (size_t i = next++; i < requests.size(); i = next++) out[i] = Compile(requests[i]);
    });
  }
  for (std::thread& w : workers) w.join();
  return out;
}

}  // namespace jitgemm::jit

#endif  // JITGEMM_TESTS_JIT_COMPILE_CHECK_H_
