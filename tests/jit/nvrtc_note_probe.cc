// A separate process for nvrtc_note_test: with the cache of
// $JITGEMM_CACHE_DIR, computes the NVRTC version for keys and, with
// --kernel=N, gets the binary of a small SIMT kernel (N columns) for sm_90a.
// Prints "version=V compiled=0|1 loaded=0|1": whether NVRTC was opened by
// the end is what the test looks at.
#include <cstdio>
#include <cstring>
#include <string>

#include "absl/strings/numbers.h"
#include "jit/disk_tier.h"
#include "jit/family.h"
#include "jit/kernel_store.h"
#include "jit/launcher.h"
#include "jit/nvrtc_compiler.h"
#include "jit/specializer.h"

namespace jitgemm::jit {
namespace {

KernelSource SimtSource(int64_t n) {
  GemmProblem p = Canonicalize(MakeGemm(33, n, 17, DataType::kF32));
  KernelConfig c;
  c.family = Family::kSimt;
  c.block_m = c.block_n = 32;
  c.block_k = 16;
  c.warps_m = 2;
  c.warps_n = 1;
  const KernelFamily& f = GetFamily(Family::kSimt);
  return Specialize(p, c, f, f.Shape(p, c, OfflineTarget(90)), 16);
}

int Run(int argc, char** argv) {
  int64_t n = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--kernel=", 9) == 0 && !absl::SimpleAtoi(argv[i] + 9, &n)) return 2;
  }
  absl::StatusOr<int> version = NvrtcVersionForKey();
  if (!version.ok()) return 3;
  bool compiled = false;
  if (n > 0) {
    GetOptions options;
    options.compiled = &compiled;
    auto binary = KernelStore::Global().GetBinary(SimtSource(n), "sm_90a", options);
    if (!binary.ok()) {
      std::fprintf(stderr, "%s\n", binary.status().ToString().c_str());
      return 4;
    }
    version = NvrtcVersionForKey();
  }
  std::printf("version=%d compiled=%d loaded=%d\n", *version, compiled ? 1 : 0,
              NvrtcLoaded() ? 1 : 0);
  return 0;
}

}  // namespace
}  // namespace jitgemm::jit

int main(int argc, char** argv) { return jitgemm::jit::Run(argc, argv); }
