// The libFuzzer entry point of one fuzz target, chosen at compile time by
// JITGEMM_FUZZ_TARGET (a name in FuzzTargets()). A broken property aborts,
// which libFuzzer reports as a crash and saves the input for.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "tests/fuzz/fuzz_checks.h"

#ifndef JITGEMM_FUZZ_TARGET
#error "define JITGEMM_FUZZ_TARGET as the name of a target in fuzz_checks.h"
#endif

namespace {

const jitgemm::fuzz::FuzzTarget& Target() {
  static const jitgemm::fuzz::FuzzTarget* const kTarget =
      jitgemm::fuzz::FindFuzzTarget(JITGEMM_FUZZ_TARGET);
  if (kTarget == nullptr) {
    std::fprintf(stderr, "no fuzz target named %s\n", JITGEMM_FUZZ_TARGET);
    std::abort();
  }
  return *kTarget;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  Target();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const std::string violation = Target().check(bytes);
  if (!violation.empty()) {
    std::fprintf(stderr, "%s_fuzzer: property violated: %s\n", Target().name, violation.c_str());
    std::abort();
  }
  return 0;
}
