#include "tools/bench/nvrtc_image.h"

#include <nvrtc.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace jitgemm::bench {
namespace {

absl::Status NvrtcCheck(nvrtcResult r, const char* what) {
  if (r == NVRTC_SUCCESS) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what, ": ", nvrtcGetErrorString(r)));
}

}  // namespace

absl::StatusOr<std::vector<char>> CompileNvrtcImage(const char* source, const char* file,
                                                    const std::string& arch) {
  const bool cubin = arch.rfind("sm_", 0) == 0;
  nvrtcProgram prog = nullptr;
  absl::Status s = NvrtcCheck(nvrtcCreateProgram(&prog, source, file, 0, nullptr, nullptr),
                              "nvrtcCreateProgram");
  if (!s.ok()) return s;
  const std::string arch_flag = "--gpu-architecture=" + arch;
  const char* opts[] = {arch_flag.c_str(), "--std=c++17"};
  const nvrtcResult compiled = nvrtcCompileProgram(prog, 2, opts);
  std::vector<char> out;
  if (compiled != NVRTC_SUCCESS) {
    size_t log_size = 0;
    nvrtcGetProgramLogSize(prog, &log_size);
    std::string log(log_size, '\0');
    if (log_size > 0) nvrtcGetProgramLog(prog, log.data());
    nvrtcDestroyProgram(&prog);
    return absl::InternalError(
        absl::StrFormat("NVRTC (%s): %s\n%s", arch, nvrtcGetErrorString(compiled), log));
  }
  size_t size = 0;
  s = NvrtcCheck(cubin ? nvrtcGetCUBINSize(prog, &size) : nvrtcGetPTXSize(prog, &size),
                 "nvrtcGet*Size");
  if (s.ok()) {
    out.resize(size);
    s = NvrtcCheck(cubin ? nvrtcGetCUBIN(prog, out.data()) : nvrtcGetPTX(prog, out.data()),
                   "nvrtcGet*");
  }
  nvrtcDestroyProgram(&prog);
  if (!s.ok()) return s;
  return out;
}

}  // namespace jitgemm::bench
