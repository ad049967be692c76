#include "jit/kernel_store.h"

#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "core/status_macros.h"
#include "jit/disk_tier.h"

namespace jitgemm::jit {
namespace {

constexpr absl::string_view kMagic = "jitgemm-kernel-binary-1";

}  // namespace

std::string SerializeBinary(const KernelBinary& b) {
  return absl::StrCat(kMagic, "\n", b.kernel_name, "\n", b.lowered_name, "\n", b.registers, "\n",
                      b.spill_bytes, "\n", b.stack_bytes, "\n", b.cubin.size(), "\n", b.cubin);
}

absl::StatusOr<KernelBinary> DeserializeBinary(absl::string_view payload) {
  // Seven header lines, then the cubin bytes.
  std::vector<absl::string_view> lines;
  size_t pos = 0;
  for (int i = 0; i < 7; ++i) {
    size_t nl = payload.find('\n', pos);
    if (nl == absl::string_view::npos) return absl::DataLossError("kernel binary: short header");
    lines.push_back(payload.substr(pos, nl - pos));
    pos = nl + 1;
  }
  if (lines[0] != kMagic) return absl::DataLossError("kernel binary: bad magic");
  KernelBinary b;
  b.kernel_name = std::string(lines[1]);
  b.lowered_name = std::string(lines[2]);
  size_t size = 0;
  if (!absl::SimpleAtoi(lines[3], &b.registers) || !absl::SimpleAtoi(lines[4], &b.spill_bytes) ||
      !absl::SimpleAtoi(lines[5], &b.stack_bytes) || !absl::SimpleAtoi(lines[6], &size)) {
    return absl::DataLossError("kernel binary: bad number in header");
  }
  if (size != payload.size() - pos || size == 0 || b.lowered_name.empty()) {
    return absl::DataLossError("kernel binary: size mismatch");
  }
  b.cubin = std::string(payload.substr(pos));
  return b;
}

KernelStore& KernelStore::Global() {
  static KernelStore* const kStore = new KernelStore();
  return *kStore;
}

absl::StatusOr<std::shared_ptr<const KernelBinary>> KernelStore::GetBinary(
    const KernelSource& source, const std::string& arch, const GetOptions& options) {
  JITGEMM_ASSIGN_OR_RETURN(const int nvrtc_version, NvrtcVersionForKey());
  const std::string key = KeyText(source, arch, nvrtc_version);
  bool ran = false;
  bool stale_note = false;
  auto result = binaries_.Get(
      key,
      [&]() -> absl::StatusOr<std::shared_ptr<const KernelBinary>> {
        bool compiled = false;
        double compile_ms = 0;
        auto compile = [&]() -> absl::StatusOr<std::string> {
          if (!options.allow_compile) {
            return absl::NotFoundError(absl::StrCat(
                source.kernel_name, " for ", arch,
                " is not in the cache and run-time compilation is off (JITGEMM_JIT=off)"));
          }
          if (absl::StatusOr<int> real = NvrtcVersion(); real.ok() && *real != nvrtc_version) {
            if (std::getenv("JITGEMM_NVRTC_VERSION") == nullptr) {
              // The cache's note was stale (NVRTC is open now, so the next
              // key is right): correct it for the next process and retry.
              RecordNvrtcNote();
              stale_note = true;
              return absl::AbortedError("stale NVRTC note");
            }
            return absl::FailedPreconditionError(
                absl::StrCat("JITGEMM_NVRTC_VERSION says ", nvrtc_version,
                             " but the NVRTC found is ", *real, "; unset it or correct it"));
          }
          CompileRequest request{source.source, source.kernel_name, source.name_expression, arch};
          JITGEMM_ASSIGN_OR_RETURN(CompiledKernel k, Compile(request));
          compiled = true;
          compile_ms = k.compile_ms;
          ++compiles_;
          KernelBinary b{source.kernel_name,
                         k.lowered_name,
                         std::move(k.cubin),
                         k.registers,
                         k.spill_store_bytes + k.spill_load_bytes,
                         k.stack_bytes,
                         k.compile_ms};
          return SerializeBinary(b);
        };
        JITGEMM_ASSIGN_OR_RETURN(std::string payload, DiskTierGetOrCreate(key, compile));
        JITGEMM_ASSIGN_OR_RETURN(KernelBinary binary, DeserializeBinary(payload));
        binary.compile_ms = compile_ms;  // 0 when it came from disk
        if (!compiled) ++disk_hits_;
        if (options.compiled != nullptr) *options.compiled = compiled;
        return std::make_shared<const KernelBinary>(std::move(binary));
      },
      &ran);
  if (stale_note) return GetBinary(source, arch, options);
  if (!ran && result.ok()) {
    ++memory_hits_;
    if (options.compiled != nullptr) *options.compiled = false;
  }
  return result;
}

absl::StatusOr<std::shared_ptr<const LoadedKernel>> KernelStore::GetLoaded(
    const KernelSource& source, const std::string& arch, const GetOptions& options) {
  JITGEMM_ASSIGN_OR_RETURN(const DriverApi* api, GetDriver());
  JITGEMM_ASSIGN_OR_RETURN(const int nvrtc_version, NvrtcVersionForKey());
  const std::string key = KeyText(source, arch, nvrtc_version);
  if (options.compiled != nullptr) *options.compiled = false;
  return loaded_.Get(key, [&]() -> absl::StatusOr<std::shared_ptr<const LoadedKernel>> {
    JITGEMM_ASSIGN_OR_RETURN(auto binary, GetBinary(source, arch, options));
    auto loaded = std::make_shared<LoadedKernel>();
    loaded->binary = binary;
    JITGEMM_RETURN_IF_ERROR(
        DriverStatus(*api,
                     api->cuLibraryLoadData(&loaded->library, binary->cubin.data(), nullptr,
                                            nullptr, 0, nullptr, nullptr, 0),
                     "cuLibraryLoadData"));
    ++loads_;
    CUresult r =
        api->cuLibraryGetKernel(&loaded->kernel, loaded->library, binary->lowered_name.c_str());
    if (r != CUDA_SUCCESS) {
      api->cuLibraryUnload(loaded->library);
      return DriverStatus(*api, r, "cuLibraryGetKernel");
    }
    // Loaded libraries live as long as the process: plans hold raw handles.
    return std::shared_ptr<const LoadedKernel>(std::move(loaded));
  });
}

KernelStoreCounters KernelStore::counters() const {
  return {compiles_.load(), memory_hits_.load(), disk_hits_.load(), loads_.load()};
}

}  // namespace jitgemm::jit
