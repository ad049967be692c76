#include "backends/jit_backend.h"

#include <cstdint>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "jit/family.h"
#include "jit/specializer.h"

namespace jitgemm {

absl::StatusOr<std::unique_ptr<JitBackend>> JitBackend::Create(const GemmProblem& problem,
                                                               const jit::KernelConfig& config,
                                                               const Options& options,
                                                               const jit::DeviceContext& device,
                                                               bool* compiled) {
  JITGEMM_ASSIGN_OR_RETURN(const jit::DriverApi* api, jit::GetDriver());
  const jit::KernelFamily& family = jit::GetFamily(config.family);
  JITGEMM_RETURN_IF_ERROR(family.Supports(problem, config, device.target));
  std::unique_ptr<JitBackend> backend(new JitBackend());
  backend->api_ = api;
  backend->shape_ = family.Shape(problem, config, device.target);
  backend->problem_ = problem;
  backend->config_ = config;
  if (backend->shape_.tensor_maps) {
    if (options.pointer_alignment < 16) {
      return absl::FailedPreconditionError(
          "TMA kernels need 16-byte-aligned pointers (Options::pointer_alignment 16)");
    }
    // A trial encode with aligned stand-in addresses: the driver checks only
    // the address, so a plan that encodes here encodes at every run.
    jit::Sm90TensorMaps maps;
    const void* aligned = reinterpret_cast<const void*>(uintptr_t{1} << 20);
    JITGEMM_RETURN_IF_ERROR(
        jit::EncodeSm90TensorMaps(*api, problem, config, aligned, aligned, aligned, &maps));
  }
  const jit::KernelSource source =
      jit::SpecializeFor(problem, config, device.target, options.pointer_alignment);
  jit::GetOptions get;
  get.allow_compile = options.jit_enabled;
  get.compiled = compiled;
  JITGEMM_ASSIGN_OR_RETURN(backend->kernel_,
                           jit::KernelStore::Global().GetLoaded(source, device.arch, get));
  JITGEMM_RETURN_IF_ERROR(jit::DriverStatus(
      *api, api->cuKernelGetFunction(&backend->function_, backend->kernel_->kernel),
      "cuKernelGetFunction"));
  // The 48 KB default covers static plus dynamic shared memory, so opt in for
  // any dynamic amount (harmless where it was not needed).
  if (backend->shape_.shared_bytes > 0) {
    JITGEMM_RETURN_IF_ERROR(
        jit::DriverStatus(*api,
                          api->cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                    static_cast<int>(backend->shape_.shared_bytes),
                                                    backend->kernel_->kernel, device.device),
                          "cuKernelSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)"));
  }
  if (backend->shape_.workspace_bytes > 0) {
    JITGEMM_RETURN_IF_ERROR(jit::DriverStatus(
        *api, api->cuMemAlloc(&backend->workspace_, backend->shape_.workspace_bytes),
        "cuMemAlloc(workspace)"));
    // Zeroed on a private stream, then waited for: the legacy stream or a
    // device-wide sync could join or break a capture the caller has running.
    CUstream stream = nullptr;
    JITGEMM_RETURN_IF_ERROR(jit::DriverStatus(
        *api, api->cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate"));
    absl::Status zeroed = jit::DriverStatus(
        *api, api->cuMemsetD8Async(backend->workspace_, 0, backend->shape_.workspace_bytes, stream),
        "cuMemsetD8Async(workspace)");
    if (zeroed.ok()) {
      zeroed = jit::DriverStatus(*api, api->cuStreamSynchronize(stream), "cuStreamSynchronize");
    }
    api->cuStreamDestroy(stream);
    JITGEMM_RETURN_IF_ERROR(zeroed);
  }
  backend->args_.alpha = problem.epilogue.alpha;
  backend->args_.beta = problem.epilogue.beta;
  backend->args_.m = static_cast<int>(problem.m);
  backend->args_.workspace = reinterpret_cast<void*>(backend->workspace_);
  return backend;
}

JitBackend::~JitBackend() {
  if (workspace_ != 0 && api_ != nullptr) api_->cuMemFree(workspace_);
}

absl::Status JitBackend::Run(const GemmPointers& p, CUstream stream) const {
  jit::GemmArgs args = args_;
  args.a = p.a;
  args.b = p.b;
  args.c = p.c;
  args.d = p.d;
  args.bias = p.bias;
  if (shape_.tensor_maps) {
    jit::Sm90TensorMaps maps;
    JITGEMM_RETURN_IF_ERROR(
        jit::EncodeSm90TensorMaps(*api_, problem_, config_, p.a, p.b, p.d, &maps));
    return jit::Launch(*api_, function_, shape_, args, stream, &maps);
  }
  return jit::Launch(*api_, function_, shape_, args, stream);
}

std::string JitBackend::Describe() const {
  return absl::StrCat("jit ", kernel_->binary->kernel_name);
}

}  // namespace jitgemm
