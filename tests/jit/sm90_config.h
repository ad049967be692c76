// An sm90 kernel config built by hand, as the sm90 family tests (compile
// rules here, GPU runs in tests/gpu) pick tiles the proposal may not.
#ifndef JITGEMM_TESTS_JIT_SM90_CONFIG_H_
#define JITGEMM_TESTS_JIT_SM90_CONFIG_H_

#include "jit/kernel_config.h"

namespace jitgemm::jit {

// A bm x bn tile with block_k 64, `consumers` consumer warpgroups, a ring of
// `stages` and clusters of `cluster` CTAs along M; everything else default.
inline KernelConfig Sm90Config(int bm, int bn, int consumers, int stages, int cluster) {
  KernelConfig c;
  c.family = Family::kSm90;
  c.block_m = bm;
  c.block_n = bn;
  c.block_k = 64;
  c.warps_m = consumers;
  c.warps_n = 1;
  c.stages = stages;
  c.cluster_m = cluster;
  return c;
}

}  // namespace jitgemm::jit

#endif  // JITGEMM_TESTS_JIT_SM90_CONFIG_H_
