// The sm80 kernels' operand loads where rows are not whole 16-byte chunks
// (kernels_src/sm80/tile.cuh):
// - rows that start on 2 bytes: held in registers over a k tile's MMAs for
//   small warp tiles, else copied one chunk at a time (odd K, M or N, odd
//   leading dimensions, pointers only element-aligned);
// - rows on 4, 8 or 16 bytes whose contiguous extent is not a multiple of 8
//   elements: the edge chunk is copied with a source size of only the
//   elements that exist.
// Random fp16 / bf16 problems of each kind against float64 with D poisoned:
// every layout, C, both biases, every activation, strided batches, tile
// edges in M, N and K, each problem with the next of the family's exhaustive
// configs (split-K among them).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/operand_alignment.h"
#include "gtest/gtest.h"
#include "jit/family.h"
#include "jit/specializer.h"
#include "jitgemm/problem.h"
#include "support/gpu_env.h"
#include "tests/gpu/gpu_case.h"

namespace jitgemm::support {
namespace {

// Which operands have rows that start on 2 bytes.
struct TwoByteRows {
  bool a, b;
  bool any() const { return a || b; }
};

TwoByteRows RowsOnTwoBytes(const GemmProblem& p, int pointer_alignment) {
  return {OperandAlignment(p.a, p.m, p.k, p.batch_count, pointer_alignment) == 2,
          OperandAlignment(p.b, p.k, p.n, p.batch_count, pointer_alignment) == 2};
}

// Whether an operand's rows start on 4 bytes or more and end inside a
// 16-byte chunk: its edge chunks are copied with a partial source size.
bool EdgeChunks(const Operand& op, int64_t rows, int64_t cols, int64_t batch,
                int pointer_alignment) {
  const int64_t inner = op.layout == Layout::kRowMajor ? cols : rows;
  return OperandAlignment(op, rows, cols, batch, pointer_alignment) >= 4 && inner % 8 != 0;
}

bool AnyEdgeChunks(const GemmProblem& p, int pointer_alignment) {
  return EdgeChunks(p.a, p.m, p.k, p.batch_count, pointer_alignment) ||
         EdgeChunks(p.b, p.k, p.n, p.batch_count, pointer_alignment);
}

enum class Rows { kTwoBytes, kEdgeChunks };

Case LoaderCase(std::mt19937_64& rng, int index, Rows rows) {
  const bool two = rows == Rows::kTwoBytes;
  Case c;
  GemmProblem& p = c.problem;
  const DataType in = index % 2 == 0 ? DataType::kF16 : DataType::kBF16;
  p.m = two ? Pick<int64_t>(rng, {1, 17, 33, 64, 127, 200, 257, 777, 2047})
            : Pick<int64_t>(rng, {1, 10, 33, 64, 100, 127, 258, 777, 996});
  p.n = two ? Pick<int64_t>(rng, {8, 24, 63, 100, 255, 256, 1000})
            : Pick<int64_t>(rng, {4, 24, 36, 63, 100, 250, 256, 1002});
  p.k = two ? Pick<int64_t>(rng, {15, 64, 255, 511, 999, 2048})
            : Pick<int64_t>(rng, {6, 36, 64, 255, 500, 1002, 2048});
  p.a.type = p.b.type = in;
  p.d.type = index % 4 == 3 ? DataType::kF32 : in;
  p.c.type = p.d.type;
  p.a.layout = Pick(rng, {Layout::kRowMajor, Layout::kColMajor});
  p.b.layout = Pick(rng, {Layout::kRowMajor, Layout::kColMajor});
  p.c.layout = p.d.layout = Pick(rng, {Layout::kRowMajor, Layout::kColMajor});
  auto pad = [&](Operand& op, int64_t r, int64_t cols) {
    const int64_t packed = op.layout == Layout::kRowMajor ? cols : r;
    if (two) {
      op.ld = packed + Pick<int64_t>(rng, {0, 0, 1, 3});
    } else {  // rows on 4, 8 or 16 bytes
      const int64_t step = Pick<int64_t>(rng, {2, 4, 8});
      op.ld = (packed + step - 1) / step * step;
    }
  };
  pad(p.a, p.m, p.k);
  pad(p.b, p.k, p.n);
  pad(p.c, p.m, p.n);
  pad(p.d, p.m, p.n);
  p.epilogue.alpha = Pick(rng, {1.f, 0.5f});
  p.epilogue.beta = Pick(rng, {0.f, 0.f, 1.f});
  p.epilogue.bias = Pick(rng, {BiasMode::kNone, BiasMode::kPerColumn, BiasMode::kPerRow});
  p.epilogue.activation = Pick(rng, {Activation::kNone, Activation::kRelu, Activation::kGeluTanh,
                                     Activation::kGeluErf, Activation::kSilu});
  if (index % 5 == 2) {
    p.batch_count = Pick<int64_t>(rng, {2, 3});
    auto extent = [](const Operand& op, int64_t r, int64_t cols) {
      return (op.layout == Layout::kRowMajor ? r : cols) * op.ld;
    };
    p.a.batch_stride = Pick<int64_t>(rng, {0, 1}) * extent(p.a, p.m, p.k);
    p.b.batch_stride = extent(p.b, p.k, p.n);
    p.c.batch_stride = extent(p.c, p.m, p.n);
    p.d.batch_stride = extent(p.d, p.m, p.n);
  }
  if (two && index % 6 == 5) {  // pointers only element-aligned: every operand staged
    c.options.pointer_alignment = 2;
    c.misalign = true;
  }
  p = Canonicalize(p);
  c.tag = absl::StrCat("#", index);
  return c;
}

bool Wanted(const Case& c, Rows rows) {
  return rows == Rows::kTwoBytes ? RowsOnTwoBytes(c.problem, c.options.pointer_alignment).any()
                                 : AnyEdgeChunks(c.problem, c.options.pointer_alignment);
}

// No GPU needed: the kept cases cover rows on 2 bytes in A, B and both.
TEST(Sm80StagedLoadsCasesTest, EveryCaseHasRowsOnTwoBytes) {
  std::mt19937_64 rng(20261127);
  std::map<std::string, int> seen;
  for (int i = 0; i < 400; ++i) {
    const Case c = LoaderCase(rng, i, Rows::kTwoBytes);
    const GemmProblem& p = c.problem;
    const TwoByteRows rows = RowsOnTwoBytes(p, c.options.pointer_alignment);
    if (!rows.any()) continue;
    ASSERT_TRUE(ValidateProblem(p).ok()) << c.tag << ": " << ValidateProblem(p);
    seen[rows.a && rows.b ? "both" : rows.a ? "a" : "b"]++;
    if (p.batch_count > 1) seen["batched"]++;
    if (p.epilogue.beta != 0.f) seen["c"]++;
    if (c.misalign) seen["misaligned"]++;
  }
  for (const char* what : {"a", "b", "both", "batched", "c", "misaligned"}) {
    EXPECT_GT(seen[what], 0) << what;
  }
}

// No GPU needed: the kept cases cover edge chunks in A, B and both, in each
// row alignment, in K and in M or N.
TEST(Sm80StagedLoadsCasesTest, EdgeCasesHavePartialChunksOnFourBytesOrMore) {
  std::mt19937_64 rng(20261129);
  std::map<std::string, int> seen;
  for (int i = 0; i < 400; ++i) {
    const Case c = LoaderCase(rng, i, Rows::kEdgeChunks);
    const GemmProblem& p = c.problem;
    if (!Wanted(c, Rows::kEdgeChunks)) continue;
    ASSERT_TRUE(ValidateProblem(p).ok()) << c.tag << ": " << ValidateProblem(p);
    ASSERT_FALSE(RowsOnTwoBytes(p, c.options.pointer_alignment).any()) << c.tag;
    const bool a = EdgeChunks(p.a, p.m, p.k, p.batch_count, c.options.pointer_alignment);
    const bool b = EdgeChunks(p.b, p.k, p.n, p.batch_count, c.options.pointer_alignment);
    seen[a && b ? "both" : a ? "a" : "b"]++;
    for (const bool is_a : {true, false}) {
      const Operand& op = is_a ? p.a : p.b;
      const int64_t r = is_a ? p.m : p.k, cols = is_a ? p.k : p.n;
      if (!EdgeChunks(op, r, cols, p.batch_count, c.options.pointer_alignment)) continue;
      const int align = OperandAlignment(op, r, cols, p.batch_count, c.options.pointer_alignment);
      seen[absl::StrCat("align ", std::min(align, 16))]++;
      const bool k_inner = is_a == (op.layout == Layout::kRowMajor);
      seen[k_inner ? "edge in k" : "edge in m or n"]++;
    }
    if (p.batch_count > 1) seen["batched"]++;
  }
  for (const char* what : {"a", "b", "both", "align 4", "align 8", "align 16", "edge in k",
                           "edge in m or n", "batched"}) {
    EXPECT_GT(seen[what], 0) << what;
  }
}

class Sm80StagedLoadsGpuTest : public GpuDeviceTest {
 protected:
  // Runs `count` problems of the kind through the family's exhaustive
  // configs in turn.
  void RunRandomProblems(Rows rows, int count, int seed, const char* what) {
    const jit::KernelFamily& family = jit::GetFamily(jit::Family::kSm80);
    // Cases and operands draw from separate generators, so that every case is
    // known before the first runs and all compile at once.
    std::mt19937_64 rng(seed), data_rng(seed + 1);
    std::vector<Case> cases;
    std::vector<CompileJob> jobs;
    for (int index = 0; static_cast<int>(cases.size()) < count;) {
      Case c = LoaderCase(rng, index++, rows);
      const GemmProblem& p = c.problem;
      if (!Wanted(c, rows)) continue;
      const auto all = family.Candidates(p, device_.target, TuningPolicy::kExhaustive);
      ASSERT_FALSE(all.empty()) << c.tag << " " << DebugString(p) << ": no config";
      jit::KernelConfig config = all[static_cast<size_t>(index) % all.size()];
      config.pdl = index % 2 == 0 && device_.target.sm >= 90;
      jobs.push_back({p, config, c.options.pointer_alignment});
      cases.push_back(std::move(c));
    }
    const JobsRun r = RunJobs(cases, jobs, device_, data_rng);
    std::printf("sm80 %s problems: %d run (%d split-K), %d failures, %zu configs\n", what, r.ran,
                r.splits, r.failures, r.configs.size());
    EXPECT_EQ(r.failures, 0);
    if (count >= 50) {  // smaller counts: the sanitizers' runs
      EXPECT_GT(r.splits, 0);
    }
  }
};

TEST_F(Sm80StagedLoadsGpuTest, RandomProblemsMatchFloat64Reference) {
  RunRandomProblems(Rows::kTwoBytes, EnvInt("JITGEMM_SM80_STAGED_PROBLEMS", 120),
                    EnvInt("JITGEMM_TEST_SEED", 20261127), "staged-load");
}

TEST_F(Sm80StagedLoadsGpuTest, EdgeChunksMatchFloat64Reference) {
  RunRandomProblems(Rows::kEdgeChunks, EnvInt("JITGEMM_SM80_STAGED_PROBLEMS", 120),
                    EnvInt("JITGEMM_TEST_SEED", 20261127) + 2, "edge-chunk");
}

}  // namespace
}  // namespace jitgemm::support
