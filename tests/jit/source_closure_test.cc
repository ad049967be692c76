// A kernel's key covers the embedded headers its unit includes, transitively,
// and nothing else (jit/source_closure.h).
#include "jit/source_closure.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/embedded_sources.h"

namespace jitgemm::jit {
namespace {

using ::testing::ElementsAre;

// A small tree: family "a" includes common/x, which includes common/y;
// family "b" includes common/y only.
std::vector<EmbeddedSource> Tree(std::string_view y_text = "int y;\n") {
  return {
      {"jitgemm/a/gemm.cuh", "#include \"jitgemm/common/x.cuh\"\nint a;\n"},
      {"jitgemm/b/gemm.cuh", "  #  include \"jitgemm/common/y.cuh\"\nint b;\n"},
      {"jitgemm/common/x.cuh", "#pragma once\n#include \"jitgemm/common/y.cuh\"\n"},
      {"jitgemm/common/y.cuh", y_text},
  };
}

constexpr char kUnitA[] = "// gemm_a\n#include \"jitgemm/a/gemm.cuh\"\n\nstruct JitgemmSpec {};\n";

TEST(SourceClosureTest, ReadsQuotedIncludesOnly) {
  EXPECT_THAT(QuotedIncludes("#include <cuda.h>\n# include \"p.h\"\n// #include \"q.h\"\n"
                             "#include \"r.h\" // why\n#define X 1\n"),
              ElementsAre("p.h", "r.h"));
}

TEST(SourceClosureTest, FollowsIncludesTransitively) {
  EXPECT_THAT(IncludedSources(kUnitA, Tree()),
              ElementsAre("jitgemm/a/gemm.cuh", "jitgemm/common/x.cuh", "jitgemm/common/y.cuh"));
  EXPECT_THAT(IncludedSources("#include \"jitgemm/b/gemm.cuh\"", Tree()),
              ElementsAre("jitgemm/b/gemm.cuh", "jitgemm/common/y.cuh"));
}

TEST(SourceClosureTest, NewFamilyLeavesExistingHashesAlone) {
  std::vector<EmbeddedSource> grown = Tree();
  grown.push_back({"jitgemm/sm90/gemm.cuh", "#include \"jitgemm/common/y.cuh\"\nint c;\n"});
  EXPECT_EQ(IncludedSourcesHash(kUnitA, Tree()), IncludedSourcesHash(kUnitA, grown));
}

TEST(SourceClosureTest, ChangeToAnIncludedHeaderMovesTheHash) {
  EXPECT_NE(IncludedSourcesHash(kUnitA, Tree()), IncludedSourcesHash(kUnitA, Tree("int y2;\n")));
}

TEST(SourceClosureTest, ChangeToAnotherFamilyLeavesTheHashAlone) {
  std::vector<EmbeddedSource> edited = Tree();
  edited[1].text = "int b_changed;\n";
  EXPECT_EQ(IncludedSourcesHash(kUnitA, Tree()), IncludedSourcesHash(kUnitA, edited));
  EXPECT_EQ(IncludedSourcesHash(kUnitA, Tree()).size(), 16u);
}

TEST(SourceClosureTest, IncludeCyclesTerminate) {
  const std::vector<EmbeddedSource> cyclic = {
      {"jitgemm/p.cuh", "#include \"jitgemm/q.cuh\"\n"},
      {"jitgemm/q.cuh", "#include \"jitgemm/p.cuh\"\n"},
  };
  EXPECT_THAT(IncludedSources("#include \"jitgemm/p.cuh\"", cyclic),
              ElementsAre("jitgemm/p.cuh", "jitgemm/q.cuh"));
}

TEST(SourceClosureTest, EveryShippedFamilyHeaderHasAHash) {
  EXPECT_EQ(KernelSourcesHash("#include \"jitgemm/simt/gemm_simt.cuh\"\n"),
            IncludedSourcesHash("#include \"jitgemm/simt/gemm_simt.cuh\"\n", EmbeddedSources()));
  EXPECT_EQ(
      AllKernelSourcesHashes().count(KernelSourcesHash("#include \"jitgemm/sm80/gemm_mma.cuh\"\n")),
      1u);
}

}  // namespace
}  // namespace jitgemm::jit
