// The sm90 family's GPU test cases: a problem run by one kernel with D
// poisoned and checked against float64 (and its row padding left untouched),
// the fixture that skips without an sm_90 GPU, and the strided batches the
// schedule tests draw their problems from.
#ifndef JITGEMM_TESTS_GPU_SM90_CASE_H_
#define JITGEMM_TESTS_GPU_SM90_CASE_H_

#include <cstdint>
#include <random>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "backends/jit_backend.h"
#include "core/problem_signature.h"
#include "gtest/gtest.h"
#include "jit/family.h"
#include "jit/kernel_config.h"
#include "support/gpu_env.h"
#include "support/reference.h"
#include "tests/gpu/gpu_case.h"
#include "tests/jit/sm90_config.h"

namespace jitgemm::support {

// A strided batch of packed m x n x k problems: bf16 or fp16 by the index's
// parity, with fp32 C and D at every fourth index.
inline GemmProblem StridedBatch(int64_t m, int64_t n, int64_t k, int64_t batch, int index) {
  GemmProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.batch_count = batch;
  p.a.type = p.b.type = p.c.type = p.d.type = index % 2 ? DataType::kBF16 : DataType::kF16;
  if (index % 4 == 0) p.c.type = p.d.type = DataType::kF32;
  p.a.batch_stride = p.m * p.k;
  p.b.batch_stride = p.k * p.n;
  p.c.batch_stride = p.d.batch_stride = p.m * p.n;
  return p;
}

// Empty on success, else what went wrong. With `other`, launches `backend`
// and `other` in turn `pairs` times on the same operands, then checks D once.
inline std::string RunOne(const GemmProblem& p, const JitBackend& backend, std::mt19937_64& rng,
                          const JitBackend* other = nullptr, int pairs = 0) {
  const int64_t batch = p.batch_count;
  Buffer a, b, c, d, bias;
  auto span = [&](const Operand& op, int64_t r, int64_t cols) {
    return static_cast<size_t>(OperandSpanBytes(op, r, cols, batch));
  };
  const bool uses_c = p.epilogue.beta != 0.f, uses_bias = p.epilogue.bias != BiasMode::kNone;
  if (a.Allocate(span(p.a, p.m, p.k), 0) != cudaSuccess ||
      b.Allocate(span(p.b, p.k, BColumns(p)), 0) != cudaSuccess ||
      d.Allocate(span(p.d, p.m, p.n), 0) != cudaSuccess) {
    return "cudaMalloc failed";
  }
  a.FillRandom(p.a.type, rng);
  b.FillRandom(p.b.type, rng);
  a.Upload();
  b.Upload();
  if (uses_c) {
    c.Allocate(span(p.c, p.m, p.n), 0);
    c.FillRandom(p.c.type, rng);
    c.Upload();
  }
  if (uses_bias) {
    const int64_t len = p.epilogue.bias == BiasMode::kPerColumn ? BColumns(p) : p.m;
    bias.Allocate((len + (batch - 1) * p.epilogue.bias_batch_stride) * DataTypeSize(p.d.type), 0);
    bias.FillRandom(p.d.type, rng);
    bias.Upload();
  }
  d.Poison();
  const GemmPointers ptrs{a.device, b.device, uses_c ? c.device : nullptr, d.device,
                          uses_bias ? bias.device : nullptr};
  absl::Status s = backend.Run(ptrs, nullptr);
  for (int i = 0; i < pairs && other != nullptr && s.ok(); ++i) {
    s = other->Run(ptrs, nullptr);
    if (s.ok()) s = backend.Run(ptrs, nullptr);
  }
  if (!s.ok()) return absl::StrCat("Run: ", s.ToString());
  if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess) {
    return absl::StrCat("kernel failed: ", cudaGetErrorString(e));
  }
  d.Download();
  const auto ref = ReferenceGemm(p, a.host.data(), b.host.data(), c.host.data(), bias.host.data());
  const double err = RelativeError(p, d.host.data(), ref);
  if (!(err <= Tolerance(p))) return absl::StrCat("relative error ", err);
  // Row padding of D (and, in the grouped layout, the other groups' columns
  // of a batch's rows are checked by the reference) must stay poisoned.
  if (batch == 1) {
    const int64_t es = DataTypeSize(p.d.type);
    const bool row = p.d.layout == Layout::kRowMajor;
    const int64_t len = row ? p.n : p.m, lines = row ? p.m : p.n;
    for (int64_t line = 0; line + 1 < lines; ++line) {
      for (int64_t x = len; x < p.d.ld; ++x) {
        for (int64_t q = 0; q < es; ++q) {
          if (d.host[(line * p.d.ld + x) * es + q] != 0xff) {
            return absl::StrCat("wrote padding at line ", line, " col ", x);
          }
        }
      }
    }
  }
  return "";
}

// Runs on an sm_90 GPU only; skips with the reason elsewhere.
class Sm90FamilyGpuTest : public Sm90GpuTest {
 protected:
  // Checks that the family takes `c` for `p`, compiles it, and checks two
  // runs in a row against float64, so that whatever a launch leaves behind
  // (split-K tickets, barrier phases) must be back where the next launch
  // expects it.
  void RunTwice(const GemmProblem& p, const jit::KernelConfig& c, std::mt19937_64& rng) {
    const absl::Status supported =
        jit::GetFamily(jit::Family::kSm90).Supports(p, c, device_.target);
    ASSERT_TRUE(supported.ok()) << c.ToString() << " " << DebugString(p) << ": " << supported;
    Options options;
    bool compiled = false;
    auto backend = JitBackend::Create(p, c, options, device_, &compiled);
    ASSERT_TRUE(backend.ok()) << c.ToString() << ": " << backend.status();
    for (int run = 0; run < 2; ++run) {
      EXPECT_EQ(RunOne(p, **backend, rng), "")
          << "run " << run << " " << DebugString(p) << " " << (*backend)->Describe();
    }
  }

  // RunTwice for a ping-pong tile of 128 x `block_n` a warpgroup over `p`
  // canonicalised.
  void RunPingPongTwice(const GemmProblem& problem, int block_n, int cluster, bool pdl,
                        std::mt19937_64& rng) {
    const GemmProblem p = Canonicalize(problem);
    ASSERT_TRUE(ValidateProblem(p).ok()) << ValidateProblem(p);
    jit::KernelConfig c = jit::Sm90Config(128, block_n, 2, 4, cluster);
    c.ping_pong = true;
    c.pdl = pdl;
    RunTwice(p, c, rng);
  }
};

}  // namespace jitgemm::support

#endif  // JITGEMM_TESTS_GPU_SM90_CASE_H_
