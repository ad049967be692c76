// The cuBLASLt backend on a GPU: results against a float64 reference for
// each mapping case, the elementwise-pass seam, streams and graph capture.
// Without a CUDA device these tests skip, except the one that checks that
// creation then fails cleanly.
#include "backends/cublas_backend.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/host_types.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/gpu_env.h"
#include "support/reference.h"

namespace jitgemm {
namespace {

using ::jitgemm::support::RefActivate;
using ::testing::HasSubstr;

// Host copy of one device buffer, kept as the exact values stored.
struct HostMatrix {
  DataType type;
  std::vector<double> values;

  std::vector<unsigned char> Encode() const {
    std::vector<unsigned char> out(values.size() * DataTypeSize(type));
    for (size_t i = 0; i < values.size(); ++i) {
      StoreAs(type, out.data(), i, static_cast<float>(values[i]));
    }
    return out;
  }

  void Decode(const std::vector<unsigned char>& in) {
    for (size_t i = 0; i < values.size(); ++i) values[i] = LoadAs(type, in.data(), i);
  }
};

int64_t Index(const Operand& op, int64_t batch, int64_t r, int64_t c) {
  return ::jitgemm::support::ElementIndex(op, r, c, batch);
}

int64_t Extent(const Operand& op, int64_t batches, int64_t rows, int64_t cols) {
  return Index(op, batches - 1, rows - 1, cols - 1) + 1;
}

// `offset` bytes past the start of a cudaMalloc'ed block, which lies on 256.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes, size_t offset = 0) : offset_(offset) {
    EXPECT_EQ(cudaMalloc(&ptr_, bytes + offset), cudaSuccess);
  }
  ~DeviceBuffer() { cudaFree(ptr_); }
  void* get() const { return static_cast<char*>(ptr_) + offset_; }

 private:
  void* ptr_ = nullptr;
  size_t offset_;
};

// One problem with random inputs on host and device, and its reference.
class Case {
 public:
  // `offset`: bytes by which every device pointer misses 256-byte alignment.
  explicit Case(const GemmProblem& p, size_t offset = 0) : p_(p), offset_(offset) {
    std::mt19937 rng(42);
    std::uniform_int_distribution<int> dist(-64, 64);
    // k / 64 is exact in f16, bf16 and f32: the reference sees the stored values.
    auto random = [&](DataType t, int64_t size) {
      HostMatrix h{t, std::vector<double>(size)};
      for (double& v : h.values) v = dist(rng) / 64.0;
      return h;
    };
    const int64_t batches = p.batch_count;
    a_ = random(p.a.type, Extent(p.a, batches, p.m, p.k));
    b_ = random(p.b.type, Extent(p.b, batches, p.k, p.n));
    c_ = random(p.c.type, Extent(p.c, batches, p.m, p.n));
    d_ = random(p.d.type, Extent(p.d, batches, p.m, p.n));
    bias_ = random(p.d.type, p.epilogue.bias_batch_stride * (batches - 1) + std::max(p.m, p.n));
    da_ = Upload(a_);
    db_ = Upload(b_);
    dc_ = Upload(c_);
    dd_ = Upload(d_);
    dbias_ = Upload(bias_);
  }

  GemmPointers pointers() const {
    return {da_->get(), db_->get(), dc_->get(), dd_->get(), dbias_->get()};
  }

  // D as uploaded.
  std::vector<double> Initial() const { return d_.values; }

  // Reference D; with `apply_epilogue` false only alpha * A B + beta * C.
  std::vector<double> Reference(bool apply_epilogue) const {
    std::vector<double> d = d_.values;
    const auto& e = p_.epilogue;
    for (int64_t bt = 0; bt < p_.batch_count; ++bt) {
      for (int64_t i = 0; i < p_.m; ++i) {
        for (int64_t j = 0; j < p_.n; ++j) {
          double acc = 0;
          for (int64_t kk = 0; kk < p_.k; ++kk) {
            acc += a_.values[Index(p_.a, bt, i, kk)] * b_.values[Index(p_.b, bt, kk, j)];
          }
          double v = e.alpha * acc;
          if (e.beta != 0) v += e.beta * c_.values[Index(p_.c, bt, i, j)];
          if (apply_epilogue) {
            if (e.bias == BiasMode::kPerColumn) v += bias_.values[bt * e.bias_batch_stride + j];
            if (e.bias == BiasMode::kPerRow) v += bias_.values[bt * e.bias_batch_stride + i];
            v = RefActivate(e.activation, v);
          }
          d[Index(p_.d, bt, i, j)] = v;
        }
      }
    }
    return d;
  }

  // Relative Frobenius error of the device D against `want` (every element of
  // the D buffer, so an element written out of place shows too).
  double Error(const std::vector<double>& want) const {
    std::vector<unsigned char> raw(d_.values.size() * DataTypeSize(d_.type));
    EXPECT_EQ(cudaMemcpy(raw.data(), dd_->get(), raw.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    HostMatrix got = d_;
    got.Decode(raw);
    double num = 0, den = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      const double diff = got.values[i] - want[i];
      num += diff * diff;
      den += want[i] * want[i];
    }
    if (!(num == num)) return INFINITY;
    return std::sqrt(num / std::max(den, 1e-30));
  }

 private:
  std::unique_ptr<DeviceBuffer> Upload(const HostMatrix& h) const {
    const std::vector<unsigned char> bytes = h.Encode();
    auto buf = std::make_unique<DeviceBuffer>(bytes.size(), offset_);
    EXPECT_EQ(cudaMemcpy(buf->get(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice),
              cudaSuccess);
    return buf;
  }

  GemmProblem p_;
  size_t offset_;
  HostMatrix a_, b_, c_, d_, bias_;
  std::unique_ptr<DeviceBuffer> da_, db_, dc_, dd_, dbias_;
};

double Tolerance(DataType out, bool tf32) {
  if (tf32) return 5e-3;
  return out == DataType::kF32 ? 1e-5 : (out == DataType::kF16 ? 2e-3 : 1e-2);
}

GemmProblem Packed(GemmProblem p) {
  auto fill = [](Operand& op, int64_t rows, int64_t cols) {
    if (op.ld == 0) op.ld = op.layout == Layout::kRowMajor ? cols : rows;
  };
  fill(p.a, p.m, p.k);
  fill(p.b, p.k, p.n);
  fill(p.c, p.m, p.n);
  fill(p.d, p.m, p.n);
  if (p.epilogue.beta == 0.0f) p.c = p.d;
  return p;
}

GemmProblem Problem(int64_t m, int64_t n, int64_t k, DataType in, DataType out, Layout la,
                    Layout lb, Layout ld_layout, BiasMode bias, Activation act) {
  GemmProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.a = {in, la, 0, kNoStride};
  p.b = {in, lb, 0, kNoStride};
  p.c = {out, ld_layout, 0, kNoStride};
  p.d = {out, ld_layout, 0, kNoStride};
  p.epilogue.bias = bias;
  p.epilogue.activation = act;
  return Packed(p);
}

struct NamedProblem {
  std::string name;
  GemmProblem problem;
  bool tf32 = false;
};

std::vector<NamedProblem> LtCases() {
  const auto R = Layout::kRowMajor;
  const auto C = Layout::kColMajor;
  std::vector<NamedProblem> cases;
  cases.push_back({"f16_linear_bias_relu", Problem(64, 256, 128, DataType::kF16, DataType::kF16, R,
                                                   C, R, BiasMode::kPerColumn, Activation::kRelu)});
  cases.push_back(
      {"bf16_colmajor_d_row_bias_gelu", Problem(96, 80, 72, DataType::kBF16, DataType::kBF16, C, R,
                                                C, BiasMode::kPerRow, Activation::kGeluTanh)});
  cases.push_back({"bf16_small_m_linear", Problem(3, 2048, 512, DataType::kBF16, DataType::kBF16, R,
                                                  C, R, BiasMode::kNone, Activation::kNone)});
  cases.push_back({"f16_in_f32_out_relu", Problem(40, 72, 64, DataType::kF16, DataType::kF32, R, R,
                                                  R, BiasMode::kNone, Activation::kRelu)});
  GemmProblem f32 = Problem(33, 65, 47, DataType::kF32, DataType::kF32, C, C, R,
                            BiasMode::kPerColumn, Activation::kNone);
  f32.epilogue.alpha = 0.5f;
  f32.epilogue.beta = 2.0f;
  f32.c = f32.d;
  f32.c.ld = f32.d.ld + 3;
  cases.push_back({"f32_alpha_beta_bias", f32});
  cases.push_back({"f32_tf32",
                   Problem(128, 128, 256, DataType::kF32, DataType::kF32, R, R, R, BiasMode::kNone,
                           Activation::kNone),
                   true});
  // Seed 001 shape, small: x (B, G, Din), W (G, Din, Dout), y (B, G, Dout).
  const int64_t B = 48, G = 3, Din = 64, Dout = 96;
  GemmProblem grouped = Problem(B, Dout, Din, DataType::kBF16, DataType::kBF16, R, R, R,
                                BiasMode::kPerColumn, Activation::kRelu);
  grouped.batch_count = G;
  grouped.a = {DataType::kBF16, R, G * Din, Din};
  grouped.b = {DataType::kBF16, R, Dout, Din * Dout};
  grouped.d = {DataType::kBF16, R, G * Dout, Dout};
  grouped.c = grouped.d;
  grouped.epilogue.bias_batch_stride = Dout;
  cases.push_back({"bf16_grouped_strided_output", grouped});
  // One weight broadcast to every batch (stride 0).
  GemmProblem broadcast = Problem(32, 64, 48, DataType::kF16, DataType::kF16, R, C, R,
                                  BiasMode::kNone, Activation::kNone);
  broadcast.batch_count = 4;
  broadcast.a.batch_stride = 32 * 48;
  broadcast.b.batch_stride = 0;
  broadcast.d.batch_stride = 32 * 64;
  broadcast.c = broadcast.d;
  cases.push_back({"f16_batched_broadcast_b", broadcast});
  return cases;
}

class CublasBackendCaseTest : public ::testing::TestWithParam<NamedProblem> {
 protected:
  static absl::StatusOr<std::unique_ptr<Backend>> Create(const NamedProblem& np) {
    Options options;
    options.allow_tf32 = np.tf32;
    return CreateCublasBackend(np.problem, options);
  }

  // Runs `backend` on a fresh case whose pointers lie `offset` bytes past 256
  // and checks D against float64.
  static void RunAndCheck(const Backend& backend, const NamedProblem& np, size_t offset) {
    Case c(np.problem, offset);
    ASSERT_TRUE(backend.Run(c.pointers(), nullptr).ok()) << backend.Describe();
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_LT(c.Error(c.Reference(true)), Tolerance(np.problem.d.type, np.tf32))
        << backend.Describe() << ", pointers " << offset << " bytes past 256";
  }
};

TEST_P(CublasBackendCaseTest, MatchesFloat64Reference) {
  JITGEMM_REQUIRE_GPU();
  auto backend = Create(GetParam());
  ASSERT_TRUE(backend.ok()) << backend.status();
  RunAndCheck(**backend, GetParam(), 0);
}

// Pointers 16 bytes past 256-byte alignment, which the default
// Options::pointer_alignment allows, then cudaMalloc's own on the same backend.
TEST_P(CublasBackendCaseTest, MatchesFloat64ReferenceWithSixteenBytePointers) {
  JITGEMM_REQUIRE_GPU();
  auto backend = Create(GetParam());
  ASSERT_TRUE(backend.ok()) << backend.status();
  RunAndCheck(**backend, GetParam(), 16);
  RunAndCheck(**backend, GetParam(), 0);
}

INSTANTIATE_TEST_SUITE_P(Lt, CublasBackendCaseTest, ::testing::ValuesIn(LtCases()),
                         [](const auto& info) { return info.param.name; });

TEST(CublasBackendTest, NoDeviceIsFailedPrecondition) {
  if (support::NoGpuReason().empty()) GTEST_SKIP() << "a CUDA device is present";
  auto backend = CreateCublasBackend(
      Problem(8, 8, 8, DataType::kF16, DataType::kF16, Layout::kRowMajor, Layout::kRowMajor,
              Layout::kRowMajor, BiasMode::kNone, Activation::kNone),
      Options());
  ASSERT_FALSE(backend.ok());
  EXPECT_EQ(backend.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(backend.status().message()), HasSubstr("no CUDA device"));
}

TEST(CublasBackendTest, DescribeNamesTheEpilogue) {
  JITGEMM_REQUIRE_GPU();
  auto backend = CreateCublasBackend(
      Problem(64, 256, 128, DataType::kF16, DataType::kF16, Layout::kRowMajor, Layout::kColMajor,
              Layout::kRowMajor, BiasMode::kPerColumn, Activation::kRelu),
      Options());
  ASSERT_TRUE(backend.ok()) << backend.status();
  EXPECT_THAT((*backend)->Describe(), HasSubstr("cublasLt RELU_BIAS"));
}

TEST(CublasBackendTest, ElementwiseCasesAreUnimplementedWithoutAFactory) {
  JITGEMM_REQUIRE_GPU();
  auto backend = CreateCublasBackend(
      Problem(16, 32, 64, DataType::kBF16, DataType::kBF16, Layout::kRowMajor, Layout::kColMajor,
              Layout::kRowMajor, BiasMode::kPerColumn, Activation::kGeluErf),
      Options());
  ASSERT_FALSE(backend.ok());
  EXPECT_EQ(backend.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(backend.status().message()), HasSubstr("gelu_erf"));
}

// Records what it was made for; does nothing when run.
class RecordingPass : public ElementwiseEpilogue {
 public:
  explicit RecordingPass(int* runs) : runs_(runs) {}
  absl::Status Run(const void* product, void* d, const void* bias, CUstream stream) const override {
    ++*runs_;
    return absl::OkStatus();
  }
  std::string Describe() const override { return "recording pass"; }

 private:
  int* runs_;
};

TEST(CublasBackendTest, ElementwisePassFollowsThePlainProduct) {
  JITGEMM_REQUIRE_GPU();
  const GemmProblem p =
      Problem(16, 32, 64, DataType::kF16, DataType::kF16, Layout::kRowMajor, Layout::kColMajor,
              Layout::kRowMajor, BiasMode::kPerRow, Activation::kSilu);
  int made = 0, runs = 0;
  GemmProblem seen;
  ElementwiseEpilogueFactory factory =
      [&](const GemmProblem& problem,
          const Options&) -> absl::StatusOr<std::unique_ptr<ElementwiseEpilogue>> {
    ++made;
    seen = problem;
    return std::make_unique<RecordingPass>(&runs);
  };
  auto backend = CreateCublasBackend(p, Options(), factory);
  ASSERT_TRUE(backend.ok()) << backend.status();
  EXPECT_EQ(made, 1);
  EXPECT_EQ(seen.epilogue.activation, Activation::kSilu);
  EXPECT_THAT((*backend)->Describe(), HasSubstr("recording pass"));
  Case c(p);
  ASSERT_TRUE((*backend)->Run(c.pointers(), nullptr).ok());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(runs, 1);
  // The Lt call alone wrote the plain product.
  EXPECT_LT(c.Error(c.Reference(false)), 2e-3);
}

// A bias on Lt's axis stays with Lt's BIAS epilogue when the activation needs
// the pass: the pass is made for the activation alone.
TEST(CublasBackendTest, LtAddsTheBiasBeforeAnActivationOnlyPass) {
  JITGEMM_REQUIRE_GPU();
  const GemmProblem p =
      Problem(16, 32, 64, DataType::kBF16, DataType::kBF16, Layout::kRowMajor, Layout::kColMajor,
              Layout::kRowMajor, BiasMode::kPerColumn, Activation::kSilu);
  int runs = 0;
  GemmProblem seen;
  ElementwiseEpilogueFactory factory =
      [&](const GemmProblem& problem,
          const Options&) -> absl::StatusOr<std::unique_ptr<ElementwiseEpilogue>> {
    seen = problem;
    return std::make_unique<RecordingPass>(&runs);
  };
  auto backend = CreateCublasBackend(p, Options(), factory);
  ASSERT_TRUE(backend.ok()) << backend.status();
  EXPECT_EQ(seen.epilogue.bias, BiasMode::kNone);
  EXPECT_EQ(seen.epilogue.activation, Activation::kSilu);
  EXPECT_THAT((*backend)->Describe(), HasSubstr("cublasLt BIAS"));
  // Same operands, no activation: what the Lt call alone must leave in D.
  GemmProblem biased = p;
  biased.epilogue.activation = Activation::kNone;
  Case c(biased);
  ASSERT_TRUE((*backend)->Run(c.pointers(), nullptr).ok());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(runs, 1);
  EXPECT_LT(c.Error(c.Reference(true)), Tolerance(DataType::kBF16, false));
}

// A gated problem (B = [gate | up] of 2N columns): 16 x 24 from K = 64, bf16,
// SwiGLU with a per-column bias of 2N entries.
GemmProblem GatedProblem() {
  GemmProblem p =
      Problem(16, 24, 64, DataType::kBF16, DataType::kBF16, Layout::kRowMajor, Layout::kColMajor,
              Layout::kRowMajor, BiasMode::kPerColumn, Activation::kSilu);
  p.epilogue.gate = Gate::kHalves;
  p.b.ld = 64;
  return p;
}

TEST(CublasBackendTest, GatedProblemsAreUnimplementedWithoutAFactory) {
  JITGEMM_REQUIRE_GPU();
  auto backend = CreateCublasBackend(GatedProblem(), Options());
  ASSERT_FALSE(backend.ok());
  EXPECT_EQ(backend.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(backend.status().message()), HasSubstr("gate pass"));
}

// Records where it was asked to read and write.
class GateRecordingPass : public ElementwiseEpilogue {
 public:
  explicit GateRecordingPass(GemmPointers* seen) : seen_(seen) {}
  absl::Status Run(const void* product, void* d, const void* bias, CUstream stream) const override {
    seen_->c = product;
    seen_->d = d;
    seen_->bias = bias;
    return absl::OkStatus();
  }
  std::string Describe() const override { return "gate recording pass"; }

 private:
  GemmPointers* seen_;
};

// Lt writes all 2N columns (with the bias: row-major D puts it on Lt's axis)
// into the backend's workspace, never into D; the pass reads the workspace
// and writes D.
TEST(CublasBackendTest, GatedProductGoesToTheWorkspaceThenThePass) {
  JITGEMM_REQUIRE_GPU();
  const GemmProblem p = GatedProblem();
  GemmProblem made_for;
  GemmPointers seen;
  ElementwiseEpilogueFactory factory =
      [&](const GemmProblem& problem,
          const Options&) -> absl::StatusOr<std::unique_ptr<ElementwiseEpilogue>> {
    made_for = problem;
    return std::make_unique<GateRecordingPass>(&seen);
  };
  auto backend = CreateCublasBackend(p, Options(), factory);
  ASSERT_TRUE(backend.ok()) << backend.status();
  EXPECT_EQ(made_for.epilogue.gate, Gate::kHalves);
  EXPECT_EQ(made_for.epilogue.activation, Activation::kSilu);
  EXPECT_EQ(made_for.epilogue.bias, BiasMode::kNone) << "Lt's BIAS epilogue adds it";
  const std::string name = (*backend)->Describe();
  EXPECT_THAT(name, HasSubstr("cublasLt BIAS"));
  EXPECT_THAT(name, HasSubstr("m=48"));                            // Lt's rows: all 2N columns of B
  EXPECT_THAT(name, HasSubstr("gated: [gate | up] into 1536 B"));  // 16 x 48 bf16
  EXPECT_THAT(name, HasSubstr("gate recording pass"));
  // Operands sized for B of 2N columns.
  GemmProblem wide = p;
  wide.epilogue.gate = Gate::kNone;
  wide.n = 48;
  wide.d.ld = 48;
  wide.c = wide.d;
  Case c(wide);
  const GemmPointers ptrs = c.pointers();
  ASSERT_TRUE((*backend)->Run(ptrs, nullptr).ok());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_NE(seen.c, nullptr);
  EXPECT_NE(seen.c, ptrs.d);
  EXPECT_EQ(seen.d, ptrs.d);
  EXPECT_EQ(seen.bias, ptrs.bias);
  // D was left alone: the Lt call wrote the workspace.
  EXPECT_EQ(c.Error(c.Initial()), 0.0);
}

TEST(CublasBackendTest, RunsOnSeveralStreamsAndInsideGraphCapture) {
  JITGEMM_REQUIRE_GPU();
  const GemmProblem p =
      Problem(8, 4096, 4096, DataType::kBF16, DataType::kBF16, Layout::kRowMajor, Layout::kColMajor,
              Layout::kRowMajor, BiasMode::kPerColumn, Activation::kRelu);
  auto backend = CreateCublasBackend(p, Options());
  ASSERT_TRUE(backend.ok()) << backend.status();
  Case c(p);
  const std::vector<double> want = c.Reference(true);
  cudaStream_t s1, s2;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking), cudaSuccess);
  for (cudaStream_t s : {s1, s2, s1}) {
    ASSERT_EQ(cudaMemset(c.pointers().d, 0xff, 8 * 4096 * 2), cudaSuccess);  // NaN
    ASSERT_TRUE((*backend)->Run(c.pointers(), s).ok());
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    EXPECT_LT(c.Error(want), 1e-2);
  }
  ASSERT_EQ(cudaMemset(c.pointers().d, 0xff, 8 * 4096 * 2), cudaSuccess);
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(s2, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  const absl::Status run = (*backend)->Run(c.pointers(), s2);
  ASSERT_EQ(cudaStreamEndCapture(s2, &graph), cudaSuccess);
  ASSERT_TRUE(run.ok()) << run;
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, s2), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s2), cudaSuccess);
  EXPECT_LT(c.Error(want), 1e-2);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(s1);
  cudaStreamDestroy(s2);
}

}  // namespace
}  // namespace jitgemm
