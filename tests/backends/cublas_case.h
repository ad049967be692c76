// One cuBLASLt backend case on a GPU: random operands of a problem with
// small integer values (exact in every type), uploaded at a chosen offset, D
// read back and compared with a float64 reference. Shared by the backend's
// GPU tests (cublas_backend_test.cc, cublas_pass_test.cc).
//
// Thread safety: a Case belongs to one test.
#ifndef JITGEMM_TESTS_BACKENDS_CUBLAS_CASE_H_
#define JITGEMM_TESTS_BACKENDS_CUBLAS_CASE_H_

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "core/host_types.h"
#include "gtest/gtest.h"
#include "jitgemm/pointers.h"
#include "jitgemm/problem.h"
#include "support/reference.h"

namespace jitgemm::cublas_test {

using ::jitgemm::support::RefActivate;

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

inline int64_t Index(const Operand& op, int64_t batch, int64_t r, int64_t c) {
  return ::jitgemm::support::ElementIndex(op, r, c, batch);
}

inline int64_t Extent(const Operand& op, int64_t batches, int64_t rows, int64_t cols) {
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

inline double Tolerance(DataType out, bool tf32) {
  if (tf32) return 5e-3;
  return out == DataType::kF32 ? 1e-5 : (out == DataType::kF16 ? 2e-3 : 1e-2);
}

inline GemmProblem Packed(GemmProblem p) {
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

inline GemmProblem Problem(int64_t m, int64_t n, int64_t k, DataType in, DataType out, Layout la,
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

}  // namespace jitgemm::cublas_test

#endif  // JITGEMM_TESTS_BACKENDS_CUBLAS_CASE_H_
