// RELIABILITY item 21: one load per kernel for the whole process (CUlibrary is
// context-independent), and each plan uses the function handle of the context
// it was created in.
#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <random>

#include "gtest/gtest.h"
#include "jit/kernel_store.h"
#include "jitgemm/plan.h"
#include "support/gpu_env.h"
#include "support/reference.h"

namespace jitgemm::support {
namespace {

// The driver entry points this test needs beyond the runtime, opened at run
// time so the binary still starts (and skips) where no driver exists.
struct Driver {
  CUresult (*ctx_create)(CUcontext*, CUctxCreateParams*, unsigned, CUdevice);
  CUresult (*ctx_destroy)(CUcontext);
  CUresult (*ctx_get_current)(CUcontext*);
  CUresult (*ctx_set_current)(CUcontext);
  CUresult (*ctx_get_device)(CUdevice*);
  CUresult (*ctx_synchronize)();
  static Driver Load() {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    Driver d{};
    if (lib == nullptr) return d;
    d.ctx_create = reinterpret_cast<decltype(d.ctx_create)>(dlsym(lib, "cuCtxCreate_v4"));
    d.ctx_destroy = reinterpret_cast<decltype(d.ctx_destroy)>(dlsym(lib, "cuCtxDestroy_v2"));
    d.ctx_get_current =
        reinterpret_cast<decltype(d.ctx_get_current)>(dlsym(lib, "cuCtxGetCurrent"));
    d.ctx_set_current =
        reinterpret_cast<decltype(d.ctx_set_current)>(dlsym(lib, "cuCtxSetCurrent"));
    d.ctx_get_device = reinterpret_cast<decltype(d.ctx_get_device)>(dlsym(lib, "cuCtxGetDevice"));
    d.ctx_synchronize =
        reinterpret_cast<decltype(d.ctx_synchronize)>(dlsym(lib, "cuCtxSynchronize"));
    return d;
  }
};

TEST(ContextsTest, TwoContextsShareOneLoadAndRunCorrectly) {
  JITGEMM_REQUIRE_GPU();
  CUDA_OK(cudaFree(nullptr));
  const Driver drv = Driver::Load();
  if (drv.ctx_create == nullptr || drv.ctx_destroy == nullptr) {
    GTEST_SKIP() << "driver lacks cuCtxCreate_v4 (driver older than CUDA 12.5?)";
  }
  CUcontext primary = nullptr;
  ASSERT_EQ(drv.ctx_get_current(&primary), CUDA_SUCCESS);
  CUdevice dev;
  ASSERT_EQ(drv.ctx_get_device(&dev), CUDA_SUCCESS);

  GemmProblem p = MakeGemm(33, 65, 47, DataType::kF16);
  p.b.layout = Layout::kColMajor;
  p = Canonicalize(p);
  Options o;
  o.backend = BackendPolicy::kJitOnly;
  o.tuning = TuningPolicy::kHeuristic;
  auto in_primary = Plan::Create(p, o);
  ASSERT_TRUE(in_primary.ok()) << in_primary.status();
  const uint64_t loads = jit::KernelStore::Global().counters().loads;

  CUcontext second = nullptr;
  CUctxCreateParams params{};
  ASSERT_EQ(drv.ctx_create(&second, &params, 0, dev), CUDA_SUCCESS);  // now current
  auto in_second = Plan::Create(p, o);
  ASSERT_TRUE(in_second.ok()) << in_second.status();
  EXPECT_EQ(jit::KernelStore::Global().counters().loads, loads) << "loaded twice";

  // Run each plan in its own context on memory of that context.
  std::mt19937_64 rng(5);
  for (CUcontext ctx : {second, primary}) {
    ASSERT_EQ(drv.ctx_set_current(ctx), CUDA_SUCCESS);
    const Plan& plan = ctx == second ? *in_second : *in_primary;
    Buffer a, b, d;
    ASSERT_EQ(a.Allocate(33 * 47 * 2, 0), cudaSuccess);
    ASSERT_EQ(b.Allocate(65 * 47 * 2, 0), cudaSuccess);
    ASSERT_EQ(d.Allocate(33 * 65 * 2, 0), cudaSuccess);
    a.FillRandom(DataType::kF16, rng);
    b.FillRandom(DataType::kF16, rng);
    CUDA_OK(a.Upload());
    CUDA_OK(b.Upload());
    CUDA_OK(d.Poison());
    ASSERT_TRUE(plan.Run({a.device, b.device, nullptr, d.device, nullptr}, nullptr).ok());
    ASSERT_EQ(drv.ctx_synchronize(), CUDA_SUCCESS);
    CUDA_OK(d.Download());
    auto ref = ReferenceGemm(p, a.host.data(), b.host.data(), nullptr, nullptr);
    EXPECT_LT(RelativeError(p, d.host.data(), ref), 4e-3);
  }
  drv.ctx_set_current(primary);
  drv.ctx_destroy(second);
}

}  // namespace
}  // namespace jitgemm::support
