#include "tools/bench/suites.h"

#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace jitgemm::bench {
namespace {

// D (M x N, row-major) = A (M x K, row-major) B; B is nn.Linear's (N, K)
// row-major weight (column-major K x N) when `linear_weight`, else row-major.
GemmProblem Plain(DataType type, int64_t m, int64_t n, int64_t k, bool linear_weight) {
  GemmProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.a.type = p.b.type = p.c.type = p.d.type = type;
  p.b.layout = linear_weight ? Layout::kColMajor : Layout::kRowMajor;
  return Canonicalize(p);
}

std::vector<BenchCase> SmallMLinear() {
  std::vector<BenchCase> cases;
  const int64_t nk[][2] = {{2048, 4096}, {4096, 4096}, {12288, 4096}};
  for (const auto& [n, k] : nk) {
    for (int64_t m : {1, 2, 4, 8, 16, 32, 64}) {
      BenchCase c;
      c.suite = "S1";
      c.label = absl::StrFormat("bf16 M=%d N=%d K=%d", m, n, k);
      c.problem = Plain(DataType::kBF16, m, n, k, /*linear_weight=*/true);
      c.rotate = 100;
      c.memory_bound = true;
      c.impls = {Impl::kCublasMm, Impl::kJit, Impl::kAuto};
      cases.push_back(c);
    }
  }
  return cases;
}

std::vector<BenchCase> BiasActivation() {
  struct Shape {
    DataType type;
    int64_t m, k, n;  // BENCHMARKS.md writes M x K x N
    Activation act;
  };
  const Shape shapes[] = {
      {DataType::kF16, 64, 256, 128, Activation::kRelu},
      {DataType::kF16, 128, 256, 256, Activation::kRelu},
      {DataType::kF16, 1024, 1024, 1024, Activation::kRelu},
      {DataType::kF16, 512, 4096, 4096, Activation::kRelu},
      {DataType::kF16, 4096, 4096, 4096, Activation::kRelu},
      {DataType::kBF16, 4096, 4096, 4096, Activation::kRelu},
      {DataType::kF32, 64, 256, 128, Activation::kRelu},
      {DataType::kF32, 1024, 1024, 1024, Activation::kRelu},
      // Epilogues cuBLASLt cannot fuse: PyTorch runs them as addmm_act.
      {DataType::kBF16, 2048, 2048, 512, Activation::kSilu},
      {DataType::kF16, 256, 4096, 1024, Activation::kGeluErf},
      {DataType::kBF16, 4096, 4096, 4096, Activation::kSilu},
      {DataType::kF16, 1024, 1024, 1024, Activation::kGeluErf},
  };
  std::vector<BenchCase> cases;
  for (const Shape& s : shapes) {
    BenchCase c;
    c.suite = "S2";
    // ReLU rows keep their earlier labels so that results stay comparable.
    c.label = absl::StrFormat("%s %dx%dx%d", DataTypeName(s.type), s.m, s.k, s.n);
    if (s.act != Activation::kRelu) absl::StrAppend(&c.label, " ", ActivationName(s.act));
    c.problem = Plain(s.type, s.m, s.n, s.k, /*linear_weight=*/true);
    c.problem.epilogue.bias = BiasMode::kPerColumn;
    c.problem.epilogue.activation = s.act;
    c.impls = ColumnsFor(c.problem);
    cases.push_back(c);
  }
  return cases;
}

std::vector<BenchCase> GroupedLinear() {
  // Seed 001: x (B, G, Din) row-major, W (G, Din, Dout), y written in (B, G, Dout).
  const int64_t B = 2560, G = 12, Din = 1024, Dout = 3072;
  BenchCase c;
  c.suite = "S3";
  c.label = absl::StrFormat("bf16 B=%d G=%d %d->%d", B, G, Din, Dout);
  GemmProblem p;
  p.m = B;
  p.n = Dout;
  p.k = Din;
  p.batch_count = G;
  p.a = {DataType::kBF16, Layout::kRowMajor, G * Din, Din};
  p.b = {DataType::kBF16, Layout::kRowMajor, Dout, Din * Dout};
  p.d = {DataType::kBF16, Layout::kRowMajor, G * Dout, Dout};
  p.c = p.d;
  c.problem = Canonicalize(p);
  c.impls = {Impl::kCublasLoop, Impl::kCublasMm, Impl::kJit, Impl::kAuto};
  return {c};
}

std::vector<BenchCase> LargeGemm() {
  std::vector<BenchCase> cases;
  const std::pair<DataType, int64_t> cubes[] = {
      {DataType::kBF16, 8192}, {DataType::kF16, 4096},  {DataType::kBF16, 4096},
      {DataType::kF16, 6144},  {DataType::kBF16, 6144},
  };
  for (const auto& [type, size] : cubes) {
    BenchCase c;
    c.suite = "S6";
    c.label = absl::StrFormat("%s %dx%dx%d", DataTypeName(type), size, size, size);
    c.problem = Plain(type, size, size, size, /*linear_weight=*/false);
    c.impls = {Impl::kCublasMm, Impl::kJit, Impl::kAuto};
    cases.push_back(c);
  }
  // Mid-size linears, y = x W^T (prefill chunks of a 4096-wide model and its
  // 14336-wide MLP). W of 4096 x 4096 (32 MiB) fits in an H100's 50 MiB L2,
  // so the weights rotate over 4 copies as a model's layers would.
  for (int64_t n : {4096, 14336}) {
    for (int64_t m : {128, 256, 512}) {
      BenchCase c;
      c.suite = "S6";
      c.label = absl::StrFormat("bf16 M=%d N=%d K=4096", m, n);
      c.problem = Plain(DataType::kBF16, m, n, 4096, /*linear_weight=*/true);
      c.rotate = 4;
      c.impls = {Impl::kCublasMm, Impl::kJit, Impl::kAuto};
      cases.push_back(c);
    }
  }
  return cases;
}

// Issue 20's rows: DeepGEMM's bf16 test shapes (x W^T, the same weight every
// call) on which a plan chosen by streaming timings lost to PyTorch with its
// weight resident in the L2 (34 and 30 MB against the H100's 50 MB).
std::vector<BenchCase> RegimeRows() {
  std::vector<BenchCase> cases;
  for (const auto& [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{1, 32768, 512},
                                std::tuple<int64_t, int64_t, int64_t>{128, 2112, 7168}}) {
    BenchCase c;
    c.suite = "regimes";
    c.label = absl::StrFormat("bf16 M=%d N=%d K=%d", m, n, k);
    c.problem = Plain(DataType::kBF16, m, n, k, /*linear_weight=*/true);
    c.memory_bound = m == 1;
    c.impls = {Impl::kCublasMm, Impl::kJit, Impl::kAuto};
    cases.push_back(c);
  }
  return cases;
}

// Elements of one operand that one call must touch (a stride-0 operand once).
double OperandElements(const Operand& op, int64_t batches, int64_t rows, int64_t cols) {
  const bool shared = batches > 1 && op.batch_stride == 0;
  return static_cast<double>(shared ? 1 : batches) * rows * cols;
}

}  // namespace

const char* ImplName(Impl impl) {
  switch (impl) {
    case Impl::kCublasMm:
      return "cublas_mm";
    case Impl::kCublasLoop:
      return "cublas_loop";
    case Impl::kAddmmAct:
      return "addmm_act";
    case Impl::kLtBiasAct:
      return "lt_bias_act";
    case Impl::kJit:
      return "jit";
    case Impl::kAuto:
      return "auto";
  }
  return "?";
}

std::optional<Impl> ImplFromName(std::string_view name) {
  for (Impl impl : kAllImpls) {
    if (name == ImplName(impl)) return impl;
  }
  if (name == "addmm_relu") return Impl::kAddmmAct;
  if (name == "lt_relu_bias") return Impl::kLtBiasAct;
  return std::nullopt;
}

bool LtFusesEpilogue(const GemmProblem& p) {
  return p.epilogue.bias == BiasMode::kPerColumn && p.epilogue.gate == Gate::kNone &&
         (p.epilogue.activation == Activation::kRelu ||
          p.epilogue.activation == Activation::kGeluTanh);
}

std::vector<Impl> ColumnsFor(const GemmProblem& p) {
  std::vector<Impl> impls = {Impl::kCublasMm};
  if (p.epilogue.bias != BiasMode::kNone || p.epilogue.activation != Activation::kNone) {
    impls.push_back(Impl::kAddmmAct);
  }
  if (LtFusesEpilogue(p)) impls.push_back(Impl::kLtBiasAct);
  impls.push_back(Impl::kJit);
  impls.push_back(Impl::kAuto);
  return impls;
}

bool IsBaseline(Impl impl) { return impl != Impl::kJit && impl != Impl::kAuto; }

bool ComputesEpilogue(Impl impl, const GemmProblem& problem) {
  switch (impl) {
    case Impl::kCublasMm:
    case Impl::kCublasLoop:
      return problem.epilogue.bias == BiasMode::kNone &&
             problem.epilogue.activation == Activation::kNone;
    default:
      return true;
  }
}

Options CaseOptions(const BenchCase& bc, const Options& run_options,
                    std::optional<TuningPolicy> tuning) {
  Options options = bc.options.value_or(run_options);
  if (tuning.has_value()) options.tuning = *tuning;
  return options;
}

absl::StatusOr<std::vector<BenchCase>> MakeSuite(std::string_view name) {
  const std::string s = absl::AsciiStrToUpper(std::string(name));
  if (s == "S1") return SmallMLinear();
  if (s == "S2") return BiasActivation();
  if (s == "S3") return GroupedLinear();
  if (s == "S6") return LargeGemm();
  if (s == "REGIMES") return RegimeRows();
  return absl::InvalidArgumentError(
      absl::StrFormat("unknown suite '%s' (known: S1, S2, S3, S6, regimes)", name));
}

double Flops(const GemmProblem& p) {
  return 2.0 * static_cast<double>(p.m) * p.n * p.k * p.batch_count;
}

double BytesMoved(const GemmProblem& p) {
  const int64_t batches = p.batch_count;
  auto bytes = [](DataType t) { return t == DataType::kF32 ? 4.0 : 2.0; };
  double total = OperandElements(p.a, batches, p.m, p.k) * bytes(p.a.type) +
                 OperandElements(p.b, batches, p.k, p.n) * bytes(p.b.type) +
                 OperandElements(p.d, batches, p.m, p.n) * bytes(p.d.type);
  if (p.epilogue.beta != 0.0f) total += OperandElements(p.c, batches, p.m, p.n) * bytes(p.c.type);
  if (p.epilogue.bias != BiasMode::kNone) {
    const int64_t len = p.epilogue.bias == BiasMode::kPerColumn ? p.n : p.m;
    const int64_t copies = p.epilogue.bias_batch_stride == 0 ? 1 : batches;
    total += static_cast<double>(len) * copies * bytes(p.d.type);
  }
  return total;
}

}  // namespace jitgemm::bench
