#include "jit/kernel_store.h"

#include <cstdlib>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/family.h"
#include "jit/launcher.h"
#include "jit/specializer.h"
#include "support/status_matchers.h"

namespace jitgemm::jit {
namespace {

using ::jitgemm::support::StatusIs;
using ::testing::HasSubstr;

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

TEST(SerializeBinaryTest, RoundTripsAndRejectsDamage) {
  KernelBinary b{"gemm_x",
                 "_Z1Kv",
                 std::string("\x7f"
                             "ELF\0\1\2",
                             7),
                 40,
                 0,
                 8,
                 0};
  auto back = DeserializeBinary(SerializeBinary(b));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->cubin, b.cubin);
  EXPECT_EQ(back->lowered_name, "_Z1Kv");
  EXPECT_EQ(back->registers, 40);
  std::string s = SerializeBinary(b);
  EXPECT_THAT(DeserializeBinary(s.substr(0, s.size() - 1)),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("size")));
  EXPECT_THAT(DeserializeBinary("garbage\n"), StatusIs(absl::StatusCode::kDataLoss, ::testing::_));
  s[0] = 'X';
  EXPECT_THAT(DeserializeBinary(s), StatusIs(absl::StatusCode::kDataLoss, HasSubstr("magic")));
}

TEST(KernelStoreTest, CompilesOnceThenServesFromMemory) {
  if (!NvrtcVersion().ok()) GTEST_SKIP() << "NVRTC not available: " << NvrtcVersion().status();
  KernelStore& store = KernelStore::Global();
  const KernelSource src = SimtSource(45);
  const auto before = store.counters();
  bool compiled = false;
  GetOptions options;
  options.compiled = &compiled;
  auto first = store.GetBinary(src, "sm_90a", options);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_FALSE((*first)->cubin.empty());
  EXPECT_EQ((*first)->kernel_name, src.kernel_name);
  auto second = store.GetBinary(src, "sm_90a", options);
  ASSERT_TRUE(second.ok());
  EXPECT_FALSE(compiled);
  EXPECT_EQ(first->get(), second->get());
  const auto after = store.counters();
  EXPECT_LE(after.compiles - before.compiles, 1u);
  EXPECT_EQ(after.memory_hits - before.memory_hits, 1u);
}

TEST(KernelStoreTest, JitOffNeverCompiles) {
  KernelStore& store = KernelStore::Global();
  const auto before = store.counters();
  GetOptions options;
  options.allow_compile = false;
  auto r = store.GetBinary(SimtSource(4099), "sm_80", options);
  // Either a warmed cache had it, or it is a clean NotFound; never a compile.
  if (!r.ok()) {
    EXPECT_THAT(r, StatusIs(absl::StatusCode::kNotFound, HasSubstr("JITGEMM_JIT=off")));
  }
  EXPECT_EQ(store.counters().compiles, before.compiles);
}

TEST(KernelStoreTest, StatedNvrtcVersionMustMatchTheCompiler) {
  if (!NvrtcVersion().ok()) GTEST_SKIP() << "NVRTC not available: " << NvrtcVersion().status();
  ::setenv("JITGEMM_NVRTC_VERSION", "11020", 1);
  auto r = KernelStore::Global().GetBinary(SimtSource(4111), "sm_90a");
  ::unsetenv("JITGEMM_NVRTC_VERSION");
  EXPECT_THAT(r, jitgemm::support::StatusIs(absl::StatusCode::kFailedPrecondition,
                                            HasSubstr("JITGEMM_NVRTC_VERSION")));
}

}  // namespace
}  // namespace jitgemm::jit
